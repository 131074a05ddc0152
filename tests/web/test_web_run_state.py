"""Running, stopped or finished on the real web server, from what the real scheduler says:
a stopped run is stopped at once (not "running" for a minute after its last result), and a
finished tournament dealt from a secret is finished."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Any

from web_support import ARENA, env, get_json, web_server, write_spec


def progress(url: str, name: str) -> dict[str, Any]:
    data = get_json(f"{url}/api/tournaments/{name}")
    return dict(data["progress"])


def wait_until(check: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_stopped_run_is_stopped_and_a_finished_one_finished(tmp_path: Path) -> None:
    (tmp_path / "slowbot.py").write_text(textwrap.dedent("""
        import time

        class Slow:
            def decide(self, observation, legal):
                time.sleep(0.05)  # the run lasts past the web's start on a busy host
                return legal[0]
    """))
    db = f"sqlite:///{tmp_path / 'results.sqlite3'}"
    spec = write_spec(tmp_path / "slow.json", {
        "name": "slow", "seed": "slow", "rules": "classic",
        "participants": ["greedy", "random", {"name": "s", "bot": "slowbot.py:Slow"}],
        "format": "round-robin", "games": 12, "max_deals": 2, "executor": "inline", "db": db})
    secret = write_spec(tmp_path / "secret.json", {
        "name": "secret", "public_seed": False, "rules": "classic",
        "participants": ["greedy", "random", {"name": "r2", "bot": "random"}],
        "format": "duplicate", "sets": 1, "max_deals": 1, "executor": "inline", "db": db})
    subprocess.run([*ARENA, "tournament", "run", str(secret), "-q"], check=True, env=env(),
                   cwd=tmp_path, timeout=120)
    run = subprocess.Popen([*ARENA, "tournament", "run", str(spec), "-q"], env=env(),
                           cwd=tmp_path, start_new_session=True)
    try:
        with web_server(db, tmp_path / "web.log") as web:
            # A tournament dealt from a secret that was played to its end is finished.
            done = progress(web.url, "secret")
            assert done["finished"] and done["planned"] == 6 and done["done"] == 6, done
            assert done["scheduler"]["state"] == "finished"

            def running() -> Any:
                assert run.poll() is None, "the run ended before the web saw it running"
                p = progress(web.url, "slow")
                return p["running"] and p["done"] > 0 and p

            first = wait_until(running, "the run to be running with a result")
            assert first["scheduler"]["state"] == "running"
            os.killpg(run.pid, signal.SIGTERM)  # stopped: its results are seconds old
            assert run.wait(timeout=60) == 143
            stopped = progress(web.url, "slow")
            assert not stopped["running"] and not stopped["finished"], stopped
            assert stopped["scheduler"]["state"] == "stopped"
            assert stopped["done"] < 12

            subprocess.run([*ARENA, "tournament", "run", str(spec), "-q"], check=True,
                           env=env(), cwd=tmp_path, timeout=300)
            finished = progress(web.url, "slow")
            assert finished["finished"] and not finished["running"]
            assert finished["scheduler"]["state"] == "finished"
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
