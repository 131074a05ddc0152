"""A minimal grpc.aio ping-pong with the gateway's own messages: the yardstick of its cost.

The gateway's benchmark compares itself with the least a gRPC decision can cost in Python:
a server that sends ready-made ``DecisionRequest`` messages (taken from real matches, so
the bytes are the same size and shape as the gateway's) on a bidirectional ``Play`` stream
and a client that parses each one and answers with its first legal action. There is no
engine, no referee and no routing, so the difference between the two runs is what the
arena itself adds to a decision.

The client runs in its own process (``python -m arena.server.pingpong client ADDRESS N``),
like a bot; the server runs wherever :class:`PingPongServer` is created.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
from thousand_bot.proto.thousand.v1 import bot_pb2

PLAY_METHOD = "/thousand.v1.BotService/Play"


def sample_requests(count: int = 2000, seed: str = "pingpong") -> list[bytes]:
    """Serialized decision requests of real classic matches (first-legal play)."""
    from arena.engine import Game, Rules
    from arena.match.types import DecisionRequest
    from arena.server import convert

    rules = Rules.preset("classic", max_deals=1000)
    out: list[bytes] = []
    game_no = 0
    while len(out) < count:
        game = Game(rules, seed=f"{seed}/{game_no}")
        game_no += 1
        while not game.is_over and len(out) < count:
            if game.is_chance:
                game.deal()
                continue
            seat = game.to_act
            assert seat is not None
            legal = game.legal_actions()
            texts = tuple(a.text for a in legal)
            request = DecisionRequest(
                match_id=f"m-{game_no:016x}",
                request_id=f"m-{game_no:016x}/{len(out) + 1}",
                seat=seat,
                observation=game.observation(seat),
                legal=texts,
                deadline_ms=1000,
                time_bank_ms=10000,
            )
            message = bot_pb2.PlayResponse(
                decision_request=convert.decision_request_to_proto(request)
            )
            out.append(message.SerializeToString())
            choice = next((a for a in legal if a.text != "concede"), legal[0])
            game.apply(choice)
    return out


class PingPongServer:
    """Serves ``Play``: keeps ``in_flight`` requests outstanding on every stream."""

    def __init__(self, requests: Sequence[bytes], in_flight: int) -> None:
        self.requests = list(requests)
        self.in_flight = max(1, in_flight)
        self.answered = 0
        self.streams = 0
        self.counting = False
        self.loop = asyncio.new_event_loop()
        self._going = asyncio.Event()
        self._going.set()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)
        self.address = f"127.0.0.1:{self.port}"

    async def _start(self) -> int:
        self.server = grpc.aio.server()
        handler = grpc.stream_stream_rpc_method_handler(self._play)
        generic = grpc.method_handlers_generic_handler("thousand.v1.BotService", {"Play": handler})
        self.server.add_generic_rpc_handlers((generic,))
        port: int = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        return port

    async def _play(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        pool = self.requests
        sent = 0
        await anext(requests)  # hello
        self.streams += 1
        for _ in range(self.in_flight):
            await context.write(pool[sent % len(pool)])
            sent += 1
        going = self._going
        async for data in requests:
            decision = bot_pb2.PlayRequest.FromString(data)
            if decision.decision.request_id and self.counting:
                self.answered += 1
            if not going.is_set():
                await going.wait()
            await context.write(pool[sent % len(pool)])
            sent += 1

    def pause(self, paused: bool) -> None:
        """Hold the next requests back (the clients fall idle) or let them go again."""
        going = self._going
        self.loop.call_soon_threadsafe(going.clear if paused else going.set)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self.server.stop(0.5), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


async def _client(address: str) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        play = channel.stream_stream(
            PLAY_METHOD,
            request_serializer=bot_pb2.PlayRequest.SerializeToString,
            response_deserializer=bot_pb2.PlayResponse.FromString,
        )
        call = play()
        await call.write(bot_pb2.PlayRequest(hello=bot_pb2.Hello(version="pingpong")))
        async for message in call:
            request = message.decision_request
            legal = request.legal_actions
            action = next((a for a in legal if a != "concede"), legal[0] if legal else "pass")
            await call.write(
                bot_pb2.PlayRequest(
                    decision=bot_pb2.Decision(request_id=request.request_id, action=action)
                )
            )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m arena.server.pingpong client ADDRESS``: answer until the server stops."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "client":
        print("usage: python -m arena.server.pingpong client ADDRESS", file=sys.stderr)
        return 2
    with contextlib.suppress(grpc.aio.AioRpcError, KeyboardInterrupt):
        asyncio.run(_client(args[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
