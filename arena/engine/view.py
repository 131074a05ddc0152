"""What a seat may see of a game, and what the public sees: decided here, once.

A seat sees its own hand (unless it has not looked at it yet, before a blind bid), the
talon once it is shown to the table or to that seat, the cards it gave away and laid
away as the declarer, and every card on the table face up, except those played face
down while crawling, which read ``XX`` to all but their owner.  Spectators and the event
stream see the public form of each action: a card given, discarded, put into the bank
or crawled stays hidden (``give ?? 2``).

:meth:`Game.observation <arena.engine.game.Game.observation>` and the gateway's encoder
(:class:`arena.server.wire.GameObservationEncoder`, which writes an observation's bytes
straight from the game) both read the game through these functions, so the two cannot
disagree on what a seat is shown.  Values are in the engine's terms: card masks, seats,
and -1 for "nothing to show".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from . import actions as A
from .actions import Action
from .cards import CARD_NAMES, SUITS, card_str
from .state import DealRecord, State

#: What a seat that is not the declarer is shown of the cards given away.
NOTHING_GIVEN: Final[list[tuple[int, int]]] = []
#: A card played face down, as others see it.
FACE_DOWN: Final = "XX"


def deal_number(g: State) -> int:
    """The index of the deal in progress (or the last one), 0 before the first."""
    return g.deal_index - 1 if g.records else 0


def hand(g: State, seat: int) -> int:
    """The seat's own hand, or -1 while it has not looked at it (a blind bidder)."""
    return -1 if g.unseen >> seat & 1 else g.hands[seat]


def public_talon(g: State) -> int:
    """The talon as turned face up for everyone, or -1 while it is not."""
    return g.talon[g.chosen] if g.talon and g.talon_public else -1


def talon(g: State, seat: int) -> int:
    """The talon once shown to everyone or to this seat (its taker, a buyer), else -1."""
    if g.talon and (g.talon_public or g.talon_seen >> seat & 1):
        return g.talon[g.chosen]
    return -1


def given(g: State, seat: int) -> list[tuple[int, int]]:
    """The cards the seat gave away as the declarer, as (card, receiver)."""
    return g.given if seat == g.declarer else NOTHING_GIVEN


def discards(g: State, seat: int) -> int:
    """The cards the seat laid away as the declarer, or -1 for anyone else."""
    return g.discards if seat == g.declarer else -1


def trick_card(g: State, viewer: int, seat: int, card: int) -> str:
    """A card on the table as ``viewer`` sees it: face down while crawling, to all but
    the seat that played it."""
    return FACE_DOWN if g.crawl and seat != viewer else CARD_NAMES[card]


def bid(g: State) -> int:
    """The high bid so far, or -1 before the first."""
    return g.bid if g.bidder >= 0 else -1


def contract(g: State) -> int:
    """The contract once there is a declarer, else -1."""
    return g.contract if g.declarer >= 0 else -1


def blind(g: State) -> bool:
    """Whether a blind bid is in play: a blind contract, or a blind bid still standing."""
    return g.blind_won or g.blind_mask != 0


# ---------------------------------------------------------------------- public events


def public_text(action: Action) -> str:
    """An action as everyone else sees it: the cards of a give, a discard, a bank or a
    crawl stay hidden."""
    k = action.kind
    if k == A.GIVE:
        return f"give ?? {action.target}"
    if k == A.DISCARD:
        return "discard ??"
    if k == A.BANK:
        return "bank ??"
    if k == A.CRAWL:
        return "crawl ??"
    return str(action)


#: The public event type each of the engine's raw event kinds becomes.
PUBLIC_TYPE = {"action": "action", "auto": "action", "trick": "trick", "marriage": "marriage",
               "redeal": "redeal", "deal_end": "deal_end"}


def events_public(rec: DealRecord) -> list[dict[str, Any]]:
    """The public form of a deal's events: hidden cards stay hidden."""
    return public_events(rec.events)


def public_events(raw: Sequence[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """The public form of raw engine events (see :func:`events_public`)."""
    out: list[dict[str, Any]] = []
    face_down = False
    for ev in raw:
        kind = ev[0]
        if kind == "action":
            action = ev[2]
            if action.kind == A.CRAWL:
                face_down = True
            text = "play ??" if face_down and action.kind == A.PLAY else public_text(action)
            out.append({"type": "action", "seat": ev[1], "action": text})
        elif kind == "auto":
            out.append({"type": "action", "seat": ev[1], "action": str(ev[2]), "auto": True})
        elif kind == "trick":
            face_down = False
            out.append({
                "type": "trick", "winner": ev[1], "points": ev[3],
                "cards": [[s, card_str(c)] for s, c in ev[2]],
            })
        elif kind == "marriage":
            out.append({"type": "marriage", "seat": ev[1], "suit": SUITS[ev[2]],
                        "points": ev[3], "kind": ev[4]})
        elif kind == "redeal":
            out.append({"type": "redeal", "reason": ev[1]})
        elif kind == "deal_end":
            out.append({"type": "deal_end", "deltas": list(ev[1]), "scores": list(ev[2]),
                        "declarer": ev[3] if ev[3] >= 0 else None, "contract": ev[4],
                        "made": ev[5]})
    return out
