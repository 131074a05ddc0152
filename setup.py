"""Builds the arena's hot path as C extension modules with mypyc (see ``arena/compiled.py``).

Everything else about the package is in ``pyproject.toml``. The modules listed in
``arena.compiled.MODULES`` are compiled from the same Python source they ship with; the
build records a digest of each source in ``arena/_compiled.json``, and at import the arena
runs those extension modules only while the sources still match (else their source, with a
warning). ``ARENA_COMPILE=0`` builds pure Python, and so does a machine without a working C
compiler or mypyc: the arena is the same either way, only slower.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
MANIFEST = ROOT / "arena" / "_compiled.json"
GROUP = "arena._compiled"


def _modules() -> list[str]:
    """``arena.compiled.MODULES``, read without importing the arena (nothing of it is
    installed while it is being built)."""
    tree = ast.parse((ROOT / "arena" / "compiled.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "MODULES"
            and node.value is not None
        ):
            return list(ast.literal_eval(node.value))
    raise RuntimeError("arena/compiled.py defines no MODULES")


def _path(module: str) -> Path:
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _built_files() -> list[Path]:
    """Extension modules an earlier in-place build left beside the sources."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    files = [_path(m).with_suffix(suffix) for m in _modules()]
    # mypyc names the group's shared library "<group>__mypyc" (arena/_compiled__mypyc).
    library = ROOT.joinpath(*f"{GROUP}__mypyc".split("."))
    files.append(library.with_name(library.name + suffix))
    return files


def _clean() -> None:
    """Pure Python: no extension module of an earlier build may shadow the sources."""
    for path in [*_built_files(), MANIFEST]:
        path.unlink(missing_ok=True)


def _compiler_works() -> bool:
    """A C compiler that runs, and Python's headers for it to compile against."""
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text("int main(void) { return 0; }\n")
        try:
            done = subprocess.run(
                [*compiler.split(), str(src), "-o", str(Path(tmp) / "probe")],
                capture_output=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
    headers = sysconfig.get_config_var("INCLUDEPY")
    return done.returncode == 0 and bool(headers) and Path(headers, "Python.h").exists()


def _editable() -> bool:
    return any(arg in ("editable_wheel", "develop") for arg in sys.argv)


def _building() -> bool:
    """Whether this run of setup.py builds (rather than only reading the metadata, which
    pip asks for first: compiling then would be wasted)."""
    builds = ("editable_wheel", "bdist_wheel", "build", "build_ext", "develop", "install")
    return any(arg in builds for arg in sys.argv)


def _fresh(modules: list[str]) -> bool:
    """An in-place build that still matches every source (nothing to compile again)."""
    try:
        recorded = json.loads(MANIFEST.read_text())["modules"]
    except (OSError, ValueError, KeyError):
        return False
    return recorded == {m: _digest(_path(m)) for m in modules} and all(
        path.exists() for path in _built_files()
    )


def _pure(why: str) -> list[Any]:
    print(f"arena: {why}, building pure Python", file=sys.stderr)
    if _editable():
        _clean()  # an editable install runs from this tree: no older build may stay in it
    return []


#: The digests of the compiled sources, once this run has compiled them.
_manifest: str | None = None


def _extensions() -> list[Any]:
    global _manifest
    if not _building():
        return []
    if os.environ.get("ARENA_COMPILE", "1") == "0":
        return _pure("ARENA_COMPILE=0")
    try:
        from mypyc.build import mypycify
    except ImportError:
        return _pure("mypyc is not available")
    if not _compiler_works():
        return _pure("no working C compiler")
    modules = _modules()
    if _editable() and _fresh(modules):
        print("arena: compiled modules are up to date", file=sys.stderr)
        return []
    shutil.rmtree(ROOT / "build" / "mypyc", ignore_errors=True)
    extensions = mypycify(
        [
            # The compiled modules' own types are checked as mypy checks them (ruff and
            # mypy run on every change); these flags only keep the build from depending
            # on which stub packages the build environment happens to hold.
            "--config-file=",
            "--ignore-missing-imports",
            "--follow-imports=silent",
            "--python-version=3.11",
            *(str(_path(m).relative_to(ROOT)) for m in modules),
        ],
        opt_level="3",
        group_name=GROUP,
        target_dir=str(ROOT / "build" / "mypyc"),
    )
    from mypy.version import __version__ as mypy_version

    digests = {m: _digest(_path(m)) for m in modules}
    _manifest = json.dumps({"mypyc": mypy_version, "modules": digests}, indent=1,
                           sort_keys=True) + "\n"
    if _editable():
        MANIFEST.write_text(_manifest)  # in place, beside the modules it vouches for
    return list(extensions)


class _BuildPy(build_py):
    """Puts a wheel's digests into the wheel. Written into the source tree they would
    vouch for whatever an editable install last built in place there, edited or not."""

    def run(self) -> None:
        super().run()
        if _manifest is not None and not self.editable_mode:
            target = Path(self.build_lib, "arena", MANIFEST.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_manifest)


setup(ext_modules=_extensions(), cmdclass={"build_py": _BuildPy})
