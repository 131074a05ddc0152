"""``arena bench stdio`` runs end to end and prints its figures (measured, never asserted:
speed is a benchmark's business, not a test's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from stdio_support import Starter


def test_bench_stdio_prints_the_figures_of_each_bot_as_json(starters: dict[str, Starter]) -> None:
    c = " ".join(starters["c"].argv)
    out = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bench", "stdio", "--matches", "1", "--deals", "2",
         "--rounds", "1", "--program", f"c={c}", "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)
    assert set(figures["bots"]) == {"sdk", "stdio", "c"}
    # The same logic both ways plays the same seeded matches: the same decisions.
    assert figures["bots"]["sdk"]["decisions"] == figures["bots"]["stdio"]["decisions"] > 0
    for bot in figures["bots"].values():
        assert bot["mean_us"] > 0 and bot["p50_us"] > 0
    assert figures["ratio"] > 0 and figures["goal_ratio"] == 1.2
    assert isinstance(figures["within_goal"], bool)
    assert "public seed" not in out.stderr  # the bench's own bots: no warnings


def test_bench_stdio_refuses_a_bad_program_option() -> None:
    out = subprocess.run([sys.executable, "-m", "arena.cli", "bench", "stdio", "--program",
                          "sdk=./x"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "expected NAME=COMMAND" in out.stderr


def test_bench_stdio_says_in_one_line_that_a_program_cannot_be_started(tmp_path: Path) -> None:
    """A starter that was not built yet is a user's mistake: one line, exit 2, no traceback."""
    out = subprocess.run([sys.executable, "-m", "arena.cli", "bench", "stdio", "--program",
                          f"c={tmp_path / 'mybot'}"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "is not a program that can be started" in out.stderr
    assert "Traceback" not in out.stderr
