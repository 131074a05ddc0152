"""Shared pieces of the observability tests: sample data, free ports, real services."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from arena.rigs.processes import redis_server as private_redis

REPO = Path(__file__).resolve().parents[2]
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

BOTS = ("greedy", "random", "remote-alpha")
TOURNAMENT = "spring-cup"

#: Every metric the arena defines, as named in the design (a test checks metrics.py).
METRIC_NAMES = {
    "arena_decisions_total",
    "arena_decision_latency_seconds",
    "arena_platform_delay_seconds",
    "arena_bot_instances",
    "arena_matches_running",
    "arena_matches_finished_total",
    "arena_deals_total",
    "arena_games_total",
    "arena_strikes_total",
    "arena_forfeits_total",
    "arena_queue_depth",
    "arena_task_retries_total",
    "arena_tournament_matches",
    "arena_tournament_matches_done",
    "arena_rating",
    "arena_rating_ci_low",
    "arena_rating_ci_high",
    "arena_match_duration_seconds",
    "arena_sprt_llr",
    "arena_sprt_llr_bound",
    "arena_gateway_auth_failures_total",
    "arena_gateway_matches_waiting",
    "arena_gateway_match_limit",
    "arena_event_loop_lag_seconds",
    "arena_gateway_streams_cut_total",
    "grpc_server_started_total",
    "grpc_server_handled_total",
    "grpc_server_handling_seconds",
}


def populate_metrics(step: int = 0, role: str = "all") -> None:
    """Give every metric realistic values; ``step`` makes successive calls grow counters.

    ``role`` picks the metrics a process of that kind exports: ``gateway`` (bots, gRPC,
    auth), ``worker`` (matches, decisions, queues, tournaments) or ``all``.
    """
    from arena.observability import metrics as m

    gateway = role in ("gateway", "all")
    worker = role in ("worker", "all")
    if worker:
        for i, bot in enumerate(BOTS):
            for _ in range(5 + step):
                m.record_decision(bot, "ok", 0.002 * (i + 1) + 0.001 * step)
            m.record_decision(bot, "timeout", 1.2)
            m.record_decision(bot, "illegal", 0.01)
            m.record_decision(bot, "malformed", 0.02)
            m.STRIKES_TOTAL.labels(bot=bot).inc(2)
            m.FORFEITS_TOTAL.labels(bot=bot).inc()
            m.RATING.labels(tournament=TOURNAMENT, bot=bot).set(1500 + 40 * i + step)
            m.RATING_CI_LOW.labels(tournament=TOURNAMENT, bot=bot).set(1460 + 40 * i + step)
            m.RATING_CI_HIGH.labels(tournament=TOURNAMENT, bot=bot).set(1540 + 40 * i + step)
        m.MATCHES_RUNNING.set(2)
        for status in m.MATCH_STATUSES:
            m.MATCHES_FINISHED_TOTAL.labels(status=status).inc(1 + step)
            m.MATCH_DURATION_SECONDS.labels(status=status).observe(0.4 + 0.1 * step)
        m.SPRT_LLR.labels(tournament=TOURNAMENT).set(1.2 + 0.1 * step)
        m.SPRT_LLR_BOUND.labels(tournament=TOURNAMENT, bound="lower").set(-2.94)
        m.SPRT_LLR_BOUND.labels(tournament=TOURNAMENT, bound="upper").set(2.94)
        m.DEALS_TOTAL.inc(12 + step)
        m.GAMES_TOTAL.inc(1 + step)
        m.QUEUE_DEPTH.labels(queue="arena").set(7 + step)
        m.TASK_RETRIES_TOTAL.labels(task="workers.tasks.play_match").inc(1 + step)
        m.TOURNAMENT_MATCHES.labels(tournament=TOURNAMENT).set(60)
        m.TOURNAMENT_MATCHES_DONE.labels(tournament=TOURNAMENT).set(10 + step)
    if gateway:
        for bot in BOTS:
            m.BOT_INSTANCES.labels(bot=bot).set(2)
        m.GATEWAY_AUTH_FAILURES_TOTAL.labels(reason="bad_token").inc(1 + step)
        for kind, service, method, code in (
            ("bidi_stream", "thousand.v1.BotService", "Connect", "OK"),
            ("unary", "thousand.v1.OrganiserService", "ListBots", "OK"),
            ("unary", "thousand.v1.OrganiserService", "ListBots", "Unauthenticated"),
            ("server_stream", "thousand.v1.OrganiserService", "WatchMatch", "Canceled"),
        ):
            m.GRPC_SERVER_STARTED_TOTAL.labels(kind, service, method).inc(1 + step)
            m.GRPC_SERVER_HANDLED_TOTAL.labels(kind, service, method, code).inc(1 + step)
            m.GRPC_SERVER_HANDLING_SECONDS.labels(kind, service, method).observe(0.004)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(
    check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1, what: str = ""
) -> Any:
    """Poll ``check`` until it returns something truthy; fail with ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            result = check()
        except Exception as exc:
            last_error = exc
        else:
            if result:
                return result
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what or check}: last error {last_error!r}")


def http_get(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode("utf-8"))


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A throw-away redis-server on a free loopback port; yields its URL."""
    with private_redis() as redis:
        yield redis.url


class Prometheus:
    """A real Prometheus server on a free loopback port with a temporary storage dir."""

    def __init__(self, config: str, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        config_file = workdir / "prometheus.yml"
        config_file.write_text(config)
        self.log = (workdir / "prometheus.log").open("w")
        self.proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config_file}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )
        wait_for(self.ready, what=f"prometheus (log {workdir / 'prometheus.log'})")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(
                f"prometheus exited: {(self.workdir / 'prometheus.log').read_text()[-2000:]}"
            )
        try:
            return "Ready" in http_get(f"{self.url}/-/ready")
        except (urllib.error.URLError, ConnectionError):
            return False

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        body = json.loads(http_get(f"{self.url}/api/v1/{path}?{query}", timeout=30))
        if body.get("status") != "success":
            raise AssertionError(f"query {params} failed: {body}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.api("query", query=expr)
        result: list[dict[str, Any]] = data["result"]
        return result

    def scrapes(self, job: str) -> int:
        """How many samples of ``up`` Prometheus holds for the job's targets (min over them)."""
        result = self.query(f'count_over_time(up{{job="{job}"}}[10m])')
        if not result:
            return 0
        return min(int(float(r["value"][1])) for r in result)

    def close(self) -> None:
        stop_process(self.proc)
        self.log.close()


def run_python(code: str, env: dict[str, str | None] | None = None, timeout: float = 60) -> str:
    """Run ``code`` in a fresh interpreter (for multiprocess mode, set before import).

    ``env`` entries override the environment; ``None`` removes a variable.
    """
    full_env = dict(os.environ)
    for key, val in (env or {}).items():
        if val is None:
            full_env.pop(key, None)
        else:
            full_env[key] = val
    full_env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), str(Path(__file__).parent), full_env.get("PYTHONPATH", "")]
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout
