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


def test_changes_read_only_what_arrived_after_a_position(store: ResultStore) -> None:
    assert store.changes("cup", 0) == ([], 0)
    assert store.position("cup") == 0
    for i in range(5):
        store.insert_result(record(f"m{i}", 4 - i, [i, 0, 0]))
    recs, pos = store.changes("cup", 0, limit=3)
    assert [r.match_id for r in recs] == ["m0", "m1", "m2"]  # order of arrival, not index
    assert all(r.replay is None for r in recs)
    rest, end = store.changes("cup", pos)
    assert [r.match_id for r in rest] == ["m3", "m4"]
    assert end == store.position("cup") > pos
    assert store.changes("cup", end) == ([], end)
    store.insert_result(record("m1", 3, [9, 9, 9]))  # a second delivery adds nothing
    assert store.changes("cup", end) == ([], end)
    store.insert_results([record("m5", 5, [1, 1, 1]), record("m0", 4, [7, 7, 7])])
    late, _ = store.changes("cup", end)
    assert [r.match_id for r in late] == ["m5"]
    assert store.done_among(["m0", "m5", "nope"]) == {"m0", "m5"}


def test_replays_are_zstd_and_old_zlib_rows_still_read(store: ResultStore) -> None:
    import json
    import zlib

    from arena.tournament.store import pack_replay, unpack_replay

    replay = {"deals": [{"actions": [[0, "pass"]] * 50}], "z": "ü"}
    packed = pack_replay(replay)
    assert packed[:4] == b"\x28\xb5\x2f\xfd" and len(packed) < len(json.dumps(replay))
    assert unpack_replay(packed) == replay
    old = zlib.compress(json.dumps(replay, sort_keys=True).encode(), 6)
    assert unpack_replay(old) == replay
    store.insert_result(record("m1", 0, [1, 2, 3]))
    got = store.get("m1", with_replay=True)
    assert got is not None and got.replay == {"events": [{"type": "match_end"}]}


def test_read_only_opening_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite3"
    with pytest.raises(StoreError, match="no results database at"):
        ResultStore(f"sqlite:///{missing}", create=False)
    assert not missing.exists()
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"\0" * 4096)
    with pytest.raises(StoreError, match="is not a results database"):
        ResultStore(str(junk), create=False)
    with ResultStore(str(tmp_path / "real.sqlite3")) as writer:
        writer.insert_result(record("m1", 0, [1, 2, 3]))
        with ResultStore(str(tmp_path / "real.sqlite3"), create=False) as reader:
            assert reader.count("cup") == 1
            with pytest.raises(Exception, match="readonly"):
                reader.insert_result(record("m2", 1, [1, 2, 3]))
    with pg_schema() as url:
        with pytest.raises(StoreError, match="no tournament results in"):
            ResultStore(url, create=False)
        import psycopg

        with psycopg.connect(url.split("?")[0]) as conn:
            schema = url.split("schema=")[1]
            row = conn.execute(
                "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)
            ).fetchone()
        assert row is None, "a read-only opening created the schema"


def test_a_short_outage_is_waited_out_and_a_long_one_named(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "locked.sqlite3"
    with ResultStore(str(path)) as store:
        store.insert_result(record("m1", 0, [1, 2, 3]))
    lines: list[str] = []
    store = ResultStore(str(path), retry_s=1.5, on_retry=lines.append)
    store._conn.execute("PRAGMA busy_timeout = 10")
    blocker = sqlite3.connect(path, timeout=1, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN EXCLUSIVE")
    unlock = threading.Timer(0.6, lambda: blocker.execute("COMMIT"))
    unlock.start()
    try:
        # A writer waits for the lock with backoff (WAL readers are never blocked).
        assert store.insert_result(record("m2", 1, [1, 2, 3]))[1]
    finally:
        unlock.join()
    assert any("unreachable" in line and "retrying for" in line for line in lines), lines
    from arena.tournament.store import StoreUnavailable

    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreUnavailable, match=r"lost the results store .* run the same"):
            store.insert_result(record("m3", 2, [1, 2, 3]))
    finally:
        blocker.execute("COMMIT")
        blocker.close()
        store.close()


def test_live_ratings_equal_the_leaderboard() -> None:
    import random

    from arena.tournament.leaderboard import compute_leaderboard
    from arena.tournament.tally import RatingTally

    rng = random.Random(7)
    names = ["a", "b", "c", "d"]
    recs = []
    for i in range(300):
        players = rng.sample(names, 3)
        ranks = rng.sample([1, 2, 3], 3) if i % 7 else [1, 1, 3]
        rec = record(f"m{i}", i, [0, 0, 0])
        rec.players, rec.ranks, rec.group = players, ranks, f"set-{i // 6}"
        recs.append(rec)
    tally = RatingTally()
    for rec in recs:
        tally.add(rec)
    live = tally.ratings()
    board = {row.player: row.rating for row in compute_leaderboard(recs, n_bootstrap=0)}
    assert live.keys() == board.keys()
    for name in names:
        assert live[name] == pytest.approx(board[name], abs=1e-6)
