"""The scheduler: asks the format for matches, skips stored ones, hands the rest to an executor.

Resuming is not a special mode: every run starts by reading the store, and a match that
has a row is never played again.  Stopping (Ctrl-C) loses at most the matches in flight.

A tournament dealt from a secret takes it from the store (drawn on its first run), so a
resume deals the same cards; when the whole tournament has been played the secret is
marked revealed, and from then on no match can be added to it.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO

from arena.tournament.executors import Executor, make_executor, routing_url_from_env
from arena.tournament.formats import Format, make_format
from arena.tournament.model import ResultRecord
from arena.tournament.spec import TournamentSpec
from arena.tournament.store import ResultStore, StoreError

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
    #: The commitment to the deal secret (None for a public seed).
    commitment: str | None = None
    #: The deal secret, once this run finished the tournament and so revealed it.
    revealed_secret: str | None = field(default=None, repr=False)

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
    announce: Callable[[str], None] | None = None,
) -> RunSummary:
    """Play every match of ``spec`` that has no stored result; return what was done.

    ``stop`` ends the run between batches (a league otherwise runs for ever);
    ``max_matches`` stops after that many matches were played in this run, which is how
    tests and demos interrupt a tournament at a known point.  ``announce`` is told the
    commitment to the deal secret before the first match, for the organiser to publish.
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
        secret = None
        if spec.secret_seed:
            secret = store.deal_secret(spec.name)
            spec = spec.with_secret(secret.secret)
            if announce is not None:
                when = (
                    "was revealed when the tournament ended"
                    if secret.revealed
                    else "is revealed when the tournament ends"
                )
                announce(
                    f"{spec.name}: the deals come from a secret; its commitment is "
                    f"{secret.commitment} (SHA-256, see docs/shuffle.md); the secret {when}"
                )
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
        last_published = time.monotonic()

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
                    last_published = now
                    publish_ratings(spec.name, done.values())
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
                if todo and secret is not None and secret.revealed:
                    raise StoreError(
                        f"tournament '{spec.name}' ended and its deal secret was revealed: "
                        f"{len(todo)} more matches would be played with deals anyone can "
                        "derive; play them as a new tournament (another name)"
                    )
                executor.run(todo, store, on_result)
                done = store.results(spec.name)
                if gauges:
                    publish_ratings(spec.name, done.values())
        except _Enough:
            pass
        if gauges and played:
            publish_ratings(spec.name, done.values())
        note = ""
        outcome = getattr(fmt, "outcome", None)
        if outcome is not None and hasattr(outcome, "describe"):
            f = spec.format
            note = outcome.describe(f.candidate, f.baseline)
        revealed = None
        if secret is not None and finished:
            revealed = store.reveal_deal_secret(spec.name).secret
        summary = RunSummary(
            tournament=spec.name,
            matches=len(done),
            played=played,
            already_stored=already,
            elapsed_s=time.monotonic() - started,
            finished=finished,
            note=note,
            commitment=secret.commitment if secret is not None else None,
            revealed_secret=revealed,
        )
        return summary
    finally:
        if own_executor:
            executor.close()
        if own_store:
            store.close()


#: How often a running tournament refreshes ``arena_rating`` between rounds.
RATINGS_EVERY_S = 5.0


def publish_ratings(tournament: str, records: Iterable[ResultRecord]) -> None:
    """Set ``arena_rating{tournament,bot}`` from the stored results (no bootstrap: cheap)."""
    try:
        from arena.observability.metrics import RATING
        from arena.tournament.leaderboard import compute_leaderboard

        for row in compute_leaderboard(list(records), n_bootstrap=0):
            RATING.labels(tournament=tournament, bot=row.player).set(row.rating)
    except Exception as exc:  # a dashboard figure must never stop a tournament
        log.warning("ratings not published: %s", exc)


class _Enough(Exception):
    """Raised from the result callback to stop a run after ``max_matches``."""
