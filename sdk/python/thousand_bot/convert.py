"""Rebuilds the engine's observation dictionary from the typed message.

Bots get the same dictionary the arena's rules engine produces, so a bot written against
the in-process arena runs unchanged over the network.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from thousand_bot.proto.thousand.v1 import common_pb2

_Optional = Literal["to_act", "bid", "declarer", "contract", "trump", "leader"]
_OPTIONAL: Final[tuple[_Optional, ...]] = (
    "to_act",
    "bid",
    "declarer",
    "contract",
    "trump",
    "leader",
)


def observation_to_dict(msg: common_pb2.Observation) -> dict[str, Any]:
    obs: dict[str, Any] = {
        "seat": msg.seat,
        "players": msg.players,
        "dealer": msg.dealer,
        "deal": msg.deal,
        "phase": msg.phase,
        "to_act": None,
        "hand": list(msg.hand),
        "scores": list(msg.scores),
        "barrel": list(msg.barrel),
        "bolts": list(msg.bolts),
        "active": list(msg.active),
        "auction": [[e.seat, e.action] for e in msg.auction],
        "bid": None,
        "declarer": None,
        "contract": None,
        "blind": msg.blind,
        "talon": list(msg.talon),
        "given": [[g.card, g.seat] for g in msg.given],
        "received": list(msg.received),
        "discarded": list(msg.discarded),
        "shown_marriages": [[m.seat, m.suit] for m in msg.shown_marriages],
        "trump": None,
        "marriages": [[m.seat, m.suit, m.points] for m in msg.marriages],
        "trick": [[t.seat, t.card] for t in msg.trick],
        "leader": None,
        "tricks_taken": list(msg.tricks_taken),
        "points_taken": list(msg.points_taken),
        "hand_sizes": list(msg.hand_sizes),
    }
    for key in _OPTIONAL:
        if msg.HasField(key):
            obs[key] = getattr(msg, key)
    if msg.extra_json:
        extras = json.loads(msg.extra_json)
        if isinstance(extras, dict):
            obs.update(extras)
    return obs


def event_to_dict(msg: common_pb2.MatchEvent) -> dict[str, Any]:
    """The public event as the referee recorded it, plus ``match_id`` and ``sequence``."""
    event: dict[str, Any] = json.loads(msg.detail_json) if msg.detail_json else {}
    if not isinstance(event, dict):
        event = {}
    event.setdefault("type", msg.type)
    event["match_id"] = msg.match_id
    event["sequence"] = msg.sequence
    return event
