"""Luck-adjusted results through the tournament: workers store each game's luck, every view
shows the adjusted ratings beside the raw ones, the SPRT and the league take the switch,
and a store written before luck values existed still reads."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from arena.tournament.cli import tournament_main
from arena.tournament.leaderboard import leaderboard_main
from arena.tournament.store import ResultStore
from arena.web.report import report_main

CAUTIOUS = "arena.server.builtin_remote:CautiousGreedyBot"


def write_spec(tmp_path: Path, name: str, **changes: Any) -> Path:
    data: dict[str, Any] = {
        "name": name,
        "seed": "luck",
        "rules": "classic",
        "participants": ["greedy", {"name": "cautious", "bot": CAUTIOUS},
                         {"name": "greedy-2", "bot": "greedy"}],
        "format": "duplicate",
        "sets": 3,
        "max_deals": 6,
        "executor": "inline",
        "db": f"sqlite:///{tmp_path / 'results.sqlite3'}",
    }
    data.update(changes)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_every_view_shows_adjusted_ratings_beside_the_raw_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, "luck-cup")
    assert tournament_main(["run", str(spec), "-q"]) == 0
    db = f"sqlite:///{tmp_path / 'results.sqlite3'}"
    with ResultStore(db, create=False) as store:
        rows = list(store.iter_results("luck-cup"))
    assert len(rows) == 18
    assert all(r.luck is not None and len(r.luck["pairs"]) == 3 for r in rows)
    models = {r.luck["model"] for r in rows if r.luck}
    assert len(models) == 1

    capsys.readouterr()
    assert leaderboard_main(["--db", db, "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["luck"] == {"games": 18, "adjusted": 18, "models": sorted(models)}
    for row in board["rows"]:
        assert row["adj_rating"] is not None and isinstance(row["adj_bounded"], bool)
    raw = {r["player"]: r["rating"] for r in board["rows"]}
    adjusted = {r["player"]: r["adj_rating"] for r in board["rows"]}
    assert raw != adjusted

    assert leaderboard_main(["--db", db]) == 0
    text = capsys.readouterr().out
    assert "adjusted 95% CI" in text and f"luck model {models.pop()}" in text

    assert leaderboard_main(["--db", db, "--csv"]) == 0
    parsed = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {"adj_rating", "adj_ci_low", "adj_ci_high", "adj_bounded"} <= set(parsed[0])

    out = tmp_path / "report.html"
    assert report_main(["--db", db, "--out", str(out)]) == 0
    assert "adjusted 95% CI" in out.read_text()


def test_sprt_decides_on_adjusted_results_and_shows_the_raw_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fmt = {"type": "sprt", "candidate": "greedy", "baseline": "cautious", "elo0": -200,
           "elo1": 200}
    spec = write_spec(tmp_path, "sprt-luck", format=fmt, sets=8, max_deals=4)
    assert tournament_main(["run", str(spec), "-q", "--luck-adjusted"]) == 0
    out = capsys.readouterr()
    line = next(x for x in (out.out + out.err).splitlines() if x.startswith("SPRT after"))
    from arena.engine import Rules
    from arena.ratings.luck import model_for

    model = model_for(Rules.preset("classic"))
    assert model is not None
    assert f"games, luck-adjusted by {model.short})" in line and "[raw: LLR" in line
    # The switch is part of the tournament: the stored spec keeps it.
    with ResultStore(f"sqlite:///{tmp_path / 'results.sqlite3'}") as store:
        assert store.tournament_spec("sprt-luck")["luck_adjusted"] is True  # type: ignore[index]


def test_a_league_pairs_on_adjusted_live_ratings(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "league-luck", format={"type": "league", "rounds": 2},
                      sets=None, max_deals=2, luck_adjusted=True)
    assert tournament_main(["run", str(spec), "-q"]) == 0
    from arena.tournament.formats import LeagueFormat
    from arena.tournament.spec import load_spec

    loaded = load_spec(spec)
    assert loaded.luck_adjusted
    with ResultStore(loaded.db) as store:
        done = store.results("league-luck")
    # The same results replayed with and without the switch: the live ratings differ.
    adjusted_fmt = LeagueFormat(loaded)
    plain = LeagueFormat(dataclasses.replace(loaded, luck_adjusted=False))
    assert adjusted_fmt.next_batch(done) is None and plain.next_batch(done) is None
    a = {r.player: r.mu for r in adjusted_fmt.league.table()}
    b = {r.player: r.mu for r in plain.league.table()}
    assert a.keys() == b.keys() and a != b


def test_a_store_from_before_luck_values_still_reads(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "old-store", sets=1, max_deals=2)
    assert tournament_main(["run", str(spec), "-q"]) == 0
    path = tmp_path / "results.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE matches DROP COLUMN luck")
    with ResultStore(f"sqlite:///{path}", create=False) as store:
        rows = list(store.iter_results("old-store"))
    assert len(rows) == 6 and all(r.luck is None for r in rows)
    assert leaderboard_main(["--db", f"sqlite:///{path}", "--json"]) == 0
    # A writer adds the column; the old rows keep no luck value, and count at their raw result.
    with ResultStore(f"sqlite:///{path}") as store:
        assert all(r.luck is None for r in store.iter_results("old-store"))
    with sqlite3.connect(path) as conn:
        assert "luck" in {r[1] for r in conn.execute("PRAGMA table_info(matches)")}
