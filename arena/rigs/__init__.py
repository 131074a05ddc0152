"""Rigs: the arena stood up as an operator would, for the demo, tests and benchmarks.

Nothing here is part of the product. :mod:`arena.rigs.processes` starts the platform's
real programs (Redis, a gateway, SDK bots, Celery workers) as local processes on free
loopback ports (``arena demo`` and the tests use it); :mod:`arena.rigs.testing` runs a
gateway on a background thread with a bare protocol client that keeps every byte it gets.
:mod:`arena.rigs.hosts` builds a small data centre
out of Linux namespaces on one machine (a network with delay, and hosts that share
neither files nor addresses) and runs the arena's real programs on it, so that tests and
``arena bench hosts`` can show what several machines do to a tournament.
"""
