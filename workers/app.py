"""The Celery application: broker, reliability settings and the worker command.

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

import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from celery import Celery, signals

DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
DEFAULT_QUEUE = "arena"
DEFAULT_VISIBILITY_TIMEOUT = 1800.0


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {raw!r}")
    return value


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
    vt = visibility_timeout or _env_float("ARENA_VISIBILITY_TIMEOUT", DEFAULT_VISIBILITY_TIMEOUT)
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
    app = Celery("arena", broker=conf["broker_url"], include=["workers.tasks"])
    app.conf.update(conf)
    return app


app = make_app()


def _settle_worker_heap(**_: Any) -> None:
    """Settle the heap the tasks run on (:func:`arena.referee.heap.settle_heap`), in the
    worker's main process before a prefork pool forks: the children inherit it."""
    import workers.tasks  # noqa: F401  (the runner and its imports, loaded once here)
    from arena.referee.heap import settle_heap

    settle_heap()


signals.worker_init.connect(_settle_worker_heap, weak=False, dispatch_uid="arena-settle-heap")


def _name_the_worker(sender: Any = None, **_: Any) -> None:
    """Results and live pages name the worker by its node name (``--hostname``, default
    ``celery@HOST``), set here in the master before the pool forks so children inherit it."""
    if sender:
        os.environ["ARENA_WORKER_NAME"] = str(sender)


signals.celeryd_after_setup.connect(_name_the_worker, weak=False, dispatch_uid="arena-worker-name")


class _NoBackendRevokeNoise(logging.Filter):
    """Drop Celery's "Failed to mark task ... as revoked in backend: No result backend is
    configured", logged once per task when a stopped tournament revokes its queued tasks:
    the arena needs no result backend (results go to the results store), so there is
    nothing to mark and nothing wrong."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Failed to mark task %s as revoked in backend"):
            return True
        return "No result backend" not in " ".join(str(a) for a in record.args or ())


logging.getLogger("celery.worker.control").addFilter(_NoBackendRevokeNoise())


def worker_main(argv: Sequence[str] | None = None) -> int:
    """``arena worker``: start a Celery worker that plays tournament matches.

    The options set the environment before the app module is imported by Celery, so a
    pool child sees the same broker and routing settings as the master.
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="arena worker",
        description="Start a worker that plays tournament matches from the broker queue.",
    )
    parser.add_argument(
        "--broker", help=f"broker URL (default $ARENA_BROKER_URL or {DEFAULT_BROKER})"
    )
    parser.add_argument("--result-backend", help="result backend URL (default: none)")
    parser.add_argument("--queue", "-Q", help=f"queue to consume (default {DEFAULT_QUEUE})")
    parser.add_argument(
        "--concurrency", "-c", type=int, default=None, help="matches played at once (default: CPUs)"
    )
    parser.add_argument(
        "--pool", default="prefork", choices=("prefork", "solo", "threads"), help="Celery pool"
    )
    parser.add_argument(
        "--routing",
        help="Redis URL where gateways serve remote bots "
        "(default $ARENA_ROUTING_URL, else the broker)",
    )
    parser.add_argument(
        "--visibility-timeout",
        type=float,
        help="seconds before a match held by a vanished worker is handed out again",
    )
    parser.add_argument(
        "--metrics-port", type=int, default=None, help="serve Prometheus metrics on this port"
    )
    parser.add_argument(
        "--metrics-addr",
        default="127.0.0.1",
        help="address the metrics endpoint listens on (default 127.0.0.1; 0.0.0.0 for "
        "every interface, e.g. for a Prometheus on another machine or container)",
    )
    parser.add_argument("--hostname", "-n", help="worker node name (Celery's -n)")
    parser.add_argument("--loglevel", "-l", default="INFO")
    args = parser.parse_args(list(argv) if argv is not None else None)

    from arena.tournament.executors import check_broker_url

    why = check_broker_url(args.broker or settings()["broker_url"])
    if why:
        print(f"arena worker: {why}", file=sys.stderr)
        return 2
    if args.broker:
        os.environ["ARENA_BROKER_URL"] = args.broker
    if args.result_backend:
        os.environ["ARENA_RESULT_BACKEND"] = args.result_backend
    if args.queue:
        os.environ["ARENA_QUEUE"] = args.queue
    if args.routing:
        os.environ["ARENA_ROUTING_URL"] = args.routing
    if args.visibility_timeout is not None:
        if args.visibility_timeout <= 0:
            parser.error("--visibility-timeout must be positive")
        os.environ["ARENA_VISIBILITY_TIMEOUT"] = str(args.visibility_timeout)
    if args.concurrency is not None and args.concurrency < 1:
        parser.error("--concurrency must be a positive integer")

    # This module (and so ``app``) is already imported; bring it up to date with the options.
    app.conf.update(settings())

    celery_args = [
        "--pool",
        args.pool,
        "--loglevel",
        args.loglevel,
        "-Q",
        os.environ.get("ARENA_QUEUE", DEFAULT_QUEUE),
    ]
    if args.concurrency is not None:
        celery_args += ["--concurrency", str(args.concurrency)]
    if args.hostname:
        celery_args += ["--hostname", args.hostname]
    celery_args += ["--without-gossip", "--without-mingle"]

    from arena.observability.exposition import run_celery_worker

    return run_celery_worker(
        "workers.app",
        celery_args,
        metrics_port=args.metrics_port,
        metrics_addr=args.metrics_addr,
    )


if __name__ == "__main__":
    sys.exit(worker_main())
