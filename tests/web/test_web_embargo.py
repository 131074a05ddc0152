"""Games of a duplicate set share their deals: nothing of an incomplete set is shown."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

from web_support import arena, get, get_json, web_server, write_spec

from arena.observability.live import publishing
from arena.tournament.formats import make_format
from arena.tournament.spec import load_spec
from arena.tournament.store import ResultStore


def _first_event(url: str) -> tuple[str, str]:
    with urllib.request.urlopen(url, timeout=30) as r:
        kind = ""
        for raw in r:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind in ("embargo", "events"):
                return kind, line[6:]
    raise AssertionError("the stream ended without an event")


def test_an_incomplete_duplicate_set_stays_closed(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'sets.sqlite3'}"
    spec_path = write_spec(tmp_path / "sets.json", {
        "name": "sets", "seed": "sets-seed", "rules": "classic",
        "participants": [{"name": "greedy", "bot": "greedy"}, {"name": "a", "bot": "random"},
                         {"name": "b", "bot": "random"}],
        "format": {"type": "duplicate"}, "sets": 2, "max_deals": 3,
        "executor": {"type": "inline"}, "db": db})
    arena("tournament", "run", str(spec_path), "--quiet", "--max-matches", "3")
    with ResultStore(db) as store:
        played = list(store.iter_results("sets"))
    assert len(played) == 3 and {r.group for r in played} == {"set-0"}
    later = next(m for m in make_format(load_spec(spec_path)).next_batch({}) or []
                 if m.group == "set-0" and m.match_id not in {r.match_id for r in played})
    with web_server(db, tmp_path / "web.log") as web:
        listed = get_json(f"{web.url}/api/matches")["matches"]
        assert all(m["seed"] is None and m["embargoed"] for m in listed)
        one = played[0].match_id
        assert get_json(f"{web.url}/api/matches/{one}")["seed"] is None
        for path in (f"/api/matches/{one}/replay", f"/api/matches/{one}/frames",
                     f"/api/matches/{one}/record"):
            status, body = get(web.url + path)
            assert status == 403 and b"3 of 6 games stored" in body, path
        status, body = get(f"{web.url}/matches/{one}")
        assert status == 403 and b"duplicate set" in body
        assert played[0].seed.encode() not in get(f"{web.url}/matches")[1]
        assert b"sets-seed" not in get(f"{web.url}/api/tournaments/sets")[1]
        # A game of the set being played now: spectators are held back, not shown cards.
        with publishing(later, executor="inline", worker="here", redis_url=None,
                        db_url=db) as pub:
            assert pub is not None
            asyncio.run(pub({"type": "match_start", "match_id": later.match_id,
                             "seats": list(later.players)}))
            asyncio.run(pub({"type": "action", "seat": 0, "action": "play AS"}))
            kind, data = _first_event(f"{web.url}/api/live/{later.match_id}/events")
            assert kind == "embargo" and "AS" not in data
    with web_server(db, tmp_path / "open.log", "--open-sets") as web:
        kind, data = _first_event(f"{web.url}/api/live/{later.match_id}/events")
        assert kind == "events" and "match_start" in json.loads(data)[0]["type"]
    arena("tournament", "run", str(spec_path), "--quiet")
    with web_server(db, tmp_path / "web2.log") as web:
        status, body = get(f"{web.url}/api/matches/{played[0].match_id}/replay")
        assert status == 200 and json.loads(body)["seed"] == played[0].seed
        assert get(f"{web.url}/matches/{played[0].match_id}")[0] == 200
