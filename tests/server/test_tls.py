"""TLS on the gateway's gRPC: a gateway process with a certificate from a CA made for the
test, the organiser's command, SDK bots and a match, all over TLS; clients that do not
trust the CA, or speak plain TCP, are refused; with ``--tls-client-ca`` only clients with a
certificate of that CA get in."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from thousand_bot import TlsSettings
from thousand_bot.proto.thousand.v1 import organiser_pb2, organiser_pb2_grpc

from arena.rigs.processes import BotProcess, GatewayProcess, free_port, stop_all
from arena.rigs.tls import CertificateAuthority

ORGANISER = "org-tls"
GREEDY = "arena.server.builtin_remote:Greedy"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a server certificate for localhost, a client certificate, and a stranger CA."""
    root = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority()
    (root / "ca.crt").write_bytes(ca.cert_pem)
    server = ca.issue("gateway", ["localhost", "127.0.0.1"])
    (root / "server.crt").write_bytes(server.cert)
    (root / "server.key").write_bytes(server.key)
    client = ca.issue("organiser", ["organiser"], client=True)
    (root / "client.crt").write_bytes(client.cert)
    (root / "client.key").write_bytes(client.key)
    (root / "other-ca.crt").write_bytes(CertificateAuthority("another CA").cert_pem)
    return root


def _gateway(tmp: Path, pki: Path, *extra: str) -> GatewayProcess:
    return GatewayProcess.start(
        db_path=tmp / "registry.sqlite3", log_path=tmp / "gateway.log",
        organiser_token=ORGANISER,
        extra=["--tls-cert", str(pki / "server.crt"), "--tls-key", str(pki / "server.key"),
               *extra],
    )


@pytest.fixture
def gateway(tmp_path: Path, pki: Path) -> Iterator[GatewayProcess]:
    gw = _gateway(tmp_path, pki)
    try:
        yield gw
    finally:
        gw.stop()


def arena(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args], capture_output=True, text=True, timeout=60,
        env=dict(os.environ, ARENA_ORGANISER_TOKEN=ORGANISER, **env),
    )


def list_bots(address: str, creds: grpc.ChannelCredentials | None) -> list[str]:
    channel = (grpc.secure_channel(address, creds) if creds is not None
               else grpc.insecure_channel(address))
    with channel:
        stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
        reply = stub.ListBots(organiser_pb2.ListBotsRequest(), timeout=5,
                              metadata=(("authorization", f"Bearer {ORGANISER}"),))
        return [b.name for b in reply.bots]


def test_bots_and_organisers_play_over_tls(gateway: GatewayProcess, pki: Path,
                                           tmp_path: Path) -> None:
    address = f"localhost:{gateway.port}"
    assert "(TLS)" in gateway.log_text()
    reg = arena("bot", "--gateway", address, "--tls-ca", str(pki / "ca.crt"), "register", "g")
    assert reg.returncode == 0, reg.stderr
    token = reg.stdout.strip().splitlines()[-1]
    bot = BotProcess.start(name="g", bot_ref=GREEDY, server=address, token=token,
                           log_path=tmp_path / "bot.log",
                           env={"THOUSAND_BOT_TLS_CA": str(pki / "ca.crt")})
    try:
        gateway.host = "localhost"
        gateway.credentials = TlsSettings.from_files(str(pki / "ca.crt")).credentials()
        gateway.wait_instances(["g"], bots=[bot])
        # A match over TLS, started and followed with the CA from the environment.
        match = arena("match", "--gateway", address, "--seed", "3", "--public-seed",
                      "--max-deals", "2", "--quiet", "remote:g", "greedy", "random",
                      ARENA_TLS_CA=str(pki / "ca.crt"))
        assert match.returncode == 0, match.stderr + match.stdout
    finally:
        stop_all([bot])
    # Plain TCP, or a client that trusts another CA, gets nowhere.
    with pytest.raises(grpc.RpcError) as plain:
        list_bots(address, None)
    assert plain.value.code() == grpc.StatusCode.UNAVAILABLE
    stranger = grpc.ssl_channel_credentials((pki / "other-ca.crt").read_bytes())
    with pytest.raises(grpc.RpcError) as untrusted:
        list_bots(address, stranger)
    assert untrusted.value.code() == grpc.StatusCode.UNAVAILABLE
    refused = arena("bot", "--gateway", address, "--tls-ca", str(pki / "other-ca.crt"), "list")
    assert refused.returncode == 3 and "Traceback" not in refused.stderr


def test_a_gateway_that_wants_client_certificates(tmp_path: Path, pki: Path) -> None:
    gw = _gateway(tmp_path, pki, "--tls-client-ca", str(pki / "ca.crt"))
    try:
        address = f"localhost:{gw.port}"
        ca = ["--tls-ca", str(pki / "ca.crt")]
        without = arena("bot", "--gateway", address, *ca, "list")
        assert without.returncode == 3, without.stderr
        with_cert = arena("bot", "--gateway", address, *ca, "--tls-cert",
                          str(pki / "client.crt"), "--tls-key", str(pki / "client.key"), "list")
        assert with_cert.returncode == 0, with_cert.stderr
        # The client's certificate from the environment, as a container would give it.
        from_env = arena("bot", "--gateway", address, "list",
                         ARENA_TLS_CA=str(pki / "ca.crt"),
                         ARENA_TLS_CLIENT_CERT=str(pki / "client.crt"),
                         ARENA_TLS_CLIENT_KEY=str(pki / "client.key"))
        assert from_env.returncode == 0, from_env.stderr
    finally:
        gw.stop()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "--port", "0", "--tls-cert", "nowhere.crt", "--tls-key", "nowhere.key"],
         "arena serve: cannot read the TLS key nowhere.key"),
        (["serve", "--port", "0", "--tls-cert", "x.crt"],
         "arena serve: --tls-cert and --tls-key go together"),
        (["bot", "--tls-ca", "nowhere.crt", "list"],
         "arena bot: cannot read the CA certificate nowhere.crt"),
        (["watch", "m1", "--tls-ca", "nowhere.crt"],
         "arena watch: cannot read the CA certificate nowhere.crt"),
    ],
)
def test_tls_mistakes_are_one_line(argv: list[str], message: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "arena.cli", *argv, "--db" if argv[0] == "serve"
                           else "--token", str(tmp_path / "r.sqlite3") if argv[0] == "serve"
                           else "t"], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(message), done.stderr


def test_the_sdk_says_which_tls_file_it_cannot_read(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "thousand_bot.cli", "run", GREEDY, "--token", "t",
         "--tls-ca", "nowhere.crt"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == "thousand-bot: cannot read the CA certificate nowhere.crt: " \
                                  "No such file or directory"


def _post(url: str, fields: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(fields).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _web(tmp: Path, name: str, db: str, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    """``arena web`` on a free port; its process and its address once it answers."""
    port = free_port()
    log = (tmp / f"{name}.log").open("ab")
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "web", "--db", db, "--port",
                             str(port), *args], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, (tmp / f"{name}.log").read_text()
        with contextlib.suppress(OSError), urllib.request.urlopen(url + "/healthz", timeout=2):
            return proc, url
        assert time.monotonic() < deadline, "arena web did not answer"
        time.sleep(0.2)


def test_arena_web_reaches_a_gateway_over_tls(tmp_path: Path, pki: Path) -> None:
    """The pages of a hosted bot ask its gateway for the owner's logs: with the gateway's
    CA (``--tls-ca``) they get them over TLS; without, the page says the gateway does not
    answer, and a CA file that cannot be read is one line at the start."""
    db = f"sqlite:///{tmp_path / 'results.sqlite3'}"
    gw = _gateway(tmp_path, pki, "--store", db)
    webs: list[subprocess.Popen[bytes]] = []
    try:
        address = f"localhost:{gw.port}"
        reg = arena("bot", "--gateway", address, "--tls-ca", str(pki / "ca.crt"), "register",
                    "alice")
        assert reg.returncode == 0, reg.stderr
        token = reg.stdout.strip().splitlines()[-1]
        trusting, url = _web(tmp_path, "web-tls", db, "--gateway", address, "--tls-ca",
                             str(pki / "ca.crt"))
        webs.append(trusting)
        status, page = _post(f"{url}/hosted/alice/logs", {"token": token})
        assert status == 200 and "Logs of alice" in page, page[-2000:]
        status, page = _post(f"{url}/hosted/alice/logs", {"token": "not-alice"})
        assert status == 403 and "not the token of alice" in page
        plain, url = _web(tmp_path, "web-plain", db, "--gateway", address)
        webs.append(plain)
        status, page = _post(f"{url}/hosted/alice/logs", {"token": token})
        assert status == 503 and "does not answer" in page
    finally:
        for proc in webs:
            proc.terminate()
            proc.wait(15)
        gw.stop()
    done = subprocess.run([sys.executable, "-m", "arena.cli", "web", "--db", db, "--gateway",
                           address, "--tls-ca", "nowhere.crt"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == ("arena web: cannot read the CA certificate nowhere.crt: "
                                   "No such file or directory")
