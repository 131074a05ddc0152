"""Start a program "on" one host of a rig: in its network namespace, with its own files only.

``python -m arena.rigs.enter VIEW.json -- PROGRAM ARGS...`` moves into the host's network
namespace, gives itself a mount and a hostname namespace of its own, and replaces the
file system it sees with the host's view before it executes the program:

* the system stays (``/usr``, ``/etc``, ``/bin``, ``/lib``, ``/proc``, ``/dev``...);
* every place where people and programs keep their files (``/work``, ``/tmp``,
  ``/root``, ``/home``, ``/run``, ``/srv``, ``/opt``, ``/var/tmp``, ``/dev/shm``, and
  PostgreSQL's and Redis's data directories) is the host's own, empty at first;
* into those go back, read-only, the Python installation and the arena's installed code
  (what a machine gets from ``pip install``), and, writable, the host's own directory;
* single files may be laid over system ones (the rig's ``/etc/hosts``, naming the hosts).

So a program on one host cannot read a file of another host, of the test that started
it, or of the checkout beyond the installed packages: where the arena assumed a shared
disk, it finds nothing and fails, which is what the rig is for. The view file::

    {"netns": "arena-rig-123-w1", "hostname": "w1", "home": "/tmp/.../hosts/w1",
     "private": true, "hide": ["/work", "/tmp"], "read_only": ["/work/x/.venv"],
     "files": {"/etc/hosts": "/tmp/.../etc/hosts"}}

Without ``private`` only the network namespace changes (the rig's own relays).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from arena.rigs import linux

#: Where people and programs keep files: empty on a host unless given back to it.
HIDE = (
    "/work", "/tmp", "/var/tmp", "/root", "/home", "/run", "/srv", "/opt",
    "/dev/shm", "/var/lib/postgresql", "/var/lib/redis", "/var/log",
)  # fmt: skip
#: Scratch places that everybody may write (sticky), as on a fresh machine.
STICKY = ("/tmp", "/var/tmp", "/dev/shm")
#: Where what the host keeps waits while the rest is hidden: an empty system directory,
#: covered for the moment and given back untouched.
_STAGE_ROOTS = ("/media", "/mnt")


def _ensure_mountpoint(path: Path, is_dir: bool) -> None:
    if path.exists():
        return
    if is_dir:
        path.mkdir(parents=True, exist_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()


def build_view(view: dict[str, Any]) -> None:
    """Give this process the host's view of the file system (it must be the only thread).

    Every hidden place becomes the host's own (``backing``: a directory of the rig per
    host and place, so that the host's programs share ``/tmp``, ``/run`` or ``/srv`` as
    programs on one machine do), or an empty file system when it has none. What the host
    keeps is first bound into a staging place (a mount can only be bound from the
    namespace it belongs to, so this happens after ``unshare``, before anything is
    hidden), then from there to where it belongs.
    """
    backing: dict[str, str] = dict(view.get("backing", {}))
    stage_root = next((d for d in _STAGE_ROOTS if os.path.isdir(d)), None)
    if stage_root is None:
        raise linux.RigError(f"none of {', '.join(_STAGE_ROOTS)} exists to stage mounts in")
    hide = [h for h in view.get("hide", HIDE)
            if h != stage_root and os.path.isdir(h) and not os.path.islink(h)]
    home = str(view["home"])
    keep: list[tuple[str, str, bool]] = []  # (where, source, read only)
    for target in hide:
        if target in backing:
            keep.append((target, backing[target], False))
    for path in view.get("read_only", []):
        keep.append((path, path, True))
    keep.append((home, home, False))
    for where, source in view.get("files", {}).items():
        keep.append((where, source, True))
    linux.unshare(linux.CLONE_NEWNS | linux.CLONE_NEWUTS)
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    hostname = view.get("hostname")
    if hostname:
        linux.sethostname(str(hostname))
    linux.mount("tmpfs", stage_root, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=0700")
    staged: list[tuple[str, str, bool]] = []
    for n, (where, source, ro) in enumerate(keep):
        stage = f"{stage_root}/{n}"
        _ensure_mountpoint(Path(stage), os.path.isdir(source))
        linux.mount(source, stage, None, linux.MS_BIND | linux.MS_REC)
        staged.append((where, stage, ro))
    for target in sorted(hide, key=len):
        if target not in backing:
            _hide(target)
    # Shorter paths first: a hidden place before what goes back into it.
    for where, stage, ro in sorted(staged, key=lambda item: len(item[0])):
        _ensure_mountpoint(Path(where), os.path.isdir(stage))
        linux.mount(stage, where, None, linux.MS_BIND | linux.MS_REC)
        if ro:
            linux.mount(None, where, None, linux.MS_REMOUNT | linux.MS_BIND | linux.MS_RDONLY)
    for _where, stage, _ro in staged:
        linux.umount(stage)
    linux.umount(stage_root)


def _hide(target: str) -> None:
    mode = "1777" if target in STICKY else "0755"
    linux.mount("tmpfs", target, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV,
                f"mode={mode},size=1g")


def enter(view: dict[str, Any]) -> None:
    fd = os.open(linux.netns_path(str(view["netns"])), os.O_RDONLY)
    try:
        linux.setns(fd, linux.CLONE_NEWNET)
    finally:
        os.close(fd)
    if view.get("private"):
        build_view(view)
        home = str(view["home"])
        os.chdir(home)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m arena.rigs.enter VIEW.json -- PROGRAM [ARGS...]",
              file=sys.stderr)
        return 2
    view = json.loads(Path(args[0]).read_text())
    enter(view)
    program = args[2:]
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        print(f"{view.get('hostname', '?')}: cannot run {program[0]}: {exc.strerror}",
              file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
