"""Submitting hosted bots through a real gateway (``arena serve --store``), with the bot's
own token: versions by hash, the check match in the sandbox, statuses, logs for the
author only, and suspension after repeated crashes."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from hosted_support import python_bot
from thousand_bot.proto.thousand.v1 import (
    hosted_pb2,
    hosted_pb2_grpc,
    organiser_pb2,
    organiser_pb2_grpc,
)

from arena.hosted import status as st
from arena.hosted.store import FAILED, PASSED, SUSPENDED, HostedStore
from arena.rigs.processes import GatewayProcess
from arena.server.admin import bot_main
from arena.tournament.store import ResultStore, StoreError

ORG = "org-hosted-submit"

ILLEGAL = """
from thousand_bot import Bot


class Bad(Bot):
    def decide(self, observation, legal):
        return "bid 995" if "bid 995" not in legal else "pass"
"""

CRASH = """
import sys
print("about to fail: the bot imports a module it does not ship", file=sys.stderr)
import numpy, not_shipped_module  # noqa
"""


class Gate:
    def __init__(self, proc: GatewayProcess, store: str) -> None:
        self.proc = proc
        self.address = f"127.0.0.1:{proc.port}"
        self.store_url = store
        self.tokens: dict[str, str] = {}

    def register(self, name: str) -> str:
        with grpc.insecure_channel(self.address) as ch:
            r = organiser_pb2_grpc.OrganiserServiceStub(ch).RegisterBot(
                organiser_pb2.RegisterBotRequest(name=name),
                metadata=[("authorization", f"Bearer {ORG}")])
        self.tokens[name] = r.token
        return r.token

    def cli(self, *argv: str, token: str) -> int:
        return bot_main(["--gateway", self.address, "--token", token, *argv])


@pytest.fixture()
def gate(scratch: Path) -> Iterator[Gate]:
    store = f"sqlite:///{scratch / 'results.sqlite3'}"
    proc = GatewayProcess.start(db_path=scratch / "gateway.sqlite3",
                                log_path=scratch / "gateway.log", organiser_token=ORG,
                                extra=["--store", store])
    try:
        yield Gate(proc, store)
    finally:
        proc.stop()


def test_submit_check_and_list(gate: Gate, scratch: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    token = gate.register("alice")
    folder = python_bot(scratch, "alice")
    assert gate.cli("submit", "alice", str(folder), token=token) == 0
    out = capsys.readouterr().out
    assert "submitted alice version" in out and "passed its check" in out
    assert gate.cli("submit", "alice", str(folder), token=token) == 0
    assert "already submitted" in capsys.readouterr().out
    # A new version: a new hash, listed first.
    (folder / "notes.txt").write_text("v2\n")
    assert gate.cli("submit", "alice", str(folder), token=token) == 0
    capsys.readouterr()
    assert gate.cli("versions", "alice", token=token) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0].split() == ["version", "size", "runtime", "submitted", "status"]
    assert len(listing) == 3 and all(line.endswith("passed") for line in listing[1:])
    hosted = HostedStore(ResultStore(gate.store_url))
    versions = hosted.versions("alice")
    assert [v.status for v in versions] == [PASSED, PASSED]
    assert hosted.resolve("hosted:alice").hash == versions[0].hash
    assert hosted.resolve(f"hosted:alice@{versions[1].hash[:10]}").hash == versions[1].hash
    # The organiser may list versions; logs are the author's alone.
    assert gate.cli("versions", "alice", token=ORG) == 0
    capsys.readouterr()
    assert gate.cli("logs", "alice", token=ORG) == 4
    assert "only the bot's own token" in capsys.readouterr().err
    mallory = gate.register("mallory")
    assert gate.cli("logs", "alice", token=mallory) == 4
    assert gate.cli("versions", "alice", token=mallory) == 4
    assert gate.cli("submit", "alice", str(folder), token=mallory) == 4
    assert "belongs to bot 'mallory'" in capsys.readouterr().err


def test_a_check_the_arena_cannot_play_is_said_at_once(
    scratch: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway whose host lacks the runtimes voids the check (the platform's fault):
    the author hears so at once, exit 3, not after waiting out --check-timeout."""
    monkeypatch.setenv("ARENA_RUNTIMES", str(scratch / "no-runtimes-here"))
    store = f"sqlite:///{scratch / 'results.sqlite3'}"
    proc = GatewayProcess.start(db_path=scratch / "gateway.sqlite3",
                                log_path=scratch / "gateway.log", organiser_token=ORG,
                                extra=["--store", store])
    try:
        gate = Gate(proc, store)
        token = gate.register("early")
        # 3, not the 1 of a wait that ran out (it would take 600 s).
        assert gate.cli("submit", "early", str(python_bot(scratch, "early")),
                        "--check-timeout", "600", token=token) == 3
        err = capsys.readouterr().err
        assert "could not be played (the arena's fault, not the bot's)" in err, err
        assert "the python runtime is not installed" in err and "checked again" in err
        version = HostedStore(ResultStore(store)).versions("early")[0]
        assert version.status == "checking" and "arena's fault" in version.reason
    finally:
        proc.stop()


def test_a_failed_check_says_why_and_the_log_shows_it(
    gate: Gate, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = gate.register("bad")
    assert gate.cli("submit", "bad", str(python_bot(scratch, "bad", ILLEGAL, "bot.py:Bad")),
                    token=bad) == 1
    assert "illegal move" in capsys.readouterr().out
    crash = gate.register("crash")
    assert gate.cli("submit", "crash", str(python_bot(scratch, "crash", CRASH, "bot.py:X")),
                    token=crash) == 1
    out = capsys.readouterr().out
    assert "FAILED: start failed" in out, out
    hosted = HostedStore(ResultStore(gate.store_url))
    version = hosted.versions("crash")[0]
    assert version.status == FAILED and version.check_match
    assert gate.cli("logs", "crash", "--match", version.check_match, token=crash) == 0
    log = capsys.readouterr().out
    assert "about to fail" in log and "ModuleNotFoundError" in log
    with pytest.raises(StoreError, match="no version of crash has passed"):
        hosted.resolve("hosted:crash")


def test_bad_submissions_are_refused_with_one_line(
    gate: Gate, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = gate.register("carol")
    empty = scratch / "empty"
    empty.mkdir()
    assert gate.cli("submit", "carol", str(empty), token=token) == 2
    assert "no bot.toml" in capsys.readouterr().err
    wrong = python_bot(scratch, "wrong")
    (wrong / "bot.toml").write_text('runtime = "cobol"\nentry = "x"\n')
    assert gate.cli("submit", "carol", str(wrong), token=token) == 2
    assert "unknown runtime 'cobol'" in capsys.readouterr().err
    # The gateway checks again what arrives (a client may skip the local check).
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escape.py")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with grpc.insecure_channel(gate.address) as ch:
        stub = hosted_pb2_grpc.HostedServiceStub(ch)
        parts = [hosted_pb2.SubmitBotRequest(header=hosted_pb2.SubmitHeader(name="carol")),
                 hosted_pb2.SubmitBotRequest(chunk=raw.getvalue())]
        with pytest.raises(grpc.RpcError) as err:
            stub.SubmitBot(iter(parts), metadata=[("authorization", f"Bearer {token}")])
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "leaves the bot's folder" in (err.value.details() or "")


def test_a_version_that_keeps_crashing_is_suspended(scratch: Path) -> None:
    store = ResultStore(f"sqlite:///{scratch / 'results.sqlite3'}")
    hosted = HostedStore(store)
    from hosted_support import add_passed

    old = add_passed(store, "dave", python_bot(scratch, "dave-1"))
    new = add_passed(store, "dave", python_bot(scratch, "dave-2", entry="main.py:First"))
    assert hosted.resolve("hosted:dave").hash == new.hash
    for i in range(5):
        run = st.SeatRun(seat=0, bot="dave", version=new.hash, status=st.CRASH,
                         detail="exited with code 1 before its match ended", exit_code=1)
        notes = hosted.record_runs(f"m{i}", [run], finished_at=1000.0 + i)
        assert bool(notes) == (i == 4)
    suspended = hosted.version("dave", new.hash)
    assert suspended is not None and suspended.status == SUSPENDED
    assert "last 5 matches all ended in a crash" in suspended.reason
    assert hosted.resolve("hosted:dave").hash == old.hash
