"""``thousand-bot``: run a bot against a Thousand Arena gateway.

Exit status, as for every ``arena`` command (docs/cli.md of the arena): 0 stopped, 2 a
usage mistake (a bad option, a bot reference that does not load), 3 the gateway cannot be
reached (retrying later may help), 4 the gateway refused the bot's token (retrying will
not help), 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from thousand_bot import __version__
from thousand_bot.address import gateway_problem
from thousand_bot.client import BotRejected
from thousand_bot.runner import load_bot, run_bot

TOKEN_ENV = "THOUSAND_BOT_TOKEN"
GATEWAY_ENV = "THOUSAND_BOT_GATEWAY"
#: The variable's earlier name, still read.
SERVER_ENV = "THOUSAND_BOT_SERVER"

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_REFUSED = 4


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="thousand-bot", description=__doc__)
    parser.add_argument("--version", action="version", version=f"thousand-bot {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="connect a bot to a server and play until stopped")
    run.add_argument("bot", help="the bot class: module:Class (mybot:MyBot finds ./mybot.py) "
                     "or path/to/file.py:Class")
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


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
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
    problem = gateway_problem(args.gateway)
    if problem:
        print(f"thousand-bot: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        factory = load_bot(args.bot)
    except (ValueError, ImportError) as exc:
        print(f"thousand-bot: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        run_bot(factory, args.gateway, args.token, args.instances, args.max_attempts)
    except BotRejected as exc:
        print(f"thousand-bot: the gateway refused the bot: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except ConnectionError as exc:
        print(f"thousand-bot: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
