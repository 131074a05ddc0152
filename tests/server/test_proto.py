"""The protocol definition lints clean and the committed stubs match it."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STUB_DIRS = ("sdk/python/thousand_bot/proto",)


def _buf() -> str:
    found = shutil.which("buf", path=str(Path(sys.executable).parent)) or shutil.which("buf")
    if found is None:
        pytest.fail("buf is not installed (pip install buf-bin)")
    return found


def test_buf_lint_is_clean() -> None:
    result = subprocess.run([_buf(), "lint"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def _files(root: Path) -> set[str]:
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_committed_stubs_are_fresh(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHON=sys.executable)
    subprocess.run(
        ["bash", str(REPO / "scripts/gen-proto.sh"), str(tmp_path)],
        check=True,
        env=env,
        timeout=120,
    )
    for rel in STUB_DIRS:
        fresh, committed = tmp_path / rel, REPO / rel
        assert _files(fresh) == _files(committed), f"{rel}: files differ; run scripts/gen-proto.sh"
        for name in _files(fresh):
            assert filecmp.cmp(fresh / name, committed / name, shallow=False), (
                f"{rel}/{name} is stale: run scripts/gen-proto.sh and commit the result"
            )


def test_the_stubs_exist_once() -> None:
    """The arena imports the SDK's stubs: no second generated copy anywhere in the tree."""
    tracked = subprocess.run(["git", "ls-files", "*_pb2*.py*"], cwd=REPO, capture_output=True,
                             text=True, check=True, timeout=60).stdout.split()
    assert tracked, "no generated stubs found"
    assert all(name.startswith(f"{STUB_DIRS[0]}/") for name in tracked), tracked
    code = (
        "import arena.server.services as s, thousand_bot.proto.thousand.v1.bot_pb2 as b;"
        "assert s.bot_pb2 is b"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)
