"""The leaderboard's text says what the intervals measure: no lopsided interval written as
``± half-width``, and no point interval where the results bound nothing."""

from __future__ import annotations

from arena.ratings import GameResult, GameTable
from arena.tournament.leaderboard import (
    LeaderRow,
    _bounded_players,
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


def test_players_who_won_every_game_have_no_interval() -> None:
    games = [GameResult.from_scores(["greedy", "a", "b"], [1000, 0, 0], group=f"set-{i}")
             for i in range(20)]
    assert _bounded_players(GameTable.from_results(games)) == set()
    rows = [_row("greedy", 715.2, 715.2, 715.2, bounded=False)]
    assert "unbounded" in format_table(rows) and "715.2, 715.2" not in format_table(rows)
    note = unbounded_note(rows)
    assert note is not None and "won every game" in note


def test_players_who_beat_each_other_are_bounded() -> None:
    games = [GameResult.from_scores(["x", "y", "z"], s, group=f"set-{i}")
             for i, s in enumerate([[3, 2, 1], [1, 3, 2], [2, 1, 3]] * 4)]
    assert _bounded_players(GameTable.from_results(games)) == {"x", "y", "z"}
    assert unbounded_note([_row("x", 0.0, -50.0, 50.0)]) is None
