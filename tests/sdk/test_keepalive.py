"""One set of keepalive settings for the gateway, the Python SDK and the Node bot.

The idle test runs the real logic with every interval scaled down to a fraction of a
second, so several keepalive intervals pass in seconds; with a server that refuses the
clients' ping rate, the clients get GOAWAY ``too_many_pings`` within a few intervals.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from thousand_bot import client as sdk
from thousand_bot.examples import Random

from arena.rigs.testing import GatewayThread
from arena.server import keepalive as gateway_keepalive

JS = Path(__file__).resolve().parents[2] / "sdk" / "javascript"
INTERVAL_MS = 300
INTERVALS = 16


def node_options(env: dict[str, str]) -> dict[str, int]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the JavaScript starter bot needs Node.js 18+")
    code = (
        "const b = require('./bot.js');"
        "console.log(JSON.stringify(b.keepaliveOptions(JSON.parse(process.argv[1]))))"
    )
    out = subprocess.run(
        [node, "-e", code, json.dumps(env)], cwd=JS, capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout))


def test_gateway_sdk_and_node_bot_use_the_same_keepalive_settings() -> None:
    server = dict(gateway_keepalive.keepalive_options(gateway_keepalive.KEEPALIVE_TIME_MS))
    python = dict(sdk.keepalive_channel_options(sdk.KEEPALIVE_TIME_MS))
    node = node_options({})
    for key in ("grpc.keepalive_time_ms", "grpc.keepalive_timeout_ms"):
        assert python[key] == node[key] == server[key], key
    # The C core (the gateway, the Python SDK) times a ping out by this option, not by
    # keepalive_timeout_ms (grpc-js, the Node bot's, goes by keepalive_timeout_ms).
    ping = "grpc.http2.ping_timeout_ms"
    assert python[ping] == server[ping] == python["grpc.keepalive_timeout_ms"]
    permit = "grpc.keepalive_permit_without_calls"
    assert python[permit] == node[permit] == 1
    # Clients ping at half the rate the gateway accepts: a late timer is never a strike.
    assert (
        python["grpc.keepalive_time_ms"]
        >= 2 * server["grpc.http2.min_ping_interval_without_data_ms"]
    )
    assert server["grpc.http2.max_ping_strikes"] >= 1
    # The option the gateway's accepted rate goes by (a misspelt one is silently ignored).
    assert "grpc.http2.min_recv_ping_interval_without_data_ms" not in server
    # Scaled for tests, the proportions stay.
    scaled = {"THOUSAND_BOT_KEEPALIVE_MS": str(INTERVAL_MS)}
    assert node_options(scaled) == {
        k: v for k, v in sdk.keepalive_channel_options(INTERVAL_MS) if k in node_options({})
    }
    assert (
        dict(gateway_keepalive.keepalive_options(INTERVAL_MS))["grpc.keepalive_timeout_ms"]
        == (dict(sdk.keepalive_channel_options(INTERVAL_MS))["grpc.keepalive_timeout_ms"])
    )


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_idle_python_and_node_bots_stay_connected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(gateway_keepalive.KEEPALIVE_ENV, str(INTERVAL_MS))
    monkeypatch.setenv(sdk.KEEPALIVE_ENV, str(INTERVAL_MS))
    gateway = GatewayThread(str(tmp_path / "gateway.sqlite3"))
    node = shutil.which("node")
    assert node is not None
    lines = _Lines()
    logging.getLogger("thousand_bot").addHandler(lines)
    proc: subprocess.Popen[str] | None = None
    stop = asyncio.Event()
    loop = asyncio.new_event_loop()
    bot = sdk.BotClient(Random(), gateway.address, gateway.register("idle-py"))
    runner = threading.Thread(target=loop.run_until_complete, args=(bot.run(stop),), daemon=True)
    try:
        runner.start()
        proc = subprocess.Popen(
            [node, "bot.js", "--server", gateway.address, "--token", gateway.register("idle-js")],
            cwd=JS,
            stderr=subprocess.PIPE,
            text=True,
        )
        hub = gateway.gateway.hub
        deadline = time.monotonic() + 30
        while not (hub.instances("idle-py") and hub.instances("idle-js")):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the bots did not connect"
            time.sleep(0.05)
        first = bot.instance_id
        time.sleep(INTERVALS * INTERVAL_MS / 1000)
        assert (hub.instances("idle-py"), hub.instances("idle-js")) == (1, 1)
        assert bot.instance_id == first, "the idle SDK bot came back as a new instance"
        assert proc.poll() is None
    finally:
        loop.call_soon_threadsafe(stop.set)
        runner.join(timeout=10)
        logging.getLogger("thousand_bot").removeHandler(lines)
        if proc is not None:
            proc.terminate()
            _, err = proc.communicate(timeout=10)
        gateway.close()
    assert bot.sessions == 1, lines.lines
    assert not [x for x in lines.lines if "disconnected" in x or "Too many pings" in x]
    assert err.count("connected as") == 1, err
    assert "disconnected" not in err and "Bandwidth exhausted" not in err, err
