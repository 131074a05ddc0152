"""Bots of the web tests: one that blunders, so replays have fallbacks, strikes, forfeits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arena.bots import RandomBot


class Blunderer:
    """Plays like ``random`` but answers every 25th decision with a move that is never
    legal: the referee plays the fallback and counts a strike (three forfeit a match)."""

    def __init__(self, seed: str = "b", rules: Any = None) -> None:
        self.inner = RandomBot(seed=seed)
        self.count = 0

    def decide(self, observation: dict[str, Any], legal: Sequence[str]) -> str:
        self.count += 1
        if self.count % 25 == 0:
            return "bid 5"
        return self.inner.decide(observation, legal)

    def on_event(self, event: dict[str, Any]) -> None:
        self.inner.on_event(event)
