"""Shared helpers for the engine tests: decks built from chosen hands, state snapshots,
scripted and random play.

The engine deals an explicit deck as the seeded shuffle would: the seats from the left of
the dealer (the dealer last, skipped when sitting out) get consecutive blocks of
``hand_size`` cards, then the talon(s) take the rest in order.  :func:`deck_for` inverts
that so a test can say which cards each seat holds instead of listing 24 positions.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

from arena.engine import Action, Game, IllegalActionError, Rules, parse_card
from arena.engine.cards import CARD_NAMES, CARD_POINTS, DECK_24, DECK_32


def cards(text: str) -> list[str]:
    """``"AS 10H kd"`` -> ``["AS", "TH", "KD"]`` (canonical names)."""
    return [CARD_NAMES[parse_card(t)] for t in text.split()]


def points(text: str) -> int:
    return sum(CARD_POINTS[parse_card(t)] for t in text.split())


def seat_order(rules: Rules, dealer: int) -> list[int]:
    """Active seats in dealing order: left of the dealer first, the dealer last."""
    n = rules.players
    order = [(dealer + 1 + i) % n for i in range(n)]
    if rules.dealer_sits_out:
        order = [s for s in order if s != dealer]
    return order


def deck_for(
    rules: Rules,
    hands: Mapping[int, str] | None = None,
    talon: str | Sequence[str] = "",
    *,
    dealer: int = 0,
) -> list[str]:
    """A full deck in dealing order giving each seat the named cards.

    Hands and talons may be partial: the cards nobody named fill the gaps in canonical
    order (clubs, spades, hearts, diamonds; low to high), hands first, then talons.
    ``talon`` is one text, or one text per talon for the two-talon rules.
    """
    base = [CARD_NAMES[c] for c in (DECK_24 if rules.deck == 24 else DECK_32)]
    hands = dict(hands or {})
    order = seat_order(rules, dealer)
    for seat in hands:
        if seat not in order:
            raise ValueError(f"seat {seat} gets no hand with dealer {dealer}")
    talons = [talon] if isinstance(talon, str) else list(talon)
    talons += [""] * (rules.talons - len(talons))
    if len(talons) != rules.talons:
        raise ValueError(f"{len(talons)} talons given, the rules have {rules.talons}")
    wanted: list[list[str]] = [cards(hands.get(s, "")) for s in order]
    wanted += [cards(t) for t in talons]
    sizes = [rules.hand_size] * len(order) + [rules.talon_size] * rules.talons
    used = [c for part in wanted for c in part]
    if len(set(used)) != len(used):
        raise ValueError(f"a card is named twice: {sorted(used)}")
    unknown = set(used) - set(base)
    if unknown:
        raise ValueError(f"cards not in this deck: {sorted(unknown)}")
    pool = [c for c in base if c not in used]
    out: list[str] = []
    for part, size in zip(wanted, sizes, strict=True):
        if len(part) > size:
            raise ValueError(f"{part} is more than {size} cards")
        while len(part) < size:
            part.append(pool.pop(0))
        out += part
    assert not pool and sorted(out) == sorted(base)
    return out


def new_game(
    rules: Rules | str = "classic",
    hands: Mapping[int, str] | None = None,
    talon: str | Sequence[str] = "",
    *,
    dealer: int = 0,
    seed: str = "t",
    **options: Any,
) -> Game:
    """A game dealt with the chosen cards (dealer seat 0 unless told)."""
    if isinstance(rules, str):
        rules = Rules.preset(rules, **options)
    game = Game(rules, seed=seed, dealer=dealer)
    game.deal(deck_for(rules, hands, talon, dealer=dealer))
    return game


def texts(actions: Iterable[Action]) -> list[str]:
    return [str(a) for a in actions]


def legal(game: Game) -> list[str]:
    return texts(game.legal_actions())


def apply_all(game: Game, actions: str | Iterable[str]) -> None:
    """Apply actions given as a list or as one text separated by ``;`` or commas."""
    if isinstance(actions, str):
        actions = [a for a in actions.replace(",", ";").split(";")]
    for a in actions:
        a = a.strip()
        if a:
            game.apply(a)


def snapshot(game: Game) -> dict[str, Any]:
    """Everything a caller can observe about a game (to show an error changed nothing)."""
    return {
        "obs": [game.observation(s) for s in range(game.n)],
        "legal": legal(game),
        "to_act": game.to_act,
        "phase": game.phase_name,
        "chance": game.is_chance,
        "over": game.is_over,
        "scores": list(game.scores),
        "events": game.events,
        "log": [(d, s, str(a)) for d, s, a in game.actions_log],
    }


def assert_illegal(game: Game, action: str | Action, fragment: str) -> str:
    """The action is refused with a message containing ``fragment`` and changes nothing."""
    before = snapshot(game)
    with pytest.raises(IllegalActionError) as info:
        game.apply(action)
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    assert fragment in msg, f"{fragment!r} not in {msg!r}"
    assert snapshot(game) == before
    return msg


def plays_only(game: Game) -> list[str]:
    return [t for t in legal(game) if t.startswith("play ")]


def play_first(game: Game, *, stop_before_end: bool = False) -> None:
    """Play the deal out: every seat plays its first legal plain card (lowest index:
    clubs before spades before hearts before diamonds, low before high)."""
    deal = game.deal_index
    while not game.is_over and not game.is_chance and game.phase_name == "play":
        if stop_before_end and sum(game.observation(0)["hand_sizes"]) == 1:
            return
        game.apply(plays_only(game)[0])
    assert game.deal_index == deal


def play_highest(game: Game) -> None:
    """Play the deal out: every seat plays its highest-ranked legal plain card
    (last in the legal list within the suit order), a simple greedy strategy."""
    while not game.is_over and not game.is_chance and game.phase_name == "play":
        game.apply(plays_only(game)[-1])


def deal_result(game: Game) -> dict[str, Any]:
    res = game.records[-1].result
    assert res is not None, "the deal is not finished"
    return res


def random_step(game: Game, rng: random.Random) -> Action | None:
    """One chance step or one random legal action."""
    if game.is_chance:
        game.deal()
        return None
    acts = game.legal_actions()
    a = acts[rng.randrange(len(acts))]
    game.apply(a)
    return a


def play_random_game(game: Game, rng: random.Random, limit: int = 200_000) -> int:
    steps = 0
    while not game.is_over:
        random_step(game, rng)
        steps += 1
        assert steps < limit, "the game does not end"
    return steps


# --------------------------------------------------------------------------- reference deals
#
# D1: a three-handed deal whose play is worked out by hand once and reused by many
# tests.  Roles are relative to the declarer: L sits to the declarer's left (plays
# second), R to the right (plays third).
#
#   declarer  AC TC AS TS AH KH QH      + talon QD JD 9D, gives 9D to L and JD to R
#   L         KC QC JC KS QS JS 9H      (marriages: clubs, spades)
#   R         9C 9S JH TH AD TD KD
#
# After the exchange: declarer AC TC AS TS AH KH QH QD, L KC QC JC KS QS JS 9H 9D,
# R 9C 9S JH TH AD TD KD JD.  The tricks (declarer first):
#
#   1  AC JC 9C    declarer 13        5  TC KC JD   declarer 16 (61)
#   2  KH 9H JH    declarer  6 (19)   6  AS QS KD   declarer 18 (79)
#      KH declared: hearts trump      7  TS KS TD   declarer 24 (103)
#   3  AH 9D TH    declarer 21 (40)   8  QD QC AD   R 17
#   4  QH JS 9S    declarer  5 (45)
#
# So the declarer takes 103 card points in 7 tricks (+ the hearts marriage), R takes 17
# in one trick and L takes no trick: 103 + 17 = 120.

D1_DECL = "AC TC AS TS AH KH QH"
D1_LEFT = "KC QC JC KS QS JS 9H"
D1_RIGHT = "9C 9S JH TH AD TD KD"
D1_TALON = "QD JD 9D"
D1_TRICKS = [
    "play AC", "play JC", "play 9C",
    "marry KH", "play 9H", "play JH",
    "play AH", "play 9D", "play TH",
    "play QH", "play JS", "play 9S",
    "play TC", "play KC", "play JD",
    "play AS", "play QS", "play KD",
    "play TS", "play KS", "play TD",
    "play QD", "play QC", "play AD",
]  # fmt: skip
#: The same play without declaring the marriage (no trump all deal: same tricks).
D1_TRICKS_PLAIN = [("play KH" if a == "marry KH" else a) for a in D1_TRICKS]


def active_after(rules: Rules, dealer: int, seat: int) -> int:
    order = seat_order(rules, dealer)
    return order[(order.index(seat) + 1) % len(order)]


def d1_seats(rules: Rules, dealer: int, decl: int) -> tuple[int, int]:
    """(L, R) for a declarer at ``decl``."""
    left = active_after(rules, dealer, decl)
    return left, active_after(rules, dealer, left)


def d1_deck(rules: Rules, dealer: int, decl: int, talon: str = D1_TALON) -> list[str]:
    left, right = d1_seats(rules, dealer, decl)
    return deck_for(rules, {decl: D1_DECL, left: D1_LEFT, right: D1_RIGHT}, talon,
                    dealer=dealer)


def d1_gives(rules: Rules, dealer: int, decl: int) -> list[str]:
    left, right = d1_seats(rules, dealer, decl)
    return [f"give 9D {left}", f"give JD {right}"]


def resume(
    game: Game,
    scores: Sequence[int] | None = None,
    *,
    barrel: Sequence[int] = (),
    tries: int | None = None,
    bolts: Sequence[int] | None = None,
) -> Game:
    """Set a game (before its next deal) to continue from these totals.

    ``barrel`` lists the seats already sitting on the barrel, with ``tries`` deals left
    (the rules' number when not given).  Tests use this to start from a late position
    instead of playing dozens of deals to reach it.
    """
    assert game.is_chance
    if scores is not None:
        game.scores[:] = list(scores)
    for s in barrel:
        game.barrel_on[s] = True
        game.barrel_tries[s] = tries if tries is not None else game.rules.barrel_tries
    if bolts is not None:
        game.bolts[:] = list(bolts)
    return game


def d1_auction(game: Game, decl: int) -> list[str]:
    """The auction that makes ``decl`` the declarer at a three-handed table with the
    forced 100: forehand's 100 stands, or ``decl`` outbids it with 105 and the others
    pass."""
    order = seat_order(game.rules, game.dealer)
    forehand = order[0]
    if decl == forehand:
        return ["pass", "pass"]
    if order[1] == decl:
        return ["bid 105", "pass", "pass"]
    return ["pass", "bid 105", "pass"]


def play_d1(game: Game, decl: int, contract: int | None = None, *,
            tricks: list[str] = D1_TRICKS) -> None:
    """Deal D1 with ``decl`` as the declarer and play it out (contract at least the bid)."""
    rules = game.rules
    dealer = game.dealer
    game.deal(d1_deck(rules, dealer, decl))
    auction = d1_auction(game, decl)
    bid = 100 if len(auction) == 2 else 105
    apply_all(game, [*auction, *d1_gives(rules, dealer, decl),
                     f"contract {max(bid, contract or bid)}", *tricks])
    assert game.is_chance or game.is_over
