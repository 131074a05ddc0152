"""Hosted bots in the shared results store: versions by hash, their status, seat runs, logs.

The store every worker already writes its results to (SQLite on one machine, PostgreSQL
for many) also keeps the hosted bots, so a worker on any host fetches a version by its
hash, never through a shared file system:

* ``hosted_blobs``: each version's canonical tar, zstd-compressed, by SHA-256 (content
  addressed: the same files submitted twice are stored once);
* ``hosted_versions``: each bot's versions, with runtime, entry, size, time, status
  (``checking``, ``passed``, ``failed``, ``suspended``) and why;
* ``seat_runs``: each hosted seat of each match: its status, detail and the bot's log
  (compressed). The log is read only through :meth:`HostedStore.logs`, which the gateway
  serves to the bot's own token alone.

A version that crashes ``SUSPEND_AFTER`` matches in a row is suspended: it takes part in
no new tournament or league round, and its author sees why.
"""

from __future__ import annotations

import os
import re
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import zstandard

from arena.tournament.store import ResultStore, StoreError

from . import status as st
from .bundle import Bundle
from .status import SeatRun

CHECKING = "checking"
PASSED = "passed"
FAILED = "failed"
SUSPENDED = "suspended"
VERSION_STATUSES = (CHECKING, PASSED, FAILED, SUSPENDED)
SUSPEND_ENV = "ARENA_HOSTED_SUSPEND_AFTER"
DEFAULT_SUSPEND_AFTER = 5
HASH_RE = re.compile(r"^[0-9a-f]{8,64}$")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS hosted_blobs (
        hash TEXT PRIMARY KEY,
        data {BLOB} NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS hosted_versions (
        bot TEXT NOT NULL,
        hash TEXT NOT NULL,
        runtime TEXT NOT NULL,
        entry TEXT NOT NULL,
        size INTEGER NOT NULL,
        files INTEGER NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        status TEXT NOT NULL,
        reason TEXT NOT NULL,
        check_match TEXT,
        updated_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (bot, hash)
    )""",
    "CREATE INDEX IF NOT EXISTS hosted_versions_by_time ON hosted_versions (bot, created_at)",
    """CREATE TABLE IF NOT EXISTS seat_runs (
        match_id TEXT NOT NULL,
        seat INTEGER NOT NULL,
        bot TEXT NOT NULL,
        version TEXT NOT NULL,
        status TEXT NOT NULL,
        detail TEXT NOT NULL,
        exit_code INTEGER,
        signal INTEGER,
        sandbox_ms DOUBLE PRECISION,
        connect_ms DOUBLE PRECISION,
        finished_at DOUBLE PRECISION NOT NULL,
        log {BLOB},
        PRIMARY KEY (match_id, seat)
    )""",
    "CREATE INDEX IF NOT EXISTS seat_runs_by_version ON seat_runs (bot, version, finished_at)",
)

_ZSTD = threading.local()


def _pack(data: bytes) -> bytes:
    comp = getattr(_ZSTD, "c", None)
    if comp is None:
        comp = _ZSTD.c = zstandard.ZstdCompressor(level=3)
    return bytes(comp.compress(data))


def _unpack(data: bytes | memoryview | None) -> bytes:
    if not data:
        return b""
    dec = getattr(_ZSTD, "d", None)
    if dec is None:
        dec = _ZSTD.d = zstandard.ZstdDecompressor()
    return bytes(dec.decompress(bytes(data)))


def suspend_after() -> int:
    raw = os.environ.get(SUSPEND_ENV, "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_SUSPEND_AFTER


@dataclass(frozen=True)
class Version:
    bot: str
    hash: str
    runtime: str
    entry: str
    size: int
    files: int
    created_at: float
    status: str
    reason: str
    check_match: str | None
    updated_at: float

    @property
    def short(self) -> str:
        return self.hash[:12]

    @property
    def ref(self) -> str:
        return f"hosted:{self.bot}@{self.hash}"

    @property
    def participant(self) -> str:
        """The name this version is rated under: a new version is a new entrant."""
        return f"{self.bot}@{self.short}"

    def to_json(self) -> dict[str, Any]:
        return {
            "bot": self.bot, "hash": self.hash, "runtime": self.runtime, "entry": self.entry,
            "size": self.size, "files": self.files, "created_at": self.created_at,
            "status": self.status, "reason": self.reason, "check_match": self.check_match,
            "updated_at": self.updated_at,
        }


_VERSION_COLS = ("bot, hash, runtime, entry, size, files, created_at, status, reason, "
                 "check_match, updated_at")
_RUN_COLS = ("match_id", "seat", "bot", "version", "status", "detail", "exit_code", "signal",
             "sandbox_ms", "connect_ms", "finished_at")


def parse_ref(ref: str) -> tuple[str, str | None]:
    """``hosted:NAME`` or ``hosted:NAME@HASH`` (a hash or a prefix of 8 or more hex digits)."""
    body = ref.removeprefix("hosted:")
    name, _, digest = body.partition("@")
    return name, (digest.lower() or None) if "@" in body else None


class HostedStore:
    """The hosted tables of a results store (created on first use when writable)."""

    #: Stores whose tables exist already (a worker makes a HostedStore per match).
    _known: ClassVar[weakref.WeakSet[ResultStore]] = weakref.WeakSet()

    def __init__(self, store: ResultStore) -> None:
        self.store = store
        self._ready = store in HostedStore._known

    def _ensure(self) -> None:
        if self._ready:
            return
        if self.store.create:
            blob = "BLOB" if self.store.kind == "sqlite" else "BYTEA"
            for stmt in _SCHEMA:
                try:
                    self.store._execute(stmt.replace("{BLOB}", blob))
                except Exception as exc:  # two workers racing on CREATE in PostgreSQL
                    if "already exists" not in str(exc):
                        raise
        self._ready = True
        HostedStore._known.add(self.store)

    def _exec(self, stmt: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._ensure()
        return self.store._execute(stmt, params)

    def has_tables(self) -> bool:
        """Whether this store holds hosted bots at all (a read-only store may not)."""
        try:
            self.store._execute("SELECT 1 FROM hosted_versions LIMIT 1")
        except Exception:
            return False
        return True

    # -- versions ---------------------------------------------------------------------

    def add_version(self, bot: str, bundle: Bundle) -> tuple[Version, bool]:
        """Store a submission; the version and whether it is new (the same files sent
        again are the same version, whatever happened to it)."""
        now = time.time()
        blob = _pack(bundle.data)
        self._exec("INSERT INTO hosted_blobs (hash, data) VALUES (?, ?) "
                   "ON CONFLICT (hash) DO NOTHING", (bundle.sha256, blob))
        rows = self._exec(
            f"INSERT INTO hosted_versions ({_VERSION_COLS}) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (bot, hash) DO NOTHING "
            "RETURNING hash",
            (bot, bundle.sha256, bundle.manifest.runtime, bundle.manifest.entry, bundle.size,
             bundle.files, now, CHECKING, "", None, now),
        )
        version = self.version(bot, bundle.sha256)
        assert version is not None
        return version, bool(rows)

    def versions(self, bot: str | None = None) -> list[Version]:
        """A bot's versions (every bot's when None), newest first."""
        where, params = ("WHERE bot = ?", (bot,)) if bot is not None else ("", ())
        rows = self._exec(
            f"SELECT {_VERSION_COLS} FROM hosted_versions {where} "
            "ORDER BY created_at DESC, hash", params)
        return [Version(*r) for r in rows]

    def version(self, bot: str, digest: str) -> Version | None:
        """A version by its hash or a unique prefix of it (8 hex digits or more)."""
        digest = digest.lower()
        if not HASH_RE.match(digest):
            return None
        rows = self._exec(
            f"SELECT {_VERSION_COLS} FROM hosted_versions WHERE bot = ? AND hash LIKE ? "
            "ORDER BY created_at DESC LIMIT 2", (bot, digest + "%"))
        if len(rows) != 1:
            return None
        return Version(*rows[0])

    def latest_passing(self, bot: str) -> Version | None:
        rows = self._exec(
            f"SELECT {_VERSION_COLS} FROM hosted_versions WHERE bot = ? AND status = ? "
            "ORDER BY created_at DESC LIMIT 1", (bot, PASSED))
        return Version(*rows[0]) if rows else None

    def resolve(self, ref: str, *, playable: bool = True) -> Version:
        """The version a ``hosted:NAME[@HASH]`` reference names; StoreError says why not.

        Without a hash: the latest version that passed its check and is not suspended.
        With ``playable``, a named version must have passed too."""
        name, digest = parse_ref(ref)
        if digest is None:
            found = self.latest_passing(name)
            if found is None:
                versions = self.versions(name)
                if not versions:
                    raise StoreError(f"{ref}: no hosted bot {name!r} (submit one: "
                                     f"arena bot submit {name} PATH)")
                latest = versions[0]
                raise StoreError(f"{ref}: no version of {name} has passed its check (latest "
                                 f"{latest.short}: {latest.status}"
                                 f"{': ' + latest.reason if latest.reason else ''})")
            return found
        found = self.version(name, digest)
        if found is None:
            raise StoreError(f"{ref}: no version {digest} of hosted bot {name!r}")
        if playable and found.status != PASSED:
            raise StoreError(f"{ref}: version {found.short} is {found.status}"
                             f"{': ' + found.reason if found.reason else ''}")
        return found

    def set_status(self, bot: str, digest: str, status: str, reason: str = "",
                   check_match: str | None = None) -> None:
        if check_match is None:
            self._exec("UPDATE hosted_versions SET status = ?, reason = ?, updated_at = ? "
                       "WHERE bot = ? AND hash = ?",
                       (status, reason[:2000], time.time(), bot, digest))
        else:
            self._exec("UPDATE hosted_versions SET status = ?, reason = ?, updated_at = ?, "
                       "check_match = ? WHERE bot = ? AND hash = ?",
                       (status, reason[:2000], time.time(), check_match, bot, digest))

    def blob(self, digest: str) -> bytes:
        rows = self._exec("SELECT data FROM hosted_blobs WHERE hash = ?", (digest,))
        if not rows:
            raise StoreError(f"version {digest[:12]} is not in the store")
        return _unpack(rows[0][0])

    # -- seat runs ----------------------------------------------------------------------

    def record_runs(self, match_id: str, runs: Sequence[SeatRun],
                    finished_at: float | None = None) -> list[str]:
        """Keep a match's hosted seats (once: a match stored twice keeps the first), then
        suspend every version that has now crashed ``SUSPEND_AFTER`` matches in a row;
        the messages of the suspensions made."""
        at = time.time() if finished_at is None else finished_at
        placeholders = ", ".join("?" for _ in range(len(_RUN_COLS) + 1))
        for run in runs:
            self._exec(
                f"INSERT INTO seat_runs ({', '.join(_RUN_COLS)}, log) VALUES ({placeholders}) "
                "ON CONFLICT (match_id, seat) DO NOTHING",
                (match_id, run.seat, run.bot, run.version, run.status, run.detail[:2000],
                 run.exit_code, run.signal, run.sandbox_ms, run.connect_ms, at,
                 _pack(run.log)),
            )
        notes = []
        for run in runs:
            if run.status in st.CRASHES:
                note = self._maybe_suspend(run.bot, run.version)
                if note:
                    notes.append(note)
        return notes

    def _maybe_suspend(self, bot: str, digest: str) -> str | None:
        n = suspend_after()
        rows = self._exec(
            "SELECT status, detail, match_id FROM seat_runs WHERE bot = ? AND version = ? "
            "ORDER BY finished_at DESC LIMIT ?", (bot, digest, n))
        if len(rows) < n or any(r[0] not in st.CRASHES for r in rows):
            return None
        version = self.version(bot, digest)
        if version is None or version.status != PASSED:
            return None
        last = rows[0]
        reason = (f"suspended: its last {n} matches all ended in a crash (last: "
                  f"{st.LABELS.get(last[0], last[0])}: {last[1]}, in match {last[2]})")
        self.set_status(bot, digest, SUSPENDED, reason)
        return f"hosted bot {bot} version {digest[:12]} {reason}"

    def runs(self, *, bot: str | None = None, version: str | None = None,
             match_id: str | None = None, limit: int = 50) -> list[SeatRun]:
        """Seat runs, newest first, without their logs."""
        clauses, params = [], []
        for col, value in (("bot", bot), ("version", version), ("match_id", match_id)):
            if value is not None:
                clauses.append(f"{col} = ?")
                params.append(value)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._exec(
            f"SELECT {', '.join(_RUN_COLS)} FROM seat_runs {where} "
            f"ORDER BY finished_at DESC, match_id, seat LIMIT ?", (*params, int(limit)))
        return [self._run(r) for r in rows]

    def runs_of_matches(self, match_ids: Sequence[str]) -> dict[tuple[str, int], SeatRun]:
        out: dict[tuple[str, int], SeatRun] = {}
        for i in range(0, len(match_ids), 500):
            chunk = list(match_ids[i:i + 500])
            marks = ", ".join("?" for _ in chunk)
            rows = self._exec(f"SELECT {', '.join(_RUN_COLS)} FROM seat_runs "
                              f"WHERE match_id IN ({marks})", chunk)
            for r in rows:
                run = self._run(r)
                out[(r[0], run.seat)] = run
        return out

    def logs(self, bot: str, *, match_id: str | None = None,
             limit: int = 10) -> list[tuple[SeatRun, str]]:
        """The bot's own logs, newest first: only ever for the bot named (the caller has
        checked that the asker is that bot)."""
        clauses, params = ["bot = ?"], [bot]
        if match_id is not None:
            clauses.append("match_id LIKE ?")
            params.append(match_id + "%")
        rows = self._exec(
            f"SELECT {', '.join(_RUN_COLS)}, log FROM seat_runs WHERE {' AND '.join(clauses)} "
            "ORDER BY finished_at DESC, match_id, seat LIMIT ?", (*params, int(limit)))
        out = []
        for r in rows:
            run = self._run(r[:-1])
            out.append((run, _unpack(r[-1]).decode("utf-8", "replace")))
        return out

    @staticmethod
    def _run(r: Sequence[Any]) -> SeatRun:
        return SeatRun(
            match_id=r[0], seat=int(r[1]), bot=r[2], version=r[3], status=r[4], detail=r[5],
            exit_code=r[6], signal=r[7], sandbox_ms=r[8], connect_ms=r[9],
        )
