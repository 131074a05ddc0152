"""``docs/house-rules.md`` works as written: in a copy of the engine, its option, its
scoring stage and its hook, and its table test are put where the page says, its
commands run as printed, and the new rule plays."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from docblocks import block as doc_block

ROOT = Path(__file__).resolve().parents[2]


def _insert(path: Path, anchor: str, text: str, *, before: bool = False) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.count(anchor) == 1, f"{anchor!r} is no longer in {path.name}"
    new = text + anchor if before else anchor + text
    path.write_text(source.replace(anchor, new), encoding="utf-8")


def test_the_slam_bonus_walkthrough_works_as_written(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "arena", tmp_path / "arena",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "_compiled.json"))
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "generate.py", tmp_path / "scripts")
    (tmp_path / "tests" / "engine").mkdir(parents=True)
    for name in ("test_engine_cases.py", "engine_support.py"):
        shutil.copy(ROOT / "tests" / "engine" / name, tmp_path / "tests" / "engine")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "ARENA_PURE": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, text=True,
                              capture_output=True, timeout=180, check=False)

    # 1. The option, and the commands that make it known.
    option = doc_block("docs/house-rules.md", "[slam_bonus]")
    engine = tmp_path / "arena" / "engine"
    with (engine / "options.toml").open("a", encoding="utf-8") as f:
        f.write("\n" + option.text)
    generate, show = doc_block("docs/house-rules.md", "python scripts/generate.py").commands()
    done = run(generate)
    assert done.returncode == 0, done.stderr
    assert "arena/engine/options.py: written" in done.stdout
    done = run(show)
    assert done.returncode == 0, done.stderr
    assert any(line.split()[:2] == ["slam_bonus", "50"] for line in done.stdout.splitlines())
    done = run("arena rules show classic -o slam_bonus=5000")
    assert done.returncode != 0
    assert "option 'slam_bonus': 5000 is above the maximum 1000" in done.stderr
    done = run("arena rules doc")
    assert "| `slam_bonus` | 0 to 1000 |" in done.stdout

    # 2. The stage beside the others, and the hook in the pipeline.
    scoring = engine / "scoring.py"
    stage = doc_block("docs/house-rules.md", "def slam_bonus(g: State, t: Tally) -> None:").text
    _insert(scoring, "# ---------------------------------------------------------------------- "
                     "the pipelines", stage + "\n\n", before=True)
    hook = doc_block("docs/house-rules.md", "played.append(slam_bonus)").text
    _insert(scoring, "        if r.sitter_scores_talon:\n            played.append(sitter_talon)\n",
            hook)

    # 3. The table test, and the command that runs it.
    row = doc_block("docs/house-rules.md", 'StageCase("slam_bonus:').text
    _insert(tmp_path / "tests" / "engine" / "test_engine_cases.py", "STAGE_CASES = [\n", row)
    (test,) = doc_block("docs/house-rules.md", "test_engine_cases.py -k slam").commands()
    done = run(test)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout

    # The rule plays: the pipeline of a rule set that uses it has the stage, and a deal
    # where the declarer takes every trick scores the bonus.
    check = (
        "from arena.engine import Rules\n"
        "from arena.engine.scoring import stage_names\n"
        "print(stage_names(Rules.preset('classic', slam_bonus=50)))\n"
        "print(stage_names(Rules.preset('classic')))\n"
    )
    done = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    with_bonus, without = done.stdout.splitlines()
    assert "'slam_bonus', 'totals'" in with_bonus and "slam_bonus" not in without
