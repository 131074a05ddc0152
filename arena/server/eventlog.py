"""A match's public events, kept compact for spectators who start watching late.

Every event of every match the gateway runs is appended here, so this module is compiled
(``arena.compiled``); reading, which only a spectator does, costs what it costs.
"""

from __future__ import annotations

import asyncio
import json
import marshal
import zlib
from collections.abc import Mapping
from typing import Any

from thousand_bot.proto.thousand.v1 import common_pb2

from arena.server import convert
from arena.server.convert import SECRET_EVENT_KEYS

#: Events per compressed chunk of a log: small enough that a late spectator's first read
#: is cheap, large enough that zlib finds the repetition.
LOG_CHUNK_EVENTS = 256
#: What an event not yet compressed is reckoned to weigh, for the log's byte bound.
TAIL_EVENT_BYTES = 200
#: The most one match's log may hold (compressed chunks plus the events not yet
#: compressed); a full-length match needs well under a tenth of it.
LOG_MAX_BYTES = 4 << 20


class EventLog:
    """A match's public events, compact: compressed a chunk at a time, turned into
    protocol messages only for a spectator who reads them.

    Positions are event sequence numbers. Appending keeps a copy of the event without its
    secret keys (the seats' listeners get the same dictionary and may change theirs); a
    full chunk is serialized and compressed once. Each chunk remembers the deal its first event
    belongs to, so a reader who starts at a chunk numbers and types its events exactly as
    the bots' streams did.
    """

    def __init__(self, max_bytes: int = LOG_MAX_BYTES, match_id: str = "") -> None:
        self.max_bytes = max_bytes
        self.match_id = match_id
        self.count = 0  # events appended
        self.first = 0  # position of the oldest event kept
        #: (deal at its first event, the events compressed, whether marshal wrote them)
        self._chunks: list[tuple[int, bytes, bool]] = []
        self._tail: list[Mapping[str, Any]] = []
        self._tail_deal = 0
        self._deal = 0
        self._chunk_bytes = 0
        self.news: asyncio.Event | None = None

    @property
    def nbytes(self) -> int:
        """Compressed bytes, plus an estimate for the chunk still being filled."""
        return self._chunk_bytes + len(self._tail) * TAIL_EVENT_BYTES

    def listen(self) -> asyncio.Event:
        """What to wait on for anything newer than what has been read so far: made by the
        first spectator waiting, set and dropped at the next event (so a log nobody
        watches makes none)."""
        if self.news is None:
            self.news = asyncio.Event()
        return self.news

    def tell(self) -> None:
        """Something new: wake the spectators waiting."""
        news = self.news
        if news is not None:
            self.news = None
            news.set()

    def record(self, event: Mapping[str, Any]) -> None:
        """The referee's hook for every public event of the match: kept, and the
        spectators waiting told."""
        self.append(event)
        self.tell()

    def append(self, event: Mapping[str, Any]) -> None:
        tail = self._tail
        if not tail:
            self._tail_deal = self._deal
        if event.get("type") == "deal_start":
            deal = event.get("deal")
            if isinstance(deal, int) and not isinstance(deal, bool):
                self._deal = deal
        # A copy, as convert.public_event makes (the usual event has no secret key).
        if SECRET_EVENT_KEYS.isdisjoint(event):
            tail.append(dict(event))
        else:
            tail.append({k: v for k, v in event.items() if k not in SECRET_EVENT_KEYS})
        self.count += 1
        if len(tail) >= LOG_CHUNK_EVENTS:
            self._seal()
        while self.nbytes > self.max_bytes and self._chunks:
            dropped = self._chunks.pop(0)[1]
            self._chunk_bytes -= len(dropped)
            self.first += LOG_CHUNK_EVENTS

    def _seal(self) -> None:
        """Compress the full tail into a chunk.

        With ``marshal``, the fastest writer of plain Python data there is (the events are
        dictionaries of strings, numbers and lists): JSON took four times as long, and a
        chunk is sealed every 256 events of every match. The chunks never leave this
        process, so marshal's format, which may change between Python versions, is no
        concern, and reading one runs no code. A value marshal does not take is written as
        JSON would show it (its ``str``), as before."""
        tail = self._tail
        try:
            data, marshalled = marshal.dumps(tail), True
        except ValueError:
            data = json.dumps(tail, separators=(",", ":"), default=str).encode()
            marshalled = False
        chunk = zlib.compress(data, 1)
        self._chunks.append((self._tail_deal, chunk, marshalled))
        self._chunk_bytes += len(chunk)
        self._tail = []

    def read(self, position: int) -> list[common_pb2.MatchEvent]:
        """The events from ``position`` (at least ``first``) to the newest: at most one
        chunk's worth, so that a reader yields between chunks."""
        position = max(position, self.first)
        offset = position - self.first
        index, skip = divmod(offset, LOG_CHUNK_EVENTS)
        start = self.first + index * LOG_CHUNK_EVENTS
        events: list[Mapping[str, Any]]
        if index < len(self._chunks):
            deal, chunk, marshalled = self._chunks[index]
            data = zlib.decompress(chunk)
            events = marshal.loads(data) if marshalled else json.loads(data)
        else:
            deal, events = self._tail_deal, self._tail
        encoder = convert.EventEncoder()
        encoder.sequence, encoder.deal = start, deal
        out = [encoder.encode(self.match_id, e) for e in events]
        return out[skip:]
