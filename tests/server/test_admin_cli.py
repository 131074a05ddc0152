"""`arena bot`: an organiser manages bots on a real gateway process from the shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.server.processes import GatewayProcess

ORGANISER = "org-admin-cli"


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayProcess]:
    gw = GatewayProcess.start(db_path=tmp_path / "gw.sqlite3", log_path=tmp_path / "gw.log",
                              organiser_token=ORGANISER)
    try:
        yield gw
    finally:
        gw.stop()


def arena_bot(gw: GatewayProcess, *args: str, token: str | None = ORGANISER
              ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("ARENA_ORGANISER_TOKEN", None)
    if token is not None:
        env["ARENA_ORGANISER_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "arena.cli", "bot", "--gateway", gw.address,
                           *args], capture_output=True, text=True, timeout=60, env=env)


def test_register_list_rotate_revoke(gateway: GatewayProcess) -> None:
    reg = arena_bot(gateway, "register", "alice")
    assert reg.returncode == 0, reg.stderr
    first = reg.stdout.strip().splitlines()[-1]
    assert len(first) > 20
    listed = arena_bot(gateway, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["name"], r["token_active"], r["instances"]) for r in rows] == [("alice", True, 0)]
    # The listing never shows a token.
    assert first not in listed.stdout
    rot = arena_bot(gateway, "rotate", "alice")
    assert rot.returncode == 0 and rot.stdout.strip().splitlines()[-1] != first
    rev = arena_bot(gateway, "revoke", "alice")
    assert rev.returncode == 0, rev.stderr
    table = arena_bot(gateway, "list")
    assert "alice" in table.stdout and "revoked" in table.stdout


def test_a_bad_token_or_a_duplicate_name_is_refused_clearly(gateway: GatewayProcess) -> None:
    wrong = arena_bot(gateway, "list", token="not-the-organiser")
    assert wrong.returncode == 4  # refused credentials: retrying will not help
    assert "UNAUTHENTICATED" in wrong.stderr
    missing = arena_bot(gateway, "list", token=None)
    assert missing.returncode == 2 and "ARENA_ORGANISER_TOKEN" in missing.stderr
    assert arena_bot(gateway, "register", "bob").returncode == 0
    again = arena_bot(gateway, "register", "bob")
    assert again.returncode == 1 and again.stderr.strip()
    nobody = arena_bot(gateway, "revoke", "nobody")
    assert nobody.returncode == 1 and nobody.stderr.strip()


def test_options_after_the_subcommand_and_an_unreachable_gateway(gateway: GatewayProcess) -> None:
    """``arena bot register NAME --token T --gateway H:P`` reads as well as the options
    first; a gateway nobody answers on is exit 3, as for every command (docs/cli.md)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ARENA_ORGANISER_TOKEN",)}
    late = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bot", "register", "carol", "--token", ORGANISER,
         "--gateway", gateway.address], capture_output=True, text=True, timeout=60, env=env)
    assert late.returncode == 0, late.stderr
    assert "registered carol" in late.stdout
    by_env = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bot", "list"], capture_output=True, text=True,
        timeout=60, env=dict(env, ARENA_GATEWAY=gateway.address, ARENA_ORGANISER_TOKEN=ORGANISER))
    assert by_env.returncode == 0 and "carol" in by_env.stdout, by_env.stderr
    gone = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bot", "list", "--token", "t", "--gateway",
         "127.0.0.1:1"], capture_output=True, text=True, timeout=60, env=env)
    assert gone.returncode == 3, gone.stderr
    assert "UNAVAILABLE" in gone.stderr and "Traceback" not in gone.stderr
