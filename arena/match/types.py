"""Value types shared by the referee, the gateway and the tournament runner.

They live apart from the match runner so that a transport (gRPC gateway, Redis routing)
or an executor can depend on the vocabulary of a match without importing how it is run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

JSON = dict[str, Any]

#: The longest answer the referee reads as an action: the longest action in the notation
#: is about 20 characters, so a longer answer is malformed without being parsed (however
#: it ends: ``"pass"`` followed by a megabyte of spaces is not a pass).
ACTION_MAX = 64


@dataclass(frozen=True)
class TimeControl:
    """Clock for one match; every seat has its own bank.

    A decision may take ``decision_ms``; time beyond that is drawn from the seat's
    ``bank_ms``.  When both are spent the referee plays the fallback action and counts a
    strike; ``strike_limit`` strikes forfeit the match for that seat.
    """

    decision_ms: int = 1000
    bank_ms: int = 10000
    strike_limit: int = 3

    def to_json(self) -> JSON:
        return asdict(self)

    @classmethod
    def from_json(cls, data: JSON) -> TimeControl:
        return cls(**data)


@dataclass(frozen=True)
class MatchSpec:
    """Everything needed to play one match again, bit for bit.

    ``bots`` are bot references in seat order: a built-in name (``random``,
    ``greedy``), ``module:Class`` for a Python bot, or ``remote:NAME`` for a bot
    connected to a gateway.  ``commitment`` is set when the seed is secret: the seats are
    shown the commitment at ``match_start`` and the replay keeps it (see
    :mod:`arena.engine.commitment`).
    """

    match_id: str
    rules: JSON
    seed: str = field(repr=False)
    bots: tuple[str, ...]
    time_control: TimeControl = field(default_factory=TimeControl)
    max_deals: int | None = None
    commitment: JSON | None = None

    def to_json(self) -> JSON:
        data: JSON = {
            "match_id": self.match_id,
            "rules": self.rules,
            "seed": self.seed,
            "bots": list(self.bots),
            "time_control": self.time_control.to_json(),
            "max_deals": self.max_deals,
        }
        if self.commitment is not None:
            data["commitment"] = self.commitment
        return data

    @classmethod
    def from_json(cls, data: JSON) -> MatchSpec:
        return cls(
            match_id=data["match_id"],
            rules=data["rules"],
            seed=data["seed"],
            bots=tuple(data["bots"]),
            time_control=TimeControl.from_json(data.get("time_control") or {}),
            max_deals=data.get("max_deals"),
            commitment=data.get("commitment"),
        )


@dataclass(frozen=True)
class DecisionRequest:
    """One question to one seat: what the seat may see, what it may do, how long it has."""

    match_id: str
    request_id: str
    seat: int
    observation: JSON
    legal: tuple[str, ...]
    deadline_ms: int
    time_bank_ms: int


@runtime_checkable
class Seat(Protocol):
    """Anything that answers decision requests: an in-process bot or a remote one."""

    name: str

    async def decide(self, request: DecisionRequest) -> str:
        """Return an action in the engine's text notation (see docs/notation.md)."""
        ...

    async def on_event(self, match_id: str, event: JSON) -> None:
        """Receive a public match event (deal start, card played, trick, scores, end)."""
        ...


#: Turns a bot reference the runner cannot resolve by itself (``remote:NAME``) into a
#: seat.  Executors pass one to ``run_match_sync`` so that the runner needs to know nothing
#: about how remote bots are reached (a gateway in the same process, Redis routing...).
SeatResolver = Callable[[str], Seat]


@dataclass
class SeatStats:
    """What the referee counted for one seat during a match.

    ``think_ms_*`` is the time charged to the seat (for a remote bot: from the moment its
    request was written to its stream to the moment its answer was read); ``platform_ms_*``
    is the time its requests spent inside the platform on top of that, which is never
    charged. ``platform_faults`` counts decisions the platform could not deliver at all:
    the fallback was played for them without a strike.
    """

    decisions: int = 0
    timeouts: int = 0
    illegal: int = 0
    strikes: int = 0
    malformed: int = 0
    think_ms_total: float = 0.0
    think_ms_max: float = 0.0
    platform_ms_total: float = 0.0
    platform_ms_max: float = 0.0
    platform_faults: int = 0


@dataclass
class MatchResult:
    """The outcome of one match, as stored by the results store (one row per match id).

    ``status`` is ``completed``, ``forfeit`` (a seat reached the strike limit) or
    ``aborted`` (the referee was shut down mid-match).
    """

    match_id: str
    seed: str
    bots: tuple[str, ...]
    status: str
    scores: list[int]
    ranks: list[int]
    deals: int
    seat_stats: list[SeatStats]
    forfeit_seat: int | None
    duration_s: float
    replay: JSON | None

    def to_json(self) -> JSON:
        data = asdict(self)
        data["bots"] = list(self.bots)
        return data
