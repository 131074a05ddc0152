"""A hosted bot's files as one immutable version, addressed by the SHA-256 of its contents.

A bot folder (or a ``.tar``, ``.tar.gz``/``.tgz`` or ``.zip`` of one) holds a manifest,
``bot.toml``, naming its runtime and entry::

    runtime = "python"          # python, node or binary
    entry = "mybot.py:MyBot"    # python: a bot reference; node: a script; binary: an executable

Its files are put in one canonical form, a tar with the files sorted by path and nothing
but each file's path, contents and executable bit (no times, owners or links), so the same
files always give the same bytes and the same hash, wherever they were packed. That hash
is the version's name: a worker fetches the version by it from the shared store and checks
the bytes against it.

Everything a folder can get wrong is a :class:`BundleError` with one clear line: no
manifest, an unknown runtime, a missing entry, a file too big, too many files, a link or a
path that leaves the folder.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import tarfile
import tomllib
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MANIFEST = "bot.toml"
RUNTIMES = ("python", "node", "binary")
#: Limits of one version (its files unpacked).
MAX_TOTAL_BYTES = 32 << 20
MAX_FILE_BYTES = 16 << 20
MAX_FILES = 2000
MAX_PATH_CHARS = 200
MAX_DEPTH = 16
#: Left out of every version: caches and version control, and the Node packages the node
#: runtime provides (see docs/hosted.md).
IGNORED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv",
                          ".mypy_cache", ".pytest_cache", ".ruff_cache"})
IGNORED_FILES = frozenset({".DS_Store"})
_PATH_PART = re.compile(r"^[A-Za-z0-9._+@=,-][A-Za-z0-9 ._+@=,-]*$")
_PY_REF = re.compile(r"^([A-Za-z_][A-Za-z0-9_./-]*?)(\.py)?:([A-Za-z_][A-Za-z0-9_]*)$")


class BundleError(ValueError):
    """A bot folder or archive that cannot be a version; the message says what to fix."""


@dataclass(frozen=True)
class Manifest:
    runtime: str
    entry: str


@dataclass(frozen=True)
class Bundle:
    """One version: the canonical tar, its hash, its manifest and its size."""

    data: bytes
    sha256: str
    manifest: Manifest
    files: int
    size: int


def _check_path(name: str) -> str:
    path = PurePosixPath(name)
    if name.startswith("/") or path.is_absolute():
        raise BundleError(f"{name}: an absolute path; files must stay inside the bot's folder")
    parts = [p for p in path.parts if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise BundleError(f"{name}: '..' leaves the bot's folder")
    clean = "/".join(parts)
    if not clean:
        raise BundleError(f"{name!r}: an empty path")
    if len(clean) > MAX_PATH_CHARS:
        raise BundleError(f"{clean[:60]}...: a path longer than {MAX_PATH_CHARS} characters")
    if len(parts) > MAX_DEPTH:
        raise BundleError(f"{clean}: folders nested deeper than {MAX_DEPTH}")
    for part in parts:
        if not _PATH_PART.match(part):
            raise BundleError(
                f"{clean}: use letters, digits, spaces and . _ - + @ = , in file names"
            )
    return clean


def _ignored(clean: str) -> bool:
    parts = clean.split("/")
    return any(p in IGNORED_DIRS for p in parts[:-1]) or parts[-1] in IGNORED_FILES \
        or parts[-1].endswith(".pyc")


class _Files:
    """Collects (path, executable, contents) with the limits checked as they come."""

    def __init__(self) -> None:
        self.items: dict[str, tuple[bool, bytes]] = {}
        self.total = 0

    def add(self, name: str, executable: bool, data: bytes) -> None:
        clean = _check_path(name)
        if _ignored(clean):
            return
        if len(data) > MAX_FILE_BYTES:
            raise BundleError(
                f"{clean}: {len(data):,} bytes; a file may have at most {MAX_FILE_BYTES:,}"
            )
        if clean in self.items:
            raise BundleError(f"{clean}: appears twice")
        self.items[clean] = (executable, data)
        self.total += len(data)
        if len(self.items) > MAX_FILES:
            raise BundleError(f"more than {MAX_FILES} files; a bot may have at most {MAX_FILES}")
        if self.total > MAX_TOTAL_BYTES:
            raise BundleError(
                f"more than {MAX_TOTAL_BYTES:,} bytes of files; a bot may have at most "
                f"{MAX_TOTAL_BYTES >> 20} MiB"
            )

    @staticmethod
    def size_of(size: int, name: str) -> None:
        if size > MAX_FILE_BYTES:
            raise BundleError(f"{name}: {size:,} bytes; a file may have at most "
                              f"{MAX_FILE_BYTES:,}")


def _from_dir(root: Path) -> _Files:
    files = _Files()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        for d in dirnames:
            if (Path(dirpath) / d).is_symlink():
                raise BundleError(f"{(rel_dir / d).as_posix()}: a link; copy the files in")
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = (rel_dir / name).as_posix()
            st_ = path.lstat()
            if stat.S_ISLNK(st_.st_mode):
                if _ignored(_check_path(rel)):
                    continue
                raise BundleError(f"{rel}: a link; copy the file in instead")
            if not stat.S_ISREG(st_.st_mode):
                raise BundleError(f"{rel}: not a regular file")
            _Files.size_of(st_.st_size, rel)
            files.add(rel, bool(st_.st_mode & 0o111), path.read_bytes())
    return files


def _from_tar(data: bytes) -> _Files:
    files = _Files()
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            for member in tar:
                if member.isdir():
                    _check_path(member.name)
                    continue
                if member.issym() or member.islnk():
                    raise BundleError(f"{member.name}: a link; put the file itself in")
                if not member.isfile():
                    raise BundleError(f"{member.name}: not a regular file")
                _Files.size_of(member.size, member.name)
                extracted = tar.extractfile(member)
                assert extracted is not None
                files.add(member.name, bool(member.mode & 0o111), extracted.read())
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise BundleError(f"not a readable tar archive: {exc}") from exc
    return files


def _from_zip(data: bytes) -> _Files:
    files = _Files()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                if info.is_dir():
                    _check_path(info.filename)
                    continue
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise BundleError(f"{info.filename}: a link; put the file itself in")
                _Files.size_of(info.file_size, info.filename)
                files.add(info.filename, bool(mode & 0o111), archive.read(info))
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleError(f"not a readable zip archive: {exc}") from exc
    return files


def _strip_common_folder(files: _Files) -> _Files:
    """An archive of a folder (``mybot/bot.toml``...) counts as the folder's contents."""
    if MANIFEST in files.items:
        return files
    tops = {name.split("/", 1)[0] for name in files.items}
    if len(tops) == 1 and all("/" in name for name in files.items):
        top = next(iter(tops))
        out = _Files()
        for name, (exe, data) in files.items.items():
            out.add(name[len(top) + 1:], exe, data)
        return out
    return files


def parse_manifest(text: bytes, names: Iterable[str]) -> Manifest:
    """Read ``bot.toml`` and check its entry against the files."""
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BundleError(f"{MANIFEST}: not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - {"runtime", "entry"})
    if unknown:
        raise BundleError(f"{MANIFEST}: unknown field '{unknown[0]}' (fields: runtime, entry)")
    runtime = data.get("runtime")
    if not isinstance(runtime, str) or not runtime:
        raise BundleError(f"{MANIFEST}: runtime is required: {', '.join(RUNTIMES)}")
    if runtime not in RUNTIMES:
        raise BundleError(
            f"{MANIFEST}: unknown runtime {runtime!r}: use {', '.join(RUNTIMES)}"
        )
    entry = data.get("entry")
    if not isinstance(entry, str) or not entry.strip():
        raise BundleError(f"{MANIFEST}: entry is required (e.g. {_example(runtime)})")
    entry = entry.strip()
    present = set(names)
    if runtime == "python":
        match = _PY_REF.match(entry)
        if match is None:
            raise BundleError(
                f"{MANIFEST}: entry {entry!r} is not a bot reference: write FILE.py:Class "
                "or module:Class"
            )
        module, suffix, _ = match.groups()
        stem = module if suffix else module.replace(".", "/")
        candidates = [f"{stem}.py", f"{stem}/__init__.py"]
        if not any(c in present for c in candidates):
            raise BundleError(f"{MANIFEST}: entry {entry!r}: there is no {candidates[0]}")
    else:
        clean = _check_path(entry)
        if clean not in present:
            raise BundleError(f"{MANIFEST}: entry {entry!r}: no such file in the bot")
        if runtime == "node" and not clean.endswith((".js", ".mjs", ".cjs")):
            raise BundleError(f"{MANIFEST}: entry {entry!r}: a node bot's entry is a .js file")
        entry = clean
    return Manifest(runtime=runtime, entry=entry)


def _example(runtime: str) -> str:
    return {"python": '"mybot.py:MyBot"', "node": '"bot.js"', "binary": '"mybot"'}[runtime]


def _canonical(files: _Files, manifest: Manifest) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files.items):
            executable, data = files.items[name]
            if manifest.runtime == "binary" and name == manifest.entry:
                executable = True
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755 if executable else 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _finish(files: _Files) -> Bundle:
    files = _strip_common_folder(files)
    if MANIFEST not in files.items:
        raise BundleError(
            f"no {MANIFEST} in the bot's folder: add one naming the runtime and the entry, "
            'e.g.  runtime = "python"  entry = "mybot.py:MyBot"'
        )
    manifest = parse_manifest(files.items[MANIFEST][1], files.items)
    data = _canonical(files, manifest)
    return Bundle(
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        manifest=manifest,
        files=len(files.items),
        size=files.total,
    )


def pack(path: str | Path) -> Bundle:
    """A version from a folder or an archive (``.tar``, ``.tar.gz``, ``.tgz``, ``.zip``)."""
    target = Path(path)
    if target.is_dir():
        return _finish(_from_dir(target))
    if not target.is_file():
        raise BundleError(f"{path}: no such folder or archive")
    if target.stat().st_size > MAX_TOTAL_BYTES * 2:
        raise BundleError(f"{path}: an archive larger than {MAX_TOTAL_BYTES >> 19} MiB")
    return pack_bytes(target.read_bytes(), target.name)


def pack_bytes(data: bytes, filename: str = "") -> Bundle:
    """A version from an archive's bytes (a submission): zip or tar, any compression."""
    if data[:4] == b"PK\x03\x04" or filename.endswith(".zip"):
        return _finish(_from_zip(data))
    return _finish(_from_tar(data))


def load(data: bytes, sha256: str) -> Bundle:
    """A stored version, its bytes checked against the hash it is fetched by."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise BundleError(f"version {sha256[:12]}: the stored bytes hash to {digest[:12]}")
    files = _from_tar(data)
    manifest = parse_manifest(files.items[MANIFEST][1], files.items)
    return Bundle(data=data, sha256=digest, manifest=manifest, files=len(files.items),
                  size=files.total)


def unpack(bundle: Bundle, dest: Path) -> None:
    """Write the version's files under ``dest`` (which must not exist), readable by all."""
    dest.mkdir()
    os.chmod(dest, 0o755)
    files = _from_tar(bundle.data)
    for name, (executable, data) in sorted(files.items.items()):
        path = dest / name
        for parent in reversed(path.relative_to(dest).parents):
            d = dest / parent
            if not d.exists():
                d.mkdir()
                os.chmod(d, 0o755)
        path.write_bytes(data)
        os.chmod(path, 0o755 if executable else 0o644)
