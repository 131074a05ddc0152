"""Decision metrics counted in plain Python and written in one go equal per-decision updates."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from obs_support import run_python
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from arena.observability.metrics import DECISION_LATENCY_BUCKETS, DECISION_OUTCOMES
from arena.observability.tally import DecisionTally

Event = tuple[str, float, bool, bool]  # outcome, seconds, strike, flush afterwards

events = st.lists(
    st.tuples(
        st.sampled_from(DECISION_OUTCOMES),
        st.one_of(
            st.sampled_from(DECISION_LATENCY_BUCKETS),  # exactly on a bucket's upper bound
            st.floats(min_value=0.0, max_value=30.0, allow_nan=False),
        ),
        st.booleans(),
        st.booleans(),
    ),
    max_size=60,
)


def metric_set(registry: CollectorRegistry) -> tuple[Counter, Histogram, Counter]:
    return (
        Counter("arena_decisions_total", "d", ["bot", "outcome"], registry=registry),
        Histogram(
            "arena_decision_latency_seconds",
            "l",
            ["bot"],
            buckets=DECISION_LATENCY_BUCKETS,
            registry=registry,
        ),
        Counter("arena_strikes_total", "s", ["bot"], registry=registry),
    )


def exposed(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
        if not s.name.endswith("_created")
    }


def play_both(
    recorded: list[Event], bulk: bool | None = None
) -> tuple[dict[object, float], dict[object, float]]:
    """The same decisions counted one by one and through a tally, as exposed."""
    reference, batched = CollectorRegistry(), CollectorRegistry()
    decisions, latency, strikes = metric_set(reference)
    for outcome in DECISION_OUTCOMES:  # the tally makes every outcome's series exist
        decisions.labels(bot="b", outcome=outcome)
    strikes.labels(bot="b")
    latency.labels(bot="b")
    d2, l2, s2 = metric_set(batched)
    tally = DecisionTally("b", decisions=d2, latency=l2, strikes=s2, bulk=bulk)
    for outcome, seconds, strike, flush in recorded:
        decisions.labels(bot="b", outcome=outcome).inc()
        latency.labels(bot="b").observe(seconds)
        tally.record(outcome, seconds)
        if strike:
            strikes.labels(bot="b").inc()
            tally.strike()
        if flush:
            tally.flush()
    tally.flush()
    return exposed(reference), exposed(batched)


def assert_same(reference: dict[object, float], batched: dict[object, float]) -> None:
    assert reference.keys() == batched.keys()
    for key, want in reference.items():
        got = batched[key]
        if str(key).startswith("('arena_decision_latency_seconds_sum'"):
            assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), key
        else:
            assert got == want, key


@settings(max_examples=150, deadline=None)
@given(events)
def test_a_flushed_tally_exposes_what_per_decision_updates_do(recorded: list[Event]) -> None:
    assert_same(*play_both(recorded))


@settings(max_examples=30, deadline=None)
@given(events)
def test_without_bucket_access_each_decision_is_observed_as_it_comes(
    recorded: list[Event],
) -> None:
    assert_same(*play_both(recorded, bulk=False))


def test_nothing_is_written_before_a_flush() -> None:
    registry = CollectorRegistry()
    decisions, latency, strikes = metric_set(registry)
    tally = DecisionTally("b", decisions=decisions, latency=latency, strikes=strikes)
    tally.record("ok", 0.003)
    tally.strike()
    assert tally.pending
    assert registry.get_sample_value("arena_decisions_total", {"bot": "b", "outcome": "ok"}) == 0
    assert registry.get_sample_value("arena_decision_latency_seconds_count", {"bot": "b"}) == 0
    tally.flush()
    assert not tally.pending
    assert registry.get_sample_value("arena_decisions_total", {"bot": "b", "outcome": "ok"}) == 1
    assert (
        registry.get_sample_value(
            "arena_decision_latency_seconds_bucket", {"bot": "b", "le": "0.005"}
        )
        == 1
    )
    assert registry.get_sample_value("arena_strikes_total", {"bot": "b"}) == 1


def test_an_unknown_outcome_is_refused_and_counts_nothing() -> None:
    registry = CollectorRegistry()
    decisions, latency, strikes = metric_set(registry)
    tally = DecisionTally("b", decisions=decisions, latency=latency, strikes=strikes)
    with pytest.raises(ValueError, match="unknown decision outcome 'late'"):
        tally.record("late", 0.1)
    tally.flush()
    assert registry.get_sample_value("arena_decision_latency_seconds_count", {"bot": "b"}) == 0


MULTIPROCESS_MATCHES = textwrap.dedent(
    """
    import json, os, sys

    from arena.observability.exposition import metrics_text, prepare_multiprocess_dir

    prepare_multiprocess_dir(sys.argv[1])
    from arena.engine import Rules
    from arena.observability import metrics as m
    from arena.referee import runner
    from arena.match.types import MatchSpec

    from arena.observability.tally import _histogram_takes_bucket_counts

    bulk = _histogram_takes_bucket_counts(m.DECISION_LATENCY_SECONDS.labels(bot="probe"))
    rules = Rules.preset("classic").to_json()
    results = []
    for i, interval in enumerate((1.0, 0.0)):  # written at the end; after every decision
        runner.METRICS_FLUSH_INTERVAL_S = interval
        spec = MatchSpec(match_id=f"m{i}", rules=rules, seed=f"files-{i}",
                         bots=("greedy", "random", "greedy"), max_deals=6)
        results.append(runner.run_match_sync(spec).to_json())
    print(json.dumps({"bulk": bulk, "results": results, "text": metrics_text().decode()}))
    """
)


def test_matches_in_multiprocess_mode_write_exact_totals_to_the_files(tmp_path: Path) -> None:
    script = tmp_path / "matches.py"
    script.write_text(MULTIPROCESS_MATCHES)
    out = run_python(
        f"import runpy, sys; sys.argv = ['matches.py', {str(tmp_path / 'metrics')!r}]; "
        f"runpy.run_path({str(script)!r}, run_name='__main__')",
        env={"PROMETHEUS_MULTIPROC_DIR": None},
        timeout=120,
    )
    data = json.loads(out.strip().splitlines()[-1])
    assert data["bulk"] is True  # the fast path works on prometheus-client's files too
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(data["text"])
        for s in family.samples
    }
    want: dict[str, int] = {}
    think: dict[str, float] = {}
    for result in data["results"]:
        for bot, stats in zip(result["bots"], result["seat_stats"], strict=True):
            want[bot] = want.get(bot, 0) + stats["decisions"]
            think[bot] = think.get(bot, 0.0) + stats["think_ms_total"] / 1000.0
    for bot, n in want.items():
        assert samples[("arena_decisions_total", (("bot", bot), ("outcome", "ok")))] == n
        assert samples[("arena_decision_latency_seconds_count", (("bot", bot),))] == n
        assert samples[("arena_decision_latency_seconds_sum", (("bot", bot),))] == (
            pytest.approx(think[bot])
        )
    deals = sum(r["deals"] for r in data["results"])
    assert samples[("arena_deals_total", ())] == deals
    assert samples[("arena_matches_finished_total", (("status", "completed"),))] == 2
