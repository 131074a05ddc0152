"""Standard gRPC services and transport limits of the gateway."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from thousand_bot.proto.thousand.v1 import bot_pb2, organiser_pb2

from arena.rigs.testing import GatewayThread, RawBot


@pytest.mark.parametrize("service", ["", "thousand.v1.BotService", "thousand.v1.OrganiserService"])
def test_health_reports_serving(gateway: GatewayThread, service: str) -> None:
    with grpc.insecure_channel(gateway.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_health_of_unknown_service_is_not_found(gateway: GatewayThread) -> None:
    with grpc.insecure_channel(gateway.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.Check(health_pb2.HealthCheckRequest(service="nope.Service"), timeout=10)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_reflection_lists_the_services(gateway: GatewayThread) -> None:
    with grpc.insecure_channel(gateway.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        (reply,) = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
        names = {s.name for s in reply.list_services_response.service}
        assert {
            "thousand.v1.BotService",
            "thousand.v1.OrganiserService",
            "grpc.health.v1.Health",
            "grpc.reflection.v1alpha.ServerReflection",
        } <= names
        # A tool can fetch the schema of the bot service from the running server.
        request = reflection_pb2.ServerReflectionRequest(
            file_containing_symbol="thousand.v1.BotService"
        )
        (reply,) = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
    assert reply.file_descriptor_response.file_descriptor_proto


def test_oversized_message_is_resource_exhausted(tmp_path: Path) -> None:
    gw = GatewayThread(str(tmp_path / "g.sqlite3"), max_message_bytes=64 * 1024)
    try:
        token = gw.register("alice")
        bot = RawBot(gw.address, token)
        bot.recv_kind("welcome")
        bot.send(
            bot_pb2.PlayRequest(
                decision=bot_pb2.Decision(request_id="r", action="x" * (128 * 1024))
            )
        )
        with pytest.raises(grpc.RpcError) as info:
            bot.recv_kind("never", timeout=10)
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        bot.close()
        channel, stub, md = gw.organiser()
        with channel, pytest.raises(grpc.RpcError) as info:
            stub.RegisterBot(organiser_pb2.RegisterBotRequest(name="b" * (100 * 1024)), metadata=md)
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        gw.close()


def test_metrics_count_refused_calls(gateway: GatewayThread) -> None:
    from prometheus_client import REGISTRY

    def failures() -> float:
        value = REGISTRY.get_sample_value(
            "arena_gateway_auth_failures_total", {"reason": "missing_token"}
        )
        return value or 0.0

    before = failures()
    bot = RawBot(gateway.address, None)
    with pytest.raises(grpc.RpcError):
        bot.recv_kind("welcome", timeout=10)
    bot.close()
    assert failures() == before + 1


def test_metrics_count_connected_instances(gateway: GatewayThread) -> None:
    from prometheus_client import REGISTRY

    def instances() -> float:
        return REGISTRY.get_sample_value("arena_bot_instances", {"bot": "gauge-bot"}) or 0.0

    token = gateway.register("gauge-bot")
    bots = [RawBot(gateway.address, token) for _ in range(2)]
    for b in bots:
        b.recv_kind("welcome")
    assert instances() == 2
    bots[0].close()
    deadline = time.monotonic() + 10
    while instances() != 1:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    bots[1].close()
