"""The documented exit codes and settings are the ones the code uses."""

from __future__ import annotations

import re
from pathlib import Path

from arena.tournament.executors import BROKER_RETRY_ENV, LOST_AFTER_ENV
from arena.tournament.store import DEFAULT_RETRY_S, RETRY_ENV

DOC = Path(__file__).resolve().parents[2] / "docs" / "tournaments.md"


def test_exit_code_table_matches_the_code() -> None:
    """One table for every command (docs/cli.md); the tournament commands use its codes."""
    from arena import exitcodes

    text = (DOC.parent / "cli.md").read_text()
    table = dict(re.findall(r"^\| (\d+) \| ([^|]+) \|", text, flags=re.M))
    assert {int(k) for k in table} == {
        exitcodes.OK, exitcodes.FAILED, exitcodes.USAGE, exitcodes.UNAVAILABLE,
        exitcodes.REFUSED, exitcodes.INTERRUPTED, exitcodes.BROKEN_PIPE, exitcodes.TERMINATED,
    }
    assert "Ctrl-C" in table[str(exitcodes.INTERRUPTED)]
    assert "SIGTERM" in table[str(exitcodes.TERMINATED)]
    assert "cannot be reached" in table[str(exitcodes.UNAVAILABLE)]
    assert "cli.md#exit-codes" in DOC.read_text()


def test_unattended_settings_are_documented() -> None:
    text = DOC.read_text()
    for name in (RETRY_ENV, LOST_AFTER_ENV, BROKER_RETRY_ENV):
        assert f"`{name}`" in text, name
    assert (
        f"(default\n  {int(DEFAULT_RETRY_S)})" in text or f"default {int(DEFAULT_RETRY_S)}" in text
    )
