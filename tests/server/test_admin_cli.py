"""`arena bot`: an organiser manages bots on a real gateway process from the shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.rigs.processes import GatewayProcess, free_port

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


def test_wait_gives_a_starting_gateway_time_and_then_says_it_is_unreachable(
        tmp_path: Path) -> None:
    """``--wait`` is for scripts that have just started a gateway (docs/scale-out.md):
    the call waits for it to listen; with nothing there it stops after the time given,
    exit 3 and one line."""
    env = dict(os.environ, ARENA_ORGANISER_TOKEN=ORGANISER)
    port = free_port()
    cmd = [sys.executable, "-m", "arena.cli", "bot", "--gateway", f"127.0.0.1:{port}"]
    waiting = subprocess.Popen([*cmd, "--wait", "60", "list", "--json"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # the call is made before anything listens on the port
    assert waiting.poll() is None
    serve = subprocess.Popen(
        [sys.executable, "-m", "arena.server", "--host", "127.0.0.1", "--port", str(port),
         "--db", str(tmp_path / "gw.sqlite3")], env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        out, err = waiting.communicate(timeout=90)
        assert waiting.returncode == 0, err
        assert json.loads(out) == []
    finally:
        serve.terminate()
        serve.wait(30)
    gone = subprocess.run([*cmd, "--wait", "1", "list"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert gone.returncode == 3
    assert gone.stderr.strip() == f"arena bot: 127.0.0.1:{port}: not reachable within 1 s"
    bad = subprocess.run([*cmd, "--wait", "soon", "list"], capture_output=True, text=True,
                         timeout=60, env=env)
    assert bad.returncode == 2 and "not a number of seconds" in bad.stderr


def test_two_gateways_started_together_on_one_new_registry_file(tmp_path: Path) -> None:
    """Switching a new SQLite file to WAL takes a lock the busy timeout does not wait for:
    two gateways started at the same moment on one registry (docs/scale-out.md) both
    come up and share it, every time."""
    env = dict(os.environ, ARENA_ORGANISER_TOKEN=ORGANISER)
    for attempt in range(6):
        db = tmp_path / f"registry-{attempt}.sqlite3"
        ports = [free_port() for _ in range(3)]
        procs = [subprocess.Popen(
            [sys.executable, "-m", "arena.server", "--host", "127.0.0.1", "--port", str(p),
             "--db", str(db)], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True) for p in ports]
        try:
            cmd = [sys.executable, "-m", "arena.cli", "bot", "--wait", "60"]
            reg = subprocess.run([*cmd, "--gateway", f"127.0.0.1:{ports[0]}", "register",
                                  f"bot{attempt}"], capture_output=True, text=True,
                                 timeout=90, env=env)
            assert reg.returncode == 0, reg.stderr
            listed = subprocess.run([*cmd, "--gateway", f"127.0.0.1:{ports[1]}", "list",
                                     "--json"], capture_output=True, text=True, timeout=90,
                                    env=env)
            assert listed.returncode == 0, listed.stderr
            assert [b["name"] for b in json.loads(listed.stdout)] == [f"bot{attempt}"]
        finally:
            for proc in procs:
                proc.terminate()
            errors = [proc.communicate(timeout=30)[1] for proc in procs]
        assert not any("Traceback" in e or "locked" in e for e in errors), errors
