"""Whole matches run by the gateway between bots connected over gRPC."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from thousand_bot import BotClient
from thousand_bot.examples import Greedy, Random
from thousand_bot.proto.thousand.v1 import bot_pb2, organiser_pb2

from arena.engine import Game, Rules
from arena.rigs.testing import GatewayThread, RawBot

#: The engine's own view of a seat, taken at import: the replay below relies on it alone.
OBSERVE = Game.observation
CARD = re.compile(r"(?<![A-Za-z0-9])([789JQKTA][CSHD])(?![A-Za-z0-9])")


def start(gw: GatewayThread, bots: list[str], seed: str = "s", **kw: Any) -> str:
    channel, stub, md = gw.organiser()
    kw.setdefault("public_seed", bool(seed))  # these tests replay the deals from the seed
    with channel:
        request = organiser_pb2.StartMatchRequest(seed=seed, bots=bots, **kw)
        return str(stub.StartMatch(request, metadata=md).match_id)


def watch(gw: GatewayThread, match_id: str) -> list[Any]:
    channel, stub, md = gw.organiser()
    with channel:
        replies = stub.WatchMatch(
            organiser_pb2.WatchMatchRequest(match_id=match_id), metadata=md, timeout=120
        )
        return [r.event for r in replies]


def test_a_full_match_between_remote_bots(
    gateway: GatewayThread, connect_bots: Callable[..., dict[str, BotClient]]
) -> None:
    clients = connect_bots(Greedy, "ann", "ben", "cat")
    match_id = start(gateway, ["ann", "ben", "remote:cat"], seed="full", max_deals=12)
    events = watch(gateway, match_id)
    assert events[0].type == "match_start"
    assert list(events[0].match_start.bots) == ["remote:ann", "remote:ben", "remote:cat"]
    assert [e.sequence for e in events] == list(range(len(events)))
    end = events[-1]
    assert end.type == "match_end" and end.match_end.status == "completed"
    assert sum(e.type == "deal_end" for e in events) == 12
    result = gateway.gateway.matches.result(match_id)
    assert result is not None and result.status == "completed"
    assert all(s.strikes == 0 and s.decisions > 0 for s in result.seat_stats)
    assert sum(c.decisions for c in clients.values()) == sum(s.decisions for s in result.seat_stats)


def test_remote_and_built_in_bots_play_together(
    gateway: GatewayThread, connect_bots: Callable[..., dict[str, BotClient]]
) -> None:
    connect_bots(Random, "ann")
    match_id = start(gateway, ["random", "ann", "greedy"], seed="mixed", max_deals=4)
    events = watch(gateway, match_id)
    assert events[-1].match_end.status == "completed"
    assert sum(e.type == "deal_end" for e in events) == 4


def test_one_connection_plays_many_matches_at_once(
    gateway: GatewayThread, connect_bots: Callable[..., dict[str, BotClient]]
) -> None:
    clients = connect_bots(Random, "ann", "ben", "cat")
    ids = [start(gateway, ["ann", "ben", "cat"], seed=f"many/{i}", max_deals=3) for i in range(8)]
    for match_id in ids:
        assert watch(gateway, match_id)[-1].match_end.status == "completed"
    assert all(c.sessions == 1 for c in clients.values())


def test_a_bot_seated_twice_is_told_each_event_once(gateway: GatewayThread) -> None:
    token = gateway.register("twin")
    bot = RawBot(gateway.address, token, answer=lambda r: r.legal_actions[0])
    bot.recv_kind("welcome")
    match_id = start(gateway, ["twin", "twin", "greedy"], seed="twin", max_deals=2)
    watched = watch(gateway, match_id)
    received = []
    while not received or received[-1].type != "match_end":
        received.append(bot.recv_kind("event").event)
    assert [e.detail_json for e in received] == [e.detail_json for e in watched]
    bot.close()


def test_start_match_errors(gateway: GatewayThread) -> None:
    gateway.register("ann")
    channel, stub, md = gateway.organiser()
    cases = [
        (dict(seed="s", bots=["ann", "ghost", "random"]), grpc.StatusCode.INVALID_ARGUMENT),
        (dict(seed="s", bots=["ann", "remote:ghost", "random"]), grpc.StatusCode.NOT_FOUND),
        (dict(seed="s", bots=["ann", "random"]), grpc.StatusCode.INVALID_ARGUMENT),
        # A given seed with a remote bot seated needs public_seed.
        (dict(seed="s", bots=["ann", "random", "greedy"]), grpc.StatusCode.INVALID_ARGUMENT),
        (
            dict(seed="s", bots=["ann", "random", "greedy"], preset="no-such-preset"),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            dict(seed="s", bots=["ann", "random", "greedy"], options_json="{not json"),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            dict(seed="s", bots=["ann", "random", "greedy"], options_json='{"no_such": 1}'),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
    ]
    with channel:
        for kwargs, code in cases:
            with pytest.raises(grpc.RpcError) as info:
                stub.StartMatch(organiser_pb2.StartMatchRequest(**kwargs), metadata=md)
            assert info.value.code() == code, (kwargs, info.value.details())
            assert info.value.details()
        with pytest.raises(grpc.RpcError) as info:
            list(stub.WatchMatch(organiser_pb2.WatchMatchRequest(match_id="nope"), metadata=md))
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
    # The same match id cannot be used twice.
    start(gateway, ["random", "random", "greedy"], match_id="fixed", max_deals=1)
    with pytest.raises(grpc.RpcError) as info:
        start(gateway, ["random", "random", "greedy"], match_id="fixed", max_deals=1)
    assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS


def test_a_late_spectator_sees_the_match_from_its_start(gateway: GatewayThread) -> None:
    match_id = start(gateway, ["random", "greedy", "random"], seed="late", max_deals=2)
    first = watch(gateway, match_id)
    again = watch(gateway, match_id)
    assert [e.SerializeToString() for e in first] == [e.SerializeToString() for e in again]
    assert first[0].type == "match_start" and first[-1].type == "match_end"


# --- hidden cards -------------------------------------------------------------------------


def _choose(hand: list[str], legal: list[str]) -> str:
    """A deterministic policy both the bots and the test's own replay can compute."""
    digest = hashlib.sha256(("|".join(hand) + "/" + "|".join(legal)).encode()).digest()
    return legal[digest[0] % len(legal)]


def _strings(message: Any) -> list[str]:
    """Every string inside a message, nested messages included."""
    out: list[str] = []
    for field, value in message.ListFields():
        values = value if field.is_repeated else [value]
        for v in values:
            if field.type == field.TYPE_MESSAGE:
                out.extend(_strings(v))
            elif field.type == field.TYPE_STRING:
                out.append(v)
    return out


def _cards(data: bytes) -> set[str]:
    message = bot_pb2.PlayResponse.FromString(data)
    return {c for text in _strings(message) for c in CARD.findall(text)}


def _deal_of(message: bot_pb2.PlayResponse, current: int) -> int:
    if message.HasField("decision_request"):
        return message.decision_request.observation.deal
    if message.HasField("event") and message.event.type == "deal_start":
        return message.event.deal_start.deal
    return current


def test_no_seat_ever_receives_another_seats_hidden_cards(gateway: GatewayThread) -> None:
    """Replays the match in the test and checks every byte each seat received.

    A card is hidden from a seat while it is in another seat's hand (or discarded by
    another seat) and has been neither in the seat's own observation nor in a public event
    of the deal. Every decision request must be free of the cards hidden at that moment;
    every message of a deal must be free of the cards that stay hidden all deal long.
    """
    names = ["north", "east", "west"]
    bots = [
        RawBot(
            gateway.address,
            gateway.register(n),
            answer=lambda r: _choose(list(r.observation.hand), list(r.legal_actions)),
        )
        for n in names
    ]
    for b in bots:
        b.recv_kind("welcome")
    seed = "secret-seed-9f3a"
    match_id = start(gateway, names, seed=seed, max_deals=8)
    events = watch(gateway, match_id)
    assert events[-1].match_end.status == "completed"

    # Replay in the test: same rules, same seed, same deterministic answers.
    game = Game(Rules.preset("classic", max_deals=8), seed=seed)
    n = 3
    hidden_at: list[list[set[str]]] = [[] for _ in range(n)]  # per seat, per request
    forever: list[dict[int, set[str]]] = [{} for _ in range(n)]
    unseen: dict[int, set[str]] = {}  # per deal: cards no spectator may ever see
    seen: list[set[str]] = [set() for _ in range(n)]
    held: list[set[str]] = [set() for _ in range(n)]
    deal = -1

    def public_cards() -> set[str]:
        text = json.dumps([e for e in game.events if e.get("deal", deal) == deal])
        return set(CARD.findall(text))

    def close_deal() -> None:
        if deal >= 0:
            for s in range(n):
                forever[s][deal] = held[s] - seen[s] - public_cards()
            shown_to_all = set.intersection(*seen)  # e.g. a talon turned face up
            unseen[deal] = set().union(*held) - public_cards() - shown_to_all

    while not game.is_over:
        if game.is_chance:
            close_deal()
            game.deal()
            deal = game.deal_index - 1
            seen = [set() for _ in range(n)]
            held = [set() for _ in range(n)]
            continue
        obs = [OBSERVE(game, s) for s in range(n)]
        for s in range(n):
            seen[s] |= set(CARD.findall(json.dumps(obs[s])))
            others = set()
            for o in range(n):
                if o != s:
                    others |= set(obs[o]["hand"]) | set(obs[o].get("discarded", []))
            held[s] |= others
        seat = game.to_act
        assert seat is not None
        others = set()
        for o in range(n):
            if o != seat:
                others |= set(obs[o]["hand"]) | set(obs[o].get("discarded", []))
        hidden_at[seat].append(others - seen[seat] - public_cards())
        legal = [str(a) for a in game.legal_actions()]
        game.apply(_choose(obs[seat]["hand"], legal))
    close_deal()

    checked_requests = 0
    for s, bot in enumerate(bots):
        current = 0
        requests = 0
        for data in bot.raw:
            message = bot_pb2.PlayResponse.FromString(data)
            current = _deal_of(message, current)
            cards = _cards(data)
            assert seed.encode() not in data
            assert not cards & forever[s].get(current, set()), (names[s], current, message)
            if message.HasField("decision_request"):
                leaked = cards & hidden_at[s][requests]
                assert not leaked, (names[s], requests, leaked)
                requests += 1
        assert requests == len(hidden_at[s])
        checked_requests += requests
    assert checked_requests > 50
    # Spectators get the public events only.
    current = 0
    for event in events:
        if event.type == "deal_start":
            current = event.deal_start.deal
        assert not _cards(bot_pb2.PlayResponse(event=event).SerializeToString()) & unseen.get(
            current, set()
        )
    assert any(forever[s][d] for s in range(n) for d in forever[s])  # the check had teeth
    for b in bots:
        b.close()


def test_a_bot_may_ask_for_no_events(gateway: GatewayThread) -> None:
    token = gateway.register("quiet")
    bot = RawBot(
        gateway.address,
        token,
        bot_pb2.Hello(omit_events=True),
        answer=lambda r: r.legal_actions[0],
    )
    bot.recv_kind("welcome")
    match_id = start(gateway, ["quiet", "greedy", "random"], seed="quiet", max_deals=2)
    assert watch(gateway, match_id)[-1].match_end.status == "completed"
    got = [bot_pb2.PlayResponse.FromString(raw) for raw in bot.raw]
    assert {m.WhichOneof("message") for m in got} == {"welcome", "decision_request", "event"}
    # Of the events, the start and the end alone: which match, and how it ended.
    assert [m.event.type for m in got if m.HasField("event")] == ["match_start", "match_end"]
    bot.close()
