"""Playing a deal to its end fast: the default policy of the search, and an exact solver.

**Rollouts.**  Inside a sampled world every hand is known, but the players of a rollout
do not use that: each one decides from its own hand, the cards already played and the
trick on the table, with the card sense of the ``greedy`` bot (declare the best marriage
when allowed, cash sure winners, win a trick with the cheapest card that holds, otherwise
throw the least useful card), plus one thing greedy does not do: a defender whose partner
already holds the trick throws it points instead of its cheapest card.  Letting rollout
players see every hand would make them play as if they could, and the search would then
trust lines that only work with perfect information.  What a player may play, and who
takes a trick, are the engine's own compiled trick rules (:mod:`arena.engine.tricks`).

**Exact solver.**  Near the end of a deal the few cards left make the game tree small.
:func:`solve` searches it completely with alpha-beta, one side (the declarer, or the
defenders) maximising the searching seat's value of the outcome and the other side
minimising it.  The value of a finished deal comes from the evaluator (the rules' scoring
of the whole outcome), so the solver fights for the contract, not just for card points.
"""

from __future__ import annotations

from collections.abc import Callable

from arena.bots.greedy import keep_value
from arena.engine.cards import CARD_POINTS, RANK_POINTS, RK, RQ, SUIT_MASK
from arena.engine.tricks import CRAWL, HALF, MARRY, declared_value, holding

from .lean import LeanRules, PlayState

#: Cards of a suit (as an 8-bit pattern) ranked above each rank.
_ABOVE = tuple(0xFF & ~((1 << (r + 1)) - 1) for r in range(8))


def cost_table(mv: tuple[int, ...]) -> list[int]:
    """Greedy's "keep value" of each card for each pattern of its suit, times 8 plus rank.

    Indexed by ``suit << 11 | pattern << 3 | rank``; lower means "give this up first".
    """
    table = [0] * (4 << 11)
    for s in range(4):
        for pattern in range(256):
            for r in range(8):
                v = keep_value(s * 8 + r, pattern << (8 * s), mv)
                table[s << 11 | pattern << 3 | r] = v * 8 + r
    return table


_COSTS: dict[tuple[int, ...], list[int]] = {}


def costs_for(lr: LeanRules) -> list[int]:
    t = _COSTS.get(lr.marriage_values)
    if t is None:
        t = _COSTS[lr.marriage_values] = cost_table(lr.marriage_values)
    return t


def _cheapest(mask: int, hand: int, costs: list[int]) -> int:
    best = -1
    best_cost = 1 << 30
    while mask:
        low = mask & -mask
        c = low.bit_length() - 1
        mask ^= low
        k = costs[(c >> 3) << 11 | ((hand >> (c & 0x18)) & 0xFF) << 3 | (c & 7)]
        if k < best_cost:
            best_cost = k
            best = c
    return best


def _lowest_points(mask: int) -> int:
    """The card of ``mask`` with the fewest points, lowest rank on ties (points grow with
    the rank, so it is the lowest card of one of the suits)."""
    best = -1
    key = 1 << 30
    for s in range(4):
        suit = mask >> (8 * s) & 0xFF
        if suit:
            r = (suit & -suit).bit_length() - 1
            k = RANK_POINTS[r] * 8 + r
            if k < key:
                key = k
                best = s * 8 + r
    return best


def _most_points(mask: int, hand: int, costs: list[int]) -> int:
    """A card to throw on a partner's trick: the most points, but no ace and no marriage."""
    best = -1
    key = -1
    m = mask
    while m:
        low = m & -m
        c = low.bit_length() - 1
        m ^= low
        cost = costs[(c >> 3) << 11 | ((hand >> (c & 0x18)) & 0xFF) << 3 | (c & 7)]
        # Aces and marriage halves carry a keep bonus of 40 and more: keep them.
        k = CARD_POINTS[c] * 8 + (c & 7) if cost < 34 * 8 else -1
        if k > key:
            key = k
            best = c
    return best if best >= 0 else _cheapest(mask, hand, costs)


def _tops(mask: int, unseen: int) -> int:
    """The cards of ``mask`` that nothing unseen of their suit ranks above."""
    out = 0
    for shift in (0, 8, 16, 24):
        suit = mask >> shift & 0xFF
        if suit:
            out |= (suit & 0xFF << (unseen >> shift & 0xFF).bit_length()) << shift
    return out


def choose(state: PlayState, unseen: int, costs: list[int], team: tuple[int, ...] | None,
           ) -> int:
    """The default policy's move for the seat to act (a move of :meth:`PlayState.legal`)."""
    p = state.to_act
    hand = state.hands[p]
    trump = state.trump
    trick = state.trick
    allowed = state.play_mask(p)
    if not trick:
        if state.may_declare(p) and state.may_marry(p):
            decl = [m for m in state.declarations(p, allowed) if m >> 5 != CRAWL]
            if decl:
                return _declare(state, decl, unseen)
        # Sure winners: nothing higher of the suit is out.
        best = -1
        best_key = -1
        m = _tops(allowed, unseen)
        trumps_out = trump >= 0 and unseen & SUIT_MASK[trump]
        while m:
            low = m & -m
            c = low.bit_length() - 1
            m ^= low
            s = c >> 3
            safe = s == trump or not trumps_out or bool(unseen & SUIT_MASK[s])
            key = (safe << 12) | ((s != trump) << 11) | (CARD_POINTS[c] << 3) | (c & 7)
            if key > best_key:
                best_key = key
                best = c
        if best >= 0:
            return best
        return _cheapest(allowed, hand, costs)
    if state.crawl:
        return _cheapest(allowed, hand, costs)
    lead_suit = trick[0][1] >> 3
    win_seat, best_card = trick[holding(trick, trump)]
    best_suit = best_card >> 3
    last = len(trick) >= state.nactive - 1
    if best_suit == lead_suit:
        winning = allowed & SUIT_MASK[lead_suit] & ~((1 << (best_card + 1)) - 1)
        if trump >= 0 and trump != lead_suit:
            winning |= allowed & SUIT_MASK[trump]
    else:  # a trump holds the trick
        winning = allowed & SUIT_MASK[trump] & ~((1 << (best_card + 1)) - 1)
    if team is not None and win_seat != p and (win_seat in team) == (p in team):
        # The partner holds the trick: if it will hold, give it points.
        holds = last or not (
            (unseen >> (best_suit * 8)) & _ABOVE[best_card & 7]
            or (best_suit != trump and trump >= 0 and unseen & SUIT_MASK[trump]
                and not unseen & SUIT_MASK[lead_suit])
        )
        if holds:
            return _most_points(allowed & ~winning if allowed & ~winning else allowed, hand,
                                costs)
    if winning:
        if last:
            return _lowest_points(winning)
        sure = _tops(winning, unseen)
        if trump >= 0 and unseen & SUIT_MASK[trump] and not unseen & SUIT_MASK[lead_suit]:
            sure &= SUIT_MASK[trump]  # trumps are out and may still ruff: only a trump holds
        if sure:
            return _lowest_points(sure)
    return _cheapest(allowed, hand, costs)


def _declare(state: PlayState, decl: list[int], unseen: int) -> int:
    tr = state.tr
    # The four aces or nines before any marriage; of marriages the best (the least one
    # that is allowed, when each must beat the last).
    values = [declared_value(tr, m >> 5, (m & 31) >> 3) if m >> 5 in (MARRY, HALF) else 1000
              for m in decl]
    target = min(values) if tr.marriage_ascending else max(values)
    chosen = [m for m, v in zip(decl, values, strict=True) if v == target]
    m = chosen[0]
    if m >> 5 == MARRY:
        s = (m & 31) >> 3
        higher_out = (unseen >> (8 * s)) & 0xC0
        want = RK if not higher_out else RQ
        for x in chosen:
            if (x & 7) == want and (x & 31) >> 3 == s:
                return x
    return m


def playout(state: PlayState, costs: list[int], team: tuple[int, ...] | None,
            hidden: int = 0) -> PlayState:
    """Play ``state`` (modified in place) to the end of the deal with the default policy.

    ``hidden`` are cards out of play that no player has seen (a spare talon, a bank):
    they count as unseen for the players' reasoning.
    """
    hands = state.hands
    remaining = 0
    for h in hands:
        remaining |= h
    everything = remaining | hidden
    while remaining:
        p = state.to_act
        move = choose(state, everything & ~hands[p], costs, team)
        state.apply(move)
        everything &= ~(1 << (move & 31))
        remaining &= ~(1 << (move & 31))
    return state


# ---------------------------------------------------------------------- exact solver
Leaf = Callable[[PlayState], float]


class OutOfTime(Exception):
    """The clock ran out inside a search: its partial result is thrown away."""


class Guard:
    """Reads a deadline every few solver nodes, so no single search overruns the budget."""

    __slots__ = ("clock", "deadline", "nodes")

    def __init__(self, clock: Callable[[], float], deadline: float) -> None:
        self.clock = clock
        self.deadline = deadline
        self.nodes = 0

    def tick(self) -> None:
        self.nodes += 1
        if not self.nodes & 31 and self.clock() >= self.deadline:
            raise OutOfTime


def solve(state: PlayState, maximizers: tuple[int, ...], leaf: Leaf,
          alpha: float = -1e18, beta: float = 1e18, guard: Guard | None = None) -> float:
    """The value of ``state`` with best play by both sides (alpha-beta, full depth)."""
    if guard is not None:
        guard.tick()
    if not state.trick and not any(state.hands):
        return leaf(state)
    moves = state.legal()
    if len(moves) > 1:
        moves.sort(key=_order_key(state), reverse=True)
    maximize = state.to_act in maximizers
    best = -1e18 if maximize else 1e18
    for m in moves:
        child = state.copy()
        child.apply(m)
        v = solve(child, maximizers, leaf, alpha, beta, guard)
        if maximize:
            if v > best:
                best = v
            if best > alpha:
                alpha = best
        else:
            if v < best:
                best = v
            if best < beta:
                beta = best
        if alpha >= beta:
            break
    return best


def _order_key(state: PlayState) -> Callable[[int], int]:
    """Try declarations and high cards first: they decide tricks and prune most."""

    def key(m: int) -> int:
        c = m & 31
        return (m >> 5 != 0) << 10 | CARD_POINTS[c] << 3 | (c & 7)

    return key


def remaining_plays(state: PlayState) -> int:
    return sum(h.bit_count() for h in state.hands)


#: Once a copy of :func:`playout` with the trick rules written out inline, for speed; the
#: compiled trick rules made the two one.
fast_playout = playout

__all__ = ["Guard", "OutOfTime", "choose", "cost_table", "fast_playout", "playout",
           "remaining_plays", "solve"]
