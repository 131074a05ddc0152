"""A seeded duplicate tournament through a real gateway: the four starter bots, each
behind ``thousand-bot run --stdio``, with a Python SDK bot and the Node.js bot.

Everything is a process of its own, as an organiser runs it: a private Redis, ``arena
serve --routing``, six bot processes connected to it. The tournament plays here and
reaches every bot through Redis and the gateway, as Celery workers would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from stdio_support import LANGUAGES, Starter

from arena.engine import replay as rp
from arena.rigs.processes import (
    BotProcess,
    GatewayProcess,
    RedisProcess,
    Service,
    stop_all,
)
from arena.tournament.executors import InlineExecutor
from arena.tournament.run import run_tournament
from arena.tournament.spec import validate_spec
from arena.tournament.store import ResultStore

REPO = Path(__file__).resolve().parents[2]
JS = REPO / "sdk" / "javascript"


@pytest.fixture
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not installed: the JavaScript starter bot needs Node.js 18+")
    if not (JS / "node_modules" / "@grpc" / "grpc-js").is_dir():
        npm = shutil.which("npm")
        assert npm is not None, "npm is needed to install the Node.js bot's dependencies"
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=JS, check=True, timeout=600)
    return found


@pytest.fixture
def services(tmp_path: Path) -> Iterator[list[Service]]:
    started: list[Service] = []
    try:
        yield started
    finally:
        stop_all(reversed(started))


def _bridge(gateway: GatewayProcess, name: str, argv: tuple[str, ...], log: Path,
            env: dict[str, str]) -> Service:
    command = [sys.executable, "-m", "thousand_bot.cli", "run", "--stdio", "--gateway",
               gateway.address, "--max-attempts", "40", "--log-level", "WARNING", "--", *argv]
    bot_env = dict(env, THOUSAND_BOT_TOKEN=gateway.register(name))
    return Service(name, Service.spawn(command, log, bot_env), log)


def test_a_duplicate_tournament_of_every_kind_of_bot_through_a_real_gateway(
    tmp_path: Path, starters: dict[str, Starter], tools: dict[str, str], node: str,
    services: list[Service],
) -> None:
    redis = RedisProcess.start(tmp_path / "redis", tmp_path / "redis.log")
    services.append(redis)
    gateway = GatewayProcess.start(db_path=tmp_path / "gateway.sqlite3",
                                   log_path=tmp_path / "gateway.log",
                                   organiser_token="organiser-stdio", routing_url=redis.url)
    services.append(gateway)
    names = {lang: f"{lang}-starter" for lang in LANGUAGES}
    for lang, name in names.items():
        services.append(_bridge(gateway, name, starters[lang].argv, tmp_path / f"{name}.log",
                                tools))
    services.append(BotProcess.start(name="python-sdk", bot_ref="thousand_bot.examples:Greedy",
                                     server=gateway.address, token=gateway.register("python-sdk"),
                                     log_path=tmp_path / "python-sdk.log"))
    node_log = tmp_path / "node.log"
    node_proc = Service.spawn([node, str(JS / "bot.js"), "--gateway", gateway.address],
                              node_log, dict(os.environ,
                                             THOUSAND_BOT_TOKEN=gateway.register("node-bot")))
    services.append(Service("node-bot", node_proc, node_log))
    players = [*names.values(), "python-sdk", "node-bot"]
    gateway.wait_instances(players, bots=services[2:], timeout=60)

    spec = validate_spec({
        "name": "every-language",
        "seed": "stdio-duplicate",
        "public_seed": True,  # the bots are the arena's own: the same seed, the same games
        "rules": "classic",
        # The first two sit at every table; sets 0-3 seat each of the others once.
        "participants": [f"remote:{p}" for p in players],
        "format": {"type": "duplicate", "seatings": "latin"},
        "sets": 4,
        "max_deals": 3,
        "time_control": {"decision_ms": 5000, "bank_ms": 20000, "strike_limit": 3},
        "executor": {"type": "inline", "routing": redis.url},
        "db": f"sqlite:///{tmp_path / 'results.sqlite3'}",
    })
    summary = run_tournament(spec, executor=InlineExecutor(routing_url=redis.url))
    assert summary.finished and summary.played == 12

    with ResultStore(spec.db) as store:
        records = list(store.iter_results(spec.name, with_replay=True))
    assert len(records) == 12
    seen: dict[str, int] = {}
    for rec in records:
        assert rec.status == "completed", rec.status
        assert rec.replay is not None and rp.verify(rec.replay) is None
        for player, stats in zip(rec.players, rec.seat_stats, strict=True):
            assert stats["strikes"] == 0 and stats["timeouts"] == 0, (player, stats)
            seen[player] = seen.get(player, 0) + stats["decisions"]
    assert set(seen) == set(players) and all(n > 0 for n in seen.values()), seen
    # The games of a set share their seed and deal the same cards: the duplicate format.
    sets: dict[str, list[list[int]]] = {}
    for rec in records:
        assert rec.replay is not None
        deck = rec.replay["deals"][0]["deck"]
        sets.setdefault(rec.seed, []).append(deck)
    assert len(sets) == 4
    for decks in sets.values():
        assert len(decks) == 3 and all(d == decks[0] for d in decks)


def test_a_program_is_a_tournament_participant(tmp_path: Path, starters: dict[str, Starter]
                                               ) -> None:
    """``cmd:`` in a spec: each match starts the program where it is played."""
    from arena.tournament.executors import LocalExecutor
    from arena.tournament.spec import SpecError

    c = starters["c"].cmd
    data = {
        "name": "with-a-program", "seed": "cmd", "rules": "classic",
        "participants": [{"name": "c", "bot": c}, "greedy", "random"],
        "format": {"type": "duplicate", "seatings": "latin"}, "sets": 1, "max_deals": 2,
        "executor": {"type": "local", "workers": 1},
        "db": f"sqlite:///{tmp_path / 'results.sqlite3'}",
    }
    spec = validate_spec(data)
    summary = run_tournament(spec, executor=LocalExecutor(1))
    assert summary.finished and summary.played == 3
    with ResultStore(spec.db) as store:
        records = list(store.iter_results(spec.name, with_replay=True))
    for rec in records:
        assert rec.status == "completed" and rec.replay is not None
        assert rp.verify(rec.replay) is None
        stats = rec.seat_stats[rec.players.index("c")]
        assert stats["decisions"] > 0 and stats["strikes"] == 0
    with pytest.raises(SpecError, match=r"no program \./not-built-yet"):
        validate_spec({**data, "participants": ["cmd:./not-built-yet", "greedy", "random"]})
