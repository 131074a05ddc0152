"""The runtimes hosted bots run on, installed once per host and shown read-only to each seat.

* ``python``: the host's ``/usr/bin/python3`` with the Python SDK (``thousand-bot``), its
  dependencies (gRPC, protobuf) and numpy, installed into ``RUNTIMES/python`` and compiled,
  so a bot starts without writing a byte. The bot's entry is a bot reference
  (``mybot.py:MyBot`` or ``mybot:MyBot``), run as ``thousand-bot run`` would.
* ``node``: the host's Node.js with the starter bot's dependencies (``@grpc/grpc-js``,
  ``@grpc/proto-loader``) and the protocol's ``.proto`` files. The entry is a script
  (``bot.js``), run with ``--gateway`` pointing at its seat.
* ``binary``: any Linux executable with its files, no runtime of ours.

``RUNTIMES`` is ``$ARENA_RUNTIMES``, else ``arena-runtimes`` inside this Python
environment, unless the seats' uids could not reach it there (an environment inside a
private directory such as ``/root`` or a ``mktemp -d`` folder, with a uid per seat):
then ``/var/lib/arena/runtimes/STAMP``, named by what the runtimes are built from, so
that environments built from the same sources share one copy and never overwrite
another's. Where one of the two already holds runtimes built from these sources, that one
is used: the environment may be seen through other folders than at its install (bound
into a host of its own). ``arena runtimes install`` builds them (``scripts/setup.sh`` does it).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena import exitcodes

RUNTIMES_ENV = "ARENA_RUNTIMES"
#: Inside the sandbox: the runtime, the bot, and the seat's socket.
RUNTIME_DIR = "/runtime"
BOT_DIR = "/bot"
SEAT_SOCKET = "/run/seat/seat.sock"
#: What the SDK is given as its token: the seat's socket is its credential, and no token of
#: the arena ever enters a sandbox.
PLACEHOLDER_TOKEN = "hosted-seat"
RUNTIME_NAMES = ("python", "node", "binary")
#: Where the runtimes go when the Python environment is out of the seats' reach.
SYSTEM_RUNTIMES = Path("/var/lib/arena/runtimes")
#: Runtimes there that no install has asked for in this long are removed by the next one.
UNUSED_DAYS = 30
HOST_PYTHON = "/usr/bin/python3"
HOST_NODE = "/usr/bin/node"

REPO = Path(__file__).resolve().parents[2]


class RuntimeMissing(RuntimeError):
    """A runtime a bot needs is not installed on this host (the platform's fault)."""


def runtimes_root() -> Path:
    named = os.environ.get(RUNTIMES_ENV)
    if named:
        return Path(named)
    inside = Path(sys.prefix) / "arena-runtimes"
    # Seats run as uids of their own only when the arena runs as root (arena.sandbox.host).
    if os.geteuid() != 0:
        return inside
    shared = SYSTEM_RUNTIMES / _stamp()[:16]
    # Where they are installed wins over where they would go: the same environment can be
    # seen through other folders (bound into a host of its own, say) than at its install.
    for root in (inside, shared):
        if (root / "stamp").is_file():
            return root
    return inside if _others_reach(Path(sys.prefix)) else shared


def _others_reach(path: Path) -> bool:
    """Whether a uid of no group of ours may pass through every folder down to ``path``
    (bubblewrap, run as the seat's uid, opens what it binds by its path)."""
    for part in [*reversed(path.resolve().parents), path.resolve()]:
        try:
            if not os.stat(part).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def _prune(root: Path) -> None:
    """Remove the shared runtimes that no install has asked for in ``UNUSED_DAYS`` days
    (each install, even one that finds nothing stale, marks its own as asked for)."""
    if root.parent != SYSTEM_RUNTIMES:
        return
    os.utime(root)
    cutoff = time.time() - UNUSED_DAYS * 86400
    for other in SYSTEM_RUNTIMES.iterdir():
        if other != root and other.is_dir() and other.stat().st_mtime < cutoff:
            shutil.rmtree(other, ignore_errors=True)


@dataclass(frozen=True)
class Launch:
    """How to start one bot in a sandbox: its command, environment and what it sees."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    #: Host directory shown at RUNTIME_DIR (None: no runtime of ours).
    runtime: Path | None = None
    cwd: str = BOT_DIR


def _python_launch(root: Path, entry: str) -> Launch:
    home = root / "python"
    if not (home / "thousand_bot").is_dir():
        raise RuntimeMissing(f"the python runtime is not installed in {home}: "
                             "run `arena runtimes install`")
    return Launch(
        argv=[HOST_PYTHON, "-m", "thousand_bot", "run", entry, "--gateway",
              f"unix:{SEAT_SOCKET}", "--log-level", "WARNING"],
        env={
            "PYTHONPATH": RUNTIME_DIR,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "PYTHONUNBUFFERED": "1",
            "THOUSAND_BOT_TOKEN": PLACEHOLDER_TOKEN,
        },
        runtime=home,
    )


def _node_launch(root: Path, entry: str) -> Launch:
    home = root / "node"
    if not (home / "node_modules" / "@grpc" / "grpc-js").is_dir():
        raise RuntimeMissing(f"the node runtime is not installed in {home}: "
                             "run `arena runtimes install`")
    return Launch(
        argv=[HOST_NODE, f"{BOT_DIR}/{entry}", "--gateway", f"unix:{SEAT_SOCKET}"],
        env={
            "NODE_PATH": f"{RUNTIME_DIR}/node_modules",
            "THOUSAND_PROTO_DIR": f"{RUNTIME_DIR}/proto",
            "THOUSAND_BOT_TOKEN": PLACEHOLDER_TOKEN,
        },
        runtime=home,
    )


def launch(runtime: str, entry: str, root: Path | None = None) -> Launch:
    """The command that starts a hosted bot of ``runtime`` whose manifest names ``entry``."""
    root = root or runtimes_root()
    if runtime == "python":
        return _python_launch(root, entry)
    if runtime == "node":
        return _node_launch(root, entry)
    if runtime == "binary":
        return Launch(argv=[f"{BOT_DIR}/{entry}"])
    raise RuntimeMissing(f"unknown runtime {runtime!r}: use {', '.join(RUNTIME_NAMES)}")


# ----------------------------------------------------------------------------- install


def _sdk_source() -> str:
    """The SDK to install: this checkout's, else the released package of our version."""
    local = REPO / "sdk" / "python"
    if (local / "pyproject.toml").exists():
        return str(local)
    from importlib.metadata import version

    return f"thousand-bot=={version('thousand-bot')}"


def install_python(root: Path) -> Path:
    """Install the SDK, its dependencies and numpy for the host's python3, compiled."""
    if not Path(HOST_PYTHON).exists():
        raise RuntimeMissing(f"{HOST_PYTHON} is missing (Debian package python3)")
    target = root / "python"
    tmp = Path(tempfile.mkdtemp(prefix="python.", dir=root))
    try:
        version = subprocess.run(
            [HOST_PYTHON, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
        if version != mine:
            raise RuntimeMissing(
                f"{HOST_PYTHON} is Python {version} and this arena runs on {mine}: the "
                "python runtime is built with this Python's pip for the host's python3"
            )
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-warn-script-location",
             "--disable-pip-version-check", "--target", str(tmp), _sdk_source(), "numpy"],
            check=True,
        )
        subprocess.run([HOST_PYTHON, "-m", "compileall", "-q", "-j", "0", str(tmp)],
                       check=True, stdout=subprocess.DEVNULL)
        (tmp / "runtime.json").write_text(json.dumps({"python": HOST_PYTHON,
                                                       "version": version}))
        _publish(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def install_node(root: Path) -> Path:
    """Copy the starter bot's node_modules and the protocol's .proto files."""
    modules = REPO / "sdk" / "javascript" / "node_modules"
    if not (modules / "@grpc" / "grpc-js").is_dir():
        raise RuntimeMissing(
            f"{modules} has no @grpc/grpc-js: run `npm ci` in sdk/javascript first "
            "(scripts/setup.sh does)"
        )
    if not Path(HOST_NODE).exists():
        raise RuntimeMissing(f"{HOST_NODE} is missing (Debian package nodejs)")
    target = root / "node"
    tmp = Path(tempfile.mkdtemp(prefix="node.", dir=root))
    try:
        shutil.copytree(modules, tmp / "node_modules", symlinks=True)
        shutil.copytree(REPO / "proto", tmp / "proto")
        _publish(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _publish(tmp: Path, target: Path) -> None:
    """Make the new tree readable by every seat's uid and swap it in at once."""
    for dirpath, _dirnames, filenames in os.walk(tmp):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                mode = os.stat(path).st_mode
                os.chmod(path, 0o755 if mode & 0o111 else 0o644)
    old = target.with_name(target.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    tmp.rename(target)
    shutil.rmtree(old, ignore_errors=True)


@functools.cache
def _stamp() -> str:
    """A digest of what the runtimes are built from (the SDK, the Node packages, the
    protocol), so ``install --if-stale`` skips an install that would change nothing."""
    import hashlib

    digest = hashlib.sha256()
    # The sources only: installing the SDK leaves build/ and *.egg-info beside them.
    parts = [REPO / "sdk" / "python" / "thousand_bot", REPO / "proto"]
    files = sorted(p for base in parts if base.is_dir() for p in base.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts)
    lock = REPO / "sdk" / "javascript" / "package-lock.json"
    for path in [*files, REPO / "sdk" / "python" / "pyproject.toml", lock]:
        if path.is_file():
            digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def runtime_report(root: Path | None = None) -> dict[str, str]:
    root = root or runtimes_root()
    out: dict[str, str] = {}
    for name in RUNTIME_NAMES:
        try:
            spec = launch(name, "bot")
        except RuntimeMissing as exc:
            out[name] = f"MISSING: {exc}"
            continue
        if spec.runtime is None:
            out[name] = "any Linux executable (no runtime needed)"
        else:
            out[name] = f"installed in {spec.runtime}"
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena runtimes",
        description="Install or list the runtimes of hosted bots (python: the SDK and numpy; "
        "node: the starter bot's packages).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    inst = sub.add_parser("install", help="install (or refresh) the runtimes")
    inst.add_argument("names", nargs="*", metavar="NAME", help="python, node (default: both)")
    inst.add_argument("--if-stale", action="store_true",
                      help="do nothing when the runtimes were built from the same sources")
    sub.add_parser("list", help="where each runtime is, or what is missing")
    return parser


def runtimes_main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = runtimes_root()
    if args.command == "list":
        for name, state in runtime_report(root).items():
            print(f"{name:<8} {state}")
        return exitcodes.OK
    unknown = [n for n in args.names if n not in ("python", "node")]
    if unknown:
        print(f"arena runtimes: unknown runtime {unknown[0]!r}: use python or node "
              "(binary needs no runtime)", file=sys.stderr)
        return exitcodes.USAGE
    stamp_file = root / "stamp"
    stamp = _stamp()
    if args.if_stale and not args.names and stamp_file.is_file() \
            and stamp_file.read_text() == stamp:
        _prune(root)
        return exitcodes.OK
    try:
        root.mkdir(parents=True, exist_ok=True)
        for folder in (root, *(p for p in root.parents if p.is_relative_to(SYSTEM_RUNTIMES))):
            os.chmod(folder, 0o755)
        _prune(root)
        for name in args.names or ["python", "node"]:
            path = install_python(root) if name == "python" else install_node(root)
            print(f"{name:<8} installed in {path}")
        if not args.names:
            stamp_file.write_text(stamp)
    except (RuntimeMissing, OSError, subprocess.CalledProcessError) as exc:
        print(f"arena runtimes: {exc}", file=sys.stderr)
        return exitcodes.FAILED
    return exitcodes.OK


if __name__ == "__main__":
    sys.exit(runtimes_main())
