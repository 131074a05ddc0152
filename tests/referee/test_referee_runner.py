"""The match runner: clock, fallbacks, strikes, forfeits, aborts, events and replays."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from referee_support import (
    CARD_TOKEN,
    GarbageSeat,
    HangingSeat,
    ScriptedSeat,
    SelfCancellingSeat,
    SlowSyncBot,
)

from arena import compiled
from arena.bots import GreedyBot, get_bot
from arena.engine import PRESETS, Game, Rules, parse_action, public_text
from arena.engine.replay import verify
from arena.match.fallback import fallback_action
from arena.match.types import JSON, MatchResult, MatchSpec, Seat, TimeControl
from arena.referee.runner import (
    RefereeError,
    forfeit_ranks,
    match_rules,
    resolve_seat,
    run_match,
    run_match_sync,
)
from arena.referee.seats import InProcessSeat

HERE = Path(__file__).parent


def spec_of(bots: tuple[str, ...], *, preset: str = "classic", seed: str = "s1",
            max_deals: int | None = 12, tc: TimeControl | None = None,
            options: dict[str, Any] | None = None) -> MatchSpec:
    rules: JSON = {"preset": preset, "options": options or {}}
    return MatchSpec(match_id="match-under-test", rules=rules, seed=seed, bots=bots,
                     time_control=tc or TimeControl(), max_deals=max_deals)


def greedy_seat(i: int = 0) -> Seat:
    return InProcessSeat(get_bot("greedy", seed=f"g{i}"), "greedy")


def play(spec: MatchSpec, seats: list[Seat], **kw: Any) -> MatchResult:
    return asyncio.run(run_match(spec, seats, **kw))


def annotated(replay: JSON) -> list[tuple[int, int, list[Any]]]:
    out = []
    for d in replay["deals"]:
        for j, a in enumerate(d["actions"]):
            if len(a) == 3:
                out.append((d["index"], j, a))
    return out


# ---------------------------------------------------------------------- fallbacks

FAULT_TABLE = [
    # fault, outcome counted, SeatStats field
    ("sleep", "timeout", "timeouts"),
    ("malformed", "malformed", "malformed"),
    ("not-text", "malformed", "malformed"),
    ("raise", "malformed", "malformed"),
    ("illegal", "illegal", "illegal"),
    ("padded", "malformed", "malformed"),
]


@pytest.mark.parametrize(("fault", "outcome", "field"), FAULT_TABLE)
def test_a_bad_answer_gets_the_fallback_and_a_strike(fault: str, outcome: str, field: str) -> None:
    tc = TimeControl(decision_ms=200, bank_ms=200, strike_limit=3)
    spec = spec_of(("scripted", "greedy", "greedy"), tc=tc, seed=f"fault-{fault}")
    bad = ScriptedSeat({4: fault}, sleep_s=3.0)
    events: list[JSON] = []

    async def spectator(event: JSON) -> None:
        events.append(event)

    result = play(spec, [bad, greedy_seat(1), greedy_seat(2)], on_event=spectator)

    assert result.status == "completed"
    stats = result.seat_stats[0]
    assert getattr(stats, field) == 1
    assert stats.strikes == 1
    assert sum(getattr(stats, f) for f in ("timeouts", "illegal", "malformed")) == 1
    assert all(s.strikes == 0 for s in result.seat_stats[1:])
    # The replay marks exactly that decision, with the documented fallback action.
    assert result.replay is not None
    marks = annotated(result.replay)
    assert len(marks) == 1
    _deal, _pos, (seat, text, note) = marks[0]
    assert (seat, note) == (0, outcome)
    assert text == fallback_action(bad.requests[3].legal)
    assert verify(result.replay) is None
    # Spectators see that the referee played for the seat.
    flagged = [e for e in events if e.get("fallback")]
    assert len(flagged) == 1 and flagged[0]["seat"] == 0 and flagged[0]["fallback"] == outcome


def test_a_seat_whose_decision_is_cancelled_gets_a_strike_not_a_crash() -> None:
    spec = spec_of(("cancel", "greedy", "greedy"), max_deals=2)
    result = play(spec, [SelfCancellingSeat(), greedy_seat(1), greedy_seat(2)])
    assert result.status == "completed"
    assert (result.seat_stats[0].malformed, result.seat_stats[0].strikes) == (1, 1)


class _FailingLater:
    """A clocked seat whose transport fails each decision a moment after it is asked (a
    program that ended, a gateway that went away), handing the failure over as
    :func:`arena.referee.errors.fail_decision` does."""

    name = "failing"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def submit_clocked(self, request: Any, clock: Any) -> asyncio.Future[str]:
        from arena.referee.clock import new_future
        from arena.referee.errors import fail_decision

        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = new_future(loop)
        clock.start()
        loop.call_later(0.01, fail_decision, future, self.error)
        return future

    async def decide_clocked(self, request: Any, clock: Any) -> str:
        return await self.submit_clocked(request, clock)

    async def decide(self, request: Any) -> str:
        raise AssertionError("the referee asks a clocked seat with its clock")

    async def on_event(self, match_id: str, event: JSON) -> None:
        return None


@pytest.mark.parametrize(("error", "field"), [(TimeoutError("its program ended"), "timeouts"),
                                              (RuntimeError("it broke"), "malformed")])
def test_a_decision_failed_while_waited_for_is_a_strike_up_to_the_forfeit(
    error: BaseException, field: str
) -> None:
    """Failed while the referee waits on it, in the compiled referee as in its source:
    each failure a strike, the third a forfeit (an error raised into the compiled wait
    once came out at the forfeit instead)."""
    spec = spec_of(("failing", "greedy", "greedy"), max_deals=2,
                   tc=TimeControl(decision_ms=1000, bank_ms=1000, strike_limit=3))
    result = play(spec, [_FailingLater(error), greedy_seat(1), greedy_seat(2)])  # type: ignore[list-item]
    assert result.status == "forfeit" and result.forfeit_seat == 0
    assert getattr(result.seat_stats[0], field) == 3


def test_time_over_the_deadline_is_drawn_from_the_bank() -> None:
    tc = TimeControl(decision_ms=50, bank_ms=5000, strike_limit=3)
    spec = spec_of(("scripted", "greedy", "greedy"), tc=tc, max_deals=1)
    slow = ScriptedSeat({1: "sleep"}, sleep_s=0.3)
    result = play(spec, [slow, greedy_seat(1), greedy_seat(2)])
    assert result.seat_stats[0].strikes == 0
    banks = [r.time_bank_ms for r in slow.requests]
    assert banks[0] == 5000
    # At least 250 ms over the 50 ms deadline came out of the bank, and never went back.
    assert banks[1] <= 4750
    assert banks == sorted(banks, reverse=True)
    assert result.seat_stats[0].think_ms_max >= 300


def test_a_slow_synchronous_bot_times_out_after_the_fact() -> None:
    tc = TimeControl(decision_ms=200, bank_ms=200, strike_limit=3)
    spec = spec_of(("slow-sync", "greedy", "greedy"), tc=tc, max_deals=2)
    bot = SlowSyncBot({2}, sleep_s=0.6)
    result = play(spec, [InProcessSeat(bot), greedy_seat(1), greedy_seat(2)])
    stats = result.seat_stats[0]
    assert (stats.timeouts, stats.strikes) == (1, 1)
    assert result.replay is not None
    marks = annotated(result.replay)
    assert [m[2][2] for m in marks] == ["timeout"]
    assert verify(result.replay) is None


@pytest.mark.parametrize("seat_kind", ["garbage", "hanging"])
def test_the_strike_limit_forfeits_the_match(seat_kind: str) -> None:
    tc = TimeControl(decision_ms=100, bank_ms=100, strike_limit=3)
    spec = spec_of(("greedy", "bad", "greedy"), tc=tc)
    bad = GarbageSeat() if seat_kind == "garbage" else HangingSeat()
    result = play(spec, [greedy_seat(0), bad, greedy_seat(2)])
    assert result.status == "forfeit"
    assert result.forfeit_seat == 1
    assert result.seat_stats[1].strikes == 3
    assert len(bad.requests) == 3
    assert result.ranks[1] == 3
    assert sorted(result.ranks[s] for s in (0, 2)) in ([1, 2], [1, 1])
    assert result.ranks == forfeit_ranks(result.scores, 1)
    assert result.replay is not None
    assert result.replay["result"]["status"] == "forfeit"
    assert result.replay["result"]["forfeit_seat"] == 1
    # Two fallbacks were played; the third strike ended the match before a third.
    assert len(annotated(result.replay)) == 2
    assert verify(result.replay) is None


def test_forfeit_ranks_put_the_forfeiting_seat_last_and_the_others_by_score() -> None:
    assert forfeit_ranks([500, 100, 300], 0) == [3, 2, 1]
    assert forfeit_ranks([200, 200, -50], 2) == [1, 1, 3]
    assert forfeit_ranks([10, 900, 400, 400], 1) == [3, 4, 1, 1]


def test_strike_limit_zero_never_forfeits() -> None:
    tc = TimeControl(decision_ms=1000, bank_ms=0, strike_limit=0)
    spec = spec_of(("greedy", "bad", "greedy"), tc=tc, max_deals=3)
    bad = GarbageSeat()
    result = play(spec, [greedy_seat(0), bad, greedy_seat(2)])
    assert result.status == "completed"
    assert result.seat_stats[1].strikes == result.seat_stats[1].decisions == len(bad.requests)
    assert result.replay is not None and verify(result.replay) is None


def test_setting_stop_aborts_the_match() -> None:
    spec = spec_of(("greedy", "greedy", "greedy"), max_deals=None)
    stop = asyncio.Event()
    seen: list[JSON] = []

    async def spectator(event: JSON) -> None:
        seen.append(event)
        if event["type"] == "deal_end" and event["deal"] == 1:
            stop.set()

    result = play(spec, [greedy_seat(i) for i in range(3)], on_event=spectator, stop=stop)
    assert result.status == "aborted"
    assert result.deals == 2
    assert seen[-1]["type"] == "match_end" and seen[-1]["status"] == "aborted"
    assert result.replay is not None and verify(result.replay) is None


def test_stop_interrupts_a_seat_that_is_thinking() -> None:
    tc = TimeControl(decision_ms=60_000, bank_ms=0, strike_limit=3)
    spec = spec_of(("greedy", "hang", "greedy"), tc=tc)
    hanging = HangingSeat()

    async def main() -> MatchResult:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.call_later(0.2, stop.set)
        return await run_match(spec, [greedy_seat(0), hanging, greedy_seat(2)], stop=stop)

    result = asyncio.run(asyncio.wait_for(main(), timeout=30))
    assert result.status == "aborted"
    assert result.seat_stats[1].timeouts == 0


# ---------------------------------------------------------------------- determinism, presets


def _comparable(result: MatchResult) -> JSON:
    data = result.to_json()
    data.pop("duration_s")
    for s in data["seat_stats"]:
        s.pop("think_ms_total")
        s.pop("think_ms_max")
    return data


@pytest.mark.parametrize("bots", [("greedy", "random", "greedy"), ("random",) * 3])
def test_the_same_spec_plays_the_same_match(bots: tuple[str, ...]) -> None:
    spec = spec_of(bots, seed="same", max_deals=20)
    first = run_match_sync(spec)
    second = run_match_sync(spec)
    assert _comparable(first) == _comparable(second)
    assert json.dumps(first.replay, sort_keys=True) == json.dumps(second.replay, sort_keys=True)
    other = run_match_sync(spec_of(bots, seed="other", max_deals=20))
    assert other.replay is not None and first.replay is not None
    assert other.replay["deals"] != first.replay["deals"]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_plays_to_the_end_and_its_replay_verifies(preset: str) -> None:
    n = Rules.preset(preset).players
    for lineup in (("greedy",) * n, ("random",) * n, tuple(["greedy", "random"] * 2)[:n]):
        result = run_match_sync(spec_of(lineup, preset=preset, seed=f"{preset}-1",
                                        max_deals=40))
        assert result.status == "completed", lineup
        assert result.replay is not None
        assert verify(result.replay) is None
        assert result.replay["result"]["status"] == "completed"
        assert sorted(result.ranks)[0] == 1
        assert all(s.strikes == 0 for s in result.seat_stats)


def test_max_deals_from_the_spec_bounds_the_game() -> None:
    spec = spec_of(("random",) * 3, max_deals=3)
    assert match_rules(spec).max_deals == 3
    result = run_match_sync(spec)
    assert result.deals == 3
    assert result.replay is not None
    assert result.replay["rules"]["options"]["max_deals"] == 3


# ---------------------------------------------------------------------- events


def _public_cards(replay: JSON, events: list[JSON]) -> None:
    """Walk the events against a re-simulated game: no card is named before it is public."""
    game = Game(Rules.from_json(replay["rules"]), seed=replay["seed"])
    deals = iter(replay["deals"])
    actions: list[list[Any]] = []
    revealed: set[str] = set()
    talon: set[str] = set()
    step = 0
    tricks = 0
    for event in events:
        kind = event["type"]
        tokens = set(CARD_TOKEN.findall(json.dumps(event)))
        if kind == "match_start":
            assert replay["seed"] not in json.dumps(event)
        if kind == "deal_start":
            deal = next(deals)
            game.deal(deal["deck"])
            actions = deal["actions"]
            step = 0
            tricks = 0
            revealed = set()
            talon = set()
            for t in game.talon:
                talon |= {c for c in _names(t)}
        if kind == "action" and not event.get("auto"):
            seat, text = actions[step][0], actions[step][1]
            assert event["seat"] == seat
            action = parse_action(text)
            if game.crawl or action.kind_name in ("give", "discard", "bank", "crawl"):
                # Cards passed face down, or played face down while crawling.
                assert event["action"] == action.kind_name + " ??" or (
                    action.kind_name == "give"
                    and event["action"] == f"give ?? {action.target}"
                ), event
                assert not tokens
            else:
                assert event["action"] == public_text(action)
            if action.kind_name in ("play", "marry", "half", "aces", "nines") and tokens:
                assert game.hands[seat] >> action.card & 1
                revealed |= tokens
            game.apply(action)
            step += 1
            continue
        if kind == "trick":
            # The cards of a finished trick are public: they must be the ones played.
            raw = [e for e in game.records[-1].events if e[0] == "trick"]
            assert event["cards"] == [[s, c] for s, c in
                                      ([s, _names(1 << c)[0]] for s, c in raw[tricks][2])]
            tricks += 1
            revealed |= tokens
            continue
        if kind == "talon":
            # Shown only when the engine shows it to every seat, and only talon cards.
            assert game.talon_public and tokens <= talon
            assert all(set(game.observation(s)["talon"]) == tokens for s in range(game.n))
            revealed |= tokens
            continue
        assert tokens <= revealed, (event, tokens - revealed)


def _names(mask: int) -> list[str]:
    from arena.engine import cards_str

    return cards_str(mask)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_events_never_show_hidden_cards(preset: str) -> None:
    n = Rules.preset(preset).players
    spec = spec_of(tuple(["greedy", "random"] * 2)[:n], preset=preset, seed="ev", max_deals=8)
    events: list[JSON] = []

    async def spectator(event: JSON) -> None:
        events.append(event)

    result = play(spec, [resolve_seat(b, i, spec) for i, b in enumerate(spec.bots)],
                  on_event=spectator)
    assert result.replay is not None
    _public_cards(result.replay, events)


def test_event_stream_shape_and_every_seat_gets_it() -> None:
    spec = spec_of(("scripted", "greedy", "scripted"), max_deals=4)
    a, c = ScriptedSeat(name="a"), ScriptedSeat(name="c")
    events: list[JSON] = []

    async def spectator(event: JSON) -> None:
        events.append(event)

    result = play(spec, [a, greedy_seat(1), c], on_event=spectator)
    assert a.events == events == c.events
    kinds = [e["type"] for e in events]
    assert kinds[0] == "match_start" and kinds[-1] == "match_end"
    assert kinds.count("match_start") == kinds.count("match_end") == 1
    assert kinds.count("deal_end") == result.deals == 4
    assert kinds.count("deal_start") == kinds.count("deal_end") + kinds.count("redeal")
    start = events[0]
    assert start["seats"] == list(spec.bots) and start["players"] == 3
    assert "seed" not in start
    end = events[-1]
    assert end["scores"] == result.scores and end["ranks"] == result.ranks
    for e in events:
        if e["type"] == "deal_end":
            assert sorted(e) == sorted(["type", "deltas", "scores", "declarer", "contract",
                                        "made", "deal"])
        if e["type"] == "trick":
            assert len(e["cards"]) == 3 and e["winner"] in (0, 1, 2)
    # Seats' own hands come only through their observations.
    assert all(len(r.observation["hand"]) > 0 for r in a.requests if
               r.observation["phase"] != "blind")


class _Listener:
    """An in-process bot that plays its first legal action and keeps the events it gets."""

    def __init__(self, event_types: frozenset[str] | None = None) -> None:
        if event_types is not None:
            self.event_types = event_types
        self.events: list[JSON] = []

    def decide(self, observation: JSON, legal: list[str]) -> str:
        return next((a for a in legal if a != "concede"), legal[0])

    def on_event(self, event: JSON) -> None:
        self.events.append(event)


@pytest.mark.parametrize("with_spectator", [False, True])
def test_a_bot_naming_its_event_types_gets_those_alone(with_spectator: bool) -> None:
    spec = spec_of(("a", "b", "c"), max_deals=4)
    wants = frozenset({"deal_start", "trick", "talon"})
    picky, all_of_them = _Listener(wants), _Listener()
    seats: list[Seat] = [InProcessSeat(picky, "a"), InProcessSeat(all_of_them, "b"),
                         InProcessSeat(_Listener(frozenset({"deal_end"})), "c")]
    seen: list[JSON] = []
    kw: dict[str, Any] = {"on_event_nowait": seen.append} if with_spectator else {}
    result = play(spec, seats, **kw)
    assert picky.events == [e for e in all_of_them.events if e["type"] in wants]
    assert {e["type"] for e in picky.events} == wants
    if with_spectator:
        # A bot's events carry the match id, as over a gateway; a spectator's are the bare ones.
        assert [{**e, "match_id": spec.match_id} for e in seen] == all_of_them.events
    kinds = [e["type"] for e in all_of_them.events]
    assert kinds.count("deal_end") == result.deals == 4
    # The deal count (read from the events) is right whoever listens to what.
    only_picky = play(spec, [InProcessSeat(_Listener(wants), n) for n in "abc"])
    assert only_picky.deals == result.deals and only_picky.scores == result.scores


# ---------------------------------------------------------------------- seats and resolution


def test_a_failing_spectator_neither_stops_the_match_nor_floods_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    spec = spec_of(("greedy",) * 3, max_deals=2)

    async def broken(event: JSON) -> None:
        raise OSError("the viewer went away")

    with caplog.at_level("WARNING", logger="arena.referee.runner"):
        result = play(spec, [greedy_seat(i) for i in range(3)], on_event=broken)
    assert result.status == "completed"
    warnings = [r for r in caplog.records if "failed to take" in r.getMessage()]
    assert len(warnings) == 1 and "the spectator" in warnings[0].getMessage()


def test_an_engine_state_without_legal_actions_ends_the_match_as_an_error(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if compiled.status().compiled:
        # A compiled referee calls the compiled engine directly, past any patch: this test
        # runs on the source (ARENA_PURE=1, arena.compiled), where the patch reaches it.
        res = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             f"{__file__}::{request.node.name}"],
            capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, compiled.PURE_ENV: "1"},
        )
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        assert "1 passed" in res.stdout
        return
    calls = {"n": 0}
    real = Game.legal_actions

    def flaky(self: Game) -> list[Any]:
        calls["n"] += 1
        return [] if calls["n"] == 5 else real(self)

    monkeypatch.setattr(Game, "legal_actions", flaky)
    before = REGISTRY.get_sample_value("arena_matches_finished_total", {"status": "error"}) or 0
    seat = ScriptedSeat(name="asked")
    spec = spec_of(("asked", "greedy", "greedy"), max_deals=2)
    with pytest.raises(RefereeError, match="has no legal action"):
        play(spec, [seat, greedy_seat(1), greedy_seat(2)])
    after = REGISTRY.get_sample_value("arena_matches_finished_total", {"status": "error"})
    assert after == before + 1
    assert all(r.legal for r in seat.requests)


def test_seat_count_must_match_the_rules() -> None:
    spec = spec_of(("greedy", "greedy"))
    with pytest.raises(ValueError, match="2 seats for 3 players"):
        play(spec, [greedy_seat(0), greedy_seat(1)])


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("grredy", "unknown bot 'grredy'"),
        ("remote:alice", "needs a gateway"),
        ("no_such_module_xyz:Bot", "cannot import no_such_module_xyz"),
        ("referee_support:NoSuchBot", "has no 'NoSuchBot'"),
        ("missing/file.py:Bot", "no file missing/file.py"),
    ],
)
def test_bad_bot_references_are_reported(ref: str, message: str) -> None:
    spec = spec_of((ref, "greedy", "greedy"))
    with pytest.raises(ValueError, match=message):
        run_match_sync(spec)


@pytest.mark.parametrize(
    "ref",
    [
        "referee_support:FirstLegalBot",
        "referee_support:AsyncFirstLegalBot",
        str(HERE / "referee_support.py") + ":FirstLegalBot",
    ],
)
def test_run_match_sync_plays_a_module_class_bot(ref: str) -> None:
    spec = spec_of((ref, "greedy", "random"), max_deals=3)
    result = run_match_sync(spec)
    assert result.status == "completed"
    assert result.bots == spec.bots
    assert result.seat_stats[0].decisions > 0 and result.seat_stats[0].strikes == 0
    assert result.replay is not None and result.replay["seats"][0] == ref


def test_python_bots_get_a_hashed_seat_seed_and_the_rules() -> None:
    spec = spec_of(("referee_support:FirstLegalBot", "greedy", "greedy"), seed="secret-seed")
    seat = resolve_seat(spec.bots[0], 0, spec)
    assert isinstance(seat, InProcessSeat)
    bot = seat.bot
    assert "secret-seed" not in bot.seed and len(bot.seed) == 64
    assert bot.rules == match_rules(spec).to_json()


def test_a_resolver_supplies_remote_seats() -> None:
    asked: list[str] = []

    def resolver(ref: str) -> Seat:
        asked.append(ref)
        return ScriptedSeat(name=ref.removeprefix("remote:"))

    spec = spec_of(("remote:alice", "greedy", "remote:bob"), max_deals=2)
    result = run_match_sync(spec, resolver)
    assert asked == ["remote:alice", "remote:bob"]
    assert result.status == "completed"
    assert result.bots == spec.bots


def test_metrics_count_decisions_strikes_and_matches() -> None:
    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    before = {
        "ok": value("arena_decisions_total", bot="metric-bot", outcome="ok"),
        "malformed": value("arena_decisions_total", bot="metric-bot", outcome="malformed"),
        "strikes": value("arena_strikes_total", bot="metric-bot"),
        "forfeits": value("arena_forfeits_total", bot="metric-bot"),
        "finished": value("arena_matches_finished_total", status="forfeit"),
        "deals": value("arena_deals_total"),
    }
    tc = TimeControl(decision_ms=1000, bank_ms=0, strike_limit=2)
    spec = spec_of(("greedy", "metric-bot", "greedy"), tc=tc)
    bad = ScriptedSeat({3: "malformed", 5: "malformed"}, name="metric-bot")
    result = play(spec, [greedy_seat(0), bad, greedy_seat(2)])
    assert result.status == "forfeit"
    assert value("arena_decisions_total", bot="metric-bot", outcome="ok") - before["ok"] == 3
    assert value("arena_decisions_total", bot="metric-bot", outcome="malformed") - before[
        "malformed"] == 2
    assert value("arena_strikes_total", bot="metric-bot") - before["strikes"] == 2
    assert value("arena_forfeits_total", bot="metric-bot") - before["forfeits"] == 1
    assert value("arena_matches_finished_total", status="forfeit") - before["finished"] == 1
    assert value("arena_deals_total") - before["deals"] == result.deals
    assert value("arena_decision_latency_seconds_count", bot="metric-bot") >= 5
    assert value("arena_matches_running") == 0


def test_a_match_of_built_in_bots_lets_other_tasks_run() -> None:
    """A gateway's loop keeps serving while it referees a match of in-process bots."""
    spec = spec_of(("greedy", "random", "greedy"), max_deals=10)

    async def main() -> tuple[int, int]:
        ticks = 0
        done = False

        async def ticker() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        start = ticks
        result = await run_match(spec, [resolve_seat(b, i, spec) for i, b in
                                        enumerate(spec.bots)])
        during = ticks - start
        done = True
        await task
        return during, result.deals

    during, deals = asyncio.run(main())
    assert during >= deals == 10


def test_greedy_seat_objects_can_be_reused_for_a_second_match() -> None:
    spec = spec_of(("greedy",) * 3, max_deals=2)
    seats: list[Seat] = [InProcessSeat(GreedyBot(), "greedy") for _ in range(3)]
    assert play(spec, seats).status == "completed"
    assert play(spec, seats).status == "completed"


class MetricsWatchingSeat(ScriptedSeat):
    """Notes, at each of its decisions, how many of its decisions the metrics show so far."""

    def __init__(self, faults: dict[int, str] | None = None, name: str = "watching") -> None:
        super().__init__(faults, name=name)
        self.seen: list[float] = []

    async def decide(self, request: Any) -> str:
        self.seen.append(decisions_counted(self.name))
        return await super().decide(request)


def decisions_counted(bot: str) -> float:
    return sum(
        REGISTRY.get_sample_value("arena_decisions_total", {"bot": bot, "outcome": o}) or 0.0
        for o in ("ok", "timeout", "illegal", "malformed")
    )


def test_metrics_are_written_during_a_match_not_only_at_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from arena.referee import runner

    monkeypatch.setattr(runner, "METRICS_FLUSH_INTERVAL_S", 0.0)  # after every decision
    seat = MetricsWatchingSeat(name="live-watcher")
    before = decisions_counted("live-watcher")
    play(spec_of(("greedy", "live-watcher", "greedy"), max_deals=3), [
        greedy_seat(0), seat, greedy_seat(2)])
    assert [n - before for n in seat.seen] == list(range(len(seat.seen)))


def test_metrics_written_in_one_go_equal_counting_every_decision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from arena.referee import runner

    monkeypatch.setattr(runner, "METRICS_FLUSH_INTERVAL_S", 1e9)  # only at the end

    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    bot = "batch-watcher"
    before = {
        "decisions": decisions_counted(bot),
        "illegal": value("arena_decisions_total", bot=bot, outcome="illegal"),
        "strikes": value("arena_strikes_total", bot=bot),
        "count": value("arena_decision_latency_seconds_count", bot=bot),
        "sum": value("arena_decision_latency_seconds_sum", bot=bot),
        "inf": value("arena_decision_latency_seconds_bucket", bot=bot, le="+Inf"),
        "deals": value("arena_deals_total"),
    }
    seat = MetricsWatchingSeat({2: "illegal", 4: "illegal"}, name=bot)
    result = play(spec_of(("greedy", bot, "greedy"), max_deals=4), [
        greedy_seat(0), seat, greedy_seat(2)])
    assert result.status == "completed"
    stats = result.seat_stats[1]
    # Nothing was written while the match ran...
    assert {n - before["decisions"] for n in seat.seen} == {0}
    # ...and everything once it ended.
    assert decisions_counted(bot) - before["decisions"] == stats.decisions == len(seat.seen)
    assert value("arena_decisions_total", bot=bot, outcome="illegal") - before["illegal"] == 2
    assert value("arena_strikes_total", bot=bot) - before["strikes"] == 2
    assert value("arena_decision_latency_seconds_count", bot=bot) - before["count"] == (
        stats.decisions)
    assert value("arena_decision_latency_seconds_bucket", bot=bot, le="+Inf") - before[
        "inf"] == stats.decisions
    assert value("arena_decision_latency_seconds_sum", bot=bot) - before["sum"] == (
        pytest.approx(stats.think_ms_total / 1000.0))
    assert value("arena_deals_total") - before["deals"] == result.deals
