"""The coroutine half of the Seat protocol for a seat whose decisions are futures.

A seat reached through a transport (a gateway's bot, a hosted bot, a bot program) hands
each request on as a future of its answer (``submit_clocked``), which the referee takes
without a coroutine per decision. Whoever calls such a seat the plain way (``decide``,
``decide_clocked``: the bot checks, the tests) gets that same future awaited.
"""

from __future__ import annotations

import asyncio

from arena.match.types import DecisionRequest
from arena.referee.clock import BotClock


class SubmittedSeat:
    """A base for a seat that defines :meth:`submit_clocked`."""

    def submit_clocked(self, request: DecisionRequest, clock: BotClock) -> asyncio.Future[str]:
        raise NotImplementedError

    async def decide_clocked(self, request: DecisionRequest, clock: BotClock) -> str:
        return await self.submit_clocked(request, clock)

    async def decide(self, request: DecisionRequest) -> str:
        return await self.decide_clocked(request, BotClock())
