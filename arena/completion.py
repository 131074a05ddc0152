"""Shell completion for ``arena``: every command, subcommand and option, from the parsers.

The scripts come from `shtab <https://github.com/iterative/shtab>`_, which turns argparse
parsers into static bash, zsh and tcsh completion scripts. A static script was chosen over
argcomplete's dynamic completion: argcomplete runs the program at every TAB press, and
``arena`` would then import each subcommand's implementation (gRPC, numpy, Celery...)
each time, where a generated script answers at once and needs nothing installed in the
shell's Python.

Most subcommands build their parser inside their ``main(argv)`` (so ``arena`` starts
fast and a missing optional part only affects its own command). To complete them too,
each ``main`` is run once with ``argparse.ArgumentParser.parse_args`` replaced by a
function that hands back the parser before anything else happens.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


@contextmanager
def _capturing_parsers() -> Iterator[None]:
    original = argparse.ArgumentParser.parse_args

    def capture(self: argparse.ArgumentParser, *_: Any, **__: Any) -> NoReturn:
        raise _Captured(self)

    argparse.ArgumentParser.parse_args = capture  # type: ignore[method-assign]
    try:
        yield
    finally:
        argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]


def command_parser(module: str, func: str, argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser that ``module.func(argv)`` reads its arguments with."""
    main: Callable[[list[str]], int] = getattr(importlib.import_module(module), func)
    with _capturing_parsers():
        try:
            main(list(argv))
        except _Captured as found:
            return found.parser
    raise LookupError(f"{module}.{func} parses no arguments")


def _bots_parser() -> argparse.ArgumentParser:
    """``arena bots`` reads its first word by hand: ``list`` or ``compare ...``."""
    p = argparse.ArgumentParser(prog="arena bots")
    sub = p.add_subparsers(dest="bots_command", metavar="COMMAND")
    sub.add_parser("list", help="the built-in bots")
    sub._name_parser_map["compare"] = command_parser("arena.referee.compare", "compare_main")
    return p


#: The subcommands whose parser lives with their implementation: (name, module, function,
#: help), as ``arena``'s own parser lists them.
Commands = Sequence[tuple[str, str, str, str]]


def full_parser(
    root: argparse.ArgumentParser, external: Commands, external_bench: Commands
) -> argparse.ArgumentParser:
    """``arena``'s parser (``root``, given by :mod:`arena.cli`, which runs this module) with
    every subcommand's own parser in place of its pass-through."""
    subs = _subparsers(root)
    for name, module, func, _ in external:
        subs[name] = _bots_parser() if name == "bots" else command_parser(module, func)
    bench = _subparsers(subs["bench"])
    for name, module, func, _ in external_bench:
        bench[name] = command_parser(module, func)
    _subparsers(subs["replay"])["export"] = command_parser("arena.web.cli", "export_main")
    return root


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            choices: dict[str, argparse.ArgumentParser] = action.choices
            return choices
    raise LookupError(f"{parser.prog} has no subcommands")


def completion_script(
    shell: str, root: argparse.ArgumentParser, external: Commands, external_bench: Commands
) -> str:
    import shtab

    script: str = shtab.complete(full_parser(root, external, external_bench), shell=shell)
    return script
