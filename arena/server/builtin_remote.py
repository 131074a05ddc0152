"""The built-in bots as remote bots: run them with the Python SDK against any gateway.

``thousand-bot run arena.server.builtin_remote:Greedy --gateway HOST:PORT --token TOKEN``
plays the arena's :class:`~arena.bots.GreedyBot` over gRPC, exactly as a bot written by
someone else would connect. That makes the built-in bots usable as sparring partners on a
real gateway, and lets the whole remote path (gateway, Redis routing, SDK) be exercised with
players whose strength is known.

The classes:

* ``Greedy``: the built-in greedy bot. It ignores its seed and follows the public events, so
  over the network it makes the same moves as in the referee's own process.
* ``Cautious``: greedy with a higher bar for bidding (it counts nothing on the talon and
  raises a contract only with a wide margin): a second, different player for demos.
* ``Random``: a uniformly random legal action.
* ``Search``: the built-in search bot, with a fixed number of iterations per decision.

Determinism: a remote bot is never given the match seed (it would reveal the deals), so each
bot's seed is derived by SHA-256 from the match id, the seat, the bot's kind and a salt
(``ARENA_BOT_SEED``, default ``builtin``). Tournament match ids are stable (derived from
the tournament's name and match number, or from its secret), so the same tournament gives
the same moves every time. ``Random``
draws from the arena's seeded stream keyed by the request id (the referee numbers requests
per match), so it keeps no state per match and needs no events.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from typing import Any

from thousand_bot import Bot
from thousand_bot.bot import Request

from arena.bots import GreedyBot
from arena.engine import SeedStream
from arena.match.types import JSON

SEED_ENV = "ARENA_BOT_SEED"
ITERATIONS_ENV = "ARENA_SEARCH_ITERATIONS"
DEFAULT_ITERATIONS = 64
GUARD_MS = 1500.0
#: Matches one process keeps state for; older ones are dropped (a match whose end was
#: never seen, e.g. its worker died, must not hold memory for ever).
MAX_MATCHES = 512


def bot_seed(salt: str, kind: str, match_id: str, seat: int) -> str:
    """The seed of one seat's bot: SHA-256 of what identifies it, never the match seed."""
    text = f"{salt}/{kind}/{match_id}/seat/{seat}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CautiousGreedyBot(GreedyBot):
    """Greedy that expects nothing from the talon and raises only with a wide margin."""

    talon_card_value = 0
    raise_margin = 40


class _Match:
    """What one process knows about a match: its rules and the events of the current deal,
    so a seat's bot created at its first decision still learns what it missed."""

    def __init__(self) -> None:
        self.rules: JSON | None = None
        self.deal_events: list[JSON] = []
        self.bots: dict[int, Any] = {}


class _Tracking(Bot):
    """An arena bot per seat of each match, fed the public events of that match."""

    kind = "greedy"
    version = "builtin"

    def __init__(self, salt: str | None = None) -> None:
        self.salt = salt if salt is not None else os.environ.get(SEED_ENV, "builtin")
        self._matches: OrderedDict[str, _Match] = OrderedDict()

    def make(self, seed: str, rules: JSON | None) -> GreedyBot:
        return GreedyBot(seed=seed, rules=rules)

    def _match(self, match_id: str) -> _Match:
        match = self._matches.get(match_id)
        if match is None:
            match = self._matches[match_id] = _Match()
            while len(self._matches) > MAX_MATCHES:
                self._matches.popitem(last=False)
        else:
            self._matches.move_to_end(match_id)
        return match

    def on_request(self, request: Request) -> str:
        match = self._match(request.match_id)
        bot = match.bots.get(request.seat)
        if bot is None:
            seed = bot_seed(self.salt, self.kind, request.match_id, request.seat)
            bot = match.bots[request.seat] = self.make(seed, match.rules)
            for event in match.deal_events:
                bot.on_event(event)
        return str(bot.decide(request.observation, request.legal))

    def on_event(self, event: dict[str, Any]) -> None:
        match_id = str(event.get("match_id", ""))
        kind = event.get("type")
        if kind == "match_end":
            self._matches.pop(match_id, None)
            return
        match = self._match(match_id)
        if kind == "match_start" and "rules" in event:
            match.rules = event["rules"]
        if kind == "deal_start":
            match.deal_events = []
        match.deal_events.append(event)
        for bot in match.bots.values():
            bot.on_event(event)


class Greedy(_Tracking):
    """The built-in greedy bot over the SDK."""

    kind = "greedy"


class Cautious(_Tracking):
    """Greedy with a higher bar for bidding and raising, over the SDK."""

    kind = "cautious"

    def make(self, seed: str, rules: JSON | None) -> GreedyBot:
        return CautiousGreedyBot(seed=seed, rules=rules, name="cautious")


class Search(_Tracking):
    """The built-in search bot over the SDK, searching a fixed number of iterations per
    decision (``ARENA_SEARCH_ITERATIONS``, default 64) rather than for a time: it makes the
    same moves on any machine, however loaded, so a seeded tournament gives the same
    results every time."""

    kind = "search"

    def make(self, seed: str, rules: JSON | None) -> Any:
        from arena.bots.search import SearchBot

        raw = os.environ.get(ITERATIONS_ENV, "")
        iterations = int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_ITERATIONS
        # The clock's budget is only a guard against a machine far slower than expected:
        # well above the iterations' time, well below the arena's default decision time.
        return SearchBot(seed=seed, rules=rules, name="search", iterations=iterations,
                         budget_ms=GUARD_MS)


class Random(Bot):
    """A uniformly random legal action from the arena's seeded stream; asks for no events."""

    version = "builtin"

    def __init__(self, salt: str | None = None) -> None:
        self.salt = salt if salt is not None else os.environ.get(SEED_ENV, "builtin")

    def on_request(self, request: Request) -> str:
        legal = request.legal
        if len(legal) == 1:
            return str(legal[0])
        seed = bot_seed(self.salt, "random", request.match_id, request.seat)
        return str(legal[SeedStream(f"{seed}/{request.request_id}").uniform(len(legal))])


__all__ = ["Cautious", "CautiousGreedyBot", "Greedy", "Random", "Search", "bot_seed"]
