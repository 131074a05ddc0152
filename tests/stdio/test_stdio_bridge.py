"""``thousand-bot run --stdio``: a bot program on a real gateway, honest and hostile.

The bridge is a real process (the ``thousand-bot`` command), the program a real child of
it, the gateway real on a loopback port. The gateway judges what the program writes: a
program behind the bridge gets the refusals and strikes a gRPC bot gets, and the honest
matches on the gateway finish meanwhile.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stdio_support import HOSTILE
from thousand_bot.proto.thousand.v1 import organiser_pb2

from arena.rigs.processes import wait_until
from arena.rigs.testing import GatewayThread

TC = organiser_pb2.TimeControl(decision_ms=300, bank_ms=300, strike_limit=3)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayThread]:
    gw = GatewayThread(str(tmp_path / "gateway.sqlite3"))
    try:
        yield gw
    finally:
        gw.close()


class Bridge:
    """``thousand-bot run --stdio -- python hostile_bot.py MODE`` with its own token."""

    def __init__(self, gw: GatewayThread, name: str, command: list[str], tmp: Path,
                 *extra: str) -> None:
        self.name = name
        self.log = tmp / f"{name}.log"
        argv = [sys.executable, "-m", "thousand_bot.cli", "run", "--stdio", "--gateway",
                gw.address, "--max-attempts", "3", "--log-level", "WARNING", *extra, "--",
                *command]
        env = dict(os.environ, THOUSAND_BOT_TOKEN=gw.register(name))
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(10)


def _hostile(mode: str) -> list[str]:
    return [sys.executable, str(HOSTILE), mode]


def _connected(gw: GatewayThread, bridges: list[Bridge]) -> None:
    def ready() -> bool:
        for b in bridges:
            assert b.proc.poll() is None, f"{b.name} exited: {b.text()}"
        return all(gw.gateway.hub.instances(b.name) for b in bridges)

    wait_until(ready, timeout=30, what="the bridges")


def _start(gw: GatewayThread, bots: list[str], seed: str, **kw: Any) -> str:
    channel, stub, md = gw.organiser()
    with channel:
        request = organiser_pb2.StartMatchRequest(bots=bots, seed=seed, public_seed=True,
                                                  max_deals=4, **kw)
        return str(stub.StartMatch(request, metadata=md, timeout=30).match_id)


def _result(gw: GatewayThread, match_id: str) -> Any:
    result = gw.call(gw.gateway.matches.wait(match_id), timeout=120)
    assert result is not None
    return result


def test_a_program_plays_on_a_gateway_and_stops_when_told(
    gateway: GatewayThread, tmp_path: Path
) -> None:
    transcript = tmp_path / "transcript.txt"
    bridge = Bridge(gateway, "honest", _hostile("honest"), tmp_path,
                    "--transcript", str(transcript))
    try:
        _connected(gateway, [bridge])
        match_id = _start(gateway, ["honest", "greedy", "random"], "bridge")
        result = _result(gateway, match_id)
        assert result.status == "completed" and result.seat_stats[0].strikes == 0
        assert result.seat_stats[0].decisions > 20
    finally:
        code = bridge.stop()
    assert code == 0, bridge.text()
    lines = transcript.read_text().splitlines()
    assert lines[0] == "> hello 1 events=all"
    assert lines[1].startswith("< welcome 1 honest honest#")
    assert any(line.startswith(f"< request {match_id} ") for line in lines)
    assert lines[-1] == "< bye stopped"


def test_the_bridge_takes_a_cmd_reference_too(gateway: GatewayThread, tmp_path: Path) -> None:
    token = gateway.register("by-ref")
    log = tmp_path / "ref.log"
    command = f"cmd:{sys.executable} {HOSTILE} honest"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "thousand_bot.cli", "run", command, "--gateway",
             gateway.address, "--token", token], stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: gateway.gateway.hub.instances("by-ref"), timeout=30,
                   what="the bridge", alive=lambda: proc.poll() is None)
        result = _result(gateway, _start(gateway, ["by-ref", "greedy", "greedy"], "ref"))
        assert result.status == "completed" and result.seat_stats[0].strikes == 0
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0, log.read_text()


def test_hostile_programs_behind_the_bridge_get_the_strikes_of_grpc_bots(
    gateway: GatewayThread, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="arena.server.services")
    modes = ["garbage", "padded", "stall", "die", "flood"]
    bridges = {m: Bridge(gateway, m, _hostile(m), tmp_path) for m in modes}
    honest = Bridge(gateway, "honest", _hostile("honest"), tmp_path)
    try:
        _connected(gateway, [*bridges.values(), honest])
        matches = {m: _start(gateway, [m, "greedy", "random"], f"bridge/{m}", time_control=TC)
                   for m in modes}
        fair = _start(gateway, ["honest", "greedy", "random"], "bridge/honest")
        results = {m: _result(gateway, match_id) for m, match_id in matches.items()}
        honest_result = _result(gateway, fair)
        dead = bridges["die"].proc.wait(30)
    finally:
        codes = {m: b.stop() for m, b in bridges.items()}
        honest.stop()
    assert honest_result.status == "completed"
    assert all(s.strikes == 0 for s in honest_result.seat_stats)
    expect = {"garbage": "malformed", "padded": "malformed", "stall": "timeouts",
              "die": "timeouts", "flood": "strikes"}
    for mode, result in results.items():
        stats = result.seat_stats[0]
        where = f"{mode}: {result.status} {stats}\n{bridges[mode].text()[-1500:]}"
        assert result.status == "forfeit" and result.forfeit_seat == 0, where
        assert getattr(stats, expect[mode]) >= 1 and stats.strikes == 3, where
        assert all(s.strikes == 0 for s in result.seat_stats[1:]), where
    # A program that dies takes its bridge with it, saying how it ended: its matches time
    # out, as a gRPC bot's do when its process dies.
    assert dead == 1 and codes["die"] == 1
    assert "the bot's program exited with code 3" in bridges["die"].text()
    assert "dying now" in bridges["die"].text()  # its standard error stays the bridge's
    # A flood is cut off by the gateway, as a gRPC bot's flood is (the bridge may only
    # see its own failed write to the closed stream).
    cut = [r.getMessage() for r in caplog.records if "bot flood instance" in r.getMessage()]
    assert any("RESOURCE_EXHAUSTED: too many refused messages" in m for m in cut), cut
    # Garbage is refused by the gateway with the error a gRPC bot gets.
    assert "is not an action in the game's notation" in bridges["garbage"].text()
    assert "longer than 64 characters" in bridges["padded"].text()


@pytest.mark.parametrize(
    ("mode", "code", "says"),
    [
        ("early-exit", 1, "the bot's program exited with code 1 before its hello"),
        ("badhello", 1, "protocol version 7 is not spoken here"),
        ("missing", 1, "cannot start /nonexistent/bot: No such file or directory"),
    ],
)
def test_a_program_that_cannot_play_ends_the_bridge_with_a_clear_line(
    gateway: GatewayThread, tmp_path: Path, mode: str, code: int, says: str
) -> None:
    command = ["/nonexistent/bot"] if mode == "missing" else _hostile(mode)
    bridge = Bridge(gateway, f"cannot-{mode}", command, tmp_path)
    started = time.monotonic()
    assert bridge.proc.wait(30) == code
    text = bridge.text()
    assert says in text and "Traceback" not in text, text
    assert time.monotonic() - started < 20


def test_the_bridge_refuses_bad_usage_in_one_line(gateway: GatewayThread) -> None:
    def run(*args: str, token: str | None = "t") -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("THOUSAND_BOT_")}
        if token:
            env["THOUSAND_BOT_TOKEN"] = token
        return subprocess.run([sys.executable, "-m", "thousand_bot.cli", "run", *args],
                              capture_output=True, text=True, env=env, timeout=60)

    empty = run("--stdio", "--gateway", gateway.address)
    assert empty.returncode == 2 and "needs the program's command after --" in empty.stderr
    both = run("thousand_bot.examples:Greedy", "--stdio", "--", "true")
    assert both.returncode == 2 and "not both" in both.stderr
    refused = run("--gateway", gateway.address, "--", *_hostile("honest"), token="thb_wrong")
    assert refused.returncode == 4 and "unknown token" in refused.stderr
    many = run("--instances", "2", "--transcript", "t.txt", "--", "true")
    assert many.returncode == 2 and "--instances 1" in many.stderr


def test_a_gateway_runs_no_program_for_the_organiser(gateway: GatewayThread) -> None:
    import grpc

    channel, stub, md = gateway.organiser()
    with channel, pytest.raises(grpc.RpcError) as refused:
        stub.StartMatch(organiser_pb2.StartMatchRequest(bots=["cmd:/bin/sh -c 'rm -rf /'",
                                                             "greedy", "random"]),
                        metadata=md, timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "a gateway does not run programs" in (refused.value.details() or "")


def test_bot_check_checks_a_program_on_a_gateway_as_it_checks_any_remote_bot(
    gateway: GatewayThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from arena.referee.cli import bot_check_main

    bridges = [Bridge(gateway, m, _hostile(m), tmp_path) for m in ("honest", "illegal")]
    try:
        _connected(gateway, bridges)
        common = ["--gateway", gateway.address, "--token", gateway.organiser_token, "--deals",
                  "2", "--json"]
        assert bot_check_main(["remote:honest", *common]) == 0
        honest = json.loads(capsys.readouterr().out)
        assert honest["passed"] and honest["decisions"] > 10
        assert bot_check_main(["remote:illegal", *common, "--max-problems", "3"]) == 1
        illegal = json.loads(capsys.readouterr().out)
        assert [p["kind"] for p in illegal["problems"]] == ["illegal"] * 3
    finally:
        for bridge in bridges:
            bridge.stop()


def test_a_program_joins_a_gateways_hub_as_an_instance_of_a_registered_bot(
    gateway: GatewayThread, tmp_path: Path
) -> None:
    """What a host of bot programs does (a sandbox starting them its own way): a
    ProgramSession on the gateway's own hub. The gateway's remote seats hand it requests
    as protobuf bytes; the program reads them as text."""
    from thousand_bot.stdio.program import BotProgram

    from arena.stdio.session import ProgramSession

    gateway.register("hosted")
    logged: list[str] = []
    program = BotProgram(_hostile("honest"), stderr=logged.append)
    session = ProgramSession(gateway.gateway.hub, "hosted", program, expected_name="hosted")
    assert gateway.call(session.open())
    assert session.status.state == "running"
    assert gateway.gateway.hub.instances("hosted") == 1
    result = _result(gateway, _start(gateway, ["hosted", "greedy", "random"], "hosted"))
    assert result.status == "completed" and result.seat_stats[0].strikes == 0
    assert result.seat_stats[0].decisions > 10
    status = gateway.call(session.close("the host is done with it"))
    assert status.state == "ok", status
    assert gateway.gateway.hub.instances("hosted") == 0
