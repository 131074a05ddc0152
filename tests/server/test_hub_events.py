"""Events for a bot that wants none are counted, not sent (but for the match's start and
end, which every instance is told), and the numbering holds.

A seat whose instance asked for no events counts most of them itself, without the hub
(see ``RemoteSeat.on_event_nowait``). When that instance leaves and one that wants events
takes the match over, the first event it gets must carry the match's own number and deal,
exactly as if every event had gone through the hub; and a bot in two seats of one match is
counted once per event, while two equal events (the declarer's two ``discard ??``) count
twice.
"""

from __future__ import annotations

import asyncio
from typing import Any

from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.server.hub import BotHub, Connection, RemoteSeat

MATCH = "m-0123456789abcdef"


def _events() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "match_start", "match_id": MATCH, "seats": ["q", "q", "other"]},
        {"type": "deal_start", "deal": 0, "dealer": 0},
    ]
    out += [{"type": "action", "seat": s % 3, "action": "pass"} for s in range(5)]
    out += [{"type": "action", "seat": 1, "action": "discard ??"} for _ in range(2)]
    out += [{"type": "deal_end", "deal": 0}, {"type": "deal_start", "deal": 1, "dealer": 1}]
    out += [{"type": "action", "seat": 2, "action": "bid 100"}]
    return out


def _sent(conn: Connection) -> list[bot_pb2.PlayResponse]:
    out = []
    while conn.outbox.qsize():
        item = asyncio.run(conn.outbox.get())
        assert isinstance(item, bot_pb2.PlayResponse)
        out.append(item)
    return out


def test_a_quiet_instance_gets_only_the_start_and_its_successor_the_right_numbers() -> None:
    hub = BotHub()
    quiet = hub.connect("q", "1", 0, wants_events=False)
    seats = [RemoteSeat(hub, "q"), RemoteSeat(hub, "q")]  # one bot in two seats
    events = _events()
    for event in events:
        for seat in seats:  # the referee hands every seat the same event object
            seat.on_event_nowait(MATCH, event)
    told = [m.event for m in _sent(quiet)]
    assert [(e.type, e.sequence) for e in told] == [("match_start", 0)]  # once, numbered 0
    quiet.end(None)  # the quiet instance leaves; one that wants events takes over
    loud = hub.connect("q", "1", 0, wants_events=True)
    last = {"type": "action", "seat": 0, "action": "pass"}
    for seat in seats:
        seat.on_event_nowait(MATCH, last)
    sent = _sent(loud)
    assert len(sent) == 1  # once, though the bot has two seats
    told = sent[0].event
    assert told.sequence == len(events)  # every earlier event counted once
    assert told.action.deal == 1  # and the deal noted from the last deal_start
    assert told.match_id == MATCH


def test_quiet_and_loud_streams_number_alike() -> None:
    """The same events through a quiet bot and a loud one: the loud one's numbers are
    those the quiet one counted, event for event."""
    hub = BotHub()
    hub.connect("quiet", "1", 0, wants_events=False)
    loud = hub.connect("loud", "1", 0, wants_events=True)
    quiet_seat, loud_seat = RemoteSeat(hub, "quiet"), RemoteSeat(hub, "loud")
    events = _events()
    for event in events:
        quiet_seat.on_event_nowait(MATCH, event)
        loud_seat.on_event_nowait(MATCH, event)
    numbers = [m.event.sequence for m in _sent(loud)]
    assert numbers == list(range(len(events)))
    record = hub._told[("quiet", MATCH)]
    assert record.encoder is not None and record.encoder.sequence == len(events)
    assert record.encoder.deal == 1


def test_a_quiet_instance_is_told_how_the_match_ended() -> None:
    hub = BotHub()
    quiet = hub.connect("q", "1", 0, wants_events=False)
    seat = RemoteSeat(hub, "q")
    events = [*_events(), {"type": "match_end", "match_id": MATCH, "status": "completed",
                           "scores": [1, 2, 3], "ranks": [3, 2, 1], "strikes": [0, 1, 0]}]
    for event in events:
        seat.on_event_nowait(MATCH, event)
    told = [m.event for m in _sent(quiet)]
    assert [(e.type, e.sequence) for e in told] == [
        ("match_start", 0), ("match_end", len(events) - 1)]
    assert '"strikes":[0,1,0]' in told[1].detail_json
