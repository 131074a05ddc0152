"""Records passed between the scheduler, the executors and the results store.

A scheduled match carries, besides the referee's ``MatchSpec``, the tournament context
(participant names, index, duplicate-set group) so that a worker on another machine can
write a complete result row without reading the spec file.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from arena.match.types import JSON, MatchResult, MatchSpec


def _luck(replay: JSON | None) -> JSON | None:
    """The luck of a finished game's deals under the shipped luck model (None without one).

    Computed here, by whoever played the match, as it finishes: reading a million results
    then costs no more with luck-adjusted figures than without.
    """
    if replay is None:
        return None
    from arena.ratings.luck import luck_of_replay

    try:
        luck = luck_of_replay(replay)
    except (OSError, ValueError) as exc:  # a damaged model file must not lose the result
        logging.getLogger(__name__).warning("no luck value for this match: %s", exc)
        return None
    return None if luck is None else luck.to_json()


@dataclass(frozen=True)
class ScheduledMatch:
    """One match of a tournament, ready to hand to any executor."""

    tournament: str
    index: int
    group: str
    round: int
    players: tuple[str, ...]
    spec: MatchSpec

    @property
    def match_id(self) -> str:
        return self.spec.match_id

    def _placing(self) -> JSON:
        """Where the match stands in its tournament, and who plays it."""
        return {"tournament": self.tournament, "index": self.index, "group": self.group,
                "round": self.round, "players": list(self.players)}

    def to_json(self) -> JSON:
        return {**self._placing(), "spec": self.spec.to_json()}

    def row_fields(self) -> JSON:
        """The fields of this match's :class:`ResultRecord` that the schedule fixed before
        it was played (the result adds the rest)."""
        return {"match_id": self.match_id, **self._placing(), "bots": list(self.spec.bots),
                "seed": self.spec.seed}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: JSON) -> ScheduledMatch:
        return cls(
            tournament=data["tournament"],
            index=int(data["index"]),
            group=str(data["group"]),
            round=int(data.get("round", 0)),
            players=tuple(data["players"]),
            spec=MatchSpec.from_json(data["spec"]),
        )

    @classmethod
    def loads(cls, text: str | bytes | JSON) -> ScheduledMatch:
        if isinstance(text, dict):
            return cls.from_json(text)
        return cls.from_json(json.loads(text))


@dataclass
class ResultRecord:
    """One row of the results store: what happened in one match, written once."""

    match_id: str
    tournament: str
    index: int
    group: str
    round: int
    players: list[str]
    bots: list[str]
    seed: str
    status: str
    scores: list[int]
    ranks: list[int]
    deals: int
    seat_stats: list[JSON]
    forfeit_seat: int | None = None
    duration_s: float = 0.0
    finished_at: float = 0.0
    worker: str = ""
    replay: JSON | None = None
    extra: JSON = field(default_factory=dict)
    #: The hosted seats' runs (:class:`~arena.hosted.status.SeatRun`), on their way from
    #: the worker that played the match to the store; kept apart from the row itself.
    seat_runs: list[Any] = field(default_factory=list)
    #: The luck of the deals for each seat pair (:class:`arena.ratings.luck.GameLuck` as
    #: JSON), computed by the worker that played the match; None without a luck model.
    luck: JSON | None = None

    @property
    def timeouts(self) -> list[int]:
        return [int(s.get("timeouts", 0)) for s in self.seat_stats]

    @property
    def illegal(self) -> list[int]:
        return [int(s.get("illegal", 0)) for s in self.seat_stats]

    @property
    def strikes(self) -> list[int]:
        return [int(s.get("strikes", 0)) for s in self.seat_stats]

    @classmethod
    def from_result(
        cls,
        match: ScheduledMatch,
        result: MatchResult,
        *,
        finished_at: float,
        worker: str,
    ) -> ResultRecord:
        # Not result.to_json(): dataclasses.asdict deep-copies the whole replay, which
        # costs more than a short match.
        return cls(
            **match.row_fields(),
            status=result.status,
            scores=[int(s) for s in result.scores],
            ranks=[int(r) for r in result.ranks],
            deals=int(result.deals),
            seat_stats=[asdict(s) for s in result.seat_stats],
            forfeit_seat=result.forfeit_seat,
            duration_s=float(result.duration_s),
            finished_at=finished_at,
            worker=worker,
            replay=result.replay,
            luck=_luck(result.replay),
        )

    def seat_luck(self, a: int, b: int) -> float:
        """The luck of seat a against seat b in this game (0 without a luck value)."""
        from arena.ratings.luck import GameLuck

        luck = GameLuck.from_json(self.luck)
        if luck is None or len(luck.pairs) != len(self.players) * (len(self.players) - 1) // 2:
            return 0.0
        return luck.pair(a, b)

    def outcome_key(self) -> tuple[Any, ...]:
        """The part of a result that must not depend on where or when it was played."""
        return (
            self.match_id,
            self.index,
            self.group,
            tuple(self.players),
            self.seed,
            self.status,
            tuple(self.scores),
            tuple(self.ranks),
            self.deals,
            self.forfeit_seat,
        )

    def summary_json(self) -> JSON:
        """A small form for a task result backend (no replay)."""
        return {
            "match_id": self.match_id,
            "index": self.index,
            "status": self.status,
            "scores": self.scores,
            "ranks": self.ranks,
            "deals": self.deals,
        }
