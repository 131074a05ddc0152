"""A minimal grpc.aio ping-pong with the gateway's own messages: the yardstick of its cost.

The gateway's benchmark compares itself with the least a gRPC decision can cost in Python:
a server that sends ready-made ``DecisionRequest`` messages (taken from real matches, so
the bytes are the same size and shape as the gateway's) on a bidirectional ``Play`` stream
and a client that parses each one and answers with its first legal action. There is no
engine, no referee and no routing, so the difference between the two runs is what the
arena itself adds to a decision.

The clients run in their own processes (``python -m arena.bench.pingpong client ADDRESS``),
like bots, and so does the server (``python -m arena.bench.pingpong server IN_FLIGHT``,
driven by :class:`PingPongProcess`), like a gateway. The server must not share a process
with another grpc.aio event loop: grpc.aio polls one completion queue per process and hands
events for any other loop over through ``call_soon_threadsafe``, which made a ping-pong
served beside the benchmark's gateway cost a quarter more than one served alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
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
    from arena.engine.turns import turns
    from arena.match.types import DecisionRequest
    from arena.server import convert

    rules = Rules.preset("classic", max_deals=1000)
    out: list[bytes] = []
    game_no = 0
    while len(out) < count:
        game = Game(rules, seed=f"{seed}/{game_no}")
        game_no += 1
        for seat, legal in turns(game):
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
            if len(out) == count:
                break
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
            if decision.decision.request_id:
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


def _serve(in_flight: int) -> int:
    """The server process: commands on stdin, one answer line each on stdout.

    ``streams`` and ``count`` print the clients connected and the decisions answered so
    far; ``pause`` and ``go`` hold the next requests back or let them go. End of input
    stops the server."""
    server = PingPongServer(sample_requests(), in_flight)
    print(f"listening {server.port}", flush=True)
    try:
        for line in sys.stdin:
            command = line.strip()
            if command == "streams":
                print(server.streams, flush=True)
            elif command == "count":
                print(server.answered, flush=True)
            elif command in ("pause", "go"):
                server.pause(command == "pause")
                print("ok", flush=True)
            else:
                print(f"unknown command {command!r}", flush=True)
    finally:
        server.close()
    return 0


class PingPongProcess:
    """A ping-pong server in a process of its own, driven over its standard input."""

    def __init__(self, in_flight: int, timeout_s: float = 60.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "arena.bench.pingpong", "server", str(in_flight)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        self.pid = self.proc.pid
        first = self._line(timeout_s)
        if not first.startswith("listening "):
            self.close()
            raise RuntimeError(f"the ping-pong server did not start: {first!r}")
        self.address = f"127.0.0.1:{int(first.split()[1])}"

    def _line(self, timeout_s: float = 30.0) -> str:
        out = self.proc.stdout
        assert out is not None
        result: list[str] = []
        reader = threading.Thread(target=lambda: result.append(out.readline()), daemon=True)
        reader.start()
        reader.join(timeout_s)
        if not result or not result[0]:
            raise RuntimeError("the ping-pong server stopped answering")
        return result[0].strip()

    def ask(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._line()

    @property
    def streams(self) -> int:
        return int(self.ask("streams"))

    @property
    def answered(self) -> int:
        return int(self.ask("count"))

    def pause(self, paused: bool) -> None:
        self.ask("pause" if paused else "go")

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


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
    """``python -m arena.bench.pingpong client ADDRESS``: answer until the server stops;
    ``python -m arena.bench.pingpong server IN_FLIGHT``: serve (see :func:`_serve`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 2 and args[0] == "server" and args[1].isdigit():
        return _serve(int(args[1]))
    if len(args) != 2 or args[0] != "client":
        print("usage: python -m arena.bench.pingpong client ADDRESS | server IN_FLIGHT",
              file=sys.stderr)
        return 2
    with contextlib.suppress(grpc.aio.AioRpcError, KeyboardInterrupt):
        asyncio.run(_client(args[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
