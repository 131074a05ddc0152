"""A gateway on a background thread, and a bare protocol client, for tests and benchmarks.

Both are real: the gateway listens on a loopback port and the client talks gRPC to it over
that socket. The client keeps the raw bytes of every message it receives so a test can
check exactly what crossed the wire.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import grpc
from thousand_bot.proto.thousand.v1 import bot_pb2, organiser_pb2, organiser_pb2_grpc

from arena.server.app import Gateway

T = TypeVar("T")

PLAY_METHOD = "/thousand.v1.BotService/Play"


class GatewayThread:
    """Runs a :class:`Gateway` in its own event loop on a daemon thread."""

    def __init__(self, db_path: str, organiser_token: str = "organiser-secret", **kw: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.organiser_token = organiser_token

        async def make() -> Gateway:
            return Gateway(db_path=db_path, organiser_token=organiser_token, **kw)

        self.gateway = self.call(make())
        self.port = self.call(self.gateway.start())
        self.address = f"127.0.0.1:{self.port}"
        self._closed = False

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run a coroutine on the gateway's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start a coroutine on the gateway's loop without waiting."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def organiser(self) -> tuple[grpc.Channel, organiser_pb2_grpc.OrganiserServiceStub, Any]:
        """A channel, an organiser stub and the metadata that authorises it."""
        channel = grpc.insecure_channel(self.address)
        metadata = (("authorization", f"Bearer {self.organiser_token}"),)
        return channel, organiser_pb2_grpc.OrganiserServiceStub(channel), metadata

    def register(self, name: str) -> str:
        channel, stub, metadata = self.organiser()
        with channel:
            reply = stub.RegisterBot(organiser_pb2.RegisterBotRequest(name=name), metadata=metadata)
        return str(reply.token)

    def close(self, grace_s: float = 5.0) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.call(self.gateway.stop(grace_s), timeout=grace_s + 30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


class RawBot:
    """A minimal bot client speaking the protocol by hand (no SDK), keeping raw bytes."""

    def __init__(
        self,
        address: str,
        token: str | None,
        hello: bot_pb2.Hello | None = None,
        send_hello: bool = True,
        answer: Callable[[bot_pb2.DecisionRequest], str] | None = None,
    ) -> None:
        """``answer``, when given, replies to every decision request at once from the
        reading thread (the requests are still queued for the test to see)."""
        self.answer = answer
        self.channel = grpc.insecure_channel(address)
        self._outgoing: queue.Queue[bytes | None] = queue.Queue()
        metadata = [("authorization", f"Bearer {token}")] if token is not None else []
        play = self.channel.stream_stream(PLAY_METHOD)  # raw bytes both ways
        self.call = play(self._requests(), metadata=metadata)
        self.raw: list[bytes] = []
        self.messages: queue.Queue[bot_pb2.PlayResponse | BaseException] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if send_hello:
            self.send(bot_pb2.PlayRequest(hello=hello or bot_pb2.Hello(version="raw")))

    def _requests(self) -> Iterator[bytes]:
        while True:
            item = self._outgoing.get()
            if item is None:
                return
            yield item

    def _read(self) -> None:
        try:
            for data in self.call:
                self.raw.append(data)
                message = bot_pb2.PlayResponse.FromString(data)
                if self.answer is not None and message.HasField("decision_request"):
                    request = message.decision_request
                    self.decide(request.request_id, self.answer(request))
                self.messages.put(message)
        except grpc.RpcError as exc:
            self.messages.put(exc)
        else:
            self.messages.put(EOFError("stream closed"))

    def send(self, message: bot_pb2.PlayRequest) -> None:
        self.send_bytes(message.SerializeToString())

    def send_bytes(self, data: bytes) -> None:
        self._outgoing.put(data)

    def decide(self, request_id: str, action: str) -> None:
        self.send(
            bot_pb2.PlayRequest(decision=bot_pb2.Decision(request_id=request_id, action=action))
        )

    def recv(self, timeout: float = 30.0) -> bot_pb2.PlayResponse:
        """Next message; raises the stream's error (grpc.RpcError) or EOFError at its end."""
        item = self.messages.get(timeout=timeout)
        if isinstance(item, BaseException):
            raise item
        return item

    def recv_kind(self, kind: str, timeout: float = 30.0) -> bot_pb2.PlayResponse:
        """Next message of one kind (``welcome``, ``decision_request``, ``event``, ``error``),
        skipping others."""
        while True:
            message = self.recv(timeout)
            if message.WhichOneof("message") == kind:
                return message

    def close(self) -> None:
        self._outgoing.put(None)
        self.call.cancel()
        self.channel.close()
