"""``arena bench hosts``: the arena on simulated hosts, with 1, 2, 3 worker hosts and delay.

Builds a rig (:mod:`arena.rigs.hosts`, root only) with a data host, two gateway hosts,
worker hosts, a bots host and the organiser's host, deploys the arena on it
(:mod:`arena.rigs.cluster`) and measures:

* **throughput**: a seeded duplicate tournament of built-in bots (the games are the
  workers' CPU) sent by the organiser's ``arena tournament run --executor celery`` to 1,
  2, 3... worker hosts of one worker process each: games per second as the scheduler
  counts them, and each count's ratio to one host;
* **decisions over a network**: remote SDK bots that answer at once, on their own host,
  reached from a worker host through Redis and their gateways, with a one-way delay of 0,
  2 and 20 ms between every two hosts of the platform (the bots' own link to their gateway
  keeps no delay unless ``--bot-delay-ms``): per decision, the time charged to the bot and
  the round trip the match saw (p50, p99), and the timeouts under a 50 ms clock with no
  time bank. The bots answer in well under a millisecond, so every timeout is one the
  platform (or, on one shared machine, the machine) caused.

Other load on the machine lowers every figure: the load average is printed with them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import sys
from collections.abc import Sequence
from typing import Any

from arena.bench import bench_parser
from arena.rigs.linux import RigError

BOTS = {"g1": "arena.server.builtin_remote:Greedy", "c1": "arena.server.builtin_remote:Cautious"}
_PLAYED_RE = re.compile(r"played (\d+) matches in ([\d.]+)s \(([\d.]+) games/s\)")


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return ordered[k]


def _throughput_spec(name: str, d: Any, sets: int, max_deals: int | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": name,
        "seed": name,
        "rules": "classic",
        "participants": ["greedy", {"name": "random-a", "bot": "random"},
                         {"name": "random-b", "bot": "random"}],
        "format": "duplicate",
        "sets": sets,
        "executor": {"type": "celery"},
        "db": d.db_url(name.replace("-", "_")),
    }
    if max_deals:
        data["max_deals"] = max_deals
    return data


def _cpu(rig: Any, d: Any) -> dict[str, float]:
    """CPU seconds used so far, by role: what a game costs where."""
    return {
        "workers": sum(h.cpu_seconds() for h in d.workers),
        "data": d.data.cpu_seconds(),
        "organiser": d.ctl.cpu_seconds(),
        "network": rig.network_cpu_seconds(),
    }


def bench_hosts(*, workers: Sequence[int], delays: Sequence[float], games: int,
                max_deals: int | None, decisions_matches: int, decision_ms: int,
                bot_delay_ms: float, tls: bool, throughput_delay_ms: float,
                log: Any = None) -> dict[str, Any]:
    from arena.rigs.cluster import Deployment
    from arena.rigs.hosts import Rig

    def say(text: str) -> None:
        if log is not None:
            print(text, file=log, flush=True)

    out: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "load_avg_1m_before": round(os.getloadavg()[0], 2),
        "tls": tls,
        "games": max(1, -(-games // 6)) * 6,
        "max_deals": max_deals,
        "decision_ms": decision_ms,
        "throughput": {},
        "decisions": {},
    }
    with Rig(delay_ms=throughput_delay_ms) as rig:
        out["delay"] = "netem" if rig.netem else "relay"
        d = Deployment(rig, gateways=2, workers=max(workers), tls=tls)
        say(f"hosts: {', '.join(rig.hosts)}; starting the data host")
        d.start_redis()
        d.start_postgres()
        base: float | None = None
        for n in workers:
            for host in d.workers[:n]:
                if host.name not in d.worker_procs:
                    d.start_worker(host)
            for host in d.workers[n:]:
                proc = d.worker_procs.pop(host.name, None)
                if proc is not None:
                    proc.stop()
            sets = max(1, -(-games // 6))
            # A warm-up set first: the first results size the scheduler's chunks.
            warm = d.start_tournament(_throughput_spec(f"warm-{n}", d, 1, max_deals))
            warm.proc.wait(600)
            say(f"throughput: {n} worker host(s), {sets * 6} games")
            before = _cpu(rig, d)
            run = d.start_tournament(_throughput_spec(f"throughput-{n}", d, sets, max_deals))
            # Waited for here, for its CPU time: the scheduler is gone when the run ends.
            _, status, usage = os.wait4(run.proc.pid, 0)
            run.proc.returncode = os.waitstatus_to_exitcode(status)
            after = _cpu(rig, d)
            after["organiser"] = before["organiser"] + usage.ru_utime + usage.ru_stime
            if run.proc.returncode != 0:
                raise RigError(f"the tournament on {n} worker hosts failed:\n{run.log_tail()}")
            found = _PLAYED_RE.search(run.log_text())
            if found is None:
                raise RigError(f"no figures from the tournament:\n{run.log_tail()}")
            rate = float(found.group(3))
            base = rate if base is None else base
            played = sets * 6
            out["throughput"][str(n)] = {
                "games_per_s": rate, "seconds": float(found.group(2)),
                "vs_one": round(rate / base, 2) if base else None,
                "cpu_ms_per_game": {k: round(1000 * (after[k] - before[k]) / played, 1)
                                    for k in after},
            }
        for proc in d.worker_procs.values():
            proc.stop()
        d.worker_procs.clear()
        say("decisions: gateways and bots")
        for gw in d.gateways:
            d.start_gateway(gw)
        d.register_bots(BOTS)
        for name, ref in BOTS.items():
            d.start_bot(name, ref)
        d.wait_bots_connected(BOTS)
        probe_host = d.workers[0]
        for delay in delays:
            rig.set_delay(delay, pairs_ms={("bots", gw.name): bot_delay_ms
                                           for gw in d.gateways})
            say(f"decisions: {delay:g} ms one way between the platform's hosts")
            res = probe_host.run(
                ["python", "-m", "arena.rigs.probe", d.routing_url, *BOTS,
                 "--matches", str(decisions_matches), "--max-deals", "2",
                 "--decision-ms", str(decision_ms), "--bank-ms", "0"],
                timeout=3600)
            data = json.loads(res.stdout.strip().splitlines()[-1])
            charged = [c for c in data["charged_ms"] if c >= 0]
            trips = data["round_trip_ms"]
            out["decisions"][f"{delay:g}"] = {
                "decisions": data["decisions"],
                "charged_p50_ms": round(_percentile(charged, 0.5), 2),
                "charged_p99_ms": round(_percentile(charged, 0.99), 2),
                "charged_mean_ms": round(statistics.fmean(charged), 2) if charged else None,
                "round_trip_p50_ms": round(_percentile(trips, 0.5), 2),
                "round_trip_p99_ms": round(_percentile(trips, 0.99), 2),
                "timeouts": data["timeouts"],
                "platform_faults": data["platform_faults"],
            }
    out["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    return out


def describe(res: dict[str, Any]) -> list[str]:
    """The figures of :func:`bench_hosts` as lines for a reader."""
    lines = [
        f"hosts benchmark: data host (Redis, PostgreSQL), 2 gateway hosts, worker hosts, a "
        f"bots host, the organiser's host; delay by {res.get('delay', 'relay')}; "
        f"TLS {'on' if res['tls'] else 'off'}; load average {res['load_avg_1m_before']} on "
        f"{res['cpus']} CPUs",
        f"throughput: {res['games']} classic games (greedy, random, random)"
        + (f", {res['max_deals']} deals each" if res["max_deals"] else "")
        + ", one Celery worker process per host",
    ]
    for n, row in res["throughput"].items():
        ratio = "" if n == "1" else f"   x{row['vs_one']:.2f} one host"
        lines.append(f"  {n} worker host{'s' if n != '1' else ' '}  "
                     f"{row['games_per_s']:8.2f} games/s{ratio}")
    lines.append("  CPU per game (ms): "
                 + "; ".join(f"{n} host{'s' if n != '1' else ''}: "
                             + ", ".join(f"{k} {v:.1f}" for k, v in row["cpu_ms_per_game"].items())
                             for n, row in res["throughput"].items()))
    lines.append(
        f"decisions of remote SDK bots that answer at once, {res['decision_ms']} ms clock, "
        "no time bank (every timeout is the platform's):")
    lines.append("  one-way delay  decisions  charged p50   p99   round trip p50    p99  timeouts")
    for delay, row in res["decisions"].items():
        lines.append(
            f"  {delay:>6} ms  {row['decisions']:>11}  {row['charged_p50_ms']:>9.1f} ms "
            f"{row['charged_p99_ms']:>5.1f}  {row['round_trip_p50_ms']:>11.1f} ms "
            f"{row['round_trip_p99_ms']:>6.1f}  {row['timeouts']:>8}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = bench_parser(
        "hosts",
        "The arena on simulated hosts (Linux namespaces; needs root): games/s with 1, 2, 3 "
        "worker hosts, and decisions over links with delay.",
    )
    parser.add_argument("--workers", default="1,2,3",
                        help="worker host counts to measure (default 1,2,3)")
    parser.add_argument("--delays", default="0,2,20",
                        help="one-way delays between hosts, in ms (default 0,2,20)")
    parser.add_argument("--games", type=int, default=300,
                        help="games per throughput run (default 300: runs of several seconds)")
    parser.add_argument("--max-deals", type=int, default=None,
                        help="stop each throughput game after N deals (default: play it out)")
    parser.add_argument("--matches", type=int, default=12,
                        help="2-deal matches of remote bots per delay (default 12)")
    parser.add_argument("--decision-ms", type=int, default=50,
                        help="the bots' clock per decision (default 50, no time bank)")
    parser.add_argument("--bot-delay-ms", type=float, default=0.0,
                        help="one-way delay between the bots and their gateways (default 0)")
    parser.add_argument("--throughput-delay-ms", type=float, default=0.0,
                        help="one-way delay between hosts while measuring games/s (default 0)")
    parser.add_argument("--tls", action="store_true",
                        help="TLS between all hosts (gRPC, Redis, PostgreSQL)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        workers = [int(x) for x in args.workers.split(",") if x.strip()]
        delays = [float(x) for x in args.delays.split(",") if x.strip()]
    except ValueError:
        parser.error("--workers and --delays are comma-separated numbers, e.g. 1,2,3")
    if not workers or min(workers) < 1 or not delays or min(delays) < 0:
        parser.error("--workers needs positive counts and --delays delays of 0 or more")
    try:
        res = bench_hosts(workers=workers, delays=delays, games=args.games,
                          max_deals=args.max_deals, decisions_matches=args.matches,
                          decision_ms=args.decision_ms, bot_delay_ms=args.bot_delay_ms,
                          tls=args.tls, throughput_delay_ms=args.throughput_delay_ms,
                          log=None if args.json else sys.stderr)
    except RigError as exc:
        print(f"arena bench hosts: {exc}", file=sys.stderr)
        return 3 if "needs root" not in str(exc) and "ip command" not in str(exc) else 2
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        for line in describe(res):
            print(line)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
