"""The gRPC gateway that remote bots connect to (see docs/protocol.md).

The gateway process itself is :mod:`arena.server.app`; this package imports nothing, so
that the modules a bot program's or a hosted seat uses (the hub, the limits) come without
the whole gateway.
"""
