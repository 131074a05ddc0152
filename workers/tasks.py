"""The match task.  Delivery is at least once; the store makes the result exactly once.

This module is imported by the worker's master process before it forks its pool, so the
imports below happen once there and the children start with everything loaded.
"""

from __future__ import annotations

import traceback
from typing import Any

# The runner is loaded here, in the master, rather than by each child's first match.
import arena.referee.runner  # noqa: F401
from arena.tournament.executors import (
    play_and_store,
    play_and_store_many,
    routing_url_from_env,
    worker_identity,
)
from arena.tournament.model import ScheduledMatch
from arena.tournament.store import StoreUnavailable, shared_store
from workers.app import app

#: Seconds before a match whose store was lost is tried again (the store retries for
#: ``ARENA_DB_RETRY_S`` first, so this only follows a long outage).
STORE_RETRY_COUNTDOWN = 10
#: A match the platform voided (a sandbox failed) several times on this worker goes back
#: to the queue, for this worker or another, this many seconds later, up to this often.
PLATFORM_RETRY_COUNTDOWN = 5
PLATFORM_RETRIES = 20


@app.task(  # type: ignore[untyped-decorator]  # celery has no type hints
    name="workers.tasks.play_match",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
)
def play_match(self: Any, spec_json: str | dict[str, Any], db_url: str) -> dict[str, Any]:
    """Play one scheduled match (unless its result is stored) and store it once.

    ``spec_json`` is a ``ScheduledMatch`` as JSON text.  A match that raises is recorded
    in the store's failures table, where the scheduler finds and reports it; the task does
    not retry by itself because a deterministic match that failed once fails again.  A
    store that stays lost is different: the task goes back to the broker and waits, so a
    long outage costs time and no match.
    """
    from arena.hosted.seat import PlatformFault

    try:
        return play_and_store(spec_json, db_url, routing_url_from_env())
    except StoreUnavailable as exc:
        raise self.retry(exc=exc, countdown=STORE_RETRY_COUNTDOWN, max_retries=None) from exc
    except PlatformFault as exc:
        if self.request.retries < PLATFORM_RETRIES:
            raise self.retry(exc=exc, countdown=PLATFORM_RETRY_COUNTDOWN,
                             max_retries=PLATFORM_RETRIES) from exc
        _record(db_url, spec_json, exc, self.request.hostname)
        raise
    except Exception as exc:
        try:
            match = ScheduledMatch.loads(spec_json)
            where = f"{self.request.hostname or worker_identity()}"
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            shared_store(db_url).record_failure(match.match_id, match.tournament, detail, where)
        except Exception:
            pass
        raise


@app.task(  # type: ignore[untyped-decorator]  # celery has no type hints
    name="workers.tasks.play_matches",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
)
def play_matches(self: Any, specs: list[str | dict[str, Any]], db_url: str) -> dict[str, Any]:
    """A chunk of short matches in one task (the scheduler sizes chunks by match length).

    Each match is played unless stored and written once; one that raises is recorded in
    the failures table and the rest of the chunk is still played.
    """
    where = f"{self.request.hostname or worker_identity()}"

    def failed(match: ScheduledMatch, exc: Exception) -> None:
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        try:
            shared_store(db_url).record_failure(match.match_id, match.tournament, detail, where)
        except StoreUnavailable:
            raise
        except Exception:
            pass

    try:
        return play_and_store_many(specs, db_url, routing_url_from_env(), on_failure=failed)
    except StoreUnavailable as exc:
        raise self.retry(exc=exc, countdown=STORE_RETRY_COUNTDOWN, max_retries=None) from exc


def _record(db_url: str, spec_json: str | dict[str, Any], exc: BaseException,
            hostname: str | None) -> None:
    """Note a match that failed for good in the failures table (best effort)."""
    try:
        match = ScheduledMatch.loads(spec_json)
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        shared_store(db_url).record_failure(
            match.match_id, match.tournament, detail, hostname or worker_identity()
        )
    except Exception:
        pass
