"""``thousand-bot``: run a bot against a Thousand Arena server."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from thousand_bot import __version__
from thousand_bot.client import BotRejected
from thousand_bot.runner import load_bot, run_bot

TOKEN_ENV = "THOUSAND_BOT_TOKEN"
SERVER_ENV = "THOUSAND_BOT_SERVER"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="thousand-bot", description=__doc__)
    parser.add_argument("--version", action="version", version=f"thousand-bot {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="connect a bot to a server and play until stopped")
    run.add_argument("bot", help="the bot class as module:Class, e.g. mybot:MyBot")
    run.add_argument(
        "--server",
        default=os.environ.get(SERVER_ENV, "localhost:50051"),
        help=f"host:port of the server, or several separated by commas to move on to the "
        f"next when one goes away (env {SERVER_ENV}; default localhost:50051)",
    )
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
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if not args.token:
        print(f"thousand-bot: give the bot's token with --token or {TOKEN_ENV}", file=sys.stderr)
        return 2
    if args.instances < 1:
        print("thousand-bot: --instances must be at least 1", file=sys.stderr)
        return 2
    try:
        factory = load_bot(args.bot)
    except (ValueError, ImportError) as exc:
        print(f"thousand-bot: cannot load {args.bot}: {exc}", file=sys.stderr)
        return 2
    try:
        run_bot(factory, args.server, args.token, args.instances, args.max_attempts)
    except BotRejected as exc:
        print(f"thousand-bot: the server refused the bot: {exc}", file=sys.stderr)
        return 3
    except ConnectionError as exc:
        print(f"thousand-bot: {exc}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
