"""Live ratings of a running tournament, updated one result at a time.

The leaderboard refits Bradley-Terry from every stored result, which is right for a report
and far too slow to repeat every few seconds during a run of a million matches.  The fit
only needs the pairwise score and games matrices, though, and those are sums: adding a
result costs one update of a players-by-players matrix, and a refit costs the same at ten
results as at a million.  The figures equal the leaderboard's ratings without bootstrap
(same prior, same solver).
"""

from __future__ import annotations

import numpy as np

from arena.ratings.bradley_terry import solve_bradley_terry
from arena.ratings.elo import ELO_PER_NAT
from arena.tournament.model import ResultRecord

#: The leaderboard's weak prior (one virtual draw per player), so the two agree.
PRIOR_DRAWS = 1.0


class RatingTally:
    """Pairwise sums of the results seen so far; :meth:`ratings` fits them."""

    def __init__(self) -> None:
        self.players: list[str] = []
        self._index: dict[str, int] = {}
        self._wins = np.zeros((0, 0))
        self._games = np.zeros((0, 0))
        self.results = 0

    def _slot(self, name: str) -> int:
        i = self._index.get(name)
        if i is None:
            i = len(self.players)
            self.players.append(name)
            self._index[name] = i
            n = len(self.players)
            for attr in ("_wins", "_games"):
                old = getattr(self, attr)
                grown = np.zeros((n, n))
                grown[: n - 1, : n - 1] = old
                setattr(self, attr, grown)
        return i

    def add(self, rec: ResultRecord) -> None:
        """Count one stored result (a game of fewer than two players is not rated)."""
        if len(rec.players) < 2:
            return
        seats = [self._slot(p) for p in rec.players]
        ranks = rec.ranks
        for a in range(len(seats)):
            for b in range(a + 1, len(seats)):
                i, j = seats[a], seats[b]
                s = 1.0 if ranks[a] < ranks[b] else 0.5 if ranks[a] == ranks[b] else 0.0
                self._wins[i, j] += s
                self._wins[j, i] += 1.0 - s
                self._games[i, j] += 1.0
                self._games[j, i] += 1.0
        self.results += 1

    def ratings(self) -> dict[str, float]:
        """Elo-scale ratings (mean 0) of everyone seen, as the leaderboard would rate them."""
        if len(self.players) < 2:
            return dict.fromkeys(self.players, 0.0)
        theta = solve_bradley_terry(
            self._wins[None], self._games[None], prior_draws=PRIOR_DRAWS
        )[0]
        return {p: float(theta[i] * ELO_PER_NAT) for i, p in enumerate(self.players)}
