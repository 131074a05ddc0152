"""The rig itself: hosts joined by links with delay, cut off and healed, killed, and all of
it gone afterwards (namespaces, processes, files)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from arena.rigs import linux
from arena.rigs.hosts import Rig
from arena.rigs.linux import RigError

ECHO = """
import socket
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", 7000))
server.listen()
print("listening", flush=True)
while True:
    conn, _ = server.accept()
    while data := conn.recv(100):
        conn.sendall(data)
    conn.close()
"""

ROUND_TRIPS = """
import json, socket, sys, time
sock = socket.create_connection(("a", 7000), timeout=float(sys.argv[1]))
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
times = []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    sock.sendall(b"x")
    sock.recv(1)
    times.append((time.perf_counter() - start) * 1000)
print(json.dumps(times))
"""


def round_trips(rig: Rig, n: int = 5, timeout: float = 5.0) -> list[float]:
    out = rig.hosts["b"].run(["python", "-c", ROUND_TRIPS, str(timeout), str(n)])
    return list(json.loads(out.stdout))


def test_links_delay_cut_heal_kill_and_clean_up() -> None:
    rig = Rig(delay_ms=15)
    try:
        a = rig.add_host("a", ports=[7000])
        rig.add_host("b")
        echo = a.spawn("echo", ["python", "-c", ECHO])
        echo.wait_for("listening")
        # Every round trip crosses the link twice: never faster than twice the delay.
        assert min(round_trips(rig)) >= 2 * 15
        rig.set_delay(1)
        assert min(round_trips(rig)) < 2 * 15
        # Cut off: nothing gets through (the client gives up after its timeout)...
        rig.cut(a)
        failed = rig.hosts["b"].run(["python", "-c", ROUND_TRIPS, "2", "1"], check=False)
        assert failed.returncode != 0
        # ...and back again.
        rig.heal(a)
        assert len(round_trips(rig, 2)) == 2
        # Killed: every process of the host, whatever it started.
        a.spawn("sleeper", ["bash", "-c", "sleep 600 & sleep 600 & wait"])
        deadline = time.monotonic() + 10
        while len(a.pids()) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(a.pids()) == 4  # the echo server, bash and its two sleeps
        assert a.kill() == 4 and a.pids() == []
        assert not echo.alive()
        names = [rig.net, *(h.netns for h in rig.hosts.values())]
        assert set(names) <= set(linux.netns_names())
        root = rig.root
    finally:
        rig.close()
    assert not set(names) & set(linux.netns_names())
    assert not root.exists()
    for name in names:
        assert linux.pids_in_netns(name) == []


def test_the_operator_console_reaches_the_hosts_without_delay() -> None:
    with Rig(delay_ms=50) as rig:
        a = rig.add_host("a", ports=[7000])
        a.spawn("echo", ["python", "-c", ECHO]).wait_for("listening")

        def round_trip() -> float:
            import socket

            with socket.create_connection((a.address, 7000), timeout=5) as sock:
                start = time.perf_counter()
                sock.sendall(b"x")
                sock.recv(1)
                return time.perf_counter() - start

        assert rig.call(round_trip) < 0.05


def test_a_rig_left_behind_by_a_dead_process_is_removed(tmp_path: Path) -> None:
    """A test killed outright leaves namespaces behind: the next rig removes them."""
    stale = "arena-rig-999999999-0-net"
    linux.ip("netns", "add", stale)
    try:
        with Rig() as rig:
            assert stale not in linux.netns_names()
            assert rig.net in linux.netns_names()
    finally:
        linux.ip("netns", "del", stale, check=False)


def test_a_program_that_does_not_exist_is_one_clear_line() -> None:
    with Rig() as rig:
        host = rig.add_host("a")
        with pytest.raises(RigError, match="cannot run no-such-program"):
            host.run(["no-such-program"])
        assert os.geteuid() == 0
