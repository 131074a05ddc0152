"""Live match events: every executor publishes, the web process (or anyone) reads.

A match being played anywhere (the scheduler's own process, a local pool child, a Celery
worker on another machine) publishes its public events, the same ones a spectator gets
from the gateway: never a hand, a deck or a seed.  Two transports, one layout:

* **Redis streams** when a Redis URL is known (``--routing`` / ``ARENA_ROUTING_URL``, or
  the Celery broker): each match has a stream ``arena:live:events:ID`` whose entries are
  batches of events, a metadata key ``arena:live:meta:ID`` and a place in the sorted set
  ``arena:live:index`` (score: last heartbeat).  Streams rather than pub/sub because a
  spectator who arrives late must still see the match from its first event, and because
  the entries' times make a spectating delay exact.
* **A spool directory** otherwise: one JSON-lines file per match (metadata first, then
  batches, then an end marker) in a directory derived from the results database, so the
  local pool feeds an ``arena web`` process on the same machine with no Redis at all.

Publishing never slows or stops a match: events are buffered and written at most every
``FLUSH_S`` seconds (a match of built-in bots makes thousands a second), and a transport
that fails is logged once and dropped for the rest of the match.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.match.types import JSON

log = logging.getLogger(__name__)

LIVE_ENV = "ARENA_LIVE"
LIVE_DIR_ENV = "ARENA_LIVE_DIR"
PREFIX = "arena:live:"
INDEX_KEY = PREFIX + "index"
#: Buffered events are written at least this often while a match runs.
FLUSH_S = 0.1
#: How long a finished match's events stay readable (Redis expiry, spool clean-up).
KEEP_S = 3600.0
#: A running match that published nothing for this long is shown as "stalled".
STALE_S = 120.0
#: Most entries (batches) kept per match stream; a 1000-deal match fits easily.
MAX_BATCHES = 50_000
#: Event types a spectator may receive, and the keys each may carry.  The web process
#: forwards nothing else, whatever a publisher wrote: a second lock on the same door.
PUBLIC_EVENTS: dict[str, frozenset[str]] = {
    "match_start": frozenset({"type", "match_id", "rules", "seats", "players", "time_control"}),
    "deal_start": frozenset({"type", "deal", "dealer"}),
    "action": frozenset({"type", "seat", "action", "auto", "fallback"}),
    "talon": frozenset({"type", "deal", "cards"}),
    "trick": frozenset({"type", "winner", "points", "cards"}),
    "marriage": frozenset({"type", "seat", "suit", "points", "kind"}),
    "redeal": frozenset({"type", "deal", "reason"}),
    "deal_end": frozenset({"type", "deal", "deltas", "scores", "declarer", "contract", "made"}),
    "match_end": frozenset(
        {"type", "match_id", "status", "scores", "ranks", "deals", "forfeit_seat"}
    ),
}
#: Metadata fields published for a match (nothing that reveals its deals: no seed).
META_FIELDS = (
    "match_id", "tournament", "index", "round", "group", "players", "bots", "rules",
    "executor", "worker", "started_at",
)


def public_event(event: JSON) -> JSON | None:
    """The event reduced to what a spectator may see, or None for an unknown kind."""
    allowed = PUBLIC_EVENTS.get(str(event.get("type")))
    if allowed is None:
        return None
    return {k: v for k, v in event.items() if k in allowed}


def live_enabled() -> bool:
    return os.environ.get(LIVE_ENV, "on").strip().lower() not in ("0", "off", "no", "false")


def spool_dir_for(db_url: str | None) -> Path:
    """Where matches of a store publish without Redis: ``ARENA_LIVE_DIR``, else beside a
    SQLite file (``results.sqlite3.live``), else a directory named after the database URL
    under the system temporary directory.  The scheduler and ``arena web`` agree on it
    from the ``--db`` value alone."""
    explicit = os.environ.get(LIVE_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    if db_url:
        from arena.tournament.store import parse_db_url

        try:
            kind, target, schema = parse_db_url(db_url)
        except Exception:
            kind, target, schema = "other", db_url, None
        if kind == "sqlite" and target != ":memory:":
            path = Path(target).expanduser().resolve()
            return path.with_name(path.name + ".live")
        key = hashlib.sha256(f"{target}|{schema or ''}".encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"arena-live-{key}"
    return Path(tempfile.gettempdir()) / "arena-live"


def _dump(value: Any) -> str:
    # No sort_keys: sorting makes encoding a batch several times slower, and every match
    # pays it for every batch.
    return json.dumps(value, separators=(",", ":"))


# ---------------------------------------------------------------------------------------
# Publishing


class _Transport:
    """Where batches go.  ``start`` and ``end`` carry the first and last batch too, so a
    short match costs two writes (two Redis round trips), not five."""

    def start(self, match_id: str, meta: JSON, events: list[JSON], now: float) -> None:
        raise NotImplementedError

    def batch(self, match_id: str, events: list[JSON], now: float) -> None:
        raise NotImplementedError

    def end(self, match_id: str, events: list[JSON], now: float) -> None:
        raise NotImplementedError


class RedisTransport(_Transport):
    def __init__(self, url: str) -> None:
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)
        self.ended = 0

    def _add(self, pipe: Any, match_id: str, events: list[JSON], now: float) -> None:
        key = PREFIX + "events:" + match_id
        pipe.xadd(key, {"t": repr(now), "events": _dump(events)}, maxlen=MAX_BATCHES,
                  approximate=True)
        pipe.expire(key, int(KEEP_S))

    def start(self, match_id: str, meta: JSON, events: list[JSON], now: float) -> None:
        pipe = self.client.pipeline(transaction=False)
        pipe.set(PREFIX + "meta:" + match_id, _dump(meta), ex=int(KEEP_S))
        pipe.delete(PREFIX + "events:" + match_id, PREFIX + "end:" + match_id)  # a redelivery
        if events:
            self._add(pipe, match_id, events, now)
        pipe.zadd(INDEX_KEY, {match_id: now})
        pipe.execute()

    def batch(self, match_id: str, events: list[JSON], now: float) -> None:
        pipe = self.client.pipeline(transaction=False)
        self._add(pipe, match_id, events, now)
        pipe.zadd(INDEX_KEY, {match_id: now})
        pipe.execute()

    def end(self, match_id: str, events: list[JSON], now: float) -> None:
        pipe = self.client.pipeline(transaction=False)
        if events:
            self._add(pipe, match_id, events, now)
        pipe.set(PREFIX + "end:" + match_id, repr(now), ex=int(KEEP_S))
        pipe.zadd(INDEX_KEY, {match_id: now})
        self.ended += 1
        if self.ended % 100 == 1:  # now and then, forget matches whose keys expired
            pipe.zremrangebyscore(INDEX_KEY, "-inf", now - KEEP_S)
        pipe.execute()


class SpoolTransport(_Transport):
    """One JSON-lines file per match; appends are single ``write`` calls of whole lines."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self._files: dict[str, Any] = {}
        _clean_spool(self.dir)

    def _path(self, match_id: str) -> Path:
        return self.dir / f"{match_id}.jsonl"

    def start(self, match_id: str, meta: JSON, events: list[JSON], now: float) -> None:
        path = self._path(match_id)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        lines = _dump({"meta": meta}) + "\n"
        if events:
            lines += _dump({"t": now, "events": events}) + "\n"
        tmp.write_text(lines, encoding="utf-8")
        os.replace(tmp, path)  # a re-delivered match starts afresh
        self._files[match_id] = path.open("a", encoding="utf-8")

    def batch(self, match_id: str, events: list[JSON], now: float) -> None:
        fh = self._files[match_id]
        fh.write(_dump({"t": now, "events": events}) + "\n")
        fh.flush()

    def end(self, match_id: str, events: list[JSON], now: float) -> None:
        fh = self._files.pop(match_id, None)
        if fh is None:
            return
        tail = _dump({"t": now, "events": events}) + "\n" if events else ""
        fh.write(tail + _dump({"end": now}) + "\n")
        fh.close()


_CLEANED: set[str] = set()


def _clean_spool(directory: Path) -> None:
    """Remove files of matches that ended (or stalled) over ``KEEP_S`` ago; once a process."""
    key = str(directory)
    if key in _CLEANED:
        return
    _CLEANED.add(key)
    cutoff = time.time() - KEEP_S
    for path in directory.glob("*.jsonl"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()


_TRANSPORTS: dict[tuple[int, str], _Transport] = {}
#: After a transport fails, matches of this process skip it for this long: a Redis that is
#: down (or a host that drops packets) must not cost every match a connection timeout.
RETRY_AFTER_S = 15.0
_DOWN_UNTIL: dict[tuple[int, str], float] = {}


def _transport(redis_url: str | None, db_url: str | None) -> _Transport | None:
    """One transport per process and target; None when live events are switched off."""
    if not live_enabled():
        return None
    target = f"redis|{redis_url}" if redis_url else f"spool|{spool_dir_for(db_url)}"
    key = (os.getpid(), target)
    if _DOWN_UNTIL.get(key, 0.0) > time.monotonic():
        return None
    tr = _TRANSPORTS.get(key)
    if tr is None:
        tr = RedisTransport(redis_url) if redis_url else SpoolTransport(spool_dir_for(db_url))
        _TRANSPORTS[key] = tr
    return tr


@dataclass
class MatchPublisher:
    """The ``on_event`` callback of one match: buffers public events, writes batches.

    Nothing is written before the match's first event, which goes out at once with the
    metadata (the match appears in the live list); the last batch goes with the end.
    """

    match_id: str
    meta: JSON
    transport: _Transport | None
    buffer: list[JSON] = field(default_factory=list)
    flushed_at: float = 0.0
    started: bool = False

    def _fail(self, what: str, exc: BaseException) -> None:
        log.warning("live events of match %s stop (%s failed: %s); the match goes on, and "
                    "matches of the next %.0f s are not published", self.match_id, what, exc,
                    RETRY_AFTER_S)
        for key, tr in list(_TRANSPORTS.items()):
            if tr is self.transport:
                _DOWN_UNTIL[key] = time.monotonic() + RETRY_AFTER_S
        self.transport = None
        self.buffer.clear()

    async def __call__(self, event: JSON) -> None:
        self.push(event)

    def push(self, event: JSON) -> None:
        """Take one event (the callback for a referee's ``on_event_nowait``)."""
        # The referee's events are public by construction (the web process filters each
        # one to its public keys again before a browser gets it), so here only the kind is
        # checked: this runs on every event of every match and must stay cheap.
        if self.transport is None:
            return
        kind = event.get("type")
        if kind not in PUBLIC_EVENTS:
            return
        self.buffer.append(event)
        if kind == "match_end":
            return  # written with the end, in one go
        now = time.time()
        if not self.started or now - self.flushed_at >= FLUSH_S:
            self.flush(now)

    def open(self) -> None:
        self.flushed_at = time.time()

    def flush(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        self.flushed_at = now
        if self.transport is None:
            return
        events, self.buffer = self.buffer, []
        try:
            if not self.started:
                self.transport.start(self.match_id, {**self.meta, "state": "running"},
                                     events, now)
                self.started = True
            elif events:
                self.transport.batch(self.match_id, events, now)
        except Exception as exc:
            self._fail("writing", exc)

    def close(self) -> None:
        if self.transport is None:
            return
        if not self.started:
            self.flush()
        if self.transport is None or not self.started:
            return
        events, self.buffer = self.buffer, []
        try:
            self.transport.end(self.match_id, events, time.time())
        except Exception as exc:
            self._fail("ending", exc)


def match_meta(match: Any, executor: str, worker: str) -> JSON:
    """Metadata of a ``ScheduledMatch`` for spectators: who plays what, never the seed."""
    spec = match.spec
    return {
        "match_id": match.match_id,
        "tournament": match.tournament,
        "index": match.index,
        "round": match.round,
        "group": match.group,
        "players": list(match.players),
        "bots": list(spec.bots),
        "rules": spec.rules,
        "executor": executor,
        "worker": worker,
        "started_at": time.time(),
    }


def gateway_publisher(
    match_id: str, rules: JSON, bots: list[str], *, worker: str, redis_url: str | None,
    db_url: str | None,
) -> MatchPublisher | None:
    """The publisher of a match a gateway plays (``arena match --gateway``, StartMatch):
    to its routing Redis, else beside its results store; None when neither is set or live
    events are off. Such a match belongs to no tournament."""
    if not redis_url and not db_url:
        return None
    try:
        transport = _transport(redis_url, db_url)
    except Exception as exc:
        log.warning("live events are off for match %s: %s", match_id, exc)
        return None
    if transport is None:
        return None
    meta = {"match_id": match_id, "tournament": None, "index": None, "round": None,
            "group": None, "players": list(bots), "bots": list(bots), "rules": rules,
            "executor": "gateway", "worker": worker, "started_at": time.time()}
    publisher = MatchPublisher(match_id, meta, transport)
    publisher.open()
    return publisher


@contextlib.contextmanager
def publishing(
    match: Any, *, executor: str, worker: str, redis_url: str | None, db_url: str | None
) -> Iterator[Callable[[JSON], Awaitable[None]] | None]:
    """Yield the ``on_event`` callback that publishes ``match`` live (None when off).

    A transport that cannot be set up (Redis down) costs the match nothing but a warning.
    """
    try:
        transport = _transport(redis_url, db_url)
    except Exception as exc:
        log.warning("live events are off for match %s: %s", match.match_id, exc)
        transport = None
    if transport is None:
        yield None
        return
    pub = MatchPublisher(match.match_id, match_meta(match, executor, worker), transport)
    pub.open()
    try:
        yield pub
    finally:
        pub.close()


# ---------------------------------------------------------------------------------------
# Reading


@dataclass
class LiveMatch:
    """A match a spectator can pick: running now, or ended within ``KEEP_S``."""

    meta: JSON
    state: str  # running, stalled or ended
    updated_at: float

    def to_json(self) -> JSON:
        data = {k: self.meta.get(k) for k in META_FIELDS}
        data.update(state=self.state, updated_at=self.updated_at,
                    ended_at=self.meta.get("ended_at"))
        return data


@dataclass
class Batch:
    """Events written together, with the cursor that follows them and their time."""

    cursor: str
    at: float
    events: list[JSON]


class LiveReader:
    """Reads what publishers wrote: Redis when a URL is given, and the spool directory.

    Both, because one store can be fed by Celery workers (through Redis) and by a local
    pool without Redis (through the spool) at different times.
    """

    def __init__(self, redis_url: str | None = None, spool: Path | None = None) -> None:
        self.redis_url = redis_url
        self.spool = spool
        self._client: Any = None
        if redis_url:
            import redis

            self._client = redis.Redis.from_url(
                redis_url, socket_timeout=3.0, socket_connect_timeout=2.0
            )

    @property
    def source(self) -> str:
        parts = [f"Redis {_redacted(self.redis_url)}"] if self.redis_url else []
        if self.spool is not None:
            parts.append(f"spool directory {self.spool}")
        return " and ".join(parts) or "nothing"

    def matches(self, *, now: float | None = None) -> list[LiveMatch]:
        """Running matches first (newest first), then recently ended ones."""
        now = time.time() if now is None else now
        out = self._spool_matches(now)
        if self._client is not None:
            seen = {m.meta.get("match_id") for m in out}
            out.extend(m for m in self._redis_matches(now) if m.meta.get("match_id") not in seen)
        order = {"running": 0, "stalled": 1, "ended": 2}
        out.sort(key=lambda m: (order.get(m.state, 3), -float(m.meta.get("started_at") or 0)))
        return out

    def meta(self, match_id: str, *, now: float | None = None) -> LiveMatch | None:
        """One match's entry, read on its own (a spectator's stream asks this often)."""
        now = time.time() if now is None else now
        if self.spool is not None:
            path = self.spool / f"{match_id}.jsonl"
            if path.exists():
                return self._spool_entry(path, now)
        if self._client is not None:
            raw, ended = self._client.mget([PREFIX + "meta:" + match_id,
                                            PREFIX + "end:" + match_id])
            score = self._client.zscore(INDEX_KEY, match_id)
            if raw and score is not None:
                meta = _with_end(json.loads(raw), ended)
                return LiveMatch(meta, _state(meta, float(score), now), float(score))
        return None

    def _redis_matches(self, now: float) -> list[LiveMatch]:
        rows = self._client.zrangebyscore(INDEX_KEY, now - KEEP_S, "+inf", withscores=True)
        if not rows:
            return []
        ids = [r[0].decode() if isinstance(r[0], bytes) else str(r[0]) for r in rows]
        metas = self._client.mget([PREFIX + "meta:" + i for i in ids])
        ends = self._client.mget([PREFIX + "end:" + i for i in ids])
        out = []
        for (_, score), raw, ended in zip(rows, metas, ends, strict=True):
            if not raw:
                continue
            meta = _with_end(json.loads(raw), ended)
            out.append(LiveMatch(meta, _state(meta, float(score), now), float(score)))
        return out

    def _spool_matches(self, now: float) -> list[LiveMatch]:
        if self.spool is None or not self.spool.is_dir():
            return []
        out = []
        for path in self.spool.glob("*.jsonl"):
            entry = self._spool_entry(path, now)
            if entry is not None:
                out.append(entry)
        return out

    def _spool_entry(self, path: Path, now: float) -> LiveMatch | None:
        try:
            mtime = path.stat().st_mtime
            if mtime < now - KEEP_S:
                return None
            with path.open("rb") as fh:
                first = fh.readline()
                meta = dict(json.loads(first)["meta"])
                fh.seek(max(0, path.stat().st_size - 64))
                tail = fh.read().splitlines()
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if tail and tail[-1].startswith(b'{"end":'):
            meta["state"] = "ended"
            with contextlib.suppress(ValueError, KeyError):
                meta["ended_at"] = float(json.loads(tail[-1])["end"])
        return LiveMatch(meta, _state(meta, mtime, now), mtime)

    def read(self, match_id: str, cursor: str | None, *, block_ms: int = 0) -> list[Batch]:
        """Batches after ``cursor`` (None: from the first); waits up to ``block_ms`` for one."""
        in_spool = self.spool is not None and (self.spool / f"{match_id}.jsonl").exists()
        if self._client is not None and not in_spool:
            key = PREFIX + "events:" + match_id
            start = cursor or "0-0"
            if block_ms:
                got = self._client.xread({key: start}, count=500, block=block_ms)
                entries = got[0][1] if got else []
            else:
                entries = self._client.xrange(key, min=f"({start}" if cursor else "-",
                                              count=500)
            out = []
            for entry_id, fields in entries:
                eid = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                t = float(fields[b"t"])
                out.append(Batch(eid, t, list(json.loads(fields[b"events"]))))
            return out
        return self._read_spool(match_id, cursor, block_ms)

    def _read_spool(self, match_id: str, cursor: str | None, block_ms: int) -> list[Batch]:
        if self.spool is None:
            return []
        path = self.spool / f"{match_id}.jsonl"
        offset = int(cursor) if cursor else 0
        deadline = time.monotonic() + block_ms / 1000.0
        while True:
            out: list[Batch] = []
            try:
                with path.open("rb") as fh:
                    fh.seek(offset)
                    data = fh.read(4 << 20)
            except OSError:
                data = b""
            pos = offset
            for line in data.splitlines(keepends=True):
                if not line.endswith(b"\n"):
                    break  # a line still being written
                pos += len(line)
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if "events" in item:
                    out.append(Batch(str(pos), float(item["t"]), list(item["events"])))
                else:  # the metadata line or the end marker
                    out.append(Batch(str(pos), float(item.get("end", 0.0)), []))
            if out or time.monotonic() >= deadline:
                return out  # batches without events only move the cursor on
            time.sleep(0.05)

    def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()


def _redacted(url: str) -> str:
    """A Redis URL without its password: the live page shows where events come from."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _with_end(meta: JSON, ended: Any) -> JSON:
    if ended:
        meta = {**meta, "state": "ended", "ended_at": float(ended)}
    return meta


def _state(meta: JSON, updated: float, now: float) -> str:
    if meta.get("state") == "ended":
        return "ended"
    return "running" if now - updated < STALE_S else "stalled"
