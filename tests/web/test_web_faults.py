"""Faults are normal: Redis away and back, for the publishers and for ``arena web``."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from tournament_support import free_port, wait_for
from web_support import arena, get, web_server, write_spec

from arena.tournament.store import ResultStore


def _redis(port: int, tmp: Path) -> subprocess.Popen[bytes]:
    exe = shutil.which("redis-server")
    assert exe is not None
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc


def test_matches_are_played_when_the_live_redis_is_down(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'down.sqlite3'}"
    dead = f"redis://127.0.0.1:{free_port()}/0"
    spec = write_spec(tmp_path / "down.json", {
        "name": "down", "seed": "down", "rules": "classic",
        "participants": [{"name": "a", "bot": "greedy"}, {"name": "b", "bot": "random"},
                         {"name": "c", "bot": "random"}],
        "format": {"type": "round-robin"}, "games": 6, "max_deals": 3,
        "executor": {"type": "inline", "routing": dead}, "db": db})
    started = time.monotonic()
    res = arena("tournament", "run", str(spec), "--quiet")
    assert "live events of match" in res.stderr  # said once, not per event
    assert res.stderr.count("live events of match") == 1
    assert time.monotonic() - started < 60
    with ResultStore(db) as store:
        assert store.count("down") == 6


def test_web_says_when_redis_is_away_and_recovers(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'web.sqlite3'}"
    ResultStore(db).close()
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    redis_proc = _redis(port, tmp_path)
    try:
        with web_server(db, tmp_path / "web.log", "--routing", url) as web:
            wait_for(lambda: get(web.url + "/api/live")[0] == 200, what="live API")
            redis_proc.terminate()
            redis_proc.wait(timeout=10)
            status, body = get(web.url + "/api/live")
            assert status == 503 and b"cannot be read right now" in body
            assert get(web.url + "/live")[0] == 200  # the page still renders, empty
            assert get(web.url + "/")[0] == 200
            redis_proc = _redis(port, tmp_path)
            wait_for(lambda: get(web.url + "/api/live")[0] == 200, timeout=30,
                     what="live API after Redis came back")
    finally:
        redis_proc.terminate()
        redis_proc.wait(timeout=10)
