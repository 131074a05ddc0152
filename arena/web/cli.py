"""``arena web`` (the browser front end) and ``arena replay export`` (replays out of a store).

Exit codes: 0 done (or stopped with Ctrl-C), 1 some replays could not be written,
2 a wrong argument or a store, port or directory that cannot be used (one line says which).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from arena.tournament.store import ResultStore, StoreError, add_db_option


def _one_line(exc: BaseException) -> str:
    """Driver messages (psycopg's) run over several lines; a refusal is one line."""
    return " ".join(str(exc).split())


def _port_free(host: str, port: int) -> str | None:
    """None when ``host:port`` can be listened on, else why not."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return f"cannot use host {host!r}: {exc.strerror}"
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as exc:
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def _store_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The parser of a command that reads a results store, with its ``--db``."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_db_option(parser)
    return parser


def web_main(argv: Sequence[str] | None = None) -> int:
    parser = _store_parser("arena web", "Serve tournaments, leaderboards, matches, replays and "
                           "live matches in a browser (and as JSON under /api).")
    parser.add_argument(
        "--routing",
        default=os.environ.get("ARENA_ROUTING_URL"),
        metavar="REDIS_URL",
        help="Redis that workers publish live matches to (default $ARENA_ROUTING_URL); "
        "matches of a local pool without Redis are found beside the database anyway",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                        "127.0.0.1; 0.0.0.0 for every interface)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--live-dir", type=Path, help="spool directory of live matches "
                        "(default: derived from --db, as the executors do)")
    parser.add_argument("--min-delay", type=float, default=0.0, metavar="SECONDS",
                        help="spectators see live matches at least this far behind play")
    parser.add_argument("--max-spectators", type=int, default=256, metavar="N",
                        help="live event streams served at once (more are told to retry)")
    parser.add_argument("--open-sets", action="store_true",
                        help="show replays, seeds and live cards of duplicate sets still being "
                        "played (only for an audience whose bots cannot reach this server)")
    parser.add_argument("--gateway", metavar="HOST:PORT",
                        default=os.environ.get("ARENA_GATEWAY") or None,
                        help="the gateway that keeps hosted bots: lets their owners read their "
                        "logs and submit versions from the pages (env ARENA_GATEWAY)")
    from arena.server.tls import TlsConfigError, add_client_options, client_tls

    add_client_options(parser)
    parser.add_argument("--bootstrap", type=int, default=None,
                        help="bootstrap replicates of the leaderboard intervals (default 200, "
                        "as arena leaderboard)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    prog = "arena web"
    if not 0 < args.port < 65536:
        print(f"{prog}: --port must be between 1 and 65535", file=sys.stderr)
        return 2
    if args.min_delay < 0 or args.min_delay != args.min_delay:
        print(f"{prog}: --min-delay must be zero or more seconds", file=sys.stderr)
        return 2
    if args.max_spectators < 1:
        print(f"{prog}: --max-spectators must be 1 or more", file=sys.stderr)
        return 2
    if args.bootstrap is not None and args.bootstrap < 0:
        print(f"{prog}: --bootstrap must be 0 or more", file=sys.stderr)
        return 2
    try:
        tls = client_tls(args)
    except TlsConfigError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    try:
        with ResultStore(args.db):
            pass
    except StoreError as exc:
        print(f"{prog}: {_one_line(exc)}", file=sys.stderr)
        return 2
    if args.routing:
        try:
            import redis

            redis.Redis.from_url(args.routing, socket_connect_timeout=2).ping()
        except ValueError as exc:
            print(f"{prog}: --routing: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:
            print(f"{prog}: warning: Redis at {args.routing} does not answer ({exc}); live "
                  "matches from Celery workers appear once it does", file=sys.stderr)
    why = _port_free(args.host, args.port)
    if why:
        print(f"{prog}: {why}", file=sys.stderr)
        return 2
    import uvicorn

    from arena.web.app import create_app

    app = create_app(args.db, routing_url=args.routing, live_dir=args.live_dir,
                     min_delay_s=args.min_delay, n_bootstrap=args.bootstrap,
                     max_spectators=args.max_spectators, open_sets=args.open_sets,
                     gateway=args.gateway, gateway_tls=tls)
    print(f"{prog}: serving {args.db} on http://{args.host}:{args.port}/ "
          f"(live matches from {app.state.live.source}); Ctrl-C stops", file=sys.stderr,
          flush=True)
    logging.basicConfig(level=logging.WARNING)
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                    timeout_graceful_shutdown=2)
    return 0


def _safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:80] or "match"


def export_main(argv: Sequence[str] | None = None) -> int:
    """``arena replay export``: replay files and text records of stored matches."""
    parser = _store_parser("arena replay export", "Write the replay file (JSON, as arena replay "
                           "verify/show read) and a readable text record of stored matches.")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("match_id", nargs="?", help="a match id (a unique prefix is enough)")
    which.add_argument("--tournament", "-t", help="every match of this tournament")
    parser.add_argument("--out", "-o", default=".", help="directory to write to (default .)")
    parser.add_argument("--no-text", action="store_true", help="replay files only")
    args = parser.parse_args(list(argv) if argv is not None else None)
    prog = "arena replay export"
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"{prog}: cannot create {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    from arena.engine import replay as rp
    from arena.engine.errors import ReplayError

    try:
        store = ResultStore(args.db)
    except StoreError as exc:
        print(f"{prog}: {_one_line(exc)}", file=sys.stderr)
        return 2
    with store:
        if args.tournament:
            names = {t.name for t in store.tournaments()}
            if args.tournament not in names:
                known = ", ".join(sorted(names)) or "none"
                print(f"{prog}: no tournament '{args.tournament}' in {args.db} "
                      f"(tournaments: {known})", file=sys.stderr)
                return 2
            rows = store.query("SELECT match_id, idx FROM matches WHERE tournament = ? "
                               "ORDER BY idx", (args.tournament,))
            todo = [(str(r[0]), f"{_safe_name(args.tournament)}-{int(r[1]):06d}-{r[0]}")
                    for r in rows]
        else:
            prefix = args.match_id.strip()
            if not prefix or any(c in prefix for c in "%_\\"):
                print(f"{prog}: '{args.match_id}' is not a match id", file=sys.stderr)
                return 2
            rows = store.query("SELECT match_id FROM matches WHERE match_id LIKE ? "
                               "ORDER BY match_id LIMIT 2", (prefix + "%",))
            if not rows:
                print(f"{prog}: no match '{prefix}' in {args.db}", file=sys.stderr)
                return 2
            if len(rows) > 1 and rows[0][0] != prefix:
                print(f"{prog}: '{prefix}' is the start of several match ids; give more of it",
                      file=sys.stderr)
                return 2
            todo = [(str(rows[0][0]), str(rows[0][0]))]
        written = 0
        failed = 0
        for match_id, stem in todo:
            rec = store.get(match_id, with_replay=True)
            if rec is None or rec.replay is None:
                print(f"{prog}: match {match_id} has no stored replay", file=sys.stderr)
                failed += 1
                continue
            try:
                rp.dump(rec.replay, out / f"{stem}.json")
                if not args.no_text:
                    head = (f"Match {rec.index} of {rec.tournament} ({rec.match_id}), "
                            f"{rec.status}, players {', '.join(rec.players)}\n")
                    try:
                        body = rp.show(rec.replay)
                    except ReplayError as exc:
                        body = f"(the replay does not re-play: {exc})"
                    (out / f"{stem}.txt").write_text(head + body + "\n", encoding="utf-8")
            except OSError as exc:
                print(f"{prog}: cannot write {out / stem}: {exc.strerror or exc}",
                      file=sys.stderr)
                return 2
            written += 1
    kinds = "replay" if args.no_text else "replay and text record"
    print(f"wrote {written} {kinds}{'s' if written != 1 else ''} to {out}")
    return 1 if failed else 0
