"""``arena bench referee``: how fast the referee plays in-process bots.

It plays seeded matches through :func:`run_match` (clock, events to every seat, replay,
metrics: everything a tournament match does, in a process whose heap is settled as a
worker's is) and, for comparison, the same bots driving the bare engine, so the figure
printed is both the throughput and the referee's overhead.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence

from arena.bench import bench_parser
from arena.bots import get_bot, seat_seed
from arena.compiled import status as compiled_status
from arena.engine import Game
from arena.engine.turns import turns
from arena.match.types import JSON, MatchSpec
from arena.referee.heap import settle_heap
from arena.referee.runner import match_rules, resolve_seats, run_match


def _spec(preset: str, bots: tuple[str, ...], index: int, max_deals: int) -> MatchSpec:
    return MatchSpec(match_id=f"bench-{index}", rules={"preset": preset},
                     seed=f"bench/{index}", bots=bots, max_deals=max_deals)


async def _referee(preset: str, bots: tuple[str, ...], seconds: float,
                   max_deals: int, first: int = 0) -> JSON:
    decisions = deals = matches = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        spec = _spec(preset, bots, first + matches, max_deals)
        result = await run_match(spec, resolve_seats(spec))
        decisions += sum(s.decisions for s in result.seat_stats)
        deals += result.deals
        matches += 1
    took = time.perf_counter() - start
    return {"decisions": decisions, "deals": deals, "matches": matches, "seconds": took}


def _bare(preset: str, bots: tuple[str, ...], seconds: float, max_deals: int,
          first: int = 0) -> JSON:
    """The same bots on the engine alone: observation, legal texts, decide, apply."""
    decisions = matches = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        spec = _spec(preset, bots, first + matches, max_deals)
        rules = match_rules(spec)
        players = [get_bot(b, seed=seat_seed(spec.seed, i, b)) for i, b in enumerate(bots)]
        game = Game(rules, seed=spec.seed)
        for seat, legal in turns(game):
            texts = [a.text for a in legal]
            answer = players[seat].decide(game.observation(seat), texts)
            game.apply(legal[texts.index(answer)])
            decisions += 1
        matches += 1
    took = time.perf_counter() - start
    return {"decisions": decisions, "matches": matches, "seconds": took}


def _rates(total: JSON) -> JSON:
    took = total["seconds"]
    out = {"decisions_per_s": total["decisions"] / took, "matches": total["matches"]}
    if "deals" in total:
        out["deals_per_s"] = total["deals"] / took
        out["matches_per_s"] = total["matches"] / took
    return out


def measure(preset: str, bots: tuple[str, ...], seconds: float, max_deals: int,
            rounds: int) -> tuple[JSON, JSON]:
    """Referee and bare engine in alternating rounds, ``seconds`` for each in all.

    Alternating keeps the comparison fair on a machine whose speed drifts (a shared
    host, frequency scaling): both sides see the same conditions, instead of one running
    in a fast minute and the other in a slow one. The shorter the rounds, the closer
    the pairing: on a shared two-core host, 8 s in 8 rounds gave ratios from 0.68 to
    0.79 where 32 rounds gave 0.77 to 0.78."""
    # The collector as a process that plays tournament matches sets it (a worker, a pool
    # child, the gateway): both sides run with it.
    settle_heap()
    share = seconds / rounds
    referee: JSON = {"decisions": 0, "deals": 0, "matches": 0, "seconds": 0.0}
    bare: JSON = {"decisions": 0, "matches": 0, "seconds": 0.0}
    for _ in range(rounds):
        one = asyncio.run(_referee(preset, bots, share, max_deals, referee["matches"]))
        for key in referee:
            referee[key] += one[key]
        two = _bare(preset, bots, share, max_deals, bare["matches"])
        for key in bare:
            bare[key] += two[key]
    return _rates(referee), _rates(bare)


def bench_main(argv: Sequence[str] | None = None) -> int:
    p = bench_parser("referee", __doc__)
    p.add_argument("--preset", default="classic")
    p.add_argument("--bots", default="greedy,greedy,random",
                   help="comma-separated built-in bots, one per seat")
    p.add_argument("--seconds", type=float, default=5.0,
                   help="time for each of the two measurements")
    p.add_argument("--rounds", type=int, default=20,
                   help="alternating rounds the time is split into (default 20)")
    p.add_argument("--max-deals", type=int, default=30)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.rounds < 1:
        print("arena bench referee: --seconds must be positive and --rounds at least 1",
              file=sys.stderr)
        return 2
    bots = tuple(b.strip() for b in args.bots.split(","))
    referee, bare = measure(args.preset, bots, args.seconds, args.max_deals, args.rounds)
    overhead = 1.0 - referee["decisions_per_s"] / bare["decisions_per_s"]
    res = {"preset": args.preset, "bots": list(bots), "seconds": args.seconds,
           "rounds": args.rounds, "referee": referee, "bare_engine": bare,
           "referee_share_of_time": overhead,
           "referee_vs_bare": referee["decisions_per_s"] / bare["decisions_per_s"],
           "build": compiled_status().reason}
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"referee benchmark, {args.preset}, bots {', '.join(bots)}, "
          f"{args.seconds:g} s each in {args.rounds} alternating rounds, one process")
    print(f"  through the referee  {referee['decisions_per_s']:>10,.0f} decisions/s  "
          f"{referee['deals_per_s']:>8,.0f} deals/s  {referee['matches_per_s']:>6,.1f} matches/s")
    print(f"  bots on the engine   {bare['decisions_per_s']:>10,.0f} decisions/s")
    print(f"  referee's share of the time: {overhead:.0%} (clock, events, replay, metrics)")
    return 0
