"""The arena's Prometheus metrics, defined once so every process exports the same names.

Names follow the Prometheus conventions: base units in the name (``_seconds``), counters end
in ``_total``, and label values are small closed sets or names chosen by the operator (bot
and tournament names), never per-match or per-request ids, which would create a series per
match and exhaust Prometheus.

Gauges carry a ``multiprocess_mode`` because Celery prefork workers write their values to
files in ``PROMETHEUS_MULTIPROC_DIR`` and the master merges them on scrape: the mode says
how values from several processes combine (see ``docs/observability.md``).
"""

from __future__ import annotations

import contextlib
from typing import Final

from prometheus_client import Counter, Gauge, Histogram

#: Decision outcomes used as ``arena_decisions_total{outcome}``.
DECISION_OUTCOMES: Final = ("ok", "timeout", "illegal", "malformed", "platform")
#: Final states of a match used as ``arena_matches_finished_total{status}``.
MATCH_STATUSES: Final = ("completed", "forfeit", "aborted", "error")

#: From half a millisecond (an in-process bot) to ten seconds (a slow remote bot spending
#: its time bank); the default decision deadline of one second sits in the middle.
DECISION_LATENCY_BUCKETS: Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
#: A match of built-in bots takes a fraction of a second, one of remote bots minutes.
MATCH_DURATION_BUCKETS: Final = (
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    600.0, 1800.0, 3600.0,
)  # fmt: skip
#: gRPC calls range from a health check (sub-millisecond) to a bot's connection stream that
#: lasts a whole tournament: a decision's buckets (a call often carries one), then long ones
#: that keep those streams apart from the short calls.
GRPC_HANDLING_BUCKETS: Final = (*DECISION_LATENCY_BUCKETS, 30.0, 60.0, 300.0, 900.0, 3600.0)

# --- decisions and bots -------------------------------------------------------------------

DECISIONS_TOTAL: Final = Counter(
    "arena_decisions_total",
    "Decisions requested from bots, by how they ended: ok, timeout (deadline and time bank "
    "spent), illegal (a well-formed but illegal action), malformed (unparseable reply) or "
    "platform (the platform could not carry the request, which was asked again; never "
    "charged to the bot).",
    ["bot", "outcome"],
)
DECISION_LATENCY_SECONDS: Final = Histogram(
    "arena_decision_latency_seconds",
    "Time charged to a bot for a decision: from when its request was written to its stream "
    "until its reply was read or its time ran out.",
    ["bot"],
    buckets=DECISION_LATENCY_BUCKETS,
)
#: From ten microseconds (a healthy gateway) to the platform limit of thirty seconds.
PLATFORM_DELAY_BUCKETS: Final = (
    0.00001, 0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
)  # fmt: skip
PLATFORM_DELAY_SECONDS: Final = Histogram(
    "arena_platform_delay_seconds",
    "Time a decision request spent inside the platform (event loop, gateway queue, Redis) "
    "before the bot could see it, per bot; never charged to the bot.",
    ["bot"],
    buckets=PLATFORM_DELAY_BUCKETS,
)
BOT_INSTANCES: Final = Gauge(
    "arena_bot_instances",
    "Bot instances currently connected to the gateway, per bot name (one token may run "
    "several instances).",
    ["bot"],
    multiprocess_mode="livesum",
)
STRIKES_TOTAL: Final = Counter(
    "arena_strikes_total",
    "Strikes given to a bot: a decision that timed out or was illegal, answered by the "
    "referee's fallback action.",
    ["bot"],
)
FORFEITS_TOTAL: Final = Counter(
    "arena_forfeits_total",
    "Matches a bot forfeited by reaching the strike limit.",
    ["bot"],
)

# --- matches ------------------------------------------------------------------------------

MATCHES_RUNNING: Final = Gauge(
    "arena_matches_running",
    "Matches being played right now in this process (summed over live worker processes).",
    multiprocess_mode="livesum",
)
MATCHES_FINISHED_TOTAL: Final = Counter(
    "arena_matches_finished_total",
    "Matches that ended, by status: completed, forfeit (a seat reached the strike limit), "
    "aborted (stopped before the end) or error.",
    ["status"],
)
MATCH_DURATION_SECONDS: Final = Histogram(
    "arena_match_duration_seconds",
    "Wall time of a match from its first deal to its end, by final status.",
    ["status"],
    buckets=MATCH_DURATION_BUCKETS,
)
DEALS_TOTAL: Final = Counter(
    "arena_deals_total",
    "Deals played to the end (scored) in all matches.",
)
GAMES_TOTAL: Final = Counter(
    "arena_games_total",
    "Games played to the end (a seat reached the target score or the deal limit).",
)

# --- tournaments and queues ---------------------------------------------------------------

QUEUE_DEPTH: Final = Gauge(
    "arena_queue_depth",
    "Tasks waiting in a broker queue, as last sampled.",
    ["queue"],
    multiprocess_mode="livemostrecent",
)
TASK_RETRIES_TOTAL: Final = Counter(
    "arena_task_retries_total",
    "Celery task retries, by task name.",
    ["task"],
)


def _tournament_total(name: str, documentation: str, labels: list[str]) -> Gauge:
    """A tournament's count of matches, which only grows: when the processes' files are
    merged, the largest value written wins (a process that read the store earlier holds a
    smaller one)."""
    return Gauge(name, documentation, labels, multiprocess_mode="max")


def _latest(name: str, documentation: str, labels: list[str]) -> Gauge:
    """A value computed afresh from the stored results (a rating, a test's statistic): the
    one written last wins when the processes' files are merged."""
    return Gauge(name, documentation, labels, multiprocess_mode="mostrecent")


TOURNAMENT_MATCHES: Final = _tournament_total(
    "arena_tournament_matches",
    "Matches planned in a tournament.",
    ["tournament"],
)
TOURNAMENT_MATCHES_DONE: Final = _tournament_total(
    "arena_tournament_matches_done",
    "Matches of a tournament that have a stored result.",
    ["tournament"],
)
RATING: Final = _latest(
    "arena_rating",
    "Current rating of a bot in a tournament, on the Elo scale.",
    ["tournament", "bot"],
)


def _rating_bound(name: str, end: str) -> Gauge:
    """One end of a rating's 95% interval: the two ends are always written together, beside
    :data:`RATING`, so they share its labels and its wording."""
    return _latest(
        name,
        f"{end} bound of the 95% interval of a bot's rating in a tournament (Elo scale).",
        ["tournament", "bot"],
    )


RATING_CI_LOW: Final = _rating_bound("arena_rating_ci_low", "Lower")
RATING_CI_HIGH: Final = _rating_bound("arena_rating_ci_high", "Upper")
SPRT_LLR: Final = _latest(
    "arena_sprt_llr",
    "Log-likelihood ratio of an SPRT match's test, after the duplicate sets that count.",
    ["tournament"],
)
SPRT_LLR_BOUND: Final = _latest(
    "arena_sprt_llr_bound",
    "The SPRT's decision bounds: the test accepts H1 above 'upper' and H0 below 'lower'.",
    ["tournament", "bound"],
)

# --- gateway ------------------------------------------------------------------------------

GATEWAY_AUTH_FAILURES_TOTAL: Final = Counter(
    "arena_gateway_auth_failures_total",
    "Connections or calls the gateway refused, by reason (e.g. missing_token, bad_token, "
    "unknown_bot, too_many_instances).",
    ["reason"],
)
GATEWAY_MATCHES_WAITING: Final = Gauge(
    "arena_gateway_matches_waiting",
    "Matches started on the gateway that wait for a place before their first deal "
    "(admission control holds them while the gateway is saturated).",
    multiprocess_mode="livesum",
)
GATEWAY_MATCH_LIMIT: Final = Gauge(
    "arena_gateway_match_limit",
    "How many matches the gateway plays at once right now (admission control's limit).",
    multiprocess_mode="livemax",
)
EVENT_LOOP_LAG_SECONDS: Final = Histogram(
    "arena_event_loop_lag_seconds",
    "How late the gateway's event loop runs a timer: the delay every callback suffers, the "
    "signal admission control keeps under its target.",
    buckets=(0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)

GATEWAY_STREAMS_CUT_TOTAL: Final = Counter(
    "arena_gateway_streams_cut_total",
    "Bot streams the gateway ended, by reason: revoked (token revoked or replaced), flood "
    "(refusal budget spent), unread (outbox full), stalled (writes not moving), "
    "too_many_streams, bad_hello, corrupt (a message that does not parse).",
    ["reason"],
)

# --- gRPC server (names as in the go-grpc-prometheus convention) --------------------------

GRPC_LABELS: Final = ["grpc_type", "grpc_service", "grpc_method"]

GRPC_SERVER_STARTED_TOTAL: Final = Counter(
    "grpc_server_started_total",
    "RPCs started on the server.",
    GRPC_LABELS,
)
GRPC_SERVER_HANDLED_TOTAL: Final = Counter(
    "grpc_server_handled_total",
    "RPCs completed on the server, regardless of success or failure, by status code.",
    [*GRPC_LABELS, "grpc_code"],
)
GRPC_SERVER_HANDLING_SECONDS: Final = Histogram(
    "grpc_server_handling_seconds",
    "Time from the start of an RPC until the server finished handling it (for a stream, "
    "its whole life).",
    GRPC_LABELS,
    buckets=GRPC_HANDLING_BUCKETS,
)


def record_decision(bot: str, outcome: str, seconds: float) -> None:
    """Count one decision and its latency together, so the two series cannot drift apart.

    An unknown outcome is a programming error rather than bot input, hence ``ValueError``.
    """
    if outcome not in DECISION_OUTCOMES:
        raise ValueError(
            f"unknown decision outcome {outcome!r}; expected one of {', '.join(DECISION_OUTCOMES)}"
        )
    DECISIONS_TOTAL.labels(bot=bot, outcome=outcome).inc()
    DECISION_LATENCY_SECONDS.labels(bot=bot).observe(max(0.0, seconds))


def forget_tournament(tournament: str, bots: list[str] | tuple[str, ...] = ()) -> None:
    """Drop a finished tournament's gauges so an old tournament does not linger on dashboards.

    Missing label sets are ignored: forgetting twice is harmless.
    """
    for gauge in (TOURNAMENT_MATCHES, TOURNAMENT_MATCHES_DONE, SPRT_LLR):
        with contextlib.suppress(KeyError):
            gauge.remove(tournament)
    for bound in ("lower", "upper"):
        with contextlib.suppress(KeyError):
            SPRT_LLR_BOUND.remove(tournament, bound)
    for bot in bots:
        for per_bot in (RATING, RATING_CI_LOW, RATING_CI_HIGH):
            with contextlib.suppress(KeyError):
                per_bot.remove(tournament, bot)
