"""The scheduler: asks the format for matches, skips stored ones, hands the rest to an executor.

Resuming is not a special mode: every run starts by reading the store, and a match that
has a row is never played again.  Stopping (Ctrl-C) loses at most the matches in flight.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

from arena.tournament.executors import Executor, make_executor, routing_url_from_env
from arena.tournament.formats import Format, make_format
from arena.tournament.model import ResultRecord
from arena.tournament.spec import TournamentSpec
from arena.tournament.store import ResultStore

log = logging.getLogger(__name__)


def _fmt_duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"


class Progress:
    """Games done, rate and ETA on one line of stderr.

    On a terminal the line is redrawn in place a few times a second; otherwise (a log
    file, CI) a full line is written every ``interval`` seconds, so logs stay readable.
    """

    def __init__(
        self,
        label: str,
        stream: IO[str] | None = None,
        *,
        enabled: bool = True,
        interval: float = 5.0,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = 0.2 if self.tty else interval
        self.total: int | None = None
        self.done = 0
        self.already = 0
        self.played = 0
        self.started = time.monotonic()
        self._last = 0.0
        self._lock = threading.Lock()

    def start(self, total: int | None, already: int) -> None:
        self.total = total
        self.done = already
        self.already = already
        self.started = time.monotonic()
        self._draw(force=True)

    def set_total(self, total: int | None) -> None:
        self.total = total

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            self.played += n
            self._draw()

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        rate = self.played / elapsed if elapsed > 0 else 0.0
        if self.total:
            frac = min(1.0, self.done / self.total)
            width = 24
            fill = int(frac * width)
            bar = "#" * fill + "." * (width - fill)
            eta = (self.total - self.done) / rate if rate > 0 else None
            eta_text = f"ETA {_fmt_duration(eta)}" if eta is not None else "ETA --"
            return (
                f"{self.label} [{bar}] {self.done}/{self.total} games "
                f"({frac:.0%})  {rate:.2f} games/s  {eta_text}"
            )
        return f"{self.label} {self.done} games  {rate:.2f} games/s  {_fmt_duration(elapsed)}"

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        if self.tty:
            self.stream.write("\r\x1b[2K" + self.line())
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def finish(self, message: str | None = None) -> None:
        if not self.enabled:
            return
        self._draw(force=True)
        if self.tty:
            self.stream.write("\n")
        if message:
            self.stream.write(message + "\n")
        self.stream.flush()


@dataclass
class RunSummary:
    """What one run of a tournament did."""

    tournament: str
    matches: int
    played: int
    already_stored: int
    elapsed_s: float
    finished: bool
    note: str = ""

    @property
    def games_per_s(self) -> float:
        return self.played / self.elapsed_s if self.elapsed_s > 0 else 0.0


def build_executor(spec: TournamentSpec) -> Executor:
    ex = spec.executor
    routing = ex.routing or routing_url_from_env()
    return make_executor(
        ex.type, workers=ex.workers, broker=ex.broker, queue=ex.queue, routing_url=routing
    )


def _metrics(spec: TournamentSpec) -> tuple[object, object] | None:
    try:
        from arena.observability.metrics import TOURNAMENT_MATCHES, TOURNAMENT_MATCHES_DONE
    except Exception:  # metrics are optional for the scheduler
        return None
    return (
        TOURNAMENT_MATCHES.labels(tournament=spec.name),
        TOURNAMENT_MATCHES_DONE.labels(tournament=spec.name),
    )


def run_tournament(
    spec: TournamentSpec,
    *,
    store: ResultStore | None = None,
    executor: Executor | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    max_matches: int | None = None,
) -> RunSummary:
    """Play every match of ``spec`` that has no stored result; return what was done.

    ``stop`` ends the run between batches (a league otherwise runs for ever);
    ``max_matches`` stops after that many matches were played in this run, which is how
    tests and demos interrupt a tournament at a known point.
    """
    own_store = store is None
    store = store or ResultStore(spec.db)
    own_executor = executor is None
    executor = executor or build_executor(spec)
    progress = progress or Progress(spec.name, enabled=False)
    gauges = _metrics(spec)
    started = time.monotonic()
    played = 0
    try:
        store.register_tournament(spec)
        fmt: Format = make_format(spec, store)
        done = store.results(spec.name)
        total = fmt.planned_total()
        max_total = getattr(fmt, "max_total", None)
        progress.start(
            total if total is not None else (max_total() if max_total else None), len(done)
        )
        already = len(done)
        if gauges and total is not None:
            gauges[0].set(total)  # type: ignore[attr-defined]
        last_published = last_ci = time.monotonic()

        def on_result(rec: ResultRecord) -> None:
            nonlocal played
            # Keep the light row only: replays of a long run would not fit in memory.
            done[rec.match_id] = dataclasses.replace(rec, replay=None) if rec.replay else rec
            played += 1
            progress.advance()
            if gauges:
                nonlocal last_published
                gauges[1].set(len(done))  # type: ignore[attr-defined]
                # Ratings move during a one-round format too, but a fit per match is waste.
                now = time.monotonic()
                if now - last_published >= RATINGS_EVERY_S:
                    nonlocal last_ci
                    with_ci = now - last_ci >= RATINGS_CI_EVERY_S
                    last_published = now
                    last_ci = now if with_ci else last_ci
                    publish_ratings(spec.name, done.values(),
                                    bootstrap=CI_BOOTSTRAP if with_ci else 0)
            if max_matches is not None and played >= max_matches:
                raise _Enough()

        finished = False
        try:
            while stop is None or not stop.is_set():
                batch = fmt.next_batch(done)
                if batch is None:
                    finished = True
                    break
                if not batch:
                    time.sleep(spec.format.poll_s)
                    continue
                todo = [m for m in batch if m.match_id not in done]
                executor.run(todo, store, on_result)
                done = store.results(spec.name)
                if gauges:
                    publish_ratings(spec.name, done.values(), bootstrap=CI_BOOTSTRAP)
                    publish_sprt(spec.name, fmt)
        except _Enough:
            pass
        if gauges and played:
            publish_ratings(spec.name, done.values(), bootstrap=CI_BOOTSTRAP)
        if gauges:
            publish_sprt(spec.name, fmt)
        note = ""
        outcome = getattr(fmt, "outcome", None)
        if outcome is not None and hasattr(outcome, "describe"):
            f = spec.format
            note = outcome.describe(f.candidate, f.baseline)
        summary = RunSummary(
            tournament=spec.name,
            matches=len(done),
            played=played,
            already_stored=already,
            elapsed_s=time.monotonic() - started,
            finished=finished,
            note=note,
        )
        return summary
    finally:
        if own_executor:
            executor.close()
        if own_store:
            store.close()


#: How often a running tournament refreshes ``arena_rating`` between rounds.
RATINGS_EVERY_S = 5.0
#: How often, during a round, the 95% intervals (a bootstrap) are refreshed as well; they
#: are always refreshed after a round and at the end.
RATINGS_CI_EVERY_S = 30.0
#: Bootstrap replicates of the published intervals: fewer than the leaderboard's 200, since
#: a dashboard needs the bounds' trend, not their third digit.
CI_BOOTSTRAP = 50


def publish_ratings(
    tournament: str, records: Iterable[ResultRecord], *, bootstrap: int = 0
) -> None:
    """Set ``arena_rating{tournament,bot}`` from the stored results, and with ``bootstrap``
    replicates also the interval bounds ``arena_rating_ci_low``/``_high``."""
    try:
        import math

        from arena.observability.metrics import RATING, RATING_CI_HIGH, RATING_CI_LOW
        from arena.tournament.leaderboard import compute_leaderboard

        for row in compute_leaderboard(list(records), n_bootstrap=bootstrap):
            RATING.labels(tournament=tournament, bot=row.player).set(row.rating)
            if bootstrap and math.isfinite(row.ci_low) and math.isfinite(row.ci_high):
                RATING_CI_LOW.labels(tournament=tournament, bot=row.player).set(row.ci_low)
                RATING_CI_HIGH.labels(tournament=tournament, bot=row.player).set(row.ci_high)
    except Exception as exc:  # a dashboard figure must never stop a tournament
        log.warning("ratings not published: %s", exc)


def publish_sprt(tournament: str, fmt: object) -> None:
    """Set ``arena_sprt_llr`` and its bounds when ``fmt`` is an SPRT match with a result."""
    result = getattr(getattr(fmt, "outcome", None), "result", None)
    if result is None:
        return
    try:
        from arena.observability.metrics import SPRT_LLR, SPRT_LLR_BOUND

        SPRT_LLR.labels(tournament=tournament).set(float(result.llr))
        SPRT_LLR_BOUND.labels(tournament=tournament, bound="lower").set(float(result.lower))
        SPRT_LLR_BOUND.labels(tournament=tournament, bound="upper").set(float(result.upper))
    except Exception as exc:
        log.warning("SPRT status not published: %s", exc)


class _Enough(Exception):
    """Raised from the result callback to stop a run after ``max_matches``."""
