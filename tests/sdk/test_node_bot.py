"""The Node.js starter bot, as a real Node process, plays through the real gateway."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from thousand_bot.proto.thousand.v1 import organiser_pb2

from arena.rigs.testing import GatewayThread

JS = Path(__file__).resolve().parents[2] / "sdk" / "javascript"


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not installed: the JavaScript starter bot needs Node.js 18+")
    if not (JS / "node_modules" / "@grpc" / "grpc-js").is_dir():
        npm = shutil.which("npm")
        assert npm is not None, "npm is needed to install the starter bot's dependencies"
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=JS, check=True, timeout=600)
    return found


def test_node_unit_tests(node: str) -> None:
    result = subprocess.run([node, "--test"], cwd=JS, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_node_bot_plays_a_full_match_against_python_bots(node: str, gateway: GatewayThread) -> None:
    token = gateway.register("js")
    proc = subprocess.Popen(
        [node, "bot.js", "--gateway", gateway.address, "--token", token, "--matches", "1"],
        cwd=JS,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        import time

        deadline = time.monotonic() + 30
        while not gateway.gateway.hub.instances("js"):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the node bot did not connect"
            time.sleep(0.05)
        channel, stub, md = gateway.organiser()
        with channel:
            request = organiser_pb2.StartMatchRequest(
                seed="node", bots=["greedy", "js", "random"], max_deals=10, public_seed=True
            )
            match_id = stub.StartMatch(request, metadata=md).match_id
            events = [
                r.event
                for r in stub.WatchMatch(
                    organiser_pb2.WatchMatchRequest(match_id=match_id), metadata=md, timeout=120
                )
            ]
        assert events[-1].match_end.status == "completed"
        result = gateway.gateway.matches.result(match_id)
        assert result is not None
        js = result.seat_stats[1]
        assert js.decisions > 20 and js.strikes == 0 and js.illegal == 0
        assert proc.wait(30) == 0  # it leaves after its one match
        log = proc.stderr.read() if proc.stderr else ""
        assert f"match {match_id} ended: completed" in log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_node_bot_reports_a_refused_token(node: str, gateway: GatewayThread) -> None:
    result = subprocess.run(
        [node, "bot.js", "--server", gateway.address, "--token", "thb_wrong"],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 4
    assert "unknown token" in result.stderr


def test_node_bot_never_concedes_a_contract(node: str, gateway: GatewayThread) -> None:
    """``arena bot-check`` on the starter through the gateway: no concession (the exchange
    lists ``concede`` first, and the starter used to take it), and the warning that it never
    bids, which is what the starter does."""
    import json
    import os
    import sys
    import time

    token = gateway.register("js-check")
    proc = subprocess.Popen([node, "bot.js", "--gateway", gateway.address, "--token", token],
                            cwd=JS, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not gateway.gateway.hub.instances("js-check"):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the node bot did not connect"
            time.sleep(0.05)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        check = subprocess.run(
            [str(Path(sys.executable).parent / "arena"), "bot-check", "remote:js-check",
             "--gateway", gateway.address, "--token", gateway.organiser_token, "--deals", "6",
             "--json"], capture_output=True, text=True, env=env, timeout=300)
    finally:
        proc.kill()
        proc.wait(10)
    report = json.loads(check.stdout)
    assert report["passed"], report
    assert not any(w.startswith("conceded") for w in report["warnings"]), report["warnings"]
    assert any(w.startswith("never bid") for w in report["warnings"]), report["warnings"]
