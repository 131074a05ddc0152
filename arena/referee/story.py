"""The story of a match told from its public events, deal by deal, for a terminal.

It reads only the public event stream, so it tells a match played here or one watched on
a gateway the same way, and it can never give away a hidden card.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from arena.match.types import JSON

_SUIT_NAMES = {"C": "clubs", "S": "spades", "H": "hearts", "D": "diamonds"}
_BIDDING = frozenset({"pass", "bid", "blind", "look", "sell", "keep", "buy"})
_TALON = frozenset({"talon", "give", "discard", "bank", "redeal"})
_PLAY = frozenset({"play", "marry", "half", "aces", "nines", "crawl"})


class Story:
    """Turns events into lines; ``write`` gets each finished line."""

    def __init__(self, write: Callable[[str], None], *, quiet: bool = False,
                 tricks: bool = False) -> None:
        self.write = write
        self.quiet = quiet
        self.show_tricks = tricks
        self.names: list[str] = []
        self._reset()

    def _reset(self) -> None:
        self.bidding: list[str] = []
        self.exchange: list[str] = []
        self.fallbacks: list[str] = []
        self.trick_count: dict[int, int] = {}
        self.trick_points: dict[int, int] = {}
        self.trick_no = 0

    def name(self, seat: int | None) -> str:
        if seat is None:
            return "-"
        if 0 <= seat < len(self.names):
            return f"{seat}:{self.names[seat]}"
        return str(seat)

    def _flush_bidding(self) -> None:
        if self.bidding:
            self.write("  bidding: " + ", ".join(self.bidding))
            self.bidding = []

    def _flush_exchange(self) -> None:
        if self.exchange:
            self.write("  exchange and contract: " + ", ".join(self.exchange))
            self.exchange = []

    def __call__(self, event: JSON) -> None:
        kind = event.get("type")
        if kind == "match_start":
            self.names = [str(s) for s in event.get("seats", [])]
            rules = event.get("rules") or {}
            options = rules.get("options") or {}
            extra = "".join(f" {k}={v}" for k, v in sorted(options.items()))
            self.write(f"Match {event.get('match_id')}: {rules.get('preset')}{extra}")
            self.write("Seats: " + ", ".join(self.name(s) for s in range(len(self.names))))
            return
        if kind == "match_end":
            self._end(event)
            return
        if self.quiet:
            return
        if kind == "deal_start":
            self._reset()
            self.write("")
            self.write(f"Deal {event.get('deal')} (dealer {self.name(event.get('dealer'))})")
        elif kind == "action":
            self._action(event)
        elif kind == "talon":
            self._flush_bidding()
            self.write("  talon shown: " + " ".join(event.get("cards", [])))
        elif kind == "marriage":
            self._flush_exchange()
            suit = _SUIT_NAMES.get(str(event.get("suit")), str(event.get("suit")))
            what = "marriage" if event.get("kind") in (None, "marriage") else event.get("kind")
            self.write(f"  {self.name(event.get('seat'))} declares the {what} in {suit} "
                       f"for {event.get('points')}")
        elif kind == "trick":
            self._trick(event)
        elif kind == "redeal":
            self._flush_bidding()
            self._flush_exchange()
            self.write(f"  redeal: {event.get('reason')}")
        elif kind == "deal_end":
            self._deal_end(event)

    def _action(self, event: JSON) -> None:
        seat = event.get("seat")
        text = str(event.get("action", ""))
        verb = text.split(" ", 1)[0]
        label = f"{self.name(seat)} {text}"
        if event.get("auto"):
            label += " (forced)"
        if event.get("fallback"):
            label += f" (referee's fallback: {event['fallback']})"
            self.fallbacks.append(label)
        if verb in _BIDDING and not self.exchange:
            self.bidding.append(label)
        elif verb in _PLAY:
            self._flush_bidding()
            self._flush_exchange()
            if event.get("fallback"):
                self.write(f"  {label}")
        elif verb in ("contract", "concede", "trump") or verb in _TALON or verb in _BIDDING:
            self._flush_bidding()
            self.exchange.append(label)
        else:
            self.bidding.append(label)

    def _trick(self, event: JSON) -> None:
        self._flush_bidding()
        self._flush_exchange()
        winner = int(event.get("winner", -1))
        points = int(event.get("points", 0))
        self.trick_no += 1
        self.trick_count[winner] = self.trick_count.get(winner, 0) + 1
        self.trick_points[winner] = self.trick_points.get(winner, 0) + points
        if self.show_tricks:
            cards = " ".join(f"{c}" for _s, c in event.get("cards", []))
            self.write(f"  trick {self.trick_no}: {cards} -> {self.name(winner)} ({points})")

    def _deal_end(self, event: JSON) -> None:
        self._flush_bidding()
        self._flush_exchange()
        if self.trick_count:
            parts = [
                f"{self.name(s)} {self.trick_count[s]} ({self.trick_points[s]} pts)"
                for s in sorted(self.trick_count)
            ]
            self.write("  tricks: " + ", ".join(parts))
        declarer = event.get("declarer")
        if declarer is not None:
            made = "made" if event.get("made") else "failed"
            self.write(f"  {self.name(declarer)} {made} the contract of {event.get('contract')}")
        deltas = " ".join(f"{d:+d}" for d in event.get("deltas", []))
        totals = " ".join(str(t) for t in event.get("scores", []))
        self.write(f"  deal scores: {deltas}   totals: {totals}")

    def _end(self, event: JSON) -> None:
        self.write("")
        status = event.get("status")
        scores: Sequence[int] = event.get("scores", [])
        ranks: Sequence[int] = event.get("ranks", [])
        line = f"Result ({status}, {event.get('deals')} deals): "
        order = sorted(range(len(scores)), key=lambda s: (ranks[s] if s < len(ranks) else 0, s))
        line += ", ".join(
            f"{ranks[s] if s < len(ranks) else '?'}. {self.name(s)} {scores[s]}" for s in order
        )
        self.write(line)
        if event.get("forfeit_seat") is not None:
            self.write(f"{self.name(event['forfeit_seat'])} forfeited: too many strikes")
