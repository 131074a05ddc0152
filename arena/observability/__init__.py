"""Prometheus metrics, their exposition, and live match watching.

This package deliberately imports nothing at load time: whether ``prometheus_client`` runs
in multiprocess mode is fixed when it is first imported, so a process that must enable
that mode (a Celery master) has to be able to import
:func:`arena.observability.exposition.prepare_multiprocess_dir` first.
"""
