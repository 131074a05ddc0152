"""Bots as programs in any language, speaking a text protocol on stdin and stdout.

* :mod:`thousand_bot.stdio.protocol`: the protocol itself (version, grammar, codec);
* :mod:`thousand_bot.stdio.program`: a bot program as a child process, and launchers;
* :mod:`thousand_bot.stdio.bridge`: ``thousand-bot run --stdio -- COMMAND`` (a program on a
  gateway).

Everything but the bridge needs nothing beyond the standard library.
"""

from thousand_bot.stdio.protocol import VERSION, Hello, ProtocolError

__all__ = ["VERSION", "Hello", "ProtocolError"]
