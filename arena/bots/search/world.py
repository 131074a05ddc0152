"""From an observation and the deal history to the search's inputs.

:func:`play_knowledge` says where each unseen card may be during the play phase;
:func:`play_state` turns one sampled world into a lean position; :func:`deal_context` is
the game state around the deal for the scoring.  Everything here reads only the seat's
observation and the public history (:mod:`.tracker`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from arena.engine.rules import Rules

from .belief import (
    CARD,
    SUITS,
    DealHistory,
    Knowledge,
    deck_mask,
    declared_must,
    marriage_need,
    mask_of_names,
    voids_from_trick,
)
from .lean import ACES_MASK, KQ, NINES_MASK, LeanRules, PlayState, mask_points
from .scoring import DealContext
from .tracker import MatchTracker

_AUCTION_VALUE_KINDS = ("bid", "blind", "buy")


def auction_entries(obs: dict[str, Any]) -> Iterator[tuple[int, str, str]]:
    """The observation's auction as (seat, kind, value): ``[1, "bid 120"]`` is
    ``(1, "bid", "120")``; malformed entries are skipped."""
    for entry in obs.get("auction") or ():
        try:
            seat, text = int(entry[0]), str(entry[1])
        except (TypeError, ValueError, IndexError):
            continue
        kind, _, value = text.partition(" ")
        yield seat, kind, value


def auction_highs(obs: dict[str, Any]) -> dict[int, int]:
    """The highest bid (or purchase) of each seat in this deal's auction."""
    highs: dict[int, int] = {}
    for seat, kind, value in auction_entries(obs):
        if kind in _AUCTION_VALUE_KINDS and value.isdigit():
            highs[seat] = max(highs.get(seat, 0), int(value))
    return highs


def play_knowledge(rules: Rules, obs: dict[str, Any], hist: DealHistory) -> Knowledge | None:
    """Where the unseen cards may be now, in the play phase; None when it does not add up."""
    me = int(obs["seat"])
    n = int(obs["players"])
    active = [int(s) for s in obs.get("active") or range(n)]
    hand = mask_of_names(obs.get("hand"))
    sizes = [int(x) for x in obs.get("hand_sizes") or [0] * n]
    declarer = obs.get("declarer")
    d = int(declarer) if declarer is not None else -1
    k = Knowledge(n, me, hand)
    k.mv = tuple(rules.marriage_values)
    played = hist.played()
    on_table = 0
    face_down: list[int] = []
    trick_cards: list[tuple[int, int]] = []
    for entry in obs.get("trick") or ():
        seat, name = int(entry[0]), str(entry[1])
        c = CARD.get(name)
        if c is None:
            face_down.append(seat)
        else:
            on_table |= 1 << c
            trick_cards.append((seat, c))
    known = hand | played | on_table
    for t in hist.tricks:
        if not t.face_down:
            voids_from_trick(t.cards, t.trump, rules.must_trump, k.voids)
    if not face_down and not hist.crawl:
        voids_from_trick(trick_cards, hist.trump, rules.must_trump, k.voids)
    for s in active:
        if s != me:
            k.capacity[s] = sizes[s]
    # Cards known to be in a hand.
    for s in active:
        if s == me:
            continue
        m = declared_must(hist.declarations, s)
        for entry in obs.get("shown_marriages") or ():
            if int(entry[0]) == s and str(entry[1]) in SUITS:
                m |= KQ[SUITS.index(str(entry[1]))]
        k.must[s] |= m & ~known
    if d == me:
        for entry in obs.get("given") or ():
            c = CARD.get(str(entry[0]))
            target = int(entry[1])
            if c is not None and 0 <= target < n and not (known >> c & 1):
                k.must[target] |= 1 << c
    # Hidden piles.
    talon = hist.talon if d != me else 0
    talon_public = talon & ~known
    exchange = rules.exchange
    extra_known_last = 0
    extra_known_declarer = 0
    if exchange == "discard" and d >= 0:
        if d == me:
            disc = mask_of_names(obs.get("discarded"))
            known |= disc
            extra_known_declarer = mask_points(disc)
        else:
            k.add_pile("discards", rules.talon_size)
    if rules.talons == 2 and d >= 0 and exchange != "none":
        k.add_pile("spare", rules.talon_size, allowed=~talon & deck_mask(rules))
    if exchange == "bank" and d >= 0:
        if d == me and hist.my_bank:
            known |= hist.my_bank
            extra_known_last += mask_points(hist.my_bank)
        else:
            k.add_pile("bank-card", 1)
    for s in face_down:
        k.add_pile(f"down-{s}", 1)
    if talon_public and d >= 0:
        k.talon_cards = talon_public
        k.talon_home = d
        if exchange == "give":
            for r in active:
                if r not in (d, me):
                    k.give_choices.append((r, talon_public, rules.hand_size))
    # What the auction says.
    for s, v in auction_highs(obs).items():
        need = marriage_need(rules, v)
        if need and s != me and s in active:
            k.needs_marriage[s] = need
            k.history[s] = hist.played_by(s)
    must_all = 0
    for i in range(len(k.must)):
        k.must[i] &= ~known
        must_all |= k.must[i]
    for i in range(len(k.capacity)):
        k.capacity[i] -= k.must[i].bit_count()
    k.unknown = deck_mask(rules) & ~known & ~must_all
    k.extra_known = (extra_known_last, extra_known_declarer)
    if not k.consistent_size():
        return None
    return k


class PlayWorlds:
    """Turns sampled worlds into lean positions; what all worlds share is read once."""

    def __init__(self, lr: LeanRules, obs: dict[str, Any], hist: DealHistory,
                 k: Knowledge) -> None:
        n = k.n
        me = k.me
        self.k = k
        self.me = me
        self.active = [int(s) for s in obs.get("active") or range(n)]
        declarer = obs.get("declarer")
        d = int(declarer) if declarer is not None else -1
        leader = obs.get("leader")
        st = PlayState.new(lr, self.active, n, [0] * n,
                           int(leader) if leader is not None else me, d)
        self.trick: list[tuple[int, int]] = []
        #: Positions in the trick whose card lies face down, and the pile it is in.
        self.down: list[tuple[int, int]] = []
        for i, entry in enumerate(obs.get("trick") or ()):
            seat, name = int(entry[0]), str(entry[1])
            c = CARD.get(name)
            if c is None:
                self.down.append((i, k.pile(f"down-{seat}")))
                c = -1
            self.trick.append((seat, c))
        st.to_act = me
        trump = obs.get("trump")
        st.trump = SUITS.index(trump) if trump in ("C", "S", "H", "D") else -1
        st.trump_by = hist.trump_by
        st.last_marriage = hist.last_marriage
        st.tricks_taken = [int(x) for x in obs.get("tricks_taken") or [0] * n]
        st.taken_points = [int(x) for x in obs.get("points_taken") or [0] * n]
        marr = [0] * n
        for entry in obs.get("marriages") or ():
            marr[int(entry[0])] += int(entry[2])
        st.marriage_points = marr
        st.crawl = hist.crawl
        self.aces = [s for s, _suit, kind in hist.declarations if kind == "aces"]
        self.template = st
        r = lr.rules
        self.piles: list[tuple[int, int, int]] = []  # (place, to last trick, to declarer)
        for i, name in enumerate(k.pile_names):
            if name == "discards":
                self.piles.append((n + i, 0, 1))
            elif name == "bank-card":
                self.piles.append((n + i, 1, 0))
            elif name == "spare":
                self.piles.append((n + i, (r.exchange == "bank") + (r.spare_talon == "last-trick"),
                                   0))
            elif not name.startswith("down-"):
                self.piles.append((n + i, 0, 0))

    def make(self, content: list[int]) -> PlayState:
        """The lean position of one sampled world (``content`` from :meth:`Knowledge.sample`)."""
        st = self.template.copy()
        hands = st.hands
        me = self.me
        for s in self.active:
            hands[s] = self.k.my_hand if s == me else content[s]
        trick = list(self.trick)
        for i, place in self.down:
            trick[i] = (trick[i][0], _first(content[place]))
        st.trick = trick
        st.lead_suit = trick[0][1] >> 3 if trick else -1
        for s in self.aces:
            st.aces_pending[s] = bool(hands[s] & ACES_MASK)
        last, decl = self.k.extra_known
        for place, to_last, to_decl in self.piles:
            pts = mask_points(content[place])
            last += pts * to_last
            decl += pts * to_decl
        st.extra_last = last
        st.extra_declarer = decl
        return st

    def hidden(self, content: list[int]) -> int:
        """Cards of the sampled piles: out of play, unseen by the players of a rollout."""
        m = 0
        for place, _a, _b in self.piles:
            m |= content[place]
        return m


def _first(mask: int) -> int:
    low = mask & -mask
    return low.bit_length() - 1


def deal_context(rules: Rules, obs: dict[str, Any], tracker: MatchTracker,
                 hand_dealt: int = 0) -> DealContext:
    """The game around the deal in progress, for the scoring of its possible outcomes."""
    n = rules.players
    declarer = obs.get("declarer")
    d = int(declarer) if declarer is not None else -1
    contract = int(obs.get("contract") or 0)
    me = int(obs["seat"])
    nines = [me] if hand_dealt & NINES_MASK == NINES_MASK else []
    active = [int(s) for s in obs.get("active") or range(n)]
    golden = tracker.golden
    forced = golden or bool(
        rules.barrel is not None and rules.barrel_mode == "talon" and d >= 0
        and (obs.get("barrel") or [False] * n)[d]
    )
    return DealContext(
        rules,
        scores=[int(x) for x in obs.get("scores") or [0] * n],
        active=active,
        declarer=d,
        contract=contract,
        bolts=[int(x) for x in obs.get("bolts") or [0] * n],
        barrel_on=[bool(x) for x in obs.get("barrel") or [False] * n],
        barrel_tries=list(tracker.barrel_tries),
        concessions=list(tracker.concessions),
        blind_won=bool(obs.get("blind")) and d >= 0,
        golden=golden,
        golden_done=tracker.golden_done,
        golden_from=tracker.golden_from,
        golden_made=tracker.golden_made,
        forced_declarer=forced,
        deal_number=int(obs.get("deal") or 0) + 1,
        deals_played=tracker.deals_played,
        nines_dealt=nines,
        talon=tracker.deal.talon if tracker.deal is not None else 0,
    )


__all__ = ["PlayWorlds", "auction_entries", "auction_highs", "deal_context", "play_knowledge"]
