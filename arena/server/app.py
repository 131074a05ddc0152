"""The gateway process: gRPC server, health, reflection, credentials and shutdown."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from thousand_bot.proto.thousand.v1 import (
    bot_pb2,
    hosted_pb2,
    hosted_pb2_grpc,
    organiser_pb2,
    organiser_pb2_grpc,
)

from arena.match.types import MatchResult
from arena.observability.exposition import MetricsSetupError, start_metrics_server
from arena.observability.grpc_metrics import MetricsInterceptor
from arena.referee.heap import settle_heap
from arena.server.admission import Admission
from arena.server.auth import Authenticator, BotRegistry, TokenWatch
from arena.server.hub import BotHub
from arena.server.interceptors import BOT_SERVICE, ORGANISER_SERVICE, TokenInterceptor
from arena.server.keepalive import keepalive_options
from arena.server.limits import StreamLimits
from arena.server.matches import MatchManager, ResultHook
from arena.server.metrics import GatewayMetrics
from arena.server.routing import RedisRouting, RoutingConfigError, check_url
from arena.server.services import BotService, OrganiserService
from arena.server.tls import ServerTls, TlsConfigError, add_server_options, server_tls

if TYPE_CHECKING:
    from arena.hosted.check import Checker
    from arena.hosted.store import HostedStore

log = logging.getLogger("arena.server")

DEFAULT_PORT = 50051
DEFAULT_DB_PATH = "var/gateway.sqlite3"
ORGANISER_TOKEN_ENV = "ARENA_ORGANISER_TOKEN"
DB_PATH_ENV = "ARENA_GATEWAY_DB"
ROUTING_ENV = "ARENA_ROUTING_URL"
STORE_ENV = "ARENA_DB_URL"
#: Bot messages are a few hundred bytes; a megabyte leaves room for any rule variant and
#: still refuses a flood early (RESOURCE_EXHAUSTED).
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20
DEFAULT_GRACE_S = 30.0
#: What bots are told when a gateway that is one of several stops (UNAVAILABLE: retry).
SHED_REASON = "this gateway is shutting down: connect to another gateway of the arena"
HEALTH_SERVICE = "grpc.health.v1.Health"


class Gateway:
    """One gateway: owns the server, the bot registry and the matches it runs."""

    def __init__(
        self,
        *,
        db_path: str,
        organiser_token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        grace_s: float = DEFAULT_GRACE_S,
        on_result: ResultHook | None = None,
        routing_url: str | None = None,
        max_matches: int = 0,
        limits: StreamLimits | None = None,
        tls: ServerTls | None = None,
        store_url: str | None = None,
    ) -> None:
        self.generated_token = organiser_token is None
        self.tls = tls
        self.organiser_token = organiser_token or "org_" + secrets.token_urlsafe(32)
        self.host = host
        self.requested_port = port
        self.port = 0
        self.max_message_bytes = max_message_bytes
        self.grace_s = grace_s
        self.registry = BotRegistry(db_path)
        self.auth = Authenticator(self.registry, self.organiser_token)
        self.metrics = GatewayMetrics()
        self.hub = BotHub(limits)
        self.watch = TokenWatch(self.registry)
        self.matches = MatchManager(
            self.hub,
            self.registry,
            on_result=on_result,
            admission=Admission(max_matches=max_matches),
            routing_url=routing_url,
            store_url=store_url,
        )
        self.health = health.aio.HealthServicer()
        self.routing = RedisRouting(self.hub, routing_url) if routing_url else None
        #: The results store that keeps hosted bots (``--store``), and their checks.
        self.store_url = store_url
        self.hosted_store: HostedStore | None = None
        self.checker: Checker | None = None
        if store_url:
            from arena.hosted.store import HostedStore
            from arena.tournament.store import ResultStore

            self.hosted_store = HostedStore(ResultStore(store_url, connect_retry=True))
        self._server: grpc.aio.Server | None = None
        self._bots: BotService | None = None

    async def start(self) -> int:
        """Start serving; returns the bound port (useful with port 0)."""
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", self.max_message_bytes),
            ("grpc.max_send_message_length", self.max_message_bytes),
            ("grpc.so_reuseport", 0),
            # Without bandwidth probing each stream's receive window stays at its initial
            # 64 KiB: a bot that floods large messages is held to that by flow control
            # instead of having grpc buffer hundreds of megabytes for it (bots send a few
            # hundred bytes a message, so honest streams never need more).
            ("grpc.http2.bdp_probe", 0),
            *keepalive_options(),
        ]
        server = grpc.aio.server(
            interceptors=[MetricsInterceptor(), TokenInterceptor(self.auth, self.metrics)],
            options=options,
        )
        self._bots = BotService(self.hub, self.auth, self.metrics, self.watch)
        # Registered by hand rather than with bot_pb2_grpc's helper: the stream writes
        # bytes, serialised by the stream's writer (decision requests on the hot path are
        # written as bytes from the start, arena.server.wire), so gRPC calls no serializer
        # for each message.
        play = grpc.stream_stream_rpc_method_handler(
            self._bots.Play,
            request_deserializer=bot_pb2.PlayRequest.FromString,
            response_serializer=None,
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(BOT_SERVICE, {"Play": play}),)
        )
        organiser_pb2_grpc.add_OrganiserServiceServicer_to_server(
            OrganiserService(self.registry, self.hub, self.matches, self.auth, self.watch),
            server,
        )
        # Imported here: the hosted seats import the gateway's services (arena.server).
        from arena.hosted.check import Checker
        from arena.server.hosted import HostedService

        if self.hosted_store is not None:
            self.checker = Checker(self.hosted_store)
        hosted_pb2_grpc.add_HostedServiceServicer_to_server(
            HostedService(self.auth, self.hosted_store, self.checker), server
        )
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        names = (
            bot_pb2.DESCRIPTOR.services_by_name["BotService"].full_name,
            organiser_pb2.DESCRIPTOR.services_by_name["OrganiserService"].full_name,
            hosted_pb2.DESCRIPTOR.services_by_name["HostedService"].full_name,
            health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
            reflection.SERVICE_NAME,
        )
        reflection.enable_server_reflection(names, server)
        address = f"{self.host}:{self.requested_port}"
        try:
            if self.tls is not None:
                self.port = server.add_secure_port(address, self.tls.credentials())
            else:
                self.port = server.add_insecure_port(address)
        except RuntimeError as exc:  # grpc's way of saying the port is taken
            raise OSError(f"cannot listen on {address}: {exc}") from None
        if self.port == 0:
            raise OSError(f"cannot listen on {address}")
        await server.start()
        for service in ("", BOT_SERVICE, ORGANISER_SERVICE):
            await self.health.set(service, health_pb2.HealthCheckResponse.SERVING)
        self._server = server
        if self.routing is not None:
            self.routing.start()
        if self.checker is not None:
            await self.checker.resume()
        return self.port

    async def stop(self, grace_s: float | None = None) -> None:
        """Stop gracefully: NOT_SERVING first, then let matches finish within the grace
        period (the rest end as aborted), then close the bot streams."""
        if self._server is None:
            return
        grace = self.grace_s if grace_s is None else grace_s
        await self.health.enter_graceful_shutdown()
        if self.routing is not None and await self.routing.others_up():
            # Several gateways serve one pool of bots: hand ours over. Take no more routed
            # requests (the bots' leases go to a gateway standing by), answer those in
            # flight, then send the bots away; they reconnect to another gateway, and this
            # gateway's own matches reach them there through Redis while they finish.
            self.matches.stop_accepting()
            await self.routing.close(min(grace, 5.0))
            moved = self.hub.shed(SHED_REASON)
            log.info("sent %d bot sessions to the other gateways; finishing our matches", moved)
            await self.matches.drain(grace)
        else:
            if self.routing is not None:
                # The only gateway: nobody could take routed requests or our bots.
                self.routing.stop_taking()
            await self.matches.drain(grace)
            if self.routing is not None:
                await self.routing.close(min(grace, 5.0))
        if self.checker is not None:
            await self.checker.close()
        await self._server.stop(grace=min(grace, 5.0))
        await self.matches.admission.close()
        if self._bots is not None:
            await self._bots.close()
        self._server = None
        self.registry.close()

    async def wait(self) -> None:
        if self._server is not None:
            await self._server.wait_for_termination()


def _result_writer(path: str) -> ResultHook:
    """A result hook appending JSON lines; an append per result survives a crash."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)

    async def write(result: MatchResult) -> None:
        with target.open("a", encoding="utf-8") as out:
            out.write(json.dumps(result.to_json(), separators=(",", ":")) + "\n")

    return write


async def serve(
    gateway: Gateway,
    metrics_port: int | None,
    *,
    metrics_addr: str = "127.0.0.1",
    stop: asyncio.Event | None = None,
) -> None:
    """Run ``gateway`` until SIGTERM/SIGINT (or ``stop`` is set), then shut it down
    gracefully.

    A gateway made without an organiser token has generated one: it is printed once, so a
    first run works without configuration while the token still never lands in a file.
    """
    stop = stop or asyncio.Event()
    metrics_server = (
        start_metrics_server(metrics_port, metrics_addr) if metrics_port is not None else None
    )
    try:
        bound = await gateway.start()
    except BaseException:
        if metrics_server is not None:
            metrics_server.close()
        raise
    gateway.matches.name = f"gateway {gateway.host}:{bound}"
    settle_heap()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
            loop.add_signal_handler(sig, stop.set)
    print(f"gateway listening on {gateway.host}:{bound}"
          + (" (TLS)" if gateway.tls is not None else ""), flush=True)
    if metrics_server is not None:
        print(f"metrics on http://{metrics_addr}:{metrics_server.port}/metrics", flush=True)
    if gateway.generated_token:
        print(f"organiser token (generated, shown once): {gateway.organiser_token}", flush=True)
        print("  a new one is made at each start: set ARENA_ORGANISER_TOKEN (or "
              "--organiser-token) to keep one token across restarts", flush=True)
    if gateway.routing is None:
        print("no --routing: matches started here reach the bots connected here; a tournament "
              "(remote:NAME from its executor or workers) needs --routing REDIS_URL", flush=True)
    if gateway.hosted_store is not None:
        print(f"hosted bots kept in {gateway.hosted_store.store.display_url}", flush=True)
    if gateway.routing is not None:
        problem = await gateway.routing.ping()
        where = gateway.routing.shown_url
        if problem is None:
            print(f"routing decisions of remote bots through {where}", flush=True)
        else:
            print(
                f"routing decisions of remote bots through {where}: not reachable yet "
                f"({problem}); retrying",
                flush=True,
            )
    try:
        await stop.wait()
        print("shutting down: finishing running matches", flush=True)
        await gateway.stop()
    finally:
        if metrics_server is not None:
            metrics_server.close()
    print("gateway stopped", flush=True)


async def _serve_args(args: argparse.Namespace, token: str | None, tls: ServerTls | None) -> None:
    """The gateway of ``arena serve``'s options, made and run in the event loop.

    With ``--results`` every finished match (completed, forfeit or aborted at shutdown) is
    appended to that file as one JSON line. With ``--routing`` (a Redis URL) matches
    played elsewhere (tournament executors, Celery workers) reach the bots connected here.
    """
    gateway = Gateway(
        db_path=args.db,
        organiser_token=token,
        host=args.host,
        port=args.port,
        max_message_bytes=args.max_message_bytes,
        grace_s=args.grace,
        on_result=None if args.results is None else _result_writer(args.results),
        routing_url=args.routing,
        max_matches=args.max_matches,
        tls=tls,
        store_url=args.store,
    )
    await serve(gateway, args.metrics_port, metrics_addr=args.metrics_addr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena serve", description="Run the gRPC gateway that bots connect to."
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: bots on this machine; 0.0.0.0 lets "
        "bots on other machines in)",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="gRPC port (0: any)")
    parser.add_argument("--metrics-port", type=int, default=None, help="Prometheus port")
    parser.add_argument(
        "--metrics-addr",
        default="127.0.0.1",
        help="address the metrics endpoint listens on (default 127.0.0.1; 0.0.0.0 for "
        "every interface)",
    )
    parser.add_argument(
        "--db",
        default=os.environ.get(DB_PATH_ENV, DEFAULT_DB_PATH),
        help="the registry of bots: a SQLite file, or postgresql://HOST/DB[?schema=NAME] for "
        f"gateways on several machines (env {DB_PATH_ENV}; default {DEFAULT_DB_PATH})",
    )
    parser.add_argument(
        "--organiser-token",
        default=None,
        help=f"organiser credential (env {ORGANISER_TOKEN_ENV}); generated when absent",
    )
    parser.add_argument(
        "--grace", type=float, default=DEFAULT_GRACE_S, help="seconds matches get at shutdown"
    )
    parser.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        help="largest message accepted from a client",
    )
    parser.add_argument(
        "--results", default=None, help="append each finished match to this JSON-lines file"
    )
    parser.add_argument(
        "--routing",
        default=os.environ.get(ROUTING_ENV) or None,
        help="Redis URL through which tournament matches reach the bots connected here, "
        f"e.g. redis://127.0.0.1:6379/0 (env {ROUTING_ENV}; default: none)",
    )
    parser.add_argument(
        "--max-matches",
        type=int,
        default=0,
        help="most matches played at once; more wait before their first deal (default 0: "
        "as many as the gateway plays without falling behind, found by admission control)",
    )
    add_server_options(parser)
    parser.add_argument(
        "--store",
        metavar="URL",
        default=os.environ.get(STORE_ENV) or None,
        help="the results store (sqlite:///FILE or postgresql://...) of this gateway: it keeps "
        "every finished match (arena web --db URL shows them; live events go beside it, or to "
        "the --routing Redis) and the hosted bots, whose versions bots may submit here, "
        f"checked in a sandbox on this host (env {STORE_ENV}; default: none)",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level")
    return parser


def main_serve(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``arena serve``."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    token = args.organiser_token or os.environ.get(ORGANISER_TOKEN_ENV) or None
    if args.max_matches < 0:
        print("arena serve: --max-matches must not be negative (0: no fixed bound)",
              file=sys.stderr)
        return 2
    if args.routing:
        try:
            check_url(args.routing)
        except RoutingConfigError as exc:
            print(f"arena serve: {exc}", file=sys.stderr)
            return 2
    try:
        tls = server_tls(args.tls_cert, args.tls_key, args.tls_client_ca)
    except TlsConfigError as exc:
        print(f"arena serve: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_serve_args(args, token, tls))
    except (OSError, MetricsSetupError) as exc:
        print(f"arena serve: {exc}", file=sys.stderr)
        return 1
    return 0
