"""Bots used by the tournament tests, importable by worker processes (``tournament_bots:...``)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.bots import GreedyBot


class SlowGreedy:
    """Plays exactly like ``greedy`` but pauses before each decision.

    The pause (``ARENA_TEST_BOT_DELAY`` seconds, default 0.02) stretches a match to a few
    seconds, so a test can kill a worker while it is surely in the middle of one.  The
    moves do not depend on the pause, so results stay comparable with any other run.
    """

    def __init__(self, seed: str = "slow", rules: Any = None) -> None:
        self.inner = GreedyBot(seed=seed, rules=rules)
        self.delay = float(os.environ.get("ARENA_TEST_BOT_DELAY", "0.02"))
        marks = os.environ.get("ARENA_TEST_BOT_MARKS")
        if marks:
            # Tells a test which process has just started a match (and when).
            Path(marks, f"{os.getpid()}-{time.monotonic_ns()}").touch()

    async def decide(self, observation: dict[str, Any], legal: Sequence[str]) -> str:
        await asyncio.sleep(self.delay)
        return self.inner.decide(observation, legal)

    def on_event(self, event: dict[str, Any]) -> None:
        self.inner.on_event(event)


class Exploding:
    """A bot whose constructor fails: a match that cannot be played."""

    def __init__(self, seed: str = "x") -> None:
        raise RuntimeError("this bot cannot start")


class DiesOnce:
    """Kills its own process outright the first time it plays (``ARENA_TEST_DIE_MARK`` is
    the file that remembers it did), then plays like ``greedy``: a pool process lost to
    the out-of-memory killer, say."""

    def __init__(self, seed: str = "dies", rules: Any = None) -> None:
        import signal

        mark = os.environ.get("ARENA_TEST_DIE_MARK")
        if mark and not Path(mark).exists():
            Path(mark).touch()
            os.kill(os.getpid(), signal.SIGKILL)
        self.inner = GreedyBot(seed=seed, rules=rules)

    def decide(self, observation: dict[str, Any], legal: Sequence[str]) -> str:
        return self.inner.decide(observation, legal)

    def on_event(self, event: dict[str, Any]) -> None:
        self.inner.on_event(event)
