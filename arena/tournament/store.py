"""The results store: one row per finished match, written once.

SQLite (a file) is the default because it needs nothing running; PostgreSQL (by URL) is
for workers on several machines.  Both get the same SQL: rows are inserted with
``ON CONFLICT (match_id) DO NOTHING``, so a task delivered twice, or two workers racing on
the same match after a redelivery, leave exactly one row, and the loser reads the winner's
row back instead of counting the match again.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from arena.referee.types import JSON
from arena.tournament.model import ResultRecord
from arena.tournament.spec import TournamentSpec

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
        replay {BLOB}
    )""",
    "CREATE INDEX IF NOT EXISTS matches_by_tournament ON matches (tournament, idx)",
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
)
_LIGHT_COLUMNS = tuple(c for c in _COLUMNS if c != "replay")

# Spec fields that may change between runs of one tournament without changing its matches.
_RUN_ONLY_FIELDS = ("executor", "db", "games", "sets")


class StoreError(RuntimeError):
    """The store cannot be opened or refuses a write that would mix two tournaments."""


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


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


class ResultStore:
    """A connection to the results store, safe to share between threads of one process."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.kind, self._target, self._schema = parse_db_url(url)
        self._lock = threading.RLock()
        self._conn: Any = None
        self._connect()

    # -- connection ------------------------------------------------------------------

    def _connect(self) -> None:
        if self.kind == "sqlite":
            if self._target != ":memory:":
                parent = Path(self._target).expanduser().parent
                if not parent.exists():
                    raise StoreError(
                        f"cannot create results file {self._target}: no directory {parent}"
                    )
            conn = sqlite3.connect(
                os.path.expanduser(self._target),
                timeout=60.0,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute("PRAGMA busy_timeout = 60000")
            if self._target != ":memory:":
                _set_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            self._conn = conn
            for stmt in _SCHEMA:
                self._execute(stmt.replace("{BLOB}", "BLOB"))
        else:
            import psycopg

            try:
                conn_pg = psycopg.connect(self._target, autocommit=True)
            except psycopg.Error as exc:
                raise StoreError(f"cannot connect to {self._target}: {exc}") from exc
            self._conn = conn_pg
            if self._schema:
                from psycopg import sql

                ident = sql.Identifier(self._schema)
                conn_pg.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident))
                conn_pg.execute(sql.SQL("SET search_path TO {}").format(ident))
            # Two workers starting at once may race on CREATE TABLE IF NOT EXISTS.
            for stmt in _SCHEMA:
                with contextlib.suppress(psycopg.errors.UniqueViolation):
                    self._execute(stmt.replace("{BLOB}", "BYTEA"))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sql(self, stmt: str) -> str:
        return stmt if self.kind == "sqlite" else stmt.replace("?", "%s")

    def _execute(self, stmt: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            if self._conn is None:
                self._connect()
            try:
                cur = self._conn.execute(self._sql(stmt), tuple(params))
            except Exception as exc:
                if self.kind == "postgresql" and _is_connection_lost(exc):
                    self._conn = None
                    self._connect()
                    cur = self._conn.execute(self._sql(stmt), tuple(params))
                else:
                    raise
            if cur.description is None:
                return []
            return list(cur.fetchall())

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
                    "rules, participants, seed, format or time control; give this one another "
                    "name or use another database"
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
        values = (
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
        )
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
            f"SELECT {', '.join(cols)} FROM matches WHERE match_id = ?", (match_id,)
        )
        return _record(cols, rows[0]) if rows else None

    def done_ids(self, tournament: str) -> set[str]:
        rows = self._execute("SELECT match_id FROM matches WHERE tournament = ?", (tournament,))
        return {r[0] for r in rows}

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
            rows = self._execute(f"SELECT {', '.join(cols)} FROM matches ORDER BY tournament, idx")
        else:
            rows = self._execute(
                f"SELECT {', '.join(cols)} FROM matches WHERE tournament = ? ORDER BY idx",
                (tournament,),
            )
        for row in rows:
            yield _record(cols, row)


def pack_replay(replay: JSON) -> bytes:
    """Replays are repetitive JSON (tens of kB a game): zlib makes them several times smaller."""
    return zlib.compress(_dump(replay).encode("utf-8"), 6)


def unpack_replay(data: bytes | memoryview) -> JSON:
    replay: JSON = json.loads(zlib.decompress(bytes(data)).decode("utf-8"))
    return replay


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
    )


def _plan_view(data: JSON, ftype: str) -> JSON:
    view = {k: v for k, v in data.items() if k not in _RUN_ONLY_FIELDS}
    if ftype == "league":
        view.pop("participants", None)
    if ftype in ("swiss", "league"):
        # Later rounds never change earlier ones: more rounds extend the tournament.
        view["format"] = {k: v for k, v in view.get("format", {}).items() if k != "rounds"}
    return view


def _is_connection_lost(exc: Exception) -> bool:
    try:
        import psycopg
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)


_STORES: dict[tuple[int, str], ResultStore] = {}
_STORES_LOCK = threading.Lock()


def shared_store(url: str) -> ResultStore:
    """One store per (process, URL): a forked worker child must not reuse its parent's socket."""
    key = (os.getpid(), url)
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = ResultStore(url)
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
