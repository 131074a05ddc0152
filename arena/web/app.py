"""The ``arena web`` application: pages for people, the same data as JSON for programs.

FastAPI serves both: each page has a JSON twin under ``/api`` (listed at ``/api`` and in
``/openapi.json``), pages are Jinja2 templates rendered on the server, and the little
JavaScript there is (replay stepping, live spectating) is plain files under ``static/``:
nothing to build.  Live matches come from :mod:`arena.observability.live` as Server-Sent
Events, filtered once more to public fields here, with an optional delay.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import math
import re
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import anyio
from fastapi import FastAPI, File, Form, Query, Request, UploadFile
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape
from starlette.middleware.gzip import GZipMiddleware

from arena.observability.live import LiveMatch, LiveReader, public_event, spool_dir_for
from arena.server.tls import ClientTls, aio_channel
from arena.tournament.leaderboard import has_adjusted, interval_text, unbounded_note
from arena.tournament.store import StoreError
from arena.web import svg
from arena.web.data import MATCH_ID_RE, STATUSES, Embargoed, NotFound, WebData, match_json
from arena.web.frames import FramesError, frame_index, parse_position
from arena.web.hosted import (
    UPLOAD_MAX,
    NoHostedBot,
    archive_name,
    hosted_bot,
    hosted_bots,
    status_label,
)

HERE = Path(__file__).resolve().parent
JSON = dict[str, Any]
#: Longest spectating delay a viewer may ask for, in seconds.
MAX_DELAY_S = 3600.0
#: A comment line keeps idle event streams (and proxies) open.
KEEPALIVE_S = 15.0
#: How often a spectator's stream looks for new events, and after how long a silence it
#: checks whether the match is still on.
POLL_S = 0.2
STATE_CHECK_S = 2.0
#: ``scheme://user:password@`` in an error message: the password never reaches a page.
_PASSWORD_IN_URL = re.compile(r"(://[^:/@\s]*):[^@\s]*@")
SUITS = {"C": ("♣", "black"), "S": ("♠", "black"), "H": ("♥", "red"), "D": ("♦", "red")}


def _when(ts: float | None) -> str:
    if not ts:
        return "-"
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _ago(ts: float | None) -> str:
    if not ts:
        return "-"
    s = max(0.0, time.time() - ts)
    if s < 90:
        return f"{s:.0f} s ago"
    if s < 5400:
        return f"{s / 60:.0f} min ago"
    if s < 172800:
        return f"{s / 3600:.0f} h ago"
    return f"{s / 86400:.0f} days ago"


def _duration(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "-"
    s = max(0, round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s" if m else f"{sec}s"


def _interval_filter(row: Any, adjusted: bool = False) -> str:
    """A leaderboard row's interval exactly as ``arena leaderboard`` prints it."""
    if adjusted:
        return interval_text(row.adj_rating, row.adj_ci_low, row.adj_ci_high, row.adj_bounded)
    return interval_text(row.rating, row.ci_low, row.ci_high, row.bounded)


def _num(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.{digits}f}"


def _ms(v: Any) -> str:
    """A latency: microseconds for in-process bots, milliseconds for remote ones."""
    if v is None or not math.isfinite(v):
        return "-"
    return f"{v * 1000:.0f} µs" if v < 1 else f"{v:.1f} ms"


def _code(text: str) -> Markup:
    """Docstring text with `backticks` shown as code (everything else escaped)."""
    parts = str(escape(text)).split("`")
    return Markup("".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)))


def _card(text: str) -> dict[str, str]:
    rank, suit = text[:-1], text[-1:]
    sym, colour = SUITS.get(suit, ("?", "black"))
    return {"rank": "10" if rank == "T" else rank, "suit": sym, "colour": colour}


def public_spec(spec: JSON, *, finished: bool) -> JSON:
    """The spec as visitors may see it: no database or broker URLs (they may hold
    passwords), and no seed until the tournament is over (every deal derives from it)."""
    out = {k: v for k, v in spec.items() if k != "db"}
    executor = dict(spec.get("executor") or {})
    for key in ("broker", "routing"):
        executor.pop(key, None)
    out["executor"] = executor
    if not finished and "seed" in out:
        out["seed"] = "(hidden until the tournament is over)"
    return out


def _unavailable_errors() -> list[type[Exception]]:
    """Exceptions that mean a service is down rather than a bug: answered with 503."""
    import sqlite3

    import redis

    kinds: list[type[Exception]] = [StoreError, sqlite3.OperationalError, redis.RedisError]
    try:
        import psycopg

        kinds.append(psycopg.OperationalError)
    except ImportError:  # pragma: no cover
        pass
    return kinds


def create_app(
    db_url: str,
    *,
    routing_url: str | None = None,
    live_dir: Path | None = None,
    min_delay_s: float = 0.0,
    n_bootstrap: int | None = None,
    max_spectators: int = 256,
    live_threads: int = 8,
    open_sets: bool = False,
    gateway: str | None = None,
    gateway_tls: ClientTls | None = None,
) -> FastAPI:
    """The application for one results store; live matches from Redis and/or the spool."""
    data = WebData(db_url) if n_bootstrap is None else WebData(db_url, n_bootstrap=n_bootstrap)
    live = LiveReader(routing_url, live_dir or spool_dir_for(db_url))
    app = FastAPI(
        title="Thousand Arena",
        description="Tournaments, leaderboards, matches, replays and live spectating. "
        "Every page has a JSON twin under /api; live events are Server-Sent Events.",
        version="1",
        docs_url=None,
        redoc_url=None,
    )
    data.close_sets = not open_sets
    app.state.data = data
    app.state.live = live
    live_limiter = anyio.CapacityLimiter(live_threads)
    streams = {"open": 0}
    app.add_middleware(GZipMiddleware, minimum_size=2048)

    @app.middleware("http")
    async def _headers(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "SAMEORIGIN")
        return response
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    templates = Jinja2Templates(directory=HERE / "templates")
    env = templates.env
    env.filters.update(when=_when, ago=_ago, duration=_duration, num=_num, card=_card, ms=_ms,
                       interval=_interval_filter,
                       code=_code, q=lambda s: quote(str(s), safe=""))
    env.globals.update(suits=SUITS, statuses=STATUSES)

    def page(request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, ctx, status_code=status)

    def wants_html(request: Request) -> bool:
        return not request.url.path.startswith("/api")

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> Response:
        if wants_html(request):
            return page(request, "error.html", 404, title="Not found", message=str(exc))
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(Embargoed)
    async def embargoed(request: Request, exc: Embargoed) -> Response:
        if wants_html(request):
            return page(request, "error.html", 403, title="Not yet", message=str(exc))
        return JSONResponse({"detail": str(exc)}, status_code=403)

    @app.exception_handler(FramesError)
    async def bad_replay(request: Request, exc: FramesError) -> Response:
        msg = f"this match's replay cannot be re-played: {exc}"
        if wants_html(request):
            return page(request, "error.html", 422, title="Unreadable replay", message=msg)
        return JSONResponse({"detail": msg}, status_code=422)

    async def unavailable(request: Request, exc: Exception) -> Response:
        # The store or Redis went away: say so (the next request tries again).
        detail = _PASSWORD_IN_URL.sub(r"\1:***@", " ".join(str(exc).split()))
        msg = f"the results store or the live feed cannot be read right now: {detail}"
        if wants_html(request):
            return page(request, "error.html", 503, title="Unavailable", message=msg)
        return JSONResponse({"detail": msg}, status_code=503)

    for kind in _unavailable_errors():
        app.add_exception_handler(kind, unavailable)

    def tournament_rows() -> list[JSON]:
        live_by_t: dict[str, int] = {}
        for m in safe_live():
            if m.state == "running":
                t = str(m.meta.get("tournament"))
                live_by_t[t] = live_by_t.get(t, 0) + 1
        out = []
        for info in data.tournament_infos():
            spec = info.spec
            prog = data.progress(info, live_by_t.get(info.name, 0))
            out.append({
                "name": info.name,
                "format": spec.get("format", {}).get("type"),
                "rules": spec.get("rules", {}).get("preset"),
                "participants": [p.get("name") for p in spec.get("participants", [])],
                "created_at": info.created_at,
                "matches": info.matches,
                "live": live_by_t.get(info.name, 0),
                "progress": prog,
            })
        return out

    def safe_live() -> list[Any]:
        try:
            return live.matches()
        except Exception:
            return []

    def tournament_detail(name: str) -> JSON:
        info = data.info(name)
        s = data.summary(name)
        running_here = [m for m in safe_live()
                        if m.meta.get("tournament") == name and m.state == "running"]
        progress = data.progress(info, len(running_here))
        return {
            "name": name,
            "spec": public_spec(info.spec, finished=bool(progress["finished"])),
            "created_at": info.created_at,
            "progress": progress,
            "live": [m.to_json() for m in running_here],
            "sprt": s.sprt,
        }

    # ---------------------------------------------------------------- JSON API

    @app.get("/api/tournaments", tags=["tournaments"], summary="Tournaments and leagues")
    def api_tournaments() -> list[JSON]:
        """Every tournament in the store with its format, progress and live matches."""
        return tournament_rows()

    @app.get("/api/tournaments/{name}", tags=["tournaments"], summary="One tournament")
    def api_tournament(name: str) -> JSON:
        """Spec, progress (done, planned, pace, ETA), live matches and the SPRT status."""
        return tournament_detail(name)

    @app.get("/api/tournaments/{name}/leaderboard", tags=["tournaments"],
             summary="Leaderboard with 95% intervals")
    def api_leaderboard(name: str) -> JSON:
        """The same object as `arena leaderboard --tournament NAME --json`."""
        return data.leaderboard_json(name)

    @app.get("/api/tournaments/{name}/history", tags=["tournaments"],
             summary="Rating history")
    def api_history(name: str) -> JSON:
        """Ratings after growing numbers of results (x: results counted, in finishing order)."""
        return data.summary(name).history

    @app.get("/api/tournaments/{name}/head-to-head", tags=["tournaments"],
             summary="Head-to-head table")
    def api_h2h(name: str) -> JSON:
        """For each ordered pair: games together, wins, ties and the row player's score."""
        return data.summary(name).head_to_head

    @app.get("/api/tournaments/{name}/sprt", tags=["tournaments"], summary="SPRT status")
    def api_sprt(name: str) -> JSON:
        """LLR after each duplicate set, bounds and decision (404 for other formats)."""
        s = data.summary(name)
        if s.sprt is None:
            raise NotFound(f"tournament '{name}' is not an SPRT match")
        return s.sprt

    @app.get("/api/matches", tags=["matches"], summary="Stored matches")
    def api_matches(
        tournament: str | None = Query(None, max_length=200),
        bot: str | None = Query(None, max_length=200, description="participant name"),
        status: str | None = Query(None, pattern="^(completed|forfeit|aborted|error)$"),
        forfeits: bool = Query(False, description="only matches a seat forfeited"),
        timeouts: bool = Query(False, description="only matches with a timeout"),
        illegal: bool = Query(False, description="only matches with an illegal move"),
        page: int = Query(1, ge=1, le=1_000_000),
        per_page: int = Query(50, ge=1, le=200),
    ) -> JSON:
        """Newest first; `total` and `pages` count every match the filter keeps."""
        return data.matches(tournament=tournament, bot=bot, status=status, forfeits=forfeits,
                            timeouts=timeouts, illegal=illegal, page=page, per_page=per_page)

    @app.get("/api/matches/{match_id}", tags=["matches"], summary="One match")
    def api_match(match_id: str) -> JSON:
        """The stored result: players, scores, ranks, per-seat statistics (no replay)."""
        rec = data.match(match_id)
        out = match_json(rec)
        if data.embargo(rec.tournament, rec.group) is not None:
            out.update(seed=None, embargoed=True)
        return out

    @app.get("/api/matches/{match_id}/replay", tags=["matches"], summary="Replay file")
    def api_replay(match_id: str) -> Response:
        """The replay as stored (`arena replay verify` and `show` read it; docs/replay.md)."""
        body = json.dumps(data.replay(match_id), indent=1)
        return Response(body, media_type="application/json", headers={
            "Content-Disposition": f'attachment; filename="{match_id}.json"'})

    @app.get("/api/matches/{match_id}/record", tags=["matches"], summary="Text record")
    def api_record(match_id: str) -> PlainTextResponse:
        """The game told deal by deal (as `arena replay show`)."""
        from arena.engine import replay as rp

        return PlainTextResponse(rp.show(data.replay(match_id)) + "\n")

    @app.get("/api/matches/{match_id}/frames", tags=["matches"], summary="Replay frames")
    def api_frames(
        match_id: str, deal: int = Query(0, ge=0, description="deal number in the replay")
    ) -> JSON:
        """The table after each step of one deal (every hand: the match is over), plus the
        summary of every deal; the viewer fetches one deal at a time."""
        full = data.frames(match_id)
        deals = full["deals"]
        if not deals:
            return {**{k: v for k, v in full.items() if k != "frames"}, "deal": 0, "frames": []}
        d = min(deal, len(deals) - 1)
        first = deals[d]["first_frame"]
        frames = full["frames"][first:first + deals[d]["steps"]]
        return {**{k: v for k, v in full.items() if k != "frames"}, "deal": d, "frames": frames}

    @app.get("/api/live", tags=["live"], summary="Matches being played")
    def api_live() -> JSON:
        """Running (and recently ended) matches on every executor; no seed, no cards."""
        return {"source": live.source, "matches": [m.to_json() for m in live.matches()]}

    @app.get("/api/live/{match_id}", tags=["live"], summary="One live match")
    def api_live_match(match_id: str) -> JSON:
        """Who plays, where, since when, and whether it still runs."""
        return live_meta(match_id).to_json()

    def live_meta(match_id: str) -> LiveMatch:
        if not MATCH_ID_RE.match(match_id):
            raise NotFound(f"no live match '{match_id}'")
        m = live.meta(match_id)
        if m is None:
            raise NotFound(f"no live match '{match_id}' (it may have ended over an hour ago)")
        return m

    @app.get("/api/live/{match_id}/events", tags=["live"], summary="Live events (SSE)")
    async def api_live_events(
        request: Request,
        match_id: str,
        delay: float = Query(0.0, ge=0.0, le=MAX_DELAY_S, description="seconds behind play"),
    ) -> Response:
        """`text/event-stream`: `event: events` with a JSON list of public events, from
        the first one; `event: end` after the match ends.  `Last-Event-ID` resumes."""
        meta = await asyncio.to_thread(live_meta, match_id)
        why = await asyncio.to_thread(
            data.embargo, str(meta.meta.get("tournament")), str(meta.meta.get("group") or ""))
        if why is not None:
            # Sent as a stream so the browser's EventSource comes back by itself, and the
            # match opens as soon as its duplicate set is complete.
            body = json.dumps({"detail": str(why), "done": why.done, "size": why.size})
            return Response(f"retry: 5000\nevent: embargo\ndata: {body}\n\n",
                            media_type="text/event-stream",
                            headers={"Cache-Control": "no-cache"})
        if streams["open"] >= max_spectators:
            return JSONResponse(
                {"detail": f"{max_spectators} spectators are watching already; try later"},
                status_code=503, headers={"Retry-After": "10"})
        wait = max(delay, min_delay_s)
        cursor = request.headers.get("last-event-id") or None
        return StreamingResponse(
            event_stream(request, match_id, cursor, wait), media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def in_thread(func: Any, *args: Any) -> Any:
        # Live reads take threads of their own: spectators never starve the pages.
        return await anyio.to_thread.run_sync(func, *args, limiter=live_limiter)

    async def event_stream(
        request: Request, match_id: str, cursor: str | None, delay: float
    ) -> AsyncIterator[bytes]:
        streams["open"] += 1
        try:
            async for chunk in _event_stream(request, match_id, cursor, delay):
                yield chunk
        finally:
            streams["open"] -= 1

    async def _event_stream(
        request: Request, match_id: str, cursor: str | None, delay: float
    ) -> AsyncIterator[bytes]:
        pending: list[Any] = []
        last_sent = time.monotonic()
        quiet_since = time.monotonic()
        ended = False
        yield f"retry: 2000\nevent: hello\ndata: {json.dumps({'delay': delay})}\n\n".encode()
        while not await request.is_disconnected():
            if not ended:
                batches = await in_thread(live.read, match_id, cursor)
                for b in batches:
                    cursor = b.cursor
                    if b.events:
                        pending.append(b)
                if batches:
                    quiet_since = time.monotonic()
            now = time.time()
            while pending and pending[0].at + delay <= now:
                b = pending.pop(0)
                events = [e for e in (public_event(x) for x in b.events) if e is not None]
                if events:
                    body = json.dumps(events, separators=(",", ":"))
                    yield f"id: {b.cursor}\nevent: events\ndata: {body}\n\n".encode()
                    last_sent = time.monotonic()
                if any(e["type"] == "match_end" for e in events):
                    ended = True
            if ended and not pending:
                yield b"event: end\ndata: {}\n\n"
                return
            if not ended and not pending and time.monotonic() - quiet_since > STATE_CHECK_S:
                quiet_since = time.monotonic()
                meta = await in_thread(live.meta, match_id)
                if meta is None or meta.state == "ended":
                    # Ended without a match_end event (aborted), or expired: read once more.
                    rest = await in_thread(live.read, match_id, cursor)
                    pending.extend(b for b in rest if b.events)
                    for b in rest:
                        cursor = b.cursor
                    if not pending:
                        yield b"event: end\ndata: {}\n\n"
                        return
            if time.monotonic() - last_sent > KEEPALIVE_S:
                yield b": keep-alive\n\n"
                last_sent = time.monotonic()
            if pending:
                await asyncio.sleep(min(0.5, max(0.02, pending[0].at + delay - time.time())))
            else:
                await asyncio.sleep(POLL_S)

    @app.get("/api/bots", tags=["bots"], summary="Participants")
    def api_bots() -> list[JSON]:
        """Every participant (ratings are by participant name) and where it played."""
        return data.participants()

    @app.get("/api/bots/{name}", tags=["bots"], summary="One participant")
    def api_bot(name: str) -> JSON:
        """Per tournament: rating, rating history, games, timeouts, illegal moves, latency."""
        return data.bot(name)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> JSON:
        data.store.query("SELECT 1")
        return {"ok": True}

    # ---------------------------------------------------------------- pages

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request) -> HTMLResponse:
        return page(request, "index.html", title="Tournaments", tournaments=tournament_rows(),
                    live_count=sum(1 for m in safe_live() if m.state == "running"))

    @app.get("/tournaments/{name}", response_class=HTMLResponse, include_in_schema=False)
    def tournament_page(request: Request, name: str) -> HTMLResponse:
        detail = tournament_detail(name)
        s = data.summary(name)
        rows = s.leaderboard
        hist = s.history
        # One colour a player on the whole page, in the order of the leaderboard.
        colours = svg.colours_for([r.player for r in rows] + sorted(
            {x["player"] for x in hist["series"]} - {r.player for r in rows}))
        # No bar where the results set no bound: the chart says what the table says.
        nan = float("nan")
        ci = svg.interval_chart([(r.player, r.rating, r.ci_low if r.bounded else nan,
                                  r.ci_high if r.bounded else nan) for r in rows],
                                colours=colours)
        history_svg = svg.line_chart(
            hist["x"], [(x["player"], x["rating"]) for x in hist["series"]],
            x_label="results counted", y_label="rating", label="rating history",
            colours=colours)
        sprt_svg = None
        if s.sprt is not None and s.sprt["trace"]:
            sp = s.sprt
            sprt_svg = svg.line_chart(
                [p["sets"] for p in sp["trace"]], [("LLR", [p["llr"] for p in sp["trace"]])],
                x_label="duplicate sets", y_label="LLR", label="SPRT log-likelihood ratio",
                hlines=[(sp["upper"], f"H1 {sp['upper']:.2f}", "#1a7f37"),
                        (sp["lower"], f"H0 {sp['lower']:.2f}", "#d1242f")])
        return page(request, "tournament.html", title=name, t=detail, rows=rows,
                    adjusted=has_adjusted(rows), luck=s.luck, note=unbounded_note(rows),
                    ci_svg=ci, history_svg=history_svg, sprt_svg=sprt_svg,
                    h2h=s.head_to_head, bots=s.bots, statuses=s.statuses)

    @app.get("/matches", response_class=HTMLResponse, include_in_schema=False)
    def matches_page(
        request: Request,
        tournament: str | None = Query(None, max_length=200),
        bot: str | None = Query(None, max_length=200),
        status: str | None = Query(None, max_length=20),
        forfeits: bool = False,
        timeouts: bool = False,
        illegal: bool = False,
        page_no: int = Query(1, alias="page", ge=1, le=1_000_000),
    ) -> HTMLResponse:
        status = status if status in STATUSES else None
        tournament = tournament or None
        bot = bot or None
        result = data.matches(tournament=tournament, bot=bot, status=status, forfeits=forfeits,
                              timeouts=timeouts, illegal=illegal, page=page_no)
        filters = {k: v for k, v in {
            "tournament": tournament, "bot": bot, "status": status,
            "forfeits": "1" if forfeits else None, "timeouts": "1" if timeouts else None,
            "illegal": "1" if illegal else None}.items() if v}

        def link(p: int) -> str:
            return "/matches?" + urlencode({**filters, "page": p})

        return page(request, "matches.html", title="Matches", result=result, filters=filters,
                    link=link, tournaments=[t.name for t in data.tournament_infos()],
                    api="/api/matches?" + urlencode({**filters, "page": result["page"]}))

    @app.get("/matches/{match_id}", response_class=HTMLResponse, include_in_schema=False)
    def match_page(request: Request, match_id: str, at: str | None = None) -> HTMLResponse:
        rec = data.open_match(match_id)
        full = data.frames(match_id)
        idx = frame_index(full, parse_position(at))
        frame = full["frames"][idx] if full["frames"] else None
        pos = {"deal": frame["deal"], "step": frame["step"]} if frame else {"deal": 0, "step": 0}
        return page(request, "match.html", title=f"Match {rec.index} of {rec.tournament}",
                    m=match_json(rec), full=full, frame=frame, pos=pos)

    @app.get("/live", response_class=HTMLResponse, include_in_schema=False)
    def live_page(request: Request) -> HTMLResponse:
        return page(request, "live.html", title="Live", matches=[m.to_json() for m in
                                                                  safe_live()],
                    source=live.source)

    @app.get("/live/{match_id}", response_class=HTMLResponse, include_in_schema=False)
    def live_match_page(request: Request, match_id: str,
                        delay: float = Query(0.0, ge=0.0, le=MAX_DELAY_S)) -> HTMLResponse:
        m = live_meta(match_id)
        return page(request, "live_match.html", title="Live match", m=m.to_json(),
                    delay=max(delay, min_delay_s), min_delay=min_delay_s,
                    stored=data.store.get(match_id) is not None)

    @app.get("/bots", response_class=HTMLResponse, include_in_schema=False)
    def bots_page(request: Request) -> HTMLResponse:
        return page(request, "bots.html", title="Bots", bots=data.participants())

    @app.get("/bots/{name}", response_class=HTMLResponse, include_in_schema=False)
    def bot_page(request: Request, name: str) -> HTMLResponse:
        b = data.bot(name)
        charts = []
        for t in b["tournaments"]:
            h = t["history"]
            rating_svg = svg.line_chart(h["x"], [(name, h["rating"])], x_label="results counted",
                                        y_label="rating", label=f"rating of {name}")
            lat = t["latency"]
            lat_svg = svg.line_chart(list(range(1, len(lat) + 1)),
                                     [("mean decision ms", [p[1] for p in lat])],
                                     x_label="matches (oldest first)", y_label="ms / decision",
                                     label=f"latency of {name}")
            charts.append({"rating": rating_svg, "latency": lat_svg})
        recent = data.matches(bot=name, per_page=20)
        return page(request, "bot.html", title=name, b=b, charts=charts, recent=recent)

    # ---------------------------------------------------------------- hosted bots

    @app.get("/api/hosted", tags=["hosted"], summary="Hosted bots")
    def api_hosted() -> list[JSON]:
        """Every hosted bot: its versions, the latest one's status, the one that plays."""
        return hosted_bots(data.store)

    @app.get("/api/hosted/{bot}", tags=["hosted"], summary="One hosted bot")
    def api_hosted_bot(bot: str) -> JSON:
        """Its versions (status, why, rating in each tournament) and recent hosted seats
        (status and detail; never the logs, which are the owner's)."""
        try:
            return hosted_bot(data.store, data, bot)
        except NoHostedBot as exc:
            raise NotFound(str(exc)) from None

    @app.get("/hosted", response_class=HTMLResponse, include_in_schema=False)
    def hosted_page(request: Request) -> HTMLResponse:
        return page(request, "hosted.html", title="Hosted bots", bots=hosted_bots(data.store))

    @app.get("/hosted/{bot}", response_class=HTMLResponse, include_in_schema=False)
    def hosted_bot_page(request: Request, bot: str) -> HTMLResponse:
        return page(request, "hosted_bot.html", title=bot, h=api_hosted_bot(bot),
                    gateway=gateway)

    def _refused(request: Request, bot: str, exc: Exception) -> HTMLResponse:
        import grpc

        code = exc.code() if isinstance(exc, grpc.aio.AioRpcError) else None
        if code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
            return page(request, "error.html", 403, title="Not your bot",
                        message=f"That token is not the token of {bot}.")
        if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED,
                    grpc.StatusCode.FAILED_PRECONDITION):
            details = exc.details() if isinstance(exc, grpc.aio.AioRpcError) else str(exc)
            return page(request, "error.html", 400, title="Refused", message=details or "")
        return page(request, "error.html", 503, title="Gateway unavailable",
                    message=f"the gateway {gateway} does not answer; try again later")

    @app.post("/hosted/{bot}/logs", response_class=HTMLResponse, include_in_schema=False)
    async def hosted_logs(request: Request, bot: str, token: str = Form(..., max_length=200),
                          match: str = Form("", max_length=200)) -> HTMLResponse:
        if gateway is None:
            raise NotFound("this server shows no logs: start it with --gateway HOST:PORT")
        import grpc
        from thousand_bot.proto.thousand.v1 import hosted_pb2, hosted_pb2_grpc

        try:
            async with aio_channel(gateway, gateway_tls) as channel:
                reply = await hosted_pb2_grpc.HostedServiceStub(channel).GetLogs(
                    hosted_pb2.GetLogsRequest(name=bot, match_id=match.strip(), limit=10),
                    metadata=[("authorization", f"Bearer {token.strip()}")], timeout=10)
        except grpc.aio.AioRpcError as exc:
            return _refused(request, bot, exc)
        logs = [{"match_id": x.match_id, "seat": x.seat, "version": x.version,
                 "label": status_label(x.status), "detail": x.detail, "log": x.log}
                for x in reply.logs]
        return page(request, "hosted_logs.html", title=f"Logs of {bot}", bot=bot, logs=logs,
                    match=match)

    @app.post("/hosted/{bot}/submit", response_class=HTMLResponse, include_in_schema=False)
    async def hosted_submit(request: Request, bot: str,
                            token: str = Form(..., max_length=200),
                            archive: UploadFile = File(...)) -> HTMLResponse:  # noqa: B008
        if gateway is None:
            raise NotFound("this server takes no submissions: start it with --gateway")
        import grpc
        from thousand_bot.proto.thousand.v1 import hosted_pb2, hosted_pb2_grpc

        raw = await archive.read(UPLOAD_MAX + 1)
        if len(raw) > UPLOAD_MAX:
            return page(request, "error.html", 400, title="Too big",
                        message=f"an archive may have at most {UPLOAD_MAX >> 20} MiB")
        name, payload = archive_name(archive.filename or "", raw)

        def parts() -> Any:
            yield hosted_pb2.SubmitBotRequest(
                header=hosted_pb2.SubmitHeader(name=bot, filename=name[:200]))
            for i in range(0, len(payload), 256 << 10):
                yield hosted_pb2.SubmitBotRequest(chunk=payload[i:i + (256 << 10)])

        try:
            async with aio_channel(gateway, gateway_tls) as channel:
                reply = await hosted_pb2_grpc.HostedServiceStub(channel).SubmitBot(
                    parts(), metadata=[("authorization", f"Bearer {token.strip()}")],
                    timeout=120)
        except grpc.aio.AioRpcError as exc:
            return _refused(request, bot, exc)
        return page(request, "hosted_submitted.html", title=f"{bot}: submitted", bot=bot,
                    v=reply.version, created=reply.created)

    @app.get("/api", response_class=HTMLResponse, include_in_schema=False)
    def api_page(request: Request) -> HTMLResponse:
        schema = app.openapi()
        groups: dict[str, list[JSON]] = {}
        for path, ops in schema["paths"].items():
            for method, op in ops.items():
                tag = (op.get("tags") or ["other"])[0]
                groups.setdefault(tag, []).append({
                    "method": method.upper(), "path": path, "summary": op.get("summary", ""),
                    "description": op.get("description", ""),
                    "params": [{"name": p["name"], "in": p["in"],
                                "required": p.get("required", False),
                                "description": p.get("description", ""),
                                "schema": p.get("schema", {})}
                               for p in op.get("parameters", [])],
                })
        return page(request, "api.html", title="JSON API", groups=groups)

    threading.Thread(target=data.warm_up, name="arena-web-warm-up", daemon=True).start()
    return app
