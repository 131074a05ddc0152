"""What every phase builds on: the phase interface, throwing a deal in, the redeal
questions, and how high a hand may bid."""

from __future__ import annotations

from ..actions import Action
from ..cards import KQ, NINES_MASK, mask_points
from ..rules import Rules
from ..state import CHANCE, NINES, OVER, REDEAL, State
from ..tally import leaders


class Phase:
    """The decisions of one phase.  The game asks the phase it is in for the legal
    actions of the seat to act, lets it apply one of them, and asks it why an action was
    refused; a phase overrides what it uses."""

    def legal(self, g: State, p: int) -> list[Action]:
        """Every action ``p`` may take now, in a stable order."""
        return []

    def allows(self, g: State, p: int, a: Action) -> bool:
        """Whether ``a`` is legal for ``p`` now (the phase may answer faster than
        :meth:`legal`)."""
        return a in self.legal(g, p)

    def apply(self, g: State, p: int, a: Action) -> None:
        """Carry out a legal action (already recorded by the game)."""
        raise AssertionError(f"no action is applied in phase {g.phase}")

    def why(self, g: State, p: int, a: Action) -> str:
        """Why ``a`` is not legal for ``p`` now, when the phase has something particular to
        say; else "" and the game gives its general reasons."""
        return ""


#: The chance step and the end of the game: no seat decides anything.
CLOSED = Phase()


def redeal(g: State, reason: str) -> None:
    """Throw the deal in and deal again from the next deal seed (same dealer)."""
    g.records[-1].events.append(("redeal", reason))
    g.records[-1].result = {"redeal": reason}
    g.phase = CHANCE
    g.to_act = None
    limit = g.rules.max_deals
    if limit is not None and g.deal_index >= limit:
        # Redeals count toward the bound: passing players cannot stall a game forever.
        g.winners = leaders(g.scores)
        g.phase = OVER


def low_hand_redealt(g: State) -> bool:
    """The automatic low-hand redeal (``redeal_low_ask`` off): True when it happened."""
    limit = g.rules.redeal_low_hand
    for s in g.active:
        if limit is not None and mask_points(g.hands[s]) < limit:
            redeal(g, f"seat {s} holds fewer than {limit} points")
            return True
    return False


def ask_redeal(g: State, after: str, *, nines: bool, low_hand: bool = False,
               low_talon: bool = False) -> bool:
    """Queue the redeal questions due now; False when nobody is to be asked.

    A seat is asked once, in seat order from forehand (the declarer first about a poor
    talon); four nines ask in phase ``nines``, a low hand or talon in ``redeal``.
    ``after`` names the step that follows once everyone has declined (see
    :mod:`.ask`).
    """
    r = g.rules
    q: list[tuple[int, int, str]] = []
    if low_talon:
        q.append((g.declarer, REDEAL, f"the talon holds fewer than {r.redeal_low_talon} points"))
    limit = r.redeal_low_hand if low_hand else None
    for s in g.order_from(g.forehand):
        if q and q[0][0] == s:
            continue
        h = g.hands[s]
        if nines and h & NINES_MASK == NINES_MASK:
            q.append((s, NINES, f"seat {s} holds four nines"))
        elif limit is not None and mask_points(h) < limit:
            q.append((s, REDEAL, f"seat {s} holds fewer than {limit} points"))
    if not q:
        return False
    g.ask_queue = tuple(q)
    g.ask_after = after
    g.phase = q[0][1]
    g.to_act = q[0][0]
    return True


def ask_questions(g: State, after: str, *, low_hand: bool, nines: bool) -> bool:
    """The low-hand and four-nines questions due now (``low_hand``, ``nines``): queued
    with :func:`ask_redeal`, or, for a low hand with ``redeal_low_ask`` off, the redeal
    done at once.  True when the deal stops here (a question asked, or a redeal)."""
    if low_hand and not g.rules.redeal_low_ask:
        if low_hand_redealt(g):
            return True
        low_hand = False
    return (low_hand or nines) and ask_redeal(g, after, nines=nines, low_hand=low_hand)


def may_bid(g: State, seat: int) -> bool:
    return score_may_bid(g.rules, g.scores[seat])


def score_may_bid(rules: Rules, score: int) -> bool:
    """A player at or below ``minus_may_not_bid`` may not bid (003: "always passes"), nor
    buy a talon."""
    floor = rules.minus_may_not_bid
    return floor is None or score > floor


def absolute_cap(rules: Rules) -> int:
    """No bid can promise more than every card point and every declaration together."""
    return 120 + sum(rules.marriage_values) + rules.ace_marriage + rules.nines_marriage


def bid_cap(rules: Rules, hand: int) -> int:
    """The highest bid (or contract) ``hand`` allows: the plain limit without a marriage,
    the limit plus the marriages held when ``bid_cap_marriages``, never above
    ``bid_max``."""
    cap = absolute_cap(rules)
    if rules.bid_limit_plain is not None:
        held = 0
        for s in range(4):
            if hand & KQ[s] == KQ[s]:
                held += rules.marriage_values[s]
        if not held:
            cap = rules.bid_limit_plain
        elif rules.bid_cap_marriages:
            cap = rules.bid_limit_plain + held
    if rules.bid_max is not None:
        cap = min(cap, rules.bid_max)
    return cap
