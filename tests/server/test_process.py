"""The gateway as a process: start-up output, configuration errors and SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from thousand_bot.proto.thousand.v1 import organiser_pb2, organiser_pb2_grpc

from arena.rigs.testing import RawBot

ORGANISER = "org-test-token"


class Server:
    def __init__(self, tmp: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.results = tmp / "results.jsonl"
        command = [
            sys.executable, "-m", "arena.server", "--host", "127.0.0.1", "--port", "0",
            "--db", str(tmp / "bots.sqlite3"), "--results", str(self.results), *extra,
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env or dict(os.environ),
        )
        self.lines: list[str] = []
        self.port = 0
        for line in self._lines():
            found = re.search(r"gateway listening on [\d.]+:(\d+)", line)
            if found:
                self.port = int(found.group(1))
                break
        assert self.port, "\n".join(self.lines)
        self.address = f"127.0.0.1:{self.port}"

    def _lines(self) -> Iterator[str]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            yield line

    def rest(self, timeout: float = 60) -> str:
        out, _ = self.proc.communicate(timeout=timeout)
        self.lines.extend(out.splitlines())
        return "\n".join(self.lines)

    def organiser(self) -> tuple[grpc.Channel, organiser_pb2_grpc.OrganiserServiceStub, object]:
        channel = grpc.insecure_channel(self.address)
        md = (("authorization", f"Bearer {ORGANISER}"),)
        return channel, organiser_pb2_grpc.OrganiserServiceStub(channel), md

    def health(self) -> int:
        with grpc.insecure_channel(self.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        return int(reply.status)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path, "--organiser-token", ORGANISER, "--grace", "3")
    yield s
    s.kill()


def test_generated_organiser_token_is_printed_once(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARENA_ORGANISER_TOKEN"}
    s = Server(tmp_path, env=env)
    try:
        token = ""
        for line in s._lines():
            if "organiser token" in line:
                token = line.split()[-1]
            if line.startswith("no --routing"):
                break
        # Said at once: a restart makes another token, and tournaments need --routing.
        said = "\n".join(s.lines)
        assert ("a new one is made at each start: set ARENA_ORGANISER_TOKEN (or "
                "--organiser-token) to keep one token across restarts") in said
        assert "a tournament (remote:NAME from its executor or workers) needs --routing" in said
        channel = grpc.insecure_channel(s.address)
        with channel:
            stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
            md = (("authorization", f"Bearer {token}"),)
            assert stub.ListBots(organiser_pb2.ListBotsRequest(), metadata=md).bots == []
        s.proc.send_signal(signal.SIGTERM)
        output = s.rest()
        assert output.count(token) == 1
        assert s.proc.returncode == 0
    finally:
        s.kill()


def test_the_readme_says_what_the_gateway_warns_of_at_start() -> None:
    """A bot author reads the README before the gateway's first lines: both say that a
    restart makes a new organiser token (and how to keep one) and that tournaments need
    ``--routing``."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    said = " ".join(readme.split("Two things to know before the first tournament", 1)[1]
                    .split("\n\n", 1)[0].split())
    assert "makes up a new organiser token each time it starts" in said
    assert "ARENA_ORGANISER_TOKEN" in said and "--organiser-token" in said
    assert "must be started with `--routing" in said


def test_organiser_token_from_the_environment(tmp_path: Path) -> None:
    s = Server(tmp_path, env=dict(os.environ, ARENA_ORGANISER_TOKEN=ORGANISER))
    try:
        channel, stub, md = s.organiser()
        with channel:
            stub.ListBots(organiser_pb2.ListBotsRequest(), metadata=md)
        s.proc.send_signal(signal.SIGTERM)
        assert "organiser token" not in s.rest()
    finally:
        s.kill()


def test_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        command = [sys.executable, "-m", "arena.server", "--host", "127.0.0.1"]
        command += ["--port", str(port), "--db", str(tmp_path / "b.sqlite3")]
        result = subprocess.run(
            [*command, "--organiser-token", ORGANISER],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


def _start(server: Server, bots: list[str], seed: str, **kw: object) -> str:
    channel, stub, md = server.organiser()
    kw.setdefault("public_seed", bool(seed))
    with channel:
        request = organiser_pb2.StartMatchRequest(seed=seed, bots=bots, **kw)  # type: ignore[arg-type]
        return str(stub.StartMatch(request, metadata=md).match_id)


def _register(server: Server, name: str) -> str:
    channel, stub, md = server.organiser()
    with channel:
        reply = stub.RegisterBot(organiser_pb2.RegisterBotRequest(name=name), metadata=md)
    return str(reply.token)


def test_sigterm_lets_running_matches_finish(server: Server) -> None:
    bot = RawBot(server.address, _register(server, "held"))
    bot.recv_kind("welcome")
    match_id = _start(server, ["held", "greedy", "random"], "finish", max_deals=2)
    request = bot.recv_kind("decision_request").decision_request  # the match is waiting on us
    server.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 10
    while server.health() != health_pb2.HealthCheckResponse.NOT_SERVING:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with pytest.raises(grpc.RpcError) as info:
        _start(server, ["random", "greedy", "random"], "refused")
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    # Within the grace period the bot plays on and the match completes.
    bot.answer = lambda r: r.legal_actions[0]
    bot.decide(request.request_id, request.legal_actions[0])
    output = server.rest()
    assert server.proc.returncode == 0, output
    results = [json.loads(line) for line in server.results.read_text().splitlines()]
    assert [(r["match_id"], r["status"]) for r in results] == [(match_id, "completed")]
    bot.close()


def test_sigterm_aborts_matches_that_outlast_the_grace_period(server: Server) -> None:
    bot = RawBot(server.address, _register(server, "stuck"))
    bot.recv_kind("welcome")
    match_id = _start(
        server,
        ["stuck", "greedy", "random"],
        "abort",
        time_control=organiser_pb2.TimeControl(decision_ms=60_000, bank_ms=0, strike_limit=3),
    )
    bot.recv_kind("decision_request")  # and never answer
    started = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    output = server.rest()
    assert server.proc.returncode == 0, output
    assert time.monotonic() - started < 30
    results = [json.loads(line) for line in server.results.read_text().splitlines()]
    assert [(r["match_id"], r["status"]) for r in results] == [(match_id, "aborted")]
    bot.close()


def test_metrics_endpoint(tmp_path: Path) -> None:
    import urllib.request

    s = Server(tmp_path, "--organiser-token", ORGANISER, "--metrics-port", "0")
    try:
        url = ""
        for line in s._lines():
            found = re.search(r"metrics on (http://\S+)", line)
            if found:
                url = found.group(1)
                break
        assert url
        _register(s, "metered")
        bot = RawBot(s.address, None)
        with pytest.raises(grpc.RpcError):
            bot.recv_kind("welcome", timeout=10)
        bot.close()
        with urllib.request.urlopen(url, timeout=10) as reply:
            text = reply.read().decode()
        assert 'grpc_server_handled_total{grpc_code="OK",grpc_method="RegisterBot"' in text
        assert 'arena_gateway_auth_failures_total{reason="missing_token"} 1.0' in text
        s.proc.send_signal(signal.SIGTERM)
        s.rest()
    finally:
        s.kill()
