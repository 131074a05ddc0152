"""Bots as programs in any language: the text protocol on stdin/stdout, the referee's end.

* the protocol itself (version, grammar, codec) is :mod:`thousand_bot.stdio.protocol`, in
  the SDK, so that ``thousand-bot run --stdio`` needs nothing of the arena; it is
  described for people in ``docs/stdio.md``;
* :mod:`arena.stdio.session`: a bot program as an instance of a bot on a hub, judged by
  the gateway's own code;
* :mod:`arena.stdio.seat`: ``cmd:COMMAND`` bots, a program per seat (``arena match``,
  ``arena bot-check``, tournaments), and the interface for launchers such as a sandbox.

``arena bench stdio`` (:mod:`arena.bench.stdio`) measures them.
"""

from thousand_bot.stdio.protocol import VERSION

__all__ = ["VERSION"]
