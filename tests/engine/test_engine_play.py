"""The play of the cards: following suit, trumping, who leads, marriages and the optional
declarations (half, aces, nines), the fixed trump of 501, four nines."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import (
    D1_DECL,
    D1_LEFT,
    D1_RIGHT,
    D1_TALON,
    D1_TRICKS,
    D1_TRICKS_PLAIN,
    apply_all,
    assert_illegal,
    cards,
    d1_deck,
    deck_for,
    legal,
    plays_only,
    resume,
)

from arena.engine import Game, Rules


def deal(preset: str, hands: dict[int, str], talon: str = "", *, dealer: int = 0,
         scores: list[int] | None = None, **options: Any) -> Game:
    rules = Rules.preset(preset, **options)
    game = Game(rules, seed="p", dealer=dealer)
    if scores is not None:
        resume(game, scores)
    game.deal(deck_for(rules, hands, talon, dealer=dealer))
    return game


def d1(**options: Any) -> Game:
    return deal("classic", {1: D1_DECL, 2: D1_LEFT, 0: D1_RIGHT}, D1_TALON, **options)


D1_START = ["pass", "pass", "give 9D 2", "give JD 0", "contract 100"]

# D3: seat 1 declares hearts on the first lead (marriage_needs_trick off); seat 2 holds
# only clubs and spades (and KD), seat 0 holds hearts to trump with.
D3 = {1: "KH QH AC TC AS TS AD", 2: "9C JC QC KC 9S JS QS", 0: "JH TH 9H KS 9D JD QD"}
D3_TALON = "AH KD TD"
D3_START = ["pass", "pass", "give KD 2", "give TD 0", "contract 100"]


def d3(**options: Any) -> Game:
    game = deal("classic", D3, D3_TALON, marriage_needs_trick=False, **options)
    apply_all(game, D3_START)
    return game


# --------------------------------------------------------------------------- follow / trump


def test_must_follow_the_led_suit_and_nobody_must_beat() -> None:
    game = d3()
    apply_all(game, ["marry KH", "play 9C", "play 9H", "play AC"])
    assert game.to_act == 2
    # Any club, low ones included: no obligation to beat the ace.
    assert legal(game) == ["play JC", "play QC", "play KC"]
    assert_illegal(game, "play KD", "play KD: must follow the led suit (clubs)")
    assert_illegal(game, "play AH", "seat 2 does not hold AH")


def test_003_void_in_the_led_suit_must_trump() -> None:
    game = d3()
    apply_all(game, ["marry KH", "play 9C", "play 9H", "play AC", "play JC"])
    assert game.to_act == 0 and game.observation(0)["trump"] == "H"
    assert legal(game) == ["play JH", "play TH"]
    assert_illegal(game, "play KS", "play KS: void in clubs, must play a trump (hearts)")


def test_004_no_obligation_to_trump() -> None:
    game = d3(must_trump=False)
    apply_all(game, ["marry KH", "play 9C", "play 9H", "play AC", "play JC"])
    assert legal(game) == ["play KS", "play JH", "play TH", "play 9D", "play JD", "play QD",
                           "play TD"]
    apply_all(game, ["play KS"])
    assert game.observation(0)["tricks_taken"] == [0, 2, 0]  # AC holds: KS is no trump


def test_void_without_trumps_plays_anything() -> None:
    game = d3()
    apply_all(game, ["marry KH"])
    assert game.to_act == 2
    assert legal(game) == [f"play {c}" for c in cards("9C JC QC KC 9S JS QS KD")]


def test_trump_beats_the_led_suit() -> None:
    game = d3()
    apply_all(game, ["marry KH", "play 9C", "play 9H", "play AC", "play JC", "play TH"])
    assert game.events[-1] == {"type": "trick", "winner": 0, "points": 23,
                               "cards": [[1, "AC"], [2, "JC"], [0, "TH"]]}
    assert game.to_act == 0


def test_ten_ranks_between_king_and_ace() -> None:
    game = d3()
    apply_all(game, ["marry KH", "play 9C", "play 9H", "play TS", "play QS", "play KS"])
    assert game.events[-1] == {"type": "trick", "winner": 1, "points": 17,
                               "cards": [[1, "TS"], [2, "QS"], [0, "KS"]]}


# --------------------------------------------------------------------------- who leads


@pytest.mark.parametrize(
    ("first_lead", "leader"),
    [("declarer", 2), ("forehand", 1), ("dealer", 0)],
)
def test_first_lead(first_lead: str, leader: int) -> None:
    # 002: the declarer leads; 003: the dealer (l.30) or left of the dealer (l.265).
    game = d1(first_lead=first_lead)
    apply_all(game, ["bid 105", "pass", "pass", "give 9D 0", "give JD 1", "contract 105"])
    assert game.observation(0)["declarer"] == 2
    assert game.phase_name == "play" and game.to_act == leader
    assert game.observation(0)["leader"] == leader


def test_the_trick_winner_leads_next() -> None:
    game = d1()
    apply_all(game, [*D1_START, *D1_TRICKS[:24 - 3]])
    assert game.to_act == 1
    apply_all(game, D1_TRICKS[21:22])
    assert game.to_act == 2


# --------------------------------------------------------------------------- marriages


def test_classic_no_marriage_on_the_first_lead() -> None:
    game = d1()
    apply_all(game, D1_START)
    assert legal(game) == plays_only(game)
    assert len(legal(game)) == 8
    assert_illegal(game, "marry KH",
                   "marry KH: no marriage may be declared now (a marriage needs a trick "
                   "taken first)")
    apply_all(game, D1_TRICKS[:3])
    assert legal(game)[-2:] == ["marry KH", "marry QH"]


def test_003_marriage_may_be_declared_on_the_first_lead_by_option() -> None:
    game = d1(marriage_needs_trick=False)
    apply_all(game, D1_START)
    assert legal(game)[-2:] == ["marry KH", "marry QH"]


def test_marriage_needs_both_cards_and_the_lead() -> None:
    game = d1()
    apply_all(game, [*D1_START, *D1_TRICKS[:6]])  # KH is gone
    assert not [a for a in legal(game) if a.startswith("marry")]
    assert_illegal(game, "marry QH", "no marriage may be declared now")
    assert_illegal(game, "marry KH", "seat 1 does not hold KH")


def test_marriage_when_following_says_why() -> None:
    game = d3()
    apply_all(game, ["marry KH", "play 9C", "play 9H", "play AC"])
    assert_illegal(game, "marry QC", "only when leading")


def test_declaring_scores_and_makes_trump() -> None:
    game = d1()
    apply_all(game, [*D1_START, *D1_TRICKS[:4]])
    obs = game.observation(0)
    assert obs["trump"] == "H" and obs["marriages"] == [[1, "H", 100]]
    assert {"type": "marriage", "seat": 1, "suit": "H", "points": 100,
            "kind": "marriage"} in game.events


# D9: seat 2 wins a trick and declares spades; later marriages change the trump.
D9 = {1: "AC TC AS KH QH 9D JD", 2: "KC QC KS QS AD TD 9S", 0: "9C JC TS JS AH TH 9H"}
D9_TALON = "JH KD QD"
D9_PLAY = ["pass", "pass", "give 9D 2", "give JD 0", "contract 100",
           "play AS", "play 9S", "play JS",      # seat 1 wins 13
           "marry KH", "play 9D", "play 9H",     # hearts trump; seat 1 wins
           "play KD", "play AD", "play JD"]      # seat 2 wins with AD


@pytest.mark.parametrize(("declarer_only", "points"), [(False, 40), (True, 0)])
def test_opponent_marriage_changes_trump_and_scores_unless_declarer_only(
    declarer_only: bool, points: int
) -> None:
    game = deal("classic", D9, D9_TALON, marriage_declarer_only=declarer_only)
    apply_all(game, D9_PLAY)
    assert game.to_act == 2
    assert [a for a in legal(game) if not a.startswith("play")] == [
        "marry KC", "marry QC", "marry KS", "marry QS"
    ]
    apply_all(game, ["marry KS"])
    obs = game.observation(1)
    assert obs["trump"] == "S"
    assert obs["marriages"] == [[1, "H", 100], [2, "S", points]]


@pytest.mark.parametrize(
    ("preset", "card", "points"),
    [
        ("classic", "KH", 100), ("classic", "KD", 80), ("classic", "KC", 60),
        ("classic", "KS", 40),
        ("estonian", "KC", 100), ("estonian", "KS", 80), ("estonian", "KH", 60),
        ("estonian", "KD", 40),
        ("german-1001", "KC", 100), ("german-1001", "KS", 80), ("german-1001", "KH", 60),
        ("german-1001", "KD", 40),
        ("classic-501", "KC", 20), ("classic-501", "KD", 40), ("classic-501", "KS", 60),
        ("classic-501", "KH", 80),
    ],
)
def test_marriage_values_per_preset(preset: str, card: str, points: int) -> None:
    """002/003: hearts 100, diamonds 80, clubs 60, spades 40; 000/001/004: clubs 100,
    spades 80, hearts 60, diamonds 40; 003 (501): clubs 20, diamonds 40, spades 60,
    hearts 80."""
    suit = card[1]
    opts: dict[str, Any] = {"marriage_needs_trick": False}
    if preset == "estonian":
        opts.update(blind_bid=False, blind_first_trick=False)
    rules = Rules.preset(preset, **opts)
    game = Game(rules, seed="v")
    game.deal(deck_for(rules, {1: f"K{suit} Q{suit}"}))
    while game.phase_name != "play":
        acts = legal(game)
        if game.phase_name == "auction":
            bid_yet = any(s == 1 for s, _ in game.observation(0)["auction"])
            choice = acts[1] if game.to_act == 1 and not bid_yet else "pass"
        else:
            choice = next(a for a in acts if a.startswith(("give", "keep", "trump", "contract")))
        apply_all(game, [choice])
    assert game.to_act == 1
    apply_all(game, [f"marry {card}"])
    assert game.observation(0)["marriages"] == [[1, suit, points]]


def test_003_only_the_declarer_of_trumps_may_not_lead_them() -> None:
    # 003 l.70: only the player who did not declare the trumps may lead them.
    game = d1(trump_lead_restricted=True)
    apply_all(game, [*D1_START, *D1_TRICKS[:6]])
    assert plays_only(game) == ["play TC", "play TS", "play AS", "play QD"]


def test_trump_lead_restriction_says_why() -> None:
    game = d1(trump_lead_restricted=True)
    apply_all(game, [*D1_START, *D1_TRICKS[:6]])
    assert_illegal(game, "play AH", "trump")


def test_trump_lead_restriction_lifts_when_only_trumps_are_left() -> None:
    # D3: seat 1 declares hearts; after leading every other card it leads its hearts.
    game = d3(trump_lead_restricted=True)
    apply_all(game, ["marry KH", "play 9C", "play 9H"])
    assert "play QH" not in legal(game) and "play AH" not in legal(game)


# --------------------------------------------------------------------------- 004: ascending

# D8 (German, dealer 2: seat 0 leads): seat 0 melds hearts (60) first.
D8 = {0: "KH QH KD QD KC QC 9S JS", 1: "AS TS KS QS 9C JC 9D JD",
      2: "AH TH JH 9H AC TC AD TD"}


def test_004_each_meld_must_be_worth_more_than_the_last() -> None:
    game = deal("german-1001", D8, dealer=2)
    assert game.phase_name == "play" and game.to_act == 0
    # First lead: any marriage (no trick needed in 004).
    assert [a for a in legal(game) if a.startswith("marry")] == [
        "marry KC", "marry QC", "marry KH", "marry QH", "marry KD", "marry QD"
    ]
    apply_all(game, ["marry QH"])
    assert game.to_act == 1
    # 004: no compulsion to trump: seat 1 (no hearts) plays anything.
    assert len(legal(game)) == 8
    apply_all(game, ["play 9C", "play 9H"])
    assert game.to_act == 0
    assert [a for a in legal(game) if a.startswith("marry")] == ["marry KC", "marry QC"]
    assert_illegal(game, "marry KD", "each marriage must be worth more than 60")
    apply_all(game, ["marry KC"])
    assert game.observation(2)["marriages"] == [[0, "H", 60], [0, "C", 100]]


# --------------------------------------------------------------------------- optional melds

D10 = {1: "QH JH AC TC AS TS AD", 2: "9C JC QC KC 9S JS QS", 0: "KH TH 9H KS 9D JD QD"}


def test_003_half_marriage_queen_and_jack_at_half_value() -> None:
    game = deal("classic", D10, "AH KD TD", half_marriage=True, marriage_needs_trick=False)
    apply_all(game, D3_START)
    assert legal(game)[-2:] == ["half QH", "half JH"]
    apply_all(game, ["half JH"])
    obs = game.observation(0)
    assert obs["trump"] == "H" and obs["marriages"] == [[1, "H", 50]]
    assert game.events[-1]["kind"] == "half"


def test_half_marriage_off() -> None:
    game = deal("classic", D10, "AH KD TD", marriage_needs_trick=False)
    apply_all(game, D3_START)
    assert legal(game) == plays_only(game)
    assert_illegal(game, "half QH", "not legal now")


D11 = {1: "AC AS AH AD KC QC 9C", 2: "TC JC 9S JS QS KS TS", 0: "9H JH QH KH TH 9D JD"}
D11_START = ["pass", "pass", "give QD 2", "give KD 0", "contract 100"]


def test_003_four_aces_score_200_and_are_led_one_after_another() -> None:
    game = deal("classic", D11, "QD KD TD", ace_marriage=200, marriage_needs_trick=False)
    apply_all(game, D11_START)
    assert legal(game)[-6:] == ["marry KC", "marry QC", "aces AC", "aces AS", "aces AH",
                                "aces AD"]
    apply_all(game, ["aces AS", "play 9S", "play 9D"])
    assert game.observation(0)["marriages"] == [[1, "S", 200]]
    assert game.to_act == 1
    # The aces come next, nothing else (and no marriage in between).
    assert legal(game) == ["play AC", "play AH", "play AD"]
    assert_illegal(game, "play KC", "after declaring the aces, the aces are led one after "
                   "another")
    apply_all(game, ["play AC", "play JC", "play 9H", "play AD", "play QD", "play JD"])
    assert game.to_act == 1 and legal(game) == ["play AH"]
    # Spades are trump (the first ace): seat 2, void in hearts, must trump and wins.
    apply_all(game, ["play AH"])
    assert legal(game) == ["play JS", "play QS", "play KS", "play TS"]
    apply_all(game, ["play KS", "play TH"])
    assert game.events[-1]["winner"] == 2


def test_003_four_aces_make_the_first_ace_suit_trump() -> None:
    game = deal("classic", D11, "QD KD TD", ace_marriage=200, marriage_needs_trick=False)
    apply_all(game, [*D11_START, "aces AS"])
    assert game.observation(0)["trump"] == "S"


D12 = {1: "9C 9S 9H 9D AC AS AH", 2: "JC QC KC TC JS QS KS", 0: "TS JH QH KH TH JD QD"}


@pytest.mark.parametrize("value", [360, 200])
def test_003_four_nines_declared_on_the_lead(value: int) -> None:
    game = deal("classic", D12, "KD TD AD", nines_marriage=value, marriage_needs_trick=False)
    apply_all(game, ["pass", "pass", "give KD 2", "give TD 0", "contract 100"])
    assert legal(game)[-4:] == ["nines 9C", "nines 9S", "nines 9H", "nines 9D"]
    apply_all(game, ["nines 9D"])
    obs = game.observation(2)
    assert obs["marriages"] == [[1, "D", value]]
    assert obs["trump"] is None


# --------------------------------------------------------------------------- 501


def test_003_501_declarer_names_the_trump_after_the_talon() -> None:
    game = d1_501()
    apply_all(game, ["pass", "pass", "give 9D 2", "give JD 0"])
    assert legal(game)[0] == "contract 100" and legal(game)[-2:] == ["contract 200", "concede"]
    apply_all(game, ["contract 100"])
    assert game.phase_name == "trump" and game.to_act == 1
    assert legal(game) == ["trump C", "trump S", "trump H", "trump D"]
    apply_all(game, ["trump H"])
    assert game.observation(0)["trump"] == "H" and game.to_act == 1
    apply_all(game, D1_TRICKS_PLAIN)
    assert game.scores == [15, 100, 0]


def d1_501(**options: Any) -> Game:
    return deal("classic-501", {1: D1_DECL, 2: D1_LEFT, 0: D1_RIGHT}, D1_TALON, **options)


def test_003_501_forced_opening_and_target() -> None:
    # 003 l.99: 501 is played "по правилам традиционной тысячи" with the changes listed
    # (trump, marriages, target): the compulsory 100 stays.
    game = d1_501(scores=[0, 410, 0])
    assert game.observation(0)["auction"] == [[1, "bid 100"]]
    apply_all(game, ["pass", "pass", "give 9D 2", "give JD 0", "contract 100", "trump H",
                     *D1_TRICKS_PLAIN])
    assert game.scores == [15, 510, 0] and game.is_over


def test_003_501_marriage_scores_80_for_hearts() -> None:
    game = d1_501()
    apply_all(game, ["pass", "pass", "give 9D 2", "give JD 0", "contract 100", "trump S",
                     *D1_TRICKS[:4]])
    assert game.observation(0)["marriages"] == [[1, "H", 80]]


def test_003_501_trump_never_changes() -> None:
    game = d1_501()
    apply_all(game, ["pass", "pass", "give 9D 2", "give JD 0", "contract 100", "trump S",
                     *D1_TRICKS[:7]])
    # Seat 1 declared hearts and leads AH; spades stay trump, so seat 2 (void in hearts)
    # must trump with a spade.
    assert game.observation(0)["trump"] == "S"
    assert legal(game) == ["play JS", "play QS", "play KS"]


# --------------------------------------------------------------------------- four nines


def nines_game(mode: str, hands: dict[int, str], talon: str = "") -> Game:
    return deal("classic", hands, talon, four_nines=mode)


def test_003_four_nines_redeal_before_the_auction() -> None:
    game = nines_game("redeal-before-auction", {2: "9C 9S 9H 9D"})
    assert game.phase_name == "nines" and game.to_act == 2
    assert legal(game) == ["redeal", "pass"]
    assert_illegal(game, "bid 105", "not legal in phase nines")
    apply_all(game, ["redeal"])
    assert game.is_chance
    assert game.records[-1].result == {"redeal": "seat 2 holds four nines"}
    assert game.observation(0)["dealer"] == 0 and game.deals_played == 0


def test_four_nines_holder_may_play_on() -> None:
    game = nines_game("redeal-before-auction", {2: "9C 9S 9H 9D"})
    apply_all(game, ["pass"])
    assert game.phase_name == "auction" and game.to_act == 2
    assert game.observation(0)["auction"] == [[1, "bid 100"]]


def test_no_question_without_four_nines_or_when_off() -> None:
    game = nines_game("redeal-before-auction", {2: "9C 9S 9H"})
    assert game.phase_name == "auction"
    game = nines_game("none", {2: "9C 9S 9H 9D"})
    assert game.phase_name == "auction"


def test_003_four_nines_redeal_after_the_talon() -> None:
    game = nines_game("redeal-after-talon", {1: "9C 9S 9H"}, "9D QD KD")
    assert game.phase_name == "auction"
    apply_all(game, ["pass", "pass"])
    assert game.phase_name == "nines" and game.to_act == 1
    apply_all(game, ["pass"])
    assert game.phase_name == "exchange" and game.to_act == 1
    game = nines_game("redeal-after-talon", {1: "9C 9S 9H"}, "9D QD KD")
    apply_all(game, ["pass", "pass", "redeal"])
    assert game.records[-1].result == {"redeal": "seat 1 holds four nines"}


def test_002_four_nines_redeal_after_the_exchange() -> None:
    game = nines_game("redeal-after-exchange", {1: "AC AS", 2: "9C 9S 9H"}, "9D QD KD")
    apply_all(game, ["pass", "pass", "give 9D 2"])
    assert game.phase_name == "exchange"
    apply_all(game, ["give KD 0"])
    assert game.phase_name == "nines" and game.to_act == 2
    apply_all(game, ["pass"])
    assert game.phase_name == "contract" and game.to_act == 1
    game = nines_game("redeal-after-exchange", {1: "AC AS", 2: "9C 9S 9H"}, "9D QD KD")
    apply_all(game, ["pass", "pass", "give 9D 2", "give KD 0", "redeal"])
    assert game.is_chance and game.deals_played == 0


def test_d1_deck_helper_puts_the_talon_last() -> None:
    rules = Rules.preset("classic")
    deck = d1_deck(rules, 0, 1)
    assert deck[21:] == ["QD", "JD", "9D"]
