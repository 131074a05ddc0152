"""``arena bench strength``: duplicate sets, the Elo fit, decision times, and the docs.

The figures are measured, not asserted: these tests check that the command plays the
games it says (every seating, shared deals), fits the ratings over sets, reports its
percentiles, refuses bad arguments with one line, and that what docs/bots.md prints is
what the commands print.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from docblocks import block

from arena.bench.strength import (
    GameRecord,
    SetResult,
    build_parser,
    percentiles,
    play_set,
    set_specs,
    summarize,
)
from arena.cli import main as arena_main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "bots.md"


def test_a_set_holds_every_distinct_seating_on_the_same_deals() -> None:
    specs = set_specs("search", "greedy", "classic", {}, "s", 0, "all", None)
    assert [seat for _, seat in specs] == [0, 1, 2]
    assert len({spec.seed for spec, _ in specs}) == 1
    assert len({spec.match_id for spec, _ in specs}) == 3
    assert len(set_specs("a", "b", "classic-4", {}, "s", 0, "all", None)) == 4
    assert len(set_specs("a", "b", "two-player", {}, "s", 0, "latin", None)) == 2
    # Another set has other deals; the same set and seed, the same ones.
    other = set_specs("search", "greedy", "classic", {}, "s", 1, "all", None)
    assert other[0][0].seed != specs[0][0].seed
    assert set_specs("search", "greedy", "classic", {}, "s", 0, "all", None) == specs


def test_the_fit_treats_sets_as_the_unit_and_anchors_the_opponent() -> None:
    def game(s: int, seat: int, ranks: list[int]) -> GameRecord:
        return GameRecord(s, seat, [0, 0, 0], ranks, 10, 0)

    sets = []
    for s in range(8):
        st = SetResult(s, wall_ms=[1.0, 2.0], cpu_ms=[1.0, 1.0], chose=[True, False])
        # The bot wins 2 of its 3 games of each set outright, and is last in the third.
        st.games = [game(s, 0, [1, 2, 3]), game(s, 1, [2, 1, 3]),
                    game(s, 2, [1, 2, 3])]
        sets.append(st)
    res = summarize("bot", "opp", "classic", sets, bootstrap=200)
    assert res["games"] == 24 and res["sets"] == 8
    assert res["pair_score"] == pytest.approx(4 / 6, abs=1e-4)
    # 2 of 3 pairwise: +120 Elo, shrunk a little by the prior's virtual draw.
    assert 100 < res["elo"] < 121
    lo, hi = res["elo_95"]
    assert lo <= res["elo"] <= hi
    assert res["win_rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert res["decisions"] == 16 and res["decisions_with_choice"] == 8
    assert res["decision_with_choice_ms"]["max"] == 1.0


def test_percentiles_use_the_nearest_rank() -> None:
    values = [float(x) for x in range(1, 101)]
    assert percentiles(values) == {"p50": 50.0, "p90": 90.0, "p99": 99.0, "max": 100.0}
    assert percentiles([])["p99"] is None


def test_a_set_is_played_through_the_referee_and_timed() -> None:
    st = play_set("search-fast", "greedy", "classic", {}, "t", 0, "all", 2)
    assert [g.bot_seat for g in st.games] == [0, 1, 2]
    assert all(g.strikes == 0 and g.deals <= 2 for g in st.games)
    assert st.wall_ms and len(st.wall_ms) == len(st.cpu_ms) == len(st.chose)
    assert any(st.chose)


def test_parallel_sets_give_the_same_figures(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", "strength", "--bot", "greedy", "--opponent", "random", "--sets", "3",
            "--max-deals", "3", "--json"]
    assert arena_main(args) == 0
    one = json.loads(capsys.readouterr().out)
    assert arena_main([*args, "--jobs", "2"]) == 0
    two = json.loads(capsys.readouterr().out)
    for key in ("elo", "elo_95", "pair_score", "win_rate", "mean_margin", "games"):
        assert one[key] == two[key]
    assert one["games"] == 9 and one["elo"] > 0


@pytest.mark.parametrize("args, message", [
    (["--preset", "clasic"], "unknown preset 'clasic'"),
    (["--bot", "nobody"], "unknown bot 'nobody'"),
    (["--sets", "0"], "--sets and --jobs must be at least 1"),
    (["-o", "barel=900"], "unknown option 'barel'"),
    (["--opponent", "remote:x"], "needs a gateway"),
])
def test_bad_arguments_get_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert arena_main(["bench", "strength", *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------- the docs
def test_docs_list_the_bots_as_arena_bots_list_prints_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    listed = block("docs/bots.md", "$ arena bots list").text
    assert arena_main(["bots", "list"]) == 0
    assert capsys.readouterr().out == listed.split("\n", 1)[1]


def test_docs_short_bench_run_prints_as_shown(capsys: pytest.CaptureFixture[str]) -> None:
    short = block("docs/bots.md", "$ arena bench strength --bot search-fast").text
    command, first, second = short.splitlines()[:3]
    argv = shlex.split(command[2:])
    assert argv[0] == "arena"
    assert arena_main(argv[1:]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == first
    assert out[1].startswith(second.rstrip(". "))


def test_docs_python_snippet_runs() -> None:
    snippet = block("docs/bots.md", "SearchBot(seed=").text
    scope: dict[str, object] = {}
    exec(snippet, scope)  # the snippet as printed
    bot = scope["bot"]
    assert bot.iterations == 40  # type: ignore[attr-defined]


def test_every_documented_bench_command_is_valid() -> None:
    """The long runs behind the figures are too slow for a test: their arguments parse."""
    text = DOC.read_text()
    commands = re.findall(r"^\$? ?(arena bench strength [^\n`]*)$", text, flags=re.M)
    assert len(commands) >= 2
    parser = build_parser()
    for command in commands:
        argv = shlex.split(command)[3:]
        if any("[" in a for a in argv):  # the synopsis
            continue
        parser.parse_args(argv)
    assert "--seatings all|latin" in block("docs/bots.md", "arena bench strength [--bot BOT]").text
