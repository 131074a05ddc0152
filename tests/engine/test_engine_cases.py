"""Table-driven cases for each phase of a deal and each scoring stage.

Every case is a row: a name, the rules, the state before (only the fields that matter,
in readable form: phases by name, cards by text), then an action and the fields expected
after it, or the error it must raise (leaving the state unchanged).  One runner plays
each table.  The golden replays (``test_engine_golden.py``) pin whole games; these pin
one rule at a time, so a failure names the rule that moved.

Phase cases start from a game dealt (dealer seat 0: forehand is seat 1, then 2, then the
dealer; the talon as the case names it), with the named fields set over it: the hands
named replace those dealt.  Stage
cases run one stage of :mod:`arena.engine.scoring` on a :class:`~arena.engine.scoring.Tally`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from engine_support import cards, deck_for, snapshot

from arena.engine import Game, IllegalActionError, Rules, parse_action, parse_card
from arena.engine import scoring as sc
from arena.engine.cards import SUITS, cards_str, mask_of
from arena.engine.state import PHASE_NAMES

NINES4 = "9C 9S 9H 9D"


def rules(preset: str = "classic", **options: Any) -> Rules:
    return Rules.preset(preset, **options)


def mask(text: str) -> int:
    return mask_of(parse_card(c) for c in text.split())


def _set(game: Game, name: str, value: Any) -> None:
    """Set one field of the state from its readable form."""
    if name == "phase":
        game.phase = PHASE_NAMES.index(value)
    elif name == "hands":
        for seat, text in value.items():
            game.hands[seat] = mask(text)
    elif name == "trick":
        game.trick = [(s, parse_card(c)) for s, c in value]
        if value:
            game.lead_suit = parse_card(value[0][1]) >> 3
    elif name == "trump":
        game.trump = -1 if value is None else SUITS.index(value)
    elif name in ("bank", "discards", "spare", "orig_talon"):
        setattr(game, name, mask(value))
    elif name == "ask_queue":
        game.ask_queue = tuple((s, PHASE_NAMES.index(ph), why) for s, ph, why in value)
    elif name == "auction_log":
        game.auction_log = [(s, parse_action(t), auto) for s, t, auto in value]
    elif name in ("dealt", "held"):
        game_list = [0] * game.n
        for seat, text in value.items():
            game_list[seat] = mask(text)
        setattr(game, name, game_list)
    else:
        setattr(game, name, list(value) if isinstance(value, list) else value)


def _read(game: Game, name: str) -> Any:
    """One field of the state in readable form (as the cases write it)."""
    if name == "phase":
        return game.phase_name
    if name == "legal":
        return [a.text for a in game.legal_actions()]
    if name == "hands":
        return {s: " ".join(cards_str(h)) for s, h in enumerate(game.hands)}
    if name == "trick":
        return [(s, cards_str(1 << c)[0]) for s, c in game.trick]
    if name == "trump":
        return None if game.trump < 0 else SUITS[game.trump]
    if name in ("bank", "discards", "spare"):
        return " ".join(cards_str(getattr(game, name)))
    if name == "received":
        return {s: " ".join(cards_str(mask_of(r))) for s, r in enumerate(game.received)}
    if name == "given":
        return [(cards_str(1 << c)[0], t) for c, t in game.given]
    if name == "auction_log":
        return [(s, a.text, auto) for s, a, auto in game.auction_log]
    if name == "result":
        return game.records[-1].result
    return getattr(game, name)


def _canon(text: str) -> str:
    return " ".join(cards_str(mask(text)))


def _expect(actual: Any, expected: Any, name: str) -> None:
    if name in ("hands", "received"):
        for seat, text in expected.items():
            assert actual[seat] == _canon(text), f"{name}[{seat}]"
    elif name in ("bank", "discards", "spare"):
        assert actual == _canon(expected), name
    elif name == "result":
        for key, value in expected.items():
            assert actual is not None and actual.get(key) == value, f"result[{key!r}]"
    else:
        assert actual == expected, name


@dataclass
class Case:
    """A phase case: the state before, one action, and the fields after or an error."""

    name: str
    rules: Rules
    before: dict[str, Any]
    action: str | None
    after: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    talon: str | list[str] = ""


def build(case: Case) -> Game:
    game = Game(case.rules, seed="cases", dealer=case.before.get("dealer", 0))
    game.deal(deck_for(case.rules, talon=case.talon, dealer=game.dealer))
    for name, value in case.before.items():
        if name != "dealer":
            _set(game, name, value)
    return game


C = rules()  # classic: dealer 0; forehand 1, then 2, then the dealer
ET = rules("estonian")
TWO = rules("two-player")  # dealer 0: seat 1 is forehand

PHASE_CASES = [
    # ------------------------------------------------------------------ ask
    Case("ask: four nines, the holder redeals",
         rules(four_nines="redeal-before-auction"),
         {"phase": "nines", "to_act": 1, "ask_queue": [(1, "nines", "seat 1 holds four nines")],
          "ask_after": "auction"},
         "redeal", {"phase": "deal", "to_act": None,
                    "result": {"redeal": "seat 1 holds four nines"}}),
    Case("ask: a pass moves on to the next question",
         rules(four_nines="redeal-before-auction", redeal_low_hand=14),
         {"phase": "nines", "to_act": 1, "ask_after": "auction",
          "ask_queue": [(1, "nines", "four nines"), (2, "redeal", "a low hand")]},
         "pass", {"phase": "redeal", "to_act": 2}),
    Case("ask: the last pass opens the auction with the forced bid",
         rules(four_nines="redeal-before-auction"),
         {"phase": "nines", "to_act": 2, "ask_queue": [(2, "nines", "four nines")],
          "ask_after": "auction", "auction_log": [], "bid": 0, "bidder": -1},
         "pass", {"phase": "auction", "bid": 100, "bidder": 1, "to_act": 2,
                  "auction_log": [(1, "bid 100", True)]}),
    Case("ask: a low hand is offered pass first",
         rules(redeal_low_hand=14),
         {"phase": "redeal", "to_act": 1, "ask_queue": [(1, "redeal", "a low hand")]},
         None, {"legal": ["pass", "redeal"]}),
    Case("ask: no bid while a redeal question is open",
         rules(four_nines="redeal-before-auction"),
         {"phase": "nines", "to_act": 1, "ask_queue": [(1, "nines", "four nines")]},
         "bid 120", error="bid 120: not legal in phase nines for seat 1"),
    # ------------------------------------------------------------------ blind
    Case("blind: forehand looks and the forced bid opens the auction",
         rules(blind_bid=True),
         {"phase": "blind", "to_act": 1, "unseen": 0b010, "auction_log": [], "bid": 0,
          "bidder": -1},
         "look", {"phase": "auction", "unseen": 0, "bid": 100, "bidder": 1, "to_act": 2,
                  "auction_log": [(1, "bid 100", True)]}),
    Case("blind: forehand's blind bids run from the forced bid to the plain limit",
         rules(blind_bid=True),
         {"phase": "blind", "to_act": 1, "unseen": 0b010, "auction_log": [], "bid": 0,
          "bidder": -1},
         None, {"legal": ["look"] + [f"blind {v}" for v in range(100, 125, 5)]}),
    Case("blind: a blind bid by the opener stands as the first bid",
         rules(blind_bid=True),
         {"phase": "blind", "to_act": 1, "unseen": 0b010, "auction_log": [], "bid": 0,
          "bidder": -1},
         "blind 105", {"phase": "auction", "bid": 105, "bidder": 1, "blind_mask": 0b010,
                       "to_act": 2, "auction_log": [(1, "blind 105", False)]}),
    Case("blind: a fixed blind bid admits no other",
         rules(blind_bid=True, blind_fixed_bid=120),
         {"phase": "blind", "to_act": 1, "unseen": 0b010, "auction_log": [], "bid": 0,
          "bidder": -1},
         "blind 110", error="blind 110: a blind bid is exactly 120"),
    Case("blind: an outbid blind bidder looks (003 l.53)",
         rules(blind_bid=True),
         {"phase": "auction", "to_act": 2, "unseen": 0b010, "blind_mask": 0b010, "bid": 105,
          "bidder": 1, "auction_log": [(1, "blind 105", False)],
          "hands": {2: "9C JC 9S JS 9H JH 9D"}},
         "bid 110", {"blind_mask": 0, "unseen": 0, "bid": 110, "bidder": 2, "to_act": 0}),
    # ------------------------------------------------------------------ auction
    Case("auction: a bid outbids the high bid and the next seat bids",
         C, {"phase": "auction", "to_act": 2, "bid": 100, "bidder": 1,
             "hands": {2: "9C JC 9S JS 9H JH 9D"}},
         "bid 105", {"phase": "auction", "bid": 105, "bidder": 2, "to_act": 0}),
    Case("auction: the last pass makes the high bidder the declarer, who takes the talon",
         C, {"phase": "auction", "to_act": 0, "bid": 105, "bidder": 2,
             "passed": [False, True, False]},
         "pass", {"phase": "exchange", "to_act": 2, "declarer": 2, "contract": 105,
                  "talon_public": True, "exch_left": [0, 1], "received": {2: "QD JD 9D"}},
         talon="QD JD 9D"),
    Case("auction: a bid below the next step",
         C, {"phase": "auction", "to_act": 2, "bid": 100, "bidder": 1},
         "bid 100", error="bid 100: the bid must be at least 105"),
    Case("auction: above the plain limit without a marriage",
         C, {"phase": "auction", "to_act": 2, "bid": 100, "bidder": 1,
             "hands": {2: "9C JC 9S JS 9H JH 9D"}},
         "bid 125", error="bid 125: above the highest bid allowed for this hand (120)"),
    Case("auction: a marriage held raises the ceiling by its value",
         C, {"phase": "auction", "to_act": 2, "bid": 100, "bidder": 1,
             "hands": {2: "KH QH 9C JC 9S JS 9D"}},
         None, {"legal": ["pass"] + [f"bid {v}" for v in range(105, 225, 5)]}),
    Case("auction: a player at the floor may not bid",
         rules(minus_may_not_bid=-120),
         {"phase": "auction", "to_act": 2, "bid": 100, "bidder": 1, "scores": [0, 0, -120]},
         "bid 105", error="bid 105: a player at -120 (at or below -120) may not bid"),
    Case("auction: everybody passes without a forced bid, the deal is redealt",
         ET, {"phase": "auction", "to_act": 0, "bid": 0, "bidder": -1,
              "passed": [False, True, True]},
         "pass", {"phase": "deal", "result": {"redeal": "everybody passed"}}),
    Case("auction: a bid above the plain limit shows the marriages held (Estonian)",
         ET, {"phase": "auction", "to_act": 1, "bid": 120, "bidder": 2,
              "hands": {1: "KC QC 9S JS 9H JH 9D"}},
         "bid 125", {"bid": 125, "bidder": 1, "shown": [(1, 0)], "to_act": 2}),
    # ------------------------------------------------------------------ sale
    Case("sale: the declarer sells, the buyers answer from its left",
         ET, {"phase": "sale-offer", "to_act": 1, "declarer": 1, "contract": 100},
         "sell", {"phase": "sale", "to_act": 2, "sale_queue": [2, 0], "sale_min": 105}),
    Case("sale: the declarer keeps the talon and gives one card to each",
         ET, {"phase": "sale-offer", "to_act": 1, "declarer": 1, "contract": 100},
         "keep", {"phase": "exchange", "to_act": 1, "exch_left": [2, 0],
                  "received": {1: "QD JD 9D"}},
         talon="QD JD 9D"),
    Case("sale: a buyer outbids the contract and declares",
         ET, {"phase": "sale", "to_act": 2, "sale_queue": [2, 0], "sale_min": 105,
              "declarer": 1, "contract": 100, "talon_seen": 0b010},
         "buy 105", {"declarer": 2, "contract": 105, "bidder": 2, "sale_min": 110,
                     "sale_queue": [0], "to_act": 0, "talon_seen": 0b110}),
    Case("sale: the last buyer passes and the declarer takes the talon",
         ET, {"phase": "sale", "to_act": 0, "sale_queue": [0], "sale_min": 110,
              "declarer": 2, "contract": 105},
         "pass", {"phase": "exchange", "to_act": 2, "exch_left": [0, 1],
                  "received": {2: "QD JD 9D"}},
         talon="QD JD 9D"),
    # ------------------------------------------------------------------ talon
    Case("talon: of two talons the declarer takes the one it names",
         TWO, {"phase": "talon-choice", "to_act": 1, "declarer": 1, "contract": 100},
         "talon 2", {"phase": "exchange", "chosen": 1, "spare": "9C JC",
                     "received": {1: "QC KC"}, "exch_left": [-1, -1], "talon_public": True},
         talon=["9C JC", "QC KC"]),
    Case("talon: the talon not chosen goes to the bank (two players, nine cards)",
         rules("two-player-9"), {"phase": "talon-choice", "to_act": 1, "declarer": 1,
                                 "contract": 100},
         "talon 1", {"chosen": 0, "bank": "KC TC AC", "exch_left": [0, -2]},
         talon=["9C JC QC", "KC TC AC"]),
    # ------------------------------------------------------------------ exchange
    Case("exchange: a card given goes to the seat named",
         C, {"phase": "exchange", "to_act": 1, "declarer": 1, "contract": 100,
             "exch_left": [2, 0], "hands": {1: "AC TC AS TS AH KH QH QD JD 9D"}},
         "give 9D 2", {"exch_left": [0], "hands": {1: "AC TC AS TS AH KH QH QD JD"},
                       "given": [("9D", 2)], "to_act": 1}),
    Case("exchange: the last card given, the declarer fixes the contract",
         C, {"phase": "exchange", "to_act": 1, "declarer": 1, "contract": 100,
             "exch_left": [0], "hands": {1: "AC TC AS TS AH KH QH QD JD"}},
         "give JD 0", {"phase": "contract", "to_act": 1, "exch_left": []}),
    Case("exchange: a seat gets one card only",
         C, {"phase": "exchange", "to_act": 1, "declarer": 1, "contract": 100,
             "exch_left": [0], "hands": {1: "AC TC AS TS AH KH QH QD JD"}},
         "give JD 2", error="give JD 2: seat 2 cannot receive a card now"),
    Case("exchange: only a card held is given",
         C, {"phase": "exchange", "to_act": 1, "declarer": 1, "contract": 100,
             "exch_left": [2, 0], "hands": {1: "AC TC AH KH QH QD JD 9D TS 9S"}},
         "give AS 2", error="give AS 2: seat 1 does not hold AS"),
    Case("exchange: conceding before the first card costs the contract, 60 to each other",
         C, {"phase": "exchange", "to_act": 1, "declarer": 1, "contract": 100,
             "exch_left": [2, 0]},
         "concede", {"phase": "deal", "scores": [60, -100, 60], "concessions": [0, 1, 0],
                     "dealer": 0, "result": {"conceded": 1, "made": False,
                                             "deltas": [60, -100, 60]}}),
    Case("exchange: two players lay cards away face down",
         TWO, {"phase": "exchange", "to_act": 1, "declarer": 1, "contract": 100,
               "exch_left": [-1, -1]},
         "discard 9C", {"discards": "9C", "exch_left": [-1]}),
    # ------------------------------------------------------------------ contract
    Case("contract: raised, the play starts with the declarer's lead",
         C, {"phase": "contract", "to_act": 1, "declarer": 1, "contract": 100,
             "hands": {1: "KH QH AC TC AS TS AH 9D"}},
         "contract 120", {"contract": 120, "phase": "play", "to_act": 1, "leader": 1}),
    Case("contract: never lowered",
         C, {"phase": "contract", "to_act": 1, "declarer": 1, "contract": 100},
         "contract 95",
         error="contract 95: the contract can only be raised, not lowered below 100"),
    Case("contract: no higher than the hand allows",
         C, {"phase": "contract", "to_act": 1, "declarer": 1, "contract": 100,
             "hands": {1: "9C JC 9S JS 9H JH 9D JD"}},
         "contract 125", error="contract 125: above the highest contract allowed (120)"),
    Case("contract: in 501 the declarer names the trump next",
         rules("classic-501"), {"phase": "contract", "to_act": 1, "declarer": 1,
                                "contract": 100},
         "contract 100", {"phase": "trump", "to_act": 1}),
    Case("contract: the trump named, the play starts under it",
         rules("classic-501"), {"phase": "trump", "to_act": 1, "declarer": 1, "contract": 100},
         "trump S", {"phase": "play", "trump": "S", "trump_by": 1, "to_act": 1}),
    Case("contract: no concession past the limit",
         rules(concede_limit=2), {"phase": "contract", "to_act": 1, "declarer": 1,
                                  "contract": 100, "concessions": [0, 2, 0]},
         "concede", error="concede: seat 1 has conceded 2 time(s) already"),
    Case("contract: only the declarer concedes, after the talon",
         C, {"phase": "auction", "to_act": 2, "bid": 100, "bidder": 1},
         "concede", error="concede: only the declarer, after the talon and before giving "
                          "cards"),
    # ------------------------------------------------------------------ play
    Case("play: a card follows the suit led",
         C, {"phase": "play", "to_act": 2, "trick": [(1, "AS")],
             "hands": {0: "QS 9C", 1: "TH", 2: "KS 9H"}},
         "play KS", {"trick": [(1, "AS"), (2, "KS")], "to_act": 0}),
    Case("play: the suit led must be followed",
         C, {"phase": "play", "to_act": 2, "trick": [(1, "AS")],
             "hands": {0: "QS 9C", 1: "TH", 2: "KS 9H"}},
         "play 9H", error="play 9H: must follow the led suit (spades)"),
    Case("play: void in the suit led, a trump must be played",
         C, {"phase": "play", "to_act": 2, "trick": [(1, "AS")], "trump": "H",
             "hands": {0: "QS 9D", 1: "TH", 2: "9H 9C"}},
         "play 9C", error="play 9C: void in spades, must play a trump (hearts)"),
    Case("play: without must_trump a void seat plays any card",
         rules(must_trump=False), {"phase": "play", "to_act": 2, "trick": [(1, "AS")],
                                   "trump": "H", "hands": {0: "QS 9D", 1: "TH", 2: "9H 9C"}},
         None, {"legal": ["play 9C", "play 9H"]}),
    Case("play: the trump takes the trick, whose taker leads next",
         C, {"phase": "play", "to_act": 0, "trick": [(1, "AS"), (2, "9H")], "trump": "H",
             "hands": {0: "9C TC", 1: "TH JH", 2: "JC QC"}},
         "play 9C", {"trick": [], "to_act": 2, "leader": 2, "tricks_taken": [0, 0, 1],
                     "taken_points": [0, 0, 11], "last_trick": 2}),
    Case("play: a marriage makes its suit trump and scores its value",
         C, {"phase": "play", "to_act": 1, "trick": [], "tricks_taken": [0, 1, 0],
             "hands": {0: "9S JS", 1: "KH QH 9C", 2: "TD JD"}},
         "marry KH", {"trump": "H", "trump_by": 1, "marriage_points": [0, 100, 0],
                      "marriages": [(1, 2, 100, "marriage")], "last_marriage": 100,
                      "trick": [(1, "KH")], "to_act": 2}),
    Case("play: a marriage needs a trick taken first",
         C, {"phase": "play", "to_act": 1, "trick": [], "tricks_taken": [0, 0, 0],
             "hands": {1: "KH QH 9C"}},
         "marry KH", error="marry KH: no marriage may be declared now (a marriage needs a "
                           "trick taken first)"),
    Case("play: a marriage is declared only when leading",
         C, {"phase": "play", "to_act": 2, "trick": [(1, "AH")], "tricks_taken": [0, 1, 1],
             "hands": {2: "KH QH 9C"}},
         "marry KH", error="marry KH: a marriage is declared only when leading"),
    Case("play: the player who named the trump may not lead it holding other suits",
         rules(trump_lead_restricted=True),
         {"phase": "play", "to_act": 1, "trick": [], "trump": "H", "trump_by": 1,
          "hands": {1: "AH 9C"}},
         "play AH", error="play AH: the player who declared the trump may not lead trumps "
                          "while holding other suits"),
    Case("play: four aces declared score and set the trump",
         rules(ace_marriage=200, marriage_needs_trick=False),
         {"phase": "play", "to_act": 1, "trick": [], "hands": {1: "AC AS AH AD 9C"}},
         "aces AS", {"aces_pending": [False, True, False], "trump": "S",
                     "marriage_points": [0, 200, 0], "marriages": [(1, 1, 200, "aces")]}),
    Case("play: after the aces are declared the aces are led first",
         rules(ace_marriage=200), {"phase": "play", "to_act": 1, "trick": [],
                                   "aces_pending": [False, True, False],
                                   "hands": {1: "AH 9C"}},
         "play 9C", error="play 9C: after declaring the aces, the aces are led one after "
                          "another"),
    Case("play: the declarer may crawl on the first trick (roomamine)",
         rules(blind_first_trick=True),
         {"phase": "play", "to_act": 1, "declarer": 1, "trick": [],
          "tricks_taken": [0, 0, 0], "hands": {1: "9C AS", 2: "AH 9H"}},
         "crawl 9C", {"crawl": True, "trick": [(1, "9C")], "to_act": 2}),
    Case("play: a crawled lead is answered with any card",
         rules(blind_first_trick=True),
         {"phase": "play", "to_act": 2, "declarer": 1, "crawl": True,
          "trick": [(1, "9C")], "hands": {2: "AS 9H"}},
         None, {"legal": ["play AS", "play 9H"]}),
]


@pytest.mark.parametrize("case", PHASE_CASES, ids=lambda c: c.name)
def test_phase_case(case: Case) -> None:
    game = build(case)
    if case.error is not None:
        assert case.action is not None
        before = snapshot(game)
        with pytest.raises(IllegalActionError) as info:
            game.apply(case.action)
        assert str(info.value) == case.error
        assert snapshot(game) == before
        return
    if case.action is not None:
        game.apply(case.action)
    for name, expected in case.after.items():
        _expect(_read(game, name), expected, name)


# ---------------------------------------------------------------------- scoring stages


@dataclass
class StageCase:
    """A stage case: the game state and the tally before, one stage, and the fields of
    both after it (tally fields as ``t.name``)."""

    name: str
    rules: Rules
    stage: sc.Stage
    before: dict[str, Any]
    after: dict[str, Any]
    conceded: int = -1


def run_stage(case: StageCase) -> tuple[Game, sc.Tally]:
    game = Game(case.rules, seed="stages", dealer=case.before.get("dealer", 0))
    game.deal(deck_for(case.rules, dealer=game.dealer))
    game.phase = PHASE_NAMES.index("play")
    tally = sc.Tally(game.n, case.conceded)
    for name, value in case.before.items():
        if name.startswith("t."):
            setattr(tally, name[2:], list(value) if isinstance(value, list) else value)
        elif name != "dealer":
            _set(game, name, value)
    case.stage(game, tally)
    return game, tally


BARREL = {"barrel_on": [False, False, False], "barrel_tries": [3, 3, 3]}

STAGE_CASES = [
    StageCase("talon_cards: the declarer's discards count for it",
              TWO, sc.talon_cards, {"declarer": 1, "last_trick": 0, "discards": "AC TC",
                                    "taken_points": [30, 40]},
              {"taken_points": [30, 61]}),
    StageCase("talon_cards: the spare talon goes to the last trick's taker",
              rules("two-player", spare_talon="last-trick"), sc.talon_cards,
              {"declarer": 1, "last_trick": 0, "spare": "KS QS", "taken_points": [30, 40]},
              {"taken_points": [37, 40]}),
    StageCase("contract: made on the rounded points (003)",
              C, sc.contract, {"declarer": 1, "contract": 120, "taken_points": [10, 118, 12]},
              {"t.contract": [0, 120, 0], "t.plain": [10, 0, 10], "t.made": True,
               "t.info": {"points": [10, 118, 12]}}),
    StageCase("contract: failed when compared before rounding",
              rules(round_before_compare=False), sc.contract,
              {"declarer": 1, "contract": 120, "taken_points": [10, 118, 12]},
              {"t.contract": [0, -120, 0], "t.made": False}),
    StageCase("contract: a blind contract counts double",
              C, sc.contract, {"declarer": 1, "contract": 120, "blind_won": True,
                               "taken_points": [0, 120, 0]},
              {"t.contract": [0, 240, 0]}),
    StageCase("contract: marriages count toward the points",
              C, sc.contract, {"declarer": 1, "contract": 120, "taken_points": [40, 50, 30],
                               "marriage_points": [0, 80, 0]},
              {"t.contract": [0, 120, 0], "t.plain": [40, 0, 30]}),
    StageCase("contract: the barrel player taking the talon must make more than 120",
              rules(barrel_mode="talon"), sc.contract,
              {"declarer": 1, "contract": 120, "forced_declarer": True,
               "barrel_on": [False, True, False], "taken_points": [0, 120, 0]},
              {"t.contract": [0, -120, 0], "t.made": False}),
    StageCase("contract: without opponents_score the others score nothing",
              rules(opponents_score=False), sc.contract,
              {"declarer": 1, "contract": 100, "taken_points": [20, 100, 0]},
              {"t.plain": [0, 0, 0]}),
    StageCase("concession: the contract lost, 60 to each other player",
              C, sc.concession, {"declarer": 1, "contract": 100},
              {"t.contract": [0, -100, 0], "t.plain": [60, 0, 60],
               "concessions": [0, 1, 0]}, conceded=1),
    StageCase("concession: half the contract, half-way down (105: 50)",
              rules(concede_opponents="half"), sc.concession,
              {"declarer": 1, "contract": 105}, {"t.plain": [50, 0, 50]}, conceded=1),
    StageCase("concession: half the contract, half-way up (105: 55)",
              rules(concede_opponents="half", concede_half_round="up"), sc.concession,
              {"declarer": 1, "contract": 105}, {"t.plain": [55, 0, 55]}, conceded=1),
    StageCase("concession: the one reaching the limit costs the penalty too",
              rules(concede_limit=2, concede_limit_penalty=120), sc.concession,
              {"declarer": 1, "contract": 100, "concessions": [0, 1, 0]},
              {"t.contract": [0, -220, 0], "concessions": [0, 2, 0]}, conceded=1),
    StageCase("concession: no loss with concede_declarer_loses off",
              rules(concede_declarer_loses=False), sc.concession,
              {"declarer": 1, "contract": 100}, {"t.contract": [0, 0, 0]}, conceded=1),
    StageCase("blind_opponents: a blind contract doubles the opponents' points",
              rules(blind_doubles_opponents=True), sc.blind_opponents,
              {"declarer": 1, "blind_won": True, "t.plain": [10, 0, 20]},
              {"t.plain": [20, 0, 40]}),
    StageCase("blind_opponents: nothing for a contract that is not blind",
              rules(blind_doubles_opponents=True), sc.blind_opponents,
              {"declarer": 1, "blind_won": False, "t.plain": [10, 0, 20]},
              {"t.plain": [10, 0, 20]}),
    StageCase("four_nines: four nines as dealt score 100 (000)",
              ET, sc.four_nines, {"dealt": {2: NINES4}, "held": {}, "t.plain": [5, 0, 10]},
              {"t.plain": [5, 0, 110]}),
    StageCase("four_nines: counted after the exchange, the hand as played",
              rules("estonian", four_nines_counted="after-exchange"), sc.four_nines,
              {"dealt": {2: NINES4}, "held": {0: NINES4}, "t.plain": [0, 0, 0]},
              {"t.plain": [100, 0, 0]}),
    StageCase("virgin_bonus: a player without a trick scores the bonus (004)",
              rules("german-1001"), sc.virgin_bonus,
              {"tricks_taken": [3, 0, 5], "t.plain": [40, 0, 80]},
              {"t.plain": [40, 100, 80]}),
    StageCase("sitter_talon: the dealer sitting out scores the talon and its marriage",
              rules("classic-4", sitter_scores_talon=True), sc.sitter_talon,
              {"orig_talon": "KH QH 9C"}, {"t.plain": [105, 0, 0, 0]}),
    StageCase("golden: a golden deal counts double",
              rules(golden_round=True), sc.golden,
              {"golden": True, "t.contract": [0, 120, 0], "t.plain": [10, 0, 5]},
              {"t.contract": [0, 240, 0], "t.plain": [20, 0, 10]}),
    StageCase("totals: a player on the barrel scores only the contract",
              C, sc.totals, {"scores": [880, 100, 200], "barrel_on": [True, False, False],
                             "t.contract": [0, -100, 0], "t.plain": [30, 0, 20]},
              {"scores": [880, 0, 220], "t.before": [880, 100, 200]}),
    StageCase("bolts: the third deal without a trick costs 120",
              C, sc.bolts, {"bolts": [2, 1, 0], "tricks_taken": [0, 0, 8],
                            "scores": [100, 50, 300]},
              {"bolts": [0, 2, 0], "scores": [-20, 50, 300], "t.penalties": [120, 0, 0]}),
    StageCase("bolts: only bolts in a row count",
              rules(bolt_consecutive=True), sc.bolts,
              {"bolts": [2, 1, 0], "tricks_taken": [1, 1, 6]},
              {"bolts": [0, 0, 0], "t.penalties": []}),
    StageCase("bolts: a trick without a point is a bolt with bolt_on no-points",
              rules(bolt_on="no-points"), sc.bolts,
              {"bolts": [0, 0, 0], "tricks_taken": [1, 2, 5], "taken_points": [0, 30, 90]},
              {"bolts": [1, 0, 0]}),
    StageCase("bolts: a conceded deal gives no bolt",
              C, sc.bolts, {"bolts": [2, 0, 0], "tricks_taken": [0, 0, 0]},
              {"bolts": [2, 0, 0]}, conceded=1),
    StageCase("barrel: reaching 880 sits on the barrel, held there",
              C, sc.barrel, {**BARREL, "declarer": 1, "scores": [0, 900, 50],
                             "t.made": True},
              {"scores": [0, 880, 50], "barrel_on": [False, True, False],
               "barrel_tries": [3, 3, 3], "t.winners": []}),
    StageCase("barrel: a contract of 120 won on the barrel finishes the game",
              C, sc.barrel, {**BARREL, "barrel_on": [False, True, False], "declarer": 1,
                             "contract": 120, "scores": [0, 1000, 50], "t.made": True},
              {"t.winners": [1], "scores": [0, 1000, 50]}),
    StageCase("barrel: a deal on the barrel spends a try, the last one falls to 0",
              C, sc.barrel, {**BARREL, "barrel_on": [False, True, False],
                             "barrel_tries": [3, 1, 3], "declarer": 0,
                             "scores": [100, 880, 50]},
              {"scores": [100, 0, 50], "barrel_on": [False, False, False],
               "t.falls": [1]}),
    StageCase("barrel: reaching 1000 from below wins (003 l.35)",
              C, sc.barrel, {**BARREL, "declarer": 0, "scores": [100, 50, 1010],
                             "t.made": True},
              {"t.winners": [2], "barrel_on": [False, False, False]}),
    StageCase("barrel: a player climbing on knocks off the one sitting there",
              rules(barrel_knock_off=True), sc.barrel,
              {**BARREL, "barrel_on": [True, False, False], "declarer": 1,
               "scores": [880, 890, 50], "t.made": True},
              {"barrel_on": [False, True, False], "scores": [0, 880, 50], "t.falls": [0]}),
    StageCase("barrel: two climbing at once both fall",
              rules(barrel_both_fall=True), sc.barrel,
              {**BARREL, "declarer": 1, "scores": [890, 900, 50], "t.made": True},
              {"barrel_on": [False, False, False], "scores": [0, 0, 50], "t.falls": [0, 1]}),
    StageCase("barrel: a bolt penalty is written on the barrel too (760)",
              C, sc.barrel, {**BARREL, "barrel_on": [True, False, False], "declarer": 1,
                             "scores": [760, 100, 50], "t.penalties": [120, 0, 0]},
              {"scores": [760, 100, 50], "barrel_on": [False, False, False],
               "barrel_tries": [2, 3, 3], "t.falls": [0]}),
    StageCase("barrel_contracts_only: from the barrel on only contracts score (000)",
              ET, sc.barrel_contracts_only, {"scores": [900, 100, 0]},
              {"barrel_on": [True, False, False], "t.winners": []}),
    StageCase("target: who reached it",
              rules(barrel=None), sc.target, {"scores": [1005, 990, 0]},
              {"t.winners": [0]}),
    StageCase("target: exactly the target is not enough with win_above_target",
              rules(barrel=None, win_above_target=True), sc.target,
              {"scores": [1000, 1001, 0]}, {"t.winners": [1]}),
    StageCase("dump_truck: exactly 555 goes to 0",
              rules(dump_truck="555"), sc.dump_truck, {"scores": [555, -555, 10]},
              {"scores": [0, -555, 10]}),
    StageCase("dump_truck: -555 too with 555-and-minus",
              rules(dump_truck="555-and-minus"), sc.dump_truck,
              {"scores": [555, -555, 10]}, {"scores": [0, 0, 10]}),
    StageCase("barrel_falls: the last fall allowed resets to 5, off the barrel for good",
              rules(barrel_falls_reset=2, barrel_falls_reset_to=5,
                    barrel_falls_no_barrel=True), sc.barrel_falls,
              {"barrel_falls": [1, 0, 0], "scores": [0, 300, 200], "t.falls": [0]},
              {"barrel_falls": [0, 0, 0], "scores": [5, 300, 200], "no_barrel": 0b001}),
    StageCase("golden_round: nobody made the 120, the game starts again (003 l.67)",
              rules(golden_round=True), sc.golden_round,
              {"golden": True, "declarer": 1, "golden_done": 0b101, "golden_made": False,
               "deals_played": 2, "scores": [-240, 100, -240], "bolts": [1, 0, 0],
               "t.made": False, "t.winners": [1]},
              {"scores": [0, 0, 0], "bolts": [0, 0, 0], "golden_done": 0,
               "golden_from": 3, "t.winners": [], "t.info": {"golden_restart": True}}),
    StageCase("golden_round: a golden contract made, the game goes on",
              rules(golden_round=True), sc.golden_round,
              {"golden": True, "declarer": 1, "golden_done": 0b101, "golden_made": False,
               "scores": [-240, 240, 30], "t.made": True},
              {"scores": [-240, 240, 30], "golden_done": 0b111, "golden_made": True}),
    StageCase("result: the deal is recorded and the next dealer deals",
              C, sc.result, {"declarer": 1, "contract": 100, "scores": [15, 100, 5],
                             "deals_played": 0, "t.before": [0, 0, 0], "t.made": True},
              {"dealer": 1, "deals_played": 1, "phase": "deal",
               "t.info": {}, "records_result": {"deltas": [15, 100, 5], "made": True,
                                                "declarer": 1, "contract": 100}}),
    StageCase("result: after a concession the same dealer deals again (003)",
              C, sc.result, {"declarer": 1, "contract": 100, "scores": [60, -100, 60],
                             "t.before": [0, 0, 0]},
              {"dealer": 0, "phase": "deal"}, conceded=1),
    StageCase("result: at the deal limit the highest total wins",
              rules(max_deals=1), sc.result,
              {"declarer": 1, "contract": 100, "scores": [15, 100, 5], "deal_index": 1,
               "t.before": [0, 0, 0]},
              {"phase": "over", "winners": [1]}),
]


@pytest.mark.parametrize("case", STAGE_CASES, ids=lambda c: c.name)
def test_stage_case(case: StageCase) -> None:
    game, tally = run_stage(case)
    for name, expected in case.after.items():
        if name.startswith("t."):
            actual = getattr(tally, name[2:])
            if name == "t.info":
                assert {k: actual.get(k) for k in expected} == expected, name
                continue
        elif name == "records_result":
            result = game.records[-1].result
            assert result is not None
            actual = {k: result.get(k) for k in expected}
        else:
            actual = _read(game, name)
        assert actual == expected, name


PLANS = [
    (C, False, ["contract", "totals", "bolts", "barrel", "barrel_falls", "result"]),
    (C, True, ["concession", "totals", "bolts", "barrel", "barrel_falls", "result"]),
    (TWO, False, ["talon_cards", "contract", "totals", "bolts", "barrel", "barrel_falls",
                  "result"]),
    (ET, False, ["contract", "four_nines", "totals", "barrel_contracts_only", "result"]),
    (rules("german-1001"), False, ["contract", "virgin_bonus", "totals", "target", "result"]),
    (rules(golden_round=True, dump_truck="555", blind_doubles_opponents=True), True,
     ["concession", "blind_opponents", "golden", "totals", "bolts", "barrel", "dump_truck",
      "barrel_falls", "golden_round", "result"]),
]


@pytest.mark.parametrize(("rules_", "conceded", "stages"), PLANS,
                         ids=[f"{r.name}-{len(s)}-{c}" for r, c, s in PLANS])
def test_each_rule_set_chooses_its_stages_once(rules_: Rules, conceded: bool,
                                               stages: list[str]) -> None:
    assert sc.stage_names(rules_, conceded=conceded) == stages
    assert sc.plan_for(rules_) is sc.plan_for(rules_)


def test_the_cases_cover_every_phase_and_every_stage() -> None:
    phases = {c.name.split(":")[0] for c in PHASE_CASES}
    assert phases == {"ask", "blind", "auction", "sale", "talon", "exchange", "contract",
                      "play"}
    stages = {c.stage.__name__ for c in STAGE_CASES}
    everything = {s.__name__ for r in (C, TWO, ET, rules("german-1001"))
                  for s in sc.plan_for(r).played + sc.plan_for(r).conceded}
    everything |= {"blind_opponents", "sitter_talon", "golden", "dump_truck", "golden_round"}
    assert everything <= stages
    assert cards("9c") == ["9C"]  # the readable card form the cases use
