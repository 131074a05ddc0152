"""The Celery application the workers run, and the worker command (``arena worker``).

The app is made from the tournament's broker settings (:mod:`arena.tournament.broker`,
where the reliability settings are explained), with the tasks of :mod:`workers.tasks`; the
worker's signals settle its heap and name it before the pool forks.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from celery import signals

from arena.tournament.broker import (
    DEFAULT_BROKER,
    DEFAULT_QUEUE,
    check_broker_url,
    make_app,
    settings,
)

app = make_app()


def _settle_worker_heap(**_: Any) -> None:
    """Settle the heap the tasks run on (:func:`arena.referee.heap.settle_heap`), in the
    worker's main process before a prefork pool forks: the children inherit it. The app's
    task modules (the runner and its imports) are loaded first, as Celery does for a worker,
    so that they are among what is settled."""
    from arena.referee.heap import settle_heap

    app.loader.import_default_modules()

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
