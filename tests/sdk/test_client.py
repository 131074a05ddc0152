"""The Python SDK's client against a real gateway: playing, refusals, reconnecting."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from thousand_bot import Bot, BotClient, BotRejected
from thousand_bot.examples import Greedy
from thousand_bot.proto.thousand.v1 import organiser_pb2

from arena.rigs.testing import GatewayThread

SDK = Path(__file__).resolve().parents[2] / "sdk" / "python"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, **extra)
    if env.get("ARENA_TEST_INSTALLED") != "1":  # else: the installed wheel, not the checkout
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(SDK), env.get("PYTHONPATH", "")) if p)
    return env


def _start(gw: GatewayThread, bots: list[str], seed: str, **kw: object) -> str:
    channel, stub, md = gw.organiser()
    kw.setdefault("public_seed", bool(seed))
    with channel:
        request = organiser_pb2.StartMatchRequest(seed=seed, bots=bots, **kw)  # type: ignore[arg-type]
        return str(stub.StartMatch(request, metadata=md).match_id)


def _finish(gw: GatewayThread, match_id: str) -> str:
    channel, stub, md = gw.organiser()
    with channel:
        events = [r.event for r in stub.WatchMatch(
            organiser_pb2.WatchMatchRequest(match_id=match_id), metadata=md, timeout=120
        )]  # fmt: skip
    return str(events[-1].match_end.status)


def test_cli_plays_a_match(gateway: GatewayThread, tmp_path: Path) -> None:
    (tmp_path / "mybot.py").write_text(
        "from thousand_bot import Bot\n"
        "class MyBot(Bot):\n"
        "    def play(self, observation, legal):\n"
        "        return legal[-1]\n"
    )
    token = gateway.register("mine")
    proc = subprocess.Popen(
        [sys.executable, "-m", "thousand_bot.cli", "run", "mybot:MyBot",
         "--server", gateway.address],
        cwd=tmp_path,
        env=_env(THOUSAND_BOT_TOKEN=token),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not gateway.gateway.hub.instances("mine"):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        match_id = _start(gateway, ["mine", "greedy", "random"], "cli", max_deals=3)
        assert _finish(gateway, match_id) == "completed"
        result = gateway.gateway.matches.result(match_id)
        assert result is not None and result.seat_stats[0].decisions > 0
        assert result.seat_stats[0].strikes == 0
    finally:
        proc.terminate()
        assert proc.wait(20) == 0  # SIGTERM is a normal way to stop a bot


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["run", "thousand_bot.examples:Greedy"], 2, "token"),
        (["run", "no_such_module:Bot", "--token", "t"], 2, "cannot import no_such_module"),
        (["run", "no_such_file.py:Bot", "--token", "t"], 2, "no file no_such_file.py"),
        (["run", "thousand_bot.examples", "--token", "t"], 2, "module:Class"),
    ],
)
def test_cli_usage_errors(args: list[str], code: int, message: str) -> None:
    env = _env()
    env.pop("THOUSAND_BOT_TOKEN", None)
    result = subprocess.run(
        [sys.executable, "-m", "thousand_bot.cli", *args],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == code
    assert message in result.stderr


@pytest.mark.parametrize("flag", ["--gateway", "--server"])
def test_cli_loads_a_bot_from_a_file_and_says_when_the_gateway_is_unreachable(
    tmp_path: Path, flag: str
) -> None:
    """``path.py:Class`` as in ``arena match``; ``--server`` is the option's earlier name."""
    (tmp_path / "mybot.py").write_text(
        "from thousand_bot import Bot\n\nclass MyBot(Bot):\n    pass\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "thousand_bot.cli", "run", "mybot.py:MyBot", flag,
         "127.0.0.1:1", "--token", "t", "--max-attempts", "1"],
        capture_output=True, text=True, env=_env(), timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "could not reach 127.0.0.1:1" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_reports_a_refused_token(gateway: GatewayThread) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "thousand_bot.cli", "run", "thousand_bot.examples:Greedy",
         "--gateway", gateway.address, "--token", "thb_wrong"],
        capture_output=True, text=True, env=_env(), timeout=60,
    )  # fmt: skip
    assert result.returncode == 4
    assert "UNAUTHENTICATED" in result.stderr and "unknown token" in result.stderr


def test_client_gives_up_after_max_attempts() -> None:
    async def run() -> None:
        client = BotClient(
            Greedy(), "127.0.0.1:1", "t", backoff_initial=0.01, backoff_max=0.02, max_attempts=3
        )
        await client.run()

    with pytest.raises(ConnectionError, match="after 3 attempts"):
        asyncio.run(asyncio.wait_for(run(), 60))


def test_revoked_bot_is_rejected_for_good(gateway: GatewayThread) -> None:
    token = gateway.register("ann")
    errors: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(BotClient(Greedy(), gateway.address, token, backoff_initial=0.01).run())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not gateway.gateway.hub.instances("ann"):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    channel, stub, md = gateway.organiser()
    with channel:
        stub.RevokeToken(organiser_pb2.RevokeTokenRequest(name="ann"), metadata=md)
    thread.join(20)
    assert len(errors) == 1 and isinstance(errors[0], BotRejected)
    assert errors[0].code == grpc.StatusCode.UNAUTHENTICATED


class Slow(Bot):
    """Answers only after a while, to be caught mid-decision by a restart."""

    async def on_request(self, request):  # type: ignore[no-untyped-def,override]
        await asyncio.sleep(0.05)
        return request.legal[0]


def test_reconnects_after_the_gateway_restarts(tmp_path: Path) -> None:
    db = str(tmp_path / "g.sqlite3")
    first = GatewayThread(db)
    port = first.port
    token = first.register("ann")
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    stop = asyncio.Event()
    client = BotClient(Greedy(), first.address, token, backoff_initial=0.05, backoff_max=0.2)
    task = asyncio.run_coroutine_threadsafe(client.run(stop), loop)
    try:
        deadline = time.monotonic() + 20
        while client.sessions < 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        first.close(0.5)
        second = GatewayThread(db, port=port)  # same port, same registry
        try:
            while client.sessions < 2:
                assert time.monotonic() < deadline + 30, "no reconnect"
                time.sleep(0.05)
            match_id = _start(second, ["ann", "greedy", "random"], "after", max_deals=2)
            assert _finish(second, match_id) == "completed"
        finally:
            second.close()
    finally:
        loop.call_soon_threadsafe(stop.set)
        task.result(20)
        loop.call_soon_threadsafe(loop.stop)


def test_async_bots_and_many_matches(gateway: GatewayThread) -> None:
    names = ["s0", "s1", "s2"]
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    stop = asyncio.Event()
    clients = [BotClient(Slow(), gateway.address, gateway.register(n)) for n in names]
    tasks = [asyncio.run_coroutine_threadsafe(c.run(stop), loop) for c in clients]
    try:
        deadline = time.monotonic() + 20
        while not all(c.sessions for c in clients):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        ids = [_start(gateway, names, f"slow/{i}", max_deals=1) for i in range(4)]
        assert [_finish(gateway, m) for m in ids] == ["completed"] * 4
    finally:
        loop.call_soon_threadsafe(stop.set)
        for t in tasks:
            t.result(20)
        loop.call_soon_threadsafe(loop.stop)


def test_the_sdk_does_not_need_the_arena(tmp_path: Path) -> None:
    code = (
        "import sys, thousand_bot, thousand_bot.examples, thousand_bot.client;"
        "assert not [m for m in sys.modules if m == 'arena' or m.startswith('arena.')]"
    )
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), check=True, timeout=60)


def test_answers_leave_in_the_order_they_were_decided_while_the_reader_reads_on() -> None:
    """A burst of requests on one stream (a bot in many matches at once): the client reads
    on while its answers are being written, and every answer leaves, in order, each once.
    The server is a bare grpc.aio one on loopback that sends the whole burst before it
    reads a single answer."""
    from thousand_bot.proto.thousand.v1 import bot_pb2

    burst = 200
    received: list[str] = []

    async def play(requests, context):  # type: ignore[no-untyped-def]
        await context.read()  # hello
        await context.write(bot_pb2.PlayResponse(welcome=bot_pb2.Welcome(instance_id="i-1")))
        for n in range(burst):
            await context.write(bot_pb2.PlayResponse(decision_request=bot_pb2.DecisionRequest(
                match_id="m", request_id=f"r{n}", seat=n % 3,
                legal_actions=[f"bid {100 + 5 * (n % 4)}", "pass"], deadline_ms=1000,
            )))
        while len(received) < burst:
            message = await context.read()
            if message is grpc.aio.EOF:
                return
            received.append(f"{message.decision.request_id}:{message.decision.action}")

    async def main() -> int:
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "thousand.v1.BotService", {"Play": grpc.stream_stream_rpc_method_handler(
                play, request_deserializer=bot_pb2.PlayRequest.FromString,
                response_serializer=bot_pb2.PlayResponse.SerializeToString)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        client = BotClient(Greedy(), f"127.0.0.1:{port}", "token", max_attempts=1)
        stop = asyncio.Event()
        running = asyncio.ensure_future(client.run(stop))
        try:
            for _ in range(500):
                if len(received) >= burst:
                    break
                await asyncio.sleep(0.01)
        finally:
            stop.set()
            with contextlib.suppress(ConnectionError, grpc.aio.AioRpcError):
                await asyncio.wait_for(running, 10)
            await server.stop(0)
        return client.decisions

    decisions = asyncio.run(main())
    assert decisions == burst
    assert [r.split(":")[0] for r in received] == [f"r{n}" for n in range(burst)]
    assert all(r.split(":")[1] in (f"bid {100 + 5 * (n % 4)}", "pass")
               for n, r in enumerate(received))


class Pondering(Bot):
    """Thinks far longer than any clock: still thinking when its client is stopped."""

    async def on_request(self, request):  # type: ignore[no-untyped-def,override]
        await asyncio.sleep(3600)
        return request.legal[0]


def test_stopping_the_client_ends_the_answers_still_being_thought_about(
    gateway: GatewayThread,
) -> None:
    """Left running, they would outlive the client and be destroyed pending with the loop
    (asyncio logs "Task was destroyed but it is pending!")."""

    async def main() -> list[asyncio.Task[object]]:
        stop = asyncio.Event()
        client = BotClient(Pondering(), gateway.address, gateway.register("pondering"))
        running = asyncio.ensure_future(client.run(stop))
        deadline = time.monotonic() + 20
        while not client.sessions:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        await asyncio.to_thread(
            _start, gateway, ["pondering", "random", "greedy"], "", max_deals=1,
            time_control=organiser_pb2.TimeControl(decision_ms=60_000, bank_ms=0, strike_limit=1),
        )  # fmt: skip

        def thinking() -> list[asyncio.Task[object]]:
            return [t for t in asyncio.all_tasks()
                    if "BotClient._later" in repr(t.get_coro())]  # fmt: skip

        while not thinking():
            assert time.monotonic() < deadline, "the bot was never asked"
            await asyncio.sleep(0.02)
        seen = thinking()
        stop.set()
        await asyncio.wait_for(running, 20)
        assert not thinking()
        return seen

    seen = asyncio.run(main())
    assert seen and all(t.cancelled() for t in seen)


def test_an_event_sent_again_after_a_move_reaches_the_bot_once() -> None:
    """After a bot moves to another gateway (or its stream breaks) the events since its
    last answer may come again: the client passes each number of a match on once, and a
    match played again from its start (sequence 0, ``match_start``) starts over."""
    from thousand_bot.proto.thousand.v1 import bot_pb2, common_pb2

    got: list[tuple[str, int]] = []

    class Listener(Bot):
        def on_event(self, event: dict[str, object]) -> None:
            got.append((str(event["match_id"]), int(event["sequence"])))  # type: ignore[call-overload]

    client = BotClient(Listener(), "localhost:1", "token")

    def event(match_id: str, n: int, kind: str = "action") -> None:
        message = bot_pb2.PlayResponse(
            event=common_pb2.MatchEvent(match_id=match_id, sequence=n, type=kind))
        client._handle(message)

    for n in (0, 1, 2, 1, 2, 3):
        event("m", n, "match_start" if n == 0 else "action")
    event("other", 0, "match_start")
    event("m", 3)
    event("m", 0, "match_start")  # played again from its start
    event("m", 1)
    assert got == [("m", 0), ("m", 1), ("m", 2), ("m", 3), ("other", 0), ("m", 0), ("m", 1)]
