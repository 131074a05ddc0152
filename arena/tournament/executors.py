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
import dataclasses
import logging
import multiprocessing
import os
import signal
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import tenacity

from arena.match.types import JSON, MatchResult
from arena.tournament.broker import check_broker_url, make_app, settings
from arena.tournament.model import ResultRecord, ScheduledMatch
from arena.tournament.store import (
    ResultStore,
    StoreError,
    env_seconds,
    parse_db_url,
    patiently,
    redact_url,
    shared_store,
)

log = logging.getLogger(__name__)

OnResult = Callable[[ResultRecord], None]

ROUTING_ENV = "ARENA_ROUTING_URL"


class ExecutorError(RuntimeError):
    """A match failed, or the executor cannot run matches."""


class ExecutorConfigError(ExecutorError):
    """The executor is configured wrongly (bad broker URL...): a mistake to fix, exit 2."""


class ServiceUnavailable(ExecutorError):
    """A service the executor needs (the broker) cannot be reached: exit 3."""


StatusHook = Callable[[str], None]


#: Set in a Celery worker to its node name (``arena worker --hostname NAME``), which the
#: results and the web pages then show instead of host and process id.
WORKER_NAME_ENV = "ARENA_WORKER_NAME"


def worker_identity() -> str:
    """Who plays a match, as the results store and the live pages show it: a Celery
    worker's node name, else ``host:pid`` (the scheduler, a local pool process)."""
    return os.environ.get(WORKER_NAME_ENV) or f"{socket.gethostname()}:{os.getpid()}"


def routing_url_from_env() -> str | None:
    """Redis URL for reaching remote bots: ``ARENA_ROUTING_URL``, else a Redis broker URL."""
    url = os.environ.get(ROUTING_ENV)
    if url:
        return url
    broker = os.environ.get("ARENA_BROKER_URL", "")
    if broker.startswith(("redis://", "rediss://", "unix://")):
        return broker
    return None


def play_match_runs(
    match: ScheduledMatch,
    routing_url: str | None = None,
    *,
    db_url: str | None = None,
    executor: str = "inline",
) -> tuple[MatchResult, list[Any]]:
    """Play a match with the referee; ``remote:NAME`` seats go through Redis when
    configured, ``hosted:NAME@HASH`` seats run in sandboxes here (their versions fetched
    from the results store ``db_url``). Returns the result and the hosted seats' runs
    (:class:`~arena.hosted.status.SeatRun`).

    The match's public events are published live (through Redis when ``routing_url`` is
    set, else into the spool directory of ``db_url``) for ``arena web`` to show. A match
    voided by the platform (a sandbox that failed) is played again; after a few failures
    in a row :class:`~arena.hosted.seat.PlatformFault` says why.
    """
    from arena.observability.live import publishing
    from arena.referee.runner import run_match_sync

    resolver = None
    if routing_url and any(b.startswith("remote:") for b in match.spec.bots):
        from arena.tournament.routing import routing_resolver

        resolver = routing_resolver(routing_url)
    with publishing(match, executor=executor, worker=worker_identity(),
                    redis_url=routing_url, db_url=db_url) as on_event:
        if any(b.startswith("hosted:") for b in match.spec.bots):
            from arena.hosted.play import HostedBots, play_hosted_sync

            if db_url is None:
                raise ExecutorConfigError("hosted bots need the results store (db)")
            result, runs = play_hosted_sync(
                match.spec, HostedBots.for_url(db_url), resolver, on_event=on_event,
                labels=match.players,
            )
            return result, list(runs)
        return run_match_sync(match.spec, resolver, on_event, labels=match.players), []


def play_record(
    match: ScheduledMatch,
    routing_url: str | None = None,
    *,
    db_url: str | None = None,
    executor: str = "inline",
) -> ResultRecord:
    """Play and wrap the outcome as a store row (not yet stored)."""
    result, runs = play_match_runs(match, routing_url, db_url=db_url, executor=executor)
    rec = ResultRecord.from_result(
        match, result, finished_at=time.time(), worker=worker_identity()
    )
    rec.seat_runs = runs
    return rec


def store_record(store: ResultStore, rec: ResultRecord) -> tuple[ResultRecord, bool]:
    """Write a played match once, with its hosted seats' runs (see :func:`play_record`);
    the stored row and whether this call wrote it."""
    stored, wrote = store.insert_result(rec, with_replay=False)
    if wrote and rec.seat_runs:
        from arena.hosted.store import HostedStore

        for note in HostedStore(store).record_runs(rec.match_id, rec.seat_runs,
                                                   rec.finished_at):
            log.warning("%s", note)
    return stored, wrote


def storable(rec: ResultRecord) -> bool:
    """Aborted matches are not results: leaving no row makes a resume play them again."""
    return rec.status != "aborted"


def _light_row(rec: ResultRecord) -> JSON:
    """A stored row without its replay, as plain data (it crosses a process boundary)."""
    return dataclasses.asdict(dataclasses.replace(rec, replay=None, seat_runs=[]))


def play_and_store(
    match_json: str | JSON, db_url: str, routing_url: str | None = None, executor: str = "celery"
) -> JSON:
    """Play a match unless the store already has it, then write it once.

    This is the body of the Celery task, kept here so it can be called and tested without
    Celery.  Returns a small summary with ``played`` (this call played the match),
    ``written`` (this call's row is the stored one) and ``row`` (the stored row without
    its replay, None for an aborted match), so the local pool's parent need not read it
    back.
    """
    match = ScheduledMatch.loads(match_json)
    store = shared_store(db_url)
    existing = store.get(match.match_id)
    if existing is not None:
        return {
            **existing.summary_json(), "played": False, "written": False,
            "row": _light_row(existing),
        }  # fmt: skip
    rec = play_record(match, routing_url, db_url=db_url, executor=executor)
    if not storable(rec):
        return {**rec.summary_json(), "played": True, "written": False, "row": None}
    stored, wrote = store_record(store, rec)
    return {**stored.summary_json(), "played": True, "written": wrote, "row": _light_row(stored)}


def play_and_store_many(
    matches_json: Sequence[str | JSON],
    db_url: str,
    routing_url: str | None = None,
    on_failure: Callable[[ScheduledMatch, Exception], None] | None = None,
) -> JSON:
    """Several matches in one task: each played unless stored, each written once.

    Short matches (a 1-deal game takes milliseconds) cost less than a broker round trip,
    so the Celery scheduler sends them in chunks.  A match that raises is handed to
    ``on_failure`` (the worker records it) and the others are still played; a lost store
    (:class:`StoreUnavailable`) ends the chunk, which is safe to play again.
    """
    matches = [ScheduledMatch.loads(m) for m in matches_json]
    store = shared_store(db_url)
    done = store.done_among([m.match_id for m in matches])
    played = written = 0
    failed: list[int] = []
    for m in matches:
        if m.match_id in done:
            continue
        try:
            rec = play_record(m, routing_url, db_url=db_url, executor="celery")
        except Exception as exc:
            if on_failure is None:
                raise
            on_failure(m, exc)
            failed.append(m.index)
            continue
        played += 1
        if storable(rec):
            _, wrote = store_record(store, rec)
            written += int(wrote)
    return {"matches": len(matches), "played": played, "written": written, "failed": failed}


def _play_in_subprocess(match_json: str, db_url: str, routing_url: str | None) -> JSON:
    """Entry point of the local pool (top-level, so a spawned process can import it)."""
    return play_and_store(match_json, db_url, routing_url, "local")


def _pool_child_init() -> None:
    """Pool children leave Ctrl-C to the scheduler, and load the referee before their
    first match so that its heap is settled (:func:`~arena.referee.heap.settle_heap`).

    A terminal sends SIGINT to the whole foreground process group; a child that took it
    would print its own ``KeyboardInterrupt`` traceback in the middle of the scheduler's
    "stopped" message.  The scheduler stops them itself.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import arena.referee.runner  # noqa: F401  (the heap below is the one matches run on)
    from arena.referee.heap import settle_heap

    settle_heap()


def absolute_db_url(url: str) -> str:
    """Make a relative SQLite path absolute: workers do not share the scheduler's directory."""
    kind, target, _ = parse_db_url(url)
    if kind == "sqlite" and target != ":memory:":
        return f"sqlite:///{Path(target).expanduser().resolve()}"
    return url


class Executor:
    """Plays a batch of matches and stores each result; ``on_result`` sees every stored row.

    ``on_status`` hears what the executor is waiting for ("" when it is not waiting), so
    a progress line can say why nothing moves.
    """

    name = "executor"
    on_status: StatusHook | None = None

    def run(
        self, matches: Sequence[ScheduledMatch], store: ResultStore, on_result: OnResult
    ) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release processes or connections; safe to call twice."""

    def prepare(self) -> None:
        """Check what the executor needs before the run creates anything (the broker)."""

    def status(self, text: str) -> None:
        if self.on_status is not None:
            self.on_status(text)

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
        done = store.done_among([m.match_id for m in matches])
        for m in matches:
            if m.match_id in done:
                continue
            try:
                rec = play_record(m, self.routing_url, db_url=store.url)
            except Exception as exc:
                raise ExecutorError(f"match {m.index} ({m.match_id}) failed: {exc}") from exc
            if storable(rec):
                stored, _ = store_record(store, rec)
                on_result(stored)


class LocalExecutor(Executor):
    """A pool of spawned processes on this machine, each playing and storing its matches.

    Children write their own results, exactly as Celery workers do: the replay (tens of
    kB) never travels through the parent, which would otherwise become the bottleneck
    of the pool.  Spawned (not forked) children start clean: no inherited database
    connection, event loop or Redis socket, and the same behaviour on every platform.
    Only a bounded number of matches is in flight, so a tournament of a million matches
    does not queue a million futures.  A child that dies (killed, out of memory) breaks
    the pool; a fresh pool plays the matches that were in flight, so the loss costs time
    only, unless pools keep dying without a result in between.
    """

    name = "local"
    MAX_POOL_RESTARTS = 3

    def __init__(self, workers: int | None = None, routing_url: str | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.routing_url = routing_url
        self._pool: cf.ProcessPoolExecutor | None = None

    def _get_pool(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_pool_child_init,
            )
        return self._pool

    def run(
        self, matches: Sequence[ScheduledMatch], store: ResultStore, on_result: OnResult
    ) -> None:
        done = store.done_among([m.match_id for m in matches])
        todo = [m for m in matches if m.match_id not in done]
        if not todo:
            return
        if store.kind == "sqlite" and parse_db_url(store.url)[1] == ":memory:":
            raise ExecutorConfigError(
                "the local pool cannot share an in-memory database: use a file or the "
                "inline executor"
            )
        db_url = absolute_db_url(store.url)
        in_flight: dict[cf.Future[JSON], ScheduledMatch] = {}
        limit = self.workers * 4
        pending = list(reversed(todo))  # popped from the end: match order
        broken = 0
        try:
            while pending or in_flight:
                pool = self._get_pool()
                try:
                    while pending and len(in_flight) < limit:
                        m = pending.pop()
                        fut = pool.submit(_play_in_subprocess, m.dumps(), db_url, self.routing_url)
                        in_flight[fut] = m
                except BrokenProcessPool:
                    pending.append(m)
                finished, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
                lost: list[ScheduledMatch] = []
                for fut in sorted(finished, key=lambda f: in_flight[f].index):
                    m = in_flight.pop(fut)
                    try:
                        fut.result()
                    except BrokenProcessPool:
                        lost.append(m)
                        continue
                    except StoreError:
                        raise
                    except Exception as exc:
                        raise ExecutorError(
                            f"match {m.index} ({m.match_id}) failed: {exc}"
                        ) from exc
                    broken = 0
                    row = fut.result().get("row")
                    if row is not None:  # None: the match was aborted, not a result
                        on_result(ResultRecord(**row))
                if lost:
                    broken += 1
                    if broken > self.MAX_POOL_RESTARTS:
                        raise ExecutorError(
                            f"the local pool died {broken} times in a row without a result "
                            f"(last in match {lost[0].index}): out of memory? see the logs"
                        )
                    lost += list(in_flight.values())
                    in_flight.clear()
                    log.warning(
                        "a pool process died; playing %d match(es) again in a new pool", len(lost)
                    )
                    self.close(wait=False)
                    pending.extend(sorted(lost, key=lambda m: -m.index))
        except BaseException:
            for fut in in_flight:
                fut.cancel()
            self.close(wait=False)
            raise

    def close(self, wait: bool = True) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if not wait:
            # A stop must not wait for the matches being played (a full game can take
            # minutes): their results are not stored, and a resume plays them again.
            processes = dict(getattr(pool, "_processes", None) or {})
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in processes.values():
                with contextlib.suppress(Exception):
                    proc.terminate()
            for proc in processes.values():
                with contextlib.suppress(Exception):
                    proc.join(timeout=5)
            return
        pool.shutdown(wait=True, cancel_futures=True)


LOST_AFTER_ENV = "ARENA_TASK_LOST_AFTER_S"
DEFAULT_LOST_AFTER_S = 10.0
BROKER_RETRY_ENV = "ARENA_BROKER_RETRY_S"
DEFAULT_BROKER_RETRY_S = 300.0


def _env_seconds(name: str, default: float) -> float:
    try:
        return env_seconds(name, default)
    except ValueError as exc:
        raise ExecutorConfigError(str(exc)) from None


def _broker_errors() -> tuple[type[BaseException], ...]:
    import kombu.exceptions

    errors: list[type[BaseException]] = [
        kombu.exceptions.OperationalError,
        ConnectionError,
        OSError,
    ]
    with contextlib.suppress(ImportError):
        import redis.exceptions

        errors += [redis.exceptions.ConnectionError, redis.exceptions.TimeoutError]
    return tuple(errors)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class CeleryExecutor(Executor):
    """Sends matches as ``workers.tasks`` tasks; watches the store for results.

    Completion is read from the results store, not from Celery's result backend: a task
    re-delivered after a worker died still ends as one row, and the scheduler need not
    know which delivery won.  Each poll reads only the rows stored since the previous one
    (:meth:`ResultStore.changes`), so it costs the same at any size.  Task ids are fresh
    per send, so a match re-sent by a resumed tournament is never mistaken for a revoked
    task of the stopped run.  At most ``window`` matches are queued at a time and more are
    sent as results arrive, so a huge tournament neither fills the broker's memory nor
    leaves much to revoke on a stop.

    Short matches travel in chunks: once results show how long a match takes, each task
    carries about ``task_s`` seconds of matches (at most ``max_chunk``), so a 1-deal game
    of a few milliseconds does not pay a broker round trip of its own.  ``chunk`` fixes
    the size instead (1: a task per match).

    Tasks can be lost: a Redis restart without persistence empties the queue, a worker
    killed outright holds its message until the visibility timeout.  When matches sent
    more than ``lost_after_s`` ago have no result, nothing is left in the queue and no
    worker holds them (asked with Celery's ``inspect``), on two looks in a row, they are
    sent again; the store keeps the first result written, so a duplicate costs time only.
    A broker that cannot be reached is retried with backoff for ``broker_retry_s`` before
    the run stops with :class:`ServiceUnavailable`.
    """

    name = "celery"
    TASK = "workers.tasks.play_match"
    TASK_MANY = "workers.tasks.play_matches"
    PROBE = 8

    def __init__(
        self,
        broker: str | None = None,
        queue: str = "arena",
        poll_s: float = 0.25,
        ping_timeout: float = 2.0,
        window: int = 2000,
        lost_after_s: float | None = None,
        broker_retry_s: float | None = None,
        chunk: int | None = None,
        task_s: float = 0.2,
        max_chunk: int = 64,
    ) -> None:
        url = settings(broker)["broker_url"]
        why = check_broker_url(url)
        if why:
            raise ExecutorConfigError(why)
        self.app = make_app(broker=broker)
        self.queue = queue
        self.window = max(1, window)
        self.poll_s = poll_s
        self.ping_timeout = ping_timeout
        self.lost_after_s = (
            _env_seconds(LOST_AFTER_ENV, DEFAULT_LOST_AFTER_S)
            if lost_after_s is None
            else lost_after_s
        )
        self.broker_retry_s = (
            _env_seconds(BROKER_RETRY_ENV, DEFAULT_BROKER_RETRY_S)
            if broker_retry_s is None
            else broker_retry_s
        )
        self.fixed_chunk = chunk
        self.task_s = task_s
        self.max_chunk = max(1, max_chunk)
        self.resent = 0
        self._match_s: float | None = None  # running mean of a match's duration
        self._sent: dict[str, list[str]] = {}  # task id -> its matches still without result
        self._task_of: dict[str, str] = {}  # match id -> task id
        self._sent_at: dict[str, float] = {}
        self._suspects: set[str] = set()
        self._checked = False
        self._cursor: dict[str, int] = {}

    @property
    def broker_url(self) -> str:
        return redact_url(str(self.app.conf.broker_url))

    def chunk_size(self) -> int:
        """Matches per task now: fixed, or about ``task_s`` seconds of them."""
        if self.fixed_chunk is not None:
            return max(1, self.fixed_chunk)
        if not self._match_s:
            return 1
        return max(1, min(self.max_chunk, int(self.task_s / max(self._match_s, 1e-4))))

    def _observe(self, rec: ResultRecord) -> None:
        d = max(0.0, float(rec.duration_s))
        self._match_s = d if self._match_s is None else 0.9 * self._match_s + 0.1 * d

    def worker_command(self) -> str:
        """The command that starts a worker for this run: the broker and the queue, as a
        worker started from the hint must consume the queue the tasks go to."""
        return f"arena worker --broker {self.broker_url} --queue {self.queue}"

    def consumers(self) -> tuple[int, int, list[str]] | None:
        """Workers answering, how many of them consume this run's queue, and the queues
        the others consume; None when the broker cannot be asked."""
        try:
            replies = self.app.control.inspect(timeout=self.ping_timeout).active_queues()
        except Exception as exc:
            log.debug("cannot ask the workers for their queues: %s", exc)
            return None
        replies = replies or {}
        mine = 0
        others: set[str] = set()
        for queues in replies.values():
            names = {str(q.get("name", "")) for q in queues or ()}
            if self.queue in names:
                mine += 1
            others |= names - {self.queue}
        return len(replies), mine, sorted(others)

    def _no_consumer(self, answering: int, others: list[str]) -> str:
        theirs = ", ".join(f"'{q}'" for q in others) or "other queues"
        return (f"{answering} Celery worker(s) answer on {self.broker_url} but none consumes "
                f"queue '{self.queue}' (they consume {theirs}); start one: "
                f"{self.worker_command()}")

    def workers_alive(self, *, limit: int | None = None) -> int:
        """Workers answering a ping; with ``limit`` it returns as soon as that many did."""
        try:
            replies = self.app.control.ping(timeout=self.ping_timeout, limit=limit)
        except Exception as exc:
            log.warning("cannot reach the Celery broker: %s", exc)
            return 0
        return len(replies or [])

    def check_broker(self, timeout: float = 5.0) -> None:
        """Raise :class:`ServiceUnavailable` with one clear line when the broker is not there."""
        try:
            with self.app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=timeout)
        except Exception as exc:
            raise ServiceUnavailable(
                f"cannot reach the Celery broker {self.broker_url} ({_first_line(exc)}): "
                "start it (redis-server) or check --broker / executor.broker"
            ) from None

    def prepare(self) -> None:
        if not self._checked:
            self.check_broker()

    def _broker_call(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run a broker operation, retrying a lost broker with backoff (tenacity)."""
        started = time.monotonic()
        errors = _broker_errors()

        def before_sleep(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            left = max(0.0, self.broker_retry_s - (time.monotonic() - started))
            self.status(
                f"waiting for the Celery broker {self.broker_url} to {what} "
                f"({_first_line(exc) if exc else 'unreachable'}; {left:.0f}s more)"
            )

        retrying = patiently(tenacity.retry_if_exception_type(errors), self.broker_retry_s,
                             before_sleep)
        try:
            return retrying(fn)
        except errors as exc:
            raise ServiceUnavailable(
                f"lost the Celery broker {self.broker_url} for "
                f"{time.monotonic() - started:.0f}s ({_first_line(exc)}); stored results are "
                "kept: start the broker and run the same command again"
            ) from None

    def _send(self, ms: Sequence[ScheduledMatch], db_url: str) -> None:
        """One task for ``ms`` (a single match goes as ``play_match``)."""
        task_id = f"{ms[0].match_id}-{uuid.uuid4().hex[:12]}"
        args: list[Any]
        if len(ms) == 1:
            name, args = self.TASK, [ms[0].dumps(), db_url]
        else:
            name, args = self.TASK_MANY, [[m.dumps() for m in ms], db_url]
        self._broker_call(
            "take a match",
            lambda: self.app.send_task(name, args=args, queue=self.queue, task_id=task_id),
        )
        now = time.monotonic()
        ids = [m.match_id for m in ms]
        for mid in ids:
            old = self._task_of.get(mid)
            if old is not None and old in self._sent:
                self._sent[old] = [x for x in self._sent[old] if x != mid]
                if not self._sent[old]:
                    del self._sent[old]
            self._task_of[mid] = task_id
            self._sent_at[mid] = now
        self._sent[task_id] = ids

    def _forget(self, mid: str) -> None:
        task = self._task_of.pop(mid, None)
        self._sent_at.pop(mid, None)
        if task is not None and task in self._sent:
            rest = [x for x in self._sent[task] if x != mid]
            if rest:
                self._sent[task] = rest
            else:
                del self._sent[task]

    def queued(self) -> int | None:
        """Messages waiting in the queue, or None when the broker cannot say.

        The queue is declared (idempotent) rather than looked up: a Redis that restarted
        has lost its bindings too, and a task sent to an exchange with no binding would
        vanish; declaring puts the binding back before anything is sent again.
        """
        try:
            with self.app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=2)
                queue = self.app.amqp.queues[self.queue].bind(conn.default_channel)
                queue.declare()
                _, count, _ = queue.queue_declare()
                return int(count)
        except Exception as exc:
            log.debug("queue length unknown: %s", exc)
            return None

    def held_by_workers(self) -> set[str] | None:
        """Match ids of tasks that workers are playing or hold; None if no worker answered."""
        try:
            insp = self.app.control.inspect(timeout=self.ping_timeout)
            active = insp.active()
            reserved = insp.reserved()
        except Exception as exc:
            log.debug("inspect failed: %s", exc)
            return None
        if not active and not reserved:
            return None
        held: set[str] = set()
        for replies in (active or {}, reserved or {}):
            for tasks in replies.values():
                for task in tasks or ():
                    tid = str(task.get("id", ""))
                    held.update(self._sent.get(tid, ()))
        return held

    def poll(self, store: ResultStore, tournament: str) -> list[ResultRecord]:
        """One poll: rows stored since the last one (the cost the benchmark measures)."""
        recs, self._cursor[tournament] = store.changes(
            tournament, self._cursor.get(tournament, 0)
        )
        return recs

    def run(
        self, matches: Sequence[ScheduledMatch], store: ResultStore, on_result: OnResult
    ) -> None:
        if not matches:
            return
        tournament = matches[0].tournament
        if not self._checked:
            self.check_broker()
        if tournament not in self._cursor:
            self._cursor[tournament] = store.position(tournament)
        done = store.done_among([m.match_id for m in matches])
        todo = [m for m in matches if m.match_id not in done]
        if not todo:
            return
        db_url = absolute_db_url(store.url)
        if not self._checked:
            self._checked = True
            if self.workers_alive(limit=1) == 0:
                log.warning(
                    "no Celery worker answered on %s; matches wait in queue '%s' until one "
                    "starts: %s",
                    self.broker_url,
                    self.queue,
                    self.worker_command(),
                )
            else:
                seen = self.consumers()
                if seen is not None and seen[1] == 0:
                    log.warning("%s; matches wait in queue '%s' until one does",
                                self._no_consumer(seen[0], seen[2]), self.queue)
        self._sent = {}
        self._task_of = {}
        self._sent_at = {}
        self._suspects = set()
        store.clear_failures(tournament)
        by_id = {m.match_id: m for m in todo}
        waiting: set[str] = set()  # sent, no result yet
        pos = 0
        last_progress = time.monotonic()
        last_check = 0.0

        def deliver(recs: Sequence[ResultRecord]) -> None:
            nonlocal last_progress
            fresh = sorted((r for r in recs if r.match_id in waiting), key=lambda r: r.index)
            for rec in fresh:
                waiting.discard(rec.match_id)
                self._forget(rec.match_id)
                self._observe(rec)
                on_result(rec)
            if fresh:
                last_progress = time.monotonic()
                self._suspects -= {r.match_id for r in fresh}
                self.status("")

        try:
            while pos < len(todo) or waiting:
                # Until a result tells how long a match takes, send a few single ones:
                # the rest of the window then goes in chunks of the right size.
                sizing = self.fixed_chunk is None and self._match_s is None
                limit = min(self.window, self.PROBE) if sizing else self.window
                while pos < len(todo) and len(waiting) < limit:
                    n = min(self.chunk_size(), len(todo) - pos, limit - len(waiting))
                    chunk = todo[pos : pos + max(1, n)]
                    pos += len(chunk)
                    self._send(chunk, db_url)
                    waiting.update(m.match_id for m in chunk)
                time.sleep(self.poll_s)
                deliver(self.poll(store, tournament))
                failed = {k: v for k, v in store.failures(tournament).items() if k in waiting}
                if failed:
                    mid, (error, worker) = min(failed.items(), key=lambda kv: by_id[kv[0]].index)
                    raise ExecutorError(
                        f"match {by_id[mid].index} ({mid}) failed on worker {worker}: {error}"
                    )
                now = time.monotonic()
                idle = now - last_progress
                every = min(self.lost_after_s, 5.0)
                if waiting and idle >= every and now - last_check >= every:
                    last_check = now
                    self._look_for_lost(store, waiting, by_id, db_url, deliver, idle)
        except BaseException:
            self.revoke_sent()
            raise

    def _look_for_lost(
        self,
        store: ResultStore,
        waiting: set[str],
        by_id: dict[str, ScheduledMatch],
        db_url: str,
        deliver: Callable[[Sequence[ResultRecord]], None],
        idle: float,
    ) -> None:
        """No result for a while: find stragglers in the store, then lost tasks; resend those."""
        stragglers = store.done_among(sorted(waiting)) & waiting
        if stragglers:
            deliver([r for r in (store.get(mid) for mid in stragglers) if r is not None])
        if not waiting:
            return
        now = time.monotonic()
        old = {mid for mid in waiting if now - self._sent_at.get(mid, now) >= self.lost_after_s}
        queued = self.queued()
        if queued is None:
            self.status(f"no result for {idle:.0f}s; cannot read the queue on {self.broker_url}")
            return
        if queued > 0:
            seen = self.consumers()
            if seen is None or seen[0] == 0:
                self.status(
                    f"waiting for a Celery worker: {queued} tasks queued in '{self.queue}' on "
                    f"{self.broker_url}, no worker answers (start one: {self.worker_command()})"
                )
            elif seen[1] == 0:
                self.status(f"{queued} tasks queued; {self._no_consumer(seen[0], seen[2])}")
            else:
                self.status(f"no result for {idle:.0f}s; {queued} tasks queued in "
                            f"'{self.queue}', {seen[1]} worker(s) on it busy")
            return
        if not old:
            return
        held = self.held_by_workers()
        if held is None:
            if self.workers_alive(limit=1) == 0:
                self.status(
                    f"waiting for a Celery worker on {self.broker_url} "
                    f"({len(waiting)} matches sent; start one: {self.worker_command()})"
                )
                return
            held = set()
        lost = old - held
        confirmed = lost & self._suspects
        self._suspects = lost - confirmed
        if held & waiting:
            self.status(f"workers are playing {len(held & waiting)} match(es), no result yet")
        if not confirmed:
            return
        log.warning(
            "%d match(es) had no result, were not queued and no worker held them "
            "(lost by the broker or a vanished worker): sending them again",
            len(confirmed),
        )
        self.status(f"sent {len(confirmed)} lost match(es) again")
        again = sorted((by_id[mid] for mid in confirmed), key=lambda m: m.index)
        size = self.chunk_size()
        for i in range(0, len(again), size):
            self._send(again[i : i + size], db_url)
        self.resent += len(confirmed)

    def revoke_sent(self) -> None:
        """Ask workers to drop queued tasks of this run (best effort: a stop, not a purge)."""
        if not self._sent:
            return
        try:
            self.app.control.revoke(list(self._sent))
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
    raise ExecutorConfigError(f"unknown executor '{kind}': use inline, local or celery")
