"""docs/protocol.md states the gateway's limits; they must be the ones it enforces."""

from __future__ import annotations

from pathlib import Path

from arena.server import limits, matches
from arena.server.app import DEFAULT_MAX_MESSAGE_BYTES

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def _limits_table() -> dict[str, str]:
    text = DOC.read_text()
    section = text.split("\n## Limits\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and not set(cells[0]) <= {"-", " "} and cells[0] != "field or resource":
            rows[cells[0]] = cells[1]
    return rows


def test_the_limits_table_matches_the_code() -> None:
    rows = _limits_table()
    s = limits.StreamLimits()
    expected = {
        "`hello.name`": f"{limits.HELLO_NAME_MAX} characters",
        "`hello.version`": f"{limits.HELLO_VERSION_MAX} characters",
        "`hello.client`": f"{limits.HELLO_CLIENT_MAX} characters",
        "`decision.request_id`": f"{limits.REQUEST_ID_MAX} characters",
        "`decision.action`": f"{limits.ACTION_MAX} characters",
        "refused messages per stream": (
            f"{s.refusal_burst} at once, then {s.refusal_rate:g} a second"
        ),
        "unread messages per stream": f"{s.outbox_messages}",
        "a write to a bot not moving": f"{s.stall_s:g} s",
        "open streams per bot (with those before their hello)": f"{s.streams_per_bot}",
        "silence before the hello": f"{s.hello_timeout_s:g} s",
        "one message": f"{DEFAULT_MAX_MESSAGE_BYTES >> 20} MiB (`--max-message-bytes`)",
        "`RegisterBot.name`, `RevokeToken.name`, `RotateToken.name`": (
            f"{limits.HELLO_NAME_MAX} characters"
        ),
        "`StartMatch.seed`": f"{limits.SEED_MAX} characters",
        "`StartMatch.bots`": f"{limits.BOTS_MAX} bots of {limits.BOT_REF_MAX} characters each",
        "`StartMatch.preset`": f"{limits.PRESET_MAX} characters",
        "`StartMatch.options_json`": f"{limits.OPTIONS_JSON_MAX} characters",
    }
    for field, value in expected.items():
        assert rows.get(field) == value, (field, rows.get(field), value)
    match_id = rows["`StartMatch.match_id`, `WatchMatch.match_id`"]
    assert match_id.startswith(f"{limits.MATCH_ID_MAX} characters")


def test_the_prose_matches_the_code() -> None:
    text = " ".join(DOC.read_text().split())
    assert f"at most the first {limits.QUOTE_MAX} characters" in text
    assert f"at most {matches.LOG_MAX_BYTES >> 20} MiB of them per match" in text
    assert f"for the {matches.KEEP_LOGS} most recently finished matches" in text
    assert f"Of the {matches.KEEP_FINISHED:,} most recently finished matches" in text
    s = limits.StreamLimits()
    assert f"{round(1 / s.token_recheck_s)} times a second" in text.replace("four", "4")
