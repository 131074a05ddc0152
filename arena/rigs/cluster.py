"""The arena deployed on a rig's hosts, role by role: the roles of docs/deploy.md.

* ``data``: Redis (broker and routing, password-protected) and PostgreSQL (the results
  store and the gateways' bot registry), each an instance of the host's own;
* ``gw1``, ``gw2``...: ``arena serve``, sharing the registry and Redis;
* ``w1``, ``w2``...: ``arena worker``, one Celery worker per host, which plays hosted bots
  in sandboxes of its own, their versions fetched from the results store by hash;
* ``bots``: remote bots, ``thousand-bot run`` given every gateway's address, and the
  authors of hosted bots, who submit them through a gateway (``arena bot submit``), which
  checks each new version in a sandbox on its own host;
* ``ctl``: the organiser's machine, where ``arena`` commands and the tournament
  scheduler run and the spec files live.

No host reads another's files: each gets what it needs as a copy (certificates, spec
files, tokens in its environment), and everything else travels over the rig's network.
With ``tls`` every connection between hosts is encrypted and verified against a CA made
for the run: gRPC (bots and organiser to the gateways), Redis (``rediss://``) and
PostgreSQL (``sslmode=verify-full``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from arena.rigs.hosts import Host, Proc, Rig
from arena.rigs.linux import RigError
from arena.rigs.tls import CertificateAuthority

REDIS_PORT = 6379
PG_PORT = 5432
GATEWAY_PORT = 50051
GATEWAY_METRICS_PORT = 9101
WORKER_METRICS_PORT = 9102
#: The schema of the results store: tournaments' results, and the hosted bots that the
#: gateways keep there and the workers fetch.
STORE_SCHEMA = "arena"
GREEDY = "arena.server.builtin_remote:Greedy"
CAUTIOUS = "arena.server.builtin_remote:Cautious"


def pg_bin(name: str) -> str:
    """A PostgreSQL server program: on the path, else in Debian's versioned directory."""
    found = shutil.which(name)
    if found:
        return found
    for root in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (root / name).exists():
            return str(root / name)
    raise RigError(f"PostgreSQL's {name} is not installed (Debian: apt-get install postgresql)")


class Deployment:
    """The arena's roles on a :class:`Rig`; start them in order with :meth:`start`."""

    def __init__(self, rig: Rig, *, gateways: int = 2, workers: int = 2, tls: bool = False,
                 worker_concurrency: int = 1, worker_env: Mapping[str, str] | None = None,
                 gateway_env: Mapping[str, str] | None = None,
                 bot_env: Mapping[str, str] | None = None) -> None:
        self.rig = rig
        self.tls = tls
        self.organiser_token = "org_" + secrets.token_urlsafe(24)
        self.redis_password = secrets.token_urlsafe(24)
        self.pg_password = secrets.token_urlsafe(24)
        self.worker_concurrency = worker_concurrency
        self.worker_env = dict(worker_env or {})
        self.gateway_env = dict(gateway_env or {})
        self.bot_env = dict(bot_env or {})
        self.ca = CertificateAuthority() if tls else None
        self.data = rig.add_host("data", ports=(REDIS_PORT, PG_PORT))
        self.gateways = [rig.add_host(f"gw{i + 1}", ports=(GATEWAY_PORT, GATEWAY_METRICS_PORT))
                         for i in range(gateways)]
        self.ctl = rig.add_host("ctl")
        self.bots_host = rig.add_host("bots")
        self.workers: list[Host] = []
        for _ in range(workers):
            self.add_worker_host()
        self.redis_proc: Proc | None = None
        self.postgres: Proc | None = None
        self.gateway_procs: dict[str, Proc] = {}
        self.worker_procs: dict[str, Proc] = {}
        self.bot_procs: dict[str, Proc] = {}
        self.bot_tokens: dict[str, str] = {}
        for host in rig.hosts.values():
            self._give_certificates(host)

    # --- addresses and secrets -------------------------------------------------------

    def redis_url(self, db: int) -> str:
        scheme = "rediss" if self.tls else "redis"
        query = "?ssl_cert_reqs=required&ssl_ca_certs=tls/ca.crt" if self.tls else ""
        return f"{scheme}://:{self.redis_password}@data:{REDIS_PORT}/{db}{query}"

    @property
    def broker_url(self) -> str:
        return self.redis_url(0)

    @property
    def routing_url(self) -> str:
        return self.redis_url(1)

    def db_url(self, schema: str | None = None, *, host: str = "data") -> str:
        query = [f"schema={schema}"] if schema else []
        if self.tls:
            query += ["sslmode=verify-full", "sslrootcert=tls/ca.crt"]
        tail = "?" + "&".join(query) if query else ""
        return f"postgresql://arena:{self.pg_password}@{host}:{PG_PORT}/arena{tail}"

    def operator_db_url(self, schema: str | None = None) -> str:
        """The results store as seen from the rig's own network (the operator's console)."""
        query = f"?schema={schema}" if schema else ""
        if self.tls:
            assert self.ca is not None
            ca = self.rig.root / "net" / "ca.crt"
            ca.write_bytes(self.ca.cert_pem)
            query += ("&" if query else "?") + f"sslmode=require&sslrootcert={ca}"
        return (f"postgresql://arena:{self.pg_password}@{self.data.address}:{PG_PORT}/arena"
                f"{query}")

    @property
    def gateway_addresses(self) -> str:
        return ",".join(f"{h.name}:{GATEWAY_PORT}" for h in self.gateways)

    def _tls_client_args(self) -> list[str]:
        return ["--tls-ca", "tls/ca.crt"] if self.tls else []

    def _give_certificates(self, host: Host) -> None:
        if self.ca is None:
            return
        host.put("tls/ca.crt", self.ca.cert_pem)
        if host.ports:
            issued = self.ca.issue(host.name, [host.name, host.address])
            host.put("tls/server.crt", issued.cert)
            host.put("tls/server.key", issued.key, mode=0o600)

    # --- hosts ------------------------------------------------------------------------

    def add_worker_host(self) -> Host:
        """One more worker machine (started with :meth:`start_worker`)."""
        host = self.rig.add_host(f"w{len(self.workers) + 1}", ports=(WORKER_METRICS_PORT,))
        self.workers.append(host)
        self._give_certificates(host)
        return host

    # --- the data host ----------------------------------------------------------------

    def start_redis(self) -> Proc:
        data = self.data
        (data.home / "redis").mkdir(exist_ok=True)
        argv = ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no",
                "--requirepass", self.redis_password, "--save", "", "--appendonly", "no",
                "--dir", str(data.home / "redis")]
        if self.tls:
            tls = data.home / "tls"  # absolute: Redis reads them after moving to --dir
            argv += ["--port", "0", "--tls-port", str(REDIS_PORT),
                     "--tls-cert-file", str(tls / "server.crt"),
                     "--tls-key-file", str(tls / "server.key"),
                     "--tls-ca-cert-file", str(tls / "ca.crt"), "--tls-auth-clients", "no"]
        else:
            argv += ["--port", str(REDIS_PORT)]
        self.redis_proc = data.spawn("redis", argv)
        self.redis_proc.wait_for("Ready to accept connections", timeout=30)
        return self.redis_proc

    def restart_redis(self, down_s: float = 1.0) -> None:
        """Redis killed outright and started again: without persistence it comes back empty
        (queues, routing lists and leases lost), as the compose file's Redis would."""
        assert self.redis_proc is not None
        self.redis_proc.signal(9)
        self.redis_proc.proc.wait(10)
        time.sleep(down_s)
        self.start_redis()

    def start_postgres(self) -> Proc:
        data = self.data
        pg = data.home / "pg"
        (pg / "sock").mkdir(parents=True, exist_ok=True)
        shutil.chown(pg, "postgres", "postgres")
        shutil.chown(pg / "sock", "postgres", "postgres")
        as_postgres = ["setpriv", "--reuid", "postgres", "--regid", "postgres", "--init-groups",
                       "--"]
        if not (pg / "data").exists():
            data.run([*as_postgres, pg_bin("initdb"), "-D", str(pg / "data"), "-U", "postgres",
                      "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                      "--no-sync"])
            with (pg / "data" / "pg_hba.conf").open("a") as hba:
                kind = "hostssl" if self.tls else "host"
                hba.write(f"{kind} all all 0.0.0.0/0 scram-sha-256\n")
            if self.tls:
                for name in ("server.crt", "server.key"):
                    target = pg / "data" / name
                    shutil.copy(data.home / "tls" / name, target)
                    shutil.chown(target, "postgres", "postgres")
                    target.chmod(0o600)
        argv = [*as_postgres, pg_bin("postgres"), "-D", str(pg / "data"),
                "-c", "listen_addresses=*", "-c", f"port={PG_PORT}",
                "-c", f"unix_socket_directories={pg / 'sock'}",
                "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                "-c", "max_connections=200"]
        if self.tls:
            argv += ["-c", "ssl=on"]
        self.postgres = data.spawn("postgres", argv)
        self.postgres.wait_for("database system is ready to accept connections", timeout=60)
        sql = (f"CREATE ROLE arena LOGIN PASSWORD '{self.pg_password}';"
               "CREATE DATABASE arena OWNER arena;")
        exists = data.run(["psql", "-h", str(pg / "sock"), "-U", "postgres", "-tAc",
                           "SELECT 1 FROM pg_roles WHERE rolname = 'arena'"])
        if exists.stdout.strip() != "1":
            for statement in sql.split(";")[:-1]:
                data.run(["psql", "-h", str(pg / "sock"), "-U", "postgres", "-c", statement])
        return self.postgres

    # --- gateways, workers, bots ------------------------------------------------------

    def start_gateway(self, host: Host) -> Proc:
        argv = ["arena", "serve", "--host", "0.0.0.0", "--port", str(GATEWAY_PORT),
                "--metrics-port", str(GATEWAY_METRICS_PORT), "--metrics-addr", "0.0.0.0",
                "--db", self.db_url("arena_bots"), "--routing", self.routing_url,
                "--store", self.db_url(STORE_SCHEMA), "--results", "results.jsonl",
                "--grace", "10",
                "--log-level", os.environ.get("ARENA_RIG_GATEWAY_LOG", "INFO")]
        if self.tls:
            argv += ["--tls-cert", "tls/server.crt", "--tls-key", "tls/server.key"]
        env = {"ARENA_ORGANISER_TOKEN": self.organiser_token, **self.gateway_env}
        proc = host.spawn("gateway", argv, env)
        proc.wait_for("gateway listening on", timeout=60)
        self.gateway_procs[host.name] = proc
        return proc

    def start_worker(self, host: Host, *, pool: str = "prefork",
                     visibility_timeout: float | None = None) -> Proc:
        argv = ["arena", "worker", "--broker", self.broker_url, "--routing", self.routing_url,
                "--concurrency", str(self.worker_concurrency), "--pool", pool,
                "--hostname", f"{host.name}@{host.name}",
                "--metrics-port", str(WORKER_METRICS_PORT), "--metrics-addr", "0.0.0.0",
                "--loglevel", "INFO"]
        if visibility_timeout is not None:
            argv += ["--visibility-timeout", str(visibility_timeout)]
        env = {"PROMETHEUS_MULTIPROC_DIR": str(host.home / "metrics"), **self.worker_env}
        # SIGUSR2 writes every thread's stack to the log (the master's and, inherited
        # across fork, the pool children's): what a stuck worker was doing.
        code = ("import faulthandler, signal, sys; "
                "faulthandler.register(signal.SIGUSR2, all_threads=True); "
                "from workers.app import worker_main; sys.exit(worker_main(sys.argv[1:]))")
        argv = ["python", "-c", code, *argv[2:]]
        proc = host.spawn("worker", argv, env)
        proc.wait_for(r"ready\.", timeout=90)
        self.worker_procs[host.name] = proc
        return proc

    def dump_stacks(self) -> None:
        """Every worker process writes its threads' stacks to its log (see start_worker)."""
        for host in self.workers:
            for pid in host.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGUSR2)

    def arena(self, *args: str, env: Mapping[str, str] | None = None,
              timeout: float = 120.0) -> str:
        """An ``arena`` command on the organiser's machine; its output."""
        full = {"ARENA_ORGANISER_TOKEN": self.organiser_token, **(env or {})}
        return self.ctl.run(["arena", *args], env=full, timeout=timeout).stdout

    def register_bots(self, names: Iterable[str]) -> None:
        gateway = f"{self.gateways[0].name}:{GATEWAY_PORT}"
        for name in names:
            out = self.arena("bot", "--gateway", gateway, *self._tls_client_args(),
                             "--wait", "30", "register", name)
            self.bot_tokens[name] = out.strip().splitlines()[-1].strip()

    def submit_hosted(self, name: str, files: Mapping[str, str]) -> Path:
        """A hosted bot's folder written on the bots host and submitted from there by its
        author through the first gateway, which checks it in a sandbox on its own host;
        the folder (on this machine). The bot is registered first if it is not yet."""
        folder = f"hosted/{name}"
        for relative, text in files.items():
            self.bots_host.put(f"{folder}/{relative}", text)
        if name not in self.bot_tokens:
            self.register_bots([name])
        gateway = f"{self.gateways[0].name}:{GATEWAY_PORT}"
        out = self.bots_host.run(
            ["arena", "bot", "submit", name, folder, "--gateway", gateway,
             *self._tls_client_args()],
            env={"THOUSAND_BOT_TOKEN": self.bot_tokens[name]}, timeout=300, check=False)
        said = out.stdout + out.stderr
        if out.returncode != 0 or "passed its check" not in said:
            raise RigError(f"hosted bot {name} was not accepted ({out.returncode}):\n{said}")
        return self.bots_host.home / folder

    def start_bot(self, name: str, ref: str) -> Proc:
        argv = ["thousand-bot", "run", ref, "--gateway", self.gateway_addresses,
                "--log-level", "INFO", *self._tls_client_args()]
        env = {"THOUSAND_BOT_TOKEN": self.bot_tokens[name], **self.bot_env}
        proc = self.bots_host.spawn(f"bot-{name}", argv, env)
        self.bot_procs[name] = proc
        return proc

    def instances(self, gateway: Host) -> dict[str, int]:
        """Connected instances per bot on one gateway (asked from the operator's console)."""
        import grpc
        from thousand_bot.proto.thousand.v1 import organiser_pb2, organiser_pb2_grpc

        target = f"{gateway.address}:{GATEWAY_PORT}"

        def ask() -> dict[str, int]:
            if self.ca is not None:
                creds = grpc.ssl_channel_credentials(root_certificates=self.ca.cert_pem)
                channel = grpc.secure_channel(target, creds)
            else:
                channel = grpc.insecure_channel(target)
            with channel:
                stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
                reply = stub.ListBots(
                    organiser_pb2.ListBotsRequest(), timeout=5,
                    metadata=(("authorization", f"Bearer {self.organiser_token}"),))
                return {b.name: int(b.instances) for b in reply.bots}

        return self.rig.call(ask)

    def wait_bots_connected(self, names: Iterable[str], timeout: float = 60.0,
                            on: Host | None = None) -> None:
        """Until every bot has an instance on some gateway (or on the gateway ``on``)."""
        import grpc

        wanted = set(names)
        deadline = time.monotonic() + timeout
        while True:
            connected: set[str] = set()
            for gw in [on] if on is not None else self.gateways:
                if gw.cut or gw.name not in self.gateway_procs:
                    continue
                with contextlib.suppress(grpc.RpcError):
                    connected |= {n for n, k in self.instances(gw).items() if k > 0}
            if wanted <= connected:
                return
            for name, proc in self.bot_procs.items():
                if name in wanted and not proc.alive():
                    raise RigError(f"bot {name} exited:\n{proc.log_tail()}")
            if time.monotonic() > deadline:
                raise RigError(f"bots {sorted(wanted - connected)} did not connect")
            time.sleep(0.3)

    def start(self, bots: Mapping[str, str] | None = None, *, pool: str = "prefork",
              visibility_timeout: float | None = None) -> None:
        """Data host, gateways, workers, then the bots (registered through a gateway)."""
        self.start_redis()
        self.start_postgres()
        for gw in self.gateways:
            self.start_gateway(gw)
        for w in self.workers:
            self.start_worker(w, pool=pool, visibility_timeout=visibility_timeout)
        if bots:
            self.register_bots(bots)
            for name, ref in bots.items():
                self.start_bot(name, ref)
            self.wait_bots_connected(bots)

    # --- tournaments ------------------------------------------------------------------

    def write_spec(self, spec: Mapping[str, Any], filename: str | None = None) -> str:
        """Put a spec file on the organiser's machine; its path there."""
        name = filename or f"{spec['name']}.yaml"
        self.ctl.put(name, yaml.safe_dump(dict(spec), sort_keys=False))
        return name

    def start_tournament(self, spec: Mapping[str, Any], *extra: str,
                         env: Mapping[str, str] | None = None) -> Proc:
        """``arena tournament run SPEC --executor celery`` on the organiser's machine."""
        path = self.write_spec(spec)
        full = {"ARENA_ORGANISER_TOKEN": self.organiser_token, **(env or {})}
        return self.ctl.spawn(f"tournament-{spec['name']}",
                              ["arena", "tournament", "run", path, "--executor", "celery",
                               "--broker", self.broker_url, *extra], full)

    def results(self, schema: str, tournament: str) -> list[Any]:
        """The stored rows of a tournament (read from the operator's console)."""
        from arena.tournament.store import ResultStore

        url = self.operator_db_url(schema)

        def read() -> list[Any]:
            with ResultStore(url, create=False, retry_s=0) as store:
                return list(store.iter_results(tournament, with_replay=True))

        return self.rig.call(read)

    def count(self, schema: str, tournament: str) -> int:
        from arena.tournament.store import ResultStore

        url = self.operator_db_url(schema)

        def read() -> int:
            try:
                with ResultStore(url, create=False, retry_s=0) as store:
                    return store.count(tournament)
            except Exception:
                return 0

        return self.rig.call(read)

    def redis(self, fn: Callable[[Any], Any], db: int = 1) -> Any:
        """Run ``fn(client)`` against the data host's Redis from the operator's console."""
        import redis

        kwargs: dict[str, Any] = {}
        if self.tls:
            assert self.ca is not None
            ca = self.rig.root / "net" / "ca.crt"
            ca.write_bytes(self.ca.cert_pem)
            kwargs = {"ssl": True, "ssl_ca_certs": str(ca), "ssl_check_hostname": False}

        def call() -> Any:
            client = redis.Redis(host=self.data.address, port=REDIS_PORT, db=db,
                                 password=self.redis_password, socket_timeout=10, **kwargs)
            try:
                return fn(client)
            finally:
                client.close()

        return self.rig.call(call)
