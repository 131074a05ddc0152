"""The gRPC metrics interceptor on a real grpc.aio server over loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio
import pytest
from prometheus_client import REGISTRY

from arena.observability.grpc_metrics import MetricsInterceptor, rpc_type, split_method

SERVICE = "test.obs.Probe"


async def ok(request: bytes, context: Any) -> bytes:
    return request


async def crash(request: bytes, context: Any) -> bytes:
    raise RuntimeError("handler bug")


async def deny(request: bytes, context: Any) -> bytes:
    await context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad token")
    raise AssertionError("abort returned")


async def not_found(request: bytes, context: Any) -> bytes:
    context.set_code(grpc.StatusCode.NOT_FOUND)
    return b""


async def countdown(request: bytes, context: Any) -> AsyncIterator[bytes]:
    for _ in range(3):
        yield request


async def writer(request: bytes, context: Any) -> None:
    await context.write(request)
    await context.write(request)


async def echo(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
    async for message in requests:
        yield message


async def total(requests: AsyncIterator[bytes], context: Any) -> bytes:
    return b"".join([m async for m in requests])


async def slow(request: bytes, context: Any) -> bytes:
    await asyncio.sleep(30)
    return request


def handled(method: str, kind: str, code: str) -> float:
    value = REGISTRY.get_sample_value(
        "grpc_server_handled_total",
        {"grpc_type": kind, "grpc_service": SERVICE, "grpc_method": method, "grpc_code": code},
    )
    return value or 0.0


def started(method: str, kind: str) -> float:
    value = REGISTRY.get_sample_value(
        "grpc_server_started_total",
        {"grpc_type": kind, "grpc_service": SERVICE, "grpc_method": method},
    )
    return value or 0.0


def handling_count(method: str, kind: str) -> float:
    value = REGISTRY.get_sample_value(
        "grpc_server_handling_seconds_count",
        {"grpc_type": kind, "grpc_service": SERVICE, "grpc_method": method},
    )
    return value or 0.0


async def exercise() -> None:
    server = grpc.aio.server(interceptors=[MetricsInterceptor()])
    handlers = {
        "Ok": grpc.unary_unary_rpc_method_handler(ok),
        "Crash": grpc.unary_unary_rpc_method_handler(crash),
        "Deny": grpc.unary_unary_rpc_method_handler(deny),
        "NotFound": grpc.unary_unary_rpc_method_handler(not_found),
        "Countdown": grpc.unary_stream_rpc_method_handler(countdown),
        "Writer": grpc.unary_stream_rpc_method_handler(writer),
        "Echo": grpc.stream_stream_rpc_method_handler(echo),
        "Total": grpc.stream_unary_rpc_method_handler(total),
        "Slow": grpc.unary_unary_rpc_method_handler(slow),
    }
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(SERVICE, handlers)])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            assert await channel.unary_unary(f"/{SERVICE}/Ok")(b"a") == b"a"
            for method, code in (
                ("Crash", grpc.StatusCode.UNKNOWN),
                ("Deny", grpc.StatusCode.UNAUTHENTICATED),
                ("NotFound", grpc.StatusCode.NOT_FOUND),
            ):
                with pytest.raises(grpc.aio.AioRpcError) as info:
                    await channel.unary_unary(f"/{SERVICE}/{method}")(b"a")
                assert info.value.code() == code
            assert [m async for m in channel.unary_stream(f"/{SERVICE}/Countdown")(b"c")] == [
                b"c"
            ] * 3
            assert [m async for m in channel.unary_stream(f"/{SERVICE}/Writer")(b"w")] == [b"w"] * 2

            async def two() -> AsyncIterator[bytes]:
                yield b"x"
                yield b"y"

            assert [m async for m in channel.stream_stream(f"/{SERVICE}/Echo")(two())] == [
                b"x",
                b"y",
            ]
            assert await channel.stream_unary(f"/{SERVICE}/Total")(two()) == b"xy"
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await channel.unary_unary(f"/{SERVICE}/Slow")(b"s", timeout=0.3)
            assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            call = channel.unary_unary(f"/{SERVICE}/Slow")(b"s")
            await asyncio.sleep(0.3)
            call.cancel()
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await channel.unary_unary(f"/{SERVICE}/Missing")(b"a")
            assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
            # The server learns of the cancellation asynchronously.
            for _ in range(100):
                if handled("Slow", "unary", "Canceled"):
                    break
                await asyncio.sleep(0.05)
    finally:
        await server.stop(None)


def test_interceptor_counts_every_kind_of_rpc_with_its_status() -> None:
    asyncio.run(exercise())
    assert handled("Ok", "unary", "OK") == 1
    assert handled("Crash", "unary", "Unknown") == 1
    assert handled("Deny", "unary", "Unauthenticated") == 1
    assert handled("NotFound", "unary", "NotFound") == 1
    assert handled("Countdown", "server_stream", "OK") == 1
    assert handled("Writer", "server_stream", "OK") == 1
    assert handled("Echo", "bidi_stream", "OK") == 1
    assert handled("Total", "client_stream", "OK") == 1
    assert handled("Slow", "unary", "DeadlineExceeded") == 1
    assert handled("Slow", "unary", "Canceled") == 1
    assert started("Slow", "unary") == 2
    assert handling_count("Echo", "bidi_stream") == 1
    # Unknown methods create no series.
    assert started("Missing", "unary") == 0


def test_method_names_and_types() -> None:
    assert split_method("/thousand.v1.BotService/Connect") == ("thousand.v1.BotService", "Connect")
    assert split_method("garbage") == ("unknown", "garbage")
    handler = grpc.stream_stream_rpc_method_handler(echo)
    assert rpc_type(handler) == "bidi_stream"
    assert rpc_type(grpc.unary_unary_rpc_method_handler(ok)) == "unary"
