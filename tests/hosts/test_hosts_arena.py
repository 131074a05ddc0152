"""The arena on several simulated hosts: a data host (Redis, PostgreSQL), two gateway hosts,
two worker hosts, a host of remote SDK bots and of a hosted bot's author, and the
organiser's host, each a network namespace with files of its own, joined by links with
delay, and TLS on every connection between them (gRPC, Redis, PostgreSQL), with
certificates from a CA made for the run. The hosted bot is submitted through a gateway,
which checks it in a sandbox on its host; the worker hosts fetch it by its hash from the
results store into caches of their own and play it in their sandboxes.

One deployment serves the module (it takes a quarter of a minute to start); the tests run
in order, the faults last.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hosts_support import (
    HOSTED,
    REMOTE,
    fingerprint,
    hosted_files,
    one_machine,
    spec_data,
    wait_until,
)

import arena as arena_pkg
from arena.engine import replay as rp
from arena.hosted.bundle import pack
from arena.hosted.cache import cache_root
from arena.hosted.store import HostedStore
from arena.rigs.cluster import STORE_SCHEMA, Deployment
from arena.rigs.hosts import Host, Rig
from arena.tournament.routing import lease_key

DELAY_MS = 2.0
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def arena() -> Iterator[Deployment]:
    with Rig(delay_ms=DELAY_MS) as rig:
        d = Deployment(rig, gateways=2, workers=2, tls=True)
        try:
            d.start(REMOTE)
            yield d
        except BaseException:
            for host in rig.hosts.values():
                for proc in host.procs:
                    print(f"--- {host.name}: {proc.name}\n{proc.log_tail(40)}")
            raise


@pytest.fixture(scope="module")
def hosted(arena: Deployment) -> Path:
    """The hosted bot, submitted by its author from the bots host (its folder there)."""
    return arena.submit_hosted(HOSTED, hosted_files(secrets.token_hex(8)))


def test_every_host_sees_its_own_files_and_the_installed_arena_only(
    arena: Deployment, tmp_path: Path
) -> None:
    """No host can read what another host, the test or the checkout keeps: the programs
    running there see the system, the installed packages (read-only) and their directory."""
    d = arena
    mine = tmp_path / "not-for-the-hosts"
    mine.write_text("secret")
    spec_on_ctl = d.ctl.put("private-spec.yaml", "name: x\n")
    installed = Path(arena_pkg.__file__).parent
    probe = {
        "host": "socket.gethostname()",
        "cwd": "os.getcwd()",
        "tmp": "sorted(os.listdir('/tmp'))",
        "rig": f"sorted(os.listdir({str(d.rig.root)!r}))",
        "hosts": f"sorted(os.listdir({str(d.rig.root / 'hosts')!r}))",
        "work": "sorted(os.listdir('/work')) if os.path.isdir('/work') else []",
        "root": "sorted(os.listdir('/root'))",
        "run": "sorted(os.listdir('/run'))",
        "pg_data": "sorted(os.listdir('/var/lib/postgresql'))",
        "var_cache": "sorted(os.listdir('/var/cache'))",
        "test_file": f"os.path.exists({str(mine)!r})",
        "ctl_spec": f"os.path.exists({str(spec_on_ctl)!r})",
        "other_host": f"os.path.exists({str(d.workers[1].home)!r})",
        "tests": f"os.path.exists({str(REPO / 'tests')!r})",
        "examples": f"os.path.exists({str(REPO / 'examples')!r})",
        "arena": f"os.path.isfile({str(installed / 'cli.py')!r})",
        "arena_writable": f"os.access({str(installed)!r}, os.W_OK)",
        "home_writable": "os.access(os.getcwd(), os.W_OK)",
        "etc_hosts": "'gw2' in open('/etc/hosts').read()",
    }
    fields = ", ".join(f"{k!r}: {v}" for k, v in probe.items())
    code = "import json, os, socket\nprint(json.dumps({" + fields + "}))"
    w1 = d.workers[0]
    seen = json.loads(w1.run(["python", "-c", code]).stdout)
    assert seen["host"] == "w1" and seen["cwd"] == str(w1.home)
    # /tmp holds the rig's folder and, for a checkout kept in /tmp, the way to the
    # installed packages bound back into it (read-only, as below).
    in_tmp = {Path(p).relative_to("/tmp").parts[0] for p in d.rig.installed
              if Path(p).is_relative_to("/tmp")}
    assert seen["tmp"] == sorted({d.rig.root.name} | in_tmp) and seen["rig"] == ["hosts"]
    assert seen["hosts"] == ["w1"]
    assert seen["root"] == [".pyenv"] or not seen["root"]  # only a Python installed there
    assert seen["run"] == [] and seen["pg_data"] == [] and seen["var_cache"] == []
    assert not any(seen[k] for k in ("test_file", "ctl_spec", "other_host", "tests",
                                     "examples", "arena_writable"))
    assert seen["arena"] and seen["home_writable"] and seen["etc_hosts"]
    # The arena's own processes on every host live in that host's view.
    for host in d.rig.hosts.values():
        for proc in host.procs:
            if not proc.alive():
                continue
            for pid in [p for p in host.pids() if _descends(p, proc.pid)]:
                cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
                assert cwd == host.home or host.home in cwd.parents, (host.name, pid, cwd)
                assert sorted(os.listdir(f"/proc/{pid}/root/tmp")) == sorted(
                    {d.rig.root.name} | in_tmp)
                hosts = os.listdir(f"/proc/{pid}/root{d.rig.root / 'hosts'}")
                assert hosts == [host.name], (host.name, hosts)


def test_worker_hosts_run_sandboxes_with_every_isolation_in_force(arena: Deployment) -> None:
    """A worker host (its own namespaces, files and /run) still has what hosted bots need:
    bubblewrap, a cgroup mechanism, a uid per seat and the seccomp filter; ``arena doctor``
    there starts a sandbox to prove it."""
    for host in arena.workers:
        out = host.run(["arena", "doctor"], check=False, timeout=120)
        said = out.stdout + out.stderr
        assert out.returncode == 0 and "hosted bots: can run on this host" in said, said
        assert "uid per seat  yes" in said and "seccomp       on" in said, said
        assert "state         /run/arena-sandbox" in said, said


def _seat_runs(d: Deployment, match_ids: list[str]) -> dict[tuple[str, int], Any]:
    from arena.tournament.store import ResultStore

    with ResultStore(d.operator_db_url(STORE_SCHEMA), create=False, retry_s=0) as store:
        return HostedStore(store).runs_of_matches(match_ids)


def _descendants(roots: list[int]) -> set[int]:
    """The processes ``roots`` started, theirs, and so on, wherever their namespaces are."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _descends(pid: int, ancestor: int) -> bool:
    """Whether ``pid`` is ``ancestor`` or one of its descendants."""
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


def test_the_delay_between_workers_and_gateways_is_never_charged_to_a_bot(
    arena: Deployment,
) -> None:
    """20 ms one way between every two hosts of the platform (worker, data, gateway): a
    question crosses four such links before its answer is back, yet bots that answer in a
    millisecond keep within a 50 ms clock with no time bank: the bot's clock runs from the
    question leaving its gateway to the answer arriving there. The bot's own link is the
    bot's: 15 ms each way between the bots and their gateway is charged."""
    d = arena
    bots_near = {("bots", gw.name): 0.0 for gw in d.gateways}
    tight = {"decision_ms": 50, "bank_ms": 0, "strike_limit": 1000}
    try:
        d.rig.set_delay(20.0, pairs_ms=bots_near)
        far = _play(d, "clock-far", sets=1, max_deals=2, time_control=tight)
        d.rig.set_delay(DELAY_MS, pairs_ms={pair: 15.0 for pair in bots_near})
        slow_link = _play(d, "clock-link", sets=1, max_deals=1, time_control=tight)
    finally:
        d.rig.set_delay(DELAY_MS, pairs_ms={})
    remote = [(r, s) for r in far for s, p in enumerate(r.players) if p in REMOTE]
    decisions = sum(r.seat_stats[s]["decisions"] for r, s in remote)
    platform_ms = sum(r.seat_stats[s]["platform_ms_total"] for r, s in remote)
    charged_max = max(r.seat_stats[s]["think_ms_max"] for r, s in remote)
    print(f"20 ms between hosts: {decisions} decisions, platform delay "
          f"{platform_ms / decisions:.1f} ms each (not charged), charged at most "
          f"{charged_max:.1f} ms")
    assert sum(sum(r.timeouts) for r in far) == 0
    assert platform_ms / decisions >= 4 * 20.0
    assert charged_max < 50
    linked = [(r, s) for r in slow_link for s, p in enumerate(r.players) if p in REMOTE]
    charged = sum(r.seat_stats[s]["think_ms_total"] for r, s in linked)
    count = sum(r.seat_stats[s]["decisions"] for r, s in linked)
    print(f"15 ms between bots and gateway: charged {charged / count:.1f} ms a decision")
    assert charged / count >= 2 * 15.0


def _play(d: Deployment, name: str, **shape: Any) -> list[Any]:
    run = d.start_tournament(spec_data(name, d, **shape))
    try:
        run.proc.wait(150)
    except subprocess.TimeoutExpired:
        d.dump_stacks()
        time.sleep(2)
        raise AssertionError("\n".join(
            [run.log_tail(10)] + [f"--- {w.name}\n{d.worker_procs[w.name].log_tail(150)}"
                              for w in d.workers if w.name in d.worker_procs])) from None
    assert run.proc.returncode == 0, run.log_tail(40)
    return d.results(STORE_SCHEMA, name)


@pytest.mark.timeout(900)
def test_a_tournament_survives_a_lost_worker_host_a_cut_off_gateway_and_redis(
    arena: Deployment, hosted: Path, tmp_path: Path
) -> None:
    """Two remote bots and a hosted one. Mid-tournament, worker host w1 loses power (every
    process on it killed, the sandboxes of its hosted seats with them), gateway host gw1
    is cut off the network for 30 s and comes back, then the data host's Redis is
    restarted (empty: no persistence). The tournament finishes by itself; every match is
    stored once, no seat is ever struck, every hosted seat ran to its end, and every result
    and move equals a one-machine run of the same spec with the same hosted version. Each
    worker host fetched that version into a cache of its own: the machine's cache, and the
    other hosts', never saw it."""
    d = arena
    shape = {"sets": 6, "max_deals": 4,
             "time_control": {"decision_ms": 5000, "bank_ms": 10000, "strike_limit": 3}}
    name = "faults"
    schema = STORE_SCHEMA
    spec = spec_data(name, d, hosted=True, **shape)
    run = d.start_tournament(spec)
    planned = 6 * 6

    def stored(n: int) -> bool:
        if not run.alive() and run.proc.returncode != 0:
            raise AssertionError(f"the tournament stopped:\n{run.log_tail()}")
        return d.count(schema, name) >= n

    wait_until(lambda: stored(4), 240, "4 results")
    w1 = d.workers[0]
    doomed = _descendants(w1.pids())  # with any sandbox, whose processes are in no netns of w1
    killed = w1.kill()
    assert killed >= 2 and not w1.pids()  # the worker's master and pool child
    wait_until(lambda: not [p for p in doomed if _running(p)], 10,
               "every process the worker host started to end")

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

    assert run.proc.wait(600) == 0, run.log_tail(60)
    log = run.log_text()
    assert f"{name}: finished" in log and f"{planned} stored" in log, log[-3000:]
    # What the lost host held was found and sent again, not waited out (visibility timeout).
    assert "lost match(es) again" in log, log[-3000:]

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
    workers = {r.worker.split(":")[0].split("@")[-1] for r in rows}
    print(f"platform faults asked again: {faults}; played on {sorted(workers)}")
    # Every hosted seat ran to its end (a seat of a match w1 lost is not kept: the
    # match was played again), once per match.
    version = pack(hosted).sha256
    runs = d.rig.call(lambda: _seat_runs(d, [r.match_id for r in rows]))
    assert sorted(runs) == sorted((r.match_id, r.players.index(f"{HOSTED}@{version[:12]}"))
                                  for r in rows)
    assert {(run.status, run.version) for run in runs.values()} == {("ok", version)}
    # Fetched into a cache of their own by the worker hosts that played it (and by the
    # gateway that checked it), nowhere else: not on the machine the rig runs on.
    def fetched(host: Host) -> bool:
        return (host.file("/var/cache/arena/bots") / version).is_dir()

    assert workers <= {h.name for h in d.workers if fetched(h)}, workers
    assert [h.name for h in (d.data, d.ctl, d.bots_host) if fetched(h)] == []
    assert not (cache_root() / version).exists()
    assert fingerprint(rows) == fingerprint(one_machine(tmp_path, name, hosted, **shape))
    # After all that, the bots are served again, each by one gateway.
    leases = d.redis(lambda c: [c.get(lease_key(n)) for n in REMOTE])
    assert all(leases), leases
