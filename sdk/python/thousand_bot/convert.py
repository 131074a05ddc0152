"""Rebuilds the engine's observation dictionary from the typed message.

Bots get the same dictionary the arena's rules engine produces, so a bot written against
the in-process arena runs unchanged over the network.
"""

from __future__ import annotations

import json
from typing import Any

from thousand_bot.proto.thousand.v1 import common_pb2

#: The observation's keys in the engine's order.
_TEMPLATE: dict[str, Any] = dict.fromkeys((
    "seat", "players", "dealer", "deal", "phase", "to_act", "hand", "scores", "barrel",
    "bolts", "active", "auction", "bid", "declarer", "contract", "blind", "talon", "given",
    "received", "discarded", "shown_marriages", "trump", "marriages", "trick", "leader",
    "tricks_taken", "points_taken", "hand_sizes",
))


def observation_to_dict(msg: common_pb2.Observation) -> dict[str, Any]:
    """The observation as the rules engine's dictionary.

    Every decision request goes through here, so it is written for speed: repeated fields
    are copied by slicing (a new plain list, cheaper than ``list()`` on the protobuf
    container), repeated messages are only walked when they have entries (most are empty
    most of the time, and an empty comprehension still costs a call), optional fields are
    read once each, and the usual empty ``extra_json`` (``"{}"``) is not parsed.
    """
    has = msg.HasField
    auction = msg.auction
    given = msg.given
    shown = msg.shown_marriages
    marriages = msg.marriages
    trick = msg.trick
    # Filled into a copy of the template: a 28-key dict display is built in two parts
    # and merged, at more than twice the cost.
    obs = _TEMPLATE.copy()
    obs["seat"] = msg.seat
    obs["players"] = msg.players
    obs["dealer"] = msg.dealer
    obs["deal"] = msg.deal
    obs["phase"] = msg.phase
    obs["to_act"] = msg.to_act if has("to_act") else None
    obs["hand"] = msg.hand[:]
    obs["scores"] = msg.scores[:]
    obs["barrel"] = msg.barrel[:]
    obs["bolts"] = msg.bolts[:]
    obs["active"] = msg.active[:]
    obs["auction"] = [[e.seat, e.action] for e in auction] if auction else []
    obs["bid"] = msg.bid if has("bid") else None
    obs["declarer"] = msg.declarer if has("declarer") else None
    obs["contract"] = msg.contract if has("contract") else None
    obs["blind"] = msg.blind
    obs["talon"] = msg.talon[:]
    obs["given"] = [[g.card, g.seat] for g in given] if given else []
    obs["received"] = msg.received[:]
    obs["discarded"] = msg.discarded[:]
    obs["shown_marriages"] = [[m.seat, m.suit] for m in shown] if shown else []
    obs["trump"] = msg.trump if has("trump") else None
    obs["marriages"] = [[m.seat, m.suit, m.points] for m in marriages] if marriages else []
    obs["trick"] = [[t.seat, t.card] for t in trick] if trick else []
    obs["leader"] = msg.leader if has("leader") else None
    obs["tricks_taken"] = msg.tricks_taken[:]
    obs["points_taken"] = msg.points_taken[:]
    obs["hand_sizes"] = msg.hand_sizes[:]
    extra = msg.extra_json
    if extra and extra != "{}":
        extras = json.loads(extra)
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
