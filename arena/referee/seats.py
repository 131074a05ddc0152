"""Seats played by Python objects in the referee's own process.

A built-in bot answers in microseconds, so the seat calls it directly on the event loop:
no thread, no task, no timer per decision.  Such a call cannot be interrupted; the
referee measures how long it took and treats an answer that came too late as a timeout,
exactly as for a remote bot.  A bot under test that might hang (``arena bot-check``) is
run with ``threaded=True`` instead: each decision runs in a daemon thread that the referee
can stop waiting for.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import entry_points
from typing import Any

from thousand_bot.refs import load_object

from arena.match.types import JSON, DecisionRequest, Seat

__all__ = ["InProcessSeat", "as_seat", "load_object", "make_instance", "seat_kind"]

BotDecide = Callable[[JSON, Sequence[str]], "str | Awaitable[str]"]


class InProcessSeat:
    """Adapts a bot object (``decide(observation, legal) -> str``) to the Seat protocol.

    ``decide`` may be a plain function or a coroutine function.  The bot's optional
    ``on_event(event)`` receives the public events; bots without one cost the referee
    nothing per event (``wants_events`` is False).  Each event it gets carries the
    ``match_id``, as over a gateway, so a bot written with the SDK finds the same keys
    wherever it plays; the arena's own bots (``with_match_id=False``) do without the copy
    that costs.
    """

    #: The referee may call ``decide`` without a timer: it returns without yielding.
    in_process = True

    def __init__(
        self,
        bot: Any,
        name: str | None = None,
        *,
        threaded: bool = False,
        with_match_id: bool = True,
    ) -> None:
        decide = getattr(bot, "decide", None)
        if not callable(decide):
            raise TypeError(f"{type(bot).__name__} has no decide(observation, legal) method")
        self.bot = bot
        self.name = name or str(getattr(bot, "name", type(bot).__name__))
        self.threaded = threaded
        self._decide: Callable[..., Any] = decide
        self._is_async = inspect.iscoroutinefunction(decide)
        hook = getattr(bot, "on_event", None)
        self._on_event: Callable[[JSON], Any] | None = hook if callable(hook) else None
        self.wants_events = self._on_event is not None
        self.with_match_id = with_match_id
        #: The event types the bot's ``on_event`` wants (its ``event_types`` attribute);
        #: None: all of them. The referee hands it no others, at no cost.
        types = getattr(bot, "event_types", None)
        self.event_types: frozenset[str] | None = (
            frozenset(types) if types is not None and self.wants_events else None
        )
        #: A threaded bot's own time for its last decision, without the thread hand-off.
        self.last_think_ms: float | None = None
        # A threaded or asynchronous bot may yield to the loop: give it a timer.
        if threaded or self._is_async:
            self.in_process = False
        self._event_tasks: set[asyncio.Future[Any]] = set()
        #: The bot's own ``decide(observation, legal)``: the referee calls it directly.
        self.direct_decide: Callable[..., Any] | None = None if not self.in_process else decide
        if self._on_event is not None and not inspect.iscoroutinefunction(self._on_event):
            self.on_event_nowait = self._event_now

    async def decide(self, request: DecisionRequest) -> str:
        if self.threaded:
            answer: Any
            answer, self.last_think_ms = await _in_thread(
                self._decide, request.observation, request.legal
            )
            return answer  # type: ignore[no-any-return]
        answer = self._decide(request.observation, request.legal)
        if type(answer) is not str and inspect.isawaitable(answer):
            answer = await answer
        return answer  # type: ignore[no-any-return]

    def _event_now(self, match_id: str, event: JSON) -> None:
        hook = self._on_event
        assert hook is not None
        if self.with_match_id and "match_id" not in event:
            event = {**event, "match_id": match_id}  # the event is shared: a copy
        out = hook(event)
        if out is not None and inspect.isawaitable(out):
            # A plain function that returned an awaitable after all: it runs on its own.
            task = asyncio.ensure_future(out)
            self._event_tasks.add(task)
            task.add_done_callback(self._event_tasks.discard)

    async def on_event(self, match_id: str, event: JSON) -> None:
        hook = self._on_event
        if hook is None:
            return
        if self.with_match_id and "match_id" not in event:
            event = {**event, "match_id": match_id}
        out = hook(event)
        if out is not None and inspect.isawaitable(out):
            await out


async def _in_thread(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """Run ``fn`` in a fresh daemon thread: a bot stuck forever cannot keep the process alive.

    Returns the result and the milliseconds ``fn`` itself took.
    """
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[tuple[Any, float]] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if fut.done():
            return
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    def run() -> None:
        t0 = time.perf_counter()
        try:
            value = fn(*args)
            if inspect.isawaitable(value):
                value = asyncio.run(_await(value))
        except BaseException as exc:
            outcome: tuple[bool, Any] = (False, exc)
        else:
            outcome = (True, (value, (time.perf_counter() - t0) * 1000.0))
        # The match may be over and its loop closed by now: then nobody is waiting.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=run, name="bot-decision", daemon=True).start()
    return await fut


async def _await(value: Awaitable[Any]) -> Any:
    return await value


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def make_instance(factory: Any, *, seed: str, rules: JSON | None) -> Any:
    """Call a bot class or factory with the keyword arguments it accepts (seed, rules)."""
    if not callable(factory):
        return factory
    kwargs: dict[str, Any] = {}
    if _accepts(factory, "seed"):
        kwargs["seed"] = seed
    if _accepts(factory, "rules"):
        kwargs["rules"] = rules
    return factory(**kwargs)


def is_seat_object(obj: Any) -> bool:
    """Whether ``obj`` already speaks the Seat protocol (``decide(request)``)."""
    decide = getattr(obj, "decide", None)
    if not callable(decide) or not callable(getattr(obj, "on_event", None)):
        return False
    if not inspect.iscoroutinefunction(decide):
        return False
    try:
        params = [
            p
            for p in inspect.signature(decide).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return False
    return len(params) == 1


def as_seat(obj: Any, name: str, *, threaded: bool = False) -> Seat:
    """Wrap a bot as a seat, or return a ready seat object unchanged."""
    if is_seat_object(obj):
        if not getattr(obj, "name", None):
            obj.name = name
        return obj  # type: ignore[no-any-return]
    return InProcessSeat(obj, name, threaded=threaded)


#: The entry point group of the seat kinds that stand above the referee, named by the
#: prefix of their references (``cmd`` for ``cmd:COMMAND``, a program on the text
#: protocol). Such a seat is built on the gateway's own code, which runs matches with this
#: referee: the referee finds the kind through the installed package's metadata instead of
#: importing it, and stays below the seats it plays.
SEAT_KINDS = "arena.seat_kinds"


@functools.cache
def seat_kind(prefix: str) -> Callable[[str], Seat] | None:
    """The factory of the seats whose references start with ``prefix:``, or None."""
    for point in entry_points(group=SEAT_KINDS, name=prefix):
        factory: Callable[[str], Seat] = point.load()
        return factory
    return None

