"""Simulated hosts on one Linux machine: network namespaces, links with delay, private files.

A :class:`Rig` is a small data centre:

* **a network**: one network namespace (``TAG-net``) that every host is linked to by a
  veth pair of its own. Host number *i* has the address ``10.99.i.2`` on its link; the
  rest of the rig knows it as ``10.100.0.i``, an address that lives in the network
  namespace, where a relay (:mod:`arena.rigs.relay`) carries each connection to the
  host with the one-way delay between the two hosts. There is no other route: nothing
  of the machine's own network (its loopback, its services) is reachable from a host,
  and no address is added anywhere but on the rig's own links.
* **hosts**: one network namespace each (``TAG-NAME``), a directory of their own, a
  hostname, and an ``/etc/hosts`` naming every host of the rig. Every program of a host
  is started through :mod:`arena.rigs.enter`, which shows it only the system, the Python
  install and the arena's installed code, and the host's own directory.
* **faults**: a host is killed (every process in its namespace, like a machine that
  loses power), cut off (its link down: connections hang, as in a partition) and healed;
  the delay changes while connections stay up.

What the hosts do share, being one machine: the kernel, so one process-id space and one
cgroup tree. A hosted bot's sandbox on a worker host works as on a machine of its own
(bubblewrap, the seat's cgroup, its uid); the seat cgroups of all hosts sit side by side,
each named by its worker's process id, which no other host's worker has, and two hosts may
give the same seat uid to two sandboxes at once, as two machines would.

Everything a rig starts it stops, and it removes its namespaces, also when its owner
fails. Rigs of processes that died without cleaning up are removed by the next rig.
The ``netem`` qdisc is used for the delay where the kernel has it (``delay="netem"`` or
``"auto"``); the relays then add none.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from arena.rigs import linux
from arena.rigs.enter import HIDE, STICKY
from arena.rigs.linux import RigError
from arena.rigs.processes import Service
from arena.sandbox.runtimes import runtimes_root

T = TypeVar("T")

_TAG_RE = re.compile(r"^arena-rig-(\d+)-\d+-")
_counter = itertools.count()
NET_PREFIX = "10.99"
ADDRESS_PREFIX = "10.100.0"


def installed_paths() -> list[str]:
    """What a machine gets from installing the arena: the Python installation, the virtual
    environment, and the arena's, the workers' and the SDK's packages (an editable
    install keeps them in the checkout: only those folders are given, not the checkout)."""
    import importlib.util

    paths = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    for name in ("arena", "workers", "thousand_bot"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise RigError(f"cannot find the installed package {name}")
        paths.update(os.path.realpath(p) for p in spec.submodule_search_locations)
    # A path inside another is given with it.
    ordered = sorted(paths, key=len)
    return [p for i, p in enumerate(ordered)
            if not any(p.startswith(q.rstrip("/") + "/") for q in ordered[:i])]


#: Top-level directories a fresh machine has from its system: never hidden.
_SYSTEM_TOPS = frozenset({
    "/", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/var",
    "/proc", "/sys", "/dev", "/boot", "/media", "/mnt",
})


def hidden_places(installed: Iterable[str]) -> list[str]:
    """The usual private places, and also the top-level directory holding the checkout,
    the virtual environment or the working directory when it is not one of the system's
    (a checkout in ``/check/...`` or ``/build/...`` is hidden as one in ``/work`` is;
    what the hosts need of it comes back read-only). The installed paths name the arena's
    own packages, so the checkout of an editable install is among them."""
    places = list(HIDE)
    for path in [*installed, os.getcwd()]:
        parts = Path(os.path.realpath(path)).parts
        top = "/" + parts[1] if len(parts) > 1 else "/"
        if top not in _SYSTEM_TOPS and top not in places:
            places.append(top)
    return places


def netem_available() -> bool:
    """Whether this kernel can delay packets itself (the ``netem`` qdisc)."""
    name = f"arena-netem-probe-{os.getpid()}"
    if linux.ip("netns", "add", name, check=False).returncode != 0:
        return False
    try:
        res = subprocess.run(
            ["ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
             "delay", "1ms"], capture_output=True, text=True, timeout=30)
        return res.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        linux.ip("netns", "del", name, check=False)


def remove_stale_rigs() -> list[str]:
    """Namespaces left by rigs whose process is gone: their processes killed, removed."""
    removed = []
    for name in linux.netns_names():
        m = _TAG_RE.match(name)
        if m is None:
            continue
        pid = int(m.group(1))
        if pid == os.getpid() or Path(f"/proc/{pid}").exists():
            continue
        with contextlib.suppress(RigError):
            linux.kill_netns_processes(name)
        linux.ip("netns", "del", name, check=False)
        removed.append(name)
    return removed


class Proc(Service):
    """A program running on a host, with its output in a log file in the host's directory."""

    tail_lines = 25

    def __init__(self, host: Host, name: str, popen: subprocess.Popen[bytes],
                 log: Path) -> None:
        super().__init__(name, popen, log)
        self.host = host

    def wait_for(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        """Poll the log until ``pattern`` appears; a clear error if the program exits first."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            found = regex.search(self.log_text())
            if found:
                return found
            if not self.alive():
                raise RigError(f"{self.host.name}: {self.name} exited "
                               f"({self.proc.returncode}) before {pattern!r}:\n"
                               f"{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RigError(f"{self.host.name}: no {pattern!r} from {self.name} after "
                               f"{timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.1)

    def signal(self, sig: int) -> None:
        """Signal the program and every process it started (its session)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 15.0) -> int | None:
        return super().stop(timeout)


@dataclass(eq=False)
class Host:
    """One simulated machine of a rig."""

    rig: Rig
    name: str
    index: int
    ports: tuple[int, ...]
    home: Path
    procs: list[Proc] = field(default_factory=list)
    cut: bool = False
    #: Its network namespace.
    netns: str = field(init=False)
    #: How the other hosts reach this one (through the network's relay).
    address: str = field(init=False)
    #: The address on the host's own link (only the network's relay uses it).
    link_address: str = field(init=False)
    #: The network side of the host's link.
    link: str = field(init=False)

    def __post_init__(self) -> None:
        # Named by the rig, the host's name and its number, which it keeps for life.
        self.netns = f"{self.rig.tag}-{self.name}"
        self.address = f"{ADDRESS_PREFIX}.{self.index}"
        self.link_address = f"{NET_PREFIX}.{self.index}.2"
        self.link = f"h{self.index}"

    def file(self, path: str) -> Path:
        """Where a file the host sees at ``path`` (in its directory, or in a place of its
        own such as ``/srv`` or ``/tmp``) lives on this machine: for copying files between
        hosts, as ``scp`` would."""
        home = str(self.home)
        if path == home or path.startswith(home + "/"):
            return Path(path)
        for place in sorted(HIDE, key=len, reverse=True):
            if path == place or path.startswith(place + "/"):
                return self.rig.root / "fs" / self.name / path.lstrip("/")
        raise ValueError(f"{path} is not a file of host {self.name} (a system file?)")

    def put(self, relative: str, data: str | bytes, mode: int = 0o644) -> Path:
        """Copy a file onto the host (what ``scp`` would do)."""
        target = self.home / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode()
        target.write_bytes(data)
        target.chmod(mode)
        return target

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A fresh login's environment: nothing of the rig owner's variables."""
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:"
                    "/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(self.home),
            "TMPDIR": str(self.home / "tmp"),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            # Where setup installed the hosted runtimes on this machine: a host sees the
            # environment but not the sources their place is named by.
            "ARENA_RUNTIMES": str(self.rig.runtimes),
        }
        env.update(extra or {})
        return env

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as run on this host."""
        return [sys.executable, "-m", "arena.rigs.enter", str(self.rig.view_file(self)),
                "--", *argv]

    def spawn(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None,
              ) -> Proc:
        """Start a program on the host in the background; its output goes to ``NAME.log``."""
        log = self.home / "log" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        prefix = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []
        with log.open("ab") as out:
            popen = subprocess.Popen(
                [*prefix, *self.command(argv)], stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, env=self.environment(env), start_new_session=True)
        proc = Proc(self, name, popen, log)
        self.procs.append(proc)
        return proc

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float = 120.0, check: bool = True, input: str | None = None,
            ) -> subprocess.CompletedProcess[str]:
        """Run a program on the host and wait for it (its output is returned)."""
        res = subprocess.run(self.command(argv), env=self.environment(env), text=True,
                             capture_output=True, timeout=timeout, input=input)
        if check and res.returncode != 0:
            raise RigError(f"{self.name}: {' '.join(argv)}: exit {res.returncode}\n"
                           f"{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
        return res

    def shell(self, script: str, env: Mapping[str, str] | None = None,
              timeout: float = 120.0, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a bash script on the host, from its directory."""
        return self.run(["bash", "-c", script], env=env, timeout=timeout, check=check)

    def pids(self) -> list[int]:
        return linux.pids_in_netns(self.netns)

    def cpu_seconds(self) -> float:
        """CPU time used so far by the programs running on the host."""
        return linux.cpu_seconds(self.pids())

    def kill(self) -> int:
        """Every process of the host killed at once, as when the machine loses power."""
        count = linux.kill_netns_processes(self.netns)
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.proc.wait(10)
        return count

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the host's programs (SIGTERM, then SIGKILL after ``timeout`` seconds),
        newest first; then anything else still running in its namespace."""
        for proc in reversed(self.procs):
            proc.signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in reversed(self.procs):
            try:
                proc.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.signal(signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.proc.wait(10)
        with contextlib.suppress(RigError):
            linux.kill_netns_processes(self.netns)


class Rig:
    """A network and its hosts; see the module's docstring. Use it as a context manager
    (or call :meth:`close`): it stops everything it started and removes its namespaces."""

    def __init__(self, root: Path | None = None, *, delay_ms: float = 0.0,
                 extra_ms: Mapping[str, float] | None = None, delay: str = "relay",
                 keep: bool = False) -> None:
        linux.require_root()
        remove_stale_rigs()
        self.tag = f"arena-rig-{os.getpid()}-{next(_counter)}"
        self.own_root = root is None
        # The PostgreSQL server runs as its own user: every host directory is reachable.
        self.root = Path(tempfile.mkdtemp(prefix="arena-rig-")) if root is None else root
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        #: Leave the hosts' directories (logs, data) behind: ``keep`` or ARENA_RIG_KEEP=1.
        self.keep = keep or os.environ.get("ARENA_RIG_KEEP", "") not in ("", "0")
        self.delay_ms = float(delay_ms)
        self.extra_ms = dict(extra_ms or {})
        self.pairs_ms: dict[tuple[str, str], float] = {}
        if delay not in ("relay", "netem", "auto"):
            raise ValueError(f"delay must be relay, netem or auto, not {delay!r}")
        self.netem = delay == "netem" or (delay == "auto" and netem_available())
        if delay == "netem" and not self.netem:
            raise RigError("this kernel has no netem qdisc: use the relay delay")
        self.hosts: dict[str, Host] = {}
        self.relays: dict[str, Proc] = {}
        self._net_ready = False
        self._ops: cf.ThreadPoolExecutor | None = None
        self.installed = installed_paths()
        self.hidden = hidden_places(self.installed)
        self.runtimes = runtimes_root()
        self.closed = False
        try:
            self._make_network()
        except BaseException:
            self.close()
            raise

    # --- the network ----------------------------------------------------------------

    @property
    def net(self) -> str:
        return f"{self.tag}-net"

    def _make_network(self) -> None:
        linux.ip("netns", "add", self.net)
        self._net_ready = True
        linux.ip("-n", self.net, "link", "set", "lo", "up")
        (self.root / "etc").mkdir(exist_ok=True)
        (self.root / "net").mkdir(exist_ok=True)
        self._write_hosts_file()

    def add_host(self, name: str, ports: Iterable[int] = ()) -> Host:
        """A new machine on the network; ``ports`` are the TCP ports it serves on."""
        if not re.fullmatch(r"[a-z][a-z0-9]{0,11}", name):
            raise ValueError(f"host name {name!r}: 1-12 lowercase letters and digits")
        if name in self.hosts or name == "net":
            raise ValueError(f"host {name} exists already")
        index = len(self.hosts) + 1
        home = self.root / "hosts" / name
        (home / "tmp").mkdir(parents=True, exist_ok=True)
        home.chmod(0o755)
        host = Host(self, name, index, tuple(ports), home)
        linux.ip("netns", "add", host.netns)
        self.hosts[name] = host
        linux.ip("link", "add", host.link, "netns", self.net, "type", "veth", "peer", "name",
                 "eth0", "netns", host.netns)
        linux.ip("-n", self.net, "addr", "add", f"{NET_PREFIX}.{index}.1/24", "dev", host.link)
        linux.ip("-n", self.net, "addr", "add", f"{host.address}/32", "dev", "lo")
        linux.ip("-n", self.net, "link", "set", host.link, "up")
        linux.ip("-n", host.netns, "addr", "add", f"{host.link_address}/24", "dev", "eth0")
        linux.ip("-n", host.netns, "link", "set", "lo", "up")
        linux.ip("-n", host.netns, "link", "set", "eth0", "up")
        linux.ip("-n", host.netns, "route", "add", f"{ADDRESS_PREFIX}.0/24", "via",
                 f"{NET_PREFIX}.{index}.1")
        self._write_view(host)
        self._write_hosts_file()
        self._apply_netem()
        self._write_relay_configs()
        if host.ports:
            self._start_relay(host)
        self._reload_relays()
        return host

    def _write_hosts_file(self) -> None:
        lines = ["127.0.0.1 localhost", "::1 localhost"]
        lines += [f"{h.address} {h.name}" for h in self.hosts.values()]
        path = self.root / "etc" / "hosts"
        # Written in place: the hosts see the file through a bind mount of this inode.
        with path.open("a+") as out:
            out.seek(0)
            out.truncate()
            out.write("\n".join(lines) + "\n")

    def view_file(self, host: Host) -> Path:
        return self.root / "net" / f"view-{host.name}.json"

    def _write_view(self, host: Host) -> None:
        backing = {}
        for place in HIDE:
            own = self.root / "fs" / host.name / place.lstrip("/")
            own.mkdir(parents=True, exist_ok=True)
            own.chmod(0o1777 if place in STICKY else 0o755)
            backing[place] = str(own)
        view = {
            "netns": host.netns,
            "hostname": host.name,
            "home": str(host.home),
            "private": True,
            "hide": self.hidden,
            "backing": backing,
            "read_only": self.installed,
            "files": {"/etc/hosts": str(self.root / "etc" / "hosts")},
        }
        self.view_file(host).write_text(json.dumps(view, indent=1))

    def _relay_config(self, host: Host) -> dict[str, Any]:
        return {
            "target": host.name,
            "listen": [[host.address, p, host.link_address, p] for p in host.ports],
            "peers": {h.link_address: h.name for h in self.hosts.values()},
            "delay_ms": 0.0 if self.netem else self.delay_ms,
            "extra_ms": {} if self.netem else self.extra_ms,
            "pairs_ms": {} if self.netem else {f"{a} {b}": ms
                                               for (a, b), ms in self.pairs_ms.items()},
        }

    def _write_relay_configs(self) -> None:
        for host in self.hosts.values():
            if host.ports:
                path = self.root / "net" / f"relay-{host.name}.json"
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(self._relay_config(host)))
                tmp.replace(path)

    def _start_relay(self, host: Host) -> None:
        config = self.root / "net" / f"relay-{host.name}.json"
        view = self.root / "net" / "view-net.json"
        view.write_text(json.dumps({"netns": self.net}))
        log = self.root / "net" / f"relay-{host.name}.log"
        prefix = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []
        with log.open("ab") as out:
            popen = subprocess.Popen(
                [*prefix, sys.executable, "-m", "arena.rigs.enter", str(view), "--",
                 sys.executable, "-m", "arena.rigs.relay", str(config)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        proc = Proc(host, f"relay-{host.name}", popen, log)
        self.relays[host.name] = proc
        proc.wait_for("relay to .* ready", timeout=60)

    def _reload_relays(self) -> None:
        for proc in self.relays.values():
            proc.signal(signal.SIGHUP)

    def _apply_netem(self) -> None:
        if not self.netem:
            return
        for host in self.hosts.values():
            one_way = self.delay_ms / 2 + self.extra_ms.get(host.name, 0.0)
            for ns, dev in ((self.net, host.link), (host.netns, "eth0")):
                subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev,
                                "root", "netem", "delay", f"{one_way:.3f}ms"],
                               check=True, capture_output=True, timeout=30)

    def set_delay(self, delay_ms: float, extra_ms: Mapping[str, float] | None = None,
                  pairs_ms: Mapping[tuple[str, str], float] | None = None) -> None:
        """Change the one-way delay between hosts (``extra_ms``: added on every path that
        touches the named host; ``pairs_ms``: the delay between two named hosts, whatever
        the rest); connections stay up. Pairs need the relay's delay, not netem."""
        self.delay_ms = float(delay_ms)
        if extra_ms is not None:
            self.extra_ms = dict(extra_ms)
        if pairs_ms is not None:
            if pairs_ms and self.netem:
                raise RigError("delays between pairs of hosts need the relay's delay")
            self.pairs_ms = dict(pairs_ms)
        self._apply_netem()
        self._write_relay_configs()
        self._reload_relays()

    # --- faults ---------------------------------------------------------------------

    def network_cpu_seconds(self) -> float:
        """CPU time used so far by the network (the relays)."""
        return linux.cpu_seconds(linux.pids_in_netns(self.net))

    def cut(self, host: Host) -> None:
        """Cut the host off the network (its link down): its connections hang, as in a
        partition, and resume if it comes back before they time out."""
        linux.ip("-n", self.net, "link", "set", host.link, "down")
        host.cut = True

    def heal(self, host: Host) -> None:
        linux.ip("-n", self.net, "link", "set", host.link, "up")
        host.cut = False

    # --- the operator's console ------------------------------------------------------

    def call(self, fn: Callable[..., T], *args: Any, timeout: float = 120.0) -> T:
        """Run ``fn`` on a thread that lives in the rig's network, with no delay: a test's
        window on the hosts' services (``redis.Redis(host=rig.hosts['data'].address)``).
        Every socket it makes belongs to the rig's network."""
        if self._ops is None:
            net = self.net

            def enter() -> None:
                fd = os.open(linux.netns_path(net), os.O_RDONLY)
                try:
                    linux.setns(fd, linux.CLONE_NEWNET)
                finally:
                    os.close(fd)

            self._ops = cf.ThreadPoolExecutor(1, thread_name_prefix="rig-operator",
                                              initializer=enter)
        return self._ops.submit(fn, *args).result(timeout)

    # --- the end --------------------------------------------------------------------

    def close(self, timeout: float = 3.0) -> None:
        """Stop every host's programs (``timeout`` seconds after SIGTERM they are killed:
        a rig's results are in by then), the relays, and remove the namespaces."""
        if self.closed:
            return
        self.closed = True
        if self._ops is not None:
            self._ops.shutdown(wait=False, cancel_futures=True)
        for host in reversed(list(self.hosts.values())):
            for proc in reversed(host.procs):
                proc.signal(signal.SIGTERM)
        for host in reversed(list(self.hosts.values())):
            with contextlib.suppress(Exception):
                host.stop(timeout)
        for proc in self.relays.values():
            with contextlib.suppress(Exception):
                proc.stop(5)
        for host in self.hosts.values():
            linux.ip("netns", "del", host.netns, check=False)
        if self._net_ready:
            with contextlib.suppress(RigError):
                linux.kill_netns_processes(self.net)
            linux.ip("netns", "del", self.net, check=False)
        if self.own_root and not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Rig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
