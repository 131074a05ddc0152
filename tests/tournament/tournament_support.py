"""Real services for the tournament tests: Redis, PostgreSQL schemas, Celery workers."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from arena.rigs.processes import redis_server as private_redis

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PG_BASE = os.environ.get("ARENA_TEST_PG", "postgresql://127.0.0.1:5432/test")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(
    check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1, what: str = ""
) -> Any:
    """Poll ``check`` until it returns something truthy; fail with ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            result = check()
        except Exception as exc:
            last_error = exc
        else:
            if result:
                return result
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what or check}: last error {last_error!r}")


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A throw-away redis-server on a free loopback port; yields its URL."""
    with private_redis() as redis:
        yield redis.url


@contextlib.contextmanager
def pg_schema() -> Iterator[str]:
    """A database URL with a fresh PostgreSQL schema, dropped afterwards."""
    import psycopg
    from psycopg import sql

    schema = f"arena_test_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(PG_BASE, autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:  # pragma: no cover - depends on the machine
        import pytest

        pytest.skip(f"PostgreSQL not reachable at {PG_BASE}: {exc}")
    try:
        yield f"{PG_BASE}?schema={schema}"
    finally:
        admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        admin.close()


class Worker:
    """A real Celery worker process (``arena worker`` code path) in its own process group."""

    def __init__(
        self,
        broker: str,
        log_path: Path,
        *,
        name: str,
        pool: str = "solo",
        concurrency: int = 1,
        visibility_timeout: float = 3.0,
        env: dict[str, str] | None = None,
        extra_args: list[str] | None = None,
    ) -> None:
        self.log_path = log_path
        self.log = log_path.open("ab")
        full_env = dict(os.environ)
        full_env.update(
            {
                "ARENA_BROKER_URL": broker,
                "PYTHONPATH": os.pathsep.join(
                    [str(REPO), str(HERE), full_env.get("PYTHONPATH", "")]
                ),
                "PYTHONUNBUFFERED": "1",
            }
        )
        full_env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        full_env.update(env or {})
        code = (
            "import sys; from workers.app import worker_main; sys.exit(worker_main(sys.argv[1:]))"
        )
        args = [
            sys.executable,
            "-c",
            code,
            "--broker",
            broker,
            "--pool",
            pool,
            "--concurrency",
            str(concurrency),
            "--visibility-timeout",
            str(visibility_timeout),
            "--hostname",
            f"{name}@%h",
            "--loglevel",
            "INFO",
            *(extra_args or []),
        ]
        self.proc = subprocess.Popen(
            args,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=full_env,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited: {self.log_path.read_text()[-3000:]}")
            return "ready." in self.log_path.read_text(errors="replace")

        wait_for(ready, timeout=timeout, interval=0.2, what=f"worker (log {self.log_path})")

    def children(self) -> list[int]:
        """Pids of the pool processes (prefork children of the master)."""
        path = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [int(p) for p in path.read_text().split()]

    def kill_pid(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def kill_hard(self) -> None:
        """SIGKILL the whole worker (master and pool children), like a lost machine."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill_hard()
        self.log.close()
