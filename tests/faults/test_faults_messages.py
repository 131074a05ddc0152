"""Every user mistake and unreachable service: one clear line, a documented exit status,
no traceback, nothing created or lost.  Each case runs the real command in a subprocess.

Exit status of the tournament commands (docs/tournaments.md): 0 done, 1 a match failed,
2 a mistake in the input, 3 a service cannot be reached, 130 Ctrl-C, 143 SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from faults_support import PgServer
from tournament_support import HERE, REPO, free_port, wait_for


def arena(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = _env(env)
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(HERE), env.get("PYTHONPATH", "")])
    for key in (
        "ARENA_BROKER_URL",
        "ARENA_ROUTING_URL",
        "ARENA_DB_URL",
        "PROMETHEUS_MULTIPROC_DIR",
    ):
        env.pop(key, None)
    env.update(extra or {})
    return env


def one_clear_line(result: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    text = result.stdout + result.stderr
    assert "Traceback" not in text, text
    assert result.returncode == code, f"exit {result.returncode}, wanted {code}: {text}"
    for needle in needles:
        assert needle in text, f"{needle!r} not in {text!r}"
    return text


def write_spec(tmp: Path, name: str = "msg-cup", **changes: Any) -> Path:
    data: dict[str, Any] = {
        "name": name,
        "seed": "messages",
        "rules": "classic",
        "participants": ["greedy", "random", {"name": "random-2", "bot": "random"}],
        "format": "duplicate",
        "sets": 1,
        "max_deals": 1,
        "db": "sqlite:///results.sqlite3",
    }
    data.update(changes)
    data = {k: v for k, v in data.items() if v is not None}  # None: leave the key out
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_read_only_commands_never_create_a_store(tmp_path: Path) -> None:
    r = arena("leaderboard", "--db", "sqlite:///nosuch.sqlite3", cwd=tmp_path)
    one_clear_line(r, 2, "no results database at nosuch.sqlite3", "check --db")
    r = arena("report", "--db", "typo", "--out", "r.html", cwd=tmp_path)
    one_clear_line(r, 2, "no results database at typo")
    spec = write_spec(tmp_path)
    r = arena("tournament", "status", str(spec), cwd=tmp_path)
    one_clear_line(r, 0, "msg-cup: 0 of 6 matches stored: no results database at results.sqlite3")
    r = arena("tournament", "status", str(spec), "--db", "postgresql://127.0.0.1:1/x", cwd=tmp_path)
    one_clear_line(r, 3, "cannot connect to the results store postgresql://127.0.0.1:1/x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["msg-cup.yaml"]


def test_files_that_are_not_what_they_should_be(tmp_path: Path) -> None:
    (tmp_path / "notes.sqlite3").write_text("not a database\n" * 100)
    r = arena("leaderboard", "--db", "notes.sqlite3", cwd=tmp_path)
    one_clear_line(r, 2, "notes.sqlite3 is not a results database")
    empty = sqlite3.connect(tmp_path / "other.sqlite3")
    empty.execute("CREATE TABLE t (x)")
    empty.close()
    r = arena("report", "--db", "sqlite:///other.sqlite3", cwd=tmp_path)
    one_clear_line(r, 2, "without tournament results")
    assert not (tmp_path / "report.html").exists()
    (tmp_path / "game.json").write_bytes(bytes(range(256)) * 8)
    for command in ("verify", "show"):
        r = arena("replay", command, "game.json", cwd=tmp_path)
        one_clear_line(r, 2, "game.json is not a replay", "binary")
    r = arena("tournament", "run", "notes.sqlite3", cwd=tmp_path)
    one_clear_line(r, 2, "unknown spec file type")
    r = arena("tournament", "run", "missing.yaml", cwd=tmp_path)
    one_clear_line(r, 2, "missing.yaml: cannot read spec file")
    (tmp_path / "adir").mkdir()
    r = arena("tournament", "run", str(write_spec(tmp_path)), "--db", "adir", cwd=tmp_path)
    one_clear_line(r, 2, "adir is a directory")


def test_bad_urls_and_unreachable_services(tmp_path: Path) -> None:
    spec = str(write_spec(tmp_path))
    r = arena(
        "tournament", "run", spec, "--executor", "celery", "--broker", "http://x", cwd=tmp_path
    )
    one_clear_line(r, 2, "unsupported broker URL scheme 'http'")
    dead = f"redis://127.0.0.1:{free_port()}/0"
    r = arena("tournament", "run", spec, "--executor", "celery", "--broker", dead, cwd=tmp_path)
    one_clear_line(r, 3, f"cannot reach the Celery broker {dead}", "Connection refused")
    r = arena("tournament", "run", spec, "--db", "mysql://x/y", cwd=tmp_path)
    one_clear_line(r, 2, "unsupported database URL scheme 'mysql'")
    r = arena(
        "tournament", "run", spec, "--db", f"postgresql://127.0.0.1:{free_port()}/x", cwd=tmp_path
    )
    one_clear_line(r, 3, "cannot connect to the results store", "is PostgreSQL running?")
    r = arena("worker", "--broker", "http://x", cwd=tmp_path)
    one_clear_line(r, 2, "unsupported broker URL scheme 'http'")
    r = arena("leaderboard", "--db", "postgresql://user:secret@127.0.0.1:1/x", cwd=tmp_path)
    text = one_clear_line(r, 3, "user:***@127.0.0.1:1")
    assert "secret" not in text, "a password is never printed"
    assert not (tmp_path / "results.sqlite3").exists()


def test_check_lists_every_problem_the_run_would_meet(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path,
        rules={"preset": "classic", "options": {"barel": 880}},
        participants=["greedy", "remote:js"],
        sets=0,
        db="mysql://x",
    )
    r = arena("tournament", "check", str(spec), cwd=tmp_path)
    one_clear_line(
        r,
        2,
        "6 problems",
        "rules.options: unknown option 'barel' (did you mean 'barrel'?)",
        "seed: remote participants could derive every deal from a fixed seed",
        "sets: must be a positive integer",
        "participants: 2 participants cannot fill a 3-seat table",
        "db: unsupported database URL scheme 'mysql'",
        "remote:js need a route to a gateway",
    )
    # What check refuses, the run refuses too, before anything is created.
    remote = write_spec(
        tmp_path, name="remote-cup", participants=["greedy", "random", "remote:js"], seed=None
    )
    r = arena("tournament", "run", str(remote), cwd=tmp_path)
    one_clear_line(r, 2, "remote:js need a route to a gateway")
    r = arena(
        "tournament",
        "check",
        str(remote),
        cwd=tmp_path,
        env={"ARENA_ROUTING_URL": "redis://127.0.0.1:6379/1"},
    )
    one_clear_line(r, 0, "ok: remote-cup")
    r = arena(
        "tournament",
        "check",
        str(write_spec(tmp_path, executor={"type": "celery", "broker": "http://x"})),
        cwd=tmp_path,
    )
    one_clear_line(r, 2, "executor.broker: unsupported broker URL scheme 'http'")
    assert not (tmp_path / "results.sqlite3").exists()


def slow_spec(tmp: Path, db: str, sets: int = 20) -> Path:
    return write_spec(
        tmp,
        name="stop-cup",
        participants=[{"name": "slow", "bot": "tournament_bots:SlowGreedy"}, "greedy", "random"],
        sets=sets,
        max_deals=3,
        db=db,
    )


def start_run(spec: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "arena.cli", "tournament", "run", str(spec), *extra],
        cwd=spec.parent,
        env=_env({"ARENA_TEST_BOT_DELAY": "0.02", **(env or {})}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def stored(db_file: Path) -> int:
    if not db_file.exists():
        return 0
    conn = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True, timeout=5)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM matches").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C", "Ctrl-C again"])
def test_signals_stop_the_run_and_keep_the_results(tmp_path: Path, how: str) -> None:
    db_file = tmp_path / "stop.sqlite3"
    spec = slow_spec(tmp_path, f"sqlite:///{db_file}")
    run = start_run(spec, "--workers", "2")
    try:
        wait_for(lambda: stored(db_file) >= 2, timeout=120, what="two stored results")
        if how == "SIGTERM":
            os.kill(run.pid, signal.SIGTERM)  # a service manager stops the scheduler only
        else:
            os.killpg(run.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the pool too
        out, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    code = 143 if how == "SIGTERM" else 130
    assert run.returncode == code, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    assert f"stopped ({how.split()[0]}); results so far are kept" in out
    kept = stored(db_file)
    assert kept >= 2
    # Nothing of the run is left behind: the pool's processes go with it (the resource
    # tracker of multiprocessing takes a moment after its parent).
    def group_gone() -> bool:
        left = subprocess.run(["pgrep", "-g", str(run.pid)], capture_output=True, text=True)
        return left.stdout.strip() == ""

    wait_for(group_gone, timeout=10, what="the run's processes to exit")
    # The same command resumes and plays only what is missing.
    again = arena(
        "tournament", "run", str(spec), "-q", cwd=tmp_path, env={"ARENA_TEST_BOT_DELAY": "0"}
    )
    one_clear_line(again, 0)
    assert stored(db_file) == 120


@pytest.fixture()
def pg() -> Iterator[PgServer]:
    server = PgServer()
    try:
        yield server
    finally:
        server.close()


def test_a_store_lost_for_too_long_ends_with_a_clear_message(tmp_path: Path, pg: PgServer) -> None:
    db = f"{pg.url}?schema=lost"
    spec = slow_spec(tmp_path, db, sets=10)
    run = start_run(spec, "--workers", "1", env={"ARENA_DB_RETRY_S": "4"})
    try:
        import psycopg

        def some() -> bool:
            with psycopg.connect(pg.url, connect_timeout=2) as conn:
                row = conn.execute("SELECT to_regclass('lost.matches')").fetchone()
                if row is None or row[0] is None:
                    return False
                n = conn.execute("SELECT COUNT(*) FROM lost.matches").fetchone()
                return n is not None and int(n[0]) >= 1

        wait_for(some, timeout=120, interval=0.3, what="a stored result")
        pg.stop()
        out, _ = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 3, out
    assert "Traceback" not in out, out
    assert "lost the results store" in out and "run the same command again" in out, out
    assert "retrying for" in out, "the progress line said what the run was waiting for"
