"""The real arena, observed: gateway, SDK bot, Celery worker, tournament, Prometheus.

Everything runs as its own process on loopback ports, as in production: the gateway
(``python -m arena.server``), a bot from the Python SDK, a prefork Celery worker (the
``arena worker`` code path), the tournament scheduler (``arena tournament run --executor
celery --metrics-port``), and Prometheus scraping all three under the job names the
dashboards and alerts use (``gateway``, ``worker``, ``tournament``).  A match with the
remote bot is played in the gateway and followed with ``arena watch``; a small tournament
is played on the worker.  Then the metrics must be in Prometheus and every query of every
dashboard panel must return data.
"""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from obs_support import (
    REPO,
    Prometheus,
    free_port,
    http_get,
    redis_server,
    stop_process,
    wait_for,
)
from test_obs_prometheus import dashboard_queries, grafana_to_promql, variable_queries

TOKEN = "organiser-live-token"
BOT = "alpha"
TOURNAMENT = "live-cup"
#: Participant names: ratings are published under these.
PARTICIPANTS = ("greedy", "random", "greedy-2")
#: Two duplicate sets of three players: every seat permutation once per set.
PLANNED = 2 * 6

#: ``arena tournament run`` returns once the tournament is over, and its gauges
#: (progress, ratings) leave with the process: the final values would be scraped only by
#: luck.  The command runs unchanged through ``arena.cli.main``; afterwards the process
#: keeps serving its metrics until it is terminated.

@dataclass
class Stack:
    prometheus: Prometheus
    gateway_target: str
    match_id: str
    watch_rc: int
    watch_output: str
    tournament_matches: int
    sprt_matches: int = 0


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), str(REPO / "sdk" / "python"), str(Path(__file__).parent)]
    )
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def _organiser(target: str, token: str = TOKEN) -> tuple[Any, Any, Any]:
    from thousand_bot.proto.thousand.v1 import organiser_pb2_grpc

    channel = grpc.insecure_channel(target)
    stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
    return channel, stub, (("authorization", f"Bearer {token}"),)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    from thousand_bot.proto.thousand.v1 import organiser_pb2

    from arena.observability.watch import watch
    from arena.tournament.store import ResultStore

    work = tmp_path_factory.mktemp("live")
    shutil.copy(REPO / "deploy" / "prometheus" / "alerts.yml", work / "alerts.yml")
    grpc_port, gateway_metrics, worker_metrics = free_port(), free_port(), free_port()
    tournament_metrics, sprt_metrics = free_port(), free_port()
    target = f"127.0.0.1:{grpc_port}"
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Any] = []

    def spawn(name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = (work / f"{name}.log").open("wb")
        logs.append(log)
        proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
        procs.append(proc)
        return proc

    def log_tail(name: str) -> str:
        return (work / f"{name}.log").read_text(errors="replace")[-3000:]

    server: Prometheus | None = None
    with redis_server() as broker:
        try:
            env = _env(ARENA_BROKER_URL=broker)
            spawn(
                "gateway",
                [
                    sys.executable, "-m", "arena.server", "--host", "127.0.0.1",
                    "--port", str(grpc_port), "--metrics-port", str(gateway_metrics),
                    "--db", str(work / "gateway.sqlite3"), "--organiser-token", TOKEN,
                    "--log-level", "WARNING",
                ],
                env,
            )  # fmt: skip
            spawn(
                "worker",
                [
                    sys.executable, "-c",
                    "import sys; from workers.app import worker_main; "
                    "sys.exit(worker_main(sys.argv[1:]))",
                    "--broker", broker, "--pool", "prefork", "--concurrency", "2",
                    "--metrics-port", str(worker_metrics), "--metrics-addr", "127.0.0.1",
                    "--hostname", "live@%h", "--loglevel", "INFO",
                ],
                _env(ARENA_BROKER_URL=broker, PROMETHEUS_MULTIPROC_DIR=str(work / "multiproc")),
            )  # fmt: skip
            for name, port in (("gateway", gateway_metrics), ("worker", worker_metrics)):
                wait_for(
                    functools.partial(http_get, f"http://127.0.0.1:{port}/metrics"),
                    timeout=60,
                    what=f"{name} metrics endpoint: {log_tail(name)}",
                )
            server = Prometheus(
                textwrap.dedent(
                    f"""
                    global:
                      scrape_interval: 1s
                      scrape_timeout: 1s
                      evaluation_interval: 1s
                    rule_files: [alerts.yml]
                    scrape_configs:
                      - job_name: gateway
                        static_configs: [{{targets: ["127.0.0.1:{gateway_metrics}"]}}]
                      - job_name: worker
                        static_configs: [{{targets: ["127.0.0.1:{worker_metrics}"]}}]
                      - job_name: tournament
                        static_configs: [{{targets: ["127.0.0.1:{tournament_metrics}",
                                                     "127.0.0.1:{sprt_metrics}"]}}]
                    """
                ),
                work,
            )

            # The organiser registers a bot; someone also tries a wrong token.
            channel, stub, auth = _organiser(target)
            wait_for(
                lambda: (
                    stub.ListBots(organiser_pb2.ListBotsRequest(), metadata=auth, timeout=5)
                    is not None
                ),
                timeout=60,
                what=f"gateway gRPC: {log_tail('gateway')}",
            )
            bot_token = stub.RegisterBot(
                organiser_pb2.RegisterBotRequest(name=BOT), metadata=auth, timeout=10
            ).token
            with pytest.raises(grpc.RpcError):
                stub.ListBots(
                    organiser_pb2.ListBotsRequest(),
                    metadata=(("authorization", "Bearer wrong-token"),),
                    timeout=5,
                )
            spawn(
                "bot",
                [
                    sys.executable, "-m", "thousand_bot.cli", "run",
                    "thousand_bot.examples:Greedy", "--server", target,
                    "--log-level", "WARNING",
                ],
                _env(THOUSAND_BOT_TOKEN=bot_token),
            )  # fmt: skip

            def bot_connected() -> bool:
                bots = stub.ListBots(organiser_pb2.ListBotsRequest(), metadata=auth, timeout=5)
                return any(b.name == BOT and b.instances >= 1 for b in bots.bots)

            wait_for(bot_connected, timeout=60, what=f"SDK bot connected: {log_tail('bot')}")

            # A match in the gateway with the remote bot, followed with arena watch.
            started = stub.StartMatch(
                organiser_pb2.StartMatchRequest(
                    preset="classic",
                    bots=[f"remote:{BOT}", "random", "greedy"],
                    max_deals=3,
                ),
                metadata=auth,
                timeout=10,
            )
            out = io.StringIO()
            watch_rc = watch(target, started.match_id, None, TOKEN, out=out)
            channel.close()

            # A small tournament on the Celery worker, scheduled by the real command.
            spec_file = work / f"{TOURNAMENT}.json"
            results = f"sqlite:///{work / 'results.sqlite3'}"
            spec_file.write_text(
                json.dumps(
                    {
                        "name": TOURNAMENT,
                        "seed": "live-seed",
                        "rules": "classic",
                        "participants": [
                            "greedy", "random", {"name": "greedy-2", "bot": "greedy"},
                        ],
                        "format": "duplicate",
                        "sets": 2,
                        "max_deals": 3,
                    }
                )
            )  # fmt: skip
            spawn(
                "tournament",
                [
                    sys.executable, "-m", "arena.cli",
                    "tournament", "run", str(spec_file), "--executor", "celery",
                    "--broker", broker, "--db", results, "--quiet",
                    "--metrics-port", str(tournament_metrics), "--metrics-linger", "inf",
                ],
                _env(ARENA_BROKER_URL=broker),
            )  # fmt: skip
            wait_for(
                lambda: "serving metrics" in log_tail("tournament"),
                timeout=120,
                what=f"the tournament to end: {log_tail('tournament')}",
            )
            with ResultStore(results) as store:
                played = store.count(TOURNAMENT)
            # An SPRT match too, for the dashboards' LLR panel (short games decide quickly).
            sprt_file = work / "live-sprt.json"
            sprt_file.write_text(
                json.dumps(
                    {
                        "name": "live-sprt", "seed": "live-sprt", "rules": "classic",
                        "participants": [
                            "greedy", "random", {"name": "sparring", "bot": "random"},
                        ],
                        "format": {"type": "sprt", "candidate": "greedy",
                                   "baseline": "random", "elo0": 0, "elo1": 100},
                        "sets": 32,
                        "max_deals": 2,
                    }
                )
            )  # fmt: skip
            spawn(
                "sprt",
                [
                    sys.executable, "-m", "arena.cli",
                    "tournament", "run", str(sprt_file), "--executor", "celery",
                    "--broker", broker, "--db", results, "--quiet",
                    "--metrics-port", str(sprt_metrics), "--metrics-linger", "inf",
                ],
                _env(ARENA_BROKER_URL=broker),
            )  # fmt: skip
            wait_for(
                lambda: "serving metrics" in log_tail("sprt"),
                timeout=180,
                what=f"the SPRT match to end: {log_tail('sprt')}",
            )
            with ResultStore(results) as store:
                sprt_played = store.count("live-sprt")

            # Let Prometheus take a few scrapes of the final state; the worker samples the
            # queue every few seconds, so its last sample may predate the end of the run.
            # Prometheus starts scraping only some seconds after it starts, which a quick
            # run can beat: rate() needs at least two samples of each target in its window.
            jobs = 'job=~"gateway|worker|tournament"'
            first = time.time()
            wait_for(
                lambda: (
                    server is not None
                    and server.query(f"min(timestamp(up{{{jobs}}})) > {first + 3}")
                    and server.query(f"min(count_over_time(up{{{jobs}}}[1m])) >= 3")
                    and server.query('arena_queue_depth{job="worker",queue="arena"} == 0')
                    and server.query(
                        'min(count_over_time(arena_rating{job="tournament"}[1m])) >= 2'
                    )
                    and server.query('count_over_time(arena_sprt_llr{job="tournament"}[1m]) >= 2')
                ),
                timeout=60,
                what="scrapes after the tournament, queue sampled empty, ratings scraped",
            )
            yield Stack(server, target, started.match_id, watch_rc, out.getvalue(), played,
                        sprt_played)
        finally:
            if server is not None:
                server.close()
            for proc in reversed(procs):
                stop_process(proc, timeout=30)
            for log in logs:
                log.close()


def value(stack: Stack, expr: str) -> float:
    result = stack.prometheus.query(expr)
    assert result, f"no data for {expr}"
    return float(result[0]["value"][1])


def test_watch_follows_the_gateway_match(stack: Stack) -> None:
    assert stack.watch_rc == 0, stack.watch_output
    lines = stack.watch_output.splitlines()
    assert lines[0] == f"match starts: 0=remote:{BOT}, 1=random, 2=greedy"
    assert any(line.startswith("talon shown: ") for line in lines)
    assert not any(line.endswith(" event)") for line in lines), "an event kind went unshown"
    assert lines[-1].startswith("match over: ")


def test_gateway_metrics_reach_prometheus(stack: Stack) -> None:
    assert value(stack, f'arena_bot_instances{{job="gateway",bot="{BOT}"}}') == 1
    assert value(stack, 'sum(arena_gateway_auth_failures_total{job="gateway"})') >= 1
    assert (
        value(
            stack,
            'sum(grpc_server_handled_total{job="gateway",grpc_method="RegisterBot",'
            'grpc_code="OK"})',
        )
        == 1
    )
    # The bot's connection is a stream that is still open.
    assert (
        value(
            stack,
            'sum(grpc_server_started_total{job="gateway",grpc_type="bidi_stream"})'
            ' - sum(grpc_server_handled_total{job="gateway",grpc_type="bidi_stream"} or vector(0))',
        )
        >= 1
    )
    assert value(stack, 'sum(arena_matches_finished_total{job="gateway"})') == 1
    assert value(stack, f'sum(arena_decisions_total{{job="gateway",bot="{BOT}"}})') > 0


def test_worker_metrics_reach_prometheus(stack: Stack) -> None:
    finished = value(stack, 'sum(arena_matches_finished_total{job="worker"})')
    assert finished >= 1
    assert finished == stack.tournament_matches + stack.sprt_matches
    durations = value(stack, 'sum(arena_match_duration_seconds_count{job="worker"})')
    assert durations == finished
    assert value(stack, 'sum(arena_matches_running{job="worker"})') == 0
    assert value(stack, 'sum(arena_deals_total{job="worker"})') >= finished
    assert value(stack, 'sum(arena_decisions_total{job="worker",bot="greedy"})') > 0
    assert value(stack, 'sum(arena_decision_latency_seconds_count{job="worker"})') > 0
    assert value(stack, 'arena_queue_depth{job="worker",queue="arena"}') == 0


def test_tournament_metrics_reach_prometheus(stack: Stack) -> None:
    assert stack.tournament_matches == PLANNED
    sel = f'job="tournament",tournament="{TOURNAMENT}"'
    assert value(stack, 'up{job="tournament"}') == 1
    assert value(stack, f"arena_tournament_matches{{{sel}}}") == PLANNED
    assert value(stack, f"arena_tournament_matches_done{{{sel}}}") == PLANNED
    ratings = stack.prometheus.query(f"arena_rating{{{sel}}}")
    assert sorted(r["metric"]["bot"] for r in ratings) == sorted(PARTICIPANTS)
    # Scraped more than once, so the ratings and progress panels draw a line.
    assert value(stack, f"min(count_over_time(arena_rating{{{sel}}}[5m]))") >= 2


def test_sprt_and_rating_intervals_reach_prometheus(stack: Stack) -> None:
    sel = 'job="tournament",tournament="live-sprt"'
    llr = value(stack, f"arena_sprt_llr{{{sel}}}")
    upper = value(stack, f'arena_sprt_llr_bound{{{sel},bound="upper"}}')
    lower = value(stack, f'arena_sprt_llr_bound{{{sel},bound="lower"}}')
    assert lower < 0 < upper
    assert llr >= upper or llr <= lower or stack.sprt_matches == 32 * 6
    sel = f'job="tournament",tournament="{TOURNAMENT}"'
    for bot in PARTICIPANTS:
        low = value(stack, f'arena_rating_ci_low{{{sel},bot="{bot}"}}')
        high = value(stack, f'arena_rating_ci_high{{{sel},bot="{bot}"}}')
        rating = value(stack, f'arena_rating{{{sel},bot="{bot}"}}')
        assert low <= rating <= high
    # Decisions are labelled by participant: the two greedy participants stay apart.
    bots = {r["metric"]["bot"] for r in stack.prometheus.query(
        'sum by (bot) (arena_decisions_total{job="worker"})')}
    assert {"greedy", "greedy-2", "sparring"} <= bots


def test_every_dashboard_query_has_data_from_the_real_stack(stack: Stack) -> None:
    empty = []
    queries = dashboard_queries()
    for board, title, expr in queries:
        if not stack.prometheus.query(grafana_to_promql(expr)):
            empty.append(f"{board} / {title}: {expr}")
    assert len(queries) > 30
    assert not empty, "\n".join(empty)


def test_every_dashboard_variable_has_values_from_the_real_stack(stack: Stack) -> None:
    for board, name, metric, label in variable_queries():
        result = stack.prometheus.query(f"count by ({label}) ({metric})")
        assert {r["metric"].get(label) for r in result} - {None}, f"{board}: ${name} is empty"


def _panel_query(title: str) -> str:
    (expr,) = [e for _, t, e in dashboard_queries() if t == title]
    return grafana_to_promql(expr)


def test_counters_of_events_that_did_not_happen_show_zero(stack: Stack) -> None:
    """Nothing retried and no bot forfeited: the panels say 0 rather than "No data"."""
    retries = stack.prometheus.query(_panel_query("Task retries per second, by task"))
    assert [(r["metric"], r["value"][1]) for r in retries] == [({"task": "none"}, "0")]
    forfeits = stack.prometheus.query(_panel_query("Forfeits in range, by bot"))
    bots = stack.prometheus.query("count by (bot) (arena_decisions_total)")
    assert {r["metric"]["bot"] for r in forfeits} == {r["metric"]["bot"] for r in bots}
    assert {r["value"][1] for r in forfeits} == {"0"}


def test_no_process_alert_fires(stack: Stack) -> None:
    alerts = stack.prometheus.api("alerts")["alerts"]
    firing = {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}
    assert not firing, json.dumps(alerts, indent=1)
