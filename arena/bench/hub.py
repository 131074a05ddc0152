"""``arena bench hub``: the gateway's own work per decision, without gRPC.

The gateway benchmark measures everything a decision costs, most of it gRPC and the
kernel, on a host whose speed may drift by tens of per cent within minutes. This one plays
matches through the gateway's real referee, hub and match manager (a real bot registry,
admission control with a fixed bound) and hands each request's answer back to the hub in
the same process, as the stream reader would: what remains is the Python a gateway runs
per decision (observation, request bytes, clocks, events, bookkeeping), and the bot side
here is only a parse of the request and its first legal action.

Run under ``valgrind --tool=callgrind --instr-atstart=no``, the matches are counted alone
(the warm-up match and the set-up are not): the instruction count it prints then does not
depend on the host's load, so two versions of the code can be compared to a per cent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.bench import bench_parser
from arena.compiled import status as compiled_status
from arena.referee.heap import settle_heap
from arena.server.admission import Admission
from arena.server.auth import BotRegistry
from arena.server.hub import BotHub, Connection, Outgoing
from arena.server.matches import MatchManager

BOTS = ("bench-0", "bench-1", "bench-2")


async def _answer(hub: BotHub, conn: Connection) -> None:
    """A bot's side of a stream, in process: the first legal action (not ``concede``)."""
    while True:
        item = await conn.outbox.get()
        if item is None:
            return
        if type(item) is not Outgoing:
            continue  # an event or an error: nothing to answer
        item.clock.start()
        request = bot_pb2.PlayResponse.FromString(item.message).decision_request
        legal = request.legal_actions
        action = next((a for a in legal if a != "concede"), legal[0])
        hub.answer(conn, bot_pb2.Decision(request_id=request.request_id, action=action))


def _callgrind(on: bool) -> None:
    """Count from here (or stop counting) when running under callgrind; else nothing."""
    tool = shutil.which("callgrind_control")
    if tool is not None and "vgpreload" in os.environ.get("LD_PRELOAD", ""):
        subprocess.run([tool, "-i", "on" if on else "off", str(os.getpid())],
                       capture_output=True, check=False)


async def _play(matches: int, deals: int, tmp: Path) -> dict[str, Any]:
    registry = BotRegistry(tmp / "registry.sqlite3")
    for name in BOTS:
        registry.register(name)
    hub = BotHub()
    manager = MatchManager(hub, registry, admission=Admission(max_matches=matches,
                                                              adaptive=False))
    answering = [asyncio.ensure_future(_answer(hub, hub.connect(b, "bench", 0, False)))
                 for b in BOTS]
    clock = (50_000, 0, 1_000_000)  # long enough that no decision times out

    async def run(seeds: Sequence[str], max_deals: int) -> int:
        ids = [await manager.start(preset="classic", options={}, seed=seed, bots=BOTS,
                                   max_deals=max_deals, time_control=clock, public_seed=True)
               for seed in seeds]
        results = [await manager.wait(match_id) for match_id in ids]
        return sum(s.decisions for r in results if r is not None for s in r.seat_stats)

    try:
        await run(["bench-hub/warm"], 1)  # imports, first connections, caches
        settle_heap()  # the collector as arena serve sets it once it is up
        _callgrind(True)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        decisions = await run([f"bench-hub/{i}" for i in range(matches)], deals)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        _callgrind(False)
    finally:
        for task in answering:
            task.cancel()
        registry.close()
    return {
        "matches": matches,
        "deals_per_match": deals,
        "decisions": decisions,
        "seconds": round(wall, 3),
        "us_per_decision": round(wall / decisions * 1e6, 1) if decisions else None,
        "cpu_us_per_decision": round(cpu / decisions * 1e6, 1) if decisions else None,
        "build": compiled_status().reason,
    }


def bench_hub(matches: int = 16, deals: int = 4) -> dict[str, Any]:
    """Play ``matches`` classic matches of ``deals`` deals at once; the figures."""
    if matches < 1 or deals < 1:
        raise ValueError("matches and deals must be at least 1")
    logging.getLogger("arena.server.matches").setLevel(logging.ERROR)  # public seeds
    with tempfile.TemporaryDirectory(prefix="arena-bench-hub-") as tmp:
        return asyncio.run(_play(matches, deals, Path(tmp)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = bench_parser(
        "hub",
        "The gateway's referee, hub and match manager per decision, without gRPC: answers "
        "are handed to the hub in process. Under valgrind's callgrind (--instr-atstart=no) "
        "only the measured matches are counted.",
    )
    parser.add_argument("--matches", type=int, default=16, help="matches at once (16)")
    parser.add_argument("--deals", type=int, default=4, help="deals per match (4)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.matches < 1 or args.deals < 1:
        print("arena bench hub: --matches and --deals must be at least 1", file=sys.stderr)
        return 2
    res = bench_hub(args.matches, args.deals)
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"hub benchmark: {res['matches']} classic matches of {res['deals_per_match']} deals "
          "at once, answers handed to the hub in process (no gRPC)")
    print(f"  {res['decisions']:,} decisions in {res['seconds']:.2f} s: "
          f"{res['us_per_decision']} us a decision, {res['cpu_us_per_decision']} us of CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
