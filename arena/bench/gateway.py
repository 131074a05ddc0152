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
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.compiled import status as compiled_status
from arena.referee.clock import BotClock
from arena.referee.heap import settle_heap
from arena.rigs.testing import GatewayThread
from arena.server.hub import BotHub, Outcome
from arena.server.matches import MatchManager

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


def _spent(total: float | None, before: float | None, after: float | None) -> float | None:
    """A running total of CPU seconds, None once any reading was missing (no /proc)."""
    if total is None or before is None or after is None:
        return None
    return total + after - before


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


class _Recorder:
    """Collects, through the hub's answer hook, the answers inside the measured window:
    every one of them, or one in ``every`` (the load run, where this hook's own cost
    would otherwise be charged to the gateway on every decision; a quarter of some
    hundred thousand answers gives the same percentiles)."""

    def __init__(self) -> None:
        self.added_ms: list[float] = []
        self.platform_ms: list[float] = []
        self.raw: list[tuple[float, float]] = []
        self.illegal = 0
        self.open = False
        self.every = 1
        self._count = 0

    def __call__(
        self, bot: str, request_id: str, outcome: Outcome, clock: BotClock, think: int
    ) -> None:
        if not self.open:
            return
        if outcome is not Outcome.OK:
            self.illegal += 1
        self._count += 1
        if self._count % self.every:
            return
        # Worked out now, while the clock's stall bookkeeping is short to search; kept as
        # two numbers (this hook runs in the gateway's loop).
        platform = clock.platform_s()
        self.raw.append((clock.bot_s() - think / 1e6 + platform, platform))

    def settle(self) -> None:
        """What the transport added to each decision: the bot's clock (request written to
        answer read) minus the bot's own thinking, plus what the platform held it."""
        self.added_ms.extend(a * 1000 for a, _ in self.raw)
        self.platform_ms.extend(p * 1000 for _, p in self.raw)
        self.raw = []


@dataclass
class _Load:
    """What one run asks of the gateway."""

    matches: int
    seconds: float
    decision_ms: int
    bank_ms: int
    strike_limit: int
    tag: str


async def _play(
    manager: MatchManager, bots: Sequence[str], load: _Load, recorder: _Recorder
) -> dict[str, Any]:
    """Keep ``load.matches`` matches running for ``load.seconds``, then stop them."""
    deadline = time.perf_counter() + load.seconds
    started_matches = 0
    decisions = timeouts = strikes = 0

    async def slot(index: int) -> None:
        nonlocal started_matches, decisions, timeouts, strikes
        number = 0
        while time.perf_counter() < deadline:
            match_id = await manager.start(
                preset="classic",
                options={},
                seed=f"bench/{load.tag}/{index}/{number}",
                bots=list(bots),
                max_deals=10_000,
                time_control=(load.decision_ms, load.bank_ms, load.strike_limit),
                public_seed=True,  # the bench's own bots: the same deals on every run
            )
            number += 1
            started_matches += 1
            waiting = asyncio.ensure_future(manager.wait(match_id))
            left = deadline - time.perf_counter()
            done, _ = await asyncio.wait({waiting}, timeout=max(0.0, left))
            if not done:
                manager.stop(match_id)
            result = await waiting
            if result is not None:
                for stats in result.seat_stats:
                    decisions += stats.decisions
                    timeouts += stats.timeouts
                    strikes += stats.strikes

    recorder.added_ms = []
    recorder.platform_ms = []
    recorder.raw = []
    recorder.illegal = 0
    recorder.every = 1 if load.matches == 1 else 4
    recorder.open = True
    admission = manager.admission
    most_waiting = 0
    lowest_limit = highest_limit = admission.limit

    async def watch_admission() -> None:
        nonlocal most_waiting, lowest_limit, highest_limit
        while True:
            await asyncio.sleep(0.05)
            most_waiting = max(most_waiting, admission.waiting)
            lowest_limit = min(lowest_limit, admission.limit)
            highest_limit = max(highest_limit, admission.limit)

    watcher = asyncio.ensure_future(watch_admission())
    began = time.perf_counter()
    try:
        await asyncio.gather(*(slot(i) for i in range(load.matches)))
    finally:
        recorder.open = False
        watcher.cancel()
    elapsed = time.perf_counter() - began
    recorder.settle()
    added = recorder.added_ms
    platform = recorder.platform_ms
    return {
        "matches_in_flight": load.matches,
        "decision_ms": load.decision_ms,
        "bank_ms": load.bank_ms,
        "decisions": decisions,
        "timeouts": timeouts,
        "strikes": strikes,
        "seconds": round(elapsed, 3),
        "decisions_per_s": round(decisions / elapsed, 1) if elapsed > 0 else 0.0,
        "matches_started": started_matches,
        "illegal": recorder.illegal,
        **_latency_figures(added, platform),
        "admission_limit_range": [lowest_limit, highest_limit],
        "most_matches_waiting": most_waiting,
    }


def _latency_figures(added: Sequence[float], platform: Sequence[float]) -> dict[str, float]:
    return {
        "added_ms_p50": round(_percentile(added, 0.50), 3),
        "added_ms_p99": round(_percentile(added, 0.99), 3),
        "added_ms_mean": round(statistics.fmean(added), 3) if added else float("nan"),
        "platform_ms_p50": round(_percentile(platform, 0.50), 3),
        "platform_ms_p99": round(_percentile(platform, 0.99), 3),
    }


def _rss_mib(pid: int | str = "self") -> tuple[float, float]:
    """Resident and peak resident memory of a process, in MiB (nan without /proc)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return float("nan"), float("nan")
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values.get("VmRSS", float("nan")), values.get("VmHWM", float("nan"))


def _stop_all(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


class _PingPong:
    """The yardstick: a bare grpc.aio ping-pong of the same messages, same concurrency,
    kept running (paused between its turns) so that it can alternate with the gateway.

    Its server runs in a process of its own, as the gateway does in production: served
    from this process, beside the gateway's event loop, grpc.aio would hand its events
    over from one loop to the other and charge the yardstick for it."""

    def __init__(self, in_flight: int, clients: int = 3) -> None:
        from arena.bench.pingpong import PingPongProcess

        self.per_stream = max(1, round(in_flight / clients))
        self.clients = clients
        self.server = PingPongProcess(self.per_stream)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.answered = 0
        self.seconds = 0.0
        self.cpu: float | None = 0.0
        self.server_cpu: float | None = 0.0
        try:
            command = [sys.executable, "-m", "arena.bench.pingpong", "client", self.server.address]
            self.procs = [
                subprocess.Popen(command, stdout=subprocess.DEVNULL) for _ in range(clients)
            ]
            limit = time.monotonic() + 60
            while self.server.streams < clients:
                if time.monotonic() > limit or any(p.poll() is not None for p in self.procs):
                    raise RuntimeError("the ping-pong clients did not connect")
                time.sleep(0.05)
            time.sleep(0.5)  # warm up
            self.server.pause(True)
        except BaseException:
            self.close()
            raise

    def run(self, seconds: float) -> None:
        """One turn: let it go for ``seconds`` and count what it did, then pause it."""
        server = self.server
        pids = [server.pid, *(p.pid for p in self.procs)]
        server.pause(False)
        time.sleep(0.05)  # back in its stride
        cpu_before = _cpu_seconds(pids)
        own_before = _cpu_seconds(pids[:1])
        before = server.answered
        began = time.perf_counter()
        time.sleep(seconds)
        answered = server.answered - before
        elapsed = time.perf_counter() - began
        cpu_after = _cpu_seconds(pids)
        own_after = _cpu_seconds(pids[:1])
        server.pause(True)
        self.answered += answered
        self.seconds += elapsed
        self.cpu = _spent(self.cpu, cpu_before, cpu_after)
        self.server_cpu = _spent(self.server_cpu, own_before, own_after)

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "decisions": self.answered,
            "seconds": round(self.seconds, 3),
            "decisions_per_s": round(self.answered / self.seconds, 1) if self.seconds else 0.0,
            "in_flight": self.per_stream * self.clients,
            "clients": self.clients,
        }
        if self.cpu is not None and self.answered:
            out["cpu_us_per_decision"] = round(self.cpu / self.answered * 1e6, 1)
        if self.server_cpu is not None and self.answered:
            # The server's share, to set beside the gateway's own (the rest is the clients).
            out["server_cpu_us_per_decision"] = round(self.server_cpu / self.answered * 1e6, 1)
        return out

    def close(self) -> None:
        _stop_all(self.procs)
        self.server.close()


def _merge_loads(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One figure set for the load run out of its rounds."""
    if len(runs) == 1:
        return dict(runs[0])
    out = dict(runs[-1])
    for key in ("decisions", "timeouts", "strikes", "matches_started", "illegal"):
        out[key] = sum(r[key] for r in runs)
    out["seconds"] = round(sum(r["seconds"] for r in runs), 3)
    out["decisions_per_s"] = round(out["decisions"] / out["seconds"], 1) if out["seconds"] else 0.0
    out["most_matches_waiting"] = max(r["most_matches_waiting"] for r in runs)
    out["admission_limit_range"] = [
        min(r["admission_limit_range"][0] for r in runs),
        max(r["admission_limit_range"][1] for r in runs),
    ]
    return out


def bench_gateway(
    seconds: float = 10.0,
    *,
    matches: int = 16,
    decision_ms: int = 1000,
    bank_ms: int = 10000,
    strike_limit: int = 1_000_000,
    bots: int = 3,
    bot_class: str = "thousand_bot.examples:FirstLegal",
    baseline: bool = True,
    rounds: int = 3,
    depth: int = 0,
) -> dict[str, Any]:
    """Measure the gateway; ``seconds`` is split between the load and latency runs (and
    the same again for the ping-pong yardstick when ``baseline``).

    ``depth`` (0: off) fixes how many matches the gateway plays at once, admission control
    held at that limit instead of following the load, and runs the yardstick with as many
    requests in flight. Messages per wake-up, and so the CPU a decision costs on both
    sides, depend on that depth, and admission control settles at a different one from
    run to run on a host whose speed drifts: at a fixed depth two versions of the code
    compare on steadier figures. The acceptance figures are those without it.

    The load run and the yardstick alternate in ``rounds`` turns each, so that a machine
    whose speed drifts (a shared host) weighs on both alike, instead of one of them running
    in a fast minute and the other in a slow one.

    Returns the figures as a JSON-safe dict: the load run (``matches`` in flight with the
    given clock, its timeouts: every one is the platform's, since the bots answer at once),
    the latency run (one match), the gateway's memory, and the yardstick's figures.
    """
    if seconds <= 0:
        raise ValueError("seconds must be positive")
    if matches < 1 or bots < 1 or rounds < 1:
        raise ValueError("matches, bots and rounds must be at least 1")
    if depth < 0 or depth > matches:
        raise ValueError("depth must be between 0 (off) and the matches in flight")
    names = tuple(f"bench-{i}" for i in range(max(3, bots)))
    # The bench's own bots play public seeds (the same deals on every run): the gateway's
    # warning about that, once per match, would drown the figures.
    logging.getLogger("arena.server.matches").setLevel(logging.ERROR)
    seats = names[:3]
    yard: _PingPong | None = None
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        gw = GatewayThread(str(Path(tmp) / "gateway.sqlite3"), organiser_token="bench")
        procs: list[subprocess.Popen[bytes]] = []
        try:
            command = [sys.executable, "-m", "thousand_bot.cli", "run", bot_class]
            command += ["--server", gw.address, "--log-level", "ERROR"]
            for name in names:
                token = gw.register(name)
                procs.append(
                    subprocess.Popen(command, env=_bot_env(token), stdout=subprocess.DEVNULL)
                )
            hub = gw.gateway.hub
            manager = gw.gateway.matches
            if depth:
                manager.admission.adaptive = False
                manager.admission.limit = depth
            limit = time.monotonic() + 60
            while not all(hub.instances(b) for b in names):
                if time.monotonic() > limit or any(p.poll() is not None for p in procs):
                    raise RuntimeError("the bench bots did not connect to the gateway")
                time.sleep(0.05)
            settle_heap()  # as arena serve does once it is up
            if baseline:
                yard = _PingPong(depth or matches, clients=len(names))
            recorder = _Recorder()
            gw.call(_set_observer(hub, recorder))
            # A short warm-up so imports and first connections do not count.
            warm = _Load(4, min(1.0, seconds / 10), 1000, 10000, strike_limit, "warm")
            gw.call(_play(manager, seats, warm, recorder))
            pids = [os.getpid(), *(p.pid for p in procs)]
            runs: list[dict[str, Any]] = []
            cpu: float | None = 0.0
            own: float | None = 0.0
            added: list[float] = []
            platform: list[float] = []
            share = seconds * 0.6 / rounds
            for turn in range(rounds):
                cpu_before = _cpu_seconds(pids)
                own_before = _cpu_seconds([os.getpid()])
                load = _Load(matches, share, decision_ms, bank_ms, strike_limit, f"load{turn}")
                runs.append(gw.call(_play(manager, seats, load, recorder), timeout=seconds + 120))
                cpu_after = _cpu_seconds(pids)
                own_after = _cpu_seconds([os.getpid()])
                added += recorder.added_ms
                platform += recorder.platform_ms
                cpu = _spent(cpu, cpu_before, cpu_after)
                own = _spent(own, own_before, own_after)
                if yard is not None:
                    yard.run(share)
            throughput = _merge_loads(runs)
            if rounds > 1:
                throughput.update(_latency_figures(added, platform))
            if cpu is not None and throughput["decisions"]:
                throughput["cpu_us_per_decision"] = round(cpu / throughput["decisions"] * 1e6, 1)
            if own is not None and throughput["decisions"]:
                per = own / throughput["decisions"] * 1e6
                throughput["gateway_cpu_us_per_decision"] = round(per, 1)
            rss, peak = _rss_mib()
            one = _Load(1, seconds * 0.4, decision_ms, bank_ms, strike_limit, "lat")
            latency = gw.call(_play(manager, seats, one, recorder), timeout=seconds + 120)
        finally:
            if yard is not None:
                yard.close()
            _stop_all(procs)
            gw.close(1.0)
    result: dict[str, Any] = {
        "decisions_per_s": throughput["decisions_per_s"],
        "platform_timeouts": throughput["timeouts"],
        "added_ms_p50": latency["added_ms_p50"],
        "added_ms_p99": latency["added_ms_p99"],
        "gateway_rss_mib": round(rss, 1),
        "gateway_peak_rss_mib": round(peak, 1),
        "load_run": throughput,
        "latency_run": latency,
        "bot_processes": len(names),
        "cpus": os.cpu_count(),
        "build": compiled_status().reason,
        "rounds": rounds,
        "depth": depth,
    }
    if yard is not None:
        figures = yard.figures()
        result["pingpong"] = figures
        if figures["decisions_per_s"]:
            result["throughput_vs_pingpong"] = round(
                throughput["decisions_per_s"] / figures["decisions_per_s"], 3
            )
        ours, theirs = throughput.get("cpu_us_per_decision"), figures.get("cpu_us_per_decision")
        if ours and theirs:
            result["cpu_vs_pingpong"] = round(ours / theirs, 3)
    return result


async def _set_observer(hub: BotHub, recorder: _Recorder) -> None:
    hub.on_answer = recorder


def main(argv: Sequence[str] | None = None) -> int:
    """``arena bench gateway [--seconds S] [--matches N] [--decision-ms D] [--bank-ms B]``."""
    parser = argparse.ArgumentParser(
        prog="arena bench gateway",
        description="Decisions through one gateway with remote Python SDK bots on loopback "
        "that answer at once: throughput, timeouts (all of them the platform's), the latency "
        "the gateway adds per decision, its memory, and the same figures for a bare grpc.aio "
        "ping-pong of the same messages.",
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the run")
    parser.add_argument(
        "--matches", "--concurrency", type=int, default=16, dest="matches",
        help="matches in flight in the load run (default 16)",
    )
    parser.add_argument("--decision-ms", type=int, default=1000, help="clock per decision")
    parser.add_argument("--bank-ms", type=int, default=10000, help="time bank per seat")
    parser.add_argument("--bots", type=int, default=3, help="bot processes (at least 3)")
    parser.add_argument(
        "--rounds", type=int, default=3,
        help="turns the load run and the ping-pong take in alternation (default 3)",
    )
    parser.add_argument(
        "--depth", type=int, default=0,
        help="play exactly this many matches at once (admission control held there) and "
        "run the ping-pong at the same depth: steadier figures to compare two versions "
        "of the code (default: admission control decides)",
    )
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the grpc.aio ping-pong yardstick"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if (args.seconds <= 0 or args.matches < 1 or args.decision_ms < 1 or args.bank_ms < 0
            or args.rounds < 1 or not 0 <= args.depth <= args.matches):
        parser.error(
            "--seconds must be positive, --matches, --decision-ms and --rounds at least 1, "
            "--bank-ms not negative, --depth between 0 and --matches"
        )
    result = bench_gateway(
        args.seconds,
        matches=args.matches,
        decision_ms=args.decision_ms,
        bank_ms=args.bank_ms,
        bots=max(3, args.bots),
        baseline=not args.no_baseline,
        rounds=args.rounds,
        depth=args.depth,
    )
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    t, lat = result["load_run"], result["latency_run"]
    print(
        f"gateway ({result['build']}), {t['matches_in_flight']} matches in flight, clock "
        f"{t['decision_ms']} ms + bank {t['bank_ms']} ms, {result['bot_processes']} bot "
        "processes answering at once:"
    )
    print(
        f"  {t['decisions_per_s']:.0f} decisions/s, {t['decisions']} decisions, "
        f"{t['timeouts']} platform-caused timeouts, "
        f"{t.get('cpu_us_per_decision', float('nan')):.0f} us CPU per decision (all processes)"
    )
    print(
        f"  added latency under load: p50 {t['added_ms_p50']:.2f} ms, "
        f"p99 {t['added_ms_p99']:.2f} ms; of it inside the gateway (never charged): "
        f"p50 {t['platform_ms_p50']:.2f} ms, p99 {t['platform_ms_p99']:.2f} ms"
    )
    low, high = t["admission_limit_range"]
    print(
        f"  admission control: {low}-{high} matches at once, "
        f"up to {t['most_matches_waiting']} waiting to start"
    )
    print(
        f"  added latency, one match: p50 {lat['added_ms_p50']:.2f} ms, "
        f"p99 {lat['added_ms_p99']:.2f} ms ({lat['decisions']} decisions)"
    )
    print(
        f"  gateway memory: {result['gateway_rss_mib']:.0f} MiB resident "
        f"(peak {result['gateway_peak_rss_mib']:.0f} MiB)"
    )
    yard = result.get("pingpong")
    if yard is not None:
        print(
            f"grpc.aio ping-pong, same messages, {yard['in_flight']} in flight "
            f"(in turns with the load run, {result['rounds']} each): "
            f"{yard['decisions_per_s']:.0f} decisions/s, "
            f"{yard.get('cpu_us_per_decision', float('nan')):.0f} us CPU per decision"
        )
        print(
            f"  gateway/ping-pong: throughput {result.get('throughput_vs_pingpong', 0):.2f}, "
            f"CPU per decision {result.get('cpu_vs_pingpong', 0):.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
