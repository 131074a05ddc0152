"""Every port the arena opens listens on loopback unless told otherwise: the gateway and
its metrics, a worker's metrics and the scheduler's (the real commands, their sockets read
from the kernel's table)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml
from tournament_support import Worker, free_port, wait_for

BIN = Path(sys.executable).parent


def listening(port: int) -> set[str]:
    """The local addresses a TCP socket listens on at ``port`` (IPv4 and IPv6)."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) != port or fields[3] != "0A":  # 0A: LISTEN
                continue
            if address.startswith("0000000000000000FFFF0000"):  # IPv4 mapped into IPv6
                address = address[-8:]
            if len(address) == 8:
                found.add(".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0)))
            else:
                found.add("::" if int(address, 16) == 0 else address)
    return found


def test_gateway_and_its_metrics_listen_on_loopback(tmp_path: Path) -> None:
    metrics = free_port()
    proc = subprocess.Popen(
        [str(BIN / "arena"), "serve", "--port", "0", "--metrics-port", str(metrics),
         "--db", str(tmp_path / "bots.sqlite3"), "--organiser-token", "t"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        port = 0
        for line in proc.stdout:
            found = re.search(r"gateway listening on ([\d.]+):(\d+)", line)
            if found:
                assert found.group(1) == "127.0.0.1"
                port = int(found.group(2))
                break
        assert port
        assert listening(port) == {"127.0.0.1"}
        assert wait_for(lambda: listening(metrics), what="metrics socket") == {"127.0.0.1"}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_worker_metrics_listen_on_loopback_and_the_option_is_explained(
    start_worker: Callable[..., Worker],
) -> None:
    port = free_port()
    start_worker("metrics", extra_args=["--metrics-port", str(port)])
    assert wait_for(lambda: listening(port), what="worker metrics socket") == {"127.0.0.1"}
    help_text = subprocess.run([str(BIN / "arena"), "worker", "--help"], text=True,
                               capture_output=True, check=True).stdout
    found = re.search(r"--metrics-addr METRICS_ADDR\s+(.+?)\n  -", help_text, re.S)
    assert found and "127.0.0.1" in found.group(1), help_text


def test_scheduler_metrics_listen_on_loopback_or_where_told(tmp_path: Path) -> None:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "tiny", "rules": "two-player", "participants": ["greedy", "random"],
        "format": "duplicate", "sets": 1, "max_deals": 1, "executor": "inline",
        "db": f"sqlite:///{tmp_path / 'r.sqlite3'}",
    }))
    for extra, expected in (([], "127.0.0.1"), (["--metrics-addr", "0.0.0.0"], "0.0.0.0")):
        port = free_port()
        proc = subprocess.Popen(
            [str(BIN / "arena"), "tournament", "run", str(spec), "--quiet",
             "--metrics-port", str(port), "--metrics-linger", "inf", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                if "serving metrics on" in line:
                    assert f"serving metrics on {expected}:{port}" in line, line
                    break
            assert listening(port) == {expected}
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
