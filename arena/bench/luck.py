"""``arena bench luck``: how much luck-adjusted results shrink the error bars, and at what cost.

Two close pairs of bots play the same duplicate sets (every seating of a three-seat table,
the third seat a fixed ``greedy``): ``search`` at ``--search-iterations`` worlds a decision
against itself at a tenth of that, and ``greedy`` against ``cautious`` (greedy with a
higher bar for bidding). For each pair and each set the sample is the first bot's mean
pairwise score against the second, raw and luck-adjusted (the luck of each game computed
exactly as a worker computes it when the game finishes). Printed per pair:

* the variance of the set mean, raw and adjusted, and their ratio (the variance reduction
  factor, VRF) with a 95% bootstrap interval over sets;
* the games a +-20 Elo 95% interval needs, raw and adjusted (at a score near 1/2 one Elo is
  ``ln 10 / 1600`` of a point, so the set mean's standard error must reach 20 times that
  over 1.96);
* the mean of (adjusted - raw) with its 95% interval, which must contain 0 (the luck has
  mean zero whatever the bots);
* the CPU time of a game and of computing its luck, and the ratio of the two.

Sets are seeded from ``--seed`` in a namespace of their own (``bench-luck/...``), disjoint
from the training games of the luck model.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures as cf
import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import permutations
from typing import Any

import numpy as np

PROG = "arena bench luck"
PRESET = "classic"
CAUTIOUS = "arena.server.builtin_remote:CautiousGreedyBot"
ELO_PER_SCORE = 1600.0 / math.log(10.0)  # d Elo / d score at a score of 1/2


@dataclass
class SetOutcome:
    pair: str
    index: int
    raw: list[float] = field(default_factory=list)
    adjusted: list[float] = field(default_factory=list)
    play_cpu_s: float = 0.0
    luck_cpu_s: float = 0.0
    deals: int = 0


def _seats(pair: str, index: int, seating: Sequence[int], seed: str, iterations: int,
           max_deals: int | None) -> tuple[Any, list[Any]]:
    from arena.bots import GreedyBot, SearchBot
    from arena.bots.base import seat_seed
    from arena.match.types import MatchSpec
    from arena.referee.seats import InProcessSeat
    from arena.server.builtin_remote import CautiousGreedyBot

    set_seed = hashlib.sha256(f"bench-luck/{seed}/{pair}/set/{index}".encode()).hexdigest()
    rules = {"preset": PRESET, "options": {}}
    spec = MatchSpec(match_id=hashlib.sha256(
        f"bench-luck/{seed}/{pair}/{index}/{seating}".encode()).hexdigest()[:32],
        rules=rules, seed=set_seed, bots=("a", "b", "c"), max_deals=max_deals)
    members: list[Any] = []
    for seat, member in enumerate(seating):
        bot_seed = seat_seed(set_seed, seat, f"member-{member}")
        if member == 2:
            members.append(GreedyBot(seed=bot_seed, rules=rules))
        elif pair == "search":
            n = iterations if member == 0 else max(1, iterations // 10)
            members.append(SearchBot(seed=bot_seed, rules=rules, budget_ms=3_600_000.0,
                                     iterations=n))
        elif member == 0:
            members.append(GreedyBot(seed=bot_seed, rules=rules))
        else:
            members.append(CautiousGreedyBot(seed=bot_seed, rules=rules))
    return spec, [InProcessSeat(b) for b in members]


def play_set(pair: str, index: int, seed: str, iterations: int,
             max_deals: int | None) -> SetOutcome:
    """Every seating of one duplicate set; member 0 is the first bot of the pair, 1 the
    second, 2 the fixed greedy."""
    from arena.ratings.luck import luck_of_replay
    from arena.referee.runner import run_match

    out = SetOutcome(pair, index)
    for seating in permutations(range(3)):
        spec, seats = _seats(pair, index, seating, seed, iterations, max_deals)
        c0 = time.process_time()
        result = asyncio.run(run_match(spec, seats))
        c1 = time.process_time()
        assert result.replay is not None
        luck = luck_of_replay(result.replay)
        c2 = time.process_time()
        out.play_cpu_s += c1 - c0
        out.luck_cpu_s += c2 - c1
        out.deals += result.deals
        a, b = seating.index(0), seating.index(1)
        ra, rb = result.ranks[a], result.ranks[b]
        y = 1.0 if ra < rb else 0.5 if ra == rb else 0.0
        out.raw.append(y)
        out.adjusted.append(y - (luck.pair(a, b) if luck is not None else 0.0))
    return out


def games_for_20_elo(var_set: float, games_per_set: int) -> float:
    """Games for a 95% interval of +-20 Elo when a set's mean has variance ``var_set``."""
    se = 20.0 / ELO_PER_SCORE / 1.96
    return math.ceil(var_set / se**2) * games_per_set if var_set > 0 else 0.0


def summarize(pair: str, sets: Sequence[SetOutcome], *, bootstrap: int = 2000,
              seed: int = 0) -> dict[str, Any]:
    raw = np.array([np.mean(s.raw) for s in sets])
    adj = np.array([np.mean(s.adjusted) for s in sets])
    games = sum(len(s.raw) for s in sets)
    per_set = len(sets[0].raw) if sets else 6
    out: dict[str, Any] = {"pair": pair, "sets": len(sets), "games": games}
    if len(sets) < 2:
        return out
    var_raw, var_adj = float(raw.var(ddof=1)), float(adj.var(ddof=1))
    rng = np.random.Generator(np.random.PCG64(seed))
    idx = rng.integers(0, len(sets), size=(bootstrap, len(sets)))
    vr = raw[idx].var(axis=1, ddof=1)
    va = adj[idx].var(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(va > 0, vr / va, np.nan)
    lo, hi = np.nanquantile(ratios, [0.025, 0.975])
    diff = adj - raw
    se_diff = float(diff.std(ddof=1) / math.sqrt(len(diff)))
    play = sum(s.play_cpu_s for s in sets)
    luck = sum(s.luck_cpu_s for s in sets)
    out.update({
        "mean_raw": round(float(raw.mean()), 4),
        "mean_adjusted": round(float(adj.mean()), 4),
        "var_set_raw": round(var_raw, 6),
        "var_set_adjusted": round(var_adj, 6),
        "vrf": round(var_raw / var_adj, 3) if var_adj > 0 else None,
        "vrf_95": [round(float(lo), 3), round(float(hi), 3)],
        "games_for_20_elo_raw": games_for_20_elo(var_raw, per_set),
        "games_for_20_elo_adjusted": games_for_20_elo(var_adj, per_set),
        "mean_adjusted_minus_raw": round(float(diff.mean()), 5),
        "mean_adjusted_minus_raw_95": [round(float(diff.mean() - 1.96 * se_diff), 5),
                                       round(float(diff.mean() + 1.96 * se_diff), 5)],
        "deals_per_game": round(sum(s.deals for s in sets) / games, 1),
        "play_cpu_ms_per_game": round(1000 * play / games, 2),
        "luck_cpu_ms_per_game": round(1000 * luck / games, 3),
        "luck_cpu_share": round(luck / play, 4) if play > 0 else None,
    })
    return out


def run(pairs: Sequence[str], sets: int, seed: str, iterations: int, max_deals: int | None,
        jobs: int) -> dict[str, list[SetOutcome]]:
    args = [(p, i, seed, iterations, max_deals) for p in pairs for i in range(sets)]
    if jobs <= 1:
        done = [play_set(*a) for a in args]
    else:
        with cf.ProcessPoolExecutor(max_workers=jobs) as pool:
            done = list(pool.map(play_set, *zip(*args, strict=True)))
    return {p: [s for s in done if s.pair == p] for p in pairs}


def _format(res: dict[str, Any]) -> str:
    lines = [f"luck model {res['model']} ({res['preset']}), {res['sets']} duplicate sets a "
             f"pair, every seating, third seat greedy; {res['seconds']} s, jobs {res['jobs']}, "
             f"load {res['load']}"]
    for p in res["pairs"]:
        if "vrf" not in p:
            lines.append(f"  {p['pair']}: too few sets")
            continue
        lines.append(
            f"  {p['label']}: {p['games']} games, {p['deals_per_game']} deals a game\n"
            f"    set mean: raw {p['mean_raw']:.4f} (var {p['var_set_raw']:.5f}), adjusted "
            f"{p['mean_adjusted']:.4f} (var {p['var_set_adjusted']:.5f})\n"
            f"    VRF {p['vrf']} (95% {p['vrf_95'][0]} to {p['vrf_95'][1]}); games for +-20 "
            f"Elo: raw {p['games_for_20_elo_raw']}, adjusted {p['games_for_20_elo_adjusted']}\n"
            f"    adjusted - raw: {p['mean_adjusted_minus_raw']:+.5f} (95% "
            f"{p['mean_adjusted_minus_raw_95'][0]:+.5f} to "
            f"{p['mean_adjusted_minus_raw_95'][1]:+.5f})\n"
            f"    CPU a game: play {p['play_cpu_ms_per_game']} ms, luck "
            f"{p['luck_cpu_ms_per_game']} ms ({100 * (p['luck_cpu_share'] or 0):.2f}%)")
    return "\n".join(lines)


LABELS = {"search": "search (N worlds) vs search (N/10)", "greedy": "greedy vs cautious"}


def bench_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=100, help="duplicate sets a pair (100)")
    parser.add_argument("--pairs", default="search,greedy",
                        help="which pairs: search, greedy or both (default search,greedy)")
    parser.add_argument("--search-iterations", type=int, default=40,
                        help="worlds a decision of the stronger search (default 40)")
    parser.add_argument("--max-deals", type=int, help="deal limit (default: to the target)")
    parser.add_argument("--seed", default="1")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(list(argv) if argv is not None else None)
    pairs = [p.strip() for p in args.pairs.split(",") if p.strip()]
    bad = [p for p in pairs if p not in LABELS]
    if bad or not pairs:
        print(f"{PROG}: --pairs: unknown pair {', '.join(bad) or '(none)'}: use search, greedy",
              file=sys.stderr)
        return 2
    if args.sets < 2 or args.search_iterations < 10 or args.jobs < 1:
        print(f"{PROG}: --sets must be at least 2, --search-iterations at least 10 and --jobs "
              "at least 1", file=sys.stderr)
        return 2
    if args.max_deals is not None and args.max_deals < 1:
        print(f"{PROG}: --max-deals must be positive", file=sys.stderr)
        return 2
    from arena.engine import Rules
    from arena.ratings.luck import model_for

    model = model_for(Rules.preset(PRESET))
    if model is None:
        print(f"{PROG}: no luck model for {PRESET}: train one with arena ratings train-luck",
              file=sys.stderr)
        return 2
    load = os.getloadavg()
    started = time.monotonic()
    played = run(pairs, args.sets, args.seed, args.search_iterations, args.max_deals, args.jobs)
    res: dict[str, Any] = {
        "model": model.short, "preset": PRESET, "sets": args.sets, "jobs": args.jobs,
        "search_iterations": args.search_iterations, "max_deals": args.max_deals,
        "seconds": round(time.monotonic() - started, 1),
        "load": " ".join(f"{x:.2f}" for x in load),
        "pairs": [],
    }
    for p in pairs:
        summary = summarize(p, played[p])
        summary["label"] = LABELS[p].replace("N", str(args.search_iterations), 1).replace(
            "N/10", str(max(1, args.search_iterations // 10)))
        res["pairs"].append(summary)
    print(json.dumps(res, indent=2) if args.json else _format(res))
    return 0
