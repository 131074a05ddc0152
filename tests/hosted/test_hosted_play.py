"""Hosted Python and Node bots play in sandboxes where matches run: the local process pool
and real Celery workers, their versions fetched from the results store by hash."""

from __future__ import annotations

from pathlib import Path

from hosted_support import (
    add_passed,
    assert_verifies,
    node_bot,
    python_bot,
    scheduled,
)

from arena.hosted.store import HostedStore
from arena.tournament.executors import CeleryExecutor, LocalExecutor
from arena.tournament.model import ResultRecord
from arena.tournament.store import ResultStore


def _matches(py: str, js: str) -> list:  # type: ignore[type-arg]
    return [
        scheduled(0, [py, "greedy", js]),
        scheduled(1, [js, py, "random"]),
        scheduled(2, ["greedy", js, py]),
        scheduled(3, [py, js, "greedy"]),
    ]


def _check(store: ResultStore, rows: list[ResultRecord], py_hash: str, js_hash: str) -> None:
    assert len(rows) == 4
    hosted = HostedStore(store)
    for row in rows:
        full = store.get(row.match_id, with_replay=True)
        assert full is not None and full.status == "completed"
        assert_verifies(full.replay)
        assert sum(full.strikes) == 0, full.seat_stats
        runs = hosted.runs(match_id=row.match_id)
        assert sorted(r.version for r in runs) == sorted([py_hash, js_hash])
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
    rows: list[ResultRecord] = []
    with LocalExecutor(workers=2) as executor:
        executor.run(_matches(py.ref, js.ref), store, rows.append)
    _check(store, rows, py.hash, js.hash)
    assert sorted(p.name for p in (scratch / "cache").iterdir()) == sorted([py.hash, js.hash])


def test_hosted_bots_play_on_celery_workers(scratch: Path, broker: str, start_worker) -> None:  # type: ignore[no-untyped-def]
    store = ResultStore(f"sqlite:///{scratch / 'results.sqlite3'}")
    py = add_passed(store, "py", python_bot(scratch, "py"))
    js = add_passed(store, "js", node_bot(scratch))
    start_worker(pool="prefork", concurrency=2,
                 env={"ARENA_BOT_CACHE": str(scratch / "cache")})
    rows: list[ResultRecord] = []
    executor = CeleryExecutor(broker=broker, poll_s=0.1)
    try:
        executor.run(_matches(py.ref, js.ref), store, rows.append)
    finally:
        executor.close()
    _check(store, rows, py.hash, js.hash)
