"""docs/web.md runs as printed: its commands against the test store and web process."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from docblocks import block
from web_support import REPO, arena, get

from arena.tournament.store import ResultStore

DOC = REPO / "docs" / "web.md"


def _commands() -> list[str]:
    """Every command of the manual's four blocks, in order."""
    blocks = [block("docs/web.md", "# fills classic-duplicate.sqlite3"),
              block("docs/web.md", "curl -s localhost:8000/api/tournaments"),
              block("docs/web.md", "arena replay export --db"),
              block("docs/web.md", "arena bench web --live 300")]
    return [line for b in blocks for line in b.commands()]


def test_every_command_of_the_web_manual_runs(
    filled_store: dict[str, Any], web: Any, tmp_path: Path
) -> None:
    db = filled_store["db"]
    with ResultStore(db) as store:
        match_id = next(store.iter_results("web-duplicate")).match_id
    cmds = _commands()
    assert any(c.startswith("arena web") for c in cmds)
    ran = 0
    for cmd in cmds:
        line = (cmd.replace("sqlite:///classic-duplicate.sqlite3", db)
                .replace("classic-duplicate", "web-duplicate").replace("MATCH_ID", match_id)
                .replace("replays/", f"{tmp_path}/replays/"))
        args = shlex.split(line.split("|")[0])
        if args[0] == "curl":
            url = next(a for a in args if "localhost:8000" in a)
            url = url.replace("localhost:8000", f"127.0.0.1:{web.port}")
            if url.endswith("/events"):
                continue  # a live stream: the live tests read it
            status, _ = get("http://" + url.split("://")[-1])
            assert status == 200, (cmd, status)
            ran += 1
            continue
        assert args[0] == "arena", cmd
        if args[1] in ("web", "bench") or args[1:3] == ["tournament", "run"]:
            # Long-running: check that every option printed is one the command takes.
            sub = args[1:3] if args[1] in ("bench", "tournament") else args[1:2]
            helptext = arena(*sub, "--help").stdout
            for opt in (a for a in args if a.startswith("--")):
                assert opt in helptext, (cmd, opt)
            ran += 1
            continue
        res = arena(*args[1:])
        assert res.returncode == 0, (cmd, res.stderr)
        ran += 1
    assert ran >= 8
    assert (tmp_path / "replays" / f"{match_id}.json").exists()
