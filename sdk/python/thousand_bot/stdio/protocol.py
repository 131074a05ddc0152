"""The text protocol: a bot program on the arena's side of a pair of pipes.

A bot in any language plays by reading lines on its standard input and writing lines on
its standard output, with nothing but its language's standard library: no gRPC, no
protobuf, no JSON. This module is the protocol's one definition, shared by everything that
speaks it: ``thousand-bot run --stdio`` (a program on a gateway), the referee's seat for
``cmd:`` bots (``arena.stdio``), the benchmarks and the tests. ``docs/stdio.md`` describes
it for people, with the transcript of a real deal.

Version 1. Every line ends with ``\\n`` (a ``\\r`` before it is ignored).

The bot writes::

    hello 1 [name=NAME] [version=TEXT] [events=all|none] [max_matches=N] [client=TEXT]
    ACTION                  one line per request, in the order the requests came

The arena writes::

    welcome 1 BOT INSTANCE SERVER_VERSION
    request MATCH REQUEST N       then N lines "KEY VALUE": the clock, the observation, legal
    event MATCH SEQUENCE TYPE N   then N lines "KEY VALUE": the public event
    error REQUEST CODE REASON     a refused answer (REQUEST is "-" when there is none)
    bye REASON                    the session is over: nothing follows, exit

A value is text, a number, ``1``/``0`` for yes/no, ``-`` for nothing, or a list: items
separated by ``,``, the parts of an item by ``:`` (``trick 0:KH,1:XX``); an empty list is
a line holding only its key. Nested keys are joined with dots (``rules.preset classic``).
A character that would break this structure (``\\``, ``,``, a control character; in an
item's parts also ``:``, in a header's words a space) is written ``\\xHH``; the cards,
actions and phases of the game never need it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The protocol version this module speaks, and every version it accepts in a hello.
VERSION = 1
VERSIONS = (1,)

#: The longest line a bot may write, newline included: a longer one ends the session (as
#: a message over the gateway's 1 MiB limit ends a gRPC stream).
LINE_MAX = 1 << 20

#: What a missing value is written as.
NONE = "-"

#: Every key of a decision request's block, in this order: the clock, the seat's
#: observation (the rules engine's keys, in its order; see docs/protocol.md), the legal
#: actions. Keys a rule variant adds to the observation come after the known ones, sorted.
CLOCK_KEYS = ("deadline_ms", "time_bank_ms")
OBSERVATION_KEYS = (
    "seat", "players", "dealer", "deal", "phase", "to_act", "hand", "scores", "barrel",
    "bolts", "active", "auction", "bid", "declarer", "contract", "blind", "talon", "given",
    "received", "discarded", "shown_marriages", "trump", "marriages", "trick", "leader",
    "tricks_taken", "points_taken", "hand_sizes",
)  # fmt: skip
LEGAL_KEY = "legal"

#: How each observation key is read back: ``int``, ``int?`` (or ``-``), ``str``, ``str?``,
#: ``bool``, ``[int]``, ``[bool]``, ``[str]``, or a list of items of the parts given.
OBSERVATION_TYPES: dict[str, str | tuple[str, ...]] = {
    "seat": "int", "players": "int", "dealer": "int", "deal": "int", "phase": "str",
    "to_act": "int?", "hand": "[str]", "scores": "[int]", "barrel": "[bool]",
    "bolts": "[int]", "active": "[int]", "auction": ("int", "str"), "bid": "int?",
    "declarer": "int?", "contract": "int?", "blind": "bool", "talon": "[str]",
    "given": ("str", "int"), "received": "[str]", "discarded": "[str]",
    "shown_marriages": ("int", "str"), "trump": "str?", "marriages": ("int", "str", "int"),
    "trick": ("int", "str"), "leader": "int?", "tricks_taken": "[int]",
    "points_taken": "[int]", "hand_sizes": "[int]",
}  # fmt: skip

#: The ``error`` codes, as the gRPC protocol's ``ErrorCode`` names them (lower case).
ERROR_CODES = ("unknown_request", "malformed_action", "illegal_action", "protocol")

#: Hello keys and what each may hold.
HELLO_KEYS = ("name", "version", "events", "max_matches", "client")


class ProtocolError(ValueError):
    """A line that breaks the protocol; the message says what was expected."""


# ------------------------------------------------------------------------------ escaping

_IN_VALUE = re.compile(r"[\x00-\x1f\x7f\\,]")
_IN_PART = re.compile(r"[\x00-\x1f\x7f\\,:]")
_IN_TOKEN = re.compile(r"[\x00-\x20\x7f\\]")
_IN_TEXT = re.compile(r"[\x00-\x1f\x7f\\]")
_ESCAPED = re.compile(r"\\x([0-9a-fA-F]{2})")


def _hex(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def escape_value(text: str) -> str:
    """Text inside a value: ``,`` (between list items), ``\\`` and control characters as
    ``\\xHH``."""
    return text if _IN_VALUE.search(text) is None else _IN_VALUE.sub(_hex, text)


def escape_part(text: str) -> str:
    """Text as a part of a list item: ``:`` (between the parts) as well."""
    return text if _IN_PART.search(text) is None else _IN_PART.sub(_hex, text)


def escape_token(text: str) -> str:
    """A word of a header line (a match id, a request id, a name): spaces too. An empty
    word is written ``-``."""
    if not text:
        return NONE
    return text if _IN_TOKEN.search(text) is None else _IN_TOKEN.sub(_hex, text)


def escape_text(text: str) -> str:
    """Free text at the end of a line (a reason): only ``\\`` and control characters."""
    return text if _IN_TEXT.search(text) is None else _IN_TEXT.sub(_hex, text)


def unescape(text: str) -> str:
    """Undo any of the escapes above."""
    if "\\" not in text:
        return text
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


# ------------------------------------------------------------------------------ values

#: How many escaped texts each cache below keeps at the most.
_SCALARS_MAX = 4096


class _Escapes(dict[str, str]):
    """Escaped texts that recur in every request (cards, actions, phases), each escaped
    once: a text not yet here is escaped on lookup, and kept when short, up to a bound."""

    def __init__(self, escape: Callable[[str], str]) -> None:
        super().__init__()
        self.escape = escape

    def __missing__(self, text: str) -> str:
        escaped = self.escape(text)
        if len(text) <= 24 and len(self) < _SCALARS_MAX:
            self[text] = escaped
        return escaped


#: Scalars as values, and as the parts of a list item (``:`` escaped too).
_SCALARS = _Escapes(escape_value)
_PARTS = _Escapes(escape_part)


def _scalar(value: Any) -> str:
    if value is None:
        return NONE
    if value is True:
        return "1"
    if value is False:
        return "0"
    if type(value) is str:
        return _SCALARS[value]
    if type(value) is int:
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | tuple):  # deeper than an item's parts: flattened
        return ":".join(_part(v) for v in value)
    if isinstance(value, Mapping):
        return ":".join(f"{_part(k)}={_part(v)}" for k, v in value.items())
    return escape_value(str(value))


def _part(value: Any) -> str:
    """One part of a list item (``0:KH``): a scalar, ``:`` escaped too."""
    if type(value) is str:
        return _PARTS[value]
    if type(value) is int:
        return str(value)
    return _scalar(value)


def _item(item: Any) -> str:
    """One list item: a scalar, or parts joined with ``:``."""
    kind = type(item)
    if kind is str:
        return _SCALARS[item]
    if kind is list or kind is tuple:
        return ":".join([_part(p) for p in item])
    return _scalar(item)


def _list(value: Any) -> str:
    if not value:
        return ""
    # Scores, seats, counts: numbers alone (a bool is not an int by type).
    if type(value[0]) is int and all(type(v) is int for v in value):
        return ",".join(map(str, value))
    return ",".join([_item(item) for item in value])


def encode_value(value: Any) -> str:
    """A value as it stands after its key: a scalar, or a list (``,`` between items, ``:``
    between the parts of an item)."""
    kind = type(value)
    if kind is list or kind is tuple:
        return _list(value)
    if kind is str or kind is int or value is None or kind is bool:
        return _scalar(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return _list(list(value))  # a list of another kind (a protobuf repeated field)
    return _scalar(value)


def _line(key: str, value: Any) -> str:
    encoded = encode_value(value)
    return f"{key} {encoded}" if encoded else key


def _flatten(prefix: str, value: Any, out: list[str]) -> None:
    """``key value`` lines of one entry, a mapping spread over dotted keys, sorted."""
    if isinstance(value, Mapping):
        for key in sorted(value, key=str):
            _flatten(f"{prefix}.{escape_token(str(key))}" if prefix else escape_token(str(key)),
                     value[key], out)
        return
    out.append(_line(prefix, value))


def _block(header: str, lines: list[str]) -> str:
    if not lines:
        return f"{header} 0\n"
    return f"{header} {len(lines)}\n" + "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ encoding


#: ``"key "`` of each observation key, made once.
_KEY_PREFIX = {key: key + " " for key in (*OBSERVATION_KEYS, LEGAL_KEY)}


def request_lines(
    observation: Mapping[str, Any], legal: Sequence[str], deadline_ms: int, time_bank_ms: int
) -> list[str]:
    """The ``KEY VALUE`` lines of a decision request, in the protocol's order.

    Every decision of a program goes through here, so it avoids the general path where it
    can: a value of the usual type is written at once, and only the rest (a rule variant's
    key, a value of an unexpected type) takes :func:`encode_value`."""
    lines = [f"deadline_ms {max(0, int(deadline_ms))}", f"time_bank_ms {max(0, int(time_bank_ms))}"]
    append = lines.append
    prefix = _KEY_PREFIX
    for key in OBSERVATION_KEYS:
        if key not in observation:
            continue
        value = observation[key]
        kind = type(value)
        if kind is int:
            append(prefix[key] + str(value))
        elif kind is list or kind is tuple:
            encoded = _list(value)
            append(prefix[key] + encoded if encoded else key)
        else:
            append(_line(key, value))
    if len(observation) != len(OBSERVATION_KEYS) or any(
        k not in OBSERVATION_TYPES for k in observation
    ):
        for key in sorted((k for k in observation if k not in OBSERVATION_TYPES), key=str):
            _flatten(escape_token(str(key)), observation[key], lines)
    encoded = _list(legal if type(legal) is list or type(legal) is tuple else list(legal))
    append(prefix[LEGAL_KEY] + encoded if encoded else LEGAL_KEY)
    return lines


def encode_request(
    match_id: str,
    request_id: str,
    observation: Mapping[str, Any],
    legal: Sequence[str],
    deadline_ms: int,
    time_bank_ms: int,
) -> str:
    """A ``request`` message: the header and its block, every line ended."""
    return _block(
        f"request {escape_token(match_id)} {escape_token(request_id)}",
        request_lines(observation, legal, deadline_ms, time_bank_ms),
    )


#: Event keys carried by the header instead of the block.
_EVENT_HEADER_KEYS = frozenset({"type", "match_id", "sequence"})


def encode_event(match_id: str, sequence: int, event: Mapping[str, Any]) -> str:
    """An ``event`` message: the public event as the referee recorded it (every key but
    its type, match and sequence, which are in the header), keys sorted, nested ones
    dotted."""
    lines: list[str] = []
    for key in sorted((k for k in event if k not in _EVENT_HEADER_KEYS), key=str):
        _flatten(escape_token(str(key)), event[key], lines)
    kind = escape_token(str(event.get("type", "")))
    return _block(f"event {escape_token(match_id)} {int(sequence)} {kind}", lines)


def encode_error(request_id: str, code: str, reason: str) -> str:
    return f"error {escape_token(request_id)} {escape_token(code)} {escape_text(reason)}\n"


def encode_welcome(bot: str, instance: str, server_version: str) -> str:
    return (f"welcome {VERSION} {escape_token(bot)} {escape_token(instance)} "
            f"{escape_token(server_version)}\n")


def encode_bye(reason: str) -> str:
    return f"bye {escape_text(reason)}\n"


# ------------------------------------------------------------------------------ hello


@dataclass(frozen=True)
class Hello:
    """What a bot program says of itself on its first line."""

    version: int = VERSION
    #: The bot's name (empty: the name the arena knows it by).
    name: str = ""
    #: The program's own version, free text for the organiser.
    bot_version: str = ""
    #: Whether it wants the match events (``events=all``) or only requests (the default).
    events: bool = False
    #: Most matches it plays at once (0: no limit), as ``max_concurrent_matches``.
    max_matches: int = 0
    #: What wrote it, e.g. ``thousand-starter-c/1``.
    client: str = ""

    def line(self) -> str:
        """The hello line that says all this (without its newline)."""
        parts = [f"hello {self.version}"]
        if self.name:
            parts.append(f"name={escape_token(self.name)}")
        if self.bot_version:
            parts.append(f"version={escape_token(self.bot_version)}")
        parts.append("events=all" if self.events else "events=none")
        if self.max_matches:
            parts.append(f"max_matches={self.max_matches}")
        if self.client:
            parts.append(f"client={escape_token(self.client)}")
        return " ".join(parts)


def parse_hello(line: str) -> Hello:
    """The bot's first line; :class:`ProtocolError` says what is wrong with it."""
    words = line.split(" ")
    if words[0] != "hello":
        shown = line if len(line) <= 40 else line[:40] + "..."
        raise ProtocolError(
            f"the first line must be the hello, e.g. 'hello {VERSION} events=all'; "
            f"got {escape_text(shown)!r}"
        )
    if len(words) < 2 or not words[1].isdigit():
        raise ProtocolError(f"the hello must name the protocol version: 'hello {VERSION} ...'")
    version = int(words[1])
    if version not in VERSIONS:
        raise ProtocolError(
            f"protocol version {version} is not spoken here; this side speaks "
            f"{', '.join(str(v) for v in VERSIONS)}"
        )
    values: dict[str, str] = {}
    for word in words[2:]:
        if not word:
            continue
        key, sep, value = word.partition("=")
        if not sep or key not in HELLO_KEYS:
            raise ProtocolError(
                f"hello: unknown word {escape_text(word[:40])!r}; the keys are "
                f"{', '.join(k + '=' for k in HELLO_KEYS)}"
            )
        if key in values:
            raise ProtocolError(f"hello: {key}= is given twice")
        values[key] = unescape(value)
    events = values.get("events", "none")
    if events not in ("all", "none"):
        raise ProtocolError(f"hello: events= takes 'all' or 'none', not {escape_text(events)!r}")
    max_matches = values.get("max_matches", "0")
    if not max_matches.isdigit() or len(max_matches) > 6:
        raise ProtocolError("hello: max_matches= takes a number, 0 for no limit")
    return Hello(
        version=version,
        name=values.get("name", ""),
        bot_version=values.get("version", ""),
        events=events == "all",
        max_matches=int(max_matches),
        client=values.get("client", ""),
    )


# ------------------------------------------------------------------------------ reading


@dataclass
class Message:
    """One message as a bot reads it: its kind, the words of its header after the kind,
    and for ``request`` and ``event`` the ``KEY VALUE`` lines of its block (raw text)."""

    kind: str
    words: list[str]
    fields: dict[str, str] = field(default_factory=dict)
    #: The free text at the end of an ``error`` or ``bye`` line.
    text: str = ""


def read_message(readline: Callable[[], str]) -> Message | None:
    """The next message from ``readline`` (e.g. ``sys.stdin.readline``); None at the end.

    What a bot written in Python needs to read the arena; :func:`observation` and
    :func:`legal_actions` turn a request's fields into the engine's values."""
    line = readline()
    if not line:
        return None
    line = line.rstrip("\n").rstrip("\r")
    kind, _, rest = line.partition(" ")
    if kind in ("error", "bye"):
        if kind == "bye":
            return Message(kind, [], text=unescape(rest))
        parts = rest.split(" ", 2)
        while len(parts) < 3:
            parts.append("")
        return Message(kind, [unescape(parts[0]), parts[1]], text=unescape(parts[2]))
    words = rest.split(" ") if rest else []
    msg = Message(kind, [unescape(w) for w in words])
    if kind in ("request", "event") and words and words[-1].isdigit():
        count = int(words[-1])
        msg.words.pop()
        for _ in range(count):
            item = readline()
            if not item:
                break
            key, _, value = item.rstrip("\n").rstrip("\r").partition(" ")
            msg.fields[key] = value
    return msg


def split_list(value: str) -> list[str]:
    """The items of a list value (still escaped: split them into parts first)."""
    return value.split(",") if value else []


def _read_scalar(kind: str, raw: str) -> Any:
    if kind.endswith("?"):
        if raw == NONE:
            return None
        kind = kind[:-1]
    if kind == "int":
        return int(raw)
    if kind == "bool":
        return raw == "1"
    return unescape(raw)


def decode_value(kind: str | tuple[str, ...], raw: str) -> Any:
    """A value read back as the engine holds it, given how the key is typed
    (:data:`OBSERVATION_TYPES`)."""
    return _reader(kind)(raw)


def _reader(kind: str | tuple[str, ...]) -> Callable[[str], Any]:
    """A function reading a value of ``kind``: made once per kind, the usual ones written
    out (a program in Python reads a request at every decision)."""
    found = _READERS.get(kind)
    if found is not None:
        return found
    reader: Callable[[str], Any]
    if isinstance(kind, tuple):
        parts = tuple(_reader(k) for k in kind)

        def reader(raw: str) -> Any:
            if not raw:
                return []
            return [[read(p) for read, p in zip(parts, item.split(":"), strict=False)]
                    for item in raw.split(",")]
    elif kind == "str":
        reader = unescape
    elif kind == "[int]":
        def reader(raw: str) -> Any:
            return [int(v) for v in raw.split(",")] if raw else []
    elif kind == "[str]":
        def reader(raw: str) -> Any:
            if not raw:
                return []
            return raw.split(",") if "\\" not in raw else [unescape(v) for v in raw.split(",")]
    elif kind == "[bool]":
        def reader(raw: str) -> Any:
            return [v == "1" for v in raw.split(",")] if raw else []
    elif kind.startswith("["):
        inner = kind[1:-1]

        def reader(raw: str) -> Any:
            return [_read_scalar(inner, item) for item in split_list(raw)]
    elif kind == "int":
        reader = int
    elif kind == "int?":
        def reader(raw: str) -> Any:
            return None if raw == NONE else int(raw)
    else:
        def reader(raw: str) -> Any:
            return _read_scalar(kind, raw)
    _READERS[kind] = reader
    return reader


_READERS: dict[str | tuple[str, ...], Callable[[str], Any]] = {}
#: The reader of each observation key.
_OBSERVATION_READERS = tuple((key, _reader(OBSERVATION_TYPES[key])) for key in OBSERVATION_KEYS)
_NOT_OBSERVATION = frozenset((*CLOCK_KEYS, LEGAL_KEY))


def observation(fields: Mapping[str, str]) -> dict[str, Any]:
    """A request's observation as the rules engine's dictionary (the same one a Python
    bot gets in the arena); keys without a known type stay text."""
    obs: dict[str, Any] = {}
    for key, read in _OBSERVATION_READERS:
        raw = fields.get(key)
        if raw is not None:
            obs[key] = read(raw)
    if len(fields) != len(obs) + len(_NOT_OBSERVATION):
        for key, raw in fields.items():
            if key not in obs and key not in _NOT_OBSERVATION:
                obs[unescape(key)] = unescape(raw)
    return obs


def legal_actions(fields: Mapping[str, str]) -> list[str]:
    """A request's legal actions."""
    raw = fields.get(LEGAL_KEY, "")
    if not raw:
        return []
    return raw.split(",") if "\\" not in raw else [unescape(a) for a in raw.split(",")]


def lines_of(text: str) -> Iterable[str]:
    """The lines of an encoded message, without their newlines."""
    return text.splitlines()
