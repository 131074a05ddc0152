"""What a long tournament costs the scheduler per poll, at 10k, 100k and 1M results.

``arena bench poll`` plans a tournament of a million 1-deal matches (the plan the
scheduler would hold), fills a results store with rows shaped like real ones (a real
1-deal replay, packed the way workers pack it) and, at each checkpoint, times what one
poll of the Celery scheduler reads: the rows that arrived since the previous poll and
the failures table.  Next to it, the old way (reading every stored match id) shows what
the position-based poll saves, and the live-ratings refit shows the cost of the running
sums.  The figures print as they come; nothing here depends on the machine's other load
except the absolute numbers, so the load average is printed too.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.tournament.executors import CeleryExecutor
from arena.tournament.formats import make_format
from arena.tournament.model import ResultRecord, ScheduledMatch
from arena.tournament.spec import TournamentSpec, validate_spec
from arena.tournament.store import ResultStore, pack_replay
from arena.tournament.tally import RatingTally

CHECKPOINTS = (10_000, 100_000, 1_000_000)
#: Rows that arrive between two polls in steady state: 2 workers x 1-deal games at a
#: quarter-second poll is about this many.
PER_POLL = 25


def _spec(matches: int, db: str) -> TournamentSpec:
    return validate_spec(
        {
            "name": "poll-bench",
            "seed": "poll-bench",
            "rules": "classic",
            "participants": ["greedy", "random", {"name": "random-2", "bot": "random"}],
            "format": "duplicate",
            "sets": -(-matches // 6),
            "max_deals": 1,
            "db": db,
        }
    )


def _template(match: ScheduledMatch) -> ResultRecord:
    """A real result of a 1-deal match: every synthetic row copies its shape and replay."""
    from arena.referee.runner import run_match_sync

    result = run_match_sync(match.spec)
    return ResultRecord.from_result(match, result, finished_at=time.time(), worker="bench")


def _rows(plan: Sequence[ScheduledMatch], template: ResultRecord) -> list[ResultRecord]:
    return [dataclasses.replace(template, **m.row_fields()) for m in plan]


def _median_ms(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def bench_poll(
    matches: int = 1_000_000,
    *,
    db: str | None = None,
    checkpoints: Sequence[int] = CHECKPOINTS,
    repeat: int = 50,
    out: Any = sys.stdout,
) -> dict[str, Any]:
    """Plan ``matches`` 1-deal matches and time a poll at each checkpoint (figures in ms)."""
    res: dict[str, Any] = {
        "matches": matches,
        "cpus": os.cpu_count(),
        "load_avg_1m_before": round(os.getloadavg()[0], 2),
        "checkpoints": {},
    }
    with tempfile.TemporaryDirectory(prefix="arena-pollbench-") as tmp:
        url = db or f"sqlite:///{Path(tmp) / 'poll.sqlite3'}"
        spec = _spec(matches, url)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        fmt = make_format(spec)
        plan = fmt.next_batch({}) or []
        res["plan_s"] = round(time.perf_counter() - t, 2)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss
        res["plan_mb"] = round(grown / 1024, 1)  # ru_maxrss is in kB on Linux
        res["planned"] = len(plan)
        print(
            f"planned {len(plan):,} matches of 1 deal in {res['plan_s']} s "
            f"({res['plan_mb']} MB); store {url.split('?')[0]}; "
            f"load average {res['load_avg_1m_before']} on {res['cpus']} CPUs",
            file=out,
            flush=True,
        )
        template = _template(plan[0])
        res["replay_bytes"] = len(pack_replay(template.replay or {}))
        executor = CeleryExecutor(broker="redis://127.0.0.1:1/0")
        store = ResultStore(url)
        try:
            store.register_tournament(spec)
            tally = RatingTally()
            done = 0
            t_fill = 0.0
            for target in sorted(c for c in checkpoints if c <= len(plan)):
                # Fill up to the checkpoint, the last PER_POLL rows after the poller's cursor.
                while done < target - PER_POLL:
                    step = min(20_000, target - PER_POLL - done)
                    t = time.perf_counter()
                    store.insert_results(_rows(plan[done : done + step], template))
                    t_fill += time.perf_counter() - t
                    done += step
                before = store.position(spec.name)
                store.insert_results(_rows(plan[done:target], template))
                done = target
                for rec in _rows(plan[:PER_POLL], template):
                    tally.add(rec)
                tally.results = target

                def one_poll(before: int = before) -> None:
                    executor._cursor[spec.name] = before
                    got = executor.poll(store, spec.name)
                    assert len(got) == PER_POLL
                    store.failures(spec.name)

                poll_ms = _median_ms(one_poll, repeat)
                full_ms = _median_ms(lambda: store.done_ids(spec.name), max(3, repeat // 10))
                fit_ms = _median_ms(tally.ratings, repeat)
                res["checkpoints"][target] = {
                    "poll_ms": round(poll_ms, 3),
                    "all_ids_ms": round(full_ms, 1),
                    "ratings_refit_ms": round(fit_ms, 3),
                }
                print(
                    f"  {target:>9,} done: poll {poll_ms:7.3f} ms ({PER_POLL} new rows + failures)"
                    f"   reading every id {full_ms:8.1f} ms   ratings refit {fit_ms:6.3f} ms",
                    file=out,
                    flush=True,
                )
            res["fill_rows_per_s"] = round(done / t_fill) if t_fill else None
        finally:
            store.close()
            executor.close()
    res.update(_pack_figures(template))
    print(
        f"  replay of a 1-deal game: {res['replay_bytes']} bytes packed; packing a full game "
        f"({res['full_game_json_kb']} kB of JSON): zstd {res['pack_zstd_ms']} ms "
        f"({res['pack_zstd_kb']} kB), zlib-6 {res['pack_zlib_ms']} ms ({res['pack_zlib_kb']} kB)",
        file=out,
    )
    res["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    return res


def _pack_figures(template: ResultRecord) -> dict[str, Any]:
    """zstd (what the store writes) against the zlib-6 of before, on a full game's replay."""
    from arena.engine import Rules
    from arena.match.types import MatchSpec
    from arena.referee.runner import run_match_sync

    spec = MatchSpec(
        match_id="pack-bench",
        rules=Rules.preset("classic").to_json(),
        seed="pack-bench",
        bots=("greedy", "random", "random"),
    )
    replay = run_match_sync(spec).replay or {}
    text = json.dumps(replay, separators=(",", ":"), sort_keys=True).encode()
    zstd_ms = _median_ms(lambda: pack_replay(replay), 20)
    def old_pack() -> bytes:
        return zlib.compress(json.dumps(replay, separators=(",", ":"), sort_keys=True).encode(), 6)

    zlib_ms = _median_ms(old_pack, 20)
    return {
        "full_game_json_kb": round(len(text) / 1024, 1),
        "pack_zstd_ms": round(zstd_ms, 2),
        "pack_zstd_kb": round(len(pack_replay(replay)) / 1024, 1),
        "pack_zlib_ms": round(zlib_ms, 2),
        "pack_zlib_kb": round(len(zlib.compress(text, 6)) / 1024, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``arena bench poll``: print the scheduler's cost per poll as a tournament grows."""
    parser = argparse.ArgumentParser(
        prog="arena bench poll",
        description="Plan a tournament of 1-deal matches and time a scheduler poll at 10k, "
        "100k and 1M results.",
    )
    parser.add_argument("--matches", type=int, default=1_000_000, help="matches to plan")
    parser.add_argument(
        "--db", help="results store to fill (default: a temporary SQLite file); "
        "for PostgreSQL give a URL with ?schema=NAME: the schema's tables are filled"
    )
    parser.add_argument("--repeat", type=int, default=50, help="polls timed per checkpoint")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.matches < 1 or args.repeat < 1:
        parser.error("--matches and --repeat must be positive")
    checkpoints = [c for c in CHECKPOINTS if c <= args.matches] or [args.matches]
    res = bench_poll(args.matches, db=args.db, checkpoints=checkpoints, repeat=args.repeat)
    if args.json:
        print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
