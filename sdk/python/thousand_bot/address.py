"""Gateway addresses: ``HOST:PORT``, read one way by the SDK and every ``arena`` command.

gRPC takes a bare ``HOST:PORT`` target; a URL such as ``http://localhost:50051`` reaches
it as a host name and fails with "Misformatted domain name", which tells a newcomer
nothing. The mistakes a person makes are recognised here and answered with the fix.
"""

from __future__ import annotations

import re

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: gRPC's own target forms (``unix:/run/gw.sock``, ``dns:///host:port``...), passed as they are.
_GRPC_TARGETS = ("dns:", "unix:", "unix-abstract:", "ipv4:", "ipv6:", "vsock:")


def gateway_problem(address: str) -> str | None:
    """Why ``address`` is not a ``HOST:PORT`` gateway address, or None when it is one.

    Several addresses separated by commas are each checked (the SDK moves from one to the
    next)."""
    parts = [p.strip() for p in address.split(",")]
    if not address.strip() or not all(parts):
        return f"--gateway {address!r}: give HOST:PORT, e.g. localhost:50051"
    for part in parts:
        if part.startswith(_GRPC_TARGETS):
            continue
        scheme = _SCHEME.match(part)
        if scheme:
            bare = part[scheme.end():].rstrip("/")
            return (f"--gateway {part!r}: give HOST:PORT without a scheme: drop "
                    f"'{scheme.group(0)}' ({bare or 'localhost:50051'})")
        host, sep, port = part.rpartition(":")
        if not sep:
            return f"--gateway {part!r}: give the port too, HOST:PORT (e.g. {part}:50051)"
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            return f"--gateway {part!r}: expected HOST:PORT, e.g. localhost:50051"
    return None
