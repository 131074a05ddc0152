"""The starter bots, built once per test session with their languages' real compilers.

Each starter's folder is copied to a scratch copy of the repository's layout and built
there with the command its README prints (taken from the README, never from a copy), so a
README whose build command breaks fails here. Nothing is built in the checkout.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from docblocks import REPO, block

LANGUAGES = ("c", "go", "rust", "java")
HERE = Path(__file__).resolve().parent
#: A bot program that misbehaves on purpose (see its docstring).
HOSTILE = HERE / "hostile_bot.py"

#: The compiler each starter needs, and the Debian package that brings it
#: (scripts/setup.sh --test installs them).
COMPILERS = {"c": ("cc", "gcc"), "go": ("go", "golang-go"), "rust": ("cargo", "rustc cargo"),
             "java": ("javac", "default-jdk-headless")}


def readme_commands() -> dict[str, list[str]]:
    """Each README's first block: ``cd sdk/starters/LANG``, the build, a match, a check."""
    blocks = {
        "c": block("sdk/starters/c/README.md", "cc -O2 -o mybot mybot.c"),
        "go": block("sdk/starters/go/README.md", "go build -o mybot ."),
        "rust": block("sdk/starters/rust/README.md", "cargo build --release --offline"),
        "java": block("sdk/starters/java/README.md", "javac -d build Bot.java"),
    }
    return {lang: b.commands() for lang, b in blocks.items()}


def tool_env(cache: Path) -> dict[str, str]:
    """The environment the starters build and run in: the arena's commands first on the
    path, a rustup install's cargo as well, compiler caches in the scratch directory."""
    env = dict(os.environ)
    cargo_bin = Path.home() / ".cargo" / "bin"
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), str(cargo_bin),
                                   env.get("PATH", "")])
    env.setdefault("GOCACHE", str(cache / "go-build"))
    env.setdefault("GOPATH", str(cache / "go"))
    env["PYTHONUNBUFFERED"] = "1"
    for key in [k for k in env if k.startswith(("ARENA_", "THOUSAND_BOT_"))]:
        del env[key]
    return env


@dataclass(frozen=True)
class Starter:
    """A built starter bot."""

    lang: str
    #: Its folder in the scratch copy (where the README's commands run).
    folder: Path
    #: The README's ``cmd:`` reference, relative to ``folder``.
    ref: str
    #: The program's command line, runnable from anywhere.
    argv: tuple[str, ...]

    @property
    def cmd(self) -> str:
        """A ``cmd:`` reference that works from any directory."""
        return "cmd:" + shlex.join(self.argv)


def _argv(lang: str, folder: Path) -> tuple[str, ...]:
    if lang == "rust":
        return (str(folder / "target" / "release" / "mybot"),)
    if lang == "java":
        return ("java", "-cp", str(folder / "build"), "Bot")
    return (str(folder / "mybot"),)


def build_starters(root: Path, env: dict[str, str]) -> dict[str, Starter]:
    """Copy ``sdk/starters`` under ``root`` and build each starter as its README says."""
    missing = [f"{tool} (Debian: {package})" for tool, package in COMPILERS.values()
               if shutil.which(tool, path=env["PATH"]) is None]
    if missing:
        raise AssertionError("the starter bots' compilers are missing: " + ", ".join(missing)
                             + "; scripts/setup.sh --test installs them")
    shutil.copytree(REPO / "sdk" / "starters", root / "sdk" / "starters",
                    ignore=shutil.ignore_patterns("mybot", "target", "build", "*.class"))
    built: dict[str, Starter] = {}
    for lang, commands in readme_commands().items():
        cd, build, match, _check = commands
        assert cd == f"cd sdk/starters/{lang}", cd
        result = subprocess.run(["bash", "-c", f"{cd} && {build}"], cwd=root, env=env,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, f"{lang}: {build}\n{result.stdout}\n{result.stderr}"
        ref = shlex.split(match)[2]
        folder = root / "sdk" / "starters" / lang
        built[lang] = Starter(lang, folder, ref, _argv(lang, folder))
    return built
