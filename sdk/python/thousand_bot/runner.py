"""Running bots from a program or the command line."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Iterable

from thousand_bot.bot import Bot
from thousand_bot.client import BotClient, TlsSettings
from thousand_bot.refs import load_object


def load_bot(ref: str) -> Callable[[], Bot]:
    """``module:Class`` or ``path/to/file.py:Class`` -> the class (or factory); the same
    references as ``arena match`` (see :mod:`thousand_bot.refs`)."""
    factory = load_object(ref)
    if not callable(factory):
        raise ValueError(f"bot reference {ref!r}: {type(factory).__name__} is not a class")
    return factory  # type: ignore[no-any-return]


async def run_bots(
    factory: Callable[[], Bot],
    server: str,
    token: str,
    instances: int = 1,
    stop: asyncio.Event | None = None,
    max_attempts: int | None = None,
    tls: TlsSettings | None = None,
) -> None:
    """Run ``instances`` copies of the bot, each on its own stream, until ``stop`` is set
    or the server refuses the token."""
    stop = stop or asyncio.Event()
    clients = [
        BotClient(factory(), server, token, max_attempts=max_attempts, tls=tls)
        for _ in range(instances)
    ]
    await run_together([c.run(stop) for c in clients], stop)


async def run_together(runs: Iterable[Awaitable[None]], stop: asyncio.Event) -> None:
    """Await ``runs`` side by side, each of which ends when ``stop`` is set; the first to
    fail sets it for the others and is raised once they have ended.

    The others are not cancelled: they end as on Ctrl-C, a stream closed in order and a
    program told to stop, so that none is cut off half-way (a bot program left running)."""
    tasks = [asyncio.ensure_future(run) for run in runs]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)


def run_bot(
    bot: Bot | Callable[[], Bot],
    server: str,
    token: str,
    instances: int = 1,
    max_attempts: int | None = None,
    tls: TlsSettings | None = None,
) -> None:
    """Play until Ctrl-C or SIGTERM. ``bot`` is an instance (one instance only) or a class;
    ``tls`` connects with TLS (see :class:`TlsSettings`)."""
    if isinstance(bot, Bot):
        if instances != 1:
            raise ValueError("pass the bot class, not an instance, to run several instances")
        instance = bot

        def factory() -> Bot:
            return instance

    else:
        factory = bot

    asyncio.run(until_signalled(
        lambda stop: run_bots(factory, server, token, instances, stop, max_attempts, tls)
    ))


async def until_signalled(run: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """``run(stop)``, with Ctrl-C and SIGTERM setting ``stop`` (where the loop can take
    signal handlers), so that the bots end their streams before the program exits."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    await run(stop)
