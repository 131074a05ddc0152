"""Classic 1000 (003, 002) deal by deal, on hand-computed deals.

Most cases replay the reference deal D1 (see ``engine_support``): declarer seat 1,
dealer seat 0, so seat 1 is forehand and holds the forced 100; seat 2 plays second (L)
and seat 0 third (R).  By hand: the declarer takes 103 card points and declares hearts
(classic: 100), seat 0 takes 17 and seat 2 takes no trick.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from engine_support import (
    D1_DECL,
    D1_RIGHT,
    D1_TALON,
    D1_TRICKS,
    D1_TRICKS_PLAIN,
    apply_all,
    assert_illegal,
    cards,
    d1_deck,
    deal_result,
    deck_for,
    legal,
    play_d1,
    resume,
)

from arena.engine import Game, Rules

AUCTION = ["pass", "pass"]  # seat 2 and seat 0 pass the forced 100 of seat 1
GIVES = ["give 9D 2", "give JD 0"]


def d1(dealer: int = 0, decl: int = 1, *, scores: list[int] | None = None,
       talon: str = D1_TALON, **options: Any) -> Game:
    rules = Rules.preset("classic", **options)
    game = Game(rules, seed="d1", dealer=dealer)
    if scores is not None:
        resume(game, scores)
    game.deal(d1_deck(rules, dealer, decl, talon))
    return game


def bids(*values: int) -> list[str]:
    return [f"bid {v}" for v in values]


@dataclass
class Case:
    id: str
    options: dict[str, Any]
    actions: list[str]
    scores: list[int]
    before: list[int] | None = None
    bolts: list[int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def full(contract: int = 100, tricks: list[str] = D1_TRICKS) -> list[str]:
    return [*AUCTION, *GIVES, f"contract {contract}", *tricks]


CASES = [
    Case("002/003: contract made scores + contract; opponents score their points, "
         "rounded to 5 (17 -> 15); a seat with no trick gets a bolt",
         {}, full(), [15, 100, 0], bolts=[0, 0, 1]),
    Case("003: a raise after the talon (100 -> 200) is what counts",
         {}, full(200), [15, 200, 0]),
    Case("003 l.58: the declarer's 203 is rounded to 205 before the compare: 205 made",
         {}, full(205), [15, 205, 0]),
    Case("round_before_compare off: 203 < 205 fails by the contract",
         {"round_before_compare": False}, full(205), [15, -205, 0]),
    Case("rounding off: opponents keep 17; the declarer compares 203 with 205",
         {"rounding": False}, full(205), [17, -205, 0]),
    Case("rounding off, contract made", {"rounding": False}, full(), [17, 100, 0]),
    Case("a contract is never worth more than bid: 203 points on 100 score 100",
         {}, full(100), [15, 100, 0]),
    Case("the marriage counts only when declared: 103 (105) fails 200",
         {}, full(200, D1_TRICKS_PLAIN), [15, -200, 0]),
    Case("opponents_score off: opponents write nothing",
         {"opponents_score": False}, full(), [0, 100, 0]),
    Case("003: every third bolt costs 120 (bolt_every 1: at once)",
         {"bolt_every": 1}, full(), [15, 100, -120], bolts=[0, 0, 0]),
    Case("003 l.80: the bolt penalty may be 100",
         {"bolt_every": 1, "bolt_penalty": 100}, full(), [15, 100, -100]),
    Case("bolt on no points: no trick is also no point",
         {"bolt_on": "no-points", "bolt_every": 1}, full(), [15, 100, -120]),
    Case("bolts off", {"bolts": False}, full(), [15, 100, 0], bolts=[0, 0, 0]),
    Case("third bolt: two bolts before, the third costs 120 and the count restarts",
         {}, full(), [15, 100, -120], before=[0, 0, 0], bolts=[0, 0, 0],
         extra={"bolts_before": [0, 0, 2]}),
    Case("004: virgin bonus 100 to a player without a trick",
         {"virgin_bonus": 100}, full(), [15, 100, 100]),
    Case("004: virgin bonus 10", {"virgin_bonus": 10}, full(), [15, 100, 10]),
    Case("003 l.83: dump truck: exactly 555 goes to 0",
         {"dump_truck": "555"}, full(), [15, 0, 0], before=[0, 455, 0]),
    Case("dump truck off: 555 stays", {}, full(), [15, 555, 0], before=[0, 455, 0]),
    Case("dump truck: 560 is not 555", {"dump_truck": "555"}, full(), [15, 560, 0],
         before=[0, 460, 0]),
    Case("003 l.84: negative dump truck: -555 goes to 0",
         {"dump_truck": "555-and-minus", "round_before_compare": False}, full(205),
         [15, 0, 0], before=[0, -350, 0]),
    Case("dump truck 555 only: -555 stays",
         {"dump_truck": "555", "round_before_compare": False}, full(205),
         [15, -555, 0], before=[0, -350, 0]),
    Case("dump truck also hits an opponent reaching 555",
         {"dump_truck": "555"}, full(), [0, 100, 0], before=[540, 0, 0]),
    Case("marriage_declarer_only: the declarer still scores its marriage",
         {"marriage_declarer_only": True}, full(205), [15, 205, 0]),
    Case("003 options: other marriage values (hearts 80): 183 -> 185 fails 190",
         {"marriage_values": [60, 100, 80, 40]}, full(190), [15, -190, 0]),
    Case("003 options: other marriage values (hearts 80): 183 -> 185 makes 185",
         {"marriage_values": [60, 100, 80, 40]}, full(185), [15, 185, 0]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_d1_scoring(case: Case) -> None:
    game = d1(scores=case.before, **case.options)
    if "bolts_before" in case.extra:
        game.bolts[:] = case.extra["bolts_before"]
    apply_all(game, case.actions)
    assert game.is_chance, game.phase_name
    assert game.scores == case.scores
    assert deal_result(game)["deltas"] == [
        a - b for a, b in zip(case.scores, case.before or [0, 0, 0], strict=True)
    ]
    if case.bolts is not None:
        assert game.observation(0)["bolts"] == case.bolts
    assert game.observation(0)["dealer"] == 1  # the deal passes to the left
    assert game.deal_index == 1


def test_d1_public_points_and_tricks() -> None:
    game = d1()
    apply_all(game, full())
    obs = game.observation(2)
    assert obs["points_taken"] == [17, 103, 0]
    assert obs["tricks_taken"] == [1, 7, 0]
    assert obs["marriages"] == [[1, "H", 100]]
    res = deal_result(game)
    assert res["points"] == [17, 203, 0]
    assert (res["declarer"], res["contract"], res["made"]) == (1, 100, True)
    tricks = [e for e in game.events if e["type"] == "trick"]
    assert [t["winner"] for t in tricks] == [1, 1, 1, 1, 1, 1, 1, 0]
    assert [t["points"] for t in tricks] == [13, 6, 21, 5, 16, 18, 24, 17]
    assert game.events[-1]["type"] == "deal_end"
    assert game.events[-1]["deltas"] == [15, 100, 0]


@pytest.mark.parametrize(("consecutive", "seat2"), [(False, -120), (True, 0)])
def test_003_bolts_in_a_row_only(consecutive: bool, seat2: int) -> None:
    """003 l.65/66: three bolts in a row, or any three (here every second bolt).

    Deal 1: seat 2 takes no trick (bolt); deal 2: seat 2 declares and takes tricks;
    deal 3: seat 2 again takes nothing.  In a row: the count restarted, no penalty.
    """
    game = Game(Rules.preset("classic", bolt_every=2, bolt_consecutive=consecutive), seed="b")
    play_d1(game, 1)  # seat 2 is L: bolt
    assert game.bolts[2] == 1
    play_d1(game, 2)  # dealer 1: seat 2 is forehand and declarer
    assert game.bolts[2] == (0 if consecutive else 1)
    before = game.scores[2]
    play_d1(game, 1)  # dealer 2: seat 1 outbids, seat 2 is L again
    assert game.scores[2] - before == seat2


# --------------------------------------------------------------------------- auction


def test_003_forehand_holds_the_forced_100() -> None:
    game = d1()
    obs = game.observation(2)
    assert obs["auction"] == [[1, "bid 100"]]
    assert obs["bid"] == 100 and obs["phase"] == "auction"
    assert game.to_act == 2
    # Seat 2 holds clubs (60) and spades (40): up to 120 + 100.
    assert legal(game) == ["pass", *bids(*range(105, 225, 5))]
    auto = [e for e in game.events if e.get("auto")]
    assert auto == [{"type": "action", "seat": 1, "action": "bid 100", "auto": True}]


def test_003_dealer_opens_when_the_dealer_holds_the_forced_bid() -> None:
    game = d1(opener="dealer")
    assert game.observation(0)["auction"] == [[0, "bid 100"]]
    assert game.to_act == 1
    assert legal(game) == ["pass", *bids(*range(105, 225, 5))]  # KH QH: hearts 100


def test_no_bid_above_120_without_a_marriage() -> None:
    game = d1()
    apply_all(game, ["pass"])
    assert game.to_act == 0  # holds KD only
    assert legal(game) == ["pass", *bids(105, 110, 115, 120)]
    assert_illegal(game, "bid 125", "above the highest bid allowed for this hand (120)")


def test_bid_cap_marriages_off_allows_any_bid_with_a_marriage() -> None:
    game = d1(bid_cap_marriages=False)
    # 120 + every marriage (60 + 40 + 100 + 80): the absolute ceiling.
    assert legal(game)[-1] == "bid 400"
    game = d1(bid_limit_plain=None)
    apply_all(game, ["pass"])
    assert legal(game)[-1] == "bid 400"  # no marriage needed at all


def test_bid_max_caps_every_bid() -> None:
    game = d1(bid_max=150)
    assert legal(game) == ["pass", *bids(*range(105, 155, 5))]


def test_bid_step() -> None:
    game = d1(bid_step=10)
    assert legal(game) == ["pass", *bids(*range(110, 230, 10))]
    assert_illegal(game, "bid 115", "bids go in steps of 10")


def test_bids_must_rise_and_passed_players_are_out() -> None:
    game = d1()
    assert_illegal(game, "bid 100", "the bid must be at least 105")
    assert_illegal(game, "bid 107", "bids go in steps of 5")
    apply_all(game, ["bid 110", "pass"])  # seat 2 110, seat 0 out
    assert game.to_act == 1
    assert legal(game)[:2] == ["pass", "bid 115"]
    apply_all(game, ["bid 115"])
    assert game.to_act == 2  # seat 0 passed: skipped
    apply_all(game, ["pass"])
    obs = game.observation(1)
    assert (obs["declarer"], obs["contract"], obs["phase"]) == (1, 115, "exchange")
    assert obs["auction"] == [[1, "bid 100"], [2, "bid 110"], [0, "pass"], [1, "bid 115"],
                              [2, "pass"]]


def test_forced_bidder_left_alone_plays_the_100() -> None:
    game = d1()
    apply_all(game, AUCTION)
    obs = game.observation(1)
    assert (obs["declarer"], obs["contract"]) == (1, 100)


def test_003_a_player_at_minus_120_may_not_bid() -> None:
    game = d1(minus_may_not_bid=-120, scores=[0, 0, -120])
    assert legal(game) == ["pass"]
    game = d1(minus_may_not_bid=-120, scores=[0, 0, -115])
    assert len(legal(game)) > 1


def test_003_a_player_at_minus_120_is_not_forced_to_open() -> None:
    game = d1(minus_may_not_bid=-120, scores=[0, -120, 0])
    assert [1, "bid 100"] not in game.observation(0)["auction"]
    apply_all(game, ["pass", "pass"])
    assert game.observation(0)["declarer"] != 1


def test_minus_may_not_bid_error_says_why() -> None:
    game = d1(minus_may_not_bid=-120, scores=[0, 0, -120])
    msg = assert_illegal(game, "bid 105", "")
    assert "-120" in msg or "may not bid" in msg


# --------------------------------------------------------------------------- talon


def test_002_talon_is_shown_to_everyone_and_taken_by_the_declarer() -> None:
    game = d1()
    assert all(game.observation(s)["talon"] == [] for s in range(3))
    apply_all(game, AUCTION)
    for s in range(3):
        assert game.observation(s)["talon"] == ["9D", "JD", "QD"]
    assert sorted(game.observation(1)["hand"]) == sorted(cards("AC TC AS TS AH KH QH QD JD 9D"))
    assert game.observation(1)["received"] == ["9D", "JD", "QD"]
    assert game.observation(0)["hand_sizes"] == [7, 10, 7]


def test_hidden_talon_is_seen_by_the_declarer_only() -> None:
    game = d1(talon_public=False)
    apply_all(game, AUCTION)
    assert game.observation(1)["talon"] == ["9D", "JD", "QD"]
    assert game.observation(0)["talon"] == [] and game.observation(2)["talon"] == []


# --------------------------------------------------------------------------- exchange


def test_002_declarer_gives_one_card_to_each_opponent() -> None:
    game = d1()
    apply_all(game, AUCTION)
    hand = cards("9C JC QC KC TC AC 9S JS QS KS TS AS 9H JH QH KH TH AH 9D JD QD KD TD AD")
    held = [c for c in hand if c in game.observation(1)["hand"]]
    # Targets in seat order, cards in canonical order.
    assert legal(game) == ["concede", *[f"give {c} 0" for c in held],
                           *[f"give {c} 2" for c in held]]
    apply_all(game, ["give 9D 2"])
    assert legal(game) == [f"give {c} 0" for c in held if c != "9D"]
    assert_illegal(game, "give QD 2", "seat 2 cannot receive a card now")
    assert_illegal(game, "give QD 1", "seat 1 cannot receive a card now")
    assert_illegal(game, "give 9D 0", "seat 1 does not hold 9D")
    assert_illegal(game, "concede", "concede")
    apply_all(game, ["give JD 0"])
    assert game.observation(2)["received"] == ["9D"]
    assert game.observation(0)["received"] == ["JD"]
    assert game.observation(1)["given"] == [["9D", 2], ["JD", 0]]
    assert game.observation(2)["given"] == []
    assert game.observation(0)["hand_sizes"] == [8, 8, 8]


def test_003_raise_after_the_exchange() -> None:
    game = d1()
    apply_all(game, [*AUCTION, *GIVES])
    assert game.phase_name == "contract" and game.to_act == 1
    # KH QH in hand: 120 + 100.
    assert legal(game) == [f"contract {v}" for v in range(100, 225, 5)] + ["concede"]
    assert_illegal(game, "contract 95", "can only be raised, not lowered below 100")
    assert_illegal(game, "contract 225", "above the highest contract allowed (220)")
    apply_all(game, ["contract 150"])
    assert game.observation(0)["contract"] == 150
    assert game.phase_name == "play" and game.to_act == 1


def test_without_raise_play_follows_the_exchange() -> None:
    game = d1(raise_contract=False)
    apply_all(game, [*AUCTION, *GIVES])
    assert game.phase_name == "play" and game.to_act == 1
    assert_illegal(game, "contract 120", "not legal")


# --------------------------------------------------------------------------- concede


@pytest.mark.parametrize(
    ("options", "actions", "scores"),
    [
        # 003 l.28: the declarer loses the contract, each opponent scores 60.
        ({}, [*AUCTION, "concede"], [60, -100, 60]),
        ({}, [*AUCTION, *GIVES, "concede"], [60, -100, 60]),
        # 003 l.45: each opponent gets half the contract.
        ({"concede_opponents": "half"}, [*AUCTION, "concede"], [50, -100, 50]),
        ({"concede_opponents": "half"},
         ["bid 105", "pass", "bid 110", "pass", "concede"], [55, -110, 55]),
        # 003 l.47: the conceding declarer loses nothing.
        ({"concede_declarer_loses": False}, [*AUCTION, "concede"], [60, 0, 60]),
        # 003 l.46/48: limited concessions; the one reaching the limit costs 120 more.
        ({"concede_limit": 1, "concede_limit_penalty": 120}, [*AUCTION, "concede"],
         [60, -220, 60]),
        # A blind contract conceded costs double.
        ({"blind_bid": True}, ["blind 100", "pass", "pass", "concede"], [60, -200, 60]),
    ],
)
def test_concede(options: dict[str, Any], actions: list[str], scores: list[int]) -> None:
    game = d1(**options)
    apply_all(game, actions)
    assert game.is_chance
    assert game.scores == scores
    assert deal_result(game)["conceded"] == 1
    assert game.observation(0)["dealer"] == 0  # 003 l.28: the same dealer deals again
    assert game.observation(0)["bolts"] == [0, 0, 0]  # a conceded deal gives no bolt


def test_concede_is_refused_when_off() -> None:
    game = d1(concede=False)
    apply_all(game, AUCTION)
    assert "concede" not in legal(game)
    assert_illegal(game, "concede", "these rules do not allow conceding")


def test_concede_limit_is_per_player() -> None:
    rules = Rules.preset("classic", concede_limit=1)
    game = Game(rules, seed="d1")
    game.deal(d1_deck(rules, 0, 1))
    apply_all(game, [*AUCTION, "concede"])
    assert game.scores == [60, -100, 60]
    # The same dealer deals again: seat 1 holds the forced 100 and may not concede.
    game.deal(d1_deck(rules, 0, 1))
    apply_all(game, AUCTION)
    assert game.observation(1)["declarer"] == 1
    assert "concede" not in legal(game)
    assert_illegal(game, "concede", "concede")


def test_003_after_a_concession_the_same_dealer_deals_again() -> None:
    game = d1()
    apply_all(game, [*AUCTION, "concede"])
    assert game.observation(0)["dealer"] == 0


# --------------------------------------------------------------------------- rebuy


def test_003_rebuy_the_talon_for_120() -> None:
    game = d1(rebuy=True)
    apply_all(game, AUCTION)
    assert game.phase_name == "sale" and game.to_act == 2
    assert legal(game) == ["pass", "buy 120"]
    apply_all(game, ["buy 120"])
    # Seat 0: KD + QD of the talon make 80: cap 200 < 240, so only pass.
    assert game.to_act == 0 and legal(game) == ["pass"]
    apply_all(game, ["pass"])
    obs = game.observation(2)
    assert (obs["declarer"], obs["contract"], obs["phase"]) == (2, 120, "exchange")
    assert obs["hand_sizes"] == [7, 7, 10]
    assert game.to_act == 2


def test_rebuying_after_a_blind_contract_is_not_blind() -> None:
    game = d1(blind_bid=True, rebuy=True)
    apply_all(game, ["blind 100", *AUCTION, "buy 120", "pass"])
    assert game.observation(0)["declarer"] == 2
    assert game.observation(0)["blind"] is False


def test_rebuy_nobody_buys() -> None:
    game = d1(rebuy=True)
    apply_all(game, [*AUCTION, "pass", "pass"])
    obs = game.observation(1)
    assert (obs["declarer"], obs["contract"], obs["phase"]) == (1, 100, "exchange")


# --------------------------------------------------------------------------- golden round


def test_003_golden_round_dealer_plays_120_and_everything_counts_double() -> None:
    # Dealer 1 is the golden-round declarer: no auction, no raise.
    game = d1(dealer=1, golden_round=True)
    assert game.phase_name == "exchange" and game.to_act == 1
    obs = game.observation(0)
    assert (obs["declarer"], obs["contract"]) == (1, 120)
    assert next(e for e in game.events if e.get("auto"))["action"] == "bid 120"
    apply_all(game, GIVES)
    # 003 l.51: the golden-round declarer may raise.
    assert legal(game)[0] == "contract 120" and "contract 125" in legal(game)
    apply_all(game, ["contract 120", *D1_TRICKS])
    assert game.scores == [30, 240, 0]
    # The next deal is golden too (3 deals for 3 players): dealer 2 plays 120.
    assert game.observation(0)["dealer"] == 2
    rules = game.rules
    game.deal(d1_deck(rules, 2, 2))
    obs = game.observation(0)
    assert (obs["declarer"], obs["contract"], obs["phase"]) == (2, 120, "exchange")


def test_golden_round_ends_after_one_round() -> None:
    rules = Rules.preset("classic", golden_round=True)
    game = Game(rules, seed="g", dealer=1)
    game.golden_done = 0b111  # resumed after every seat played its golden deal
    game.deal(d1_deck(rules, 1, 2))
    assert game.phase_name == "auction"
    rules = Rules.preset("classic", golden_round=True, golden_round_count="deals")
    game = Game(rules, seed="g", dealer=1)
    game.deals_played = 3  # resumed after three scored deals
    game.deal(d1_deck(rules, 1, 2))
    assert game.phase_name == "auction"


def test_003_golden_round_declarer_may_raise() -> None:
    game = d1(dealer=1, golden_round=True)
    apply_all(game, GIVES)
    assert "contract 125" in legal(game)


# --------------------------------------------------------------------------- blind bid


def test_blind_bid_counts_double() -> None:
    game = d1(blind_bid=True)
    assert game.phase_name == "blind" and game.to_act == 1
    assert legal(game) == ["look", "blind 100", "blind 105", "blind 110", "blind 115",
                           "blind 120"]
    apply_all(game, ["blind 100", *AUCTION, *GIVES, "contract 100", *D1_TRICKS])
    assert game.scores == [15, 200, 0]
    assert deal_result(game)["blind"] is True


def test_blind_multiplier_and_a_failed_blind_contract() -> None:
    game = d1(blind_bid=True, blind_multiplier=3)
    apply_all(game, ["blind 100", *AUCTION, *GIVES, "contract 100", *D1_TRICKS])
    assert game.scores == [15, 300, 0]
    game = d1(blind_bid=True, round_before_compare=False)
    apply_all(game, ["blind 100", *AUCTION, *GIVES, "contract 205", *D1_TRICKS])
    assert game.scores == [15, -410, 0]


def test_look_then_bid_normally() -> None:
    game = d1(blind_bid=True)
    apply_all(game, ["look"])
    assert game.phase_name == "auction" and game.to_act == 2
    assert game.observation(0)["auction"] == [[1, "bid 100"]]
    apply_all(game, [*AUCTION, *GIVES, "contract 100", *D1_TRICKS])
    assert game.scores == [15, 100, 0]


def test_blind_bidder_hides_the_hand_and_bids_blind_again() -> None:
    # The reading kept for 000 (blind_outbid "blind"); 003's is in test_engine_texts.
    game = d1(blind_bid=True, blind_outbid="blind")
    apply_all(game, ["blind 100", "bid 105", "pass"])
    assert game.to_act == 1
    assert game.observation(1)["hand"] == []
    assert game.observation(1)["blind"] is True
    assert legal(game) == ["pass", "blind 110", "blind 115", "blind 120"]
    assert_illegal(game, "bid 110", "bids blind")
    apply_all(game, ["pass"])
    assert game.observation(1)["hand"] != []
    assert game.observation(2)["declarer"] == 2 and deal_result_is_open(game)


def deal_result_is_open(game: Game) -> bool:
    return game.records[-1].result is None


def test_003_blind_contract_hides_the_talon() -> None:
    game = d1(blind_bid=True, blind_hides_talon=True)
    apply_all(game, ["blind 100", *AUCTION])
    assert game.observation(1)["talon"] == ["9D", "JD", "QD"]
    assert game.observation(0)["talon"] == [] and game.observation(2)["talon"] == []


def test_003_blind_bid_only_from_a_score() -> None:
    game = d1(blind_bid=True, blind_min_score=1)
    assert game.phase_name == "auction"  # seat 1 has 0 points: no blind choice
    game = d1(blind_bid=True, blind_min_score=1, scores=[0, 5, 0])
    assert game.phase_name == "blind"


def test_000_blind_choice_is_made_without_seeing_the_hand() -> None:
    game = d1(blind_bid=True)
    assert game.phase_name == "blind"
    assert game.observation(1)["hand"] == []


# --------------------------------------------------------------------------- redeal triggers


def test_003_redeal_when_a_hand_holds_under_14_points() -> None:
    # The automatic redeal (redeal_low_ask off); the player's choice is in test_engine_texts.
    rules = Rules.preset("classic", redeal_low_hand=14, redeal_low_ask=False)
    game = Game(rules, seed="r")
    # Seat 2 holds 9C JC 9S JS 9H JH 9D: 8 points.
    game.deal(d1_deck_low(rules))
    assert game.is_chance
    assert game.records[-1].result == {"redeal": "seat 2 holds fewer than 14 points"}
    assert [e for e in game.events if e["type"] == "redeal"]
    assert game.observation(0)["dealer"] == 0 and game.deal_index == 1
    assert game.deals_played == 0


def d1_deck_low(rules: Rules) -> list[str]:
    return deck_for(rules, {2: "9C JC 9S JS 9H JH 9D"})


def test_no_redeal_with_14_points() -> None:
    rules = Rules.preset("classic", redeal_low_hand=14)
    game = Game(rules, seed="r")
    game.deal(d1_deck(rules, 0, 1))  # the weakest D1 hand: seat 2 with 27
    assert game.phase_name == "auction"


@pytest.mark.parametrize(
    ("actions", "redeal"),
    [
        (AUCTION, True),  # the forced 100 takes a talon of 2 points: redeal
        (["bid 105", "pass", "pass"], False),  # a real bid: no redeal
    ],
)
def test_003_redeal_when_the_talon_holds_under_5_at_the_forced_100(
    actions: list[str], redeal: bool
) -> None:
    rules = Rules.preset("classic", redeal_low_talon=5, redeal_low_ask=False)
    game = Game(rules, seed="r")
    # The talon 9D JD 9H holds 2 points; QD goes to seat 2 instead of 9H.
    game.deal(deck_for(rules, {1: D1_DECL, 2: "KC QC JC KS QS JS QD", 0: D1_RIGHT},
                       "9D JD 9H"))
    apply_all(game, actions)
    if redeal:
        assert game.is_chance
        assert game.records[-1].result == {"redeal": "the talon holds fewer than 5 points"}
    else:
        assert game.phase_name == "exchange"


def test_talon_of_5_points_is_kept() -> None:
    game = d1(redeal_low_talon=5)  # QD JD 9D: 5 points
    apply_all(game, AUCTION)
    assert game.phase_name == "exchange"


# --------------------------------------------------------------------------- end of game


def test_target_reached_ends_the_game() -> None:
    game = d1(barrel=None, target=100)
    apply_all(game, full())
    assert game.is_over and game.to_act is None
    assert game.ranking() == [2, 1, 3]
    assert game.legal_actions() == []
    assert_illegal(game, "pass", "the game is over")


def test_003_win_above_target_needs_more_than_the_target() -> None:
    game = d1(barrel=None, target=100, win_above_target=True)
    apply_all(game, full())
    assert not game.is_over and game.is_chance
    game = d1(barrel=None, target=95, win_above_target=True)
    apply_all(game, full())
    assert game.is_over


def test_max_deals_ends_the_game_with_the_highest_total_first() -> None:
    game = d1(max_deals=1)
    apply_all(game, full())
    assert game.is_over
    assert game.scores == [15, 100, 0]
    assert game.ranking() == [2, 1, 3]


def test_max_deals_ties_share_a_rank() -> None:
    game = d1(max_deals=1, scores=[85, 0, 100])
    apply_all(game, full())
    assert game.scores == [100, 100, 100]
    assert game.ranking() == [1, 1, 1]
