"""The SDK under test is the one in this checkout, installed or not.

With ``ARENA_TEST_INSTALLED=1`` (scripts/test-wheels.sh) the SDK and the arena must come
from the installed wheels: a test run that silently imported the checkout would prove
nothing about the packages.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SDK = Path(__file__).resolve().parents[2] / "sdk" / "python"
try:
    import thousand_bot  # noqa: F401
except ImportError:  # a checkout without `pip install -e sdk/python`
    sys.path.insert(0, str(SDK))

import os  # noqa: E402

import arena  # noqa: E402
from arena.rigs.testing import GatewayThread  # noqa: E402

if os.environ.get("ARENA_TEST_INSTALLED") == "1":
    import thousand_bot as _installed

    checkout = Path(__file__).resolve().parents[2]
    for module in (_installed, arena):
        where = Path(module.__file__ or "").resolve()
        if checkout in where.parents:
            raise pytest.UsageError(f"{module.__name__} comes from the checkout ({where}), "
                                    "not from the installed wheel")


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayThread]:
    gw = GatewayThread(str(tmp_path / "gateway.sqlite3"))
    try:
        yield gw
    finally:
        gw.close()
