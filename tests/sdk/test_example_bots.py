"""The SDK's example bots say what they are: ``Simple`` (once called ``Greedy``, which it
never was) and none of them concedes while anything else is legal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from thousand_bot.examples import FirstLegal, Greedy, Simple

BIN = Path(sys.executable).parent

LEGAL_LISTS = [
    ["concede", "give JC 0", "give QC 1"],
    ["concede", "contract 120", "contract 130"],
    ["concede", "trump H"],
    ["concede", "discard 9H"],
    ["concede", "play 9H"],
]


@pytest.mark.parametrize("legal", LEGAL_LISTS)
def test_no_example_concedes_while_another_action_is_legal(legal: list[str]) -> None:
    observation = {"hand": ["9H", "JC", "QC"], "trick": [], "phase": "exchange"}
    for bot in (Simple(), FirstLegal()):
        assert bot.decide(observation, legal) != "concede", (type(bot).__name__, legal)


def test_the_old_name_still_runs_and_says_what_it_is(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import thousand_bot.examples

    monkeypatch.setattr(thousand_bot.examples, "_renamed_told", False)  # said once a process
    with caplog.at_level("WARNING", logger="thousand_bot"):
        bot = Greedy()
    assert isinstance(bot, Simple)
    assert "thousand_bot.examples:Greedy is now called Simple" in caplog.text
    env = {k: v for k, v in os.environ.items() if not k.startswith("THOUSAND_BOT_")}
    res = subprocess.run([str(BIN / "thousand-bot"), "run", "thousand_bot.examples:Greedy",
                          "--gateway", "127.0.0.1:1", "--token", "t", "--max-attempts", "1"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 3
    assert "is not the arena's built-in greedy bot" in res.stderr
