"""The other tables: two players (10 and 9 cards), four players with the dealer sitting
out, Estonian 1000 (000/001), German 1000/1001 (004).  Every deal is worked out by hand
in the comments."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import (
    D1_DECL,
    D1_LEFT,
    D1_TRICKS,
    apply_all,
    assert_illegal,
    cards,
    d1_deck,
    deal_result,
    deck_for,
    legal,
    play_first,
    plays_only,
    resume,
)

from arena.engine import Game, Rules


def deal(preset: str, hands: dict[int, str], talon: str | list[str] = "", *,
         dealer: int = 0, scores: list[int] | None = None, barrel: tuple[int, ...] = (),
         **options: Any) -> Game:
    rules = Rules.preset(preset, **options)
    game = Game(rules, seed="v", dealer=dealer)
    if scores is not None or barrel:
        resume(game, scores, barrel=barrel)
    game.deal(deck_for(rules, hands, talon, dealer=dealer))
    return game


def tricks(text: str) -> list[str]:
    """``"AC 9C; TC JC"`` -> plays in order (``m:KH`` declares the marriage)."""
    out = []
    for c in text.replace(";", " ").split():
        out.append(f"marry {c[2:]}" if c.startswith("m:") else f"play {c}")
    return out


# --------------------------------------------------------------------------- two players
#
# D5 (two-player, 10 cards, dealer 0: seat 1 is forehand and holds the forced 100).
# Seat 1 takes talon 2 (QH KH), discards QC KC (7 points, counted for the declarer) and
# leads every trick: 106 card points + 7 discarded + hearts 100.  The spare talon QS KS
# (7) is set aside.
D5 = {1: "AC TC AS TS AH TH AD TD KC QC", 0: "9C JC 9S JS 9H JH 9D JD QD KD"}
D5_TALONS = ["QS KS", "QH KH"]
D5_PLAY = tricks("AC 9C; TC JC; m:KH 9H; AH JH; TH 9S; QH JS; AS 9D; TS JD; AD QD; TD KD")


def test_003_two_players_choose_a_talon_and_discard_two() -> None:
    game = deal("two-player", D5, D5_TALONS)
    assert game.observation(0)["auction"] == [[1, "bid 100"]]
    # Seat 0 holds KD QD (80): up to 200; two-player bids go up to 300 at most.
    assert legal(game) == ["pass", *[f"bid {v}" for v in range(105, 205, 5)]]
    apply_all(game, ["pass"])
    assert game.phase_name == "talon-choice" and game.to_act == 1
    assert legal(game) == ["talon 1", "talon 2"]
    assert game.observation(0)["talon"] == [] and game.observation(1)["talon"] == []
    apply_all(game, ["talon 2"])
    # 003 l.91: the chosen talon is shown to the opponent.
    assert game.observation(0)["talon"] == ["QH", "KH"]
    assert game.observation(1)["talon"] == ["QH", "KH"]
    hand = game.observation(1)["hand"]
    assert len(hand) == 12
    assert legal(game) == ["concede", *[f"discard {c}" for c in hand]]
    apply_all(game, ["discard QC"])
    assert "concede" not in legal(game)
    assert_illegal(game, "discard QC", "seat 1 does not hold QC")
    apply_all(game, ["discard KC"])
    assert game.observation(1)["discarded"] == ["QC", "KC"]
    assert game.observation(0)["discarded"] == []
    assert game.phase_name == "contract"
    assert legal(game)[-2:] == ["contract 220", "concede"]
    apply_all(game, ["contract 100", *D5_PLAY])
    assert game.scores == [0, 100]
    assert game.observation(0)["points_taken"] == [0, 113]
    assert deal_result(game)["points"] == [0, 213]
    assert game.observation(0)["bolts"] == [1, 0]


def test_003_two_players_spare_talon_to_the_last_trick() -> None:
    # 003 l.284: the second talon goes to whoever takes the last trick.
    game = deal("two-player", D5, D5_TALONS, spare_talon="last-trick")
    apply_all(game, ["pass", "talon 2", "discard QC", "discard KC", "contract 100", *D5_PLAY])
    assert game.observation(0)["points_taken"] == [0, 120]
    assert game.scores == [0, 100]


def test_003_two_players_concede_gives_the_opponent_60() -> None:
    # 003 l.118: the declarer may give up: a penalty, and the opponent scores 60.
    game = deal("two-player", D5, D5_TALONS)
    apply_all(game, ["pass", "talon 1", "concede"])
    assert game.scores == [60, -100]


def test_two_players_bid_max_300() -> None:
    game = deal("two-player", {1: "KC QC KS QS KH QH KD QD AC AS"}, ["9C JC", "9S JS"])
    # 120 + 240 of marriages is capped at 300.
    apply_all(game, ["pass", "talon 1", "discard 9C", "discard JC"])
    assert legal(game)[-2:] == ["contract 300", "concede"]


def test_003_two_players_take_a_talon_and_give_one_card() -> None:
    # 003 l.116: the declarer takes a talon, gives one card to the opponent, then bids.
    game = deal("two-player", D5, D5_TALONS, exchange="give")
    apply_all(game, ["pass", "talon 2"])
    hand = game.observation(1)["hand"]
    assert legal(game) == ["concede", *[f"give {c} 0" for c in hand]]
    apply_all(game, ["give KC 0"])
    assert game.phase_name == "contract"
    assert game.observation(0)["hand_sizes"] == [11, 11]


# A declarer who takes no trick but scores its discards (QH TD: 13 points); seat 0 takes
# every trick: 120 - 13 - the spare talon KD QD (7) = 100.
WEAK = {1: "9C JC 9S JS 9H JH 9D JD QC QS", 0: "AC TC KC AS TS KS AH TH KH AD"}


@pytest.mark.parametrize(("bolt_on", "declarer"), [("no-trick", -220), ("no-points", -100)])
def test_bolt_on_no_trick_or_no_point(bolt_on: str, declarer: int) -> None:
    game = deal("two-player", WEAK, ["QH TD", "KD QD"], bolt_on=bolt_on, bolt_every=1)
    apply_all(game, ["pass", "talon 1", "discard TD", "discard QH", "contract 100"])
    play_first(game)
    assert game.observation(0)["tricks_taken"] == [10, 0]
    assert game.observation(0)["points_taken"] == [100, 13]
    assert game.scores == [100, declarer]


# D6b (two-player-9): seat 1 takes talon 2 (QH KH KD), gives KD to seat 0 and KC to the
# bank, which also holds the spare talon QC QS KS (14 points in all).  Seat 0 wins the
# last trick (TD over 9D) and with it the bank: 10 + 14 = 24 -> 25.  Seat 1 takes 96 and
# declares hearts.
D6 = {1: "AC TC AS TS AH TH AD 9D KC", 0: "9C JC 9S JS 9H JH TD JD QD"}
D6_TALONS = ["QC QS KS", "QH KH KD"]
D6_PLAY = tricks("AC 9C; TC JC; m:KH 9H; AH JH; TH 9S; QH JS; AS JD; TS QD; AD KD; 9D TD")


def test_003_nine_cards_bank_goes_to_the_last_trick() -> None:
    game = deal("two-player-9", D6, D6_TALONS)
    apply_all(game, ["pass", "talon 2"])
    hand = game.observation(1)["hand"]
    assert len(hand) == 12
    assert legal(game) == ["concede", *[f"bank {c}" for c in hand],
                           *[f"give {c} 0" for c in hand]]
    apply_all(game, ["give KD 0"])
    assert legal(game) == [f"bank {c}" for c in hand if c != "KD"]
    apply_all(game, ["bank KC", "contract 100", *D6_PLAY])
    assert game.observation(0)["points_taken"] == [24, 96]
    assert game.scores == [25, 100]


def test_nine_cards_bank_with_the_declarer() -> None:
    # Same cards, but seat 1 gives 9D away, keeps KD and wins every trick (seat 0 drops
    # TD under AD): 106 + the bank (14) = 120.
    game = deal("two-player-9", D6, D6_TALONS)
    apply_all(game, ["pass", "talon 2", "give 9D 0", "bank KC", "contract 100",
                     *tricks("AC 9C; TC JC; m:KH 9H; AH JH; TH 9S; QH JS; AS JD; TS QD; "
                             "AD TD; KD 9D")])
    assert game.observation(0)["points_taken"] == [0, 120]


# --------------------------------------------------------------------------- four players


def c4(**options: Any) -> Game:
    rules = Rules.preset("classic-4", **options)
    game = Game(rules, seed="c4")
    game.deal(d1_deck(rules, 0, 1))
    return game


C4_PLAY = ["pass", "pass", "give 9D 2", "give JD 3", "contract 100", *D1_TRICKS]


def test_002_four_players_dealer_sits_out() -> None:
    game = c4()
    obs = game.observation(0)
    assert obs["active"] == [1, 2, 3] and obs["hand"] == [] and obs["hand_sizes"] == [0, 7, 7, 7]
    assert obs["auction"] == [[1, "bid 100"]] and game.to_act == 2
    apply_all(game, C4_PLAY)
    assert game.scores == [0, 100, 0, 15]
    assert game.observation(0)["dealer"] == 1
    # Next deal: dealer 1 sits out, seat 2 holds the forced 100.
    game.deal()
    obs = game.observation(1)
    assert obs["active"] == [2, 3, 0] and obs["hand"] == []
    assert obs["auction"] == [[2, "bid 100"]]


def test_003_sitting_dealer_scores_the_talon() -> None:
    # 003 l.286: QD JD 9D = 5 points.
    game = c4(sitter_scores_talon=True)
    apply_all(game, C4_PLAY)
    assert game.scores == [5, 100, 0, 15]


def test_003_sitting_dealer_scores_a_marriage_in_the_talon() -> None:
    # Talon QD KD 9D: 7 points + the diamond marriage (80) = 87 -> 85.  Seat 3 holds JD
    # instead of KD, and the declarer gives KD back to it: the play is D1's.
    rules = Rules.preset("classic-4", sitter_scores_talon=True)
    game = Game(rules, seed="c4")
    game.deal(deck_for(rules, {1: D1_DECL, 2: D1_LEFT, 3: "9C 9S JH TH AD TD JD"},
                       "QD KD 9D"))
    apply_all(game, ["pass", "pass", "give 9D 2", "give KD 3", "contract 100", *D1_TRICKS])
    assert game.scores == [85, 100, 0, 15]


# --------------------------------------------------------------------------- Estonian
#
# E (estonian, dealer 0): seat 2 holds the four nines (000 l.7: 100 points at once).
#   seat 1  AC TC AS TS AH KH QH   + talon KD QD JD; gives JD to 2 and KD to 0
#   seat 2  9C 9S 9H 9D KC QC JC
#   seat 0  JS QS KS JH TH AD TD
# Tricks: AC JC JS 15 | KH 9H JH 6 (hearts 60) | AH 9S TH 21 | QH 9D QS 6 | TC KC KS 18 |
# AS 9C KD 15 | TS JD TD 22 -> seat 1 103 | QD QC AD -> seat 0 17.
E_HANDS = {1: "AC TC AS TS AH KH QH", 2: "9C 9S 9H 9D KC QC JC", 0: "JS QS KS JH TH AD TD"}
E_TALON = "KD QD JD"
E_GIVES = ["give JD 2", "give KD 0"]
E_PLAY = tricks("AC JC JS; m:KH 9H JH; AH 9S TH; QH 9D QS; TC KC KS; AS 9C KD; TS JD TD; "
                "QD QC AD")


def est(**kw: Any) -> Game:
    return deal("estonian", E_HANDS, E_TALON, **kw)


def test_000_estonian_deal_scored_by_hand() -> None:
    game = est()
    assert game.phase_name == "blind" and game.to_act == 1
    assert legal(game) == ["look", *[f"blind {v}" for v in range(40, 125, 5)]]
    apply_all(game, ["look"])
    # 000 l.15: no forced bid; forehand opens at 40 or more.  KH QH: a marriage lets
    # seat 1 bid over 120, and 000/001 set no other limit than every point in the game
    # (120 + 100 + 80 + 60 + 40 = 400); the cap of 120 plus the marriages held is 003's.
    assert game.observation(0)["auction"] == []
    assert legal(game) == ["pass", *[f"bid {v}" for v in range(40, 405, 5)]]
    apply_all(game, ["bid 100", "pass", "pass"])
    assert game.phase_name == "sale-offer" and legal(game) == ["sell", "keep"]
    # The talon is not turned up: only the declarer sees it.
    assert game.observation(1)["talon"] == ["JD", "QD", "KD"]
    assert game.observation(2)["talon"] == [] and game.observation(0)["talon"] == []
    apply_all(game, ["keep", *E_GIVES])
    # No raise and no concession in 000/001: the declarer leads at once.
    assert game.phase_name == "play" and game.to_act == 1
    apply_all(game, E_PLAY)
    # No rounding; seat 2: no trick but four nines (+100); no bolts.
    assert game.scores == [17, 100, 100]
    assert game.observation(0)["bolts"] == [0, 0, 0]


def test_four_nines_points_value() -> None:
    game = est(four_nines_points=200)
    apply_all(game, ["look", "bid 100", "pass", "pass", "keep", *E_GIVES, *E_PLAY])
    assert game.scores == [17, 100, 200]


def test_000_blind_bid_counts_double() -> None:
    game = est()
    apply_all(game, ["blind 100", "pass", "pass", "keep", *E_GIVES, *E_PLAY])
    assert game.scores == [17, 200, 100]
    assert deal_result(game)["blind"] is True


def test_000_bid_above_120_shows_the_marriage() -> None:
    game = est()
    apply_all(game, ["look", "bid 40"])
    assert legal(game)[-1] == "bid 400"  # seat 2 holds clubs: over 120 with no other cap
    apply_all(game, ["bid 125"])
    assert game.observation(0)["shown_marriages"] == [[2, "C"]]
    game = est(show_marriage=False)
    apply_all(game, ["look", "bid 40", "bid 125"])
    assert game.observation(0)["shown_marriages"] == []


def test_000_everybody_passes_redeal() -> None:
    game = est()
    apply_all(game, ["look", "pass", "pass", "pass"])
    assert game.is_chance and game.records[-1].result == {"redeal": "everybody passed"}


def test_000_sale_another_player_buys_5_more() -> None:
    game = est()
    apply_all(game, ["look", "bid 100", "pass", "pass", "sell"])
    assert game.phase_name == "sale" and game.to_act == 2
    assert legal(game)[:3] == ["pass", "buy 105", "buy 110"]
    apply_all(game, ["buy 105"])
    assert game.to_act == 0 and legal(game)[:2] == ["pass", "buy 110"]
    apply_all(game, ["pass"])
    obs = game.observation(2)
    assert (obs["declarer"], obs["contract"], obs["phase"]) == (2, 105, "exchange")
    assert obs["talon"] == ["JD", "QD", "KD"] and obs["hand_sizes"] == [7, 7, 10]
    assert game.observation(0)["talon"] == []
    assert game.to_act == 2
    assert {a.split()[2] for a in legal(game)} == {"0", "1"}


def test_000_sale_nobody_buys_the_declarer_plays() -> None:
    game = est()
    apply_all(game, ["look", "bid 100", "pass", "pass", "sell", "pass", "pass"])
    obs = game.observation(1)
    assert (obs["declarer"], obs["contract"], obs["phase"]) == (1, 100, "exchange")


def test_sale_offers_do_not_reveal_the_hidden_talon() -> None:
    game = est()
    apply_all(game, ["look", "bid 100", "pass", "pass", "sell", "buy 105"])
    assert game.to_act == 0 and game.observation(0)["talon"] == []
    # Seat 0's own hand holds spades (80): over 120 whatever the talon holds, up to 400.
    assert legal(game)[-1] == "buy 400"


# E2: seat 1 wins six tricks and keeps KH QH for the last two.
E2_HANDS = {1: "AC TC AS TS AH KH QH", 2: "9C JC QC KC 9S JS QS", 0: "KS 9H JH TH 9D JD QD"}
E2_START = ["look", "bid 100", "pass", "pass", "keep", "give KD 2", "give TD 0"]
E2_SIX = tricks("AC 9C 9D; TC JC JD; AS 9S KS; TS JS QD; AH QC 9H; AD KD TD")


def test_000_marriage_needs_a_trick_and_three_cards() -> None:
    game = deal("estonian", E2_HANDS, "AD TD KD")
    apply_all(game, E2_START)
    assert not [a for a in legal(game) if a.startswith("marry")]
    apply_all(game, E2_SIX[:15])
    assert sorted(game.observation(1)["hand"]) == ["AD", "KH", "QH"]
    assert legal(game)[-2:] == ["marry KH", "marry QH"]  # three cards: still allowed
    apply_all(game, E2_SIX[15:])
    assert game.to_act == 1 and sorted(game.observation(1)["hand"]) == ["KH", "QH"]
    assert legal(game) == ["play QH", "play KH"]
    assert_illegal(game, "marry KH", "a marriage needs at least 3 cards in hand")


def test_001_marriage_without_a_trick() -> None:
    game = deal("estonian-800", E2_HANDS, "AD TD KD")
    apply_all(game, E2_START[1:])  # no blind bid: no look
    assert legal(game)[-2:] == ["marry KH", "marry QH"]


def test_000_crawl_the_first_trick_face_down() -> None:
    game = est()
    apply_all(game, ["look", "bid 100", "pass", "pass", "keep", *E_GIVES])
    hand = game.observation(1)["hand"]
    assert [a for a in legal(game) if a.startswith("crawl")] == [f"crawl {c}" for c in hand]
    apply_all(game, ["crawl AC"])
    assert game.observation(1)["trick"] == [[1, "AC"]]
    assert game.observation(2)["trick"] == [[1, "XX"]]
    assert game.observation(0)["trick"] == [[1, "XX"]]
    assert game.events[-1] == {"type": "action", "seat": 1, "action": "crawl ??"}
    # Face down, the others answer with any card.
    assert len(legal(game)) == 8
    apply_all(game, ["play 9S"])
    assert game.observation(2)["trick"] == [[1, "XX"], [2, "9S"]]
    assert game.observation(0)["trick"] == [[1, "XX"], [2, "XX"]]
    apply_all(game, ["play KD"])
    # Turned over: AC led, no club followed: seat 1 takes 15.
    assert game.events[-1] == {"type": "trick", "winner": 1, "points": 15,
                               "cards": [[1, "AC"], [2, "9S"], [0, "KD"]]}
    assert not [a for a in legal(game) if a.startswith("crawl")]


def test_crawled_answers_stay_hidden_in_the_public_log() -> None:
    game = est()
    apply_all(game, ["look", "bid 100", "pass", "pass", "keep", *E_GIVES, "crawl AC",
                     "play 9S"])
    assert {"type": "action", "seat": 2, "action": "play 9S"} not in game.events


def test_crawl_is_optional_and_off_elsewhere() -> None:
    game = est(blind_first_trick=False)
    apply_all(game, ["look", "bid 100", "pass", "pass", "keep", *E_GIVES])
    assert legal(game) == plays_only(game)
    assert_illegal(game, "crawl AC", "only the declarer may crawl, on the first trick")


def test_000_barrel_only_contracts_score() -> None:
    # 000 l.42: from 880 a player scores only contracts, not tricks.
    game = est(scores=[900, 0, 0], barrel=(0,))
    apply_all(game, ["look", "bid 100", "pass", "pass", "keep", *E_GIVES, *E_PLAY])
    assert game.scores == [900, 100, 100]
    assert game.observation(0)["barrel"] == [True, False, False]


def test_000_barrel_player_wins_with_a_contract() -> None:
    game = est(scores=[0, 900, 0], barrel=(1,))
    apply_all(game, ["look", "bid 100", "pass", "pass", "keep", *E_GIVES, *E_PLAY])
    assert game.is_over and game.scores == [17, 1000, 100]
    assert game.ranking() == [3, 1, 2]


def test_000_barrel_player_failing_drops_off() -> None:
    game = est(scores=[0, 900, 0], barrel=(1,))
    apply_all(game, ["look", "bid 170", "pass", "pass", "keep", *E_GIVES, *E_PLAY])
    assert game.scores == [17, 730, 100]
    assert game.observation(0)["barrel"] == [False, False, False]


def test_001_barrel_at_800() -> None:
    game = deal("estonian-800", E_HANDS, E_TALON, scores=[790, 0, 0])
    apply_all(game, ["bid 100", "pass", "pass", "keep", *E_GIVES, *E_PLAY])
    assert game.scores == [807, 100, 100]
    assert game.observation(0)["barrel"] == [True, False, False]


# --------------------------------------------------------------------------- German
#
# G (german-1001, dealer 0): seat 1 (forehand) holds every ace and ten and leads them all:
# it takes every trick (120); the others take none: Jungfrau, +100 each.
G_HANDS = {1: "AC TC AS TS AH TH AD TD", 2: "KC QC JC 9C KS QS JS 9S",
           0: "KH QH JH 9H KD QD JD 9D"}


def test_004_no_auction_forehand_leads_everyone_scores() -> None:
    game = deal("german-1001", G_HANDS)
    assert game.phase_name == "play" and game.to_act == 1
    obs = game.observation(0)
    assert obs["declarer"] is None and obs["contract"] is None and obs["auction"] == []
    assert obs["hand_sizes"] == [8, 8, 8]
    for lead in cards("AC TC AS TS AH TH AD TD"):
        apply_all(game, [f"play {lead}"])
        apply_all(game, [plays_only(game)[0]])
        apply_all(game, [plays_only(game)[0]])
    assert game.scores == [100, 120, 100]
    assert deal_result(game)["made"] is False
    assert game.events[-1]["declarer"] is None


def test_004_virgin_bonus_10_and_target_1001() -> None:
    game = deal("german-1001", G_HANDS, virgin_bonus=10, scores=[0, 900, 0])
    for lead in cards("AC TC AS TS AH TH AD TD"):
        apply_all(game, [f"play {lead}"])
        apply_all(game, [plays_only(game)[0]])
        apply_all(game, [plays_only(game)[0]])
    assert game.scores == [10, 1020, 10] and game.is_over


def test_004_german_1000_is_not_won_at_1000() -> None:
    game = deal("german-1001", G_HANDS, scores=[0, 880, 0])
    for lead in cards("AC TC AS TS AH TH AD TD"):
        apply_all(game, [f"play {lead}"])
        apply_all(game, [plays_only(game)[0]])
        apply_all(game, [plays_only(game)[0]])
    assert game.scores == [100, 1000, 100] and not game.is_over


def test_004_four_players_use_32_cards() -> None:
    rules = Rules.preset("german-1001", players=4)
    game = Game(rules, seed="g4")
    game.deal()
    obs = game.observation(0)
    assert obs["active"] == [1, 2, 3, 0] and obs["hand_sizes"] == [8, 8, 8, 8]
    every = sorted(c for s in range(4) for c in game.observation(s)["hand"])
    assert len(every) == 32 and "7C" in every and "8D" in every


def test_buying_a_blind_declarers_talon_is_not_blind() -> None:
    game = est()
    apply_all(game, ["blind 100", "pass", "pass", "sell", "buy 105", "pass"])
    assert game.observation(0)["declarer"] == 2
    assert game.observation(0)["blind"] is False
    apply_all(game, [legal(game)[0]])
    apply_all(game, [legal(game)[0]])
    play_first(game)
    res = deal_result(game)
    assert res["blind"] is False
    # Seat 2 was dealt the four nines: +100 on top of its contract.
    assert res["deltas"][2] == (105 if res["made"] else -105) + 100


def test_redeals_count_toward_max_deals() -> None:
    # Passing players cannot stall a bounded game: two redeals end a 2-deal game.
    game = est(max_deals=2)
    apply_all(game, ["look", "pass", "pass", "pass"])
    assert game.is_chance
    game.deal(deck_for(game.rules, E_HANDS, E_TALON))
    apply_all(game, ["look", "pass", "pass", "pass"])
    assert game.is_over and game.deals_played == 0
    assert game.ranking() == [1, 1, 1]
