"""Hosted bots in the browser: a page per bot (its versions with status and rating, recent
matches with each hosted seat's status), its logs for its owner only, and a submit form.

Logs and submissions go through the gateway (``arena web --gateway``) with the token the
owner types in: the gateway is the one that knows whose token it is, and the web process
never stores it (no cookie, no session: the token is sent with the form, used for that one
call, and forgotten).
"""

from __future__ import annotations

import gzip
import io
import json
from typing import Any

from arena.hosted.status import LABELS
from arena.hosted.store import HostedStore, Version
from arena.match.types import JSON
from arena.tournament.store import ResultStore

#: Largest archive the submit form takes (the gateway checks again).
UPLOAD_MAX = 64 << 20


class NoHostedBot(LookupError):
    pass


def _hosted(store: ResultStore) -> HostedStore | None:
    hosted = HostedStore(store)
    return hosted if hosted.has_tables() else None


def hosted_bots(store: ResultStore) -> list[JSON]:
    hosted = _hosted(store)
    if hosted is None:
        return []
    by_bot: dict[str, list[Version]] = {}
    for v in hosted.versions():
        by_bot.setdefault(v.bot, []).append(v)
    return [{
        "bot": bot, "versions": len(vs), "latest": vs[0].short, "status": vs[0].status,
        "runtime": vs[0].runtime, "submitted": vs[0].created_at,
        "playing": next((v.short for v in vs if v.status == "passed"), None),
    } for bot, vs in sorted(by_bot.items())]


def _participants(store: ResultStore, ref: str) -> list[tuple[str, str]]:
    """(tournament, participant) pairs in which a version played."""
    rows = store.query(
        "SELECT DISTINCT tournament, players, bots FROM matches WHERE bots LIKE ?",
        (f'%"{ref}"%',),
    )
    out: set[tuple[str, str]] = set()
    for tournament, players, bots in rows:
        for player, bot in zip(json.loads(players), json.loads(bots), strict=False):
            if bot == ref:
                out.add((tournament, player))
    return sorted(out)


def hosted_bot(store: ResultStore, data: Any, name: str) -> JSON:
    """One hosted bot: versions (status, reason, ratings), and recent seat runs."""
    hosted = _hosted(store)
    versions = hosted.versions(name) if hosted is not None else []
    if not versions:
        raise NoHostedBot(f"no hosted bot '{name}' in this store")
    assert hosted is not None
    out_versions = []
    for v in versions:
        ratings = []
        for tournament, player in _participants(store, v.ref):
            row = next((r for r in data.summary(tournament).leaderboard if r.player == player),
                       None)
            ratings.append({"tournament": tournament, "participant": player,
                            "rating": row.to_json() if row is not None else None})
        out_versions.append({**v.to_json(), "short": v.short, "ratings": ratings})
    runs = hosted.runs(bot=name, limit=30)
    stored = store.done_among([r.match_id for r in runs])
    return {
        "bot": name,
        "versions": out_versions,
        "runs": [{**r.to_json(), "label": r.label, "stored": r.match_id in stored}
                 for r in runs],
    }


def status_label(status: str) -> str:
    return LABELS.get(status, status)


def archive_name(filename: str, data: bytes) -> tuple[str, bytes]:
    """An uploaded archive as it goes to the gateway (zip, tar or gzip, any name)."""
    if data[:2] == b"\x1f\x8b" or data[:4] == b"PK\x03\x04":
        return filename or "bot.archive", data
    with io.BytesIO() as out:
        out.write(gzip.compress(data, mtime=0))
        return (filename or "bot.tar") + ".gz", out.getvalue()
