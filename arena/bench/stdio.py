"""``arena bench stdio``: what the text protocol adds to a decision on a gateway.

The same bot logic, the Python SDK's ``thousand_bot.examples:Greedy``, is played two ways
on one gateway (a real ``arena serve`` on loopback, in this process): over gRPC by the
SDK (``thousand-bot run``), and as a program speaking the text protocol on its stdin and
stdout (``python -m thousand_bot.stdio.play``) behind the bridge (``thousand-bot run
--stdio``). Each plays the same seeded matches, one at a time, against two built-in bots
that the gateway plays itself, in alternating rounds so that both see the same machine.

The figure is the time the gateway charges each decision: from the request written to
the bot's stream to its answer read, which for the program includes the bridge, the pipes
both ways and the text, each side written and read by the SDK's own codec. The difference
between the two medians is what the text protocol adds; the goal is within 20 % of the
SDK's (the means are printed too: on a shared host they follow the few decisions that
waited for a CPU).
``--program NAME=COMMAND`` measures any other program the same way (a starter bot).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena import exitcodes
from arena.bench import bench_parser
from arena.compiled import status as compiled_status
from arena.referee.clock import BotClock
from arena.rigs.processes import BotProcess, Service, ServiceError, stop_all, wait_until
from arena.rigs.testing import GatewayThread
from arena.server.hub import BotHub, Outcome

#: The bot logic both ways.
LOGIC = "thousand_bot.examples:Greedy"
#: Within this much of the SDK's time a decision is the goal.
GOAL = 1.20


class _Samples:
    """The charged time (microseconds) of every answered decision, by bot, while open."""

    def __init__(self) -> None:
        self.open = False
        self.by_bot: dict[str, list[float]] = {}
        #: What the bot's client says it spent between reading the request and sending
        #: the answer (for a program: the bridge, the pipes and the program).
        self.think: dict[str, list[float]] = {}

    def __call__(self, bot: str, request_id: str, outcome: Outcome, clock: BotClock,
                 think_us: int) -> None:
        if self.open:
            self.by_bot.setdefault(bot, []).append(clock.bot_s() * 1e6)
            self.think.setdefault(bot, []).append(float(think_us))


async def _observe(hub: BotHub, samples: _Samples) -> None:
    hub.on_answer = samples


def _figures(values: Sequence[float]) -> dict[str, Any]:
    ordered = sorted(values)

    def q(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))], 1)

    return {
        "decisions": len(values),
        "mean_us": round(statistics.fmean(values), 1) if values else float("nan"),
        "p50_us": q(0.5) if values else float("nan"),
        "p90_us": q(0.9) if values else float("nan"),
        "p99_us": q(0.99) if values else float("nan"),
    }


def bench_stdio(
    *,
    matches: int = 4,
    deals: int = 4,
    rounds: int = 3,
    programs: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """Play the bots and return the figures (see the module's docstring)."""
    python = sys.executable
    runs: dict[str, tuple[str, list[str] | None]] = {
        "sdk": ("the Python SDK over gRPC", None),
        "stdio": ("the same bot as a program, through the bridge",
                  [python, "-m", "thousand_bot.stdio.play", LOGIC]),
    }
    for name, command in (programs or {}).items():
        runs[name] = (f"program {' '.join(command)}", command)
    samples = _Samples()
    services: list[Service] = []
    with tempfile.TemporaryDirectory(prefix="arena-bench-stdio-") as tmp:
        work = Path(tmp)
        gw = GatewayThread(str(work / "gateway.sqlite3"))
        try:
            gw.call(_observe(gw.gateway.hub, samples))
            for name, (_, argv) in runs.items():
                token = gw.register(f"bench-{name}")
                log = work / f"{name}.log"
                if argv is None:
                    services.append(BotProcess.start(name=name, bot_ref=LOGIC,
                                                     server=gw.address, token=token,
                                                     log_path=log))
                else:
                    command = [python, "-m", "thousand_bot.cli", "run", "--stdio", "--gateway",
                               gw.address, "--log-level", "WARNING", "--", *argv]
                    env = dict(os.environ, THOUSAND_BOT_TOKEN=token)
                    services.append(Service(name, Service.spawn(command, log, env), log))
            names = [f"bench-{n}" for n in runs]

            def connected() -> bool:
                for service in services:
                    if not service.alive():
                        raise service.fail("exited before connecting")
                return all(gw.gateway.hub.instances(n) for n in names)

            wait_until(connected, timeout=60, what="the bots", interval=0.05)

            def play(name: str, seed: str) -> None:
                manager = gw.gateway.matches
                match_id = gw.call(manager.start(
                    preset="classic", options={}, seed=seed,
                    bots=[f"bench-{name}", "greedy", "greedy"], max_deals=deals,
                    time_control=(10_000, 10_000, 3), public_seed=True,
                ))
                result = gw.call(manager.wait(match_id), timeout=300)
                if result is None or result.status != "completed":
                    raise RuntimeError(f"bench match of {name} did not complete: {result}")

            for name in runs:  # warm-up: imports, connections, caches
                play(name, "bench-stdio/warm")
            began = time.perf_counter()
            for r in range(rounds):
                for name in runs:
                    samples.open = True
                    for m in range(matches):
                        play(name, f"bench-stdio/{r}/{m}")
                    samples.open = False
            elapsed = time.perf_counter() - began
        finally:
            stop_all(services)
            gw.close(1.0)
    kinds = {
        name: {"what": what, **_figures(samples.by_bot.get(f"bench-{name}", [])),
               "client_us_p50": _figures(samples.think.get(f"bench-{name}", []))["p50_us"]}
        for name, (what, _) in runs.items()
    }
    sdk, stdio = kinds["sdk"], kinds["stdio"]
    # The median decision: on a shared host a few decisions wait for a CPU many times
    # longer than the rest, and the mean follows them.
    ratio = stdio["p50_us"] / sdk["p50_us"] if sdk["p50_us"] else float("nan")
    return {
        "build": compiled_status().reason,
        "logic": LOGIC,
        "matches": matches,
        "deals": deals,
        "rounds": rounds,
        "seconds": round(elapsed, 1),
        "bots": kinds,
        "added_us": round(stdio["p50_us"] - sdk["p50_us"], 1),
        "added_mean_us": round(stdio["mean_us"] - sdk["mean_us"], 1),
        "ratio": round(ratio, 3),
        "ratio_mean": round(stdio["mean_us"] / sdk["mean_us"], 3) if sdk["mean_us"] else None,
        "goal_ratio": GOAL,
        "within_goal": ratio <= GOAL,
        "cpus": os.cpu_count(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = bench_parser(
        "stdio",
        "The time a gateway charges each decision of the same bot logic played over gRPC by "
        "the Python SDK and as a program on the text protocol behind thousand-bot run "
        "--stdio: what the text protocol adds (goal: within 20%%).",
    )
    parser.add_argument("--matches", type=int, default=4,
                        help="matches per bot in each round, one at a time (default 4)")
    parser.add_argument("--deals", type=int, default=4, help="deals per match (default 4)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds, the bots taking turns in each (default 3)")
    parser.add_argument("--program", action="append", default=[], metavar="NAME=COMMAND",
                        help="also measure this program (e.g. a starter bot), repeatable")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.matches < 1 or args.deals < 1 or args.rounds < 1:
        parser.error("--matches, --deals and --rounds must be at least 1")
    programs: dict[str, list[str]] = {}
    import shlex

    for item in args.program:
        name, sep, command = item.partition("=")
        if not sep or not name or not command.strip() or name in ("sdk", "stdio"):
            parser.error(f"--program {item!r}: expected NAME=COMMAND (a name other than "
                         "sdk and stdio)")
        programs[name] = shlex.split(command)
        if shutil.which(programs[name][0]) is None:  # non-empty: the command has a word
            parser.error(f"--program {item!r}: {programs[name][0]!r} is not a program "
                         "that can be started (built? on the PATH, or a path to it?)")
    # The gateway warns of every public seed with a remote bot seated: these are ours.
    logging.getLogger("arena").setLevel(logging.ERROR)
    try:
        result = bench_stdio(matches=args.matches, deals=args.deals, rounds=args.rounds,
                             programs=programs)
    except ServiceError as exc:
        print(f"arena bench stdio: {exc}", file=sys.stderr)
        return exitcodes.FAILED
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"stdio benchmark ({result['build']}): {LOGIC} against two built-in greedy bots, "
          f"classic, {args.rounds} rounds of {args.matches} matches of {args.deals} deals "
          "per bot, one match at a time")
    print("  time charged per decision (request written to the bot's stream -> answer read):")
    for figures in result["bots"].values():
        print(f"  {figures['what']:<48} mean {figures['mean_us']:>7,.0f} us, "
              f"p50 {figures['p50_us']:>7,.0f} us, p90 {figures['p90_us']:>7,.0f} us "
              f"({figures['decisions']:,} decisions; in the client from request read to "
              f"answer sent: p50 {figures['client_us_p50']:,.0f} us)")
    verdict = "within" if result["within_goal"] else "over"
    print(f"  added by the text protocol: {result['added_us']:+,.0f} us at the median decision "
          f"({result['ratio']:.2f}x the SDK's; the means {result['ratio_mean']:.2f}x), "
          f"{verdict} the goal of {GOAL:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
