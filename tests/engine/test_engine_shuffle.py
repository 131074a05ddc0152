"""The seeded shuffle: fixed vectors, and an independent re-implementation of the
algorithm documented in ``arena.engine.shuffle`` compared on many seeds.

A bot author in another language reproduces deals from these vectors, so they are part of
the product's contract: a change here is a change of every recorded deal.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator

import pytest
from engine_support import cards, seat_order

from arena.engine import Game, Rules, SeedStream, deal_seed, derive_seed, shuffled
from arena.engine.cards import CARD_NAMES, DECK_24, DECK_32

CANON_24 = [r + s for s in "CSHD" for r in "9JQKTA"]
CANON_32 = [r + s for s in "CSHD" for r in "789JQKTA"]

#: (seed text, the shuffled 24-card deck).  Includes the empty seed and a non-ASCII seed
#: (UTF-8 bytes are hashed).
VECTORS_24 = [
    ("demo/deal/0", "9C 9S KC QS QH TC AD TD AC QC JH KH JC TS JS KD AS TH KS 9H 9D QD JD AH"),
    ("1/deal/0", "AC TC 9C 9D 9S KD QC TD QH JD QS TS JC QD KC TH AH KH JS AS 9H KS JH AD"),
    ("tournament/42/deal/7",
     "QS QC TC KH 9H KS AD 9D JH 9S TS AH TH QD QH JD AS TD JS KD JC 9C KC AC"),
    ("", "9H AS QH 9S AC TD QD QS JS JC JD TC 9C KD KC AH 9D TH JH TS AD KH KS QC"),
    ("arena", "KC JC KS TD JH AH AC 9D TC 9C 9H KH JS QH QS QD JD 9S TH QC AS AD TS KD"),
    ("тысяча/deal/0",
     "QC QH 9H JC AS TH 9C KS KH QD AH JD AD TD TC TS 9D QS 9S KC JH KD AC JS"),
]  # fmt: skip

VECTORS_32 = [
    ("1/deal/0", "TC KD 7C AD JS 9C AH TD QS QC TS KS KH 8S KC QD QH JH 7H 7D 7S TH 9H 8D "
                 "9S AS JD JC 8C 8H 9D AC"),
    ("german/deal/1", "7D JC QC KS AH 9S 8H AD TS TD TH 7H JD 8S JS JH TC KH KC 9H 9C QS 8C "
                      "KD 9D AS 8D QH AC 7C QD 7S"),
]


# --- an independent implementation, written from the documented algorithm only


def _words(seed: str) -> Iterator[int]:
    """Block i = SHA-256(UTF-8(seed) || uint64_be(i)), read as four big-endian words."""
    block = 0
    while True:
        digest = hashlib.sha256(seed.encode("utf-8") + struct.pack(">Q", block)).digest()
        yield from struct.unpack(">QQQQ", digest)
        block += 1


def _uniform(words: Iterator[int], m: int) -> int:
    limit = (2**64 // m) * m
    while True:
        x = next(words)
        if x < limit:
            return x % m


def reference_shuffle(items: list[str], seed: str) -> list[str]:
    out = list(items)
    words = _words(seed)
    for i in range(len(out) - 1, 0, -1):
        j = _uniform(words, i + 1)
        out[i], out[j] = out[j], out[i]
    return out


def names(order: list[int]) -> list[str]:
    return [CARD_NAMES[c] for c in order]


def test_canonical_order() -> None:
    assert names(list(DECK_24)) == CANON_24
    assert names(list(DECK_32)) == CANON_32


@pytest.mark.parametrize(("seed", "deck"), VECTORS_24)
def test_vectors_24(seed: str, deck: str) -> None:
    assert names(shuffled(DECK_24, seed)) == deck.split()
    assert reference_shuffle(CANON_24, seed) == deck.split()


@pytest.mark.parametrize(("seed", "deck"), VECTORS_32)
def test_vectors_32(seed: str, deck: str) -> None:
    assert names(shuffled(DECK_32, seed)) == deck.split()
    assert reference_shuffle(CANON_32, seed) == deck.split()


def test_stream_words_of_demo_seed() -> None:
    # The first words of "demo/deal/0" (block 0 is ede19079...).
    s = SeedStream("demo/deal/0")
    got = [s.next_u64() for _ in range(5)]
    assert got == [
        17141140507968712841, 11828745665501672347, 10441642498405368512,
        12861200954191153512, 10980379486362193192,
    ]
    w = _words("demo/deal/0")
    assert [next(w) for _ in range(5)] == got


def test_many_seeds_match_the_reference() -> None:
    for k in range(400):
        seed = deal_seed(derive_seed("match", k % 37, "x" * (k % 5)), k)
        assert names(shuffled(DECK_24, seed)) == reference_shuffle(CANON_24, seed), seed
        if k % 4 == 0:
            assert names(shuffled(DECK_32, seed)) == reference_shuffle(CANON_32, seed), seed


def test_rejection_sampling_matches_for_large_ranges() -> None:
    # With m just above 2**63 about half of the words are rejected, which a 24-card
    # shuffle practically never does: this exercises the redraw path of step 3.
    for m in (2**63 + 1, 3 * 2**62 + 7, 2**64 - 1, 5, 1):
        for seed in ("r1", "r2", "r3", "demo/deal/0"):
            stream = SeedStream(seed)
            words = _words(seed)
            assert [stream.uniform(m) for _ in range(40)] == [
                _uniform(words, m) for _ in range(40)
            ]
    with pytest.raises(ValueError):
        SeedStream("x").uniform(0)


def test_seed_texts() -> None:
    assert deal_seed("demo", 0) == "demo/deal/0"
    assert deal_seed("t1/7", 12) == "t1/7/deal/12"
    assert derive_seed("t1", 7) == "t1/7"
    assert derive_seed("a", "b", 3) == "a/b/3"


@pytest.mark.parametrize("preset", ["classic", "classic-4", "two-player", "german-1001"])
def test_game_deals_the_seeded_deck_in_blocks(preset: str) -> None:
    """Deal k of a match with seed S uses the shuffle of ``S/deal/k``: the seats from the
    left of the dealer get consecutive blocks, then the talon(s)."""
    rules = Rules.preset(preset)
    for dealer in range(rules.players):
        game = Game(rules, seed="demo", dealer=dealer)
        game.deal()
        deck = reference_shuffle(CANON_24 if rules.deck == 24 else CANON_32, "demo/deal/0")
        h = rules.hand_size
        for k, seat in enumerate(seat_order(rules, dealer)):
            assert sorted(game.observation(seat)["hand"]) == sorted(deck[k * h : (k + 1) * h])
        if rules.dealer_sits_out:
            assert game.observation(dealer)["hand"] == []
        assert [str(c) for c in game.records[-1].deck] == [
            str(c) for c in shuffled(DECK_24 if rules.deck == 24 else DECK_32, "demo/deal/0")
        ]


def test_docs_example_deal() -> None:
    # classic, dealer 0, seed "demo": seat 1 9C 9S KC QS QH TC AD, seat 2 TD AC QC JH KH
    # JC TS, seat 0 JS KD AS TH KS 9H 9D, talon QD JD AH.
    game = Game(Rules.preset("classic"), seed="demo")
    game.deal()
    assert sorted(game.observation(1)["hand"]) == sorted(cards("9C 9S KC QS QH TC AD"))
    assert sorted(game.observation(2)["hand"]) == sorted(cards("TD AC QC JH KH JC TS"))
    assert sorted(game.observation(0)["hand"]) == sorted(cards("JS KD AS TH KS 9H 9D"))
    assert [CARD_NAMES[c] for c in game.records[-1].deck[21:]] == ["QD", "JD", "AH"]


def test_redeals_use_the_next_deal_seed() -> None:
    # Deal indexes count redeals: after a redeal the next deal is shuffled from S/deal/1.
    rules = Rules.preset("estonian", blind_bid=False)
    game = Game(rules, seed="demo")
    game.deal()
    for _ in range(3):
        game.apply("pass")
    assert game.is_chance and game.records[-1].result == {"redeal": "everybody passed"}
    game.deal()
    assert game.records[-1].index == 1
    assert names(game.records[-1].deck) == reference_shuffle(CANON_24, "demo/deal/1")
    assert game.observation(0)["dealer"] == 0  # a redeal keeps the dealer
