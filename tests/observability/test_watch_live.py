"""``arena watch`` follows any tournament's match, where its executor publishes it: the
spool directory of a local run, or Redis (the real commands, a real Redis)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import yaml
from docblocks import block

from arena.rigs.processes import redis_server

BIN = Path(sys.executable).parent


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "arena"), *args], text=True, capture_output=True,
                          env=env(), cwd=cwd, timeout=300)


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = env()
    environment["PATH"] = f"{BIN}{os.pathsep}{environment.get('PATH', '')}"
    return subprocess.run(["bash", "-c", command], text=True, capture_output=True,
                          env=environment, cwd=cwd, timeout=300)


def spec(tmp: Path, name: str, participants: list[Any], **executor: Any) -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "name": name, "seed": name, "rules": "classic", "participants": participants,
        "format": "round-robin", "games": 2, "max_deals": 2,
        "executor": {"type": "inline", **executor}, "db": "sqlite:///results.sqlite3"}))
    return path


def test_a_finished_match_of_a_local_run_is_followed_from_its_spool(tmp_path: Path) -> None:
    path = spec(tmp_path, "local", ["greedy", "random", {"name": "r2", "bot": "random"}])
    assert arena("tournament", "run", str(path), "-q", cwd=tmp_path).returncode == 0
    listed = arena("watch", "--db", "sqlite:///results.sqlite3", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    ids = re.findall(r"^([0-9a-f]{32})  ended", listed.stdout, re.M)
    assert len(ids) == 2, listed.stdout
    watched = arena("watch", ids[0][:10], "--db", "sqlite:///results.sqlite3", "--plain",
                    cwd=tmp_path)
    assert watched.returncode == 0, watched.stderr
    lines = watched.stdout.splitlines()
    assert lines[0].startswith("match starts: 0="), lines[0]
    assert re.search(r"^deal \d: \S+ deals$", watched.stdout, re.M), watched.stdout
    assert "completed" in lines[-1], lines[-1]
    unknown = arena("watch", "ffff", "--db", "sqlite:///results.sqlite3", cwd=tmp_path)
    assert unknown.returncode == 1 and "no live match 'ffff'" in unknown.stderr


def test_a_running_match_on_redis_is_followed_to_its_end(tmp_path: Path) -> None:
    """docs/observability.md's two commands, with this test's Redis and match id."""
    listing, follow = block("docs/observability.md", "arena watch --routing redis://").commands()
    (tmp_path / "slow.py").write_text(textwrap.dedent("""
        import time

        class Slow:
            def decide(self, observation, legal):
                time.sleep(0.02)
                return legal[0]
    """))
    with redis_server() as redis:
        path = spec(tmp_path, "redis-run", ["greedy", "random", {"name": "s", "bot":
                                                                 "slow.py:Slow"}],
                    routing=redis.url)
        run = subprocess.Popen([str(BIN / "arena"), "tournament", "run", str(path), "-q"],
                               cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while True:
                listed = shell(listing.replace("redis://127.0.0.1:6379/0", redis.url), tmp_path)
                running = re.findall(r"^(\S+)  running", listed.stdout, re.M)
                if running:
                    break
                assert run.poll() is None, run.stderr.read() if run.stderr else ""
                assert time.monotonic() < deadline, listed.stdout + listed.stderr
                time.sleep(0.1)
            command = follow.replace("redis://127.0.0.1:6379/0", redis.url)
            watched = shell(command.replace("3f9c2a", running[0][:6]) + " --plain", tmp_path)
            assert watched.returncode == 0, watched.stderr
            assert watched.stdout.startswith("match starts: ")
            assert "completed" in watched.stdout.splitlines()[-1]
            assert run.wait(timeout=120) == 0
        finally:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
