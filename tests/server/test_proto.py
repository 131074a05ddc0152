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
STUB_DIRS = ("arena/proto", "sdk/python/thousand_bot/proto")


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


def test_both_stub_copies_import_together() -> None:
    """The arena and the SDK register the same descriptors; both must load in one process."""
    code = (
        "import sys; sys.path.insert(0, 'sdk/python');"
        "from arena.proto.thousand.v1 import bot_pb2 as a;"
        "from thousand_bot.proto.thousand.v1 import bot_pb2 as b;"
        "assert a.PlayRequest.DESCRIPTOR.full_name == b.PlayRequest.DESCRIPTOR.full_name"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)
