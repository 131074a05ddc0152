"""Benchmark of the ratings pipeline on synthetic duplicate tournaments.

Run ``python -m arena.bench.ratings [--n-results N]``; :func:`bench_ratings` returns the same
figures as a dict for other tools (``arena bench tournament``). Timing lives here and not in
the tests, so a slow CI machine never turns a correct library red.

The synthetic data mimics duplicate play: each set draws ``seats`` players, one shared "deal
luck" per seat position, and plays every seat permutation, so games in a set are correlated
exactly the way the bootstrap over groups must account for.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from collections.abc import Sequence

import numpy as np

from arena.ratings.bradley_terry import fit_bradley_terry
from arena.ratings.data import FloatArray, GameResult, GameTable, PairData
from arena.ratings.live import LiveLeague
from arena.ratings.sprt import Sprt
from arena.ratings.table import DEFAULT_BOOTSTRAP, ratings_table


def synthetic_duplicate_table(
    n_results: int, *, n_players: int = 20, seats: int = 3, seed: int = 0
) -> tuple[GameTable, FloatArray]:
    """A table of exactly ``n_results`` games in duplicate sets, and the true strengths (Elo).

    Strengths are spread evenly over ±300 Elo; a player's performance in a game is its
    strength plus the luck of its seat in that set's deal.
    """
    if n_results < 1:
        raise ValueError(f"n_results must be positive, got {n_results}")
    if not 2 <= seats <= 4 or n_players < seats:
        raise ValueError("need 2-4 seats and at least as many players as seats")
    rng = np.random.Generator(np.random.PCG64(seed))
    perms = np.array(list(itertools.permutations(range(seats))))
    n_sets = -(-n_results // len(perms))
    true_elo = np.linspace(-300.0, 300.0, n_players)
    theta = true_elo * math.log(10.0) / 400.0
    members = np.argsort(rng.random((n_sets, n_players)), axis=1)[:, :seats]
    seat_players = members[:, perms]  # (sets, perms, seats)
    # One Gumbel "deal luck" per seat, shared by every permutation of the set: each game on
    # its own is exactly Plackett-Luce (so Bradley-Terry on its pairs is consistent), while
    # the games of a set are strongly dependent, as in real duplicate play.
    luck = rng.gumbel(size=(n_sets, 1, seats))
    perf = theta[seat_players] + luck
    ranks = 1 + (perf[..., :, None] < perf[..., None, :]).sum(axis=-1)
    points = np.where(ranks == 1, 1000, rng.integers(0, 1000, size=ranks.shape))
    groups = np.repeat(np.arange(n_sets), len(perms))
    names = [f"bot{i:02d}" for i in range(n_players)]
    table = GameTable.from_arrays(
        names,
        seat_players.reshape(-1, seats)[:n_results],
        ranks.reshape(-1, seats)[:n_results],
        groups[:n_results],
        points.reshape(-1, seats)[:n_results],
    )
    return table, true_elo


def bench_ratings(
    n_results: int = 1_000_000,
    *,
    n_players: int = 20,
    seats: int = 3,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    live_games: int = 5_000,
) -> dict[str, float | int]:
    """Time each stage on ``n_results`` synthetic games; seconds unless the key says otherwise.

    ``table_s`` is the headline: ``ratings_table`` end to end (pairwise aggregation, fit,
    ``n_bootstrap`` group-bootstrap replicates, per-player figures) on the array input.
    ``max_abs_error_elo`` checks the fit recovered the true strengths, so a fast but wrong
    build does not look good.
    """
    out: dict[str, float | int] = {
        "n_results": n_results,
        "n_players": n_players,
        "seats": seats,
        "n_bootstrap": n_bootstrap,
    }
    t = time.perf_counter()
    table, true_elo = synthetic_duplicate_table(
        n_results, n_players=n_players, seats=seats, seed=seed
    )
    out["generate_s"] = time.perf_counter() - t
    out["n_groups"] = table.n_groups

    t = time.perf_counter()
    pairs = PairData.from_table(table)
    out["aggregate_s"] = time.perf_counter() - t
    out["pair_entries"] = int(pairs.group.size)

    t = time.perf_counter()
    fit = fit_bradley_terry(pairs, prior_draws=1.0)
    out["fit_s"] = time.perf_counter() - t

    t = time.perf_counter()
    fit_bradley_terry(pairs, prior_draws=1.0, n_bootstrap=n_bootstrap, seed=seed)
    out["fit_with_bootstrap_s"] = time.perf_counter() - t

    t = time.perf_counter()
    ratings_table(table, n_bootstrap=n_bootstrap, seed=seed)
    out["table_s"] = time.perf_counter() - t
    truth = true_elo - true_elo.mean()
    out["max_abs_error_elo"] = float(np.max(np.abs(fit.ratings - truth)))

    t = time.perf_counter()
    sprt = Sprt(0.0, 5.0)
    a, b = pairs.players[-1], pairs.players[-2]
    set_scores, _ = pairs.group_scores(a, b)
    result = sprt.scores(set_scores, games_per_sample=math.factorial(seats))
    out["sprt_s"] = time.perf_counter() - t
    out["sprt_llr"] = result.llr

    n_live = min(live_games, n_results)
    results = _to_results(table, n_live)
    t = time.perf_counter()
    GameTable.from_results(results)
    elapsed = time.perf_counter() - t
    # GameResult objects are the convenient input but cost per game; this rate says when a
    # caller should build a GameTable from arrays instead.
    out["from_results_per_s"] = n_live / elapsed if elapsed > 0 else math.inf
    league = LiveLeague(seats=seats)
    t = time.perf_counter()
    league.update_many(results)
    elapsed = time.perf_counter() - t
    out["live_games"] = n_live
    out["live_updates_per_s"] = n_live / elapsed if elapsed > 0 else math.inf
    return out


def _to_results(table: GameTable, n: int) -> list[GameResult]:
    out = []
    for g in range(n):
        occ = table.seats[g] >= 0
        out.append(
            GameResult(
                tuple(table.players[i] for i in table.seats[g][occ]),
                tuple(float(s) for s in table.scores[g][occ]),
                tuple(int(r) for r in table.ranks[g][occ]),
                int(table.groups[g]),
            )
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="arena bench ratings", description="Benchmark the ratings library."
    )
    parser.add_argument("--n-results", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=20)
    parser.add_argument("--seats", type=int, default=3, choices=(2, 3, 4))
    parser.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    for name in ("n_results", "players", "bootstrap"):
        if getattr(args, name) < (2 if name == "players" else 1 if name == "n_results" else 0):
            parser.error(f"--{name.replace('_', '-')} is too small")
    figures = bench_ratings(
        args.n_results,
        n_players=args.players,
        seats=args.seats,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
    )
    if args.json:
        import json

        print(json.dumps(figures, indent=2))
        return 0
    for line in describe(figures):
        print(line)
    return 0


def describe(f: dict[str, float | int]) -> list[str]:
    """The figures as a reader wants them: what each measures, with its unit."""
    return [
        f"ratings benchmark: {f['n_results']:,} synthetic duplicate games "
        f"({f['n_groups']:,} sets) of {f['n_players']} players, {f['seats']} seats; "
        f"{f['n_bootstrap']} bootstrap replicates",
        f"  leaderboard, end to end        {f['table_s']:8.3f} s   (aggregation, fit, "
        "bootstrap intervals, per-player figures)",
        f"    aggregate into pairs         {f['aggregate_s']:8.3f} s   "
        f"({f['pair_entries']:,} group-pair entries)",
        f"    Bradley-Terry fit            {f['fit_s']:8.3f} s",
        f"    fit with bootstrap           {f['fit_with_bootstrap_s']:8.3f} s",
        f"  accuracy: worst rating error   {f['max_abs_error_elo']:8.2f} Elo  (against the "
        "true strengths)",
        f"  SPRT on one pair's sets        {1000 * float(f['sprt_s']):8.2f} ms  "
        f"(log-likelihood ratio {f['sprt_llr']:.2f})",
        f"  GameResult objects to table    {f['from_results_per_s']:10,.0f} games/s",
        f"  live league (openskill)        {f['live_updates_per_s']:10,.0f} games/s  "
        f"(over {f['live_games']:,} games)",
        f"  synthetic data generated in    {f['generate_s']:8.3f} s",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
