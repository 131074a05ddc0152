"""A bot's files as one version: the same files give the same hash however they are
packed, and every mistake in a folder is one clear line."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from arena.hosted import bundle as bd


def _bot(root: Path) -> Path:
    folder = root / "mybot"
    (folder / "lib").mkdir(parents=True)
    (folder / "bot.toml").write_text('runtime = "python"\nentry = "mybot.py:MyBot"\n')
    (folder / "mybot.py").write_text("class MyBot: ...\n")
    (folder / "lib" / "helper.py").write_text("X = 1\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "mybot.cpython-311.pyc").write_bytes(b"junk")
    return folder


def test_the_same_files_are_the_same_version_however_packed(tmp_path: Path) -> None:
    folder = _bot(tmp_path)
    direct = bd.pack(folder)
    assert direct.files == 3 and direct.manifest == bd.Manifest("python", "mybot.py:MyBot")
    tgz = tmp_path / "bot.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(folder, arcname="mybot")
    zipped = tmp_path / "bot.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                z.write(path, path.relative_to(folder).as_posix())
    os.utime(folder / "mybot.py", (1, 1))  # times are no part of a version
    assert {bd.pack(tgz).sha256, bd.pack(zipped).sha256, bd.pack(folder).sha256} == {
        direct.sha256}
    assert bd.load(direct.data, direct.sha256).manifest == direct.manifest
    with pytest.raises(bd.BundleError, match="hash to"):
        bd.load(direct.data + b"\0", direct.sha256)
    out = tmp_path / "out"
    bd.unpack(direct, out)
    assert (out / "lib" / "helper.py").read_text() == "X = 1\n"
    assert oct(os.stat(out).st_mode & 0o777) == "0o755"


@pytest.mark.parametrize(("change", "message"), [
    (lambda f: (f / "bot.toml").unlink(), "no bot.toml"),
    (lambda f: (f / "bot.toml").write_text('runtime = "java"\nentry = "x"\n'),
     "unknown runtime 'java': use python, node, binary"),
    (lambda f: (f / "bot.toml").write_text('runtime = "python"\n'), "entry is required"),
    (lambda f: (f / "bot.toml").write_text('runtime = "python"\nentry = "nope.py:X"\n'),
     "there is no nope.py"),
    (lambda f: (f / "bot.toml").write_text('runtime = "node"\nentry = "bot.js"\n'),
     "no such file"),
    (lambda f: (f / "bot.toml").write_text('runtime = "python"\nentry = "mybot.py:X"\n'
                                           'colour = "red"\n'), "unknown field 'colour'"),
    (lambda f: (f / "big.bin").write_bytes(b"0" * (bd.MAX_FILE_BYTES + 1)),
     "a file may have at most"),
    (lambda f: [(f / f"f{i}.txt").write_text("x") for i in range(bd.MAX_FILES)],
     f"more than {bd.MAX_FILES} files"),
    (lambda f: (f / "link.py").symlink_to("/etc/passwd"), "a link"),
])
def test_mistakes_are_one_clear_line(tmp_path: Path, change, message: str) -> None:  # type: ignore[no-untyped-def]
    folder = _bot(tmp_path)
    change(folder)
    with pytest.raises(bd.BundleError, match=message):
        bd.pack(folder)


def test_archives_cannot_escape_or_lie(tmp_path: Path) -> None:
    for name in ("../x.py", "/abs.py"):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
        with pytest.raises(bd.BundleError, match="folder"):
            bd.pack_bytes(raw.getvalue())
    with pytest.raises(bd.BundleError, match="not a readable"):
        bd.pack_bytes(b"garbage" * 100)
    assert shutil.which("tar")
