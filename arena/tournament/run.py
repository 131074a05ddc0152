"""The scheduler: asks the format for matches, skips stored ones, hands the rest to an executor.

Resuming is not a special mode: every run starts by reading the store, and a match that
has a row is never played again.  Stopping (Ctrl-C, SIGTERM) loses at most the matches in
flight.  After the first read, the scheduler only reads what arrived since (a position in
the store), and the live ratings are kept as running sums: a long run costs the same per
result at the end as at the start.

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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO

from arena.tournament.executors import Executor, make_executor, routing_url_from_env
from arena.tournament.formats import FixedFormat, Format, make_format
from arena.tournament.model import ResultRecord
from arena.tournament.spec import TournamentSpec
from arena.tournament.store import ResultStore, StoreError
from arena.tournament.tally import RatingTally

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
        quiet_notes: bool = True,
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
        self.waiting = ""
        self.quiet_notes = quiet_notes
        self._last = 0.0
        self._lock = threading.Lock()

    def set_status(self, text: str) -> None:
        """What the run waits for (a lost store, a broker, a worker); "" clears it.

        Without a progress line (``--quiet``) each new state is still one line: a run
        nobody watches is read from its log afterwards, and "waiting for X" is the line
        that explains a gap.
        """
        with self._lock:
            if text == self.waiting:
                return
            self.waiting = text
            if not self.enabled:
                if text and self.quiet_notes:
                    self.stream.write(f"{self.label}: {text}\n")
                    self.stream.flush()
                return
            self._draw(force=bool(text))

    def note(self, text: str) -> None:
        """A line of its own above the progress line (a round starting): kept in the
        scroll-back of a terminal and in a log, hidden with ``--quiet``."""
        with self._lock:
            if not self.enabled:
                return
            if self.tty:
                self.stream.write("\r\x1b[2K")
            self.stream.write(f"{self.label}: {text}\n")
            self._draw(force=True)

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
            text = (
                f"{self.label} [{bar}] {self.done}/{self.total} games "
                f"({frac:.0%})  {rate:.2f} games/s  {eta_text}"
            )
        else:
            text = f"{self.label} {self.done} games  {rate:.2f} games/s  {_fmt_duration(elapsed)}"
        return f"{text}  - {self.waiting}" if self.waiting else text

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
    #: Where an adaptive format's test stands (the SPRT's verdict); "" for other formats.
    note: str
    #: The commitment to the deal secret (None for a public seed).
    commitment: str | None
    #: The deal secret, once this run finished the tournament and so revealed it.
    revealed_secret: str | None = field(repr=False)

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


class _IdsOnly(Mapping[str, ResultRecord]):
    """The done matches of a fixed plan: the format only asks which ids are done.

    Keeping ids, not rows, is what lets a million-match plan run in little memory; a row
    asked for anyway is read from the store.
    """

    def __init__(self, store: ResultStore, ids: set[str]) -> None:
        self.store = store
        self.ids = ids

    def __contains__(self, key: object) -> bool:
        return key in self.ids

    def __getitem__(self, key: str) -> ResultRecord:
        rec = self.store.get(key) if key in self.ids else None
        if rec is None:
            raise KeyError(key)
        return rec

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


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
    progress = progress or Progress(spec.name, enabled=False, quiet_notes=False)
    own_executor = executor is None
    executor = executor or build_executor(spec)
    own_store = store is None
    try:
        # A broker that is not there is said before anything is created.
        executor.prepare()
        store = store or ResultStore(spec.db, on_retry=progress.set_status)
    except BaseException:
        if own_executor:
            executor.close()
        raise
    executor.on_status = progress.set_status
    gauges = _metrics(spec)
    started = time.monotonic()
    played = 0
    tally = RatingTally() if gauges else None
    heartbeat: _Heartbeat | None = None
    finished = False
    try:
        if spec.has_hosted:
            from arena.hosted.specs import pin_hosted

            spec = pin_hosted(spec, store)
        store.register_tournament(spec)
        heartbeat = _Heartbeat(store, spec.name)
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
        done: dict[str, ResultRecord] | _IdsOnly
        done = _IdsOnly(store, set()) if isinstance(fmt, FixedFormat) else {}
        cursor = 0
        total = fmt.planned_total()
        max_total = getattr(fmt, "max_total", None)
        if gauges and total is not None:
            gauges[0].set(total)  # type: ignore[attr-defined]
        last_published = last_ci = time.monotonic()

        def remember(rec: ResultRecord) -> bool:
            """Add a row to what is done; False when it was known already."""
            if rec.match_id in done:
                return False
            if isinstance(done, _IdsOnly):
                done.ids.add(rec.match_id)
            else:
                # Keep the light row only: replays of a long run would not fit in memory.
                done[rec.match_id] = dataclasses.replace(rec, replay=None) if rec.replay else rec
            if tally is not None:
                tally.add(rec)
            return True

        def catch_up() -> None:
            """Read what arrived since ``cursor``, a page at a time (memory stays bounded)."""
            nonlocal cursor
            while True:
                recs, cursor = store.changes(spec.name, cursor, limit=20_000)
                for rec in recs:
                    remember(rec)
                if not recs:
                    break

        catch_up()
        already = len(done)
        progress.start(
            total if total is not None else (max_total() if max_total else None), already
        )

        def refresh_total() -> None:
            """A format whose size is known only as it goes (a league of fixed rounds, an
            SPRT match's maximum): the progress line and ``arena_tournament_matches`` show
            the most it may play as told now, so a done/planned panel has a denominator."""
            if total is not None or max_total is None:
                return
            most = max_total()
            progress.set_total(most)
            if gauges and most is not None:
                gauges[0].set(most)  # type: ignore[attr-defined]

        refresh_total()
        announced_round = -1
        rounds = spec.format.rounds if spec.format.type in ("swiss", "league") else None

        def publish() -> None:
            if gauges and tally is not None:
                gauges[1].set(len(done))  # type: ignore[attr-defined]
                publish_tally(spec.name, tally)

        def publish_ci() -> None:
            """The intervals need every row and a bootstrap: now and then, and only while
            the tournament is small enough for that to stay cheap."""
            if not gauges or len(done) > CI_MAX_RESULTS:
                return
            rows = store.results(spec.name).values() if isinstance(done, _IdsOnly) else (
                done.values()
            )
            publish_ratings(spec.name, rows, bootstrap=CI_BOOTSTRAP)

        def on_result(rec: ResultRecord) -> None:
            nonlocal played, last_published
            if not remember(rec):
                return
            played += 1
            progress.advance()
            if gauges:
                gauges[1].set(len(done))  # type: ignore[attr-defined]
                # Ratings move during a one-round format too, but a fit per match is waste.
                now = time.monotonic()
                if now - last_published >= RATINGS_EVERY_S:
                    nonlocal last_ci
                    with_ci = now - last_ci >= RATINGS_CI_EVERY_S
                    last_published = now
                    publish()
                    if with_ci:
                        last_ci = now
                        publish_ci()
            if max_matches is not None and played >= max_matches:
                raise _Enough()

        try:
            while stop is None or not stop.is_set():
                batch = fmt.next_batch(done)
                if batch is None:
                    finished = True
                    break
                if not batch:
                    progress.set_status(_waiting_for_players(spec, fmt))
                    time.sleep(spec.format.poll_s)
                    continue
                progress.set_status("")
                refresh_total()
                todo = [m for m in batch if m.match_id not in done]
                rnd = batch[0].round
                if spec.format.type in ("swiss", "league") and rnd != announced_round:
                    announced_round = rnd
                    of = f" of {rounds}" if rounds is not None else ""
                    tables = len({m.group for m in batch}) // (spec.sets or 1)
                    left = f", {len(todo)} to play" if len(todo) != len(batch) else ""
                    progress.note(f"round {rnd + 1}{of}: {tables} table(s), "
                                  f"{len(batch)} matches{left}")
                if todo and secret is not None and secret.revealed:
                    raise StoreError(
                        f"tournament '{spec.name}' ended and its deal secret was revealed: "
                        f"{len(todo)} more matches would be played with deals anyone can "
                        "derive; play them as a new tournament (another name)"
                    )
                executor.run(todo, store, on_result)
                # Rows the executor did not report (another scheduler, a row that became
                # visible out of order): without them the same batch would come back.
                catch_up()
                missing = [m.match_id for m in todo if m.match_id not in done]
                for mid in sorted(store.done_among(missing)):
                    rec = store.get(mid)
                    if rec is not None:
                        remember(rec)
                publish()
                if gauges:
                    publish_sprt(spec.name, fmt)
        except _Enough:
            pass
        if played:
            publish()
            publish_ci()
        if gauges:
            publish_sprt(spec.name, fmt)
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
        if heartbeat is not None:
            heartbeat.end("finished" if finished else "stopped")
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
#: Past this many results the intervals are left to ``arena leaderboard`` and the web
#: pages: a bootstrap over every row would cost the scheduler more than a poll.
CI_MAX_RESULTS = 20_000


def publish_tally(tournament: str, tally: RatingTally) -> None:
    """Set ``arena_rating{tournament,bot}`` from the running sums (cheap at any size)."""
    try:
        from arena.observability.metrics import RATING

        for player, rating in tally.ratings().items():
            RATING.labels(tournament=tournament, bot=player).set(rating)
    except Exception as exc:  # a dashboard figure must never stop a tournament
        log.warning("ratings not published: %s", exc)


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


class _Heartbeat:
    """Tells the store, every few seconds, that this scheduler is running the tournament,
    and at the end how its run ended: the web pages then say "running", "stopped" or
    "finished" from what the scheduler said, not from how recent the last result is."""

    def __init__(self, store: ResultStore, tournament: str) -> None:
        from arena.tournament.store import RUN_HEARTBEAT_S

        self.store = store
        self.tournament = tournament
        self.done = threading.Event()
        try:
            store.mark_run(tournament, "running")
        except StoreError as exc:  # the run goes on: the pages fall back on the results
            log.warning("cannot record that %s is running: %s", tournament, exc)
        self.thread = threading.Thread(target=self._beat, args=(RUN_HEARTBEAT_S,),
                                       name="run-heartbeat", daemon=True)
        self.thread.start()

    def _beat(self, every: float) -> None:
        while not self.done.wait(every):
            try:
                self.store.beat_run(self.tournament)
            except Exception as exc:  # a lost store is waited out by the run itself
                log.debug("run heartbeat of %s not stored: %s", self.tournament, exc)

    def end(self, state: str) -> None:
        self.done.set()
        self.thread.join(timeout=10)
        try:
            self.store.mark_run(self.tournament, state)
        except Exception as exc:
            log.warning("cannot record that the run of %s %s: %s", self.tournament, state, exc)


def _waiting_for_players(spec: TournamentSpec, fmt: Format) -> str:
    """What a league with too few participants waits for."""
    listed = len(getattr(fmt, "participants", spec.participants))
    where = f" to {spec.source}" if spec.source else ""
    return (f"waiting for participants: {listed} listed for {spec.seats} seats; add bots"
            f"{where} (read again every {spec.format.poll_s:g} s)")


class _Enough(Exception):
    """Raised from the result callback to stop a run after ``max_matches``."""
