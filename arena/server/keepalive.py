"""The gRPC keepalive settings of every server the arena runs: the gateway's and a hosted
seat's own. They stand apart from the gateway process (``arena.server.app``), which wires
the hosted bots in, so that a hosted seat takes them without importing the gateway."""

from __future__ import annotations

import os

#: The keepalive settings, one set for the gateway and every client (docs/protocol.md,
#: "Keepalive"; the Python SDK and the Node bot carry the same numbers, and a test checks
#: that they agree).  Both sides ping an idle connection every KEEPALIVE_TIME_MS and drop
#: it when the answer takes longer than KEEPALIVE_TIMEOUT_MS; the gateway accepts a
#: client's ping every MIN_PING_INTERVAL_MS (half the clients' interval, so a late or
#: jittered timer never counts as abuse) and sends GOAWAY after MAX_PING_STRIKES pings
#: that came sooner, which only a misbehaving client does.
KEEPALIVE_TIME_MS = 20_000
KEEPALIVE_TIMEOUT_MS = 10_000
MIN_PING_INTERVAL_MS = 10_000
MAX_PING_STRIKES = 2
#: Scales every keepalive figure above by one interval (tests use a fraction of a second).
KEEPALIVE_ENV = "ARENA_KEEPALIVE_TIME_MS"


def keepalive_options(time_ms: int | None = None) -> list[tuple[str, int]]:
    """gRPC server options for the keepalive settings, scaled to ``time_ms`` (default
    ``$ARENA_KEEPALIVE_TIME_MS`` or KEEPALIVE_TIME_MS) with the same proportions.

    The server's accepted ping rate is ``grpc.http2.min_ping_interval_without_data_ms``
    (C-core names its macro ``..._MIN_RECV_PING_INTERVAL_...``, but the option string
    has no "recv"; a misspelt option is silently ignored and leaves the 5-minute default,
    under which every client ping of an idle stream is a strike). The C core waits for a
    ping's answer for ``grpc.http2.ping_timeout_ms`` (a minute by default) rather than
    ``keepalive_timeout_ms``: both are set, so a bot cut off by the network is dropped
    after 30 s, not 80.
    """
    if time_ms is None:
        raw = os.environ.get(KEEPALIVE_ENV, "")
        time_ms = int(raw) if raw.isdigit() and int(raw) > 0 else KEEPALIVE_TIME_MS
    scale = time_ms / KEEPALIVE_TIME_MS
    min_ping = max(1, round(MIN_PING_INTERVAL_MS * scale))
    return [
        ("grpc.keepalive_time_ms", time_ms),
        ("grpc.keepalive_timeout_ms", max(1, round(KEEPALIVE_TIMEOUT_MS * scale))),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", min_ping),
        ("grpc.http2.max_ping_strikes", MAX_PING_STRIKES),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.http2.ping_timeout_ms", max(1, round(KEEPALIVE_TIMEOUT_MS * scale))),
    ]
