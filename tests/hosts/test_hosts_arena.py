"""The arena on several simulated hosts: a data host (Redis, PostgreSQL), two gateway hosts,
two worker hosts, a host of remote SDK bots and the organiser's host, each a network
namespace with files of its own, joined by links with delay.

One deployment serves the module (it takes a quarter of a minute to start); the tests run
in order, the faults last.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hosts_support import REMOTE, fingerprint, one_machine, spec_data, wait_until

from arena.engine import replay as rp
from arena.rigs.cluster import Deployment
from arena.rigs.hosts import Rig
from arena.tournament.routing import lease_key

DELAY_MS = 2.0


@pytest.fixture(scope="module")
def arena() -> Iterator[Deployment]:
    with Rig(delay_ms=DELAY_MS) as rig:
        d = Deployment(rig, gateways=2, workers=2)
        try:
            d.start(REMOTE)
            yield d
        except BaseException:
            for host in rig.hosts.values():
                for proc in host.procs:
                    print(f"--- {host.name}: {proc.name}\n{proc.tail(40)}")
            raise


@pytest.mark.timeout(900)
def test_a_tournament_survives_a_lost_worker_host_a_cut_off_gateway_and_redis(
    arena: Deployment, tmp_path: Path
) -> None:
    """Mid-tournament, worker host w1 loses power (every process on it killed), gateway
    host gw1 is cut off the network for 30 s and comes back, then the data host's Redis
    is restarted (empty: no persistence). The tournament finishes by itself; every match is
    stored once, no seat is ever struck, and every result and move equals a one-machine
    run of the same spec."""
    d = arena
    shape = {"sets": 6, "max_deals": 4,
             "time_control": {"decision_ms": 5000, "bank_ms": 10000, "strike_limit": 3}}
    name = "faults"
    schema = name
    spec = spec_data(name, d, **shape)
    run = d.start_tournament(spec)
    planned = 6 * 6

    def stored(n: int) -> bool:
        if not run.alive() and run.popen.returncode != 0:
            raise AssertionError(f"the tournament stopped:\n{run.tail()}")
        return d.count(schema, name) >= n

    wait_until(lambda: stored(4), 240, "4 results")
    killed = d.workers[0].kill()
    assert killed >= 2 and not d.workers[0].pids()  # the worker's master and pool child

    wait_until(lambda: stored(10), 240, "10 results")
    gw1 = d.gateways[0]
    d.rig.cut(gw1)
    cut_at = time.monotonic()
    # While gw1 is away its bots' questions are asked again (the platform's fault, not
    # theirs) until the bots notice and move to gw2.
    wait_until(lambda: time.monotonic() - cut_at >= 30, 40, "30 s of partition", 1.0)
    d.rig.heal(gw1)

    wait_until(lambda: stored(22), 300, "22 results")
    d.restart_redis()

    assert run.popen.wait(600) == 0, run.tail(60)
    log = run.text()
    assert f"{name}: finished" in log and f"{planned} stored" in log, log[-3000:]

    rows = d.results(schema, name)
    assert len(rows) == planned == len({r.match_id for r in rows})
    assert sorted(r.index for r in rows) == list(range(planned))
    assert all(r.status == "completed" for r in rows)
    struck = [(r.index, r.worker, r.seat_stats) for r in rows if sum(r.strikes)]
    assert not struck, struck
    for r in rows:
        assert rp.verify(r.replay) is None
    # The faults cost time only: questions that could not travel were asked again.
    faults = sum(s.get("platform_faults", 0) for r in rows for s in r.seat_stats)
    workers = {r.worker.split(":")[0] for r in rows}
    print(f"platform faults asked again: {faults}; played on {sorted(workers)}")
    assert fingerprint(rows) == fingerprint(one_machine(tmp_path, name, **shape))
    # After all that, the bots are served again, each by one gateway.
    leases = d.redis(lambda c: [c.get(lease_key(n)) for n in REMOTE])
    assert all(leases), leases
