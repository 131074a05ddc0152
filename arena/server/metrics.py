"""The gateway's own gauges and counters (the gRPC server metrics come from
:mod:`arena.observability.grpc_metrics`).

The metric objects are defined once in :mod:`arena.observability.metrics`; this module only
decides when they move. Decision outcomes (ok, timeout, illegal, malformed) are counted by
the referee, which alone sees timeouts, so they are not counted here twice.
"""

from __future__ import annotations

from arena.observability import metrics as m


class GatewayMetrics:
    """Counters and gauges the gateway moves outside the gRPC interceptor."""

    def instance_connected(self, bot: str) -> None:
        m.BOT_INSTANCES.labels(bot=bot).inc()

    def instance_disconnected(self, bot: str) -> None:
        m.BOT_INSTANCES.labels(bot=bot).dec()

    def auth_failure(self, reason: str) -> None:
        m.GATEWAY_AUTH_FAILURES_TOTAL.labels(reason=reason).inc()

    def stream_cut(self, reason: str) -> None:
        m.GATEWAY_STREAMS_CUT_TOTAL.labels(reason=reason).inc()
