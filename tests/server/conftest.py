"""A real gateway on a loopback port, and real SDK bots connected to it."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.rigs.testing import GatewayThread

SDK = Path(__file__).resolve().parents[2] / "sdk" / "python"
try:
    import thousand_bot  # noqa: F401
except ImportError:  # a checkout without `pip install -e sdk/python`
    sys.path.insert(0, str(SDK))

from thousand_bot import Bot, BotClient  # noqa: E402


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayThread]:
    gw = GatewayThread(str(tmp_path / "gateway.sqlite3"))
    try:
        yield gw
    finally:
        gw.close()


class BotFleet:
    """SDK clients on their own event loop thread, as separate bot programs would be."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.stop = asyncio.Event()
        self.clients: list[BotClient] = []
        self.tasks: list[Any] = []

    def add(self, bot: Bot, address: str, token: str) -> BotClient:
        client = BotClient(bot, address, token, backoff_initial=0.1, backoff_max=0.5)
        self.clients.append(client)
        self.tasks.append(asyncio.run_coroutine_threadsafe(client.run(self.stop), self.loop))
        return client

    def wait_connected(self, timeout: float = 20.0) -> None:
        import time

        limit = time.monotonic() + timeout
        while not all(c.sessions for c in self.clients):
            if time.monotonic() > limit:
                raise TimeoutError("bots did not connect")
            for task in self.tasks:
                if task.done():
                    task.result()
            time.sleep(0.02)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        for task in self.tasks:
            # A bot that was refused ends with its error: that is no failure of the fixture.
            with contextlib.suppress(Exception):
                task.result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def fleet() -> Iterator[BotFleet]:
    f = BotFleet()
    try:
        yield f
    finally:
        f.close()


@pytest.fixture
def connect_bots(gateway: GatewayThread, fleet: BotFleet) -> Callable[..., dict[str, BotClient]]:
    """Register bots by name and connect one SDK client per name."""

    def connect(factory: Callable[[], Bot], *names: str) -> dict[str, BotClient]:
        clients = {n: fleet.add(factory(), gateway.address, gateway.register(n)) for n in names}
        fleet.wait_connected()
        return clients

    return connect
