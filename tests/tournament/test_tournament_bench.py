"""The throughput benchmark runs end to end (its figures are printed, never asserted)."""

from __future__ import annotations

from arena.bench.tournament import bench_tournament


def test_bench_reports_every_figure() -> None:
    res = bench_tournament(6, max_deals=1, ratings_results=2000, repeat=1)
    for key in (
        "local_1_games_per_s",
        "local_2_games_per_s",
        "celery_1_games_per_s",
        "celery_2_games_per_s",
        "overhead_1_pct",
        "overhead_2_pct",
        "ratings_s",
    ):
        assert isinstance(res[key], float), key
    assert res["games"] == 6


def test_the_figures_are_printed_for_a_reader() -> None:
    """A negative overhead is Celery being faster: said in words, not as "-81.4%"."""
    from arena.bench.tournament import describe

    res = {"games": 6, "preset": "classic", "repeat": 1, "load_avg_1m_before": 1.0, "cpus": 2,
           "local_1_games_per_s": 10.0, "celery_1_games_per_s": 9.0, "overhead_1_pct": 10.0,
           "local_2_games_per_s": 10.0, "celery_2_games_per_s": 18.1, "overhead_2_pct": -81.0}
    text = "\n".join(describe(res, (1, 2)))
    assert "Celery, 1 worker(s)" in text and "(10.0% slower than the pool)" in text
    assert "(81.0% faster than the pool)" in text and "-81" not in text


def test_poll_bench_runs_as_documented(capsys: object) -> None:
    """``arena bench poll`` on a small plan: every checkpoint printed with its figures."""
    from arena.bench.poll import main

    assert main(["--matches", "12000", "--repeat", "3", "--json"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "planned 12,000 matches of 1 deal" in out
    assert "10,000 done: poll" in out and "reading every id" in out
    assert "packing a full game" in out
