"""``arena bench strength``: how much stronger a bot is than an opponent, in Elo.

The bot plays duplicate sets against copies of the opponent: each set is one seeded deal
sequence played once for every seating of the table, so every player holds every hand
and card luck cancels out.  Seats that differ only by which copy of the same opponent
sits where give the same game and are played once; with one opponent bot the sets are
therefore as many games as there are seats.  Set seeds derive from ``--seed`` exactly as
a tournament's duplicate sets do (SHA-256 of ``SEED/set/INDEX``).

Each game gives one pairwise result of the bot against every opponent seat (finishing
above it, level, below).  The Elo difference is the Bradley-Terry fit of those results
(:mod:`arena.ratings`), anchored at the opponent, with a 95% interval from a bootstrap
over whole sets: games of a set share their deals, so the set is the independent unit.

Every decision of the bot is timed as the referee times it (wall clock, from the request
to the answer) and by the CPU time of the deciding thread; the report gives percentiles
of both with the machine's load average, since on a busy machine the wall clock also
counts the time other processes held the CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures as cf
import hashlib
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from arena.engine import EngineError, Rules, RulesError
from arena.match.types import JSON, DecisionRequest, MatchSpec, Seat

PROG = "arena bench strength"


@dataclass
class GameRecord:
    set_index: int
    bot_seat: int
    scores: list[int]
    ranks: list[int]
    deals: int
    strikes: int


@dataclass
class SetResult:
    index: int
    games: list[GameRecord] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    #: Whether each decision had a choice (more than one legal action).
    chose: list[bool] = field(default_factory=list)
    seconds: float = 0.0


class TimedSeat:
    """A seat that records how long each of its decisions took."""

    def __init__(self, inner: Seat, wall: list[float], cpu: list[float],
                 chose: list[bool]) -> None:
        self.inner = inner
        self.chose = chose
        self.name = inner.name
        self.in_process = bool(getattr(inner, "in_process", False))
        self.wants_events = bool(getattr(inner, "wants_events", True))
        self.wall = wall
        self.cpu = cpu

    async def decide(self, request: DecisionRequest) -> str:
        w0 = time.perf_counter()
        c0 = time.thread_time()
        answer = await self.inner.decide(request)
        self.cpu.append((time.thread_time() - c0) * 1000.0)
        self.wall.append((time.perf_counter() - w0) * 1000.0)
        self.chose.append(len(request.legal) > 1)
        return answer

    async def on_event(self, match_id: str, event: JSON) -> None:
        await self.inner.on_event(match_id, event)


def seatings(players: int, mode: str) -> list[tuple[int, ...]]:
    """Which table member sits in each seat; member 0 is the bot, the others opponents."""
    if mode == "latin":
        from arena.tournament.seating import latin_seatings

        return latin_seatings(players)
    return [tuple(p) for p in itertools.permutations(range(players))]


def set_specs(bot: str, opponent: str, preset: str, options: JSON, seed: str, index: int,
              mode: str, max_deals: int | None) -> list[tuple[MatchSpec, int]]:
    """The distinct games of one duplicate set, with the bot's seat in each."""
    rules = Rules.preset(preset, **options)
    n = rules.players
    set_seed = hashlib.sha256(f"{seed}/set/{index}".encode()).hexdigest()
    out: list[tuple[MatchSpec, int]] = []
    seen: set[tuple[str, ...]] = set()
    for seating in seatings(n, mode):
        bots = tuple(bot if member == 0 else opponent for member in seating)
        if bots in seen:
            continue
        seen.add(bots)
        spec = MatchSpec(
            match_id=hashlib.sha256(f"strength/{seed}/{index}/{len(out)}".encode()).hexdigest()[:32],
            rules={"preset": preset, "options": options},
            seed=set_seed,
            bots=bots,
            max_deals=max_deals,
        )
        out.append((spec, seating.index(0)))
    return out


def play_set(bot: str, opponent: str, preset: str, options: JSON, seed: str, index: int,
             mode: str, max_deals: int | None) -> SetResult:
    """Play one duplicate set in this process (the unit a worker process gets)."""
    from arena.referee.runner import resolve_seat, run_match

    started = time.perf_counter()
    result = SetResult(index)
    for spec, bot_seat in set_specs(bot, opponent, preset, options, seed, index, mode,
                                    max_deals):
        seats: list[Seat] = []
        for i, ref in enumerate(spec.bots):
            seat = resolve_seat(ref, i, spec)
            if i == bot_seat:
                seat = TimedSeat(seat, result.wall_ms, result.cpu_ms, result.chose)
            seats.append(seat)
        res = asyncio.run(run_match(spec, seats))
        result.games.append(GameRecord(index, bot_seat, list(res.scores), list(res.ranks),
                                       res.deals, res.seat_stats[bot_seat].strikes))
    result.seconds = time.perf_counter() - started
    return result


def percentiles(values: Sequence[float]) -> JSON:
    if not values:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    s = sorted(values)

    def at(q: float) -> float:
        # Nearest rank: the smallest value with at least q of the sample at or below it.
        k = max(0, min(len(s) - 1, math.ceil(q * len(s)) - 1))
        return round(s[k], 2)

    return {"p50": at(0.50), "p90": at(0.90), "p99": at(0.99), "max": round(s[-1], 2)}


def summarize(bot: str, opponent: str, preset: str, sets: list[SetResult], *,
              bootstrap: int = 2000) -> JSON:
    """Elo with its interval, pairwise score, wins and the decision-time percentiles."""
    from arena.ratings import PairData, fit_bradley_terry

    a: list[str] = []
    b: list[str] = []
    score: list[float] = []
    groups: list[int] = []
    wins = games = strikes = 0
    margins = 0.0
    for st in sets:
        for g in st.games:
            games += 1
            me = g.bot_seat
            wins += g.ranks[me] == 1
            strikes += g.strikes
            others = [s for s in range(len(g.ranks)) if s != me]
            margins += g.scores[me] - sum(g.scores[s] for s in others) / len(others)
            for o in others:
                a.append("bot")
                b.append("opponent")
                score.append(1.0 if g.ranks[me] < g.ranks[o]
                             else 0.5 if g.ranks[me] == g.ranks[o] else 0.0)
                groups.append(g.set_index)
    out: JSON = {"bot": bot, "opponent": opponent, "preset": preset, "sets": len(sets),
                 "games": games}
    if not games:
        return out
    pairs = PairData.from_pairwise(a, b, score, groups=groups, players=["bot", "opponent"])
    fit = fit_bradley_terry(pairs, anchor="opponent", prior_draws=1.0,
                            n_bootstrap=bootstrap if len(sets) > 1 else 0, seed=0)
    lo, hi = fit.interval("bot")
    wall = [x for st in sets for x in st.wall_ms]
    cpu = [x for st in sets for x in st.cpu_ms]
    chose = [x for st in sets for x in st.chose]
    wall_chosen = [x for x, c in zip(wall, chose, strict=True) if c]
    out.update({
        "elo": round(fit.rating("bot"), 1),
        "elo_95": [None if math.isnan(lo) else round(lo, 1),
                   None if math.isnan(hi) else round(hi, 1)],
        "pair_score": round(sum(score) / len(score), 4),
        "win_rate": round(wins / games, 4),
        "fair_win_rate": round(1 / len(sets[0].games[0].ranks), 4),
        "mean_margin": round(margins / games, 1),
        "mean_deals": round(sum(g.deals for st in sets for g in st.games) / games, 1),
        "strikes": strikes,
        "decisions": len(wall),
        "decisions_with_choice": len(wall_chosen),
        "decision_ms": percentiles(wall),
        "decision_with_choice_ms": percentiles(wall_chosen),
        "decision_cpu_ms": percentiles(cpu),
        "play_seconds": round(sum(st.seconds for st in sets), 1),
    })
    return out


def run(bot: str, opponent: str, preset: str, options: JSON, *, sets: int, seed: str,
        mode: str, max_deals: int | None, jobs: int) -> list[SetResult]:
    args = [(bot, opponent, preset, options, seed, j, mode, max_deals) for j in range(sets)]
    if jobs <= 1:
        return [play_set(*a) for a in args]
    with cf.ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(play_set, *a) for a in args]
        return [f.result() for f in futures]


def _format(res: JSON, load: tuple[float, float, float], elapsed: float, jobs: int) -> str:
    lines = [
        f"{res['bot']} against {res['opponent']}, {res['preset']}: {res['sets']} duplicate "
        f"sets, {res['games']} games (every seating), {res.get('mean_deals', 0)} deals a game",
    ]
    if "elo" not in res:
        return lines[0]
    lo, hi = res["elo_95"]
    ci = f"95% CI {lo:+.0f} to {hi:+.0f}" if lo is not None else "no CI with one set"
    lines += [
        f"  Elo difference  {res['elo']:+.0f}  ({ci}; sets resampled)",
        f"  pairwise score  {res['pair_score']:.1%} against each opponent seat; "
        f"won {res['win_rate']:.1%} of games (a fair share is {res['fair_win_rate']:.1%})",
        f"  mean margin     {res['mean_margin']:+.0f} points over the opponents' mean; "
        f"strikes {res['strikes']}",
    ]
    lines.append(f"  decision time over {res['decisions']} decisions "
                 f"({res['decisions_with_choice']} with more than one legal action):")
    for label, key in (("wall clock", "decision_ms"), ("thread CPU", "decision_cpu_ms"),
                       ("wall, choice", "decision_with_choice_ms")):
        p = res[key]
        if p["p50"] is not None:
            lines.append(f"    {label:<12} p50 {p['p50']:5.1f} ms  p90 {p['p90']:5.1f} ms  "
                         f"p99 {p['p99']:5.1f} ms  max {p['max']:6.1f} ms")
    lines.append(f"  took {elapsed:.0f} s with {jobs} process(es); load average "
                 f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bot", default="search", help="the bot under test (any bot reference)")
    p.add_argument("--opponent", default="greedy", help="the bot in every other seat")
    p.add_argument("--preset", default="classic", help="rules preset")
    p.add_argument("-o", "--option", action="append", default=[],
                   help="rules option NAME=VALUE (repeatable)")
    p.add_argument("--sets", type=int, default=10, help="duplicate sets (default 10)")
    p.add_argument("--seed", default="strength", help="seed of the deal sequences")
    p.add_argument("--seatings", choices=("all", "latin"), default="all",
                   help="all seat permutations (default) or a Latin square")
    p.add_argument("--max-deals", type=int, default=0,
                   help="end each game after this many deals (default 0: play to the target)")
    p.add_argument("--jobs", type=int, default=1,
                   help="worker processes, one set at a time each (default 1: one core)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    return p


def bench_main(argv: Sequence[str] | None = None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    if args.sets < 1 or args.jobs < 1 or args.max_deals < 0:
        print(f"{PROG}: --sets and --jobs must be at least 1, --max-deals at least 0",
              file=sys.stderr)
        return 2
    from arena.cli import _parse_options
    from arena.referee.runner import resolve_seat

    try:
        options = _parse_options(args.option)
        Rules.preset(args.preset, **options)
        for ref in (args.bot, args.opponent):
            probe = set_specs(ref, ref, args.preset, options, args.seed, 0, "latin", None)
            resolve_seat(ref, 0, probe[0][0])
    except (RulesError, EngineError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        sets = run(args.bot, args.opponent, args.preset, options, sets=args.sets,
                   seed=args.seed, mode=args.seatings, max_deals=args.max_deals or None,
                   jobs=args.jobs)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    elapsed = time.perf_counter() - started
    res = summarize(args.bot, args.opponent, args.preset, sets)
    load = os.getloadavg()
    res.update(seed=args.seed, seatings=args.seatings, max_deals=args.max_deals or None,
               jobs=args.jobs, seconds=round(elapsed, 1), load=[round(x, 2) for x in load])
    if args.json:
        print(json.dumps(res))
    else:
        print(_format(res, load, elapsed, args.jobs))
    return 0
