"""Fixtures of the hosted-bot tests: a world-readable scratch folder, its own bot cache."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tournament"))

from hosted_support import open_dir
from tournament_support import Worker


@pytest.fixture()
def scratch(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder for bots and stores that a seat's uid can read, with the bot cache in it."""
    root = open_dir("hosted")
    cache = root / "cache"
    monkeypatch.setenv("ARENA_BOT_CACHE", str(cache))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    from tournament_support import redis_server

    with redis_server() as url:
        yield url


@pytest.fixture()
def broker(redis_url: str) -> str:
    import redis

    redis.Redis.from_url(redis_url).flushall()
    return redis_url


@pytest.fixture()
def start_worker(broker: str, scratch: Path) -> Iterator[Callable[..., Worker]]:
    """Real Celery workers (``arena worker``), stopped at the end."""
    workers: list[Worker] = []

    def start(name: str = "w", **kwargs: Any) -> Worker:
        worker = Worker(broker, scratch / f"worker-{name}-{len(workers)}.log", name=name,
                        **kwargs)
        workers.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in workers:
        worker.stop()
