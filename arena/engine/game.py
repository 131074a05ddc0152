"""The game state machine: deal, auction, talon, exchange, contract, play, scoring.

One :class:`Game` is a whole game of 1000 played to the target score.  Dealing is an
explicit chance step (:meth:`Game.deal`) so that search bots and tests can deal chosen
cards; otherwise each deal's cards come from the match seed (see
:mod:`arena.engine.shuffle`).

Hands are bit masks and actions are interned objects: listing the legal actions and
applying one costs a few microseconds, which is what lets bots search and tournaments
run millions of deals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import actions as A
from . import view
from .actions import Action, as_action
from .cards import (
    ACES_MASK,
    CARD_NAMES,
    DECK_24,
    DECK_32,
    KQ,
    NINES_MASK,
    SUIT_MASK,
    SUIT_NAMES,
    SUITS,
    cards_of,
    cards_str,
    mask_of,
    mask_points,
    parse_card,
)
from .errors import IllegalActionError
from .rules import Rules
from .shuffle import deal_seed, shuffled
from .state import (
    AUCTION,
    BLIND,
    CHANCE,
    CONTRACT,
    EXCHANGE,
    NINES,
    OVER,
    PHASE_NAMES,
    PLAY,
    REDEAL,
    SALE,
    SALE_OFFER,
    TALON_CHOICE,
    TRUMP,
    DealRecord,
    State,
)
from .tricks import DECLARATION_NAMES, TrickRules, trick_points
from .view import PUBLIC_TYPE, events_public, public_events, public_text

__all__ = [
    "PHASE_NAMES",
    "PLAY",
    "PUBLIC_TYPE",
    "DealRecord",
    "Game",
    "events_public",
    "golden_round_complete",
    "public_events",
    "public_text",
]

_PLAY = A.PLAY

# Ready-made tuples of play actions for each suit and each 8-bit pattern of that suit.
_SUIT_PLAYS: tuple[tuple[tuple[Action, ...], ...], ...] = tuple(
    tuple(tuple(A.PLAY_OF[s * 8 + r] for r in range(8) if v >> r & 1) for v in range(256))
    for s in range(4)
)


def _plays_of(mask: int) -> list[Action]:
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


def _round5(x: int) -> int:
    """Nearest multiple of 5, halves up (62 -> 60, 63 -> 65)."""
    return (x + 2) // 5 * 5


#: The keys of :meth:`Game.observation`, in order (see docs/protocol.md).
_OBSERVATION_TEMPLATE: dict[str, Any] = dict.fromkeys((
    "seat", "players", "dealer", "deal", "phase", "to_act", "hand", "scores", "barrel",
    "bolts", "active", "auction", "bid", "declarer", "contract", "blind", "talon", "given",
    "received", "discarded", "shown_marriages", "trump", "marriages", "trick", "leader",
    "tricks_taken", "points_taken", "hand_sizes",
))


class Game(State):
    """A game of 1000 under a rules configuration, from the first deal to the end.

    Its fields are those of :class:`~arena.engine.state.State`."""

    __slots__ = ()

    def __init__(
        self, rules: Rules | None = None, seed: str = "0", *, dealer: int = 0,
        _blank: bool = False,
    ) -> None:
        if _blank:
            # For copy(), which sets every attribute itself. Game.__new__(Game) would do
            # in plain Python, but the compiled class (arena.compiled) runs __init__ from
            # __new__: a whole new game for every copy of a state, ten times the cost.
            return
        self.rules = rules if rules is not None else Rules("classic")
        self.tr = TrickRules(self.rules)
        self.seed = str(seed)
        self.n = self.rules.players
        if not 0 <= dealer < self.n:
            raise ValueError(f"dealer must be a seat from 0 to {self.n - 1}")
        n = self.n
        self.scores = [0] * n
        self.bolts = [0] * n
        self.barrel_on = [False] * n
        self.barrel_tries = [0] * n
        self.barrel_falls = [0] * n
        self.concessions = [0] * n
        # Seats off the barrel for good (barrel_falls_no_barrel) and the golden round's
        # progress: seats that played their golden deal, where the round began, whether a
        # golden contract was made in it.
        self.no_barrel = 0
        self.golden_done = 0
        self.golden_from = 0
        self.golden_made = False
        self.dealer = dealer
        self.deal_index = 0
        self.deals_played = 0
        self.records = []
        self.winners = []
        self.reset_deal()
        self.phase = CHANCE
        self.to_act = None

    # ------------------------------------------------------------------ queries
    @property
    def _absolute_cap(self) -> int:
        """No bid can promise more than every card point and every declaration together."""
        r = self.rules
        return 120 + sum(r.marriage_values) + r.ace_marriage + r.nines_marriage

    @property
    def is_over(self) -> bool:
        return self.phase == OVER

    @property
    def is_chance(self) -> bool:
        return self.phase == CHANCE

    @property
    def phase_name(self) -> str:
        return PHASE_NAMES[self.phase]

    def ranking(self) -> list[int]:
        """Rank of each seat, 1 for the best; equal scores share a rank.

        When the game is over the winners (who reached the target) rank above everyone,
        which matters when a rule holds other players at the barrel.
        """
        key = [(s in self.winners, self.scores[s]) for s in range(self.n)]
        return [1 + sum(1 for o in key if o > key[s]) for s in range(self.n)]

    def copy(self) -> Game:
        """A cheap independent copy: lists are copied, finished deal records shared.

        Written out attribute by attribute: search bots copy states millions of times.
        """
        g = Game(_blank=True)
        g.sale_min = self.sale_min
        g.aces_pending = list(self.aces_pending)
        g.active = self.active
        g.ask_after = self.ask_after
        g.ask_queue = self.ask_queue
        g.auction_log = list(self.auction_log)
        g.bank = self.bank
        g.barrel_falls = list(self.barrel_falls)
        g.barrel_on = list(self.barrel_on)
        g.barrel_tries = list(self.barrel_tries)
        g.bid = self.bid
        g.bidder = self.bidder
        g.blind_mask = self.blind_mask
        g.blind_won = self.blind_won
        g.bolts = list(self.bolts)
        g.chosen = self.chosen
        g.concessions = list(self.concessions)
        g.contract = self.contract
        g.crawl = self.crawl
        g.deal_index = self.deal_index
        g.dealer = self.dealer
        g.deals_played = self.deals_played
        g.dealt = list(self.dealt)
        g.declarer = self.declarer
        g.discards = self.discards
        g.exch_left = list(self.exch_left)
        g.forced_declarer = self.forced_declarer
        g.forehand = self.forehand
        g.given = list(self.given)
        g.golden = self.golden
        g.golden_done = self.golden_done
        g.golden_from = self.golden_from
        g.golden_made = self.golden_made
        g.hands = list(self.hands)
        g.held = self.held
        g.last_marriage = self.last_marriage
        g.last_trick = self.last_trick
        g.lead_suit = self.lead_suit
        g.leader = self.leader
        g.looked = self.looked
        g.marriage_points = list(self.marriage_points)
        g.marriages = list(self.marriages)
        g.n = self.n
        g.nactive = self.nactive
        g.no_barrel = self.no_barrel
        g.nxt = list(self.nxt)
        g.orig_talon = self.orig_talon
        g.passed = list(self.passed)
        g.phase = self.phase
        g.received = [list(r) for r in self.received]
        g.records = list(self.records)
        g.rules = self.rules
        g.sale_queue = list(self.sale_queue)
        g.scores = list(self.scores)
        g.seed = self.seed
        g.shown = list(self.shown)
        g.spare = self.spare
        g.taken_points = list(self.taken_points)
        g.talon = list(self.talon)
        g.talon_public = self.talon_public
        g.talon_seen = self.talon_seen
        g.tr = self.tr
        g.to_act = self.to_act
        g.trick = list(self.trick)
        g.tricks_taken = list(self.tricks_taken)
        g.trump = self.trump
        g.trump_by = self.trump_by
        g.unseen = self.unseen
        g.winners = list(self.winners)
        if g.records and g.records[-1].result is None:
            g.records[-1] = g.records[-1].copy()
        return g

    def __copy__(self) -> Game:
        return self.copy()

    # ------------------------------------------------------------------ dealing
    def deal(self, deck: Sequence[int | str] | None = None) -> None:
        """The chance step: deal the next deal from the seed, or from an explicit deck.

        An explicit deck is a full permutation of the cards in play, in the order the
        seeded shuffle would produce (see ``docs/shuffle.md`` for how it is dealt out).
        """
        if self.phase != CHANCE:
            raise IllegalActionError(f"cannot deal now: the game is in phase {self.phase_name}")
        r = self.rules
        base = DECK_24 if r.deck == 24 else DECK_32
        if deck is None:
            order = shuffled(base, deal_seed(self.seed, self.deal_index))
        else:
            order = [parse_card(c) if isinstance(c, str) else int(c) for c in deck]
            if sorted(order) != sorted(base):
                raise IllegalActionError(
                    f"an explicit deck must hold each of the {len(base)} cards exactly once"
                )
        self.reset_deal()
        rec = DealRecord(self.deal_index, self.dealer, order)
        self.records.append(rec)
        self.deal_index += 1
        n = self.n
        d = self.dealer
        seats = [(d + 1 + i) % n for i in range(n)]
        if r.dealer_sits_out:
            seats = [s for s in seats if s != d]
        self.active = tuple(seats)
        self.nactive = len(seats)
        self.forehand = seats[0]
        self.nxt = [0] * n
        for k, s in enumerate(seats):
            self.nxt[s] = seats[(k + 1) % len(seats)]
        h = r.hand_size
        for k, s in enumerate(seats):
            self.hands[s] = mask_of(order[k * h : (k + 1) * h])
        self.dealt = list(self.hands)
        pos = len(seats) * h
        for _ in range(r.talons):
            self.talon.append(mask_of(order[pos : pos + r.talon_size]))
            pos += r.talon_size
        self.orig_talon = 0
        for t in self.talon:
            self.orig_talon |= t
        self._after_deal()

    def _redeal(self, reason: str) -> None:
        """Throw the deal in and deal again from the next deal seed (same dealer)."""
        self.records[-1].events.append(("redeal", reason))
        self.records[-1].result = {"redeal": reason}
        self.phase = CHANCE
        self.to_act = None
        limit = self.rules.max_deals
        if limit is not None and self.deal_index >= limit:
            # Redeals count toward the bound: passing players cannot stall a game forever.
            self._end_at_limit()

    def _end_at_limit(self) -> None:
        top = max(self.scores)
        self.winners = [s for s in range(self.n) if self.scores[s] == top]
        self.phase = OVER
        self.to_act = None

    def _after_deal(self) -> None:
        r = self.rules
        low = r.redeal_low_hand is not None and r.redeal_low_hand_at != "exchange"
        if low and not r.redeal_low_ask:
            if self._low_hand_redealt():
                return
            low = False
        nines = r.four_nines == "redeal-before-auction"
        if (low or nines) and self._ask_redeal("auction", nines=nines, low_hand=low):
            # Whoever is asked has looked at the cards: no blind bid for them.
            for s, _, _ in self.ask_queue:
                self.looked |= 1 << s
            return
        self._start_bidding()

    def _low_hand_redealt(self) -> bool:
        """The automatic low-hand redeal (``redeal_low_ask`` off): True when it happened."""
        limit = self.rules.redeal_low_hand
        for s in self.active:
            if limit is not None and mask_points(self.hands[s]) < limit:
                self._redeal(f"seat {s} holds fewer than {limit} points")
                return True
        return False

    def _ask_redeal(self, after: str, *, nines: bool, low_hand: bool = False,
                    low_talon: bool = False) -> bool:
        """Queue the redeal questions due now; False when nobody is to be asked.

        A seat is asked once, in seat order from forehand (the declarer first about a
        poor talon); four nines ask in phase ``nines``, a low hand or talon in ``redeal``.
        """
        r = self.rules
        q: list[tuple[int, int, str]] = []
        if low_talon:
            q.append((self.declarer, REDEAL,
                      f"the talon holds fewer than {r.redeal_low_talon} points"))
        limit = r.redeal_low_hand if low_hand else None
        for s in self.order_from(self.forehand):
            if q and q[0][0] == s:
                continue
            h = self.hands[s]
            if nines and h & NINES_MASK == NINES_MASK:
                q.append((s, NINES, f"seat {s} holds four nines"))
            elif limit is not None and mask_points(h) < limit:
                q.append((s, REDEAL, f"seat {s} holds fewer than {limit} points"))
        if not q:
            return False
        self.ask_queue = tuple(q)
        self.ask_after = after
        self.phase = q[0][1]
        self.to_act = q[0][0]
        return True

    def _next_active(self, seat: int) -> int:
        return self.nxt[seat]

    def _start_bidding(self) -> None:
        r = self.rules
        if not r.auction:
            self._start_play()
            return
        # The barrel player who must take the talon without an auction.
        if r.barrel is not None and r.barrel_mode == "talon":
            for s in self.order_from(self.forehand):
                if self.barrel_on[s]:
                    self._auto_declarer(s, r.barrel_min_contract)
                    return
        if r.golden_round and self._golden_now():
            self.golden = True
            self._auto_declarer(self._golden_seat(), 120)
            return
        if r.blind_bid:
            fh = self.forehand
            if r.blind_by == "anyone":
                may = 0
                for s in self.active:
                    if self._may_blind(s):
                        may |= 1 << s
                self.unseen = may & ~self.looked
            elif self._may_blind(fh) and not self.looked >> fh & 1:
                self.unseen = 1 << fh
            if self.unseen >> fh & 1:
                self.phase = BLIND
                self.to_act = fh
                return
        self._open_auction()

    def _golden_seat(self) -> int:
        """Who plays the golden deal: the dealer, or forehand when the dealer sits out."""
        return self.dealer if self.dealer in self.active else self.forehand

    def _golden_now(self) -> bool:
        if self.rules.golden_round_count == "deals":
            return self.deals_played - self.golden_from < len(self.active)
        # 003 l.67: every player on his own deal, so a seat whose golden deal was conceded
        # (and is dealt again by the same dealer) still has it to play.
        return not self.golden_done >> self._golden_seat() & 1

    def _turn(self, seat: int) -> None:
        """Give ``seat`` the turn in the auction: a seat that has not looked at its hand
        yet first chooses ``look`` or a blind bid (it looks by itself when no blind bid is
        left to make)."""
        self.to_act = seat
        bit = 1 << seat
        if self.unseen & bit and not self.blind_mask & bit:
            if self._blind_actions(seat):
                self.phase = BLIND
                return
            self.unseen &= ~bit
        self.phase = AUCTION

    def _auto_declarer(self, seat: int, contract: int) -> None:
        self.declarer = seat
        self.contract = contract
        self.bid = contract
        self.bidder = seat
        self.forced_declarer = True
        self.records[-1].events.append(("auto", seat, A.bid(contract)))
        self._talon_stage()

    def _may_blind(self, seat: int) -> bool:
        r = self.rules
        if r.blind_min_score is not None and self.scores[seat] < r.blind_min_score:
            return False
        return not (r.minus_may_not_bid is not None and self.scores[seat] <= r.minus_may_not_bid)

    def _opener(self) -> int:
        return self.dealer if self.rules.opener == "dealer" else self.forehand

    def _open_auction(self) -> None:
        r = self.rules
        self.phase = AUCTION
        opener = self._opener()
        if r.forced_bid and not self._may_bid(opener):
            # 003: a player at the floor "always passes"; the forced bid moves on clockwise.
            for s in self.order_from(opener)[1:]:
                if self._may_bid(s):
                    opener = s
                    break
            else:
                self._redeal("nobody may bid")
                return
        if r.forced_bid:
            forced = A.bid(r.opening_bid)
            self.bid = r.opening_bid
            self.bidder = opener
            self.auction_log.append((opener, forced, True))
            self.records[-1].events.append(("auto", opener, forced))
            nxt = self._next_bidder(opener)
            if nxt is None:
                self.to_act = None
                self._end_auction()
            elif self.unseen:
                self._turn(nxt)
            else:
                self.to_act = nxt
        elif self.unseen:
            self._turn(opener)
        else:
            self.to_act = opener

    # ------------------------------------------------------------------ auction helpers
    def _may_bid(self, seat: int) -> bool:
        floor = self.rules.minus_may_not_bid
        return floor is None or self.scores[seat] > floor

    def _bid_cap(self, seat: int) -> int:
        r = self.rules
        cap = self._absolute_cap
        hand = self.hands[seat]
        if r.bid_limit_plain is not None:
            held = 0
            for s in range(4):
                if hand & KQ[s] == KQ[s]:
                    held += r.marriage_values[s]
            if not held:
                cap = r.bid_limit_plain
            elif r.bid_cap_marriages:
                cap = r.bid_limit_plain + held
        if r.bid_max is not None:
            cap = min(cap, r.bid_max)
        return cap

    def _min_bid(self) -> int:
        return self.bid + self.rules.bid_step if self.bidder >= 0 else self.rules.opening_bid

    def _next_bidder(self, seat: int) -> int | None:
        """The next seat clockwise that has not passed, or None when the auction is over."""
        s = seat
        for _ in range(len(self.active)):
            s = self._next_active(s)
            if s == self.bidder:
                # Everyone else passed since the high bid.
                return None
            if not self.passed[s]:
                return s
        return None

    def _auction_over(self) -> bool:
        live = [s for s in self.active if not self.passed[s]]
        if self.bidder < 0:
            return not live
        return live == [self.bidder] or not live

    def _end_auction(self) -> None:
        r = self.rules
        if self.bidder < 0:
            self._redeal("everybody passed")
            return
        self.declarer = self.bidder
        self.contract = self.bid
        if self.blind_mask >> self.declarer & 1:
            self.blind_won = True
        self.blind_mask = 0
        self.unseen = 0
        if (
            r.redeal_low_talon is not None
            and not r.redeal_low_ask
            and r.forced_bid
            and self.contract == r.opening_bid
            and mask_points(self.talon[0]) < r.redeal_low_talon
        ):
            self._redeal(f"the talon holds fewer than {r.redeal_low_talon} points")
            return
        self._talon_stage()

    # ------------------------------------------------------------------ talon
    def _talon_stage(self) -> None:
        r = self.rules
        if r.exchange == "none":
            self._start_play()
            return
        if r.talons == 2:
            self.phase = TALON_CHOICE
            self.to_act = self.declarer
            return
        if r.talon_public and not self._talon_hidden():
            self.talon_public = True
        self.talon_seen |= 1 << self.declarer
        if r.sale and not self.forced_declarer:
            self.phase = SALE_OFFER
            self.to_act = self.declarer
            return
        if r.rebuy and self.talon_public and not self.forced_declarer:
            self._open_sale(rebuy=True)
            return
        self._take_talon()

    def _talon_hidden(self) -> bool:
        """Whether a talon that is normally shown stays with the declarer this time."""
        r = self.rules
        if self.blind_won and r.blind_hides_talon:
            return True
        # 003 l.57: a talon taken at the bid of 100 is not shown.
        return (r.hide_talon_at_opening and not self.forced_declarer
                and self.contract == r.opening_bid)

    def _open_sale(self, rebuy: bool) -> None:
        r = self.rules
        q = self.order_from(self.declarer)[1:]
        if r.minus_may_not_bid is not None:
            q = [s for s in q if self.scores[s] > r.minus_may_not_bid]
        self.sale_queue = q
        self.sale_min = (self.contract // 120 + 1) * 120 if rebuy else self.contract + r.bid_step
        if not q:
            self._take_talon()
            return
        self.phase = SALE
        self.to_act = q[0]

    def _take_talon(self) -> None:
        r = self.rules
        d = self.declarer
        t = self.talon[self.chosen]
        self.hands[d] |= t
        self.received[d].extend(cards_of(t))
        # 003 l.43: the declarer who got the talon at the forced 100 may cancel the auction
        # when the talon is poor (not after raising the bid himself).
        low_talon = (
            r.redeal_low_talon is not None
            and r.redeal_low_ask
            and r.forced_bid
            and not self.forced_declarer
            and self.contract == r.opening_bid
            and mask_points(t) < r.redeal_low_talon
        )
        nines = r.four_nines == "redeal-after-talon"
        if (low_talon or nines) and self._ask_redeal("exchange", nines=nines,
                                                     low_talon=low_talon):
            return
        self._start_exchange()

    def _start_exchange(self) -> None:
        r = self.rules
        d = self.declarer
        if r.exchange == "give":
            self.exch_left = [s for s in self.order_from(d)[1:]]
        elif r.exchange == "discard":
            self.exch_left = [-1] * r.talon_size
        else:  # bank: one card to the opponent, one to the bank
            self.exch_left = [self._next_active(d), -2]
        self.phase = EXCHANGE
        self.to_act = d

    def _after_exchange(self) -> None:
        r = self.rules
        low = r.redeal_low_hand is not None and r.redeal_low_hand_at != "deal"
        if low and not r.redeal_low_ask:
            if self._low_hand_redealt():
                return
            low = False
        nines = r.four_nines == "redeal-after-exchange"
        if (low or nines) and self._ask_redeal("contract", nines=nines, low_hand=low):
            return
        self._start_contract()

    def _start_contract(self) -> None:
        r = self.rules
        barrel_forced = self.forced_declarer and not self.golden
        if r.raise_contract and not barrel_forced:
            self.phase = CONTRACT
            self.to_act = self.declarer
            return
        self._start_trump()

    def _start_trump(self) -> None:
        if self.rules.fixed_trump:
            self.phase = TRUMP
            self.to_act = self.declarer
            return
        self._start_play()

    # ------------------------------------------------------------------ play helpers
    def _start_play(self) -> None:
        r = self.rules
        if r.first_lead == "declarer" and self.declarer >= 0:
            lead = self.declarer
        elif r.first_lead == "dealer" and self.dealer in self.active:
            lead = self.dealer
        else:
            lead = self.forehand
        self.phase = PLAY
        self.leader = lead
        self.to_act = lead
        self.held = list(self.hands)

    # ------------------------------------------------------------------ legal actions
    def legal_actions(self) -> list[Action]:
        """Every action the seat to act may take now, in a stable order."""
        ph = self.phase
        p = self.to_act
        if ph == PLAY:
            assert p is not None
            allowed = self.play_mask(p)
            out = _plays_of(allowed)
            if not self.trick and self.may_declare(p):
                moves = A.MOVE_ACTIONS
                out += [moves[m] for m in self.declarations(p, allowed)]
            return out
        if p is None:
            return []
        r = self.rules
        if ph == AUCTION:
            return self._auction_actions(p)
        if ph == EXCHANGE:
            hand = self.hands[p]
            out = []
            if r.concede and self._may_concede(p) and len(self.exch_left) == self._exch_total():
                out.append(A.CONCEDE_ACTION)
            cards = cards_of(hand)
            for target in sorted(set(self.exch_left)):
                if target == -1:
                    out += [A.DISCARD_OF[c] for c in cards]
                elif target == -2:
                    out += [A.BANK_OF[c] for c in cards]
                else:
                    out += [A.GIVE_OF[c][target] for c in cards]
            return out
        if ph == CONTRACT:
            out = list(A.value_range(A.CONTRACT, self.contract, self._contract_cap(), r.bid_step))
            if r.concede and self._may_concede(p):
                out.append(A.CONCEDE_ACTION)
            return out
        if ph == TALON_CHOICE:
            return [A.talon(k + 1) for k in range(len(self.talon))]
        if ph == NINES:
            return [A.REDEAL_ACTION, A.PASS_ACTION]
        if ph == REDEAL:
            # Declining comes first: what a bot without an opinion picks.
            return [A.PASS_ACTION, A.REDEAL_ACTION]
        if ph == BLIND:
            return [A.LOOK_ACTION, *self._blind_actions(p)]
        if ph == SALE_OFFER:
            return [A.SELL_ACTION, A.KEEP_ACTION]
        if ph == SALE:
            cap = self._bid_cap(p) if not self.talon_public else self._bid_cap_with_talon(p)
            step = 120 if r.rebuy else r.bid_step
            return [A.PASS_ACTION] + [A.buy(v) for v in range(self.sale_min, cap + 1, step)]
        if ph == TRUMP:
            return [A.trump(s) for s in range(4)]
        return []

    def _exch_total(self) -> int:
        r = self.rules
        if r.exchange == "give":
            return len(self.active) - 1
        if r.exchange == "discard":
            return r.talon_size
        return 2

    def _may_concede(self, seat: int) -> bool:
        r = self.rules
        lim = r.concede_limit
        if lim is not None and self.concessions[seat] >= lim:
            return False
        if r.concede_free_on_barrel and r.concede_free_in_golden:
            return True
        # 003 l.49/50: a concession that costs nothing may be barred while a player sits
        # on the barrel or in the golden round.
        free = not r.concede_declarer_loses and not (
            lim is not None and self.concessions[seat] + 1 >= lim and r.concede_limit_penalty
        )
        if not free:
            return True
        if not r.concede_free_on_barrel and any(self.barrel_on):
            return False
        return r.concede_free_in_golden or not self.golden

    def _contract_cap(self) -> int:
        return max(self.contract, self._bid_cap(self.declarer))

    def _blind_cap(self) -> int:
        r = self.rules
        cap = r.bid_limit_plain if r.bid_limit_plain is not None else self._absolute_cap
        if r.bid_max is not None:
            cap = min(cap, r.bid_max)
        return cap

    def _blind_actions(self, p: int) -> tuple[Action, ...]:
        """The blind bids open to ``p`` now (before the auction opens: forehand's first
        choice, made before the forced bid is placed)."""
        r = self.rules
        if self.auction_log:
            lo = self._min_bid()
        else:
            lo = r.opening_bid
            if r.forced_bid and self._opener() != p:
                lo += r.bid_step
        top = self._blind_cap()
        fixed = r.blind_fixed_bid
        if fixed is not None:
            return (A.blind(fixed),) if lo <= fixed <= top else ()
        return A.value_range(A.BLIND, lo, top, r.bid_step)

    def _bid_cap_with_talon(self, seat: int) -> int:
        """A buyer's ceiling counts the marriages it could hold with the talon."""
        saved = self.hands[seat]
        self.hands[seat] = saved | self.talon[0]
        try:
            return self._bid_cap(seat)
        finally:
            self.hands[seat] = saved

    def _auction_actions(self, p: int) -> list[Action]:
        r = self.rules
        out = [A.PASS_ACTION]
        if r.minus_may_not_bid is not None and self.scores[p] <= r.minus_may_not_bid:
            return out
        if self.blind_mask >> p & 1:
            return out + list(self._blind_actions(p))
        return out + list(A.value_range(A.BID, self._min_bid(), self._bid_cap(p), r.bid_step))

    # ------------------------------------------------------------------ apply
    def apply(self, action: Action | str) -> None:
        """Apply the action of the seat to act.

        Raises :class:`IllegalActionError` saying why when the action is not legal now;
        the state is then unchanged.
        """
        a = action if type(action) is Action else as_action(action)
        p = self.to_act
        if a.kind == _PLAY and self.phase == PLAY:
            assert p is not None
            if not (self.play_mask(p) >> a.card & 1):
                raise IllegalActionError(self._why(a))
            rec = self.records[-1]
            rec.actions.append((p, a))
            rec.events.append(("action", p, a))
            self._play_card(p, a.card)
            return
        if p is None or a not in self.legal_actions():
            raise IllegalActionError(self._why(a))
        rec = self.records[-1]
        rec.actions.append((p, a))
        rec.events.append(("action", p, a))
        k = a.kind
        ph = self.phase
        r = self.rules
        if ph == PLAY:
            self._declare(p, a.kind - A.PLAY, a.card)
            self._play_card(p, a.card)
        elif ph == AUCTION:
            self._apply_auction(p, a)
        elif ph == EXCHANGE:
            self._apply_exchange(p, a)
        elif ph == CONTRACT:
            if k == A.CONCEDE:
                self._concede(p)
            else:
                self.contract = a.value
                self._start_trump()
        elif ph == TALON_CHOICE:
            idx = a.value - 1
            self.chosen = idx
            if r.talon_public and not self._talon_hidden():
                self.talon_public = True
            self.talon_seen |= 1 << p
            self.spare = self.talon[1 - idx]
            if r.exchange == "bank":
                self.bank |= self.spare
            self._take_talon()
        elif ph in (NINES, REDEAL):
            self._apply_ask(p, a)
        elif ph == BLIND:
            bit = 1 << p
            if k == A.LOOK:
                self.unseen &= ~bit
                if self.auction_log:
                    self.phase = AUCTION  # the same seat now bids having seen its cards
                else:
                    self._open_auction()
            elif self.auction_log:
                self.blind_mask |= bit
                self.phase = AUCTION
                self._apply_auction(p, a)
            else:
                self.blind_mask |= bit
                self.phase = AUCTION
                opener = self._opener()
                if r.forced_bid and opener != p:
                    forced = A.bid(r.opening_bid)
                    self.auction_log.append((opener, forced, True))
                    self.records[-1].events.append(("auto", opener, forced))
                self.bid = a.value
                self.bidder = p
                self.auction_log.append((p, a, False))
                nxt = self._next_bidder(p)
                if nxt is None:
                    self.to_act = None
                    self._end_auction()
                else:
                    self._turn(nxt)
        elif ph == SALE_OFFER:
            if k == A.SELL:
                self._open_sale(rebuy=False)
            else:
                self._take_talon()
        elif ph == SALE:
            self._apply_sale(p, a)
        elif ph == TRUMP:
            self.trump = a.value
            self.trump_by = p
            self._start_play()

    def _why(self, a: Action) -> str:
        """Explain why an action is illegal (only called on the error path)."""
        p = self.to_act
        if self.phase == OVER:
            return "the game is over"
        if self.phase == CHANCE or p is None:
            return "the next step is dealing (call deal()), not a decision"
        ph = PHASE_NAMES[self.phase]
        if a.kind in A.CARD_KINDS and a.card >= 0 and not (self.hands[p] >> a.card & 1):
            return f"{a}: seat {p} does not hold {CARD_NAMES[a.card]}"
        if self.phase == PLAY and a.kind in A.PLAY_KINDS:
            if a.kind != A.PLAY and self.trick:
                return f"{a}: a marriage is declared only when leading"
            if self.trick and not self.crawl:
                led = SUIT_NAMES[self.lead_suit]
                if self.hands[p] & SUIT_MASK[self.lead_suit]:
                    return f"{a}: must follow the led suit ({led})"
                if self.rules.must_trump and self.trump >= 0:
                    return f"{a}: void in {led}, must play a trump ({SUIT_NAMES[self.trump]})"
            if self.aces_pending[p] and self.hands[p] & ACES_MASK and not (ACES_MASK >> a.card & 1):
                return f"{a}: after declaring the aces, the aces are led one after another"
            if (
                not self.trick
                and self.rules.trump_lead_restricted
                and p == self.trump_by
                and a.card >> 3 == self.trump
                and self.hands[p] & ~SUIT_MASK[self.trump]
            ):
                return (
                    f"{a}: the player who declared the trump may not lead trumps "
                    "while holding other suits"
                )
            if a.kind == A.PLAY:
                return f"{a}: not legal now"
            if self.aces_pending[p]:
                return f"{a}: after declaring the aces, the aces are led one after another"
            if a.kind == A.MARRY:
                return f"{a}: no marriage may be declared now ({self._marriage_rule(p)})"
            if a.kind == A.CRAWL:
                return f"{a}: only the declarer may crawl, on the first trick"
            return f"{a}: not legal now ({self._marriage_rule(p)})"
        if self.phase in (AUCTION, BLIND) and a.kind in (A.BID, A.BLIND):
            floor = self.rules.minus_may_not_bid
            if floor is not None and self.scores[p] <= floor:
                return f"{a}: a player at {self.scores[p]} (at or below {floor}) may not bid"
            lo = self._min_bid()
            if a.value < lo:
                return f"{a}: the bid must be at least {lo}"
            if a.value % self.rules.bid_step:
                return f"{a}: bids go in steps of {self.rules.bid_step}"
            if a.kind == A.BID and self.blind_mask >> p & 1:
                return f"{a}: seat {p} bids blind and has not looked at the hand"
            if a.kind == A.BLIND and not self.unseen >> p & 1:
                if self.rules.blind_by == "forehand":
                    return f"{a}: only forehand may bid blind, before looking"
                return f"{a}: only a player who has not looked at the hand may bid blind"
            fixed = self.rules.blind_fixed_bid
            if a.kind == A.BLIND and fixed is not None and a.value != fixed:
                return f"{a}: a blind bid is exactly {fixed}"
            cap = self._bid_cap(p) if a.kind == A.BID else self._blind_cap()
            return f"{a}: above the highest bid allowed for this hand ({cap})"
        if a.kind == A.CONTRACT and self.phase == CONTRACT:
            if a.value < self.contract:
                return f"{a}: the contract can only be raised, not lowered below {self.contract}"
            return f"{a}: above the highest contract allowed ({self._contract_cap()})"
        if a.kind == A.CONCEDE:
            r = self.rules
            if not r.concede:
                return "concede: these rules do not allow conceding"
            if self.phase in (EXCHANGE, CONTRACT) and p == self.declarer:
                if r.concede_limit is not None and self.concessions[p] >= r.concede_limit:
                    return f"concede: seat {p} has conceded {r.concede_limit} time(s) already"
                if not self._may_concede(p):
                    where = ("in the golden round" if self.golden
                             else "while a player sits on the barrel")
                    return f"concede: a concession that costs nothing is not allowed {where}"
            return "concede: only the declarer, after the talon and before giving cards"
        if a.kind == A.GIVE and self.phase == EXCHANGE:
            return f"{a}: seat {a.target} cannot receive a card now"
        return f"{a}: not legal in phase {ph} for seat {p}"

    def _marriage_rule(self, p: int) -> str:
        r = self.rules
        if r.marriage_needs_trick and not self.tricks_taken[p]:
            return "a marriage needs a trick taken first"
        if r.marriage_min_cards and self.hands[p].bit_count() < r.marriage_min_cards:
            return f"a marriage needs at least {r.marriage_min_cards} cards in hand"
        if r.marriage_ascending:
            return f"each marriage must be worth more than {self.last_marriage}"
        return "the king and queen of one suit are needed"

    # ------------------------------------------------------------------ auction apply
    def _apply_auction(self, p: int, a: Action) -> None:
        r = self.rules
        self.auction_log.append((p, a, False))
        if a.kind == A.PASS:
            self.passed[p] = True
            if self.unseen:
                # A seat that passes looks at its cards.
                self.blind_mask &= ~(1 << p)
                self.unseen &= ~(1 << p)
        else:
            prev = self.bidder
            if (
                self.blind_mask
                and prev >= 0
                and prev != p
                and self.blind_mask >> prev & 1
                and r.blind_outbid == "look"
            ):
                # 003 l.53: an outbid blind bidder looks and bids on as usual, not doubled.
                self.blind_mask &= ~(1 << prev)
                self.unseen &= ~(1 << prev)
            self.bid = a.value
            self.bidder = p
            if r.show_marriage and r.bid_limit_plain is not None and a.value > r.bid_limit_plain:
                for s in range(4):
                    if self.hands[p] & KQ[s] == KQ[s] and (p, s) not in self.shown:
                        self.shown.append((p, s))
        if self._auction_over():
            self._end_auction()
            return
        nxt = self._next_bidder(p)
        if nxt is None:
            self._end_auction()
        elif self.unseen:
            self._turn(nxt)
        else:
            self.to_act = nxt

    def _apply_sale(self, p: int, a: Action) -> None:
        r = self.rules
        self.auction_log.append((p, a, False))
        self.sale_queue.pop(0)
        if a.kind == A.BUY:
            # The buyer saw its own hand: a blind contract stays blind only for its bidder.
            self.blind_won = False
            self.declarer = p
            self.contract = a.value
            self.bid = a.value
            self.bidder = p
            self.talon_seen |= 1 << p
            step = 120 if r.rebuy else r.bid_step
            self.sale_min = a.value + step
        if self.sale_queue:
            self.to_act = self.sale_queue[0]
        else:
            self._take_talon()

    def _apply_ask(self, p: int, a: Action) -> None:
        _, _, reason = self.ask_queue[0]
        self.ask_queue = self.ask_queue[1:]
        if a.kind == A.REDEAL:
            self._redeal(reason)
            return
        if self.ask_queue:
            self.phase = self.ask_queue[0][1]
            self.to_act = self.ask_queue[0][0]
            return
        after = self.ask_after
        if after == "auction":
            self._start_bidding()
        elif after == "exchange":
            self._start_exchange()
        else:
            self._start_contract()

    def _apply_exchange(self, p: int, a: Action) -> None:
        if a.kind == A.CONCEDE:
            self._concede(p)
            return
        c = a.card
        self.hands[p] &= ~(1 << c)
        if a.kind == A.GIVE:
            self.exch_left.remove(a.target)
            self.hands[a.target] |= 1 << c
            self.received[a.target].append(c)
            self.given.append((c, a.target))
        elif a.kind == A.DISCARD:
            self.exch_left.remove(-1)
            self.discards |= 1 << c
        else:
            self.exch_left.remove(-2)
            self.bank |= 1 << c
        if not self.exch_left:
            self._after_exchange()

    # ------------------------------------------------------------------ play apply
    def _declare(self, p: int, kind: int, card: int) -> None:
        points = self.declare(p, kind, card)
        if points >= 0:
            name = DECLARATION_NAMES[kind]
            s = card >> 3
            self.marriages.append((p, s, points, name))
            self.records[-1].events.append(("marriage", p, s, points, name))

    def _play_card(self, p: int, c: int) -> None:
        trick = self.trick  # the list the card joins: it holds the whole trick once taken
        nxt = self.play(p, c)
        if self.trick:
            self.to_act = nxt
            return
        self.records[-1].events.append(("trick", nxt, tuple(trick), trick_points(trick)))
        if self.hands[nxt]:
            self.to_act = nxt
        else:
            self._score_deal()

    # ------------------------------------------------------------------ scoring
    def _concede(self, p: int) -> None:
        r = self.rules
        n = self.n
        deltas = [0] * n
        self.concessions[p] += 1
        mult = r.blind_multiplier if self.blind_won else 1
        if r.concede_declarer_loses:
            deltas[p] -= self.contract * mult
        if r.concede_limit is not None and self.concessions[p] >= r.concede_limit:
            deltas[p] -= r.concede_limit_penalty
        if r.concede_opponents == "60":
            each = 60
        elif r.concede_half_round == "up":
            each = (self.contract + 5) // 10 * 5  # half to the nearest 5, half-way up
        else:
            each = _round5(self.contract // 2)  # half-way down: 105 -> 52 -> 50
        if self.blind_won and r.blind_doubles_opponents:
            each *= r.blind_multiplier
        plain = [0] * n
        for s in self.active:
            if s != p:
                plain[s] = each
        self._finish_deal(deltas, plain, contract_made=False, info={"conceded": p})

    def _score_deal(self) -> None:
        r = self.rules
        n = self.n
        d = self.declarer
        last = self.last_trick
        if self.spare and r.spare_talon == "last-trick":
            self.taken_points[last] += mask_points(self.spare)
        if self.bank:
            self.taken_points[last] += mask_points(self.bank)
        if d >= 0 and self.discards:
            to = r.discards_to
            if to == "declarer":
                self.taken_points[d] += mask_points(self.discards)
            elif to == "last-trick":
                self.taken_points[last] += mask_points(self.discards)
        raw = [self.taken_points[s] + self.marriage_points[s] for s in range(n)]
        contract_delta = [0] * n
        plain = [0] * n
        made = False
        for s in self.active:
            pts = _round5(raw[s]) if r.rounding else raw[s]
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
        if self.blind_won and r.blind_doubles_opponents:
            # 003 l.95: the blind declarer's result and the opponents' points double.
            for s in self.active:
                if s != d:
                    plain[s] *= r.blind_multiplier
        if r.four_nines == "points":
            counted = r.four_nines_counted
            for s in self.active:
                dealt = self.dealt[s] & NINES_MASK == NINES_MASK
                held = self.held[s] & NINES_MASK == NINES_MASK if self.held else dealt
                if dealt if counted == "dealt" else held if counted == "after-exchange" else (
                    dealt or held
                ):
                    plain[s] += r.four_nines_points
        if r.virgin_bonus:
            for s in self.active:
                if not self.tricks_taken[s]:
                    plain[s] += r.virgin_bonus
        if r.sitter_scores_talon and len(self.active) < n:
            sitter = next(s for s in range(n) if s not in self.active)
            t = self.orig_talon
            pts = mask_points(t)
            for su in range(4):
                if t & KQ[su] == KQ[su]:
                    pts += r.marriage_values[su]
            plain[sitter] = _round5(pts) if r.rounding else pts
        self._finish_deal(contract_delta, plain, contract_made=made, info={"points": raw})

    def _finish_deal(
        self, contract_delta: list[int], plain: list[int], *, contract_made: bool,
        info: dict[str, Any],
    ) -> None:
        r = self.rules
        n = self.n
        d = self.declarer
        if self.golden:
            contract_delta = [x * 2 for x in contract_delta]
            plain = [x * 2 for x in plain]
        before = list(self.scores)
        barrel = r.barrel
        falls: list[int] = []
        for s in range(n):
            gain = contract_delta[s]
            if not (barrel is not None and self.barrel_on[s]):
                gain += plain[s]
            self.scores[s] += gain
        # Bolts: nothing taken in a deal the seat played.
        penalties: list[int] | None = None
        if r.bolts and "conceded" not in info:
            for s in self.active:
                if r.bolt_on == "no-trick":
                    got = self.tricks_taken[s]
                else:  # "not a single point": marriages and other points count too
                    got = self.taken_points[s] + self.marriage_points[s] + plain[s]
                if not got:
                    self.bolts[s] += 1
                    if self.bolts[s] >= r.bolt_every:
                        self.scores[s] -= r.bolt_penalty
                        self.bolts[s] = 0
                        if penalties is None:
                            penalties = [0] * n
                        penalties[s] = r.bolt_penalty
                elif r.bolt_consecutive:
                    self.bolts[s] = 0
        winners: list[int] = []
        if barrel is not None:
            winners = self._barrel_step(before, contract_delta, contract_made, falls,
                                        penalties if r.barrel_bolt_penalty else None)
        else:
            winners = [s for s in range(n) if self._reached(self.scores[s])]
        if r.dump_truck != "off":
            minus = r.dump_truck == "555-and-minus"
            for s in range(n):
                if self.scores[s] == 555 or (minus and self.scores[s] == -555):
                    self.scores[s] = 0
        for s in falls:
            self.barrel_falls[s] += 1
            if r.barrel_falls_reset is not None and self.barrel_falls[s] >= r.barrel_falls_reset:
                self.scores[s] = r.barrel_falls_reset_to
                self.barrel_falls[s] = 0
                if r.barrel_falls_no_barrel:
                    # 003 l.81: from now on this player goes to the target without a barrel.
                    self.no_barrel |= 1 << s
        if self.golden and self._golden_round_over(info, contract_made):
            winners = []
            info = {**info, "golden_restart": True}
        winners = [s for s in winners if self._reached(self.scores[s])]
        deltas = [self.scores[s] - before[s] for s in range(n)]
        rec = self.records[-1]
        result = dict(info)
        result.update(
            declarer=d, contract=self.contract, made=contract_made, deltas=deltas,
            scores=list(self.scores), blind=self.blind_won,
        )
        rec.result = result
        rec.events.append(("deal_end", tuple(deltas), tuple(self.scores), d, self.contract,
                           contract_made))
        self.deals_played += 1
        if not winners and r.max_deals is not None and self.deal_index >= r.max_deals:
            top = max(self.scores)
            winners = [s for s in range(n) if self.scores[s] == top]
        if winners:
            self.winners = winners
            self.phase = OVER
            self.to_act = None
            return
        if "conceded" not in info:
            # 003: after a concession the same dealer shuffles and deals again.
            self.dealer = (self.dealer + 1) % n
        self.phase = CHANCE
        self.to_act = None

    def _golden_round_over(self, info: dict[str, Any], made: bool) -> bool:
        """Count a golden deal just scored; True when the game starts again (003 l.67:
        nobody made the 120 in the whole golden round)."""
        r = self.rules
        if "conceded" not in info:
            self.golden_done |= 1 << self.declarer
        self.golden_made = self.golden_made or made
        over = golden_round_complete(
            r, self.golden_done, self.golden_from, self.deals_played, len(self.active)
        )
        if not over or self.golden_made or not r.golden_restart:
            return False
        n = self.n
        self.scores[:] = [0] * n
        self.bolts[:] = [0] * n
        self.barrel_on[:] = [False] * n
        self.barrel_tries[:] = [0] * n
        self.barrel_falls[:] = [0] * n
        self.concessions[:] = [0] * n
        self.no_barrel = 0
        self.golden_done = 0
        self.golden_from = self.deals_played + 1
        return True

    def _reached(self, score: int) -> bool:
        t = self.rules.target
        return score > t if self.rules.win_above_target else score >= t

    def _barrel_step(
        self, before: list[int], contract_delta: list[int], made: bool, falls: list[int],
        penalties: list[int] | None,
    ) -> list[int]:
        """Barrel bookkeeping after a deal; returns the seats that reached the target.

        ``penalties`` holds the bolt penalties of this deal when they are to be written on
        the barrel too (they are already in the totals).
        """
        r = self.rules
        n = self.n
        b = r.barrel
        assert b is not None
        d = self.declarer
        exempt = self.no_barrel
        if r.barrel_mode == "contracts-only":
            for s in range(n):
                self.barrel_on[s] = self.scores[s] >= b and not exempt >> s & 1
            return [s for s in range(n) if self._reached(self.scores[s])]
        fall_to = 0 if r.barrel_fall == "zero" else b - 120
        winners = []
        # Players already on the barrel spend a try; a contract won big enough finishes.
        for s in range(n):
            if not self.barrel_on[s]:
                continue
            if self._reached(self.scores[s]) and s == d and made and (
                self.contract >= r.barrel_min_contract or self.forced_declarer
            ):
                winners.append(s)
                continue
            if s in self.active:
                self.barrel_tries[s] -= 1
            self.scores[s] = b
            if self.barrel_tries[s] <= 0:
                self.barrel_on[s] = False
                self.scores[s] = fall_to
                falls.append(s)
            if penalties is not None and penalties[s]:
                # 003 l.35 makes no exception for the barrel: the total held at 880 loses
                # the penalty too, and 760 is below the barrel.
                self.scores[s] -= penalties[s]
                if self.barrel_on[s]:
                    self.barrel_on[s] = False
                    falls.append(s)
        jump_wins = r.barrel_jump == "wins"
        climbers = []
        for s in range(n):
            if self.barrel_on[s] or s in winners or s in falls:
                continue
            sc = self.scores[s]
            if self._reached(sc) and (
                jump_wins or exempt >> s & 1 or (s == d and made and contract_delta[s] > 0)
            ):
                # 003 l.35: 1000 or more wins; the barrel is the interval 880 to 999.
                winners.append(s)
            elif sc >= b and not exempt >> s & 1:
                climbers.append(s)
        if r.barrel_both_fall and len(climbers) > 1:
            for s in climbers:
                self.scores[s] = fall_to
                falls.append(s)
            climbers = []
        sitting = [o for o in range(n) if self.barrel_on[o]]
        for s in climbers:
            if r.barrel_knock_off:
                # Only those sitting there before this deal fall, whatever the seat order.
                for o in sitting:
                    if self.barrel_on[o]:
                        self.barrel_on[o] = False
                        self.scores[o] = fall_to
                        falls.append(o)
            self.scores[s] = b
            self.barrel_on[s] = True
            self.barrel_tries[s] = r.barrel_tries
        return winners

    # ------------------------------------------------------------------ observation
    def observation(self, seat: int) -> dict[str, Any]:
        """What ``seat`` may see now: its own hand and the public table, nothing else."""
        if not 0 <= seat < self.n:
            raise ValueError(f"no seat {seat} in a game of {self.n}")
        # Asked before every decision of every seat: the lists that are usually empty
        # (trick at a lead, marriages, cards received) skip their comprehension, and the
        # flat ones are mapped in C.
        trick: list[list[Any]] = []
        if self.trick:
            trick = [[s, view.trick_card(self, seat, s, c)] for s, c in self.trick]
        talon = view.talon(self, seat)
        hand = view.hand(self, seat)
        given = view.given(self, seat)
        discards = view.discards(self, seat)
        bid = view.bid(self)
        contract = view.contract(self)
        auction = [[s, a.text] for s, a, _auto in self.auction_log] if self.auction_log else []
        received = self.received[seat]
        # The keys come in this order (the template's): copying the template and filling it in
        # costs less than half a 28-key dict display, which CPython builds in two parts and
        # merges.
        obs = _OBSERVATION_TEMPLATE.copy()
        obs["seat"] = seat
        obs["players"] = self.n
        obs["dealer"] = self.dealer
        obs["deal"] = view.deal_number(self)
        obs["phase"] = self.phase_name
        obs["to_act"] = self.to_act
        obs["hand"] = [] if hand < 0 else cards_str(hand)
        obs["scores"] = list(self.scores)
        obs["barrel"] = list(self.barrel_on)
        obs["bolts"] = list(self.bolts)
        obs["active"] = list(self.active)
        obs["auction"] = auction
        obs["bid"] = bid if bid >= 0 else None
        obs["declarer"] = self.declarer if self.declarer >= 0 else None
        obs["contract"] = contract if contract >= 0 else None
        obs["blind"] = view.blind(self)
        obs["talon"] = [] if talon < 0 else cards_str(talon)
        obs["given"] = [[CARD_NAMES[c], t] for c, t in given] if given else []
        obs["received"] = list(map(CARD_NAMES.__getitem__, received)) if received else []
        obs["discarded"] = [] if discards < 0 else cards_str(discards)
        obs["shown_marriages"] = [[s, SUITS[su]] for s, su in self.shown] if self.shown else []
        obs["trump"] = SUITS[self.trump] if self.trump >= 0 else None
        obs["marriages"] = (
            [[s, SUITS[su], pts] for s, su, pts, _k in self.marriages] if self.marriages else []
        )
        obs["trick"] = trick
        obs["leader"] = self.leader if self.leader >= 0 else None
        obs["tricks_taken"] = list(self.tricks_taken)
        obs["points_taken"] = list(self.taken_points)
        obs["hand_sizes"] = list(map(int.bit_count, self.hands))
        return obs

    # ------------------------------------------------------------------ history
    @property
    def actions_log(self) -> list[tuple[int, int, Action]]:
        """Every decision of the game as (deal index, seat, action)."""
        return [(rec.index, s, a) for rec in self.records for s, a in rec.actions]

    @property
    def events(self) -> list[dict[str, Any]]:
        """The public event log: what a spectator at the table would have seen."""
        out: list[dict[str, Any]] = []
        for rec in self.records:
            out.append({"type": "deal_start", "deal": rec.index, "dealer": rec.dealer})
            out.extend(events_public(rec))
        return out



def golden_round_complete(
    rules: Rules, golden_done: int, golden_from: int, deals_played: int, active: int
) -> bool:
    """Whether the golden round is complete once the deal just scored is counted (003
    l.67): as many deals as active seats since it began (``golden_round_count: deals``), or
    every seat has had its golden deal (``golden_done``, a bit per seat). Public: a bot
    following the game from its events decides it the same way."""
    if rules.golden_round_count == "deals":
        return deals_played + 1 - golden_from >= active
    return golden_done == (1 << rules.players) - 1
