"""Benchmarks: commands that print figures (speed is never asserted in tests)."""

from __future__ import annotations

import argparse


def bench_parser(name: str, description: str | None) -> argparse.ArgumentParser:
    """The parser of ``arena bench NAME``: its usage and errors name the command as it is
    typed (``arena`` hands the rest of the line to the benchmark's own ``main``)."""
    return argparse.ArgumentParser(prog=f"arena bench {name}", description=description)
