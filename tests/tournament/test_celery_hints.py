"""What an organiser running a tournament on Celery is told, with real workers and Redis:
the full command for a worker of the run's queue, a word when workers answer but none
consumes it, no noise when a stop revokes tasks, and workers named by ``--hostname``."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml
from tournament_support import REPO, Worker, wait_for

from arena.tournament.store import ResultStore

BIN = Path(sys.executable).parent


def write_spec(tmp: Path, name: str, broker: str, queue: str, sets: int) -> Path:
    spec = tmp / f"{name}.yaml"
    spec.write_text(yaml.safe_dump({
        "name": name, "seed": name, "rules": "classic",
        "participants": ["greedy", "random", {"name": "r2", "bot": "random"}],
        "format": "duplicate", "sets": sets, "max_deals": 1,
        "executor": {"type": "celery", "broker": broker, "queue": queue},
        "db": f"sqlite:///{tmp / 'results.sqlite3'}"}))
    return spec


def scheduler(spec: Path, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env["ARENA_TASK_LOST_AFTER_S"] = "1"
    return subprocess.Popen([str(BIN / "arena"), "tournament", "run", str(spec), "--quiet",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)


def test_the_hint_names_the_queue_and_workers_elsewhere_are_not_called_busy(
    tmp_path: Path, broker: str, start_worker: Callable[..., Worker]
) -> None:
    start_worker("elsewhere")  # consumes the default queue, 'arena'
    spec = write_spec(tmp_path, "org-cup", broker, "org", sets=1)
    run = scheduler(spec)
    seen: list[str] = []
    try:
        assert run.stderr is not None
        for line in run.stderr:
            seen.append(line)
            if "none consumes queue 'org'" in line:
                break
        text = "".join(seen)
        assert "1 Celery worker(s) answer on" in text and "(they consume 'arena')" in text, text
        assert "busy" not in text
        command = re.search(r"start one: (arena worker --broker \S+ --queue org)", text)
        assert command, text
        # A worker started exactly as printed plays the tournament.
        log = (tmp_path / "hinted.log").open("wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        env["PYTHONPATH"] = str(REPO)
        hinted = subprocess.Popen(
            [str(BIN / shlex.split(command.group(1))[0]), *shlex.split(command.group(1))[1:],
             "--hostname", "hinted@%h"], stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True)
        try:
            assert run.wait(timeout=180) == 0, run.stderr.read()
        finally:
            os.killpg(hinted.pid, signal.SIGTERM)
            hinted.wait(timeout=60)
            log.close()
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    with ResultStore(f"sqlite:///{tmp_path / 'results.sqlite3'}") as store:
        workers = {r.worker for r in store.iter_results("org-cup")}
    assert workers == {f"hinted@{socket.gethostname()}"}


def test_a_stop_revokes_quietly(
    tmp_path: Path, broker: str, start_worker: Callable[..., Worker]
) -> None:
    worker = start_worker("w")
    spec = write_spec(tmp_path, "stopped", broker, "arena", sets=30)
    run = scheduler(spec, "--max-matches", "2")
    assert run.wait(timeout=180) == 0, run.stderr.read() if run.stderr else ""
    # Celery logs this line once it has handled every task of the revoke.
    wait_for(lambda: "Tasks flagged as revoked" in worker.log_path.read_text(errors="replace"),
             timeout=60, what="the worker hearing of the revoked tasks")
    log = worker.log_path.read_text(errors="replace")
    assert "Failed to mark task" not in log, log[-2000:]
    with ResultStore(f"sqlite:///{tmp_path / 'results.sqlite3'}") as store:
        rows = list(store.iter_results("stopped"))
    assert rows and {r.worker for r in rows} == {f"w@{socket.gethostname()}"}
