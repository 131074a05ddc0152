"""The command-line entry points end to end: run, check, plan, status, leaderboard, report."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY

from arena.tournament.cli import tournament_main
from arena.tournament.leaderboard import CSV_FIELDS, leaderboard_main
from arena.tournament.store import ResultStore
from arena.web.report import report_main


def write_spec(tmp_path: Path, name: str = "cli-cup", **changes: Any) -> Path:
    data: dict[str, Any] = {
        "name": name,
        "seed": "cli",
        "rules": "classic",
        "participants": ["greedy", "random", {"name": "random-2", "bot": "random"}],
        "format": "duplicate",
        "sets": 2,
        "max_deals": 6,
        "executor": "inline",
        "db": f"sqlite:///{tmp_path / 'results.sqlite3'}",
    }
    data.update(changes)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_run_then_leaderboard_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path)
    db = f"sqlite:///{tmp_path / 'results.sqlite3'}"
    assert tournament_main(["check", str(spec)]) == 0
    assert "ok: cli-cup: duplicate, rules classic (3 seats), 3 participants, 12 matches" in (
        capsys.readouterr().out
    )
    assert tournament_main(["run", str(spec), "--max-matches", "4"]) == 0
    captured = capsys.readouterr()
    assert "cli-cup: stopped; played 4 matches" in captured.err
    assert "games/s" in captured.err
    assert tournament_main(["status", str(spec)]) == 0
    assert "cli-cup: 4 of 12 matches stored" in capsys.readouterr().out
    assert tournament_main(["run", str(spec), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    # The scheduler's gauges, as a dashboard would scrape them.
    labels = {"tournament": "cli-cup"}
    assert REGISTRY.get_sample_value("arena_tournament_matches", labels) == 12
    assert REGISTRY.get_sample_value("arena_tournament_matches_done", labels) == 12
    greedy = REGISTRY.get_sample_value("arena_rating", {**labels, "bot": "greedy"})
    assert greedy is not None and greedy > 0

    assert leaderboard_main(["--db", db, "--tournament", "cli-cup", "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["matches"] == 12
    rows = board["rows"]
    assert rows[0]["player"] == "greedy"
    for r in rows:
        assert r["games"] == 12
        assert r["ci_low"] <= r["rating"] <= r["ci_high"]
        assert {"mean_score", "win_rate", "timeouts", "illegal"} <= r.keys()
    # The scale's mean is 0 over the players the results bound (greedy may be alone).
    bounded = [r["rating"] for r in rows if r["bounded"]]
    assert bounded and abs(sum(bounded)) < 1e-6

    assert leaderboard_main(["--db", db, "--csv"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert tuple(table[0].keys()) == CSV_FIELDS
    assert [t["player"] for t in table] == [r["player"] for r in rows]

    assert leaderboard_main(["--db", db]) == 0
    text = capsys.readouterr().out
    assert "tournament cli-cup: 12 games" in text and "95% CI" in text

    out = tmp_path / "report.html"
    assert report_main(["--db", db, "--out", str(out)]) == 0
    html = out.read_text()
    assert "<svg" in html and "<script" not in html
    assert "greedy" in html and "random-2" in html
    assert "Likelihood of superiority" in html
    assert "cli-cup" in html


def test_bad_input_gets_a_message_and_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write_spec(tmp_path, name="bad", sets=0)
    assert tournament_main(["run", str(bad)]) == 2
    assert "sets: must be a positive integer" in capsys.readouterr().err
    good = write_spec(tmp_path)
    assert tournament_main(["run", str(good), "--workers", "0"]) == 2
    assert "--workers: must be a positive integer" in capsys.readouterr().err
    assert tournament_main(["run", str(good), "--db", "mysql://x/y"]) == 2
    assert "unsupported database URL scheme 'mysql'" in capsys.readouterr().err
    db = f"sqlite:///{tmp_path / 'results.sqlite3'}"
    # Read-only commands never create the store they are pointed at.
    assert leaderboard_main(["--db", db, "--tournament", "nope"]) == 2
    assert "no results database at" in capsys.readouterr().err
    assert not (tmp_path / "results.sqlite3").exists()
    # Reusing a name for a different tournament is refused; nothing is played or lost.
    assert tournament_main(["run", str(good), "-q", "--max-matches", "1"]) == 0
    assert leaderboard_main(["--db", db, "--tournament", "nope"]) == 2
    assert "no tournament 'nope'" in capsys.readouterr().err
    other = write_spec(tmp_path, seed="another")
    assert tournament_main(["run", str(other), "-q"]) == 2
    assert "already in" in capsys.readouterr().err
    with ResultStore(db) as store:
        assert store.count("cli-cup") == 1


def test_plan_lists_matches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path)
    assert tournament_main(["plan", str(spec), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 12
    assert lines[0]["group"] == "set-0" and lines[6]["group"] == "set-1"


def test_swiss_sprt_and_league_run_with_the_real_referee(tmp_path: Path) -> None:
    many = [
        "greedy",
        "random",
        {"name": "g2", "bot": "greedy"},
        {"name": "r2", "bot": "random"},
        {"name": "r3", "bot": "random"},
    ]
    swiss = write_spec(
        tmp_path,
        name="swiss",
        participants=many,
        format={"type": "swiss", "rounds": 2},
        sets=None,
        max_deals=2,
    )
    assert tournament_main(["run", str(swiss), "-q"]) == 0
    db = f"sqlite:///{tmp_path / 'results.sqlite3'}"
    with ResultStore(db) as store:
        rows = list(store.iter_results("swiss"))
    assert len(rows) == 12 and {r.round for r in rows} == {0, 1}

    sprt = write_spec(
        tmp_path,
        name="sprt",
        format={"type": "sprt", "candidate": "greedy", "baseline": "random", "elo1": 100},
        sets=24,
        max_deals=3,
    )
    assert tournament_main(["run", str(sprt), "-q"]) == 0

    league = write_spec(
        tmp_path,
        name="league",
        participants=many[:4],
        format={"type": "league", "rounds": 2},
        sets=None,
        max_deals=2,
    )
    assert tournament_main(["run", str(league), "-q"]) == 0
    # Two bots join in the file and the league goes on for two more rounds.
    data = yaml.safe_load(league.read_text())
    data["participants"] += [{"name": "late-g", "bot": "greedy"}, {"name": "r3", "bot": "random"}]
    data["format"]["rounds"] = 4
    league.write_text(yaml.safe_dump(data))
    assert tournament_main(["run", str(league), "-q"]) == 0
    with ResultStore(db) as store:
        rows = list(store.iter_results("league"))
    early = {p for r in rows if r.round < 2 for p in r.players}
    late = {p for r in rows if r.round >= 2 for p in r.players}
    assert "late-g" not in early and "late-g" in late
    assert {r.round for r in rows} == {0, 1, 2, 3}
    # Each round: 6 players, 3 seats: two tables, one duplicate set (6 games) each.
    assert sum(1 for r in rows if r.round == 3) == 12
