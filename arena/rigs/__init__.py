"""Test rigs: the arena stood up as an operator would, for tests and benchmarks only.

Nothing here is part of the product. :mod:`arena.rigs.hosts` builds a small data centre
out of Linux namespaces on one machine (a network with delay, and hosts that share
neither files nor addresses) and runs the arena's real programs on it, so that tests and
``arena bench hosts`` can show what several machines do to a tournament.
"""
