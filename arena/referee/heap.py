"""The garbage collector as a process that referees matches wants it.

Every process that plays matches (the gateway, a Celery worker and its pool, the local
executor's pool children) starts by importing a large, long-lived heap (modules, protobuf
descriptors, gRPC or Celery machinery) and then allocates a few dozen container objects
per decision that live for the length of the decision (its observation, the request,
events, timers). With CPython's defaults the collector runs hundreds of times a second on
that load, and every full collection walks the whole start-up heap again, for nothing.
:func:`settle_heap` is called once such a process is set up.
"""

from __future__ import annotations

import gc

#: Container objects allocated (net) between two young collections; CPython's default
#: is 700. See :func:`settle_heap`.
GC_YOUNG_THRESHOLD = 10_000


def settle_heap() -> None:
    """Move everything the process built while starting out of the collector's sight, and
    let the young generation grow before it is collected.

    Frozen, the start-up heap is still freed by reference counting should it ever go;
    only cycles among it would be kept. In a forking server (a Celery prefork pool) it
    also keeps the children's collections from touching, and so copying, the pages they
    share with the parent.

    In a busy gateway, with a hundred matches in flight, a decision's objects outlive the
    default 700 allocations of a young collection, so most were promoted, and promoted
    again, and the older generations filled with what was about to be freed anyway: the
    collector took some 9 us of every decision, a third of it in full collections of
    30 ms. A match played in process builds its replay as it goes, so its young
    generation filled just as fast. With a young generation of 10,000 most of them are
    gone by the time it is collected: about 2 us a decision in the gateway, pauses of a
    few milliseconds, the same resident memory (``arena bench gateway``, ``arena bench
    referee`` and ``arena bench memory``).
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)
