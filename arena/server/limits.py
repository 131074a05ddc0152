"""Every bound the gateway puts on what a bot or an organiser sends it.

Bots come from people the arena does not trust. Anything a bot controls (the size of each
field, how many messages it leaves unread, how many refused messages it sends, how many
streams it opens) has an explicit limit here, and going over it gets a clear refusal
instead of costing the gateway memory or the honest matches time. The table in
``docs/protocol.md`` lists the same numbers; a test checks that they agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from arena.match.types import ACTION_MAX as _ACTION_MAX

#: Longest ``hello.name`` (a bot name is at most 64 characters anyway).
HELLO_NAME_MAX = 64
#: Longest ``hello.version`` and ``hello.client``: shown to organisers and in logs.
HELLO_VERSION_MAX = 128
HELLO_CLIENT_MAX = 128
#: Longest ``decision.request_id``: the gateway's ids are far shorter, so a longer one can
#: only be unknown.
REQUEST_ID_MAX = 64
#: Longest ``decision.action``: the longest action in the notation is about 20 characters
#: (the referee's own bound, :data:`arena.match.types.ACTION_MAX`).
ACTION_MAX = _ACTION_MAX

#: Organiser requests.
SEED_MAX = 256
BOT_REF_MAX = 256
BOTS_MAX = 8
PRESET_MAX = 64
OPTIONS_JSON_MAX = 64 * 1024
MATCH_ID_MAX = 128
#: A match id chosen by the organiser ends up in logs, metric labels and file names.
MATCH_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]*$")

#: How much of an offending value an error reply or a log line quotes.
QUOTE_MAX = 40


@dataclass(frozen=True)
class StreamLimits:
    """The per-stream bounds of a bot's ``Play`` stream (the gateway's settings)."""

    #: Messages waiting to be written to one stream; a bot that lets this many pile up
    #: (it does not read) is cut off with RESOURCE_EXHAUSTED.
    outbox_messages: int = 4096
    #: A stream whose pending write has not moved for this long is cut off the same way.
    stall_s: float = 15.0
    #: Refused messages (unknown request ids, empty messages, a second hello): a burst of
    #: ``refusal_burst`` and then ``refusal_rate`` a second; more is a flood and cut off.
    refusal_burst: int = 256
    refusal_rate: float = 20.0
    #: Streams one bot may have open at once, counting those that have not said hello yet.
    streams_per_bot: int = 32
    #: How long a new stream may stay silent before its hello.
    hello_timeout_s: float = 30.0
    #: How often the tokens of open streams are checked again (a revoke or rotate done
    #: through another gateway sharing the registry ends its streams within this).
    token_recheck_s: float = 0.25


_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape(text: str) -> str:
    """``text`` with control characters (and backslashes) escaped, fit for one log line:
    a bot cannot forge a line or send terminal escapes to whoever reads the log."""
    if text.isprintable() and "\\" not in text:
        return text
    out: list[str] = []
    for ch in text:
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            out.append(
                f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
                else f"\\U{code:08x}"
            )
    return "".join(out)


def quote(text: str, limit: int = QUOTE_MAX) -> str:
    """A short, escaped, quoted prefix of ``text`` for an error message, saying how long
    the whole was when it is cut."""
    if len(text) <= limit:
        return "'" + escape(text) + "'"
    return f"'{escape(text[:limit])}...' ({len(text)} characters)"


def brief(message: str, limit: int = 500) -> str:
    """An error message fit for a status: at most about ``limit`` characters (a status
    travels in HTTP/2 trailers, which peers cap at a few KiB). Values a caller sent are
    quoted into messages with :func:`quote` or ``repr``, both escaped already."""
    return message if len(message) <= limit else message[:limit] + "..."


def too_long(field: str, value: str, limit: int) -> str | None:
    """The refusal for a field longer than ``limit`` characters, or None when it fits."""
    if len(value) <= limit:
        return None
    return f"{field} is {len(value)} characters long; at most {limit} are allowed"
