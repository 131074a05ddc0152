"""Translation between the referee's JSON dictionaries and the protocol's messages.

The referee speaks in plain dictionaries (the engine's observation, the public event log);
bots receive typed messages. Keys without a typed field travel in ``extra_json`` /
``detail_json`` so nothing the referee says is lost, and a bot library can rebuild the very
dictionary the engine produced (the Python SDK does, in ``thousand_bot.convert``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from thousand_bot.proto.thousand.v1 import bot_pb2, common_pb2
from thousand_bot.stdio.protocol import OBSERVATION_KEYS as OBSERVATION_KEYS

from arena.match.types import JSON, DecisionRequest

#: Keys that can reveal cards a seat may not see. The seed is among them: the deals are a
#: documented function of the seed, so knowing it means knowing every hand. Events are
#: public by contract; these keys are dropped all the same before an event leaves the
#: gateway, so a slip elsewhere cannot leak a hand.
SECRET_EVENT_KEYS = frozenset({"seed", "hands", "hand", "deck", "deal_seed", "hidden"})

_INT_FIELDS = ("seat", "players", "dealer", "deal")
_OPTIONAL_INT_FIELDS = ("to_act", "bid", "declarer", "contract", "leader")
_INT_LIST_FIELDS = ("scores", "active", "tricks_taken", "hand_sizes", "bolts", "points_taken")
_STR_LIST_FIELDS = ("hand", "talon", "received", "discarded")


def _int(value: Any) -> int:
    """Accept ints and bools (``True`` is 1); reject anything else so it goes to extras."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    raise TypeError(f"expected an integer, got {value!r}")


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"expected a string, got {value!r}")


def _pairs(value: Any, size: int) -> list[list[Any]]:
    if not isinstance(value, list | tuple):
        raise TypeError(f"expected a list, got {value!r}")
    items: list[list[Any]] = []
    for item in value:
        if not isinstance(item, list | tuple) or len(item) != size:
            raise TypeError(f"expected items of {size} values, got {item!r}")
        items.append(list(item))
    return items


#: The observation's lists of items, each item a message: its type, and its parts in the
#: engine's order, each with the check of its value.
_ITEMS: dict[str, tuple[Callable[..., Any], tuple[tuple[str, Callable[[Any], Any]], ...]]] = {
    "auction": (common_pb2.AuctionEntry, (("seat", _int), ("action", _str))),
    "given": (common_pb2.GivenCard, (("card", _str), ("seat", _int))),
    "marriages": (common_pb2.Marriage, (("seat", _int), ("suit", _str), ("points", _int))),
    "shown_marriages": (common_pb2.ShownMarriage, (("seat", _int), ("suit", _str))),
    "trick": (common_pb2.TrickCard, (("seat", _int), ("card", _str))),
}


def _fill_observation(msg: common_pb2.Observation, key: str, value: Any) -> None:
    """Set one typed field; raises TypeError/ValueError when the value does not fit it."""
    if key in _INT_FIELDS:
        setattr(msg, key, _int(value))
    elif key in _OPTIONAL_INT_FIELDS:
        if value is not None:
            setattr(msg, key, _int(value))
    elif key in _INT_LIST_FIELDS:
        if not isinstance(value, list | tuple):
            raise TypeError(f"expected a list, got {value!r}")
        getattr(msg, key).extend(_int(v) for v in value)
    elif key in _STR_LIST_FIELDS:
        if not isinstance(value, list | tuple):
            raise TypeError(f"expected a list, got {value!r}")
        getattr(msg, key).extend(_str(v) for v in value)
    elif key == "phase":
        msg.phase = _str(value)
    elif key == "blind":
        if not isinstance(value, bool):
            raise TypeError(f"expected a bool, got {value!r}")
        msg.blind = value
    elif key == "barrel":
        if not isinstance(value, list | tuple) or not all(isinstance(v, bool) for v in value):
            raise TypeError(f"expected a list of booleans, got {value!r}")
        msg.barrel.extend(value)
    elif key == "trump":
        if value is not None:
            msg.trump = _str(value)
    elif key in _ITEMS:
        item, parts = _ITEMS[key]
        getattr(msg, key).extend(
            item(**{name: check(v) for (name, check), v in zip(parts, values, strict=True)})
            for values in _pairs(value, len(parts))
        )
    else:
        raise KeyError(key)


#: Observation keys with a typed field: the protocol's keys (OBSERVATION_KEYS, in the
#: engine's order), the same in a request's message as in a bot program's request block.
_TYPED = frozenset(OBSERVATION_KEYS)
#: Typed keys whose value may be None (the field is then left unset).
_NULLABLE = frozenset((*_OPTIONAL_INT_FIELDS, "trump"))


def _auction(value: Any) -> list[common_pb2.AuctionEntry]:
    return [common_pb2.AuctionEntry(seat=s, action=a) for s, a in value]


def _given(value: Any) -> list[common_pb2.GivenCard]:
    return [common_pb2.GivenCard(card=c, seat=s) for c, s in value]


def _marriages(value: Any) -> list[common_pb2.Marriage]:
    return [common_pb2.Marriage(seat=s, suit=u, points=p) for s, u, p in value]


def _shown(value: Any) -> list[common_pb2.ShownMarriage]:
    return [common_pb2.ShownMarriage(seat=s, suit=u) for s, u in value]


def _trick_cards(value: Any) -> list[common_pb2.TrickCard]:
    return [common_pb2.TrickCard(seat=s, card=c) for s, c in value]


#: Conversions of the nested fields for the fast path; every other typed key is handed to
#: the message constructor as it is, and protobuf checks its type.
_NESTED: dict[str, Callable[[Any], Any]] = {
    "auction": _auction,
    "given": _given,
    "marriages": _marriages,
    "shown_marriages": _shown,
    "trick": _trick_cards,
}
_SEQUENCES = frozenset((*_NESTED, *_INT_LIST_FIELDS, *_STR_LIST_FIELDS, "barrel"))


def _fast_observation(observation: Mapping[str, Any]) -> common_pb2.Observation:
    """One constructor call for an observation as the engine makes it (every value of
    the right type); raises TypeError/ValueError for anything else."""
    kwargs: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, value in observation.items():
        if key not in _TYPED:
            extras[key] = value
        elif value is None:
            if key not in _NULLABLE:
                raise TypeError(key)
        elif key in _SEQUENCES:
            if type(value) is not list and type(value) is not tuple:
                raise TypeError(key)
            if key in _NESTED:
                if not all(type(v) is list or type(v) is tuple for v in value):
                    raise TypeError(key)
                kwargs[key] = _NESTED[key](value)
            elif key == "barrel" and not all(type(v) is bool for v in value):
                raise TypeError(key)
            else:
                kwargs[key] = value
        elif key == "blind" and type(value) is not bool:
            raise TypeError(key)  # protobuf would take any number for a bool
        else:
            kwargs[key] = value
    kwargs["extra_json"] = (
        json.dumps(extras, separators=(",", ":"), sort_keys=True) if extras else "{}"
    )
    return common_pb2.Observation(**kwargs)


def observation_to_proto(observation: Mapping[str, Any]) -> common_pb2.Observation:
    """Build the typed observation; a key whose value does not fit its field, or that has
    no field, is carried in ``extra_json`` instead of being dropped.

    Every decision request carries one, so the usual case (the engine's own dictionary)
    takes one constructor call; anything unusual takes the careful path, field by field.
    """
    try:
        return _fast_observation(observation)
    except (TypeError, ValueError):
        return _careful_observation(observation)


def _careful_observation(observation: Mapping[str, Any]) -> common_pb2.Observation:
    msg = common_pb2.Observation()
    extras: dict[str, Any] = {}
    for key, value in observation.items():
        if key not in _TYPED:
            extras[key] = value
            continue
        try:
            _fill_observation(msg, key, value)
        except (TypeError, ValueError):
            msg.ClearField(key)  # type: ignore[arg-type]  # undo a partly filled field
            extras[key] = value
    msg.extra_json = json.dumps(extras, separators=(",", ":"), sort_keys=True) if extras else "{}"
    return msg


def decision_request_to_proto(request: DecisionRequest) -> bot_pb2.DecisionRequest:
    return bot_pb2.DecisionRequest(
        match_id=request.match_id,
        request_id=request.request_id,
        seat=request.seat,
        observation=observation_to_proto(request.observation),
        legal_actions=list(request.legal),
        deadline_ms=max(0, int(request.deadline_ms)),
        time_bank_ms=max(0, int(request.time_bank_ms)),
    )


def public_event(event: Mapping[str, Any]) -> JSON:
    """The event without any key that could reveal hidden cards (see SECRET_EVENT_KEYS)."""
    return {k: v for k, v in event.items() if k not in SECRET_EVENT_KEYS}


def _get_int(event: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = event.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _get_str(event: Mapping[str, Any], key: str) -> str:
    value = event.get(key)
    return value if isinstance(value, str) else ""


def _int_list(value: Any) -> list[int]:
    if isinstance(value, list | tuple) and all(isinstance(v, int) for v in value):
        return [int(v) for v in value]
    return []


_Builder = Callable[[Mapping[str, Any], int], common_pb2.MatchEvent]
_Read = Callable[[Mapping[str, Any]], Any]


def _int_at(key: str) -> _Read:
    return lambda e: _get_int(e, key)


def _str_at(key: str) -> _Read:
    return lambda e: _get_str(e, key)


def _flat(body: Callable[..., Any], field: str, **fields: _Read) -> _Builder:
    """The builder of an event whose typed body is its deal and fields each read from one
    key of the event (``fields``: the body's field names, each with its reader)."""

    def build(e: Mapping[str, Any], deal: int) -> common_pb2.MatchEvent:
        values = {name: read(e) for name, read in fields.items()}
        return common_pb2.MatchEvent(**{field: body(deal=deal, **values)})

    return build


_deal_start = _flat(
    common_pb2.DealStart, "deal_start",
    dealer=_int_at("dealer"), active=lambda e: _int_list(e.get("active")),
)
_action = _flat(
    common_pb2.ActionTaken, "action",
    seat=_int_at("seat"), action=_str_at("action"),
    automatic=lambda e: bool(e.get("auto", False)), fallback=_str_at("fallback"),
)
_marriage = _flat(
    common_pb2.MarriageDeclared, "marriage",
    seat=_int_at("seat"), suit=_str_at("suit"), points=_int_at("points"), kind=_str_at("kind"),
)
_redeal = _flat(common_pb2.Redeal, "redeal", reason=_str_at("reason"))


def _match_start(e: Mapping[str, Any], deal: int) -> common_pb2.MatchEvent:
    bots = e.get("seats", e.get("bots"))
    rules = e.get("rules")
    body = common_pb2.MatchStart(
        bots=[str(b) for b in bots] if isinstance(bots, list | tuple) else [],
        rules_json=json.dumps(rules, sort_keys=True) if rules is not None else "",
        seed_commitment=_get_str(e, "commitment"),
        tournament_commitment=_get_str(e, "tournament_commitment"),
    )
    return common_pb2.MatchEvent(match_start=body)


def _talon(e: Mapping[str, Any], deal: int) -> common_pb2.MatchEvent:
    cards = e.get("cards")
    body = common_pb2.TalonShown(
        deal=deal,
        cards=[c for c in cards if isinstance(c, str)] if isinstance(cards, list | tuple) else [],
    )
    return common_pb2.MatchEvent(talon=body)


def _trick(e: Mapping[str, Any], deal: int) -> common_pb2.MatchEvent:
    cards: list[common_pb2.TrickCard] = []
    raw = e.get("cards")
    if isinstance(raw, list | tuple):
        for item in raw:
            if isinstance(item, list | tuple) and len(item) == 2:
                seat, card = item
                if isinstance(seat, int) and isinstance(card, str):
                    cards.append(common_pb2.TrickCard(seat=seat, card=card))
    body = common_pb2.TrickTaken(
        deal=deal, cards=cards, winner=_get_int(e, "winner"), points=_get_int(e, "points")
    )
    return common_pb2.MatchEvent(trick=body)


def _deal_end(e: Mapping[str, Any], deal: int) -> common_pb2.MatchEvent:
    body = common_pb2.DealEnd(
        deal=deal,
        deal_scores=_int_list(e.get("deltas", e.get("deal_scores"))),
        scores=_int_list(e.get("scores")),
        contract=_get_int(e, "contract"),
        made=bool(e.get("made", False)),
    )
    declarer = e.get("declarer")
    if isinstance(declarer, int):
        body.declarer = declarer
    return common_pb2.MatchEvent(deal_end=body)


def _match_end(e: Mapping[str, Any], deal: int) -> common_pb2.MatchEvent:
    body = common_pb2.MatchEnd(
        status=_get_str(e, "status"),
        scores=_int_list(e.get("scores")),
        ranks=_int_list(e.get("ranks")),
        seed_reveal=_get_str(e, "seed_reveal"),
    )
    forfeit = e.get("forfeit_seat")
    if isinstance(forfeit, int):
        body.forfeit_seat = forfeit
    return common_pb2.MatchEvent(match_end=body)


_BODIES: dict[str, _Builder] = {
    "match_start": _match_start,
    "deal_start": _deal_start,
    "action": _action,
    "talon": _talon,
    "marriage": _marriage,
    "redeal": _redeal,
    "trick": _trick,
    "deal_end": _deal_end,
    "match_end": _match_end,
}


class EventEncoder:
    """Numbers one stream of events and remembers the deal they belong to.

    The engine names the deal only in ``deal_start``; the typed bodies carry it on every
    event, so a bot need not track it.
    """

    def __init__(self) -> None:
        self.sequence = 0
        self.deal = 0

    def skip(self, event: Mapping[str, Any]) -> None:
        """Count an event without building its message (for a listener that wants none)."""
        if event.get("type") == "deal_start":
            self.deal = _get_int(event, "deal", self.deal)
        self.sequence += 1

    def encode(self, match_id: str, event: Mapping[str, Any]) -> common_pb2.MatchEvent:
        """Typed event for bots and spectators; secret keys are dropped first."""
        clean = public_event(event)
        kind = _get_str(clean, "type")
        if kind == "deal_start":
            self.deal = _get_int(clean, "deal", self.deal)
        deal = _get_int(clean, "deal", self.deal)
        builder = _BODIES.get(kind)
        msg = builder(clean, deal) if builder is not None else common_pb2.MatchEvent()
        msg.match_id = match_id
        msg.sequence = self.sequence
        msg.type = kind
        msg.detail_json = json.dumps(clean, separators=(",", ":"), sort_keys=True, default=str)
        self.sequence += 1
        return msg
