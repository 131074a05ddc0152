"""The results store: one row per finished match, written once.

SQLite (a file) is the default because it needs nothing running; PostgreSQL (by URL) is
for workers on several machines.  Both get the same SQL: rows are inserted with
``ON CONFLICT (match_id) DO NOTHING``, so a task delivered twice, or two workers racing on
the same match after a redelivery, leave exactly one row, and the loser reads the winner's
row back instead of counting the match again.

Every row also gets a position in the order of arrival (SQLite's ``rowid``, PostgreSQL's
``seq`` column), so a scheduler asks only for rows after the last one it saw: a poll costs
the same at ten results as at a million.

A store outage (PostgreSQL restarting, a locked or briefly unreachable file) is retried
with exponential backoff by ``tenacity`` for ``ARENA_DB_RETRY_S`` seconds (default 120)
before :class:`StoreUnavailable` says which store was lost and for how long; every
statement here is idempotent (inserts are "insert if absent"), so replaying one after a
lost connection is safe.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import socket
import sqlite3
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import tenacity
import zstandard

from arena import exitcodes
from arena.engine import commitment as cm
from arena.match.types import JSON
from arena.tournament.model import ResultRecord
from arena.tournament.spec import DEFAULT_DB, TournamentSpec

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS tournaments (
        name TEXT PRIMARY KEY,
        spec TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS matches (
        match_id TEXT PRIMARY KEY,
        tournament TEXT NOT NULL,
        idx INTEGER NOT NULL,
        grp TEXT NOT NULL,
        rnd INTEGER NOT NULL,
        players TEXT NOT NULL,
        bots TEXT NOT NULL,
        seed TEXT NOT NULL,
        status TEXT NOT NULL,
        scores TEXT NOT NULL,
        ranks TEXT NOT NULL,
        deals INTEGER NOT NULL,
        timeouts TEXT NOT NULL,
        illegal TEXT NOT NULL,
        strikes TEXT NOT NULL,
        seat_stats TEXT NOT NULL,
        forfeit_seat INTEGER,
        duration_s DOUBLE PRECISION NOT NULL,
        finished_at DOUBLE PRECISION NOT NULL,
        worker TEXT NOT NULL,
        replay {BLOB},
        luck TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS matches_by_tournament ON matches (tournament, idx)",
    "{SEQ}",
    # For the web pages: newest results first, in all or in one tournament, filtered by
    # player, status, forfeits, timeouts or illegal moves without reading the rows (whose
    # replays make a table scan read the whole store).
    "CREATE INDEX IF NOT EXISTS matches_for_lists ON matches "
    "(finished_at, players, status, forfeit_seat, timeouts, illegal)",
    "CREATE INDEX IF NOT EXISTS matches_for_lists_t ON matches "
    "(tournament, finished_at, players, status, forfeit_seat, timeouts, illegal)",
    "CREATE INDEX IF NOT EXISTS matches_by_group ON matches (tournament, grp)",
    """CREATE TABLE IF NOT EXISTS round_plans (
        tournament TEXT NOT NULL,
        rnd INTEGER NOT NULL,
        plan TEXT NOT NULL,
        PRIMARY KEY (tournament, rnd)
    )""",
    """CREATE TABLE IF NOT EXISTS failures (
        match_id TEXT PRIMARY KEY,
        tournament TEXT NOT NULL,
        error TEXT NOT NULL,
        worker TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL
    )""",
    # Whether a scheduler is running the tournament, as it says itself: set when a run
    # starts and ends, and a heartbeat meanwhile (a run killed outright stops beating).
    """CREATE TABLE IF NOT EXISTS runs (
        tournament TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        host TEXT NOT NULL,
        started_at DOUBLE PRECISION NOT NULL,
        heartbeat_at DOUBLE PRECISION NOT NULL,
        ended_at DOUBLE PRECISION
    )""",
    # Apart from the spec, which reports show: the secret stays here until revealed.
    """CREATE TABLE IF NOT EXISTS deal_secrets (
        tournament TEXT PRIMARY KEY,
        secret TEXT NOT NULL,
        commitment TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        revealed_at DOUBLE PRECISION
    )""",
)

_COLUMNS = (
    "match_id",
    "tournament",
    "idx",
    "grp",
    "rnd",
    "players",
    "bots",
    "seed",
    "status",
    "scores",
    "ranks",
    "deals",
    "timeouts",
    "illegal",
    "strikes",
    "seat_stats",
    "forfeit_seat",
    "duration_s",
    "finished_at",
    "worker",
    "replay",
    "luck",
)
_LIGHT_COLUMNS = tuple(c for c in _COLUMNS if c != "replay")

# Spec fields that may change between runs of one tournament without changing its matches.
_RUN_ONLY_FIELDS = ("executor", "db", "games", "sets")


#: SQLite numbers rows itself (``rowid``, never reused: rows are never deleted); PostgreSQL
#: gets a ``seq`` column from a sequence, added to older tables on first open.
_SEQ_SQLITE = "CREATE INDEX IF NOT EXISTS matches_by_arrival ON matches (tournament)"
_SEQ_PG = (
    "ALTER TABLE matches ADD COLUMN IF NOT EXISTS seq BIGSERIAL",
    "CREATE INDEX IF NOT EXISTS matches_by_arrival ON matches (tournament, seq)",
)

log = logging.getLogger(__name__)

RETRY_ENV = "ARENA_DB_RETRY_S"
DEFAULT_RETRY_S = 120.0


class StoreError(RuntimeError):
    """The store cannot be opened or refuses a write that would mix two tournaments."""


class StoreUnavailable(StoreError):
    """The store stayed unreachable for longer than the retry window."""


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """``--db``, for a command that reads the results (``$ARENA_DB_URL`` by default)."""
    parser.add_argument(
        "--db",
        default=os.environ.get("ARENA_DB_URL") or DEFAULT_DB,
        help=f"results database (default $ARENA_DB_URL, else {DEFAULT_DB})",
    )


def store_failed(prog: str, exc: StoreError) -> int:
    """Say on stderr why ``prog`` could not read the results, and give its exit status: a
    store that cannot be reached may answer later; any other fault is in what was asked."""
    print(f"{prog}: {exc}", file=sys.stderr)
    return exitcodes.UNAVAILABLE if isinstance(exc, StoreUnavailable) else exitcodes.USAGE


def patiently(
    retry: tenacity.retry_base,
    seconds: float,
    before_sleep: Callable[[tenacity.RetryCallState], None],
) -> tenacity.Retrying:
    """How a tournament waits for a service it lost (the results store, the broker): again
    and again, backing off from 0.2 s to 5 s with a little jitter so that many workers do
    not knock at once, for ``seconds`` at most; then the last error is raised."""
    return tenacity.Retrying(
        retry=retry,
        wait=tenacity.wait_exponential(multiplier=0.2, max=5.0) + tenacity.wait_random(0, 0.2),
        stop=tenacity.stop_after_delay(seconds),
        before_sleep=before_sleep,
        reraise=True,
    )


def env_seconds(name: str, default: float, *, zero: bool = False) -> float:
    """Seconds from the environment variable ``name``, ``default`` when it is unset or
    empty; ValueError naming it when it is not a number of seconds above zero (with
    ``zero``, of zero or more)."""
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not (value >= 0 if zero else value > 0):  # NaN is neither
        least = "zero or more" if zero else "a positive number of"
        raise ValueError(f"{name} must be {least} seconds, got {raw!r}")
    return value


def retry_window_s() -> float:
    """Seconds a lost store is retried: ``ARENA_DB_RETRY_S``, default 120."""
    try:
        return env_seconds(RETRY_ENV, DEFAULT_RETRY_S, zero=True)
    except ValueError as exc:
        raise StoreError(str(exc)) from None


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``: messages and logs are often shared."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


#: Seconds between a running scheduler's heartbeats in the ``runs`` table; a run not heard
#: of for RUN_STALE_S is taken to have stopped (killed outright, its machine lost).
RUN_HEARTBEAT_S = 5.0
RUN_STALE_S = 20.0


@dataclass(frozen=True)
class RunState:
    """What the last scheduler of a tournament said of its run."""

    tournament: str
    state: str  # running, stopped or finished
    host: str
    started_at: float
    heartbeat_at: float
    ended_at: float | None

    def is_running(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        return self.state == "running" and now - self.heartbeat_at < RUN_STALE_S


@dataclass(frozen=True)
class DealSecret:
    """A tournament's deal secret and its commitment; ``revealed_at`` once it ended."""

    tournament: str
    secret: str = field(repr=False)
    commitment: str
    created_at: float
    revealed_at: float | None = None

    @property
    def revealed(self) -> bool:
        return self.revealed_at is not None


@dataclass(frozen=True)
class TournamentInfo:
    name: str
    spec: JSON
    created_at: float
    matches: int


def parse_db_url(url: str) -> tuple[str, str, str | None]:
    """Split a db URL into (kind, target, schema): kind is ``sqlite`` or ``postgresql``.

    A bare path is a SQLite file.  A PostgreSQL URL may carry ``?schema=NAME`` so that
    several tournaments (or test runs) can share one database without sharing tables.
    """
    url = url.strip()
    if url.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        schema = next((v for k, v in query if k == "schema"), None)
        rest = urlencode([(k, v) for k, v in query if k != "schema"])
        target = urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment))
        return "postgresql", target, schema
    if url.startswith("sqlite://"):
        path = url[len("sqlite://") :]
        if path.startswith("/"):
            path = path[1:]
        if not path:
            raise StoreError(f"no file in SQLite URL {url!r}: write sqlite:///results.sqlite3")
        return "sqlite", path, None
    if "://" in url:
        scheme = url.split("://", 1)[0]
        raise StoreError(
            f"unsupported database URL scheme '{scheme}': use sqlite:///FILE, a file path, "
            "or postgresql://..."
        )
    return "sqlite", url, None


#: libpq settings that let a connection find out that its network is gone: TCP keepalives
#: on an idle connection, and at most 15 s for sent data to be acknowledged. Without them a
#: query sent while the database's host is cut off waits for TCP to give up (about a quarter
#: of an hour) instead of failing and being retried. A URL that sets one keeps its own.
PG_LIVENESS: dict[str, int] = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 3,
    "keepalives_count": 3,
    "tcp_user_timeout": 15000,
}


def pg_liveness(target: str) -> dict[str, Any]:
    """:data:`PG_LIVENESS`, less what the URL ``target`` sets itself."""
    given = {k for k, _ in parse_qsl(urlsplit(target).query)}
    return {k: v for k, v in PG_LIVENESS.items() if k not in given}


class ResultStore:
    """A connection to the results store, safe to share between threads of one process.

    ``create=False`` opens an existing store read-only and never creates a file, a schema
    or a table: that is how the leaderboard, the report and ``tournament status`` open it,
    so a mistyped ``--db`` is an error instead of an empty result.  ``retry_s`` bounds how
    long a lost store is retried (default ``ARENA_DB_RETRY_S``); ``connect_retry`` applies
    it to the first connection too (workers, which may start during an outage), while a
    command a person typed fails at once when the store is not there.  ``on_retry`` hears
    one line per retry (the scheduler's progress line shows it).
    """

    def __init__(
        self,
        url: str,
        *,
        create: bool = True,
        retry_s: float | None = None,
        connect_retry: bool = False,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        self.url = url
        self.kind, self._target, self._schema = parse_db_url(url)
        self.create = create
        self.retry_s = retry_window_s() if retry_s is None else retry_s
        self.on_retry = on_retry
        self._lock = threading.RLock()
        self._conn: Any = None
        self._has_luck = True
        if connect_retry:
            self._retrying(self._connect)
        else:
            self._connect()

    @property
    def display_url(self) -> str:
        return redact_url(self.url)

    # -- connection ------------------------------------------------------------------

    def _connect(self) -> None:
        if self.kind == "sqlite":
            self._connect_sqlite()
        else:
            self._connect_pg()

    def _connect_sqlite(self) -> None:
        target = self._target
        memory = target == ":memory:"
        path = Path(target).expanduser()
        if not self.create:
            if memory or not path.is_file():
                what = "is not a file" if path.exists() else "does not exist"
                raise StoreError(
                    f"no results database at {target}: the file {what} "
                    "(check --db; `arena tournament run` creates it)"
                )
            conn = sqlite3.connect(
                f"file:{quote(str(path))}?mode=ro",
                uri=True,
                timeout=60.0,
                isolation_level=None,
                check_same_thread=False,
            )
        else:
            if not memory and not path.parent.exists():
                raise StoreError(f"cannot create results file {target}: no directory {path.parent}")
            if not memory and path.is_dir():
                raise StoreError(f"cannot use {target} as the results file: it is a directory")
            try:
                conn = sqlite3.connect(
                    os.path.expanduser(target),
                    timeout=60.0,
                    isolation_level=None,
                    check_same_thread=False,
                )
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open results file {target}: {exc}") from exc
        try:
            conn.execute("PRAGMA busy_timeout = 60000")
            # Reading the schema is where a file that is not a database says so.
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            if self.create:
                if not memory:
                    _set_wal(conn)
                conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            conn.close()
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise StoreError(
                f"{target} is not a results database ({exc}): check --db"
            ) from exc
        if not self.create and "matches" not in tables:
            conn.close()
            raise StoreError(
                f"{target} is an SQLite file without tournament results (no 'matches' "
                "table): check --db"
            )
        self._conn = conn
        if self.create:
            for stmt in _SCHEMA:
                self._execute_once(
                    stmt.replace("{BLOB}", "BLOB").replace("{SEQ}", _SEQ_SQLITE), ()
                )
        columns = {r[1] for r in conn.execute("PRAGMA table_info(matches)")}
        if self.create and "luck" not in columns:
            # A store from before luck values: add the column (rows keep NULL there).
            with contextlib.suppress(sqlite3.OperationalError):  # another writer added it
                conn.execute("ALTER TABLE matches ADD COLUMN luck TEXT")
            columns.add("luck")
        self._has_luck = "luck" in columns

    def _connect_pg(self) -> None:
        import psycopg
        from psycopg import sql

        try:
            conn_pg = psycopg.connect(self._target, autocommit=True, connect_timeout=10,
                                      **pg_liveness(self._target))
        except psycopg.Error as exc:
            what = f"cannot connect to the results store {redact_url(self._target)}"
            if _is_transient(exc):
                err = _PgConnectError(
                    f"{what}: {_first_line(exc)} (is PostgreSQL running? check --db)"
                )
                err.reason = _first_line(exc).rsplit("failed: ", 1)[-1]
                raise err from exc
            raise StoreError(f"{what}: {_first_line(exc)} (check --db)") from exc
        self._conn = conn_pg
        if self._schema:
            ident = sql.Identifier(self._schema)
            if self.create:
                with contextlib.suppress(psycopg.errors.UniqueViolation):
                    conn_pg.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident))
            conn_pg.execute(sql.SQL("SET search_path TO {}").format(ident))
        if not self.create:
            row = conn_pg.execute("SELECT to_regclass('matches')").fetchone()
            if row is None or row[0] is None:
                conn_pg.close()
                self._conn = None
                where = f" in schema '{self._schema}'" if self._schema else ""
                raise StoreError(
                    f"no tournament results in {self.display_url}{where} (no 'matches' "
                    "table): check --db"
                )
            self._has_luck = self._pg_has_luck()
            return
        # Two workers starting at once may race on CREATE TABLE IF NOT EXISTS.
        for stmt in _SCHEMA:
            parts = _SEQ_PG if stmt == "{SEQ}" else (stmt.replace("{BLOB}", "BYTEA"),)
            for part in parts:
                with contextlib.suppress(
                    psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable,
                    psycopg.errors.DuplicateObject,
                ):
                    self._execute_once(part, ())
        with contextlib.suppress(psycopg.errors.UniqueViolation, psycopg.errors.DuplicateColumn):
            self._execute_once("ALTER TABLE matches ADD COLUMN IF NOT EXISTS luck TEXT", ())
        self._has_luck = True

    def _pg_has_luck(self) -> bool:
        rows = self._execute_once(
            "SELECT 1 FROM information_schema.columns WHERE table_name = 'matches' "
            "AND column_name = 'luck' AND table_schema = current_schema()", ())
        return bool(rows)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sql(self, stmt: str) -> str:
        return stmt if self.kind == "sqlite" else stmt.replace("?", "%s")

    def _execute_once(self, stmt: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        if self._conn is None:
            self._connect()
        try:
            cur = self._conn.execute(self._sql(stmt), tuple(params))
        except Exception as exc:
            # A broken connection is not reused: the next attempt opens a new one.
            if _is_transient(exc) and self.kind == "postgresql":
                self.close()
            raise
        if cur.description is None:
            return []
        return list(cur.fetchall())

    def _retrying(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn``, retrying transient store errors with backoff for ``retry_s``."""
        started = time.monotonic()

        def before_sleep(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            left = max(0.0, self.retry_s - (time.monotonic() - started))
            line = (
                f"results store {self.display_url} unreachable ({_first_line(exc)}); "
                f"retrying for {left:.0f}s more"
            )
            # The hook (a progress line) shows it; without one, the log is all there is.
            log.log(logging.INFO if self.on_retry else logging.WARNING, "%s", line)
            if self.on_retry is not None:
                with contextlib.suppress(Exception):
                    self.on_retry(line)

        retrying = patiently(tenacity.retry_if_exception(_is_transient), self.retry_s,
                             before_sleep)
        try:
            result = retrying(fn)
        except Exception as exc:
            if _is_transient(exc):
                waited = time.monotonic() - started
                raise StoreUnavailable(
                    f"lost the results store {self.display_url} for {waited:.0f}s "
                    f"({_first_line(exc)}); check that it is running, then run the same "
                    "command again: stored results are kept"
                ) from exc
            raise
        if self.on_retry is not None and time.monotonic() - started > 0.5:
            with contextlib.suppress(Exception):
                self.on_retry("")
        return result

    def _execute(self, stmt: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            rows: list[tuple[Any, ...]] = self._retrying(
                lambda: self._execute_once(stmt, params)
            )
            return rows

    def query(self, stmt: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read-only statement (``?`` placeholders) for reports and the web pages."""
        return self._execute(stmt, params)

    # -- tournaments -------------------------------------------------------------------

    def register_tournament(self, spec: TournamentSpec) -> None:
        """Record the spec; refuse a different tournament that reuses the name."""
        data = spec.to_json()
        rows = self._execute("SELECT spec FROM tournaments WHERE name = ?", (spec.name,))
        if rows:
            old = json.loads(rows[0][0])
            if _plan_view(old, spec.format.type) != _plan_view(data, spec.format.type):
                raise StoreError(
                    f"tournament '{spec.name}' is already in {self.url} with different "
                    "rules, participants, seed, format, time control or luck adjustment; give "
                    "this one another name or use another database"
                )
            if old != data:
                self._execute(
                    "UPDATE tournaments SET spec = ? WHERE name = ?", (_dump(data), spec.name)
                )
            return
        self._execute(
            "INSERT INTO tournaments (name, spec, created_at) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO NOTHING",
            (spec.name, _dump(data), time.time()),
        )

    def tournaments(self) -> list[TournamentInfo]:
        rows = self._execute(
            "SELECT t.name, t.spec, t.created_at, "
            "(SELECT COUNT(*) FROM matches m WHERE m.tournament = t.name) "
            "FROM tournaments t ORDER BY t.created_at, t.name"
        )
        return [TournamentInfo(r[0], json.loads(r[1]), float(r[2]), int(r[3])) for r in rows]

    def tournament_spec(self, name: str) -> JSON | None:
        rows = self._execute("SELECT spec FROM tournaments WHERE name = ?", (name,))
        return json.loads(rows[0][0]) if rows else None

    # -- results -----------------------------------------------------------------------

    def insert_result(
        self, rec: ResultRecord, *, with_replay: bool = True
    ) -> tuple[ResultRecord, bool]:
        """Insert if absent; return the stored row and whether this call wrote it.

        When another writer got there first, the row returned is theirs, read back
        (``with_replay=False`` skips reading its replay).
        """
        values = _values(rec)
        placeholders = ", ".join("?" for _ in _COLUMNS)
        rows = self._execute(
            f"INSERT INTO matches ({', '.join(_COLUMNS)}) VALUES ({placeholders}) "
            "ON CONFLICT (match_id) DO NOTHING RETURNING match_id",
            values,
        )
        if rows:
            self._execute("DELETE FROM failures WHERE match_id = ?", (rec.match_id,))
            return rec, True
        stored = self.get(rec.match_id, with_replay=with_replay)
        assert stored is not None
        return stored, False

    def insert_results(self, recs: Sequence[ResultRecord]) -> None:
        """Insert many rows at once, each only if absent (imports, benchmarks)."""
        placeholders = ", ".join("?" for _ in _COLUMNS)
        stmt = self._sql(
            f"INSERT INTO matches ({', '.join(_COLUMNS)}) VALUES ({placeholders}) "
            "ON CONFLICT (match_id) DO NOTHING"
        )
        rows = [_values(r) for r in recs]

        def write() -> None:
            if self._conn is None:
                self._connect()
            if self.kind == "sqlite":
                self._conn.execute("BEGIN")
                try:
                    self._conn.executemany(stmt, rows)
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            else:
                with self._conn.transaction(), self._conn.cursor() as cur:
                    cur.executemany(stmt, rows)

        with self._lock:
            self._retrying(write)
    # -- runs ------------------------------------------------------------------------------

    def mark_run(self, tournament: str, state: str) -> None:
        """A scheduler says it runs the tournament (``running``), or that its run ended
        (``stopped`` or ``finished``)."""
        now = time.time()
        host = f"{socket.gethostname()}:{os.getpid()}"
        if state == "running":
            self._execute(
                "INSERT INTO runs (tournament, state, host, started_at, heartbeat_at, ended_at) "
                "VALUES (?, ?, ?, ?, ?, NULL) ON CONFLICT (tournament) DO UPDATE SET "
                "state = excluded.state, host = excluded.host, started_at = excluded.started_at, "
                "heartbeat_at = excluded.heartbeat_at, ended_at = NULL",
                (tournament, state, host, now, now),
            )
        else:
            self._execute(
                "UPDATE runs SET state = ?, heartbeat_at = ?, ended_at = ? WHERE tournament = ?",
                (state, now, now, tournament),
            )

    def beat_run(self, tournament: str) -> None:
        self._execute("UPDATE runs SET heartbeat_at = ? WHERE tournament = ? AND state = ?",
                      (time.time(), tournament, "running"))

    def run_state(self, tournament: str) -> RunState | None:
        rows = self._execute(
            "SELECT state, host, started_at, heartbeat_at, ended_at FROM runs "
            "WHERE tournament = ?", (tournament,))
        if not rows:
            return None
        state, host, started, beat, ended = rows[0]
        return RunState(tournament, str(state), str(host), float(started), float(beat),
                        None if ended is None else float(ended))

    # -- deal secrets ----------------------------------------------------------------------

    def deal_secret(self, tournament: str) -> DealSecret:
        """The tournament's deal secret, drawn and saved the first time (insert if absent,
        so two schedulers starting at once agree on one) and the same on every resume."""
        secret = cm.new_secret()
        self._execute(
            "INSERT INTO deal_secrets (tournament, secret, commitment, created_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (tournament) DO NOTHING",
            (tournament, secret, cm.tournament_commitment(tournament, secret), time.time()),
        )
        saved = self.get_deal_secret(tournament)
        assert saved is not None
        return saved

    def get_deal_secret(self, tournament: str) -> DealSecret | None:
        rows = self._execute(
            "SELECT secret, commitment, created_at, revealed_at FROM deal_secrets "
            "WHERE tournament = ?",
            (tournament,),
        )
        if not rows:
            return None
        secret, commitment, created, revealed = rows[0]
        return DealSecret(
            tournament, secret, commitment, float(created),
            None if revealed is None else float(revealed),
        )  # fmt: skip

    def reveal_deal_secret(self, tournament: str) -> DealSecret:
        """Mark the secret revealed (the tournament is over: no match may be added)."""
        self._execute(
            "UPDATE deal_secrets SET revealed_at = ? WHERE tournament = ? AND revealed_at IS NULL",
            (time.time(), tournament),
        )
        saved = self.get_deal_secret(tournament)
        if saved is None:
            raise StoreError(f"tournament {tournament!r} has no deal secret in {self.url}")
        return saved

    # -- round plans (league) ------------------------------------------------------------

    def get_round_plan(self, tournament: str, rnd: int) -> list[JSON] | None:
        rows = self._execute(
            "SELECT plan FROM round_plans WHERE tournament = ? AND rnd = ?", (tournament, rnd)
        )
        return list(json.loads(rows[0][0])) if rows else None

    def put_round_plan(self, tournament: str, rnd: int, plan: list[JSON]) -> list[JSON]:
        """Save a round's plan unless one is saved; return the saved one."""
        self._execute(
            "INSERT INTO round_plans (tournament, rnd, plan) VALUES (?, ?, ?) "
            "ON CONFLICT (tournament, rnd) DO NOTHING",
            (tournament, rnd, _dump(plan)),
        )
        saved = self.get_round_plan(tournament, rnd)
        assert saved is not None
        return saved

    # -- failures ----------------------------------------------------------------------

    def record_failure(self, match_id: str, tournament: str, error: str, worker: str) -> None:
        """Note that playing a match raised; the scheduler reports it, a resume retries it."""
        self._execute(
            "INSERT INTO failures (match_id, tournament, error, worker, at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (match_id) DO UPDATE SET error = excluded.error, "
            "worker = excluded.worker, at = excluded.at",
            (match_id, tournament, error[:4000], worker, time.time()),
        )

    def failures(self, tournament: str) -> dict[str, tuple[str, str]]:
        """Failed matches without a result: match id -> (error, worker)."""
        rows = self._execute(
            "SELECT match_id, error, worker FROM failures WHERE tournament = ?", (tournament,)
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def clear_failures(self, tournament: str) -> None:
        self._execute("DELETE FROM failures WHERE tournament = ?", (tournament,))

    def get(self, match_id: str, *, with_replay: bool = False) -> ResultRecord | None:
        cols = _COLUMNS if with_replay else _LIGHT_COLUMNS
        rows = self._execute(
            f"SELECT {self._select(cols)} FROM matches WHERE match_id = ?", (match_id,)
        )
        return _record(cols, rows[0]) if rows else None

    def done_ids(self, tournament: str) -> set[str]:
        rows = self._execute("SELECT match_id FROM matches WHERE tournament = ?", (tournament,))
        return {r[0] for r in rows}

    def _select(self, cols: Sequence[str]) -> str:
        """The select list for ``cols``; a store written before luck values existed (and
        opened read-only, so not upgraded) reads NULL for them."""
        return ", ".join("NULL AS luck" if c == "luck" and not self._has_luck else c
                         for c in cols)

    def _seq_column(self) -> str:
        return "rowid" if self.kind == "sqlite" else "seq"

    def changes(
        self, tournament: str, after: int = 0, *, limit: int = 10_000
    ) -> tuple[list[ResultRecord], int]:
        """Rows stored after position ``after`` (oldest first) and the position to ask from next.

        The cost depends on the rows returned, not on the rows stored: this is the
        scheduler's poll.  On PostgreSQL a row can become visible after a row with a later
        position (two writers committing out of order); callers that wait for specific
        matches check the stragglers with :meth:`done_among` now and then.
        """
        col = self._seq_column()
        rows = self._execute(
            f"SELECT {col}, {self._select(_LIGHT_COLUMNS)} FROM matches "
            f"WHERE tournament = ? AND {col} > ? ORDER BY {col} LIMIT ?",
            (tournament, int(after), int(limit)),
        )
        if not rows:
            return [], after
        return [_record(_LIGHT_COLUMNS, r[1:]) for r in rows], int(rows[-1][0])

    def position(self, tournament: str) -> int:
        """The position of the newest row of ``tournament`` (0 when none)."""
        col = self._seq_column()
        rows = self._execute(f"SELECT MAX({col}) FROM matches WHERE tournament = ?", (tournament,))
        return int(rows[0][0] or 0)

    def done_among(self, match_ids: Sequence[str]) -> set[str]:
        """Which of ``match_ids`` have a stored row (asked in chunks of 500)."""
        out: set[str] = set()
        ids = list(match_ids)
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ", ".join("?" for _ in chunk)
            rows = self._execute(f"SELECT match_id FROM matches WHERE match_id IN ({marks})", chunk)
            out.update(r[0] for r in rows)
        return out

    def count(self, tournament: str | None = None) -> int:
        if tournament is None:
            rows = self._execute("SELECT COUNT(*) FROM matches")
        else:
            rows = self._execute("SELECT COUNT(*) FROM matches WHERE tournament = ?", (tournament,))
        return int(rows[0][0])

    def results(self, tournament: str, *, with_replay: bool = False) -> dict[str, ResultRecord]:
        """All results of a tournament by match id, in match order."""
        return {r.match_id: r for r in self.iter_results(tournament, with_replay=with_replay)}

    def iter_results(
        self, tournament: str | None = None, *, with_replay: bool = False
    ) -> Iterator[ResultRecord]:
        cols = _COLUMNS if with_replay else _LIGHT_COLUMNS
        if tournament is None:
            rows = self._execute(
                f"SELECT {self._select(cols)} FROM matches ORDER BY tournament, idx"
            )
        else:
            rows = self._execute(
                f"SELECT {self._select(cols)} FROM matches WHERE tournament = ? ORDER BY idx",
                (tournament,),
            )
        for row in rows:
            yield _record(cols, row)


#: Replays are stored as zstd-compressed compact JSON.  Measured on a full classic game
#: (171 kB of JSON): zlib level 6 took 7.7 ms to compress, zstd level 3 under 1 ms, for a
#: 20% larger blob (``arena bench store`` prints the figures); reading is faster too.
#: Rows written before keep their zlib blobs: the first bytes tell the two apart.
_ZSTD_LEVEL = 3
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD = threading.local()


def _zstd() -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
    pair = getattr(_ZSTD, "pair", None)
    if pair is None:  # compressors are not thread-safe: one pair per thread
        pair = (zstandard.ZstdCompressor(level=_ZSTD_LEVEL), zstandard.ZstdDecompressor())
        _ZSTD.pair = pair
    return pair


def pack_replay(replay: JSON) -> bytes:
    """Compact JSON (keys in the replay's own order), zstd-compressed."""
    text = json.dumps(replay, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return bytes(_zstd()[0].compress(text))


def unpack_replay(data: bytes | memoryview) -> JSON:
    raw = bytes(data)
    text = _zstd()[1].decompress(raw) if raw[:4] == _ZSTD_MAGIC else zlib.decompress(raw)
    replay: JSON = json.loads(text.decode("utf-8"))
    return replay


def _values(rec: ResultRecord) -> tuple[Any, ...]:
    return (
        rec.match_id,
        rec.tournament,
        rec.index,
        rec.group,
        rec.round,
        _dump(rec.players),
        _dump(rec.bots),
        rec.seed,
        rec.status,
        _dump(rec.scores),
        _dump(rec.ranks),
        rec.deals,
        _dump(rec.timeouts),
        _dump(rec.illegal),
        _dump(rec.strikes),
        _dump(rec.seat_stats),
        rec.forfeit_seat,
        rec.duration_s,
        rec.finished_at,
        rec.worker,
        None if rec.replay is None else pack_replay(rec.replay),
        None if rec.luck is None else _dump(rec.luck),
    )


def _record(cols: Sequence[str], row: Sequence[Any]) -> ResultRecord:
    d = dict(zip(cols, row, strict=True))
    replay = d.get("replay")
    return ResultRecord(
        match_id=d["match_id"],
        tournament=d["tournament"],
        index=int(d["idx"]),
        group=d["grp"],
        round=int(d["rnd"]),
        players=json.loads(d["players"]),
        bots=json.loads(d["bots"]),
        seed=d["seed"],
        status=d["status"],
        scores=json.loads(d["scores"]),
        ranks=json.loads(d["ranks"]),
        deals=int(d["deals"]),
        seat_stats=json.loads(d["seat_stats"]),
        forfeit_seat=d["forfeit_seat"],
        duration_s=float(d["duration_s"]),
        finished_at=float(d["finished_at"]),
        worker=d["worker"],
        replay=unpack_replay(replay) if replay else None,
        luck=json.loads(d["luck"]) if d.get("luck") else None,
    )


def _plan_view(data: JSON, ftype: str) -> JSON:
    view = {k: v for k, v in data.items() if k not in _RUN_ONLY_FIELDS}
    if ftype == "league":
        view.pop("participants", None)
    if ftype in ("swiss", "league"):
        # Later rounds never change earlier ones: more rounds extend the tournament.
        view["format"] = {k: v for k, v in view.get("format", {}).items() if k != "rounds"}
    return view


class _PgConnectError(StoreUnavailable):
    """PostgreSQL refused or did not answer a connection (may be transient)."""

    reason = ""


#: Connection failures that no waiting can fix: a typo in the URL, a wrong password.
_PERMANENT_HINTS = (
    "does not exist",
    "authentication failed",
    "no password supplied",
    "invalid dsn",
    "invalid connection option",
    "invalid integer value",
    "could not translate host name",
    "name or service not known",
)


def _first_line(exc: BaseException | None) -> str:
    if isinstance(exc, _PgConnectError) and exc.reason:
        return exc.reason  # the retry line names the store already
    text = str(exc).strip() if exc is not None else ""
    return text.splitlines()[0] if text else type(exc).__name__


def _is_transient(exc: BaseException) -> bool:
    """A lost or refused connection, a locked file: worth waiting for."""
    text = str(exc).lower()
    if isinstance(exc, sqlite3.OperationalError):
        return "locked" in text or "disk i/o error" in text
    if isinstance(exc, _PgConnectError):
        return not any(h in text for h in _PERMANENT_HINTS)
    try:
        import psycopg
    except ImportError:  # pragma: no cover
        return False
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return not any(h in text for h in _PERMANENT_HINTS)
    return False


_STORES: dict[tuple[int, str], ResultStore] = {}
_STORES_LOCK = threading.Lock()


def shared_store(url: str) -> ResultStore:
    """One store per (process, URL): a forked worker child must not reuse its parent's socket.

    Workers wait for a store that is down when they start, as they do for one that is lost
    later: a worker has nobody to tell but its log.
    """
    key = (os.getpid(), url)
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = ResultStore(url, connect_retry=True)
            _STORES[key] = store
        return store


def _set_wal(conn: sqlite3.Connection, attempts: int = 50) -> None:
    """Switch to WAL, retrying: the busy timeout does not cover this pragma when another
    connection is creating the same new file at that moment ("database is locked")."""
    for i in range(attempts):
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or i == attempts - 1:
                raise
            time.sleep(0.1)
