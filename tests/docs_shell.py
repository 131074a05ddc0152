"""Running the manuals' shell commands as printed, in a scratch directory.

The commands run through bash with the checkout's ``.venv/bin`` first on the path, in a
temporary directory that holds a copy of ``examples/`` (so results files land there, not
in the checkout). The only changes to a command are the ones a reader makes too: a
placeholder (``ORGANISER_TOKEN``, ``MATCH_ID``, ``HOST:PORT``) gets its value, and a
fixed port the manual uses (50051, 6379, 9101...) becomes a free one, since other
programs on the machine may hold it. Each replacement must find its text, so a manual
that changes its command fails here instead of being silently skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from docblocks import REPO

BIN = Path(sys.executable).parent


class Shell:
    def __init__(self, cwd: Path, env: Mapping[str, str] | None = None) -> None:
        self.cwd = cwd
        shutil.copytree(REPO / "examples", cwd / "examples", dirs_exist_ok=True)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("ARENA_", "THOUSAND_BOT_"))}
        self.env["PATH"] = f"{BIN}{os.pathsep}{self.env.get('PATH', '')}"
        self.env["PYTHONUNBUFFERED"] = "1"
        self.env.update(env or {})
        self.subs: dict[str, str] = {}
        self.background: list[subprocess.Popen[bytes]] = []

    def fill(self, command: str, **extra: str) -> str:
        """The command with its placeholders and fixed ports replaced (each must occur
        when given in ``extra``; the shell-wide ones only where they appear)."""
        for old, new in extra.items():
            assert old in command, f"{old!r} is not in {command!r}"
            command = command.replace(old, new)
        for old, new in self.subs.items():
            command = re.sub(rf"(?<![\w.]){re.escape(old)}(?![\w])", new, command)
        return command

    def run(self, command: str, *, timeout: float = 120, ok: bool = True,
            **extra: str) -> subprocess.CompletedProcess[str]:
        line = self.fill(command, **extra)
        res = subprocess.run(["bash", "-c", line], cwd=self.cwd, env=self.env, text=True,
                             capture_output=True, timeout=timeout)
        if ok:
            assert res.returncode == 0, f"{line}: exit {res.returncode}\n{res.stdout}\n{res.stderr}"
        assert "Traceback" not in res.stderr, f"{line}\n{res.stderr}"
        return res

    def start(self, command: str, log: str, **extra: str) -> subprocess.Popen[bytes]:
        """A command the manual sends to the background (``... &``)."""
        line = self.fill(command, **extra).rstrip("& ")
        with open(self.cwd / log, "wb") as out:
            proc = subprocess.Popen(["bash", "-c", line], cwd=self.cwd, env=self.env,
                                    stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.background.append(proc)
        return proc

    def wait_for(self, log: str, pattern: str, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        path = self.cwd / log
        while time.monotonic() < deadline:
            text = path.read_text(errors="replace") if path.exists() else ""
            found = re.search(pattern, text)
            if found:
                return found
            time.sleep(0.2)
        raise AssertionError(f"{pattern!r} never appeared in {log}:\n{text}")

    def close(self) -> None:
        for proc in reversed(self.background):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.background:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def options_of(usage: str) -> list[str]:
    """The long options a synopsis shows (``[--rules PRESET]`` gives ``--rules``)."""
    return sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", usage)))


def shape(line: str) -> str:
    """A line with its figures blanked, to compare output whose numbers vary by machine
    (and the padding around them, which varies with their width)."""
    return re.sub(r" +", " ", re.sub(r"[-+]?\d[\d,.]*", "#", line)).rstrip()
