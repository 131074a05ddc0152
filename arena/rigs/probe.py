"""Time every decision of a few matches of remote bots, as a worker host plays them.

``python -m arena.rigs.probe ROUTING_URL BOT BOT ...`` plays matches of the named remote
bots (and the built-in random bot in the other seats) exactly as a Celery worker does (the
referee, its seats reaching the bots through Redis and their gateways; Celery itself
carries no decision) and prints one JSON object: for each decision the time charged to
the bot and the round trip the match saw, and the timeouts of the matches. Run on a
rig's worker host by ``arena bench hosts``.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from collections.abc import Sequence

from arena.match.types import DecisionRequest, MatchSpec, Seat, TimeControl
from arena.referee.clock import BotClock
from arena.tournament.routing import RedisRemoteSeat


class TimedSeat(RedisRemoteSeat):
    """A routed seat that keeps, for each decision, what was charged and what it took."""

    def __init__(self, url: str, bot: str, samples: list[tuple[float, float]]) -> None:
        super().__init__(url, bot)
        self.samples = samples

    async def decide_clocked(self, request: DecisionRequest, clock: BotClock) -> str:
        started = time.perf_counter()
        try:
            return await super().decide_clocked(request, clock)
        finally:
            charged = clock.reported_bot_s if clock.reported_bot_s is not None else -1.0
            self.samples.append((charged, time.perf_counter() - started))


def probe(url: str, bots: Sequence[str], *, matches: int, max_deals: int, decision_ms: int,
          bank_ms: int, preset: str = "classic") -> dict[str, object]:
    from arena.engine import Rules
    from arena.referee.runner import run_match_sync

    seats = Rules.preset(preset).players
    refs = [f"remote:{b}" for b in bots][:seats]
    refs += ["random"] * (seats - len(refs))
    samples: list[tuple[float, float]] = []

    def resolve(ref: str) -> Seat:
        return TimedSeat(url, ref.removeprefix("remote:"), samples)

    run = secrets.token_hex(4)
    timeouts = faults = 0
    started = time.perf_counter()
    for i in range(matches):
        spec = MatchSpec(
            match_id=f"probe-{run}-{i}",
            rules={"preset": preset},
            seed=f"probe-{i}",
            bots=tuple(refs[i % seats:] + refs[: i % seats]),
            time_control=TimeControl(decision_ms=decision_ms, bank_ms=bank_ms, strike_limit=0),
            max_deals=max_deals,
        )
        result = run_match_sync(spec, resolve)
        for ref, stats in zip(spec.bots, result.seat_stats, strict=True):
            if ref.startswith("remote:"):
                timeouts += stats.timeouts
                faults += stats.platform_faults
    return {
        "decisions": len(samples),
        "charged_ms": [round(c * 1000, 3) for c, _ in samples],
        "round_trip_ms": [round(t * 1000, 3) for _, t in samples],
        "timeouts": timeouts,
        "platform_faults": faults,
        "seconds": round(time.perf_counter() - started, 2),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.rigs.probe")
    parser.add_argument("routing")
    parser.add_argument("bots", nargs="+")
    parser.add_argument("--matches", type=int, default=6)
    parser.add_argument("--max-deals", type=int, default=2)
    parser.add_argument("--decision-ms", type=int, default=50)
    parser.add_argument("--bank-ms", type=int, default=0)
    args = parser.parse_args(argv)
    out = probe(args.routing, args.bots, matches=args.matches, max_deals=args.max_deals,
                decision_ms=args.decision_ms, bank_ms=args.bank_ms)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
