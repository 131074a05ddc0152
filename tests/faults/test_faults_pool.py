"""The local pool loses a process mid-tournament (killed outright): a new pool plays the
matches that were in flight, and the results equal a clean run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arena.tournament.executors import InlineExecutor, LocalExecutor
from arena.tournament.run import run_tournament
from arena.tournament.spec import TournamentSpec, validate_spec
from arena.tournament.store import ResultStore


def spec(db: Path) -> TournamentSpec:
    data: dict[str, Any] = {
        "name": "pool-cup",
        "seed": "pool",
        "rules": "classic",
        "participants": [{"name": "d", "bot": "tournament_bots:DiesOnce"}, "greedy", "random"],
        "format": "duplicate",
        "sets": 3,
        "max_deals": 2,
        "db": f"sqlite:///{db}",
    }
    return validate_spec(data, check_imports=False)


def rows(s: TournamentSpec) -> list[tuple[Any, ...]]:
    with ResultStore(s.db, create=False) as store:
        return [r.outcome_key() for r in store.iter_results(s.name)]


def test_a_pool_process_killed_outright_costs_a_replay_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = tmp_path / "died"
    monkeypatch.setenv("ARENA_TEST_DIE_MARK", str(mark))
    killed = spec(tmp_path / "killed.sqlite3")
    executor = LocalExecutor(workers=2)
    try:
        summary = run_tournament(killed, executor=executor)
    finally:
        executor.close()
    assert mark.exists(), "a pool process was killed"
    assert summary.finished and summary.matches == 18
    clean = spec(tmp_path / "clean.sqlite3")
    run_tournament(clean, executor=InlineExecutor())  # the mark exists: nobody dies now
    assert rows(killed) == rows(clean)
