"""A Python bot as a program speaking the text protocol.

``python -m thousand_bot.stdio.play module:Class`` plays an SDK bot class (the same class
``thousand-bot run`` connects over gRPC) on its standard input and output: anywhere a bot
program goes (``arena match 'cmd:python -m thousand_bot.stdio.play mybot:MyBot' ...``,
``thousand-bot run --stdio -- ...``, a sandbox that runs programs), the bot goes too,
unchanged. ``arena bench stdio`` plays the same class both ways to measure what the text
protocol costs a decision.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any, TextIO

from thousand_bot import __version__
from thousand_bot.bot import Bot, Request, first_choice
from thousand_bot.stdio.protocol import (
    CLOCK_KEYS,
    Hello,
    decode_value,
    legal_actions,
    observation,
    read_message,
    unescape,
)

#: How the keys of the known events read back (any other key stays text).
EVENT_TYPES: dict[str, dict[str, str | tuple[str, ...]]] = {
    "match_start": {"players": "int"},
    "deal_start": {"deal": "int", "dealer": "int"},
    "action": {"seat": "int", "auto": "bool"},
    "talon": {"deal": "int", "cards": "[str]"},
    "marriage": {"seat": "int", "points": "int"},
    "trick": {"winner": "int", "points": "int", "cards": ("int", "str")},
    "redeal": {"deal": "int"},
    "deal_end": {"deal": "int", "deltas": "[int]", "scores": "[int]", "declarer": "int?",
                 "contract": "int", "made": "bool"},
    "match_end": {"scores": "[int]", "ranks": "[int]", "deals": "int", "forfeit_seat": "int?"},
}


def event_dict(match_id: str, sequence: int, kind: str, fields: dict[str, str]) -> dict[str, Any]:
    """An event as the SDK's ``on_event`` gets it over gRPC: typed where the key is known,
    dotted keys nested again."""
    types = EVENT_TYPES.get(kind, {})
    event: dict[str, Any] = {"type": kind}
    for key, raw in fields.items():
        value: Any = decode_value(types[key], raw) if key in types else unescape(raw)
        parts = key.split(".")
        into = event
        for part in parts[:-1]:
            into = into.setdefault(part, {})
        into[parts[-1]] = value
    event["match_id"] = match_id
    event["sequence"] = sequence
    return event


def serve(bot: Bot, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Play ``bot`` on the text protocol until the arena says ``bye`` or closes the input."""
    inp = stdin or sys.stdin
    out = stdout or sys.stdout
    hello = Hello(name=bot.name, bot_version=bot.version, events=bot.wants_events(),
                  max_matches=bot.max_concurrent_matches,
                  client=f"thousand-bot-python-stdio/{__version__}")
    out.write(hello.line() + "\n")
    out.flush()
    readline: Callable[[], str] = inp.readline
    plain = type(bot).on_request is Bot.on_request
    while True:
        message = read_message(readline)
        if message is None or message.kind == "bye":
            return 0
        if message.kind == "request":
            fields = message.fields
            legal = legal_actions(fields)
            try:
                if plain:
                    answer: Any = bot.decide(observation(fields), legal)
                else:
                    answer = bot.on_request(Request(
                        match_id=message.words[0], request_id=message.words[1],
                        seat=int(fields.get("seat", "0")), observation=observation(fields),
                        legal=legal, deadline_ms=int(fields.get(CLOCK_KEYS[0], "0")),
                        time_bank_ms=int(fields.get(CLOCK_KEYS[1], "0")),
                    ))
                if inspect.isawaitable(answer):
                    import asyncio

                    answer = asyncio.run(_awaited(answer))
            except Exception as exc:  # as over gRPC: a bug costs a move, not a strike
                print(f"the bot raised {type(exc).__name__}: {exc}", file=sys.stderr)
                answer = first_choice(legal) if legal else "pass"
            out.write(f"{answer}\n")
            out.flush()
        elif message.kind == "event":
            words = message.words
            try:
                bot.on_event(event_dict(words[0], int(words[1]), words[2], message.fields))
            except Exception as exc:
                print(f"on_event raised {type(exc).__name__}: {exc}", file=sys.stderr)
        elif message.kind == "error":
            code = "ERROR_CODE_" + message.words[1].upper()
            bot.on_error(message.words[0], code, message.text)


async def _awaited(value: Any) -> Any:
    return await value


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m thousand_bot.stdio.play module:Class", file=sys.stderr)
        return 2
    from thousand_bot.runner import load_bot

    try:
        bot = load_bot(args[0])()
    except (ValueError, ImportError) as exc:
        print(f"thousand_bot.stdio.play: {exc}", file=sys.stderr)
        return 2
    return serve(bot)


if __name__ == "__main__":
    sys.exit(main())
