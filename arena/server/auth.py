"""Bot registry and credentials of the gateway.

Tokens are bearer secrets: whoever holds one acts as its bot. The registry therefore keeps
only their SHA-256 hashes (a stolen database file gives no working token) and shows a token
once, when it is issued. Revoked and replaced hashes are kept so a refused bot is told why,
which saves its author from guessing between a typo and a revocation.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

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


class BotRegistry:
    """Registered bots in a SQLite file; safe to share between the gateway's threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def register(self, name: str) -> str:
        """Create a bot and return its token (the only time it is available)."""
        if not BOT_NAME_RE.match(name):
            raise RegistryError(
                "invalid",
                f"invalid bot name {name!r}: use 1 to 64 letters, digits, '_', '-' or '.', "
                "starting with a letter or digit",
            )
        token = new_token()
        now = _now_ms()
        with self._lock:
            try:
                self._db.execute(
                    "INSERT INTO bots(name, token_sha256, created_unix_ms, updated_unix_ms) "
                    "VALUES (?, ?, ?, ?)",
                    (name, hash_token(token), now, now),
                )
            except sqlite3.IntegrityError:
                raise RegistryError("exists", f"bot {name!r} is already registered") from None
        return token

    def _retire(self, name: str, reason: str) -> None:
        row = self._db.execute("SELECT token_sha256 FROM bots WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise RegistryError("not_found", f"no bot named {name!r} is registered")
        if row[0] is not None:
            self._db.execute(
                "INSERT OR REPLACE INTO retired_tokens(token_sha256, name, reason, retired_unix_ms)"
                " VALUES (?, ?, ?, ?)",
                (row[0], name, reason, _now_ms()),
            )

    def revoke(self, name: str) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._retire(name, "revoked")
                self._db.execute(
                    "UPDATE bots SET token_sha256 = NULL, updated_unix_ms = ? WHERE name = ?",
                    (_now_ms(), name),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def rotate(self, name: str) -> str:
        token = new_token()
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._retire(name, "rotated")
                self._db.execute(
                    "UPDATE bots SET token_sha256 = ?, updated_unix_ms = ? WHERE name = ?",
                    (hash_token(token), _now_ms(), name),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return token

    def list(self) -> list[BotRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT name, token_sha256 IS NOT NULL, created_unix_ms FROM bots ORDER BY name"
            ).fetchall()
        return [BotRecord(name=r[0], token_active=bool(r[1]), created_unix_ms=r[2]) for r in rows]

    def exists(self, name: str) -> bool:
        with self._lock:
            row = self._db.execute("SELECT 1 FROM bots WHERE name = ?", (name,)).fetchone()
        return row is not None

    def lookup(self, token: str) -> Identity:
        digest = hash_token(token)
        with self._lock:
            row = self._db.execute(
                "SELECT name FROM bots WHERE token_sha256 = ?", (digest,)
            ).fetchone()
            if row is not None:
                return Identity(Verdict.BOT, row[0])
            old = self._db.execute(
                "SELECT name, reason FROM retired_tokens WHERE token_sha256 = ?", (digest,)
            ).fetchone()
        if old is not None:
            verdict = Verdict.REVOKED if old[1] == "revoked" else Verdict.ROTATED
            return Identity(verdict, old[0])
        return Identity(Verdict.UNKNOWN)


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
