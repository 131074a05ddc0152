"""Serving ``/metrics`` from a single process or from a Celery prefork worker.

A Celery prefork worker is one master and several forked children; the children play the
matches, so they own the metric values, but Prometheus scrapes one port. prometheus-client's
multiprocess mode solves this: every process writes its values to memory-mapped files in
``PROMETHEUS_MULTIPROC_DIR`` and the master merges them when scraped.  Three things make it
correct rather than approximately right:

* the mode is fixed when ``prometheus_client`` is first imported, so the directory must be
  set (and emptied of a previous run's files) before anything imports it:
  :func:`prepare_multiprocess_dir`;
* a child that exits must drop its live gauges (``livesum`` and friends) or a dead child's
  "matches running" would be counted for ever: :func:`mark_process_dead`, called from
  Celery's ``worker_process_shutdown`` signal; a child killed outright never runs that
  signal, so the collector also drops files of processes that no longer exist;
* counters of dead children are kept, so rates stay continuous when a child is recycled;
* every metric update in multiprocess mode takes one process-wide lock, on the assumption
  that the process has no threads; a Celery master has one (the queue-depth sampler), and
  a pool child forked while that thread held the lock would be born with it locked and
  hang at its first metric update: the thread updates inside
  :func:`metrics_thread_updates`, which ``fork()`` waits for
  (:func:`hold_metrics_lock_across_fork`).

:func:`install_celery_metrics` wires all of that to Celery's signals;
:func:`run_celery_worker` does the whole start-up in the right order.

``prometheus_client`` is imported inside functions only, so that importing this module never
fixes the mode too early.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import CollectorRegistry

log = logging.getLogger(__name__)

#: Where metrics endpoints listen unless told otherwise.
LOOPBACK = "127.0.0.1"

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# prometheus-client names its files ``{type}_{pid}.db`` or ``gauge_{mode}_{pid}.db``.
_DB_FILE = re.compile(r"^(?P<kind>[a-z_]+?)_(?P<pid>\d+)\.db$")
_LIVE_GAUGE_KINDS = frozenset(
    {"gauge_livesum", "gauge_liveall", "gauge_livemin", "gauge_livemax", "gauge_livemostrecent"}
)


class MetricsSetupError(RuntimeError):
    """The process cannot export metrics as asked (wrong start-up order, port taken...)."""


# --- multiprocess mode ---------------------------------------------------------------------


def multiprocess_dir() -> Path | None:
    """The directory of multiprocess mode, or ``None`` in single-process mode."""
    value = os.environ.get(MULTIPROC_ENV)
    return Path(value) if value else None


def prepare_multiprocess_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """Turn on multiprocess mode for this process and the processes it forks.

    Call it first thing in the master process, before anything imports ``prometheus_client``
    (in particular before importing the Celery app and :mod:`arena.observability.metrics`).
    It removes the ``*.db`` files a previous run left, which would otherwise be merged into
    the new run's counters and make them jump.  Only ``*.db`` files are removed, so pointing
    it at a directory by mistake loses nothing else.  Without ``path`` it uses
    ``$PROMETHEUS_MULTIPROC_DIR`` or a fresh directory per master process, so two workers
    on one host never share (and wipe) one directory.
    """
    values = sys.modules.get("prometheus_client.values")
    if values is not None and getattr(values, "ValueClass", None) is getattr(
        values, "MutexValue", object()
    ):
        raise MetricsSetupError(
            "prometheus_client was imported before multiprocess mode was enabled; call "
            "prepare_multiprocess_dir() before importing the Celery app or "
            "arena.observability.metrics (or use run_celery_worker(), which re-executes "
            "the process when needed)"
        )
    if path is None:
        env = os.environ.get(MULTIPROC_ENV)
        chosen = Path(env) if env else Path(tempfile.gettempdir()) / f"arena-metrics-{os.getpid()}"
    else:
        chosen = Path(path)
    try:
        chosen.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MetricsSetupError(f"cannot create metrics directory {chosen}: {exc}") from exc
    if not chosen.is_dir():
        raise MetricsSetupError(f"{chosen} is not a directory")
    for stale in chosen.glob("*.db"):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
    os.environ[MULTIPROC_ENV] = str(chosen)
    return chosen


# --- fork safety ---------------------------------------------------------------------------

#: Held by a thread other than the forking one while it updates metrics, and taken by
#: ``fork()`` first, so no child is born while such an update holds prometheus-client's
#: own (unnamed) lock.
_thread_updates = threading.Lock()
_fork_guard_installed = False


@contextlib.contextmanager
def metrics_thread_updates() -> Iterator[None]:
    """Wrap every metric update made by a background thread of a process that forks.

    In multiprocess mode every metric update takes one process-wide lock of
    prometheus-client, which it keeps to itself and which assumes the process has no
    threads.  A child forked while another thread is inside an update would inherit that
    lock held, with no thread left to release it, and hang at its first metric update.
    prometheus-client gives the lock no public name, so the arena does not reach for it:
    background threads update inside this block, and :func:`hold_metrics_lock_across_fork`
    makes ``fork()`` wait for the block (``os.register_at_fork``), so no update is half
    done when a child is born.  Updates from the thread that forks need no block.
    """
    with _thread_updates:
        yield


def hold_metrics_lock_across_fork() -> bool:
    """Make ``fork()`` wait for any :func:`metrics_thread_updates` block, and release it
    on both sides afterwards.

    This is what the standard library does for its own locks (``logging``); the wait is
    at most one metric update of the other thread.  Call it in the parent before it starts
    threads that update metrics and forks children; calling it again does nothing.
    Returns whether the guard is in place: ``False`` in single-process mode, where values
    have locks of their own and the children of a Celery master never touch the master's.
    """
    global _fork_guard_installed
    if multiprocess_dir() is None:
        return False
    if not _fork_guard_installed:
        _taken_by_fork(_thread_updates)
        _fork_guard_installed = True
    return True


def _taken_by_fork(lock: threading.Lock) -> None:
    """Make ``fork()`` wait for ``lock`` and release it in both processes after, so that a
    child never starts with it held by a thread it did not inherit."""
    os.register_at_fork(before=lock.acquire, after_in_parent=lock.release,
                        after_in_child=lock.release)


#: Held by a background thread while it talks to the network, and taken by ``fork()``
#: first (see :func:`network_io_across_fork`).
_thread_io = threading.Lock()
_io_guard_installed = False


@contextlib.contextmanager
def network_io_across_fork() -> Iterator[None]:
    """Wrap the network I/O of a background thread in a process that forks (a Celery
    master): ``fork()`` waits for the block to end.

    With TLS (``rediss://``), that I/O runs inside OpenSSL, whose locks are process-wide;
    a child forked while the thread holds one inherits it held, with no thread left to
    release it, and hangs at its own first TLS connection (a pool child stuck in
    ``load_default_certs`` before its first match). The wait at a fork is one sample of
    the thread at most.
    """
    global _io_guard_installed
    if not _io_guard_installed:
        _taken_by_fork(_thread_io)
        _io_guard_installed = True
    with _thread_io:
        yield


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prune_dead_processes(path: str | os.PathLike[str] | None = None) -> list[int]:
    """Drop the live gauges of processes that are gone; return their pids.

    Covers children killed without running their exit hooks (SIGKILL, out of memory).
    Counters and histograms of dead processes stay: they are totals, not current state.
    """
    directory = Path(path) if path is not None else multiprocess_dir()
    if directory is None:
        return []
    dead: set[int] = set()
    for file in directory.glob("*.db"):
        match = _DB_FILE.match(file.name)
        if match is None or match["kind"] not in _LIVE_GAUGE_KINDS:
            continue
        pid = int(match["pid"])
        if not _pid_alive(pid):
            dead.add(pid)
            with contextlib.suppress(FileNotFoundError):
                file.unlink()
    return sorted(dead)


def mark_process_dead(pid: int | None = None) -> None:
    """Forget the live gauges of a process that is exiting (by default this one).

    A no-op in single-process mode, so callers need not know the mode.
    """
    directory = multiprocess_dir()
    if directory is None:
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(  # type: ignore[no-untyped-call]
        os.getpid() if pid is None else pid, str(directory)
    )


class _MultiProcessCollector:
    """prometheus-client's merger, preceded by pruning dead processes' live gauges."""

    def __init__(self, path: Path) -> None:
        from prometheus_client.multiprocess import MultiProcessCollector

        self._path = path
        self._inner = MultiProcessCollector(None, path=str(path))  # type: ignore[no-untyped-call]

    def collect(self) -> Iterable[Metric]:
        prune_dead_processes(self._path)
        metrics: Iterable[Metric] = self._inner.collect()  # type: ignore[no-untyped-call]
        return metrics


def metrics_registry() -> CollectorRegistry:
    """The registry to expose: the merged files in multiprocess mode, else the default one."""
    from prometheus_client import REGISTRY, CollectorRegistry

    directory = multiprocess_dir()
    if directory is None:
        return REGISTRY
    if not directory.is_dir():
        raise MetricsSetupError(f"{MULTIPROC_ENV}={directory} is not a directory")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_MultiProcessCollector(directory))
    return registry


def metrics_text(registry: CollectorRegistry | None = None) -> bytes:
    """The exposition text a scrape would return right now."""
    from prometheus_client import generate_latest

    return generate_latest(registry if registry is not None else metrics_registry())


# --- the HTTP endpoint ---------------------------------------------------------------------


@dataclass
class MetricsServer:
    """A running ``/metrics`` endpoint; ``port`` is the bound port (useful with port 0)."""

    server: WSGIServer
    thread: threading.Thread
    registry: CollectorRegistry = field(repr=False)

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def start_metrics_server(port: int, addr: str = LOOPBACK) -> MetricsServer:
    """Serve ``/metrics`` on ``addr:port`` from a daemon thread.

    Loopback by default, like every listening port of the arena: metrics name bots and
    tournaments, and an address that every interface answers on is a choice to make
    (``--metrics-addr 0.0.0.0``), not a default.

    In multiprocess mode (``PROMETHEUS_MULTIPROC_DIR`` set) it serves the merge of every
    process's files, which is what a Celery master must do; otherwise this process's own
    metrics.  Port 0 picks a free port.
    """
    from prometheus_client import start_http_server

    if not 0 <= port <= 65535:
        raise MetricsSetupError(f"metrics port must be 0..65535, got {port}")
    registry = metrics_registry()
    try:
        server, thread = start_http_server(port, addr=addr, registry=registry)
    except OSError as exc:
        raise MetricsSetupError(
            f"cannot serve metrics on {addr}:{port}: {exc.strerror or exc}"
        ) from exc
    log.info("serving Prometheus metrics on %s:%d", addr, server.server_port)
    return MetricsServer(server=server, thread=thread, registry=registry)


# --- queue depth ---------------------------------------------------------------------------

#: kombu's Redis transport keeps one list per queue and priority step; step 0 is the bare name.
_PRIORITY_SEP = "\x06\x16"
_PRIORITY_STEPS = (0, 3, 6, 9)


def redis_queue_keys(queue: str) -> list[str]:
    """The Redis keys kombu uses for one queue (one list per priority step)."""
    return [queue if step == 0 else f"{queue}{_PRIORITY_SEP}{step}" for step in _PRIORITY_STEPS]


def sample_queue_depth(redis_url: str, queues: Sequence[str]) -> dict[str, int]:
    """Read the length of each queue once and publish it as ``arena_queue_depth``.

    The update is a :func:`metrics_thread_updates` block, so a thread of a forking process
    (a Celery master) may call it once :func:`hold_metrics_lock_across_fork` is in place;
    :func:`start_queue_depth_sampler` does that.
    """
    import redis

    from arena.observability.metrics import QUEUE_DEPTH

    depths: dict[str, int] = {}
    with network_io_across_fork():
        client = redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5)
        try:
            for queue in queues:
                pipe = client.pipeline(transaction=False)
                for key in redis_queue_keys(queue):
                    pipe.llen(key)
                depths[queue] = int(sum(pipe.execute()))
        finally:
            client.close()
    for queue, depth in depths.items():
        with metrics_thread_updates():
            QUEUE_DEPTH.labels(queue=queue).set(depth)
    return depths


@dataclass
class QueueDepthSampler:
    """A daemon thread sampling queue depths every ``interval`` seconds until stopped."""

    redis_url: str
    queues: tuple[str, ...]
    interval: float = 5.0
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> QueueDepthSampler:
        self._thread = threading.Thread(target=self._run, name="arena-queue-depth", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                sample_queue_depth(self.redis_url, self.queues)
            except Exception as exc:  # a broker outage must not kill the worker
                log.warning("cannot sample queue depth from %s: %s", self.redis_url, exc)
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 5)


def start_queue_depth_sampler(
    redis_url: str, queues: Iterable[str], interval: float = 5.0
) -> QueueDepthSampler:
    """Sample ``arena_queue_depth{queue}`` from a Redis broker in the background."""
    if interval <= 0:
        raise ValueError(f"sampling interval must be positive, got {interval}")
    names = tuple(queues)
    if not names:
        raise ValueError("no queue to sample")
    # The sampler thread updates a metric: children forked meanwhile must not inherit the
    # metrics lock held by it.
    hold_metrics_lock_across_fork()
    return QueueDepthSampler(redis_url=redis_url, queues=names, interval=interval).start()


# --- Celery wiring -------------------------------------------------------------------------


@dataclass
class _CeleryMetricsState:
    port: int | None
    addr: str
    sample_queues: bool
    count_retries: bool
    server: MetricsServer | None = None
    sampler: QueueDepthSampler | None = None


_celery_state: _CeleryMetricsState | None = None


def _on_worker_init(sender: Any = None, **_: Any) -> None:
    state = _celery_state
    if state is None:
        return
    # Before the pool forks and before any thread of the master (the sampler below, the
    # user's own) updates a metric.
    hold_metrics_lock_across_fork()
    if state.port is not None and state.server is None:
        state.server = start_metrics_server(state.port, state.addr)
    app = getattr(sender, "app", None)
    if state.sample_queues and state.sampler is None and app is not None:
        broker = str(app.conf.broker_url or "")
        if broker.startswith(("redis://", "rediss://", "unix://")):
            queues = list(app.amqp.queues.consume_from) or [app.conf.task_default_queue]
            state.sampler = start_queue_depth_sampler(broker, queues)


def _on_worker_process_shutdown(pid: int | None = None, **_: Any) -> None:
    mark_process_dead(pid)


def _on_worker_shutdown(**_: Any) -> None:
    state = _celery_state
    if state is None:
        return
    if state.sampler is not None:
        state.sampler.stop()
        state.sampler = None
    if state.server is not None:
        state.server.close()
        state.server = None


def _on_task_retry(sender: Any = None, request: Any = None, **_: Any) -> None:
    state = _celery_state
    if state is None or not state.count_retries:
        return
    from arena.observability.metrics import TASK_RETRIES_TOTAL

    name = getattr(sender, "name", None) or getattr(request, "task", None) or "unknown"
    TASK_RETRIES_TOTAL.labels(task=str(name)).inc()


def install_celery_metrics(
    metrics_port: int | None,
    addr: str = LOOPBACK,
    *,
    sample_queues: bool = True,
    count_retries: bool = True,
) -> None:
    """Connect the metrics lifecycle to Celery's signals; call before the worker starts.

    * ``worker_init`` (master): make forking safe for the metrics lock
      (:func:`hold_metrics_lock_across_fork`), serve ``/metrics`` on ``metrics_port``
      (``None``: no endpoint) and, with a Redis broker, sample the depth of the consumed
      queues;
    * ``worker_process_shutdown`` (each child, as it exits): drop its live gauges;
    * ``worker_shutdown`` (master): stop the endpoint and the sampler;
    * ``task_retry``: count ``arena_task_retries_total{task}`` (turn off with
      ``count_retries=False`` if the tasks count their own retries).

    Calling it again replaces the settings; handlers are connected once.
    """
    global _celery_state
    from celery import signals

    _celery_state = _CeleryMetricsState(
        port=metrics_port, addr=addr, sample_queues=sample_queues, count_retries=count_retries
    )
    signals.worker_init.connect(_on_worker_init, weak=False, dispatch_uid="arena-metrics-init")
    signals.worker_process_shutdown.connect(
        _on_worker_process_shutdown, weak=False, dispatch_uid="arena-metrics-child-exit"
    )
    signals.worker_shutdown.connect(
        _on_worker_shutdown, weak=False, dispatch_uid="arena-metrics-shutdown"
    )
    signals.task_retry.connect(_on_task_retry, weak=False, dispatch_uid="arena-metrics-retry")


def _prometheus_imported_single_process() -> bool:
    values = sys.modules.get("prometheus_client.values")
    return values is not None and getattr(values, "ValueClass", None) is getattr(
        values, "MutexValue", object()
    )


def run_celery_worker(
    app: str,
    celery_args: Sequence[str] = (),
    *,
    metrics_port: int | None = 9102,
    metrics_addr: str = LOOPBACK,
    multiproc_dir: str | os.PathLike[str] | None = None,
) -> int:
    """Start a Celery worker for ``app`` (e.g. ``"workers.app"``) with metrics done right.

    Order matters and is handled here: enable multiprocess mode, wire the signals, then
    import the app and run ``celery worker``.  If ``prometheus_client`` was already imported
    in single-process mode by the caller, the process re-executes itself through
    ``python -m arena.observability.exposition`` so the mode can still be chosen; the
    function then never returns.  ``celery_args`` are extra ``celery worker`` options
    (``--concurrency 2``, ``-Q arena`` ...).  Returns the worker's exit status.
    """
    if _prometheus_imported_single_process():
        argv = [sys.executable, "-m", "arena.observability.exposition", "--app", app]
        if metrics_port is not None:
            argv += ["--metrics-port", str(metrics_port)]
        argv += ["--metrics-addr", metrics_addr]
        if multiproc_dir is not None:
            argv += ["--multiproc-dir", os.fspath(multiproc_dir)]
        argv += ["--", *celery_args]
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, argv)
    prepare_multiprocess_dir(multiproc_dir)
    install_celery_metrics(metrics_port, metrics_addr)
    from celery.bin.celery import celery as celery_command

    try:
        status = celery_command.main(
            args=["-A", app, "worker", *celery_args], prog_name="celery", standalone_mode=False
        )
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return status if isinstance(status, int) else 0


def _main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m arena.observability.exposition",
        description="Run a Celery worker that serves merged Prometheus metrics.",
    )
    parser.add_argument("--app", required=True, help="Celery app module, e.g. workers.app")
    parser.add_argument("--metrics-port", type=int, default=None)
    parser.add_argument("--metrics-addr", default=LOOPBACK)
    parser.add_argument("--multiproc-dir", default=None)
    parser.add_argument("celery_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    extra = list(args.celery_args)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    return run_celery_worker(
        args.app,
        extra,
        metrics_port=args.metrics_port,
        metrics_addr=args.metrics_addr,
        multiproc_dir=args.multiproc_dir,
    )


if __name__ == "__main__":
    sys.exit(_main())
