"""Where the hosted runtimes live: inside the arena's environment when the seats' uids can
reach it, else in a shared place named by their sources (a checkout in /root or in a
``mktemp -d`` folder must still run hosted bots)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from arena.sandbox.runtimes import SYSTEM_RUNTIMES, _stamp

REPO = Path(__file__).resolve().parents[2]


def _root_seen_from(prefix: Path) -> Path:
    """runtimes_root() as an environment at ``prefix`` (a bare venv running this one's
    packages) finds it."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    site = [p for p in sys.path if p.endswith("site-packages")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *site])}
    env.pop("ARENA_RUNTIMES", None)
    out = subprocess.run(
        [str(prefix / "bin" / "python"), "-c",
         "from arena.sandbox.runtimes import runtimes_root; print(runtimes_root())"],
        check=True, capture_output=True, text=True, env=env,
    ).stdout.strip()
    return Path(out)


@pytest.mark.skipif(os.geteuid() != 0, reason="seats have uids of their own only as root")
def test_an_environment_out_of_the_seats_reach_keeps_its_runtimes_where_they_reach() -> None:
    with tempfile.TemporaryDirectory() as closed:  # mode 0700, as mktemp -d makes it
        assert os.stat(closed).st_mode & 0o777 == 0o700
        root = _root_seen_from(Path(closed) / "venv")
        assert root == SYSTEM_RUNTIMES / _stamp()[:16]
    shared = SYSTEM_RUNTIMES / _stamp()[:16]
    with tempfile.TemporaryDirectory() as open_dir:
        os.chmod(open_dir, 0o755)
        venv = Path(open_dir) / "venv"
        root = _root_seen_from(venv)
        # Within reach, the environment's own place, unless the runtimes of its sources
        # are installed in the shared one and not in it.
        assert root == (shared if (shared / "stamp").is_file() else venv / "arena-runtimes")
        (venv / "arena-runtimes").mkdir()
        (venv / "arena-runtimes" / "stamp").write_text(_stamp())
        assert _root_seen_from(venv) == venv / "arena-runtimes"


def test_the_runtimes_this_environment_looks_for_are_the_ones_setup_installed() -> None:
    """scripts/setup.sh installs them; what the gateway and workers look for later (after
    installing the SDK left its build folders beside its sources) is the same place."""
    listed = subprocess.run([sys.executable, "-m", "arena.cli", "runtimes", "list"],
                            check=True, capture_output=True, text=True).stdout
    assert "MISSING" not in listed, listed
