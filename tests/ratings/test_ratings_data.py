"""Result types and their validation: bad data must fail where it enters, with a clear message."""

from __future__ import annotations

import numpy as np
import pytest

from arena.ratings import GameResult, GameTable, PairData


def test_from_scores_competition_ranks() -> None:
    r = GameResult.from_scores(["a", "b", "c", "d"], [500, 1000, 500, 20], group="set-1")
    assert r.ranks == (2, 1, 2, 4)
    assert r.players == ("a", "b", "c", "d") and r.group == "set-1"


def test_lists_are_stored_as_tuples() -> None:
    r = GameResult(["a", "b"], [1, 2], [2, 1])  # type: ignore[arg-type]
    assert r.players == ("a", "b") and r.scores == (1.0, 2.0) and r.ranks == (2, 1)
    hash(r)


@pytest.mark.parametrize(
    ("players", "scores", "ranks", "group", "message"),
    [
        (("a",), (1.0,), (1,), None, "2 to 4 players"),
        (("a", "b", "c", "d", "e"), (1.0,) * 5, (1,) * 5, None, "2 to 4 players"),
        (("a", "a"), (1.0, 2.0), (2, 1), None, "appears twice"),
        (("a", ""), (1.0, 2.0), (2, 1), None, "non-empty strings"),
        (("a", "b"), (1.0,), (1, 2), None, "scores"),
        (("a", "b"), (1.0, float("nan")), (1, 2), None, "finite"),
        (("a", "b"), (1.0, 2.0), (1,), None, "ranks"),
        (("a", "b"), (1.0, 2.0), (0, 1), None, "ranks must be integers from 1 to 2"),
        (("a", "b"), (1.0, 2.0), (1, 3), None, "ranks must be integers"),
        (("a", "b"), (1.0, 2.0), (1.0, 2), None, "ranks must be integers"),
        (("a", "b"), (1.0, 2.0), (1, 2), 1.5, "group"),
    ],
)
def test_game_result_validation(
    players: tuple[str, ...],
    scores: tuple[float, ...],
    ranks: tuple[int, ...],
    group: object,
    message: str,
) -> None:
    with pytest.raises(ValueError, match=message):
        GameResult(players, scores, ranks, group)  # type: ignore[arg-type]


def test_table_from_results_groups_and_padding() -> None:
    results = [
        GameResult.from_scores(["x", "y", "z"], [1, 2, 3], group="s1"),
        GameResult.from_scores(["y", "x"], [5, 4], group="s1"),
        GameResult.from_scores(["z", "y"], [5, 4]),
        GameResult.from_scores(["z", "x"], [5, 4], group=7),
        GameResult.from_scores(["z", "x"], [5, 4], group="7"),
    ]
    t = GameTable.from_results(results)
    assert t.players == ("x", "y", "z")
    assert t.n_games == 5
    # "s1" shared, None is its own group, 7 and "7" are different groups.
    assert t.groups.tolist() == [0, 0, 1, 2, 3] and t.n_groups == 4
    assert t.seats[1].tolist() == [1, 0, -1, -1]


def test_table_from_results_rejects_unknown_player() -> None:
    with pytest.raises(ValueError, match="'q' is not in the players list"):
        GameTable.from_results([GameResult.from_scores(["p", "q"], [1, 2])], players=["p", "r"])
    with pytest.raises(ValueError, match="no game results"):
        GameTable.from_results([])


@pytest.mark.parametrize(
    ("seats", "ranks", "groups", "message"),
    [
        ([[0, 5]], [[1, 2]], None, "player index below 3"),
        ([[0, -1]], [[1, 0]], None, "fewer than 2"),
        ([[0, 0]], [[1, 2]], None, "appears twice"),
        ([[0, 1]], [[1, 3]], None, "between 1 and the number"),
        ([[0, 1]], [[1, 2], [1, 2]], None, "ranks must be an integer array"),
        ([[0, 1]], [[1, 2]], [1, 2], "groups must be"),
        ([[0, 1]], [[1, 2]], ["x"], "groups must be"),
        ([[0.0, 1.0]], [[1, 2]], None, "integer player indices"),
        ([0, 1], [1, 2], None, "2-D"),
    ],
)
def test_table_from_arrays_validation(
    seats: object, ranks: object, groups: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        GameTable.from_arrays(["a", "b", "c"], seats, ranks, groups)  # type: ignore[arg-type]


def test_pairdata_aggregates_per_group_and_pair() -> None:
    data = PairData.from_pairwise(
        ["b", "a", "a", "a"],
        ["a", "b", "b", "c"],
        [1.0, 0.5, 1.0, 0.0],
        groups=["g", "g", "h", "g"],
    )
    assert data.players == ("a", "b", "c")
    rows = sorted(
        zip(
            data.group.tolist(),
            data.lo.tolist(),
            data.hi.tolist(),
            data.score.tolist(),
            data.games.tolist(),
            strict=True,
        )
    )
    # group g: a-b twice (a scored 0 + 0.5), a-c once (a scored 0); group h: a-b once (1).
    assert rows == [(0, 0, 1, 0.5, 2.0), (0, 0, 2, 0.0, 1.0), (1, 0, 1, 1.0, 1.0)]
    wins, games = data.totals()
    np.testing.assert_allclose(wins + wins.T, games)
    s, n = data.group_scores("b", "a")
    assert s.tolist() == [0.75, 0.0] and n.tolist() == [2.0, 1.0]


@pytest.mark.parametrize(
    ("a", "b", "s", "message"),
    [
        (["a", "b"], ["a", "c"], [1.0, 0.0], "against themself"),
        (["a"], ["b"], [1.5], r"\[0, 1\]"),
        (["a", "b"], ["b"], [1.0], "first players"),
        (["a"], [""], [1.0], "non-empty"),
    ],
)
def test_pairwise_validation(a: list[str], b: list[str], s: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PairData.from_pairwise(a, b, s)


def test_group_scores_errors() -> None:
    data = PairData.from_pairwise(["a"], ["b"], [1.0])
    with pytest.raises(ValueError, match="unknown player"):
        data.group_scores("a", "zz")
    with pytest.raises(ValueError, match="two different"):
        data.group_scores("a", "a")


def test_table_from_arrays_mixed_seat_counts() -> None:
    t = GameTable.from_arrays(
        ["a", "b", "c", "d"],
        [[0, 1, 2, 3], [3, 2, -1, -1]],
        [[1, 2, 2, 4], [2, 1, 0, 0]],
        groups=[70, 70],
        scores=[[1000, 500, 500, 0], [10, 20, 0, 0]],
    )
    assert t.n_groups == 1 and t.groups.tolist() == [0, 0]
    assert np.isnan(t.scores[1, 2])
    pairs = PairData.from_table(t)
    wins, games = pairs.totals()
    assert games.sum() == 2 * (6 + 1)
    assert wins[1, 2] == 0.5 and wins[2, 3] == 2.0 and wins[3, 2] == 0.0
