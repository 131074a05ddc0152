"""A finished match as frames: the whole table after every step, for the replay viewer.

The replay file holds decks and actions only; the engine re-plays it here and a frame is
taken after the deal and after each action: every hand (the match is over, so nothing is
hidden any more), the talons, the auction, the exchange, the cards on the table, trump,
marriages, tricks and points taken, the totals, and what the step did (with fallbacks and
strikes marked).  Re-playing rather than storing frames keeps the store small, and a
replay that does not re-play is reported, not drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arena.engine import Game, Rules
from arena.engine.actions import parse_action
from arena.engine.cards import CARD_NAMES, SUITS, cards_str
from arena.engine.errors import EngineError

JSON = dict[str, Any]

_SUIT_WORDS = {"C": "clubs", "S": "spades", "H": "hearts", "D": "diamonds"}


class FramesError(ValueError):
    """The replay cannot be re-played (malformed, or an action the rules refuse)."""


@dataclass(frozen=True)
class Position:
    """Where a frame is: deal number in the replay and step in that deal (0: just dealt)."""

    deal: int
    step: int

    def key(self) -> str:
        return f"{self.deal}.{self.step}"


def parse_position(text: str | None) -> Position | None:
    """``D.S`` (deal, step) from a URL; None when absent or not of that form."""
    if not text:
        return None
    deal, _, step = text.partition(".")
    try:
        d, s = int(deal), int(step or 0)
    except ValueError:
        return None
    if d < 0 or s < 0:
        return None
    return Position(d, s)


def _snapshot(game: Game, deal_pos: int, step: int) -> JSON:
    g = game
    return {
        "deal": deal_pos,
        "step": step,
        "deal_index": g.records[-1].index if g.records else 0,
        "dealer": g.dealer,
        "phase": g.phase_name,
        "to_act": g.to_act,
        "hands": [cards_str(h) for h in g.hands],
        "talons": [cards_str(t) for t in g.talon],
        "talon_chosen": g.chosen,
        "talon_public": bool(g.talon_public),
        "auction": [[s, str(a), bool(auto)] for s, a, auto in g.auction_log],
        "bid": g.bid if g.bidder >= 0 else None,
        "bidder": g.bidder if g.bidder >= 0 else None,
        "declarer": g.declarer if g.declarer >= 0 else None,
        "contract": g.contract if g.declarer >= 0 else None,
        "blind": bool(g.blind_won or g.blind_mask),
        "given": [[CARD_NAMES[c], t] for c, t in g.given],
        "discarded": cards_str(g.discards),
        "trump": SUITS[g.trump] if g.trump >= 0 else None,
        "marriages": [[s, SUITS[su], pts, kind] for s, su, pts, kind in g.marriages],
        "table": [[s, CARD_NAMES[c]] for s, c in g.trick],
        "crawl": bool(g.crawl),
        "tricks_taken": list(g.tricks_taken),
        "points_taken": list(g.taken_points),
        "scores": list(g.scores),
        "barrel": list(g.barrel_on),
        "bolts": list(g.bolts),
        "active": list(g.active),
    }


def _describe(ev: tuple[Any, ...], names: list[str]) -> JSON:
    kind = ev[0]
    if kind == "trick":
        return {"type": "trick", "winner": ev[1], "points": ev[3],
                "cards": [[s, CARD_NAMES[c]] for s, c in ev[2]],
                "text": f"{names[ev[1]]} takes the trick ({ev[3]} points)"}
    if kind == "marriage":
        word = _SUIT_WORDS.get(SUITS[ev[2]], "?")
        return {"type": "marriage", "seat": ev[1], "suit": SUITS[ev[2]], "points": ev[3],
                "kind": ev[4], "text": f"{names[ev[1]]} declares {ev[4]} in {word} ({ev[3]})"}
    if kind == "redeal":
        return {"type": "redeal", "reason": ev[1], "text": f"redeal: {ev[1]}"}
    if kind == "deal_end":
        d = ev[3]
        text = "deal over"
        if d >= 0:
            text = f"{names[d]} {'made' if ev[5] else 'failed'} the contract of {ev[4]}"
        return {"type": "deal_end", "deltas": list(ev[1]), "scores": list(ev[2]),
                "declarer": d if d >= 0 else None, "contract": ev[4], "made": bool(ev[5]),
                "text": text}
    if kind == "auto":
        return {"type": "auto", "seat": ev[1], "action": str(ev[2]),
                "text": f"{names[ev[1]]}: {ev[2]} (forced)"}
    return {"type": str(kind), "text": str(kind)}


def build_frames(replay: JSON, names: list[str] | None = None) -> JSON:
    """Every frame of a replay plus a summary of each deal, as JSON for the viewer.

    ``names`` are the seats' participant names (a tournament may field one bot twice);
    the replay's own seats (bot references) are used without them.
    """
    try:
        rules = Rules.from_json(replay["rules"])
        seats = [str(s) for s in replay["seats"]]
        if names is not None and len(names) == len(seats):
            seats = [str(n) for n in names]
        game = Game(rules, seed=str(replay["seed"]), dealer=int(replay.get("first_dealer", 0)))
        deals_in = list(replay["deals"])
    except (KeyError, TypeError, ValueError, EngineError) as exc:
        raise FramesError(f"not a replay the engine can read: {exc}") from None
    names = seats
    frames: list[JSON] = []
    deals: list[JSON] = []
    strikes = [0] * rules.players
    notes_total = {"timeout": [0] * rules.players, "illegal": [0] * rules.players,
                   "malformed": [0] * rules.players}
    for dpos, deal in enumerate(deals_in):
        if game.is_over or not game.is_chance:
            raise FramesError(f"deals[{dpos}]: the game cannot take another deal here")
        try:
            game.deal(deal.get("deck"))
        except EngineError as exc:
            raise FramesError(f"deals[{dpos}].deck: {exc}") from None
        rec = game.records[-1]
        cursor = 0
        first = _snapshot(game, dpos, 0)
        first["dealt"] = [cards_str(h) for h in game.dealt]
        first["action"] = None
        first["events"] = [_describe(e, names) for e in rec.events[cursor:] if e[0] != "action"]
        cursor = len(rec.events)
        first["strikes"] = list(strikes)
        frames.append(first)
        dealt = first["dealt"]
        talons = first["talons"]
        for j, item in enumerate(deal.get("actions", [])):
            try:
                seat, text = int(item[0]), str(item[1])
                note = str(item[2]) if len(item) > 2 else None
                action = parse_action(text)
                if game.to_act != seat:
                    raise EngineError(f"it is seat {game.to_act}'s turn, not seat {seat}'s")
                game.apply(action)
            except (EngineError, TypeError, ValueError, IndexError) as exc:
                raise FramesError(f"deals[{dpos}].actions[{j}]: {exc}") from None
            if note in notes_total:
                notes_total[note][seat] += 1
                strikes[seat] += 1
            events = [_describe(e, names) for e in rec.events[cursor:] if e[0] != "action"]
            cursor = len(rec.events)
            frame = _snapshot(game, dpos, j + 1)
            frame["action"] = {"seat": seat, "text": text, "note": note}
            frame["events"] = events
            frame["strikes"] = list(strikes)
            for ev in events:
                if ev["type"] == "trick":  # show the finished trick on the table
                    frame["table"] = ev["cards"]
                    frame["trick_winner"] = ev["winner"]
            frames.append(frame)
        res = rec.result or {}
        end = next((e for e in reversed(frames[-1]["events"]) if e["type"] == "deal_end"), None)
        deals.append({
            "deal": dpos,
            "index": rec.index,
            "dealer": rec.dealer,
            "steps": len(deal.get("actions", [])) + 1,
            "first_frame": len(frames) - len(deal.get("actions", [])) - 1,
            "dealt": dealt,
            "talons": talons,
            "redeal": res.get("redeal"),
            "declarer": end["declarer"] if end else None,
            "contract": end["contract"] if end else None,
            "made": end["made"] if end else None,
            "deltas": end["deltas"] if end else None,
            "scores": list(game.scores),
        })
    result = dict(replay.get("result") or {})
    return {
        "match_id": replay.get("match_id"),
        "seats": seats,
        "players": rules.players,
        "rules": rules.to_json(),
        "preset": rules.name,
        "result": result,
        "deals": deals,
        "frames": frames,
        "fallbacks": notes_total,
    }


def frame_index(data: JSON, pos: Position | None) -> int:
    """The frame at ``pos`` (clamped into the match); the first frame when None."""
    if pos is None or not data["deals"]:
        return 0
    d = min(pos.deal, len(data["deals"]) - 1)
    deal = data["deals"][d]
    step = min(pos.step, deal["steps"] - 1)
    return int(deal["first_frame"]) + int(step)
