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
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from arena.ratings import GameTable, RatingRow, ratings_table
from arena.tournament.model import ResultRecord
from arena.tournament.store import ResultStore, StoreError, add_db_option, store_failed

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
    #: False when the results set no bound on this player's rating: it won (or lost) every
    #: game against the others (directly or through a chain), so its rating is the prior's
    #: and a bootstrap interval would measure nothing. Others keep their intervals.
    bounded: bool = True
    #: The same rating from luck-adjusted results (NaN when no game has a luck value).
    adj_rating: float = math.nan
    adj_ci_low: float = math.nan
    adj_ci_high: float = math.nan
    adj_bounded: bool = False

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        for key in ("rating", "ci_low", "ci_high", "mean_score", "win_rate", "adj_rating",
                    "adj_ci_low", "adj_ci_high"):
            value = data[key]
            data[key] = None if value is None or not math.isfinite(value) else round(value, 4)
        return data


@dataclass(frozen=True)
class LuckSummary:
    """Which luck models adjusted a leaderboard's games, and how many of them."""

    games: int
    adjusted: int
    models: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"games": self.games, "adjusted": self.adjusted, "models": list(self.models)}

    def line(self) -> str:
        if not self.adjusted:
            return "luck-adjusted: no game has a luck value (no luck model for these rules)"
        models = ", ".join(self.models)
        return (f"luck-adjusted: {self.adjusted} of {self.games} games, luck model {models} "
                "(arena ratings luck-model; docs/ratings.md)")


def luck_summary(records: Sequence[ResultRecord]) -> LuckSummary:
    models: set[str] = set()
    adjusted = 0
    for r in records:
        if isinstance(r.luck, dict) and "model" in r.luck:
            adjusted += 1
            models.add(str(r.luck["model"]))
    return LuckSummary(len(records), adjusted, tuple(sorted(models)))


def game_table(records: Sequence[ResultRecord]) -> GameTable:
    """Results as the array form the ratings need (scales to millions of rows), with the
    luck of each game's seat pairs (0 where a game has none)."""
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
    table = GameTable.from_arrays(
        names, seats[:, :width], ranks[:, :width], groups, scores[:, :width]
    )
    pairs = [(a, b) for a in range(width) for b in range(a + 1, width)]
    luck = np.zeros((n, len(pairs)))
    for g, r in enumerate(records):
        if r.luck is None:
            continue
        for k, (a, b) in enumerate(pairs):
            if b < len(r.players):
                luck[g, k] = r.seat_luck(a, b)
    return table.with_luck(luck)


#: What a row takes from its player's rating under the same names, the counts kept
#: beside it, and what it takes from the luck-adjusted rating under ``adj_`` names.
_RATED = ("player", "rating", "ci_low", "ci_high", "games", "mean_score", "win_rate", "bounded")
_COUNTED = ("timeouts", "illegal", "strikes", "forfeits")
_ADJUSTED = ("rating", "ci_low", "ci_high", "bounded")


def compute_leaderboard(
    records: Iterable[ResultRecord], *, n_bootstrap: int = BOOTSTRAP, seed: int = 0
) -> list[LeaderRow]:
    """Rate the players of ``records``; rows best first."""
    recs = [r for r in records if len(r.players) >= 2]
    if not recs:
        return []
    table = game_table(recs)
    rated = ratings_table(table, n_bootstrap=n_bootstrap, seed=seed)
    adjusted: dict[str, RatingRow] = {}
    if any(r.luck is not None for r in recs):
        adjusted = {row.player: row for row in ratings_table(
            table, n_bootstrap=n_bootstrap, seed=seed, adjusted=True)}
    counts: dict[str, dict[str, int]] = {}
    bots: dict[str, str] = {}
    for r in recs:
        for seat, name in enumerate(r.players):
            c = counts.setdefault(name, dict.fromkeys(_COUNTED, 0))
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
        fields: dict[str, Any] = {key: getattr(row, key) for key in _RATED}
        fields.update(counts.get(row.player, dict.fromkeys(_COUNTED, 0)))
        adj = adjusted.get(row.player)
        if adj is not None:  # else the row's defaults: no luck-adjusted rating
            fields.update({f"adj_{key}": getattr(adj, key) for key in _ADJUSTED})
        rows.append(LeaderRow(rank=i, bot=bots.get(row.player, ""), **fields))
    return rows


def load_records(store: ResultStore, tournament: str | None) -> list[ResultRecord]:
    if tournament is not None:
        known = {t.name for t in store.tournaments()}
        if tournament not in known:
            names = ", ".join(sorted(known)) or "none"
            raise StoreError(f"no tournament '{tournament}' in {store.url} (tournaments: {names})")
        return list(store.iter_results(tournament))
    # Matches a gateway kept (arena serve --store) belong to no tournament: each has rules
    # and a field of its own, and rating them together with a tournament would mislead.
    return [r for r in store.iter_results(None) if r.tournament]


def _num(value: float, digits: int = 1) -> str:
    return "-" if not math.isfinite(value) else f"{value:.{digits}f}"


def interval_text(rating: float, low: float, high: float, bounded: bool) -> str:
    """The interval as its bounds and their distance from the rating: bootstrap intervals
    are seldom symmetric, and a lopsided one written as ``± half-width`` puts the rating
    where it is not. Every view (this table, the web pages, the HTML report) shows this."""
    bounds, spread = interval_parts(rating, low, high, bounded)
    return f"{bounds}  {spread}" if spread else bounds


def interval_parts(rating: float, low: float, high: float, bounded: bool) -> tuple[str, str]:
    """The interval's bounds, and their distances below and above the rating."""
    if not bounded:
        return "unbounded (see below)", ""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "-", ""
    below, above = rating - low, high - rating
    return f"[{_num(low)}, {_num(high)}]", f"-{_num(below)} +{_num(above)}"


def _interval(r: LeaderRow) -> str:
    return interval_text(r.rating, r.ci_low, r.ci_high, r.bounded)


def has_adjusted(rows: Sequence[LeaderRow]) -> bool:
    return any(math.isfinite(r.adj_rating) for r in rows)


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
    """Why some intervals are missing: who the results do not bound, and why."""
    loose = [r.player for r in rows if not r.bounded]
    if has_adjusted(rows):
        loose += [f"{r.player} (adjusted)" for r in rows
                  if math.isfinite(r.adj_rating) and not r.adj_bounded and r.bounded]
    if not rows or not loose:
        return None
    import textwrap

    return textwrap.fill(
        f"No interval for {', '.join(loose)}: won or lost every game against the others "
        "(directly or through a chain), so the results set no bound on how far apart they "
        "are; the rating shown comes from the prior (one virtual draw a player). The other "
        "players' ratings are measured among themselves (their mean is 0) and keep their "
        "intervals. More games, or closer opponents, give intervals.", width=90)


def format_table(rows: Sequence[LeaderRow]) -> str:
    """A fixed-width text table for a terminal.

    The interval takes two columns, its bounds and their distances from the rating, each
    padded so the brackets and signs line up: written as one cell, the distances ran into
    the column after it. The luck-adjusted rating and interval follow the raw ones when the
    games have luck values."""
    adjusted = has_adjusted(rows)
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
    right = {0, 2, 5, 6, 7, 8, 9, 10, 11}
    parts = [interval_parts(r.rating, r.ci_low, r.ci_high, r.bounded) for r in rows]
    bounds = _aligned([b for b, _ in parts], ", ")
    spreads = _aligned([d for _, d in parts], " ")
    adj_parts = [interval_parts(r.adj_rating, r.adj_ci_low, r.adj_ci_high, r.adj_bounded)
                 for r in rows]
    adj_bounds = _aligned([b for b, _ in adj_parts], ", ")
    adj_spreads = _aligned([d for _, d in adj_parts], " ")
    body: list[tuple[str, ...]] = []
    for i, r in enumerate(rows):
        body.append(
            (
                str(r.rank),
                r.player,
                _num(r.rating),
                bounds[i],
                spreads[i],
                str(r.games),
                _num(r.mean_score),
                _num(100 * r.win_rate),
                str(r.timeouts),
                str(r.illegal),
                str(r.strikes),
                str(r.forfeits),
            )
        )
    blank = [] if any(spreads) else [4]  # no interval at all: no column of blanks
    if adjusted:
        head = (*head[:5], "adjusted", "adjusted 95% CI", "-/+", *head[5:])
        right = {i + 3 if i >= 5 else i for i in right} | {5}
        body = [(*b[:5], _num(r.adj_rating), adj_bounds[i], adj_spreads[i], *b[5:])
                for i, (b, r) in enumerate(zip(body, rows, strict=True))]
        if not any(adj_spreads):
            blank.append(7)
    widths = [
        max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)
    ]
    if blank:
        keep = [i for i in range(len(head)) if i not in blank]
        head = tuple(head[i] for i in keep)
        body = [tuple(b[i] for i in keep) for b in body]
        widths = [widths[i] for i in keep]
        right = {keep.index(i) for i in right if i in keep}

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)
        ).rstrip()

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
    "adj_rating",
    "adj_ci_low",
    "adj_ci_high",
    "adj_bounded",
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
    add_db_option(parser)
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
    except StoreError as exc:
        return store_failed("arena leaderboard", exc)
    rows = compute_leaderboard(records, n_bootstrap=args.bootstrap)
    luck = luck_summary(records)
    pooled = sorted({r.tournament for r in records}) if args.tournament is None else [
        args.tournament]
    if args.json:
        payload = {
            "tournament": args.tournament,
            "tournaments": pooled,
            "matches": len(records),
            "rows": [r.to_json() for r in rows],
            "luck": luck.to_json(),
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
        print(luck.line())
    if (args.json or args.csv) and len(pooled) > 1:
        # The table says it in its first line; CSV and JSON have none, so stderr does.
        print(f"arena leaderboard: {len(pooled)} tournaments pooled into one rating "
              f"({', '.join(pooled)}); --tournament NAME rates one", file=sys.stderr)
    return 0
