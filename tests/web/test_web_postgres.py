"""``arena web`` on a PostgreSQL store (a fresh schema), filled by a real tournament."""

from __future__ import annotations

import json
from pathlib import Path

from tournament_support import pg_schema
from web_support import arena, get, get_json, web_server, write_spec

from arena.tournament.store import ResultStore


def test_pages_and_filters_on_postgresql(tmp_path: Path) -> None:
    with pg_schema() as db:
        spec = write_spec(tmp_path / "pg.json", {
            "name": "pg-cup", "seed": "pg", "rules": "classic",
            "participants": [{"name": "greedy", "bot": "greedy"},
                             {"name": "random-a", "bot": "random"},
                             {"name": "blunder", "bot": "web_bots:Blunderer"}],
            "format": {"type": "duplicate"}, "sets": 2, "max_deals": 8,
            "executor": {"type": "inline"}, "db": db})
        arena("tournament", "run", str(spec), "--quiet")
        with ResultStore(db) as store:
            recs = list(store.iter_results("pg-cup"))
        with web_server(db, tmp_path / "web.log") as web:
            cli = json.loads(arena("leaderboard", "--db", db, "--tournament", "pg-cup",
                                   "--json").stdout)
            assert get_json(f"{web.url}/api/tournaments/pg-cup/leaderboard") == cli
            for flag, keep in (("illegal", lambda r: sum(r.illegal) > 0),
                               ("timeouts", lambda r: sum(r.timeouts) > 0),
                               ("forfeits", lambda r: r.forfeit_seat is not None)):
                page = get_json(f"{web.url}/api/matches?{flag}=1&per_page=200")
                assert page["total"] == sum(1 for r in recs if keep(r)), flag
            page = get_json(f"{web.url}/api/matches?bot=blunder&status=forfeit")
            assert page["total"] == sum(1 for r in recs if r.status == "forfeit")
            newest = get_json(f"{web.url}/api/matches?per_page=5")["matches"]
            assert [m["finished_at"] for m in newest] == sorted(
                (r.finished_at for r in recs), reverse=True)[:5]
            status, body = get(f"{web.url}/matches/{recs[0].match_id}?at=1.3")
            assert status == 200 and b'id="viewer"' in body
            frames = get_json(f"{web.url}/api/matches/{recs[0].match_id}/frames?deal=1")
            assert frames["deal"] == 1 and frames["frames"][0]["step"] == 0
            for path in ("/", "/tournaments/pg-cup", "/bots/blunder", "/matches", "/live"):
                assert get(web.url + path)[0] == 200, path
