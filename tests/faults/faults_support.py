"""Services a test can stop and start again on the same port: Redis and PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from tournament_support import free_port, wait_for

from arena.rigs.processes import RedisProcess


class RestartableRedis:
    """A redis-server without persistence, like the compose file's: a restart loses all.

    Each start is a :class:`RedisProcess` on the same port, so clients reconnect to it.
    """

    def __init__(self, workdir: Path) -> None:
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server is not installed")
        self.workdir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.service: RedisProcess | None = None
        self.restarts = 0
        self.start()

    def start(self) -> None:
        self.service = RedisProcess.start(self.workdir, self.workdir / "redis.log",
                                          port=self.port, timeout=30)

    def stop(self, sig: int = signal.SIGKILL) -> None:
        if self.service is not None and self.service.alive():
            self.service.signal(sig)
            self.service.proc.wait(timeout=20)
        self.service = None

    def restart(self, down_s: float = 1.0) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()
        self.restarts += 1


class PgServer:
    """A PostgreSQL cluster of its own (initdb in a temporary directory, trust auth).

    The machine's shared server must not be restarted by a test; this one is.  As root,
    the server runs as the ``postgres`` user, since PostgreSQL refuses to run as root.
    """

    def __init__(self) -> None:
        initdb = shutil.which("initdb") or _pg_bin("initdb")
        postgres = shutil.which("postgres") or _pg_bin("postgres")
        if not initdb or not postgres:
            pytest.skip("PostgreSQL server binaries (initdb, postgres) are not installed")
        self.postgres = postgres
        # Not under pytest's tmp_path: the postgres user cannot enter root's 0700 folders.
        workdir = Path(tempfile.mkdtemp(prefix="arena-pg-"))
        self.workdir = workdir
        self.dir = workdir / "pgdata"
        self.sock = workdir / "pgsock"
        self.sock.mkdir()
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            self.prefix = ["runuser", "-u", "postgres", "--"]
            shutil.chown(workdir, "postgres")
            shutil.chown(self.sock, "postgres")
        subprocess.run(
            [
                *self.prefix,
                initdb,
                "-D",
                str(self.dir),
                "-A",
                "trust",
                "-U",
                "arena",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.port = free_port()
        self.url = f"postgresql://arena@127.0.0.1:{self.port}/postgres"
        self.log = workdir / "postgres.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.start()

    def start(self) -> None:
        log = self.log.open("ab")
        self.proc = subprocess.Popen(
            [
                *self.prefix,
                self.postgres,
                "-D",
                str(self.dir),
                "-p",
                str(self.port),
                "-k",
                str(self.sock),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        import psycopg

        def ready() -> bool:
            with psycopg.connect(self.url, connect_timeout=2) as conn:
                return conn.execute("SELECT 1").fetchone() == (1,)

        wait_for(ready, timeout=60, interval=0.2, what=f"PostgreSQL (log {self.log})")

    def stop(self) -> None:
        """A fast shutdown: open connections are cut, as in a restart by an administrator."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def restart(self, down_s: float = 3.0) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()
        self.restarts += 1

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _pg_bin(name: str) -> str | None:
    for root in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (root / name).exists():
            return str(root / name)
    return None
