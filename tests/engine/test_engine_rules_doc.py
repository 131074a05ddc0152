"""The rules manual is an interface: its commands run as printed, its lists of earlier
defaults are the engine's, and old replays verify the way it says."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from docblocks import block as doc_block

from arena.engine import PRESETS, Rules
from arena.engine.rules import earlier_defaults

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "docs" / "rules.md", ROOT / "docs" / "notation.md"]
GOLDEN = ROOT / "tests" / "golden"


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, env=env)


def doc_commands() -> list[str]:
    """Every ``arena ...`` command of the manuals: inline code and lines of code blocks."""
    out: list[str] = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        out += re.findall(r"`(arena [^`]+)`", text)
        for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
            out += [line for line in block.splitlines() if line.startswith("arena ")]
    return out


COMMANDS = doc_commands()
#: Placeholders stand for a golden replay; the syntax line with PRESET is not a command.
RUNNABLE = [c.replace("FILE", str(GOLDEN / "replay-classic.json")) for c in COMMANDS
            if "PRESET" not in c]


def test_the_manuals_have_commands() -> None:
    assert len(RUNNABLE) >= 5, COMMANDS


@pytest.mark.parametrize("command", RUNNABLE)
def test_every_command_runs_as_printed(command: str) -> None:
    res = arena(*shlex.split(command)[1:])
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip()


def test_the_earlier_defaults_listed_are_the_engines() -> None:
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    section = text.split("## Replays recorded before", 1)[1].split("\n## ", 1)[0]
    for preset in PRESETS:
        for name, value in earlier_defaults(preset).items():
            shown = json.dumps(value)
            assert f"`{name}`" in section and (
                f"`{shown}`" in section or f"`{name}` {shown}" in section
            ), (preset, name, value)
    command = doc_block("docs/rules.md", "arena rules show classic-501").commands()[0]
    assert command in section
    from arena.cli import main

    assert main(command.split()[1:]) == 0  # the command runs as printed
    shown_options = dict(o.split("=", 1) for o in re.findall(r"-o (\S+)", command))
    want = earlier_defaults("classic-501")
    assert {k: json.loads(v) if v[0] in "0123456789tf" else v
            for k, v in shown_options.items()} == want


def old_replay(name: str) -> dict[str, Any]:
    """A replay as the engine wrote it before following the texts: the old-defaults golden
    without the earlier values written into its rules."""
    data: dict[str, Any] = json.loads((GOLDEN / f"replay-{name}-old-defaults.json").read_text())
    preset = data["rules"]["preset"]
    for key in earlier_defaults(preset):
        data["rules"]["options"].pop(key, None)
    return data


@pytest.mark.parametrize(("name", "code"), [("classic-501", 2), ("classic-house", 2)])
def test_an_old_replay_verifies_with_the_earlier_defaults(tmp_path: Path, name: str,
                                                          code: int) -> None:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(old_replay(name)), encoding="utf-8")
    res = arena("replay", "verify", str(path))
    assert res.returncode == code
    assert res.stderr.splitlines()[-1] == (
        "hint: it verifies with the defaults of before the engine followed the rule texts "
        f"(docs/rules.md): arena replay verify --earlier-defaults {path}"
    )
    res = arena("replay", "verify", "--earlier-defaults", str(path))
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("OK: ")
    res = arena("replay", "show", "--earlier-defaults", str(path))
    assert res.returncode == 0 and "Result (completed)" in res.stdout
    res = arena("replay", "show", str(path))
    assert res.returncode == 2 and "--earlier-defaults" in res.stderr


def test_a_current_replay_gets_no_hint(tmp_path: Path) -> None:
    data = json.loads((GOLDEN / "replay-classic-501.json").read_text())
    data["result"]["scores"][0] += 5
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    res = arena("replay", "verify", str(path))
    assert res.returncode == 1 and res.stderr == ""


def test_earlier_defaults_of_an_unknown_preset() -> None:
    with pytest.raises(Exception, match="unknown preset"):
        earlier_defaults("clasic")
    assert Rules.preset("classic", **earlier_defaults("classic")).barrel_jump == "contract"
