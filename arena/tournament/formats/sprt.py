"""The SPRT match: candidate against baseline in duplicate sets until the test decides.

Replayed from the results store on every step, so a stopped run resumes where it was and
the same results lead to the same decision.  Batch sizes come from the spec, never from
the number of workers, so the matches played do not depend on the executor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arena.ratings import Decision, Sprt, SprtResult
from arena.tournament.formats.base import pair_score
from arena.tournament.model import ResultRecord, ScheduledMatch
from arena.tournament.seating import MatchBuilder, seatings_for
from arena.tournament.spec import Participant, TournamentSpec

#: Duplicate sets an SPRT match plays between two looks at the test.  Looking after every
#: set would leave parallel workers idle; a round of 8 sets keeps 2-8 workers busy and
#: overshoots the decision by at most 7 sets, which are stored but do not count.
SPRT_ROUND_SETS = 8


@dataclass(frozen=True)
class SprtOutcome:
    """Where the test stood after the sets that count."""

    sets: int
    games: int
    result: SprtResult | None
    #: The same test on the other basis (raw when the test is luck-adjusted), shown beside.
    other: SprtResult | None = None
    adjusted: bool = False
    #: The luck models of the games counted (short digests), named when adjusted.
    models: tuple[str, ...] = ()

    @property
    def decision(self) -> str:
        return str(self.result.decision) if self.result else str(Decision.CONTINUE)

    def describe(self, candidate: str, baseline: str) -> str:
        if self.result is None:
            return f"SPRT {candidate} vs {baseline}: no sets played"
        verdict = {
            Decision.H1: f"{candidate} is stronger than {baseline} (H1 accepted)",
            Decision.H0: f"{candidate} is not stronger than {baseline} (H0 accepted)",
            Decision.CONTINUE: "no decision within the maximum number of sets",
        }[self.result.decision]
        basis = ""
        if self.adjusted:
            basis = ", luck-adjusted" + (f" by {', '.join(self.models)}" if self.models else "")
        line = f"SPRT after {self.sets} sets ({self.games} games{basis}): {verdict}; {self.result}"
        if self.other is not None:
            line += f" [{'raw' if self.adjusted else 'luck-adjusted'}: {self.other}]"
        return line


class SprtFormat:
    """Candidate against baseline in duplicate sets until the GSPRT decides.

    The sample is one duplicate set: its value is the candidate's mean pairwise score
    against the baseline over the set's games (other seats are fixed opponents), so the
    correlation inside a set never inflates the evidence.
    """

    def __init__(self, spec: TournamentSpec) -> None:
        assert spec.sets is not None
        f = spec.format
        assert f.candidate is not None and f.baseline is not None
        self.spec = spec
        self.candidate = f.candidate
        self.baseline = f.baseline
        others = [p for p in spec.participants if p.name not in (f.candidate, f.baseline)]
        self.table: list[Participant] = [
            spec.participant(f.candidate),
            spec.participant(f.baseline),
            *others,
        ]
        self.seatings = seatings_for(spec.seats, f.seatings)
        self.sprt = Sprt(elo0=f.elo0, elo1=f.elo1, alpha=f.alpha, beta=f.beta)
        self.max_sets = spec.sets
        games = len(self.seatings)
        self.support = [i / (2 * games) for i in range(2 * games + 1)]
        self.adjusted = spec.luck_adjusted
        self.outcome = SprtOutcome(0, 0, None, adjusted=self.adjusted)

    def planned_total(self) -> int | None:
        return None

    def max_total(self) -> int:
        return self.max_sets * len(self.seatings)

    def next_batch(self, done: Mapping[str, ResultRecord]) -> list[ScheduledMatch] | None:
        b = MatchBuilder(self.spec)
        set_scores: list[float] = []
        other_scores: list[float] = []
        models: set[str] = set()
        played = 0
        rounds = math.ceil(self.max_sets / SPRT_ROUND_SETS)
        for rnd in range(rounds):
            n = min(SPRT_ROUND_SETS, self.max_sets - played)
            sets = [b.duplicate_set(self.table, self.seatings, rnd) for _ in range(n)]
            batch = [m for s in sets for m in s]
            if not all(m.match_id in done for m in batch):
                return batch
            for games in sets:
                recs = [done[m.match_id] for m in games]
                set_scores.append(self.set_score(recs, adjusted=self.adjusted))
                other_scores.append(self.set_score(recs, adjusted=not self.adjusted))
                played += 1
                result = self.test(set_scores, len(games), adjusted=self.adjusted)
                other = (self.test(other_scores, len(games), adjusted=not self.adjusted)
                         if self.adjusted or any(r.luck is not None for r in recs) else None)
                models.update(str(r.luck["model"]) for r in recs
                              if isinstance(r.luck, dict) and "model" in r.luck)
                self.outcome = SprtOutcome(played, played * len(games), result, other,
                                           self.adjusted, tuple(sorted(models)))
                if result.decision != Decision.CONTINUE:
                    return None
        return None


    def set_score(self, games: Sequence[ResultRecord], *, adjusted: bool) -> float:
        """The sample of one set: the candidate's mean (adjusted) score against the baseline."""
        scores = [pair_score(r, self.candidate, self.baseline, adjusted=adjusted) for r in games]
        return sum(scores) / len(scores)

    def test(self, set_scores: Sequence[float], games: int, *, adjusted: bool) -> SprtResult:
        """The GSPRT on the set scores so far; adjusted scores are not confined to the
        grid of k/2n values, so they are tested as they come."""
        if adjusted:
            return self.sprt.scores(set_scores, games_per_sample=games, adjusted=True)
        return self.sprt.scores(set_scores, games_per_sample=games, support=self.support)
