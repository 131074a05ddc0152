"""What the pages show, read from the results store: one object per ``arena web`` process.

Figures that need every result of a tournament (the leaderboard with bootstrap intervals,
rating history, head-to-head, per-bot totals, the SPRT trace) are computed together in one
pass and cached per tournament.  The cache is keyed by the number of stored results and
the newest one, and a running tournament is recomputed at most every ``REFRESH_S``
seconds, so a page costs a cache look-up while a large store changes under it.  Match
lists are SQL queries with indexes, never a scan in Python.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arena.ratings import Sprt, sprt_bounds
from arena.tournament.formats import SPRT_ROUND_SETS, make_format, pair_score
from arena.tournament.leaderboard import (
    BOOTSTRAP,
    LeaderRow,
    LuckSummary,
    compute_leaderboard,
    game_table,
    luck_summary,
)
from arena.tournament.model import ResultRecord
from arena.tournament.seating import seatings_for
from arena.tournament.spec import SpecError, TournamentSpec, parse_spec
from arena.tournament.store import ResultStore, StoreError, TournamentInfo, _record
from arena.web.frames import build_frames

JSON = dict[str, Any]

#: A running tournament's figures are recomputed at most this often.
REFRESH_S = 3.0
#: Points of the rating history plot.
HISTORY_POINTS = 24
#: A tournament with a result newer than this (or a live match) counts as running.
RUNNING_WINDOW_S = 60.0
MATCH_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
STATUSES = ("completed", "forfeit", "aborted", "error")
_LIST_COLUMNS = (
    "match_id", "tournament", "idx", "grp", "rnd", "players", "bots", "seed", "status",
    "scores", "ranks", "deals", "timeouts", "illegal", "strikes", "seat_stats",
    "forfeit_seat", "duration_s", "finished_at", "worker",
)


class NotFound(LookupError):
    """No such tournament, match or bot (the page answers 404 with this message)."""


class Embargoed(PermissionError):
    """A game's deals are still to be played by other seats of its duplicate set.

    The games of a duplicate set share one deal sequence, and several of them are often
    played at the same time: a finished game's replay or seed, or the cards a running one
    shows live, would tell a bot in a sibling game the hands it is about to play.  So they
    stay closed until every game of the set is stored (the page answers 403).
    """

    def __init__(self, done: int, size: int) -> None:
        super().__init__(
            f"this game's deals are still to be played in other seats of its duplicate set "
            f"({done} of {size} games stored): its replay opens when the set is complete")
        self.done = done
        self.size = size


def _finite(value: float | None, digits: int = 4) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)


#: What the referee counts for a seat in a match, summed as they are over a participant's
#: games (the names of the stored seat stats, in the order of the totals' JSON).
SEAT_COUNTS = ("decisions", "timeouts", "illegal", "malformed", "strikes")


@dataclass
class BotTotals:
    """A participant's counts over one tournament."""

    games: int = 0
    wins: int = 0
    #: The seat stats of :data:`SEAT_COUNTS`, summed.
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SEAT_COUNTS, 0))
    forfeits: int = 0
    think_ms_total: float = 0.0
    think_ms_max: float = 0.0
    bot: str = ""
    #: (finished_at, mean think ms) of the latest matches, oldest first.
    latency: list[tuple[float, float]] = field(default_factory=list)

    def to_json(self) -> JSON:
        decisions = self.counts["decisions"]
        mean = self.think_ms_total / decisions if decisions else None
        return {
            "bot": self.bot, "games": self.games, "wins": self.wins, **self.counts,
            "forfeits": self.forfeits,
            "mean_think_ms": _finite(mean, 3), "max_think_ms": _finite(self.think_ms_max, 3),
        }


@dataclass
class Summary:
    """Everything about one tournament that needs all its results."""

    name: str
    key: tuple[int, float]
    computed_at: float
    matches: int
    leaderboard: list[LeaderRow]
    history: JSON
    head_to_head: JSON
    bots: dict[str, BotTotals]
    sprt: JSON | None
    first_finished: float | None
    last_finished: float | None
    luck: LuckSummary
    deals: int
    statuses: dict[str, int]


class WebData:
    """The store, read for the pages; safe to share between the server's threads."""

    def __init__(self, db_url: str, *, n_bootstrap: int = BOOTSTRAP) -> None:
        self.db_url = db_url
        self.store = ResultStore(db_url)
        self.n_bootstrap = n_bootstrap
        self._summaries: dict[str, Summary] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._frames: OrderedDict[str, JSON] = OrderedDict()
        self._frames_lock = threading.Lock()
        self._planned: dict[str, int | None] = {}
        self._set_sizes: dict[str, int | None] = {}
        #: False (``arena web --open-sets``) shows incomplete duplicate sets anyway: for an
        #: audience whose bots cannot reach this server.
        self.close_sets = True

    def warm_up(self) -> None:
        """Compute every tournament's figures once, so the first visitor does not wait."""
        for info in self.tournament_infos():
            try:
                self.summary(info.name)
                self.planned(info)
            except Exception:  # a page will report it; warming up is only a head start
                continue

    def close(self) -> None:
        self.store.close()

    # -- tournaments ---------------------------------------------------------------------

    def tournament_infos(self) -> list[TournamentInfo]:
        return self.store.tournaments()

    def info(self, name: str) -> TournamentInfo:
        for t in self.store.tournaments():
            if t.name == name:
                return t
        raise NotFound(f"no tournament '{name}' in this store")

    def spec(self, info: TournamentInfo) -> TournamentSpec | None:
        try:
            return parse_spec(json.dumps(info.spec), fmt="json", check_imports=False)
        except (SpecError, ValueError):
            return None

    def planned(self, info: TournamentInfo) -> int | None:
        """Matches the format plans (for SPRT and leagues: the most it may play, or None).

        Fixed formats build their whole plan to count it, so the count is kept per spec.
        """
        key = json.dumps(info.spec, sort_keys=True)
        if key in self._planned:
            return self._planned[key]
        total = self._planned_total(info)
        self._planned[key] = total
        return total

    def _planned_total(self, info: TournamentInfo) -> int | None:
        spec = self.spec(info)
        if spec is None:
            return None
        if spec.secret_seed:
            # How many matches is the same whatever the secret: count with a throwaway one.
            from arena.engine import commitment as cm

            spec = spec.with_secret(cm.new_secret())
        try:
            fmt = make_format(spec)
        except Exception:
            return None
        total = fmt.planned_total()
        if total is None:
            max_total = getattr(fmt, "max_total", None)
            total = max_total() if callable(max_total) else None
        return total

    def _key(self, name: str) -> tuple[int, float]:
        rows = self.store.query(
            "SELECT COUNT(*), MAX(finished_at) FROM matches WHERE tournament = ?", (name,)
        )
        count, newest = rows[0]
        return int(count), float(newest or 0.0)

    def summary(self, name: str) -> Summary:
        """The cached figures of a tournament, recomputed when its results changed."""
        info = self.info(name)
        with self._locks_guard:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            cached = self._summaries.get(name)
            now = time.monotonic()
            if cached is not None and now - cached.computed_at < REFRESH_S:
                return cached
            key = self._key(name)
            if cached is not None and cached.key == key:
                cached.computed_at = now
                return cached
            summary = self._compute(info, key)
            self._summaries[name] = summary
            return summary

    def _compute(self, info: TournamentInfo, key: tuple[int, float]) -> Summary:
        records = list(self.store.iter_results(info.name))
        rows = compute_leaderboard(records, n_bootstrap=self.n_bootstrap)
        by_time = sorted(records, key=lambda r: (r.finished_at, r.index))
        bots: dict[str, BotTotals] = {}
        statuses: dict[str, int] = {}
        for r in by_time:
            statuses[r.status] = statuses.get(r.status, 0) + 1
            for seat, name in enumerate(r.players):
                b = bots.setdefault(name, BotTotals())
                st = r.seat_stats[seat] if seat < len(r.seat_stats) else {}
                b.bot = r.bots[seat] if seat < len(r.bots) else b.bot
                b.games += 1
                b.wins += 1 if seat < len(r.ranks) and r.ranks[seat] == 1 else 0
                for stat in SEAT_COUNTS:
                    b.counts[stat] += int(st.get(stat, 0))
                dec = int(st.get("decisions", 0))
                b.forfeits += 1 if r.forfeit_seat == seat else 0
                think = float(st.get("think_ms_total", 0.0))
                b.think_ms_total += think
                b.think_ms_max = max(b.think_ms_max, float(st.get("think_ms_max", 0.0)))
                if dec:
                    b.latency.append((r.finished_at, think / dec))
        for b in bots.values():
            b.latency = _thin(b.latency, 200)
        spec = self.spec(info)
        return Summary(
            name=info.name,
            key=key,
            computed_at=time.monotonic(),
            matches=len(records),
            leaderboard=rows,
            history=_rating_history(by_time),
            head_to_head=_head_to_head(records, [r.player for r in rows]),
            bots=bots,
            sprt=_sprt_trace(spec, records) if spec and spec.format.type == "sprt" else None,
            luck=luck_summary(records),
            first_finished=by_time[0].finished_at if by_time else None,
            last_finished=by_time[-1].finished_at if by_time else None,
            deals=sum(r.deals for r in records),
            statuses=statuses,
        )

    def leaderboard_json(self, name: str) -> JSON:
        """The same object as ``arena leaderboard --tournament NAME --json``."""
        s = self.summary(name)
        return {"tournament": name, "tournaments": [name], "matches": s.matches,
                "rows": [r.to_json() for r in s.leaderboard], "luck": s.luck.to_json()}

    def progress(self, info: TournamentInfo, live_count: int = 0) -> JSON:
        """Done, planned, pace and ETA (the pace is over the last few minutes of results).

        Running, stopped or finished is what the tournament's scheduler said of its run
        (it beats every few seconds while it runs); only a store written before schedulers
        said so falls back on how recent the last result is."""
        s = self.summary(info.name)
        planned = self.planned(info)
        now = time.time()
        run = self.store.run_state(info.name)
        if run is not None:
            running = run.is_running(now)
        else:
            running = live_count > 0 or (
                s.last_finished is not None and now - s.last_finished < RUNNING_WINDOW_S
                and (planned is None or s.matches < planned)
            )
        rate = None
        if s.last_finished is not None:
            since = max(s.last_finished - 300.0, s.first_finished or s.last_finished)
            recent = self.store.query(
                "SELECT COUNT(*) FROM matches WHERE tournament = ? AND finished_at >= ?",
                (info.name, since),
            )[0][0]
            span = s.last_finished - since
            if span > 0 and recent > 1:
                rate = (int(recent) - 1) / span
        eta = None
        if running and rate and planned is not None and planned > s.matches:
            eta = (planned - s.matches) / rate
        finished = planned is not None and s.matches >= planned
        if s.sprt is not None and s.sprt.get("decision") not in (None, "continue"):
            finished = True
        if run is not None and run.state == "finished":
            finished = True
        secret = self.store.get_deal_secret(info.name)
        if secret is not None and secret.revealed:
            finished = True  # a secret is revealed when its tournament has ended
        return {
            "done": s.matches, "planned": planned, "running": bool(running and not finished),
            "finished": bool(finished), "matches_per_s": _finite(rate, 3),
            "scheduler": None if run is None else {
                "state": "finished" if finished else "running" if running else "stopped",
                "host": run.host, "started_at": run.started_at, "heard_at": run.heartbeat_at,
                "ended_at": run.ended_at},
            "eta_s": _finite(eta, 1), "deals": s.deals, "statuses": s.statuses,
            "first_finished_at": s.first_finished, "last_finished_at": s.last_finished,
        }

    # -- duplicate sets ------------------------------------------------------------------

    def set_size(self, tournament: str) -> int | None:
        """Games per duplicate set of a tournament (None when it has no sets)."""
        if tournament not in self._set_sizes:
            try:
                spec = self.spec(self.info(tournament))
            except NotFound:
                return None  # not registered (yet): ask again next time
            size = None
            if spec is not None and spec.format.type in ("duplicate", "gauntlet", "sprt",
                                                         "league", "swiss"):
                size = len(seatings_for(spec.seats, spec.format.seatings))
            self._set_sizes[tournament] = size
        return self._set_sizes[tournament]

    def set_counts(self, tournament: str, groups: Sequence[str]) -> dict[str, int]:
        sets = sorted({g for g in groups if g.startswith("set-")})
        if not sets:
            return {}
        marks = ", ".join("?" for _ in sets)
        rows = self.store.query(
            f"SELECT grp, COUNT(*) FROM matches WHERE tournament = ? AND grp IN ({marks}) "
            "GROUP BY grp", [tournament, *sets])
        return {str(g): int(n) for g, n in rows}

    def embargo(self, tournament: str, group: str) -> Embargoed | None:
        """Why a game of this set must stay closed, or None when it may be shown."""
        if not self.close_sets or not group.startswith("set-"):
            return None
        size = self.set_size(tournament)
        if size is None or size <= 1:
            return None
        done = self.set_counts(tournament, [group]).get(group, 0)
        return Embargoed(done, size) if done < size else None

    # -- matches -------------------------------------------------------------------------

    def matches(
        self,
        *,
        tournament: str | None = None,
        bot: str | None = None,
        status: str | None = None,
        forfeits: bool = False,
        timeouts: bool = False,
        illegal: bool = False,
        page: int = 1,
        per_page: int = 50,
    ) -> JSON:
        """One page of stored matches, newest first, with the total that match the filter."""
        where: list[str] = []
        params: list[Any] = []
        if tournament:
            where.append("tournament = ?")
            params.append(tournament)
        if bot:
            where.append("players LIKE ? ESCAPE '\\'")
            params.append("%" + _like(json.dumps(bot)) + "%")
        if status:
            where.append("status = ?")
            params.append(status)
        if forfeits:
            where.append("forfeit_seat IS NOT NULL")
        pg = self.store.kind == "postgresql"
        if timeouts:
            where.append("timeouts ~ '[1-9]'" if pg else "timeouts GLOB '*[1-9]*'")
        if illegal:
            where.append("illegal ~ '[1-9]'" if pg else "illegal GLOB '*[1-9]*'")
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        total = int(self.store.query(f"SELECT COUNT(*) FROM matches{clause}", params)[0][0])
        per_page = max(1, min(per_page, 200))
        pages = max(1, math.ceil(total / per_page))
        page = max(1, min(page, pages))
        rows = self.store.query(
            f"SELECT {', '.join(_LIST_COLUMNS)} FROM matches{clause} "
            # finished_at alone: the list index then gives the order without a sort
            # (ties, rare, keep the index's order, stable from page to page).
            "ORDER BY finished_at DESC LIMIT ? OFFSET ?",
            [*params, per_page, (page - 1) * per_page],
        )
        items = [match_json(_record(_LIST_COLUMNS, row)) for row in rows]
        if self.close_sets:
            by_t: dict[str, list[str]] = {}
            for m in items:
                by_t.setdefault(m["tournament"], []).append(m["group"])
            complete: set[tuple[str, str]] = set()
            for t, groups in by_t.items():
                size = self.set_size(t)
                if size and size > 1:
                    counts = self.set_counts(t, groups)
                    complete |= {(t, g) for g, n in counts.items() if n >= size}
            for m in items:
                size = self.set_size(m["tournament"])
                if (m["group"].startswith("set-") and size and size > 1
                        and (m["tournament"], m["group"]) not in complete):
                    m["seed"] = None
                    m["embargoed"] = True
        return {"total": total, "page": page, "pages": pages, "per_page": per_page,
                "matches": items}

    def match(self, match_id: str) -> ResultRecord:
        if not MATCH_ID_RE.match(match_id):
            raise NotFound(f"no match '{match_id}'")
        rec = self.store.get(match_id)
        if rec is None:
            raise NotFound(f"no match '{match_id}' in this store")
        return rec

    def open_match(self, match_id: str) -> ResultRecord:
        """The stored match, refused while its duplicate set is incomplete."""
        rec = self.match(match_id)
        why = self.embargo(rec.tournament, rec.group)
        if why is not None:
            raise why
        return rec

    def replay(self, match_id: str) -> JSON:
        self.open_match(match_id)
        rec = self.store.get(match_id, with_replay=True)
        if rec is None or rec.replay is None:
            raise NotFound(f"match '{match_id}' has no stored replay")
        return rec.replay

    def frames(self, match_id: str) -> JSON:
        """The viewer's frames of a match (a few recent matches are kept built)."""
        with self._frames_lock:
            hit = self._frames.get(match_id)
            if hit is not None:
                self._frames.move_to_end(match_id)
                return hit
        self.open_match(match_id)
        rec = self.store.get(match_id, with_replay=True)
        if rec is None or rec.replay is None:
            self.replay(match_id)  # raises the right NotFound
            raise NotFound(f"match '{match_id}' has no stored replay")
        data = build_frames(rec.replay, rec.players)
        with self._frames_lock:
            self._frames[match_id] = data
            while len(self._frames) > 16:
                self._frames.popitem(last=False)
        return data

    # -- bots ----------------------------------------------------------------------------

    def participants(self) -> list[JSON]:
        """Every participant of every tournament, with where it played."""
        out: dict[str, JSON] = {}
        for info in self.tournament_infos():
            s = self.summary(info.name)
            ratings = {r.player: r for r in s.leaderboard}
            for name, b in s.bots.items():
                entry = out.setdefault(name, {"name": name, "bots": set(), "tournaments": [],
                                              "games": 0, "timeouts": 0, "illegal": 0})
                entry["bots"].add(b.bot)
                r = ratings.get(name)
                entry["tournaments"].append({
                    "tournament": info.name, "games": b.games,
                    "rating": _finite(r.rating, 1) if r else None,
                })
                entry["games"] += b.games
                entry["timeouts"] += b.counts["timeouts"]
                entry["illegal"] += b.counts["illegal"]
        result = []
        for e in sorted(out.values(), key=lambda e: str(e["name"])):
            e["bots"] = sorted(e["bots"])
            result.append(e)
        return result

    def bot(self, name: str) -> JSON:
        per: list[JSON] = []
        for info in self.tournament_infos():
            s = self.summary(info.name)
            b = s.bots.get(name)
            if b is None:
                continue
            row = next((r for r in s.leaderboard if r.player == name), None)
            series = next((x for x in s.history["series"] if x["player"] == name), None)
            per.append({
                "tournament": info.name,
                "totals": b.to_json(),
                "rating": row.to_json() if row else None,
                "history": {"x": s.history["x"], "rating": series["rating"] if series else []},
                "latency": [[t, round(ms, 3)] for t, ms in b.latency],
            })
        if not per:
            raise NotFound(f"no participant '{name}' in this store")
        return {"name": name, "tournaments": per}


def match_json(r: ResultRecord) -> JSON:
    """A stored match without its replay (the seed is shown: the match is over)."""
    return {
        "match_id": r.match_id, "tournament": r.tournament, "index": r.index,
        "group": r.group, "round": r.round, "players": r.players, "bots": r.bots,
        "seed": r.seed, "status": r.status, "scores": r.scores, "ranks": r.ranks,
        "deals": r.deals, "timeouts": r.timeouts, "illegal": r.illegal, "strikes": r.strikes,
        "forfeit_seat": r.forfeit_seat, "duration_s": round(r.duration_s, 4),
        "finished_at": r.finished_at, "worker": r.worker, "seat_stats": r.seat_stats,
    }


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _thin(points: list[tuple[float, float]], most: int) -> list[tuple[float, float]]:
    if len(points) <= most:
        return points
    step = len(points) / most
    return [points[int(i * step)] for i in range(most - 1)] + [points[-1]]


def _rating_history(by_time: Sequence[ResultRecord]) -> JSON:
    """Ratings (no bootstrap) after growing prefixes of the results, in finishing order.

    The game table is built once and sliced: a fit per point, not a table per point.
    """
    from arena.ratings import GameTable, ratings_table

    recs = [r for r in by_time if len(r.players) >= 2]
    n = len(recs)
    if n < 2:
        return {"x": [], "series": []}
    table = game_table(recs)
    points = min(HISTORY_POINTS, n)
    cuts = sorted({max(1, round(n * (i + 1) / points)) for i in range(points)})
    players = list(table.players)
    series: dict[str, list[float | None]] = {p: [] for p in players}
    for cut in cuts:
        seats = table.seats[:cut]
        present = np.unique(seats[seats >= 0])
        names = players
        if len(present) < len(players):  # rate only who has played so far, as the board
            remap = np.full(len(players) + 1, -1, dtype=np.int64)
            remap[present] = np.arange(len(present))
            seats = remap[seats]  # -1 indexes the last entry, which stays -1
            names = [players[i] for i in present]
        part = GameTable.from_arrays(names, seats, table.ranks[:cut],
                                     table.groups[:cut], table.scores[:cut])
        rows = {row.player: row for row in ratings_table(part, n_bootstrap=0)}
        for p in players:
            row = rows.get(p)
            series[p].append(_finite(row.rating, 2) if row is not None and row.games else None)
    return {"x": cuts, "series": [{"player": p, "rating": series[p]}
                                  for p in sorted(players)]}


def _head_to_head(records: Sequence[ResultRecord], order: Sequence[str]) -> JSON:
    """Pairwise results: games where both sat, and the row player's score (win 1, tie 1/2)."""
    idx = {p: i for i, p in enumerate(order)}
    k = len(order)
    games = [[0] * k for _ in range(k)]
    wins = [[0] * k for _ in range(k)]
    ties = [[0] * k for _ in range(k)]
    for r in records:
        seated = [(p, r.ranks[s]) for s, p in enumerate(r.players) if p in idx]
        for a, ra in seated:
            for b, rb in seated:
                if a == b:
                    continue
                i, j = idx[a], idx[b]
                games[i][j] += 1
                if ra < rb:
                    wins[i][j] += 1
                elif ra == rb:
                    ties[i][j] += 1
    score = [
        [(wins[i][j] + 0.5 * ties[i][j]) / games[i][j] if games[i][j] else None for j in range(k)]
        for i in range(k)
    ]
    return {"players": list(order), "games": games, "wins": wins, "ties": ties,
            "score": [[_finite(v, 4) for v in row] for row in score]}


def _sprt_trace(spec: TournamentSpec, records: Sequence[ResultRecord]) -> JSON:
    """The GSPRT's log-likelihood ratio after each duplicate set that counts.

    Sets are taken round by round exactly as the SPRT format takes them (a round counts
    once all its sets are stored; the test stops at the first decision), so the last
    point is the format's own verdict.
    """
    f = spec.format
    assert f.candidate is not None and f.baseline is not None
    sprt = Sprt(elo0=f.elo0, elo1=f.elo1, alpha=f.alpha, beta=f.beta)
    per_set = len(seatings_for(spec.seats, f.seatings))
    support = [i / (2 * per_set) for i in range(2 * per_set + 1)]
    groups: dict[str, list[ResultRecord]] = {}
    first_index: dict[str, int] = {}
    rounds: dict[int, list[str]] = {}
    for r in sorted(records, key=lambda r: r.index):
        if r.group not in groups:
            groups[r.group] = []
            first_index[r.group] = r.index
            rounds.setdefault(r.round, []).append(r.group)
        groups[r.group].append(r)
    max_sets = spec.sets or 0
    set_scores: list[float] = []
    trace: list[JSON] = []
    decision = "continue"
    lower, upper = sprt_bounds(f.alpha, f.beta)
    last = None
    played = 0
    for rnd in sorted(rounds):
        want = min(SPRT_ROUND_SETS, max_sets - played)
        sets = [g for g in rounds[rnd] if len(groups[g]) >= per_set]
        if len(sets) < want:
            break
        for g in sets[:want]:
            games = groups[g]
            vals = [pair_score(m, f.candidate, f.baseline, adjusted=spec.luck_adjusted)
                    for m in games]
            set_scores.append(sum(vals) / len(vals))
            played += 1
            if spec.luck_adjusted:
                last = sprt.scores(set_scores, games_per_sample=len(games), adjusted=True)
            else:
                last = sprt.scores(set_scores, games_per_sample=len(games), support=support)
            trace.append({"sets": played, "llr": _finite(last.llr, 4)})
            if str(last.decision) != "continue":
                decision = str(last.decision)
                break
        if decision != "continue":
            break
    return {
        "candidate": f.candidate, "baseline": f.baseline, "elo0": f.elo0, "elo1": f.elo1,
        "alpha": f.alpha, "beta": f.beta, "lower": _finite(lower), "upper": _finite(upper),
        "llr": trace[-1]["llr"] if trace else None, "sets": played, "max_sets": max_sets,
        "decision": decision, "trace": trace, "luck_adjusted": spec.luck_adjusted,
        "elo": str(last.estimate) if last is not None else None,
    }


__all__ = ["STATUSES", "Embargoed", "NotFound", "StoreError", "WebData", "match_json"]
