"""``arena leaderboard`` as printed: aligned columns, strikes and forfeits, CSV truth values
and a word when several tournaments are pooled (the real commands on a real store)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml

BIN = Path(sys.executable).parent


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    res = subprocess.run([str(BIN / "arena"), *args], text=True, capture_output=True,
                         env=env, cwd=cwd, timeout=300)
    assert res.returncode == 0, (args, res.stdout, res.stderr)
    return res


def run(tmp: Path, name: str, participants: list[Any], games: int, **extra: Any) -> None:
    spec = tmp / f"{name}.yaml"
    spec.write_text(yaml.safe_dump({
        "name": name, "rules": "classic", "participants": participants,
        "format": "round-robin", "games": games, "max_deals": 2, "executor": "inline",
        "db": "sqlite:///results.sqlite3", **extra}))
    arena("tournament", "run", str(spec), "--quiet", cwd=tmp)


def test_the_table_lines_up_and_counts_strikes_and_forfeits(tmp_path: Path) -> None:
    (tmp_path / "striker.py").write_text(textwrap.dedent("""
        class Striker:
            def decide(self, observation, legal):
                return "no such action"
    """))
    randoms = ["random", {"name": "r2", "bot": "random"}, {"name": "r3", "bot": "random"}]
    run(tmp_path, "a", randoms, 12)
    run(tmp_path, "b", randoms, 6)
    run(tmp_path, "c", ["greedy", "random", {"name": "striker", "bot": "striker.py:Striker"}],
        3, time_control={"strike_limit": 2})

    pooled = arena("leaderboard", "--db", "sqlite:///results.sqlite3", cwd=tmp_path).stdout
    lines = pooled.splitlines()
    assert lines[0] == ("3 tournaments pooled into one rating (a, b, c): 21 games; "
                        "--tournament NAME rates one")
    head, rule, *rows = lines[1:]
    rows = [r for r in rows if r[:1].isdigit()]
    assert head.split()[-2:] == ["strikes", "forfeits"]
    # Every column starts after a gap of two spaces on every row: no cell runs into the next.
    starts = [i for i in range(1, len(rule)) if rule[i] == "-" and rule[i - 1] == " "]
    assert len(starts) >= 10, rule
    for row in rows:
        for start in starts:
            assert row[start - 2:start] == "  ", (row, start)
    striker = next(r for r in rows if r.split()[1] == "striker")
    assert striker.split()[-2:] == ["6", "3"]  # 2 strikes and a forfeit in each of 3 games

    one = arena("leaderboard", "--db", "sqlite:///results.sqlite3", "-t", "a", cwd=tmp_path)
    assert one.stdout.startswith("tournament a: 12 games\n")

    table = arena("leaderboard", "--db", "sqlite:///results.sqlite3", "--csv", cwd=tmp_path)
    assert {r["bounded"] for r in csv.DictReader(io.StringIO(table.stdout))} <= {"true", "false"}
    assert "3 tournaments pooled into one rating (a, b, c)" in table.stderr
    data = json.loads(arena("leaderboard", "--db", "sqlite:///results.sqlite3", "--json",
                            cwd=tmp_path).stdout)
    assert data["tournaments"] == ["a", "b", "c"]
    assert {r["player"]: (r["strikes"], r["forfeits"]) for r in data["rows"]}["striker"] == (
        6, 3)
