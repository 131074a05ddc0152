"""``arena web`` and ``arena replay export`` read the results store the way every other
command that only reads it does: ``--db``, else ``$ARENA_DB_URL``, else the default file,
as docs/cli.md says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from arena.tournament.spec import DEFAULT_DB
from arena.tournament.store import ResultStore
from arena.web.cli import export_main


@pytest.mark.parametrize("command", ["web", "replay export"])
def test_the_help_names_the_environment_and_the_default(command: str) -> None:
    help_text = subprocess.run([sys.executable, "-m", "arena.cli", *command.split(), "--help"],
                               capture_output=True, text=True, check=True, timeout=60).stdout
    assert "$ARENA_DB_URL" in help_text and str(DEFAULT_DB) in help_text


def test_replay_export_reads_the_store_named_by_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "results.sqlite3"
    with ResultStore(f"sqlite:///{store}", create=True):
        pass
    monkeypatch.setenv("ARENA_DB_URL", f"sqlite:///{store}")
    monkeypatch.chdir(tmp_path)
    assert export_main(["--tournament", "nothing-here", "--out", str(tmp_path / "out")]) != 0
    said = capsys.readouterr().err
    assert "nothing-here" in said and str(store) in said, said
