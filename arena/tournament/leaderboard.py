"""The leaderboard: Bradley-Terry ratings with 95% intervals plus the plain counts behind them.

Ratings come from :mod:`arena.ratings`, with duplicate sets as the unit of the bootstrap
(the store's ``group`` column), so the interval reflects how many independent deal
sequences were played, not how many games.  Timeouts and illegal moves are shown next to
the rating because a bot that wins by luck of the fallback policy should be visible.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from arena.ratings import GameTable, PairData, ratings_table
from arena.tournament.model import ResultRecord
from arena.tournament.spec import DEFAULT_DB
from arena.tournament.store import ResultStore, StoreError, StoreUnavailable

BOOTSTRAP = 200


@dataclass(frozen=True)
class LeaderRow:
    """One line of the leaderboard (ratings on the Elo scale, mean 0)."""

    rank: int
    player: str
    bot: str
    rating: float
    ci_low: float
    ci_high: float
    games: int
    mean_score: float
    win_rate: float
    timeouts: int
    illegal: int
    strikes: int
    forfeits: int
    #: False when the results bound no rating difference between this player and some
    #: other: one side won every game against the other (directly or through a chain), so
    #: the rating there is the prior's, and the bootstrap interval measures nothing.
    bounded: bool = True

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        for key in ("rating", "ci_low", "ci_high", "mean_score", "win_rate"):
            value = data[key]
            data[key] = None if value is None or not math.isfinite(value) else round(value, 4)
        return data


def game_table(records: Sequence[ResultRecord]) -> GameTable:
    """Results as the array form the ratings need (scales to millions of rows)."""
    names = sorted({p for r in records for p in r.players})
    index = {p: i for i, p in enumerate(names)}
    n = len(records)
    seats = np.full((n, 4), -1, dtype=np.int64)
    ranks = np.zeros((n, 4), dtype=np.int64)
    scores = np.zeros((n, 4), dtype=np.float64)
    group_ids: dict[tuple[str, str], int] = {}
    groups = np.empty(n, dtype=np.int64)
    for g, r in enumerate(records):
        k = len(r.players)
        seats[g, :k] = [index[p] for p in r.players]
        ranks[g, :k] = r.ranks
        scores[g, :k] = r.scores
        groups[g] = group_ids.setdefault((r.tournament, r.group), len(group_ids))
    width = max(2, max((len(r.players) for r in records), default=2))
    return GameTable.from_arrays(
        names, seats[:, :width], ranks[:, :width], groups, scores[:, :width]
    )


def compute_leaderboard(
    records: Iterable[ResultRecord], *, n_bootstrap: int = BOOTSTRAP, seed: int = 0
) -> list[LeaderRow]:
    """Rate the players of ``records``; rows best first."""
    recs = [r for r in records if len(r.players) >= 2]
    if not recs:
        return []
    table = game_table(recs)
    rated = ratings_table(table, n_bootstrap=n_bootstrap, seed=seed)
    bounded = _bounded_players(table)
    counts: dict[str, dict[str, int]] = {}
    bots: dict[str, str] = {}
    for r in recs:
        for seat, name in enumerate(r.players):
            c = counts.setdefault(name, {"timeouts": 0, "illegal": 0, "strikes": 0, "forfeits": 0})
            stats = r.seat_stats[seat] if seat < len(r.seat_stats) else {}
            c["timeouts"] += int(stats.get("timeouts", 0))
            c["illegal"] += int(stats.get("illegal", 0))
            c["strikes"] += int(stats.get("strikes", 0))
            if r.forfeit_seat == seat:
                c["forfeits"] += 1
            if seat < len(r.bots):
                bots[name] = r.bots[seat]
    rows = []
    for i, row in enumerate(rated, start=1):
        c = counts.get(row.player, {})
        rows.append(
            LeaderRow(
                rank=i,
                player=row.player,
                bot=bots.get(row.player, ""),
                rating=row.rating,
                ci_low=row.ci_low,
                ci_high=row.ci_high,
                games=row.games,
                mean_score=row.mean_score,
                win_rate=row.win_rate,
                timeouts=c.get("timeouts", 0),
                illegal=c.get("illegal", 0),
                strikes=c.get("strikes", 0),
                forfeits=c.get("forfeits", 0),
                bounded=row.player in bounded,
            )
        )
    return rows


def _bounded_players(table: GameTable) -> set[str]:
    """The players whose rating the results bound, without the prior.

    The maximum-likelihood ratings exist exactly when the graph "i scored at least half a
    point against j" is strongly connected (Zermelo; Hunter 2004). Otherwise the players
    split into groups, one of which won every game against another; ratings across them
    are whatever the prior's virtual draw makes them, and every bootstrap replicate
    agrees, so a narrow interval there would be a false precision. With one group every
    player is bounded; with several, none is (the mean-0 scale ties them together).
    """
    from scipy.sparse.csgraph import connected_components

    pairs = PairData.from_table(table)
    wins, _ = pairs.totals()
    played = (wins + wins.T) > 0
    if not played.any():
        return set()
    groups, _ = connected_components(wins > 0, directed=True, connection="strong")
    return set(pairs.players) if groups == 1 else set()


def load_records(store: ResultStore, tournament: str | None) -> list[ResultRecord]:
    if tournament is not None:
        known = {t.name for t in store.tournaments()}
        if tournament not in known:
            names = ", ".join(sorted(known)) or "none"
            raise StoreError(f"no tournament '{tournament}' in {store.url} (tournaments: {names})")
    return list(store.iter_results(tournament))


def _num(value: float, digits: int = 1) -> str:
    return "-" if not math.isfinite(value) else f"{value:.{digits}f}"


def _interval(r: LeaderRow) -> str:
    """The interval as its bounds and their distance from the rating: bootstrap intervals
    are seldom symmetric, and a lopsided one written as ``± half-width`` puts the rating
    where it is not."""
    bounds, spread = _interval_parts(r)
    return f"{bounds}  {spread}" if spread else bounds


def _interval_parts(r: LeaderRow) -> tuple[str, str]:
    """The interval's bounds, and their distances below and above the rating."""
    if not r.bounded:
        return "unbounded (see below)", ""
    if not (math.isfinite(r.ci_low) and math.isfinite(r.ci_high)):
        return "-", ""
    below, above = r.rating - r.ci_low, r.ci_high - r.rating
    return f"[{_num(r.ci_low)}, {_num(r.ci_high)}]", f"-{_num(below)} +{_num(above)}"


def _aligned(cells: Sequence[str], sep: str) -> list[str]:
    """Cells of two parts (``[low, high]``, ``-below +above``) padded so that each part
    lines up down the column; cells without the separator are left as they are."""
    split = [c.split(sep, 1) if sep in c else None for c in cells]
    parts = [s for s in split if s is not None]
    if not parts:
        return list(cells)
    left = max(len(a) for a, _ in parts)
    right = max(len(b) for _, b in parts)
    return [c if s is None else f"{s[0].rjust(left)}{sep}{s[1].rjust(right)}"
            for c, s in zip(cells, split, strict=True)]


def unbounded_note(rows: Sequence[LeaderRow]) -> str | None:
    """Why the intervals are missing, when the results bound no rating difference."""
    if not rows or all(r.bounded for r in rows):
        return None
    import textwrap

    return textwrap.fill(
        "No interval: some players won every game against others (directly or through a "
        "chain), so the results set no bound on how far apart they are; the ratings shown "
        "come from the prior (one virtual draw a player). More games between them, or "
        "closer opponents, give intervals.", width=90)


def format_table(rows: Sequence[LeaderRow]) -> str:
    """A fixed-width text table for a terminal.

    The interval takes two columns, its bounds and their distances from the rating, each
    padded so the brackets and signs line up: written as one cell, the distances ran into
    the column after it."""
    head: tuple[str, ...] = (
        "#",
        "player",
        "rating",
        "95% CI",
        "-/+",
        "games",
        "mean score",
        "win %",
        "timeouts",
        "illegal",
        "strikes",
        "forfeits",
    )
    parts = [_interval_parts(r) for r in rows]
    bounds = _aligned([b for b, _ in parts], ", ")
    spreads = _aligned([d for _, d in parts], " ")
    body: list[tuple[str, ...]] = []
    for r, ci, spread in zip(rows, bounds, spreads, strict=True):
        body.append(
            (
                str(r.rank),
                r.player,
                _num(r.rating),
                ci,
                spread,
                str(r.games),
                _num(r.mean_score),
                _num(100 * r.win_rate),
                str(r.timeouts),
                str(r.illegal),
                str(r.strikes),
                str(r.forfeits),
            )
        )
    widths = [
        max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)
    ]
    right = {0, 2, 5, 6, 7, 8, 9, 10, 11}

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)
        ).rstrip()

    if not any(spreads):  # no interval at all: no column of blanks
        keep = [i for i in range(len(head)) if i != 4]
        head = tuple(head[i] for i in keep)
        body = [tuple(b[i] for i in keep) for b in body]
        widths = [widths[i] for i in keep]
        right = {keep.index(i) for i in right}
    lines = [fmt(head), fmt(["-" * w for w in widths])]
    lines.extend(fmt(b) for b in body)
    return "\n".join(lines)


CSV_FIELDS = (
    "rank",
    "player",
    "bot",
    "rating",
    "ci_low",
    "ci_high",
    "games",
    "mean_score",
    "win_rate",
    "timeouts",
    "illegal",
    "strikes",
    "forfeits",
    "bounded",
)


def _csv_value(value: object) -> object:
    """A value as a CSV cell: empty for none, ``true``/``false`` for a truth value (as in
    the JSON, and as spreadsheets and pandas read it), the rest as it is."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def format_csv(rows: Sequence[LeaderRow]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: _csv_value(v) for k, v in r.to_json().items()})
    return out.getvalue()


def scope_line(tournament: str | None, tournaments: Sequence[str], games: int) -> str:
    """What the table rates: one tournament, or several pooled into one rating (which
    treats a game of one like a game of another, whatever their rules or fields)."""
    if tournament is not None:
        return f"tournament {tournament}: {games} games"
    if len(tournaments) == 1:
        return f"tournament {tournaments[0]}: {games} games"
    names = ", ".join(tournaments)
    return (f"{len(tournaments)} tournaments pooled into one rating ({names}): {games} games; "
            "--tournament NAME rates one")


def leaderboard_main(argv: Sequence[str] | None = None) -> int:
    """``arena leaderboard``: ratings and counts from the results store."""
    parser = argparse.ArgumentParser(
        prog="arena leaderboard", description="Show ratings with 95% intervals from stored results."
    )
    parser.add_argument(
        "--db",
        default=os.environ.get("ARENA_DB_URL") or DEFAULT_DB,
        help=f"results database (default $ARENA_DB_URL, else {DEFAULT_DB})",
    )
    parser.add_argument("--tournament", "-t", help="one tournament (default: all in the database)")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON")
    out.add_argument("--csv", action="store_true", help="print CSV")
    parser.add_argument("--bootstrap", type=int, default=BOOTSTRAP, help="bootstrap replicates")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.bootstrap < 0:
        parser.error("--bootstrap must be 0 or more")
    try:
        with ResultStore(args.db, create=False) as store:
            records = load_records(store, args.tournament)
    except StoreUnavailable as exc:
        print(f"arena leaderboard: {exc}", file=sys.stderr)
        return 3
    except StoreError as exc:
        print(f"arena leaderboard: {exc}", file=sys.stderr)
        return 2
    rows = compute_leaderboard(records, n_bootstrap=args.bootstrap)
    pooled = sorted({r.tournament for r in records}) if args.tournament is None else [
        args.tournament]
    if args.json:
        payload = {
            "tournament": args.tournament,
            "tournaments": pooled,
            "matches": len(records),
            "rows": [r.to_json() for r in rows],
        }
        print(json.dumps(payload, indent=2))
    elif args.csv:
        sys.stdout.write(format_csv(rows))
    elif not rows:
        print("no results yet")
    else:
        print(scope_line(args.tournament, pooled, len(records)))
        print(format_table(rows))
        note = unbounded_note(rows)
        if note:
            print(note)
    if (args.json or args.csv) and len(pooled) > 1:
        # The table says it in its first line; CSV and JSON have none, so stderr does.
        print(f"arena leaderboard: {len(pooled)} tournaments pooled into one rating "
              f"({', '.join(pooled)}); --tournament NAME rates one", file=sys.stderr)
    return 0
