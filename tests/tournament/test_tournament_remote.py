"""A tournament mixing built-in bots with a bot connected to a real gateway over gRPC.

The bot is the Python SDK's ``FirstLegal`` in its own process, connected to a gateway
on a free port.  Matches run in a Celery worker; its seat for ``remote:sdk-bot`` sends
each decision through Redis to the gateway's pump, which asks the bot over its stream.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from tournament_support import REPO, Worker, wait_for

from arena.server.app import Gateway
from arena.server.hub import RemoteSeat
from arena.tournament.executors import CeleryExecutor, InlineExecutor
from arena.tournament.routing import pump_redis_requests
from arena.tournament.run import run_tournament
from arena.tournament.spec import TournamentSpec, validate_spec
from arena.tournament.store import ResultStore

BOT = "sdk-bot"


class GatewayThread:
    """A gateway and its Redis pump on an event loop in a background thread."""

    def __init__(self, db_path: Path, redis_url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.gateway = Gateway(db_path=str(db_path), organiser_token="org-test")
        self.port = self.call(self.gateway.start())
        self.token = self.gateway.registry.register(BOT)
        self.stop_pump = asyncio.Event()
        self.pump: Future[None] = asyncio.run_coroutine_threadsafe(
            pump_redis_requests(
                redis_url, BOT, RemoteSeat(self.gateway.hub, BOT), stop=self.stop_pump, poll_s=0.2
            ),
            self.loop,
        )

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def instances(self) -> int:
        return self.gateway.hub.instances(BOT)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop_pump.set)
        self.pump.result(timeout=10)
        self.call(self.gateway.stop(grace_s=1))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


@pytest.fixture()
def gateway(tmp_path: Path, broker: str) -> Iterator[GatewayThread]:
    gw = GatewayThread(tmp_path / "gateway.sqlite3", broker)
    bot = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "thousand_bot.cli",
            "run",
            "thousand_bot.examples:FirstLegal",
            "--server",
            f"127.0.0.1:{gw.port}",
            "--log-level",
            "WARNING",
        ],
        env={
            **os.environ,
            "THOUSAND_BOT_TOKEN": gw.token,
            "PYTHONPATH": os.pathsep.join([str(REPO / "sdk" / "python"), str(REPO)]),
        },
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "bot.log").open("wb"),
    )
    try:
        wait_for(lambda: gw.instances() >= 1, timeout=30, what="the SDK bot to connect")
        yield gw
    finally:
        bot.terminate()
        bot.wait(timeout=10)
        gw.close()


def spec_for(db: Path, routing: str) -> TournamentSpec:
    return validate_spec(
        {
            "name": "mixed",
            "seed": "mixed-1",
            "public_seed": True,  # two stores below must deal the same cards
            "rules": "classic",
            "participants": ["greedy", "random", f"remote:{BOT}"],
            "format": "duplicate",
            "sets": 1,
            "max_deals": 2,
            "time_control": {"decision_ms": 3000, "bank_ms": 5000, "strike_limit": 3},
            "executor": {"type": "celery", "routing": routing},
            "db": f"sqlite:///{db}",
        }
    )


def fingerprint(spec: TournamentSpec) -> list[tuple[Any, ...]]:
    with ResultStore(spec.db) as store:
        return [
            (*r.outcome_key(), json.dumps(r.replay["deals"] if r.replay else None))
            for r in store.iter_results(spec.name, with_replay=True)
        ]


def test_mixed_tournament_reaches_the_gateway_bot(
    tmp_path: Path,
    broker: str,
    gateway: GatewayThread,
    start_worker: Callable[..., Worker],
) -> None:
    start_worker("mixed", pool="solo", env={"ARENA_ROUTING_URL": broker})
    spec = spec_for(tmp_path / "celery.sqlite3", broker)
    executor = CeleryExecutor(broker=broker, poll_s=0.05)
    try:
        summary = run_tournament(spec, executor=executor)
    finally:
        executor.close()
    assert summary.finished and summary.played == 6

    with ResultStore(spec.db) as store:
        rows = list(store.iter_results(spec.name))
    remote_decisions = 0
    for r in rows:
        seat = r.players.index(BOT)
        stats = r.seat_stats[seat]
        assert stats["timeouts"] == 0 and stats["illegal"] == 0 and stats["strikes"] == 0
        remote_decisions += stats["decisions"]
    assert remote_decisions > 0
    assert {r.status for r in rows} == {"completed"}

    # The same tournament played in this process reaches the bot the same way, and the
    # deterministic bot makes the results identical.
    inline = spec_for(tmp_path / "inline.sqlite3", broker)
    run_tournament(inline, executor=InlineExecutor(routing_url=broker))
    assert fingerprint(inline) == fingerprint(spec)
