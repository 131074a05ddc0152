"""TLS for the gateway's gRPC: the server's certificate, and what its clients trust.

Between machines the gateway's traffic (bots' streams, organisers' calls) crosses networks
the organiser does not own, so ``arena serve`` takes a certificate and its key
(``--tls-cert``, ``--tls-key``) and, to accept only clients with a certificate of their own
signed by a given CA, ``--tls-client-ca``. Every ``arena`` command that talks to a gateway
takes ``--tls-ca FILE`` (the CA that signed the gateway's certificate; ``--tls`` alone trusts
the system's CAs) and, for a gateway that asks for one, ``--tls-cert`` and ``--tls-key``.
The environment gives the same settings (``ARENA_TLS_*``, the client's own certificate
as ``ARENA_TLS_CLIENT_CERT`` and ``ARENA_TLS_CLIENT_KEY``), so scripts and containers need
no options. The Python SDK takes the same options (``thousand-bot run --tls-ca``).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from thousand_bot.tlsfiles import read_pem

if TYPE_CHECKING:  # gRPC is imported when a channel or a server is made, not with the options
    import grpc

CERT_ENV = "ARENA_TLS_CERT"
KEY_ENV = "ARENA_TLS_KEY"
CLIENT_CA_ENV = "ARENA_TLS_CLIENT_CA"
CA_ENV = "ARENA_TLS_CA"
CLIENT_CERT_ENV = "ARENA_TLS_CLIENT_CERT"
CLIENT_KEY_ENV = "ARENA_TLS_CLIENT_KEY"
#: Set to 1: use TLS with the system's CAs (no --tls-ca needed for a public certificate).
TLS_ENV = "ARENA_TLS"


class TlsConfigError(ValueError):
    """A TLS option names a file that cannot be read, or is incomplete."""


def _read(path: str, what: str) -> bytes:
    try:
        return read_pem(path, what)
    except ValueError as exc:
        raise TlsConfigError(str(exc)) from None


@dataclass(frozen=True)
class ServerTls:
    """The gateway's certificate and key, and the CA its clients' certificates must have."""

    cert: str
    key: str
    client_ca: str | None = None

    def credentials(self) -> grpc.ServerCredentials:
        import grpc

        pair = (_read(self.key, "TLS key"), _read(self.cert, "TLS certificate"))
        ca = _read(self.client_ca, "client CA") if self.client_ca else None
        return grpc.ssl_server_credentials(
            [pair], root_certificates=ca, require_client_auth=ca is not None
        )


def server_tls(cert: str | None, key: str | None, client_ca: str | None) -> ServerTls | None:
    """The server's TLS settings from the options (None: plain TCP); a clear error when
    only one of certificate and key is given."""
    if not cert and not key:
        if client_ca:
            raise TlsConfigError("--tls-client-ca needs --tls-cert and --tls-key")
        return None
    if not cert or not key:
        raise TlsConfigError("--tls-cert and --tls-key go together")
    tls = ServerTls(cert, key, client_ca or None)
    tls.credentials()  # every file readable now, not at the first connection
    return tls


def add_server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tls-cert", default=os.environ.get(CERT_ENV) or None, metavar="FILE",
                        help=f"serve TLS with this certificate (PEM; env {CERT_ENV})")
    parser.add_argument("--tls-key", default=os.environ.get(KEY_ENV) or None, metavar="FILE",
                        help=f"the certificate's private key (PEM; env {KEY_ENV})")
    parser.add_argument("--tls-client-ca", default=os.environ.get(CLIENT_CA_ENV) or None,
                        metavar="FILE",
                        help="accept only clients with a certificate signed by this CA "
                             f"(env {CLIENT_CA_ENV})")


@dataclass(frozen=True)
class ClientTls:
    """What a client of the gateway trusts, and its own certificate if it has one."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        import grpc

        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca, "CA certificate") if self.ca else None,
            private_key=_read(self.key, "TLS key") if self.key else None,
            certificate_chain=_read(self.cert, "TLS certificate") if self.cert else None,
        )


def add_client_options(parser: argparse.ArgumentParser, *, defaults: bool = True) -> None:
    """``--tls``, ``--tls-ca``, ``--tls-cert`` and ``--tls-key`` (``defaults=False``: for a
    subcommand's copy of options the main parser also takes, which must not overwrite
    what was given before the subcommand)."""

    def default(env: str) -> str | None:
        if not defaults:
            return argparse.SUPPRESS
        return os.environ.get(env) or None

    tls_default: bool | str = (
        os.environ.get(TLS_ENV, "") not in ("", "0") if defaults else argparse.SUPPRESS
    )
    parser.add_argument("--tls", action="store_true", default=tls_default,
                        help=f"connect with TLS, trusting the system's CAs (env {TLS_ENV}=1)")
    parser.add_argument("--tls-ca", metavar="FILE", default=default(CA_ENV),
                        help=f"connect with TLS, trusting this CA (PEM; env {CA_ENV})")
    parser.add_argument("--tls-cert", metavar="FILE", default=default(CLIENT_CERT_ENV),
                        help="this client's certificate, for a gateway that asks for one "
                             f"(env {CLIENT_CERT_ENV})")
    parser.add_argument("--tls-key", metavar="FILE", default=default(CLIENT_KEY_ENV),
                        help=f"the client certificate's key (env {CLIENT_KEY_ENV})")


def client_tls(args: argparse.Namespace) -> ClientTls | None:
    """The client's TLS settings from parsed options (None: plain TCP)."""
    ca = getattr(args, "tls_ca", None)
    cert = getattr(args, "tls_cert", None)
    key = getattr(args, "tls_key", None)
    if bool(cert) != bool(key):
        raise TlsConfigError("--tls-cert and --tls-key go together")
    if not (getattr(args, "tls", False) or ca or cert):
        return None
    tls = ClientTls(ca, cert, key)
    tls.credentials()
    return tls


def channel(target: str, tls: ClientTls | None, options: list[tuple[str, int]] | None = None,
            ) -> grpc.Channel:
    """A blocking channel to the gateway, with TLS when ``tls`` is given."""
    import grpc

    if tls is None:
        return grpc.insecure_channel(target, options=options)
    return grpc.secure_channel(target, tls.credentials(), options=options)


def aio_channel(target: str, tls: ClientTls | None,
                options: list[tuple[str, int]] | None = None) -> grpc.aio.Channel:
    """An asyncio channel to the gateway, with TLS when ``tls`` is given."""
    import grpc

    if tls is None:
        return grpc.aio.insecure_channel(target, options=options)
    return grpc.aio.secure_channel(target, tls.credentials(), options=options)
