"""Executors with the real referee and engine: same results everywhere, nothing lost or doubled."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tournament_support import Worker, free_port, pg_schema, wait_for

from arena.tournament.executors import CeleryExecutor, ExecutorError, InlineExecutor, LocalExecutor
from arena.tournament.formats import expand
from arena.tournament.run import RunSummary, run_tournament
from arena.tournament.spec import TournamentSpec, validate_spec
from arena.tournament.store import ResultStore

PARTICIPANTS: list[Any] = ["greedy", "random", {"name": "greedy-2", "bot": "greedy"}]


def make_spec(db: Path, **changes: Any) -> TournamentSpec:
    data: dict[str, Any] = {
        "name": "exec-cup",
        "seed": "exec-seed",
        "rules": "classic",
        "participants": PARTICIPANTS,
        "format": "duplicate",
        "sets": 3,
        "max_deals": 3,
        "db": f"sqlite:///{db}",
    }
    data.update(changes)
    return validate_spec(data, check_imports=False)


def fingerprint(spec: TournamentSpec) -> list[tuple[Any, ...]]:
    """Everything about the results that must not depend on the executor: outcome and moves."""
    with ResultStore(spec.db) as store:
        return [
            (*r.outcome_key(), json.dumps(r.replay["deals"] if r.replay else None, sort_keys=True))
            for r in store.iter_results(spec.name, with_replay=True)
        ]


def run_with(spec: TournamentSpec, executor: Any, **kwargs: Any) -> RunSummary:
    try:
        return run_tournament(spec, executor=executor, **kwargs)
    finally:
        executor.close()


def test_same_results_on_every_executor_and_worker_count(
    tmp_path: Path,
    broker: str,
    start_worker: Callable[..., Worker],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One seat pauses a little in the Celery workers only, so that with two workers both
    # surely get matches; the pause changes no move.
    monkeypatch.setenv("ARENA_TEST_BOT_DELAY", "0")
    participants = [{"name": "paced", "bot": "tournament_bots:SlowGreedy"}, *PARTICIPANTS[1:]]

    def spec_at(db: Path) -> TournamentSpec:
        return make_spec(db, participants=participants)

    paced = {"ARENA_TEST_BOT_DELAY": "0.005"}
    runs: dict[str, list[tuple[Any, ...]]] = {}
    inline = spec_at(tmp_path / "inline.sqlite3")
    summary = run_with(inline, InlineExecutor())
    assert summary.finished and summary.played == 18
    runs["inline"] = fingerprint(inline)
    for n in (1, 2):
        spec = spec_at(tmp_path / f"local{n}.sqlite3")
        run_with(spec, LocalExecutor(workers=n))
        runs[f"local-{n}"] = fingerprint(spec)
    start_worker("a", pool="prefork", concurrency=1, env=paced)
    spec = spec_at(tmp_path / "celery1.sqlite3")
    run_with(spec, CeleryExecutor(broker=broker, poll_s=0.05))
    runs["celery-1"] = fingerprint(spec)
    start_worker("b", pool="solo", env=paced)
    spec = spec_at(tmp_path / "celery2.sqlite3")
    run_with(spec, CeleryExecutor(broker=broker, poll_s=0.05, window=4))
    runs["celery-2"] = fingerprint(spec)
    with ResultStore(spec.db) as store:
        workers = {r.worker for r in store.iter_results(spec.name)}
    assert len(workers) == 2, "both Celery workers played"

    reference = runs["inline"]
    assert len(reference) == 18
    assert [row[0] for row in reference] == [m.match_id for m in expand(inline)]
    for name, rows in runs.items():
        assert rows == reference, f"{name} differs from inline"


def test_resume_plays_only_matches_without_a_result(tmp_path: Path) -> None:
    spec = make_spec(tmp_path / "resume.sqlite3")
    first = run_with(spec, InlineExecutor(), max_matches=5)
    assert (first.played, first.finished) == (5, False)
    second = run_with(spec, LocalExecutor(workers=2))
    assert (second.played, second.already_stored, second.finished) == (13, 5, True)
    third = run_with(spec, InlineExecutor())
    assert (third.played, third.finished) == (0, True)
    fresh = make_spec(tmp_path / "fresh.sqlite3")
    run_with(fresh, InlineExecutor())
    assert fingerprint(spec) == fingerprint(fresh)


def test_a_failing_match_is_reported_on_every_executor(
    tmp_path: Path, broker: str, start_worker: Callable[..., Worker]
) -> None:
    bad = [*PARTICIPANTS[:2], {"name": "boom", "bot": "tournament_bots:Exploding"}]
    for executor in (InlineExecutor(), LocalExecutor(workers=1)):
        spec = make_spec(tmp_path / f"{executor.name}.sqlite3", participants=bad, sets=1)
        with pytest.raises(ExecutorError, match=r"match 0 .*this bot cannot start"):
            run_with(spec, executor)
    start_worker("f", pool="solo")
    spec = make_spec(tmp_path / "celery.sqlite3", participants=bad, sets=1)
    with pytest.raises(ExecutorError, match=r"failed on worker .*this bot cannot start"):
        run_with(spec, CeleryExecutor(broker=broker, poll_s=0.05))
    with ResultStore(spec.db) as store:
        assert store.count(spec.name) == 0


def slow_spec(tmp_path: Path, name: str) -> TournamentSpec:
    return make_spec(
        tmp_path / f"{name}.sqlite3",
        name="slow-cup",
        participants=[
            {"name": "slow", "bot": "tournament_bots:SlowGreedy"},
            "greedy",
            "random",
        ],
        sets=2,
        max_deals=2,
    )


def test_killed_worker_loses_nothing_and_counts_nothing_twice(
    tmp_path: Path,
    broker: str,
    start_worker: Callable[..., Worker],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = slow_spec(tmp_path, "killed")
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {"ARENA_TEST_BOT_DELAY": "0.03", "ARENA_TEST_BOT_MARKS": str(marks)}
    doomed = start_worker("doomed", pool="prefork", concurrency=1, visibility_timeout=3, env=env)
    outcome: dict[str, Any] = {}

    def schedule() -> None:
        try:
            outcome["summary"] = run_with(spec, CeleryExecutor(broker=broker, poll_s=0.05))
        except BaseException as exc:  # reported by the assertion below
            outcome["error"] = exc

    scheduler = threading.Thread(target=schedule, daemon=True)
    scheduler.start()
    store = ResultStore(spec.db)
    wait_for(lambda: store.count(spec.name) >= 2, timeout=120, what="two stored results")
    seen = set(marks.iterdir())
    wait_for(lambda: set(marks.iterdir()) - seen, timeout=60, what="a new match")
    doomed.kill_hard()  # master and pool child, just after the child started a match
    at_kill = store.count(spec.name)
    assert at_kill < 12
    start_worker("rescue", pool="prefork", concurrency=1, visibility_timeout=3, env=env)
    scheduler.join(timeout=180)
    assert not scheduler.is_alive(), "the tournament finished after the rescue worker started"
    assert "error" not in outcome, outcome.get("error")
    rows = list(store.iter_results(spec.name))
    store.close()
    assert len(rows) == 12
    assert sorted(r.index for r in rows) == list(range(12))
    assert len({r.worker for r in rows}) == 2

    monkeypatch.setenv("ARENA_TEST_BOT_DELAY", "0")
    reference = slow_spec(tmp_path, "reference")
    run_with(reference, InlineExecutor())
    assert fingerprint(spec) == fingerprint(reference)


def test_killed_pool_child_is_retried_at_once(
    tmp_path: Path, broker: str, start_worker: Callable[..., Worker]
) -> None:
    spec = slow_spec(tmp_path, "child")
    marks = tmp_path / "marks"
    marks.mkdir()
    worker = start_worker(
        "parent",
        pool="prefork",
        concurrency=1,
        visibility_timeout=3600,
        env={"ARENA_TEST_BOT_DELAY": "0.03", "ARENA_TEST_BOT_MARKS": str(marks)},
    )
    store = ResultStore(spec.db)
    outcome: dict[str, Any] = {}
    scheduler = threading.Thread(
        target=lambda: outcome.setdefault(
            "summary", run_with(spec, CeleryExecutor(broker=broker, poll_s=0.05))
        ),
        daemon=True,
    )
    scheduler.start()
    wait_for(lambda: store.count(spec.name) >= 1, timeout=120, what="a stored result")
    seen = set(marks.iterdir())
    # Kill the child right after it starts its next match, so it surely dies mid-match.
    fresh = wait_for(lambda: set(marks.iterdir()) - seen, timeout=60, what="a new match")
    [child] = worker.children()
    assert {p.name.split("-")[0] for p in fresh} == {str(child)}
    worker.kill_pid(child)
    # With an hour of visibility timeout, only the master's requeue can finish the run.
    scheduler.join(timeout=180)
    assert not scheduler.is_alive()
    assert outcome["summary"].finished
    assert store.count(spec.name) == 12
    assert "WorkerLostError" in worker.log_path.read_text()
    store.close()


def test_stopped_celery_tournament_resumes_on_postgresql(
    tmp_path: Path, broker: str, start_worker: Callable[..., Worker]
) -> None:
    with pg_schema() as url:
        check_stop_and_resume(tmp_path, broker, start_worker, url)


def check_stop_and_resume(
    tmp_path: Path, broker: str, start_worker: Callable[..., Worker], db_url: str
) -> None:
    spec = make_spec(tmp_path / "unused.sqlite3", sets=4).with_overrides(db=db_url)
    port = free_port()
    start_worker("r", pool="prefork", concurrency=2, extra_args=["--metrics-port", str(port)])
    first = run_with(spec, CeleryExecutor(broker=broker, poll_s=0.05), max_matches=6)
    assert not first.finished and first.played == 6
    second = run_with(spec, CeleryExecutor(broker=broker, poll_s=0.05))
    assert second.finished
    with ResultStore(spec.db) as store:
        assert store.count(spec.name) == 24
    # The worker's /metrics merges its pool children: every match it played is counted.
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    finished = [
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith('arena_matches_finished_total{status="completed"}')
    ]
    assert finished and finished[0] >= 24
    fresh = make_spec(tmp_path / "fresh.sqlite3", sets=4)
    run_with(fresh, InlineExecutor())
    assert fingerprint(spec) == fingerprint(fresh)


def test_short_matches_travel_in_chunks_with_the_same_results(
    tmp_path: Path, broker: str, start_worker: Callable[..., Worker]
) -> None:
    start_worker("chunky", pool="solo")
    reference = make_spec(tmp_path / "ref.sqlite3", sets=4, max_deals=1)
    run_with(reference, InlineExecutor())
    fixed = make_spec(tmp_path / "fixed.sqlite3", sets=4, max_deals=1)
    run_with(fixed, CeleryExecutor(broker=broker, poll_s=0.05, chunk=5))
    assert fingerprint(fixed) == fingerprint(reference)
    # Sized by the matches' length: a few milliseconds each, so many per task once seen.
    adaptive = make_spec(tmp_path / "adaptive.sqlite3", sets=4, max_deals=1)
    executor = CeleryExecutor(broker=broker, poll_s=0.05, window=3)
    try:
        run_tournament(adaptive, executor=executor)
        assert executor.chunk_size() > 1
    finally:
        executor.close()
    assert fingerprint(adaptive) == fingerprint(reference)
