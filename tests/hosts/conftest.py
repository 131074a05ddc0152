"""The multi-host rig's tests: several hosts made of namespaces on this machine (root only)."""

from __future__ import annotations

import os
import shutil

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() == 0 and shutil.which("ip"):
        return
    skip = pytest.mark.skip(reason="the multi-host rig needs root and the ip command")
    for item in items:
        if "tests/hosts/" in str(item.fspath):
            item.add_marker(skip)
