"""The game of 1000: the public face of the engine.

One :class:`Game` is a whole game of 1000 played to the target score.  Dealing is an
explicit chance step (:meth:`Game.deal`) so that search bots and tests can deal chosen
cards; otherwise each deal's cards come from the match seed (see
:mod:`arena.engine.shuffle`).

The rules themselves live beside it, each in one place: the state of a game
(:mod:`.state`), one module per phase of a deal (:mod:`.phases`), dispatched from the
table below, the trick rules (:mod:`.tricks`), the end-of-deal scoring stages
(:mod:`.scoring`) and what each seat may see (:mod:`.view`).  ``docs/house-rules.md``
walks through adding a rule.

Hands are bit masks and actions are interned objects: listing the legal actions and
applying one costs a few microseconds, which is what lets bots search and tournaments
run millions of deals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from . import actions as A
from . import view
from .actions import Action, as_action
from .cards import CARD_NAMES, DECK_24, DECK_32, SUITS, cards_str, mask_of, parse_card
from .copies import copy_state, copy_tricks
from .errors import IllegalActionError
from .golden import golden_round_complete
from .phases import ask, auction, blind, contract, exchange, play, sale, talon
from .phases.base import CLOSED, Phase
from .rules import Rules
from .shuffle import deal_seed, shuffled
from .state import CHANCE, OVER, PHASE_NAMES, PLAY, DealRecord, State
from .tricks import TrickRules
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

#: The phase objects by phase number (``arena.engine.state``): every decision goes to the
#: one of the phase the game is in.
PHASES: Final[tuple[Phase, ...]] = (
    CLOSED,  # deal: a chance step
    ask.AskPhase(redeal_first=True),  # nines
    blind.BlindPhase(),
    auction.AuctionPhase(),
    sale.SaleOfferPhase(),
    sale.SalePhase(),
    talon.TalonChoicePhase(),
    exchange.ExchangePhase(),
    contract.ContractPhase(),
    contract.TrumpPhase(),
    play.PlayPhase(),
    CLOSED,  # over
    ask.AskPhase(redeal_first=False),  # redeal
)

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
        """A cheap independent copy: lists are copied, finished deal records shared (see
        :mod:`.copies`: search bots copy states millions of times)."""
        g = Game(_blank=True)
        copy_tricks(self, g)
        copy_state(self, g)
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
        nxt = [0] * n
        for k, s in enumerate(seats):
            nxt[s] = seats[(k + 1) % len(seats)]
        self.nxt = tuple(nxt)
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
        ask.after_deal(self)

    # ------------------------------------------------------------------ decisions
    def legal_actions(self) -> list[Action]:
        """Every action the seat to act may take now, in a stable order."""
        p = self.to_act
        if p is None:
            return []
        return PHASES[self.phase].legal(self, p)

    def apply(self, action: Action | str) -> None:
        """Apply the action of the seat to act.

        Raises :class:`IllegalActionError` saying why when the action is not legal now;
        the state is then unchanged.
        """
        a = action if type(action) is Action else as_action(action)
        p = self.to_act
        phase = PHASES[self.phase]
        if p is None or not phase.allows(self, p, a):
            raise IllegalActionError(self._why(a))
        rec = self.records[-1]
        rec.actions.append((p, a))
        rec.events.append(("action", p, a))
        phase.apply(self, p, a)

    def _why(self, a: Action) -> str:
        """Explain why an action is illegal (only called on the error path)."""
        p = self.to_act
        if self.phase == OVER:
            return "the game is over"
        if self.phase == CHANCE or p is None:
            return "the next step is dealing (call deal()), not a decision"
        if a.kind in A.CARD_KINDS and a.card >= 0 and not (self.hands[p] >> a.card & 1):
            return f"{a}: seat {p} does not hold {CARD_NAMES[a.card]}"
        reason = PHASES[self.phase].why(self, p, a)
        if reason:
            return reason
        if a.kind == A.CONCEDE:
            return contract.why_concede(self, p)
        return f"{a}: not legal in phase {PHASE_NAMES[self.phase]} for seat {p}"

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
