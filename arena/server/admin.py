"""``arena bot``: register, list, revoke and rotate bots on a gateway from the shell; and
for a bot's author, submit hosted versions of it, list them and read its logs.

Organisers hand tokens to bot authors; doing it from the command line (with the
organiser token from ``ARENA_ORGANISER_TOKEN``) saves them writing a gRPC client. A bot's
own token (``THOUSAND_BOT_TOKEN``) submits its versions and reads its logs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Sequence

import grpc
from thousand_bot.address import gateway_problem
from thousand_bot.proto.thousand.v1 import organiser_pb2, organiser_pb2_grpc

from arena import exitcodes
from arena.server.limits import escape
from arena.server.tls import TlsConfigError, add_client_options, client_tls
from arena.server.tls import channel as open_channel

TOKEN_ENV = "ARENA_ORGANISER_TOKEN"
BOT_TOKEN_ENV = "THOUSAND_BOT_TOKEN"
#: Commands done with the bot's own token (``versions`` takes either).
BOT_COMMANDS = ("submit", "logs")


GATEWAY_ENV = "ARENA_GATEWAY"
DEFAULT_GATEWAY = "localhost:50051"


def _connection_options(defaults: bool) -> argparse.ArgumentParser:
    """--gateway and --token, taken before or after the subcommand alike."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--gateway", metavar="HOST:PORT",
                   default=None if defaults else argparse.SUPPRESS,
                   help=f"the gateway (env {GATEWAY_ENV}; default {DEFAULT_GATEWAY})")
    p.add_argument("--token", default=None if defaults else argparse.SUPPRESS,
                   help=f"organiser token (env {TOKEN_ENV}); for submit, versions and logs "
                   f"the bot's own token (env {BOT_TOKEN_ENV})")
    p.add_argument("--wait", metavar="SECONDS", type=_seconds,
                   default=0.0 if defaults else argparse.SUPPRESS,
                   help="wait up to this long for the gateway to come up (default 0: "
                        "fail at once); for scripts that have just started it")
    add_client_options(p, defaults=defaults)
    return p


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError("from 0 to 3600 seconds")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="arena bot", description=__doc__.splitlines()[0],
                                parents=[_connection_options(True)])
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    late = [_connection_options(False)]
    reg = sub.add_parser("register", parents=late,
                         help="register a bot and print its token (shown once)")
    reg.add_argument("name")
    rev = sub.add_parser("revoke", parents=late,
                         help="revoke a bot's token: its connections are refused")
    rev.add_argument("name")
    rot = sub.add_parser("rotate", parents=late,
                         help="give a bot a new token (the old one stops working)")
    rot.add_argument("name")
    ls = sub.add_parser("list", parents=late,
                        help="the registered bots, their instances and tokens")
    ls.add_argument("--json", action="store_true")
    sb = sub.add_parser("submit", parents=late,
                        help="submit a hosted version of a bot: a folder or an archive with "
                        "bot.toml (the bot's own token)")
    sb.add_argument("name")
    sb.add_argument("path", help="the bot's folder, or a .tar, .tar.gz, .tgz or .zip of it")
    sb.add_argument("--no-wait", action="store_true",
                    help="return once stored, without waiting for its check match")
    sb.add_argument("--check-timeout", type=_seconds, default=300.0, metavar="SECONDS",
                    help="how long to wait for the check (default 300)")
    vs = sub.add_parser("versions", parents=late,
                        help="a hosted bot's versions: hash, size, runtime, time, status")
    vs.add_argument("name")
    vs.add_argument("--json", action="store_true")
    lg = sub.add_parser("logs", parents=late,
                        help="a hosted bot's logs of its recent matches (its own token only)")
    lg.add_argument("name")
    lg.add_argument("--match", metavar="ID", default="",
                    help="only this match (its id or a unique start of it)")
    lg.add_argument("--limit", type=int, default=5, help="matches at most (default 5)")
    return p


def bot_main(argv: Sequence[str] | None = None) -> int:
    """Exit status (docs/cli.md): 0 done, 1 the gateway refused the request (say why),
    2 a usage mistake, 3 the gateway cannot be reached, 4 it refused the organiser token."""
    args = _parser().parse_args(list(argv) if argv is not None else None)
    if args.command in BOT_COMMANDS:
        token = args.token or os.environ.get(BOT_TOKEN_ENV)
        needed = f"the bot's own token is needed: --token or {BOT_TOKEN_ENV}"
    elif args.command == "versions":
        token = args.token or os.environ.get(BOT_TOKEN_ENV) or os.environ.get(TOKEN_ENV)
        needed = f"a token is needed: --token, {BOT_TOKEN_ENV} or {TOKEN_ENV}"
    else:
        token = args.token or os.environ.get(TOKEN_ENV)
        needed = f"the organiser token is needed: --token or {TOKEN_ENV}"
    if not token:
        print(f"arena bot: {needed}", file=sys.stderr)
        return exitcodes.USAGE
    bundle = None
    if args.command == "submit":
        from arena.hosted.bundle import BundleError, pack

        try:
            bundle = pack(args.path)
        except BundleError as exc:
            print(f"arena bot submit: {exc}", file=sys.stderr)
            return exitcodes.USAGE
    gateway = args.gateway or os.environ.get(GATEWAY_ENV) or DEFAULT_GATEWAY
    problem = gateway_problem(gateway)
    if problem:
        print(f"arena bot: {problem}", file=sys.stderr)
        return exitcodes.USAGE
    meta = [("authorization", f"Bearer {token}")]
    try:
        tls = client_tls(args)
    except TlsConfigError as exc:
        print(f"arena bot: {exc}", file=sys.stderr)
        return exitcodes.USAGE
    with open_channel(gateway, tls) as channel:
        if args.wait > 0:
            try:
                grpc.channel_ready_future(channel).result(timeout=args.wait)
            except grpc.FutureTimeoutError:
                print(f"arena bot: {gateway}: not reachable within {args.wait:g} s",
                      file=sys.stderr)
                return exitcodes.UNAVAILABLE
        stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
        try:
            if args.command in ("submit", "versions", "logs"):
                from arena.server.hosted_cli import hosted_command

                return hosted_command(args, channel, meta, bundle)
            return _run(args, stub, meta)
        except grpc.RpcError as exc:
            code = exc.code()
            print(f"arena bot: {gateway}: {code.name}: {exc.details()}", file=sys.stderr)
            return rpc_exit_code(code)


def rpc_exit_code(code: grpc.StatusCode) -> int:
    """The exit status for a refused call: unreachable 3, credentials 4, anything else 1."""
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return exitcodes.UNAVAILABLE
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return exitcodes.REFUSED
    return exitcodes.FAILED


def _run(args: argparse.Namespace, stub: organiser_pb2_grpc.OrganiserServiceStub,
         meta: list[tuple[str, str]]) -> int:
    timeout = 10.0
    if args.command == "register":
        r = stub.RegisterBot(organiser_pb2.RegisterBotRequest(name=args.name),
                             metadata=meta, timeout=timeout)
        print(f"registered {r.name}; its token (shown once, keep it):")
        print(r.token)
    elif args.command == "rotate":
        r2 = stub.RotateToken(organiser_pb2.RotateTokenRequest(name=args.name),
                              metadata=meta, timeout=timeout)
        print(f"new token for {r2.name} (the old one no longer works):")
        print(r2.token)
    elif args.command == "revoke":
        r3 = stub.RevokeToken(organiser_pb2.RevokeTokenRequest(name=args.name),
                              metadata=meta, timeout=timeout)
        print(f"revoked the token of {r3.name}")
    else:
        bots = stub.ListBots(organiser_pb2.ListBotsRequest(), metadata=meta,
                             timeout=timeout).bots
        rows = [
            {
                "name": b.name,
                "token_active": b.token_active,
                "instances": b.instances,
                "pending_requests": b.pending_requests,
                "version": b.version,
                "registered": dt.datetime.fromtimestamp(b.created_unix_ms / 1000, dt.UTC)
                .strftime("%Y-%m-%d %H:%M UTC"),
            }
            for b in bots
        ]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            print(f"{'bot':<20} {'token':<8} {'instances':>9} {'pending':>7}  "
                  f"{'version':<12} registered")
            for r in rows:
                # A bot chooses its version: escaped, it cannot write to the terminal.
                print(f"{r['name']:<20} {'active' if r['token_active'] else 'revoked':<8} "
                      f"{r['instances']:>9} {r['pending_requests']:>7}  "
                      f"{escape(str(r['version'])):<12} {r['registered']}")
    return 0
