"""``arena bots compare``: one bot against another over many seeded games.

The bot under test sits in one seat and the opponent fills the others; the seat rotates
from game to game so that no bot keeps a lucky position.  Each game has its own seed
derived from ``--seed``, so the same command prints the same figures on any machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections.abc import Sequence

from arena.engine import EngineError, Rules
from arena.match.types import JSON, MatchSpec
from arena.referee.runner import resolve_seats, run_match


async def compare(bot: str, opponent: str, *, games: int, seed: str, preset: str,
                  max_deals: int | None) -> JSON:
    players = Rules.preset(preset).players
    wins = 0
    scores = 0
    margins = 0
    strikes = 0
    for g in range(games):
        seat = g % players
        bots = tuple(bot if s == seat else opponent for s in range(players))
        spec = MatchSpec(match_id=f"compare-{g}", rules={"preset": preset},
                         seed=f"{seed}/{g}", bots=bots, max_deals=max_deals)
        result = await run_match(spec, resolve_seats(spec))
        wins += result.ranks[seat] == 1
        scores += result.scores[seat]
        margins += result.scores[seat] - max(
            result.scores[s] for s in range(players) if s != seat
        )
        strikes += result.seat_stats[seat].strikes
    rate = wins / games
    # Wilson score interval, 95 %.
    z = 1.96
    centre = (rate + z * z / (2 * games)) / (1 + z * z / games)
    half = z * math.sqrt(rate * (1 - rate) / games + z * z / (4 * games * games)) / (
        1 + z * z / games
    )
    return {
        "bot": bot, "opponent": opponent, "preset": preset, "seed": seed, "games": games,
        "max_deals": max_deals, "wins": wins, "win_rate": rate,
        "win_rate_95": [max(0.0, min(rate, centre - half)), min(1.0, max(rate, centre + half))],
        "fair_share": 1 / players, "mean_score": scores / games,
        "mean_margin": margins / games, "strikes": strikes,
    }


def compare_main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="arena bots compare", description=__doc__)
    p.add_argument("bot", help="the bot under test (random, greedy, module:Class, file.py:Class)")
    p.add_argument("opponent", help="the bot in every other seat")
    p.add_argument("--games", type=int, default=200)
    p.add_argument("--seed", default="compare")
    p.add_argument("--rules", default="classic", help="rules preset")
    p.add_argument("--max-deals", type=int, default=30,
                   help="deal limit per game, 0 for none (default 30)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.games < 1:
        print("arena bots compare: --games must be at least 1", file=sys.stderr)
        return 2
    try:
        res = asyncio.run(compare(args.bot, args.opponent, games=args.games, seed=args.seed,
                                  preset=args.rules, max_deals=args.max_deals or None))
    except (EngineError, ValueError) as exc:
        print(f"arena bots compare: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res))
        return 0
    lo, hi = res["win_rate_95"]
    print(f"{res['bot']} against {res['opponent']} x{Rules.preset(args.rules).players - 1}, "
          f"{res['preset']}, {res['games']} games, seed {res['seed']!r}, "
          f"max {res['max_deals']} deals")
    print(f"  wins {res['wins']}/{res['games']} = {res['win_rate']:.1%} "
          f"(95% {lo:.1%}-{hi:.1%}; a fair share is {res['fair_share']:.1%})")
    print(f"  mean final score {res['mean_score']:.0f}, mean margin over the best opponent "
          f"{res['mean_margin']:+.0f}, strikes {res['strikes']}")
    return 0
