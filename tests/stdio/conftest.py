"""Fixtures of the text protocol's tests: the starter bots, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from stdio_support import Starter, build_starters, tool_env


@pytest.fixture(scope="session")
def tools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment the starters build and run in."""
    return tool_env(tmp_path_factory.mktemp("toolcache"))


@pytest.fixture(scope="session")
def starters(tmp_path_factory: pytest.TempPathFactory, tools: dict[str, str]) -> dict[str, Starter]:
    """Every starter bot, built with its real compiler as its README says."""
    return build_starters(Path(tmp_path_factory.mktemp("starters")), tools)
