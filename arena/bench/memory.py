"""``arena bench memory``: the gateway's memory after many finished full-length matches.

A gateway that runs for weeks finishes matches without end; what it keeps of each one must
not add up. This starts ``arena serve`` as its own process (with ``--results``, as in
production, so every replay leaves the gateway), plays ``--finished`` matches to their
natural end (no deal limit) between built-in bots, a few at a time, and reads the gateway's
resident memory (``VmRSS`` in ``/proc/PID/status``) as they finish. It then checks what a
spectator gets: the events of a recent match, and a clear refusal for a match so old that
its events are no longer kept.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
from thousand_bot.proto.thousand.v1 import organiser_pb2, organiser_pb2_grpc

from arena.rigs.processes import GatewayProcess, ServiceError


def _status_kib(pid: int, key: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    found = re.search(rf"^{key}:\s+(\d+) kB", text, re.M)
    return int(found.group(1)) if found else 0


class _Results:
    """Counts the lines the gateway appends to its results file, reading only new bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.count = 0
        self.deals = 0
        self._partial = b""

    def poll(self) -> int:
        if not self.path.exists():
            return self.count
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if line.strip():
                self.count += 1
                self.deals += int(json.loads(line).get("deals", 0))
        return self.count


def run(finished: int, concurrency: int, bots: list[str], preset: str) -> dict[str, Any]:
    token = "org_" + secrets.token_urlsafe(16)
    with tempfile.TemporaryDirectory(prefix="arena-bench-memory-") as tmp:
        root = Path(tmp)
        results = _Results(root / "results.jsonl")
        gw = GatewayProcess.start(
            db_path=root / "gateway.sqlite3",
            log_path=root / "gateway.log",
            organiser_token=token,
            log_level="WARNING",
            extra=["--results", str(results.path)],
        )
        try:
            md = (("authorization", f"Bearer {token}"),)
            with grpc.insecure_channel(gw.address) as channel:
                stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
                time.sleep(0.5)
                start_kib = _status_kib(gw.pid, "VmRSS")
                ids: list[str] = []
                checkpoints: list[tuple[int, int]] = []
                step = max(1, finished // 10)
                began = time.perf_counter()
                while results.poll() < finished:
                    while len(ids) < finished and len(ids) - results.count < concurrency:
                        request = organiser_pb2.StartMatchRequest(
                            preset=preset, seed=f"bench-memory/{len(ids)}", bots=bots
                        )
                        ids.append(stub.StartMatch(request, metadata=md, timeout=30).match_id)
                    if results.count >= (len(checkpoints) + 1) * step:
                        checkpoints.append((results.count, _status_kib(gw.pid, "VmRSS")))
                    if not gw.alive():
                        raise ServiceError("the gateway exited during the run")
                    time.sleep(0.1)
                elapsed = time.perf_counter() - began
                time.sleep(1.0)
                end_kib = _status_kib(gw.pid, "VmRSS")
                peak_kib = _status_kib(gw.pid, "VmHWM")
                recent = list(
                    stub.WatchMatch(
                        organiser_pb2.WatchMatchRequest(match_id=ids[-1]), metadata=md, timeout=60
                    )
                )
                try:
                    list(
                        stub.WatchMatch(
                            organiser_pb2.WatchMatchRequest(match_id=ids[0]), metadata=md,
                            timeout=60,
                        )
                    )
                    oldest = "all its events (still kept)"
                except grpc.RpcError as exc:
                    oldest = f"{exc.code().name}: {exc.details()}"
        finally:
            gw.stop()
    return {
        "finished": results.count,
        "bots": bots,
        "preset": preset,
        "concurrency": concurrency,
        "deals_per_match": round(results.deals / max(1, results.count), 1),
        "seconds": round(elapsed, 1),
        "rss_start_mib": round(start_kib / 1024, 1),
        "rss_end_mib": round(end_kib / 1024, 1),
        "rss_peak_mib": round(peak_kib / 1024, 1),
        "rss_by_finished_mib": [[n, round(k / 1024, 1)] for n, k in checkpoints],
        "recent_match_events": len(recent),
        "oldest_match": oldest,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status: 0 done, 2 bad arguments or the gateway could not run."""
    parser = argparse.ArgumentParser(
        prog="arena bench memory",
        description="Gateway memory (RSS) after many finished full-length matches.",
    )
    parser.add_argument("--finished", type=int, default=1000, help="matches to finish")
    parser.add_argument("--concurrency", type=int, default=8, help="matches in flight")
    parser.add_argument(
        "--bots", default="random,greedy,greedy", help="built-in bots, one per seat, by comma"
    )
    parser.add_argument("--preset", default="classic", help="rules preset")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.finished < 1 or args.concurrency < 1:
        print("arena bench memory: --finished and --concurrency must be at least 1",
              file=sys.stderr)
        return 2
    try:
        res = run(args.finished, args.concurrency, args.bots.split(","), args.preset)
    except (ServiceError, grpc.RpcError, OSError) as exc:
        text = f"{exc.code().name}: {exc.details()}" if isinstance(exc, grpc.RpcError) else exc
        print(f"arena bench memory: {text}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"gateway memory, {res['finished']} finished full-length {res['preset']} matches "
          f"({', '.join(res['bots'])}; {res['deals_per_match']} deals a match on average), "
          f"{res['concurrency']} at a time, {res['seconds']} s")
    print(f"  RSS at start        {res['rss_start_mib']:8.1f} MiB")
    for n, mib in res["rss_by_finished_mib"]:
        print(f"  RSS after {n:>6}    {mib:8.1f} MiB")
    print(f"  RSS at the end      {res['rss_end_mib']:8.1f} MiB (peak {res['rss_peak_mib']} MiB)")
    print(f"  newest match: a spectator gets its {res['recent_match_events']} events")
    print(f"  oldest match: {res['oldest_match']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
