"""The match runner: one game of 1000 between seats, with a clock, fallbacks and a replay.

The runner owns the :class:`~arena.engine.Game`; seats only ever see what the engine's
observation shows them and the public events.  Every decision goes through the same steps
(see ``docs/referee.md``):

1. the seat gets a :class:`DecisionRequest` (its observation, the legal actions as text,
   the per-decision deadline and what is left of its time bank);
2. the answer is timed: time beyond the deadline is drawn from the seat's bank, and an
   answer that needed more than deadline plus bank is a timeout;
3. a timeout, an unparsable answer (malformed) or an illegal action is replaced by the
   documented fallback action (:mod:`arena.match.fallback`), marked in the replay, and
   costs a strike; at ``strike_limit`` strikes the seat forfeits the match;
4. the action is applied and the public events it caused go to every seat and to the
   spectator callback.

In-process seats (built-in bots) are called straight on the event loop without a timer;
their time is measured after the fact, which keeps the referee at tens of thousands of
decisions per second.  For the same reason decisions, strikes and deals are counted in
plain Python and written to the Prometheus metrics about once a second and at the end of
the match (:class:`~arena.observability.tally.DecisionTally`), not on every decision.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from arena.bots import BUILTIN_BOTS, get_bot, seat_seed
from arena.engine import Action, EngineError, Game, NotationError, Rules, cards_str, parse_action
from arena.engine import commitment as cm
from arena.engine.game import DealRecord
from arena.engine.replay import replay_from_game
from arena.engine.view import PUBLIC_TYPE, public_events, public_talon
from arena.match.fallback import fallback_action
from arena.match.types import (
    ACTION_MAX,
    JSON,
    DecisionRequest,
    MatchResult,
    MatchSpec,
    Seat,
    SeatResolver,
    SeatStats,
)
from arena.observability import metrics as m
from arena.observability.tally import DecisionTally
from arena.referee.clock import (
    PLATFORM_LIMIT_S,
    BotClock,
    LoopStalls,
    PlatformError,
    wait_answer,
)
from arena.referee.errors import PlatformUnavailable as PlatformUnavailable
from arena.referee.errors import RefereeError as RefereeError
from arena.referee.seats import InProcessSeat, as_seat, load_object, make_instance, seat_kind

log = logging.getLogger(__name__)

EventSink = Callable[[JSON], Awaitable[None]]

OK = "ok"
TIMEOUT = "timeout"
ILLEGAL = "illegal"
MALFORMED = "malformed"
#: The platform failed to carry the request (never charged to the seat: asked again).
PLATFORM = "platform"
#: How long a match waits out a platform outage, asking again after pauses that grow
#: from PLATFORM_RETRY_S to PLATFORM_RETRY_MAX_S, before it gives up.
PLATFORM_OUTAGE_S = 300.0
PLATFORM_RETRY_S = 0.5
PLATFORM_RETRY_MAX_S = 10.0

COMPLETED = "completed"
FORFEIT = "forfeit"
ABORTED = "aborted"

#: How long the runner waits, at the end of a match, for cancelled remote decisions to
#: wind down before it gives up on them.
_CANCEL_GRACE_S = 1.0

#: Longest time, in seconds, the decision and deal counts of a running match stay out of
#: the metrics: short enough for a live dashboard (scraped every 10 s or so), long enough
#: that a match of built-in bots writes its metrics once or twice rather than on each of
#: its thousands of decisions.
METRICS_FLUSH_INTERVAL_S = 1.0


def _internal_dirs() -> tuple[str, ...]:
    """Where the arena, the SDK and the standard library live: frames there are the
    machinery around a bot, not the bot's own code."""
    import os
    import sysconfig

    import thousand_bot

    arena_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sdk_dir = os.path.dirname(os.path.abspath(thousand_bot.__file__ or ""))
    return tuple(d + os.sep for d in (arena_dir, sdk_dir, sysconfig.get_paths()["stdlib"]))


def raised_at(exc: BaseException) -> str:
    """Where a bot's exception came from: the innermost frame of the bot's own code
    (``mybot.py:12 in play: return 1 / 0``), else the innermost frame there is."""
    import os

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "no traceback"
    internal = _internal_dirs()
    own = [f for f in frames if not os.path.abspath(f.filename).startswith(internal)]
    frame = (own or frames)[-1]
    line = f": {frame.line.strip()}" if frame.line else ""
    return f"{os.path.basename(frame.filename)}:{frame.lineno} in {frame.name}{line}"


class AnswerTooLong(NotationError):
    """An answer longer than any action: malformed without being parsed, however it ends
    (see :data:`arena.match.types.ACTION_MAX`)."""


def parse_answer(answer: str) -> Action:
    """The action a seat's answer names, read as the referee reads every answer; raises
    :class:`AnswerTooLong`, or the engine's :class:`NotationError` for text that names no
    action. ``arena bot-check`` reads answers with it too, to judge as a match will."""
    if len(answer) > ACTION_MAX:
        raise AnswerTooLong(f"longer than {ACTION_MAX} characters")
    return parse_action(answer)


def match_rules(spec: MatchSpec) -> Rules:
    """The rules of a spec, with the spec's deal limit applied (``RulesError`` if invalid).

    Built once per distinct rules (they are immutable): a tournament asks for the same
    rules for every seat of every match."""
    key = (json.dumps(spec.rules, sort_keys=True, default=str), spec.max_deals)
    rules = _RULES_CACHE.get(key)
    if rules is None:
        rules = Rules.from_json(spec.rules)
        if spec.max_deals is not None:
            options = rules.overrides()
            options["max_deals"] = spec.max_deals
            rules = Rules.preset(rules.name, **options)
        if len(_RULES_CACHE) >= 256:
            _RULES_CACHE.clear()
        _RULES_CACHE[key] = rules
    return rules


_RULES_CACHE: dict[tuple[str, int | None], Rules] = {}


class _SeatState:
    """Per-seat bookkeeping: clock, counters and the metrics not yet written."""

    __slots__ = ("bank_ms", "clocked", "decisions", "direct", "event_hook", "event_types",
                 "in_process", "label", "name", "raised", "seat", "stats", "submit_game",
                 "tally", "think_ms_max", "think_ms_total", "wants_events")

    def __init__(self, seat: Seat, name: str, bank_ms: int, label: str | None = None) -> None:
        self.seat = seat
        self.name = name
        self.bank_ms = float(bank_ms)
        self.stats = SeatStats()
        #: The counts of every decision, kept here as typed numbers (compiled, each is
        #: a native add) and written into ``stats`` once, by :meth:`settle`.
        self.decisions = 0
        self.think_ms_total = 0.0
        self.think_ms_max = 0.0
        #: Exceptions the seat's bot raised in this match (the first is logged whole).
        self.raised = 0
        self.in_process = bool(getattr(seat, "in_process", False))
        self.clocked = callable(getattr(seat, "decide_clocked", None))
        self.wants_events = bool(getattr(seat, "wants_events", True))
        #: The only event types the seat takes (None: every type).
        types = getattr(seat, "event_types", None)
        self.event_types: frozenset[str] | None = (
            frozenset(types) if types is not None else None
        )
        #: The ``bot`` label of this seat's metrics: the participant's name in a tournament
        #: (so greedy-1 and greedy-2 stay apart, as in the ratings), else the seat's name.
        self.label = label or seat.name or name
        self.tally = DecisionTally(self.label)
        #: ``decide(observation, legal)`` of an in-process bot, called with no request
        #: object and no coroutine in between (the hot path of every tournament).
        self.direct: Callable[[JSON, Sequence[str]], Any] | None = (
            getattr(seat, "direct_decide", None) if self.in_process else None
        )
        #: A plain function taking ``(match_id, event)``, for seats whose event delivery
        #: never waits; other seats' ``on_event`` is awaited.
        self.event_hook: Callable[[str, JSON], None] | None = getattr(
            seat, "on_event_nowait", None
        )
        #: A clocked seat that serialises its request at once may take it as its parts,
        #: the observation read straight from the game (the gateway's remote seats):
        #: ``submit_game(game, seat, match_id, request_id, legal, deadline_ms,
        #: time_bank_ms, clock)``, a future of the answer.
        self.submit_game: Callable[..., asyncio.Future[Any]] | None = (
            getattr(seat, "submit_game", None) if self.clocked else None
        )

    def settle(self) -> SeatStats:
        """The seat's statistics, with the counts kept here written in."""
        stats = self.stats
        stats.decisions = self.decisions
        stats.think_ms_total = self.think_ms_total
        stats.think_ms_max = self.think_ms_max
        return stats


class _Stop(Exception):
    """Internal: the match ends before the game does (forfeit or abort)."""

    def __init__(self, status: str, seat: int | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.seat = seat


class _Match:
    def __init__(
        self,
        spec: MatchSpec,
        rules: Rules,
        seats: Sequence[Seat],
        on_event: EventSink | None,
        stop: asyncio.Event | None,
        labels: Sequence[str] | None = None,
        on_event_nowait: Callable[[JSON], None] | None = None,
    ) -> None:
        self.spec = spec
        self.rules = rules
        self.tc = spec.time_control
        self.game = Game(rules, seed=spec.seed)
        n = rules.players
        self.names = (
            [str(b) for b in spec.bots] if len(spec.bots) == n else [s.name for s in seats]
        )
        self.states = [
            _SeatState(seat, self.names[i], self.tc.bank_ms,
                       labels[i] if labels and i < len(labels) else None)
            for i, seat in enumerate(seats)
        ]
        self.listeners = [st for st in self.states if st.wants_events]
        self.hooks = [(st, st.event_hook) for st in self.listeners if st.event_hook is not None]
        #: The hooks that take each event type, worked out at its first event.
        self.hooks_by_type: dict[str, list[tuple[_SeatState, Callable[[str, JSON], None]]]] = {}
        self.awaited = [st for st in self.listeners if st.event_hook is None]
        #: Whether delivering an event ever has to wait (a remote seat, a spectator).
        self.events_wait = bool(self.awaited) or on_event is not None
        self.on_event = on_event
        #: A spectator that takes events as a plain call (the gateway's event log).
        self.spectator_nowait = on_event_nowait
        #: Whether anything takes events without waiting.
        self.nowait = bool(self.hooks) or on_event_nowait is not None
        #: Whether anybody follows the match's events at all.
        self.followed = bool(self.listeners) or self.events_wait or on_event_nowait is not None
        #: The event types anybody takes (None: all): the others are not even built.
        self.wanted: frozenset[str] | None = None
        if on_event is None and on_event_nowait is None and self.listeners and all(
            st.event_types is not None for st in self.listeners
        ):
            self.wanted = frozenset().union(*(st.event_types or () for st in self.listeners))
        self.stop = stop
        self.stop_task: asyncio.Future[Any] | None = None
        #: The loop's stall watcher, looked up once: every lookup costs a getpid() system
        #: call (asyncio.get_running_loop), and clocked seats need it on every decision.
        self.stalls: LoopStalls | None = None
        self.annotations: dict[tuple[int, int], str] = {}
        self.cursor = 0
        self.talon_shown = False
        self.requests = 0
        self.cancelled: set[asyncio.Future[Any]] = set()
        self.failed_listeners: set[str] = set()
        self.deals_unflushed = 0
        self.flushed_at = time.perf_counter()

    def flush_metrics(self, now: float) -> None:
        """Write the decisions, strikes and deals counted since the last flush."""
        self.flushed_at = now
        for st in self.states:
            st.tally.flush()
        if self.deals_unflushed:
            m.DEALS_TOTAL.inc(self.deals_unflushed)
            self.deals_unflushed = 0

    # ------------------------------------------------------------------ events
    def emit_now(self, event: JSON) -> None:
        """Deliver an event to the seats that take it without waiting."""
        match_id = self.spec.match_id
        kind = event["type"]
        hooks = self.hooks_by_type.get(kind)
        if hooks is None:
            hooks = self.hooks_by_type[kind] = [
                (st, hook) for st, hook in self.hooks
                if st.event_types is None or kind in st.event_types
            ]
        for st, hook in hooks:
            try:
                hook(match_id, event)
            except Exception:  # a seat that cannot take an event still plays
                self._event_failed(f"seat {st.name}", event)
        if self.spectator_nowait is not None:
            try:
                self.spectator_nowait(event)
            except Exception:
                self._event_failed("the spectator", event)

    async def emit(self, event: JSON) -> None:
        if self.nowait:
            self.emit_now(event)
        if not self.events_wait:
            return
        match_id = self.spec.match_id
        kind = event["type"]
        for st in self.awaited:
            if st.event_types is not None and kind not in st.event_types:
                continue
            try:
                await st.seat.on_event(match_id, event)
            except Exception:  # a seat that cannot take an event still plays
                self._event_failed(f"seat {st.name}", event)
        if self.on_event is not None:
            try:
                await self.on_event(event)
            except Exception:
                self._event_failed("the spectator", event)

    def _event_failed(self, who: str, event: JSON) -> None:
        """Log the first failure of each listener in full, later ones only when debugging."""
        if who in self.failed_listeners:
            log.debug("match %s: %s failed to take a %s event", self.spec.match_id, who,
                      event["type"], exc_info=True)
            return
        self.failed_listeners.add(who)
        log.warning("match %s: %s failed to take a %s event (later failures are not logged)",
                    self.spec.match_id, who, event["type"], exc_info=True)

    def _new_events(
        self, rec: DealRecord, fallback: str | None, face_down: bool
    ) -> Sequence[JSON]:
        """The public form of the engine events the last step added (and the talon, once
        it is shown); none when nobody follows the match."""
        raw = rec.events
        out: list[JSON] = []
        end = len(raw)
        start = self.cursor
        if end > start:
            self.cursor = end
            followed = self.followed
            wanted = self.wanted
            # Usually one new event (the action just played), which nobody may take: it is
            # looked at where it lies, and only the events somebody takes are copied out.
            picked: list[tuple[Any, ...]] = []
            for i in range(start, end):
                item = raw[i]
                kind: str = item[0]
                if kind == "deal_end":  # the deal count needs every deal's end
                    self.deals_unflushed += 1
                if followed and (wanted is None or PUBLIC_TYPE.get(kind) in wanted):
                    picked.append(item)
            if not followed:
                return out  # nobody follows the match
            first = True
            for event in public_events(picked) if picked else ():
                kind = event["type"]
                if first and kind == "action" and not event.get("auto"):
                    first = False
                    if fallback is not None:
                        event["fallback"] = fallback
                    if face_down:
                        event["action"] = event["action"].split(" ", 1)[0] + " ??"
                elif kind in ("deal_end", "redeal"):
                    event["deal"] = rec.index
                out.append(event)
        game = self.game
        talon = public_talon(game) if not self.talon_shown else -1
        if talon >= 0:
            self.talon_shown = True
            if self.wanted is not None and "talon" not in self.wanted:
                return out
            out.append({"type": "talon", "deal": rec.index, "cards": cards_str(talon)})
        return out

    async def flush(
        self, rec: DealRecord, fallback: str | None = None, face_down: bool = False
    ) -> None:
        """Send the public form of the engine events the last step added.

        ``fallback`` marks the seat's action as played by the referee; ``face_down`` hides
        the card of a play made while crawling (it is shown with the trick).
        """
        for event in self._new_events(rec, fallback, face_down):
            if self.events_wait:
                await self.emit(event)
            else:
                self.emit_now(event)

    def flush_now(
        self, rec: DealRecord, fallback: str | None = None, face_down: bool = False
    ) -> None:
        """:meth:`flush` for a match whose listeners all take events without waiting (no
        coroutine on each decision)."""
        for event in self._new_events(rec, fallback, face_down):
            self.emit_now(event)

    # ------------------------------------------------------------------ decisions
    async def ask(
        self, st: _SeatState, request: DecisionRequest
    ) -> tuple[Any, str, str, float, float]:
        """The seat's raw answer, the outcome so far, a reason when not ok, and the
        seconds charged to the seat and spent by the platform (a clocked seat is asked
        through :meth:`_ask_clocked` instead)."""
        # Whatever the seat answered, text or not (compiled, a name typed ``str`` by its
        # first assignment would refuse a bot's ``42`` with a TypeError).
        answer: Any
        if st.in_process:
            t0 = time.perf_counter()
            try:
                answer = await st.seat.decide(request)
            except Exception as exc:
                took = time.perf_counter() - t0
                return None, MALFORMED, self._raised(st, exc), took, 0.0
            return answer, OK, "", time.perf_counter() - t0, 0.0
        budget_s = self._budget_s(st)
        t0 = time.perf_counter()
        task: asyncio.Future[Any] = asyncio.ensure_future(st.seat.decide(request))
        waiters: set[asyncio.Future[Any]] = {task}
        if self.stop_task is not None:
            waiters.add(self.stop_task)
        done, _ = await asyncio.wait(waiters, timeout=budget_s,
                                     return_when=asyncio.FIRST_COMPLETED)
        took = time.perf_counter() - t0
        if task in done:
            settled, outcome, why = self._settled(task)
            error = None if task.cancelled() else task.exception()
            if outcome == MALFORMED and isinstance(error, Exception):
                why = self._raised(st, error)
            return settled, outcome, why, took, 0.0
        task.cancel()
        self.cancelled.add(task)
        if self.stop_task is not None and self.stop_task in done:
            raise _Stop(ABORTED)
        return None, TIMEOUT, f"no answer within {budget_s * 1000:.0f} ms", took, 0.0

    async def _ask_clocked(
        self, p: int, st: _SeatState, texts: tuple[str, ...], budget_s: float
    ) -> tuple[Any, str, str, float, float]:
        """A seat whose transport tells when the bot's own time starts and stops.

        The request is made inside the call that submits it, so that no frame here keeps
        it: a transport that serialises it at once (the gateway's hub) lets the
        observation go then."""
        clock = BotClock(self.stalls or LoopStalls.current())
        task: asyncio.Future[Any]
        if st.submit_game is not None:  # the parts of what _request would make
            task = st.submit_game(
                self.game, p, self.spec.match_id, self._request_id(), texts,
                self.tc.decision_ms, int(st.bank_ms), clock,
            )
        else:
            submit = getattr(st.seat, "submit_clocked", None)
            task = (
                submit(self._request(p, st, texts), clock)
                if submit is not None
                else asyncio.ensure_future(
                    st.seat.decide_clocked(self._request(p, st, texts), clock)  # type: ignore[attr-defined]
                )
            )
        waited = await wait_answer(task, clock, budget_s, stop=self.stop_task)
        if waited.answered:
            answer, outcome, why = self._settled(task)
            charged = clock.bot_s()
            if outcome == TIMEOUT and clock.started is None:
                charged = budget_s  # the transport gave up on the bot without a figure
            elif outcome == PLATFORM:
                charged = 0.0
            return answer, outcome, why, charged, clock.platform_s()
        task.cancel()
        self.cancelled.add(task)
        if waited.stopped:
            raise _Stop(ABORTED)
        if waited.platform_fault:
            return (None, PLATFORM, "the platform could not deliver the request within "
                    f"{PLATFORM_LIMIT_S:.0f} s", 0.0, clock.platform_s())
        return (None, TIMEOUT, f"no answer within {budget_s * 1000:.0f} ms",
                max(budget_s, clock.bot_s()), clock.platform_s())

    @staticmethod
    def _settled(task: asyncio.Future[Any]) -> tuple[Any, str, str]:
        if task.cancelled():
            return None, MALFORMED, "the seat cancelled its own decision"
        error = task.exception()
        if error is None:
            result = task.result()
            if not isinstance(result, BaseException):
                return result, OK, ""
            error = result  # a failure handed over as the result (errors.fail_decision)
        if isinstance(error, PlatformError):
            return None, PLATFORM, str(error)
        if isinstance(error, TimeoutError):
            return None, TIMEOUT, f"{type(error).__name__}: {error}"
        return None, MALFORMED, f"the seat failed: {type(error).__name__}: {error}"

    async def _ask_remote(
        self, p: int, st: _SeatState, texts: tuple[str, ...]
    ) -> tuple[Any, str, str, float, float]:
        """Ask a remote seat; when the platform fails to carry the question (Redis down,
        the gateway holding the bot gone), ask again with a fresh request, after a growing
        pause, for up to ``PLATFORM_OUTAGE_S``: an outage costs the match time, never a
        move or a strike. After that the match cannot go on (:class:`PlatformUnavailable`)."""
        first = time.perf_counter()
        pause = PLATFORM_RETRY_S
        platform_total = 0.0
        while True:
            self.requests += 1
            if st.clocked:
                asked = await self._ask_clocked(p, st, texts, self._budget_s(st))
            else:
                asked = await self.ask(st, self._request(p, st, texts))
            answer, outcome, why, charged_s, platform_s = asked
            platform_total += platform_s
            if outcome != PLATFORM:
                return answer, outcome, why, charged_s, platform_total
            st.stats.platform_faults += 1
            st.tally.record(PLATFORM, 0.0)
            waited = time.perf_counter() - first
            if waited >= PLATFORM_OUTAGE_S:
                raise PlatformUnavailable(
                    f"match {self.spec.match_id}: seat {p} ({st.name}) could not be asked "
                    f"for {waited:.0f} s: {why}"
                )
            if st.stats.platform_faults == 1 or pause >= PLATFORM_RETRY_MAX_S:
                log.warning("match %s: seat %d (%s): %s; asking again in %.1f s",
                            self.spec.match_id, p, st.name, why, pause)
            await self._pause(pause)
            platform_total += pause
            pause = min(pause * 2, PLATFORM_RETRY_MAX_S)

    def _raised(self, st: _SeatState, exc: BaseException) -> str:
        """Why the answer is malformed when the bot raised: the error and the line of the
        bot's code that raised it. The first error of a seat in a match is logged with its
        traceback (later ones would repeat it, and a match of broken answers is long)."""
        why = f"the bot raised {type(exc).__name__}: {exc} ({raised_at(exc)})"
        st.raised += 1
        if st.raised == 1:
            log.warning(
                "match %s: %s raised %s; the referee plays its fallback and counts a strike "
                "(further errors of this seat are not shown whole)\n%s", self.spec.match_id,
                st.name, type(exc).__name__, "".join(traceback.format_exception(exc)).rstrip())
        return why

    def _request(self, p: int, st: _SeatState, texts: tuple[str, ...]) -> DecisionRequest:
        return DecisionRequest(
            match_id=self.spec.match_id,
            request_id=self._request_id(),
            seat=p,
            observation=self.game.observation(p),
            legal=texts,
            deadline_ms=self.tc.decision_ms,
            time_bank_ms=int(st.bank_ms),
        )

    def _request_id(self) -> str:
        """The id of the request being made (the match's requests are numbered from 1)."""
        return f"{self.spec.match_id}/{self.requests}"

    def _budget_s(self, st: _SeatState) -> float:
        """What a seat may spend on its next answer: the clock plus its bank."""
        return (self.tc.decision_ms + int(st.bank_ms)) / 1000.0

    async def _pause(self, seconds: float) -> None:
        if self.stop_task is None:
            await asyncio.sleep(seconds)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.stop_task), seconds)
        if self.stop_task.done():
            raise _Stop(ABORTED)

    async def decide(self, p: int) -> None:
        game = self.game
        tc = self.tc
        st = self.states[p]
        legal = game.legal_actions()
        if not legal:
            raise RefereeError(
                f"match {self.spec.match_id}: seat {p} is to act in phase {game.phase_name} "
                f"of deal {game.deal_index - 1} but has no legal action (rules "
                f"{self.rules.to_json()}): a rules configuration the engine cannot play"
            )
        texts = tuple([a.text for a in legal])
        direct = st.direct
        if direct is not None:
            # An in-process bot: called as it is, timed after the fact.
            self.requests += 1
            platform_s = 0.0
            outcome, why = OK, ""
            t0 = time.perf_counter()
            try:
                answer = direct(game.observation(p), texts)
                if type(answer) is not str and inspect.isawaitable(answer):
                    answer = await answer
            except Exception as exc:
                t1 = time.perf_counter()  # the bot's time, not that of reporting its error
                answer, outcome = None, MALFORMED
                why = self._raised(st, exc)
            else:
                t1 = time.perf_counter()
            charged_s = t1 - t0
        else:
            answer, outcome, why, charged_s, platform_s = await self._ask_remote(p, st, texts)
            t1 = time.perf_counter()
        elapsed_ms = charged_s * 1000.0
        over = elapsed_ms - tc.decision_ms
        if outcome == TIMEOUT:
            st.bank_ms = 0.0
        elif over > 0:
            if over > st.bank_ms:
                outcome, why = TIMEOUT, f"answered after {elapsed_ms:.0f} ms, over the clock"
                st.bank_ms = 0.0
            else:
                st.bank_ms -= over
        action: Action | None = None
        if outcome == OK:
            if type(answer) is str and answer in texts:
                action = legal[texts.index(answer)]
            elif not isinstance(answer, str):
                outcome, why = MALFORMED, f"expected action text, got {type(answer).__name__}"
            else:
                try:
                    parsed = parse_answer(answer)
                except EngineError as exc:
                    outcome, why = MALFORMED, str(exc)
                else:
                    if parsed in legal:
                        action = parsed
                    else:
                        outcome, why = ILLEGAL, f"{answer!r} is not legal now"
        st.decisions += 1
        st.think_ms_total += elapsed_ms
        if elapsed_ms > st.think_ms_max:
            st.think_ms_max = elapsed_ms
        stats = st.stats
        if platform_s:
            platform_ms = platform_s * 1000.0
            stats.platform_ms_total += platform_ms
            if platform_ms > stats.platform_ms_max:
                stats.platform_ms_max = platform_ms
            st.tally.platform(platform_s)
        st.tally.record(outcome, charged_s)
        note: str | None = None
        if action is None:
            note = outcome
            if outcome == TIMEOUT:
                stats.timeouts += 1
            elif outcome == ILLEGAL:
                stats.illegal += 1
            else:
                stats.malformed += 1
            stats.strikes += 1
            st.tally.strike()
            log.info("match %s: seat %d (%s) %s: %s; strike %d", self.spec.match_id, p,
                     st.name, outcome, why, stats.strikes)
            if tc.strike_limit > 0 and stats.strikes >= tc.strike_limit:
                raise _Stop(FORFEIT, p)
            action = legal[texts.index(fallback_action(texts))]
        rec = game.records[-1]
        if note is not None:
            self.annotations[(len(game.records) - 1, len(rec.actions))] = note
        face_down = game.crawl
        game.apply(action)
        if self.events_wait:
            await self.flush(rec, note, face_down)
        else:
            self.flush_now(rec, note, face_down)
        if t1 - self.flushed_at >= METRICS_FLUSH_INTERVAL_S:
            self.flush_metrics(t1)

    # ------------------------------------------------------------------ the match
    async def play(self) -> MatchResult:
        game = self.game
        started = time.perf_counter()
        self.stalls = LoopStalls.current()
        if self.stop is not None:
            self.stop_task = asyncio.ensure_future(self.stop.wait())
        await self.emit({
            "type": "match_start",
            "match_id": self.spec.match_id,
            "rules": self.rules.to_json(),
            "seats": list(self.names),
            "players": self.rules.players,
            "time_control": self.tc.to_json(),
            **cm.start_fields(self.spec.commitment),
        })
        status = COMPLETED
        forfeit_seat: int | None = None
        try:
            while not game.is_over:
                if self.stop is not None and self.stop.is_set():
                    raise _Stop(ABORTED)
                if game.is_chance:
                    # Built-in bots never yield: give the loop (a gateway serving other
                    # matches and bots) a turn once a deal.
                    await asyncio.sleep(0)
                    game.deal()
                    self.cursor = 0
                    self.talon_shown = False
                    rec = game.records[-1]
                    await self.emit({"type": "deal_start", "deal": rec.index,
                                     "dealer": rec.dealer})
                    await self.flush(rec)
                    continue
                p = game.to_act
                assert p is not None
                await self.decide(p)
        except _Stop as stop:
            status = stop.status
            forfeit_seat = stop.seat
        finally:
            self.flush_metrics(time.perf_counter())
            await self._cleanup()
        n = game.n
        scores = list(game.scores)
        if status == FORFEIT:
            assert forfeit_seat is not None
            m.FORFEITS_TOTAL.labels(bot=self.states[forfeit_seat].label).inc()
            ranks = forfeit_ranks(scores, forfeit_seat)
        else:
            ranks = game.ranking()
        if status == COMPLETED:
            m.GAMES_TOTAL.inc()
        replay = replay_from_game(
            game, self.names, annotations=self.annotations, status=status, ranks=ranks,
            extra={"match_id": self.spec.match_id, **cm.replay_block(self.spec.commitment)},
        )
        if forfeit_seat is not None:
            replay["result"]["forfeit_seat"] = forfeit_seat
        result = MatchResult(
            match_id=self.spec.match_id,
            seed=self.spec.seed,
            bots=tuple(self.spec.bots) if len(self.spec.bots) == n else tuple(self.names),
            status=status,
            scores=scores,
            ranks=ranks,
            deals=game.deals_played,
            seat_stats=[st.settle() for st in self.states],
            forfeit_seat=forfeit_seat,
            duration_s=time.perf_counter() - started,
            replay=replay,
        )
        await self.emit({
            "type": "match_end",
            "match_id": self.spec.match_id,
            "status": status,
            "scores": scores,
            "ranks": ranks,
            "deals": game.deals_played,
            "forfeit_seat": forfeit_seat,
            "strikes": [st.stats.strikes for st in self.states],
            **cm.end_fields(self.spec.commitment, self.spec.seed),
        })
        return result

    async def _cleanup(self) -> None:
        if self.stop_task is not None:
            self.stop_task.cancel()
            self.cancelled.add(self.stop_task)
        if self.cancelled:
            await asyncio.wait(self.cancelled, timeout=_CANCEL_GRACE_S)
            for fut in self.cancelled:
                if fut.done() and not fut.cancelled():
                    fut.exception()  # retrieved: no "never retrieved" warning
            self.cancelled.clear()


def forfeit_ranks(scores: Sequence[int], seat: int) -> list[int]:
    """Ranks after a forfeit: the forfeiting seat last, the others by score (ties share)."""
    n = len(scores)
    ranks = []
    for s in range(n):
        if s == seat:
            ranks.append(n)
        else:
            ranks.append(1 + sum(1 for o in range(n) if o != seat and scores[o] > scores[s]))
    return ranks


async def run_match(
    spec: MatchSpec,
    seats: Sequence[Seat],
    on_event: EventSink | None = None,
    stop: asyncio.Event | None = None,
    labels: Sequence[str] | None = None,
    on_event_nowait: Callable[[JSON], None] | None = None,
) -> MatchResult:
    """Play one match to its end (completed, forfeit or aborted when ``stop`` is set).

    ``labels`` name the seats in the metrics (a tournament's participant names).
    ``on_event`` is awaited with every public event; ``on_event_nowait`` is called with
    it, for a spectator that only records (cheaper: no coroutine per event).
    Raises ``RulesError`` for bad rules and ``ValueError`` when the number of seats does
    not match the rules; any other exception is a bug (counted as status ``error``).
    """
    rules = match_rules(spec)
    if len(seats) != rules.players:
        raise ValueError(
            f"match {spec.match_id}: {len(seats)} seats for {rules.players} players"
        )
    match = _Match(spec, rules, seats, on_event, stop, labels, on_event_nowait)
    m.MATCHES_RUNNING.inc()
    status = "error"
    started = time.perf_counter()
    try:
        await prepare_seats(seats)
        result = await match.play()
        status = result.status
        return result
    finally:
        m.MATCHES_RUNNING.dec()
        m.MATCHES_FINISHED_TOTAL.labels(status=status).inc()
        m.MATCH_DURATION_SECONDS.labels(status=status).observe(time.perf_counter() - started)


async def prepare_seats(seats: Sequence[Seat]) -> None:
    """Let the seats that need it get ready before the first deal, all at once: a bot
    program starts and says hello (``StdioSeat.prepare``). Nobody's clock runs meanwhile.
    A seat that fails to get ready says so in its own status and plays on as best it can
    (a program that did not start times out at every decision)."""
    waits = []
    for seat in seats:
        prepare = getattr(seat, "prepare", None)
        if callable(prepare):
            waits.append(prepare())
    if waits:
        await asyncio.gather(*waits)


def resolve_seat(
    ref: str,
    index: int,
    spec: MatchSpec,
    resolver: SeatResolver | None = None,
    *,
    threaded: bool = False,
) -> Seat:
    """The seat for one bot reference of a spec.

    ``random`` and ``greedy`` are built in; ``module:Class`` (or ``file.py:Class``) is
    imported and instantiated with the keywords it accepts (``seed``, ``rules``);
    ``cmd:COMMAND`` is a program speaking the text protocol (:mod:`arena.stdio`);
    ``remote:NAME`` goes to ``resolver``.  Bots get a seed derived from the match seed by
    SHA-256 (never the match seed itself, which would reveal the deals).  ``threaded``
    runs a Python bot's decisions in a thread so that one that hangs can be timed out.
    """
    seed = seat_seed(spec.seed, index, ref)
    if ref in BUILTIN_BOTS:
        return InProcessSeat(get_bot(ref, seed=seed, rules=match_rules(spec).to_json()), ref,
                             with_match_id=False)
    if ref.startswith("cmd:"):
        program = seat_kind("cmd")
        if program is None:
            raise ValueError(f"bot {ref!r}: bot programs need the arena installed "
                             "(pip install), which declares their seats")
        return program(ref)
    if ref.startswith("remote:"):
        if resolver is None:
            raise ValueError(
                f"bot {ref!r} is remote: it needs a gateway or Redis routing to reach it"
            )
        return resolver(ref)
    if ":" in ref:
        factory = load_object(ref)
        try:
            bot = make_instance(factory, seed=seed, rules=match_rules(spec).to_json())
        except Exception as exc:
            raise ValueError(f"bot {ref!r}: creating it failed: {exc}") from exc
        return as_seat(bot, ref, threaded=threaded)
    raise ValueError(
        f"unknown bot {ref!r}: use {', '.join(sorted(BUILTIN_BOTS))}, "
        "module:Class, file.py:Class, cmd:COMMAND or remote:NAME"
    )


def resolve_seats(spec: MatchSpec, resolver: SeatResolver | None = None) -> list[Seat]:
    return [resolve_seat(ref, i, spec, resolver) for i, ref in enumerate(spec.bots)]


async def _run_and_close(
    spec: MatchSpec,
    seats: list[Seat],
    on_event: EventSink | None = None,
    labels: Sequence[str] | None = None,
) -> MatchResult:
    try:
        return await run_match(spec, seats, on_event, labels=labels)
    finally:
        for seat in seats:
            close = getattr(seat, "aclose", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    await close()


def run_match_sync(
    spec: MatchSpec,
    resolver: SeatResolver | None = None,
    on_event: EventSink | None = None,
    labels: Sequence[str] | None = None,
) -> MatchResult:
    """Resolve the spec's bots and play the match in a fresh event loop (for executors).

    ``on_event`` receives the public events, as a spectator would (live publishing);
    ``labels`` name the seats in the metrics (participant names).  Must not be called
    from a running event loop; use :func:`run_match` there.
    """
    seats = resolve_seats(spec, resolver)
    return asyncio.run(_run_and_close(spec, seats, on_event, labels))
