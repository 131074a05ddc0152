"""Seeded, reproducible shuffles that any language can implement in a few lines.

Algorithm (documented with test vectors in ``docs/shuffle.md``):

1. Seeds are text.  The seed of deal ``k`` of a match with seed ``S`` is the text
   ``S + "/deal/" + k`` (``k`` in decimal).  Seeds of matches inside a tournament are
   derived the same way by :func:`derive_seed`.
2. A seed ``T`` gives a stream of unsigned 64-bit integers: block ``i`` (from 0) is
   ``SHA-256(UTF-8(T) || uint64_be(i))``, read as four big-endian uint64 words in order.
3. ``uniform(m)`` draws words until one is below ``floor(2**64 / m) * m`` and returns it
   modulo ``m`` (rejection sampling: no modulo bias).
4. Fisher-Yates: for ``i`` from ``n - 1`` down to ``1``: ``j = uniform(i + 1)``, swap
   positions ``i`` and ``j``.  The list starts in canonical order (suits C S H D, ranks
   from low to high; see :mod:`arena.engine.cards`).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence

_U64 = 1 << 64
_WORDS = struct.Struct(">4Q")


def derive_seed(*parts: object) -> str:
    """Join parts into a seed text: ``derive_seed("t1", 7) == "t1/7"``.

    Seeds stay readable text so a person can re-run any match or deal from a log line.
    """
    return "/".join(str(p) for p in parts)


def deal_seed(match_seed: str, deal_index: int) -> str:
    return f"{match_seed}/deal/{deal_index}"


class SeedStream:
    """The uint64 stream of a text seed (step 2 above)."""

    __slots__ = ("_block", "_buf", "_prefix")

    def __init__(self, seed: str) -> None:
        self._prefix = seed.encode("utf-8")
        self._block = 0
        self._buf: list[int] = []

    def next_u64(self) -> int:
        if not self._buf:
            digest = hashlib.sha256(self._prefix + self._block.to_bytes(8, "big")).digest()
            self._block += 1
            self._buf = list(reversed(_WORDS.unpack(digest)))
        return self._buf.pop()

    def uniform(self, m: int) -> int:
        if m <= 0:
            raise ValueError("uniform(m) needs m >= 1")
        limit = (_U64 // m) * m
        while True:
            x = self.next_u64()
            if x < limit:
                return x % m


def shuffled(items: Sequence[int], seed: str) -> list[int]:
    """Fisher-Yates shuffle of ``items`` driven by the seed's stream (step 4 above).

    The stream is inlined here (same words as :class:`SeedStream`) because dealing is on
    the hot path of every benchmark and tournament.
    """
    out = list(items)
    prefix = seed.encode("utf-8")
    sha = hashlib.sha256
    unpack = _WORDS.unpack
    words: list[int] = []
    block = 0
    for i in range(len(out) - 1, 0, -1):
        m = i + 1
        limit = (_U64 // m) * m
        while True:
            if not words:
                words = list(unpack(sha(prefix + block.to_bytes(8, "big")).digest()))
                words.reverse()
                block += 1
            x = words.pop()
            if x < limit:
                break
        j = x % m
        out[i], out[j] = out[j], out[i]
    return out
