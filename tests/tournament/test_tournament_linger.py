"""`arena tournament run --metrics-linger`: the final figures stay scrapeable after the run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

SPEC = """\
name: linger-cup
seed: linger-1
rules: {preset: classic, options: {max_deals: 3}}
participants:
  - {name: greedy, bot: greedy}
  - {name: random-a, bot: random}
  - {name: random-b, bot: random}
format: {type: duplicate, seatings: all}
sets: 2
executor: inline
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _arena(*args: str) -> list[str]:
    return [sys.executable, "-m", "arena.cli", *args]


def test_metrics_stay_up_until_sigterm(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    port = _free_port()
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR="")
    env.pop("PROMETHEUS_MULTIPROC_DIR")
    proc = subprocess.Popen(
        _arena("tournament", "run", str(spec), "--quiet", "--db", f"sqlite:///{tmp_path}/r.db",
               "--metrics-port", str(port), "--metrics-linger", "inf"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        deadline = time.monotonic() + 60
        body = ""
        while time.monotonic() < deadline:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
                body = body.decode()
                if (
                    'arena_tournament_matches_done{tournament="linger-cup"} 12.0' in body
                    and 'arena_rating{bot="greedy",tournament="linger-cup"}' in body
                ):
                    break
            except OSError:
                pass
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        assert 'arena_tournament_matches_done{tournament="linger-cup"} 12.0' in body
        assert 'arena_rating{bot="greedy",tournament="linger-cup"}' in body
        # The last match is counted a moment before the run ends: wait for the run to say
        # it lingers, and only then stop it (a SIGTERM before is an interrupted run).
        assert proc.stderr is not None
        lines: list[str] = []
        watchdog = threading.Timer(60, proc.kill)  # a run that never says so fails, not hangs
        watchdog.start()
        try:
            while not any("until stopped" in line for line in lines):
                line = proc.stderr.readline()
                assert line, (lines, proc.wait(10))
                lines.append(line)
        finally:
            watchdog.cancel()
        assert any("serving metrics" in line for line in lines), lines
        # The run is over, yet the process keeps serving until told to stop.
        time.sleep(0.5)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, "".join(lines) + err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_linger_without_a_metrics_port_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    res = subprocess.run(_arena("tournament", "run", str(spec), "--metrics-linger", "5"),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert "--metrics-linger needs --metrics-port" in res.stderr
