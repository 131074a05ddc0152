"""What a deal's outcome is worth to one seat: the engine's scoring, then a game value.

The search compares moves by the score changes they lead to, so it needs the deal scoring
of the rules (rounding, contract made or failed, blind and golden multipliers, bolts,
virgin bonus, the barrel in its modes, the dump truck, the golden round's restart, the
target and the deal limit).  Rather than a second copy of those rules, which drifts from
the engine each time an option is added, :class:`DealContext` builds a bare engine
:class:`~arena.engine.Game` holding only what a seat can see (scores, barrel flags and
bolts from its observation; barrel tries, concessions and the golden round's progress it
followed in the public events) and lets the engine score each outcome on a copy of it.
``tests/bots/test_search_lean.py`` checks the result against real games of every preset.

A score change is turned into one number for the seat, in points, by :class:`Evaluator`:
the mean over the other players of how the pairwise standing moved.  While the game goes
on the standing against a player is the score difference; once it is decided it is
``+win_value`` (above them), ``-win_value`` (below) or 0.  Finishing first is therefore
worth more than any lead, and a deal that lets an opponent reach the target costs as much.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.engine.game import PLAY, DealRecord, Game
from arena.engine.rules import Rules
from arena.engine.scoring import concede, score_deal

from .lean import NINES_MASK


class DealContext:
    """The state of the game around the deal being played, as a seat sees it."""

    __slots__ = ("_game", "n", "rules", "scores")

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
        golden_done: int = 0,
        golden_from: int = 0,
        golden_made: bool = False,
        no_barrel: int = 0,
        forced_declarer: bool = False,
        deal_number: int = 1,
        deals_played: int | None = None,
        nines_dealt: Sequence[int] = (),
        nines_held: Sequence[int] | None = None,
        talon: int = 0,
    ) -> None:
        n = rules.players
        self.rules = rules
        self.n = n
        g = Game(rules)
        #: The standing before the deal (never changed: outcomes are scored on copies).
        self.scores = g.scores = list(scores)
        g.bolts = list(bolts) if bolts is not None else [0] * n
        g.barrel_on = list(barrel_on) if barrel_on is not None else [False] * n
        g.barrel_tries = (list(barrel_tries) if barrel_tries is not None
                          else [rules.barrel_tries] * n)
        g.barrel_falls = list(barrel_falls) if barrel_falls is not None else [0] * n
        g.concessions = list(concessions) if concessions is not None else [0] * n
        g.no_barrel = no_barrel
        g.golden = golden
        g.golden_done = golden_done
        g.golden_from = golden_from
        g.golden_made = golden_made
        #: The engine's ``deal_index`` while this deal is played (deals started so far).
        g.deal_index = deal_number
        g.deals_played = deal_number - 1 if deals_played is None else deals_played
        g.active = tuple(active)
        g.nactive = len(g.active)
        g.declarer = declarer
        g.contract = contract
        g.blind_won = blind_won
        g.forced_declarer = forced_declarer
        g.orig_talon = talon
        for s in nines_dealt:
            g.dealt[s] = NINES_MASK
        if nines_held is not None:
            # Hands after the talon and the gives; without them the engine uses the dealt.
            g.held = [NINES_MASK if s in nines_held else 0 for s in range(n)]
        g.phase = PLAY
        self._game = g

    def with_contract(self, declarer: int, contract: int, *, blind_won: bool = False,
                      forced: bool = False) -> DealContext:
        c = DealContext.__new__(DealContext)
        for name in DealContext.__slots__:
            setattr(c, name, getattr(self, name))
        g = c._game = self._game.copy()
        g.declarer = declarer
        g.contract = contract
        g.blind_won = blind_won
        g.forced_declarer = forced
        return c

    @property
    def declarer(self) -> int:
        return self._game.declarer

    @property
    def contract(self) -> int:
        return self._game.contract

    def _scratch(self) -> Game:
        g = self._game.copy()
        # The engine writes the deal's result into its record: each outcome gets its own.
        g.records = [DealRecord(g.deal_index, g.dealer, [])]
        return g

    # ------------------------------------------------------------------ outcomes
    def played(self, raw: Sequence[int], tricks: Sequence[int]) -> tuple[list[int], list[int]]:
        """Scores after a deal played out with these raw points; and the winners (if over).

        ``raw`` holds each seat's card points, marriages, bank, spare talon and discards,
        as :meth:`PlayState.raw_points` adds them.
        """
        g = self._scratch()
        g.taken_points = list(raw)
        g.tricks_taken = list(tricks)
        score_deal(g)
        return g.scores, list(g.winners)

    def conceded(self) -> tuple[list[int], list[int]]:
        """Scores after the declarer concedes; and the winners (if the game is over)."""
        g = self._scratch()
        concede(g, self.declarer)
        return g.scores, list(g.winners)


class Evaluator:
    """Deal outcomes as one number for ``seat``: the change of its pairwise standings.

    Results are cached by outcome: a search meets the same few hundred outcomes again and
    again, and the scoring rules then cost one dictionary lookup.
    """

    __slots__ = ("_cache", "_conceded", "_others", "ctx", "seat", "win_value")

    def __init__(self, ctx: DealContext, seat: int, win_value: float | None = None) -> None:
        self.ctx = ctx
        self.seat = seat
        self.win_value = float(ctx.rules.target if win_value is None else win_value)
        self._others = [s for s in range(ctx.n) if s != seat]
        self._cache: dict[tuple[int, ...], float] = {}
        self._conceded: float | None = None

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
        if self._conceded is None:
            self._conceded = self.value(*self.ctx.conceded())
        return self._conceded
