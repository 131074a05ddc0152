"""The worker's local copy of each hosted version, fetched from the store by its hash.

A version is immutable and named by the SHA-256 of its contents, so a worker fetches it
once, checks the bytes against the name, unpacks it into ``CACHE/HASH`` (readable by the
seats' uids, never writable by them) and uses that copy for every later match. Two
processes fetching the same version at once each unpack into a temporary directory and
rename it into place; the first rename wins, the other copy is dropped. Python files are
compiled on the way in, so a bot starts without compiling its source in its read-only
sandbox every match.
"""

from __future__ import annotations

import compileall
import functools
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from arena.sandbox.host import host_dir

from . import bundle as bd
from .store import HostedStore

CACHE_ENV = "ARENA_BOT_CACHE"


def cache_root() -> Path:
    return host_dir(
        CACHE_ENV, "/var/cache/arena/bots",
        lambda: Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "arena" / "bots",
    )


class BotCache:
    """Versions unpacked on this host, by hash."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_root()
        self._lock = threading.Lock()

    def _ensure_root(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)

    def path(self, digest: str, store: HostedStore) -> Path:
        """The version's files on this host, fetched and checked if not here yet."""
        target = self.root / digest
        if (target / bd.MANIFEST).is_file():
            return target
        with self._lock:
            if (target / bd.MANIFEST).is_file():
                return target
            self._ensure_root()
            data = store.blob(digest)
            bundle = bd.load(data, digest)  # raises BundleError when the bytes are not it
            tmp = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}.", dir=self.root))
            try:
                os.rmdir(tmp)
                bd.unpack(bundle, tmp)
                if bundle.manifest.runtime == "python":
                    _compile(tmp)
                try:
                    tmp.rename(target)
                except OSError:
                    if not (target / bd.MANIFEST).is_file():
                        raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return target


@functools.cache
def _same_python() -> bool:
    """Whether the host's python3 (the runtime's interpreter) reads this Python's bytecode."""
    import subprocess

    try:
        out = subprocess.run(
            ["/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return False
    return out == str(sys.version_info[:2])


def _compile(tree: Path) -> None:
    """Compile the bot's Python files (compiling runs none of the bot's code)."""
    if not _same_python():
        return
    compileall.compile_dir(str(tree), quiet=2, workers=1)
    for dirpath, _dirs, files in os.walk(tree):
        os.chmod(dirpath, 0o755)
        for name in files:
            path = os.path.join(dirpath, name)
            os.chmod(path, os.stat(path).st_mode | 0o444)
