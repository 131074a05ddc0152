"""``python -m thousand_bot``: the same as the ``thousand-bot`` command."""

from thousand_bot.cli import main

raise SystemExit(main())
