"""The PEM files of a TLS connection (a CA, a certificate, a key), read one way by the SDK
and by every ``arena`` command, so that a file that cannot be read is named in one line."""

from __future__ import annotations

from pathlib import Path


def read_pem(path: str, what: str) -> bytes:
    """The bytes of the file at ``path`` (``~`` expanded); ValueError naming ``what`` and
    the path when it cannot be read or is empty."""
    try:
        data = Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    if not data.strip():
        raise ValueError(f"the {what} {path} is empty")
    return data
