"""A gateway match leaves no reference cycles behind its decisions.

A cycle made per decision (the pending request and its callbacks, the clock) is freed only
by the garbage collector, and on a busy gateway those collections were a tenth of the
loop's time. Here the real hub, match manager and referee play a match whose answers are
handed to the hub exactly as the stream reader hands them over; the collector is held off
and told to keep what it finds, so every cycle made during the match is counted.
"""

from __future__ import annotations

import asyncio
import collections
import gc
from pathlib import Path

from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.server.auth import BotRegistry
from arena.server.hub import BotHub, Connection, Outgoing
from arena.server.matches import MatchManager


async def _answer_all(hub: BotHub, conn: Connection) -> None:
    """The bot's side of the stream: the first legal action, at once."""
    while True:
        item = await conn.outbox.get()
        if type(item) is not Outgoing:
            continue
        item.clock.start()
        request = bot_pb2.PlayResponse.FromString(item.message).decision_request
        legal = list(request.legal_actions)
        action = next((a for a in legal if a != "concede"), legal[0])
        hub.answer(conn, bot_pb2.Decision(request_id=request.request_id, action=action))


def test_decisions_of_a_gateway_match_make_no_reference_cycles(tmp_path: Path) -> None:
    async def play() -> tuple[int, collections.Counter[str]]:
        registry = BotRegistry(tmp_path / "registry.sqlite3")
        names = ["north", "east", "south"]
        for name in names:
            registry.register(name)
        hub = BotHub()
        manager = MatchManager(hub, registry)
        answering = [
            asyncio.ensure_future(_answer_all(hub, hub.connect(n, "1", 0, wants_events=False)))
            for n in names
        ]
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            match_id = await manager.start(
                preset="classic", options={}, seed="cycles", bots=names, max_deals=4,
                time_control=(5000, 0, 1000), public_seed=True,
            )
            result = await manager.wait(match_id)
            gc.collect()
            kinds = collections.Counter(type(o).__name__ for o in gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
            for task in answering:
                task.cancel()
            registry.close()
        assert result is not None and result.status == "completed", result
        return sum(s.decisions for s in result.seat_stats), kinds

    decisions, kinds = asyncio.run(play())
    assert decisions >= 60
    # A cycle per decision would leave several objects per decision (it did: eight).
    assert sum(kinds.values()) < decisions // 4, kinds.most_common(10)
    assert kinds["Pending"] == 0 and kinds["BotClock"] == 0, kinds.most_common(10)
