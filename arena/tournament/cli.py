"""``arena tournament``: run, plan and check tournaments from a spec file."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from arena.tournament.executors import ExecutorError
from arena.tournament.formats import make_format
from arena.tournament.run import Progress, run_tournament
from arena.tournament.spec import SpecError, TournamentSpec, load_spec
from arena.tournament.store import ResultStore, StoreError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena tournament", description="Run tournaments described by a spec file."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser(
        "run",
        help="play every match without a stored result (resumes a stopped run)",
        description="Play the tournament; matches already in the results store are skipped, "
        "so running again after a stop resumes it.",
    )
    run.add_argument("spec", help="tournament spec file (.yaml, .toml or .json)")
    run.add_argument("--executor", choices=("inline", "local", "celery"), help="override the spec")
    run.add_argument("--workers", type=int, help="processes of the local pool (override the spec)")
    run.add_argument("--db", help="results database URL or file (override the spec)")
    run.add_argument("--broker", help="Celery broker URL (override the spec)")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    run.add_argument(
        "--max-matches", type=int, help="stop after playing this many matches (resume later)"
    )
    run.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus metrics (matches planned and done, ratings) on this port",
    )
    run.add_argument(
        "--metrics-linger",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="after the run, keep serving metrics this long so Prometheus scrapes the "
        "final figures ('inf': until SIGTERM or Ctrl-C); needs --metrics-port",
    )

    check = sub.add_parser("check", help="validate a spec file and say what it would play")
    check.add_argument("spec")

    plan = sub.add_parser(
        "plan", help="list the matches (for Swiss, SPRT and league: the first round)"
    )
    plan.add_argument("spec")
    plan.add_argument("--json", action="store_true", help="one JSON object per line")

    status = sub.add_parser("status", help="how many matches are stored for a spec")
    status.add_argument("spec")
    status.add_argument("--db", help="results database URL or file (override the spec)")
    return parser


def _load(path: str, *, check_imports: bool = True) -> TournamentSpec:
    return load_spec(path, check_imports=check_imports)


def _describe(spec: TournamentSpec) -> str:
    fmt = make_format(spec)
    total = fmt.planned_total()
    first = fmt.next_batch({}) or []
    how = f"{total} matches" if total is not None else f"first round {len(first)} matches"
    return (
        f"{spec.name}: {spec.format.type}, rules {spec.preset} ({spec.seats} seats), "
        f"{len(spec.participants)} participants, {how}; executor {spec.executor.type}, "
        f"results in {spec.db}"
    )


def _linger(prog: str, port: int, seconds: float) -> None:
    """Keep the metrics endpoint up after the run: the last figures outlive the scheduler.

    Waits on an event rather than sleeping (``time.sleep(inf)`` overflows); SIGTERM and
    Ctrl-C end the wait.
    """
    import math
    import signal
    import threading

    done = threading.Event()
    shown = "until stopped" if math.isinf(seconds) else f"for {seconds:g}s more"
    print(f"{prog}: serving metrics on :{port} {shown} (Ctrl-C to exit)", file=sys.stderr)
    previous = signal.signal(signal.SIGTERM, lambda *_: done.set())
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


def tournament_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``arena tournament``; returns the process exit status.

    2: the spec or a command-line value is wrong; 1: the run failed; 130: stopped by
    Ctrl-C (run the same command again to resume).
    """
    args = _parser().parse_args(list(argv) if argv is not None else None)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    prog = "arena tournament"
    try:
        if args.command == "check":
            spec = _load(args.spec)
            print(f"ok: {_describe(spec)}")
            return 0
        if args.command == "plan":
            spec = _load(args.spec)
            for m in make_format(spec).next_batch({}) or []:
                if args.json:
                    print(m.dumps())
                else:
                    print(f"{m.index:6d}  {m.match_id}  {m.group:>10}  {' / '.join(m.players)}")
            return 0
        if args.command == "status":
            spec = _load(args.spec, check_imports=False).with_overrides(db=args.db)
            with ResultStore(spec.db) as store:
                done = store.count(spec.name)
            total = make_format(spec).planned_total()
            of = f" of {total}" if total is not None else ""
            print(f"{spec.name}: {done}{of} matches stored in {spec.db}")
            return 0
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
        progress = Progress(spec.name, enabled=not args.quiet)
        if args.metrics_port is not None:
            from arena.observability.exposition import MetricsSetupError, start_metrics_server

            try:
                start_metrics_server(args.metrics_port)
            except MetricsSetupError as exc:
                print(f"{prog}: {exc}", file=sys.stderr)
                return 2
        try:
            summary = run_tournament(spec, progress=progress, max_matches=args.max_matches)
        except KeyboardInterrupt:
            progress.finish()
            print(
                f"{prog}: stopped; results so far are kept in {spec.db}; "
                f"run the same command to resume",
                file=sys.stderr,
            )
            return 130
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
        if linger:
            _linger(prog, args.metrics_port, linger)
        return 0
    except SpecError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except ExecutorError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
