"""The rule texts' player choices reach remote bots as plain actions.

A redeal on a low hand or a poor talon (003 l.41, l.43) is a ``redeal`` or ``pass``
question in phase ``redeal``; a blind bid by any player (003 l.95) a ``look`` or
``blind N`` question in phase ``blind``.  A Python SDK bot and the Node.js starter bot,
both connected to a real gateway, get them and answer them like any other decision.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from thousand_bot import Bot, BotClient
from thousand_bot.proto.thousand.v1 import organiser_pb2

from arena.engine import Game, Rules
from arena.engine.replay import verify
from arena.rigs.testing import GatewayThread

JS = Path(__file__).resolve().parents[2] / "sdk" / "javascript"
OPTIONS = {"redeal_low_hand": 30, "redeal_low_hand_at": "both", "redeal_low_talon": 12,
           "blind_bid": True, "blind_by": "anyone"}


class Recorder(Bot):
    """The SDK's default choices, remembering which questions came."""

    def __init__(self) -> None:
        self.phases: set[str] = set()

    def decide(self, observation: Any, legal: list[str]) -> str:
        self.phases.add(str(observation["phase"]))
        return super().decide(observation, legal)


def questions(replay: dict[str, Any], seat: int) -> dict[str, list[str]]:
    """What ``seat`` answered in the phases ``redeal`` and ``blind``, re-simulated."""
    game = Game(Rules.from_json(replay["rules"]), seed=replay["seed"],
                dealer=replay["first_dealer"])
    out: dict[str, list[str]] = {"redeal": [], "blind": []}
    for deal in replay["deals"]:
        game.deal(deal["deck"])
        for s, text, *_ in deal["actions"]:
            if s == seat and game.phase_name in out:
                out[game.phase_name].append(text)
            game.apply(text)
    return out


def test_remote_bots_answer_redeal_and_blind_questions(gateway: GatewayThread) -> None:
    node = shutil.which("node")
    assert node is not None, "the Node.js starter bot needs Node.js 18+"
    if not (JS / "node_modules" / "@grpc" / "grpc-js").is_dir():
        npm = shutil.which("npm")
        assert npm is not None, "npm is needed to install the starter bot's dependencies"
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=JS, check=True, timeout=600)
    recorder = Recorder()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    stop = asyncio.Event()
    client = BotClient(recorder, gateway.address, gateway.register("py"))
    task = asyncio.run_coroutine_threadsafe(client.run(stop), loop)
    js_token = gateway.register("js")
    proc = subprocess.Popen(
        [node, "bot.js", "--server", gateway.address, "--token", js_token, "--matches", "1"],
        cwd=JS, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (client.sessions and gateway.gateway.hub.instances("js")):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the bots did not connect"
            time.sleep(0.05)
        channel, stub, md = gateway.organiser()
        # The gateway hands each finished match's replay to its result hook (the results
        # file in production) and keeps only the summary.
        finished: list[Any] = []
        gateway.gateway.matches.on_result = finished.append
        with channel:
            request = organiser_pb2.StartMatchRequest(
                preset="classic", options_json=json.dumps(OPTIONS), seed="questions",
                public_seed=True,
                bots=["py", "js", "greedy"], max_deals=20,
            )
            match_id = stub.StartMatch(request, metadata=md).match_id
            events = [r.event for r in stub.WatchMatch(
                organiser_pb2.WatchMatchRequest(match_id=match_id), metadata=md, timeout=120
            )]  # fmt: skip
        assert events[-1].match_end.status == "completed"
        (result,) = [r for r in finished if r.match_id == match_id]
        assert result.replay is not None
        assert verify(result.replay) is None
        for seat in (0, 1):
            stats = result.seat_stats[seat]
            assert stats.strikes == 0 and stats.illegal == 0 and stats.malformed == 0
            asked = questions(result.replay, seat)
            # Both were asked both questions, and declined: the SDK's default and the
            # Node bot pass a redeal and look before bidding.
            assert asked["redeal"] and set(asked["redeal"]) == {"pass"}, asked
            assert asked["blind"] and set(asked["blind"]) == {"look"}, asked
        assert {"redeal", "blind"} <= recorder.phases
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        loop.call_soon_threadsafe(stop.set)
        task.result(20)
        loop.call_soon_threadsafe(loop.stop)


def test_the_sdk_default_declines_a_redeal() -> None:
    assert Bot().decide({"phase": "redeal"}, ["pass", "redeal"]) == "pass"
