"""How well a sampled world explains what the other players did.

The other players' bids and cards are evidence about their hands.  A world is weighed by
replaying the deal so far in it: at every step another player took, the model player
(the plain card sense of :mod:`.rollout` and :mod:`.dealsim`, the same rules a ``greedy``
player follows) is asked what it would have done with that world's hand, and each step it
would have taken differently counts as one mismatch.  A world's weight is
``INCONSISTENT ** mismatches``: against players who play like the model the search soon
knows where the cards are; against others the weights only sort worlds by how plausible
they are, and every world keeps some weight, so no evidence is ever taken as certain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass, field

from .belief import DealHistory
from .lean import ACES, CRAWL, HALF, MARRY, NINES, PLAY, LeanRules, PlayState
from .rollout import choose

#: Weight factor of one step a world does not explain.
INCONSISTENT = 0.25

_KIND = {"marriage": MARRY, "half": HALF, "aces": ACES, "nines": NINES}


@dataclass
class PlayJudge:
    """Counts the plays of the other seats (so far in this deal) the model would not make.

    The sequence of plays is read once per decision; each world then only replays it.
    """

    lr: LeanRules
    costs: list[int]
    hist: InitVar[DealHistory]
    me: InitVar[int]
    active: list[int]
    n: int
    declarer: int
    trick_now: InitVar[Sequence[tuple[int, int]]]
    start_trump: int
    give_up: int = 3
    #: (seat, move, judged) in playing order.
    steps: list[tuple[int, int, bool]] = field(init=False)
    played: list[int] = field(init=False)
    leader: int = field(init=False)

    def __post_init__(self, hist: DealHistory, me: int,
                      trick_now: Sequence[tuple[int, int]]) -> None:
        self.active = list(self.active)
        tricks = [(t.cards, t.face_down) for t in hist.tricks]
        if trick_now:
            tricks.append((list(trick_now), hist.crawl))
        self.steps = []
        self.played = [0] * self.n
        for ti, (cards, down) in enumerate(tricks):
            for pos, (seat, c) in enumerate(cards):
                kind = PLAY
                if pos == 0:
                    kind = CRAWL if down else _KIND.get(hist.declared_at.get(ti, ""), PLAY)
                self.steps.append((seat, kind << 5 | c, seat != me and not (down and pos > 0)))
                self.played[seat] |= 1 << c
        self.leader = tricks[0][0][0][0] if tricks else -1

    def __call__(self, hands_now: Sequence[int], hidden: int) -> int:
        if not self.steps:
            return 0
        start = [h | p for h, p in zip(hands_now, self.played, strict=True)]
        st = PlayState.new(self.lr, self.active, self.n, start, self.leader, self.declarer)
        if self.start_trump >= 0:
            st.trump = self.start_trump
            st.trump_by = self.declarer
        everything = hidden
        for h in start:
            everything |= h
        misses = 0
        costs = self.costs
        for seat, move, judged in self.steps:
            if judged:
                if st.to_act != seat:
                    return misses  # the history does not fit this replay: stop judging
                if choose(st, everything & ~st.hands[seat], costs, None) != move:
                    misses += 1
                    if misses >= self.give_up:
                        return misses
            st.to_act = seat
            st.apply(move)
            everything &= ~(1 << (move & 31))
        return misses


def auction_mismatches(steps: Sequence[tuple[int, str, int]], me: int,
                       dealt: Callable[[int], int], model_max: Callable[[int], int]) -> int:
    """Auction steps of the other seats their dealt hands do not explain under the model.

    ``steps`` are (seat, "bid" or "pass", value): a bid of ``value``, or a pass when the
    lowest bid was ``value``.
    """
    misses = 0
    tops: dict[int, int] = {}
    for seat, kind, value in steps:
        if seat == me:
            continue
        top = tops.get(seat)
        if top is None:
            top = tops[seat] = model_max(dealt(seat))
        if (kind == "bid" and top < value) or (kind == "pass" and top >= value):
            misses += 1
    return misses
