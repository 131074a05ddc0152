"""The play: tricks until the hands are empty, then the scoring.

The trick rules themselves (what may be played, declarations, who takes a trick) are
:mod:`arena.engine.tricks`; this phase turns them into actions, records what the table
sees, and explains a refused card.
"""

from __future__ import annotations

from typing import Final

from .. import actions as A
from ..actions import Action
from ..cards import ACES_MASK, SUIT_MASK, SUIT_NAMES
from ..rules import Rules
from ..scoring import score_deal
from ..state import PLAY, State
from ..tricks import DECLARATION_NAMES, trick_points
from .base import Phase

# Ready-made tuples of play actions for each suit and each 8-bit pattern of that suit.
_SUIT_PLAYS: Final[tuple[tuple[tuple[Action, ...], ...], ...]] = tuple(
    tuple(tuple(A.PLAY_OF[s * 8 + r] for r in range(8) if v >> r & 1) for v in range(256))
    for s in range(4)
)


def plays_of(mask: int) -> list[Action]:
    """Plain plays of the cards of ``mask``, in card order."""
    out: list[Action] = []
    if mask & 0xFF:
        out += _SUIT_PLAYS[0][mask & 0xFF]
    if mask & 0xFF00:
        out += _SUIT_PLAYS[1][(mask >> 8) & 0xFF]
    if mask & 0xFF0000:
        out += _SUIT_PLAYS[2][(mask >> 16) & 0xFF]
    if mask & 0xFF000000:
        out += _SUIT_PLAYS[3][mask >> 24]
    return out


def first_leader(rules: Rules, declarer: int, dealer: int, active: tuple[int, ...],
                 forehand: int) -> int:
    """Who leads to the first trick (``first_lead``): the declarer, the dealer (unless
    sitting out) or forehand."""
    if rules.first_lead == "declarer" and declarer >= 0:
        return declarer
    if rules.first_lead == "dealer" and dealer in active:
        return dealer
    return forehand


def start(g: State) -> None:
    lead = first_leader(g.rules, g.declarer, g.dealer, g.active, g.forehand)
    g.phase = PLAY
    g.leader = lead
    g.to_act = lead
    g.held = list(g.hands)


class PlayPhase(Phase):
    def legal(self, g: State, p: int) -> list[Action]:
        allowed = g.play_mask(p)
        out = plays_of(allowed)
        if not g.trick and g.may_declare(p):
            moves = A.MOVE_ACTIONS
            out += [moves[m] for m in g.declarations(p, allowed)]
        return out

    def allows(self, g: State, p: int, a: Action) -> bool:
        if a.kind == A.PLAY:  # most decisions of a game: a card, checked on its own
            return bool(g.play_mask(p) >> a.card & 1)
        return a in self.legal(g, p)

    def apply(self, g: State, p: int, a: Action) -> None:
        kind = a.kind - A.PLAY
        c = a.card
        if kind:
            points = g.declare(p, kind, c)
            if points >= 0:
                name = DECLARATION_NAMES[kind]
                g.marriages.append((p, c >> 3, points, name))
                g.records[-1].events.append(("marriage", p, c >> 3, points, name))
        trick = g.trick  # the list the card joins: it holds the whole trick once taken
        nxt = g.play(p, c)
        if g.trick:
            g.to_act = nxt
            return
        g.records[-1].events.append(("trick", nxt, tuple(trick), trick_points(trick)))
        if g.hands[nxt]:
            g.to_act = nxt
        else:
            score_deal(g)

    def why(self, g: State, p: int, a: Action) -> str:
        if a.kind not in A.PLAY_KINDS:
            return ""
        hand = g.hands[p]
        if a.kind != A.PLAY and g.trick:
            return f"{a}: a marriage is declared only when leading"
        if g.trick and not g.crawl:
            led = SUIT_NAMES[g.lead_suit]
            if hand & SUIT_MASK[g.lead_suit]:
                return f"{a}: must follow the led suit ({led})"
            if g.tr.must_trump and g.trump >= 0:
                return f"{a}: void in {led}, must play a trump ({SUIT_NAMES[g.trump]})"
        aces_first = g.aces_pending[p] and hand & ACES_MASK
        if aces_first and not ACES_MASK >> a.card & 1:
            return f"{a}: after declaring the aces, the aces are led one after another"
        if (
            not g.trick
            and g.tr.trump_lead_restricted
            and p == g.trump_by
            and a.card >> 3 == g.trump
            and hand & ~SUIT_MASK[g.trump]
        ):
            return (
                f"{a}: the player who declared the trump may not lead trumps "
                "while holding other suits"
            )
        if a.kind == A.PLAY:
            return f"{a}: not legal now"
        if g.aces_pending[p]:
            return f"{a}: after declaring the aces, the aces are led one after another"
        if a.kind == A.MARRY:
            return f"{a}: no marriage may be declared now ({_marriage_rule(g, p)})"
        if a.kind == A.CRAWL:
            return f"{a}: only the declarer may crawl, on the first trick"
        return f"{a}: not legal now ({_marriage_rule(g, p)})"


def _marriage_rule(g: State, p: int) -> str:
    tr = g.tr
    if tr.marriage_needs_trick and not g.tricks_taken[p]:
        return "a marriage needs a trick taken first"
    if tr.marriage_min_cards and g.hands[p].bit_count() < tr.marriage_min_cards:
        return f"a marriage needs at least {tr.marriage_min_cards} cards in hand"
    if tr.marriage_ascending:
        return f"each marriage must be worth more than {g.last_marriage}"
    return "the king and queen of one suit are needed"
