"""The hub tells listeners when a bot's instances come and go, and forgets routed matches.

Redis routing pumps a bot's request list only while the bot is connected; these hooks are
what it follows. Real gateway on a loopback port, bare protocol clients.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from thousand_bot.proto.thousand.v1 import bot_pb2, organiser_pb2

from arena.rigs.testing import GatewayThread, RawBot


def connect(gw: GatewayThread, token: str, **hello: object) -> RawBot:
    bot = RawBot(gw.address, token, bot_pb2.Hello(**hello))  # type: ignore[arg-type]
    bot.recv_kind("welcome")
    return bot


def wait_for(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_listeners_see_instances_come_and_go(gateway: GatewayThread) -> None:
    seen: list[tuple[str, int]] = []

    async def listen() -> None:
        gateway.gateway.hub.instance_listeners.append(lambda bot, n: seen.append((bot, n)))

    gateway.call(listen())
    token = gateway.register("alice")
    first = connect(gateway, token)
    second = connect(gateway, token)
    assert seen == [("alice", 1), ("alice", 2)]
    assert gateway.gateway.hub.connected_bots() == ["alice"]
    first.close()
    wait_for(lambda: len(seen) == 3)
    assert seen[-1] == ("alice", 1)

    # A revoked token closes the last session: the count drops to zero, once.
    channel, stub, md = gateway.organiser()
    with channel:
        stub.RevokeToken(organiser_pb2.RevokeTokenRequest(name="alice"), metadata=md)
    wait_for(lambda: seen[-1] == ("alice", 0))
    time.sleep(0.2)
    assert seen.count(("alice", 0)) == 1
    assert gateway.gateway.hub.connected_bots() == []
    second.close()


def test_forget_frees_a_routed_match_only_if_it_did_not_start_again(
    gateway: GatewayThread,
) -> None:
    bot = connect(gateway, gateway.register("bob"), max_concurrent_matches=1)
    hub = gateway.gateway.hub
    start: dict[str, Any] = {"type": "match_start", "rules": {}}
    end: dict[str, Any] = {"type": "match_end", "scores": [0, 0, 0]}

    async def play(events: list[dict[str, Any]]) -> None:
        for event in events:
            hub.event("bob", "m1", event)

    gateway.call(play([start]))
    conn = hub._connections["bob"][0]
    assert conn.matches == {"m1"}
    gateway.call(play([end]))
    assert conn.matches == set()  # the end of a match frees its place at once

    async def forget(if_last: dict[str, Any] | None) -> None:
        hub.forget("bob", "m1", if_last=if_last)

    # The same match id starts again before a delayed forget runs: the forget is skipped.
    gateway.call(play([start]))
    gateway.call(forget(end))
    assert conn.matches == {"m1"}
    gateway.call(forget(None))
    assert conn.matches == set() and ("bob", "m1") not in hub._told
    bot.close()
