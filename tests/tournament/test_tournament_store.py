"""The results store keeps one row per match id on SQLite and PostgreSQL alike."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tournament_support import pg_schema

from arena.tournament.model import ResultRecord
from arena.tournament.spec import validate_spec
from arena.tournament.store import ResultStore, StoreError, parse_db_url

SPEC = {
    "name": "cup",
    "seed": "s",
    "rules": "classic",
    "participants": ["greedy", "random", {"name": "r2", "bot": "random"}],
    "format": "duplicate",
    "sets": 1,
}


def record(match_id: str, index: int, scores: list[int], worker: str = "w1") -> ResultRecord:
    return ResultRecord(
        match_id=match_id,
        tournament="cup",
        index=index,
        group="set-0",
        round=0,
        players=["greedy", "random", "r2"],
        bots=["greedy", "random", "random"],
        seed="abc",
        status="completed",
        scores=scores,
        ranks=[1, 2, 3],
        deals=4,
        seat_stats=[{"timeouts": 1, "illegal": 0, "strikes": 1}, {}, {"illegal": 2}],
        duration_s=0.5,
        finished_at=1.0,
        worker=worker,
        replay={"events": [{"type": "match_end"}]},
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ResultStore]:
    if request.param == "sqlite":
        s = ResultStore(f"sqlite:///{tmp_path / 'r.sqlite3'}")
        yield s
        s.close()
    else:
        with pg_schema() as url:
            s = ResultStore(url)
            yield s
            s.close()


def test_insert_once_returns_the_first_row(store: ResultStore) -> None:
    first, wrote = store.insert_result(record("m1", 0, [120, 60, 0]))
    assert wrote
    assert first.scores == [120, 60, 0]
    assert first.timeouts == [1, 0, 0]
    assert first.illegal == [0, 0, 2]
    assert first.replay == {"events": [{"type": "match_end"}]}
    again, wrote = store.insert_result(record("m1", 0, [0, 0, 999], worker="w2"))
    assert not wrote
    assert again.scores == [120, 60, 0]
    assert again.worker == "w1"
    assert store.count("cup") == 1


def test_results_in_match_order(store: ResultStore) -> None:
    for i in (3, 1, 2, 0):
        store.insert_result(record(f"m{i}", i, [i, 0, 0]))
    assert [r.index for r in store.iter_results("cup")] == [0, 1, 2, 3]
    assert store.done_ids("cup") == {"m0", "m1", "m2", "m3"}
    assert store.get("m2") is not None
    assert store.get("nope") is None


def test_concurrent_writers_leave_one_row(store: ResultStore, tmp_path: Path) -> None:
    url = store.url
    winners: list[bool] = []
    lock = threading.Lock()

    def write(n: int) -> None:
        s = ResultStore(url)
        try:
            _, wrote = s.insert_result(record("race", 0, [n, 0, 0], worker=f"w{n}"))
            with lock:
                winners.append(wrote)
        finally:
            s.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert winners.count(True) == 1
    assert store.count("cup") == 1


def test_tournament_registration_refuses_a_different_spec(store: ResultStore) -> None:
    spec = validate_spec(SPEC)
    store.register_tournament(spec)
    store.register_tournament(spec.with_overrides(executor="inline", db="elsewhere.sqlite3"))
    more_sets = validate_spec({**SPEC, "sets": 5})
    store.register_tournament(more_sets)  # extending a tournament is allowed
    with pytest.raises(StoreError, match=r"already in .* with different"):
        store.register_tournament(validate_spec({**SPEC, "seed": "other"}))
    [info] = store.tournaments()
    assert info.name == "cup"
    assert info.spec["sets"] == 5


def test_failures_and_round_plans(store: ResultStore) -> None:
    store.record_failure("m9", "cup", "ValueError: boom", "w1")
    store.record_failure("m9", "cup", "ValueError: boom again", "w2")
    assert store.failures("cup") == {"m9": ("ValueError: boom again", "w2")}
    store.insert_result(record("m9", 9, [1, 2, 3]))
    assert store.failures("cup") == {}
    plan = [{"index": 0}]
    assert store.put_round_plan("cup", 0, plan) == plan
    assert store.put_round_plan("cup", 0, [{"index": 99}]) == plan
    assert store.get_round_plan("cup", 1) is None


def test_db_urls(tmp_path: Path) -> None:
    assert parse_db_url("results.sqlite3") == ("sqlite", "results.sqlite3", None)
    assert parse_db_url("sqlite:///r.db") == ("sqlite", "r.db", None)
    assert parse_db_url("sqlite:////tmp/r.db") == ("sqlite", "/tmp/r.db", None)
    assert parse_db_url("postgresql://h/db?schema=x&sslmode=disable") == (
        "postgresql",
        "postgresql://h/db?sslmode=disable",
        "x",
    )
    with pytest.raises(StoreError, match="unsupported database URL scheme 'mysql'"):
        parse_db_url("mysql://h/db")
    with pytest.raises(StoreError, match="no directory"):
        ResultStore(str(tmp_path / "missing" / "r.sqlite3"))
