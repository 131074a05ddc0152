"""``arena match`` and ``arena bot-check``: play a match here, or put a bot through its paces.

Both take their own arguments (``match_main(argv)``, ``bot_check_main(argv)``) so the
``arena`` command can hand them the rest of its command line.  Exit codes (docs/cli.md):
0 success, 1 the match was cut short or the bot misbehaved, 2 bad arguments, 3 the
gateway cannot be reached, 4 it refused the organiser token.

A match with a remote bot is dealt from a secret seed unless the organiser passes
``--public-seed``: a remote bot is a program nobody here controls, and a seed it can guess
(``--seed 7``) gives it every hand.  The secret's commitment is printed before the first
deal and the seed after the last (see :mod:`arena.engine.commitment`).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import secrets
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from thousand_bot.stdio.program import Transcript

from arena.engine import EngineError, Rules
from arena.engine import commitment as cm
from arena.engine import replay as rp
from arena.match.types import (
    JSON,
    DecisionRequest,
    MatchResult,
    MatchSpec,
    Seat,
    TimeControl,
)
from arena.referee.clock import BotClock
from arena.referee.runner import (
    AnswerTooLong,
    match_rules,
    parse_answer,
    raised_at,
    resolve_seat,
    run_match,
)
from arena.referee.story import Story

ORGANISER_TOKEN_ENV = "ARENA_ORGANISER_TOKEN"


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit code 2."""


class GatewayError(Exception):
    """The gateway could not be reached or refused a call: one line, and the exit code of
    docs/cli.md for its status (3 unreachable, 4 refused credentials, 1 otherwise)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _say(line: str) -> None:
    """Print a line; when the reader went away (``arena match ... | head``) stay quiet."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        # Point stdout at /dev/null so later prints and the exit flush do not fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def parse_options(items: Sequence[str] | None) -> dict[str, Any]:
    """``name=value`` pairs; values are JSON (``true``, ``120``, ``[1,2,3,4]``) or text."""
    out: dict[str, Any] = {}
    for item in items or ():
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"option {item!r}: expected name=value")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


def _rules_json(preset: str, options: Sequence[str] | None) -> JSON:
    data: JSON = {"preset": preset, "options": parse_options(options)}
    try:
        Rules.from_json(data)
    except EngineError as exc:
        raise UsageError(str(exc)) from None
    return data


def _add_clock(p: argparse.ArgumentParser, strike_default: int) -> None:
    tc = TimeControl()
    p.add_argument("--decision-ms", type=int, default=tc.decision_ms,
                   help=f"time for each decision (default {tc.decision_ms})")
    p.add_argument("--bank-ms", type=int, default=tc.bank_ms,
                   help=f"each seat's time bank (default {tc.bank_ms})")
    p.add_argument("--strike-limit", type=int, default=strike_default,
                   help=f"strikes that forfeit the match, 0 for none (default {strike_default})")


def _add_gateway(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gateway", metavar="HOST:PORT",
                   help="play on this gateway (needed for remote:NAME bots)")
    p.add_argument("--token", help=f"organiser token for the gateway (env {ORGANISER_TOKEN_ENV})")
    from arena.server.tls import add_client_options

    add_client_options(p)


# ---------------------------------------------------------------------------- arena match


def match_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="arena match",
        description="Play one seeded match between bots and tell it deal by deal.",
    )
    p.add_argument("bots", nargs="+", metavar="BOT",
                   help="one per seat: random, greedy, module:Class, file.py:Class, "
                   "cmd:COMMAND (a program speaking the text protocol), remote:NAME")
    p.add_argument("--rules", default="classic", help="rules preset (default classic)")
    p.add_argument("--option", "-o", action="append", metavar="NAME=VALUE",
                   help="rule option override, repeatable")
    p.add_argument("--seed", default=None,
                   help="seed text the deals come from (default 1; with remote bots a secret "
                   "seed, and a given one needs --public-seed)")
    p.add_argument("--public-seed", action="store_true",
                   help="play --seed even with remote bots seated, who could then derive "
                   "every deal from a seed they guess")
    p.add_argument("--max-deals", type=int, help="stop after this many deals")
    p.add_argument("--match-id", default=None,
                   help="match id (default: a hash of the seed for local bots, random with "
                   "remote ones)")
    p.add_argument("--replay", metavar="FILE",
                   help="write the replay to FILE (fetched from the gateway with --gateway)")
    p.add_argument("--tricks", action="store_true", help="show every trick")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the result")
    p.add_argument("--json", action="store_true", help="print the result as JSON at the end")
    p.add_argument("--transcript", metavar="FILE",
                   help="write every line of the text protocol exchanged with the cmd: bots "
                   "to FILE ('<' what a bot reads, '>' what it writes)")
    p.add_argument("--routing", metavar="REDIS_URL",
                   help="play here and reach remote:NAME bots through the Redis their gateway "
                   "routes (arena serve --routing); the replay is then written as usual "
                   "(env ARENA_ROUTING_URL)")
    _add_clock(p, TimeControl().strike_limit)
    _add_gateway(p)
    return p


DEFAULT_SEED = "1"


def _untrusted(args: argparse.Namespace) -> bool:
    """Whether a bot nobody here controls may sit at the table: a remote bot, or on a
    gateway a bare name that may be a registered bot (one needs no ``remote:`` prefix
    there).  Built-in bots and Python classes are never remote, wherever they play."""
    from arena.bots import BUILTIN_BOTS

    for ref in args.bots:
        if ref.startswith("remote:"):
            return True
        if args.gateway and ":" not in ref and ref not in BUILTIN_BOTS:
            return True
    return False


def _spec_from_args(args: argparse.Namespace, on_gateway: bool = False) -> MatchSpec:
    """The match to play.  With remote bots and no ``--public-seed`` the seed is a fresh
    secret (drawn by the gateway when it plays the match) and the spec carries its
    commitment; a given seed then is a usage error rather than a silent change."""
    rules = _rules_json(args.rules, args.option)
    if args.max_deals is not None and args.max_deals < 1:
        raise UsageError("--max-deals must be at least 1")
    untrusted = _untrusted(args)
    if args.seed is not None and untrusted and not args.public_seed:
        raise UsageError(
            "--seed with a remote bot seated lets that bot derive every deal from a guess: "
            "leave --seed out for a secret seed (its commitment is shown at the start, the "
            "seed at the end), or add --public-seed to play this seed anyway"
        )
    commitment = None
    if untrusted and args.seed is None:
        # A secret seed; a match id with nothing of it, so nothing to test guesses against.
        match_id = args.match_id or f"match-{secrets.token_hex(6)}"
        seed = "" if on_gateway else cm.new_secret()
        if seed:
            commitment = cm.for_match(match_id, seed)
    else:
        seed = str(args.seed if args.seed is not None else DEFAULT_SEED)
        if untrusted:
            match_id = args.match_id or f"match-{secrets.token_hex(6)}"
        else:
            # Local bots only: a stable id, so the same seed writes the same replay.
            digest = hashlib.sha256(seed.encode()).hexdigest()[:12]
            match_id = args.match_id or f"match-{digest}"
    spec = MatchSpec(
        match_id=match_id,
        rules=rules,
        seed=seed,
        bots=tuple(args.bots),
        time_control=TimeControl(args.decision_ms, args.bank_ms, args.strike_limit),
        max_deals=args.max_deals,
        commitment=commitment,
    )
    players = match_rules(spec).players
    if len(spec.bots) != players:
        raise UsageError(f"{args.rules} is played by {players}: give {players} bots, "
                         f"got {len(spec.bots)}")
    return spec


def match_main(argv: Sequence[str] | None = None) -> int:
    """``arena match``: play a match here (or on a gateway) and tell its story."""
    parser = match_parser()
    args = parser.parse_args(argv)
    try:
        routing = args.routing or os.environ.get("ARENA_ROUTING_URL")
        remote = any(b.startswith("remote:") for b in args.bots)
        on_gateway = bool(args.gateway) or (remote and not routing)
        spec = _spec_from_args(args, on_gateway)
        if args.public_seed and _untrusted(args):
            print("arena match: warning: a public seed with remote bots: they can derive "
                  "every deal from it", file=sys.stderr)
        if on_gateway:
            return _match_on_gateway(args, spec)
        resolver = None
        if remote and routing:
            from arena.tournament.routing import routing_resolver

            resolver = routing_resolver(routing)
        transcript = _Transcript.open(args.transcript, spec.bots)
        seats = [
            _program_seat(ref, i, transcript) if ref.startswith("cmd:")
            else resolve_seat(ref, i, spec, resolver)
            for i, ref in enumerate(spec.bots)
        ]
    except (UsageError, ValueError) as exc:
        print(f"arena match: {exc}", file=sys.stderr)
        return 2
    story = _with_commitment(Story(_say, quiet=args.quiet, tricks=args.tricks), args.quiet)

    async def spectator(event: JSON) -> None:
        story(event)

    try:
        result = asyncio.run(_play_and_close(spec, seats, spectator))
    except KeyboardInterrupt:
        print("arena match: interrupted", file=sys.stderr)
        return 130
    finally:
        transcript.close()
    _print_stats(result)
    _print_programs(result, seats)
    if args.replay and result.replay is not None:
        rp.dump(result.replay, args.replay)
        _say(f"replay written to {args.replay}")
    if args.json:
        data = result.to_json()
        data.pop("replay", None)
        _say(json.dumps(data, indent=2))
    return 0 if result.status in ("completed", "forfeit") else 1


def _with_commitment(story: Any, quiet: bool) -> Any:
    """The story, plus a line for the commitment at the start and the reveal at the end,
    the reveal checked against the commitment here and now."""
    seen: dict[str, str] = {}

    def tell(event: JSON) -> None:
        kind = event.get("type")
        if kind == "match_start" and isinstance(event.get("commitment"), str):
            seen["commitment"] = event["commitment"]
            seen["match_id"] = str(event.get("match_id", ""))
            if not quiet:
                _say(f"Deals from a secret seed; commitment {event['commitment']}")
        story(event)
        reveal = event.get("seed_reveal")
        if kind == "match_end" and isinstance(reveal, str) and "commitment" in seen:
            ok = cm.seed_commitment(seen["match_id"], reveal) == seen["commitment"]
            verdict = "matches the commitment" if ok else "DOES NOT match the commitment"
            _say(f"Seed revealed: {reveal} ({verdict})")

    return tell


async def _play_and_close(spec: MatchSpec, seats: list[Seat], spectator: Any) -> MatchResult:
    try:
        return await run_match(spec, seats, on_event=spectator)
    finally:
        for seat in seats:
            close = getattr(seat, "aclose", None)
            if callable(close):
                await close()


class _Transcript:
    """``--transcript FILE``: the protocol lines of the match's ``cmd:`` bots, each
    marked with its seat when there are several."""

    def __init__(self, path: str | None, programs: int) -> None:
        self.out: IO[str] | None = None
        self.tagged = programs > 1
        if path:
            try:
                self.out = open(path, "w", encoding="utf-8")  # noqa: SIM115
            except OSError as exc:
                raise UsageError(f"--transcript {path}: {exc.strerror or exc}") from None

    @classmethod
    def open(cls, path: str | None, bots: Sequence[str]) -> _Transcript:
        programs = sum(1 for b in bots if b.startswith("cmd:"))
        if path and not programs:
            raise UsageError("--transcript records the text protocol of cmd: bots; "
                             "no bot of this match is one")
        return cls(path, programs)

    def for_seat(self, seat: int) -> Transcript | None:
        out = self.out
        if out is None:
            return None
        tag = f"[seat {seat}] " if self.tagged else ""

        def write(direction: str, line: str) -> None:
            out.write(f"{tag}{direction} {line}\n")

        return write

    def close(self) -> None:
        if self.out is not None:
            self.out.close()


def _program_seat(ref: str, seat: int, transcript: _Transcript,
                  log_max_bytes: int | None = None) -> Seat:
    """The seat of a ``cmd:`` bot: its standard error goes to ours, each line marked with
    its seat (and escaped: a bot cannot write to the terminal behind our back)."""
    from arena.server.limits import escape
    from arena.stdio.seat import LOG_MAX_BYTES, StdioSeat

    def log(line: str) -> None:
        print(f"[seat {seat}] {escape(line)}", file=sys.stderr, flush=True)

    return StdioSeat.from_ref(ref, log=log, transcript=transcript.for_seat(seat),
                              log_max_bytes=log_max_bytes or LOG_MAX_BYTES)


def _print_programs(result: MatchResult, seats: Sequence[Seat]) -> None:
    """How each ``cmd:`` bot's program fared, when it did not end well."""
    for i, seat in enumerate(seats):
        status = getattr(seat, "status", None)
        if status is not None and not getattr(status, "ok", True):
            _say(f"  {i}:{result.bots[i]}: its program: {status}")


def _print_stats(result: MatchResult) -> None:
    for seat, (bot, st) in enumerate(zip(result.bots, result.seat_stats, strict=False)):
        if not st.decisions:
            continue
        avg = st.think_ms_total / st.decisions
        trouble = ""
        if st.strikes:
            trouble = (f", {st.strikes} strike(s): {st.timeouts} timeout, {st.illegal} illegal, "
                       f"{st.malformed} malformed")
        _say(f"  {seat}:{bot}: {st.decisions} decisions, {avg:.3f} ms average, "
             f"{st.think_ms_max:.3f} ms max{trouble}")


def _organiser(args: argparse.Namespace) -> tuple[Any, Any, list[tuple[str, str]]]:
    """A channel, organiser stub and auth metadata for ``--gateway``."""
    if not args.gateway:
        raise UsageError("remote bots play on a gateway: give --gateway HOST:PORT and --token")
    from thousand_bot.address import gateway_problem

    problem = gateway_problem(args.gateway)
    if problem:
        raise UsageError(problem)
    token = args.token or os.environ.get(ORGANISER_TOKEN_ENV)
    if not token:
        raise UsageError(f"the gateway needs the organiser token: --token or {ORGANISER_TOKEN_ENV}")
    from thousand_bot.proto.thousand.v1 import organiser_pb2_grpc

    from arena.server.tls import TlsConfigError, aio_channel, client_tls

    try:
        tls = client_tls(args)
    except TlsConfigError as exc:
        raise UsageError(str(exc)) from None
    channel = aio_channel(args.gateway, tls)
    stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
    return channel, stub, [("authorization", f"Bearer {token}")]


async def _gateway_match(args: argparse.Namespace, spec: MatchSpec,
                         on_event: Any, public_seed: bool | None = None,
                         replay_to: str | None = None) -> JSON | None:
    """Start the match on the gateway and feed its events to ``on_event``; the match_end.
    With ``replay_to`` the match's replay is fetched from the gateway and written there."""
    import grpc
    from thousand_bot.proto.thousand.v1 import organiser_pb2

    channel, stub, metadata = _organiser(args)
    async with channel:
        tc = spec.time_control
        request = organiser_pb2.StartMatchRequest(
            preset=spec.rules["preset"],
            options_json=json.dumps(spec.rules.get("options") or {}),
            seed=spec.seed,
            bots=list(spec.bots),
            time_control=organiser_pb2.TimeControl(
                decision_ms=tc.decision_ms, bank_ms=tc.bank_ms, strike_limit=tc.strike_limit
            ),
            public_seed=bool(args.public_seed if public_seed is None else public_seed),
        )
        if spec.max_deals is not None:
            request.max_deals = spec.max_deals
        if args.match_id:
            request.match_id = args.match_id
        try:
            started = await stub.StartMatch(request, metadata=metadata, timeout=30)
            end: JSON | None = None
            watch = stub.WatchMatch(
                organiser_pb2.WatchMatchRequest(match_id=started.match_id), metadata=metadata
            )
            async for item in watch:
                event = json.loads(item.event.detail_json or "{}")
                on_event(event)
                if event.get("type") == "match_end":
                    end = event
                    break
            if end is not None and replay_to is not None:
                got = await stub.GetMatchResult(
                    organiser_pb2.GetMatchResultRequest(match_id=started.match_id),
                    metadata=metadata, timeout=60)
                replay = json.loads(got.result_json).get("replay")
                if replay is None:
                    raise GatewayError(f"gateway {args.gateway}: match {started.match_id} "
                                       "ended, but the gateway kept no replay of it", 1)
                rp.dump(replay, replay_to)
            return end
        except grpc.aio.AioRpcError as exc:
            from arena.server.admin import rpc_exit_code

            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise UsageError(f"gateway {args.gateway}: {exc.details()}") from None
            raise GatewayError(f"gateway {args.gateway}: {exc.code().name}: {exc.details()}",
                               rpc_exit_code(exc.code())) from None


def _stopped(prog: str, exc: BaseException) -> int:
    """Say on stderr why ``prog`` stopped before its end, and give its exit status: the
    gateway's own for a refusal, 2 for a mistake in what was asked, 130 for Ctrl-C."""
    if isinstance(exc, KeyboardInterrupt):
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    print(f"{prog}: {exc}", file=sys.stderr)
    return exc.exit_code if isinstance(exc, GatewayError) else 2


def _match_on_gateway(args: argparse.Namespace, spec: MatchSpec) -> int:
    story = _with_commitment(Story(_say, quiet=args.quiet, tricks=args.tricks), args.quiet)
    try:
        end = asyncio.run(_gateway_match(args, spec, story, replay_to=args.replay))
    except (UsageError, GatewayError, KeyboardInterrupt) as exc:
        return _stopped("arena match", exc)
    if end is None:
        print("arena match: the event stream ended before the match did", file=sys.stderr)
        return 1
    if args.replay:
        _say(f"replay written to {args.replay}")
    if args.json:
        _say(json.dumps(end, indent=2))
    return 0 if end.get("status") in ("completed", "forfeit") else 1


# ---------------------------------------------------------------------------- bot-check


@dataclass
class Problem:
    match: int
    deal: int
    phase: str
    kind: str
    detail: str


@dataclass
class Chances:
    """Turns where the bot could make one choice (bid, concede), and how often it did."""

    turns: int = 0
    taken: int = 0

    def count(self, taken: bool) -> None:
        self.turns += 1
        self.taken += taken


@dataclass
class Probe:
    """What bot-check saw of the bot under test."""

    latencies_ms: list[float] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {
        "ok": 0, "slow": 0, "timeout": 0, "illegal": 0, "malformed": 0, "error": 0,
    })
    lowest_bank_ms: int | None = None
    #: The first exception the bot raised, with its traceback, for the report.
    traceback: str | None = None
    #: Play that is legal but broken: turns where a bid was allowed, and bids made; deals
    #: where conceding was allowed, and concessions.
    bids: Chances = field(default_factory=Chances)
    concessions: Chances = field(default_factory=Chances)
    #: On a gateway: the bot's last action was a card given or discarded (declaring).
    declaring: bool = False
    match_index: int = 0
    stop: asyncio.Event | None = None
    max_problems: int = 10
    #: Messages of a program refused outside any decision: lines nobody asked for, a bad
    #: hello, a session cut off (a program's problems that are not a decision's).
    protocol_errors: int = 0
    #: Where the last decision was asked: the deal and phase of a program's problem.
    deal: int = 0
    phase: str = "-"

    def note(self, legal: Sequence[str], answer: object) -> None:
        """Count the choices that show a legal but broken strategy (see :meth:`warnings`)."""
        if not isinstance(answer, str):
            return
        if any(a.startswith(("bid ", "blind ")) for a in legal):
            self.bids.count(answer.startswith(("bid ", "blind ")))
        if "concede" in legal:
            self.concessions.count(answer == "concede")

    def warnings(self) -> list[str]:
        """Play that breaks no rule and still loses: a bot that gives up every contract it
        could play, or that never bids. Legal, so no problem; said, so not missed."""
        out = []
        conceded, bids = self.concessions, self.bids
        if conceded.turns >= 2 and conceded.taken == conceded.turns:
            out.append(f"conceded every time it could ({conceded.taken} of "
                       f"{conceded.turns}): each concession gives up the contract; a "
                       "bot that always concedes loses every deal it declares")
        if bids.turns >= 4 and bids.taken == 0:
            out.append(f"never bid ({bids.turns} turns where a bid was allowed): it "
                       "declares only when it must, and never for a contract of its own")
        return out

    def add(self, request: DecisionRequest, kind: str, detail: str) -> None:
        self.counts[kind] += 1
        obs = request.observation
        self._problem(Problem(self.match_index, int(obs.get("deal", 0)), str(obs.get("phase")),
                              kind, detail))

    def add_program(self, kind: str, detail: str) -> None:
        """A problem of the bot's program as a whole (it crashed, flooded...)."""
        if kind == "protocol":
            self.protocol_errors += 1
        self._problem(Problem(self.match_index, self.deal, self.phase, kind, detail))

    def _problem(self, problem: Problem) -> None:
        self.problems.append(problem)
        if len(self.problems) >= self.max_problems and self.stop is not None:
            self.stop.set()


class ProbeSeat:
    """Wraps the seat under test: times every answer and judges it as the referee will."""

    in_process = False

    def __init__(self, inner: Seat, probe: Probe) -> None:
        self.inner = inner
        self.probe = probe
        self.name = inner.name
        self.wants_events = bool(getattr(inner, "wants_events", True))
        #: A seat that keeps the bot's own clock (a program: from the request handed to
        #: its pipe to its answer read), to time the bot rather than the transport.
        self._clocked = getattr(inner, "decide_clocked", None)

    async def prepare(self) -> None:
        prepare = getattr(self.inner, "prepare", None)
        if callable(prepare):
            await prepare()

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if callable(close):
            await close()

    async def decide(self, request: DecisionRequest) -> str:
        probe = self.probe
        bank = request.time_bank_ms
        obs = request.observation
        probe.deal, probe.phase = int(obs.get("deal", 0)), str(obs.get("phase"))
        if probe.lowest_bank_ms is None or bank < probe.lowest_bank_ms:
            probe.lowest_bank_ms = bank
        clock = BotClock() if self._clocked is not None else None
        t0 = time.perf_counter()

        def took_ms() -> float:
            if clock is not None and clock.started is not None:
                return clock.bot_s() * 1000.0
            return (time.perf_counter() - t0) * 1000.0

        try:
            if self._clocked is not None:
                answer = str(await self._clocked(request, clock))
            else:
                answer = await self.inner.decide(request)
        except asyncio.CancelledError:
            probe.latencies_ms.append(took_ms())
            budget = request.deadline_ms + request.time_bank_ms
            probe.add(request, "timeout", f"no answer within {budget} ms")
            raise
        except TimeoutError as exc:  # a program that has ended: nobody is there to answer
            last = probe.problems[-1] if probe.problems else None
            if last is None or (last.match, last.detail) != (probe.match_index, str(exc)):
                probe.add(request, "timeout", str(exc))
            else:  # said once a match: every decision after its end is the same story
                probe.counts["timeout"] += 1
            raise
        except Exception as exc:
            probe.latencies_ms.append(took_ms())
            probe.add(request, "error", f"raised {type(exc).__name__}: {exc} ({raised_at(exc)})")
            if probe.traceback is None:
                probe.traceback = "".join(traceback.format_exception(exc)).rstrip()
            raise
        elapsed = took_ms()
        probe.note(request.legal, answer)
        # A threaded Python bot reports its own time, without the thread hand-off.
        own = getattr(self.inner, "last_think_ms", None)
        probe.latencies_ms.append(own if isinstance(own, float) else elapsed)
        if elapsed > request.deadline_ms + request.time_bank_ms:
            probe.add(request, "timeout", f"answered after {elapsed:.0f} ms")
        elif elapsed > request.deadline_ms:
            # In time only thanks to the bank, which never refills: a bot this slow at
            # every decision forfeits a full match on time.
            taken = elapsed - request.deadline_ms
            left = max(0, round(request.time_bank_ms - taken))
            probe.add(request, "slow", f"answered after {elapsed:.0f} ms, over the "
                      f"{request.deadline_ms} ms deadline: {taken:.0f} ms taken from the "
                      f"time bank ({left} ms left of {request.time_bank_ms})")
        elif not isinstance(answer, str):
            probe.add(request, "malformed", f"answered {type(answer).__name__}, not text")
        elif answer not in request.legal:
            try:
                action = parse_answer(answer)
            except AnswerTooLong as exc:
                probe.add(request, "malformed", f"{answer[:40]!r}...: {exc}")
            except EngineError as exc:
                probe.add(request, "malformed", f"{answer!r}: {exc}")
            else:
                if str(action) in request.legal:
                    probe.counts["ok"] += 1
                else:
                    shown = ", ".join(request.legal[:8]) + (" ..." if len(request.legal) > 8
                                                            else "")
                    probe.add(request, "illegal", f"{answer!r} is not legal (legal: {shown})")
        else:
            probe.counts["ok"] += 1
        return answer

    async def on_event(self, match_id: str, event: JSON) -> None:
        await self.inner.on_event(match_id, event)


def _note_event(probe: Probe, action: str) -> None:
    """:meth:`Probe.note` for a bot checked on a gateway, which shows its actions but not
    what was legal: a turn of the auction counts as one where it could bid (the forced
    bids are left out), a deal it declared (its first card given or discarded, or its
    concession) as one where it could concede."""
    word = action.split(" ", 1)[0]
    if word in ("pass", "bid", "blind"):
        probe.bids.count(word != "pass")
    elif word == "concede" or (word in ("give", "discard") and not probe.declaring):
        probe.concessions.count(word == "concede")
    probe.declaring = word in ("give", "discard")


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(-(-q * len(ordered) // 100)) - 1))
    return ordered[k]


def bot_check_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="arena bot-check",
        description="Play a few seeded deals with a bot in every seat against built-in bots "
        "and report protocol errors, illegal moves, timeouts and latency.",
    )
    p.add_argument("bot", help="the bot under test: module:Class, file.py:Class, cmd:COMMAND "
                   "(a program speaking the text protocol) or remote:NAME")
    p.add_argument("--rules", default="classic", help="rules preset (default classic)")
    p.add_argument("--option", "-o", action="append", metavar="NAME=VALUE",
                   help="rule option override, repeatable")
    p.add_argument("--seed", default="bot-check", help="seed text (default bot-check)")
    p.add_argument("--deals", type=int, default=4,
                   help="deals per match; one match per seat (default 4)")
    p.add_argument("--opponents", default="greedy",
                   help="comma-separated built-in bots to fill the other seats (default greedy)")
    p.add_argument("--max-problems", type=int, default=10,
                   help="stop after this many problems (default 10)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_clock(p, 0)
    _add_gateway(p)
    return p


def bot_check_main(argv: Sequence[str] | None = None) -> int:
    """``arena bot-check``: exit 0 when the bot behaved, 1 when it did not, 2 on bad input."""
    args = bot_check_parser().parse_args(argv)
    # The referee logs a bot's first error with its traceback; the report shows it instead.
    logging.getLogger("arena.referee.runner").setLevel(logging.ERROR)
    try:
        report = asyncio.run(_bot_check(args))
    except (UsageError, ValueError, GatewayError, KeyboardInterrupt) as exc:
        return _stopped("arena bot-check", exc)
    if args.json:
        _say(json.dumps(report, indent=2))
    else:
        for line in _report_lines(report):
            _say(line)
    return 0 if report["passed"] else 1


async def _bot_check(args: argparse.Namespace) -> JSON:
    rules = _rules_json(args.rules, args.option)
    if args.deals < 1:
        raise UsageError("--deals must be at least 1")
    opponents = [o.strip() for o in args.opponents.split(",") if o.strip()]
    if not opponents:
        raise UsageError("--opponents: name at least one built-in bot")
    players = Rules.from_json(rules).players
    tc = TimeControl(args.decision_ms, args.bank_ms, args.strike_limit)
    remote = args.bot.startswith("remote:")
    if remote:
        return await _bot_check_gateway(args, rules, opponents, players, tc)
    probe = Probe(max_problems=args.max_problems)
    statuses: list[str] = []
    for seat in range(players):
        others = iter(opponents * players)
        bots = tuple(args.bot if s == seat else next(others) for s in range(players))
        spec = MatchSpec(match_id=f"bot-check-{seat}", rules=rules,
                         seed=f"{args.seed}/{seat}", bots=bots, time_control=tc,
                         max_deals=args.deals)
        seats: list[Seat] = []
        for i, ref in enumerate(bots):
            if i == seat:
                inner = (
                    _program_seat(ref, i, _Transcript(None, 0), log_max_bytes=64 << 10)
                    if ref.startswith("cmd:") else resolve_seat(ref, i, spec, threaded=True)
                )
                seats.append(ProbeSeat(inner, probe))
            else:
                seats.append(resolve_seat(ref, i, spec))
        probe.match_index = seat
        probe.stop = asyncio.Event()
        probe.deal, probe.phase = 0, "-"
        try:
            result = await run_match(spec, seats, stop=probe.stop)
        finally:
            for s in seats:
                close = getattr(s, "aclose", None)
                if callable(close):
                    await close()
        _program_problems(seats[seat], probe)
        statuses.append(result.status)
        if probe.stop.is_set():
            break
    return _report(args, rules, probe, statuses)


def _program_problems(seat: Seat, probe: Probe) -> None:
    """What a ``cmd:`` bot's program did wrong besides its decisions: its end, the lines
    the referee refused outside any decision."""
    inner = getattr(seat, "inner", seat)
    session = getattr(inner, "session", None)
    if session is None:
        return
    for reason in session.refusals:
        probe.add_program("protocol", reason)
    status = session.status
    if not status.ok:
        kind = {"timeout": "timeout", "protocol_error": "protocol"}.get(status.state, "error")
        probe.add_program(kind, f"its program: {status}")


def _report(args: argparse.Namespace, rules: JSON, probe: Probe, statuses: list[str]) -> JSON:
    lat = probe.latencies_ms
    latency = (
        {f"p{q}": round(percentile(lat, q), 3) for q in (50, 90, 99)} | {"max": round(max(lat), 3)}
        if lat else None
    )
    problems = [p.__dict__ for p in probe.problems[: args.max_problems]]
    return {
        "bot": args.bot,
        "rules": rules,
        "matches": len(statuses),
        "statuses": statuses,
        "decisions": sum(probe.counts.values()),
        "counts": dict(probe.counts),
        "latency_ms": latency,
        "lowest_bank_ms": probe.lowest_bank_ms,
        "bank_ms": args.bank_ms,
        "decision_ms": args.decision_ms,
        "latency_source": "events" if args.bot.startswith("remote:") else "bot",
        "protocol_errors": probe.protocol_errors,
        "problems": problems,
        "warnings": probe.warnings(),
        "traceback": probe.traceback,
        "stopped_early": len(problems) >= args.max_problems,
        "passed": not problems and bool(sum(probe.counts.values())),
    }


def _report_lines(report: JSON) -> list[str]:
    c = report["counts"]
    lines = [
        f"bot-check {report['bot']}: {report['rules']['preset']}, {report['matches']} match(es)",
        f"  decisions {report['decisions']}: ok {c['ok']}, over the deadline {c.get('slow', 0)}, "
        f"timeouts {c['timeout']}, illegal {c['illegal']}, malformed {c['malformed']}, "
        f"errors {c['error']}",
    ]
    lat = report["latency_ms"]
    if lat:
        how = (" (from the gateway's event stream: the bot's time plus the delivery)"
               if report.get("latency_source") == "events" else "")
        lines.append(f"  latency ms: p50 {lat['p50']}, p90 {lat['p90']}, p99 {lat['p99']}, "
                     f"max {lat['max']}{how}; deadline {report['decision_ms']} ms")
    if report["lowest_bank_ms"] is not None:
        lines.append(f"  time bank: lowest {report['lowest_bank_ms']} ms of {report['bank_ms']}")
    if report.get("protocol_errors"):
        lines.append(f"  protocol errors {report['protocol_errors']} (lines refused outside "
                     "any decision, a bad hello, a session cut off)")
    for p in report["problems"]:
        lines.append(f"  match {p['match']} deal {p['deal']} ({p['phase']}): {p['kind']}: "
                     f"{p['detail']}")
    if report.get("traceback"):
        lines.append("  the first error the bot raised, in full:")
        lines.extend(f"    {line}" for line in report["traceback"].splitlines())
    if report["stopped_early"]:
        lines.append(f"  stopped after {len(report['problems'])} problems")
    for warning in report.get("warnings", ()):
        lines.append(f"  warning: {warning}")
    if not report["decisions"]:
        lines.append("FAIL: the bot was never asked to decide")
    else:
        lines.append("PASS" if report["passed"] else f"FAIL: {len(report['problems'])} problem(s)")
    return lines


async def _bot_check_gateway(args: argparse.Namespace, rules: JSON, opponents: list[str],
                             players: int, tc: TimeControl) -> JSON:
    """A remote bot: matches on the gateway; problems read from the referee's fallbacks."""
    probe = Probe(max_problems=args.max_problems)
    statuses: list[str] = []
    if tc.strike_limit <= 0:  # the gateway wants a limit: one the check never reaches
        tc = TimeControl(tc.decision_ms, tc.bank_ms, 1_000_000)
    for seat in range(players):
        others = iter(opponents * players)
        bots = tuple(args.bot if s == seat else next(others) for s in range(players))
        spec = MatchSpec(match_id="", rules=rules, seed=f"{args.seed}/{seat}", bots=bots,
                         time_control=tc, max_deals=args.deals)
        deal = {"n": 0}
        last = {"at": time.perf_counter()}

        def watch(event: JSON, seat: int = seat, deal: dict[str, int] = deal,
                  last: dict[str, float] = last) -> None:
            # The gateway asks the seat as soon as the previous event is out, and the
            # seat's action is the next event: the gap between the two is the bot's time
            # plus the delivery of a request and an event.
            now = time.perf_counter()
            gap_ms = (now - last["at"]) * 1000.0
            last["at"] = now
            if event.get("type") == "deal_start":
                deal["n"] = int(event.get("deal", 0))
            if event.get("type") == "action" and event.get("seat") == seat and not event.get(
                "auto"
            ):
                _note_event(probe, str(event.get("action", "")))
                kind = event.get("fallback")
                if kind:
                    probe.counts[kind] = probe.counts.get(kind, 0) + 1
                    probe.problems.append(Problem(seat, deal["n"], "-", str(kind),
                                                  f"the referee played {event['action']!r}"))
                    return
                probe.latencies_ms.append(gap_ms)
                if gap_ms > tc.decision_ms:
                    probe.counts["slow"] += 1
                    probe.problems.append(Problem(
                        seat, deal["n"], "-", "slow",
                        f"{event['action']!r} came {gap_ms:.0f} ms after the previous event, "
                        f"over the {tc.decision_ms} ms deadline"))
                else:
                    probe.counts["ok"] += 1

        args.match_id = None
        # Fixed seeds, so a problem can be played again: a check is no contest to win.
        end = await _gateway_match(args, spec, watch, public_seed=True)
        statuses.append(str(end.get("status")) if end else "unknown")
        if len(probe.problems) >= args.max_problems:
            break
    return _report(args, rules, probe, statuses)
