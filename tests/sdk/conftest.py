"""The SDK under test is the one in this checkout, installed or not."""

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

from arena.server.testing import GatewayThread  # noqa: E402


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayThread]:
    gw = GatewayThread(str(tmp_path / "gateway.sqlite3"))
    try:
        yield gw
    finally:
        gw.close()
