"""``arena bots``: list the built-in bots, compare two bots over seeded games played by the
referee (which is why the command lives here, above the bots)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from arena.bots import BUILTIN_BOTS
from arena.bots.search import LEVELS
from arena.referee.compare import compare_main

_ABOUT = {
    "random": "a uniformly random legal action, seeded: the baseline",
    "greedy": "bids from hand strength, keeps its best cards, wins tricks cheaply",
    **{name: about for name, (_budget, about) in LEVELS.items()},
}

_USAGE = """usage: arena bots {list,compare} ...

  list                       the built-in bots
  compare BOT OPPONENT ...   BOT in one seat against OPPONENT in the others (see --help)
"""


def bots_main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_USAGE, end="")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "list":
        for name in sorted(BUILTIN_BOTS):
            print(f"{name:<14} {_ABOUT.get(name, '')}")
        return 0
    if command == "compare":
        return compare_main(rest)
    print(f"arena bots: unknown command {command!r}\n{_USAGE}", end="", file=sys.stderr)
    return 2
