"""``arena bots compare`` and ``arena bench referee`` print their figures."""

from __future__ import annotations

import json

import pytest

from arena.bench.referee import bench_main
from arena.referee.compare import compare_main


def test_compare_is_reproducible_and_greedy_wins(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["greedy", "random", "--games", "6", "--seed", "cmp", "--json"]
    assert compare_main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert compare_main(argv) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert first["games"] == 6 and first["wins"] >= 5 and first["strikes"] == 0
    lo, hi = first["win_rate_95"]
    assert 0 <= lo <= first["win_rate"] <= hi <= 1


def test_compare_reports_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_main(["greedy", "nobot", "--games", "1"]) == 2
    assert "unknown bot 'nobot'" in capsys.readouterr().err
    assert compare_main(["greedy", "random", "--rules", "nope"]) == 2
    assert compare_main(["greedy", "random", "--games", "0"]) == 2


def test_bench_prints_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main(["--seconds", "0.2", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["referee"]["decisions_per_s"] > 0 and res["bare_engine"]["decisions_per_s"] > 0
    assert bench_main(["--seconds", "0.1", "--bots", "random,random"
                       , "--preset", "two-player"]) == 0
    assert "decisions/s" in capsys.readouterr().out


def test_bots_command_lists_and_dispatches(capsys: pytest.CaptureFixture[str]) -> None:
    from arena.referee.bots_cli import bots_main

    assert bots_main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("greedy") and "random" in out
    assert bots_main(["compare", "greedy", "random", "--games", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["games"] == 1
    assert bots_main(["nope"]) == 2
    assert "unknown command 'nope'" in capsys.readouterr().err
    assert bots_main([]) == 2
