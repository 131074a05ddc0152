"""Live, incremental league ratings on top of openskill's Plackett-Luce model.

Why a second rating system next to Bradley-Terry: a league table must move after every
game without refitting the whole history, and it must say how sure it is about a newcomer.
openskill keeps a Gaussian belief (mu, sigma) per player and updates it from one ranked
result of any number of seats, which is exactly that. The batch fit stays the reference for
reports; this one is for the running leaderboard.

Display scale: openskill's mu is in arbitrary units (25 by default). Plackett-Luce says that
in an n-seat game, i finishes ahead of j with probability ``1 / (1 + exp(-(mu_i - mu_j) / c))``
where ``c = beta * sqrt(n)`` once sigmas are small. Multiplying mu by
``(400 / ln 10) / (beta * sqrt(n))`` therefore puts it on the same pairwise Elo scale as the
batch fit (a difference D means an expected pairwise score of ``1 / (1 + 10^(-D/400))``),
for the seat count the league mostly plays (``seats``, 3 for 1000). The display is centred
so a newcomer shows 0, like the batch fit's mean-0 anchoring. The interval is
``mu ± z * sigma`` mapped the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from openskill.models import PlackettLuce

from arena.ratings.data import MAX_SEATS, MIN_SEATS, GameResult
from arena.ratings.elo import ELO_PER_NAT, elo_to_score

STATE_VERSION = 1


@dataclass(frozen=True, slots=True)
class LiveRating:
    """One player's live rating: display value, its interval, and the raw openskill belief."""

    player: str
    rating: float
    ci_low: float
    ci_high: float
    mu: float
    sigma: float
    games: int


@dataclass(slots=True)
class _Belief:
    mu: float
    sigma: float
    games: int


class LiveLeague:
    """Incrementally rated league; feed it ranked results as they finish.

    Parameters are openskill's (``mu``, ``sigma`` of a newcomer, performance noise ``beta``,
    per-game drift ``tau`` that keeps old ratings able to move), plus the display settings
    ``seats`` (game size the Elo-like scale is calibrated for) and ``confidence``.
    """

    def __init__(
        self,
        *,
        mu: float = 25.0,
        sigma: float = 25.0 / 3.0,
        beta: float = 25.0 / 6.0,
        tau: float = 25.0 / 300.0,
        seats: int = 3,
        confidence: float = 0.95,
    ) -> None:
        for name, value in (("mu", mu), ("sigma", sigma), ("beta", beta), ("tau", tau)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}")
        if sigma <= 0 or beta <= 0 or tau < 0:
            raise ValueError("sigma and beta must be positive and tau non-negative")
        if isinstance(seats, bool) or not isinstance(seats, int):
            raise ValueError(f"seats must be an integer, got {seats!r}")
        if not MIN_SEATS <= seats <= MAX_SEATS:
            raise ValueError(f"seats must be between {MIN_SEATS} and {MAX_SEATS}, got {seats}")
        if not 0.0 < confidence < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {confidence}")
        self._mu0 = float(mu)
        self._sigma0 = float(sigma)
        self._beta = float(beta)
        self._tau = float(tau)
        self._seats = seats
        self._confidence = float(confidence)
        self._model = PlackettLuce(mu=mu, sigma=sigma, beta=beta, tau=tau)
        self._players: dict[str, _Belief] = {}
        self._games = 0

    @property
    def games(self) -> int:
        """Number of results fed so far."""
        return self._games

    @property
    def players(self) -> tuple[str, ...]:
        return tuple(self._players)

    @property
    def elo_per_mu(self) -> float:
        """Display points per unit of openskill mu (see the module docstring)."""
        return ELO_PER_NAT / (self._beta * math.sqrt(self._seats))

    def update(self, result: GameResult, luck: Sequence[float] | None = None) -> None:
        """Rate one finished game from its final ranks (ties allowed).

        ``luck`` (one value per seat: the sum of its luck against every other seat, see
        :mod:`arena.ratings.luck`) makes the update luck-adjusted: each seat's mean moves
        as openskill moves it, less ``sigma^2 / c`` times its luck, which is how a pairwise
        result of that size would have moved it (Weng and Lin's update is linear in the
        result). The luck has mean zero whatever the players, so the expected update, and
        with it where the ratings settle, is unchanged; only the noise of the deals goes.
        """
        if not isinstance(result, GameResult):
            raise ValueError(f"expected GameResult, got {type(result).__name__}")
        if luck is not None and (
            len(luck) != len(result.players) or not all(math.isfinite(v) for v in luck)
        ):
            raise ValueError("luck needs one finite value per seat")
        beliefs = [
            self._players.get(p) or _Belief(self._mu0, self._sigma0, 0) for p in result.players
        ]
        teams = [
            [self._model.rating(mu=b.mu, sigma=b.sigma, name=p)]
            for p, b in zip(result.players, beliefs, strict=True)
        ]
        rated = self._model.rate(teams, ranks=[float(r) for r in result.ranks])
        c = math.sqrt(sum(b.sigma**2 + self._beta**2 for b in beliefs))
        for i, (p, b, team) in enumerate(zip(result.players, beliefs, rated, strict=True)):
            mu = float(team[0].mu)
            if luck is not None:
                mu -= b.sigma**2 / c * float(luck[i])
            self._players[p] = _Belief(mu, float(team[0].sigma), b.games + 1)
        self._games += 1

    def update_many(self, results: Iterable[GameResult]) -> None:
        """Rate results in the given order (order matters for an incremental system)."""
        for r in results:
            self.update(r)

    def rating(self, player: str) -> LiveRating:
        """Current rating; a player never seen gets the newcomer prior with 0 games."""
        b = self._players.get(player) or _Belief(self._mu0, self._sigma0, 0)
        k = self.elo_per_mu
        z = NormalDist().inv_cdf(0.5 + self._confidence / 2.0)
        centre = (b.mu - self._mu0) * k
        half = z * b.sigma * k
        return LiveRating(player, centre, centre - half, centre + half, b.mu, b.sigma, b.games)

    def table(self) -> list[LiveRating]:
        """All rated players, best display rating first (name breaks ties for stable output)."""
        rows = [self.rating(p) for p in self._players]
        return sorted(rows, key=lambda r: (-r.rating, r.player))

    def expected_score(self, player: str, opponent: str) -> float:
        """Pairwise expected score implied by the display ratings (ignores uncertainty)."""
        return elo_to_score(self.rating(player).rating - self.rating(opponent).rating)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready state; :meth:`from_dict` restores an identical league."""
        return {
            "version": STATE_VERSION,
            "model": "openskill.PlackettLuce",
            "params": {
                "mu": self._mu0,
                "sigma": self._sigma0,
                "beta": self._beta,
                "tau": self._tau,
                "seats": self._seats,
                "confidence": self._confidence,
            },
            "games": self._games,
            "players": {
                p: {"mu": b.mu, "sigma": b.sigma, "games": b.games}
                for p, b in self._players.items()
            },
        }

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> LiveLeague:
        """Rebuild a league from :meth:`to_dict` output, rejecting malformed state clearly."""
        if not isinstance(state, Mapping):
            raise ValueError("live rating state must be a mapping")
        if state.get("version") != STATE_VERSION:
            raise ValueError(
                f"unsupported live rating state version {state.get('version')!r}, "
                f"expected {STATE_VERSION}"
            )
        params = state.get("params")
        players = state.get("players")
        games = state.get("games")
        if not isinstance(params, Mapping) or not isinstance(players, Mapping):
            raise ValueError("live rating state needs 'params' and 'players' mappings")
        if isinstance(games, bool) or not isinstance(games, int) or games < 0:
            raise ValueError(f"'games' must be a non-negative integer, got {games!r}")
        try:
            league = cls(
                mu=params["mu"],
                sigma=params["sigma"],
                beta=params["beta"],
                tau=params["tau"],
                seats=params["seats"],
                confidence=params["confidence"],
            )
        except KeyError as exc:
            raise ValueError(f"live rating state is missing parameter {exc.args[0]!r}") from None
        for name, entry in players.items():
            if not isinstance(name, str) or not name or not isinstance(entry, Mapping):
                raise ValueError(f"bad player entry {name!r} in live rating state")
            mu, sigma, n = entry.get("mu"), entry.get("sigma"), entry.get("games")
            if (
                isinstance(mu, bool)
                or not isinstance(mu, int | float)
                or not math.isfinite(mu)
                or isinstance(sigma, bool)
                or not isinstance(sigma, int | float)
                or not (math.isfinite(sigma) and sigma > 0)
                or isinstance(n, bool)
                or not isinstance(n, int)
                or n < 0
            ):
                raise ValueError(f"bad mu/sigma/games for player {name!r} in live rating state")
            league._players[name] = _Belief(float(mu), float(sigma), n)
        league._games = games
        return league
