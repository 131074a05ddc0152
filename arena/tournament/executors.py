"""Executors: where the matches of a tournament are played.

* ``inline`` plays one match after another in this process (debugging, tiny runs);
* ``local`` is a process pool on this machine, the default;
* ``celery`` sends each match to Celery workers over a broker (Redis), for many machines.

All three end the same way: one row per match in the results store, written with
insert-if-absent.  A match's outcome depends only on its ``ScheduledMatch`` (seeded deals,
deterministic bots), never on which executor or worker played it, so switching executors
or worker counts leaves the results unchanged.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import multiprocessing
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from arena.referee.types import JSON, MatchResult
from arena.tournament.model import ResultRecord, ScheduledMatch
from arena.tournament.store import ResultStore, parse_db_url, shared_store

log = logging.getLogger(__name__)

OnResult = Callable[[ResultRecord], None]

ROUTING_ENV = "ARENA_ROUTING_URL"


class ExecutorError(RuntimeError):
    """The executor cannot run matches (no broker, bad configuration...)."""


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def routing_url_from_env() -> str | None:
    """Redis URL for reaching remote bots: ``ARENA_ROUTING_URL``, else a Redis broker URL."""
    url = os.environ.get(ROUTING_ENV)
    if url:
        return url
    broker = os.environ.get("ARENA_BROKER_URL", "")
    if broker.startswith(("redis://", "rediss://", "unix://")):
        return broker
    return None


def play_match_result(
    match: ScheduledMatch,
    routing_url: str | None = None,
    *,
    db_url: str | None = None,
    executor: str = "inline",
) -> MatchResult:
    """Play a match with the referee; ``remote:NAME`` seats go through Redis when configured.

    The match's public events are published live (through Redis when ``routing_url`` is
    set, else into the spool directory of ``db_url``) for ``arena web`` to show.
    """
    from arena.observability.live import publishing
    from arena.referee.runner import run_match_sync

    resolver = None
    if routing_url and any(b.startswith("remote:") for b in match.spec.bots):
        from arena.tournament.routing import routing_resolver

        resolver = routing_resolver(routing_url)
    with publishing(match, executor=executor, worker=worker_identity(),
                    redis_url=routing_url, db_url=db_url) as on_event:
        return run_match_sync(match.spec, resolver, on_event, labels=match.players)


def play_record(
    match: ScheduledMatch,
    routing_url: str | None = None,
    *,
    db_url: str | None = None,
    executor: str = "inline",
) -> ResultRecord:
    """Play and wrap the outcome as a store row (not yet stored)."""
    result = play_match_result(match, routing_url, db_url=db_url, executor=executor)
    return ResultRecord.from_result(
        match, result, finished_at=time.time(), worker=worker_identity()
    )


def storable(rec: ResultRecord) -> bool:
    """Aborted matches are not results: leaving no row makes a resume play them again."""
    return rec.status != "aborted"


def play_and_store(
    match_json: str | JSON, db_url: str, routing_url: str | None = None, executor: str = "celery"
) -> JSON:
    """Play a match unless the store already has it, then write it once.

    This is the body of the Celery task, kept here so it can be called and tested without
    Celery.  Returns a small summary with ``played`` (this call played the match) and
    ``written`` (this call's row is the stored one).
    """
    match = ScheduledMatch.loads(match_json)
    store = shared_store(db_url)
    existing = store.get(match.match_id)
    if existing is not None:
        return {**existing.summary_json(), "played": False, "written": False}
    rec = play_record(match, routing_url, db_url=db_url, executor=executor)
    if not storable(rec):
        return {**rec.summary_json(), "played": True, "written": False}
    stored, wrote = store.insert_result(rec, with_replay=False)
    return {**stored.summary_json(), "played": True, "written": wrote}


def _play_in_subprocess(match_json: str, db_url: str, routing_url: str | None) -> JSON:
    """Entry point of the local pool (top-level, so a spawned process can import it)."""
    return play_and_store(match_json, db_url, routing_url, "local")


def absolute_db_url(url: str) -> str:
    """Make a relative SQLite path absolute: workers do not share the scheduler's directory."""
    kind, target, _ = parse_db_url(url)
    if kind == "sqlite" and target != ":memory:":
        return f"sqlite:///{Path(target).expanduser().resolve()}"
    return url


class Executor:
    """Plays a batch of matches and stores each result; ``on_result`` sees every stored row."""

    name = "executor"

    def run(
        self, matches: Sequence[ScheduledMatch], store: ResultStore, on_result: OnResult
    ) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release processes or connections; safe to call twice."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InlineExecutor(Executor):
    """One match at a time in this process; the simplest thing that can be debugged."""

    name = "inline"

    def __init__(self, routing_url: str | None = None) -> None:
        self.routing_url = routing_url

    def run(
        self, matches: Sequence[ScheduledMatch], store: ResultStore, on_result: OnResult
    ) -> None:
        for m in matches:
            if store.get(m.match_id) is not None:
                continue
            try:
                rec = play_record(m, self.routing_url, db_url=store.url)
            except Exception as exc:
                raise ExecutorError(f"match {m.index} ({m.match_id}) failed: {exc}") from exc
            if storable(rec):
                stored, _ = store.insert_result(rec, with_replay=False)
                on_result(stored)


class LocalExecutor(Executor):
    """A pool of spawned processes on this machine, each playing and storing its matches.

    Children write their own results, exactly as Celery workers do: the replay (tens of
    kB) never travels through the parent, which would otherwise become the bottleneck
    of the pool.  Spawned (not forked) children start clean: no inherited database
    connection, event loop or Redis socket, and the same behaviour on every platform.
    Only a bounded number of matches is in flight, so a tournament of a million matches
    does not queue a million futures.
    """

    name = "local"

    def __init__(self, workers: int | None = None, routing_url: str | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.routing_url = routing_url
        self._pool: cf.ProcessPoolExecutor | None = None

    def _get_pool(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("spawn")
            )
        return self._pool

    def run(
        self, matches: Sequence[ScheduledMatch], store: ResultStore, on_result: OnResult
    ) -> None:
        done = store.done_ids(matches[0].tournament) if matches else set()
        todo = [m for m in matches if m.match_id not in done]
        if not todo:
            return
        if store.kind == "sqlite" and parse_db_url(store.url)[1] == ":memory:":
            raise ExecutorError(
                "the local pool cannot share an in-memory database: use a file or the "
                "inline executor"
            )
        db_url = absolute_db_url(store.url)
        pool = self._get_pool()
        in_flight: dict[cf.Future[JSON], ScheduledMatch] = {}
        limit = self.workers * 4
        pos = 0
        try:
            while pos < len(todo) or in_flight:
                while pos < len(todo) and len(in_flight) < limit:
                    m = todo[pos]
                    pos += 1
                    fut = pool.submit(_play_in_subprocess, m.dumps(), db_url, self.routing_url)
                    in_flight[fut] = m
                finished, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
                for fut in sorted(finished, key=lambda f: in_flight[f].index):
                    m = in_flight.pop(fut)
                    try:
                        fut.result()
                    except Exception as exc:
                        raise ExecutorError(
                            f"match {m.index} ({m.match_id}) failed: {exc}"
                        ) from exc
                    stored = store.get(m.match_id)
                    if stored is not None:  # None: the match was aborted, not a result
                        on_result(stored)
        except BaseException:
            for fut in in_flight:
                fut.cancel()
            self.close(wait=False)
            raise

    def close(self, wait: bool = True) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=True)
            self._pool = None


class CeleryExecutor(Executor):
    """Sends each match as a ``workers.tasks.play_match`` task; watches the store for results.

    Completion is read from the results store, not from Celery's result backend: a task
    re-delivered after a worker died still ends as one row, and the scheduler need not
    know which delivery won.  Task ids are fresh per send, so a match re-sent by a resumed
    tournament is never mistaken for a revoked task of the stopped run.  At most
    ``window`` matches are queued at a time and more are sent as results arrive, so a
    huge tournament neither fills the broker's memory nor leaves much to revoke on a stop.
    """

    name = "celery"
    TASK = "workers.tasks.play_match"

    def __init__(
        self,
        broker: str | None = None,
        queue: str = "arena",
        poll_s: float = 0.25,
        ping_timeout: float = 2.0,
        window: int = 2000,
    ) -> None:
        from workers.app import make_app

        self.app = make_app(broker=broker)
        self.queue = queue
        self.window = max(1, window)
        self.poll_s = poll_s
        self.ping_timeout = ping_timeout
        self._sent: dict[str, str] = {}  # match id -> task id, for matches without a result
        self._checked = False

    def workers_alive(self, *, limit: int | None = None) -> int:
        """Workers answering a ping; with ``limit`` it returns as soon as that many did."""
        try:
            replies = self.app.control.ping(timeout=self.ping_timeout, limit=limit)
        except Exception as exc:
            log.warning("cannot reach the Celery broker: %s", exc)
            return 0
        return len(replies or [])

    def run(
        self, matches: Sequence[ScheduledMatch], store: ResultStore, on_result: OnResult
    ) -> None:
        if not matches:
            return
        tournament = matches[0].tournament
        done = store.done_ids(tournament)
        todo = [m for m in matches if m.match_id not in done]
        if not todo:
            return
        db_url = absolute_db_url(store.url)
        if not self._checked:
            self._checked = True
            if self.workers_alive(limit=1) == 0:
                log.warning(
                    "no Celery worker answered on %s; matches wait in queue '%s' until one starts "
                    "(arena worker --broker %s)",
                    self.app.conf.broker_url,
                    self.queue,
                    self.app.conf.broker_url,
                )
        self._sent = {}
        store.clear_failures(tournament)
        by_id = {m.match_id: m for m in todo}
        waiting: set[str] = set()  # sent, no result yet
        pos = 0
        try:
            while pos < len(todo) or waiting:
                while pos < len(todo) and len(waiting) < self.window:
                    m = todo[pos]
                    pos += 1
                    task_id = f"{m.match_id}-{uuid.uuid4().hex[:12]}"
                    self.app.send_task(
                        self.TASK, args=[m.dumps(), db_url], queue=self.queue, task_id=task_id
                    )
                    self._sent[m.match_id] = task_id
                    waiting.add(m.match_id)
                time.sleep(self.poll_s)
                now_done = store.done_ids(tournament) & waiting
                waiting -= now_done
                for mid in sorted(now_done, key=lambda i: by_id[i].index):
                    self._sent.pop(mid, None)
                    rec = store.get(mid)
                    if rec is not None:
                        on_result(rec)
                failed = {k: v for k, v in store.failures(tournament).items() if k in waiting}
                if failed:
                    mid, (error, worker) = min(failed.items(), key=lambda kv: by_id[kv[0]].index)
                    raise ExecutorError(
                        f"match {by_id[mid].index} ({mid}) failed on worker {worker}: {error}"
                    )
        except BaseException:
            self.revoke_sent()
            raise

    def revoke_sent(self) -> None:
        """Ask workers to drop queued tasks of this run (best effort: a stop, not a purge)."""
        if not self._sent:
            return
        try:
            self.app.control.revoke(list(self._sent.values()))
        except Exception as exc:  # the broker may be the reason we are stopping
            log.warning("could not revoke queued tasks: %s", exc)
        self._sent = {}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.app.close()


def make_executor(
    kind: str,
    *,
    workers: int | None = None,
    broker: str | None = None,
    queue: str = "arena",
    routing_url: str | None = None,
) -> Executor:
    """Build an executor by name (``inline``, ``local`` or ``celery``)."""
    if kind == "inline":
        return InlineExecutor(routing_url)
    if kind == "local":
        return LocalExecutor(workers, routing_url)
    if kind == "celery":
        return CeleryExecutor(broker=broker, queue=queue)
    raise ExecutorError(f"unknown executor '{kind}': use inline, local or celery")
