"""How many decisions one gateway process carries, and what it adds to each one.

The set-up is the production path minus the network: a gateway on a loopback port, three
bots in three separate Python processes using the bot SDK (``thousand_bot``), and games of
the classic preset played by the rules engine inside the gateway process. Every decision
travels gateway -> bot -> gateway over gRPC.

Two figures come out:

* throughput: decisions per second with many games in flight at once (``concurrency``);
* added latency: with one game in flight, the time from sending a request to receiving its
  answer, minus the time the bot says it spent thinking (``think_time_us``). This is what
  the transport costs a decision: serialisation, loopback, both gRPC stacks and the
  gateway's routing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.referee.types import DecisionRequest
from arena.server.hub import BotHub, Outcome
from arena.server.testing import GatewayThread

_SDK_DIR = Path(__file__).resolve().parents[2] / "sdk" / "python"


def _bot_env(token: str) -> dict[str, str]:
    env = dict(os.environ, THOUSAND_BOT_TOKEN=token)
    if _SDK_DIR.is_dir():  # a checkout: use the SDK beside the arena even if not installed
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(_SDK_DIR), env.get("PYTHONPATH", "")) if p
        )
    return env


def _cpu_seconds(pids: Sequence[int]) -> float | None:
    """User+system CPU time of processes, from /proc (None where there is no /proc)."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


class _Recorder:
    def __init__(self) -> None:
        self.think_us: dict[str, int] = {}

    def __call__(self, bot: str, request_id: str, outcome: Outcome, rtt: float, think: int) -> None:
        self.think_us[request_id] = think


async def _play(
    hub: BotHub,
    bots: Sequence[str],
    seconds: float,
    concurrency: int,
    recorder: _Recorder,
    tag: str,
) -> dict[str, Any]:
    from arena.engine import Game, Rules

    rules = Rules.preset("classic")
    deadline = time.perf_counter() + seconds
    added_ms: list[float] = []
    decisions = 0
    games = 0
    illegal = 0

    async def worker(index: int) -> None:
        nonlocal decisions, games, illegal
        number = 0
        while time.perf_counter() < deadline:
            game = Game(rules, seed=f"bench/{tag}/{index}/{number}")
            number += 1
            step = 0
            while not game.is_over and time.perf_counter() < deadline:
                if game.is_chance:
                    game.deal()
                    continue
                seat = game.to_act
                assert seat is not None
                legal = [str(a) for a in game.legal_actions()]
                rid = f"{tag}-{index}-{number}-{step}"
                step += 1
                request = DecisionRequest(
                    match_id=f"bench-{tag}-{index}-{number}",
                    request_id=rid,
                    seat=seat,
                    observation=game.observation(seat),
                    legal=tuple(legal),
                    deadline_ms=1000,
                    time_bank_ms=10000,
                )
                sent = time.perf_counter()
                answer = await hub.decide(bots[seat % len(bots)], request)
                rtt = time.perf_counter() - sent
                think = recorder.think_us.pop(rid, 0)
                added_ms.append(rtt * 1000 - think / 1000)
                decisions += 1
                if answer not in legal:
                    illegal += 1
                    answer = legal[0]
                game.apply(answer)
            games += 1
            hub.release_match(f"bench-{tag}-{index}-{number - 1}")

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    elapsed = time.perf_counter() - started
    return {
        "decisions": decisions,
        "seconds": round(elapsed, 3),
        "decisions_per_s": round(decisions / elapsed, 1) if elapsed > 0 else 0.0,
        "games_started": games,
        "illegal": illegal,
        "added_ms_p50": round(_percentile(added_ms, 0.50), 3),
        "added_ms_p99": round(_percentile(added_ms, 0.99), 3),
        "added_ms_mean": round(statistics.fmean(added_ms), 3) if added_ms else float("nan"),
    }


def bench_gateway(
    seconds: float = 10.0,
    *,
    concurrency: int = 16,
    bot_class: str = "thousand_bot.examples:FirstLegal",
) -> dict[str, Any]:
    """Measure the gateway; ``seconds`` is split between the throughput and latency runs.

    Returns the figures as a JSON-safe dict: ``decisions_per_s`` (throughput run),
    ``added_ms_p50`` / ``added_ms_p99`` (latency run) and the details of both runs.
    """
    if seconds <= 0:
        raise ValueError("seconds must be positive")
    bots = ("bench-0", "bench-1", "bench-2")
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        gw = GatewayThread(str(Path(tmp) / "gateway.sqlite3"), organiser_token="bench")
        procs: list[subprocess.Popen[bytes]] = []
        try:
            command = [sys.executable, "-m", "thousand_bot.cli", "run", bot_class]
            command += ["--server", gw.address, "--log-level", "WARNING"]
            for name in bots:
                token = gw.register(name)
                procs.append(
                    subprocess.Popen(command, env=_bot_env(token), stdout=subprocess.DEVNULL)
                )
            hub = gw.gateway.hub
            limit = time.monotonic() + 60
            while not all(hub.instances(b) for b in bots):
                if time.monotonic() > limit or any(p.poll() is not None for p in procs):
                    raise RuntimeError("the bench bots did not connect to the gateway")
                time.sleep(0.05)
            recorder = _Recorder()
            gw.call(_set_observer(hub, recorder))
            # A short warm-up so imports and first connections do not count.
            gw.call(_play(hub, bots, min(1.0, seconds / 10), 4, recorder, "warm"))
            pids = [os.getpid(), *(p.pid for p in procs)]
            cpu_before = _cpu_seconds(pids)
            throughput = gw.call(
                _play(hub, bots, seconds * 0.6, concurrency, recorder, "load"),
                timeout=seconds + 120,
            )
            cpu_after = _cpu_seconds(pids)
            if cpu_before is not None and cpu_after is not None and throughput["decisions"]:
                per = (cpu_after - cpu_before) / throughput["decisions"] * 1e6
                throughput["cpu_us_per_decision"] = round(per, 1)
            latency = gw.call(
                _play(hub, bots, seconds * 0.4, 1, recorder, "lat"), timeout=seconds + 120
            )
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
            gw.close(1.0)
    return {
        "decisions_per_s": throughput["decisions_per_s"],
        "added_ms_p50": latency["added_ms_p50"],
        "added_ms_p99": latency["added_ms_p99"],
        "throughput_run": dict(throughput, concurrency=concurrency),
        "latency_run": dict(latency, concurrency=1),
        "bots": len(bots),
        "cpus": os.cpu_count(),
        "target": {"decisions_per_s": 2000, "added_ms_p99": 5.0},
    }


async def _set_observer(hub: BotHub, recorder: _Recorder) -> None:
    hub.on_answer = recorder


def main(argv: Sequence[str] | None = None) -> int:
    """``arena bench gateway [--seconds S] [--concurrency N] [--json]``."""
    parser = argparse.ArgumentParser(
        prog="arena bench gateway",
        description="Decisions per second through one gateway with three remote Python "
        "bots on loopback, and the latency the gateway adds per decision.",
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the run")
    parser.add_argument(
        "--concurrency", type=int, default=16, help="games in flight in the throughput run"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.concurrency < 1:
        parser.error("--seconds must be positive and --concurrency at least 1")
    result = bench_gateway(args.seconds, concurrency=args.concurrency)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        t, lat = result["throughput_run"], result["latency_run"]
        print(
            f"gateway: {result['decisions_per_s']:.0f} decisions/s "
            f"({t['concurrency']} games in flight, {result['bots']} bot processes, "
            f"{t.get('cpu_us_per_decision', float('nan')):.0f} us CPU per decision in all)"
        )
        print(
            f"added latency per decision: p50 {result['added_ms_p50']:.2f} ms, "
            f"p99 {result['added_ms_p99']:.2f} ms ({lat['decisions']} decisions, one in flight)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
