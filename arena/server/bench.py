"""How many decisions one gateway process carries, and what it adds to each one.

The set-up is the production path minus the network: a gateway on a loopback port, three
bots in three separate Python processes using the bot SDK (``thousand_bot``), and matches of
the classic preset started on the gateway and played by the referee in the gateway process,
exactly as ``StartMatch`` plays them. Every decision travels gateway -> bot -> gateway over
gRPC. The bots do not follow the match events (the SDK asks for none when a bot has no
``on_event``), as most bots do not need them.

Two figures come out:

* throughput: decisions per second with many matches in flight at once (``concurrency``);
* added latency: with one match in flight, the time from sending a request to receiving its
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

from arena.server.hub import BotHub, Outcome
from arena.server.matches import MatchManager
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
    """Collects, through the hub's answer hook, every answer inside the measured window."""

    def __init__(self) -> None:
        self.added_ms: list[float] = []
        self.illegal = 0
        self.open = False

    def __call__(self, bot: str, request_id: str, outcome: Outcome, rtt: float, think: int) -> None:
        if self.open:
            self.added_ms.append(rtt * 1000 - think / 1000)
            if outcome is not Outcome.OK:
                self.illegal += 1


async def _play(
    manager: MatchManager,
    bots: Sequence[str],
    seconds: float,
    concurrency: int,
    recorder: _Recorder,
    tag: str,
) -> dict[str, Any]:
    """Keep ``concurrency`` matches running for ``seconds``, then stop them."""
    deadline = time.perf_counter() + seconds
    matches = 0

    async def slot(index: int) -> None:
        nonlocal matches
        number = 0
        while time.perf_counter() < deadline:
            match_id = await manager.start(
                preset="classic",
                options={},
                seed=f"bench/{tag}/{index}/{number}",
                bots=list(bots),
                max_deals=10_000,
                public_seed=True,  # the bench's own bots: the same deals on every run
            )
            number += 1
            matches += 1
            waiting = asyncio.ensure_future(manager.wait(match_id))
            left = deadline - time.perf_counter()
            done, _ = await asyncio.wait({waiting}, timeout=max(0.0, left))
            if not done:
                manager.stop(match_id)
                await waiting

    recorder.added_ms = []
    recorder.illegal = 0
    recorder.open = True
    started = time.perf_counter()
    try:
        await asyncio.gather(*(slot(i) for i in range(concurrency)))
    finally:
        recorder.open = False
    elapsed = time.perf_counter() - started
    added = recorder.added_ms
    return {
        "decisions": len(added),
        "seconds": round(elapsed, 3),
        "decisions_per_s": round(len(added) / elapsed, 1) if elapsed > 0 else 0.0,
        "matches_started": matches,
        "illegal": recorder.illegal,
        "added_ms_p50": round(_percentile(added, 0.50), 3),
        "added_ms_p99": round(_percentile(added, 0.99), 3),
        "added_ms_mean": round(statistics.fmean(added), 3) if added else float("nan"),
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
            command += ["--server", gw.address, "--log-level", "ERROR"]
            for name in bots:
                token = gw.register(name)
                procs.append(
                    subprocess.Popen(command, env=_bot_env(token), stdout=subprocess.DEVNULL)
                )
            hub = gw.gateway.hub
            manager = gw.gateway.matches
            limit = time.monotonic() + 60
            while not all(hub.instances(b) for b in bots):
                if time.monotonic() > limit or any(p.poll() is not None for p in procs):
                    raise RuntimeError("the bench bots did not connect to the gateway")
                time.sleep(0.05)
            recorder = _Recorder()
            gw.call(_set_observer(hub, recorder))
            # A short warm-up so imports and first connections do not count.
            gw.call(_play(manager, bots, min(1.0, seconds / 10), 4, recorder, "warm"))
            pids = [os.getpid(), *(p.pid for p in procs)]
            cpu_before = _cpu_seconds(pids)
            throughput = gw.call(
                _play(manager, bots, seconds * 0.6, concurrency, recorder, "load"),
                timeout=seconds + 120,
            )
            cpu_after = _cpu_seconds(pids)
            if cpu_before is not None and cpu_after is not None and throughput["decisions"]:
                per = (cpu_after - cpu_before) / throughput["decisions"] * 1e6
                throughput["cpu_us_per_decision"] = round(per, 1)
            latency = gw.call(
                _play(manager, bots, seconds * 0.4, 1, recorder, "lat"), timeout=seconds + 120
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
            f"({t['concurrency']} matches in flight, {result['bots']} bot processes, "
            f"{t.get('cpu_us_per_decision', float('nan')):.0f} us CPU per decision in all)"
        )
        print(
            f"added latency per decision: p50 {result['added_ms_p50']:.2f} ms, "
            f"p99 {result['added_ms_p99']:.2f} ms ({lat['decisions']} decisions, one match)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
