"""What a bot author meets first, run as the real commands: ``arena match`` and
``arena bot-check`` on bots in files of their own."""

from __future__ import annotations

import json
import os
import re
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


def test_bot_check_says_what_is_left_of_the_bank_after_a_slow_answer(tmp_path: Path) -> None:
    write(tmp_path / "slow.py", """
        import time
        from thousand_bot import Bot

        class Slow(Bot):
            def __init__(self):
                self.first = True

            def decide(self, observation, legal):
                if self.first:
                    self.first = False
                    time.sleep(0.15)
                return super().decide(observation, legal)
    """)
    res = arena("bot-check", "slow.py:Slow", "--deals", "1", "--decision-ms", "50",
                "--bank-ms", "1000", "--json", cwd=tmp_path)
    report = json.loads(res.stdout)
    slow = [p["detail"] for p in report["problems"] if p["kind"] == "slow"]
    assert slow, report
    for detail in slow:
        found = re.search(r"(\d+) ms taken from the time bank \((\d+) ms left of 1000\)", detail)
        assert found, detail
        taken, left = int(found.group(1)), int(found.group(2))
        assert abs(1000 - taken - left) <= 1, detail


def test_a_gateway_given_as_a_url_is_answered_with_the_fix(tmp_path: Path) -> None:
    """``--gateway http://localhost:50051`` gets "drop the scheme", not gRPC's
    "Misformatted domain name", from the SDK and from every arena command."""
    write(tmp_path / "mybot.py", """
        from thousand_bot import Bot

        class MyBot(Bot):
            pass
    """)
    url = "http://localhost:50051"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARENA_", "THOUSAND_BOT_"))}
    sdk = subprocess.run([str(BIN / "thousand-bot"), "run", "mybot:MyBot", "--gateway", url,
                          "--token", "t", "--max-attempts", "1"], cwd=tmp_path, env=env,
                         text=True, capture_output=True, timeout=60)
    commands = [
        ("match", "--gateway", url, "--token", "t", "remote:x", "greedy", "random"),
        ("bot-check", "remote:x", "--gateway", url, "--token", "t"),
        ("bot", "list", "--gateway", url, "--token", "t"),
        ("watch", "m-1", "--gateway", url, "--token", "t"),
    ]
    results = [sdk, *(arena(*c, cwd=tmp_path) for c in commands)]
    for res in results:
        assert res.returncode == 2, (res.args, res.stdout, res.stderr)
        assert "drop 'http://' (localhost:50051)" in res.stderr, (res.args, res.stderr)
        assert "Traceback" not in res.stderr and "Misformatted" not in res.stderr
