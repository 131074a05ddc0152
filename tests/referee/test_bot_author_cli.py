"""What a bot author meets first, run as the real commands: ``arena match`` and
``arena bot-check`` on bots in files of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

BIN = Path(sys.executable).parent


def arena(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARENA_", "THOUSAND_BOT_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([str(BIN / "arena"), *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_a_bot_file_imports_the_modules_beside_it(tmp_path: Path) -> None:
    """``variants.py:V2`` doing ``import mybot`` works from any directory, as it would
    when run from its own folder."""
    write(tmp_path / "bots" / "mybot.py", """
        from thousand_bot import Bot

        class MyBot(Bot):
            def bid(self, observation, legal):
                return "pass" if "pass" in legal else legal[0]
    """)
    write(tmp_path / "bots" / "variants.py", """
        import mybot

        class V2(mybot.MyBot):
            pass
    """)
    res = arena("match", "--seed", "7", "--max-deals", "2", "--quiet", "--json",
                "bots/variants.py:V2", "greedy", "random", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    result = json.loads(res.stdout[res.stdout.index("{"):])
    assert result["status"] == "completed"
    assert result["bots"][0] == "bots/variants.py:V2"
