"""Benchmarks: commands that print figures (speed is never asserted in tests)."""
