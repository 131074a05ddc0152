"""A hostile bot written from the .proto files, and the guesses it tries on the seed.

Nothing here comes from the arena's engine: the shuffle, the commitment and the HMAC
derivation are written again from docs/shuffle.md, as a bot author in another language
would, and the client speaks the protocol through the generated stubs of ``bot.proto``
(no SDK).  The bot records everything its seat receives, so a test can try every seed it
could guess against the hands it was dealt.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import queue
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
from thousand_bot.proto.thousand.v1 import bot_pb2, bot_pb2_grpc

# ------------------------------------------------------------------ docs/shuffle.md, again

RANKS_24 = "9JQKTA"
SUITS = "CSHD"
DECK_24 = [r + s for s in SUITS for r in RANKS_24]


def _words(seed: str) -> Iterator[int]:
    block = 0
    while True:
        digest = hashlib.sha256(seed.encode("utf-8") + block.to_bytes(8, "big")).digest()
        for k in range(4):
            yield int.from_bytes(digest[8 * k : 8 * k + 8], "big")
        block += 1


def shuffle(deck: list[str], seed: str) -> list[str]:
    """Fisher-Yates driven by SHA-256(seed || uint64_be(block)), rejection sampled."""
    out = list(deck)
    words = _words(seed)
    for i in range(len(out) - 1, 0, -1):
        m = i + 1
        limit = (2**64 // m) * m
        while True:
            x = next(words)
            if x < limit:
                break
        j = x % m
        out[i], out[j] = out[j], out[i]
    return out


def hand_of(seed: str, deal: int, seat: int, dealer: int, players: int = 3,
            hand_size: int = 7) -> frozenset[str]:
    """The cards ``seat`` is dealt in ``deal`` of a classic match with this match seed."""
    deck = shuffle(DECK_24, f"{seed}/deal/{deal}")
    order = [(dealer + 1 + i) % players for i in range(players)]
    k = order.index(seat)
    return frozenset(deck[k * hand_size : (k + 1) * hand_size])


def seed_commitment(match_id: str, seed: str) -> str:
    return hashlib.sha256(
        b"thousand-arena/v1/seed\x00" + match_id.encode() + b"\x00" + seed.encode()
    ).hexdigest()


def tournament_commitment(name: str, secret_hex: str) -> str:
    return hashlib.sha256(
        b"thousand-arena/v1/tournament\x00" + name.encode() + b"\x00" + bytes.fromhex(secret_hex)
    ).hexdigest()


def derive(secret_hex: str, key: str) -> str:
    return hmac.new(bytes.fromhex(secret_hex), key.encode(), hashlib.sha256).hexdigest()


# ------------------------------------------------------------------ the hostile client


@dataclass
class Dealt:
    """A deal whose first request to the spy came in the auction: its hand is all it was
    dealt (nothing played, no talon taken yet)."""

    deal: int
    dealer: int
    seat: int
    hand: frozenset[str]


@dataclass
class Spy:
    """A bot that answers with the first legal action and keeps every message it gets."""

    address: str
    token: str
    messages: list[bot_pb2.PlayResponse] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._out: queue.Queue[bot_pb2.PlayRequest | None] = queue.Queue()
        self._lock = threading.Lock()
        self._provoked = False
        self.channel = grpc.insecure_channel(self.address)
        stub = bot_pb2_grpc.BotServiceStub(self.channel)
        self.call = stub.Play(
            self._requests(), metadata=[("authorization", f"Bearer {self.token}")]
        )
        self.welcomed = threading.Event()
        self._out.put(bot_pb2.PlayRequest(hello=bot_pb2.Hello(version="spy", client="spy/1")))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _requests(self) -> Iterator[bot_pb2.PlayRequest]:
        while True:
            item = self._out.get()
            if item is None:
                return
            yield item

    def _read(self) -> None:
        try:
            for message in self.call:
                with self._lock:
                    self.messages.append(message)
                    self.raw.append(message.SerializeToString())
                kind = message.WhichOneof("message")
                if kind == "welcome":
                    self.welcomed.set()
                elif kind == "decision_request":
                    self._answer(message.decision_request)
        except grpc.RpcError as exc:
            self.errors.append(exc)

    def _answer(self, request: bot_pb2.DecisionRequest) -> None:
        if not self._provoked:
            # Garbage first, to collect what an error reply tells the seat.
            self._provoked = True
            self._out.put(bot_pb2.PlayRequest(
                decision=bot_pb2.Decision(request_id=request.request_id + "x", action="??")
            ))  # fmt: skip
        self._out.put(bot_pb2.PlayRequest(
            decision=bot_pb2.Decision(
                request_id=request.request_id, action=request.legal_actions[0]
            )
        ))  # fmt: skip

    def close(self) -> None:
        self._out.put(None)
        self.call.cancel()
        self.channel.close()

    # -- what the seat learnt -------------------------------------------------------------

    def snapshot(self) -> list[bot_pb2.PlayResponse]:
        with self._lock:
            return list(self.messages)

    def events(self, match_id: str | None = None) -> list[Any]:
        return [
            m.event for m in self.snapshot()
            if m.WhichOneof("message") == "event"
            and (match_id is None or m.event.match_id == match_id)
        ]  # fmt: skip

    def match_ids(self) -> list[str]:
        seen: list[str] = []
        for m in self.snapshot():
            kind = m.WhichOneof("message")
            mid = m.event.match_id if kind == "event" else (
                m.decision_request.match_id if kind == "decision_request" else None
            )
            if mid and mid not in seen:
                seen.append(mid)
        return seen

    def dealt(self, match_id: str) -> list[Dealt]:
        """Per deal of the match, the spy's dealt hand when it is known exactly."""
        out: list[Dealt] = []
        seen: set[int] = set()
        for m in self.snapshot():
            if m.WhichOneof("message") != "decision_request":
                continue
            r = m.decision_request
            if r.match_id != match_id or r.observation.deal in seen:
                continue
            seen.add(r.observation.deal)
            if r.observation.phase == "auction" and len(r.observation.hand) == 7:
                out.append(Dealt(r.observation.deal, r.observation.dealer, r.seat,
                                 frozenset(r.observation.hand)))
        return out

    def strings(self) -> set[str]:
        """Every text the seat received: ids, names, commitments, JSON values, errors."""
        return texts_of(self.snapshot())

    def before_end(self, match_id: str) -> tuple[list[bytes], set[str]]:
        """What the seat had received before the match ended: raw messages, every text."""
        with self._lock:
            pairs = list(zip(self.messages, self.raw, strict=True))
        kept = []
        for message, data in pairs:
            if (message.WhichOneof("message") == "event" and message.event.type == "match_end"
                    and message.event.match_id == match_id):
                break
            kept.append((message, data))
        return [d for _, d in kept], texts_of(m for m, _ in kept)


def texts_of(messages: Iterable[Any]) -> set[str]:
    """Every text in protobuf messages, including the values inside JSON fields."""
    found: set[str] = set()
    for m in messages:
        _collect(m, found)
    return found


def _collect(message: Any, found: set[str]) -> None:
    for _, value in message.ListFields():
        repeated = not isinstance(value, str | bytes | int | float) and not hasattr(
            value, "ListFields"
        )
        values = list(value) if repeated else [value]
        for v in values:
            if isinstance(v, str):
                found.add(v)
                if v.startswith(("{", "[")):
                    with contextlib.suppress(ValueError):
                        _collect_json(json.loads(v), found)
            elif hasattr(v, "ListFields"):
                _collect(v, found)


def _collect_json(value: Any, found: set[str]) -> None:
    if isinstance(value, str):
        found.add(value)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        found.add(str(value))
    elif isinstance(value, dict):
        for k, v in value.items():
            found.add(str(k))
            _collect_json(v, found)
    elif isinstance(value, list):
        for v in value:
            _collect_json(v, found)


# ------------------------------------------------------------------ the guesses


def guesses(texts: Iterable[str], *, small: int = 10_000, sets: int = 0) -> set[str]:
    """Every seed a seat could try: small integers, every text it saw and their parts,
    hashes of them, and (``sets``) the derivations tournaments used to make of a seed."""
    out = {str(i) for i in range(small + 1)}
    bases: set[str] = set()
    for text in texts:
        if len(text) > 200:
            continue
        bases.add(text)
        bases.update(p for p in re.split(r"[-/_:.,\s]+", text) if p)
    out |= bases
    for b in bases:
        out.add(hashlib.sha256(b.encode()).hexdigest())
    for b in list(bases) + [str(i) for i in range(101)]:
        for k in range(sets):
            out.add(hashlib.sha256(f"{b}/set/{k}".encode()).hexdigest())
            out.add(hashlib.sha256(f"{b}/game/{k}".encode()).hexdigest())
    return out


def reproducing(candidates: Iterable[str], dealt: list[Dealt]) -> list[str]:
    """The candidate match seeds that give the spy exactly its hand in every deal seen."""
    assert dealt, "the spy saw no hand it could check a guess against"
    first, rest = dealt[0], dealt[1:]
    hits = []
    for seed in candidates:
        if hand_of(seed, first.deal, first.seat, first.dealer) != first.hand:
            continue
        if all(hand_of(seed, d.deal, d.seat, d.dealer) == d.hand for d in rest):
            hits.append(seed)
    return hits
