"""The arena's modules stand in layers: no import runs up a layer, and none closes a circle.

Every module of ``arena/`` and ``workers/`` is read with :mod:`ast`, and every import in it
counts: at the top, inside functions (a lazy import is still an import: it only delays
the circle it closes) and under ``TYPE_CHECKING`` (the types a module names are part of
what it depends on, and a type-only import is where a circle starts). An import by name
through :mod:`importlib` (a command dispatcher, a Celery app's task modules, a bot
reference) is not read: such a module is named by a string and loaded on demand, and
``docs/architecture.md`` says where that is done and why.

The layer table is :data:`LAYERS`, bottom first; ``docs/architecture.md`` explains it and
carries the same table, which the last test holds against this one.
"""

from __future__ import annotations

import ast
import graphlib
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("arena", "workers")

#: The layers, bottom first: (name, the modules in it, by prefix). A module belongs to the
#: layer of the longest prefix that names it (``arena.server.app`` is not in the layer of
#: ``arena.server``), and may import only modules of its own layer or of the layers below.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("arena", "arena.compiled", "arena.exitcodes")),
    ("engine", ("arena.engine",)),
    ("match", ("arena.match",)),
    ("bots", ("arena.bots",)),
    ("ratings", ("arena.ratings",)),
    ("records", ("arena.tournament.spec", "arena.tournament.model", "arena.tournament.store")),
    ("metrics", ("arena.observability",)),
    ("referee", ("arena.referee",)),
    ("gateway", ("arena.server", "arena.stdio", "arena.sandbox", "arena.tournament.routing")),
    ("hosted", ("arena.hosted",)),
    ("service", (
        "arena.server.app", "arena.server.__main__", "arena.server.hosted",
        "arena.server.hosted_cli", "arena.server.admin",
    )),
    ("tournament", ("arena.tournament",)),
    ("workers", ("workers",)),
    ("web", ("arena.web",)),
    ("commands", (
        "arena.cli", "arena.completion", "arena.demo", "arena.rigs",
        "arena.referee.cli", "arena.referee.compare", "arena.referee.bots_cli",
        "arena.observability.watch", "arena.tournament.cli", "arena.ratings.luck.train",
        "arena.ratings.luck.cli",
        # the benchmarks (``arena bench ...``)
        "arena.bench",
    )),
)  # fmt: skip


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the packages, by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported(name: str, source: str, is_package: bool, known: Iterable[str]) -> dict[str, int]:
    """The modules of ``known`` that the module ``name`` imports, each with the first line
    that does: every ``import`` and ``from ... import`` wherever it stands."""
    modules = set(known)
    package = name if is_package else name.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            # ``from pkg import mod`` imports the module pkg.mod; ``from pkg import name``
            # the package itself.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.setdefault(target, node.lineno)
    return found


def import_graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """Module -> the modules it imports -> the line of the first such import."""
    files = module_files(root)
    return {
        name: imported(name, path.read_text(encoding="utf-8"), path.name == "__init__.py", files)
        for name, path in files.items()
    }


def first_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One circle of imports (its modules in order, the first repeated at the end), or
    None."""
    try:
        graphlib.TopologicalSorter({k: set(v) for k, v in graph.items()}).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])[::-1]
    return None


def layer_of(module: str, layers: Sequence[tuple[str, Sequence[str]]] = LAYERS) -> int:
    """The index of the layer of the longest prefix naming ``module``."""
    best, best_len = -1, -1
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            named = module == prefix or module.startswith(prefix + ".")
            if named and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best < 0:
        raise LookupError(f"{module} is in no layer: add it to LAYERS and docs/architecture.md")
    return best


def upward(
    graph: Mapping[str, Mapping[str, int]],
    layers: Sequence[tuple[str, Sequence[str]]] = LAYERS,
) -> list[str]:
    """Each import that runs from a layer up to a higher one, as a readable line."""
    rows = []
    for module, targets in sorted(graph.items()):
        low = layer_of(module, layers)
        for target, line in sorted(targets.items()):
            high = layer_of(target, layers)
            if high > low:
                rows.append(f"{module} (line {line}, layer {layers[low][0]}) imports "
                            f"{target} (layer {layers[high][0]})")
    return rows


def face_imports_above(
    graph: Mapping[str, Mapping[str, int]],
    files: Mapping[str, Path],
    layers: Sequence[tuple[str, Sequence[str]]] = LAYERS,
) -> list[str]:
    """The imports of a package's ``__init__`` above the lowest layer of the package's
    modules. Importing any module of a package runs that ``__init__`` first, so whatever it
    imports every module of the package imports too (``arena.server`` importing the gateway
    process would load the whole gateway into a bot program's seat)."""
    rows = []
    for package, targets in sorted(graph.items()):
        if files[package].name != "__init__.py":
            continue
        members = [m for m in graph if m.startswith(package + ".")]
        lowest = min(layer_of(m, layers) for m in [package, *members])
        rows += [
            f"{package} imports {t} (layer {layers[layer_of(t, layers)][0]}), above its "
            f"modules of layer {layers[lowest][0]}"
            for t in sorted(targets) if layer_of(t, layers) > lowest
        ]
    return rows


# --- the checks themselves, on a small made-up house first -------------------------------


def test_a_circle_is_found_and_named() -> None:
    assert first_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    cycle = first_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}


def test_an_import_up_a_layer_is_found() -> None:
    layers = (("low", ("p.low",)), ("high", ("p.high", "p.low.cli")))
    graph = {"p.low.a": {"p.high.b": 3}, "p.high.b": {"p.low.a": 1}, "p.low.cli": {"p.high.b": 2}}
    assert upward(graph, layers) == [
        "p.low.a (line 3, layer low) imports p.high.b (layer high)"
    ]
    with pytest.raises(LookupError, match=r"p\.other is in no layer"):
        layer_of("p.other", layers)


def test_a_face_that_imports_its_top_module_is_found() -> None:
    layers = (("low", ("p",)), ("high", ("p.app",)))
    graph = {"p": {"p.app": 1}, "p.hub": {}, "p.app": {"p.hub": 1}}
    files = {"p": Path("p/__init__.py"), "p.hub": Path("p/hub.py"), "p.app": Path("p/app.py")}
    assert face_imports_above(graph, files, layers) == [
        "p imports p.app (layer high), above its modules of layer low"
    ]


def test_every_import_is_read_lazy_and_type_only_ones_too(tmp_path: Path) -> None:
    pkg = tmp_path / "arena"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import x\n")
    (pkg / "sub" / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from arena import b\n"
        "def f():\n    import arena.c\n    from ..d import y\n"
    )
    for name in ("b", "c", "d"):
        (pkg / f"{name}.py").write_text("")
    graph = import_graph(tmp_path)
    assert graph["arena.sub"] == {"arena.sub.a": 1}
    assert graph["arena.sub.a"] == {"arena.b": 3, "arena.c": 5, "arena.d": 6}


# --- the arena ---------------------------------------------------------------------------


def test_no_module_imports_another_that_imports_it_back() -> None:
    cycle = first_cycle(import_graph())
    assert cycle is None, "a circle of imports: " + " -> ".join(cycle or ())


def test_no_module_imports_a_higher_layer() -> None:
    rows = upward(import_graph())
    assert not rows, "imports that run up the layers (docs/architecture.md):\n" + "\n".join(rows)


def test_a_package_face_imports_nothing_above_its_lowest_module() -> None:
    rows = face_imports_above(import_graph(), module_files())
    assert not rows, "\n".join(rows)


def test_the_manual_shows_the_same_layers() -> None:
    """docs/architecture.md's table: a row per layer, top first, with its modules."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \*\*(\w+)\*\* \| (.+?) \|", text, flags=re.MULTILINE)
    documented = [(name, tuple(sorted(re.findall(r"`([\w.]+)`", cell)))) for name, cell in rows]
    expected = [(name, tuple(sorted(prefixes))) for name, prefixes in reversed(LAYERS)]
    assert documented == expected
