"""``arena bench hosts`` works: a small run on simulated hosts prints every figure."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from arena.bench.hosts import describe


@pytest.mark.timeout(600)
def test_arena_bench_hosts_measures_throughput_and_decisions() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bench", "hosts", "--workers", "1,2",
         "--games", "6", "--max-deals", "1", "--delays", "0,20", "--matches", "1", "--json"],
        capture_output=True, text=True, timeout=540,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads(done.stdout)
    assert set(res["throughput"]) == {"1", "2"}
    for row in res["throughput"].values():
        assert row["games_per_s"] > 0
        assert set(row["cpu_ms_per_game"]) == {"workers", "data", "organiser", "network"}
        assert row["cpu_ms_per_game"]["workers"] > 0
    assert res["throughput"]["1"]["vs_one"] == 1.0
    assert set(res["decisions"]) == {"0", "20"}
    near, far = res["decisions"]["0"], res["decisions"]["20"]
    assert near["decisions"] == far["decisions"] > 0
    # Four crossings of 20 ms each way between worker, data host and gateway.
    assert far["round_trip_p50_ms"] >= 80 > near["round_trip_p50_ms"]
    lines = describe(res)
    assert any("x" in line and "one host" in line for line in lines)
    assert any(line.strip().startswith("20 ms") for line in lines)
