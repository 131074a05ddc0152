"""``arena tournament check`` as an organiser runs it: every mistake at once, each message
whole, and settings that change nothing said rather than passed over."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

BIN = Path(sys.executable).parent


def check(path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    return subprocess.run([str(BIN / "arena"), "tournament", "check", str(path)], text=True,
                          capture_output=True, env=env, cwd=path.parent, timeout=60)


def spec(tmp: Path, **fields: Any) -> Path:
    data: dict[str, Any] = {
        "name": "cup", "rules": "classic",
        "participants": ["greedy", "random", {"name": "r2", "bot": "random"}],
        "format": "duplicate", "sets": 2, "executor": "inline",
    }
    data.update(fields)
    path = tmp / "cup.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def problems(res: subprocess.CompletedProcess[str]) -> set[str]:
    return {line.strip() for line in res.stderr.splitlines()[1:] if not line.startswith(
        "warning:")}


def test_every_mistake_is_reported_at_once_and_fixing_one_brings_out_no_other(
    tmp_path: Path,
) -> None:
    bad = check(spec(
        tmp_path,
        rules={"preset": "classic", "options": {"barel": 880, "max_deals": "x"}},
        format={"type": "dupliate", "rounds": -1},
    ))
    assert bad.returncode == 2
    found = problems(bad)
    assert found == {
        "rules.options: unknown option 'barel' (did you mean 'barrel'?)",
        "rules.options: option 'max_deals': expected a whole number, got 'x'",
        "format.type: unknown format 'dupliate' (did you mean 'duplicate'?): use round-robin, "
        "duplicate, gauntlet, swiss, sprt, league",
        "format.rounds: must be a positive integer",
    }, bad.stderr
    # Each fix takes its own line away and adds none.
    fixed_names = check(spec(
        tmp_path,
        rules={"preset": "classic", "options": {"barrel": 880, "max_deals": "x"}},
        format={"type": "swiss", "rounds": -1},
    ))
    assert problems(fixed_names) == {
        "rules.options: option 'max_deals': expected a whole number, got 'x'",
        "format.rounds: must be a positive integer",
    }, fixed_names.stderr


def test_settings_the_executor_does_not_use_are_warned_about(tmp_path: Path) -> None:
    res = check(spec(tmp_path, executor={"type": "celery", "workers": 4,
                                         "broker": "redis://127.0.0.1:6379/0"}))
    assert res.returncode == 0, res.stderr
    assert ("warning: executor.workers: not used by executor celery: Celery workers are the "
            "arena worker processes (arena worker --concurrency N)") in res.stderr
    local = check(spec(tmp_path, executor={"type": "local", "workers": 2, "queue": "org"}))
    assert local.returncode == 0
    assert "warning: executor.queue: not used by executor local" in local.stderr
    assert "executor.workers" not in local.stderr
