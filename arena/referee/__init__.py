"""The referee: runs one match between seats, keeps time, applies fallbacks, records the replay.

* :mod:`arena.referee.types` - the vocabulary shared with gateways and executors;
* :mod:`arena.referee.runner` - ``run_match`` / ``run_match_sync`` and bot resolution;
* :mod:`arena.referee.fallback` - the action played for a seat that did not answer well;
* :mod:`arena.referee.seats` - in-process seats for Python bots;
* :mod:`arena.referee.cli` - ``arena match`` and ``arena bot-check``.

Nothing is imported here, so a transport can use the types without loading the engine.
"""
