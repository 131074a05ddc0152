"""Seats and bots that misbehave on purpose, for the referee tests."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from typing import Any

from arena.bots import GreedyBot
from arena.match.types import JSON, DecisionRequest

CARD_TOKEN = re.compile(r"\b[789TJQKA][CSHD]\b")

#: What a scripted seat does instead of answering, by fault name.
FAULTS = ("sleep", "malformed", "illegal", "raise", "not-text", "padded")


class ScriptedSeat:
    """Plays like the greedy bot, except at the decision numbers given in ``faults``.

    It is an asynchronous seat (like a remote bot), so the referee runs it under a timer.
    """

    def __init__(self, faults: dict[int, str] | None = None, name: str = "scripted",
                 sleep_s: float = 5.0) -> None:
        self.name = name
        self.faults = faults or {}
        self.sleep_s = sleep_s
        self.bot = GreedyBot()
        self.requests: list[DecisionRequest] = []
        self.events: list[JSON] = []

    async def decide(self, request: DecisionRequest) -> str:
        self.requests.append(request)
        fault = self.faults.get(len(self.requests))
        if fault == "sleep":
            await asyncio.sleep(self.sleep_s)
        elif fault == "malformed":
            return "fly me to the moon"
        elif fault == "illegal":
            return "bid 995"
        elif fault == "raise":
            raise RuntimeError("the bot fell over")
        elif fault == "not-text":
            return 42  # type: ignore[return-value]
        elif fault == "padded":  # a legal action, but longer than any action can be
            return self.bot.decide(request.observation, request.legal) + " " * 100
        return self.bot.decide(request.observation, request.legal)

    async def on_event(self, match_id: str, event: JSON) -> None:
        self.events.append(event)
        self.bot.on_event(event)


class GarbageSeat(ScriptedSeat):
    """Answers nonsense to every request."""

    async def decide(self, request: DecisionRequest) -> str:
        self.requests.append(request)
        return "nonsense"


class HangingSeat(ScriptedSeat):
    """Never answers (a bot that lost its connection without closing it)."""

    async def decide(self, request: DecisionRequest) -> str:
        self.requests.append(request)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class SlowSyncBot:
    """A synchronous in-process bot that blocks the loop on chosen decisions."""

    def __init__(self, slow: set[int], sleep_s: float) -> None:
        self.name = "slow-sync"
        self.slow = slow
        self.sleep_s = sleep_s
        self.calls = 0
        self.inner = GreedyBot()

    def decide(self, observation: JSON, legal: Sequence[str]) -> str:
        self.calls += 1
        if self.calls in self.slow:
            time.sleep(self.sleep_s)
        return self.inner.decide(observation, legal)


class FirstLegalBot:
    """The simplest possible Python bot: always the first legal action."""

    def __init__(self, seed: str = "", rules: Any = None) -> None:
        self.name = "first-legal"
        self.seed = seed
        self.rules = rules

    def decide(self, observation: JSON, legal: Sequence[str]) -> str:
        return legal[0]


class AsyncFirstLegalBot:
    """The same, written as a coroutine."""

    name = "async-first-legal"

    async def decide(self, observation: JSON, legal: Sequence[str]) -> str:
        await asyncio.sleep(0)
        return legal[0]


class SelfCancellingSeat(ScriptedSeat):
    """A seat whose decision task ends cancelled (a transport torn down under it)."""

    async def decide(self, request: DecisionRequest) -> str:
        self.requests.append(request)
        if len(self.requests) == 2:
            raise asyncio.CancelledError
        return self.bot.decide(request.observation, request.legal)
