"""``scripts/test.sh --quick``, as the README prints it: the unit layers pass on their own,
with no service started, and nothing outside them is run."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNIT_LAYERS = ("tests/test_layers.py", "tests/engine/", "tests/bots/", "tests/ratings/",
               "tests/referee/")


def test_the_quick_check_runs_the_unit_layers_as_the_readme_says() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = re.search(r"`(scripts/test\.sh --quick)`", readme)
    assert command, "the README names the quick check"
    done = subprocess.run([*command.group(1).split(), "-rA"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "== ruff" in done.stdout and "== mypy" not in done.stdout
    ran = re.findall(r"^PASSED (\S+?)::", done.stdout, re.MULTILINE)
    assert len(ran) > 1000
    assert {path for path in ran if not path.startswith(UNIT_LAYERS)} == set()
    assert {layer.rstrip("/") for layer in UNIT_LAYERS} == {
        next(layer.rstrip("/") for layer in UNIT_LAYERS if path.startswith(layer))
        for path in ran
    }
