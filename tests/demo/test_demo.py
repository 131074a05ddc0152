"""``arena demo`` as a real process: Redis, the gateway keeping hosted bots and the Celery
workers playing them in sandboxes, started and stopped by the demo itself on free ports."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from thousand_bot.proto.thousand.v1 import (
    hosted_pb2,
    hosted_pb2_grpc,
    organiser_pb2,
    organiser_pb2_grpc,
)

from arena.demo import demo_main
from arena.tournament.leaderboard import interval_text
from arena.tournament.store import ResultStore
from arena.web.data import WebData

#: Three sets: the groups (greedy, cautious, random), (greedy, cautious, search) and
#: (greedy, cautious, node), so every kind of hosted bot plays.
SMALL = ["--sets", "3", "--max-deals", "4"]


class Demo:
    """``python -m arena.demo`` in its own process group, as a shell runs a command: a
    Ctrl-C typed in the terminal goes to the whole group."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "arena.demo", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_line(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines:
                found = re.search(pattern, line)
                if found:
                    return found
            try:
                new = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r}:\n" + self.text()) from None
            if new is None:
                raise AssertionError(f"ended without {pattern!r}:\n" + self.text())
            self.lines.append(new)

    def finish(self, timeout: float = 120.0) -> int:
        code = self.proc.wait(timeout)
        while (line := self._queue.get(timeout=10)) is not None:
            self.lines.append(line)
        return code

    def text(self) -> str:
        return "\n".join(self.lines)

    def interrupt(self) -> None:
        os.killpg(self.proc.pid, signal.SIGINT)

    def descendants(self) -> set[int]:
        return _descendants(self.proc.pid)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        for child, parent in parents.items():
            if parent == p and child not in found:
                found.add(child)
                todo.append(child)
    return found


def running(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def gone(pids: set[int], timeout: float = 15.0) -> bool:
    """Whether all of ``pids`` have exited; helpers such as multiprocessing's resource
    tracker leave only once they see their parent gone, so allow them a moment."""
    deadline = time.monotonic() + timeout
    while running(pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def leaderboard(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Leaderboard"))
    end = lines.index("", start)
    return lines[start:end]


def outcomes(db: Path) -> list[tuple[object, ...]]:
    with ResultStore(f"sqlite:///{db}") as store:
        return [
            (*r.outcome_key(), r.replay["deals"] if r.replay else None)
            for r in store.iter_results("main", with_replay=True)
        ]


@pytest.fixture
def demos() -> Iterator[list[Demo]]:
    started: list[Demo] = []
    yield started
    for demo in started:
        demo.kill()


def test_the_same_seed_gives_the_same_leaderboard(tmp_path: Path, demos: list[Demo]) -> None:
    texts = []
    for name in ("a", "b"):
        demo = Demo(tmp_path, *SMALL, "--db", f"{name}/demo.sqlite3")
        demos.append(demo)
        assert demo.finish() == 0, demo.text()
        texts.append(demo.text())
        ports = [int(m) for m in re.findall(r"127\.0\.0\.1:(\d+)", demo.text())]
        assert ports and not any(listening(p) for p in ports), "services were stopped"

    first, second = texts
    table = leaderboard(first)
    assert table == leaderboard(second)
    rows = [line.split() for line in table[3:] if line.split() and line.split()[0].isdigit()]
    # Each hosted version is rated as NAME@VERSION; the same files give the same version.
    assert {row[1].split("@")[0] for row in rows} == {"greedy", "cautious", "random", "search",
                                                     "node"}
    assert all("@" in row[1] for row in rows)
    # Intervals wherever the results bound them, the same in the CLI and on the web.
    db = f"sqlite:///{tmp_path / 'a/demo.sqlite3'}"
    board = json.loads(subprocess.run(
        [sys.executable, "-m", "arena.cli", "leaderboard", "--db", db, "--json",
         "--tournament", "main"], capture_output=True, text=True, check=True).stdout)
    assert WebData(db).leaderboard_json("main") == board
    close = [r for r in board["rows"] if r["player"].split("@")[0] in ("greedy", "cautious")]
    assert len(close) == 2 and all(r["bounded"] for r in close), board
    printed = " ".join(" ".join(table).split())  # the table pads its columns
    for r in board["rows"]:
        shown = interval_text(r["rating"], r["ci_low"], r["ci_high"], r["bounded"])
        assert " ".join(shown.split()) in printed, (shown, table)
    assert outcomes(tmp_path / "a/demo.sqlite3") == outcomes(tmp_path / "b/demo.sqlite3")
    assert len(outcomes(tmp_path / "a/demo.sqlite3")) == 18

    # What the demo says it wrote is there.
    assert "18 files, all re-simulate to their results" in first
    assert len(list((tmp_path / "a/demo-replays").glob("*.json"))) == 18
    report = (tmp_path / "a/demo-report.html").read_text()
    assert "<svg" in report and "cautious" in report
    for log in ("redis", "gateway", "worker"):
        assert (tmp_path / f"a/demo-logs/{log}.log").exists()
    for bot in ("greedy-bot", "cautious-bot", "random-bot", "search-bot", "node-starter"):
        assert re.search(rf"bot\s+{bot}\s+hosted \w+ +version \w{{12}}, \d+ files  check passed",
                         first), first
    # Every hosted seat ran in a sandbox on the workers and ended ok.
    with ResultStore(f"sqlite:///{tmp_path / 'a/demo.sqlite3'}") as store:
        statuses = store.query("SELECT status, COUNT(*) FROM seat_runs "
                               "WHERE match_id NOT LIKE 'check-%' GROUP BY status")
    assert statuses == [("ok", 54)], statuses

    # Another seed deals other cards; running again replaces the previous results.
    other = Demo(tmp_path, "--sets", "1", "--max-deals", "4", "--db", "a/demo.sqlite3",
                 "--seed", "another")
    demos.append(other)
    assert other.finish() == 0, other.text()
    assert len(outcomes(tmp_path / "a/demo.sqlite3")) == 6


def test_ctrl_c_stops_everything(tmp_path: Path, demos: list[Demo]) -> None:
    demo = Demo(tmp_path, "--sets", "3", "--db", "demo.sqlite3")
    demos.append(demo)
    demo.wait_line(r"matches\s+on the Celery workers")

    def stored() -> int:
        # Read-only: opening the store itself would race the demo setting up the new file.
        path = tmp_path / "demo.sqlite3"
        if not path.exists():
            return 0
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                return int(db.execute("SELECT COUNT(*) FROM matches").fetchone()[0])
        except sqlite3.OperationalError:
            return 0

    deadline = time.monotonic() + 60
    while stored() < 1 and time.monotonic() < deadline:  # into the tournament
        time.sleep(0.1)
    children = demo.descendants()
    assert len(children) >= 3  # redis, gateway, the worker (and its pool, their sandboxes)
    demo.interrupt()
    assert demo.finish(60) == 130, demo.text()
    assert "everything has been shut down" in demo.text()
    assert gone(children), demo.text()
    assert "Traceback" not in demo.text()


def test_keep_leaves_the_gateway_up_until_ctrl_c(tmp_path: Path, demos: list[Demo]) -> None:
    demo = Demo(tmp_path, "--sets", "1", "--max-deals", "2", "--keep", "--db", "demo.sqlite3")
    demos.append(demo)
    address = demo.wait_line(r"^\s+gateway\s+(127\.0\.0\.1:\d+)$").group(1)
    token = demo.wait_line(r"organiser token\s+(\S+)").group(1)
    with grpc.insecure_channel(address) as channel:
        stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
        reply = stub.ListBots(
            organiser_pb2.ListBotsRequest(),
            metadata=(("authorization", f"Bearer {token}"),),
            timeout=10,
        )
        names = {b.name for b in reply.bots}
        assert names == {"greedy-bot", "cautious-bot", "random-bot", "search-bot",
                         "node-starter"}, demo.text()
        versions = hosted_pb2_grpc.HostedServiceStub(channel).ListVersions(
            hosted_pb2.ListVersionsRequest(name="search-bot"),
            metadata=(("authorization", f"Bearer {token}"),), timeout=10).versions
    assert [v.status for v in versions] == ["passed"]
    children = demo.descendants()
    demo.interrupt()
    assert demo.finish(60) == 130, demo.text()
    assert gone(children), demo.text()


def test_mistakes_are_reported_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert demo_main(["--sets", "0", "--db", str(tmp_path / "x.sqlite3")]) == 2
    assert "--sets must be a positive integer" in capsys.readouterr().err

    assert demo_main(["--db", "postgresql://127.0.0.1/arena"]) == 2
    assert "SQLite file" in capsys.readouterr().err

    # A results file holding another tournament is left alone.
    other = tmp_path / "other.sqlite3"
    from arena.tournament.spec import validate_spec

    players = ["random", "greedy", {"name": "r2", "bot": "random"}]
    spec = validate_spec(
        {"name": "cup", "rules": "classic", "participants": players, "games": 1,
         "db": f"sqlite:///{other}"}
    )  # fmt: skip
    with ResultStore(spec.db) as store:
        store.register_tournament(spec)
    before = other.read_bytes()
    assert demo_main(["--db", str(other)]) == 2
    assert "holds other tournaments (cup)" in capsys.readouterr().err
    assert other.read_bytes() == before
    assert not (tmp_path / "other-logs").exists()
