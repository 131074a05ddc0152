"""The gateway benchmark runs end to end (its figures are printed by `arena bench gateway`,
never asserted: speed is measured, not tested)."""

from __future__ import annotations

import json
import subprocess
import sys

from arena.server.bench import bench_gateway


def test_bench_gateway_reports_its_figures() -> None:
    result = bench_gateway(2.0, concurrency=4)
    assert result["throughput_run"]["decisions"] > 0
    assert result["latency_run"]["decisions"] > 0
    assert result["throughput_run"]["illegal"] == 0
    for key in ("decisions_per_s", "added_ms_p50", "added_ms_p99"):
        assert result[key] > 0
    json.dumps(result)  # JSON-safe for --json


def test_bench_module_prints_json() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "arena.server.bench", "--seconds", "1", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    assert "decisions_per_s" in json.loads(out)
