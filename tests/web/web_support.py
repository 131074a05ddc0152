"""A store filled by real tournaments and a real ``arena web`` process, for the web tests."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "tournament"))

from tournament_support import free_port, wait_for  # noqa: E402

ARENA = [sys.executable, "-m", "arena.cli"]


def env(**extra: str) -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), str(HERE), str(REPO / "tests" / "tournament"), e.get("PYTHONPATH", "")])
    e.pop("PROMETHEUS_MULTIPROC_DIR", None)
    e.update(extra)
    return e


def arena(*args: str, check: bool = True, timeout: float = 300, **extra: str
          ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*ARENA, *args], capture_output=True, text=True, timeout=timeout,
                          env=env(**extra), cwd=REPO)
    if check and proc.returncode != 0:
        raise AssertionError(f"arena {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def write_spec(path: Path, spec: dict[str, Any]) -> Path:
    path.write_text(json.dumps(spec, indent=1))
    return path


def get(url: str, timeout: float = 30) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def get_json(url: str) -> Any:
    status, body = get(url)
    assert status == 200, (url, status, body[:500])
    return json.loads(body)


class WebServer:
    """``arena web`` as a user starts it, on a free loopback port."""

    def __init__(self, db: str, log: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        self._log = log.open("ab")
        self.proc = subprocess.Popen(
            [*ARENA, "web", "--db", db, "--port", str(self.port), *args],
            stdout=self._log, stderr=subprocess.STDOUT, env=env(), cwd=REPO)

        def up() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"arena web exited: {log.read_text()[-2000:]}")
            return get(self.url + "/healthz", timeout=2)[0] == 200

        wait_for(up, timeout=60, interval=0.2, what="arena web")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


@contextlib.contextmanager
def web_server(db: str, log: Path, *args: str) -> Iterator[WebServer]:
    server = WebServer(db, log, *args)
    try:
        yield server
    finally:
        server.stop()


PRESET_SPEC_SEATS = {"classic": 3, "classic-4": 4, "two-player": 2, "two-player-9": 2,
                     "estonian": 3, "estonian-800": 3, "german-1001": 3, "classic-501": 3}


def fill_store(tmp: Path, db: str) -> dict[str, Any]:
    """Real tournaments into ``db``: a duplicate one with a blundering bot, an SPRT match,
    and a short round robin for every preset of the engine."""
    from arena.engine import PRESETS

    specs: dict[str, Path] = {}
    specs["web-duplicate"] = write_spec(tmp / "dup.json", {
        "name": "web-duplicate", "seed": "web-1", "rules": {"preset": "classic"},
        "participants": [{"name": "greedy", "bot": "greedy"},
                         {"name": "random-a", "bot": "random"},
                         {"name": "blunder", "bot": "web_bots:Blunderer"}],
        "format": {"type": "duplicate"}, "sets": 3, "max_deals": 8,
        "executor": {"type": "local", "workers": 2}, "db": db})
    specs["web-sprt"] = write_spec(tmp / "sprt.json", {
        "name": "web-sprt", "seed": "web-sprt", "rules": "classic",
        "participants": [{"name": "greedy", "bot": "greedy"}, {"name": "random", "bot": "random"},
                         {"name": "sparring", "bot": "random"}],
        "format": {"type": "sprt", "candidate": "greedy", "baseline": "random",
                   "elo0": 0, "elo1": 50},
        "sets": 48, "max_deals": 3, "executor": {"type": "local", "workers": 2}, "db": db})
    for preset in PRESETS:
        seats = PRESET_SPEC_SEATS.get(preset, 3)
        parts = [{"name": "greedy", "bot": "greedy"}] + [
            {"name": f"random-{i}", "bot": "random"} for i in range(1, seats)]
        specs[f"preset-{preset}"] = write_spec(tmp / f"{preset}.json", {
            "name": f"preset-{preset}", "seed": f"web-{preset}", "rules": {"preset": preset},
            "participants": parts, "format": {"type": "round-robin"}, "games": 2,
            "max_deals": 3, "executor": {"type": "inline"}, "db": db})
    started = time.monotonic()
    for path in specs.values():
        arena("tournament", "run", str(path), "--quiet")
    return {"specs": specs, "seconds": time.monotonic() - started}
