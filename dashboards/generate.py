"""Write the arena's Grafana dashboards (``dashboards/*.json``) from one description.

Dashboards are kept as code so that every panel uses the same datasource uid, the same
variables and a consistent layout; the JSON files are committed because Grafana provisions
them as they are.  Run ``python dashboards/generate.py`` after editing this file (a test
fails when the JSON is out of date).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATASOURCE = {"type": "prometheus", "uid": "prometheus"}
TAG = "thousand-arena"

JSON = dict[str, Any]


@dataclass
class Query:
    expr: str
    legend: str = ""
    instant: bool = False


@dataclass
class Panel:
    title: str
    description: str
    queries: list[Query]
    kind: str = "timeseries"
    unit: str = "short"
    width: int = 12
    height: int = 8
    min: float | None = None
    max: float | None = None
    decimals: int | None = None
    stacked: bool = False
    thresholds: list[tuple[float | None, str]] = field(default_factory=list)
    mappings: list[JSON] = field(default_factory=list)


def _thresholds(steps: list[tuple[float | None, str]]) -> JSON:
    steps = steps or [(None, "green")]
    return {
        "mode": "absolute",
        "steps": [{"color": color, "value": value} for value, color in steps],
    }


def _panel_json(panel: Panel, panel_id: int, x: int, y: int) -> JSON:
    defaults: JSON = {
        "unit": panel.unit,
        "thresholds": _thresholds(panel.thresholds),
        "mappings": panel.mappings,
        "color": {
            "mode": "thresholds" if panel.kind in ("stat", "bargauge") else "palette-classic"
        },
    }
    for key in ("min", "max", "decimals"):
        value = getattr(panel, key)
        if value is not None:
            defaults[key] = value
    options: JSON
    if panel.kind == "timeseries":
        defaults["custom"] = {
            "drawStyle": "line",
            "lineWidth": 1,
            "fillOpacity": 20 if panel.stacked else 10,
            "showPoints": "never",
            "spanNulls": False,
            "stacking": {"mode": "normal" if panel.stacked else "none", "group": "A"},
        }
        options = {
            "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
    elif panel.kind == "stat":
        options = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "value",
            "graphMode": "area",
            "justifyMode": "auto",
            "orientation": "auto",
            "textMode": "auto",
        }
    elif panel.kind == "bargauge":
        options = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "displayMode": "gradient",
            "orientation": "horizontal",
            "showUnfilled": True,
        }
    elif panel.kind == "table":
        options = {"showHeader": True, "cellHeight": "sm"}
    else:
        raise ValueError(f"unknown panel kind {panel.kind!r}")
    targets = []
    for index, query in enumerate(panel.queries):
        target: JSON = {
            "datasource": DATASOURCE,
            "refId": chr(ord("A") + index),
            "expr": query.expr,
            "legendFormat": query.legend or "__auto",
            "range": not query.instant,
            "instant": query.instant,
        }
        if panel.kind == "table":
            target["format"] = "table"
        targets.append(target)
    out: JSON = {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": {"h": panel.height, "w": panel.width, "x": x, "y": y},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": options,
        "targets": targets,
    }
    if panel.kind == "table":
        out["transformations"] = [
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {"excludeByName": {"Time": True}}},
        ]
    return out


def _variable(name: str, label: str, metric: str, label_name: str) -> JSON:
    definition = f"label_values({metric}, {label_name})"
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": definition,
        "query": {"query": definition, "refId": f"{name}-values"},
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "options": [],
        "sort": 1,
        "hide": 0,
    }


def dashboard(
    uid: str, title: str, description: str, panels: list[Panel], variables: list[JSON]
) -> JSON:
    """Lay panels out left to right, wrapping at Grafana's 24 columns."""
    laid: list[JSON] = []
    x = y = row_height = 0
    for panel_id, panel in enumerate(panels, start=1):
        if x + panel.width > 24:
            x, y, row_height = 0, y + row_height, 0
        laid.append(_panel_json(panel, panel_id, x, y))
        x += panel.width
        row_height = max(row_height, panel.height)
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": [TAG],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": False,
        "graphTooltip": 1,
        "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "annotations": {"list": []},
        "links": [
            {
                "type": "dashboards",
                "tags": [TAG],
                "asDropdown": True,
                "title": "Arena dashboards",
                "includeVars": False,
                "keepTime": True,
            }
        ],
        "templating": {"list": variables},
        "panels": laid,
    }


RATE = "$__rate_interval"


def or_zero(expr: str, label: str, value: str = "none") -> str:
    """``expr``, or a single 0 series labelled ``label="none"`` when ``expr`` has no series.

    Counters such as task retries or refused connections only exist once the first one
    happens; a healthy arena may never have any.  Without the fallback such a panel says
    "No data", which reads as broken scraping rather than as "nothing went wrong".
    """
    return f'{expr} or on() label_replace(vector(0), "{label}", "{value}", "", "")'


def or_zero_by(expr: str, by: str, universe: str) -> str:
    """``expr``, plus 0 for each ``by`` value of ``universe`` that ``expr`` lacks.

    Used for per-bot counts of rare events (strikes, forfeits, timeouts): every bot that
    made decisions shows a 0 instead of being missing from the panel.
    """
    return f"{expr} or on ({by}) ({universe} * 0)"


UP_MAPPING = [
    {
        "type": "value",
        "options": {
            "0": {"text": "DOWN", "color": "red", "index": 0},
            "1": {"text": "UP", "color": "green", "index": 1},
        },
    }
]


@dataclass(frozen=True)
class Board:
    """One dashboard: what Grafana names it, what it is for, the function that lists its
    panels and the variable (if any) that filters them."""

    uid: str
    title: str
    description: str
    panels: Callable[[], list[Panel]]
    variables: tuple[JSON, ...]


#: Every dashboard, in the order the files are written; each panel function joins it by
#: :func:`board`, beside its own panels.
DASHBOARDS: list[Board] = []


def board(
    uid: str, title: str, description: str, *variables: JSON
) -> Callable[[Callable[[], list[Panel]]], Callable[[], list[Panel]]]:
    def join(panels: Callable[[], list[Panel]]) -> Callable[[], list[Panel]]:
        DASHBOARDS.append(Board(uid, title, description, panels, variables))
        return panels

    return join


def up_panels(workers: str, width: int) -> list[Panel]:
    """The two stats that say whether the arena's processes are up (workers, described by
    ``workers``; the gateway), which the overview and the workers' dashboard both open with."""
    return [
        Panel(
            "Workers up",
            workers,
            [Query('sum(up{job="worker"})')],
            kind="stat",
            width=width,
            height=5,
            thresholds=[(None, "red"), (1, "green")],
        ),
        Panel(
            "Gateway",
            "Whether the gateway answered its last scrape.",
            [Query('min(up{job="gateway"})')],
            kind="stat",
            width=width,
            height=5,
            thresholds=[(None, "red"), (1, "green")],
            mappings=UP_MAPPING,
        ),
    ]


@board(
    "arena-overview",
    "Arena overview",
    "What the arena is doing now: matches, throughput, decisions and connected bots.",
)
def overview() -> list[Panel]:
    panels = [
        Panel(
            "Matches running",
            "Matches being played now, summed over all workers.",
            [Query("sum(arena_matches_running)")],
            kind="stat",
            width=4,
            height=5,
        ),
        Panel(
            "Matches finished (range)",
            "Matches that ended in the selected time range, any status.",
            [Query("sum(increase(arena_matches_finished_total[$__range]))")],
            kind="stat",
            width=4,
            height=5,
            decimals=0,
        ),
        Panel(
            "Bot instances connected",
            "Bot instances connected to the gateway now.",
            [Query("sum(arena_bot_instances)")],
            kind="stat",
            width=4,
            height=5,
        ),
        *up_panels("Workers Prometheus could scrape at its last attempt.", width=4),
        Panel(
            "Alerts firing",
            "Alert rules firing now (see Prometheus at :9090/alerts).",
            [Query('sum(ALERTS{alertstate="firing"}) or vector(0)')],
            kind="stat",
            width=4,
            height=5,
            thresholds=[(None, "green"), (1, "red")],
        ),
        Panel(
            "Matches running",
            "Matches in play over time.",
            [Query("sum(arena_matches_running)", "running")],
        ),
        Panel(
            "Matches finished per second, by status",
            "completed: played to the end; forfeit: a seat reached the strike limit; "
            "aborted: stopped before the end; error: the match could not be played.",
            [Query(f"sum by (status) (rate(arena_matches_finished_total[{RATE}]))", "{{status}}")],
            unit="ops",
            stacked=True,
        ),
        Panel(
            "Deals and games per second",
            "Throughput of the whole arena.",
            [
                Query(f"sum(rate(arena_deals_total[{RATE}]))", "deals/s"),
                Query(f"sum(rate(arena_games_total[{RATE}]))", "games/s"),
            ],
            unit="ops",
        ),
        Panel(
            "Decisions per second, by outcome",
            "ok: a legal reply in time; timeout: deadline and time bank spent; illegal: a legal "
            "form but an illegal action; malformed: an unparseable reply.",
            [Query(f"sum by (outcome) (rate(arena_decisions_total[{RATE}]))", "{{outcome}}")],
            unit="ops",
            stacked=True,
        ),
        Panel(
            "Connected bot instances, by bot",
            "Instances per bot name; one token may run several instances.",
            [Query("sum by (bot) (arena_bot_instances)", "{{bot}}")],
            stacked=True,
        ),
        Panel(
            "Gateway refusals per second, by reason",
            "Connections and calls the gateway refused (bad or missing tokens...).",
            [
                Query(
                    or_zero(
                        f"sum by (reason) (rate(arena_gateway_auth_failures_total[{RATE}]))",
                        "reason",
                    ),
                    "{{reason}}",
                )
            ],
            unit="ops",
        ),
        Panel(
            "Match duration (median and 95th percentile), by status",
            "Wall time of the matches that ended, from the referee: a match of built-in bots "
            "takes a fraction of a second, one of remote bots minutes.",
            [
                Query(
                    "histogram_quantile(0.5, sum by (status, le) "
                    f"(rate(arena_match_duration_seconds_bucket[{RATE}])))",
                    "{{status}} p50",
                ),
                Query(
                    "histogram_quantile(0.95, sum by (status, le) "
                    f"(rate(arena_match_duration_seconds_bucket[{RATE}])))",
                    "{{status}} p95",
                ),
            ],
            unit="s",
            width=24,
        ),
    ]
    return panels


@board(
    "arena-bots",
    "Arena bots",
    "Per-bot health: decision latency, timeouts, illegal moves, strikes and forfeits.",
    _variable("bot", "Bot", "arena_decisions_total", "bot"),
)
def bots() -> list[Panel]:
    sel = 'bot=~"$bot"'
    decision_rate = f"sum by (bot) (rate(arena_decisions_total{{{sel}}}[{RATE}]))"
    decisions_in_range = f"sum by (bot) (increase(arena_decisions_total{{{sel}}}[$__range]))"

    def latency(title: str, quantile: float, description: str) -> Panel:
        expr = (
            f"histogram_quantile({quantile}, sum by (bot, le) "
            f"(rate(arena_decision_latency_seconds_bucket{{{sel}}}[{RATE}])))"
        )
        return Panel(title, description, [Query(expr, "{{bot}}")], unit="s")

    def share(title: str, description: str, outcome: str) -> Panel:
        """The share of each bot's decisions whose outcome matches ``outcome``."""
        count = f"sum by (bot) (rate(arena_decisions_total{{{sel},{outcome}}}[{RATE}]))"
        expr = "(" + or_zero_by(count, "bot", decision_rate) + f") / {decision_rate}"
        return Panel(title, description, [Query(expr, "{{bot}}")], unit="percentunit", min=0)

    def in_range(
        title: str, description: str, metric: str, thresholds: list[tuple[float | None, str]]
    ) -> Panel:
        """Each bot's count of ``metric`` over the selected range, most first."""
        count = f"sum by (bot) (increase({metric}{{{sel}}}[$__range]))"
        expr = "sort_desc(" + or_zero_by(count, "bot", decisions_in_range) + ")"
        return Panel(
            title,
            description,
            [Query(expr, "{{bot}}", instant=True)],
            kind="bargauge",
            width=8,
            decimals=0,
            thresholds=thresholds,
        )

    panels = [
        latency(
            "Decision latency p50, by bot",
            0.5,
            "Median time from a decision request to the bot's reply.",
        ),
        latency(
            "Decision latency p99, by bot",
            0.99,
            "99th percentile of decision latency: close to the deadline means timeouts soon.",
        ),
        Panel(
            "Decisions per second, by bot",
            "How much each bot is asked.",
            [Query(decision_rate, "{{bot}}")],
            unit="ops",
        ),
        share(
            "Timeout share, by bot",
            "Share of decisions that ran out of time (alert above 5%).",
            'outcome="timeout"',
        ),
        share(
            "Illegal or malformed share, by bot",
            "Share of replies that were illegal or unparseable (alert above 1%).",
            'outcome=~"illegal|malformed"',
        ),
        Panel(
            "Timeouts and illegal moves per second, by bot",
            "Bad decisions as a rate, by kind.",
            [
                Query(
                    or_zero_by(
                        "sum by (bot, outcome) (rate(arena_decisions_total"
                        f'{{{sel},outcome!="ok"}}[{RATE}]))',
                        "bot",
                        decision_rate,
                    ),
                    "{{bot}} {{outcome}}",
                )
            ],
            unit="ops",
        ),
        in_range(
            "Strikes in range, by bot",
            "Strikes: decisions answered by the referee's fallback after a timeout or an "
            "illegal reply.",
            "arena_strikes_total",
            [(None, "green"), (1, "orange"), (10, "red")],
        ),
        in_range(
            "Forfeits in range, by bot",
            "Matches lost by reaching the strike limit.",
            "arena_forfeits_total",
            [(None, "green"), (1, "red")],
        ),
        Panel(
            "Instances connected, by bot",
            "Bot instances connected to the gateway now.",
            [Query(f"sum by (bot) (arena_bot_instances{{{sel}}})", "{{bot}}", instant=True)],
            kind="bargauge",
            width=8,
            decimals=0,
        ),
        Panel(
            "Decisions in range, by bot and outcome",
            "Counts over the selected time range.",
            [
                Query(
                    f"sum by (bot, outcome) (increase(arena_decisions_total{{{sel}}}[$__range]))",
                    instant=True,
                )
            ],
            kind="table",
            width=24,
            decimals=0,
        ),
    ]
    return panels


@board(
    "arena-tournaments",
    "Arena tournaments",
    "Tournament progress and ratings.",
    _variable("tournament", "Tournament", "arena_tournament_matches", "tournament"),
)
def tournaments() -> list[Panel]:
    sel = 'tournament=~"$tournament"'
    panels = [
        Panel(
            "Progress",
            "Share of the planned matches that have a stored result (for an SPRT match, of "
            "its maximum; for a league of fixed rounds, of its rounds at the current field; "
            "an open league plans nothing and shows no bar).",
            [
                Query(
                    f"max by (tournament) (arena_tournament_matches_done{{{sel}}})"
                    f" / (max by (tournament) (arena_tournament_matches{{{sel}}}) > 0)",
                    "{{tournament}}",
                    instant=True,
                )
            ],
            kind="bargauge",
            unit="percentunit",
            min=0,
            max=1,
            thresholds=[(None, "blue"), (1, "green")],
        ),
        Panel(
            "Matches done and planned",
            "Matches with a result and matches planned, per tournament.",
            [
                Query(
                    f"max by (tournament) (arena_tournament_matches_done{{{sel}}})",
                    "{{tournament}} done",
                ),
                Query(
                    f"max by (tournament) (arena_tournament_matches{{{sel}}})",
                    "{{tournament}} planned",
                ),
            ],
            decimals=0,
        ),
        Panel(
            "Matches remaining",
            "Planned matches still without a result.",
            [
                Query(
                    f"(max by (tournament) (arena_tournament_matches{{{sel}}}) > 0)"
                    f" - max by (tournament) (arena_tournament_matches_done{{{sel}}})",
                    "{{tournament}}",
                    instant=True,
                )
            ],
            kind="stat",
            width=8,
            decimals=0,
        ),
        Panel(
            "Matches finished per minute",
            "Completion pace of the selected tournaments.",
            [
                Query(
                    "sum by (tournament) (deriv(max by (tournament) "
                    f"(arena_tournament_matches_done{{{sel}}})[{RATE}:])) * 60",
                    "{{tournament}}",
                )
            ],
            width=16,
            min=0,
        ),
        Panel(
            "Ratings over time",
            "Each bot's rating on the Elo scale as the tournament goes on.",
            [Query(f"max by (tournament, bot) (arena_rating{{{sel}}})", "{{tournament}} {{bot}}")],
            width=16,
            height=10,
            decimals=0,
        ),
        Panel(
            "Current ratings",
            "Latest ratings, best first.",
            [
                Query(
                    f"sort_desc(max by (tournament, bot) (arena_rating{{{sel}}}))",
                    "{{tournament}} {{bot}}",
                    instant=True,
                )
            ],
            kind="bargauge",
            width=8,
            height=10,
            decimals=0,
        ),
        Panel(
            "Ratings with 95% intervals",
            "Each participant's rating with the bounds of its 95% interval (bootstrap over "
            "duplicate sets; refreshed after each round and every 30 s during one).",
            [
                Query(
                    f"max by (tournament, bot) (arena_rating{{{sel}}})", "{{tournament}} {{bot}}"
                ),
                Query(
                    f"max by (tournament, bot) (arena_rating_ci_low{{{sel}}})",
                    "{{tournament}} {{bot}} low",
                ),
                Query(
                    f"max by (tournament, bot) (arena_rating_ci_high{{{sel}}})",
                    "{{tournament}} {{bot}} high",
                ),
            ],
            width=16,
            height=10,
            decimals=0,
        ),
        Panel(
            "SPRT log-likelihood ratio",
            "The test of an SPRT match: it accepts H1 (the candidate is stronger) when the LLR "
            "reaches the upper bound and H0 at the lower one.",
            [
                Query(f"max by (tournament) (arena_sprt_llr{{{sel}}})", "{{tournament}} LLR"),
                Query(
                    f"max by (tournament, bound) (arena_sprt_llr_bound{{{sel}}})",
                    "{{tournament}} {{bound}} bound",
                ),
            ],
            width=8,
            height=10,
            decimals=2,
        ),
    ]
    return panels


@board(
    "arena-workers",
    "Arena workers and queues",
    "Workers, queues, retries and the gateway's gRPC traffic.",
)
def workers() -> list[Panel]:
    grpc_handled = "grpc_server_handled_total"
    streams_started = (
        'sum by (grpc_service, grpc_method) (grpc_server_started_total{grpc_type=~".+_stream"})'
    )
    panels = [
        *up_panels("Worker processes (Celery masters) Prometheus could scrape.", width=6),
        Panel(
            "Tasks queued",
            "Tasks waiting in all broker queues.",
            [Query("sum(max by (queue) (arena_queue_depth))")],
            kind="stat",
            width=6,
            height=5,
            thresholds=[(None, "green"), (20, "orange"), (100, "red")],
        ),
        Panel(
            "Matches running",
            "Matches in play on all workers.",
            [Query("sum(arena_matches_running)")],
            kind="stat",
            width=6,
            height=5,
        ),
        Panel(
            "Scrape targets",
            "1 when Prometheus could scrape the target, 0 when not.",
            [Query('up{job=~"gateway|worker|tournament"}', "{{job}} {{instance}}")],
            min=0,
            max=1,
        ),
        Panel(
            "Queue depth, by queue",
            "Tasks waiting per queue, as sampled by the workers (alert when it keeps growing).",
            [Query("max by (queue) (arena_queue_depth)", "{{queue}}")],
        ),
        Panel(
            "Task retries per second, by task",
            "Celery task retries.",
            [
                Query(
                    or_zero(f"sum by (task) (rate(arena_task_retries_total[{RATE}]))", "task"),
                    "{{task}}",
                )
            ],
            unit="ops",
        ),
        Panel(
            "Matches running, by worker",
            "How evenly matches spread over the workers.",
            [
                Query(
                    'sum by (instance) (arena_matches_running{job="worker"})',
                    "{{instance}}",
                )
            ],
            stacked=True,
        ),
        Panel(
            "gRPC calls per second, by method and code",
            "Calls the gateway finished, by status code (Go spelling: OK, Unauthenticated...).",
            [
                Query(
                    f"sum by (grpc_service, grpc_method, grpc_code) (rate({grpc_handled}[{RATE}]))",
                    "{{grpc_method}} {{grpc_code}}",
                )
            ],
            unit="ops",
        ),
        Panel(
            "gRPC unary latency p99, by method",
            "Time the gateway took to answer unary calls.",
            [
                Query(
                    "histogram_quantile(0.99, sum by (grpc_service, grpc_method, le) "
                    f'(rate(grpc_server_handling_seconds_bucket{{grpc_type="unary"}}[{RATE}])))',
                    "{{grpc_method}}",
                )
            ],
            unit="s",
        ),
        Panel(
            "gRPC streams open, by method",
            "Streams started and not yet finished, e.g. bot connections.",
            [
                Query(
                    f"{streams_started} - ("
                    + or_zero_by(
                        "sum by (grpc_service, grpc_method) "
                        f'({grpc_handled}{{grpc_type=~".+_stream"}})',
                        "grpc_service, grpc_method",
                        streams_started,
                    )
                    + ")",
                    "{{grpc_method}}",
                )
            ],
        ),
        Panel(
            "gRPC errors per second, by method and code",
            "Calls that did not end OK.",
            [
                Query(
                    or_zero(
                        "sum by (grpc_method, grpc_code) "
                        f'(rate({grpc_handled}{{grpc_code!="OK"}}[{RATE}]))',
                        "grpc_code",
                    ),
                    "{{grpc_method}} {{grpc_code}}",
                )
            ],
            unit="ops",
        ),
        Panel(
            "Gateway memory",
            "Resident memory of the gateway process.",
            [Query('process_resident_memory_bytes{job="gateway"}', "{{instance}}")],
            unit="bytes",
        ),
        Panel(
            "Gateway CPU",
            "CPU seconds per second used by the gateway process.",
            [Query(f'rate(process_cpu_seconds_total{{job="gateway"}}[{RATE}])', "{{instance}}")],
            unit="percentunit",
        ),
    ]
    return panels


def render() -> dict[str, str]:
    """File name -> JSON text, as committed."""
    return {
        f"{each.uid}.json": json.dumps(
            dashboard(each.uid, each.title, each.description, each.panels(), list(each.variables)),
            indent=2,
        )
        + "\n"
        for each in DASHBOARDS
    }


def main(argv: list[str]) -> int:
    out_dir = Path(argv[1]) if len(argv) > 1 else HERE
    for name, text in render().items():
        (out_dir / name).write_text(text)
        print(f"wrote {out_dir / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
