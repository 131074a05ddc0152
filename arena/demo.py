"""``arena demo``: the whole platform on one machine, from nothing to a leaderboard.

It starts what a real deployment runs, as separate processes on free loopback ports: a
private Redis (the broker), the gRPC gateway keeping hosted bots in the results store
(``arena serve --store``) and Celery workers (``arena worker``). It then submits the
built-in bots (``search`` among them) and the Node.js starter bot as *hosted* bots, each
with its own token through the gateway, as any author would; each version plays its check
match in a sandbox. Then it plays ``examples/main.yaml``, a seeded duplicate round robin of
those hosted bots, on the Celery workers: every hosted seat is a sandboxed process on a
worker. Finally it prints the leaderboard, writes the HTML report and the replays, and stops
everything (also on Ctrl-C: nothing is left running).

Why so much machinery for a demo: the built-in bots could play in-process in a second, but
then the demo would show nothing of the part that matters in practice, bots submitted by
people and run by the arena in sandboxes, and any break in that path would go unnoticed.

The same seed gives the same leaderboard: deals come from the seed (public on purpose: the
bots are the arena's own, see ``public_seed`` in ``examples/main.yaml``), the bots derive
their choices from the match ids (stable: the tournament's name and match number), search
runs a fixed number of iterations rather than for a time, and nothing depends on timing as
long as no decision times out.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
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

from arena.hosted.builtin import BUILTIN_CLASSES, NODE_STARTER, builtin_folder, node_starter_folder
from arena.rigs.processes import (
    GatewayProcess,
    RedisProcess,
    Service,
    ServiceError,
    WorkerProcess,
    stop_all,
)
from arena.tournament.executors import CeleryExecutor, ExecutorError
from arena.tournament.spec import SpecError, TournamentSpec, validate_spec
from arena.tournament.store import StoreError

PROG = "arena demo"
REPO = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = REPO / "examples" / "main.yaml"
DEFAULT_DB = Path("var") / "demo.sqlite3"
#: Hosted bot names the demo can submit, and the folder each is made from: a built-in
#: bot's kind, or the Node.js starter. (The bare names of built-in bots are reserved.)
SUFFIX = "-bot"
CHECK_TIMEOUT_S = 180.0


class DemoError(Exception):
    """Something the user can fix: a bad option, a database in use, a missing program."""


def _kind(name: str) -> str | None:
    """What folder a hosted bot name of the demo stands for (``search-bot``: the built-in
    search bot; ``node-starter``: the Node.js starter bot)."""
    if name == NODE_STARTER:
        return NODE_STARTER
    if name.endswith(SUFFIX) and name[: -len(SUFFIX)] in BUILTIN_CLASSES:
        return name[: -len(SUFFIX)]
    return None


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


def load_demo_spec(args: argparse.Namespace, paths: Paths, broker: str) -> TournamentSpec:
    """The main job's spec with this run's seed, sets, database and broker."""
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
    raw["executor"] = dict(executor, type="celery", broker=broker)
    raw["db"] = paths.url
    try:
        spec = validate_spec(raw, source=str(spec_path))
    except SpecError as exc:
        raise DemoError(str(exc)) from None
    for p in spec.participants:
        if not p.bot.startswith("hosted:") or _kind(p.bot[len("hosted:") :]) is None:
            names = [f"hosted:{n}{SUFFIX}" for n in BUILTIN_CLASSES] + [f"hosted:{NODE_STARTER}"]
            raise DemoError(
                f"{spec_path}: participant {p.name!r} is {p.bot!r}; the demo submits only "
                f"the arena's own bots: {', '.join(names)}"
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
    from arena.tournament.store import ResultStore
    from arena.web.report import render_report

    with ResultStore(url) as store:
        text = render_report(store, tournament)
    out.write_text(text, encoding="utf-8")


def start_services(
    paths: Paths, runtime: Path, workers: int, say: Say, services: list[Service]
) -> tuple[RedisProcess, GatewayProcess]:
    """Redis, the gateway keeping hosted bots, and the Celery workers, in that order."""
    redis = RedisProcess.start(runtime / "redis", paths.logs / "redis.log")
    services.append(redis)
    say(f"  redis     {redis.url}  (private broker: no persistence, stopped at the end)")
    token = "org_" + secrets.token_urlsafe(24)
    gateway = GatewayProcess.start(
        db_path=runtime / "gateway.sqlite3",
        log_path=paths.logs / "gateway.log",
        organiser_token=token,
        extra=["--store", paths.url],
    )
    services.append(gateway)
    say(f"  gateway   {gateway.address}  (arena serve --store {_shorten(paths.db)}: keeps "
        "hosted bots, checks new versions)")
    worker = WorkerProcess.start(broker=redis.url, log_path=paths.logs / "worker.log",
                                 concurrency=workers)
    services.append(worker)
    say(f"  workers   arena worker --broker {redis.url} --concurrency {workers}  (ready)")
    return redis, gateway


def submit_bots(spec: TournamentSpec, gateway: GatewayProcess, folders: Path,
                say: Say) -> None:
    """Register each hosted bot, submit its folder with its own token, and wait until
    every version has passed its check match."""
    import grpc
    from thousand_bot.proto.thousand.v1 import hosted_pb2, hosted_pb2_grpc

    from arena.hosted.bundle import pack

    names = [p.bot[len("hosted:") :] for p in spec.participants]
    width = max(len(n) for n in names)
    tokens: dict[str, str] = {}
    with grpc.insecure_channel(gateway.address) as channel:
        stub = hosted_pb2_grpc.HostedServiceStub(channel)
        for name in names:
            kind = _kind(name)
            assert kind is not None  # checked with the spec
            folder = (node_starter_folder(folders) if kind == NODE_STARTER
                      else builtin_folder(kind, folders))
            bundle = pack(folder)
            tokens[name] = gateway.register(name)
            data = gzip.compress(bundle.data, mtime=0)
            parts = [hosted_pb2.SubmitBotRequest(
                header=hosted_pb2.SubmitHeader(name=name, filename="bot.tar.gz"))]
            parts += [hosted_pb2.SubmitBotRequest(chunk=data[i:i + (256 << 10)])
                      for i in range(0, len(data), 256 << 10)]
            stub.SubmitBot(iter(parts), metadata=_bearer(tokens[name]), timeout=60)
        deadline = time.monotonic() + CHECK_TIMEOUT_S
        pending = list(names)
        while pending:
            for name in list(pending):
                [v] = stub.ListVersions(hosted_pb2.ListVersionsRequest(name=name),
                                        metadata=_bearer(tokens[name]), timeout=10).versions
                if v.status == "checking":
                    continue
                pending.remove(name)
                verdict = "check passed" if v.status == "passed" else f"{v.status}: {v.reason}"
                say(f"  bot       {name:<{width}}  hosted {v.runtime:<6} version "
                    f"{v.hash[:12]}, {v.files} files  {verdict}")
                if v.status != "passed":
                    raise DemoError(f"hosted bot {name} did not pass its check: {v.reason}")
            if pending and time.monotonic() > deadline:
                raise DemoError(f"the checks of {', '.join(pending)} did not finish within "
                                f"{CHECK_TIMEOUT_S:.0f} s (see the gateway's log)")
            if pending:
                time.sleep(0.3)


def _bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


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
        f"{', '.join(p.name for p in spec.participants)} as hosted bots"
    )
    say(
        f"  rules {spec.preset}, seed {spec.seed!r}, {sets} sets of one group each = "
        f"{games} games, at most {spec.max_deals} deals each"
    )
    begun = time.monotonic()
    services: list[Service] = []
    runtime = Path(tempfile.mkdtemp(prefix="arena-demo-"))
    executor: CeleryExecutor | None = None
    interrupted = False
    finished = False
    workers = args.workers or 2
    try:
        redis, gateway = start_services(paths, runtime, workers, say, services)
        submit_bots(spec, gateway, runtime / "bots", say)
        spec = load_demo_spec(args, paths, redis.url)
        say("  matches   on the Celery workers: each hosted seat a sandboxed process "
            "(arena doctor says which isolation)")
        executor = CeleryExecutor(broker=redis.url, poll_s=0.1)
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
        say(f"Leaderboard ({rated} games, seed {spec.seed!r}; a hosted bot is rated per "
            "version, NAME@VERSION):")
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
        say(f"hosted    arena web --db {db}   (then /hosted: versions, statuses, ratings)")
        say(f"logs      {_shorten(paths.logs)}/   redis, gateway and worker output")
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
                sys.stderr.write("\narena demo: stopping: the workers, the gateway, Redis\n")
            if executor is not None:
                with contextlib.suppress(Exception):
                    executor.revoke_sent()
                    executor.close()
            _stop_services(services)
            shutil.rmtree(runtime, ignore_errors=True)
            if services and not interrupted:
                say("stopped the workers, the gateway and Redis")
            if interrupted:
                which = "the results" if finished else "partial results"
                sys.stderr.write(
                    f"arena demo: stopped; everything has been shut down; {which} are in "
                    f"{_shorten(paths.db)} (the next run starts afresh)\n"
                )


def _stop_services(services: list[Service]) -> None:
    """Workers first (they finish or abandon their match), then the gateway, then Redis."""
    workers = [s for s in services if isinstance(s, WorkerProcess)]
    stop_all(workers, timeout=30)
    for s in reversed(services):
        if not isinstance(s, WorkerProcess):
            s.stop(timeout=15)


def _keep_running(
    say: Say,
    redis: RedisProcess,
    gateway: GatewayProcess,
    spec: TournamentSpec,
    services: list[Service],
) -> None:
    say()
    say("Still running (--keep); Ctrl-C stops everything:")
    say(f"  gateway          {gateway.address}")
    say(f"  organiser token  {gateway.organiser_token}")
    say(f"  broker           {redis.url}")
    say("Try:")
    say(f"  arena bot --gateway {gateway.address} --token {gateway.organiser_token} "
        "register my-bot")
    say(f"  arena bot --gateway {gateway.address} submit my-bot ./my-bot --token BOT_TOKEN")
    say(f"  ARENA_BROKER_URL={redis.url} arena tournament run YOUR-SPEC.yaml --executor celery")
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
