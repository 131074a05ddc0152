"""Every dashboard query, run by a real Prometheus against real metric endpoints.

Prometheus scrapes two jobs named as in production: ``gateway`` (a single process serving
its own registry) and ``worker`` (a real Celery prefork worker whose two children write
into ``PROMETHEUS_MULTIPROC_DIR`` and whose master merges them).  It also loads the real
alert rules.  Then each panel query of each dashboard must return data.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from obs_support import (
    PROMETHEUS,
    REPO,
    Prometheus,
    free_port,
    http_get,
    redis_server,
    stop_process,
    wait_for,
)

DASHBOARD_DIR = REPO / "dashboards"

#: How Grafana variables are replaced for a query sent straight to Prometheus.
SUBSTITUTIONS = {
    "$__rate_interval": "1m",
    "$__interval": "15s",
    "$__range": "5m",
    "$bot": ".*",
    "$tournament": ".*",
    "$queue": ".*",
}

GATEWAY_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from arena.observability.exposition import start_metrics_server
    from obs_support import populate_metrics

    server = start_metrics_server(int(sys.argv[1]), "127.0.0.1")
    step = 0
    while True:
        populate_metrics(step, role="gateway")
        step += 1
        time.sleep(0.3)
    """
)


def grafana_to_promql(expr: str) -> str:
    for variable, value in SUBSTITUTIONS.items():
        expr = expr.replace(variable, value)
    leftover = re.findall(r"\$\w+", expr)
    assert not leftover, f"unknown Grafana variable {leftover} in {expr}"
    return expr


def dashboard_queries() -> list[tuple[str, str, str]]:
    """(dashboard, panel title, expression) for every target of every panel."""
    out = []
    for path in sorted(DASHBOARD_DIR.glob("*.json")):
        board = json.loads(path.read_text())
        for panel in board["panels"]:
            for target in panel["targets"]:
                out.append((board["uid"], panel["title"], target["expr"]))
    return out


def variable_queries() -> list[tuple[str, str, str, str]]:
    """(dashboard, variable, metric, label) as ``label_values(metric, label)``."""
    out = []
    for path in sorted(DASHBOARD_DIR.glob("*.json")):
        board = json.loads(path.read_text())
        for variable in board["templating"]["list"]:
            match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", variable["definition"])
            assert match, f"unexpected variable query {variable['definition']}"
            out.append((board["uid"], variable["name"], match.group(1), match.group(2)))
    return out


def _env() -> dict[str, str]:
    env = {**os.environ}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(Path(__file__).parent)])
    return env


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    if not Path(PROMETHEUS).exists():
        pytest.fail(f"{PROMETHEUS} missing: apt-get install -y prometheus")
    from celery import Celery

    work = tmp_path_factory.mktemp("prometheus")
    shutil.copy(REPO / "deploy" / "prometheus" / "alerts.yml", work / "alerts.yml")
    gateway_port, worker_port = free_port(), free_port()
    script = work / "gateway.py"
    script.write_text(GATEWAY_SCRIPT)
    with redis_server() as broker:
        env = {**_env(), "ARENA_TEST_BROKER": broker}
        gateway_log = (work / "gateway.log").open("w")
        gateway = subprocess.Popen(
            [sys.executable, str(script), str(gateway_port)],
            env=env,
            stdout=gateway_log,
            stderr=subprocess.STDOUT,
        )
        worker_log = (work / "worker.log").open("w")
        worker = subprocess.Popen(
            [
                sys.executable, "-m", "arena.observability.exposition",
                "--app", "obs_celery_app",
                "--metrics-port", str(worker_port), "--metrics-addr", "127.0.0.1",
                "--multiproc-dir", str(work / "multiproc"),
                "--", "--concurrency", "2", "--pool", "prefork", "--loglevel", "INFO",
                "--without-gossip", "--without-mingle", "--hostname", "obsprom@%h",
            ],
            env=env,
            stdout=worker_log,
            stderr=subprocess.STDOUT,
            cwd=work,
        )  # fmt: skip
        client = Celery("client", broker=broker, backend=broker)
        server: Prometheus | None = None
        try:
            for port in (gateway_port, worker_port):
                wait_for(
                    functools.partial(http_get, f"http://127.0.0.1:{port}/metrics"),
                    timeout=60,
                    what=f"metrics endpoint on {port}",
                )
            config = textwrap.dedent(
                f"""
                global:
                  scrape_interval: 1s
                  scrape_timeout: 1s
                  evaluation_interval: 1s
                rule_files: [alerts.yml]
                scrape_configs:
                  - job_name: gateway
                    static_configs: [{{targets: ["127.0.0.1:{gateway_port}"]}}]
                  - job_name: worker
                    static_configs: [{{targets: ["127.0.0.1:{worker_port}"]}}]
                """
            )
            server = Prometheus(config, work)
            # Keep both children busy so each writes its own files, step after step.
            step = 0
            deadline = time.monotonic() + 120
            pids: set[int] = set()
            while time.monotonic() < deadline:
                batch = [
                    client.send_task("obs.populate", args=[step + i, 0.4], queue="arena")
                    for i in range(2)
                ]
                pids |= {result.get(timeout=60) for result in batch}
                step += 2
                if len(pids) >= 2 and min(server.scrapes("gateway"), server.scrapes("worker")) >= 4:
                    break
            assert len(pids) >= 2, "the worker's two children did not both play"
            assert min(server.scrapes("gateway"), server.scrapes("worker")) >= 4
            yield server
        finally:
            if server is not None:
                server.close()
            stop_process(worker, timeout=30)
            stop_process(gateway)
            gateway_log.close()
            worker_log.close()


def test_both_jobs_are_up(prometheus: Prometheus) -> None:
    result = prometheus.query('up{job=~"gateway|worker"}')
    assert sorted((r["metric"]["job"], r["value"][1]) for r in result) == [
        ("gateway", "1"),
        ("worker", "1"),
    ]


def test_worker_children_are_merged(prometheus: Prometheus) -> None:
    # Both children ran populate; each set arena_matches_running to 2 and is still alive.
    result = prometheus.query('arena_matches_running{job="worker"}')
    assert [r["value"][1] for r in result] == ["4"]


@pytest.mark.parametrize(
    ("board", "title", "expr"),
    dashboard_queries(),
    ids=[f"{b}:{t}" for b, t, _ in dashboard_queries()],
)
def test_dashboard_query_returns_data(
    prometheus: Prometheus, board: str, title: str, expr: str
) -> None:
    result = prometheus.query(grafana_to_promql(expr))
    assert result, f"{board} / {title}: no data for {grafana_to_promql(expr)}"


@pytest.mark.parametrize(("board", "name", "metric", "label"), variable_queries())
def test_dashboard_variable_has_values(
    prometheus: Prometheus, board: str, name: str, metric: str, label: str
) -> None:
    result = prometheus.query(f"count by ({label}) ({metric})")
    values = {r["metric"].get(label) for r in result}
    assert values - {None}, f"{board}: variable {name} would list nothing"


def test_alert_rules_load_and_evaluate_cleanly(prometheus: Prometheus) -> None:
    groups: list[dict[str, Any]] = prometheus.api("rules")["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    assert len(rules) == 9
    for rule in rules:
        assert rule["health"] in ("ok", "unknown"), rule
        assert not rule.get("lastError"), rule
    firing = {a["labels"]["alertname"] for a in prometheus.api("alerts")["alerts"]}
    # Everything is up: the process alerts stay quiet.
    assert not firing & {"ArenaWorkerDown", "ArenaNoWorkerUp", "ArenaGatewayDown"}
