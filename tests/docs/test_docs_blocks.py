"""Every fenced block of the manuals is run by a test, or is listed here with the reason
it is not a command (an output sample, a format, a formula) or cannot run here.

A test "runs" a block when it takes it with ``docblocks.block(path, needle)``; this test
finds those calls in the test sources, so a block nobody runs, or a needle that no longer
finds its block, fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

from docblocks import REPO, all_blocks, block

#: (file, text in the block) -> why no test runs it.
ILLUSTRATIONS: dict[tuple[str, str], str] = {
    ("docs/protocol.md", "authorization: Bearer <token>"):
        "the metadata format of a call, not a command",
    ("docs/protocol.md", "bot                                         gateway"):
        "a sequence diagram",
    ("docs/protocol.md", "grpcurl -plaintext localhost:50051 list"):
        "needs grpcurl, which neither Debian nor PyPI packages; the reflection and the "
        "RegisterBot call it makes are tested in tests/server/test_transport.py and "
        "test_admin_cli.py",
    ("docs/ratings.md", "error = (score_to_elo(mu + z se)"): "formulas",
    ("docs/ratings.md", "LLR = N * sum_i phat_i"): "a formula",
    ("docs/ratings.md", "adjusted_ab = y_ab - L_ab"): "the luck-adjusted estimator's formulas",
    ("docs/bots.md", "--sets 100 --pairs greedy --seed dev"):
        "figures measured on the development machine; the command's output is checked by "
        "test_the_luck_model_commands_run_as_printed",
    ("docs/bots.md", "--sets 48 --pairs search --seed dev"):
        "figures measured on the development machine (6 minutes of play on 2 cores)",
    ("docs/replay.md", '"match_id": "m-3f2a9c01d4e5b677"'):
        "a fragment of a replay with elided values; the commitment fields are checked "
        "by tests/security/test_secret_deals_tournament.py",
    ("docs/observability.md", "docker compose up -d --build"):
        "needs Docker Compose, which the test machines lack; the compose file, its "
        "secrets and services are checked by tests/tournament/test_tournament_compose.py "
        "and tests/observability/test_obs_deploy.py",
    ("docs/observability.md", "docker compose --profile demo rm -sf tournament"):
        "needs Docker Compose (see above)",
    ("docs/deploy.md", "docker compose --profile data up -d data-redis data-postgres"):
        "needs Docker Compose (see above); the role services, their profiles and TLS are "
        "checked by tests/tournament/test_tournament_compose.py, and the same roles run "
        "without Compose by tests/hosts/test_hosts_deploy_doc.py",
    ("docs/tournaments.md", "examples/celery-remote.yaml --executor celery"):
        "needs a remote bot connected to a routing gateway for its ten sets and a "
        "PostgreSQL database named arena; tests/tournament/test_tournament_remote.py "
        "plays remote bots from Celery workers",
    ("docs/stdio.md", "bot                                                    arena"):
        "a sequence diagram",
    ("docs/demo.md", "arena tournament run examples/main.yaml --broker redis://HOST"):
        "what arena demo does by hand, against the demo's gateway, submitted bots and "
        "workers; test_the_demo_as_its_manual_prints_it runs the demo",
}


def _needles() -> set[tuple[str, str]]:
    """Every ``block("path", "needle")`` call with literal arguments in the tests."""
    found: set[tuple[str, str]] = set()
    for path in (REPO / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call)
                    and getattr(node.func, "id", None) in ("block", "doc_block")
                    and len(node.args) == 2
                    and all(isinstance(a, ast.Constant) and isinstance(a.value, str)
                            for a in node.args)):
                found.add((node.args[0].value, node.args[1].value))  # type: ignore[union-attr]
    return found


def test_every_block_of_the_manuals_is_run_or_explained() -> None:
    claimed: dict[tuple[str, int], list[str]] = {}
    for path, needle in _needles() | set(ILLUSTRATIONS):
        b = block(path, needle)  # a needle that finds no block, or two, fails here
        claimed.setdefault((b.path, b.line), []).append(needle)
    missing = [f"{b.path}:{b.line}: {b.text.splitlines()[0] if b.text.strip() else ''}"
               for b in all_blocks() if (b.path, b.line) not in claimed]
    assert not missing, "blocks no test runs:\n" + "\n".join(missing)


def test_illustrations_are_not_commands_a_test_runs() -> None:
    ran = {(block(p, n).path, block(p, n).line) for p, n in _needles()}
    both = [k for k in ILLUSTRATIONS if (block(*k).path, block(*k).line) in ran]
    assert not both, f"listed as illustrations but run by a test: {both}"


def test_the_manuals_are_all_found() -> None:
    from docblocks import doc_files

    names = {str(p.relative_to(REPO)) for p in doc_files()}
    assert {"README.md", "docs/cli.md", "sdk/python/README.md",
            "sdk/javascript/README.md"} <= names
    assert all(Path(REPO / n).exists() for n in names)
