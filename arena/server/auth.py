"""Bot registry and credentials of the gateway.

Tokens are bearer secrets: whoever holds one acts as its bot. The registry therefore keeps
only their SHA-256 hashes (a stolen database file gives no working token) and shows a token
once, when it is issued. Revoked and replaced hashes are kept so a refused bot is told why,
which saves its author from guessing between a typo and a revocation.

A token is checked for the whole life of a stream, not only when it opens: a
:class:`TokenWatch` checks the tokens of the open streams again whenever the registry
changed, which a revoke or rotate made through any gateway sharing the registry file does.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import tenacity

from arena.server.limits import quote

#: A bot name is used in bot references (``remote:NAME``) and metric labels: keep it plain.
BOT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
TOKEN_PREFIX = "thb_"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bots (
    name TEXT PRIMARY KEY,
    token_sha256 TEXT UNIQUE,
    created_unix_ms INTEGER NOT NULL,
    updated_unix_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS retired_tokens (
    token_sha256 TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    reason TEXT NOT NULL,
    retired_unix_ms INTEGER NOT NULL
);
"""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def _now_ms() -> int:
    return int(time.time() * 1000)


class RegistryError(Exception):
    """A registry request that cannot be carried out; ``kind`` maps to a gRPC status."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # "invalid", "exists", "not_found"


@dataclass(frozen=True)
class BotRecord:
    name: str
    token_active: bool
    created_unix_ms: int


class Verdict(Enum):
    """Outcome of checking a presented token, with a reason label for metrics."""

    BOT = "bot"
    ORGANISER = "organiser"
    MISSING = "missing_token"
    MALFORMED = "malformed_header"
    UNKNOWN = "bad_token"
    REVOKED = "revoked_token"
    ROTATED = "rotated_token"


@dataclass(frozen=True)
class Identity:
    verdict: Verdict
    bot: str | None = None
    #: The SHA-256 of a bot's token, so that its streams can be checked again later.
    token_sha256: str | None = None

    @property
    def message(self) -> str:
        """What the caller is told; never echoes the token."""
        return {
            Verdict.MISSING: "missing credentials: send metadata 'authorization: Bearer <token>'",
            Verdict.MALFORMED: "malformed authorization metadata: expected 'Bearer <token>'",
            Verdict.UNKNOWN: "unknown token: check the token the organiser gave you",
            Verdict.REVOKED: f"the token of bot {self.bot!r} has been revoked; "
            "ask the organiser for a new one",
            Verdict.ROTATED: f"the token of bot {self.bot!r} has been replaced by a newer one; "
            "use the new token",
        }.get(self.verdict, "")


#: PostgreSQL keeps a change counter, bumped in the same transaction as every change, for
#: :meth:`BotRegistry.version` (SQLite has ``PRAGMA data_version`` for that).
_PG_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS registry_version (id INTEGER PRIMARY KEY, n BIGINT NOT NULL);
INSERT INTO registry_version (id, n) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
"""
#: How long a PostgreSQL registry's change counter is trusted before it is read again:
#: revokes take effect within this (plus the stream sweep's interval), and decisions need
#: no round trip to the database.
PG_VERSION_TTL_S = 0.2
_PG_CHANNEL = "arena_registry_changed"
#: Shortest time between two looks at the registry by a :class:`TokenWatch` for changes
#: made elsewhere (another gateway on the same SQLite file; a PostgreSQL registry announces
#: its changes, and its counter is cached for ``PG_VERSION_TTL_S``). A revoke or rotate
#: does not return until this long after it was committed (:attr:`BotRegistry.settle_s`),
#: so every gateway has looked again before any answer sent after it arrives: such an
#: answer never counts, and a busy gateway reads the registry 50 times a second rather
#: than before every decision. Changes made through this process, or announced to it, are
#: seen at the very next decision whatever the interval.
CHECK_EVERY_S = 0.02


class BotRegistry:
    """Registered bots, in a SQLite file or a PostgreSQL database; safe to share between
    the gateway's threads.

    Several gateways share one registry: on one machine a SQLite file, across machines a
    PostgreSQL database (``postgresql://HOST/DB``, optionally ``?schema=NAME``), so that a
    bot registered, revoked or rotated through one gateway is so on all of them.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        #: Changes made through this connection (``PRAGMA data_version`` counts only those
        #: of other connections, e.g. another gateway's).
        self._changes = 0
        #: NOTIFYs heard from other gateways (PostgreSQL only).
        self._notified = 0
        #: The PostgreSQL registry's change counter, read by the listener thread every
        #: ``PG_VERSION_TTL_S`` (never on the gateway's event loop: a database far away,
        #: or cut off, must not hold up decisions).
        self._pg_counter = 0
        self.kind = "postgresql" if self.path.startswith(("postgresql://", "postgres://")) else (
            "sqlite"
        )
        if self.kind == "postgresql":
            self._db: Any = self._connect_pg()
            self._closing = threading.Event()
            self._listener = threading.Thread(
                target=self._listen, name="registry listener", daemon=True
            )
            self._listener.start()
            return
        if self.path.startswith("sqlite://"):
            self.path = self.path[len("sqlite://") :].removeprefix("/")
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = self._open_sqlite()

    def _open_sqlite(self) -> sqlite3.Connection:
        """Open the SQLite registry, waiting out another gateway that opens it at the same
        moment: switching a new file to WAL takes a lock SQLite's busy timeout does not
        wait for, so two gateways started together on one file would see "database is
        locked" (tenacity retries it for up to 15 s, then the error is one clear line)."""
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                             timeout=10.0)

        def setup() -> None:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)

        try:
            tenacity.Retrying(
                retry=tenacity.retry_if_exception(
                    lambda e: isinstance(e, sqlite3.OperationalError) and "locked" in str(e)
                ),
                wait=tenacity.wait_random_exponential(multiplier=0.05, max=1.0),
                stop=tenacity.stop_after_delay(15.0),
                reraise=True,
            )(setup)
        except sqlite3.Error as exc:
            db.close()
            raise OSError(f"cannot open the bot registry at {_shown(self.path)}: {exc}") from None
        return db

    def _connect_pg(self) -> Any:
        import psycopg

        from arena.tournament.store import parse_db_url, pg_liveness

        _, target, schema = parse_db_url(self.path)
        try:
            db = psycopg.connect(target, autocommit=True, connect_timeout=10,
                                 **pg_liveness(target))
        except psycopg.Error as exc:
            raise OSError(f"cannot open the bot registry at {_shown(self.path)}: {exc}") from None
        if schema:
            db.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            db.execute(f'SET search_path TO "{schema}"')
        # Milliseconds since 1970 overflow PostgreSQL's 32-bit INTEGER.
        for statement in (_SCHEMA.replace("INTEGER", "BIGINT") + _PG_VERSION_TABLE).split(";"):
            if statement.strip():
                db.execute(statement)
        row = db.execute("SELECT n FROM registry_version WHERE id = 1").fetchone()
        self._pg_counter = int(row[0]) if row is not None else 0
        return db

    def _listen(self) -> None:
        """Count the changes other gateways announce (PostgreSQL NOTIFY), so that a revoke
        made anywhere is seen here within milliseconds without asking the database before
        every decision; the change counter is also read here every ``PG_VERSION_TTL_S``,
        off the gateway's event loop."""
        import psycopg

        from arena.tournament.store import parse_db_url, pg_liveness

        _, target, schema = parse_db_url(self.path)
        table = f'"{schema}".registry_version' if schema else "registry_version"
        while not self._closing.is_set():
            try:
                with psycopg.connect(target, autocommit=True, connect_timeout=10,
                                     **pg_liveness(target)) as conn:
                    conn.execute(f"LISTEN {_PG_CHANNEL}")
                    self._notified += 1  # changes while we were not listening
                    while not self._closing.is_set():
                        for _ in conn.notifies(timeout=PG_VERSION_TTL_S):
                            self._notified += 1
                        self.refresh(conn, table)
            except psycopg.Error:
                self._closing.wait(1.0)

    def refresh(self, conn: Any = None, table: str = "registry_version") -> None:
        """Read the PostgreSQL registry's change counter (a round trip to the database:
        from a thread of its own, or ``asyncio.to_thread``); nothing to do for SQLite."""
        if self.kind != "postgresql":
            return
        if conn is None:
            with self._lock:
                row = self._db.execute("SELECT n FROM registry_version WHERE id = 1").fetchone()
        else:
            row = conn.execute(f"SELECT n FROM {table} WHERE id = 1").fetchone()
        if row is not None:
            self._pg_counter = max(self._pg_counter, int(row[0]))

    def _sql(self, stmt: str) -> str:
        return stmt.replace("?", "%s") if self.kind == "postgresql" else stmt

    def _run(self, stmt: str, params: tuple[Any, ...] | list[Any] = ()) -> Any:
        return self._db.execute(self._sql(stmt), params)

    def _transaction(self, body: Callable[[], Any]) -> Any:
        """Run ``body`` in one transaction that also marks the registry as changed."""
        if self.kind == "postgresql":
            with self._db.transaction():
                out = body()
                self._db.execute("UPDATE registry_version SET n = n + 1 WHERE id = 1")
                self._db.execute(f"NOTIFY {_PG_CHANNEL}")  # delivered at commit
            self._changes += 1  # seen here at once; the others hear the NOTIFY
            return out
        self._db.execute("BEGIN")
        try:
            out = body()
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return out

    def close(self) -> None:
        if self.kind == "postgresql":
            self._closing.set()
        with self._lock:
            self._db.close()

    def register(self, name: str) -> str:
        """Create a bot and return its token (the only time it is available)."""
        if not BOT_NAME_RE.match(name):
            raise RegistryError(
                "invalid",
                f"invalid bot name {quote(name)}: use 1 to 64 letters, digits, '_', '-' or "
                "'.', starting with a letter or digit",
            )
        if is_reserved(name):
            raise RegistryError(
                "invalid",
                f"{name!r} is the name of a built-in bot and cannot be registered "
                f"(reserved: {', '.join(reserved_names())})",
            )
        token = new_token()
        now = _now_ms()

        def insert() -> None:
            self._run(
                "INSERT INTO bots(name, token_sha256, created_unix_ms, updated_unix_ms) "
                "VALUES (?, ?, ?, ?)",
                (name, hash_token(token), now, now),
            )

        with self._lock:
            try:
                self._transaction(insert)
            except Exception as exc:
                if _is_duplicate(exc):
                    raise RegistryError("exists", f"bot {name!r} is already registered") from None
                raise
        return token

    def _retire(self, name: str, reason: str) -> None:
        row = self._run("SELECT token_sha256 FROM bots WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise RegistryError("not_found", f"no bot named {quote(name)} is registered")
        self._changes += 1
        if row[0] is not None:
            self._run(
                "INSERT INTO retired_tokens(token_sha256, name, reason, retired_unix_ms)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (token_sha256) DO UPDATE SET"
                " name = excluded.name, reason = excluded.reason,"
                " retired_unix_ms = excluded.retired_unix_ms",
                (row[0], name, reason, _now_ms()),
            )

    def revoke(self, name: str) -> None:
        def body() -> None:
            self._retire(name, "revoked")
            self._run(
                "UPDATE bots SET token_sha256 = NULL, updated_unix_ms = ? WHERE name = ?",
                (_now_ms(), name),
            )

        with self._lock:
            self._transaction(body)

    def rotate(self, name: str) -> str:
        token = new_token()

        def body() -> None:
            self._retire(name, "rotated")
            self._run(
                "UPDATE bots SET token_sha256 = ?, updated_unix_ms = ? WHERE name = ?",
                (hash_token(token), _now_ms(), name),
            )

        with self._lock:
            self._transaction(body)
        return token

    def list(self) -> list[BotRecord]:
        with self._lock:
            rows = self._run(
                "SELECT name, token_sha256 IS NOT NULL, created_unix_ms FROM bots ORDER BY name"
            ).fetchall()
        return [BotRecord(name=r[0], token_active=bool(r[1]), created_unix_ms=r[2]) for r in rows]

    def exists(self, name: str) -> bool:
        with self._lock:
            row = self._run("SELECT 1 FROM bots WHERE name = ?", (name,)).fetchone()
        return row is not None

    def lookup(self, token: str) -> Identity:
        return self.lookup_digest(hash_token(token))

    def lookup_digest(self, digest: str) -> Identity:
        with self._lock:
            row = self._run("SELECT name FROM bots WHERE token_sha256 = ?", (digest,)).fetchone()
            if row is not None:
                return Identity(Verdict.BOT, row[0], digest)
            old = self._run(
                "SELECT name, reason FROM retired_tokens WHERE token_sha256 = ?", (digest,)
            ).fetchone()
        if old is not None:
            verdict = Verdict.REVOKED if old[1] == "revoked" else Verdict.ROTATED
            return Identity(verdict, old[0])
        return Identity(Verdict.UNKNOWN)

    @property
    def settle_s(self) -> float:
        """How long after a committed change every :class:`TokenWatch` on this registry,
        in any process, has looked at it again: what a revoke waits before it returns."""
        if self.kind == "postgresql":
            return CHECK_EVERY_S + PG_VERSION_TTL_S
        return CHECK_EVERY_S

    @property
    def local_changes(self) -> int:
        """Changes this process made or heard of (its own writes, PostgreSQL's NOTIFYs): a
        plain counter, read before every decision without asking the database."""
        return self._changes + self._notified

    def version(self) -> tuple[int, ...]:
        """Changes when any connection, in this process or another, changed the registry;
        cheap enough to ask before every decision. A PostgreSQL registry's counter is the
        one its listener read last (a few times a second, and at once on a NOTIFY): this
        never waits for the database; :meth:`refresh` reads it now."""
        if self.kind == "postgresql":
            return self._pg_counter, self._notified, self._changes
        with self._lock:
            row = self._db.execute("PRAGMA data_version").fetchone()
        return int(row[0]), self._changes

    def active_digests(self, digests: Iterable[str]) -> set[str]:
        """Which of these token hashes still belong to a bot."""
        wanted = list(dict.fromkeys(digests))
        found: set[str] = set()
        with self._lock:
            for start in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._run(
                    f"SELECT token_sha256 FROM bots WHERE token_sha256 IN ({marks})", chunk
                ).fetchall()
                found.update(r[0] for r in rows)
        return found


def _is_duplicate(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.IntegrityError):
        return True
    return type(exc).__name__ == "UniqueViolation"


def _shown(url: str) -> str:
    from arena.tournament.store import redact_url

    return redact_url(url)


class Authenticator:
    """Turns an ``authorization`` metadata value into an identity."""

    def __init__(self, registry: BotRegistry, organiser_token: str) -> None:
        self.registry = registry
        self._organiser_digest = hash_token(organiser_token).encode()

    def identify(self, metadata: tuple[tuple[str, str | bytes], ...] | None) -> Identity:
        header: str | None = None
        for key, value in metadata or ():
            if key.lower() == "authorization":
                header = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                break
        if header is None or not header.strip():
            return Identity(Verdict.MISSING)
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or " " in token:
            return Identity(Verdict.MALFORMED)
        if hmac.compare_digest(hash_token(token).encode(), self._organiser_digest):
            return Identity(Verdict.ORGANISER)
        return self.registry.lookup(token)


def reserved_names() -> list[str]:
    """Names a bot cannot be registered under: every built-in bot's (a registered ``random``
    would otherwise sit in the seats of matches that name the built-in ``random``)."""
    from arena.bots import BUILTIN_BOTS

    return sorted(BUILTIN_BOTS)


def is_reserved(name: str) -> bool:
    return name.lower() in {n.lower() for n in reserved_names()}


@dataclass(eq=False)
class Watched:
    """One open stream whose token is watched; ``end`` is called once if it stops being
    valid, with the identity that says why."""

    bot: str
    token_sha256: str
    end: Callable[[Identity], None]


class TokenWatch:
    """The tokens of every open ``Play`` stream, checked again whenever the registry changes.

    :meth:`check` costs one ``PRAGMA data_version`` when nothing changed, so it runs before
    every decision as well as a few times a second: after a revoke or rotate, wherever it
    was made, no decision of the old token counts and its streams end at once.
    """

    def __init__(self, registry: BotRegistry) -> None:
        self.registry = registry
        self._streams: dict[str, set[Watched]] = {}
        self._per_bot: dict[str, int] = {}
        self._version: tuple[int, ...] = registry.version()
        self._local = registry.local_changes
        self._checked_at = 0.0

    def add(self, bot: str, token_sha256: str, end: Callable[[Identity], None]) -> Watched:
        watched = Watched(bot, token_sha256, end)
        self._streams.setdefault(token_sha256, set()).add(watched)
        self._per_bot[bot] = self._per_bot.get(bot, 0) + 1
        return watched

    def discard(self, watched: Watched) -> None:
        streams = self._streams.get(watched.token_sha256)
        if streams is None or watched not in streams:
            return
        streams.discard(watched)
        if not streams:
            del self._streams[watched.token_sha256]
        left = self._per_bot.get(watched.bot, 1) - 1
        if left > 0:
            self._per_bot[watched.bot] = left
        else:
            self._per_bot.pop(watched.bot, None)

    async def check_fresh(self) -> int:
        """:meth:`check` against the registry as it is now: a PostgreSQL registry's change
        counter is read first, on a thread, so the event loop never waits for the database."""
        await asyncio.to_thread(self.registry.refresh)
        return self.check(fresh=True)

    def streams(self, bot: str) -> int:
        """Open streams of a bot, welcomed or still before their hello."""
        return self._per_bot.get(bot, 0)

    def __len__(self) -> int:
        return sum(self._per_bot.values())

    def check(self, *, fresh: bool = False) -> int:
        """End the streams whose token is no longer valid; how many were ended.

        Asked before every decision. A revoke made through this gateway (or announced to
        it) is seen at once; one made by another process within ``CHECK_EVERY_S`` (plus
        PostgreSQL's ``PG_VERSION_TTL_S``), which the revoke waits out before it returns:
        no answer sent after it is let through. A busy gateway still does not read the
        registry thousands of times a second. ``fresh`` looks whatever the time since the
        last look (:meth:`check_fresh` reads a PostgreSQL registry's counter first)."""
        now = time.monotonic()
        local = self.registry.local_changes
        if not fresh and local == self._local and now - self._checked_at < CHECK_EVERY_S:
            return 0
        self._checked_at = now
        self._local = local
        version = self.registry.version()
        if version == self._version:
            return 0
        self._version = version
        if not self._streams:
            return 0
        active = self.registry.active_digests(self._streams)
        ended = 0
        for digest in [d for d in self._streams if d not in active]:
            identity = self.registry.lookup_digest(digest)
            for watched in list(self._streams.get(digest, ())):
                self.discard(watched)
                watched.end(identity)
                ended += 1
        return ended
