"""The state of a game of 1000: every field, declared once, and the phases a deal goes
through.

:class:`State` is all the engine knows about a game: the totals and counters that run
from deal to deal, and the cards, bids and tricks of the deal in progress (cleared by
:meth:`State.reset_deal`).  It holds no rules: the phase modules
(:mod:`arena.engine.phases`), the end-of-deal stages (:mod:`arena.engine.scoring`) and
what a seat may see (:mod:`arena.engine.view`) read and write it, and
:class:`~arena.engine.game.Game` is the public face over all of them.
"""

from __future__ import annotations

from typing import Any, Final

from .actions import Action
from .rules import Rules
from .tricks import TrickPlay

# Phases, in the order a deal meets them (the chance step first, the redeal question last).
CHANCE: Final = 0
NINES: Final = 1
BLIND: Final = 2
AUCTION: Final = 3
SALE_OFFER: Final = 4
SALE: Final = 5
TALON_CHOICE: Final = 6
EXCHANGE: Final = 7
CONTRACT: Final = 8
TRUMP: Final = 9
PLAY: Final = 10
OVER: Final = 11
REDEAL: Final = 12
PHASE_NAMES: Final[tuple[str, ...]] = (
    "deal", "nines", "blind", "auction", "sale-offer", "sale", "talon-choice",
    "exchange", "contract", "trump", "play", "over", "redeal",
)  # fmt: skip


class DealRecord:
    """What happened in one deal: its cards, its actions in order, and its result.

    Completed records never change, so copies of a game share them.
    """

    __slots__ = ("actions", "dealer", "deck", "events", "index", "notes", "result")

    def __init__(self, index: int, dealer: int, deck: list[int]) -> None:
        self.index = index
        self.dealer = dealer
        self.deck = deck
        self.actions: list[tuple[int, Action]] = []
        # Public happenings in order: ("action", seat, action) | ("auto", seat, action)
        # | ("trick", winner, ((seat, card), ...), points) | ("redeal", reason)
        # | ("marriage", seat, suit, points) | ("deal_end", deltas, scores, info)
        self.events: list[tuple[Any, ...]] = []
        self.notes: dict[int, str] = {}
        self.result: dict[str, Any] | None = None

    def copy(self) -> DealRecord:
        r = DealRecord(self.index, self.dealer, self.deck)
        r.actions = list(self.actions)
        r.events = list(self.events)
        r.notes = dict(self.notes)
        r.result = self.result
        return r


class State(TrickPlay):
    """Every field of a game (those of the trick rules come from :class:`TrickPlay`).

    Sets of seats are bit masks (bit ``s`` for seat ``s``); -1 stands for "none" in a
    seat or a suit.
    """

    __slots__ = (
        "active", "ask_after", "ask_queue", "auction_log", "bank", "barrel_falls",
        "barrel_on", "barrel_tries", "bid", "bidder", "blind_mask", "blind_won", "bolts",
        "chosen", "concessions", "contract", "deal_index", "dealer", "deals_played", "dealt",
        "discards", "exch_left", "forced_declarer", "forehand", "given", "golden",
        "golden_done", "golden_from", "golden_made", "held", "looked", "marriages",
        "no_barrel", "orig_talon", "passed", "phase", "received", "records", "rules",
        "sale_min", "sale_queue", "scores", "seed", "shown", "spare", "talon",
        "talon_public", "talon_seen", "to_act", "unseen", "winners",
    )  # fmt: skip

    # --- the game, from deal to deal
    rules: Rules
    seed: str
    scores: list[int]
    bolts: list[int]
    barrel_on: list[bool]
    #: Deals left to each seat on the barrel, and how often each fell off it.
    barrel_tries: list[int]
    barrel_falls: list[int]
    concessions: list[int]
    #: Seats off the barrel for good (``barrel_falls_no_barrel``).
    no_barrel: int
    #: The golden round's progress: seats that played their golden deal, the deal it
    #: began after, whether a golden contract was made in it.
    golden_done: int
    golden_from: int
    golden_made: bool
    dealer: int
    #: Deals started (redeals included), and deals scored.
    deal_index: int
    deals_played: int
    records: list[DealRecord]
    winners: list[int]
    phase: int
    to_act: int | None
    # --- the deal in progress
    active: tuple[int, ...]
    forehand: int
    #: The talons as dealt, the one the declarer chose, and all talon cards together.
    talon: list[int]
    chosen: int
    orig_talon: int
    #: The hands as dealt, and as the play began (after the talon and the exchange).
    dealt: list[int]
    held: list[int]
    #: The talon is face up for everyone; the seats that saw it.
    talon_public: bool
    talon_seen: int
    #: Cards out of the hands: the talon not chosen, the bank, the declarer's discards.
    spare: int
    bank: int
    discards: int
    #: Every bid in order: (seat, action, placed by the rules rather than the seat).
    auction_log: list[tuple[int, Action, bool]]
    bid: int
    bidder: int
    passed: list[bool]
    #: Seats that have not looked at their hands / bid blind / looked before the auction
    #: (a seat asked about a redeal has seen its cards and cannot go blind).
    unseen: int
    blind_mask: int
    looked: int
    blind_won: bool
    contract: int
    #: The declarer was named by the rules (a barrel or golden deal), not by the auction.
    forced_declarer: bool
    golden: bool
    #: The declarer's cards given away (card, seat), and every seat's cards received.
    given: list[tuple[int, int]]
    received: list[list[int]]
    #: Who still gets a card in the exchange: a seat, -1 a discard, -2 the bank.
    exch_left: list[int]
    #: Seats still to answer a sale, and the least they may buy for.
    sale_queue: list[int]
    sale_min: int
    #: Redeal questions still to ask: (seat, phase NINES or REDEAL, reason); a tuple,
    #: replaced rather than changed, so that copies share it.  ``ask_after`` names the
    #: step that follows once everyone has answered.
    ask_queue: tuple[tuple[int, int, str], ...]
    ask_after: str
    #: Marriages shown in the auction (seat, suit), and declared in play
    #: (seat, suit, points, kind).
    shown: list[tuple[int, int]]
    marriages: list[tuple[int, int, int, str]]

    def reset_deal(self) -> None:
        """Clear the deal in progress (the game's totals and counters stay)."""
        n = self.n
        self.active = ()
        self.nactive = 0
        self.nxt = (0,) * n
        self.forehand = 0
        self.hands = [0] * n
        self.talon = []
        self.orig_talon = 0
        self.chosen = 0
        self.dealt = [0] * n
        self.talon_public = False
        self.talon_seen = 0
        self.spare = 0
        self.bank = 0
        self.discards = 0
        self.auction_log = []
        self.bid = 0
        self.bidder = -1
        self.passed = [False] * n
        self.unseen = 0
        self.blind_mask = 0
        self.looked = 0
        self.blind_won = False
        self.declarer = -1
        self.contract = 0
        self.forced_declarer = False
        self.golden = False
        self.given = []
        self.received = [[] for _ in range(n)]
        self.exch_left = []
        self.sale_queue = []
        self.sale_min = 0
        self.ask_queue = ()
        self.ask_after = ""
        self.held = []
        self.shown = []
        self.trump = -1
        self.trump_by = -1
        self.last_marriage = 0
        self.marriages = []
        self.trick = []
        self.lead_suit = -1
        self.leader = -1
        self.crawl = False
        self.aces_pending = [False] * n
        self.taken_points = [0] * n
        self.tricks_taken = [0] * n
        self.marriage_points = [0] * n
        self.last_trick = -1

    def order_from(self, first: int) -> list[int]:
        """The active seats clockwise, starting from ``first``."""
        a = self.active
        i = a.index(first)
        return list(a[i:] + a[:i])
