"""The two loops of a bot's ``Play`` stream: one reads what the bot sends, one writes what
the gateway has for it.

They run once per message of every decision of every match a gateway carries, so they live
apart from the service (``arena.server.services``), in a module that is compiled
(``arena.compiled``); the service only starts them, as two tasks per stream, so that a bot
that stops reading blocks only its own writer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Final, Protocol

import grpc
from google.protobuf.message import DecodeError
from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.server.hub import BotHub, Connection, Outgoing
from arena.server.limits import REQUEST_ID_MAX, too_long

log = logging.getLogger("arena.server.services")


class Watch(Protocol):
    """What the reader needs of the token watch (``arena.server.auth.TokenWatch``)."""

    def check(self, *, fresh: bool = False) -> int: ...


class Writable(Protocol):
    """What the writer needs of the stream's context (a ``grpc.aio.ServicerContext``)."""

    async def write(self, message: Any) -> None: ...


class Readable(Protocol):
    """What the reader needs of the stream's context (a ``grpc.aio.ServicerContext``)."""

    async def read(self) -> Any: ...


#: What ``read`` returns once the bot has closed its side of the stream.
_EOF: Final = grpc.aio.EOF


async def write_stream(conn: Connection, context: Writable, welcome: bot_pb2.PlayResponse) -> None:
    """Write the welcome, then everything the connection's outbox holds, in order; a
    decision request's clock starts as it goes out (the bot's time runs from there).

    The stream has no serializer (the gateway registers ``Play`` without one): decision
    requests are bytes already, and the few messages that are not (the welcome, events,
    errors) are serialised here."""
    try:
        await context.write(welcome.SerializeToString())
        outbox = conn.outbox
        while True:
            item = await outbox.get()
            if item is None:
                break
            message: bytes
            if isinstance(item, Outgoing):
                item.clock.start()
                message = item.message
            else:
                message = item.SerializeToString()
            conn.writing_since = time.monotonic()
            await context.write(message)
            conn.writing_since = 0.0
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the stream broke: the session ends
        log.debug("stream of %s ended while writing: %r", conn.instance_id, exc)
    conn.end(None)


async def read_stream(hub: BotHub, watch: Watch, conn: Connection, stream: Readable) -> None:
    """Judge every message the bot sends after its hello: decisions go to the hub, and
    anything else is refused, until the stream ends or the bot has been refused too often.

    Read with ``context.read`` rather than through gRPC's request iterator, an async
    generator around the same call: one resumption less for every message."""
    read = stream.read
    try:
        while True:
            message = await read()
            if message is _EOF:
                break
            kind = message.WhichOneof("message")
            if kind == "decision":
                decision = message.decision
                watch.check()  # a revoked token's decisions do not count
                if conn.closed:
                    break
                problem = too_long("decision.request_id", decision.request_id, REQUEST_ID_MAX)
                error: bot_pb2.Error | None
                if problem is not None:
                    error = bot_pb2.Error(
                        request_id=decision.request_id[:REQUEST_ID_MAX],
                        code=bot_pb2.ERROR_CODE_UNKNOWN_REQUEST,
                        reason=problem,
                    )
                else:
                    error = hub.answer(conn, decision)
                if error is None:
                    continue
                if error.code == bot_pb2.ERROR_CODE_UNKNOWN_REQUEST and not conn.refuse():
                    break
                conn.send(bot_pb2.PlayResponse(error=error))
                continue
            if not conn.refuse():
                break
            reason = (
                "hello was already received on this stream"
                if kind == "hello"
                else "empty message: set hello or decision"
            )
            conn.send(
                bot_pb2.PlayResponse(
                    error=bot_pb2.Error(code=bot_pb2.ERROR_CODE_PROTOCOL, reason=reason)
                )
            )
    except asyncio.CancelledError:
        raise
    except DecodeError:
        conn.end(
            grpc.StatusCode.INVALID_ARGUMENT,
            "a message could not be read as a PlayRequest; the stream is closed",
            "corrupt",
        )
        return
    except Exception as exc:  # the stream broke: the session ends, matches go on
        log.debug("stream of %s ended: %r", conn.instance_id, exc)
        conn.end(None)
        return
    conn.outbox.put_nowait(None)  # the bot is done sending: flush what is left, then end
