"""Where the engine follows a rule text line by line, and the rules it once left out.

Each table is worked out by hand from the texts in the shared rule sources (cited as
``003 l.35``: text 003, line 35); ``docs/rules.md`` gives the same citations.  Most cases
replay the reference deal D1 (see ``engine_support``): dealer seat 0, declarer seat 1
(forehand, so it holds the forced 100) takes 103 card points and declares hearts (100);
seat 0 (R) takes 17, written 15; seat 2 (L) takes no trick, so it gets a bolt.
"""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import (
    D1_DECL,
    D1_LEFT,
    D1_RIGHT,
    D1_TALON,
    D1_TRICKS,
    apply_all,
    assert_illegal,
    cards,
    d1_deck,
    d1_gives,
    deal_result,
    deck_for,
    legal,
    play_d1,
    resume,
)

from arena.engine import Game, Rules
from arena.engine.rules import earlier_defaults
from arena.match.fallback import fallback_action

AUCTION = ["pass", "pass"]  # seats 2 and 0 pass seat 1's forced 100
GIVES = ["give 9D 2", "give JD 0"]


def game_at(scores: list[int] | None = None, *, preset: str = "classic",
            sitting: tuple[int, ...] = (), tries: int | None = None,
            bolts: list[int] | None = None, dealer: int = 0, **options: Any) -> Game:
    """A game resumed at ``scores`` (before its next deal)."""
    game = Game(Rules.preset(preset, **options), seed="texts", dealer=dealer)
    return resume(game, scores, barrel=sitting, tries=tries, bolts=bolts)


def d1(**options: Any) -> Game:
    """D1 dealt, the auction not started."""
    game = game_at(**options)
    game.deal(d1_deck(game.rules, 0, 1))
    return game


def on_barrel(game: Game) -> list[bool]:
    return list(game.observation(0)["barrel"])


def play_out(game: Game) -> None:
    """Finish the deal the way the referee's fallback plays (never a redeal or concession)."""
    deal = game.deal_index
    while not (game.is_chance or game.is_over) and game.deal_index == deal:
        game.apply(fallback_action(legal(game)))


# --------------------------------------------------------------------------- 1. barrel jump
#
# 003 l.35: «Игрок, который наберет 1000 или более очков первым, становится победителем…
# Если игрок набирает очки в интервале от 880 до 1000… сел на бочку».  The barrel is the
# interval 880..999; 1000 or more wins, whoever scores it and from wherever.

JUMP = [
    # (before, barrel_jump, contract, after, over, on the barrel)
    ([990, 0, 0], "wins", 100, [1005, 100, 0], True, [False, False, False]),
    ([985, 0, 0], "wins", 100, [1000, 100, 0], True, [False, False, False]),
    ([870, 0, 0], "wins", 100, [880, 100, 0], False, [True, False, False]),  # 885: held
    ([0, 870, 0], "wins", 150, [15, 1020, 0], True, [False, False, False]),
    ([0, 870, 0], "wins", 100, [15, 880, 0], False, [False, True, False]),  # 970: held
    # The earlier reading: only a contract won jumps over the barrel.
    ([990, 0, 0], "contract", 100, [880, 100, 0], False, [True, False, False]),
    ([0, 870, 0], "contract", 150, [15, 1020, 0], True, [False, False, False]),
]


@pytest.mark.parametrize(("before", "jump", "contract", "after", "over", "barrel"), JUMP)
def test_003_l35_reaching_1000_from_below_the_barrel_wins(
    before: list[int], jump: str, contract: int, after: list[int], over: bool,
    barrel: list[bool],
) -> None:
    game = game_at(before, barrel_jump=jump)
    play_d1(game, 1, contract)
    assert (game.scores, game.is_over, on_barrel(game)) == (after, over, barrel)
    if over:
        assert game.ranking()[game.scores.index(max(game.scores))] == 1


# D7: a defender scores 220.  Seat 1 (forehand) plays the forced 100 with nines and jacks,
# takes JD QD KD and gives KD to seat 2 and QD to seat 0.  Seat 2 holds AC TC AS TS AH KH
# QH KD and takes every trick (seat 1 leads, then seat 2, then seat 0):
#   1  9C AC QC  14        5  TC KC JC  16 (81)
#   2  AH TH JH  23 (37)   6  AS KS 9S  15 (96)
#   3  KH AD 9H  15 (52)   7  TS QS JS  15 (111)
#      hearts declared     8  KD QD JD   9 (120)
#   4  QH TD 9D  13 (65)
# 120 card points + 100 for hearts = 220; seat 1 fails its 100, seat 0 takes nothing.
D7 = {1: "9C JC 9S JS 9H JH 9D", 2: "AC TC AS TS AH KH QH",
      0: "KC QC KS QS TH AD TD"}
D7_PLAY = ["pass", "pass", "give KD 2", "give QD 0", "contract 100",
           "play 9C", "play AC", "play QC", "play AH", "play TH", "play JH",
           "marry KH", "play AD", "play 9H", "play QH", "play TD", "play 9D",
           "play TC", "play KC", "play JC", "play AS", "play KS", "play 9S",
           "play TS", "play QS", "play JS", "play KD", "play QD", "play JD"]  # fmt: skip


@pytest.mark.parametrize(("jump", "after", "over"), [
    ("wins", [0, -100, 1090], True),  # 1090 is not in 880..999: a win
    ("contract", [0, -100, 880], False),  # the earlier reading: put on the barrel at 880
])
def test_003_l35_a_defender_at_870_scoring_220_wins(jump: str, after: list[int],
                                                     over: bool) -> None:
    game = game_at([0, 0, 870], barrel_jump=jump)
    game.deal(deck_for(game.rules, D7, "JD QD KD"))
    apply_all(game, D7_PLAY)
    assert game.observation(0)["points_taken"] == [0, 0, 120]
    assert deal_result(game)["points"] == [0, 0, 220]
    assert (game.scores, game.is_over) == (after, over)
    assert on_barrel(game) == [False, False, not over]
    if over:
        assert game.winners == [2] and game.ranking() == [2, 3, 1]


# --------------------------------------------------------------------------- 2. bolts on it
#
# 003 l.35: «Если игрок наберет 3 болта, то он штрафуется на -120 очков», with no exception
# for the barrel.  Seat 2 sits on the barrel with two bolts; D1 gives it the third: the
# total held at 880 loses 120 (760, below the barrel: off it, a descent).

BOLTS = [
    # (options, tries left, seat 2 after, still on the barrel)
    ({}, 3, 760, False),
    ({"barrel_bolt_penalty": False}, 3, 880, True),  # the earlier reading: held at 880
    ({}, 1, -120, False),  # the last try fails (to 0) and the penalty is written too
    ({"barrel_fall": "minus-120"}, 1, 640, False),  # 880 - 120, then - 120
    ({"barrel_falls_reset": 1}, 3, 0, False),  # 003 l.75: the descent counts as a fall
    ({"barrel_falls_reset": 1, "barrel_falls_reset_to": 5}, 3, 5, False),  # 003 l.81
]


@pytest.mark.parametrize(("options", "tries", "seat2", "sitting"), BOLTS)
def test_003_l35_a_bolt_penalty_on_the_barrel_is_written(
    options: dict[str, Any], tries: int, seat2: int, sitting: bool
) -> None:
    game = game_at([0, 0, 880], sitting=(2,), tries=tries, bolts=[0, 0, 2], **options)
    play_d1(game, 1)
    assert game.scores == [15, 100, seat2]
    assert on_barrel(game) == [False, False, sitting]
    assert game.observation(0)["bolts"] == [0, 0, 0]


def test_003_a_bolt_penalty_off_the_barrel_is_unchanged() -> None:
    game = game_at([0, 0, 500], bolts=[0, 0, 2])
    play_d1(game, 1)
    assert game.scores == [15, 100, 380]


# --------------------------------------------------------------------------- 3. blind bid
#
# 003 l.53: «Если кто-либо из других игроков сделал ставку больше, то игрок сдатчик может
# посмотреть в свои карты и игра продолжается как обычно, но очки уже не увеличиваются в 2
# раза».  Seat 1 (forehand, holding hearts: 120 + 100 = 220) bids blind 100, seat 2
# outbids it with 105, seat 0 passes; seat 1 looks and bids 110 on its cards, seat 2
# passes: seat 1 plays 110, made with 205, not doubled.


def test_003_l53_an_outbid_blind_bidder_looks_and_bids_as_usual() -> None:
    game = d1(blind_bid=True)
    apply_all(game, ["blind 100", "bid 105", "pass"])
    assert game.to_act == 1 and game.phase_name == "auction"
    assert sorted(game.observation(1)["hand"]) == sorted(cards(D1_DECL))
    assert game.observation(1)["blind"] is False
    assert legal(game) == ["pass", *[f"bid {v}" for v in range(110, 225, 5)]]
    assert_illegal(game, "blind 110", "only forehand may bid blind, before looking")
    apply_all(game, ["bid 110", "pass", *GIVES, "contract 110", *D1_TRICKS])
    assert game.scores == [15, 110, 0]
    assert deal_result(game)["blind"] is False


@pytest.mark.parametrize(("outbid", "auction", "scores", "blind"), [
    # 003: looks once outbid, a contract won then is not doubled
    ("look", ["blind 100", "bid 105", "pass", "bid 110", "pass"], [15, 110, 0], False),
    # 000's reading: goes on bidding blind (up to 120) and a won contract counts double
    ("blind", ["blind 100", "bid 105", "pass", "blind 110", "pass"], [15, 220, 0], True),
    # nobody outbids: doubled in both readings
    ("look", ["blind 100", "pass", "pass"], [15, 200, 0], True),
    ("blind", ["blind 100", "pass", "pass"], [15, 200, 0], True),
])
def test_blind_bid_outbid_by_reading(outbid: str, auction: list[str], scores: list[int],
                                     blind: bool) -> None:
    game = d1(blind_bid=True, blind_outbid=outbid)
    contract = auction[-2].split()[1] if auction[-2] != "pass" else "100"
    apply_all(game, [*auction, *GIVES, f"contract {contract}", *D1_TRICKS])
    assert (game.scores, deal_result(game)["blind"]) == (scores, blind)


def test_estonian_keeps_000s_blind_reading() -> None:
    assert Rules.preset("estonian").blind_outbid == "blind"
    assert Rules.preset("classic").blind_outbid == "look"


# --------------------------------------------------------------------------- 4. redeals
#
# 003 l.41: «Если после раздачи карт сумма очков у игрока менее 14, то до начала торговли,
# игрок может потребовать новую сдачу карт»; l.43: the player who got the talon at the bid
# of 100 «по своему желанию может отменить результаты торговли» when it holds under 5;
# l.56: «Если после сноса сумма карт у игрока менее 14, то игрок может требовать
# пересдачи».  A choice, so the player is asked: ``redeal`` or ``pass``.

LOW = "9C JC 9S JS 9H JH 9D"  # 8 points


def low_hand_game(**options: Any) -> Game:
    """Seat 2 holds 8 points; seat 1 (forehand) D1's declarer hand, seat 0 the rest."""
    game = game_at(redeal_low_hand=14, **options)
    game.deal(deck_for(game.rules, {1: D1_DECL, 2: LOW, 0: "QC KC QS KS TH AD TD"},
                       "JD QD KD"))
    return game


def test_003_l41_a_low_hand_may_call_a_redeal_before_the_auction() -> None:
    game = low_hand_game()
    assert game.phase_name == "redeal" and game.to_act == 2
    assert legal(game) == ["pass", "redeal"]
    assert sorted(game.observation(2)["hand"]) == sorted(cards(LOW))
    assert game.observation(0)["auction"] == []  # before the auction, the forced 100 too
    assert_illegal(game, "bid 105", "not legal in phase redeal")
    apply_all(game, ["redeal"])
    assert game.is_chance and game.deals_played == 0 and game.dealer == 0
    assert game.records[-1].result == {"redeal": "seat 2 holds fewer than 14 points"}
    assert game.events[-1] == {"type": "redeal",
                               "reason": "seat 2 holds fewer than 14 points"}


def test_003_l41_the_low_hand_may_play_on() -> None:
    game = low_hand_game()
    apply_all(game, ["pass"])
    assert game.phase_name == "auction" and game.to_act == 2
    assert game.observation(0)["auction"] == [[1, "bid 100"]]


@pytest.mark.parametrize(("at", "before", "after"), [
    ("deal", True, False),
    ("exchange", False, True),
    ("both", True, True),
])
def test_003_l56_a_low_hand_after_the_exchange(at: str, before: bool, after: bool) -> None:
    # Seat 1 takes JD QD KD and gives JD (2) to seat 2: 8 + 2 = 10 < 14 after the exchange.
    game = low_hand_game(redeal_low_hand_at=at)
    assert (game.phase_name == "redeal") is before
    if before:
        apply_all(game, ["pass"])
    apply_all(game, [*AUCTION, "give JD 2", "give QD 0"])
    assert (game.phase_name, game.to_act) == (("redeal", 2) if after else ("contract", 1))
    if after:
        apply_all(game, ["redeal"])
        assert game.records[-1].result == {"redeal": "seat 2 holds fewer than 14 points"}


def test_earlier_reading_redeals_by_itself() -> None:
    game = low_hand_game(redeal_low_ask=False)
    assert game.is_chance
    assert game.records[-1].result == {"redeal": "seat 2 holds fewer than 14 points"}
    assert game.records[-1].actions == []


LOW_TALON = "9D JD 9H"  # 2 points; seat 2 holds QD instead of 9H


def low_talon_game(**options: Any) -> Game:
    game = game_at(redeal_low_talon=5, **options)
    game.deal(deck_for(game.rules, {1: D1_DECL, 2: "KC QC JC KS QS JS QD", 0: D1_RIGHT},
                       LOW_TALON))
    return game


def test_003_l43_the_declarer_at_100_may_cancel_after_seeing_a_poor_talon() -> None:
    game = low_talon_game()
    apply_all(game, AUCTION)
    assert game.phase_name == "redeal" and game.to_act == 1
    assert legal(game) == ["pass", "redeal"]
    # The talon is turned up (and taken): everyone has seen it.
    assert game.observation(0)["talon"] == ["9H", "9D", "JD"]
    assert len(game.observation(1)["hand"]) == 10
    apply_all(game, ["redeal"])
    assert game.records[-1].result == {"redeal": "the talon holds fewer than 5 points"}
    assert game.deals_played == 0 and game.scores == [0, 0, 0]


@pytest.mark.parametrize(("auction", "asked"), [
    (AUCTION, True),  # the forced 100 stands
    (["bid 105", "pass", "pass"], False),  # «Если игрок самостоятельно повышал ставку…»
    (["pass", "bid 105", "pass"], False),
])
def test_003_l43_only_at_the_bid_of_100(auction: list[str], asked: bool) -> None:
    game = low_talon_game()
    apply_all(game, auction)
    assert (game.phase_name == "redeal") is asked
    if asked:
        apply_all(game, ["pass"])
    assert game.phase_name == "exchange"


def test_earlier_reading_low_talon_redeals_by_itself() -> None:
    game = low_talon_game(redeal_low_ask=False)
    apply_all(game, AUCTION)
    assert game.is_chance
    assert game.records[-1].result == {"redeal": "the talon holds fewer than 5 points"}


def test_a_seat_asked_about_its_hand_has_seen_it_and_cannot_bid_blind() -> None:
    game = game_at(redeal_low_hand=14, blind_bid=True)
    game.deal(deck_for(game.rules, {1: LOW}))
    assert game.phase_name == "redeal" and game.to_act == 1
    apply_all(game, ["pass"])
    assert game.phase_name == "auction" and game.observation(0)["auction"] == [[1, "bid 100"]]


# --------------------------------------------------------------------------- 5. golden round
#
# 003 l.67: «В первые 3 партии каждый игрок на своей сдаче карт обязан взять по 120 очков».
# The dealer plays 120; a concession keeps the dealer (003 l.28), so the conceded golden
# deal is dealt again and every seat still gets its own.

GOLDEN_ROUNDS = [
    # (count, the golden declarer of deals 1..5; None: an auction)
    ("seats", [0, 0, 1, 2, None]),
    ("deals", [0, 0, 1, None, None]),  # the earlier count: seat 2 never gets its deal
]


@pytest.mark.parametrize(("count", "declarers"), GOLDEN_ROUNDS)
def test_003_l67_every_seat_gets_its_golden_deal(count: str, declarers: list[int | None]
                                                 ) -> None:
    game = game_at(golden_round=True, golden_round_count=count, golden_restart=False,
                   max_deals=20)
    seen: list[int | None] = []
    for k in range(5):
        game.deal()
        obs = game.observation(0)
        golden = game.golden
        seen.append(obs["declarer"] if golden else None)
        if golden:
            assert (obs["contract"], obs["phase"]) == (120, "exchange")
        if k == 0:
            assert "concede" in legal(game)
            apply_all(game, ["concede"])  # deal 1: dealer 0 concedes its golden deal
            assert game.dealer == 0
        else:
            play_out(game)
    assert seen == declarers


def weak_golden_deck(rules: Rules, dealer: int) -> list[str]:
    """The dealer (the golden declarer) holds nines and jacks: it cannot make 120."""
    return deck_for(rules, {dealer: LOW}, "JD QD KD", dealer=dealer)


@pytest.mark.parametrize(("restart", "strong_first", "restarted"), [
    (True, False, True),  # «Если ни один из игроков не взял 120 очков, то игра начинается заново»
    (True, True, False),  # one golden contract made: the game goes on
    (False, False, False),
])
def test_003_l67_nobody_made_120_the_game_starts_again(restart: bool, strong_first: bool,
                                                       restarted: bool) -> None:
    game = game_at(golden_round=True, golden_restart=restart)
    for dealer in (0, 1, 2):
        assert game.dealer == dealer
        if dealer == 0 and strong_first:
            # D1 with the dealer as declarer: 203 made (x2: +240).
            game.deal(d1_deck(game.rules, 0, 0))
            apply_all(game, [*d1_gives(game.rules, 0, 0), "contract 120", *D1_TRICKS])
            assert deal_result(game)["made"] and game.scores[0] == 240
        else:
            game.deal(weak_golden_deck(game.rules, dealer))
            assert game.golden
            play_out(game)
            assert not deal_result(game)["made"]
    assert ("golden_restart" in deal_result(game)) is restarted
    if restarted:
        assert game.scores == [0, 0, 0] and game.observation(0)["bolts"] == [0, 0, 0]
        assert deal_result(game)["scores"] == [0, 0, 0]
    else:
        assert game.scores != [0, 0, 0]
    # The next deal: golden again after a restart (the game began anew), else an auction.
    game.deal()
    assert game.golden is restarted


# --------------------------------------------------------------------------- 6. 501
#
# 003 l.99: 501 is played «по правилам традиционной тысячи за некоторыми изменениями»:
# the trump named by the declarer, marriages 20/40/60/80, the target; the compulsory 100
# is not among the changes.

@pytest.mark.parametrize(("preset", "options", "opening"), [
    ("classic", {}, [[1, "bid 100"]]),
    ("classic-501", {}, [[1, "bid 100"]]),
    ("classic-501", earlier_defaults("classic-501"), [[1, "bid 60"]]),  # the earlier preset
    ("estonian", {"blind_bid": False}, []),  # 000 l.15: no forced bid, forehand opens
])
def test_003_l99_the_compulsory_100_per_preset(preset: str, options: dict[str, Any],
                                               opening: list[list[Any]]) -> None:
    game = game_at(preset=preset, **options)
    game.deal(deck_for(game.rules, {1: D1_DECL}, dealer=0))
    assert game.observation(0)["auction"] == opening


# --------------------------------------------------------------------------- 7. Estonian cap
#
# 000 l.15 / 001 l.15: «Kui soovid pakkuda üle 120, pead näitama… enda paari» - to bid over
# 120 show the marriage; nothing caps the bid at 120 plus the marriages held (that is 003
# l.10).  Seat 2 (forehand after dealer 1) holds clubs and spades (classic 60 + 40,
# Estonian 100 + 80).

@pytest.mark.parametrize(("preset", "options", "top"), [
    ("classic", {"forced_bid": False}, 220),  # 003: 120 + 60 + 40
    ("estonian", {}, 400),  # every point in the game: 120 + 100 + 80 + 60 + 40
    ("estonian-800", {}, 400),
    ("estonian", {"bid_cap_marriages": True}, 300),  # the earlier reading: 120 + 180
])
def test_000_l15_over_120_needs_a_marriage_and_nothing_more(
    preset: str, options: dict[str, Any], top: int
) -> None:
    game = game_at(preset=preset, dealer=1, blind_bid=False, **options)
    game.deal(deck_for(game.rules, {2: "KC QC KS QS 9H 9D JD"}, dealer=1))
    assert game.to_act == 2
    assert legal(game)[-1] == f"bid {top}"
    plain = game_at(preset=preset, dealer=1, blind_bid=False, **options)
    plain.deal(deck_for(plain.rules, {2: "KC JC KS JS 9H 9D JD"}, dealer=1))
    assert legal(plain)[-1] == "bid 120"


# --------------------------------------------------------------------------- blind variants
#
# 003 l.53: the blind bid is a compulsory 120; l.95: «Каждый игрок может торговаться, не
# поднимая своих карт… при записи все его очки и очки противников удваиваются».


def test_003_l53_the_blind_bid_is_a_fixed_120() -> None:
    game = d1(blind_bid=True, blind_fixed_bid=120)
    assert legal(game) == ["look", "blind 120"]
    assert_illegal(game, "blind 100", "a blind bid is exactly 120")
    apply_all(game, ["blind 120", *AUCTION, *GIVES, "contract 120", *D1_TRICKS])
    assert game.scores == [15, 240, 0]


def test_003_l95_any_player_may_bid_blind() -> None:
    game = d1(blind_bid=True, blind_by="anyone")
    # Nobody has looked yet: every hand is hidden from its own seat.
    assert [game.observation(s)["hand"] for s in range(3)] == [[], [], []]
    assert game.phase_name == "blind" and game.to_act == 1
    apply_all(game, ["look"])  # forehand looks: its forced 100 stands
    assert game.observation(0)["auction"] == [[1, "bid 100"]]
    assert game.phase_name == "blind" and game.to_act == 2
    assert legal(game) == ["look", "blind 105", "blind 110", "blind 115", "blind 120"]
    apply_all(game, ["blind 105"])
    assert game.phase_name == "blind" and game.to_act == 0
    apply_all(game, ["look"])
    assert game.phase_name == "auction" and game.to_act == 0
    assert game.observation(0)["hand"] != [] and game.observation(2)["hand"] == []
    assert legal(game) == ["pass", "bid 110", "bid 115", "bid 120"]  # seat 0: no marriage
    apply_all(game, ["pass", "pass"])
    obs = game.observation(2)
    assert (obs["declarer"], obs["contract"], obs["blind"]) == (2, 105, True)
    assert sorted(obs["hand"]) == sorted(cards(D1_LEFT) + cards(D1_TALON))


@pytest.mark.parametrize(("doubles", "scores"), [
    (False, [60, 60, -210]),  # the blind contract lost double, 60 to each opponent
    (True, [120, 120, -210]),  # l.95: the opponents' points double too
])
def test_003_l95_a_blind_contract_conceded(doubles: bool, scores: list[int]) -> None:
    game = d1(blind_bid=True, blind_by="anyone", blind_doubles_opponents=doubles)
    apply_all(game, ["look", "blind 105", "look", "pass", "pass", "concede"])
    assert game.scores == scores


def test_003_l95_the_opponents_points_double() -> None:
    game = d1(blind_bid=True, blind_doubles_opponents=True)
    apply_all(game, ["blind 100", *AUCTION, *GIVES, "contract 100", *D1_TRICKS])
    assert game.scores == [30, 200, 0]  # seat 0: 15 x 2


@pytest.mark.parametrize(("auction", "shown"), [
    (AUCTION, False),  # l.57: «при ставке в 100 очков, то этот прикуп он не показывает»
    (["pass", "bid 105", "pass"], True),
])
def test_003_l57_a_talon_taken_at_100_is_not_shown(auction: list[str], shown: bool) -> None:
    game = game_at(hide_talon_at_opening=True)
    game.deal(d1_deck(game.rules, 0, 1))
    apply_all(game, auction)
    declarer = game.observation(0)["declarer"]
    talon = cards(D1_TALON)
    for s in range(3):
        seen = game.observation(s)["talon"]
        assert (sorted(seen) == sorted(talon)) if (shown or s == declarer) else seen == []


# --------------------------------------------------------------------------- concessions
#
# 003 l.49/50: «Если один из игроков сидит на бочке [идет золотой кон] и нет штрафа за
# роспись, то расписывать или нельзя, или можно» - by agreement; l.47 is the free
# concession («При росписи ставка не вычитается»).

@pytest.mark.parametrize(("options", "sitting", "offered"), [
    ({"concede_declarer_loses": False}, (0,), True),  # allowed: the default
    ({"concede_declarer_loses": False, "concede_free_on_barrel": False}, (0,), False),
    ({"concede_declarer_loses": False, "concede_free_on_barrel": False}, (), True),
    ({"concede_free_on_barrel": False}, (0,), True),  # not free: loses the contract
    ({"concede_declarer_loses": False, "concede_free_on_barrel": False, "concede_limit": 1,
      "concede_limit_penalty": 120}, (0,), True),  # reaching the limit costs 120: not free
])
def test_003_l49_no_free_concession_while_a_player_sits_on_the_barrel(
    options: dict[str, Any], sitting: tuple[int, ...], offered: bool
) -> None:
    game = game_at([880 if 0 in sitting else 0, 0, 0], sitting=sitting, **options)
    game.deal(d1_deck(game.rules, 0, 1))
    apply_all(game, AUCTION)
    assert ("concede" in legal(game)) is offered
    apply_all(game, GIVES)
    assert ("concede" in legal(game)) is offered
    if not offered:
        assert_illegal(game, "concede", "concede: a concession that costs nothing is not "
                                        "allowed while a player sits on the barrel")


@pytest.mark.parametrize(("free", "golden_offered"), [(True, True), (False, False)])
def test_003_l50_no_free_concession_in_the_golden_round(free: bool,
                                                        golden_offered: bool) -> None:
    options = {"golden_round": True, "concede_declarer_loses": False,
               "concede_free_in_golden": free}
    game = game_at(**options)
    game.deal(d1_deck(game.rules, 0, 0))
    assert game.golden and game.phase_name == "exchange"
    assert ("concede" in legal(game)) is golden_offered
    # After the golden round a free concession is allowed again.
    game = game_at(**options)
    game.golden_done = 0b111
    game.deal(d1_deck(game.rules, 0, 1))
    apply_all(game, AUCTION)
    assert not game.golden and "concede" in legal(game)


@pytest.mark.parametrize(("contract", "half_down", "half_up"), [
    (100, 50, 50), (105, 50, 55), (110, 55, 55), (115, 55, 60), (120, 60, 60),
    (125, 60, 65),
])
def test_003_l45_half_the_contract_rounded(contract: int, half_down: int,
                                           half_up: int) -> None:
    # 003 l.45: «каждый из неиграющих игроков получит по половине ставки», to the nearest
    # 5.  Seat 1's forced 100 stands, or seat 2 (D1's declarer hand here) bids the
    # contract; the declarer concedes at once.
    auction = AUCTION if contract == 100 else [f"bid {contract}", "pass", "pass"]
    declarer = 1 if contract == 100 else 2
    for mode, each in (("down", half_down), ("up", half_up)):
        game = game_at(concede_opponents="half", concede_half_round=mode)
        game.deal(d1_deck(game.rules, 0, 2))
        apply_all(game, [*auction, "concede"])
        want = [each] * 3
        want[declarer] = -contract
        assert game.scores == want, mode


# --------------------------------------------------------------------------- barrel falls
#
# 003 l.81: «Если игрок 3 раза слетает с бочки, то его счет очков становится равным пяти или
# нулю и далее этот игрок должен дойти до тысячи уже без бочки».

def test_003_l81_after_the_falls_five_and_no_barrel() -> None:
    game = game_at([880, 0, 0], sitting=(0,), tries=1, barrel_falls_reset=1,
                   barrel_falls_reset_to=5, barrel_falls_no_barrel=True,
                   barrel_jump="contract")
    play_d1(game, 1)  # seat 0's last try: falls, and the first fall resets it to 5
    assert game.scores == [5, 100, 0] and on_barrel(game) == [False, False, False]
    resume(game, [870, 100, 0])
    play_d1(game, 1)  # 885: no barrel any more for seat 0
    assert game.scores == [885, 205, 0] and on_barrel(game) == [False, False, False]
    resume(game, [990, 205, 0])
    play_d1(game, 1)  # 1005 on points wins even where only contracts jump the barrel
    assert game.is_over and game.scores[0] == 1005


def test_003_l81_without_the_option_the_barrel_stays() -> None:
    game = game_at([880, 0, 0], sitting=(0,), tries=1, barrel_falls_reset=1,
                   barrel_falls_reset_to=5)
    play_d1(game, 1)
    resume(game, [870, 100, 0])
    play_d1(game, 1)
    assert game.scores[0] == 880 and on_barrel(game)[0]


# --------------------------------------------------------------------------- open readings
#
# 000 l.7: «4 üheksat korraga käes ühel mängijal annab talle kohe 100 punkti» - four nines
# in hand at once; as dealt, or also when the talon or a gift completes them?  Deal E of
# test_engine_variants (seat 2 holds 9C 9S 9H 9D as dealt), and E' where 9D is in the
# talon and seat 1 gives it to seat 2: after the exchange both hands are the same, so the
# play is E's (seat 1 makes 100, seat 0 takes 17, seat 2 nothing).

E_DECL = "AC TC AS TS AH KH QH"
E_HANDS = {1: E_DECL, 2: "9C 9S 9H 9D KC QC JC", 0: "JS QS KS JH TH AD TD"}
E2_HANDS = {1: E_DECL, 2: "9C 9S 9H JD KC QC JC", 0: "JS QS KS JH TH AD TD"}


def plays(text: str) -> list[str]:
    """``"AC m:KH"`` -> ``["play AC", "marry KH"]``."""
    return [f"marry {c[2:]}" if c.startswith("m:") else f"play {c}" for c in text.split()]


E_PLAY = plays("AC JC JS m:KH 9H JH AH 9S TH QH 9D QS TC KC KS AS 9C KD TS JD TD QD QC AD")


@pytest.mark.parametrize(("counted", "dealt_four", "gift_four"), [
    ("dealt", 100, 0), ("after-exchange", 100, 100), ("either", 100, 100),
])
def test_000_l7_four_nines_held_as_dealt_or_after_the_exchange(
    counted: str, dealt_four: int, gift_four: int
) -> None:
    for hands, talon, gives, seat2 in (
        (E_HANDS, "KD QD JD", ["give JD 2", "give KD 0"], dealt_four),
        (E2_HANDS, "KD QD 9D", ["give 9D 2", "give KD 0"], gift_four),
    ):
        game = game_at(preset="estonian", four_nines_counted=counted)
        game.deal(deck_for(game.rules, hands, talon))
        apply_all(game, ["look", "bid 100", "pass", "pass", "keep", *gives, *E_PLAY])
        assert game.scores == [17, 100, seat2], (counted, talon)


# 003 l.91: the two-player declarer «две любые свои карты кладет на стол в закрытую стопку»:
# whose are they?  WEAK (test_engine_variants): seat 1 declares, discards TD QH (13) and
# takes no trick; seat 0 takes every trick: 120 - 13 - the spare talon (7) = 100.
WEAK = {1: "9C JC 9S JS 9H JH 9D JD QC QS", 0: "AC TC KC AS TS KS AH TH KH AD"}


@pytest.mark.parametrize(("to", "taken", "scores"), [
    ("declarer", [100, 13], [100, -100]),
    ("nobody", [100, 0], [100, -100]),
    ("last-trick", [113, 0], [115, -100]),
])
def test_003_l91_the_discards_count_for(to: str, taken: list[int], scores: list[int]) -> None:
    game = game_at(preset="two-player", discards_to=to)
    game.deal(deck_for(game.rules, WEAK, ["QH TD", "KD QD"]))
    apply_all(game, ["pass", "talon 1", "discard TD", "discard QH", "contract 100"])
    play_out(game)
    assert game.observation(0)["points_taken"] == taken
    assert game.scores == scores


# --------------------------------------------------------------------------- 004 German

def test_004_two_player_german_deals_every_card() -> None:
    # 004 l.12: a game «for two or three players»; the text describes three.  With two,
    # all 24 cards are dealt: 12 each, no talon, no auction, forehand leads.
    rules = Rules.preset("german-1001", players=2)
    assert (rules.hand_size, rules.talon_size, rules.deck) == (12, 0, 24)
    game = Game(rules, seed="g2")
    game.deal()
    assert game.phase_name == "play" and game.to_act == 1
    assert game.observation(1)["hand_sizes"] == [12, 12]
    play_out(game)
    assert sum(game.observation(0)["points_taken"]) == 120


def test_004_the_100_point_game() -> None:
    # 004 l.14: «With the simpler scoring system, it is enough to reach 100 points».
    game = Game(Rules.preset("german-1001", target=100), seed="g100")
    while not game.is_over:
        if game.is_chance:
            game.deal()
        else:
            game.apply(fallback_action(legal(game)))
    assert max(game.scores) >= 100


# --------------------------------------------------------------------------- earlier defaults

def test_earlier_defaults_name_only_what_changed() -> None:
    assert earlier_defaults("classic-501")["opening_bid"] == 60
    assert earlier_defaults("estonian")["bid_cap_marriages"] is True
    assert "blind_outbid" not in earlier_defaults("estonian")  # it was and is "blind"
    for preset in ("classic", "estonian", "classic-501", "german-1001"):
        rules = Rules.preset(preset, **earlier_defaults(preset))
        assert rules.overrides() == earlier_defaults(preset)
