"""Matches a gateway plays (``arena match --gateway``) appear on the real web server when
the gateway keeps them (``arena serve --store``): live, in the match list, with a replay."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

from web_support import ARENA, env, get, get_json, web_server


def test_a_gateway_match_is_listed_live_and_stored(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'results.sqlite3'}"
    gateway = subprocess.Popen(
        [*ARENA, "serve", "--port", "0", "--db", str(tmp_path / "bots.sqlite3"),
         "--organiser-token", "org", "--store", db], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, env=env(), start_new_session=True)
    try:
        assert gateway.stdout is not None
        address = ""
        for line in gateway.stdout:
            found = re.search(r"gateway listening on ([\d.]+:\d+)", line)
            if found:
                address = found.group(1)
                break
        assert address
        played = subprocess.run(
            [*ARENA, "match", "--gateway", address, "--token", "org", "--seed", "web",
             "--max-deals", "2", "--json", "greedy", "greedy", "random"], text=True,
            capture_output=True, env=env(), cwd=tmp_path, timeout=120)
        assert played.returncode == 0, played.stderr
        match_id = json.loads(played.stdout[played.stdout.index("{\n"):])["match_id"]
        with web_server(db, tmp_path / "web.log") as web:
            live = {m["match_id"]: m for m in get_json(f"{web.url}/api/live")["matches"]}
            assert live[match_id]["executor"] == "gateway", live
            assert live[match_id]["tournament"] is None
            listed = get_json(f"{web.url}/api/matches")
            row = next(m for m in listed["matches"] if m["match_id"] == match_id)
            assert row["tournament"] == "" and row["status"] == "completed"
            assert row["worker"] == f"gateway {address}"
            replay = get_json(f"{web.url}/api/matches/{match_id}/replay")
            assert replay["seed"] == "web" and len(replay["deals"]) == 2
            status, page = get(f"{web.url}/matches")
            assert status == 200 and b"played on a gateway, in no tournament" in page
            status, page = get(f"{web.url}/matches/{match_id}")
            assert status == 200 and b"played on a gateway" in page
        # Kept, but in no tournament: no leaderboard rates it.
        board = subprocess.run([*ARENA, "leaderboard", "--db", db, "--json"], text=True,
                               capture_output=True, env=env(), timeout=60, check=True)
        assert json.loads(board.stdout)["matches"] == 0
    finally:
        os.killpg(gateway.pid, signal.SIGTERM)
        gateway.wait(timeout=60)
