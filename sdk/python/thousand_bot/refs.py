"""Bot references: ``module:Class`` and ``path/to/file.py:Class``, read one way everywhere.

``thousand-bot run``, ``arena match``, ``arena bot-check``, tournament specs and the
gateway all name a Python bot with the same text, so a bot that plays in one of them
plays in all. This module needs nothing but the standard library: the arena's referee
imports it without loading gRPC.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

FORMS = "'module:Class' or 'file.py:Class'"


def load_object(ref: str) -> Any:
    """Import ``module:Name`` or ``path/to/file.py:Name`` and return the named object.

    A module is imported with the current directory on the path, so ``mybot:MyBot`` finds
    ``./mybot.py``; a file is loaded from its path (a name ending in ``.py`` or holding a
    ``/``), with its folder on the path, so that it imports the modules beside it as it
    would when run from there (``variants.py`` doing ``import mybot``). ``Name`` may be
    dotted (``module:Outer.Inner``). Raises ``ValueError`` with a message that names the
    reference and what is wrong with it.
    """
    module_part, sep, attr = ref.rpartition(":")
    if not sep or not module_part or not attr:
        raise ValueError(f"bot reference {ref!r}: expected {FORMS}")
    if module_part.endswith(".py") or "/" in module_part:
        path = Path(module_part)
        if not path.is_file():
            raise ValueError(f"bot reference {ref!r}: no file {module_part}")
        # One module per file, whatever the file is called: two bots in two `bot.py`
        # files of different folders do not replace each other.
        digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
        mod_name = f"thousand_bot_ref_{digest}_{path.stem}"
        module = sys.modules.get(mod_name)
        if module is None:
            folder = str(path.resolve().parent)
            if folder not in sys.path:
                sys.path.insert(0, folder)
            spec = importlib.util.spec_from_file_location(mod_name, path)
            if spec is None or spec.loader is None:
                raise ValueError(f"bot reference {ref!r}: cannot load {module_part}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as exc:
                sys.modules.pop(mod_name, None)
                raise ValueError(
                    f"bot reference {ref!r}: loading {module_part} failed: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
    else:
        cwd = str(Path.cwd())
        if cwd not in sys.path:
            sys.path.insert(0, cwd)
        try:
            module = importlib.import_module(module_part)
        except ImportError as exc:
            raise ValueError(f"bot reference {ref!r}: cannot import {module_part}: {exc}") from exc
        except Exception as exc:
            raise ValueError(
                f"bot reference {ref!r}: importing {module_part} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"bot reference {ref!r}: {module_part} has no {attr!r}") from None
    return obj
