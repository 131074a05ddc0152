"""``arena tournament``: run, plan and check tournaments from a spec file.

Exit status (the table in docs/cli.md): 0 done; 1 a match failed; 2 a mistake in
the spec, an option or a URL (the message names it); 3 a service the run needs (the
results store, the broker) cannot be reached or was lost for too long; 130 stopped by
Ctrl-C and 143 by SIGTERM, results kept (run the same command to resume).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import signal
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from arena import exitcodes
from arena.engine import commitment as cm
from arena.tournament.broker import check_broker_url, settings
from arena.tournament.executors import (
    ExecutorConfigError,
    ExecutorError,
    ServiceUnavailable,
    routing_url_from_env,
)
from arena.tournament.fairness import NotRevealed
from arena.tournament.formats import make_format
from arena.tournament.run import Progress, run_tournament
from arena.tournament.spec import DEFAULT_DB, SpecError, TournamentSpec, load_spec
from arena.tournament.store import ResultStore, StoreError, StoreUnavailable, parse_db_url


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: stop, keep the results, say so."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Make SIGTERM raise :class:`Terminated` while the block runs (a service manager's
    stop, ``docker stop``, ``kill``), so it ends the way Ctrl-C does."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def preflight(
    *,
    db: Any,
    executor: Any,
    broker: Any,
    routing: Any,
    bots: Sequence[Any],
) -> list[str]:
    """What would stop the run, found before anything is played: ``field: message`` lines.

    Works on raw values, so ``check`` can report these next to the spec's own problems.
    """
    problems: list[str] = []
    if isinstance(db, str) and db.strip():
        try:
            kind, target, _ = parse_db_url(db)
        except StoreError as exc:
            problems.append(f"db: {exc}")
        else:
            if kind == "postgresql":
                try:
                    import psycopg  # noqa: F401
                except ImportError:
                    problems.append("db: PostgreSQL needs psycopg: pip install 'psycopg[binary]'")
            elif target != ":memory:":
                path = Path(target).expanduser()
                if path.is_dir():
                    problems.append(f"db: {target} is a directory, not a results file")
                elif not path.parent.exists():
                    problems.append(f"db: no directory {path.parent} for the results file")
            elif executor == "local":
                problems.append("db: the local pool cannot share an in-memory database")
    if executor == "celery":
        url = broker if isinstance(broker, str) else settings()["broker_url"]
        why = check_broker_url(url)
        if why:
            problems.append(f"executor.broker: {why}")
    remote = [b for b in bots if isinstance(b, str) and b.startswith("remote:")]
    if remote and executor in ("local", "inline"):
        route = routing if isinstance(routing, str) else routing_url_from_env()
        if not route:
            problems.append(
                f"participants: {', '.join(remote)} need a route to a gateway: set "
                "executor.routing (redis://...) or ARENA_ROUTING_URL, and start the gateway "
                "with arena serve --routing"
            )
        elif not route.startswith(("redis://", "rediss://", "unix://")):
            problems.append(f"executor.routing: must be a Redis URL (redis://...), got {route!r}")
    return problems


def spec_preflight(spec: TournamentSpec) -> list[str]:
    ex = spec.executor
    return preflight(
        db=spec.db,
        executor=ex.type,
        broker=ex.broker,
        routing=ex.routing,
        bots=[p.bot for p in spec.participants],
    )


def _raw_preflight(path: str, overrides: Mapping[str, Any]) -> list[str]:
    """Preflight on the file as written, when the spec itself does not validate."""
    import json
    import tomllib

    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
        suffix = Path(path).suffix.lower()
        data = (
            tomllib.loads(text)
            if suffix == ".toml"
            else json.loads(text)
            if suffix == ".json"
            else yaml.safe_load(text)
        )
    except Exception:
        return []
    if not isinstance(data, Mapping):
        return []
    ex = data.get("executor")
    ex = {"type": ex} if isinstance(ex, str) else ex if isinstance(ex, Mapping) else {}
    parts = data.get("participants")
    bots = []
    for item in parts if isinstance(parts, list) else []:
        bots.append(item.get("bot") if isinstance(item, Mapping) else item)
    return preflight(
        db=overrides.get("db") or data.get("db", DEFAULT_DB),
        executor=overrides.get("executor") or ex.get("type", "local"),
        broker=overrides.get("broker") or ex.get("broker"),
        routing=ex.get("routing"),
        bots=bots,
    )


#: The subcommands: name, the line ``arena tournament --help`` gives it, and the description
#: of its own ``--help`` (None where that line says it all).
_COMMANDS: tuple[tuple[str, str, str | None], ...] = (
    ("run", "play every match without a stored result (resumes a stopped run)",
     "Play the tournament; matches already in the results store are skipped, so running "
     "again after a stop resumes it."),
    ("check", "validate a spec file and say what it would play", None),
    ("plan", "list the matches (for Swiss, SPRT and league: the first round)", None),
    ("status", "how many matches are stored for a spec", None),
    ("reveal", "after the end: the deal secret and every match's seed, to check the deals",
     "Print a finished tournament's deal secret, its commitment and, per stored match, the "
     "derivation key, seed and seed commitment."),
    ("verify", "check every stored match against the revealed secret, or the public seed "
     "(exit 0 ok, 1 mismatch)",
     "Check the revealed secret against the commitment, each match's id and seed against "
     "their derivation, and each replay's commitment, decks and result; for a public-seed "
     "tournament, each match against the seed."),
)
_DB_HELP = "results database URL or file (override the spec)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena tournament", description="Run tournaments described by a spec file."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    commands = {
        name: sub.add_parser(name, help=help_, description=description)
        for name, help_, description in _COMMANDS
    }
    for name, command in commands.items():
        command.add_argument(
            "spec", help="tournament spec file (.yaml, .toml or .json)" if name == "run" else None
        )

    run = commands["run"]
    run.add_argument("--executor", choices=("inline", "local", "celery"), help="override the spec")
    run.add_argument("--workers", type=int, help="processes of the local pool (override the spec)")
    run.add_argument("--db", help=_DB_HELP)
    run.add_argument("--broker", help="Celery broker URL (override the spec)")
    run.add_argument(
        "--quiet", "-q", action="store_true", help="no progress bar (waits are still said)"
    )
    run.add_argument(
        "--max-matches", type=int, help="stop after playing this many matches (resume later)"
    )
    run.add_argument(
        "--luck-adjusted",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="an SPRT decides, and a league pairs, on luck-adjusted results (override the "
        "spec's luck_adjusted)",
    )
    run.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus metrics (matches planned and done, ratings) on this port",
    )
    run.add_argument(
        "--metrics-addr",
        default="127.0.0.1",
        help="address the metrics endpoint listens on (default 127.0.0.1; 0.0.0.0 for "
        "every interface, e.g. for a Prometheus in another container)",
    )
    run.add_argument(
        "--metrics-linger",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="after the run, keep serving metrics this long so Prometheus scrapes the "
        "final figures ('inf': until SIGTERM or Ctrl-C); needs --metrics-port",
    )

    commands["plan"].add_argument("--json", action="store_true", help="one JSON object per line")
    for name in ("status", "reveal", "verify"):
        commands[name].add_argument("--db", help=_DB_HELP)
    commands["reveal"].add_argument("--json", action="store_true",
                                    help="everything as one JSON object")
    commands["reveal"].add_argument(
        "--end", action="store_true",
        help="end an unfinished tournament now (a league) and reveal; no match can follow",
    )  # fmt: skip
    commands["verify"].add_argument(
        "--commitment", metavar="HEX",
        help="the tournament commitment published at its start (default: the stored one)",
    )  # fmt: skip
    return parser


def _load(path: str, *, check_imports: bool = True) -> TournamentSpec:
    return load_spec(path, check_imports=check_imports)


def _counting(spec: TournamentSpec) -> TournamentSpec:
    """A spec whose plan can be counted: a secret-seeded one gets a throwaway secret (the
    number and shape of matches never depend on it)."""
    return spec.with_secret(cm.new_secret()) if spec.secret_seed else spec


def _seed_note(spec: TournamentSpec) -> str | None:
    if spec.secret_seed:
        return (f"{spec.name}: the deals come from a secret drawn at the first run and kept "
                "in the results store; it is revealed when the tournament ends")
    if spec.has_remote:
        return (f"warning: {spec.name} has remote participants and a public seed "
                f"({spec.seed!r}): they can derive every deal from it")
    return None


def _describe(spec: TournamentSpec) -> str:
    fmt = make_format(_counting(spec))
    total = fmt.planned_total()
    if total is not None:
        how = f"{total} matches"
    elif spec.format.type == "league":
        short = spec.seats - len(spec.participants)
        per_round = getattr(fmt, "per_round", lambda: 0)()
        if short > 0:
            how = f"waits for {short} more participant(s) before its first round"
        elif spec.format.rounds is not None:
            how = (f"{spec.format.rounds} rounds of {per_round} matches "
                   f"({spec.format.rounds * per_round} with these participants)")
        else:
            how = f"rounds of {per_round} matches until stopped"
    else:
        how = f"first round {len(fmt.next_batch({}) or [])} matches"
    return (
        f"{spec.name}: {spec.format.type}, rules {spec.preset} ({spec.seats} seats), "
        f"{len(spec.participants)} participants, {how}; executor {spec.executor.type}, "
        f"results in {spec.db}"
    )


def _linger(prog: str, where: str, seconds: float) -> None:
    """Keep the metrics endpoint up after the run: the last figures outlive the scheduler.

    Waits on an event rather than sleeping (``time.sleep(inf)`` overflows); SIGTERM and
    Ctrl-C end the wait.
    """
    import math
    import signal
    import threading

    done = threading.Event()
    shown = "until stopped" if math.isinf(seconds) else f"for {seconds:g}s more"
    # The handler first: a SIGTERM sent on reading the line below ends the wait cleanly.
    previous = signal.signal(signal.SIGTERM, lambda *_: done.set())
    print(f"{prog}: serving metrics on {where} {shown} (Ctrl-C to exit)", file=sys.stderr,
          flush=True)
    try:
        if math.isinf(seconds):
            while not done.wait(3600):
                pass
        else:
            done.wait(seconds)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


def _plan(spec: TournamentSpec, as_json: bool) -> int:
    """List the matches.  With a secret seed the ids come from the secret: they are shown
    once a run has drawn it, and the seeds never (the plan is often shared)."""
    shown = spec
    secret = None
    if spec.secret_seed:
        with ResultStore(spec.db) as store:
            secret = store.get_deal_secret(spec.name)
        if secret is None:
            print(f"{spec.name}: match ids come from the tournament's secret, drawn at its "
                  "first run; shown as '-' until then", file=sys.stderr)
        shown = spec.with_secret(secret.secret if secret else cm.new_secret())
    for m in make_format(shown).next_batch({}) or []:
        match_id = "-" if spec.secret_seed and secret is None else m.match_id
        if as_json:
            data = m.to_json()
            if spec.secret_seed:
                data["spec"]["seed"] = None
                data["spec"]["match_id"] = match_id
                data["spec"].pop("commitment", None)
            print(json.dumps(data, sort_keys=True, separators=(",", ":")))
        else:
            print(f"{m.index:6d}  {match_id:>32}  {m.group:>10}  {' / '.join(m.players)}")
    return 0


def _reveal(args: argparse.Namespace) -> int:
    from arena.tournament.fairness import reveal

    spec = _load(args.spec, check_imports=False).with_overrides(db=args.db)
    with ResultStore(spec.db) as store:
        data = reveal(spec, store, end=args.end)
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    print(f"{spec.name}: deal secret {data['secret']}")
    print(f"  commitment {data['commitment']} = SHA-256(\"{cm.SCHEME}/tournament\" 0x00 "
          "name 0x00 secret)")
    print("  match seed = HMAC-SHA256(secret, key); seed commitment = SHA-256("
          f"\"{cm.SCHEME}/seed\" 0x00 match id 0x00 seed)")
    for m in data["matches"]:
        print(f"  {m['index']:6d}  {m['match_id']}  {m['key']:>10}  seed {m['seed']}  "
              f"commitment {m['seed_commitment']}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from arena.tournament.fairness import verify

    if args.commitment is not None and not cm.is_hex64(args.commitment):
        print("arena tournament: --commitment: expected 64 lowercase hex digits",
              file=sys.stderr)
        return 2
    spec = _load(args.spec, check_imports=False).with_overrides(db=args.db)
    with ResultStore(spec.db) as store:
        found = verify(spec, store, commitment=args.commitment)
    if found.ok and not spec.secret_seed:
        print(f"OK: {spec.name}: public seed {spec.seed!r}; {found.checked} matches: ids and "
              "seeds derived from it, every replay dealt from its seed and re-simulated to "
              "its result")
        return 0
    if found.ok:
        print(f"OK: {spec.name}: the secret matches its commitment; {found.checked} matches: "
              "ids and seeds derived from it, every replay committed to its seed, dealt from "
              "it and re-simulated to its result")
        return 0
    for line in found.problems[:20]:
        print(f"MISMATCH: {line}")
    if len(found.problems) > 20:
        print(f"... {len(found.problems) - 20} more")
    return 1
def _check(path: str) -> int:
    """Every problem the run would meet, listed at once."""
    problems: list[str] = []
    spec: TournamentSpec | None = None
    try:
        spec = _load(path)
    except SpecError as exc:
        problems += exc.problems
        warnings = exc.warnings
        extra = _raw_preflight(path, {})
    else:
        warnings = list(spec.warnings)
        extra = spec_preflight(spec)
    problems += [p for p in extra if p not in problems]
    if problems:
        print(f"arena tournament: {SpecError(problems, path)}", file=sys.stderr)
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        return exitcodes.USAGE
    assert spec is not None
    print(f"ok: {_describe(spec)}")
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    note = _seed_note(spec)
    if note:
        print(note, file=sys.stderr)
    return exitcodes.OK


def tournament_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``arena tournament``; returns the process exit status.

    0 done; 1 a match failed, or ``verify`` found a mismatch; 2 the spec or a command-line
    value is wrong, or ``reveal``/``verify`` has nothing to work on yet; 3 the results store
    or the broker cannot be reached; 130 stopped by Ctrl-C, 143 by SIGTERM (run the same
    command again to resume).
    """
    args = _parser().parse_args(list(argv) if argv is not None else None)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    prog = "arena tournament"
    try:
        if args.command == "check":
            return _check(args.spec)
        if args.command == "plan":
            return _plan(_load(args.spec), args.json)
        if args.command == "status":
            spec = _load(args.spec, check_imports=False).with_overrides(db=args.db)
            total = make_format(_counting(spec)).planned_total()
            of = f" of {total}" if total is not None else ""
            kind, target, _ = parse_db_url(spec.db)
            if kind == "sqlite" and not Path(target).expanduser().exists():
                print(f"{spec.name}: 0{of} matches stored: no results database at {target} yet")
                return 0
            with ResultStore(spec.db, create=False) as store:
                done = store.count(spec.name)
                secret = store.get_deal_secret(spec.name)
            print(f"{spec.name}: {done}{of} matches stored in {store.display_url}")
            if secret is not None:
                state = "revealed: arena tournament reveal" if secret.revealed else "secret"
                print(f"deal commitment {secret.commitment} ({state})")
            return 0
        if args.command == "reveal":
            return _reveal(args)
        if args.command == "verify":
            return _verify(args)
        # run
        if args.max_matches is not None and args.max_matches < 1:
            print(f"{prog}: --max-matches must be a positive integer", file=sys.stderr)
            return 2
        linger = args.metrics_linger
        if linger < 0 or linger != linger:
            print(f"{prog}: --metrics-linger must be zero or more seconds", file=sys.stderr)
            return 2
        if linger and args.metrics_port is None:
            print(f"{prog}: --metrics-linger needs --metrics-port", file=sys.stderr)
            return 2
        executor = args.executor
        spec = _load(args.spec, check_imports=(executor or "") != "celery")
        spec = spec.with_overrides(
            executor=executor, workers=args.workers, db=args.db, broker=args.broker
        )
        if args.luck_adjusted is not None:
            spec = dataclasses.replace(spec, luck_adjusted=args.luck_adjusted)
        problems = spec_preflight(spec)
        if problems:
            raise SpecError(problems, spec.source)
        progress = Progress(spec.name, enabled=not args.quiet)
        metrics_where = ""
        if args.metrics_port is not None:
            from arena.observability.exposition import MetricsSetupError, start_metrics_server

            try:
                served = start_metrics_server(args.metrics_port, args.metrics_addr)
            except MetricsSetupError as exc:
                print(f"{prog}: {exc}", file=sys.stderr)
                return 2
            metrics_where = f"{args.metrics_addr}:{served.port}"
        for warning in spec.warnings:
            print(f"{prog}: warning: {warning}", file=sys.stderr)
        note = _seed_note(spec)
        if note and not spec.secret_seed:
            print(note, file=sys.stderr)

        def announce(line: str) -> None:
            print(line, file=sys.stderr, flush=True)

        try:
            with sigterm_as_interrupt():
                summary = run_tournament(
                    spec, progress=progress, max_matches=args.max_matches, announce=announce
                )
        except KeyboardInterrupt as exc:
            progress.finish()
            how = "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C"
            from arena.tournament.store import redact_url

            print(
                f"{prog}: stopped ({how}); results so far are kept in {redact_url(spec.db)}; "
                f"run the same command to resume",
                file=sys.stderr,
            )
            terminated = isinstance(exc, Terminated)
            return exitcodes.TERMINATED if terminated else exitcodes.INTERRUPTED
        state = "finished" if summary.finished else "stopped"
        if summary.finished:
            progress.set_total(progress.done)
        progress.finish(
            f"{spec.name}: {state}; played {summary.played} matches in "
            f"{summary.elapsed_s:.1f}s ({summary.games_per_s:.2f} games/s), "
            f"{summary.matches} stored"
        )
        if summary.note:
            print(summary.note)
        if summary.revealed_secret:
            print(f"{spec.name}: ended; deal secret revealed: {summary.revealed_secret} "
                  f"(check every match: arena tournament verify {args.spec})")
        if linger:
            _linger(prog, metrics_where, linger)
        return 0
    except (SpecError, NotRevealed) as exc:  # NotRevealed: reveal or verify, too early
        print(f"{prog}: {exc}", file=sys.stderr)
        return exitcodes.USAGE
    except (StoreUnavailable, ServiceUnavailable) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return exitcodes.UNAVAILABLE
    except (StoreError, ExecutorConfigError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return exitcodes.USAGE
    except ExecutorError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return exitcodes.FAILED
    except KeyboardInterrupt:
        print(f"{prog}: stopped", file=sys.stderr)
        return exitcodes.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``... | head``): stay quiet, also at the exit flush.
        exitcodes.silence_stdout()
        return exitcodes.BROKEN_PIPE
