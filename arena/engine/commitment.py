"""Secret deal seeds, their commitments and the keyed derivation of match seeds.

A seat that can guess a match's seed can run the documented shuffle and know every hand,
so whenever a bot the organiser does not control plays, the deals come from a secret: 32
bytes from the operating system's CSPRNG (:func:`secrets.token_bytes`), written as 64
lowercase hex digits.  Before the first card is dealt the arena publishes a commitment to
the secret (a domain-separated SHA-256, below); after the match (or the whole tournament)
it reveals the secret, and anyone can check that the reveal matches the commitment and
that every deal follows from it.  Without the commitment the organiser could pick deals
after the fact; with it, it cannot.

The encodings (documented with test vectors in ``docs/shuffle.md``; any language can
check them with SHA-256 and HMAC-SHA256):

* seed commitment of a match::

      SHA-256( "thousand-arena/v1/seed" 0x00 UTF-8(match_id) 0x00 UTF-8(seed) )

  The match id is inside so that two games sharing one seed (a duplicate set) have
  different commitments: a seat cannot tell from them which games share deals.
* commitment to a tournament secret (the 32 bytes, not their hex)::

      SHA-256( "thousand-arena/v1/tournament" 0x00 UTF-8(name) 0x00 secret )

* text derived from a tournament secret for one purpose (a match seed, a match id, a
  pairing tie-break); ``key`` is the purpose, e.g. ``set/3``::

      lowercase hex of HMAC-SHA256( key = secret, message = UTF-8(key) )

  HMAC is a pseudo-random function: revealing one derived value (a match seed) tells
  nothing about another, nor about the secret.

A commitment is only published for a secret seed: a commitment to a guessable seed would
hand every seat a way to test its guesses.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from typing import Any

SCHEME = "thousand-arena/v1"
SECRET_BYTES = 32
_SEED_TAG = b"thousand-arena/v1/seed"
_TOURNAMENT_TAG = b"thousand-arena/v1/tournament"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def new_secret() -> str:
    """A fresh secret: 32 bytes from the OS CSPRNG as 64 lowercase hex digits."""
    return secrets.token_bytes(SECRET_BYTES).hex()


def is_hex64(text: Any) -> bool:
    """Whether ``text`` is 64 lowercase hex digits (a secret, a commitment)."""
    return isinstance(text, str) and _HEX64.match(text) is not None


def _secret_bytes(secret: str) -> bytes:
    if not is_hex64(secret):
        raise ValueError("a deal secret is 64 lowercase hex digits")
    return bytes.fromhex(secret)


def seed_commitment(match_id: str, seed: str) -> str:
    """The commitment a seat sees at ``match_start``, to the seed of its match."""
    data = _SEED_TAG + b"\x00" + match_id.encode("utf-8") + b"\x00" + seed.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def tournament_commitment(name: str, secret: str) -> str:
    """The commitment a tournament publishes when it starts, to its secret."""
    data = _TOURNAMENT_TAG + b"\x00" + name.encode("utf-8") + b"\x00" + _secret_bytes(secret)
    return hashlib.sha256(data).hexdigest()


def derive(secret: str, key: str) -> str:
    """Hex of HMAC-SHA256 under the secret: one match seed, id or tie-break per ``key``."""
    return hmac.new(_secret_bytes(secret), key.encode("utf-8"), hashlib.sha256).hexdigest()


# ---------------------------------------------------------------------------------------
# What a match carries (``MatchSpec.commitment``) and where each part goes.
#
# The dictionary holds ``seed_commitment``; a tournament match adds ``tournament``,
# ``tournament_commitment`` and ``key`` (the derivation key of its seed); ``reveal`` says
# whether the match reveals its seed in ``match_end`` (a match with a secret of its own;
# a tournament match does not: the other games of its duplicate set may still be ahead).


def for_match(match_id: str, seed: str) -> dict[str, Any]:
    """The commitment of a match whose secret is its own seed (revealed when it ends)."""
    return {"seed_commitment": seed_commitment(match_id, seed), "reveal": True}


def for_tournament_match(
    match_id: str, seed: str, *, tournament: str, commitment: str, key: str
) -> dict[str, Any]:
    """The commitment of a match whose seed is derived from a tournament's secret."""
    return {
        "seed_commitment": seed_commitment(match_id, seed),
        "tournament": tournament,
        "tournament_commitment": commitment,
        "key": key,
        "reveal": False,
    }


def start_fields(commitment: Mapping[str, Any] | None) -> dict[str, Any]:
    """What ``match_start`` shows every seat: commitments only, never the key or a seed."""
    if not commitment:
        return {}
    out = {"commitment": commitment["seed_commitment"]}
    if commitment.get("tournament_commitment"):
        out["tournament_commitment"] = commitment["tournament_commitment"]
    return out


def end_fields(commitment: Mapping[str, Any] | None, seed: str) -> dict[str, Any]:
    """What ``match_end`` adds: the seed itself, for a match that reveals at its end."""
    if commitment and commitment.get("reveal"):
        return {"seed_reveal": seed}
    return {}


def replay_block(commitment: Mapping[str, Any] | None) -> dict[str, Any]:
    """The replay's ``commitment`` object (see ``docs/replay.md``)."""
    if not commitment:
        return {}
    block: dict[str, Any] = {"scheme": SCHEME, "seed_commitment": commitment["seed_commitment"]}
    for key in ("tournament", "tournament_commitment", "key"):
        if commitment.get(key):
            block[key] = commitment[key]
    return {"commitment": block}
