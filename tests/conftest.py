"""Settings for the whole suite."""

from __future__ import annotations

from arena import compiled


def pytest_report_header() -> str:
    """Which build the tests exercise: the compiled hot path or its source."""
    return f"arena: {compiled.status().reason}"
