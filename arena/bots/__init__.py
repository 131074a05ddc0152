"""Built-in bots: ``random`` (the baseline), ``greedy`` (the reference opponent) and the
``search`` levels (determinized search, the strongest).

``get_bot(name, seed=..., rules=...)`` builds one; ``BUILTIN_BOTS`` lists them.  The
referee resolves the bot references ``random`` and ``greedy`` in a match spec through this
registry, giving each seat its own seed derived from the match seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arena.bots.base import Bot, seat_seed
from arena.bots.greedy import GreedyBot
from arena.bots.random_bot import RandomBot
from arena.bots.search import LEVELS, SearchBot
from arena.match.types import JSON

BotFactory = Callable[..., Any]

#: Built-in bots by name; each factory takes ``seed`` and ``rules`` keywords.
BUILTIN_BOTS: dict[str, BotFactory] = {
    "random": lambda seed="random", rules=None: RandomBot(seed=seed),
    "greedy": lambda seed="greedy", rules=None: GreedyBot(seed=seed, rules=rules),
}


def _search_factory(name: str, budget_ms: float) -> BotFactory:
    def make(seed: str = name, rules: JSON | None = None) -> SearchBot:
        return SearchBot(seed=seed, rules=rules, name=name, budget_ms=budget_ms)

    return make


for _name, (_budget, _about) in LEVELS.items():
    BUILTIN_BOTS[_name] = _search_factory(_name, _budget)


def get_bot(name: str, *, seed: str = "0", rules: JSON | None = None) -> Bot:
    """A fresh built-in bot; ``KeyError`` names the known bots when ``name`` is not one."""
    try:
        factory = BUILTIN_BOTS[name]
    except KeyError:
        raise KeyError(
            f"no built-in bot {name!r}; built-in bots: {', '.join(sorted(BUILTIN_BOTS))}"
        ) from None
    bot: Bot = factory(seed=seed, rules=rules)
    return bot


__all__ = ["BUILTIN_BOTS", "Bot", "GreedyBot", "RandomBot", "SearchBot", "get_bot", "seat_seed"]
