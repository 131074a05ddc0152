"""The manuals say what the code does: generated tables and test vectors stay current."""

from __future__ import annotations

import re
from pathlib import Path

from docblocks import block

from arena.engine import cards_str, shuffled
from arena.engine.cards import DECK_24, DECK_32, mask_of
from arena.engine.rules_doc import options_table

ROOT = Path(__file__).resolve().parents[2]


def test_rules_doc_table_is_generated_from_the_engine() -> None:
    text = (ROOT / "docs" / "rules.md").read_text()
    assert options_table() in text, "docs/rules.md is stale: regenerate with `arena rules doc`"


def test_shuffle_doc_vectors_match_the_engine() -> None:
    text = (ROOT / "docs" / "shuffle.md").read_text()
    rows = re.findall(r"\| `([^`]+)` \| `([A-Z0-9 ]+)` \|", text)
    assert len(rows) >= 3
    for seed, deck in rows:
        got = " ".join(cards_str(1 << c)[0] for c in shuffled(DECK_24, seed))
        assert got == deck, seed
    m = re.search(r"32-card deck, seed `([^`]+)`:\n`([A-Z0-9 ]+)`", text)
    assert m is not None
    got = " ".join(cards_str(1 << c)[0] for c in shuffled(DECK_32, m.group(1)))
    assert got == m.group(2)
    assert cards_str(mask_of(DECK_24))[:2] == ["9C", "JC"]


def test_readme_first_screen_gives_two_commands() -> None:
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:20])
    screen = block("README.md", "scripts/demo.sh    # set up, then the main job")
    assert screen.text in first_screen
    commands = [line.split()[0] for line in screen.commands()]
    assert commands == ["scripts/demo.sh", "scripts/test.sh"]
    for c in commands:
        assert (ROOT / c).exists()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
