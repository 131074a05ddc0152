"""The metrics as Prometheus sees them: names, lint, multiprocess merging, a real worker."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from obs_support import (
    METRIC_NAMES,
    PROMTOOL,
    REPO,
    free_port,
    http_get,
    redis_server,
    run_python,
    stop_process,
    wait_for,
)
from prometheus_client import REGISTRY
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from arena.observability import metrics
from arena.observability.exposition import (
    MetricsSetupError,
    redis_queue_keys,
    start_metrics_server,
)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float | None:
    return samples(text).get((name, frozenset(labels.items())))


def promtool_check_metrics(text: bytes) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PROMTOOL, "check", "metrics"],
        input=text.decode(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_every_designed_metric_is_defined_and_nothing_else() -> None:
    defined = set()
    for obj in vars(metrics).values():
        if isinstance(obj, MetricWrapperBase):
            family = next(iter(obj.describe()))
            defined.add(family.name + ("_total" if family.type == "counter" else ""))
    assert defined == METRIC_NAMES


def test_record_decision_rejects_an_unknown_outcome_and_counts_nothing() -> None:
    before = REGISTRY.get_sample_value(
        "arena_decisions_total", {"bot": "strict-bot", "outcome": "ok"}
    )
    with pytest.raises(ValueError, match="unknown decision outcome 'late'"):
        metrics.record_decision("strict-bot", "late", 0.1)
    assert before is None
    assert (
        REGISTRY.get_sample_value("arena_decision_latency_seconds_count", {"bot": "strict-bot"})
        is None
    )


def test_forget_tournament_drops_its_gauges_and_tolerates_repeats() -> None:
    metrics.TOURNAMENT_MATCHES.labels(tournament="old-cup").set(6)
    metrics.RATING.labels(tournament="old-cup", bot="greedy").set(1510)
    metrics.forget_tournament("old-cup", ["greedy"])
    metrics.forget_tournament("old-cup", ["greedy"])
    assert REGISTRY.get_sample_value("arena_tournament_matches", {"tournament": "old-cup"}) is None
    assert (
        REGISTRY.get_sample_value("arena_rating", {"tournament": "old-cup", "bot": "greedy"})
        is None
    )


SINGLE_PROCESS_SCRIPT = textwrap.dedent(
    """
    import sys, urllib.request
    from arena.observability.exposition import start_metrics_server
    from obs_support import populate_metrics

    populate_metrics(0)
    server = start_metrics_server(0, "127.0.0.1")
    url = f"http://127.0.0.1:{server.port}/metrics"
    sys.stdout.write(urllib.request.urlopen(url, timeout=5).read().decode())
    server.close()
    """
)


@pytest.fixture(scope="module")
def single_process_text() -> str:
    """A scrape of a process with every metric populated.

    A separate process, so the values set here never leak into this test process's
    registry, where other tests measure the metrics.
    """
    return run_python(SINGLE_PROCESS_SCRIPT, env={"PROMETHEUS_MULTIPROC_DIR": None})


def test_promtool_accepts_single_process_exposition(single_process_text: str) -> None:
    for name in METRIC_NAMES:
        assert f"# TYPE {name.removesuffix('_total')}" in single_process_text, name
    result = promtool_check_metrics(single_process_text.encode())
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "" and result.stderr.strip() == ""


def test_metrics_server_serves_this_process(single_process_text: str) -> None:
    assert value(single_process_text, "arena_queue_depth", queue="arena") == 7
    assert value(single_process_text, "arena_matches_running") == 2
    # A single process also exports its own resource metrics.
    assert value(single_process_text, "process_open_fds") is not None


MULTIPROCESS_SCRIPT = textwrap.dedent(
    """
    import json, multiprocessing, os, signal, sys, urllib.request
    from pathlib import Path

    from arena.observability.exposition import (
        mark_process_dead, metrics_text, prepare_multiprocess_dir, start_metrics_server)

    directory = Path(sys.argv[1])
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "counter_4194301.db").write_bytes(b"left over from a previous run")
    prepare_multiprocess_dir(directory)
    assert not (directory / "counter_4194301.db").exists()

    from arena.observability import metrics as m
    from obs_support import populate_metrics

    ctx = multiprocessing.get_context("fork")

    def child(step, ready, leave, graceful):
        populate_metrics(step, role="worker")
        m.MATCHES_RUNNING.set(0)
        m.MATCHES_RUNNING.inc()
        m.DEALS_TOTAL.inc(100)
        ready.put(os.getpid())
        leave.wait()
        if graceful:
            mark_process_dead()

    server = start_metrics_server(0, "127.0.0.1")
    url = f"http://127.0.0.1:{server.port}/metrics"
    scrape = lambda: urllib.request.urlopen(url, timeout=5).read().decode()

    ready = ctx.Queue()
    leave = [ctx.Event(), ctx.Event()]
    kids = [ctx.Process(target=child, args=(i, ready, leave[i], i == 0)) for i in range(2)]
    for kid in kids:
        kid.start()
    pids = sorted([ready.get(timeout=30), ready.get(timeout=30)])
    out = {"pids": pids, "both": scrape()}
    leave[0].set()
    kids[0].join(30)
    out["after_graceful_exit"] = scrape()
    os.kill(kids[1].pid, signal.SIGKILL)
    kids[1].join(30)
    out["after_kill"] = scrape()
    out["text"] = metrics_text().decode()
    server.close()
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def multiprocess_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    directory = tmp_path_factory.mktemp("multiproc")
    script = tmp_path_factory.mktemp("script") / "mp.py"
    script.write_text(MULTIPROCESS_SCRIPT)
    env = {**os.environ}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(Path(__file__).parent)])
    proc = subprocess.run(
        [sys.executable, str(script), str(directory / "metrics")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_multiprocess_merges_children_and_drops_dead_live_gauges(
    multiprocess_run: dict[str, object],
) -> None:
    both = str(multiprocess_run["both"])
    assert value(both, "arena_matches_running") == 2
    assert value(both, "arena_deals_total") == 2 * 100 + 12 + 13
    # One child left through the exit hook, the other was killed without running it.
    graceful = str(multiprocess_run["after_graceful_exit"])
    assert value(graceful, "arena_matches_running") == 1
    killed = str(multiprocess_run["after_kill"])
    assert value(killed, "arena_matches_running") in (None, 0)
    # Totals of dead children stay, so rates do not drop when a child is recycled.
    assert value(killed, "arena_deals_total") == 2 * 100 + 12 + 13
    # Ratings keep the most recent value even after its writer died.
    assert value(killed, "arena_rating", tournament="spring-cup", bot="greedy") in (1500, 1501)


def test_promtool_accepts_multiprocess_exposition(multiprocess_run: dict[str, object]) -> None:
    result = promtool_check_metrics(str(multiprocess_run["text"]).encode())
    assert result.returncode == 0, result.stdout + result.stderr


def test_multiprocess_mode_refused_after_a_single_process_import(tmp_path: Path) -> None:
    target = tmp_path / "not-created"
    out = run_python(
        "import prometheus_client\n"
        "from arena.observability.exposition import MetricsSetupError, "
        "prepare_multiprocess_dir\n"
        "try:\n"
        f"    prepare_multiprocess_dir({str(target)!r})\n"
        "except MetricsSetupError as exc:\n"
        "    print('refused:', exc)\n",
        env={"PROMETHEUS_MULTIPROC_DIR": None, "prometheus_multiproc_dir": None},
    )
    assert out.startswith("refused: prometheus_client was imported before")
    assert not target.exists()


def test_metrics_server_reports_a_taken_port_clearly() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(MetricsSetupError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            start_metrics_server(port, "127.0.0.1")
    with pytest.raises(MetricsSetupError, match=r"0\.\.65535"):
        start_metrics_server(70000)


def test_redis_queue_keys_cover_kombu_priority_lists() -> None:
    assert redis_queue_keys("arena") == [
        "arena",
        "arena\x06\x163",
        "arena\x06\x166",
        "arena\x06\x169",
    ]


def test_real_celery_prefork_worker_exports_merged_metrics(tmp_path: Path) -> None:
    """A real worker (2 prefork children) over a real Redis, scraped on its metrics port."""
    from celery import Celery

    with redis_server() as broker:
        port = free_port()
        env = {**os.environ, "ARENA_TEST_BROKER": broker}
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(Path(__file__).parent)])
        log = (tmp_path / "worker.log").open("w")
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "arena.observability.exposition",
                "--app",
                "obs_celery_app",
                "--metrics-port",
                str(port),
                "--metrics-addr",
                "127.0.0.1",
                "--multiproc-dir",
                str(tmp_path / "metrics"),
                "--",
                "--concurrency",
                "2",
                "--pool",
                "prefork",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                "obs@%h",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )
        client = Celery("client", broker=broker, backend=broker)
        try:
            url = f"http://127.0.0.1:{port}/metrics"
            wait_for(
                lambda: worker.poll() is None and http_get(url),
                timeout=60,
                what="worker metrics endpoint",
            )
            # Only the master's sampler writes the queue depth before any task ran.
            wait_for(
                lambda: value(http_get(url), "arena_queue_depth", queue="arena") == 0,
                timeout=30,
                what="queue depth sampled from the broker",
            )
            held = [client.send_task("obs.running", args=[3.0], queue="arena") for _ in range(2)]

            def both_running() -> bool:
                return value(http_get(url), "arena_matches_running") == 2

            wait_for(both_running, timeout=60, what="two matches running in two children")
            pids = {r.get(timeout=60) for r in held}
            assert len(pids) == 2, "the two tasks ran in the same child"
            wait_for(
                lambda: value(http_get(url), "arena_matches_running") == 0,
                timeout=30,
                what="running matches back to zero once the children finished",
            )
            client.send_task("obs.flaky", args=["k"], queue="arena").get(timeout=60)
            client.send_task("obs.populate", args=[0], queue="arena").get(timeout=60)
            # The retry is counted by the worker's signal handler, which may run just after
            # the result reached us: wait for the figures rather than race them.
            wait_for(
                lambda: value(http_get(url), "arena_task_retries_total", task="obs.flaky") == 1
                and value(http_get(url), "arena_deals_total") == 12,
                timeout=30,
                what="the retry and the deals counted",
            )
            text = http_get(url)
            assert value(text, "arena_task_retries_total", task="obs.flaky") == 1
            assert value(text, "arena_deals_total") == 12
            assert promtool_check_metrics(text.encode()).returncode == 0
        finally:
            stop_process(worker, timeout=30)
            log.close()
        assert worker.returncode == 0, (tmp_path / "worker.log").read_text()[-3000:]
