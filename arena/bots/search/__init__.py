"""The ``search`` bot: determinized search with inference, for every preset.

See ``docs/bots.md`` for how it decides and what it assumes; :class:`SearchBot` takes a
per-decision ``budget_ms`` (default 50) or a fixed ``iterations`` count.  ``LEVELS`` are
the named strengths the registry offers.
"""

from __future__ import annotations

from arena.bots.search.bot import SearchBot

#: Registry name -> (budget per decision in ms, description).
LEVELS: dict[str, tuple[float, str]] = {
    "search-fast": (10.0, "determinized search, 10 ms a decision"),
    "search": (50.0, "determinized search with inference, 50 ms a decision"),
    "search-strong": (200.0, "determinized search, 200 ms a decision"),
}

__all__ = ["LEVELS", "SearchBot"]
