"""The starter bots in C, Go, Rust and Java, built with their real compilers: each passes
``arena bot-check`` for every preset, all four play the same moves, and the moves are
the heuristic their READMEs describe."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
from typing import Any

import pytest
from stdio_support import LANGUAGES, Starter
from thousand_bot.stdio.protocol import encode_request, encode_welcome, read_message

from arena.engine import PRESETS
from arena.engine import replay as rp
from arena.match.types import MatchSpec, TimeControl
from arena.referee.cli import bot_check_main
from arena.referee.runner import resolve_seat, run_match
from arena.stdio.seat import StdioSeat


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_starter_passes_bot_check_for_every_preset(
    starters: dict[str, Starter], lang: str, capsys: pytest.CaptureFixture[str]
) -> None:
    starter = starters[lang]
    for preset in sorted(PRESETS):
        code = bot_check_main([starter.cmd, "--rules", preset, "--json"])
        out = capsys.readouterr()
        report = json.loads(out.out)
        assert code == 0 and report["passed"], (preset, report["problems"], out.err[-2000:])
        assert report["decisions"] > 20 and report["protocol_errors"] == 0
        assert report["counts"]["ok"] == report["decisions"]


def _play(ref: str, preset: str, seed: str) -> dict[str, Any]:
    spec = MatchSpec(match_id=f"same-{preset}", rules={"preset": preset, "options": {}},
                     seed=seed, bots=(ref, *["greedy"] * (3 if preset == "classic-4" else 2)),
                     time_control=TimeControl(decision_ms=5000), max_deals=6)
    if preset.startswith("two-player"):
        spec = MatchSpec(match_id=spec.match_id, rules=spec.rules, seed=seed,
                         bots=(ref, "greedy"), time_control=spec.time_control, max_deals=6)

    async def play() -> Any:
        seats = [resolve_seat(r, i, spec) for i, r in enumerate(spec.bots)]
        try:
            return await run_match(spec, seats)
        finally:
            for seat in seats:
                if isinstance(seat, StdioSeat):
                    await seat.aclose()

    result = asyncio.run(play())
    assert result.status == "completed" and result.seat_stats[0].strikes == 0
    assert result.replay is not None and rp.verify(result.replay) is None
    return result.replay


@pytest.mark.parametrize("preset", ["classic", "two-player", "estonian"])
def test_the_four_starters_play_the_same_moves(starters: dict[str, Starter], preset: str) -> None:
    deals = {lang: _play(starters[lang].cmd, preset, f"same/{preset}")["deals"]
             for lang in LANGUAGES}
    for lang in LANGUAGES[1:]:
        assert deals[lang] == deals["c"], lang


def _observation(**changes: Any) -> dict[str, Any]:
    obs: dict[str, Any] = {
        "seat": 0, "players": 3, "dealer": 2, "deal": 0, "phase": "play", "to_act": 0,
        "hand": [], "scores": [0, 0, 0], "barrel": [False] * 3, "bolts": [0, 0, 0],
        "active": [0, 1, 2], "auction": [], "bid": None, "declarer": None, "contract": None,
        "blind": False, "talon": [], "given": [], "received": [], "discarded": [],
        "shown_marriages": [], "trump": None, "marriages": [], "trick": [], "leader": None,
        "tricks_taken": [0, 0, 0], "points_taken": [0, 0, 0], "hand_sizes": [7, 7, 7],
    }  # fmt: skip
    obs.update(changes)
    return obs


BIDS = [f"bid {n}" for n in range(110, 205, 5)]
#: (what the seat sees, the legal actions, the answer the heuristic gives, why)
SCENARIOS = [
    (_observation(phase="auction", hand=["9C", "JC", "9S", "JS", "9H", "JD", "QD"]),
     ["pass", *BIDS], "pass", "a weak hand passes"),
    (_observation(phase="auction", hand=["AC", "TC", "KC", "QC", "AH", "TH", "AS"]),
     ["pass", *BIDS], "bid 110", "a strong hand bids, the lowest bid first"),
    (_observation(phase="auction", hand=["9C"] * 0 + ["AC", "9S"]),
     ["look", "blind 120", "blind 125"], "look", "it never bids blind"),
    (_observation(phase="exchange", hand=["KH", "QH", "AS", "9D", "TC", "JS", "AD", "KC"]),
     [f"give {c} {s}" for c in ["KH", "QH", "AS", "9D", "TC", "JS", "AD", "KC"] for s in (1, 2)],
     "give 9D 1", "it gives away its cheapest card"),
    (_observation(phase="exchange", hand=["KH", "QH", "AS", "TD", "TC", "AD"]),
     [f"give {c} 2" for c in ["KH", "QH", "AS", "TD", "TC", "AD"]],
     "give TD 2", "never half of a marriage, even when it is cheaper"),
    (_observation(phase="contract"), ["contract 120", "contract 125", "concede"],
     "contract 120", "the lowest contract, never a concession"),
    (_observation(hand=["9C", "AS", "KH", "QH"]),
     ["play 9C", "play AS", "marry KH", "play KH", "marry QH", "play QH"], "marry KH",
     "it declares its marriage"),
    (_observation(hand=["9C", "AS", "TD"]), ["play 9C", "play AS", "play TD"], "play AS",
     "it leads its strongest card"),
    (_observation(hand=["AS", "TS", "9S"], trick=[[2, "KS"]]),
     ["play AS", "play TS", "play 9S"], "play TS", "it takes the trick as cheaply as it can"),
    (_observation(hand=["TS", "9S"], trick=[[2, "AS"]]), ["play TS", "play 9S"], "play 9S",
     "it throws its cheapest card when it cannot win"),
    (_observation(hand=["9H", "KH"], trick=[[2, "AC"]], trump="H"), ["play 9H", "play KH"],
     "play 9H", "a trump takes the trick: the cheapest trump"),
    (_observation(hand=["9H", "KD"], trick=[[1, "AC"], [2, "9S"]], trump="S"),
     ["play 9H", "play KD"], "play 9H", "a trumped trick it cannot beat: the cheapest card"),
]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_starters_play_the_heuristic_their_readmes_describe(
    starters: dict[str, Starter], lang: str
) -> None:
    proc = subprocess.Popen(list(starters[lang].argv), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        hello = proc.stdout.readline()
        assert hello.startswith("hello 1 ") and "events=all" in hello, hello
        proc.stdin.write(encode_welcome("mybot", "mybot#1", "test"))
        for i, (obs, legal, _answer, _why) in enumerate(SCENARIOS):
            proc.stdin.write(encode_request("m", f"m/{i}", obs, legal, 1000, 10000))
        proc.stdin.write("bye done\n")
        proc.stdin.flush()
        answers = [proc.stdout.readline().rstrip("\n") for _ in SCENARIOS]
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    for (_obs, _legal, answer, why), got in zip(SCENARIOS, answers, strict=True):
        assert got == answer, f"{lang}: {why}: {got!r} instead of {answer!r}"


def test_a_request_the_starters_read_is_what_the_codec_reads_back() -> None:
    """The scenarios above are real requests: the codec's own reader gets them back."""
    for i, (obs, legal, _answer, _why) in enumerate(SCENARIOS):
        text = encode_request("m", f"m/{i}", obs, legal, 1000, 10000)
        message = read_message(io.StringIO(text).readline)
        assert message is not None and message.fields["legal"] == ",".join(legal)
