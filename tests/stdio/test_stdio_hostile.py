"""Hostile bot programs played by the referee directly (``cmd:`` seats).

Every kind of failure at once, each in a match of its own beside honest ones, all on one
event loop: each gets the strikes a gRPC bot gets for the same fault (malformed, illegal,
timeout; a dead or cut-off bot times out at every decision), its program's status says
what happened, and every match, the honest ones included, reaches its end.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from stdio_support import HOSTILE

from arena.bots import get_bot
from arena.engine import replay as rp
from arena.match.types import MatchResult, MatchSpec, Seat, TimeControl
from arena.referee.runner import run_match
from arena.referee.seats import InProcessSeat
from arena.stdio.seat import StdioSeat

TC = TimeControl(decision_ms=300, bank_ms=300, strike_limit=3)
LOG_CAP = 64 << 10


@dataclass
class Case:
    mode: str
    status: str  # the match's
    state: str  # the program's
    strikes: dict[str, int] = field(default_factory=dict)
    says: tuple[str, ...] = ()
    tc: TimeControl = TC


CASES = [
    Case("honest", "completed", "ok"),
    Case("garbage", "forfeit", "ok", {"malformed": 3}),
    Case("illegal", "forfeit", "ok", {"illegal": 3}),
    Case("padded", "forfeit", "ok", {"malformed": 3}),
    Case("stall", "forfeit", "timeout", {"timeouts": 3}, ("3 decision(s) not answered",)),
    Case("late", "completed", "timeout", {"timeouts": 1}, ("1 decision(s) not answered",),
         TimeControl(decision_ms=2000, bank_ms=0, strike_limit=5)),
    Case("die", "forfeit", "crashed", {"timeouts": 3},
         ("exited with code 3 during the match", "its last words: dying now")),
    Case("killed", "forfeit", "crashed", {"timeouts": 3}, ("killed by signal 9 (SIGKILL)",)),
    Case("flood", "forfeit", "protocol_error", {}, ("too many refused messages",)),
    Case("oversize", "forfeit", "protocol_error", {},
         ("a line of more than 1048576 bytes; the session is closed",)),
    Case("badhello", "forfeit", "protocol_error", {"timeouts": 3},
         ("protocol version 7 is not spoken here",)),
    Case("nohello", "forfeit", "timeout", {"timeouts": 3}, ("said no hello within 1 s",)),
    Case("early-exit", "forfeit", "start_failed", {"timeouts": 3},
         ("exited with code 1 before its hello", "cannot load my model")),
    Case("stderr", "completed", "ok"),
]


def _spec(name: str, bots: tuple[str, ...], tc: TimeControl) -> MatchSpec:
    return MatchSpec(match_id=name, rules={"preset": "classic", "options": {}},
                     seed=f"hostile/{name}", bots=bots, time_control=tc, max_deals=4)


def _greedy(i: int) -> Seat:
    return InProcessSeat(get_bot("greedy", seed=f"g{i}"), "greedy")


async def _play(spec: MatchSpec, seats: list[Seat]) -> MatchResult:
    try:
        return await run_match(spec, seats)
    finally:
        for seat in seats:
            if isinstance(seat, StdioSeat):
                await seat.aclose()


def test_hostile_programs_get_the_statuses_and_strikes_of_grpc_bots() -> None:
    logs: dict[str, list[str]] = {}

    def program(mode: str, argv: list[str] | None = None) -> StdioSeat:
        return StdioSeat(argv or [sys.executable, str(HOSTILE), mode], name=f"hostile-{mode}",
                         log=logs.setdefault(mode, []).append, log_max_bytes=LOG_CAP,
                         hello_timeout_s=1.0)

    async def play_all() -> tuple[dict[str, tuple[MatchResult, StdioSeat]], list[MatchResult],
                                  float]:
        seats = {case.mode: program(case.mode) for case in CASES}
        seats["missing"] = program("missing", ["/nonexistent/bot"])
        games: dict[str, Any] = {}
        for case in [*CASES, Case("missing", "forfeit", "start_failed", {"timeouts": 3})]:
            spec = _spec(case.mode, (f"cmd:{case.mode}", "greedy", "greedy"), case.tc)
            games[case.mode] = _play(spec, [seats[case.mode], _greedy(1), _greedy(2)])
        # Honest matches at the same time: one of built-in bots, one with an honest program.
        honest = [
            _play(_spec("builtin", ("greedy",) * 3, TC), [_greedy(0), _greedy(1), _greedy(2)]),
            _play(_spec("program", ("cmd:honest", "greedy", "greedy"), TC),
                  [program("honest-2", [sys.executable, str(HOSTILE), "honest"]),
                   _greedy(1), _greedy(2)]),
        ]
        started = time.monotonic()
        done = await asyncio.wait_for(asyncio.gather(*games.values(), *honest), 120)
        took = time.monotonic() - started
        results = dict(zip(games, done[: len(games)], strict=True))
        return ({m: (results[m], seats[m]) for m in games}, list(done[len(games):]), took)

    played, honest, took = asyncio.run(play_all())
    print(f"{len(played)} hostile and {len(honest)} honest matches at once took {took:.1f} s")
    for result in honest:
        assert result.status == "completed"
        assert all(s.strikes == 0 for s in result.seat_stats)
        assert result.replay is not None and rp.verify(result.replay) is None
    cases = {case.mode: case for case in CASES}
    cases["missing"] = Case("missing", "forfeit", "start_failed", {"timeouts": 3},
                            ("cannot start /nonexistent/bot: No such file or directory",))
    for mode, (result, seat) in played.items():
        case = cases[mode]
        stats = result.seat_stats[0]
        status = seat.status
        where = f"{mode}: {result.status} {stats} {status}"
        assert result.status == case.status, where
        assert status.state == case.state, where
        for said in case.says:
            assert said in status.detail, where
        for kind, count in case.strikes.items():
            assert getattr(stats, kind) == count, where
        if case.status == "forfeit":
            assert result.forfeit_seat == 0 and stats.strikes == 3, where
        else:
            assert stats.strikes == sum(case.strikes.values()), where
        # The honest seats of every match played on and were never struck.
        assert all(s.strikes == 0 for s in result.seat_stats[1:]), where
        assert result.replay is not None and rp.verify(result.replay) is None, where
    assert played["die"][1].status.exit_code == 3
    assert played["killed"][1].status.signal == 9
    assert played["late"][1].session.refused == 1  # its late answer, refused
    assert played["flood"][1].session.refused >= 256
    # Standard error goes to the log, capped, never into the protocol.
    assert logs["die"] == ["dying now"]
    spam = logs["stderr"]
    assert spam[-1] == f"[more standard error dropped: over {LOG_CAP} bytes]"
    assert sum(len(line) + 1 for line in spam[:-1]) <= LOG_CAP


def test_a_program_slow_to_start_costs_no_decision_any_time() -> None:
    """The referee waits for the hello before the first deal: a program that takes a
    second to start plays a match whose decisions have 200 ms each, without a strike."""
    slow = ("import time, runpy, sys; time.sleep(1.0); sys.argv = ['bot', 'honest']; "
            f"runpy.run_path({str(HOSTILE)!r}, run_name='__main__')")
    seat = StdioSeat([sys.executable, "-c", slow], name="slow-start")
    tc = TimeControl(decision_ms=200, bank_ms=0, strike_limit=1)
    result = asyncio.run(_play(_spec("slow", ("cmd:slow", "greedy", "greedy"), tc),
                               [seat, _greedy(1), _greedy(2)]))
    assert result.status == "completed" and result.seat_stats[0].strikes == 0
    assert seat.status.state == "ok"


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("cmd:", "give the program's command after cmd:"),
        ("cmd:./no-such-bot", "no program ./no-such-bot (build it first?)"),
        ("cmd:no-such-program-anywhere", "no program 'no-such-program-anywhere' on the PATH"),
        ("cmd:'unclosed", "No closing quotation"),
    ],
)
def test_a_cmd_reference_that_cannot_run_is_a_usage_error(
    ref: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.referee.cli import bot_check_main, match_main

    assert match_main([ref, "greedy", "random"]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert bot_check_main([ref]) == 2
    assert says in capsys.readouterr().err
