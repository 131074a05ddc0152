"""Thousand Arena: a tournament platform and bot arena for the card game 1000."""

from arena.compiled import activate as _activate

__version__ = "0.1.0"

# Before any module of the hot path is imported: run it compiled only while the build
# matches its source (arena.compiled).
_activate()
