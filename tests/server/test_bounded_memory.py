"""What the gateway keeps is bounded: match logs, finished matches, a bot's unread messages."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from thousand_bot.proto.thousand.v1 import bot_pb2, bot_pb2_grpc, common_pb2, organiser_pb2

from arena.rigs.testing import GatewayThread
from arena.server import convert
from arena.server.eventlog import LOG_CHUNK_EVENTS, EventLog
from arena.server.limits import StreamLimits
from arena.server.matches import TRUNCATED


def _event(n: int) -> dict[str, Any]:
    if n % 50 == 0:
        return {"type": "deal_start", "deal": n // 50, "dealer": n % 3}
    return {"type": "action", "seat": n % 3, "action": "discard ??"}


def _told(events: list[dict[str, Any]]) -> list[common_pb2.MatchEvent]:
    """The messages the bots' streams carry for these events, numbered from 0."""
    encoder = convert.EventEncoder()
    return [encoder.encode("m", e) for e in events]


def test_an_event_log_gives_back_every_event_in_order() -> None:
    log = EventLog(match_id="m")
    events = [_event(n) for n in range(LOG_CHUNK_EVENTS * 3 + 17)]
    got: list[common_pb2.MatchEvent] = []
    for e in events:
        log.append(e)
        # A spectator at the live edge reads each event as it comes.
        got.extend(log.read(len(got)))
    assert got == _told(events)
    # A late one reads from the start, a chunk at a time, and gets the same messages.
    late: list[common_pb2.MatchEvent] = []
    while batch := log.read(len(late)):
        late.extend(batch)
    assert late == got
    assert log.read(5)[0] == got[5]
    # A reader starting inside a chunk gets the deal right (it is not in every event).
    assert log.read(LOG_CHUNK_EVENTS + 3)[0] == got[LOG_CHUNK_EVENTS + 3]
    # Compact: far smaller than the messages it holds.
    assert log.nbytes < sum(len(m.SerializeToString()) for m in got) / 4


def test_an_event_log_keeps_an_odd_value_as_its_text() -> None:
    """A chunk is written with marshal, which takes only plain data; an event holding
    anything else (a referee's extension, a tuple of objects) is still kept, shown as its
    text as it would be on the bots' streams, and so are the other events of its chunk."""

    class Odd:
        def __str__(self) -> str:
            return "odd value"

    log = EventLog(match_id="m")
    events = [_event(n) for n in range(LOG_CHUNK_EVENTS * 2)]
    events[3] = {**events[3], "note": Odd()}
    for e in events:
        log.append(e)
    got: list[common_pb2.MatchEvent] = []
    while batch := log.read(len(got)):
        got.extend(batch)
    assert got == _told(events)
    assert json.loads(got[3].detail_json)["note"] == "odd value"


def test_an_event_log_keeps_its_byte_bound_and_says_what_it_dropped() -> None:
    log = EventLog(max_bytes=4096, match_id="m")
    for n in range(LOG_CHUNK_EVENTS * 20):
        log.append(_event(n))
        # At most the bound plus the one chunk still being filled.
        assert log.nbytes <= 4096 + LOG_CHUNK_EVENTS * 200
    assert log.first > 0 and log.first % LOG_CHUNK_EVENTS == 0
    first = log.read(0)[0]
    assert first.sequence == log.first
    assert first == _told([_event(n) for n in range(log.first + 1)])[-1]


@pytest.fixture
def small(tmp_path: Path) -> Iterator[GatewayThread]:
    """A gateway that keeps the events of 2 finished matches and results of 4."""
    gw = GatewayThread(str(tmp_path / "gateway.sqlite3"))
    gw.gateway.matches.keep_logs = 2
    gw.gateway.matches.keep_finished = 4
    try:
        yield gw
    finally:
        gw.close()


def _start(gw: GatewayThread, **kw: Any) -> str:
    channel, stub, md = gw.organiser()
    with channel:
        return str(stub.StartMatch(organiser_pb2.StartMatchRequest(**kw), metadata=md).match_id)


def _watch(gw: GatewayThread, match_id: str) -> list[common_pb2.MatchEvent]:
    channel, stub, md = gw.organiser()
    with channel:
        request = organiser_pb2.WatchMatchRequest(match_id=match_id)
        return [r.event for r in stub.WatchMatch(request, metadata=md, timeout=60)]


def test_finished_matches_keep_a_summary_then_nothing(small: GatewayThread) -> None:
    ids = []
    for i in range(6):
        ids.append(_start(small, seed=f"keep/{i}", bots=["random", "greedy", "greedy"]))
        events = _watch(small, ids[-1])
        assert events[-1].type == "match_end"
    matches = small.gateway.matches
    # The two newest still have their events, for late spectators.
    for match_id in ids[-2:]:
        again = _watch(small, match_id)
        assert again[0].type == "match_start" and again[-1].type == "match_end"
    # Older ones: the summary (without the replay, which went to the results hook).
    result = matches.result(ids[-3])
    assert result is not None and result.status == "completed" and result.replay is None
    channel, stub, md = small.organiser()
    with channel, pytest.raises(grpc.RpcError) as info:
        list(stub.WatchMatch(organiser_pb2.WatchMatchRequest(match_id=ids[-3]), metadata=md))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    details = info.value.details() or ""
    assert "has finished (completed, scores" in details and "no longer keeps its events" in details
    # The oldest are forgotten.
    assert matches.result(ids[0]) is None
    assert matches.memory()["finished_kept"] == 4
    assert matches.memory()["logs_kept"] == 2


def test_a_late_spectator_of_a_long_match_is_told_what_it_missed(small: GatewayThread) -> None:
    small.gateway.matches.log_max_bytes = 2048
    match_id = _start(small, seed="long", bots=["greedy", "greedy", "greedy"], max_deals=40)
    small.call(small.gateway.matches.wait(match_id))  # the spectator comes after the end
    events = _watch(small, match_id)
    assert events[0].type == TRUNCATED and events[-1].type == "match_end"
    told = 0
    for event in events:
        if event.type == TRUNCATED:
            detail = json.loads(event.detail_json)
            assert "oldest were dropped" in detail["reason"]
            assert detail["first_kept"] == event.sequence + 1
            told += detail["dropped"]
        else:
            told += 1
        assert told == event.sequence + 1  # every event is either received or counted


def test_a_bot_that_does_not_read_is_cut_off_and_its_matches_go_on(tmp_path: Path) -> None:
    limits = StreamLimits(outbox_messages=64, stall_s=1.0)
    gw = GatewayThread(str(tmp_path / "gateway.sqlite3"), limits=limits)
    try:
        token = gw.register("sink")
        # No bandwidth probing: the client's receive window stays at its initial size, so
        # once that much is unread the gateway's writes wait, as for any bot whose
        # transport has stopped reading.
        channel = grpc.insecure_channel(gw.address, options=[("grpc.http2.bdp_probe", 0)])
        stub = bot_pb2_grpc.BotServiceStub(channel)
        done = threading.Event()
        # The stream is opened and never read while the matches pour events into it.
        call = stub.Play(_hello_then_wait(done), metadata=(("authorization", f"Bearer {token}"),))
        deadline = time.monotonic() + 20
        while gw.gateway.hub.instances("sink") == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        tc = organiser_pb2.TimeControl(decision_ms=1, bank_ms=0, strike_limit=1_000_000)
        ids = [
            _start(gw, seed=f"sink/{i}", public_seed=True, bots=["sink", "random", "greedy"],
                   time_control=tc,
                   max_deals=30)
            for i in range(6)
        ]  # fmt: skip
        deadline = time.monotonic() + 60
        while gw.gateway.hub.instances("sink") > 0:
            assert time.monotonic() < deadline, "the bot that does not read was not cut off"
            time.sleep(0.1)
        with pytest.raises(grpc.RpcError) as info:
            for _ in call:  # now read: what was sent, then the status
                pass
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        details = info.value.details() or ""
        assert "does not read its stream" in details or "has not read its stream" in details
        for match_id in ids:
            assert _watch(gw, match_id)[-1].type == "match_end"
        done.set()
        channel.close()
    finally:
        gw.close()


def _hello_then_wait(done: threading.Event) -> Iterator[bot_pb2.PlayRequest]:
    yield bot_pb2.PlayRequest(hello=bot_pb2.Hello(version="sink"))
    done.wait(120)  # keeps the request side open until the test is over


def test_bench_memory_prints_the_gateway_rss() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bench", "memory", "--finished", "6",
         "--concurrency", "3", "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["finished"] == 6
    assert 10 < data["rss_start_mib"] <= data["rss_peak_mib"]
    assert data["rss_end_mib"] > 10
    assert data["recent_match_events"] > 100
    bad = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bench", "memory", "--finished", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "at least 1" in bad.stderr and "Traceback" not in bad.stderr
