"""``python -m arena.server``: the same as ``arena serve``."""

import sys

from arena.server.app import main_serve

sys.exit(main_serve(sys.argv[1:]))
