"""``arena tournament verify`` on a tournament dealt from a public seed: every stored match
is checked against the seed, and a changed deck or result is found."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import yaml

from arena.tournament.store import pack_replay, unpack_replay

BIN = Path(sys.executable).parent


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    return subprocess.run([str(BIN / "arena"), *args], text=True, capture_output=True,
                          env=env, cwd=cwd, timeout=300)


def test_a_public_seed_tournament_verifies_against_its_seed(tmp_path: Path) -> None:
    spec = tmp_path / "open.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "open", "seed": "open-2026", "rules": "classic",
        "participants": ["greedy", "random", {"name": "r2", "bot": "random"}],
        "format": "duplicate", "sets": 1, "max_deals": 2, "executor": "inline",
        "db": "sqlite:///open.sqlite3"}))
    assert arena("tournament", "run", str(spec), "-q", cwd=tmp_path).returncode == 0
    ok = arena("tournament", "verify", str(spec), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("OK: open: public seed 'open-2026'; 6 matches")
    refused = arena("tournament", "verify", str(spec), "--commitment", "0" * 64, cwd=tmp_path)
    assert refused.returncode == 2 and "public seed" in refused.stderr

    db = sqlite3.connect(tmp_path / "open.sqlite3")
    (match_id, blob), *_ = db.execute("SELECT match_id, replay FROM matches ORDER BY idx")
    replay = unpack_replay(blob)
    deck = replay["deals"][0]["deck"]
    deck[0], deck[1] = deck[1], deck[0]
    db.execute("UPDATE matches SET replay = ? WHERE match_id = ?", (pack_replay(replay), match_id))
    db.commit()
    bad = arena("tournament", "verify", str(spec), cwd=tmp_path)
    assert bad.returncode == 1
    assert f"MISMATCH: match 0 ({match_id}): the replay does not verify: deals[0].deck: not " \
           "the shuffle of the seed" in bad.stdout
