"""Hostile hosted bots, against real sandboxes on this machine, all at once on one worker.

Every attack is a hosted Python bot (the SDK, as an author would write it) playing a short
match against built-in bots, in the same event loop as two honest matches of hosted Python
and Node bots, all at the same time. For each attack the test checks the status its seat
recorded, that nothing leaked (no connection reached the host, no secret was read, no file
was written outside the bot's own home) and that nothing was left running; the honest
matches finish, with no strike, and their replays verify.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hosted_support import add_passed, assert_verifies, node_bot, open_dir, python_bot, scheduled

from arena.hosted.cache import BotCache
from arena.hosted.play import HostedBots, play_hosted
from arena.hosted.seat import HostedSeat
from arena.hosted.status import SeatRun
from arena.match.types import MatchResult
from arena.referee.runner import resolve_seat
from arena.rigs.processes import GatewayProcess, redis_server
from arena.sandbox import Limits, SandboxHost
from arena.tournament.store import ResultStore

SECRET = "TOPSECRET-7f3a"

PLAY = """
from thousand_bot import Bot


class First(Bot):
    def decide(self, observation, legal):
        return legal[0]
"""

#: name -> (code run at import, code run at each decision, the status it must get)
ATTACKS: dict[str, tuple[str, str, str]] = {
    "network": ("""
import socket, sys
for host, port in TARGETS:
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, port)); s.sendall(b"leak"); print("CONNECTED", host, port, file=sys.stderr)
    except OSError as e:
        print("refused", host, port, e, file=sys.stderr)
""", "", "ok"),
    "sockets": ("""
import os, socket, sys
print("seat dir:", sorted(os.listdir("/run/seat")), file=sys.stderr)
for address in (HOST_SOCKET, "\\0" + ABSTRACT):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(address); s.sendall(b"leak"); print("CONNECTED", repr(address), file=sys.stderr)
    except OSError as e:
        print("refused", repr(address), e, file=sys.stderr)
""", "", "ok"),
    "files": ("""
import os, sys
for path in ("/etc/passwd", SECRET_FILE, STORE_FILE, REGISTRY_FILE, OTHER_BOT):
    try:
        data = open(path, "rb").read(200) if not os.path.isdir(path) else os.listdir(path)
        print("READ", path, data, file=sys.stderr)
    except OSError as e:
        print("unreadable", path, e.strerror, file=sys.stderr)
for path in ("/bot/x", "/runtime/x", "/x", "/etc/x", "/usr/x", LEAK_FILE):
    try:
        open(path, "w").write("x"); print("WROTE", path, file=sys.stderr)
    except OSError as e:
        print("unwritable", path, e.strerror, file=sys.stderr)
""", "", "ok"),
    "fill": ("""
import os, sys
for d in (os.environ["HOME"], "/tmp"):
    try:
        for i in range(1000):  # files of 4 MiB: each under the file size limit
            with open(f"{d}/fill{i}", "wb") as f:
                f.write(b"x" * (4 << 20))
    except OSError as e:
        print("full", d, e.strerror, file=sys.stderr)
""", "", "ok"),
    # Its own forks take every process it may have: gRPC can start no thread any more, so
    # the bot cannot play on (it never connects, it forfeits on time, or gRPC aborts it,
    # depending on when gRPC next needs a thread); nothing else on the host notices.
    "forkbomb": ("", """
import os, sys, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(100000); os._exit(0)
        n += 1
except OSError as e:
    print("forks refused after", n, e.strerror, file=sys.stderr, flush=True)
""", "timeout|start_failed|crash"),
    "daemon": ("""
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(100000)
    os._exit(0)
""", "", "ok"),
    "flood": ("""
import sys
for stream in (sys.stdout, sys.stderr):
    try:
        for _ in range(100):
            stream.write("y" * (1 << 20)); stream.flush()
    except OSError:
        pass
""", "", "ok"),
    "garbage": ("""
import grpc, socket
s = socket.socket(socket.AF_UNIX); s.connect("/run/seat/seat.sock")
s.sendall(b"\\x00garbage\\xff" * 1000); s.close()
channel = grpc.insecure_channel("unix:/run/seat/seat.sock")
play = channel.stream_stream("/thousand.v1.BotService/Play", request_serializer=lambda b: b,
                             response_deserializer=lambda b: b)
try:
    for _ in play(iter([b"\\xff\\xfe not a PlayRequest"])):
        pass
except grpc.RpcError as e:
    import sys; print("refused:", e.code(), file=sys.stderr)
channel.close()
""", "", "protocol_error"),
    "memory": ("", """
x = bytearray(10 * 1024 ** 3)
x[::4096] = b"1" * len(x[::4096])
""", "memory_limit"),
    "spin": ("", "while True: pass", "timeout"),
    "sleep": ("", "import time; time.sleep(10 ** 6)", "timeout"),
    "cpu": ("", "while True: pass", "cpu_limit"),
    "exit": ("", """
self.n = getattr(self, "n", 0) + 1
if self.n == 3:
    import os; os._exit(0)
""", "crash"),
    "silent": ("""
import socket, time
s = socket.socket(socket.AF_UNIX); s.connect("/run/seat/seat.sock")
s.sendall(b"\\x16\\x03\\x01 hello? " * 100)
time.sleep(10 ** 6)
""", "", "start_failed"),
}


#: Binary bots (any executable: here shell scripts) that break the text protocol:
#: name -> (the program, the status it must get).
PROGRAMS: dict[str, tuple[str, str]] = {
    "binary-garbage": ("#!/bin/sh\nwhile :; do echo 'garbage, not the protocol'; done\n",
                       "protocol_error"),
    "binary-mute": ("#!/bin/sh\nexec sleep 100000\n", "start_failed"),
    "binary-exit": ("#!/bin/sh\necho 'no hello: I leave' >&2\nexit 3\n", "start_failed"),
}


def _program(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "bot.toml").write_text('runtime = "binary"\nentry = "run.sh"\n')
    (folder / "run.sh").write_text(PROGRAMS[name][0])
    os.chmod(folder / "run.sh", 0o755)
    return folder


def _source(attack: str, constants: str) -> str:
    at_import, at_decision, _ = ATTACKS[attack]
    body = "\n".join("        " + line for line in at_decision.strip().splitlines())
    return (constants + at_import + "\n" + PLAY.replace(
        "        return legal[0]", (body + "\n" if body else "") + "        return legal[0]"))


@dataclass
class Outcome:
    result: MatchResult
    runs: list[SeatRun]


@dataclass
class Arena:
    outcomes: dict[str, Outcome]
    heard: list[bytes]
    leak_file: Path
    seat_uids: range


def _listen_tcp(heard: list[bytes], stop: threading.Event) -> tuple[socket.socket, int]:
    server = socket.socket()
    server.bind(("127.0.0.2", 0))
    server.listen()
    server.settimeout(0.1)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            heard.append(conn.recv(100) or b"<connected>")
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return server, int(server.getsockname()[1])


def _listen_unix(address: str, heard: list[bytes], stop: threading.Event) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(address)
    server.listen()
    server.settimeout(0.1)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            heard.append(conn.recv(100) or b"<connected>")
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def arena() -> Iterator[Arena]:
    root = open_dir("hostile")
    cache = root / "cache"
    old_cache = os.environ.get("ARENA_BOT_CACHE")
    os.environ["ARENA_BOT_CACHE"] = str(cache)
    heard: list[bytes] = []
    stop = threading.Event()
    secret_file = Path("/tmp") / f"arena-secret-{os.getpid()}.txt"
    secret_file.write_text(SECRET)
    os.chmod(secret_file, 0o644)  # readable by anyone on the host: only the sandbox hides it
    leak_file = root / "leak.txt"  # a folder of the host the bot cannot see
    host_socket = str(root / "host.sock")
    abstract = f"arena-test-{os.getpid()}"
    tcp, port = _listen_tcp(heard, stop)
    unix = _listen_unix(host_socket, heard, stop)
    os.chmod(host_socket, 0o777)
    abstract_server = _listen_unix("\0" + abstract, heard, stop)
    try:
        with redis_server(root / "redis") as redis:
            gateway = GatewayProcess.start(db_path=root / "gateway.sqlite3",
                                           log_path=root / "gateway.log",
                                           organiser_token="org-" + SECRET)
            try:
                store = ResultStore(f"sqlite:///{root / 'results.sqlite3'}")
                honest_py = add_passed(store, "honest-py", python_bot(root, "honest-py"))
                honest_js = add_passed(store, "honest-js", node_bot(root))
                other = cache / honest_py.hash
                constants = (
                    f"TARGETS = [('127.0.0.1', {gateway.port}), ('127.0.0.1', {redis.port}), "
                    f"('127.0.0.1', 5432), ('127.0.0.2', {port})]\n"
                    f"HOST_SOCKET = {host_socket!r}\nABSTRACT = {abstract!r}\n"
                    f"SECRET_FILE = {str(secret_file)!r}\n"
                    f"STORE_FILE = {str(root / 'results.sqlite3')!r}\n"
                    f"REGISTRY_FILE = {str(root / 'gateway.sqlite3')!r}\n"
                    f"OTHER_BOT = {str(other)!r}\nLEAK_FILE = {str(leak_file)!r}\n"
                )
                versions = {
                    name: add_passed(store, name, python_bot(root, name, _source(name, constants)))
                    for name in ATTACKS
                }
                versions.update({name: add_passed(store, name, _program(root, name))
                                 for name in PROGRAMS})
                outcomes = asyncio.run(_play_all(store, versions, honest_py.ref, honest_js.ref))
            finally:
                gateway.stop()
    finally:
        stop.set()
        for server in (tcp, unix, abstract_server):
            server.close()
        secret_file.unlink()
        if old_cache is None:
            os.environ.pop("ARENA_BOT_CACHE", None)
        else:
            os.environ["ARENA_BOT_CACHE"] = old_cache
    host = SandboxHost.get()
    assert host.uids is not None
    seat_uids = range(host.uids.first, host.uids.first + host.uids.count)
    try:
        yield Arena(outcomes, heard, leak_file, seat_uids)
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _play_all(store: ResultStore, versions: dict, honest_py: str,  # type: ignore[type-arg]
                    honest_js: str) -> dict[str, Outcome]:
    from arena.hosted.store import HostedStore

    bots = HostedBots(HostedStore(store), BotCache())
    games = []
    for i, (name, version) in enumerate(versions.items()):
        quick = name in ("spin", "sleep")
        match = scheduled(i, [version.ref, "greedy", "random"], max_deals=2,
                          decision_ms=300 if quick else 2000, bank_ms=300 if quick else 4000)
        limits = Limits(memory_mb=192, pids=64, cpus=0.5, cpu_s=2 if name == "cpu" else 60,
                        output_kb=512, wall_s=120)
        timeout = 5.0 if name in ("silent", "binary-mute") else 30.0
        games.append((name, match, limits, timeout))
    for k, bots_ in enumerate(([honest_py, honest_js, "greedy"], [honest_js, "random", honest_py])):
        games.append((f"honest-{k}", scheduled(100 + k, bots_, max_deals=3), Limits(), 30.0))

    async def one(name: str, match, limits: Limits, timeout: float) -> tuple[str, Outcome]:  # type: ignore[no-untyped-def]
        seats = []
        for i, ref in enumerate(match.spec.bots):
            if ref.startswith("hosted:"):
                seats.append(HostedSeat(bots.bot(ref), seat=i, limits=limits,
                                        start_timeout_s=timeout))
            else:
                seats.append(resolve_seat(ref, i, match.spec))
        result, runs = await play_hosted(match.spec, seats, labels=match.players)
        return name, Outcome(result, runs)

    done = await asyncio.gather(*(one(*g) for g in games), return_exceptions=True)
    failed = [d for d in done if isinstance(d, BaseException)]
    if failed:
        raise failed[0]
    return dict(d for d in done if not isinstance(d, BaseException))


def _log(outcome: Outcome) -> str:
    return outcome.runs[0].log.decode("utf-8", "replace")


@pytest.mark.parametrize("attack", sorted([*ATTACKS, *PROGRAMS]))
def test_each_attack_gets_its_status(arena: Arena, attack: str) -> None:
    outcome = arena.outcomes[attack]
    run = outcome.runs[0]
    expected = ATTACKS[attack][2] if attack in ATTACKS else PROGRAMS[attack][1]
    assert run.status in expected.split("|"), (run, _log(outcome)[-2000:])
    assert len(run.log) <= 64 * 1024
    assert_verifies(outcome.result.replay)


def test_nothing_reached_the_host(arena: Arena) -> None:
    assert arena.heard == []
    network = _log(arena.outcomes["network"])
    assert "CONNECTED" not in network and network.count("refused ") == 4, network
    sockets = _log(arena.outcomes["sockets"])
    assert "CONNECTED" not in sockets and sockets.count("refused ") == 2, sockets
    assert "seat dir: ['seat.sock']" in sockets


def test_nothing_was_read_or_written_outside(arena: Arena) -> None:
    files = _log(arena.outcomes["files"])
    assert SECRET not in files and "root:" not in files
    assert files.count("READ") == 1 and "READ /etc/passwd b'bot:x:1000" in files, files
    assert files.count("unreadable") == 4 and "WROTE" not in files, files
    assert not arena.leak_file.exists()
    assert files.count("unwritable") == 6
    fill = _log(arena.outcomes["fill"])
    assert fill.count("No space left on device") == 2, fill


def test_limits_held_and_were_said(arena: Arena) -> None:
    bomb = _log(arena.outcomes["forkbomb"])
    assert "Resource temporarily unavailable" in bomb, bomb[-2000:]
    flood = arena.outcomes["flood"].runs[0]
    assert "output was cut" in flood.detail
    assert arena.outcomes["exit"].runs[0].detail.startswith("exited with code 0 before")
    assert "CPU time limit" in arena.outcomes["cpu"].runs[0].detail
    assert arena.outcomes["memory"].result.forfeit_seat == 0
    assert arena.outcomes["spin"].result.status == "forfeit"


def test_honest_matches_beside_them_were_untouched(arena: Arena) -> None:
    for name in ("honest-0", "honest-1"):
        outcome = arena.outcomes[name]
        assert outcome.result.status == "completed"
        assert sum(s.strikes for s in outcome.result.seat_stats) == 0
        assert [r.status for r in outcome.runs] == ["ok", "ok"]
        assert_verifies(outcome.result.replay)


def _descends_from_me(pid: int) -> bool:
    me = os.getpid()
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rpartition(")")[2].split()[1])
        if pid == me:
            return True
    return False


def test_nothing_is_left_running(arena: Arena) -> None:
    # A process of a seat uid is this test's if it is in one of this process's seat cgroups
    # (named "-PID-"), where every process of a seat stays, double-forked daemons
    # included, or if it descends from this process: seats of other processes on the host
    # (another run of the suite, a worker) are theirs to account for.
    mine = f"-{os.getpid()}-"
    left = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                uid = os.stat(f"/proc/{entry}").st_uid
                cgroups = Path(f"/proc/{entry}/cgroup").read_text()
            except OSError:
                continue
            if uid in arena.seat_uids and (mine in cgroups or _descends_from_me(int(entry))):
                left.append(int(entry))
    assert left == []
    host = SandboxHost.get()
    for parent in getattr(host.cgroups, "parents", {}).values():
        assert not [p for p in os.listdir(parent) if mine in p]
    assert not [p for p in os.listdir(host.seats_dir) if mine in p]
