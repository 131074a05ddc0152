"""A lean play-phase engine for the search: hands as masks, moves as small integers.

The search plays out thousands of deal endings per decision.  The public engine
(:class:`arena.engine.Game`) can do that, but each step goes through its general action
objects, event log and observation machinery; a search only needs the trick rules.  This
module keeps just those, on plain integers, with the card tables and the rules options
of the engine itself (``arena.engine.cards``, :class:`arena.engine.Rules`), and
``tests/bots/test_search_lean.py`` plays the two side by side on random deals of every
preset so that they cannot drift apart.

A move is ``kind << 5 | card`` with the kinds below; :func:`move_text` gives the engine's
notation.  A :class:`PlayState` is one determinized position of the play phase: every
hand is known (the search fills the hidden ones with a sampled world).
"""

from __future__ import annotations

from arena.engine.cards import CARD_NAMES, CARD_POINTS, R9, RA, RJ, RK, RQ, SUIT_MASK
from arena.engine.rules import Rules

PLAY, MARRY, HALF, ACES, NINES, CRAWL = range(6)
KIND_TEXT = ("play", "marry", "half", "aces", "nines", "crawl")
_KIND_BY_TEXT = {t: k for k, t in enumerate(KIND_TEXT)}

KQ = tuple((1 << (s * 8 + RK)) | (1 << (s * 8 + RQ)) for s in range(4))
QJ = tuple((1 << (s * 8 + RQ)) | (1 << (s * 8 + RJ)) for s in range(4))
ACES_MASK = sum(1 << (s * 8 + RA) for s in range(4))
NINES_MASK = sum(1 << (s * 8 + R9) for s in range(4))
QUEENS = sum(1 << (s * 8 + RQ) for s in range(4))
_CARD_BY_NAME = {name: c for c, name in enumerate(CARD_NAMES)}


def move_text(move: int) -> str:
    return f"{KIND_TEXT[move >> 5]} {CARD_NAMES[move & 31]}"


def parse_move(text: str) -> int | None:
    """The move for a play-phase action text, None for anything else."""
    kind, _, card = text.partition(" ")
    k = _KIND_BY_TEXT.get(kind)
    c = _CARD_BY_NAME.get(card)
    if k is None or c is None:
        return None
    return k << 5 | c


def cards_of(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def mask_points(mask: int) -> int:
    total = 0
    while mask:
        low = mask & -mask
        total += CARD_POINTS[low.bit_length() - 1]
        mask ^= low
    return total


class LeanRules:
    """The play-phase options of a :class:`Rules`, as plain attributes read on hot paths."""

    __slots__ = (
        "ace_marriage", "ascending", "crawl_allowed", "declarer_only", "extras", "fixed_trump",
        "half", "min_cards", "must_trump", "mv", "needs_trick", "nines_marriage", "rules",
        "trump_lead_restricted",
    )  # fmt: skip

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.must_trump = rules.must_trump
        self.mv = tuple(rules.marriage_values)
        self.needs_trick = rules.marriage_needs_trick
        self.min_cards = rules.marriage_min_cards
        self.ascending = rules.marriage_ascending
        self.declarer_only = rules.marriage_declarer_only
        self.fixed_trump = rules.fixed_trump
        self.trump_lead_restricted = rules.trump_lead_restricted
        self.half = rules.half_marriage
        self.ace_marriage = rules.ace_marriage
        self.nines_marriage = rules.nines_marriage
        self.crawl_allowed = rules.blind_first_trick
        self.extras = bool(self.crawl_allowed or self.half or self.ace_marriage
                           or self.nines_marriage)


class PlayState:
    """One position of the play phase with every hand known.

    ``extra_last`` are the points the taker of the last trick adds (a bank, a spare talon)
    and ``extra_declarer`` those the declarer adds (its discards), as the engine scores them.
    """

    __slots__ = (
        "aces_pending", "crawl", "declarer", "extra_declarer", "extra_last", "hands",
        "last_marriage", "last_trick", "lead_suit", "leader", "lr", "marr", "n", "nactive",
        "nxt", "taken", "to_act", "trick", "tricks", "trump", "trump_by",
    )  # fmt: skip

    lr: LeanRules
    n: int
    nactive: int
    nxt: list[int]
    hands: list[int]
    trick: list[tuple[int, int]]
    lead_suit: int
    leader: int
    to_act: int
    trump: int
    trump_by: int
    last_marriage: int
    tricks: list[int]
    taken: list[int]
    marr: list[int]
    aces_pending: list[bool]
    crawl: bool
    declarer: int
    last_trick: int
    extra_last: int
    extra_declarer: int

    @classmethod
    def new(cls, lr: LeanRules, active: list[int], n: int, hands: list[int], leader: int,
            declarer: int = -1) -> PlayState:
        s = cls()
        s.lr = lr
        s.n = n
        s.nactive = len(active)
        s.nxt = [0] * n
        for k, seat in enumerate(active):
            s.nxt[seat] = active[(k + 1) % len(active)]
        s.hands = list(hands)
        s.trick = []
        s.lead_suit = -1
        s.leader = leader
        s.to_act = leader
        s.trump = -1
        s.trump_by = -1
        s.last_marriage = 0
        s.tricks = [0] * n
        s.taken = [0] * n
        s.marr = [0] * n
        s.aces_pending = [False] * n
        s.crawl = False
        s.declarer = declarer
        s.last_trick = -1
        s.extra_last = 0
        s.extra_declarer = 0
        return s

    def copy(self) -> PlayState:
        s = PlayState.__new__(PlayState)
        s.lr = self.lr
        s.n = self.n
        s.nactive = self.nactive
        s.nxt = self.nxt
        s.hands = list(self.hands)
        s.trick = list(self.trick)
        s.lead_suit = self.lead_suit
        s.leader = self.leader
        s.to_act = self.to_act
        s.trump = self.trump
        s.trump_by = self.trump_by
        s.last_marriage = self.last_marriage
        s.tricks = list(self.tricks)
        s.taken = list(self.taken)
        s.marr = list(self.marr)
        s.aces_pending = list(self.aces_pending)
        s.crawl = self.crawl
        s.declarer = self.declarer
        s.last_trick = self.last_trick
        s.extra_last = self.extra_last
        s.extra_declarer = self.extra_declarer
        return s

    @property
    def over(self) -> bool:
        return not self.trick and not any(self.hands)

    # ------------------------------------------------------------------ rules
    def play_mask(self, p: int) -> int:
        """Cards ``p`` may play now (the engine's ``_play_mask``)."""
        hand = self.hands[p]
        if not self.trick:
            if self.aces_pending[p] and hand & ACES_MASK:
                return hand & ACES_MASK
            lr = self.lr
            if lr.trump_lead_restricted and p == self.trump_by and self.trump >= 0:
                rest = hand & ~SUIT_MASK[self.trump]
                if rest:
                    return rest
            return hand
        if self.crawl:
            return hand
        m = hand & SUIT_MASK[self.lead_suit]
        if m:
            return m
        if self.lr.must_trump and self.trump >= 0:
            m = hand & SUIT_MASK[self.trump]
            if m:
                return m
        return hand

    def may_marry(self, p: int) -> bool:
        lr = self.lr
        if lr.needs_trick and not self.tricks[p]:
            return False
        return not (lr.min_cards and self.hands[p].bit_count() < lr.min_cards)

    def legal(self) -> list[int]:
        """Legal moves of the seat to act, in the engine's order."""
        p = self.to_act
        allowed = self.play_mask(p)
        out = cards_of(allowed)
        if self.trick:
            return out
        hand = self.hands[p]
        lr = self.lr
        if not (hand & (hand >> 1) & QUEENS or lr.extras):
            return out
        if lr.crawl_allowed and p == self.declarer and not any(self.tricks):
            out += [CRAWL << 5 | c for c in cards_of(hand)]
        if self.aces_pending[p] and hand & ACES_MASK:
            return out
        if not self.may_marry(p):
            return out
        mv = lr.mv
        for s in range(4):
            if hand & KQ[s] == KQ[s] and (not lr.ascending or mv[s] > self.last_marriage):
                for rank in (RK, RQ):
                    c = s * 8 + rank
                    if allowed >> c & 1:
                        out.append(MARRY << 5 | c)
            if (lr.half and hand & QJ[s] == QJ[s]
                    and (not lr.ascending or mv[s] // 2 > self.last_marriage)):
                for rank in (RQ, RJ):
                    c = s * 8 + rank
                    if allowed >> c & 1:
                        out.append(HALF << 5 | c)
        if lr.ace_marriage and hand & ACES_MASK == ACES_MASK:
            out += [ACES << 5 | c for c in cards_of(ACES_MASK & allowed)]
        if lr.nines_marriage and hand & NINES_MASK == NINES_MASK:
            out += [NINES << 5 | c for c in cards_of(NINES_MASK & allowed)]
        return out

    def apply(self, move: int) -> None:
        """Play a legal move (not checked: the search only generates legal ones)."""
        kind = move >> 5
        c = move & 31
        p = self.to_act
        if kind:
            self._declare(p, kind, c)
        self.play_card(p, c)

    def _declare(self, p: int, kind: int, c: int) -> None:
        lr = self.lr
        s = c >> 3
        if kind == CRAWL:
            self.crawl = True
            return
        if kind == MARRY:
            value = lr.mv[s]
        elif kind == HALF:
            value = lr.mv[s] // 2
        elif kind == ACES:
            value = lr.ace_marriage
            self.aces_pending[p] = True
            if not lr.fixed_trump:
                self.trump = s
                self.trump_by = p
        else:
            value = lr.nines_marriage
        if kind in (MARRY, HALF):
            if not lr.fixed_trump:
                self.trump = s
                self.trump_by = p
            self.last_marriage = value
        if not lr.declarer_only or p == self.declarer:
            self.marr[p] += value

    def play_card(self, p: int, c: int) -> None:
        self.hands[p] &= ~(1 << c)
        trick = self.trick
        if not trick:
            self.lead_suit = c >> 3
        trick.append((p, c))
        if len(trick) < self.nactive:
            self.to_act = self.nxt[p]
            return
        win = trick_winner(trick, self.trump)
        pts = 0
        for _, card in trick:
            pts += CARD_POINTS[card]
        self.taken[win] += pts
        self.tricks[win] += 1
        self.trick = []
        self.crawl = False
        self.last_trick = win
        if self.aces_pending[win] and not self.hands[win] & ACES_MASK:
            self.aces_pending[win] = False
        self.leader = win
        self.to_act = win

    def raw_points(self) -> list[int]:
        """Each seat's deal points as the engine adds them up, once the deal is played."""
        raw = [self.taken[s] + self.marr[s] for s in range(self.n)]
        if self.last_trick >= 0:
            raw[self.last_trick] += self.extra_last
        if self.declarer >= 0:
            raw[self.declarer] += self.extra_declarer
        return raw


def trick_winner(trick: list[tuple[int, int]], trump: int) -> int:
    win_seat, best = trick[0]
    best_suit = best >> 3
    for seat, card in trick[1:]:
        s = card >> 3
        if s == best_suit:
            if card > best:
                win_seat, best = seat, card
        elif s == trump:
            win_seat, best, best_suit = seat, card, s
    return win_seat
