"""docs/shuffle.md, section 6: the vectors and the snippet are what the code computes."""

from __future__ import annotations

import re
from pathlib import Path

import security_support as own
from docblocks import block

from arena.engine import cards_str, shuffled
from arena.engine import commitment as cm
from arena.engine.cards import DECK_24

DOC = (Path(__file__).resolve().parents[2] / "docs" / "shuffle.md").read_text()
SECTION = DOC[DOC.index("## 6. Secret seeds"):]


def vector(label: str) -> str:
    found = re.search(r"^\| " + re.escape(label) + r" \| `([0-9a-f]+)` \|$", SECTION, re.M)
    assert found, label
    return found.group(1)


def test_the_documented_vectors_are_what_the_engine_and_a_rewrite_compute() -> None:
    secret = re.search(r"Secret `([0-9a-f]{64})`", SECTION)
    name = re.search(r"tournament\n`([^`]+)`", SECTION)
    assert secret and name
    s, n = secret.group(1), name.group(1)
    assert vector("tournament commitment") == cm.tournament_commitment(n, s)
    assert vector("tournament commitment") == own.tournament_commitment(n, s)
    for key in ("set/0", "set/1", "game/4"):
        assert vector(f"seed of `{key}`") == cm.derive(s, key) == own.derive(s, key)
    match_id = vector("id of match 0 (`match-id/0`, 32 digits)")
    assert match_id == cm.derive(s, "match-id/0")[:32]
    seed = cm.derive(s, "set/0")
    assert vector("seed commitment of match 0, seed of `set/0`") == cm.seed_commitment(
        match_id, seed
    ) == own.seed_commitment(match_id, seed)
    own_match = "m-0123456789abcdef"
    assert vector(f"seed commitment of match `{own_match}` whose seed is the secret itself") \
        == cm.seed_commitment(own_match, s)
    deal = re.search(r"Deal 0 of the `set/0` seed, `[^`]+`:\n`([A-Z0-9 ]+)`", SECTION)
    assert deal
    got = " ".join(cards_str(1 << c)[0] for c in shuffled(DECK_24, f"{seed}/deal/0"))
    assert got == deal.group(1) == " ".join(own.shuffle(own.DECK_24, f"{seed}/deal/0"))


def test_the_documented_python_snippet_runs() -> None:
    snippet = block("docs/shuffle.md", "import hashlib, hmac").text
    exec(compile(snippet, "docs/shuffle.md", "exec"), {})
