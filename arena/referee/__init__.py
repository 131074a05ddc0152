"""The referee: runs one match between seats, keeps time, applies fallbacks, records the replay.

* :mod:`arena.referee.runner` - ``run_match`` / ``run_match_sync`` and bot resolution;
* :mod:`arena.referee.seats` - in-process seats for Python bots;
* :mod:`arena.referee.cli` - ``arena match`` and ``arena bot-check``.

The vocabulary it shares with the bots, gateways and executors (match specs, seats,
results, the fallback action) is :mod:`arena.match`. Nothing is imported here.
"""
