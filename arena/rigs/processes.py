"""Local service processes: a private Redis, a gateway, SDK bots, Celery workers.

``arena demo`` and the tests run the platform's real programs as separate processes on free
loopback ports, exactly as an operator would start them by hand; these classes start one,
wait until it is ready (or say why it is not, with the end of its log), and stop it.

Each service gets its own session, so a Ctrl-C typed in the terminal reaches only the
program that started them, which then stops them in order (bots, gateway, Redis) instead of
all of them dying at once mid-match. Where ``setpriv`` is available the services also get
SIGTERM should their parent die without cleaning up (the parent death signal is tied to the
thread that starts the process: start services from the main thread).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import grpc
from thousand_bot.proto.thousand.v1 import organiser_pb2, organiser_pb2_grpc

T = TypeVar("T")

LISTENING_RE = re.compile(r"gateway listening on ([\d.]+|\[[0-9a-f:]+\]|[\w.-]+):(\d+)")


class ServiceError(RuntimeError):
    """A service could not be started or did not become ready."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (another program may still take it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _pdeathsig_prefix() -> list[str]:
    setpriv = shutil.which("setpriv")
    if setpriv is None or not sys.platform.startswith("linux"):
        return []
    return [setpriv, "--pdeathsig", "TERM", "--"]


def wait_until(
    check: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    alive: Callable[[], bool] | None = None,
    interval: float = 0.05,
) -> T:
    """Poll ``check`` until it returns something truthy; ServiceError on timeout or when
    ``alive`` says the process died."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if alive is not None and not alive():
            raise ServiceError(f"{what}: the process exited")
        if time.monotonic() > deadline:
            raise ServiceError(f"{what}: not ready after {timeout:.0f} s")
        time.sleep(interval)


class Service:
    """One child process with its output in a log file."""

    #: Lines of the log an error quotes.
    tail_lines = 15

    def __init__(self, name: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
        self.name = name
        self.proc = proc
        self.log_path = log_path

    @staticmethod
    def spawn(
        argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            return subprocess.Popen(
                [*_pdeathsig_prefix(), *argv],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, lines: int | None = None) -> str:
        lines = self.tail_lines if lines is None else lines
        return "\n".join(self.log_text().splitlines()[-lines:])

    def fail(self, why: str) -> ServiceError:
        tail = self.log_tail()
        more = f"\n--- last lines of {self.log_path} ---\n{tail}" if tail else ""
        return ServiceError(f"{self.name}: {why}{more}")

    def signal(self, sig: int) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; the exit status."""
        if self.alive():
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.wait(10)
        return self.proc.returncode

    def kill(self) -> None:
        if self.alive():
            self.signal(signal.SIGKILL)
            self.proc.wait(10)


class RedisProcess(Service):
    """A private redis-server on a free loopback port: no persistence, no password."""

    def __init__(
        self, proc: subprocess.Popen[bytes], log_path: Path, port: int, workdir: Path
    ) -> None:
        super().__init__("redis-server", proc, log_path)
        self.port = port
        self.workdir = workdir

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @classmethod
    def start(
        cls, workdir: Path, log_path: Path, *, port: int | None = None, timeout: float = 20.0
    ) -> RedisProcess:
        """Start Redis (on ``port``, e.g. to restart one, or on a free port)."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServiceError(
                "redis-server is not installed: install it (Debian: apt-get install "
                "redis-server) or run scripts/setup.sh"
            )
        workdir.mkdir(parents=True, exist_ok=True)
        attempts = 1 if port is not None else 3
        last: ServiceError | None = None
        for _ in range(attempts):
            chosen = port if port is not None else free_port()
            argv = [
                binary, "--port", str(chosen), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(workdir), "--protected-mode", "yes",
            ]  # fmt: skip
            service = cls(cls.spawn(argv, log_path), log_path, chosen, workdir)
            try:
                wait_until(service.ping, timeout=timeout, what="redis-server", alive=service.alive)
                return service
            except ServiceError as exc:
                last = service.fail(str(exc).removeprefix("redis-server: "))
                service.kill()  # e.g. another program took the port meanwhile: try another
        assert last is not None
        raise last

    def ping(self) -> bool:
        import redis

        client = redis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1)
        try:
            return bool(client.ping())
        except (redis.RedisError, OSError):
            return False
        finally:
            client.close()


@contextlib.contextmanager
def redis_server(workdir: Path | None = None) -> Iterator[RedisProcess]:
    """A private Redis for the length of a ``with`` block, stopped after it; its files go
    in ``workdir`` or, without one, in a temporary directory removed afterwards."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="arena-redis-")))
        redis = RedisProcess.start(workdir, workdir / "redis.log")
        try:
            yield redis
        finally:
            redis.stop()


class GatewayProcess(Service):
    """``arena serve`` as a child process (``python -m arena.server``) on a free port."""

    def __init__(
        self, proc: subprocess.Popen[bytes], log_path: Path, organiser_token: str
    ) -> None:
        super().__init__("gateway", proc, log_path)
        self.organiser_token = organiser_token
        self.host = "127.0.0.1"
        self.port = 0
        self._channel: grpc.Channel | None = None
        #: For a gateway serving TLS: what its organiser calls trust (and the name the
        #: certificate carries, as ``host``).
        self.credentials: grpc.ChannelCredentials | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @classmethod
    def start(
        cls,
        *,
        db_path: Path,
        log_path: Path,
        organiser_token: str,
        routing_url: str | None = None,
        grace_s: float = 2.0,
        log_level: str = "INFO",
        extra: Iterable[str] = (),
        timeout: float = 30.0,
    ) -> GatewayProcess:
        argv = [
            sys.executable, "-m", "arena.server", "--host", "127.0.0.1", "--port", "0",
            "--db", str(db_path), "--grace", str(grace_s), "--log-level", log_level,
        ]  # fmt: skip
        if routing_url:
            argv += ["--routing", routing_url]
        argv += list(extra)
        # The token travels in the environment, never on a command line others can read.
        env = dict(os.environ, ARENA_ORGANISER_TOKEN=organiser_token, PYTHONUNBUFFERED="1")
        env.pop("ARENA_ROUTING_URL", None)
        service = cls(cls.spawn(argv, log_path, env), log_path, organiser_token)
        try:
            found = wait_until(
                lambda: LISTENING_RE.search(service.log_text()),
                timeout=timeout,
                what="gateway",
                alive=service.alive,
            )
        except ServiceError as exc:
            service.kill()
            raise service.fail(str(exc).removeprefix("gateway: ")) from None
        service.port = int(found.group(2))
        return service

    def _stub(self) -> organiser_pb2_grpc.OrganiserServiceStub:
        if self._channel is None:
            self._channel = (grpc.insecure_channel(self.address) if self.credentials is None
                             else grpc.secure_channel(self.address, self.credentials))
        return organiser_pb2_grpc.OrganiserServiceStub(self._channel)

    def _auth(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.organiser_token}"),)

    def register(self, name: str) -> str:
        """Register a bot through the OrganiserService; its token."""
        reply = self._stub().RegisterBot(
            organiser_pb2.RegisterBotRequest(name=name), metadata=self._auth(), timeout=10
        )
        return str(reply.token)

    def instances(self) -> dict[str, int]:
        """Connected instances per registered bot."""
        reply = self._stub().ListBots(
            organiser_pb2.ListBotsRequest(), metadata=self._auth(), timeout=10
        )
        return {b.name: int(b.instances) for b in reply.bots}

    def wait_instances(
        self, names: Iterable[str], *, timeout: float = 30.0, bots: Sequence[Service] = ()
    ) -> None:
        """Wait until every bot in ``names`` has an instance connected."""
        wanted = set(names)

        def connected() -> bool:
            counts = self.instances()
            return all(counts.get(n, 0) > 0 for n in wanted)

        def alive() -> bool:
            return self.alive() and all(b.alive() for b in bots)

        try:
            wait_until(connected, timeout=timeout, what="bots", alive=alive, interval=0.1)
        except ServiceError as exc:
            dead = [b for b in bots if not b.alive()]
            if dead:
                raise dead[0].fail("exited before connecting") from None
            raise self.fail(f"bots did not connect: {exc}") from None

    def stop(self, timeout: float = 15.0) -> int | None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        return super().stop(timeout)


class BotProcess(Service):
    """An SDK bot (``thousand-bot run MODULE:CLASS``) connected to a gateway."""

    @classmethod
    def start(
        cls,
        *,
        name: str,
        bot_ref: str,
        server: str,
        token: str,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        max_attempts: int = 40,
    ) -> BotProcess:
        argv = [
            sys.executable, "-m", "thousand_bot.cli", "run", bot_ref, "--server", server,
            "--max-attempts", str(max_attempts), "--log-level", "WARNING",
        ]  # fmt: skip
        full_env = dict(os.environ, **(env or {}), THOUSAND_BOT_TOKEN=token, PYTHONUNBUFFERED="1")
        return cls(name, cls.spawn(argv, log_path, full_env), log_path)


class WorkerProcess(Service):
    """A Celery worker (``arena worker``) consuming a broker's match queue."""

    @classmethod
    def start(
        cls,
        *,
        broker: str,
        log_path: Path,
        concurrency: int = 2,
        pool: str = "prefork",
        name: str = "worker",
        env: Mapping[str, str | None] | None = None,
        loglevel: str = "INFO",
        timeout: float = 60.0,
    ) -> WorkerProcess:
        """Start one and, at the INFO log level, wait until it says it is ready (at a quieter
        level the caller waits, e.g. for the worker to answer a ping). ``env`` adds to this
        process's environment; a name given None is left out of it."""
        argv = [
            sys.executable, "-m", "arena.cli", "worker", "--broker", broker, "--pool", pool,
            "--concurrency", str(concurrency), "--hostname", f"{name}@%h", "--loglevel", loglevel,
        ]  # fmt: skip
        full_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
        kept = {key: value for key, value in full_env.items() if value is not None}
        service = cls(name, cls.spawn(argv, log_path, kept), log_path)
        if loglevel != "INFO":
            return service
        try:
            wait_until(lambda: "ready." in service.log_text() or None, timeout=timeout,
                       what="the Celery worker", alive=service.alive)
        except ServiceError:
            service.kill()
            raise
        return service


def stop_all(services: Iterable[Service], timeout: float = 10.0) -> None:
    """Ask all to stop at once, then wait for each (SIGKILL after ``timeout``)."""
    items = [s for s in services if s.alive()]
    for s in items:
        s.signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for s in items:
        try:
            s.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            s.kill()
