"""Fixtures of the web tests: a store filled by real tournaments, a real ``arena web``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import chromium, have_chromium
from web_support import WebServer, fill_store, web_server


@pytest.fixture(scope="session")
def filled_store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("web-store")
    db = f"sqlite:///{tmp / 'results.sqlite3'}"
    info = fill_store(tmp, db)
    return {"db": db, "tmp": tmp, **info}


@pytest.fixture(scope="session")
def web(filled_store: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[WebServer]:
    log = tmp_path_factory.mktemp("web-log") / "web.log"
    with web_server(filled_store["db"], log) as server:
        yield server


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not have_chromium():
        pytest.fail("Chromium is missing: run scripts/setup.sh --test (Debian chromium, "
                    "chromium-driver)")
    with chromium() as driver:
        yield driver


@pytest.fixture()
def shots(request: pytest.FixtureRequest) -> Path:
    from browser import SHOTS

    return SHOTS
