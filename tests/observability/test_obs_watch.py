"""``arena watch`` against a real gRPC server streaming a real engine game's events.

The server implements ``OrganiserService.WatchMatch`` from the generated stubs and encodes
the events with the gateway's own encoder, so the viewer sees exactly the messages the
gateway sends.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import random
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import grpc.aio
import pytest
from obs_support import free_port
from thousand_bot.proto.thousand.v1 import common_pb2, organiser_pb2, organiser_pb2_grpc

from arena.engine import Game, Rules
from arena.observability.watch import MatchView, watch
from arena.server.convert import EventEncoder

TOKEN = "organiser-secret"
MATCH = "m-7f3a"
CUT = "m-cut-short"
BOTS = ["greedy", "random", "remote:alpha"]


def play_events(seed: str, deals: int) -> tuple[list[dict[str, Any]], list[int], list[int]]:
    """Public events of a seeded game of random legal moves, cut after ``deals`` deals."""
    rules = Rules.preset("classic")
    game = Game(rules, seed=seed)
    rng = random.Random(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big"))
    while not game.is_over and game.deal_index < deals:
        if game.is_chance:
            game.deal()
            continue
        game.apply(rng.choice(game.legal_actions()))
    events: list[dict[str, Any]] = [{"type": "match_start", "bots": BOTS, "rules": rules.to_json()}]
    events += game.events
    ranks = game.ranking()
    events.append(
        {"type": "match_end", "status": "completed", "scores": game.scores, "ranks": ranks}
    )
    return events, list(game.scores), ranks


EVENTS, SCORES, RANKS = play_events("watch-test", 3)


class Organiser(organiser_pb2_grpc.OrganiserServiceServicer):  # type: ignore[misc]
    def __init__(self) -> None:
        encoder = EventEncoder()
        self.matches: dict[str, list[common_pb2.MatchEvent]] = {
            MATCH: [encoder.encode(MATCH, e) for e in EVENTS]
        }
        cut = EventEncoder()
        self.matches[CUT] = [cut.encode(CUT, e) for e in EVENTS[:10]]

    async def WatchMatch(
        self, request: organiser_pb2.WatchMatchRequest, context: Any
    ) -> AsyncIterator[organiser_pb2.WatchMatchResponse]:
        metadata = dict(context.invocation_metadata())
        if metadata.get("authorization") != f"Bearer {TOKEN}":
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown token")
        events = self.matches.get(request.match_id)
        if events is None:
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"no match {request.match_id!r} in this gateway"
            )
        for event in events or []:
            yield organiser_pb2.WatchMatchResponse(event=event)
            await asyncio.sleep(0)


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    port: list[int] = []
    server_box: list[grpc.aio.Server] = []

    async def start() -> None:
        server = grpc.aio.server()
        organiser_pb2_grpc.add_OrganiserServiceServicer_to_server(Organiser(), server)
        port.append(server.add_insecure_port("127.0.0.1:0"))
        await server.start()
        server_box.append(server)
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=30)
    ready.wait(30)
    try:
        yield f"127.0.0.1:{port[0]}"
    finally:
        asyncio.run_coroutine_threadsafe(server_box[0].stop(None), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()


def test_plain_output_follows_the_match_to_its_end(gateway: str) -> None:
    out = io.StringIO()
    assert watch(gateway, MATCH, "spring-cup", TOKEN, out=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == "match starts: 0=greedy, 1=random, 2=remote:alpha"
    assert len(lines) == len(EVENTS)
    assert any(line.startswith("deal 0: ") for line in lines)  # from 0, as in the replay
    assert any(" takes " in line for line in lines)
    deal_ends = sum(e["type"] == "deal_end" for e in EVENTS)
    assert deal_ends >= 2
    assert sum(line.startswith("deal ends: ") for line in lines) == deal_ends
    order = sorted(range(3), key=lambda s: (RANKS[s], s))
    expected = ", ".join(f"{RANKS[s]}. {BOTS[s]} {SCORES[s]}" for s in order)
    assert lines[-1] == f"match over: completed; {expected}"
    # Cards given face down stay hidden.
    assert all("give ??" in line for line in lines if ": give " in line)


def test_redraw_output_shows_the_table(gateway: str) -> None:
    out = io.StringIO()
    assert watch(gateway, MATCH, "spring-cup", TOKEN, out=out, redraw=True, color=False) == 0
    text = out.getvalue()
    assert text.startswith("\x1b[H\x1b[2J")
    final = text.rsplit("\x1b[H\x1b[2J", 1)[1]
    assert f"Thousand Arena - match {MATCH} - spring-cup" in final
    for seat, bot in enumerate(BOTS):
        row = next(line for line in final.splitlines() if line.startswith(f"  {seat}  "))
        assert bot in row and str(SCORES[seat]) in row
    assert "Match over: completed" in final
    assert "Deals" in final


def test_colour_marks_red_suits(gateway: str) -> None:
    out = io.StringIO()
    assert watch(gateway, MATCH, None, TOKEN, out=out, redraw=True, color=True) == 0
    assert "\x1b[31m" in out.getvalue()


def test_refused_token_is_explained(gateway: str) -> None:
    out = io.StringIO()
    assert watch(gateway, MATCH, None, "wrong", out=out) == 4  # docs/cli.md: refused
    assert "refused the organiser token" in out.getvalue()


def test_unknown_match_is_explained(gateway: str) -> None:
    out = io.StringIO()
    assert watch(gateway, "nope", None, TOKEN, out=out) == 1
    assert "no match 'nope'" in out.getvalue()


def test_stream_ending_early_is_an_error(gateway: str) -> None:
    out = io.StringIO()
    assert watch(gateway, CUT, None, TOKEN, out=out) == 1
    assert "ended before the match did" in out.getvalue()


def test_unreachable_gateway_is_explained() -> None:
    out = io.StringIO()
    port = free_port()
    assert watch(f"127.0.0.1:{port}", MATCH, None, TOKEN, out=out) == 3  # unreachable
    assert "cannot reach the gateway" in out.getvalue()


@pytest.mark.parametrize(
    ("target", "match_id", "token", "message"),
    [
        ("127.0.0.1:1", None, TOKEN, "give the id of the match"),
        ("127.0.0.1:1", MATCH, "", "organiser token is required"),
        ("nowhere", MATCH, TOKEN, "HOST:PORT"),
    ],
)
def test_bad_arguments(target: str, match_id: str | None, token: str, message: str) -> None:
    out = io.StringIO()
    assert watch(target, match_id, None, token, out=out) == 2
    assert message in out.getvalue()


def test_view_ignores_unknown_events_and_tracks_tricks() -> None:
    view = MatchView(match_id="x")
    view.apply({"type": "match_start", "bots": ["a", "b", "c"]})
    view.apply({"type": "deal_start", "deal": 0, "dealer": 2})
    assert view.apply({"type": "future_kind"}) == "(future_kind event)"
    view.apply({"type": "action", "seat": 0, "action": "bid 100"})
    view.apply({"type": "action", "seat": 1, "action": "pass"})
    assert view.apply({"type": "talon", "cards": ["9H", "KS", "AD"]}) == "talon shown: 9H KS AD"
    view.apply({"type": "action", "seat": 0, "action": "play AH"})
    view.apply({"type": "action", "seat": 1, "action": "play TH"})
    assert view.table == [(0, "AH"), (1, "TH")]
    view.apply({"type": "trick", "winner": 0, "points": 21, "cards": [[0, "AH"], [1, "TH"]]})
    assert view.table == [] and view.tricks == {0: 1} and view.points == {0: 21}
    assert view.declarer == 0 and view.contract == 100
    screen = "\n".join(view.render())
    assert "Last trick: a took A\u2665 T\u2665 (21)" in screen
    assert "Talon: 9\u2665 K\u2660 A\u2666" in screen
