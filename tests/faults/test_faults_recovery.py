"""One tournament through every infrastructure fault: it finishes by itself, nothing is lost
or counted twice, and the results equal a clean run of the same spec and seed.

Everything is real: a Redis without persistence (a restart empties the queue), a
PostgreSQL cluster of the test's own (restarted for a few seconds, twice), Celery workers
killed outright, and the scheduler as the ``arena tournament run`` command.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from faults_support import PgServer, RestartableRedis
from tournament_support import HERE, REPO, Worker, wait_for

from arena.tournament.executors import InlineExecutor
from arena.tournament.run import run_tournament
from arena.tournament.spec import load_spec
from arena.tournament.store import ResultStore

SETS = 10
MATCHES = SETS * 6


@pytest.fixture()
def pg(tmp_path: Path) -> Iterator[PgServer]:
    server = PgServer()
    try:
        yield server
    finally:
        server.close()


def write_spec(path: Path, db: str, name: str = "fault-cup") -> Path:
    data: dict[str, Any] = {
        "name": name,
        "seed": "faults",
        "rules": "classic",
        "participants": [
            {"name": "slow", "bot": "tournament_bots:SlowGreedy"},
            "greedy",
            "random",
        ],
        "format": "duplicate",
        "sets": SETS,
        "max_deals": 2,
        "db": db,
    }
    path.write_text(yaml.safe_dump(data))
    return path


def fingerprint(db: str, name: str) -> list[tuple[Any, ...]]:
    with ResultStore(db, create=False) as store:
        return [
            (*r.outcome_key(), repr(r.replay["deals"] if r.replay else None))
            for r in store.iter_results(name, with_replay=True)
        ]


def count(db: str, name: str) -> int:
    with ResultStore(db, create=False, retry_s=0) as store:
        return store.count(name)


def scheduler(spec: Path, broker: str, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE), env.get("PYTHONPATH", "")]),
            "ARENA_TASK_LOST_AFTER_S": "3",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arena.cli",
            "tournament",
            "run",
            str(spec),
            "--executor",
            "celery",
            "--broker",
            broker,
        ],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        cwd=spec.parent,
        env=env,
        start_new_session=True,
    )


def test_redis_postgresql_and_workers_fail_and_the_tournament_finishes(
    tmp_path: Path, pg: PgServer
) -> None:
    redis = RestartableRedis(tmp_path)
    workers: list[Worker] = []
    env = {"ARENA_TEST_BOT_DELAY": "0.03", "ARENA_DB_RETRY_S": "120"}

    def start_worker(name: str) -> Worker:
        # An hour of visibility timeout: only the scheduler's own check can recover the
        # match a killed worker held, which is what this test is about.
        w = Worker(
            redis.url,
            tmp_path / f"worker-{name}.log",
            name=name,
            pool="prefork",
            concurrency=1,
            visibility_timeout=3600,
            env=env,
        )
        workers.append(w)
        w.wait_ready()
        return w

    db = f"{pg.url}?schema=faults"
    spec = write_spec(tmp_path / "cup.yaml", db)
    log = tmp_path / "scheduler.log"
    try:
        start_worker("a")
        start_worker("b")
        run = scheduler(spec, redis.url, log)

        def reach(n: int) -> None:
            def enough() -> bool:
                if run.poll() is not None:
                    raise AssertionError(f"scheduler exited early: {log.read_text()[-3000:]}")
                return count(db, "fault-cup") >= n

            wait_for(enough, timeout=240, interval=0.3, what=f"{n} stored results")

        faults = [
            (6, "redis", redis.restart),
            (12, "postgresql", pg.restart),
            (18, "worker", lambda: (workers[0].kill_hard(), start_worker("c"))),
            (26, "redis", redis.restart),
            (32, "postgresql", pg.restart),
            (38, "worker", lambda: (workers[1].kill_hard(), start_worker("d"))),
            (44, "redis", redis.restart),
        ]
        for at, _what, act in faults:
            reach(at)
            act()
        assert run.wait(timeout=300) == 0, log.read_text()[-4000:]
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
        for w in workers:
            w.stop()
        redis.stop()
    out = log.read_text()
    assert "Traceback" not in out, out[-4000:]
    assert "fault-cup: finished" in out and f"{MATCHES} stored" in out
    assert "again" in out, "the scheduler said it sent lost matches again"
    assert redis.restarts == 3 and pg.restarts == 2

    with ResultStore(db, create=False) as store:
        rows = list(store.iter_results("fault-cup"))
    assert len(rows) == MATCHES
    assert sorted(r.index for r in rows) == list(range(MATCHES))

    ref_db = f"sqlite:///{tmp_path / 'ref.sqlite3'}"
    reference = load_spec(write_spec(tmp_path / "ref.yaml", ref_db), check_imports=False)
    os.environ["ARENA_TEST_BOT_DELAY"] = "0"
    try:
        sys.path.insert(0, str(HERE))
        run_tournament(reference, executor=InlineExecutor())
    finally:
        os.environ.pop("ARENA_TEST_BOT_DELAY", None)
    assert fingerprint(db, "fault-cup") == fingerprint(reference.db, "fault-cup")
