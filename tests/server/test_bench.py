"""The gateway benchmark runs end to end (its figures are printed by `arena bench gateway`,
never asserted: speed is measured, not tested)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from arena.bench.gateway import bench_gateway


def test_bench_gateway_reports_its_figures() -> None:
    result = bench_gateway(2.0, matches=4)
    assert result["load_run"]["decisions"] > 0
    assert result["latency_run"]["decisions"] > 0
    assert result["load_run"]["illegal"] == 0
    for key in ("decisions_per_s", "added_ms_p50", "added_ms_p99", "gateway_rss_mib"):
        assert result[key] > 0
    assert result["pingpong"]["decisions"] > 0
    assert result["cpu_vs_pingpong"] > 0
    json.dumps(result)  # JSON-safe for --json


def _json_of(module: str, *args: str) -> dict[str, Any]:
    """What ``python -m module args... --json`` prints, as a benchmark's user runs it."""
    out = subprocess.run(
        [sys.executable, "-m", module, *args, "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    figures: dict[str, Any] = json.loads(out)
    return figures


def test_bench_module_prints_json() -> None:
    figures = _json_of("arena.bench.gateway", "--seconds", "1", "--no-baseline", "--matches",
                       "2", "--decision-ms", "50", "--bank-ms", "0")
    assert figures["load_run"]["decision_ms"] == 50
    assert "platform_timeouts" in figures


def test_bench_gateway_holds_a_fixed_depth_on_both_sides() -> None:
    """--depth: the gateway plays exactly that many matches at once (admission control
    held there, whatever the load) and the ping-pong keeps as many requests in flight."""
    figures = _json_of("arena.bench.gateway", "--seconds", "2", "--rounds", "1", "--matches",
                       "8", "--depth", "3", "--decision-ms", "1000")
    assert figures["depth"] == 3
    assert figures["load_run"]["admission_limit_range"] == [3, 3]
    assert figures["load_run"]["most_matches_waiting"] == 5  # the other slots wait
    assert figures["pingpong"]["in_flight"] == 3
    assert figures["load_run"]["decisions"] > 0 and figures["pingpong"]["decisions"] > 0


def test_bench_gateway_refuses_a_depth_over_its_matches() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "arena.bench.gateway", "--matches", "2", "--depth", "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert "--depth between 0 and --matches" in res.stderr.strip().splitlines()[-1]


def test_bench_hub_plays_its_matches_and_prints_json() -> None:
    figures = _json_of("arena.bench.hub", "--matches", "2", "--deals", "1")
    assert figures["matches"] == 2 and figures["deals_per_match"] == 1
    assert figures["decisions"] > 20  # every decision of two one-deal matches
    assert figures["us_per_decision"] > 0 and figures["cpu_us_per_decision"] > 0


def test_bench_hub_refuses_bad_figures_in_one_line() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "arena.bench.hub", "--matches", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "arena bench hub: --matches and --deals must be at least 1"
    ]


def test_the_pingpong_yardstick_serves_from_a_process_of_its_own() -> None:
    """Served from the benchmark's process, beside the gateway's event loop, grpc.aio would
    hand its events over between the loops and charge the yardstick for it."""
    import os

    from arena.bench.pingpong import PingPongProcess

    server = PingPongProcess(2)
    try:
        assert server.pid != os.getpid() and server.proc.poll() is None
        assert server.address.startswith("127.0.0.1:")
        assert (server.streams, server.answered) == (0, 0)
        server.pause(True)
        server.pause(False)
        assert server.ask("nonsense") == "unknown command 'nonsense'"
    finally:
        server.close()
    assert server.proc.returncode == 0
