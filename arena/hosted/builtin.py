"""The arena's own bots as hosted bot folders: the built-in bots and the Node.js starter.

A hosted Python bot brings its own code; the built-in bots need the rules engine, so their
folder carries the engine, the bots and the match vocabulary as plain source (no compiled
modules: those are built for the arena's host, not the sandbox's), with
``builtin_remote.py`` (the SDK classes in :mod:`arena.server.builtin_remote`) as the entry.
``arena demo`` submits these folders; they are also an example of a bot with several
modules and packages of its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARENA = REPO / "arena"
#: Hosted built-in bots: the name they are submitted under -> the class in
#: builtin_remote.py.
BUILTIN_CLASSES = {
    "greedy": "Greedy",
    "cautious": "Cautious",
    "random": "Random",
    "search": "Search",
}
NODE_STARTER = "node-starter"
_PACKAGES = ("engine", "bots", "match")
_INIT = '"""The rules engine, the built-in bots and the match vocabulary of Thousand Arena,\n' \
        'as plain source inside a hosted bot."""\n'


def builtin_folder(kind: str, dest: Path) -> Path:
    """Write the hosted bot folder of a built-in bot (``greedy``, ``search``...)."""
    cls = BUILTIN_CLASSES[kind]
    folder = dest / kind
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "arena").mkdir(parents=True)
    (folder / "arena" / "__init__.py").write_text(_INIT)
    for package in _PACKAGES:
        shutil.copytree(ARENA / package, folder / "arena" / package,
                        ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.pyc"))
    shutil.copy(ARENA / "server" / "builtin_remote.py", folder / "builtin_remote.py")
    (folder / "bot.toml").write_text(
        f'runtime = "python"\nentry = "builtin_remote.py:{cls}"\n'
    )
    return folder


def node_starter_folder(dest: Path) -> Path:
    """Write the hosted bot folder of the Node.js starter bot (``sdk/javascript``)."""
    folder = dest / NODE_STARTER
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name in ("bot.js", "package.json", "README.md"):
        shutil.copy(REPO / "sdk" / "javascript" / name, folder / name)
    (folder / "bot.toml").write_text('runtime = "node"\nentry = "bot.js"\n')
    return folder
