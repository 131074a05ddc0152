"""Tournaments: a spec a person writes, expanded into seeded matches, run by an executor.

The pieces are kept in separate modules so a Celery worker can import the match-playing
function without pulling in the scheduler, and the scheduler can run without Celery.
"""
