"""What a deal's outcome is worth to one seat: the engine's scoring, then a game value.

The search compares moves by the score changes they lead to, so it needs the deal scoring
of the rules (rounding, contract made or failed, blind and golden multipliers, bolts,
virgin bonus, the barrel in its three modes, the dump truck, the target and the deal
limit).  :class:`DealContext` mirrors the engine's end-of-deal bookkeeping on the state a
seat can see (scores, barrel flags, bolts from its observation, barrel tries it counted
from the events); ``tests/bots/test_search_lean.py`` checks it against the engine's own
scores on random games of every preset.

A score change is turned into one number for the seat, in points, by :class:`Evaluator`:
the mean over the other players of how the pairwise standing moved.  While the game goes
on the standing against a player is the score difference; once it is decided it is
``+win_value`` (above them), ``-win_value`` (below) or 0.  Finishing first is therefore
worth more than any lead, and a deal that lets an opponent reach the target costs as much.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.engine.rules import Rules


def round5(x: int) -> int:
    return (x + 2) // 5 * 5


class DealContext:
    """The state of the game around the deal being played, as a seat sees it."""

    __slots__ = (
        "active", "barrel_falls", "barrel_on", "barrel_tries", "blind_won", "bolts",
        "concessions", "contract", "deal_number", "declarer", "forced_declarer", "golden",
        "n", "nines_dealt", "rules", "scores", "sitter_points",
    )  # fmt: skip

    def __init__(
        self,
        rules: Rules,
        *,
        scores: Sequence[int],
        active: Sequence[int],
        declarer: int = -1,
        contract: int = 0,
        bolts: Sequence[int] | None = None,
        barrel_on: Sequence[bool] | None = None,
        barrel_tries: Sequence[int] | None = None,
        barrel_falls: Sequence[int] | None = None,
        concessions: Sequence[int] | None = None,
        blind_won: bool = False,
        golden: bool = False,
        forced_declarer: bool = False,
        deal_number: int = 1,
        nines_dealt: Sequence[int] = (),
        sitter_points: int = 0,
    ) -> None:
        n = rules.players
        self.rules = rules
        self.n = n
        self.scores = list(scores)
        self.active = tuple(active)
        self.declarer = declarer
        self.contract = contract
        self.bolts = list(bolts) if bolts is not None else [0] * n
        self.barrel_on = list(barrel_on) if barrel_on is not None else [False] * n
        self.barrel_tries = (list(barrel_tries) if barrel_tries is not None
                             else [rules.barrel_tries] * n)
        self.barrel_falls = list(barrel_falls) if barrel_falls is not None else [0] * n
        self.concessions = list(concessions) if concessions is not None else [0] * n
        self.blind_won = blind_won
        self.golden = golden
        self.forced_declarer = forced_declarer
        #: The engine's ``deal_index`` while this deal is played (deals started so far).
        self.deal_number = deal_number
        self.nines_dealt = tuple(nines_dealt)
        self.sitter_points = sitter_points

    def with_contract(self, declarer: int, contract: int, *, blind_won: bool = False,
                      forced: bool = False) -> DealContext:
        c = DealContext.__new__(DealContext)
        for name in DealContext.__slots__:
            setattr(c, name, getattr(self, name))
        c.declarer = declarer
        c.contract = contract
        c.blind_won = blind_won
        c.forced_declarer = forced
        return c

    # ------------------------------------------------------------------ played deal
    def played(self, raw: Sequence[int], tricks: Sequence[int]) -> tuple[list[int], list[int]]:
        """Scores after a deal played out with these raw points; and the winners (if over).

        ``raw`` holds each seat's card points, marriages, bank, spare talon and discards,
        as :meth:`PlayState.raw_points` adds them.
        """
        r = self.rules
        n = self.n
        d = self.declarer
        contract_delta = [0] * n
        plain = [0] * n
        made = False
        for s in self.active:
            pts = round5(raw[s]) if r.rounding else raw[s]
            if s == d:
                cmp_pts = pts if r.round_before_compare else raw[s]
                need = self.contract
                if self.forced_declarer and r.barrel_mode == "talon" and self.barrel_on[s]:
                    need = self.contract + 1
                made = cmp_pts >= need
                mult = r.blind_multiplier if self.blind_won else 1
                contract_delta[s] = (self.contract if made else -self.contract) * mult
            elif d < 0 or r.opponents_score:
                plain[s] = pts
        if r.four_nines == "points":
            for s in self.nines_dealt:
                if s in self.active:
                    plain[s] += r.four_nines_points
        if r.virgin_bonus:
            for s in self.active:
                if not tricks[s]:
                    plain[s] += r.virgin_bonus
        if r.sitter_scores_talon and len(self.active) < n:
            for s in range(n):
                if s not in self.active:
                    plain[s] = self.sitter_points
                    break
        got_points = None
        if r.bolts and r.bolt_on != "no-trick":
            got_points = [raw[s] + plain[s] for s in range(n)]
        return self._finish(contract_delta, plain, made, conceded=False, tricks=tricks,
                            got_points=got_points)

    def conceded(self) -> tuple[list[int], list[int]]:
        """Scores after the declarer concedes; and the winners (if the game is over)."""
        r = self.rules
        n = self.n
        p = self.declarer
        deltas = [0] * n
        mult = r.blind_multiplier if self.blind_won else 1
        if r.concede_declarer_loses:
            deltas[p] -= self.contract * mult
        if r.concede_limit is not None and self.concessions[p] + 1 >= r.concede_limit:
            deltas[p] -= r.concede_limit_penalty
        each = 60 if r.concede_opponents == "60" else round5(self.contract // 2)
        plain = [0] * n
        for s in self.active:
            if s != p:
                plain[s] = each
        return self._finish(deltas, plain, False, conceded=True, tricks=None, got_points=None)

    # ------------------------------------------------------------------ bookkeeping
    def _finish(self, contract_delta: list[int], plain: list[int], made: bool, *,
                conceded: bool, tricks: Sequence[int] | None,
                got_points: list[int] | None) -> tuple[list[int], list[int]]:
        r = self.rules
        n = self.n
        if self.golden:
            contract_delta = [x * 2 for x in contract_delta]
            plain = [x * 2 for x in plain]
        before = self.scores
        scores = list(before)
        barrel = r.barrel
        barrel_on = self.barrel_on
        for s in range(n):
            gain = contract_delta[s]
            if not (barrel is not None and barrel_on[s]):
                gain += plain[s]
            scores[s] += gain
        if r.bolts and not conceded:
            for s in self.active:
                got = tricks[s] if got_points is None else got_points[s]  # type: ignore[index]
                if not got:
                    b = self.bolts[s] + 1
                    if b >= r.bolt_every:
                        scores[s] -= r.bolt_penalty
        falls: list[int] = []
        if barrel is not None:
            winners = self._barrel(scores, contract_delta, made, falls)
        else:
            winners = [s for s in range(n) if self._reached(scores[s])]
        if r.dump_truck != "off":
            minus = r.dump_truck == "555-and-minus"
            for s in range(n):
                if scores[s] == 555 or (minus and scores[s] == -555):
                    scores[s] = 0
        for s in falls:
            if r.barrel_falls_reset is not None and self.barrel_falls[s] + 1 >= \
                    r.barrel_falls_reset:
                scores[s] = 0
        winners = [s for s in winners if self._reached(scores[s])]
        if not winners and r.max_deals is not None and self.deal_number >= r.max_deals:
            top = max(scores)
            winners = [s for s in range(n) if scores[s] == top]
        return scores, winners

    def _reached(self, score: int) -> bool:
        t = self.rules.target
        return score > t if self.rules.win_above_target else score >= t

    def _barrel(self, scores: list[int], contract_delta: list[int], made: bool,
                falls: list[int]) -> list[int]:
        r = self.rules
        n = self.n
        b = r.barrel
        assert b is not None
        d = self.declarer
        if r.barrel_mode == "contracts-only":
            return [s for s in range(n) if self._reached(scores[s])]
        on = list(self.barrel_on)
        tries = list(self.barrel_tries)
        fall_to = 0 if r.barrel_fall == "zero" else b - 120
        winners = []
        for s in range(n):
            if not on[s]:
                continue
            if self._reached(scores[s]) and s == d and made and (
                self.contract >= r.barrel_min_contract or self.forced_declarer
            ):
                winners.append(s)
                continue
            if s in self.active:
                tries[s] -= 1
            scores[s] = b
            if tries[s] <= 0:
                on[s] = False
                scores[s] = fall_to
                falls.append(s)
        climbers = []
        for s in range(n):
            if on[s] or s in winners or s in falls:
                continue
            sc = scores[s]
            if self._reached(sc) and s == d and made and contract_delta[s] > 0:
                winners.append(s)
            elif sc >= b:
                climbers.append(s)
        if r.barrel_both_fall and len(climbers) > 1:
            for s in climbers:
                scores[s] = fall_to
                falls.append(s)
            climbers = []
        sitting = [o for o in range(n) if on[o]]
        for s in climbers:
            if r.barrel_knock_off:
                for o in sitting:
                    if on[o]:
                        on[o] = False
                        scores[o] = fall_to
                        falls.append(o)
            scores[s] = b
            on[s] = True
        return winners


class Evaluator:
    """Deal outcomes as one number for ``seat``: the change of its pairwise standings.

    Results are cached by outcome: a search meets the same few hundred outcomes again and
    again, and the scoring rules then cost one dictionary lookup.
    """

    __slots__ = ("_cache", "_others", "ctx", "seat", "win_value")

    def __init__(self, ctx: DealContext, seat: int, win_value: float | None = None) -> None:
        self.ctx = ctx
        self.seat = seat
        self.win_value = float(ctx.rules.target if win_value is None else win_value)
        self._others = [s for s in range(ctx.n) if s != seat]
        self._cache: dict[tuple[int, ...], float] = {}

    def value(self, scores: Sequence[int], winners: Sequence[int]) -> float:
        """The standing after a deal minus the standing before it."""
        me = self.seat
        before = self.ctx.scores
        total = 0.0
        if winners:
            w = self.win_value
            key_me = (me in winners, scores[me])
            for o in self._others:
                key_o = (o in winners, scores[o])
                pair = w if key_me > key_o else -w if key_me < key_o else 0.0
                total += pair - (before[me] - before[o])
        else:
            for o in self._others:
                total += (scores[me] - scores[o]) - (before[me] - before[o])
        return total / len(self._others)

    def played(self, raw: Sequence[int], tricks: Sequence[int]) -> float:
        key = (*raw, *(1 if t else 0 for t in tricks))
        v = self._cache.get(key)
        if v is None:
            v = self.value(*self.ctx.played(raw, tricks))
            self._cache[key] = v
        return v

    def conceded(self) -> float:
        return self.value(*self.ctx.conceded())
