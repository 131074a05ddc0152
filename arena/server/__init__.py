"""The gRPC gateway that remote bots connect to (see docs/protocol.md)."""

from arena.server.app import Gateway, main_serve, serve
from arena.server.hub import BotHub, RemoteSeat

__all__ = ["BotHub", "Gateway", "RemoteSeat", "main_serve", "serve"]
