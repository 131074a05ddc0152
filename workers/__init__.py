"""Celery workers that play tournament matches (``celery -A workers.app worker``)."""
