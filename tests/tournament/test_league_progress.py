"""A league as an organiser runs it, with the real commands: check warns of a field too
small to play, run says what it waits for, counts towards its rounds, marks each round,
and serves a planned total for the dashboards."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from tournament_support import free_port

BIN = Path(sys.executable).parent


def league(tmp: Path, participants: list[Any], rounds: int) -> Path:
    spec = tmp / "league.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "league", "rules": "classic", "participants": participants,
        "format": {"type": "league", "rounds": rounds, "poll_s": 0.2}, "sets": 1,
        "max_deals": 1, "executor": "inline", "db": "sqlite:///league.sqlite3"}))
    return spec


def arena(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    return subprocess.Popen([str(BIN / "arena"), *args], text=True, cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def test_a_league_too_small_to_play_is_warned_of_and_waits_saying_why(tmp_path: Path) -> None:
    spec = league(tmp_path, ["greedy", "random"], rounds=1)
    check = arena("tournament", "check", str(spec), cwd=tmp_path)
    out, err = check.communicate(timeout=60)
    assert check.returncode == 0, err
    assert "waits for 1 more participant(s) before its first round" in out
    assert "warning: participants: 2 for 3 seats: the league plays nothing until at least 3 " \
           "are listed" in err

    run = arena("tournament", "run", str(spec), cwd=tmp_path)
    try:
        assert run.stderr is not None
        for line in run.stderr:
            if "waiting for participants" in line:
                assert f"2 listed for 3 seats; add bots to {spec}" in line, line
                break
        # A third bot joins: the league plays its round and ends.
        league(tmp_path, ["greedy", "random", {"name": "r2", "bot": "random"}], rounds=1)
        assert run.wait(timeout=120) == 0
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)


def test_a_league_of_fixed_rounds_counts_towards_them_and_marks_each_round(
    tmp_path: Path,
) -> None:
    spec = league(tmp_path, ["greedy", "random", {"name": "r2", "bot": "random"},
                             {"name": "r3", "bot": "random"}], rounds=2)
    port = free_port()
    run = arena("tournament", "run", str(spec), "--metrics-port", str(port),
                "--metrics-linger", "inf", cwd=tmp_path)
    lines: list[str] = []
    try:
        assert run.stderr is not None
        for line in run.stderr:
            lines.append(line)
            if "serving metrics on" in line:
                break
        text = "".join(lines)
        # 4 bots, 3 seats: one table a round, one bot sitting out; 6 games a duplicate set.
        assert "league [" in text and "0/12 games" in text, text
        # Every line with a total has a rate and an ETA (``--`` before the first game).
        bars = [ln for ln in lines if ln.startswith("league [")]
        assert bars and all(
            re.fullmatch(r"league \[[#.]{24}\] \d+/12 games \(\d+%\)  [\d.]+ games/s  "
                         r"ETA (--|\S+)(  - .*)?", ln.rstrip("\n")) for ln in bars), bars
        assert "league: round 1 of 2: 1 table(s), 6 matches" in text
        assert "league: round 2 of 2: 1 table(s), 6 matches" in text
        assert "league: finished; played 12 matches" in text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            metrics = r.read().decode()
        assert 'arena_tournament_matches{tournament="league"} 12.0' in metrics
        assert 'arena_tournament_matches_done{tournament="league"} 12.0' in metrics
    finally:
        os.killpg(run.pid, signal.SIGTERM)
        run.wait(timeout=30)
