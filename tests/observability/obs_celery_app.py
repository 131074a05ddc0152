"""A small Celery app whose tasks write arena metrics, run by the tests as a real worker.

The broker URL comes from ``ARENA_TEST_BROKER`` so each test run uses its own Redis.
"""

from __future__ import annotations

import os
import time

from celery import Celery, Task

broker = os.environ.get("ARENA_TEST_BROKER", "redis://127.0.0.1:6379/15")
app = Celery("obs_celery_app", broker=broker, backend=broker)
app.conf.task_default_queue = "arena"
app.conf.worker_prefetch_multiplier = 1
app.conf.broker_connection_retry_on_startup = True


@app.task(name="obs.populate")  # type: ignore[untyped-decorator]
def populate(step: int, hold: float = 0.0) -> int:
    """Write a full set of worker metrics, then hold the process busy for ``hold`` seconds."""
    from obs_support import populate_metrics

    populate_metrics(step, role="worker")
    time.sleep(hold)
    return os.getpid()


@app.task(name="obs.running", bind=False)  # type: ignore[untyped-decorator]
def running(seconds: float) -> int:
    """Count one running match for ``seconds``, as a match task would."""
    from arena.observability.metrics import MATCHES_RUNNING

    MATCHES_RUNNING.inc()
    try:
        time.sleep(seconds)
    finally:
        MATCHES_RUNNING.dec()
    return os.getpid()


@app.task(name="obs.flaky", bind=True, max_retries=3)  # type: ignore[untyped-decorator]
def flaky(self: Task, key: str) -> int:
    """Fail on its first attempt and succeed on the retry."""
    if self.request.retries == 0:
        raise self.retry(countdown=0)
    return int(self.request.retries)
