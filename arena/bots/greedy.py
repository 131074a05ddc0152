"""The greedy bot: plain card sense, no search.

It is the reference opponent of the arena: cheap enough to play tens of thousands of
decisions per second, strong enough that a new bot which cannot beat it has a bug.  How
it plays is described for people in ``docs/bots.md``; in short:

* **bidding**: it estimates the points it can take (aces, tens guarded by their ace,
  marriages it holds, a share of the talon) and bids the lowest bid it may while that
  stays within the estimate, passing otherwise; blind bids and sales are refused;
* **redeals**: it calls one when its hand is poor: as the declarer (a poor talon at the
  forced bid) when the estimate does not cover the contract, otherwise (four nines, a
  low hand) when the estimate with its share of a talon still to come is below 100;
* **talon**: it gives away (or discards) its least useful cards, never a marriage half or
  an ace when it has a choice, and raises the contract only when the estimate of the hand
  it kept clearly covers the higher contract;
* **play**: it declares its best marriage as soon as it may, leads cards nobody can beat,
  wins a trick with the cheapest card that surely wins it (or the cheapest that wins when
  it plays last), and otherwise ducks with its least valuable card.

It follows the cards played in the deal through the public ``trick`` events, and learns
the rules (marriage values, deck) from ``match_start``; without events it still plays,
only a little worse.  Phases it does not model get the referee's documented fallback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arena.engine import Rules, RulesError
from arena.match.fallback import fallback_action
from arena.match.types import JSON

_RANKS = "789JQKTA"
_SUITS = "CSHD"
_POINTS = (0, 0, 0, 2, 3, 4, 10, 11)
R9, RJ, RQ, RK, RT, RA = 2, 3, 4, 5, 6, 7
CARD = {r + s: si * 8 + ri for si, s in enumerate(_SUITS) for ri, r in enumerate(_RANKS)}
NAME = {v: k for k, v in CARD.items()}
DECK_24 = sum(1 << (s * 8 + r) for s in range(4) for r in range(R9, 8))
DECK_32 = (1 << 32) - 1
_PLAY_KINDS = frozenset({"play", "marry", "half", "aces", "nines", "crawl"})

#: Expected card points an ace brings home: itself plus what the others throw on it.
ACE_VALUE = 18
#: A ten guarded by its ace wins the second round of the suit.
GUARDED_TEN_VALUE = 14
#: A ten in a long suit without the ace sometimes survives.
LONG_TEN_VALUE = 4
#: What each unseen talon card is worth to the declarer, on average.
TALON_CARD_VALUE = 4
#: Below this estimate a hand holding four nines asks for a redeal when it may.
WEAK_HAND = 100
#: How much the estimate must exceed a higher contract before the bot raises to it.
RAISE_MARGIN = 15


def keep_value(c: int, hand: int, marriage_values: Sequence[int]) -> int:
    """How much a plain card player wants to keep card ``c`` of ``hand`` (lower goes
    first): its points, an ace and a guarded ten more, a marriage half much more, and a
    little for the length of its suit (long suits may become trumps)."""
    s, r = c >> 3, c & 7
    suit = hand >> (8 * s) & 0xFF
    v = _POINTS[r]
    if r == RA:
        v += 40
    elif r == RT:
        v += 25 if suit >> RA & 1 else 3
    elif r in (RK, RQ) and suit >> RK & 1 and suit >> RQ & 1:
        v += 50 + marriage_values[s] // 5
    return v + suit.bit_count()


def hand_mask(names: Sequence[str]) -> int:
    m = 0
    for n in names:
        c = CARD.get(n)
        if c is not None:
            m |= 1 << c
    return m


class GreedyBot:
    """Bids from hand strength, keeps its best cards, wins tricks cheaply."""

    ace_value = ACE_VALUE
    guarded_ten_value = GUARDED_TEN_VALUE
    long_ten_value = LONG_TEN_VALUE
    talon_card_value = TALON_CARD_VALUE
    raise_margin = RAISE_MARGIN
    weak_hand = WEAK_HAND

    def __init__(self, seed: str = "greedy", rules: JSON | None = None,
                 name: str = "greedy") -> None:
        self.name = name
        self.seed = seed
        self.marriage_values: tuple[int, ...] = (60, 40, 100, 80)
        self.deck = DECK_24
        self.ascending = False
        self.needs_trick = True
        self.talon_size = 3
        self.played = 0
        self._deal: int | None = None
        if rules is not None:
            self._learn_rules(rules)

    # ------------------------------------------------------------------ events
    def _learn_rules(self, data: Any) -> None:
        try:
            rules = Rules.from_json(data)
        except (RulesError, TypeError):
            return
        self.marriage_values = tuple(rules.marriage_values)
        self.deck = DECK_32 if rules.deck == 32 else DECK_24
        self.ascending = rules.marriage_ascending
        self.needs_trick = rules.marriage_needs_trick
        self.talon_size = rules.talon_size

    #: The only events :meth:`on_event` reads; the referee skips the others.
    event_types = frozenset({"match_start", "deal_start", "trick"})

    def on_event(self, event: JSON) -> None:
        kind = event.get("type")
        if kind == "trick":
            for _seat, card in event["cards"]:
                c = CARD.get(card)
                if c is not None:
                    self.played |= 1 << c
        elif kind == "deal_start":
            self.played = 0
            self._deal = event.get("deal")
        elif kind == "match_start" and "rules" in event:
            self._learn_rules(event["rules"])

    # ------------------------------------------------------------------ decisions
    def decide(self, observation: JSON, legal: Sequence[str]) -> str:
        if len(legal) == 1:
            return legal[0]
        if observation.get("deal") != self._deal:
            # Events missed (a bot fed only observations): start the deal afresh.
            self._deal = observation.get("deal")
            self.played = 0
        phase = observation.get("phase")
        hand = hand_mask(observation.get("hand") or ())
        if phase == "play":
            return self._play(observation, legal, hand)
        if phase == "auction":
            return self._bid(legal, hand, "bid")
        if phase == "exchange":
            return self._exchange(legal, hand)
        if phase == "contract":
            return self._contract(legal, hand)
        if phase == "sale":
            talon = hand_mask(observation.get("talon") or ())
            return self._bid(legal, hand | talon, "buy", talon_known=True)
        if phase == "trump":
            return self._trump(legal, hand)
        if phase == "nines":
            weak = self.estimate(hand) + self.talon_size * self.talon_card_value < self.weak_hand
            if weak and "redeal" in legal:
                return "redeal"
            return "pass" if "pass" in legal else fallback_action(legal)
        if phase == "redeal":
            return self._redeal(observation, legal, hand)
        # blind (look), sale-offer (keep), talon-choice and anything new: the safe choice.
        return fallback_action(legal)

    # ------------------------------------------------------------------ estimates
    def estimate(self, hand: int, trump: int = -1) -> int:
        """Points the hand should take as declarer, marriages included."""
        est = 0
        marriages = 0
        aces = 0
        mv = self.marriage_values
        for s in range(4):
            m = hand >> (8 * s) & 0xFF
            if not m:
                continue
            n = m.bit_count()
            has_a = m >> RA & 1
            has_t = m >> RT & 1
            if has_a:
                est += self.ace_value
                aces += 1
            if has_t:
                if has_a:
                    est += self.guarded_ten_value
                elif n >= 3:
                    est += self.long_ten_value
            if m >> RK & 1 and m >> RQ & 1:
                marriages += mv[s]
                if has_a and has_t:
                    est += 6
            if s == trump:
                est += 4 * max(0, n - 2)
        if marriages:
            est += marriages if (aces or not self.needs_trick) else marriages * 2 // 3
        return est

    def _bid(self, legal: Sequence[str], hand: int, kind: str, talon_known: bool = False) -> str:
        values = sorted(int(t.split()[1]) for t in legal if t.startswith(kind + " "))
        if not values:
            return fallback_action(legal)
        est = self.estimate(hand)
        if not talon_known:
            est += self.talon_size * self.talon_card_value
        if values[0] <= est:
            return f"{kind} {values[0]}"
        return "pass" if "pass" in legal else fallback_action(legal)

    def _redeal(self, obs: JSON, legal: Sequence[str], hand: int) -> str:
        """A low hand or a poor talon: redeal when the hand cannot be expected to do well.

        The declarer asked about the talon (already in its hand) weighs the contract; a
        player asked about its own low hand, before the auction or after the exchange,
        weighs what it would bid with, counting the talon only while it is still to come.
        """
        if "redeal" not in legal:
            return fallback_action(legal)
        est = self.estimate(hand)
        declarer = obs.get("declarer")
        if declarer is not None and declarer == obs.get("seat"):
            poor = est < int(obs.get("contract") or 0)
        else:
            share = self.talon_size * self.talon_card_value if declarer is None else 0
            poor = est + share < self.weak_hand
        if poor:
            return "redeal"
        return "pass" if "pass" in legal else fallback_action(legal)

    def _contract(self, legal: Sequence[str], hand: int) -> str:
        values = sorted(int(t.split()[1]) for t in legal if t.startswith("contract "))
        if not values:
            return fallback_action(legal)
        est = self.estimate(hand)
        best = values[0]
        for v in values:
            if v + self.raise_margin <= est:
                best = v
        return f"contract {best}"

    def _trump(self, legal: Sequence[str], hand: int) -> str:
        def strength(text: str) -> tuple[int, int]:
            s = _SUITS.index(text.split()[1])
            m = hand >> (8 * s) & 0xFF
            pts = sum(_POINTS[r] for r in range(8) if m >> r & 1)
            return m.bit_count(), pts

        options = [t for t in legal if t.startswith("trump ")]
        return max(options, key=strength) if options else fallback_action(legal)

    # ------------------------------------------------------------------ talon
    def keep_value(self, c: int, hand: int) -> int:
        """How much the bot wants to keep card ``c`` (lower goes first)."""
        return keep_value(c, hand, self.marriage_values)

    def _exchange(self, legal: Sequence[str], hand: int) -> str:
        best: str | None = None
        best_key: tuple[int, int] | None = None
        for text in legal:
            parts = text.split()
            if parts[0] not in ("give", "discard", "bank"):
                continue
            c = CARD[parts[1]]
            key = (self.keep_value(c, hand), c & 7)
            if best_key is None or key < best_key:
                best, best_key = text, key
        return best if best is not None else fallback_action(legal)

    # ------------------------------------------------------------------ play
    def _play(self, obs: JSON, legal: Sequence[str], hand: int) -> str:
        trump_name = obs.get("trump")
        trump = _SUITS.index(trump_name) if trump_name else -1
        trick = obs.get("trick") or []
        plays: dict[int, str] = {}
        declarations: list[tuple[str, int]] = []
        for text in legal:
            kind, _, card = text.partition(" ")
            if kind == "play":
                plays[CARD[card]] = text
            elif kind in ("marry", "half", "aces", "nines"):
                declarations.append((kind, CARD[card]))
        if not plays:
            return fallback_action(legal)
        on_table = 0
        for _seat, name in trick:
            c = CARD.get(name)
            if c is not None:
                on_table |= 1 << c
        unseen = self.deck & ~hand & ~self.played & ~on_table
        if not trick:
            if declarations:
                return self._declare(declarations, unseen)
            return self._lead(plays, hand, unseen, trump)
        return self._follow(obs, plays, hand, unseen, trump, trick)

    def _declare(self, declarations: list[tuple[str, int]], unseen: int) -> str:
        mv = self.marriage_values

        def value(item: tuple[str, int]) -> int:
            kind, c = item
            if kind == "marry":
                return mv[c >> 3]
            if kind == "half":
                return mv[c >> 3] // 2
            return 1000  # aces and nines score big when the rules allow them

        values = {value(d) for d in declarations}
        target = min(values) if self.ascending else max(values)
        chosen = [d for d in declarations if value(d) == target]
        kind, c = chosen[0]
        if kind in ("marry", "half"):
            s = c >> 3
            higher_out = unseen >> (8 * s) & 0xFF & ~((1 << (RK + 1)) - 1)
            # Lead the king when nothing above it is out, else the cheaper card.
            want = RK if not higher_out and kind == "marry" else (RQ if kind == "marry" else RJ)
            for k, card in chosen:
                if card & 7 == want and card >> 3 == s:
                    return f"{k} {NAME[card]}"
        return f"{kind} {NAME[c]}"

    def _is_top(self, c: int, unseen: int, trump: int) -> bool:
        """Nobody can beat ``c`` in its own suit (trumping aside unless ``c`` is a trump)."""
        s, r = c >> 3, c & 7
        above = unseen >> (8 * s) & 0xFF & ~((1 << (r + 1)) - 1)
        return not above

    def _cost(self, c: int, hand: int) -> tuple[int, int]:
        """Cost of giving ``c`` up in a trick it will not win."""
        return self.keep_value(c, hand), c & 7

    def _lead(self, plays: dict[int, str], hand: int, unseen: int, trump: int) -> str:
        winners = [c for c in plays if self._is_top(c, unseen, trump)]
        safe = [
            c for c in winners
            if c >> 3 == trump or trump < 0 or not unseen >> (8 * trump) & 0xFF
            or unseen >> (8 * (c >> 3)) & 0xFF
        ]
        pool = safe or winners
        if pool:
            # Cash the most valuable sure winner; non-trumps before trumps.
            best = max(pool, key=lambda c: (c >> 3 != trump, _POINTS[c & 7], c & 7))
            return plays[best]
        low = min(plays, key=lambda c: self._cost(c, hand))
        return plays[low]

    def _follow(self, obs: JSON, plays: dict[int, str], hand: int, unseen: int, trump: int,
                trick: list[list[Any]]) -> str:
        first = CARD.get(trick[0][1])
        if first is None:  # crawling: face-down cards, any card may be played
            return plays[min(plays, key=lambda c: self._cost(c, hand))]
        lead_suit = first >> 3
        best = first
        for _seat, name in trick[1:]:
            c = CARD.get(name)
            if c is not None and _beats(c, best, trump):
                best = c
        winning = [c for c in plays if _beats(c, best, trump)]
        active = obs.get("active") or []
        last = len(trick) >= max(len(active), 2) - 1
        if winning:
            cheapest = min(winning, key=lambda c: (_POINTS[c & 7], c & 7))
            if last:
                return plays[cheapest]
            sure = [c for c in winning if self._holds(c, lead_suit, unseen, trump)]
            if sure:
                return plays[min(sure, key=lambda c: (_POINTS[c & 7], c & 7))]
        return plays[min(plays, key=lambda c: self._cost(c, hand))]


    def _holds(self, c: int, lead_suit: int, unseen: int, trump: int) -> bool:
        """Whether ``c`` will still win the trick after the players still to play."""
        if not self._is_top(c, unseen, trump):
            return False
        if c >> 3 == trump:
            return True
        # A plain top card holds unless someone void in the suit may trump it.
        trumps_out = trump >= 0 and unseen >> (8 * trump) & 0xFF
        return not trumps_out or bool(unseen >> (8 * lead_suit) & 0xFF)


def _beats(c: int, best: int, trump: int) -> bool:
    """Whether card ``c`` beats the card currently winning the trick."""
    if c >> 3 == best >> 3:
        return c > best
    return c >> 3 == trump
