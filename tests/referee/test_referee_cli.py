"""``arena match`` and ``arena bot-check``, here and against a real gateway with an SDK bot."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.engine import replay as rp
from arena.referee.cli import bot_check_main, match_main, percentile

HERE = Path(__file__).parent
SDK = HERE.parents[1] / "sdk" / "python"

# ---------------------------------------------------------------------- arena match


def test_match_tells_the_story_and_writes_a_replay_that_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "m.json"
    code = match_main(["--seed", "7", "--max-deals", "3", "--replay", str(out_file),
                       "greedy", "random", "greedy"])
    out = capsys.readouterr().out
    assert code == 0
    for expected in ("Seats: 0:greedy, 1:random, 2:greedy", "Deal 0 (dealer 0:greedy)",
                     "bidding:", "deal scores:", "Result (completed, 3 deals)"):
        assert expected in out
    replay = rp.load(out_file)
    assert rp.verify(replay) is None
    assert replay["seed"] == "7" and replay["seats"] == ["greedy", "random", "greedy"]


def test_match_is_reproducible_and_quiet_prints_only_the_result(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--rules", "two-player", "--seed", "x", "--max-deals", "4", "--quiet", "--json",
            "greedy", "random"]
    assert match_main(args) == 0
    first = capsys.readouterr().out
    assert match_main(args) == 0
    second = capsys.readouterr().out
    assert "Deal 0" not in first and "Result (completed, 4 deals)" in first
    strip = [line for line in first.splitlines() if "ms average" not in line
             and "duration_s" not in line and "think_ms" not in line]
    strip2 = [line for line in second.splitlines() if "ms average" not in line
              and "duration_s" not in line and "think_ms" not in line]
    assert strip == strip2


def test_match_applies_rule_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert match_main(["-o", "barrel=null", "-o", "target=300", "--seed", "3",
                       "greedy", "greedy", "greedy"]) == 0
    out = capsys.readouterr().out
    assert "barrel=None" in out and "target=300" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rules", "clasic", "greedy", "greedy", "greedy"], "unknown preset 'clasic'"),
        (["greedy", "greedy"], "classic is played by 3: give 3 bots, got 2"),
        (["-o", "barel=800", "greedy", "greedy", "greedy"], "unknown option 'barel'"),
        (["-o", "barrel", "greedy", "greedy", "greedy"], "expected name=value"),
        (["greedy", "gredy", "greedy"], "unknown bot 'gredy'"),
        (["greedy", "remote:ann", "greedy"], "remote bots play on a gateway"),
        (["--max-deals", "0", "greedy", "greedy", "greedy"], "--max-deals must be at least 1"),
    ],
)
def test_match_reports_bad_input(argv: list[str], message: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert match_main(argv) == 2
    assert message in capsys.readouterr().err


def test_match_shows_strikes_and_forfeits(capsys: pytest.CaptureFixture[str]) -> None:
    ref = f"{HERE / 'referee_support.py'}:GarbageSeat"
    assert match_main(["--strike-limit", "2", ref, "greedy", "greedy"]) == 0
    out = capsys.readouterr().out
    assert "referee's fallback: malformed" in out
    assert "Result (forfeit" in out and "forfeited: too many strikes" in out


# ---------------------------------------------------------------------- arena bot-check


def test_bot_check_passes_a_well_behaved_bot(capsys: pytest.CaptureFixture[str]) -> None:
    code = bot_check_main(["referee_support:FirstLegalBot", "--deals", "2", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["passed"] and report["matches"] == 3 and report["problems"] == []
    assert report["counts"]["ok"] == report["decisions"] > 0
    assert set(report["latency_ms"]) == {"p50", "p90", "p99", "max"}


def test_bot_check_reports_every_kind_of_misbehaviour(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bot = tmp_path / "shaky.py"
    bot.write_text(
        "import time\n"
        "class Shaky:\n"
        "    def __init__(self):\n"
        "        self.n = 0\n"
        "    def decide(self, observation, legal):\n"
        "        self.n += 1\n"
        "        if self.n == 2: return 'bid 995'\n"
        "        if self.n == 3: return 'jump'\n"
        "        if self.n == 4: time.sleep(1.0)\n"
        "        if self.n == 5: raise RuntimeError('oops')\n"
        "        if self.n == 6: return 7\n"
        "        return legal[0]\n"
    )
    code = bot_check_main([f"{bot}:Shaky", "--deals", "1", "--decision-ms", "100",
                           "--bank-ms", "100", "--opponents", "random,greedy"])
    out = capsys.readouterr().out
    assert code == 1
    assert "illegal: 'bid 995' is not legal" in out
    assert "malformed: 'jump': unknown action 'jump'" in out
    assert re.search(r"timeout: no answer within \d+ ms", out)
    assert "error: raised RuntimeError: oops" in out
    assert "malformed: answered int, not text" in out
    assert "FAIL" in out


def test_bot_check_fails_a_bot_that_lives_on_its_time_bank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Over the deadline but within the bank is no timeout yet, but a full match at that
    pace empties the bank: the check says so and fails."""
    bot = tmp_path / "sleepy.py"
    bot.write_text(
        "import time\n"
        "class Sleepy:\n"
        "    def decide(self, observation, legal):\n"
        "        time.sleep(0.15)\n"
        "        return legal[0]\n"
    )
    code = bot_check_main([f"{bot}:Sleepy", "--deals", "1", "--decision-ms", "100",
                           "--bank-ms", "10000", "--max-problems", "2"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert re.search(r"slow: answered after \d+ ms, over the 100 ms deadline", out), out
    assert "FAIL: 2 problem(s)" in out


def test_bot_check_stops_after_max_problems(capsys: pytest.CaptureFixture[str]) -> None:
    ref = f"{HERE / 'referee_support.py'}:GarbageSeat"
    code = bot_check_main([ref, "--max-problems", "4", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert len(report["problems"]) == 4 and report["stopped_early"]
    assert report["matches"] == 1 and report["statuses"] == ["aborted"]


def test_bot_check_reports_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert bot_check_main(["nosuchmodule_abc:Bot"]) == 2
    assert "cannot import nosuchmodule_abc" in capsys.readouterr().err
    assert bot_check_main(["remote:ann"]) == 2
    assert "--gateway" in capsys.readouterr().err


def test_percentiles_use_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert [percentile(values, q) for q in (50, 90, 99, 100)] == [50.0, 90.0, 99.0, 100.0]
    assert percentile([3.0], 99) == 3.0


# ---------------------------------------------------------------------- through a gateway


class _Fleet:
    """SDK bot clients on their own event loop thread, as separate programs would run."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.stop = asyncio.Event()
        self.clients: list[Any] = []
        self.tasks: list[Any] = []

    def add(self, bot: Any, address: str, token: str) -> None:
        from thousand_bot import BotClient

        client = BotClient(bot, address, token, backoff_initial=0.1, backoff_max=0.5)
        self.clients.append(client)
        self.tasks.append(asyncio.run_coroutine_threadsafe(client.run(self.stop), self.loop))
        limit = time.monotonic() + 20
        while not client.sessions:
            assert time.monotonic() < limit, "the bot did not connect"
            time.sleep(0.02)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        for task in self.tasks:
            # A client ended by the stop: nothing to check here.
            with contextlib.suppress(Exception):
                task.result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Any]:
    if str(SDK) not in sys.path:
        sys.path.insert(0, str(SDK))
    from arena.rigs.testing import GatewayThread

    gw = GatewayThread(str(tmp_path / "gateway.sqlite3"))
    fleet = _Fleet()
    gw.fleet = fleet  # type: ignore[attr-defined]
    try:
        yield gw
    finally:
        fleet.close()
        gw.close()


def test_match_with_a_remote_bot_on_a_gateway(gateway: Any,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from thousand_bot.examples import Greedy

    gateway.fleet.add(Greedy(), gateway.address, gateway.register("ann"))
    code = match_main(["--gateway", gateway.address, "--token", gateway.organiser_token,
                       "--max-deals", "2", "remote:ann", "greedy", "random"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Seats: 0:remote:ann, 1:greedy, 2:random" in captured.out
    assert "Result (completed, 2 deals)" in captured.out
    # No seed given: the gateway drew a secret one, committed to it and revealed it.
    commitment = re.search(r"Deals from a secret seed; commitment ([0-9a-f]{64})", captured.out)
    reveal = re.search(r"Seed revealed: ([0-9a-f]{64}) \(matches the commitment\)",
                       captured.out)
    assert commitment and reveal, captured.out

    # A fixed seed with a remote bot needs --public-seed, and then comes with a warning.
    base = ["--gateway", gateway.address, "--token", gateway.organiser_token, "--seed", "gw",
            "--max-deals", "1", "remote:ann", "greedy", "random"]
    assert match_main(base) == 2
    assert "--public-seed" in capsys.readouterr().err
    assert match_main([*base, "--public-seed", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "warning: a public seed with remote bots" in captured.err
    assert "commitment" not in captured.out


def test_match_on_a_gateway_with_a_wrong_token(gateway: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = match_main(["--gateway", gateway.address, "--token", "wrong",
                       "greedy", "greedy", "greedy"])
    assert code == 4  # refused credentials (docs/cli.md)
    assert "UNAUTHENTICATED" in capsys.readouterr().err


def test_match_on_an_unreachable_gateway(capsys: pytest.CaptureFixture[str]) -> None:
    code = match_main(["--gateway", "127.0.0.1:1", "--token", "t", "greedy", "greedy",
                       "greedy"])
    assert code == 3
    assert "UNAVAILABLE" in capsys.readouterr().err


def test_bot_check_a_remote_bot_on_a_gateway(gateway: Any,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from thousand_bot.examples import FirstLegal

    gateway.fleet.add(FirstLegal(), gateway.address, gateway.register("bea"))
    code = bot_check_main(["remote:bea", "--gateway", gateway.address, "--token",
                           gateway.organiser_token, "--deals", "1", "--json"])
    captured = capsys.readouterr()
    assert captured.err == ""
    report = json.loads(captured.out)
    assert code == 0, report
    assert report["matches"] == 3 and report["statuses"] == ["completed"] * 3
    assert report["counts"]["ok"] == report["decisions"] > 0
    # Latency is measured from the event stream: a bot that answers at once is quick there.
    assert report["latency_source"] == "events"
    assert report["decisions"] == len(report["problems"]) + report["counts"]["ok"]
    assert 0 <= report["latency_ms"]["p50"] < report["decision_ms"]


def test_bot_check_flags_a_remote_bot_that_answers_illegally(
    gateway: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from thousand_bot import Bot

    class Stubborn(Bot):  # type: ignore[misc]
        def decide(self, observation: Any, legal: list[str]) -> str:
            return "bid 995"

    gateway.fleet.add(Stubborn(), gateway.address, gateway.register("stubborn"))
    code = bot_check_main(["remote:stubborn", "--gateway", gateway.address, "--token",
                           gateway.organiser_token, "--deals", "1", "--max-problems", "3"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.count(": illegal: the referee played") == 3
    assert "stopped after 3 problems" in out
