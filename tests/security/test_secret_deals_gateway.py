"""Secret deals against a real ``arena serve`` and a hostile bot written from the .proto.

The spy records every message its seat receives, then tries every seed it could guess
(small integers, every text it was sent and its parts, hashes of those) with the
documented shuffle against the hands it was dealt.  With a secret seed nothing
reproduces them; the reveal at the end does, and matches the commitment shown at the
start.  The control case shows the same attack finds a public seed, so the search is a
real one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from security_support import Spy, guesses, reproducing, seed_commitment
from thousand_bot.proto.thousand.v1 import organiser_pb2, organiser_pb2_grpc

from arena.rigs.processes import GatewayProcess, free_port

TOKEN = "organiser-token-for-the-security-tests"


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[GatewayProcess, Path, int]]:
    results = tmp_path / "results.jsonl"
    metrics_port = free_port()
    gw = GatewayProcess.start(
        db_path=tmp_path / "gateway.sqlite3",
        log_path=tmp_path / "gateway.log",
        organiser_token=TOKEN,
        extra=["--results", str(results), "--metrics-port", str(metrics_port)],
    )
    try:
        yield gw, results, metrics_port
    finally:
        gw.stop()


def organiser(gw: GatewayProcess) -> tuple[grpc.Channel, Any, tuple[tuple[str, str], ...]]:
    channel = grpc.insecure_channel(gw.address)
    return channel, organiser_pb2_grpc.OrganiserServiceStub(channel), (
        ("authorization", f"Bearer {TOKEN}"),
    )


def play(gw: GatewayProcess, **request: Any) -> tuple[Any, list[Any]]:
    """Start a match, follow it to its end; the StartMatch reply and the events."""
    channel, stub, md = organiser(gw)
    with channel:
        started = stub.StartMatch(
            organiser_pb2.StartMatchRequest(
                time_control=organiser_pb2.TimeControl(
                    decision_ms=5000, bank_ms=5000, strike_limit=3
                ),
                **request,
            ),
            metadata=md, timeout=30,
        )  # fmt: skip
        events = [
            r.event for r in stub.WatchMatch(
                organiser_pb2.WatchMatchRequest(match_id=started.match_id),
                metadata=md, timeout=120,
            )
        ]  # fmt: skip
    return started, events


def wait_end(spy: Spy, match_id: str, timeout: float = 30.0) -> None:
    limit = time.monotonic() + timeout
    while not any(e.type == "match_end" for e in spy.events(match_id)):
        assert time.monotonic() < limit, "the spy never saw the match end"
        time.sleep(0.05)


def replay_verify(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", "replay", "verify", str(path), *extra],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_seat_cannot_guess_a_secret_seed_and_the_reveal_verifies(
    gateway: tuple[GatewayProcess, Path, int], tmp_path: Path
) -> None:
    gw, results, metrics_port = gateway
    spy = Spy(gw.address, gw.register("spy"))
    try:
        assert spy.welcomed.wait(20)
        started, watched = play(gw, bots=["spy", "greedy", "random"], max_deals=8)
        match_id = started.match_id
        wait_end(spy, match_id)
    finally:
        spy.close()
    assert watched[-1].type == "match_end" and watched[-1].match_end.status == "completed"

    # At the start every seat was shown the commitment the organiser was given.
    commitment = started.seed_commitment
    assert len(commitment) == 64
    start = spy.events(match_id)[0]
    assert start.type == "match_start"
    assert start.match_start.seed_commitment == commitment
    assert json.loads(start.detail_json)["commitment"] == commitment

    # At the end the seed is revealed, matches the commitment and deals the spy's hands.
    end = next(e for e in spy.events(match_id) if e.type == "match_end")
    seed = end.match_end.seed_reveal
    assert len(seed) == 64 and seed_commitment(match_id, seed) == commitment
    dealt = spy.dealt(match_id)
    assert len(dealt) >= 2, "too few deals to check guesses against"
    assert reproducing([seed], dealt) == [seed]

    # Before the end the seed was nowhere: not in a message, the log or the metrics.
    raw, texts = spy.before_end(match_id)
    assert raw and not any(seed.encode() in data for data in raw)
    assert seed not in (tmp_path / "gateway.log").read_text()
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10)
    assert seed not in metrics.read().decode()
    assert match_id in texts and commitment in texts

    # Every seed the seat could have guessed from what it saw: none deals its hands.
    candidates = guesses(texts)
    assert len(candidates) > 10_000 and seed not in candidates
    assert reproducing(candidates, dealt) == []

    # The organiser's replay carries the commitment, and verifies; a tampered one does not.
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    replay = next(r["replay"] for r in rows if r["match_id"] == match_id)
    assert replay["seed"] == seed and replay["commitment"]["seed_commitment"] == commitment
    good = tmp_path / "replay.json"
    good.write_text(json.dumps(replay))
    ok = replay_verify(good, "--commitment", commitment)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "the seed matches its commitment and every deal is its shuffle" in ok.stdout

    def tampered(name: str, change: Any) -> Path:
        data = json.loads(json.dumps(replay))
        change(data)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        return path

    other_seed = "0" * 64
    swap = tampered("seed", lambda d: d.__setitem__("seed", other_seed))
    res = replay_verify(swap)
    assert res.returncode == 1 and "seed: its commitment is" in res.stdout, res.stdout
    # A new seed with a commitment to match is caught by the one the seat saw.
    forged = tampered("forged", lambda d: (
        d.__setitem__("seed", other_seed),
        d["commitment"].__setitem__("seed_commitment", seed_commitment(match_id, other_seed)),
    ))
    assert replay_verify(forged).returncode != 0  # its decks are not the new seed's
    res = replay_verify(good, "--commitment", seed_commitment(match_id, other_seed))
    assert res.returncode == 1 and "the match showed" in res.stdout

    def swap_cards(d: dict[str, Any]) -> None:
        deck = d["deals"][0]["deck"]
        deck[0], deck[-1] = deck[-1], deck[0]

    res = replay_verify(tampered("deck", swap_cards))
    assert res.returncode == 1 and "deals[0].deck: not the shuffle" in res.stdout
    bad = tampered("bad", lambda d: d["commitment"].__setitem__("seed_commitment", "xyz"))
    res = replay_verify(bad)
    assert res.returncode == 2 and "64 lowercase hex digits" in res.stderr


def test_a_public_seed_is_found_by_the_same_attack_and_needs_an_explicit_flag(
    gateway: tuple[GatewayProcess, Path, int], tmp_path: Path
) -> None:
    gw, _, _ = gateway
    spy = Spy(gw.address, gw.register("spy"))
    try:
        assert spy.welcomed.wait(20)
        channel, stub, md = organiser(gw)
        with channel, pytest.raises(grpc.RpcError) as info:
            stub.StartMatch(
                organiser_pb2.StartMatchRequest(seed="7", bots=["spy", "greedy", "random"]),
                metadata=md, timeout=30,
            )  # fmt: skip
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "public_seed" in (info.value.details() or "")

        started, _ = play(
            gw, seed="7", public_seed=True, bots=["spy", "greedy", "random"], max_deals=4
        )
        wait_end(spy, started.match_id)
    finally:
        spy.close()
    assert started.seed_commitment == ""
    start = spy.events(started.match_id)[0]
    assert start.match_start.seed_commitment == "" and "commitment" not in start.detail_json
    end = next(e for e in spy.events(started.match_id) if e.type == "match_end")
    assert end.match_end.seed_reveal == ""
    # The attack the secret seed defeats: the seat finds "7" and with it every hand.
    _, texts = spy.before_end(started.match_id)
    assert reproducing(guesses(texts), spy.dealt(started.match_id)) == ["7"]
    assert "played with a public seed while remote bots are seated" in (
        tmp_path / "gateway.log"
    ).read_text()
