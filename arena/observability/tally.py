"""One bot's decision metrics, counted in plain Python and written in one go.

The referee records every decision of every seat here, so this module is compiled with it
(``arena.compiled``); the metrics themselves are defined in
:mod:`arena.observability.metrics`.
"""

from __future__ import annotations

from typing import Any

from arena.observability import metrics as m


class _BulkHistogram:
    """One histogram child whose observations are counted here and written in one go."""

    __slots__ = ("_bounds", "_buckets", "_bulk", "_child", "_sum")

    def __init__(self, child: Any, bulk: bool | None = None) -> None:
        self._child = child
        self._bulk = _histogram_takes_bucket_counts(child) if bulk is None else bulk
        self._bounds: tuple[float, ...] = tuple(getattr(child, "_upper_bounds", ()))
        self._buckets = [0] * len(self._bounds)
        self._sum = 0.0

    def observe(self, seconds: float) -> None:
        if self._bulk:
            # The first bucket whose upper bound is >= seconds, as Histogram.observe picks
            # (the last bound is +Inf). Scanned from the fastest bucket, where nearly every
            # decision lands: compiled, a few native comparisons, where bisect_left would
            # be a call into the interpreter with a boxed comparison per step.
            bounds = self._bounds
            i = 0
            last = len(bounds) - 1
            while i < last and bounds[i] < seconds:
                i += 1
            self._buckets[i] += 1
            self._sum += seconds
        else:
            self._child.observe(seconds)

    def flush(self) -> None:
        if not self._bulk:
            return
        buckets = self._buckets
        values = self._child._buckets
        observed = False
        for i, n in enumerate(buckets):
            if n:
                values[i].inc(n)
                buckets[i] = 0
                observed = True
        if observed:
            self._child._sum.inc(self._sum)
            self._sum = 0.0


class DecisionTally:
    """One bot's decisions, counted in plain Python and written to the metrics in one go.

    In a Celery worker (multiprocess mode) every metric update takes a lock shared by the
    whole process and writes a memory-mapped file.  Built-in bots decide in microseconds,
    so three updates per decision (the outcome counter, the latency histogram's bucket and
    sum) took several per cent of a tournament's throughput.  The referee records each
    decision here and calls :meth:`flush` now and then (about every second and at the end
    of a match): the series, labels and totals are those of updating on every decision,
    only written less often.  The histogram is flushed as per-bucket counts plus one sum,
    as prometheus-client stores it; should a future prometheus-client store it otherwise,
    each decision is observed as it comes instead, which is slower but just as correct.
    """

    __slots__ = ("_bot", "_bulk", "_counters", "_counts", "_latency", "_platform",
                 "_platform_metric", "_strike_counter", "_strikes", "pending")

    def __init__(
        self,
        bot: str,
        *,
        decisions: Any = None,
        latency: Any = None,
        strikes: Any = None,
        platform: Any = None,
        bulk: bool | None = None,
    ) -> None:
        """``decisions``, ``latency``, ``strikes``, ``platform``: the metrics to write to
        (the arena's own by default); ``bulk`` False observes each latency as it comes
        (None: whenever the histogram's storage allows writing them in one go)."""
        decisions = m.DECISIONS_TOTAL if decisions is None else decisions
        latency = m.DECISION_LATENCY_SECONDS if latency is None else latency
        # Resolving every child up front also makes each series exist (at zero) from the
        # first match of a bot, so ratios such as the timeout share have a denominator.
        self._counters = {o: decisions.labels(bot=bot, outcome=o) for o in m.DECISION_OUTCOMES}
        self._counts: dict[str, int] = dict.fromkeys(m.DECISION_OUTCOMES, 0)
        self._latency = _BulkHistogram(latency.labels(bot=bot), bulk)
        self._platform: _BulkHistogram | None = None
        self._platform_metric = m.PLATFORM_DELAY_SECONDS if platform is None else platform
        self._bulk = bulk
        self._bot = bot
        self._strike_counter = (m.STRIKES_TOTAL if strikes is None else strikes).labels(bot=bot)
        self._strikes = 0
        #: Whether anything was recorded since the last flush.
        self.pending = False

    def record(self, outcome: str, seconds: float) -> None:
        """Count one decision and its latency (``ValueError`` for an unknown outcome)."""
        try:
            self._counts[outcome] += 1
        except KeyError:
            raise ValueError(
                f"unknown decision outcome {outcome!r}; expected one of "
                f"{', '.join(self._counts)}"
            ) from None
        self._latency.observe(seconds)
        self.pending = True

    def platform(self, seconds: float) -> None:
        """Count the platform's delay of one decision (remote seats only)."""
        if self._platform is None:
            # Made on first use: in-process bots never have one, and their series would
            # only be noise.
            self._platform = _BulkHistogram(self._platform_metric.labels(bot=self._bot), self._bulk)
        self._platform.observe(seconds)
        self.pending = True

    def strike(self) -> None:
        """Count one strike (a decision answered by the referee's fallback)."""
        self._strikes += 1
        self.pending = True

    def flush(self) -> None:
        """Write what was recorded since the last flush to the metrics."""
        if not self.pending:
            return
        self.pending = False
        counts = self._counts
        for outcome, n in counts.items():
            if n:
                self._counters[outcome].inc(n)
                counts[outcome] = 0
        self._latency.flush()
        if self._platform is not None:
            self._platform.flush()
        if self._strikes:
            self._strike_counter.inc(self._strikes)
            self._strikes = 0


def _histogram_takes_bucket_counts(child: Any) -> bool:
    """Whether ``child`` stores one addable value per bucket and one for the sum."""
    bounds = getattr(child, "_upper_bounds", None)
    buckets = getattr(child, "_buckets", None)
    total = getattr(child, "_sum", None)
    return (
        isinstance(bounds, list)
        and isinstance(buckets, list)
        and len(bounds) == len(buckets) > 0
        and bounds[-1] == float("inf")
        and all(callable(getattr(v, "inc", None)) for v in [*buckets, total])
    )
