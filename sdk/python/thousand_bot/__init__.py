"""Write a bot for the card game 1000 and play it on a Thousand Arena server.

Subclass :class:`Bot`, then run it with ``thousand-bot run module:Class --gateway host:port
--token TOKEN`` or :func:`run_bot`. See the README for a first bot in ten minutes.
"""

__version__ = "0.1.0"

from thousand_bot.bot import Bot, Observation, Request
from thousand_bot.client import BotClient, BotRejected, TlsSettings
from thousand_bot.runner import run_bot

__all__ = [
    "Bot", "BotClient", "BotRejected", "Observation", "Request", "TlsSettings", "__version__",
    "run_bot",
]
