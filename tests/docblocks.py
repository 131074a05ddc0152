"""The fenced blocks of the manuals, found by the text they contain.

Every test that runs a block of README.md, docs/*.md or an SDK README takes it from the
file with :func:`block` (never from a copy), and ``tests/docs/test_docs_blocks.py`` checks
that every block is taken by some test or listed there as an illustration with its reason.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^```([\w+-]*)\s*$")


def doc_files() -> list[Path]:
    """Every manual whose blocks are commands a reader may run."""
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    files += sorted((REPO / "sdk").glob("*/README.md"))
    files += sorted((REPO / "sdk" / "starters").glob("*/README.md"))
    return files


@dataclass(frozen=True)
class Block:
    path: str  # relative to the repository, e.g. "docs/web.md"
    line: int  # the line of the opening fence, from 1
    lang: str
    text: str

    def commands(self) -> list[str]:
        """The block's shell commands: continuation lines joined, comments and ``$ `` prompts
        dropped, output lines (after a ``$`` prompt) left out."""
        lines = self.text.splitlines()
        prompted = any(ln.startswith("$ ") for ln in lines)
        out: list[str] = []
        pending = ""
        for raw in lines:
            if prompted and not raw.startswith("$ ") and not pending:
                continue  # output shown after a prompt
            line = raw[2:] if raw.startswith("$ ") else raw
            line = pending + line.strip() if pending else line.strip()
            if line.endswith("\\"):
                pending = line[:-1].rstrip() + " "
                continue
            pending = ""
            code = _strip_comment(line)
            if code:
                out.append(code)
        return out

    def output(self) -> str:
        """What a block with a ``$`` prompt shows after its command."""
        lines = self.text.splitlines()
        return "\n".join(ln for ln in lines if not ln.startswith("$ "))


def _strip_comment(line: str) -> str:
    """The command without its trailing ``# comment`` (a ``#`` inside quotes stays)."""
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=False)
        lexer.commenters = "#"
        lexer.whitespace_split = True
        lexer.quotes = "'\""
        list(lexer)  # only to check that it parses
    except ValueError:
        return line.strip()
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.strip()


def blocks(path: Path) -> list[Block]:
    rel = str(path.relative_to(REPO))
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        found.append(Block(rel, start + 1, m.group(1), "\n".join(body) + "\n"))
        i += 1
    return found


def all_blocks() -> list[Block]:
    return [b for f in doc_files() for b in blocks(f)]


def block(path: str, needle: str) -> Block:
    """The one block of ``path`` (relative to the repository) whose text holds ``needle``."""
    matches = [b for b in blocks(REPO / path) if needle in b.text]
    if len(matches) != 1:
        where = ", ".join(f"line {b.line}" for b in matches) or "none"
        raise LookupError(f"{path}: {len(matches)} blocks hold {needle!r} ({where})")
    return matches[0]
