"""A tournament with a hostile remote participant, reached through Redis routing.

Real Redis, a real ``arena serve --routing`` and ``arena tournament run`` as the organiser
types it; the spy (written from the .proto) plays every match of a duplicate tournament
from its own gRPC stream.  Whatever it guesses (the tournament's name, which used to be
its seed, small integers, the match ids and their parts, the commitments, the seeds the
name used to derive) deals none of its hands; after the end it checks, with its own code,
that the revealed secret matches the commitment it was shown, that each seed is derived
from the secret and deals the hands it held.  ``arena tournament verify`` agrees, and
catches a store that was tampered with.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from security_support import (
    Spy,
    derive,
    guesses,
    reproducing,
    seed_commitment,
    tournament_commitment,
)

from arena.rigs.processes import GatewayProcess, RedisProcess

NAME = "spy-cup"
SPEC = """
name: {name}
rules: classic
participants: [greedy, random, "remote:spy"]
format: duplicate
sets: 2
max_deals: 4
time_control: {{decision_ms: 5000, bank_ms: 5000, strike_limit: 3}}
executor: {{type: inline, routing: "{routing}"}}
db: "sqlite:///{db}"
"""


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[RedisProcess, GatewayProcess]]:
    redis = RedisProcess.start(tmp_path / "redis", tmp_path / "redis.log")
    try:
        gw = GatewayProcess.start(
            db_path=tmp_path / "gateway.sqlite3",
            log_path=tmp_path / "gateway.log",
            organiser_token="organiser-token-of-the-tournament-test",
            routing_url=redis.url,
        )
        try:
            yield redis, gw
        finally:
            gw.stop()
    finally:
        redis.stop()


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args], capture_output=True, text=True, timeout=600
    )


def test_a_remote_participant_cannot_derive_the_deals_and_can_check_them_after(
    stack: tuple[RedisProcess, GatewayProcess], tmp_path: Path
) -> None:
    redis, gw = stack
    db = tmp_path / "results.sqlite3"
    spec = tmp_path / "cup.yaml"
    spec.write_text(SPEC.format(name=NAME, routing=redis.url, db=db))
    spy = Spy(gw.address, gw.register("spy"))
    try:
        assert spy.welcomed.wait(20)
        gw.wait_instances(["spy"])
        # Stopped after 5 matches and resumed: the same secret deals the rest.
        first = arena("tournament", "run", str(spec), "--quiet", "--max-matches", "5")
        assert first.returncode == 0, first.stderr
        second = arena("tournament", "run", str(spec), "--quiet")
        assert second.returncode == 0, second.stderr
    finally:
        spy.close()
    found = [
        re.search(r"its commitment is ([0-9a-f]{64})", run.stderr) for run in (first, second)
    ]
    assert found[0] and found[1], first.stderr + second.stderr
    commitment = found[0].group(1)
    assert found[1].group(1) == commitment

    # Every match the spy played showed the tournament's commitment and its own seed
    # commitment (distinct even within a duplicate set), and revealed nothing at its end.
    match_ids = spy.match_ids()
    assert len(match_ids) == 12
    seen: dict[str, str] = {}
    for mid in match_ids:
        events = spy.events(mid)
        start, end = events[0], events[-1]
        assert start.type == "match_start" and end.type == "match_end"
        assert start.match_start.tournament_commitment == commitment
        seen[mid] = start.match_start.seed_commitment
        assert end.match_end.seed_reveal == "" and "seed_reveal" not in end.detail_json
    assert len(set(seen.values())) == 12

    # Nothing the spy saw, nor the name, nor what the name used to seed, deals its hands.
    texts = spy.strings() | {NAME}
    candidates = guesses(texts, sets=4)
    assert NAME in candidates and len(candidates) > 10_000
    dealt = {mid: spy.dealt(mid) for mid in match_ids}
    for mid, hands in dealt.items():
        if hands:
            assert reproducing(candidates, hands) == [], mid
    assert sum(len(h) for h in dealt.values()) >= 12

    # After the end: the secret, checked with the spy's own code against what it saw.
    revealed = re.search(r"deal secret revealed: ([0-9a-f]{64})", second.stdout)
    assert revealed, second.stdout
    secret = revealed.group(1)
    assert secret not in first.stdout + first.stderr + second.stderr
    assert secret not in (tmp_path / "gateway.log").read_text()
    assert tournament_commitment(NAME, secret) == commitment
    listing = arena("tournament", "reveal", str(spec), "--json")
    assert listing.returncode == 0, listing.stderr
    data = json.loads(listing.stdout)
    assert data["secret"] == secret and data["commitment"] == commitment
    by_id = {m["match_id"]: m for m in data["matches"]}
    for mid in match_ids:
        entry = by_id[mid]
        assert entry["seed"] == derive(secret, entry["key"])
        assert seed_commitment(mid, entry["seed"]) == seen[mid] == entry["seed_commitment"]
        if dealt[mid]:
            assert reproducing([entry["seed"]], dealt[mid]) == [entry["seed"]]

    # The organiser's check of the whole store, against the published commitment.
    ok = arena("tournament", "verify", str(spec), "--commitment", commitment)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "12 matches" in ok.stdout
    wrong = arena("tournament", "verify", str(spec), "--commitment", "0" * 64)
    assert wrong.returncode == 1 and "not the published" in wrong.stdout

    # A store tampered with after the fact: a match dealt other cards, then another secret.
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE matches SET seed = ? WHERE idx = 3", ("1" * 64,))
    res = arena("tournament", "verify", str(spec))
    assert res.returncode == 1
    assert "match 3" in res.stdout and "seed is not the one derived" in res.stdout
    other = "ab" * 32
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE deal_secrets SET secret = ?, commitment = ? WHERE tournament = ?",
            (other, tournament_commitment(NAME, other), NAME),
        )
    res = arena("tournament", "verify", str(spec), "--commitment", commitment)
    assert res.returncode == 1 and "not the published" in res.stdout
    res = arena("tournament", "verify", str(spec))
    assert res.returncode == 1 and "the id is not the one derived" in res.stdout


def test_arena_match_through_routing_deals_a_secret_and_reveals_it(
    stack: tuple[RedisProcess, GatewayProcess], tmp_path: Path
) -> None:
    redis, gw = stack
    spy = Spy(gw.address, gw.register("spy"))
    replay = tmp_path / "match.json"
    try:
        assert spy.welcomed.wait(20)
        gw.wait_instances(["spy"])
        refused = arena("match", "--routing", redis.url, "--seed", "7", "remote:spy",
                        "greedy", "random")
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1
        assert "--public-seed" in refused.stderr
        res = arena("match", "--routing", redis.url, "--max-deals", "3", "--replay",
                    str(replay), "remote:spy", "greedy", "random")
        assert res.returncode == 0, res.stderr
    finally:
        spy.close()
    shown = re.search(r"Deals from a secret seed; commitment ([0-9a-f]{64})", res.stdout)
    told = re.search(r"Seed revealed: ([0-9a-f]{64}) \(matches the commitment\)", res.stdout)
    assert shown and told, res.stdout
    (mid,) = spy.match_ids()
    assert re.fullmatch(r"match-[0-9a-f]{12}", mid)  # random: nothing of the seed in it
    events = spy.events(mid)
    assert events[0].match_start.seed_commitment == shown.group(1)
    assert events[-1].match_end.seed_reveal == told.group(1)
    assert seed_commitment(mid, told.group(1)) == shown.group(1)
    data = json.loads(replay.read_text())
    assert data["seed"] == told.group(1) and data["match_id"] == mid
    verified = arena("replay", "verify", str(replay), "--commitment", shown.group(1))
    assert verified.returncode == 0, verified.stdout + verified.stderr
