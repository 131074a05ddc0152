"""Following a match through the public events: the deal history and the game state.

The observation of a decision shows the table as it is now; what the search also needs
is how it got there: which seat played which card under which trump (voids), who declared
what, the talon once it was turned over, and across deals what the observation leaves
out (deals played, barrel tries spent, concessions, the golden round's progress).
:class:`MatchTracker` keeps that from the events every seat receives (see
``docs/referee.md``) and from this seat's own observations, never from anything hidden.
"""

from __future__ import annotations

from typing import Any

from arena.engine.golden import golden_round_complete
from arena.engine.rules import Rules
from arena.match.fallback import fallback_action

from .belief import CARD, SUITS, DealHistory, TrickSeen, mask_of_names


class MatchTracker:
    """The public history of the current deal and the cross-deal counters of the game."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        n = rules.players
        self.deal: DealHistory | None = None
        self.deals_played = 0
        self.concessions = [0] * n
        self.barrel_tries = [rules.barrel_tries] * n
        self._barrel_seen: list[bool] = [False] * n
        self._active: list[int] = list(range(n))
        self.my_seat = -1
        # The golden round as the engine keeps it (seats that played their golden deal,
        # the deal it began after, whether a golden contract was made), and this deal's
        # auto-declared seat (a golden or a barrel deal) and whether it was conceded.
        self.golden_done = 0
        self.golden_from = 0
        self.golden_made = False
        self._auto_seat: int | None = None
        self._conceded = False
        #: This seat's last answer and the legal actions it chose from: the public event
        #: of a hidden action (``bank ??``) then tells whether it was played as answered
        #: or replaced by the referee's fallback.
        self._pending: tuple[str, tuple[str, ...]] | None = None

    def answered(self, action: str, legal: tuple[str, ...]) -> None:
        self._pending = (action, legal)

    # ------------------------------------------------------------------ events
    def on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "deal_start":
            self.deal = DealHistory(deal=int(event.get("deal", 0)),
                                    dealer=int(event.get("dealer", 0)))
            self._auto_seat = None
            self._conceded = False
            return
        d = self.deal
        if kind == "deal_end":
            self._golden_deal_end(bool(event.get("made")))
            self.deals_played += 1
            self._barrel_after(event.get("scores"))
            return
        if kind == "action" and event.get("auto") and str(event.get("action", "")).startswith(
                "bid"):
            self._auto_seat = int(event.get("seat", -1))
        if d is None:
            return
        if kind == "trick":
            cards = []
            for entry in event.get("cards") or ():
                try:
                    seat, name = int(entry[0]), entry[1]
                except (TypeError, ValueError, IndexError):
                    continue
                c = CARD.get(name)
                if c is not None:
                    cards.append((seat, c))
            d.tricks.append(TrickSeen(cards, d.trump, d.crawl))
            d.crawl = False
        elif kind == "marriage":
            suit = SUITS.find(str(event.get("suit", "")))
            seat = int(event.get("seat", -1))
            kinds = str(event.get("kind", "marriage"))
            if suit >= 0 and seat >= 0:
                d.declarations.append((seat, suit, kinds))
                d.declared_at[len(d.tricks)] = kinds
                r = self.rules
                if kinds in ("marriage", "half", "aces") and not r.fixed_trump:
                    d.trump = suit
                    d.trump_by = seat
                if kinds in ("marriage", "half"):
                    mv = r.marriage_values[suit]
                    d.last_marriage = mv if kinds == "marriage" else mv // 2
        elif kind == "talon":
            d.talon = mask_of_names(event.get("cards"))
        elif kind == "action":
            text = str(event.get("action", ""))
            seat = int(event.get("seat", -1))
            if text.startswith("crawl"):
                d.crawl = True
            elif text.startswith("trump "):
                suit = SUITS.find(text[6:7])
                if suit >= 0:
                    d.trump = suit
                    d.trump_by = seat
            elif text == "concede" and 0 <= seat < len(self.concessions):
                self.concessions[seat] += 1
                self._conceded = True
            elif text.startswith("bank") and seat == self.my_seat and self._pending:
                answer, legal = self._pending
                if event.get("fallback"):
                    answer = fallback_action(legal) if legal else ""
                c = CARD.get(answer.split()[1]) if answer.startswith("bank ") else None
                if c is not None:
                    d.my_bank |= 1 << c

    # ------------------------------------------------------------------ golden round
    @property
    def golden(self) -> bool:
        """Whether the deal in progress is a golden deal (see ``Game._golden_now``).

        A golden deal is auto-declared; so is a barrel deal in the ``talon`` barrel mode,
        which comes first: a seat on the barrel then means it is not golden.
        """
        r = self.rules
        seat = self._auto_seat
        if not r.golden_round or seat is None or not 0 <= seat < r.players:
            return False
        if r.barrel is not None and r.barrel_mode == "talon" and any(
                self._barrel_seen[s] for s in self._active):
            return False
        if r.golden_round_count == "deals":
            return self.deals_played - self.golden_from < len(self._active)
        return not self.golden_done >> seat & 1

    def _golden_deal_end(self, made: bool) -> None:
        """The engine's ``_golden_round_over``, from the public events of a deal."""
        r = self.rules
        if not self.golden:
            return
        seat = self._auto_seat
        assert seat is not None
        if not self._conceded:
            self.golden_done |= 1 << seat
        self.golden_made = self.golden_made or made
        over = golden_round_complete(
            r, self.golden_done, self.golden_from, self.deals_played, len(self._active)
        )
        if not over or self.golden_made or not r.golden_restart:
            return
        n = r.players
        self.concessions = [0] * n
        self.barrel_tries = [0] * n
        self._barrel_seen = [False] * n
        self.golden_done = 0
        self.golden_from = self.deals_played + 1

    def _barrel_after(self, scores: Any) -> None:
        """Who sits on the barrel after a deal, from its new scores: a seat there spent a
        try if it played; a seat held at exactly the barrel's value climbed (or stayed);
        one that climbed starts with every try.  A seat's own observations correct this
        whenever it is asked (an exempt seat, ``barrel_falls_no_barrel``, is not seen
        here), but a seat is not asked in every deal: a conceded golden deal asks nobody.
        """
        r = self.rules
        b = r.barrel
        for s in self._active:
            if self._barrel_seen[s]:
                self.barrel_tries[s] -= 1
        if b is None or not isinstance(scores, list) or len(scores) != r.players:
            return
        for s, score in enumerate(scores):
            try:
                score = int(score)
            except (TypeError, ValueError):
                return
            on = score >= b if r.barrel_mode == "contracts-only" else score == b
            if on and not self._barrel_seen[s]:
                self.barrel_tries[s] = r.barrel_tries
            self._barrel_seen[s] = on

    # ------------------------------------------------------------------ observations
    def observe(self, obs: dict[str, Any]) -> DealHistory:
        """Bring the history in line with an observation; returns the deal's history.

        Without the events of this deal (a bot fed observations only), a fresh history
        marked incomplete is started: the search then knows no voids or played cards.
        """
        deal = obs.get("deal")
        d = self.deal
        if d is None or d.deal != deal:
            d = self.deal = DealHistory(deal=int(deal or 0), dealer=int(obs.get("dealer") or 0),
                                        complete=False)
        self.my_seat = int(obs.get("seat", -1))
        active = obs.get("active")
        if isinstance(active, list) and active:
            self._active = [int(s) for s in active]
        barrel = obs.get("barrel")
        if isinstance(barrel, list):
            for s, on in enumerate(barrel[: len(self._barrel_seen)]):
                if on and not self._barrel_seen[s]:
                    self.barrel_tries[s] = self.rules.barrel_tries
                self._barrel_seen[s] = bool(on)
        if not d.talon and obs.get("talon") and obs.get("declarer") is not None:
            d.talon = mask_of_names(obs.get("talon"))
        trump = obs.get("trump")
        if trump and SUITS.find(str(trump)) >= 0:
            d.trump = SUITS.find(str(trump))
        return d
