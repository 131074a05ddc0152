"""Tournaments and leagues of hosted bots, named ``hosted:NAME`` in the spec like any bot.

A duplicate tournament of hosted Python, Node and binary bots on Celery workers gives the
same results, match for match, as the same bots connected as remote clients to a gateway
(the binary one through ``thousand-bot run --stdio``) with the same seed; each version is
rated as its own entrant; a league takes in a new version at its next round.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hosted_support import REPO, add_passed, binary_bot, node_bot, python_bot, register

from arena.rigs.processes import GatewayProcess
from arena.tournament.executors import CeleryExecutor, InlineExecutor, make_executor
from arena.tournament.run import run_tournament
from arena.tournament.spec import validate_spec
from arena.tournament.store import ResultStore

ORG = "org-hosted-tournament"


def _spec(name: str, bots: dict[str, str], db: str, **extra: object) -> object:
    return validate_spec({
        "name": name, "seed": "same-seed", "public_seed": True, "rules": "classic",
        "participants": [{"name": k, "bot": v} for k, v in bots.items()],
        "format": {"type": "duplicate"}, "sets": 1, "max_deals": 3, "db": db,
        "time_control": {"decision_ms": 3000, "bank_ms": 10000, "strike_limit": 3},
        **extra,
    })


def test_hosted_on_celery_equals_remote_clients(scratch: Path, broker: str,
                                                start_worker) -> None:  # type: ignore[no-untyped-def]
    db = f"sqlite:///{scratch / 'results.sqlite3'}"
    store = ResultStore(db)
    py_folder, js_folder = python_bot(scratch, "py"), node_bot(scratch)
    c_folder = binary_bot(scratch)
    py = add_passed(store, "py", py_folder)
    js = add_passed(store, "js", js_folder)
    c = add_passed(store, "c", c_folder)

    # The same bots as remote clients of a gateway, matches reaching them through Redis.
    gateway = GatewayProcess.start(db_path=scratch / "gateway.sqlite3",
                                   log_path=scratch / "gateway.log", organiser_token=ORG,
                                   routing_url=broker)
    clients: list[subprocess.Popen[bytes]] = []
    try:
        env = dict(os.environ, THOUSAND_BOT_TOKEN=register(gateway.port, ORG, "py-remote"))
        clients.append(subprocess.Popen(
            [sys.executable, "-m", "thousand_bot", "run", "bot.py:First", "--gateway",
             f"127.0.0.1:{gateway.port}"], cwd=py_folder, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        env = dict(os.environ, THOUSAND_BOT_TOKEN=register(gateway.port, ORG, "js-remote"),
                   NODE_PATH=str(REPO / "sdk" / "javascript" / "node_modules"),
                   THOUSAND_PROTO_DIR=str(REPO / "proto"))
        clients.append(subprocess.Popen(
            ["node", "bot.js", "--gateway", f"127.0.0.1:{gateway.port}"], cwd=js_folder,
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        env = dict(os.environ, THOUSAND_BOT_TOKEN=register(gateway.port, ORG, "c-remote"))
        clients.append(subprocess.Popen(
            [sys.executable, "-m", "thousand_bot", "run", "--stdio", "--gateway",
             f"127.0.0.1:{gateway.port}", "--", "./mybot"], cwd=c_folder, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        remote = _spec("as-remote", {"py": "remote:py-remote", "js": "remote:js-remote",
                                     "c": "remote:c-remote"}, db)
        with make_executor("local", workers=2, routing_url=broker) as executor:
            run_tournament(remote, store=store, executor=executor)  # type: ignore[arg-type]
    finally:
        for client in clients:
            client.terminate()
            client.wait(10)
        gateway.stop()

    start_worker(pool="prefork", concurrency=2, env={"ARENA_BOT_CACHE": str(scratch / "cache")})
    hosted = _spec("as-hosted", {"py": "hosted:py", "js": "hosted:js", "c": "hosted:c"}, db)
    executor = CeleryExecutor(broker=broker, poll_s=0.1)
    try:
        run_tournament(hosted, store=store, executor=executor)  # type: ignore[arg-type]
    finally:
        executor.close()

    a = store.results("as-remote")
    b = store.results("as-hosted")
    assert len(a) == len(b) == 6
    for ra, rb in zip(sorted(a.values(), key=lambda r: r.index),
                      sorted(b.values(), key=lambda r: r.index), strict=True):
        assert (ra.status, ra.scores, ra.ranks, ra.deals) == (rb.status, rb.scores,
                                                              rb.ranks, rb.deals)
        assert sum(ra.strikes) == sum(rb.strikes) == 0
    # Each hosted version is its own entrant, named by its hash.
    players = {p for r in b.values() for p in r.players}
    assert players == {f"py@{py.short}", f"js@{js.short}", f"c@{c.short}"}
    bots = {x for r in b.values() for x in r.bots}
    assert bots == {py.ref, js.ref, c.ref}


def test_a_league_takes_a_new_version_at_its_next_round(scratch: Path) -> None:
    db = f"sqlite:///{scratch / 'results.sqlite3'}"
    store = ResultStore(db)
    v1 = add_passed(store, "py", python_bot(scratch, "py-1"))
    league = {"format": {"type": "league", "rounds": 1}}
    spec = _spec("league", {"py": "hosted:py", "greedy": "greedy", "random": "random"}, db,
                 **league)
    run_tournament(spec, store=store, executor=InlineExecutor())  # type: ignore[arg-type]
    v2 = add_passed(store, "py", python_bot(scratch, "py-2", entry="second.py:First"))
    spec = _spec("league", {"py": "hosted:py", "greedy": "greedy", "random": "random"}, db,
                 format={"type": "league", "rounds": 2})
    run_tournament(spec, store=store, executor=InlineExecutor())  # type: ignore[arg-type]
    rounds: dict[int, set[str]] = {}
    for rec in store.results("league").values():
        rounds.setdefault(rec.round, set()).update(rec.players)
    assert f"py@{v1.short}" in rounds[0] and f"py@{v2.short}" not in rounds[0]
    assert f"py@{v2.short}" in rounds[1] and f"py@{v1.short}" not in rounds[1]
