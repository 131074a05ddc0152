"""Credentials: who may call what, and what a refused caller is told."""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from pathlib import Path

import grpc
import psycopg
import pytest
from thousand_bot.proto.thousand.v1 import bot_pb2, bot_pb2_grpc, organiser_pb2, organiser_pb2_grpc

from arena.rigs.testing import GatewayThread, RawBot
from arena.server.auth import BotRegistry, hash_token


def _refusal(bot: RawBot) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        bot.recv_kind("welcome", timeout=10)
    return info.value


def test_no_token_is_unauthenticated(gateway: GatewayThread) -> None:
    bot = RawBot(gateway.address, None)
    err = _refusal(bot)
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "authorization: Bearer" in (err.details() or "")
    bot.close()


def test_wrong_token_is_unauthenticated(gateway: GatewayThread) -> None:
    gateway.register("alice")
    bot = RawBot(gateway.address, "thb_not-a-real-token")
    err = _refusal(bot)
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "unknown token" in (err.details() or "")
    bot.close()


def test_malformed_authorization_is_unauthenticated(gateway: GatewayThread) -> None:
    with grpc.insecure_channel(gateway.address) as channel:
        stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.ListBots(
                organiser_pb2.ListBotsRequest(),
                metadata=(("authorization", "Basic dXNlcjpwYXNz"),),
            )
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "Bearer" in (info.value.details() or "")


def test_valid_token_is_welcomed(gateway: GatewayThread) -> None:
    token = gateway.register("alice")
    bot = RawBot(gateway.address, token)
    welcome = bot.recv_kind("welcome").welcome
    assert welcome.bot_name == "alice"
    assert welcome.instance_id
    bot.close()


def test_revoked_token_is_refused_and_open_sessions_closed(gateway: GatewayThread) -> None:
    token = gateway.register("alice")
    bot = RawBot(gateway.address, token)
    bot.recv_kind("welcome")
    channel, stub, md = gateway.organiser()
    with channel:
        reply = stub.RevokeToken(organiser_pb2.RevokeTokenRequest(name="alice"), metadata=md)
    assert reply.sessions_closed == 1
    with pytest.raises(grpc.RpcError) as info:
        bot.recv(timeout=10)
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "revoked" in (info.value.details() or "")
    again = RawBot(gateway.address, token)
    err = _refusal(again)
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "revoked" in (err.details() or "")
    bot.close()
    again.close()


def test_rotation_replaces_the_token(gateway: GatewayThread) -> None:
    old = gateway.register("alice")
    channel, stub, md = gateway.organiser()
    with channel:
        new = stub.RotateToken(organiser_pb2.RotateTokenRequest(name="alice"), metadata=md).token
    assert new and new != old
    stale = RawBot(gateway.address, old)
    err = _refusal(stale)
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "replaced" in (err.details() or "")
    fresh = RawBot(gateway.address, new)
    assert fresh.recv_kind("welcome").welcome.bot_name == "alice"
    stale.close()
    fresh.close()


def test_bot_token_cannot_use_the_organiser_service(gateway: GatewayThread) -> None:
    token = gateway.register("alice")
    with grpc.insecure_channel(gateway.address) as channel:
        stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
        md = (("authorization", f"Bearer {token}"),)
        with pytest.raises(grpc.RpcError) as info:
            stub.RegisterBot(organiser_pb2.RegisterBotRequest(name="mallory"), metadata=md)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.RpcError) as info:
            list(stub.WatchMatch(organiser_pb2.WatchMatchRequest(match_id="x"), metadata=md))
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_organiser_token_cannot_play(gateway: GatewayThread) -> None:
    bot = RawBot(gateway.address, gateway.organiser_token)
    err = _refusal(bot)
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    bot.close()


def test_organiser_calls_need_the_organiser_token(gateway: GatewayThread) -> None:
    with grpc.insecure_channel(gateway.address) as channel:
        stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.ListBots(organiser_pb2.ListBotsRequest())
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_registry_keeps_only_the_token_hash(gateway: GatewayThread, tmp_path: Path) -> None:
    token = gateway.register("alice")
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("gateway.sqlite3*"))
    assert token.encode() not in raw
    with sqlite3.connect(tmp_path / "gateway.sqlite3") as db:
        (stored,) = db.execute("SELECT token_sha256 FROM bots WHERE name = 'alice'").fetchone()
    assert stored == hash_token(token)


def test_registration_errors(gateway: GatewayThread) -> None:
    gateway.register("alice")
    channel, stub, md = gateway.organiser()
    with channel:
        with pytest.raises(grpc.RpcError) as info:
            stub.RegisterBot(organiser_pb2.RegisterBotRequest(name="alice"), metadata=md)
        assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
        with pytest.raises(grpc.RpcError) as info:
            stub.RegisterBot(organiser_pb2.RegisterBotRequest(name="no spaces"), metadata=md)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as info:
            stub.RevokeToken(organiser_pb2.RevokeTokenRequest(name="nobody"), metadata=md)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        bots = stub.ListBots(organiser_pb2.ListBotsRequest(), metadata=md).bots
    assert [(b.name, b.token_active) for b in bots] == [("alice", True)]


def test_list_bots_counts_instances(gateway: GatewayThread) -> None:
    token = gateway.register("alice")
    bots = [RawBot(gateway.address, token, bot_pb2.Hello(version="1.2")) for _ in range(2)]
    for b in bots:
        b.recv_kind("welcome")
    channel, stub, md = gateway.organiser()
    with channel:
        (info,) = stub.ListBots(organiser_pb2.ListBotsRequest(), metadata=md).bots
    assert info.instances == 2
    assert info.version == "1.2"
    for b in bots:
        b.close()


def test_hello_must_come_first_and_match_the_token(gateway: GatewayThread) -> None:
    token = gateway.register("alice")
    wrong_name = RawBot(gateway.address, token, bot_pb2.Hello(name="bob"))
    err = _refusal(wrong_name)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "bob" in (err.details() or "") and "alice" in (err.details() or "")
    no_hello = RawBot(gateway.address, token, send_hello=False)
    no_hello.decide("r1", "pass")
    err = _refusal(no_hello)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "hello" in (err.details() or "")
    wrong_name.close()
    no_hello.close()


def test_the_gateway_can_be_reached_by_the_generated_stub(gateway: GatewayThread) -> None:
    """The typed stub (not only raw bytes) works end to end."""
    token = gateway.register("alice")
    with grpc.insecure_channel(gateway.address) as channel:
        stub = bot_pb2_grpc.BotServiceStub(channel)
        call = stub.Play(
            iter([bot_pb2.PlayRequest(hello=bot_pb2.Hello())]),
            metadata=(("authorization", f"Bearer {token}"),),
        )
        first = next(call)
        call.cancel()
    assert first.welcome.bot_name == "alice"


def test_gateways_started_together_on_a_new_postgresql_registry_all_open_it() -> None:
    """Gateways of several machines often start at once: "CREATE ... IF NOT EXISTS" of the
    registry's schema and tables then races, and the loser sees a duplicate. Each one tries
    again and opens the registry; none stops with a traceback."""
    base = os.environ.get("ARENA_TEST_PG", "postgresql://127.0.0.1:5432/test")
    try:
        psycopg.connect(base, connect_timeout=5).close()
    except psycopg.Error as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"PostgreSQL not reachable at {base}: {exc}")
    for _ in range(3):  # a race: each round gives it another chance to happen
        schema = f"registry_{uuid.uuid4().hex[:10]}"
        start = threading.Barrier(6)
        opened: list[BotRegistry] = []
        failed: list[BaseException] = []

        def open_it(url: str = f"{base}?schema={schema}", start: threading.Barrier = start,
                    opened: list[BotRegistry] = opened,
                    failed: list[BaseException] = failed) -> None:
            start.wait()
            try:
                opened.append(BotRegistry(url))
            except BaseException as exc:
                failed.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        try:
            assert not failed and len(opened) == 6, failed
        finally:
            for registry in opened:
                registry.close()
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
