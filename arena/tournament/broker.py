"""The Celery settings of the arena's broker, shared by the executor that sends matches
(:class:`arena.tournament.executors.CeleryExecutor`) and the workers that play them
(:mod:`workers.app`).

Reliability rests on three settings and one property of the task:

* ``task_acks_late``: a message is acknowledged after the match is stored, not when it is
  received, so a worker that dies mid-match leaves the message to be delivered again;
* ``task_reject_on_worker_lost``: a pool child killed mid-task puts its message back at once;
* ``worker_prefetch_multiplier = 1``: a worker holds no more matches than it plays, so a
  dead worker strands as few messages as possible and a long queue spreads evenly;
* the task is idempotent (the store keeps one row per match id), which turns "at least
  once" delivery into "exactly once" results.

With Redis as the broker, messages held by a worker that vanished entirely (SIGKILL of
the whole process, a lost machine) come back after the *visibility timeout*
(``ARENA_VISIBILITY_TIMEOUT``, seconds).  It must exceed the longest match, or a slow
match is handed to a second worker too; that costs time but never a double count.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from arena.tournament.store import env_seconds, redact_url

if TYPE_CHECKING:
    from celery import Celery

DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
DEFAULT_QUEUE = "arena"
DEFAULT_VISIBILITY_TIMEOUT = 1800.0


def settings(
    broker: str | None = None,
    backend: str | None = None,
    *,
    queue: str | None = None,
    visibility_timeout: float | None = None,
) -> dict[str, Any]:
    """Celery settings; arguments win over ``ARENA_BROKER_URL`` / ``ARENA_RESULT_BACKEND``."""
    broker_url = broker or os.environ.get("ARENA_BROKER_URL") or DEFAULT_BROKER
    backend_url = backend or os.environ.get("ARENA_RESULT_BACKEND") or None
    default_queue = queue or os.environ.get("ARENA_QUEUE") or DEFAULT_QUEUE
    vt = visibility_timeout or env_seconds("ARENA_VISIBILITY_TIMEOUT", DEFAULT_VISIBILITY_TIMEOUT)
    # Sweep for abandoned messages often enough that recovery is bounded by the timeout.
    restore_every = max(1, min(10, int(vt // 4)))
    return {
        "broker_url": broker_url,
        "result_backend": backend_url,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_default_queue": default_queue,
        "task_ignore_result": backend_url is None,
        "result_expires": 3600,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            "visibility_timeout": vt,
            "unacked_restore_interval": restore_every,
            "unacked_restore_throttle": 1,
        },
        "worker_send_task_events": False,
        "worker_hijack_root_logger": False,
    }


def make_app(
    broker: str | None = None,
    backend: str | None = None,
    *,
    queue: str | None = None,
    visibility_timeout: float | None = None,
) -> Celery:
    """A configured app (see :func:`settings` for where each value comes from)."""
    conf = settings(broker, backend, queue=queue, visibility_timeout=visibility_timeout)
    from celery import Celery

    app = Celery("arena", broker=conf["broker_url"], include=["workers.tasks"])
    app.conf.update(conf)
    return app


#: Broker URL schemes Celery can use here (kombu transports that need no extra package).
BROKER_SCHEMES = ("redis", "rediss", "amqp", "amqps", "pyamqp")


def check_broker_url(url: str) -> str | None:
    """Why ``url`` cannot be a broker URL, or None when it looks usable."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"bad broker URL {url!r}: {exc}"
    if "://" not in url or not parts.scheme:
        return f"bad broker URL {url!r}: write redis://HOST:6379/0"
    if parts.scheme not in BROKER_SCHEMES:
        return (
            f"unsupported broker URL scheme '{parts.scheme}' in {redact_url(url)}: "
            "use redis://HOST:6379/0 (or amqp://HOST:5672//)"
        )
    if parts.scheme.startswith("redis"):
        try:
            parts.port  # noqa: B018  # raises on a port that is not a number
        except ValueError:
            return f"bad port in broker URL {redact_url(url)}"
    return None
