"""Hostile bots against a real ``arena serve`` process.

The clients here are written from the ``.proto`` files (raw stubs, raw bytes), not the SDK,
and do what an attacker would: keep streams open past a revoke, flood, send huge or
corrupt fields, forge log lines, squat the names of built-in bots.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from thousand_bot.proto.thousand.v1 import bot_pb2, bot_pb2_grpc, organiser_pb2, organiser_pb2_grpc

from arena.engine import replay as rp
from arena.rigs.processes import BotProcess, GatewayProcess, free_port, stop_all
from arena.rigs.testing import RawBot
from arena.server.limits import ACTION_MAX, HELLO_CLIENT_MAX, HELLO_VERSION_MAX, StreamLimits

ORGANISER = "organiser-hostile"
_ids = itertools.count()
LIMITS = StreamLimits()


def _gateway(
    tmp: Path, name: str, db: Path | str | None = None, *extra: str
) -> GatewayProcess:
    return GatewayProcess.start(
        db_path=db or tmp / "gateway.sqlite3",  # type: ignore[arg-type]  # or a URL
        log_path=tmp / f"{name}.log",
        organiser_token=ORGANISER,
        extra=extra,
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[GatewayProcess]:
    metrics = free_port()
    gw = _gateway(
        tmp_path, "gateway", None, "--results", str(tmp_path / "results.jsonl"),
        "--metrics-port", str(metrics),
    )  # fmt: skip
    gw.metrics_port = metrics  # type: ignore[attr-defined]
    try:
        yield gw
    finally:
        gw.stop()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the tests that only need refusals (each uses its own bot names)."""
    gw = _gateway(tmp_path_factory.mktemp("hostile"), "gateway")
    try:
        yield gw
    finally:
        gw.stop()


class Organiser:
    def __init__(self, gw: GatewayProcess) -> None:
        self.channel = grpc.insecure_channel(gw.address)
        self.stub = organiser_pb2_grpc.OrganiserServiceStub(self.channel)
        self.md = (("authorization", f"Bearer {ORGANISER}"),)

    def __enter__(self) -> Organiser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.channel.close()

    def call(self, method: str, request: Any) -> Any:
        return getattr(self.stub, method)(request, metadata=self.md, timeout=20)

    def refused(self, method: str, request: Any) -> grpc.RpcError:
        with pytest.raises(grpc.RpcError) as info:
            result = self.call(method, request)
            if method == "WatchMatch":
                list(result)
        return info.value

    def start(self, bots: list[str], **kw: Any) -> str:
        if kw.get("seed"):
            kw.setdefault("public_seed", True)  # these tests replay the deals they chose
        reply = self.call("StartMatch", organiser_pb2.StartMatchRequest(bots=bots, **kw))
        return str(reply.match_id)

    def watch(self, match_id: str) -> list[Any]:
        request = organiser_pb2.WatchMatchRequest(match_id=match_id)
        return [r.event for r in self.stub.WatchMatch(request, metadata=self.md, timeout=120)]


def _ends(bot: RawBot, timeout: float = 10.0) -> tuple[grpc.RpcError, float]:
    """The error that ends the stream, and when it arrived (monotonic)."""
    limit = time.monotonic() + timeout
    while True:
        try:
            bot.recv(timeout=max(0.01, limit - time.monotonic()))
        except grpc.RpcError as exc:
            return exc, time.monotonic()


def _seat_actions(events: list[Any], seat: int) -> list[Any]:
    return [e.action for e in events if e.type == "action" and e.action.seat == seat]


# --- authorisation for the life of a stream ------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path | str]:
    """Where two gateways keep their shared bot registry: a SQLite file (one machine) or
    a PostgreSQL schema of its own (gateways on several machines)."""
    if request.param == "sqlite":
        yield tmp_path / "shared.sqlite3"
        return
    import uuid

    import psycopg

    base = os.environ.get("ARENA_TEST_PG", "postgresql://127.0.0.1:5432/test")
    schema = f"registry_{uuid.uuid4().hex[:10]}"
    yield f"{base}?schema={schema}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_revoke_ends_every_live_stream_within_a_second(
    tmp_path: Path, registry: Path | str
) -> None:
    """Welcomed, spare (never says hello) and late (says hello after the revoke) streams all
    end within a second; an answer sent right after a revoke made through another gateway
    sharing the registry does not count."""
    db = registry
    a = _gateway(tmp_path, "a", db)
    b = _gateway(tmp_path, "b", db)
    try:
        with Organiser(a) as org_a, Organiser(b) as org_b:
            token = org_a.call("RegisterBot", organiser_pb2.RegisterBotRequest(name="mallory"))
            token = token.token
            player = RawBot(a.address, token)
            player.recv_kind("welcome")
            spare = RawBot(a.address, token, send_hello=False)
            late = RawBot(a.address, token, send_hello=False)
            elsewhere = RawBot(b.address, token)
            elsewhere.recv_kind("welcome")
            time.sleep(0.3)  # let the hello-less streams reach the gateway
            match_id = org_a.start(
                ["mallory", "random", "greedy"],
                seed="revoke",
                max_deals=3,
                time_control=organiser_pb2.TimeControl(
                    decision_ms=5000, bank_ms=0, strike_limit=1
                ),
            )
            request = player.recv_kind("decision_request").decision_request
            org_b.call("ListBots", organiser_pb2.ListBotsRequest())  # the channel is up
            # Revoked through the other gateway: this one learns it from the registry.
            org_b.call("RevokeToken", organiser_pb2.RevokeTokenRequest(name="mallory"))
            revoked_at = time.monotonic()
            player.decide(request.request_id, request.legal_actions[0])  # must not count
            late.send(bot_pb2.PlayRequest(hello=bot_pb2.Hello(version="late")))
            for stream in (player, spare, late, elsewhere):
                err, at = _ends(stream)
                assert err.code() == grpc.StatusCode.UNAUTHENTICATED, err.details()
                if stream in (spare, late):  # never welcomed after the revoke
                    kinds = {bot_pb2.PlayResponse.FromString(r).WhichOneof("message")
                             for r in stream.raw}  # fmt: skip
                    assert "welcome" not in kinds
                assert "revoked" in (err.details() or "")
                assert at - revoked_at < 1.0, (stream, at - revoked_at)
                print(f"stream ended {at - revoked_at:.3f} s after the revoke")
            events = org_a.watch(match_id)
            end = events[-1].match_end
            assert end.status == "forfeit" and end.HasField("forfeit_seat")
            assert end.forfeit_seat == 0
            # Had the answer counted, seat 0 would have played it before its first strike.
            played = [x for x in _seat_actions(events, 0) if not x.automatic]
            assert all(x.fallback for x in played), played
            again = RawBot(a.address, token)
            err, _ = _ends(again)
            assert err.code() == grpc.StatusCode.UNAUTHENTICATED
            for stream in (player, spare, late, elsewhere, again):
                stream.close()
    finally:
        stop_all([a, b])


def test_rotate_on_one_gateway_ends_streams_on_another(
    tmp_path: Path, registry: Path | str
) -> None:
    db = registry
    a = _gateway(tmp_path, "a", db)
    b = _gateway(tmp_path, "b", db)
    try:
        with Organiser(a) as org_a:
            old = org_a.call("RegisterBot", organiser_pb2.RegisterBotRequest(name="rot")).token
            streams = [RawBot(b.address, old), RawBot(b.address, old, send_hello=False)]
            streams[0].recv_kind("welcome")
            time.sleep(0.3)
            new = org_a.call("RotateToken", organiser_pb2.RotateTokenRequest(name="rot")).token
            rotated_at = time.monotonic()
            for stream in streams:
                err, at = _ends(stream)
                assert err.code() == grpc.StatusCode.UNAUTHENTICATED
                assert "replaced by a newer one" in (err.details() or "")
                assert at - rotated_at < 1.0, at - rotated_at
                print(f"stream ended {at - rotated_at:.3f} s after the rotate")
                stream.close()
            fresh = RawBot(b.address, new)
            assert fresh.recv_kind("welcome").welcome.bot_name == "rot"
            fresh.close()
    finally:
        stop_all([a, b])


@pytest.mark.parametrize("change", ["RevokeToken", "RotateToken"])
def test_a_busy_gateway_sees_a_revoke_before_it_returns(
    tmp_path: Path, registry: Path | str, change: str
) -> None:
    """A gateway that looked at the registry a moment before another one revokes (as a
    busy gateway does at every decision, at most every ``CHECK_EVERY_S``) has looked again
    by the time the revoke returns: the reply waits that interval out, so no answer that
    follows the reply counts anywhere."""
    from arena.server.auth import BotRegistry, TokenWatch, hash_token

    b = _gateway(tmp_path, "b", registry)
    watching = BotRegistry(registry)
    try:
        with Organiser(b) as org:
            token = org.call("RegisterBot", organiser_pb2.RegisterBotRequest(name="busy")).token
            watch = TokenWatch(watching)
            ended: list[Any] = []
            watch.add("busy", hash_token(token), ended.append)
            assert watch.check() == 0  # the last look before the change: nothing to end
            request_type = getattr(organiser_pb2, f"{change}Request")
            org.call(change, request_type(name="busy"))
            assert watch.check() == 1, "the revoke returned before this gateway could see it"
            assert [i.verdict.name for i in ended] == [
                "REVOKED" if change == "RevokeToken" else "ROTATED"
            ]
    finally:
        watching.close()
        stop_all([b])


# --- floods ------------------------------------------------------------------------------


def _rss_kib(pid: int) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    assert match is not None
    return int(match.group(1))


async def _flood(address: str, token: str, seconds: float, payload: int) -> list[str]:
    """Streams that send unsolicited decisions as fast as they can and never read; each
    one cut off is replaced by a new one. The statuses the streams ended with."""
    endings: list[str] = []
    limit = time.monotonic() + seconds
    md = (("authorization", f"Bearer {token}"),)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = bot_pb2_grpc.BotServiceStub(channel)
        while time.monotonic() < limit:
            call = stub.Play(metadata=md)
            junk = bot_pb2.PlayRequest(
                decision=bot_pb2.Decision(request_id="r-forged", action="x" * payload)
            )
            try:
                await call.write(bot_pb2.PlayRequest(hello=bot_pb2.Hello(version="flood")))
                while time.monotonic() < limit:
                    await asyncio.wait_for(call.write(junk), 5)
            except (grpc.aio.AioRpcError, asyncio.InvalidStateError, TimeoutError):
                pass
            # A write to a closed stream fails with the client's own INTERNAL; the
            # gateway's status comes after the replies the flooder never read.
            try:
                await asyncio.wait_for(_drain(call), 10)
            except grpc.aio.AioRpcError as exc:
                endings.append(f"{exc.code().name}: {exc.details()}")
            except TimeoutError:
                endings.append("no status")
            call.cancel()
    return endings


async def _drain(call: Any) -> None:
    async for _ in call:
        pass


def test_a_flood_is_cut_off_memory_stays_flat_and_honest_matches_finish(
    served: GatewayProcess, tmp_path: Path
) -> None:
    with Organiser(served) as org:
        names = ["honest-a", "honest-b", "honest-c"]
        bots = [
            BotProcess.start(
                name=n,
                bot_ref="thousand_bot.examples:Greedy",
                server=served.address,
                token=org.call("RegisterBot", organiser_pb2.RegisterBotRequest(name=n)).token,
                log_path=tmp_path / f"{n}.log",
            )
            for n in names
        ]
        flooders = [
            org.call("RegisterBot", organiser_pb2.RegisterBotRequest(name=f"flood-{i}")).token
            for i in range(3)
        ]
        try:
            served.wait_instances(names, bots=bots)
            matches = [org.start(names, seed=f"honest/{i}", max_deals=8) for i in range(3)]
            time.sleep(1.0)
            before = _rss_kib(served.pid)
            peak = before

            async def run() -> list[list[str]]:
                floods = [
                    _flood(served.address, flooders[0], 8.0, 10),
                    _flood(served.address, flooders[1], 8.0, 10),
                    _flood(served.address, flooders[2], 8.0, 512 * 1024),  # big actions
                ]
                tasks = [asyncio.ensure_future(f) for f in floods]
                nonlocal peak
                while not all(t.done() for t in tasks):
                    peak = max(peak, _rss_kib(served.pid))
                    await asyncio.sleep(0.1)
                return [t.result() for t in tasks]

            endings = asyncio.run(run())
            grown_mb = (peak - before) / 1024
            print(f"gateway RSS during the flood: {before / 1024:.1f} MB -> peak "
                  f"{peak / 1024:.1f} MB (+{grown_mb:.1f} MB)")  # fmt: skip
            assert grown_mb <= 50, f"gateway RSS grew by {grown_mb:.0f} MB during the flood"
            for ended in endings:
                cut = [e for e in ended if e.startswith("RESOURCE_EXHAUSTED")]
                assert cut, ended[:3]
                assert "too many refused messages" in cut[0]
            for match_id in matches:
                assert org.watch(match_id)[-1].match_end.status == "completed"
            url = f"http://127.0.0.1:{served.metrics_port}/metrics"  # type: ignore[attr-defined]
            with urllib.request.urlopen(url, timeout=10) as page:
                scraped = page.read().decode()
            counted = re.search(
                r'^arena_gateway_streams_cut_total\{reason="flood"\} (\S+)$', scraped, re.M
            )
            assert counted is not None and float(counted.group(1)) >= 3
        finally:
            stop_all(bots)
    served.stop()
    results = [
        json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()
    ]
    assert {r["match_id"] for r in results} == set(matches)
    for r in results:
        assert r["status"] == "completed"
        assert rp.verify(r["replay"]) is None
        assert all(s["strikes"] == 0 for s in r["seat_stats"]), r["seat_stats"]


def test_too_many_streams_of_one_bot_are_refused(shared: GatewayProcess) -> None:
    with Organiser(shared) as org:
        token = org.call("RegisterBot", organiser_pb2.RegisterBotRequest(name="hydra")).token
    heads = [RawBot(shared.address, token) for _ in range(LIMITS.streams_per_bot)]
    for head in heads:
        head.recv_kind("welcome")
    extra = RawBot(shared.address, token)
    err, _ = _ends(extra)
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert f"{LIMITS.streams_per_bot} streams open" in (err.details() or "")
    heads.pop().close()
    time.sleep(0.3)
    again = RawBot(shared.address, token)
    assert again.recv_kind("welcome").welcome.bot_name == "hydra"
    for head in [*heads, extra, again]:
        head.close()


# --- fields a bot controls ---------------------------------------------------------------


def _register(gw: GatewayProcess, name: str) -> str:
    with Organiser(gw) as org:
        return str(org.call("RegisterBot", organiser_pb2.RegisterBotRequest(name=name)).token)


@pytest.mark.parametrize(
    ("hello", "says"),
    [
        (bot_pb2.Hello(name="n" * 65), "hello.name is 65 characters long; at most 64"),
        (bot_pb2.Hello(version="v" * 300_000), "hello.version is 300000 characters long"),
        (bot_pb2.Hello(client="c" * 129), "hello.client is 129 characters long"),
        (bot_pb2.Hello(name="someone-else"), "hello names bot 'someone-else'"),
        (bot_pb2.Hello(max_concurrent_matches=-1), "must not be negative"),
    ],
)
def test_a_bad_hello_is_invalid_argument(
    shared: GatewayProcess, hello: bot_pb2.Hello, says: str
) -> None:
    name = f"hello-{next(_ids)}"
    bot = RawBot(shared.address, _register(shared, name), hello)
    err, _ = _ends(bot)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in (err.details() or "")
    assert len(err.details() or "") < 300
    bot.close()


def test_a_corrupt_first_message_is_invalid_argument_without_internals(
    shared: GatewayProcess,
) -> None:
    bot = RawBot(shared.address, _register(shared, "corrupt"), send_hello=False)
    bot.send_bytes(b"\xff\xff\xff\xff garbage")
    err, _ = _ends(bot)
    details = err.details() or ""
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, details
    assert "hello" in details
    for internal in ("Error", "class", "Traceback", "protobuf", "<"):
        assert internal not in details, details
    bot.close()


def _next_error(bot: RawBot, requests: list[bot_pb2.DecisionRequest]) -> bot_pb2.Error:
    """The next error reply, keeping the requests that arrive meanwhile."""
    while True:
        message = bot.recv()
        if message.HasField("error"):
            return message.error
        if message.HasField("decision_request"):
            requests.append(message.decision_request)


def test_a_huge_action_is_malformed_and_quoted_short(shared: GatewayProcess) -> None:
    """The action is cut, the reply quotes a prefix, the stream and the match go on."""
    bot = RawBot(shared.address, _register(shared, "shouter"))
    bot.recv_kind("welcome")
    with Organiser(shared) as org:
        match_id = org.start(["shouter", "random", "greedy"], seed="shout", max_deals=4)
        request = bot.recv_kind("decision_request").decision_request
        bot.decide(request.request_id, "play " + "Q" * (900 * 1024))
        waiting: list[bot_pb2.DecisionRequest] = []
        error = _next_error(bot, waiting)
        assert error.code == bot_pb2.ERROR_CODE_MALFORMED_ACTION
        assert f"longer than {ACTION_MAX} characters" in error.reason
        assert len(error.SerializeToString()) < 400
        huge_id = "r" * 100_000
        bot.decide(huge_id, "pass")
        error = _next_error(bot, waiting)
        assert error.code == bot_pb2.ERROR_CODE_UNKNOWN_REQUEST
        assert "decision.request_id is 100000 characters long" in error.reason
        assert len(error.SerializeToString()) < 400
        # The stream is still alive: the next requests are answered and count.
        answered = 0
        for request in waiting:
            bot.decide(request.request_id, request.legal_actions[0])
            answered += 1
        while True:
            message = bot.recv()
            if message.HasField("decision_request"):
                request = message.decision_request
                bot.decide(request.request_id, request.legal_actions[0])
                answered += 1
            elif message.HasField("event") and message.event.type == "match_end":
                break
        events = org.watch(match_id)
    assert answered > 0 and events[-1].match_end.status == "completed"
    actions = [a for a in _seat_actions(events, 0) if not a.automatic]
    assert actions[0].fallback == "malformed"
    assert not any(a.fallback for a in actions[1:]), [(a.action, a.fallback) for a in actions]
    assert all(len(e.detail_json) < 2000 for e in events)
    bot.close()


def test_control_characters_are_escaped_in_the_log(shared: GatewayProcess) -> None:
    forged = "evil\n2026-01-01 00:00:00 INFO arena.server: bot admin connected\x1b[2J"
    assert len(forged) <= HELLO_CLIENT_MAX
    bot = RawBot(shared.address, _register(shared, "forger"), bot_pb2.Hello(client=forged))
    bot.recv_kind("welcome")
    bot.close()
    log = ""
    for _ in range(100):
        log = shared.log_text()
        if "forger connected" in log:
            break
        time.sleep(0.05)
    assert "evil\\n2026-01-01" in log
    assert "\\x1b[2J" in log and "\x1b" not in log
    assert not any(line.startswith("2026-01-01 00:00:00") for line in log.splitlines())


def test_list_bots_survives_hostile_versions(shared: GatewayProcess) -> None:
    name = "versioned"
    token = _register(shared, name)
    big = RawBot(shared.address, token, bot_pb2.Hello(version="v" * 900_000))
    err, _ = _ends(big)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    longest = "w" * HELLO_VERSION_MAX
    ok = RawBot(shared.address, token, bot_pb2.Hello(version=longest))
    ok.recv_kind("welcome")
    with Organiser(shared) as org:
        bots = {b.name: b for b in org.call("ListBots", organiser_pb2.ListBotsRequest()).bots}
    assert bots[name].version == longest and bots[name].instances == 1
    listed = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bot", "--gateway", shared.address, "list"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "ARENA_ORGANISER_TOKEN": ORGANISER},
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert name in listed.stdout
    big.close()
    ok.close()


# --- organiser requests ------------------------------------------------------------------


def test_built_in_bot_names_cannot_be_registered(shared: GatewayProcess) -> None:
    from arena.bots import BUILTIN_BOTS

    with Organiser(shared) as org:
        for name in [*BUILTIN_BOTS, "Random", "GREEDY"]:
            err = org.refused("RegisterBot", organiser_pb2.RegisterBotRequest(name=name))
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "built-in bot" in (err.details() or "")


@pytest.mark.parametrize(
    ("method", "request_", "says"),
    [
        ("RegisterBot", organiser_pb2.RegisterBotRequest(name="x" * 500_000), "name is 500000"),
        ("RegisterBot", organiser_pb2.RegisterBotRequest(name="bad\nname"), "invalid bot name"),
        ("RevokeToken", organiser_pb2.RevokeTokenRequest(name="x" * 100_000), "name is 100000"),
        ("RotateToken", organiser_pb2.RotateTokenRequest(name="y" * 70), "name is 70"),
        (
            "StartMatch",
            organiser_pb2.StartMatchRequest(seed="s" * 300, bots=["random"] * 3),
            "seed is 300 characters long",
        ),
        (
            "StartMatch",
            organiser_pb2.StartMatchRequest(seed="s", bots=["random"] * 9),
            "9 bots were named",
        ),
        (
            "StartMatch",
            organiser_pb2.StartMatchRequest(seed="s", bots=["r" * 1000, "random", "random"]),
            "bots[0] is 1000 characters long",
        ),
        (
            "StartMatch",
            organiser_pb2.StartMatchRequest(
                seed="s", bots=["random"] * 3, options_json="{" + " " * 70_000 + "}"
            ),
            "options_json is 70002 characters long",
        ),
        (
            "StartMatch",
            organiser_pb2.StartMatchRequest(seed="s", bots=["random"] * 3, preset="p" * 65),
            "preset is 65 characters long",
        ),
        (
            "StartMatch",
            organiser_pb2.StartMatchRequest(seed="s", bots=["random"] * 3, match_id="a\nb"),
            "match_id 'a\\nb' may hold only",
        ),
        ("WatchMatch", organiser_pb2.WatchMatchRequest(match_id="m" * 200), "match_id is 200"),
    ],
)
def test_oversized_organiser_fields_are_invalid_argument(
    shared: GatewayProcess, method: str, request_: Any, says: str
) -> None:
    with Organiser(shared) as org:
        err = org.refused(method, request_)
    details = err.details() or ""
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, details
    assert says in details, details
    assert len(details) < 400
