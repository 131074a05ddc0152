"""Actions as interned value objects with a compact text notation.

Every action of the game (a bid, a card given, a card played with or without a marriage)
is one :class:`Action`.  Actions are interned: there is exactly one object per distinct
action, so the engine hands out ready-made tuples of legal actions instead of building
new objects at every step, and equality is an identity check in the common case.

Notation (see ``docs/notation.md``): ``pass``, ``bid 105``, ``blind 110``, ``look``,
``redeal``, ``sell``, ``keep``, ``buy 125``, ``talon 2``, ``give QS 2``, ``discard 9H``,
``bank 9H``, ``contract 120``, ``concede``, ``trump H``, ``play KH``, ``marry KH``,
``half QH``, ``aces AH``, ``nines 9H``, ``crawl 9H``.
"""

from __future__ import annotations

from typing import Any

from .cards import CARD_NAMES, SUITS, parse_card, parse_suit
from .errors import NotationError

# Kinds, in the order a deal meets them.
PASS, BID, BLIND, LOOK, REDEAL, SELL, KEEP, BUY = range(8)
TALON, GIVE, DISCARD, BANK, CONTRACT, CONCEDE, TRUMP = range(8, 15)
PLAY, MARRY, HALF, ACES, NINES, CRAWL = range(15, 21)

KIND_NAMES = (
    "pass", "bid", "blind", "look", "redeal", "sell", "keep", "buy",
    "talon", "give", "discard", "bank", "contract", "concede", "trump",
    "play", "marry", "half", "aces", "nines", "crawl",
)  # fmt: skip
_KIND_BY_NAME = {n: k for k, n in enumerate(KIND_NAMES)}

_NO_ARG = frozenset({PASS, LOOK, REDEAL, SELL, KEEP, CONCEDE})
_NUMBER_ARG = frozenset({BID, BLIND, BUY, TALON, CONTRACT})
_CARD_ARG = frozenset({DISCARD, BANK, PLAY, MARRY, HALF, ACES, NINES, CRAWL})
CARD_KINDS = _CARD_ARG | {GIVE}
PLAY_KINDS = frozenset({PLAY, MARRY, HALF, ACES, NINES, CRAWL})


class Action:
    """One move.  Build with the module functions or :func:`parse_action`, never directly."""

    __slots__ = ("card", "kind", "target", "text", "value")

    kind: int
    card: int
    value: int
    target: int
    text: str

    def __init__(self, kind: int, card: int, value: int, target: int, text: str) -> None:
        self.kind = kind
        self.card = card
        self.value = value
        self.target = target
        self.text = text

    def __repr__(self) -> str:
        return f"Action({self.text!r})"

    def __str__(self) -> str:
        return self.text

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (parse_action, (self.text,))

    def __copy__(self) -> Action:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Action:
        return self

    @property
    def kind_name(self) -> str:
        return KIND_NAMES[self.kind]


_CACHE: dict[tuple[int, int, int, int], Action] = {}


def _intern(kind: int, card: int = -1, value: int = 0, target: int = -1) -> Action:
    key = (kind, card, value, target)
    a = _CACHE.get(key)
    if a is None:
        name = KIND_NAMES[kind]
        if kind in _NO_ARG:
            text = name
        elif kind in _NUMBER_ARG:
            text = f"{name} {value}"
        elif kind == GIVE:
            text = f"give {CARD_NAMES[card]} {target}"
        elif kind == TRUMP:
            text = f"trump {SUITS[value]}"
        else:
            text = f"{name} {CARD_NAMES[card]}"
        a = Action(kind, card, value, target, text)
        _CACHE[key] = a
    return a


PASS_ACTION = _intern(PASS)
LOOK_ACTION = _intern(LOOK)
REDEAL_ACTION = _intern(REDEAL)
SELL_ACTION = _intern(SELL)
KEEP_ACTION = _intern(KEEP)
CONCEDE_ACTION = _intern(CONCEDE)

#: Ready-made card actions, indexed by card.
PLAY_OF = tuple(_intern(PLAY, c) for c in range(32))
MARRY_OF = tuple(_intern(MARRY, c) for c in range(32))
HALF_OF = tuple(_intern(HALF, c) for c in range(32))
ACES_OF = tuple(_intern(ACES, c) for c in range(32))
NINES_OF = tuple(_intern(NINES, c) for c in range(32))
CRAWL_OF = tuple(_intern(CRAWL, c) for c in range(32))
DISCARD_OF = tuple(_intern(DISCARD, c) for c in range(32))
#: The play-phase actions by move number ``kind << 5 | card`` (``arena.engine.tricks``).
MOVE_ACTIONS = PLAY_OF + MARRY_OF + HALF_OF + ACES_OF + NINES_OF + CRAWL_OF
BANK_OF = tuple(_intern(BANK, c) for c in range(32))


_MAX_VALUE = 1500
BID_OF = tuple(_intern(BID, value=v) for v in range(_MAX_VALUE + 1))
CONTRACT_OF = tuple(_intern(CONTRACT, value=v) for v in range(_MAX_VALUE + 1))
GIVE_OF = tuple(tuple(_intern(GIVE, card=c, target=s) for s in range(4)) for c in range(32))


def bid(value: int) -> Action:
    return BID_OF[value] if 0 <= value <= _MAX_VALUE else _intern(BID, value=value)


def blind(value: int) -> Action:
    return _intern(BLIND, value=value)


def buy(value: int) -> Action:
    return _intern(BUY, value=value)


def contract(value: int) -> Action:
    return CONTRACT_OF[value] if 0 <= value <= _MAX_VALUE else _intern(CONTRACT, value=value)


_RANGES: dict[tuple[int, int, int, int], tuple[Action, ...]] = {}


def value_range(kind: int, low: int, high: int, step: int) -> tuple[Action, ...]:
    """Interned actions of one numeric kind for ``low, low + step, ... <= high`` (cached)."""
    key = (kind, low, high, step)
    t = _RANGES.get(key)
    if t is None:
        t = tuple(_intern(kind, value=v) for v in range(low, high + 1, step))
        _RANGES[key] = t
    return t


def talon(index: int) -> Action:
    return _intern(TALON, value=index)


def give(card: int, seat: int) -> Action:
    return GIVE_OF[card][seat]


def trump(suit: int) -> Action:
    return _intern(TRUMP, value=suit)


def play(card: int) -> Action:
    return PLAY_OF[card]


def parse_action(text: object) -> Action:
    """Parse the text notation; raises :class:`NotationError` naming what is wrong."""
    if not isinstance(text, str):
        raise NotationError(f"an action is text, got {type(text).__name__}")
    parts = text.strip().split()
    if not parts:
        raise NotationError("empty action")
    name = parts[0].lower()
    kind = _KIND_BY_NAME.get(name)
    if kind is None:
        raise NotationError(f"unknown action {parts[0]!r} in {text!r}")
    args = parts[1:]
    want = 0 if kind in _NO_ARG else 2 if kind == GIVE else 1
    if len(args) != want:
        raise NotationError(f"{name!r} takes {want} argument(s), got {len(args)} in {text!r}")
    if kind in _NO_ARG:
        return _intern(kind)
    if kind in _NUMBER_ARG:
        try:
            value = int(args[0])
        except ValueError:
            raise NotationError(f"{name!r} takes a whole number, got {args[0]!r}") from None
        if not 0 <= value <= 10_000:
            raise NotationError(f"{name!r} value out of range: {value}")
        return _intern(kind, value=value)
    if kind == TRUMP:
        return trump(parse_suit(args[0]))
    c = parse_card(args[0])
    if kind == GIVE:
        try:
            seat = int(args[1])
        except ValueError:
            raise NotationError(f"'give' takes a seat number, got {args[1]!r}") from None
        if not 0 <= seat < 4:
            raise NotationError(f"seat out of range: {seat}")
        return give(c, seat)
    return _intern(kind, card=c)


def format_action(action: Action) -> str:
    return action.text


def as_action(action: Action | str) -> Action:
    return action if isinstance(action, Action) else parse_action(action)
