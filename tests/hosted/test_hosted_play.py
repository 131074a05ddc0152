"""Hosted Python, Node and binary bots play in sandboxes where matches run: the local
process pool and real Celery workers, their versions fetched from the results store by
hash."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hosted_support import (
    add_passed,
    assert_verifies,
    binary_bot,
    node_bot,
    python_bot,
    scheduled,
)

from arena.hosted.play import PLATFORM_ATTEMPTS, HostedBots, play_hosted_sync
from arena.hosted.seat import PlatformFault
from arena.hosted.store import HostedStore
from arena.sandbox import SandboxHost
from arena.tournament.executors import CeleryExecutor, LocalExecutor
from arena.tournament.model import ResultRecord
from arena.tournament.store import ResultStore


def _matches(py: str, js: str, c: str) -> list:  # type: ignore[type-arg]
    return [
        scheduled(0, [py, c, js]),
        scheduled(1, [js, py, c]),
        scheduled(2, [c, js, py]),
        scheduled(3, [py, js, c]),
    ]


def _check(store: ResultStore, rows: list[ResultRecord], *hashes: str) -> None:
    assert len(rows) == 4
    hosted = HostedStore(store)
    for row in rows:
        full = store.get(row.match_id, with_replay=True)
        assert full is not None and full.status == "completed"
        assert_verifies(full.replay)
        assert sum(full.strikes) == 0, full.seat_stats
        runs = hosted.runs(match_id=row.match_id)
        assert sorted(r.version for r in runs) == sorted(hashes)
        for run in runs:
            assert run.status == "ok", (run, run.detail)
            assert run.sandbox_ms is not None and run.connect_ms is not None
    # Each version was fetched once into this host's cache, by its hash.
    logs = hosted.logs("js", limit=10)
    assert logs and all(run.bot == "js" for run, _ in logs)
    assert "connected" in logs[0][1]


def test_hosted_bots_play_on_the_local_pool(scratch: Path) -> None:
    store = ResultStore(f"sqlite:///{scratch / 'results.sqlite3'}")
    py = add_passed(store, "py", python_bot(scratch, "py"))
    js = add_passed(store, "js", node_bot(scratch))
    c = add_passed(store, "c", binary_bot(scratch))
    rows: list[ResultRecord] = []
    with LocalExecutor(workers=2) as executor:
        executor.run(_matches(py.ref, js.ref, c.ref), store, rows.append)
    _check(store, rows, py.hash, js.hash, c.hash)
    assert sorted(p.name for p in (scratch / "cache").iterdir()) == sorted(
        [py.hash, js.hash, c.hash])


def test_hosted_bots_play_on_celery_workers(scratch: Path, broker: str, start_worker) -> None:  # type: ignore[no-untyped-def]
    store = ResultStore(f"sqlite:///{scratch / 'results.sqlite3'}")
    py = add_passed(store, "py", python_bot(scratch, "py"))
    js = add_passed(store, "js", node_bot(scratch))
    c = add_passed(store, "c", binary_bot(scratch))
    start_worker(pool="prefork", concurrency=2,
                 env={"ARENA_BOT_CACHE": str(scratch / "cache")})
    rows: list[ResultRecord] = []
    executor = CeleryExecutor(broker=broker, poll_s=0.1)
    try:
        executor.run(_matches(py.ref, js.ref, c.ref), store, rows.append)
    finally:
        executor.close()
    _check(store, rows, py.hash, js.hash, c.hash)


def test_a_host_that_cannot_set_up_sandboxes_voids_the_match(
    scratch: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """The platform's fault, not the bot's: the match is void and played again, and after
    the last attempt the fault says why (it used to escape as the sandbox's own error,
    failing the tournament at the first passing fault)."""
    store = ResultStore(f"sqlite:///{scratch / 'results.sqlite3'}")
    py = add_passed(store, "py", python_bot(scratch, "py"))
    blocker = scratch / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ARENA_SANDBOX_DIR", str(blocker / "sandbox"))
    SandboxHost.reset()
    caplog.set_level(logging.WARNING, logger="arena.hosted.play")
    try:
        with pytest.raises(PlatformFault, match="seat 0 \\(py\\): cannot prepare the sandbox"):
            play_hosted_sync(scheduled(0, [py.ref, "greedy", "random"]).spec,
                             HostedBots(HostedStore(store)))
    finally:
        SandboxHost.reset()
    voided = [r for r in caplog.records if "voided by the platform" in r.getMessage()]
    assert len(voided) == PLATFORM_ATTEMPTS
