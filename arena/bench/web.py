"""``arena bench web``: page and API latency of ``arena web`` on a large store.

Fills a SQLite store with N matches (default 100,000) of one league: a few dozen matches
are really played by the referee (so every row has a replay that re-plays), then copied
under new ids, seatings and times.  A real ``arena web`` process serves the store and
each page is requested over HTTP: the first request (the cold cache) is shown apart from
the percentiles of the following ones; replays are asked for distinct matches each time,
so no replay comes from the viewer's cache.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from arena.tournament.store import ResultStore, pack_replay


def _fill(path: Path, n: int, base_matches: int = 40) -> list[str]:
    from arena.match.types import MatchSpec
    from arena.referee.runner import run_match_sync
    from arena.tournament.spec import parse_spec

    names = [f"bot-{i}" for i in range(1, 9)]
    spec = parse_spec(json.dumps({
        "name": "bench-league", "seed": "bench", "rules": "classic",
        "participants": [{"name": p, "bot": "greedy" if i % 2 else "random"}
                         for i, p in enumerate(names)],
        "format": {"type": "round-robin"}, "games": n, "max_deals": 4,
        "db": f"sqlite:///{path}"}), fmt="json", check_imports=False)
    with ResultStore(f"sqlite:///{path}") as store:
        store.register_tournament(spec)
    played = []
    for k in range(base_matches):
        ms = MatchSpec(match_id=f"base-{k}", rules={"preset": "classic", "options": {}},
                       seed=f"bench/{k}", bots=("greedy", "random", "random"), max_deals=4)
        played.append(run_match_sync(ms))
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    rows = []
    ids = []
    t0 = time.time() - n
    for i in range(n):
        res = played[i % base_matches]
        seat = [names[(i + j * 3) % 8] for j in range(3)]
        if len(set(seat)) < 3:
            seat = [names[i % 8], names[(i + 1) % 8], names[(i + 2) % 8]]
        mid = hashlib.sha256(f"bench/{i}".encode()).hexdigest()[:32]
        ids.append(mid)
        stats = [vars(s) for s in res.seat_stats]
        assert res.replay is not None
        replay = {**res.replay, "match_id": mid}
        rows.append((
            mid, "bench-league", i, f"set-{i // 6}", 0, json.dumps(seat),
            json.dumps(list(res.bots)), res.seed, res.status, json.dumps(res.scores),
            json.dumps(res.ranks), res.deals, json.dumps([s["timeouts"] for s in stats]),
            json.dumps([s["illegal"] for s in stats]), json.dumps([s["strikes"] for s in stats]),
            json.dumps(stats), res.forfeit_seat, res.duration_s, t0 + i, "bench",
            pack_replay(replay),
        ))
        if len(rows) >= 5000:
            conn.executemany(f"INSERT INTO matches VALUES ({', '.join('?' * 21)})", rows)
            conn.commit()
            rows = []
    if rows:
        conn.executemany(f"INSERT INTO matches VALUES ({', '.join('?' * 21)})", rows)
        conn.commit()
    conn.close()
    return ids


def _live_overhead(n: int, tmp: Path, redis_url: str | None) -> None:
    """Games/s of one process playing the same seeded matches with live publishing off,
    into the spool directory, and (with a Redis URL) into Redis streams."""
    from arena.match.types import MatchSpec
    from arena.tournament.executors import play_match_runs
    from arena.tournament.model import ScheduledMatch

    matches = [ScheduledMatch("bench-live", i, f"g{i}", 0, ("a", "b", "c"), MatchSpec(
        f"bench-live-{i}", {"preset": "classic", "options": {}}, f"bench-live/{i}",
        ("greedy", "random", "greedy"), max_deals=20)) for i in range(n)]
    db = f"sqlite:///{tmp / 'live-bench.sqlite3'}"
    modes: list[tuple[str, str | None, str]] = [("off", None, "off"), ("spool", None, "on")]
    if redis_url:
        modes.append(("redis", redis_url, "on"))
    print(f"live publishing overhead: {n} matches of 20 deals, one process, CPU time of "
          "this process (other load on the machine does not count), modes interleaved")
    cpu = {label: 0.0 for label, _, _ in modes}
    rounds = 5
    for r in range(rounds):
        part = matches[r * n // rounds:(r + 1) * n // rounds]
        for label, url, switch in modes:
            os.environ["ARENA_LIVE"] = switch
            t0 = time.process_time()
            for m in part:
                play_match_runs(m, url, db_url=db)
            cpu[label] += time.process_time() - t0
    for label, _, _ in modes:
        extra = (cpu[label] / cpu["off"] - 1) * 100
        print(f"  {label:<6} {n / cpu[label]:8.1f} matches per CPU-second"
              + (f"  ({extra:+.1f}% CPU per match)" if label != "off" else ""))
    os.environ.pop("ARENA_LIVE", None)


def _pct(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def bench_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="arena bench web", description=__doc__)
    parser.add_argument("--matches", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=40, help="requests per page")
    parser.add_argument("--keep", type=Path, help="build the store here and keep it")
    parser.add_argument("--live", type=int, default=0, metavar="N",
                        help="instead, time N matches played with live publishing off and on")
    parser.add_argument("--redis", help="with --live: also publish to this Redis")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.live:
        with tempfile.TemporaryDirectory(prefix="arena-bench-live-") as live_tmp:
            _live_overhead(args.live, Path(live_tmp), args.redis)
        return 0
    if args.matches < 10 or args.requests < 2:
        print("arena bench web: --matches must be 10 or more, --requests 2 or more",
              file=sys.stderr)
        return 2
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="arena-bench-web-"))
    tmp.mkdir(parents=True, exist_ok=True)
    db_path = tmp / "bench.sqlite3"
    if db_path.exists():
        db_path.unlink()
    t = time.perf_counter()
    ids = _fill(db_path, args.matches)
    fill_s = time.perf_counter() - t
    size_mb = db_path.stat().st_size / 1e6
    print(f"store: {args.matches:,} matches of one 8-player league in {fill_s:.1f}s "
          f"({size_mb:.0f} MB)")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp / "web.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "web", "--db",
                             f"sqlite:///{db_path}", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        deadline = time.monotonic() + 60
        while True:
            try:
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    print("arena bench web: the web process did not start", file=sys.stderr)
                    return 1
                time.sleep(0.2)
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)

        def fetch(path: str) -> float:
            t0 = time.perf_counter()
            conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                raise RuntimeError(f"{path}: HTTP {resp.status}")
            return (time.perf_counter() - t0) * 1000

        step = max(1, len(ids) // (args.requests * 4 + 8))
        pool = iter(ids[::step])
        pages: list[tuple[str, Callable[[], str]]] = [
            ("leaderboard page", lambda: "/tournaments/bench-league"),
            ("leaderboard API", lambda: "/api/tournaments/bench-league/leaderboard"),
            ("match list page", lambda: "/matches"),
            ("match list, bot filter", lambda: "/matches?bot=bot-3&page=20"),
            ("match list API", lambda: "/api/matches?timeouts=0&page=500"),
            ("replay page", lambda: f"/matches/{next(pool)}?at=1.10"),
            ("replay frames API", lambda: f"/api/matches/{next(pool)}/frames?deal=1"),
            ("bot page", lambda: "/bots/bot-2"),
            ("tournaments page", lambda: "/"),
        ]
        print(f"{'page':<24}{'first ms':>10}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}")
        worst = 0.0
        for label, path in pages:
            first = fetch(path())
            times = [fetch(path()) for _ in range(args.requests)]
            p95 = _pct(times, 0.95)
            if label.startswith(("leaderboard", "match list", "replay")):
                worst = max(worst, p95)
            print(f"{label:<24}{first:>10.1f}{_pct(times, 0.5):>9.1f}{p95:>9.1f}"
                  f"{max(times):>9.1f}")
        load = os.getloadavg()
        print(f"goal p95 <= 300 ms for the leaderboard, the match list and a replay: "
              f"worst {worst:.1f} ms ({'met' if worst <= 300 else 'NOT met'}); "
              f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        if args.keep is None:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return 0
