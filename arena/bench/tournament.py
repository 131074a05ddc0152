"""Tournament throughput: local process pool against Celery workers over Redis.

The benchmark starts its own Redis (``redis-server`` on a free port, no persistence) and
its own workers, plays the same seeded tournament on each executor and reports games per
second.  Each executor is warmed up first (processes spawned, modules imported), because
a long tournament pays that once and the figure is meant to show steady-state cost: for
the pool, pickling results back to the parent; for Celery, the broker round trip and the
worker's own write to the results store.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from arena.rigs.processes import WorkerProcess, redis_server, stop_all
from arena.tournament.executors import CeleryExecutor, Executor, LocalExecutor
from arena.tournament.run import run_tournament
from arena.tournament.spec import TournamentSpec, validate_spec
from arena.tournament.store import ResultStore


def _wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


@contextlib.contextmanager
def _workers(broker: str, n: int, workdir: Path) -> Iterator[list[WorkerProcess]]:
    """``n`` Celery workers, one process each (solo pool), like ``n`` pool processes; quiet,
    so that their logs cost nothing measured (the caller waits for them to answer)."""
    workers: list[WorkerProcess] = []
    try:
        for i in range(n):
            workers.append(WorkerProcess.start(
                broker=broker, log_path=workdir / f"worker-{n}-{i}.log", pool="solo",
                name=f"bench{i}-{n}", env={"PROMETHEUS_MULTIPROC_DIR": None},
                loglevel="WARNING",
            ))
        yield workers
    finally:
        stop_all(workers, timeout=20)


def _spec(name: str, sets: int, db: str, max_deals: int | None, preset: str) -> TournamentSpec:
    data: dict[str, Any] = {
        "name": name,
        "seed": "bench",
        "rules": preset,
        "participants": ["greedy", "random", {"name": "random-2", "bot": "random"}],
        "format": "duplicate",
        "sets": sets,
        "db": db,
    }
    if max_deals is not None:
        data["max_deals"] = max_deals
    return validate_spec(data)


def _rate(spec: TournamentSpec, executor: Executor) -> float:
    """Games per second of one run of ``spec`` on ``executor``."""
    t = time.perf_counter()
    summary = run_tournament(spec, executor=executor)
    elapsed = time.perf_counter() - t
    return summary.played / elapsed if elapsed > 0 else float("inf")


def _compare(
    executors: dict[str, Executor],
    sets: int,
    db: str,
    max_deals: int | None,
    preset: str,
    repeat: int,
) -> dict[str, float]:
    """Best games/s of each executor over ``repeat`` rounds, the executors taking turns.

    Turns, because other load on the machine comes and goes: alternating spreads it over
    both sides of a comparison.  The best, not the mean: load only ever slows a run down.
    Each executor is warmed up first (processes started, modules imported).
    """
    for name, ex in executors.items():
        run_tournament(_spec(f"{name}-warmup", 1, db, max_deals, preset), executor=ex)
    best = dict.fromkeys(executors, 0.0)
    for i in range(repeat):
        for name, ex in executors.items():
            rate = _rate(_spec(f"{name}-{i}", sets, db, max_deals, preset), ex)
            best[name] = max(best[name], rate)
    return best


def bench_tournament(
    games: int = 240,
    *,
    max_deals: int | None = None,
    preset: str = "classic",
    processes: Sequence[int] = (1, 2),
    celery: bool = True,
    ratings_results: int = 1_000_000,
    repeat: int = 3,
) -> dict[str, Any]:
    """Games/s on the local pool and on Celery for each worker count, and the ratings time.

    ``games`` is rounded up to whole duplicate sets (6 games each).  ``overhead_*`` is how
    much slower Celery is than the pool with the same number of processes (the target is
    under 10%).  ``ratings_s`` is the time to rate ``ratings_results`` results with
    bootstrap intervals (from :func:`arena.bench.ratings.bench_ratings`); 0 skips it.
    """
    sets = max(1, -(-games // 6))
    out: dict[str, Any] = {
        "games": sets * 6,
        "preset": preset,
        "max_deals": max_deals,
        "cpus": os.cpu_count(),
        "repeat": repeat,
        "load_avg_1m_before": round(os.getloadavg()[0], 2),
    }
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        workdir = Path(tmp)
        db = f"sqlite:///{workdir / 'bench.sqlite3'}"
        ResultStore(db).close()
        with contextlib.ExitStack() as stack:
            broker = stack.enter_context(redis_server(workdir)).url if celery else ""
            for n in processes:
                with contextlib.ExitStack() as per_n:
                    executors: dict[str, Executor] = {
                        f"local_{n}": per_n.enter_context(LocalExecutor(workers=n))
                    }
                    if celery:
                        per_n.enter_context(_workers(broker, n, workdir))
                        cel = CeleryExecutor(broker=broker, poll_s=0.05)
                        per_n.enter_context(cel)
                        _wait(lambda: cel.workers_alive() >= n, 60, f"{n} Celery workers")  # noqa: B023
                        executors[f"celery_{n}"] = cel
                    best = _compare(executors, sets, db, max_deals, preset, repeat)
                for name, rate in best.items():
                    out[f"{name}_games_per_s"] = round(rate, 2)
                if celery:
                    local, remote = best[f"local_{n}"], best[f"celery_{n}"]
                    out[f"overhead_{n}_pct"] = round(100 * (local - remote) / local, 1)
    if ratings_results > 0:
        try:
            from arena.bench.ratings import bench_ratings
        except ImportError:
            out["ratings_s"] = None
        else:
            r = bench_ratings(ratings_results)
            out["ratings_results"] = ratings_results
            out["ratings_s"] = round(float(r["table_s"]), 3)
    out["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    return out


def bench_main(argv: Sequence[str] | None = None) -> int:
    """``arena bench tournament``: print the figures (``--json`` for machines)."""
    parser = argparse.ArgumentParser(
        prog="arena bench tournament",
        description="Games/s on the local pool and Celery workers; ratings time.",
    )
    parser.add_argument("--games", type=int, default=240, help="games per measurement")
    parser.add_argument("--max-deals", type=int, default=None, help="stop games after N deals")
    parser.add_argument("--preset", default="classic")
    parser.add_argument("--no-celery", action="store_true", help="skip the Celery figures")
    parser.add_argument(
        "--ratings-results", type=int, default=1_000_000, help="results to rate (0: skip)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    parser.add_argument(
        "--processes",
        default="1,2",
        help="comma-separated process counts to compare (default 1,2)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        processes = tuple(int(x) for x in args.processes.split(",") if x.strip())
    except ValueError:
        parser.error("--processes must be numbers such as 1,2")
    if not processes or min(processes) < 1:
        parser.error("--processes must be positive numbers such as 1,2")
    res = bench_tournament(
        args.games,
        processes=processes,
        max_deals=args.max_deals,
        preset=args.preset,
        celery=not args.no_celery,
        ratings_results=args.ratings_results,
        repeat=max(1, args.repeat),
    )
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for line in describe(res, processes):
        print(line)
    return 0



def describe(res: dict[str, Any], processes: Sequence[int]) -> list[str]:
    """The figures of :func:`bench_tournament` as lines for a reader."""
    lines = [
        f"tournament benchmark: {res['games']} games per run, preset {res['preset']}, "
        f"best of {res['repeat']}, load average {res['load_avg_1m_before']} on {res['cpus']} CPUs"
    ]
    for n in processes:
        local = res.get(f"local_{n}_games_per_s")
        lines.append(f"  local pool, {n} process(es)   {local:8.2f} games/s")
        celery = res.get(f"celery_{n}_games_per_s")
        overhead = res.get(f"overhead_{n}_pct")
        if celery is not None and overhead is not None:
            # overhead_N_pct > 0: Celery is that much slower than the pool.
            how = (f"{overhead:.1f}% slower than the pool" if overhead > 0
                   else f"{-overhead:.1f}% faster than the pool" if overhead < 0
                   else "as fast as the pool")
            lines.append(f"  Celery, {n} worker(s)         {celery:8.2f} games/s   ({how})")
    if res.get("ratings_s") is not None:
        lines.append(f"  ratings of {res['ratings_results']:,} results: {res['ratings_s']:.2f} s")
    return lines


if __name__ == "__main__":
    sys.exit(bench_main())
