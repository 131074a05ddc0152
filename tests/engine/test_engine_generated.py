"""The generated modules (``scripts/generate.py``) match their declarations: the rule
options in ``arena/engine/options.toml``, the game's fields in ``state.py`` and
``tricks.py``, the observation's fields in ``arena/server/wire_fields.toml``; and a
declaration changed without regenerating is caught."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from arena.engine import OPTIONS, Rules
from arena.engine.options import Options

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["scripts/generate.py", "arena/engine/options.toml", "arena/engine/options.py",
           "arena/engine/trick_options.py", "arena/engine/copies.py", "arena/engine/tricks.py",
           "arena/engine/state.py", "arena/server/wire.py", "arena/server/wire_fields.toml"]


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(root / "scripts" / "generate.py"), "--check"],
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_generated_modules_are_up_to_date() -> None:
    done = _check(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_declaration_changed_without_regenerating_fails_the_check(tmp_path: Path) -> None:
    for name in SOURCES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    assert _check(tmp_path).returncode == 0
    toml = tmp_path / "arena/engine/options.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        'help = "number of players at the table"', 'help = "players at the table"'))
    state = tmp_path / "arena/engine/state.py"
    state.write_text(state.read_text(encoding="utf-8").replace(
        "    golden: bool\n", "    golden: bool\n    golden_seats: list[int]\n"))
    fields = tmp_path / "arena/server/wire_fields.toml"
    fields.write_text(fields.read_text(encoding="utf-8").replace(
        'read = "game.taken_points"', 'read = "view.points(game, seat)"'))
    done = _check(tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == ["arena/engine/options.py: out of date",
                                        "arena/engine/copies.py: out of date",
                                        "arena/server/wire.py: out of date"]


def test_every_option_is_a_typed_attribute_of_the_rules() -> None:
    rules = Rules.preset("classic")
    assert [o.name for o in OPTIONS] == list(Options.__annotations__)
    for o in OPTIONS:
        value = getattr(rules, o.name)
        assert value == rules.options()[o.name] or list(value) == rules.options()[o.name]
