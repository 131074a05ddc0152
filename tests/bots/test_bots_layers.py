"""The built-in bots sit below the referee: they share its vocabulary (``arena.match``) but
never import the referee, which resolves bot names through their registry."""

from __future__ import annotations

import ast
from pathlib import Path

ARENA = Path(__file__).resolve().parents[2] / "arena"


def _imports(package: str) -> dict[str, set[str]]:
    """The ``arena.*`` packages each module of ``package`` imports, lazily or not."""
    found: dict[str, set[str]] = {}
    for path in sorted((ARENA / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        found[str(path.relative_to(ARENA))] = {
            n.split(".")[1] for n in names if n.startswith("arena.") and n.count(".") >= 1
        }
    return found


def test_the_bots_do_not_import_the_referee() -> None:
    for module, packages in _imports("bots").items():
        assert packages <= {"engine", "match", "bots"}, (module, packages)


def test_the_vocabulary_of_a_match_imports_no_other_part() -> None:
    for module, packages in _imports("match").items():
        assert packages <= {"match"}, (module, packages)


def test_the_referee_still_finds_the_bots() -> None:
    assert "bots" in set().union(*_imports("referee").values())
