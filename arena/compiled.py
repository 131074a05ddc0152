"""The compiled hot path: which modules run as C extensions, and the fall-back to source.

Every decision a gateway carries runs the rules engine (legal actions, the observation,
applying the move), the referee (clock, bookkeeping, events), the hub and the wire encoder.
Installing the arena compiles those modules with mypyc (``setup.py``), from the very
source files that ship beside them: the Python stays the reference, readable and
type-checked, and the extension modules only make it about twice as fast.

The build records a SHA-256 digest of each compiled module's source
(``arena/_compiled.json``). :func:`activate`, run once when ``arena`` is imported, keeps
the extension modules only while every source still matches; otherwise (a source edited
since the build, or ``ARENA_PURE=1``) it makes Python import those modules from their
source, so an edit is never shadowed by an older build. ``arena --version`` and the
benchmarks say which of the two is running.

This module must import nothing but the standard library: ``setup.py`` reads
:data:`MODULES` from it before anything is installed.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

#: The modules compiled together (one mypyc group). A module's compiled code calls the
#: others' directly, so they are kept or dropped as a whole.
MODULES: tuple[str, ...] = (
    "arena.engine.cards",
    "arena.engine.actions",
    "arena.engine.trick_options",
    "arena.engine.tricks",
    "arena.engine.state",
    "arena.engine.copies",
    "arena.engine.position",
    "arena.engine.view",
    "arena.engine.tally",
    "arena.engine.barrel",
    "arena.engine.golden",
    "arena.engine.scoring",
    "arena.engine.phases.base",
    "arena.engine.phases.play",
    "arena.engine.phases.contract",
    "arena.engine.phases.exchange",
    "arena.engine.phases.sale",
    "arena.engine.phases.talon",
    "arena.engine.phases.auction",
    "arena.engine.phases.blind",
    "arena.engine.phases.ask",
    "arena.engine.game",
    "arena.referee.clock",
    "arena.referee.runner",
    "arena.server.wire",
    "arena.server.hub",
    "arena.server.streams",
    "arena.server.eventlog",
    "arena.observability.tally",
)
#: Set to 1 to run the source of every module even where a build is up to date.
PURE_ENV = "ARENA_PURE"
MANIFEST_NAME = "_compiled.json"

_PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Status:
    """Whether the compiled modules are in use, and why (one line, for people)."""

    compiled: bool
    reason: str
    #: A build exists but a source changed since: worth a warning, unlike a pure install.
    stale: bool = False


_status: Status | None = None


def source_path(module: str) -> Path:
    """The source file of one of :data:`MODULES` (``arena.x.y`` -> ``<package>/x/y.py``)."""
    parts = module.split(".")
    return _PACKAGE_DIR.joinpath(*parts[1:]).with_suffix(".py")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _extension_built(base: Path) -> bool:
    """Whether an extension module ``base`` + any of this Python's suffixes exists."""
    return any(
        base.with_name(base.name + suffix).exists()
        for suffix in importlib.machinery.EXTENSION_SUFFIXES
    )


#: The library the compiled modules share (mypyc's group), beside them in the package.
GROUP_LIBRARY = "_compiled__mypyc"


def _check(manifest: Path, modules: Sequence[str]) -> Status:
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return Status(False, f"pure Python ({PURE_ENV} is set)")
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
        digests = recorded["modules"]
        mypyc = recorded.get("mypyc", "?")
    except FileNotFoundError:
        return Status(False, "pure Python (installed without compiling)")
    except (OSError, ValueError, KeyError, TypeError):
        return Status(False, f"pure Python ({manifest.name} is unreadable)")
    if not _extension_built(_PACKAGE_DIR / GROUP_LIBRARY):
        return Status(False, f"pure Python (no {GROUP_LIBRARY} library)")
    for module in modules:
        if not _extension_built(source_path(module).with_suffix("")):
            return Status(False, f"pure Python (no compiled {module})")
        try:
            current = digest(source_path(module))
        except OSError:
            return Status(False, f"pure Python (no source for {module})")
        if digests.get(module) != current:
            return Status(
                False,
                f"pure Python: {source_path(module).name} of {module} changed since it was "
                "compiled (reinstall the arena, e.g. scripts/setup.sh, to compile it again)",
                stale=True,
            )
    return Status(True, f"compiled with mypyc {mypyc} ({len(modules)} modules)")


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Imports the compiled modules from their source files instead."""

    def __init__(self, modules: Sequence[str]) -> None:
        self.modules = frozenset(modules)

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname))


def activate() -> Status:
    """Decide once per process whether the compiled modules run (see the module's text).

    Must run before any of :data:`MODULES` is imported: ``arena/__init__.py`` calls it."""
    global _status
    if _status is not None:
        return _status
    status = _check(_PACKAGE_DIR / MANIFEST_NAME, MODULES)
    if not status.compiled:
        already = [m for m in MODULES if m in sys.modules]
        if already:  # imported before activate(): too late to choose, say what runs
            status = Status(False, f"{status.reason}; imported before the choice: {already}",
                            status.stale)
        sys.meta_path.insert(0, _SourceFinder(MODULES))
        if status.stale:
            warnings.warn(f"arena: {status.reason}", RuntimeWarning, stacklevel=2)
    _status = status
    return status


def status() -> Status:
    """How the arena runs in this process (after :func:`activate`)."""
    return _status if _status is not None else activate()
