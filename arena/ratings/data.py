"""Result types and the array forms that every estimator in this package works on.

Three layers, each existing for a reason:

* :class:`GameResult` is the friendly record a caller builds from one finished game. It is
  validated on construction so that bad data fails where it enters, not deep inside a fit.
* :class:`GameTable` holds many games as numpy arrays. A million Python objects take seconds
  just to iterate; the same data as a few integer arrays takes milliseconds, so anything that
  must scale (the benchmark, a big tournament) should build this directly.
* :class:`PairData` is the pairwise decomposition, already summed per (group, pair of players).
  Bradley-Terry only needs these sums, and bootstrapping over groups only needs to reweight
  them, so the cost of a bootstrap replicate no longer depends on the number of games.

A *group* is the unit of independence: a duplicate set (one deal sequence replayed for every
seat permutation) or a seed group. Games in one group share their cards, so they are strongly
correlated; confidence intervals must resample whole groups.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

GroupId = str | int
"""Identifier of a duplicate set / seed group as the caller knows it."""

MIN_SEATS = 2
MAX_SEATS = 4

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class GameResult:
    """One finished game: who sat where, how many points each got, and the final order.

    ``ranks`` are competition ranks (1 = best, equal ranks = tie). They are stored rather
    than derived from ``scores`` because the 1000 rules can decide the winner by something
    other than the final points (e.g. who crossed 1000 first); use :meth:`from_scores` when
    higher points simply rank higher. ``group`` is the duplicate set / seed group; ``None``
    makes the game its own group (i.e. treated as independent of every other game).
    """

    players: tuple[str, ...]
    scores: tuple[float, ...]
    ranks: tuple[int, ...]
    group: GroupId | None = None

    def __post_init__(self) -> None:
        # Accept lists from callers but store tuples so the record stays hashable/immutable.
        object.__setattr__(self, "players", tuple(self.players))
        object.__setattr__(self, "scores", tuple(float(s) for s in self.scores))
        object.__setattr__(self, "ranks", tuple(self.ranks))
        n = len(self.players)
        if not MIN_SEATS <= n <= MAX_SEATS:
            raise ValueError(
                f"GameResult needs {MIN_SEATS} to {MAX_SEATS} players, got {n}: {self.players!r}"
            )
        for p in self.players:
            if not isinstance(p, str) or not p:
                raise ValueError(f"player names must be non-empty strings, got {p!r}")
        if len(set(self.players)) != n:
            raise ValueError(f"a player appears twice in one game: {self.players!r}")
        if len(self.scores) != n:
            raise ValueError(f"{n} players but {len(self.scores)} scores: {self.scores!r}")
        if not all(math.isfinite(s) for s in self.scores):
            raise ValueError(f"scores must be finite numbers, got {self.scores!r}")
        if len(self.ranks) != n:
            raise ValueError(f"{n} players but {len(self.ranks)} ranks: {self.ranks!r}")
        for r in self.ranks:
            if isinstance(r, bool) or not isinstance(r, int | np.integer) or not 1 <= r <= n:
                raise ValueError(f"ranks must be integers from 1 to {n}, got {self.ranks!r}")
        if self.group is not None and (
            isinstance(self.group, bool) or not isinstance(self.group, str | int)
        ):
            raise ValueError(f"group must be a str, an int or None, got {self.group!r}")

    @classmethod
    def from_scores(
        cls,
        players: Sequence[str],
        scores: Sequence[float],
        group: GroupId | None = None,
    ) -> GameResult:
        """Build a result whose ranks follow the points (higher is better, equal points tie)."""
        if len(players) != len(scores):
            raise ValueError(f"{len(players)} players but {len(scores)} scores")
        ranks = tuple(1 + sum(1 for o in scores if o > s) for s in scores)
        return cls(tuple(players), tuple(float(s) for s in scores), ranks, group)


@dataclass(frozen=True, eq=False)
class GameTable:
    """Many games as arrays, the form that scales to millions of results.

    ``seats[g, k]`` is the index (into ``players``) of the player in seat ``k`` of game ``g``,
    or ``-1`` for an empty seat so 2-, 3- and 4-seat games can share one table. ``ranks`` and
    ``scores`` are aligned with ``seats``. ``groups[g]`` is a contiguous group index in
    ``0 .. n_groups-1``. Build it with :meth:`from_results` or :meth:`from_arrays`, which
    validate; the constructor itself trusts its input.
    """

    players: tuple[str, ...]
    seats: IntArray
    ranks: IntArray
    scores: FloatArray
    groups: IntArray
    n_groups: int
    #: Optional luck of each game's seat pairs, ``(n_games, n_seat_pairs)`` in the order
    #: (0, 1), (0, 2), ..., (1, 2), ...: what the deals alone moved the first seat's expected
    #: pairwise score against the second (see :mod:`arena.ratings.luck`); 0 where unknown.
    luck: FloatArray | None = None

    def with_luck(self, luck: ArrayLike) -> GameTable:
        """The same games with their luck values (validated: finite, one per seat pair)."""
        width = self.seats.shape[1]
        arr = np.asarray(luck, dtype=np.float64)
        want = (self.n_games, width * (width - 1) // 2)
        if arr.shape != want:
            raise ValueError(f"luck must have shape {want}, got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("luck values must be finite")
        return GameTable(self.players, self.seats, self.ranks, self.scores, self.groups,
                         self.n_groups, arr)

    @property
    def n_games(self) -> int:
        return int(self.seats.shape[0])

    @classmethod
    def from_results(
        cls, results: Iterable[GameResult], players: Sequence[str] | None = None
    ) -> GameTable:
        """Convert result records; ``players`` fixes the index order (default: sorted names)."""
        items = list(results)
        if not items:
            raise ValueError("no game results given")
        for r in items:
            if not isinstance(r, GameResult):
                raise ValueError(f"expected GameResult, got {type(r).__name__}")
        names = _player_index(players, (p for r in items for p in r.players))
        index = {p: i for i, p in enumerate(names)}
        n = len(items)
        seats = np.full((n, MAX_SEATS), -1, dtype=np.int64)
        ranks = np.zeros((n, MAX_SEATS), dtype=np.int64)
        scores = np.full((n, MAX_SEATS), np.nan, dtype=np.float64)
        group_index: dict[tuple[str, GroupId], int] = {}
        groups = np.empty(n, dtype=np.int64)
        for g, r in enumerate(items):
            k = len(r.players)
            try:
                seats[g, :k] = [index[p] for p in r.players]
            except KeyError as exc:
                raise ValueError(f"player {exc.args[0]!r} is not in the players list") from None
            ranks[g, :k] = r.ranks
            scores[g, :k] = r.scores
            # None means "independent game": give it a key nobody else can have.
            key: tuple[str, GroupId] = (
                ("game", g) if r.group is None else (type(r.group).__name__, r.group)
            )
            groups[g] = group_index.setdefault(key, len(group_index))
        return cls(names, seats, ranks, scores, groups, len(group_index))

    @classmethod
    def from_arrays(
        cls,
        players: Sequence[str],
        seats: ArrayLike,
        ranks: ArrayLike,
        groups: ArrayLike | None = None,
        scores: ArrayLike | None = None,
    ) -> GameTable:
        """Validate and wrap arrays; ``groups`` may hold any integers (renumbered here).

        ``seats`` is (n_games, n_seats) of player indices with ``-1`` for an empty seat;
        ``groups=None`` makes every game its own group; ``scores=None`` leaves points unknown.
        """
        names = _player_index(players, ())
        seat_arr = np.asarray(seats)
        if seat_arr.ndim != 2 or seat_arr.shape[0] == 0:
            raise ValueError(f"seats must be a non-empty 2-D array, got shape {seat_arr.shape}")
        if not np.issubdtype(seat_arr.dtype, np.integer):
            raise ValueError(f"seats must hold integer player indices, got {seat_arr.dtype}")
        n, width = seat_arr.shape
        if not MIN_SEATS <= width <= MAX_SEATS:
            raise ValueError(f"seats must have {MIN_SEATS} to {MAX_SEATS} columns, got {width}")
        seat_arr = seat_arr.astype(np.int64)
        occupied = seat_arr >= 0
        if np.any(seat_arr >= len(names)) or np.any(seat_arr < -1):
            raise ValueError(f"seat entries must be -1 or a player index below {len(names)}")
        per_game = occupied.sum(axis=1)
        if np.any(per_game < MIN_SEATS):
            bad = int(np.argmax(per_game < MIN_SEATS))
            raise ValueError(f"game {bad} has fewer than {MIN_SEATS} occupied seats")
        ordered = np.sort(seat_arr, axis=1)
        if np.any((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)):
            raise ValueError("a player appears twice in one game")
        rank_arr = np.asarray(ranks)
        if rank_arr.shape != seat_arr.shape or not np.issubdtype(rank_arr.dtype, np.integer):
            raise ValueError(f"ranks must be an integer array of shape {seat_arr.shape}")
        rank_arr = np.where(occupied, rank_arr, 0).astype(np.int64)
        if np.any(occupied & ((rank_arr < 1) | (rank_arr > per_game[:, None]))):
            raise ValueError("ranks of occupied seats must be between 1 and the number of players")
        group_idx, n_groups = _group_index(groups, n)
        if scores is None:
            score_arr = np.full(seat_arr.shape, np.nan, dtype=np.float64)
        else:
            score_arr = np.asarray(scores, dtype=np.float64)
            if score_arr.shape != seat_arr.shape:
                raise ValueError(f"scores must have shape {seat_arr.shape}")
            if not np.all(np.isfinite(score_arr[occupied])):
                raise ValueError("scores of occupied seats must be finite")
            score_arr = np.where(occupied, score_arr, np.nan)
        return cls(names, seat_arr, rank_arr, score_arr, group_idx, n_groups)


@dataclass(frozen=True, eq=False)
class PairData:
    """Pairwise outcomes summed per (group, unordered pair of players).

    Entry ``e`` says: in group ``group[e]``, players ``lo[e] < hi[e]`` met ``games[e]`` times
    and ``lo`` scored ``score[e]`` of those (win 1, tie 0.5), so ``hi`` scored
    ``games[e] - score[e]``. Storing only ``lo < hi`` halves the data and makes the two
    directions consistent by construction.
    """

    players: tuple[str, ...]
    group: IntArray
    lo: IntArray
    hi: IntArray
    score: FloatArray
    games: FloatArray
    n_groups: int

    @property
    def n_players(self) -> int:
        return len(self.players)

    @classmethod
    def from_table(cls, table: GameTable, *, adjusted: bool = False) -> PairData:
        """Decompose every game into its seat pairs by final rank (better rank wins, tie 0.5).

        ``adjusted`` subtracts each pair's luck (``table.luck``) from its result: the
        luck-adjusted pairwise scores, which may leave [0, 1] a little.
        """
        width = table.seats.shape[1]
        los: list[IntArray] = []
        his: list[IntArray] = []
        scs: list[FloatArray] = []
        grs: list[IntArray] = []
        k = -1
        for a in range(width):
            for b in range(a + 1, width):
                k += 1
                pa, pb = table.seats[:, a], table.seats[:, b]
                ok = (pa >= 0) & (pb >= 0)
                pa, pb = pa[ok], pb[ok]
                ra, rb = table.ranks[ok, a], table.ranks[ok, b]
                s_a = np.where(ra < rb, 1.0, np.where(ra == rb, 0.5, 0.0))
                if adjusted and table.luck is not None:
                    s_a = s_a - table.luck[ok, k]
                swap = pa > pb
                los.append(np.where(swap, pb, pa))
                his.append(np.where(swap, pa, pb))
                scs.append(np.where(swap, 1.0 - s_a, s_a))
                grs.append(table.groups[ok])
        return cls._aggregate(
            table.players,
            np.concatenate(grs),
            np.concatenate(los),
            np.concatenate(his),
            np.concatenate(scs),
            np.ones(sum(x.size for x in scs), dtype=np.float64),
            table.n_groups,
        )

    @classmethod
    def from_results(
        cls, results: Iterable[GameResult], players: Sequence[str] | None = None
    ) -> PairData:
        return cls.from_table(GameTable.from_results(results, players))

    @classmethod
    def of(cls, data: Iterable[GameResult] | GameTable | PairData) -> PairData:
        """Pair data from whichever form a rating function was given: every fit and
        matrix accepts results, a game table or pair data alike."""
        if isinstance(data, PairData):
            return data
        if isinstance(data, GameTable):
            return cls.from_table(data)
        return cls.from_results(data)

    @classmethod
    def from_pairwise(
        cls,
        player_a: Sequence[str],
        player_b: Sequence[str],
        score_a: ArrayLike,
        groups: Sequence[GroupId] | None = None,
        players: Sequence[str] | None = None,
    ) -> PairData:
        """Build from two-player outcomes given by name: ``score_a`` is A's score in [0, 1]."""
        if len(player_a) != len(player_b):
            raise ValueError(f"{len(player_a)} first players but {len(player_b)} second players")
        names = _player_index(players, [*player_a, *player_b])
        index = {p: i for i, p in enumerate(names)}
        try:
            a = np.fromiter((index[p] for p in player_a), dtype=np.int64, count=len(player_a))
            b = np.fromiter((index[p] for p in player_b), dtype=np.int64, count=len(player_b))
        except KeyError as exc:
            raise ValueError(f"player {exc.args[0]!r} is not in the players list") from None
        group_arr: IntArray | None = None
        if groups is not None:
            if len(groups) != len(player_a):
                raise ValueError(f"{len(player_a)} outcomes but {len(groups)} group ids")
            gmap: dict[tuple[str, GroupId], int] = {}
            group_arr = np.fromiter(
                (gmap.setdefault((type(g).__name__, g), len(gmap)) for g in groups),
                dtype=np.int64,
                count=len(groups),
            )
        return cls.from_pairwise_arrays(names, a, b, score_a, group_arr)

    @classmethod
    def from_pairwise_arrays(
        cls,
        players: Sequence[str],
        a: ArrayLike,
        b: ArrayLike,
        score_a: ArrayLike,
        groups: ArrayLike | None = None,
    ) -> PairData:
        """Array form of :meth:`from_pairwise`: ``a``/``b`` are player indices."""
        names = _player_index(players, ())
        a_arr, b_arr = np.asarray(a), np.asarray(b)
        s_arr = np.asarray(score_a, dtype=np.float64)
        n = a_arr.shape[0] if a_arr.ndim == 1 else -1
        if n <= 0 or b_arr.shape != (n,) or s_arr.shape != (n,):
            raise ValueError("a, b and score_a must be non-empty 1-D arrays of equal length")
        if not (np.issubdtype(a_arr.dtype, np.integer) and np.issubdtype(b_arr.dtype, np.integer)):
            raise ValueError("a and b must hold integer player indices")
        if np.any((a_arr < 0) | (a_arr >= len(names)) | (b_arr < 0) | (b_arr >= len(names))):
            raise ValueError(f"player indices must be in [0, {len(names)})")
        if np.any(a_arr == b_arr):
            raise ValueError("a player cannot play against themself")
        if not np.all((s_arr >= 0.0) & (s_arr <= 1.0)):
            raise ValueError("pairwise scores must lie in [0, 1] (1 win, 0.5 tie, 0 loss)")
        g_arr, n_groups = _group_index(groups, n)
        a64, b64 = a_arr.astype(np.int64), b_arr.astype(np.int64)
        swap = a64 > b64
        return cls._aggregate(
            names,
            g_arr,
            np.where(swap, b64, a64),
            np.where(swap, a64, b64),
            np.where(swap, 1.0 - s_arr, s_arr),
            np.ones(n, dtype=np.float64),
            n_groups,
        )

    @classmethod
    def _aggregate(
        cls,
        players: tuple[str, ...],
        group: IntArray,
        lo: IntArray,
        hi: IntArray,
        score: FloatArray,
        games: FloatArray,
        n_groups: int,
    ) -> PairData:
        # Sum duplicate (group, lo, hi) rows: the bootstrap then touches one row per
        # pair per group instead of one row per game.
        p = len(players)
        key = (group * p + lo) * p + hi
        uniq, inverse = np.unique(key, return_inverse=True)
        m = int(uniq.size)
        s = np.bincount(inverse, weights=score, minlength=m)
        n = np.bincount(inverse, weights=games, minlength=m)
        cell = uniq % (p * p)
        return cls(
            players,
            (uniq // (p * p)).astype(np.int64),
            (cell // p).astype(np.int64),
            (cell % p).astype(np.int64),
            s.astype(np.float64),
            n.astype(np.float64),
            n_groups,
        )

    def totals(self, group_weights: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """Score matrix ``W`` (W[i, j] = what i scored against j) and games matrix ``N``.

        ``group_weights`` (one per group) reweights groups; a bootstrap replicate is just
        the count of times each group was drawn.
        """
        p = self.n_players
        cell = self.lo * p + self.hi
        if group_weights is None:
            s, n = self.score, self.games
        else:
            w = group_weights[self.group]
            s, n = self.score * w, self.games * w
        upper_s = np.bincount(cell, weights=s, minlength=p * p).astype(np.float64).reshape(p, p)
        upper_n = np.bincount(cell, weights=n, minlength=p * p).astype(np.float64).reshape(p, p)
        games: FloatArray = upper_n + upper_n.T
        wins: FloatArray = upper_s + (upper_n - upper_s).T
        return wins, games

    def group_scores(self, player_a: str, player_b: str) -> tuple[FloatArray, FloatArray]:
        """Per group where A met B: A's mean score against B, and the number of A-B games.

        This is the sample a duplicate-aware SPRT needs: one value per group (set), since
        the group, not the game, is the independent unit.
        """
        try:
            ia, ib = self.players.index(player_a), self.players.index(player_b)
        except ValueError:
            raise ValueError(f"unknown player among {player_a!r}, {player_b!r}") from None
        if ia == ib:
            raise ValueError("group_scores needs two different players")
        lo, hi = min(ia, ib), max(ia, ib)
        sel = (self.lo == lo) & (self.hi == hi)
        n: FloatArray = self.games[sel]
        s: FloatArray = self.score[sel] if ia == lo else n - self.score[sel]
        return s / n, n


def _group_index(groups: ArrayLike | None, n: int) -> tuple[IntArray, int]:
    """Each of ``n`` games' group, numbered 0, 1, ... in the sorted order of their ids, and how
    many groups there are; without ids every game is a group of its own."""
    if groups is None:
        return np.arange(n, dtype=np.int64), n
    raw = np.asarray(groups)
    if raw.shape != (n,) or not np.issubdtype(raw.dtype, np.integer):
        raise ValueError(f"groups must be an integer array of shape ({n},)")
    uniq, inverse = np.unique(raw, return_inverse=True)
    return inverse.astype(np.int64).reshape(n), int(uniq.size)


def _player_index(given: Sequence[str] | None, seen: Iterable[str]) -> tuple[str, ...]:
    """Fix the player order once, so indices mean the same thing in every array."""
    candidates = list(seen) if given is None else list(given)
    for p in candidates:
        if not isinstance(p, str) or not p:
            raise ValueError(f"player names must be non-empty strings, got {p!r}")
    if given is None:
        names = tuple(sorted(set(candidates)))
    else:
        names = tuple(candidates)
        if len(set(names)) != len(names):
            raise ValueError("players list has duplicate names")
    if len(names) < MIN_SEATS:
        raise ValueError(f"need at least {MIN_SEATS} distinct players, got {len(names)}")
    return names
