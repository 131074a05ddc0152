"""Rebuilds the engine's observation dictionary from the typed message.

Bots get the same dictionary the arena's rules engine produces, so a bot written against
the in-process arena runs unchanged over the network.
"""

from __future__ import annotations

import json
from typing import Any

from thousand_bot.proto.thousand.v1 import common_pb2


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
    obs: dict[str, Any] = {
        "seat": msg.seat,
        "players": msg.players,
        "dealer": msg.dealer,
        "deal": msg.deal,
        "phase": msg.phase,
        "to_act": msg.to_act if has("to_act") else None,
        "hand": msg.hand[:],
        "scores": msg.scores[:],
        "barrel": msg.barrel[:],
        "bolts": msg.bolts[:],
        "active": msg.active[:],
        "auction": [[e.seat, e.action] for e in auction] if auction else [],
        "bid": msg.bid if has("bid") else None,
        "declarer": msg.declarer if has("declarer") else None,
        "contract": msg.contract if has("contract") else None,
        "blind": msg.blind,
        "talon": msg.talon[:],
        "given": [[g.card, g.seat] for g in given] if given else [],
        "received": msg.received[:],
        "discarded": msg.discarded[:],
        "shown_marriages": [[m.seat, m.suit] for m in shown] if shown else [],
        "trump": msg.trump if has("trump") else None,
        "marriages": [[m.seat, m.suit, m.points] for m in marriages] if marriages else [],
        "trick": [[t.seat, t.card] for t in trick] if trick else [],
        "leader": msg.leader if has("leader") else None,
        "tricks_taken": msg.tricks_taken[:],
        "points_taken": msg.points_taken[:],
        "hand_sizes": msg.hand_sizes[:],
    }
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
