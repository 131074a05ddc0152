"""``thousand-bot``: run a bot against a Thousand Arena gateway.

The bot is a Python class (``module:Class``) or a program in any language speaking the
text protocol on its standard input and output (``--stdio -- COMMAND ARGS`` or
``cmd:COMMAND``, see :mod:`thousand_bot.stdio`).

Exit status, as for every ``arena`` command (docs/cli.md of the arena): 0 stopped (or the
bot program exited with 0), 1 the bot program failed (did not start, broke the protocol,
exited with another code), 2 a usage mistake (a bad option, a bot reference that does not
load), 3 the gateway cannot be reached (retrying later may help), 4 the gateway refused the
bot's token (retrying will not help), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shlex
import sys
from collections.abc import Sequence
from typing import IO

from thousand_bot import __version__
from thousand_bot.address import gateway_problem
from thousand_bot.client import BotRejected, TlsSettings
from thousand_bot.runner import load_bot, run_bot, run_together, until_signalled

TOKEN_ENV = "THOUSAND_BOT_TOKEN"
GATEWAY_ENV = "THOUSAND_BOT_GATEWAY"
#: The variable's earlier name, still read.
SERVER_ENV = "THOUSAND_BOT_SERVER"
TLS_ENV = "THOUSAND_BOT_TLS"
TLS_CA_ENV = "THOUSAND_BOT_TLS_CA"
TLS_CERT_ENV = "THOUSAND_BOT_TLS_CERT"
TLS_KEY_ENV = "THOUSAND_BOT_TLS_KEY"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_REFUSED = 4


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="thousand-bot", description=__doc__)
    parser.add_argument("--version", action="version", version=f"thousand-bot {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run",
        help="connect a bot to a server and play until stopped",
        usage="thousand-bot run [options] BOT | thousand-bot run --stdio [options] -- COMMAND "
        "[ARG ...]",
    )
    run.add_argument("bot", nargs="?",
                     help="the bot: a class, module:Class (mybot:MyBot finds ./mybot.py) or "
                     "path/to/file.py:Class; or a program speaking the text protocol, "
                     "cmd:COMMAND (split as a shell would, e.g. 'cmd:./mybot --fast')")
    run.add_argument("--stdio", action="store_true",
                     help="the bot is the program after --, speaking the text protocol on its "
                     "standard input and output (docs/stdio.md)")
    run.add_argument("--transcript", metavar="FILE",
                     help="with a program: write every protocol line to FILE ('<' the "
                     "program reads, '>' it writes)")
    default_gateway = (os.environ.get(GATEWAY_ENV) or os.environ.get(SERVER_ENV)
                       or "localhost:50051")
    run.add_argument(
        "--gateway",
        default=default_gateway,
        metavar="HOST:PORT",
        help=f"the gateway, or several separated by commas to move on to the next when one "
        f"goes away (env {GATEWAY_ENV}; default localhost:50051)",
    )
    # The option's earlier name, kept working.
    run.add_argument("--server", dest="gateway", help=argparse.SUPPRESS)
    run.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV),
        help=f"the bot's token (env {TOKEN_ENV}, which keeps it out of the process list)",
    )
    run.add_argument("--instances", type=int, default=1, help="connections to open (default 1)")
    run.add_argument(
        "--max-attempts",
        type=int,
        default=None,
        help="give up after this many failed connection attempts in a row (default: never)",
    )
    run.add_argument("--tls", action="store_true",
                     default=os.environ.get(TLS_ENV, "") not in ("", "0"),
                     help=f"connect with TLS, trusting the system's CAs (env {TLS_ENV}=1)")
    run.add_argument("--tls-ca", metavar="FILE", default=os.environ.get(TLS_CA_ENV) or None,
                     help=f"connect with TLS, trusting this CA (PEM; env {TLS_CA_ENV})")
    run.add_argument("--tls-cert", metavar="FILE", default=os.environ.get(TLS_CERT_ENV) or None,
                     help=f"the bot's own certificate, for a gateway that asks for one "
                          f"(env {TLS_CERT_ENV})")
    run.add_argument("--tls-key", metavar="FILE", default=os.environ.get(TLS_KEY_ENV) or None,
                     help=f"the key of that certificate (env {TLS_KEY_ENV})")
    run.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING...")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("thousand-bot: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of the output went away (``thousand-bot --help | head``): stop quietly,
        # also at the exit flush.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_OK


def _split_command(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """The options, and the program's command line after ``--`` (None without one)."""
    items = list(argv)
    if "--" in items:
        at = items.index("--")
        return items[:at], items[at + 1 :]
    return items, None


def _main(argv: Sequence[str] | None) -> int:
    options, command = _split_command(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(options)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if not args.token:
        print(f"thousand-bot: give the bot's token with --token or {TOKEN_ENV}", file=sys.stderr)
        return EXIT_USAGE
    if args.instances < 1:
        print("thousand-bot: --instances must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    if args.max_attempts is not None and args.max_attempts < 1:
        print("thousand-bot: --max-attempts must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    tls: TlsSettings | None = None
    if args.tls or args.tls_ca or args.tls_cert or args.tls_key:
        try:
            tls = TlsSettings.from_files(args.tls_ca, args.tls_cert, args.tls_key)
        except ValueError as exc:
            print(f"thousand-bot: {exc}", file=sys.stderr)
            return EXIT_USAGE
    problem = gateway_problem(args.gateway)
    if problem:
        print(f"thousand-bot: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if args.bot and args.bot.startswith("cmd:") and command is None:
        try:
            command = shlex.split(args.bot[len("cmd:") :])
        except ValueError as exc:
            print(f"thousand-bot: bot reference {args.bot!r}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        args.bot = None
    if args.stdio or command is not None:
        if args.bot:
            print(f"thousand-bot: give either a bot class ({args.bot}) or a program "
                  "(--stdio -- COMMAND), not both", file=sys.stderr)
            return EXIT_USAGE
        if not command:
            print("thousand-bot: --stdio needs the program's command after --, e.g. "
                  "thousand-bot run --stdio -- ./mybot", file=sys.stderr)
            return EXIT_USAGE
        return _run_program(args, command, tls)
    if not args.bot:
        print("thousand-bot: name the bot: module:Class, file.py:Class, cmd:COMMAND or "
              "--stdio -- COMMAND", file=sys.stderr)
        return EXIT_USAGE
    if args.transcript:
        print("thousand-bot: --transcript is for a program (--stdio)", file=sys.stderr)
        return EXIT_USAGE
    try:
        factory = load_bot(args.bot)
    except (ValueError, ImportError) as exc:
        print(f"thousand-bot: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        run_bot(factory, args.gateway, args.token, args.instances, args.max_attempts, tls)
    except (BotRejected, ConnectionError) as exc:
        return _gateway_failed(exc)
    return EXIT_OK


def _gateway_failed(exc: BotRejected | ConnectionError) -> int:
    """Say on stderr why the bot stopped playing on the gateway, and give the exit status:
    refused credentials (retrying will not help), or a gateway that cannot be reached."""
    if isinstance(exc, BotRejected):
        print(f"thousand-bot: the gateway refused the bot: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"thousand-bot: {exc}", file=sys.stderr)
    return EXIT_UNREACHABLE


def _run_program(args: argparse.Namespace, command: list[str],
                 tls: TlsSettings | None = None) -> int:
    """A program speaking the text protocol, relayed to the gateway by the bridge."""
    from thousand_bot.stdio.bridge import ProgramFailed, run_program

    if args.transcript and args.instances != 1:
        print("thousand-bot: --transcript records one program: use it with --instances 1",
              file=sys.stderr)
        return EXIT_USAGE
    out: IO[str] | None = None
    if args.transcript:
        try:
            out = open(args.transcript, "w", encoding="utf-8", buffering=1)  # noqa: SIM115
        except OSError as exc:
            print(f"thousand-bot: --transcript {args.transcript}: {exc.strerror or exc}",
                  file=sys.stderr)
            return EXIT_USAGE
    stream = out

    def transcript(direction: str, line: str) -> None:
        assert stream is not None
        stream.write(f"{direction} {line}\n")

    async def programs(stop: asyncio.Event) -> None:
        """``--instances`` copies of the program, each on its own stream."""
        await run_together(
            [run_program(command, args.gateway, args.token, stop=stop,
                         max_attempts=args.max_attempts,
                         transcript=transcript if out is not None else None, tls=tls)
             for _ in range(args.instances)],
            stop,
        )

    try:
        asyncio.run(until_signalled(programs))
    except ProgramFailed as exc:
        if exc.exit_code:
            print(f"thousand-bot: {exc}", file=sys.stderr)
        return exc.exit_code
    except (BotRejected, ConnectionError) as exc:
        return _gateway_failed(exc)
    finally:
        if out is not None:
            out.close()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
