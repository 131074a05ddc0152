"""A gateway process serving decisions routed through Redis (``arena serve --routing``).

Everything is real and separate: a redis-server on a free port, ``arena serve`` as a child
process, the built-in bots as SDK bot processes, and tournaments played by the local process
pool whose matches reach the bots through Redis and the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from arena.engine import replay as rp
from arena.match.types import DecisionRequest
from arena.rigs.processes import (
    BotProcess,
    GatewayProcess,
    RedisProcess,
    Service,
    stop_all,
    wait_until,
)
from arena.tournament.routing import (
    STALE_GRACE_S,
    RedisRemoteSeat,
    RemoteTimeout,
    requests_key,
)
from arena.tournament.run import run_tournament
from arena.tournament.spec import TournamentSpec, validate_spec
from arena.tournament.store import ResultStore

ORGANISER = "org-routing-test"
GREEDY = "arena.server.builtin_remote:Greedy"
RANDOM = "arena.server.builtin_remote:Random"


class Stack:
    """Redis, a gateway routing through it, and bot processes, all stopped at the end."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.redis = RedisProcess.start(tmp / "redis", tmp / "redis.log")
        self.gateway = GatewayProcess.start(
            db_path=tmp / "gateway.sqlite3",
            log_path=tmp / "gateway.log",
            organiser_token=ORGANISER,
            routing_url=self.redis.url,
        )
        self.bots: dict[str, BotProcess] = {}
        self.tokens: dict[str, str] = {}

    def bot(self, name: str, ref: str, *, wait: bool = True) -> BotProcess:
        if name not in self.tokens:
            self.tokens[name] = self.gateway.register(name)
        proc = BotProcess.start(
            name=name,
            bot_ref=ref,
            server=self.gateway.address,
            token=self.tokens[name],
            log_path=self.tmp / f"bot-{name}.log",
        )
        self.bots[name] = proc
        if wait:
            self.gateway.wait_instances([name], bots=[proc])
        return proc

    def log(self) -> str:
        return self.gateway.log_text()

    def close(self) -> None:
        stop_all(self.bots.values())
        services: list[Service] = [self.gateway, self.redis]
        for s in services:
            s.stop()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    s = Stack(tmp_path)
    try:
        yield s
    finally:
        s.close()


def tournament(
    db: Path, routing: str, participants: list[dict[str, str]], **extra: Any
) -> TournamentSpec:
    data: dict[str, Any] = {
        "name": "routed",
        "seed": "routing-1",
        "public_seed": True,  # several stores must deal the same cards
        "rules": "classic",
        "participants": participants,
        "format": "duplicate",
        "sets": 1,
        "max_deals": 4,
        "time_control": {"decision_ms": 3000, "bank_ms": 5000, "strike_limit": 3},
        "executor": {"type": "local", "workers": 2, "routing": routing},
        "db": f"sqlite:///{db}",
    }
    data.update(extra)
    return validate_spec(data)


def stored(spec: TournamentSpec) -> list[Any]:
    with ResultStore(spec.db) as store:
        return list(store.iter_results(spec.name, with_replay=True))


def stored_count(path: Path, tournament: str) -> int:
    """Rows stored so far, read the way a spectator would: read-only, never creating or
    converting the file the tournament is writing."""
    if not path.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT COUNT(*) FROM matches WHERE tournament = ?", (tournament,))
            return int(row.fetchone()[0])
    except sqlite3.OperationalError:  # not created yet, or busy for a moment
        return 0


def fingerprint(spec: TournamentSpec) -> list[tuple[Any, ...]]:
    return [
        (*r.outcome_key(), json.dumps(r.replay["deals"]), r.timeouts, r.illegal)
        for r in stored(spec)
    ]


REMOTE = [
    {"name": "g", "bot": "remote:g"},
    {"name": "r", "bot": "remote:r"},
    {"name": "rnd", "bot": "random"},
]


def test_a_tournament_reaches_sdk_bots_on_a_gateway_process(stack: Stack, tmp_path: Path) -> None:
    stack.bot("g", GREEDY)
    stack.bot("r", RANDOM)
    first = tournament(tmp_path / "first.sqlite3", stack.redis.url, REMOTE)
    summary = run_tournament(first)
    assert summary.finished and summary.played == 6

    records = stored(first)
    assert len(records) == 6
    assert {r.status for r in records} == {"completed"}
    assert all(sum(r.timeouts) == 0 and sum(r.illegal) == 0 for r in records)
    assert {tuple(r.bots) for r in records} >= {("remote:g", "remote:r", "random")}
    for r in records:
        assert rp.verify(r.replay) is None
    assert "routing: serving requests for bot g" in stack.log()

    # The same spec again (another database): the same moves, the same results.
    again = tournament(tmp_path / "again.sqlite3", stack.redis.url, REMOTE)
    run_tournament(again)
    assert fingerprint(again) == fingerprint(first)

    # The greedy bot over the SDK is the built-in greedy bot: played in-process instead,
    # every match has the same moves and scores.
    local = [{"name": "g", "bot": "greedy"}, *REMOTE[1:]]
    inproc = tournament(tmp_path / "inproc.sqlite3", stack.redis.url, local)
    run_tournament(inproc)
    assert [f[:-2] for f in fingerprint(inproc)] == [f[:-2] for f in fingerprint(first)]


def test_a_bot_lost_mid_tournament_costs_strikes_and_nothing_else(
    stack: Stack, tmp_path: Path
) -> None:
    """Killing the bot mid-run: its seats time out (fallback moves, strikes, forfeits), every
    match is still stored and replays; once it reconnects it plays normally again."""
    stack.bot("g", GREEDY)
    bot = stack.bot("r", RANDOM)
    spec = tournament(
        tmp_path / "lost.sqlite3",
        stack.redis.url,
        REMOTE,
        sets=3,
        max_deals=3,
        time_control={"decision_ms": 250, "bank_ms": 250, "strike_limit": 2},
    )
    result: dict[str, Any] = {}

    def play() -> None:
        try:
            result["summary"] = run_tournament(spec)
        except BaseException as exc:  # reported by the assertion below
            result["error"] = exc

    runner = threading.Thread(target=play, daemon=True)
    runner.start()

    def count() -> int:
        return stored_count(tmp_path / "lost.sqlite3", spec.name)

    wait_until(lambda: count() >= 2 or not runner.is_alive(), timeout=60, what="the first results")
    assert "error" not in result, result
    bot.kill()
    wait_until(lambda: "stopped serving requests for bot r" in stack.log(),
               timeout=20, what="the pump to stop")
    lost_at = count()
    wait_until(lambda: count() >= lost_at + 3, timeout=60, what="matches played without the bot")
    stack.bot("r", RANDOM)
    runner.join(120)
    assert not runner.is_alive() and "error" not in result, result
    assert result["summary"].finished

    records = stored(spec)
    assert len(records) == 18  # nothing lost
    seat = [r.players.index("r") for r in records]
    missed = [r for r, s in zip(records, seat, strict=True) if r.timeouts[s] > 0]
    assert missed, "some matches ran while the bot was away"
    for r, s in zip(records, seat, strict=True):
        assert r.illegal[s] == 0 and r.strikes[s] == r.timeouts[s]
        if r.timeouts[s] >= 2:
            # Two strikes forfeit the match for that seat, which ranks last.
            assert (r.status, r.forfeit_seat, r.ranks[s]) == ("forfeit", s, 3)
        else:
            # A match that ended before the second strike (the bot left near its end).
            assert r.status == "completed"
        assert rp.verify(r.replay) is None
    assert any(r.status == "forfeit" for r in records)
    last = max(records, key=lambda r: r.index)
    assert last.timeouts == [0, 0, 0], "after reconnecting the bot plays normally"
    assert stack.log().count("routing: serving requests for bot r") == 2


def decide(url: str, bot: str, deadline_ms: int = 8000, n: int = 0) -> str:
    """One decision as a match in a worker asks it: through Redis, waiting on the reply."""

    async def ask() -> str:
        seat = RedisRemoteSeat(url, bot, forward_events=False)
        try:
            return await seat.decide(
                DecisionRequest(
                    match_id="m-direct",
                    request_id=f"m-direct/{n}",
                    seat=0,
                    observation={"seat": 0, "phase": "auction", "hand": ["AS", "TS"]},
                    legal=("pass", "bid 110"),
                    deadline_ms=deadline_ms,
                    time_bank_ms=0,
                )
            )
        finally:
            await seat.aclose()

    return asyncio.run(ask())


def blpop_clients(url: str) -> int:
    """Connections blocked popping a list now (BLPOP, or BLMPOP as the gateway does on
    Redis 7; flag ``b``), as Redis itself reports them."""
    client = redis.Redis.from_url(url)
    try:
        return sum(
            1 for c in client.client_list()
            if c.get("cmd") in ("blpop", "blmpop") and "b" in c.get("flags", "")
        )
    finally:
        client.close()


def test_pumping_follows_the_bot_and_survives_a_redis_restart(
    stack: Stack, tmp_path: Path
) -> None:
    url = stack.redis.url
    # Nobody connected: the gateway leaves the bot's requests alone (another gateway may have
    # the bot), and a match asking it times out.
    asked = time.time()
    with pytest.raises(RemoteTimeout):
        decide(url, "solo", deadline_ms=300)
    assert redis.Redis.from_url(url).llen(requests_key("solo")) == 1
    assert blpop_clients(url) == 0

    # Connected: the gateway pumps the list and the bot answers. The left-over request is past
    # its time (plus the grace the gateway allows) and is dropped, not sent.
    time.sleep(max(0.0, asked + 0.3 + STALE_GRACE_S + 0.2 - time.time()))
    bot = stack.bot("solo", RANDOM)
    assert decide(url, "solo", n=1) in {"pass", "bid 110"}
    wait_until(lambda: blpop_clients(url) == 1, timeout=10, what="the pump to wait on the list")
    assert "dropping a stale request for bot solo" in stack.log()

    # Redis restarts: one line when it is lost, one when it is back, and routing goes on.
    port = stack.redis.port
    stack.redis.stop()
    wait_until(lambda: "is unreachable" in stack.log(), timeout=20, what="the lost-Redis log line")
    stack.redis = RedisProcess.start(tmp_path / "redis", tmp_path / "redis2.log", port=port)
    wait_until(lambda: "is reachable again" in stack.log(),
               timeout=30, what="the Redis-back log line")
    assert decide(url, "solo", n=2) in {"pass", "bid 110"}
    assert stack.log().count("is unreachable") == 1
    assert bot.alive() and stack.gateway.alive()

    # The last instance leaves: the pump stops and requests stay in Redis.
    bot.stop()
    wait_until(lambda: blpop_clients(url) == 0, timeout=20, what="the pump to stop")
    with pytest.raises(RemoteTimeout):
        decide(url, "solo", deadline_ms=300, n=3)
    assert redis.Redis.from_url(url).llen(requests_key("solo")) == 1


def serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "arena.server", "--port", "0", "--db", str(tmp_path / "b")]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_routing_url_that_is_not_redis_is_refused(tmp_path: Path) -> None:
    done = serve(tmp_path, "--routing", "http://127.0.0.1:6379")
    assert done.returncode == 2
    assert "--routing must be a Redis URL" in done.stderr


def test_the_gateway_starts_while_redis_is_down(tmp_path: Path) -> None:
    from arena.rigs.processes import free_port

    port = free_port()
    gateway = GatewayProcess.start(
        db_path=tmp_path / "gateway.sqlite3",
        log_path=tmp_path / "gateway.log",
        organiser_token=ORGANISER,
        routing_url=f"redis://:secret@127.0.0.1:{port}/0",
    )
    try:
        text = wait_until(lambda: "not reachable yet" in gateway.log_text(),
                          timeout=20, what="the line")
        assert text
        log = gateway.log_text()
        assert "secret" not in log  # the password is not logged
        assert gateway.register("late") and gateway.instances() == {"late": 0}
    finally:
        gateway.stop()


def test_arena_match_with_remote_bots_writes_a_replay_through_routing(
    stack: Stack, tmp_path: Path
) -> None:
    """`arena match --routing` plays here, reaches the remote bots through their gateway's
    Redis, and so writes a replay that `arena replay verify` accepts."""
    stack.bot("greedy-sdk", GREEDY)  # a built-in bot's name cannot be registered
    replay = tmp_path / "match.json"
    res = subprocess.run(
        [sys.executable, "-m", "arena.cli", "match", "--routing", stack.redis.url,
         "--seed", "9", "--public-seed", "--max-deals", "3", "--quiet", "--replay", str(replay),
         "remote:greedy-sdk", "greedy", "random"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr + res.stdout
    data = rp.load(replay)
    assert data["seats"][0] == "remote:greedy-sdk"
    assert rp.verify(data) is None
    verify = subprocess.run(
        [sys.executable, "-m", "arena.cli", "replay", "verify", str(replay)],
        capture_output=True, text=True, timeout=60,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # Every decision of the remote seat was answered in time: no fallbacks in the replay.
    marks = [a for d in data["deals"] for a in d["actions"] if a[0] == 0 and len(a) > 2]
    assert marks == []


def test_a_frozen_gateway_costs_the_bot_nothing(stack: Stack) -> None:
    """The gateway keeps the bot's clock and says when it starts: a gateway that takes
    its time to pick a request up (here frozen for longer than the whole budget plus the
    worker's margin) must not turn the bot's instant answer into a timeout."""
    import os
    import signal

    from arena.referee.clock import BotClock

    url = stack.redis.url
    stack.bot("patient", RANDOM)
    assert decide(url, "patient", n=1) in {"pass", "bid 110"}  # warm: the pump is running

    async def ask() -> tuple[str, BotClock]:
        seat = RedisRemoteSeat(url, "patient", forward_events=False)
        clock = BotClock()
        try:
            action = await seat.decide_clocked(
                DecisionRequest(
                    match_id="m-frozen",
                    request_id="m-frozen/1",
                    seat=0,
                    observation={"seat": 0, "phase": "auction", "hand": ["AS", "TS"]},
                    legal=("pass", "bid 110"),
                    deadline_ms=200,
                    time_bank_ms=0,
                ),
                clock,
            )
        finally:
            await seat.aclose()
        return action, clock

    pid = stack.gateway.proc.pid
    os.kill(pid, signal.SIGSTOP)
    thaw = threading.Timer(1.6, os.kill, (pid, signal.SIGCONT))
    thaw.start()
    try:
        started = time.perf_counter()
        action, clock = asyncio.run(ask())
        took = time.perf_counter() - started
    finally:
        thaw.join()
        os.kill(pid, signal.SIGCONT)
    assert action in {"pass", "bid 110"}
    assert took > 1.5  # it really waited for the gateway
    assert clock.reported_bot_s is not None and clock.reported_bot_s < 0.2
    assert clock.platform_s() > 1.0  # ...and the wait is on the platform's account


def test_the_gateway_says_when_the_bots_time_starts(stack: Stack) -> None:
    """A routed decision's answer comes back with the bot's own time. A bot still thinking
    after half its time makes the gateway say ``started`` first: a worker then waits for
    the bot's budget from there, whatever it took the platform to get the question to the
    bot. A quick answer comes alone (one message, one round trip less)."""
    from arena.rigs.testing import RawBot

    url = stack.redis.url
    stack.bot("talker", RANDOM)
    client = redis.Redis.from_url(url)

    def ask(bot: str, reply_to: str, budget_ms: int) -> None:
        message = {
            "kind": "decide", "reply_to": reply_to, "request_id": f"m-p/{reply_to}",
            "match_id": "m-p", "seat": 0,
            "observation": {"seat": 0, "phase": "auction", "hand": ["AS", "TS"]},
            "legal": ["pass", "bid 110"], "deadline_ms": budget_ms, "time_bank_ms": 0,
            "budget_ms": budget_ms, "expires_at": time.time() + budget_ms / 1000,
        }
        client.rpush(requests_key(bot), json.dumps(message))

    silent = RawBot(stack.gateway.address, stack.gateway.register("silent"))
    try:
        ask("talker", "arena:reply:quick", 5000)
        quick = client.blpop(["arena:reply:quick"], timeout=10)
        stack.gateway.wait_instances(["silent"])
        ask("silent", "arena:reply:slow", 600)
        slow = [client.blpop(["arena:reply:slow"], timeout=10) for _ in range(2)]
        left = client.llen("arena:reply:quick")
    finally:
        silent.close()
        client.close()
    assert quick is not None and left == 0
    reply = json.loads(quick[1])
    assert reply["action"] in {"pass", "bid 110"}
    assert 0 <= reply["bot_ms"] < 5000 and reply["platform_ms"] >= 0
    assert all(item is not None for item in slow)
    first, second = (json.loads(item[1]) for item in slow if item is not None)
    assert first == {"started": True}
    assert second["timeout"] is True and second["bot_ms"] >= 600


def test_a_redis_restart_mid_match_costs_time_not_moves(stack: Stack, tmp_path: Path) -> None:
    """Redis goes away in the middle of a routed match and comes back: the decisions that
    could not travel are asked again once it is back, so the match ends with no fallback
    move and no strike, and its replay verifies."""
    from arena.match.types import MatchSpec, TimeControl
    from arena.referee.runner import run_match_sync
    from arena.tournament.routing import routing_resolver

    for name in ("x", "y", "z"):
        stack.bot(name, GREEDY)
    spec = MatchSpec(
        match_id="m-outage",
        rules={"preset": "classic"},
        seed="outage",
        bots=("remote:x", "remote:y", "remote:z"),
        time_control=TimeControl(decision_ms=2000, bank_ms=0, strike_limit=1),
        max_deals=60,
    )
    out: dict[str, Any] = {}

    def play() -> None:
        try:
            out["result"] = run_match_sync(spec, routing_resolver(stack.redis.url))
        except BaseException as exc:
            out["error"] = exc

    runner = threading.Thread(target=play, daemon=True)
    runner.start()
    time.sleep(1.0)
    assert runner.is_alive(), out
    port = stack.redis.port
    stack.redis.stop()
    time.sleep(2.0)
    stack.redis = RedisProcess.start(tmp_path / "redis", tmp_path / "redis2.log", port=port)
    runner.join(180)
    assert not runner.is_alive() and "error" not in out, out
    result = out["result"]
    assert result.status == "completed"
    assert [s.strikes for s in result.seat_stats] == [0, 0, 0]
    assert sum(s.platform_faults for s in result.seat_stats) >= 1
    assert rp.verify(result.replay) is None
    notes = [a[2] for d in result.replay["deals"] for a in d["actions"] if len(a) > 2]
    assert notes == [], "no move was played for a seat"
