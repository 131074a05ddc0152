"""A real gateway on a loopback port for each test that asks for one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.server.testing import GatewayThread


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayThread]:
    gw = GatewayThread(str(tmp_path / "gateway.sqlite3"))
    try:
        yield gw
    finally:
        gw.close()
