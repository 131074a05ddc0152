"""Fixtures of the tournament tests: a real Redis per module, Celery workers on demand."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from tournament_support import Worker, redis_server


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture()
def broker(redis_url: str) -> str:
    """The module's Redis, emptied so no task of an earlier test is left in the queue."""
    redis.Redis.from_url(redis_url).flushall()
    return redis_url


@pytest.fixture()
def start_worker(broker: str, tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    """Start real Celery workers (``arena worker`` code path); all are stopped at the end."""
    workers: list[Worker] = []

    def start(name: str = "w", wait: bool = True, **kwargs: object) -> Worker:
        worker = Worker(broker, tmp_path / f"worker-{name}-{len(workers)}.log", name=name, **kwargs)  # type: ignore[arg-type]
        workers.append(worker)
        if wait:
            worker.wait_ready()
        return worker

    yield start
    for worker in workers:
        worker.stop()
