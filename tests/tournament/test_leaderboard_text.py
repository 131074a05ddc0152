"""The leaderboard's text says what the intervals measure: no lopsided interval written as
``± half-width``, and no point interval where the results bound nothing."""

from __future__ import annotations

from arena.ratings import GameResult, PairData
from arena.ratings.table import bounded_players
from arena.tournament.leaderboard import (
    LeaderRow,
    format_table,
    unbounded_note,
)


def _row(player: str, rating: float, low: float, high: float, bounded: bool = True) -> LeaderRow:
    return LeaderRow(rank=1, player=player, bot=player, rating=rating, ci_low=low, ci_high=high,
                     games=60, mean_score=0.0, win_rate=0.0, timeouts=0, illegal=0, strikes=0,
                     forfeits=0, bounded=bounded)


def test_a_lopsided_interval_shows_both_distances() -> None:
    text = format_table([_row("random", -635.5, -648.8, -635.2)])
    assert "[-648.8, -635.2]  -13.3 +0.3" in text
    assert "±" not in text


def test_only_the_player_who_won_every_game_loses_its_interval() -> None:
    games = [GameResult.from_scores(["greedy", "a", "b"], [1000, 0, 0], group=f"set-{i}")
             for i in range(20)]
    # a and b drew with each other: their difference is bounded; greedy's lead is not.
    assert bounded_players(PairData.from_results(games)) == {"a", "b"}
    rows = [_row("greedy", 715.2, 715.2, 715.2, bounded=False), _row("a", -357.6, -380, -330)]
    text = format_table(rows)
    assert "unbounded" in text and "715.2, 715.2" not in text
    assert "[-380.0, -330.0]" in text
    note = unbounded_note(rows)
    assert note is not None and "No interval for greedy:" in note and "won or lost" in note


def test_players_who_beat_each_other_are_bounded() -> None:
    games = [GameResult.from_scores(["x", "y", "z"], s, group=f"set-{i}")
             for i, s in enumerate([[3, 2, 1], [1, 3, 2], [2, 1, 3]] * 4)]
    assert bounded_players(PairData.from_results(games)) == {"x", "y", "z"}
    assert unbounded_note([_row("x", 0.0, -50.0, 50.0)]) is None
