"""``arena bench hosted``: what running bots in sandboxes costs.

Three figures, each next to what it is measured against:

* **sandbox start**: from spawning a sandbox to the moment it is ready to start the bot (its
  namespaces, mounts, cgroup and limits in place: the ready byte), p50 and p99 over
  ``--starts`` sandboxes; and, for a Python SDK bot, a Node.js bot and a compiled binary,
  the time until the bot has opened its seat (the interpreter and gRPC loaded, the hello
  read) and until its first answer;
* **time per decision**: a hosted Python SDK bot against the same bot as a remote client of
  a gateway over TCP loopback, in the same kind of match: the bot's time per decision (from
  the request written to its stream to the answer read) and the match's wall time per
  decision;
* **games per second**: a round robin of three hosted Python bots on the local pool, two
  matches per core at once, against the same bots played in-process, with the timeouts
  the platform caused (every bot answers at once, so any timeout is the platform's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena import exitcodes

FIRST = """
from thousand_bot import Bot


class First(Bot):
    def decide(self, observation, legal):
        return legal[0]


class Second(Bot):
    def decide(self, observation, legal):
        return legal[-1]


class Middle(Bot):
    def decide(self, observation, legal):
        return legal[len(legal) // 2]
"""


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


async def _starts(n: int) -> list[float]:
    from arena.sandbox import Limits, Sandbox

    out = []
    for _ in range(n):
        sandbox = Sandbox(Limits(wall_s=30))
        sandbox.spawn(["/bin/true"])
        await sandbox.wait_ready()
        result = await sandbox.stop()
        if result.start_s is not None:
            out.append(result.start_s * 1000)
    return out


def _folder(root: Path, name: str, cls: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "bot.toml").write_text(f'runtime = "python"\nentry = "bench_bot.py:{cls}"\n')
    (folder / "bench_bot.py").write_text(FIRST)
    return folder


def _binary(root: Path) -> Path | None:
    from arena.hosted.builtin import REPO

    cc = shutil.which("cc")
    source = REPO / "sdk" / "starters" / "c" / "mybot.c"
    if cc is None or not source.exists():
        return None
    folder = root / "cbot"
    folder.mkdir()
    subprocess.run([cc, "-O2", "-o", str(folder / "mybot"), str(source)], check=True)
    (folder / "bot.toml").write_text('runtime = "binary"\nentry = "mybot"\n')
    return folder


async def _first_answers(bots: Any, refs: dict[str, str]) -> dict[str, dict[str, float]]:
    """Per runtime: ms to the sandbox's readiness, to the bot's hello, to its first answer."""
    from arena.hosted.play import play_hosted
    from arena.hosted.seat import HostedSeat
    from arena.match.types import MatchSpec
    from arena.referee.runner import resolve_seat

    out: dict[str, dict[str, float]] = {}
    for runtime, ref in refs.items():
        spec = MatchSpec(match_id=f"bench-first-{runtime}", rules={"preset": "classic"},
                         seed="bench", bots=(ref, "greedy", "random"), max_deals=1)
        seat = HostedSeat(bots.bot(ref), seat=0)
        seats = [seat, resolve_seat("greedy", 1, spec), resolve_seat("random", 2, spec)]
        result, runs = await play_hosted(spec, seats)
        run = runs[0]
        first = result.seat_stats[0].think_ms_max if result.seat_stats[0].decisions else 0.0
        out[runtime] = {"sandbox_ms": run.sandbox_ms or 0.0,
                        "connect_ms": run.connect_ms or 0.0,
                        "first_answer_ms": (run.connect_ms or 0.0) + first}
    return out


async def _per_decision(bots: Any, ref: str, folder: Path, matches: int,
                        deals: int) -> dict[str, float]:
    """The same bot hosted and as a remote client over loopback: ms per decision."""
    from arena.hosted.seat import HostedSeat
    from arena.match.types import MatchSpec, TimeControl
    from arena.referee.runner import resolve_seat, run_match
    from arena.server.app import Gateway
    from arena.server.hub import RemoteSeat

    tc = TimeControl(decision_ms=5000, bank_ms=20000, strike_limit=3)

    def spec(kind: str, i: int, bot: str) -> MatchSpec:
        return MatchSpec(match_id=f"bench-{kind}-{i}", rules={"preset": "classic"},
                         seed=f"bench/{i}", bots=(bot, "greedy", "random"), max_deals=deals,
                         time_control=tc)

    tmp = Path(tempfile.mkdtemp(prefix="arena-bench-gw-"))
    gateway = Gateway(db_path=str(tmp / "gw.sqlite3"), organiser_token="bench", port=0)
    port = await gateway.start()
    token = gateway.registry.register("bench-remote")
    client = subprocess.Popen(
        [sys.executable, "-m", "thousand_bot", "run", "bench_bot.py:First", "--gateway",
         f"127.0.0.1:{port}", "--log-level", "WARNING"],
        cwd=folder, env=dict(os.environ, THOUSAND_BOT_TOKEN=token),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    figures: dict[str, list[tuple[float, float, int]]] = {"hosted": [], "remote": []}
    try:
        deadline = time.monotonic() + 60
        while gateway.hub.instances("bench-remote") == 0:
            if time.monotonic() > deadline:
                raise RuntimeError("the remote bench bot did not connect")
            await asyncio.sleep(0.05)
        for i in range(matches):  # alternating, so both see the same machine
            s = spec("remote", i, "remote:bench-remote")
            seats = [RemoteSeat(gateway.hub, "bench-remote"), resolve_seat("greedy", 1, s),
                     resolve_seat("random", 2, s)]
            t0 = time.perf_counter()
            result = await run_match(s, seats)
            wall = time.perf_counter() - t0
            st = result.seat_stats[0]
            figures["remote"].append((st.think_ms_total, wall * 1000, st.decisions))
            gateway.hub.release_match(s.match_id)
            h = spec("hosted", i, ref)
            hosted = HostedSeat(bots.bot(ref), seat=0)
            await hosted.start()
            seats = [hosted, resolve_seat("greedy", 1, h), resolve_seat("random", 2, h)]
            t0 = time.perf_counter()
            try:
                result = await run_match(h, seats)
            finally:
                wall = time.perf_counter() - t0
                await hosted.aclose()
            st = result.seat_stats[0]
            figures["hosted"].append((st.think_ms_total, wall * 1000, st.decisions))
    finally:
        client.terminate()
        client.wait(10)
        await gateway.stop(grace_s=1.0)
        shutil.rmtree(tmp, ignore_errors=True)
    out: dict[str, float] = {}
    for kind, rows in figures.items():
        decisions = sum(r[2] for r in rows) or 1
        out[f"{kind}_bot_ms"] = sum(r[0] for r in rows) / decisions
        out[f"{kind}_wall_ms"] = sum(r[1] for r in rows) / decisions
        out[f"{kind}_decisions"] = decisions
    return out


def _round_robin(db: str, players: dict[str, str], games: int, workers: int) -> tuple[
        float, int, int]:
    """games/s of a round robin of ``players`` on the local pool; (rate, games, timeouts)."""
    from arena.tournament.executors import LocalExecutor
    from arena.tournament.run import run_tournament
    from arena.tournament.spec import validate_spec
    from arena.tournament.store import ResultStore

    name = f"bench-{len(players)}-{int(time.time() * 1000)}"
    spec = validate_spec({
        "name": name, "seed": "bench", "public_seed": True, "rules": "classic",
        "participants": [{"name": k, "bot": v} for k, v in players.items()],
        "format": "round-robin", "games": games, "max_deals": 6, "db": db,
        "time_control": {"decision_ms": 2000, "bank_ms": 10000, "strike_limit": 3},
    }, check_imports=False)
    store = ResultStore(db)
    with LocalExecutor(workers=workers) as executor:
        t0 = time.perf_counter()
        run_tournament(spec, store=store, executor=executor)
        elapsed = time.perf_counter() - t0
    rows = store.results(name)
    timeouts = sum(sum(r.timeouts) for r in rows.values())
    return len(rows) / elapsed, len(rows), timeouts


def bench(starts: int, matches: int, deals: int, games: int) -> dict[str, Any]:
    from arena.hosted.builtin import node_starter_folder
    from arena.hosted.bundle import pack
    from arena.hosted.cache import BotCache
    from arena.hosted.play import HostedBots
    from arena.hosted.store import PASSED, HostedStore
    from arena.sandbox import SandboxHost
    from arena.tournament.store import ResultStore

    host = SandboxHost.get()
    root = Path(tempfile.mkdtemp(prefix="arena-bench-hosted-"))
    os.chmod(root, 0o755)
    try:
        db = f"sqlite:///{root / 'bench.sqlite3'}"
        store = HostedStore(ResultStore(db))
        cache = BotCache(root / "cache")
        bots = HostedBots(store, cache)
        refs: dict[str, str] = {}

        def add(name: str, folder: Path) -> str:
            version, _ = store.add_version(name, pack(folder))
            store.set_status(name, version.hash, PASSED)
            return version.ref

        first = _folder(root, "first", "First")
        refs["python"] = add("first", first)
        refs["node"] = add("node", node_starter_folder(root))
        binary = _binary(root)
        if binary is not None:
            refs["binary"] = add("cbot", binary)
        start_ms = asyncio.run(_starts(starts))
        firsts = asyncio.run(_first_answers(bots, refs))
        per = asyncio.run(_per_decision(bots, refs["python"], first, matches, deals))
        trio = {"first": refs["python"],
                "second": add("second", _folder(root, "second", "Second")),
                "middle": add("middle", _folder(root, "middle", "Middle"))}
        workers = 2 * (os.cpu_count() or 1)
        old = os.environ.get("ARENA_BOT_CACHE")
        os.environ["ARENA_BOT_CACHE"] = str(root / "cache")
        try:
            hosted_rate, hosted_games, hosted_timeouts = _round_robin(db, trio, games, workers)
        finally:
            if old is None:
                os.environ.pop("ARENA_BOT_CACHE", None)
            else:
                os.environ["ARENA_BOT_CACHE"] = old
        local = {k: f"{first / 'bench_bot.py'}:{c}" for k, c in
                 (("first", "First"), ("second", "Second"), ("middle", "Middle"))}
        inproc_rate, inproc_games, _ = _round_robin(db, local, games, workers)
        return {
            "isolation": dict(host.report()),
            "sandbox_start_ms": {"n": len(start_ms), "p50": _pct(start_ms, 50),
                                 "p99": _pct(start_ms, 99), "max": max(start_ms),
                                 "mean": statistics.fmean(start_ms)},
            "first_answer": firsts,
            "per_decision": per,
            "round_robin": {"workers": workers, "games": hosted_games,
                            "hosted_games_per_s": hosted_rate,
                            "hosted_timeouts": hosted_timeouts,
                            "in_process_games": inproc_games,
                            "in_process_games_per_s": inproc_rate},
            "load_average": os.getloadavg()[0],
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="arena bench hosted", description=__doc__)
    parser.add_argument("--starts", type=int, default=100, help="sandboxes started (default 100)")
    parser.add_argument("--matches", type=int, default=6,
                        help="matches of each kind for the time per decision (default 6)")
    parser.add_argument("--deals", type=int, default=6, help="deals per match (default 6)")
    parser.add_argument("--games", type=int, default=24,
                        help="games of each round robin (default 24)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from arena.sandbox import SandboxUnavailable

    try:
        r = bench(args.starts, args.matches, args.deals, args.games)
    except SandboxUnavailable as exc:
        print(f"arena bench hosted: {exc}", file=sys.stderr)
        return exitcodes.FAILED
    if args.json:
        print(json.dumps(r, indent=2))
        return exitcodes.OK
    s = r["sandbox_start_ms"]
    print(f"hosted bots benchmark ({r['isolation']['cgroups'].split(' (')[0]}, load average "
          f"{r['load_average']:.2f})")
    print(f"  sandbox start (ready to start the bot), {s['n']} sandboxes: "
          f"p50 {s['p50']:.1f} ms, p99 {s['p99']:.1f} ms, max {s['max']:.1f} ms")
    for runtime, f in r["first_answer"].items():
        print(f"  {runtime:<7} sandbox {f['sandbox_ms']:6.1f} ms, bot connected "
              f"{f['connect_ms']:6.1f} ms, first answer {f['first_answer_ms']:6.1f} ms")
    p = r["per_decision"]
    added = (p["hosted_bot_ms"] / p["remote_bot_ms"] - 1) * 100 if p["remote_bot_ms"] else 0
    print(f"  per decision, Python SDK bot: hosted {p['hosted_bot_ms']:.3f} ms, remote client "
          f"over loopback {p['remote_bot_ms']:.3f} ms ({added:+.0f}%); match wall time per "
          f"decision {p['hosted_wall_ms']:.3f} vs {p['remote_wall_ms']:.3f} ms "
          f"({p['hosted_decisions']:.0f} and {p['remote_decisions']:.0f} decisions)")
    rr = r["round_robin"]
    print(f"  round robin of 3 Python bots, {rr['workers']} matches at once: hosted "
          f"{rr['hosted_games_per_s']:.2f} games/s ({rr['games']} games, "
          f"{rr['hosted_timeouts']} timeouts), in-process {rr['in_process_games_per_s']:.2f} "
          "games/s")
    return exitcodes.OK


if __name__ == "__main__":
    sys.exit(main())
