"""``arena demo``: the whole platform on one machine, from nothing to a leaderboard.

It starts what a real deployment runs, as separate processes on free loopback ports: a
private Redis, the gRPC gateway (``arena serve --routing``), and one SDK bot process per
built-in bot, registered through the organiser service like any other bot. It then plays
``examples/main.yaml``, a seeded duplicate round robin of those remote bots, with the local
process pool: each match runs in a pool process and reaches the bots through Redis and the
gateway, exactly as Celery workers would. Finally it prints the leaderboard, writes the HTML
report and the replays, and stops everything (also on Ctrl-C: nothing is left running).

Why so much machinery for a demo: the built-in bots could play in-process in a second, but
then the demo would show nothing of the part that matters in practice, bots in other
processes behind a gateway, and any break in that path would go unnoticed.

The same seed gives the same leaderboard: deals come from the seed (public on purpose: the
remote bots are the arena's own, see ``public_seed`` in ``examples/main.yaml``), the bots
derive their choices from the match ids (stable: the tournament's name and match number),
and nothing depends on timing as long as no decision times out.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import multiprocessing
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TextIO

import yaml

from arena.server.processes import (
    BotProcess,
    GatewayProcess,
    RedisProcess,
    Service,
    ServiceError,
    stop_all,
)
from arena.tournament.executors import ExecutorError, LocalExecutor
from arena.tournament.spec import SpecError, TournamentSpec, validate_spec
from arena.tournament.store import StoreError

PROG = "arena demo"
REPO = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = REPO / "examples" / "main.yaml"
DEFAULT_DB = Path("var") / "demo.sqlite3"
#: Remote bot names the demo can start, and the SDK class that plays each.
BOT_CLASSES = {
    "greedy": "arena.server.builtin_remote:Greedy",
    "cautious": "arena.server.builtin_remote:Cautious",
    "random": "arena.server.builtin_remote:Random",
}


class DemoError(Exception):
    """Something the user can fix: a bad option, a database in use, a missing program."""


def _bot_class(name: str) -> str | None:
    """The SDK class for a remote bot name: ``greedy-sdk``, ``greedy-2``: the name of a
    bot class, then ``-`` and anything (the bare names of built-in bots are reserved)."""
    if name in BOT_CLASSES:
        return BOT_CLASSES[name]
    base = name.rsplit("-", 1)[0]
    return BOT_CLASSES.get(base)


@dataclass(frozen=True)
class Paths:
    """Where one run writes: everything next to the results database, named after it."""

    db: Path

    @property
    def url(self) -> str:
        return f"sqlite:///{self.db.resolve()}"

    def _sibling(self, suffix: str) -> Path:
        return self.db.with_name(self.db.stem + suffix)

    @property
    def report(self) -> Path:
        return self._sibling("-report.html")

    @property
    def replays(self) -> Path:
        return self._sibling("-replays")

    @property
    def logs(self) -> Path:
        return self._sibling("-logs")


def _db_path(text: str) -> Path:
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    elif "://" in text:
        raise DemoError(f"--db: the demo keeps its results in a SQLite file, not {text!r}")
    if not text or text == ":memory:":
        raise DemoError("--db: give a file path (the pool's processes share the file)")
    return Path(text).expanduser()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Start Redis, the gateway and the built-in bots as remote SDK bots, play "
        "a seeded duplicate round robin through them, print the leaderboard and stop.",
    )
    parser.add_argument("--sets", type=int, help="duplicate sets, 6 games each (default 10)")
    parser.add_argument("--seed", help="seed of every deal (default 2026)")
    parser.add_argument(
        "--db",
        default=str(DEFAULT_DB),
        help=f"results file (default {DEFAULT_DB}); the report, replays and logs go next "
        "to it. A previous demo's results in it are replaced.",
    )
    parser.add_argument("--max-deals", type=int, help="deals per game (default 12)")
    parser.add_argument("--workers", type=int, help="processes playing matches (default 2)")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="leave Redis, the gateway and the bots running afterwards, until Ctrl-C",
    )
    parser.add_argument("--spec", default=str(DEFAULT_SPEC), help=argparse.SUPPRESS)
    return parser


def _positive(value: int | None, flag: str) -> None:
    if value is not None and value < 1:
        raise DemoError(f"{flag} must be a positive integer")


def load_demo_spec(args: argparse.Namespace, paths: Paths, routing_url: str) -> TournamentSpec:
    """The main job's spec with this run's seed, sets, database and routing."""
    spec_path = Path(args.spec)
    try:
        raw = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DemoError(f"cannot read {spec_path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise DemoError(f"{spec_path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise DemoError(f"{spec_path}: expected a mapping")
    if args.seed is not None:
        raw["seed"] = args.seed
    if args.sets is not None:
        raw["sets"] = args.sets
    if args.max_deals is not None:
        raw["max_deals"] = args.max_deals
    executor = raw.get("executor") or {}
    if isinstance(executor, str):
        executor = {"type": executor}
    executor = dict(executor, type="local", routing=routing_url)
    if args.workers is not None:
        executor["workers"] = args.workers
    raw["executor"] = executor
    raw["db"] = paths.url
    try:
        spec = validate_spec(raw, source=str(spec_path))
    except SpecError as exc:
        raise DemoError(str(exc)) from None
    for p in spec.participants:
        if not p.bot.startswith("remote:") or _bot_class(p.bot[len("remote:") :]) is None:
            raise DemoError(
                f"{spec_path}: participant {p.name!r} is {p.bot!r}; the demo starts only "
                "remote built-in bots: "
                f"{', '.join('remote:' + n + '-sdk' for n in BOT_CLASSES)}"
            )
    return spec


def clear_previous(paths: Paths, tournament: str) -> None:
    """Remove a previous demo's outputs; refuse a database holding anything else."""
    if paths.db.exists():
        from arena.tournament.store import ResultStore

        try:
            with ResultStore(paths.url) as store:
                names = {t.name for t in store.tournaments()}
        except Exception as exc:
            raise DemoError(f"{paths.db} exists and is not a results database: {exc}") from None
        others = names - {tournament}
        if others:
            raise DemoError(
                f"{paths.db} holds other tournaments ({', '.join(sorted(others))}); the demo "
                "replaces its results file on every run: give it another --db"
            )
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(paths.db) + suffix).unlink()
    with contextlib.suppress(FileNotFoundError):
        paths.report.unlink()
    for folder in (paths.replays, paths.logs):
        shutil.rmtree(folder, ignore_errors=True)


# --- the match pool ------------------------------------------------------------------


def _nothing() -> None:
    """A task that makes the pool start its processes (see QuietLocalExecutor)."""


class QuietLocalExecutor(LocalExecutor):
    """The tournament's local pool, whose processes ignore Ctrl-C.

    A Ctrl-C in the terminal reaches every process of the foreground group; pool processes
    would die mid-match with a traceback each. Started while SIGINT is ignored they inherit
    that (Python keeps an inherited SIG_IGN), and the demo stops them itself, in order.
    """

    def _get_pool(self) -> cf.ProcessPoolExecutor:
        if self._pool is not None:
            return self._pool
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            pool = super()._get_pool()
            # Processes start on submit: start all of them now, while SIGINT is ignored.
            for future in [pool.submit(_nothing) for _ in range(self.workers)]:
                future.result()
        finally:
            signal.signal(signal.SIGINT, previous)
        return pool


def _stop_pool_processes(timeout: float = 20.0) -> None:
    """Let the pool's processes finish the matches they are playing (the services are still
    up, so those results are real and are kept), then stop any that is still busy."""
    deadline = time.monotonic() + timeout
    for child in multiprocessing.active_children():
        child.join(max(0.0, deadline - time.monotonic()))
    for child in multiprocessing.active_children():
        child.terminate()
        child.join(5)


# --- running -------------------------------------------------------------------------


class Say:
    """Lines for the person watching: to stdout, flushed at once."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def __call__(self, text: str = "") -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


@contextlib.contextmanager
def _interrupts_as_keyboard_interrupt() -> Iterator[None]:
    """SIGTERM stops the demo the way Ctrl-C does: through the same cleanup."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _no_interrupts() -> Iterator[None]:
    """Cleanup must not be cut short by a second Ctrl-C."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)


def _shorten(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    return str(path)


def export_replays(url: str, tournament: str, folder: Path) -> tuple[int, list[str]]:
    """Write every stored replay to its own file and re-simulate it; (files, mismatches)."""
    from arena.engine import replay as rp
    from arena.tournament.store import ResultStore

    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    bad: list[str] = []
    with ResultStore(url) as store:
        for rec in store.iter_results(tournament, with_replay=True):
            if rec.replay is None:
                continue
            path = folder / f"{rec.index:04d}-{rec.match_id[:12]}.json"
            rp.dump(rec.replay, path)
            written += 1
            if rp.verify(rec.replay) is not None:
                bad.append(path.name)
    return written, bad


def leaderboard_text(url: str, tournament: str) -> tuple[str, int]:
    """The leaderboard table and the number of games rated."""
    from arena.tournament.leaderboard import (
        compute_leaderboard,
        format_table,
        load_records,
        luck_summary,
        unbounded_note,
    )
    from arena.tournament.store import ResultStore

    with ResultStore(url) as store:
        records = load_records(store, tournament)
    rows = compute_leaderboard(records)
    note = unbounded_note(rows)
    luck = luck_summary(records).line()
    return format_table(rows) + (f"\n{note}" if note else "") + f"\n{luck}", len(records)


def write_report(url: str, tournament: str, out: Path) -> None:
    from arena.tournament.report import render_report
    from arena.tournament.store import ResultStore

    with ResultStore(url) as store:
        text = render_report(store, tournament)
    out.write_text(text, encoding="utf-8")


def start_services(
    spec: TournamentSpec, paths: Paths, runtime: Path, say: Say, services: list[Service]
) -> tuple[RedisProcess, GatewayProcess]:
    """Redis, the gateway and one bot process per participant, in that order."""
    redis = RedisProcess.start(runtime / "redis", paths.logs / "redis.log")
    services.append(redis)
    say(f"  redis     {redis.url}  (private: no persistence, stopped at the end)")
    token = "org_" + secrets.token_urlsafe(24)
    gateway = GatewayProcess.start(
        db_path=runtime / "gateway.sqlite3",
        log_path=paths.logs / "gateway.log",
        organiser_token=token,
        routing_url=redis.url,
    )
    services.append(gateway)
    say(f"  gateway   {gateway.address}  (arena serve --routing {redis.url})")
    bots: list[Service] = []
    names = [p.bot[len("remote:") :] for p in spec.participants]
    for name in names:
        bot_class = _bot_class(name)
        assert bot_class is not None  # checked with the spec
        bot = BotProcess.start(
            name=name,
            bot_ref=bot_class,
            server=gateway.address,
            token=gateway.register(name),
            log_path=paths.logs / f"bot-{name}.log",
        )
        services.append(bot)
        bots.append(bot)
    gateway.wait_instances(names, bots=bots)
    width = max(len(n) for n in names)
    for name in names:
        say(f"  bot       {name:<{width}}  thousand-bot run {_bot_class(name)}  (connected)")
    return redis, gateway


def run_demo(args: argparse.Namespace, say: Say) -> int:
    from arena.tournament.run import Progress, run_tournament

    _positive(args.sets, "--sets")
    _positive(args.max_deals, "--max-deals")
    _positive(args.workers, "--workers")
    paths = Paths(_db_path(args.db))
    spec = load_demo_spec(args, paths, "redis://127.0.0.1:6379/0")  # validated before starting
    paths.db.parent.mkdir(parents=True, exist_ok=True)
    clear_previous(paths, spec.name)
    paths.logs.mkdir(parents=True, exist_ok=True)

    from arena.tournament.formats import make_format

    games = make_format(spec).planned_total() or 0
    sets = spec.sets or 1
    say(
        f"Thousand Arena demo: {spec.name}, a duplicate round robin of "
        f"{', '.join(p.name for p in spec.participants)} as remote bots"
    )
    say(
        f"  rules {spec.preset}, seed {spec.seed!r}, {sets} sets x "
        f"{games // sets} seatings = {games} games, at most {spec.max_deals} deals each"
    )
    begun = time.monotonic()
    services: list[Service] = []
    runtime = Path(tempfile.mkdtemp(prefix="arena-demo-"))
    executor: QuietLocalExecutor | None = None
    interrupted = False
    finished = False
    try:
        redis, gateway = start_services(spec, paths, runtime, say, services)
        spec = load_demo_spec(args, paths, redis.url)
        workers = spec.executor.workers
        say(f"  matches   local pool of {workers} processes, through Redis to the gateway")
        executor = QuietLocalExecutor(workers, redis.url)
        progress = Progress(spec.name)
        summary = run_tournament(spec, executor=executor, progress=progress)
        progress.set_total(progress.done)
        progress.finish(
            f"{spec.name}: played {summary.played} games in {summary.elapsed_s:.1f} s "
            f"({summary.games_per_s:.2f} games/s)"
        )
        executor.close()
        executor = None
        finished = summary.finished

        table, rated = leaderboard_text(paths.url, spec.name)
        say()
        say(f"Leaderboard ({rated} games, seed {spec.seed!r}):")
        say(table)
        say()
        write_report(paths.url, spec.name, paths.report)
        count, bad = export_replays(paths.url, spec.name, paths.replays)
        db = _shorten(paths.db)
        say(f"results   {db}   arena leaderboard --db {db}")
        say(f"report    {_shorten(paths.report)}   arena report --db {db} --out report.html")
        verdict = "all re-simulate to their results" if not bad else f"MISMATCH in {bad}"
        first = min(paths.replays.glob("*.json"), default=None)
        say(f"replays   {_shorten(paths.replays)}/   {count} files, {verdict}")
        if first is not None:
            say(f"          arena replay show {_shorten(first)}")
        say(f"logs      {_shorten(paths.logs)}/   redis, gateway and bot output")
        say(f"done in {time.monotonic() - begun:.0f} s")
        if args.keep:
            _keep_running(say, redis, gateway, spec, services)
        return 0 if not bad else 1
    except KeyboardInterrupt:
        interrupted = True
        return 130
    finally:
        with _no_interrupts():
            if interrupted:
                sys.stderr.write("\narena demo: stopping: the pool, the bots, the gateway, Redis\n")
            if executor is not None:
                with contextlib.suppress(Exception):
                    executor.close(wait=False)
                _stop_pool_processes()
            _stop_services(services)
            shutil.rmtree(runtime, ignore_errors=True)
            if services and not interrupted:
                say("stopped the bots, the gateway and Redis")
            if interrupted:
                which = "the results" if finished else "partial results"
                sys.stderr.write(
                    f"arena demo: stopped; everything has been shut down; {which} are in "
                    f"{_shorten(paths.db)} (the next run starts afresh)\n"
                )


def _stop_services(services: list[Service]) -> None:
    """Bots first (so nothing asks them anything), then the gateway, then Redis."""
    bots = [s for s in services if isinstance(s, BotProcess)]
    stop_all(bots, timeout=10)
    for s in reversed(services):
        if not isinstance(s, BotProcess):
            s.stop(timeout=15)


def _keep_running(
    say: Say,
    redis: RedisProcess,
    gateway: GatewayProcess,
    spec: TournamentSpec,
    services: list[Service],
) -> None:
    names = " ".join(p.bot for p in spec.participants)
    say()
    say("Still running (--keep); Ctrl-C stops everything:")
    say(f"  gateway          {gateway.address}")
    say(f"  organiser token  {gateway.organiser_token}")
    say(f"  redis            {redis.url}")
    say("Try:")
    say(f"  arena match --gateway {gateway.address} --token {gateway.organiser_token} {names}")
    say(f"  arena match --routing {redis.url} {names}")
    say(f"  ARENA_ROUTING_URL={redis.url} arena tournament run YOUR-SPEC.yaml")
    while True:
        dead = [s for s in services if not s.alive()]
        if dead:
            say(f"{dead[0].name} exited; stopping (see {_shorten(dead[0].log_path)})")
            return
        time.sleep(0.5)


def demo_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``arena demo``; 0 done, 1 failed, 2 bad options, 130 stopped."""
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    say = Say()
    with _interrupts_as_keyboard_interrupt():
        try:
            code = run_demo(args, say)
        except DemoError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 2
        except ServiceError as exc:
            print(f"{PROG}: could not start the services: {exc}", file=sys.stderr)
            return 1
        except (ExecutorError, StoreError) as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130
    return code

if __name__ == "__main__":
    sys.exit(demo_main(sys.argv[1:]))
