"""The bytes of a decision request, written straight from the referee's request.

Every decision the gateway sends is one ``PlayResponse{decision_request}`` of a few hundred
bytes. Built through the protobuf runtime it took a message object for every auction
entry, trick card and marriage, a constructor call with thirty keyword arguments and a
serialisation: together the largest single cost of a decision in the gateway. The wire
format of these messages is small and fixed (``proto/thousand/v1``), so the hot path
writes the bytes itself, in field-number order as the runtime does.

Only the shape the engine produces takes this path: every key of
:data:`arena.server.convert.OBSERVATION_KEYS` present and nothing else, each value of
exactly the expected type. Anything else (an extra key, a value of another type) raises
:class:`Unencodable` (or KeyError, TypeError) inside, and :func:`decision_request_bytes`
builds the message the usual way instead, which also carries unknown keys in
``extra_json``. The tests decode the bytes with the protobuf runtime and compare them with
the message built the usual way, for every preset and every phase of play.

Each remote seat also keeps an :class:`ObservationEncoder`, which writes again only the
fields that changed since that seat's previous request: the same bytes, at a fraction of
the cost, since most of what a seat sees stays put from one decision to the next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.engine import view
from arena.engine.actions import Action
from arena.engine.cards import CARD_NAMES, SUITS, cards_str
from arena.engine.game import PHASE_NAMES, Game
from arena.match.types import DecisionRequest
from arena.server import convert

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


class Unencodable(ValueError):
    """A value the fast encoder does not write (the runtime's path takes it)."""


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


#: Varints of 0..16383 (every count, seat, score and length these messages hold).
_SMALL = tuple(_encode_varint(i) for i in range(1 << 14))


def _varint(n: int) -> bytes:
    if 0 <= n < 16384:
        return _SMALL[n]
    if n > _INT32_MAX or n < _INT32_MIN:
        raise Unencodable("integer out of the int32 range")
    if n < 0:
        n += 1 << 64  # int32 negatives are sign-extended to ten bytes
    return _encode_varint(n)


def _key(field: int, wire_type: int) -> bytes:
    return _SMALL[field << 3 | wire_type]


_K = [_key(f, 0) for f in range(30)]  # keys of varint fields, by field number
_L = [_key(f, 2) for f in range(30)]  # keys of length-delimited fields


#: Length-prefixed UTF-8 of the short strings that recur in every request: card names,
#: suits, phases, actions. Bounded, so odd strings cannot grow it.
_STRINGS: dict[str, bytes] = {}
#: The same with a field's key in front, per key.
_TAGGED: dict[bytes, dict[str, bytes]] = {}
_STRINGS_MAX = 8192
_STRING_CACHED_LEN = 24


#: Whole packed fields by value: scores, trick counts and hand sizes repeat from one
#: request to the next. Cleared when full.
_PACKED: dict[tuple[Any, ...], bytes] = {}
_PACKED_MAX = 16384


def _remember(cache: dict[Any, bytes], limit: int, key: Any, encoded: bytes) -> bytes:
    """Keep ``encoded`` under ``key`` in a cache that is cleared once it holds ``limit``."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = encoded
    return encoded


def _text(value: object) -> bytes:
    """A string's length prefix and bytes."""
    if type(value) is not str:
        raise Unencodable("not a string")
    cached = _STRINGS.get(value)
    if cached is not None:
        return cached
    raw = value.encode("utf-8")
    encoded = _varint(len(raw)) + raw
    if len(value) <= _STRING_CACHED_LEN and len(_STRINGS) < _STRINGS_MAX:
        _STRINGS[value] = encoded
    return encoded


def _int(value: object) -> int:
    if type(value) is not int:
        raise Unencodable("not an integer")
    return value


def _seq(value: object) -> Sequence[Any]:
    if type(value) is not list and type(value) is not tuple:
        raise Unencodable("not a list")
    return value


def _packed(field: int, value: object) -> bytes:
    """A packed ``repeated int32`` field (empty: nothing), remembered by value."""
    items = _seq(value)
    if not items:
        return b""
    key = (field, *items)
    encoded = _PACKED.get(key)
    if encoded is None:
        body = b"".join([_varint(_int(v)) for v in items])
        encoded = _remember(_PACKED, _PACKED_MAX, key, _L[field] + _varint(len(body)) + body)
    return encoded


# The two below run some fifteen times per request: the common case (a small non-negative
# int) is checked inline rather than through _int and _varint.


def _int32(key: bytes, value: object) -> bytes:
    """An implicit-presence int32: nothing when zero."""
    if type(value) is not int:
        raise Unencodable("not an integer")
    if not value:
        return b""
    return key + (_SMALL[value] if 0 < value < 16384 else _varint(value))


def _optional_int32(key: bytes, value: object) -> bytes:
    """An ``optional int32``: written whenever set, zero included."""
    if value is None:
        return b""
    if type(value) is not int:
        raise Unencodable("not an integer")
    return key + (_SMALL[value] if 0 <= value < 16384 else _varint(value))


def _string(key: bytes, value: object) -> bytes:
    if type(value) is not str:
        raise Unencodable("not a string")
    return key + _text(value) if value else b""


def _strings(key: bytes, value: object) -> bytes:
    """A ``repeated string`` field: each item with its key, from a cache of the short ones
    (card names, actions)."""
    tagged = _TAGGED.get(key)
    if tagged is None:
        tagged = _TAGGED[key] = {}
    out = []
    for item in _seq(value):
        encoded = tagged.get(item)
        if encoded is None:
            encoded = key + _text(item)
            if len(tagged) < _STRINGS_MAX and len(item) <= _STRING_CACHED_LEN:
                tagged[item] = encoded
        out.append(encoded)
    return b"".join(out)


#: For each field key: each suit's 256 sets of cards, written as that repeated string field.
_MASK_TABLES: dict[bytes, tuple[tuple[bytes, ...], ...]] = {}


def _mask_strings(key: bytes, mask: int) -> bytes:
    """``_strings(key, cards_str(mask))``, a suit at a time from a table."""
    if not 0 <= mask < 1 << 32:
        raise ValueError(f"not a card mask: {mask:#x}")
    table = _MASK_TABLES.get(key)
    if table is None:
        table = _MASK_TABLES[key] = tuple(
            tuple(_strings(key, cards_str(v << 8 * suit)) for v in range(256))
            for suit in range(4)
        )
    return b"".join(
        (table[0][mask & 0xFF], table[1][mask >> 8 & 0xFF], table[2][mask >> 16 & 0xFF],
         table[3][mask >> 24])
    )


#: Whole legal-action lists by value: the same lists recur at every table (the auction's
#: bids, a hand's plays). Cleared when full.
_LEGAL: dict[tuple[str, ...], bytes] = {}
_LEGAL_MAX = 4096


def _legal(value: Sequence[str]) -> bytes:
    if type(value) is not tuple:
        return _strings(_L[5], value)
    encoded = _LEGAL.get(value)
    if encoded is None:
        encoded = _remember(_LEGAL, _LEGAL_MAX, value, _strings(_L[5], value))
    return encoded


def _message(key: bytes, body: bytes) -> bytes:
    return key + _varint(len(body)) + body


def _pairs(value: object, size: int) -> Sequence[Sequence[Any]]:
    items = _seq(value)
    for item in items:
        if (type(item) is not list and type(item) is not tuple) or len(item) != size:
            raise Unencodable("not a pair")
    return items


#: Encoded ``{seat, text}`` entries by (field key, seat, text): the same bids, trick cards
#: and marriages recur all deal long (the whole auction is in every request after it).
_PAIRS: dict[tuple[bytes, int, str], bytes] = {}
_PAIRS_MAX = 8192


def _seat_text(key: bytes, value: object) -> bytes:
    """Repeated ``{int32 seat = 1; string x = 2}`` (AuctionEntry, TrickCard, ShownMarriage)."""
    out = []
    for seat, text in _pairs(value, 2):
        if type(seat) is not int or type(text) is not str:  # bools, str subclasses: no
            raise Unencodable("not a seat and a text")
        entry = (key, seat, text)
        encoded = _PAIRS.get(entry)
        if encoded is None:
            encoded = _message(key, _int32(_K[1], seat) + _string(_L[2], text))
            if len(text) <= _STRING_CACHED_LEN:
                _remember(_PAIRS, _PAIRS_MAX, entry, encoded)
        out.append(encoded)
    return b"".join(out)


def _given(value: object) -> bytes:
    """Repeated GivenCard ``{string card = 1; int32 seat = 2}``."""
    return b"".join(
        [
            _message(_L[17], _string(_L[1], card) + _int32(_K[2], seat))
            for card, seat in _pairs(value, 2)
        ]
    )


def _marriages(value: object) -> bytes:
    """Repeated Marriage ``{int32 seat = 1; string suit = 2; int32 points = 3}``."""
    return b"".join(
        [
            _message(_L[20], _int32(_K[1], seat) + _string(_L[2], suit) + _int32(_K[3], points))
            for seat, suit, points in _pairs(value, 3)
        ]
    )


def _barrel(value: object) -> bytes:
    items = _seq(value)
    if not items:
        return b""
    for v in items:
        if type(v) is not bool:
            raise Unencodable("not a bool")
    return _L[9] + _varint(len(items)) + bytes(items)


def _boolean(key: bytes, value: object) -> bytes:
    if type(value) is not bool:
        raise Unencodable("not a bool")
    return key + b"\x01" if value else b""


_KEY_COUNT = len(convert.OBSERVATION_KEYS)
_EXTRA_JSON = _L[25] + _text("{}")  # no extra keys: what the runtime's path writes too


def _trump(value: object) -> bytes:
    return b"" if value is None else _L[19] + _text(value)


#: The observation's fields in field-number order, as the runtime writes them, each with
#: its encoder; ``None`` stands for ``extra_json``, which is always ``"{}"`` here.
_FIELDS: tuple[tuple[str, Any], ...] = (
    ("seat", lambda v: _int32(_K[1], v)),
    ("players", lambda v: _int32(_K[2], v)),
    ("dealer", lambda v: _int32(_K[3], v)),
    ("deal", lambda v: _int32(_K[4], v)),
    ("phase", lambda v: _string(_L[5], v)),
    ("to_act", lambda v: _optional_int32(_K[6], v)),
    ("hand", lambda v: _strings(_L[7], v)),
    ("scores", lambda v: _packed(8, v)),
    ("barrel", _barrel),
    ("active", lambda v: _packed(10, v)),
    ("auction", lambda v: _seat_text(_L[11], v)),
    ("bid", lambda v: _optional_int32(_K[12], v)),
    ("declarer", lambda v: _optional_int32(_K[13], v)),
    ("contract", lambda v: _optional_int32(_K[14], v)),
    ("blind", lambda v: _boolean(_K[15], v)),
    ("talon", lambda v: _strings(_L[16], v)),
    ("given", _given),
    ("received", lambda v: _strings(_L[18], v)),
    ("trump", _trump),
    ("marriages", _marriages),
    ("trick", lambda v: _seat_text(_L[21], v)),
    ("leader", lambda v: _optional_int32(_K[22], v)),
    ("tricks_taken", lambda v: _packed(23, v)),
    ("hand_sizes", lambda v: _packed(24, v)),
    ("", None),
    ("bolts", lambda v: _packed(26, v)),
    ("discarded", lambda v: _strings(_L[27], v)),
    ("shown_marriages", lambda v: _seat_text(_L[28], v)),
    ("points_taken", lambda v: _packed(29, v)),
)
_UNSET = object()


def observation_bytes(obs: Mapping[str, Any]) -> bytes:
    """``Observation`` bytes of an observation shaped as the engine makes it; raises
    :class:`Unencodable` (or KeyError) for anything else. A remote seat's requests go
    through its :class:`ObservationEncoder` instead, which writes the same fields."""
    if len(obs) != _KEY_COUNT:
        raise Unencodable("not the engine's keys")
    return b"".join(
        [_EXTRA_JSON if write is None else write(obs[key]) for key, write in _FIELDS]
    )


class ObservationEncoder:
    """The observations of one seat of one match, each written again only where it
    changed since the last one.

    A seat is asked many times a deal, and most of what it sees stays the same from one
    request to the next (the scores, the auction once it is over, the contract, the
    talon...): comparing a field with its last value costs far less than writing it. The
    bytes are those of :func:`observation_bytes`, field for field. The values are kept as
    given, so an observation must not be changed after it was encoded (the engine makes
    a new one every time).
    """

    __slots__ = ("_parts", "_values")

    def __init__(self) -> None:
        self._values: list[Any] = [_UNSET] * len(_FIELDS)
        self._parts: list[bytes] = [_EXTRA_JSON if f is None else b"" for _, f in _FIELDS]

    def encode(self, obs: Mapping[str, Any]) -> bytes:
        """Like :func:`observation_bytes`, and raises the same for the same values."""
        if len(obs) != _KEY_COUNT:
            raise Unencodable("not the engine's keys")
        values = self._values
        parts = self._parts
        for i, (key, write) in enumerate(_FIELDS):
            if write is not None:
                value = obs[key]
                old = values[i]
                # The type too: 1 == True, and a bool field must not take an int.
                if type(value) is not type(old) or value != old:
                    parts[i] = write(value)
                    values[i] = value
        return b"".join(parts)


#: A field not written yet, in :class:`GameObservationEncoder` (every number it keeps is
#: -1 or more).
_UNSEEN: Final = -2


class GameObservationEncoder:
    """What one seat of one match sees, written straight from the game's state.

    :class:`ObservationEncoder` takes the observation :meth:`Game.observation
    <arena.engine.game.Game.observation>` builds (a dictionary of some twenty lists, made
    afresh for every request) and compares each field with the seat's last one to find
    what changed. Here each field is compared in the engine's own terms first (a card
    mask, a score list, the auction so far), and only what changed is turned into names
    and written, so an unchanged field costs one comparison and nothing is built for it.
    The engine's plain numbers are kept as typed numbers (compiled, a comparison is one
    instruction), with ``_UNSEEN`` for a field not written yet and ``-1`` for a field that
    is absent (``None`` in the observation); lists the engine changes in place are kept as
    copies, taken only when they changed.

    The bytes are those of ``observation_bytes(game.observation(seat))``, field for field:
    what a seat may see (its own hand unless it is hidden, the talon once shown to it, the
    declarer's cards given and discarded to the declarer alone, face-down trick cards as
    ``XX`` to all but their owner) is decided by :mod:`arena.engine.view`, which
    ``Game.observation`` reads too, and the tests compare the two for every seat at every
    decision of every preset.  The body, unrolled field by field for speed, is written by
    ``scripts/generate.py`` from the table of the fields in ``wire_fields.toml``.
    """

    # --- generated by ``python scripts/generate.py`` from wire_fields.toml: do not edit by hand
    __slots__ = (
        "_active", "_auction", "_barrel", "_bid", "_blind", "_bolts", "_contract", "_crawl",
        "_deal", "_dealer", "_declarer", "_discarded", "_given", "_hand", "_hands",
        "_leader", "_marriages", "_parts", "_phase", "_players", "_points", "_received",
        "_scores", "_seat", "_shown", "_talon", "_to_act", "_trick", "_tricks", "_trump",
    )

    def __init__(self) -> None:
        self._parts: list[bytes] = [_EXTRA_JSON if f is None else b"" for _, f in _FIELDS]
        unseen = _UNSEEN
        self._crawl = self._seat = self._players = self._dealer = unseen
        self._deal = self._phase = self._to_act = self._hand = unseen
        self._bid = self._declarer = self._contract = self._blind = unseen
        self._talon = self._trump = self._leader = self._discarded = unseen
        self._scores: list[int] | None = None
        self._barrel: list[bool] | None = None
        self._active: tuple[int, ...] | None = None
        self._auction: list[tuple[int, Action, bool]] | None = None
        self._given: list[tuple[int, int]] | None = None
        self._received: list[int] | None = None
        self._marriages: list[tuple[int, int, int, str]] | None = None
        self._trick: list[tuple[int, int]] | None = None
        self._tricks: list[int] | None = None
        self._hands: list[int] | None = None
        self._bolts: list[int] | None = None
        self._shown: list[tuple[int, int]] | None = None
        self._points: list[int] | None = None

    def encode(self, game: Game, seat: int) -> bytes:
        if not 0 <= seat < game.n:
            raise ValueError(f"no seat {seat} in a game of {game.n}")
        parts = self._parts
        if seat != self._seat:
            self._seat = seat
            parts[0] = _int32(_K[1], seat)
        players = game.n
        if players != self._players:
            self._players = players
            parts[1] = _int32(_K[2], players)
        dealer = game.dealer
        if dealer != self._dealer:
            self._dealer = dealer
            parts[2] = _int32(_K[3], dealer)
        deal = view.deal_number(game)
        if deal != self._deal:
            self._deal = deal
            parts[3] = _int32(_K[4], deal)
        phase = game.phase
        if phase != self._phase:
            self._phase = phase
            parts[4] = _string(_L[5], PHASE_NAMES[phase])
        to_act = -1 if game.to_act is None else game.to_act
        if to_act != self._to_act:
            self._to_act = to_act
            parts[5] = _optional_int32(_K[6], to_act if to_act >= 0 else None)
        hand = view.hand(game, seat)
        if hand != self._hand:
            self._hand = hand
            parts[6] = b"" if hand < 0 else _mask_strings(_L[7], hand)
        scores = game.scores
        if self._scores is None or scores != self._scores:
            self._scores = list(scores)
            parts[7] = _packed(8, scores)
        barrel = game.barrel_on
        if self._barrel is None or barrel != self._barrel:
            self._barrel = list(barrel)
            parts[8] = _barrel(barrel)
        active = game.active
        if self._active is None or (active is not self._active and active != self._active):
            self._active = active
            parts[9] = _packed(10, active)
        auction = game.auction_log
        if self._auction is None or auction != self._auction:
            self._auction = list(auction)
            parts[10] = _seat_text(_L[11], [(s, a.text) for s, a, _auto in auction])
        bid = view.bid(game)
        if bid != self._bid:
            self._bid = bid
            parts[11] = _optional_int32(_K[12], bid if bid >= 0 else None)
        declarer = game.declarer
        if declarer != self._declarer:
            self._declarer = declarer
            parts[12] = _optional_int32(_K[13], declarer if declarer >= 0 else None)
        contract = view.contract(game)
        if contract != self._contract:
            self._contract = contract
            parts[13] = _optional_int32(_K[14], contract if contract >= 0 else None)
        blind = 1 if view.blind(game) else 0
        if blind != self._blind:
            self._blind = blind
            parts[14] = _boolean(_K[15], blind == 1)
        talon = view.talon(game, seat)
        if talon != self._talon:
            self._talon = talon
            parts[15] = b"" if talon < 0 else _mask_strings(_L[16], talon)
        given = view.given(game, seat)
        if self._given is None or given != self._given:
            self._given = list(given)
            parts[16] = _given([(CARD_NAMES[c], t) for c, t in given])
        received = game.received[seat]
        if self._received is None or received != self._received:
            self._received = list(received)
            parts[17] = _strings(_L[18], [CARD_NAMES[c] for c in received])
        trump = game.trump
        if trump != self._trump:
            self._trump = trump
            parts[18] = _trump(SUITS[trump] if trump >= 0 else None)
        marriages = game.marriages
        if self._marriages is None or marriages != self._marriages:
            self._marriages = list(marriages)
            parts[19] = _marriages([(s, SUITS[su], pts) for s, su, pts, _k in marriages])
        trick = game.trick
        crawl = 1 if game.crawl else 0
        if crawl != self._crawl or self._trick is None or trick != self._trick:
            self._crawl = crawl
            self._trick = list(trick)
            parts[20] = (
                _seat_text(_L[21], [(s, view.trick_card(game, seat, s, c)) for s, c in trick])
            )
        leader = game.leader
        if leader != self._leader:
            self._leader = leader
            parts[21] = _optional_int32(_K[22], leader if leader >= 0 else None)
        tricks = game.tricks_taken
        if self._tricks is None or tricks != self._tricks:
            self._tricks = list(tricks)
            parts[22] = _packed(23, tricks)
        hands = game.hands
        if self._hands is None or hands != self._hands:
            self._hands = list(hands)
            parts[23] = _packed(24, [h.bit_count() for h in hands])
        bolts = game.bolts
        if self._bolts is None or bolts != self._bolts:
            self._bolts = list(bolts)
            parts[25] = _packed(26, bolts)
        discarded = view.discards(game, seat)
        if discarded != self._discarded:
            self._discarded = discarded
            parts[26] = b"" if discarded < 0 else _mask_strings(_L[27], discarded)
        shown = game.shown
        if self._shown is None or shown != self._shown:
            self._shown = list(shown)
            parts[27] = _seat_text(_L[28], [(s, SUITS[su]) for s, su in shown])
        points = game.taken_points
        if self._points is None or points != self._points:
            self._points = list(points)
            parts[28] = _packed(29, points)
        return b"".join(parts)
    # --- end of generated code


_PLAY_RESPONSE_REQUEST = _key(2, 2)


def _request_message(
    match_id: str,
    request_id: str,
    seat: int,
    observation: bytes,
    legal: Sequence[str],
    deadline_ms: int,
    time_bank_ms: int,
) -> bytes:
    """A ``PlayResponse{decision_request}`` around an observation already written."""
    body = b"".join(
        (
            _string(_L[1], match_id),
            _string(_L[2], request_id),
            _int32(_K[3], seat),
            _message(_L[4], observation),
            _legal(legal),
            _int32(_K[6], max(0, int(deadline_ms))),
            _int32(_K[7], max(0, int(time_bank_ms))),
        )
    )
    return _message(_PLAY_RESPONSE_REQUEST, body)


def _fast_request(
    request: DecisionRequest, observations: ObservationEncoder | None = None
) -> bytes:
    obs = request.observation
    return _request_message(
        request.match_id,
        request.request_id,
        request.seat,
        observation_bytes(obs) if observations is None else observations.encode(obs),
        request.legal,
        request.deadline_ms,
        request.time_bank_ms,
    )


def game_request_bytes(
    match_id: str,
    request_id: str,
    seat: int,
    game: Game,
    legal: Sequence[str],
    deadline_ms: int,
    time_bank_ms: int,
    observations: GameObservationEncoder,
) -> bytes:
    """The serialised ``PlayResponse`` asking ``seat`` of ``game`` to decide, its
    observation written by the seat's encoder straight from the game: the bytes of
    :func:`decision_request_bytes` for the same request, without the observation
    dictionary in between."""
    return _request_message(
        match_id, request_id, seat, observations.encode(game, seat), legal, deadline_ms,
        time_bank_ms,
    )


def decision_request_bytes(
    request: DecisionRequest, observations: ObservationEncoder | None = None
) -> bytes:
    """The serialised ``PlayResponse`` carrying this request, as the bot will read it;
    ``observations``: the seat's encoder, which writes only what changed since its last
    request."""
    try:
        return _fast_request(request, observations)
    except (Unencodable, KeyError, TypeError):  # TypeError: an unhashable value
        message = bot_pb2.PlayResponse(decision_request=convert.decision_request_to_proto(request))
        return message.SerializeToString()

