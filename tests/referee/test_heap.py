"""Every process that plays matches settles its heap before it plays (arena.referee.heap).

Each test looks at a fresh process of the kind that plays matches, never at this one:
the collector's settings are per process, and a test must not change pytest's own.
"""

from __future__ import annotations

import concurrent.futures as cf
import gc
import multiprocessing
import subprocess
import sys

from arena.referee.heap import GC_YOUNG_THRESHOLD
from arena.tournament.executors import LocalExecutor


def _collector_state() -> tuple[int, int]:
    return gc.get_threshold()[0], gc.get_freeze_count()


def test_a_local_executor_pool_child_plays_on_a_settled_heap() -> None:
    pool = LocalExecutor(workers=1)._get_pool()
    try:
        young, frozen = pool.submit(_collector_state).result(timeout=120)
    finally:
        pool.shutdown()
    assert young == GC_YOUNG_THRESHOLD
    # The referee (imported before settling) is among what was frozen: thousands of objects.
    assert frozen > 10_000


def test_a_celery_worker_settles_its_heap_when_it_starts() -> None:
    probe = (
        "import gc\n"
        "from celery import signals\n"
        "import workers.app\n"
        "before = gc.get_threshold()[0], gc.get_freeze_count()\n"
        "signals.worker_init.send(sender=None)\n"
        "print(*before, gc.get_threshold()[0], gc.get_freeze_count(),\n"
        "      'arena.referee.runner' in __import__('sys').modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    young_before, frozen_before, young, frozen, runner_loaded = out
    assert int(young_before) != GC_YOUNG_THRESHOLD and int(frozen_before) == 0
    assert int(young) == GC_YOUNG_THRESHOLD
    assert int(frozen) > 10_000
    assert runner_loaded == "True"


def test_spawned_processes_start_with_the_collector_as_python_sets_it() -> None:
    """The yardstick of the two tests above: without the initializer nothing is frozen."""
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        young, frozen = pool.submit(_collector_state).result(timeout=120)
    assert young != GC_YOUNG_THRESHOLD
    assert frozen == 0
