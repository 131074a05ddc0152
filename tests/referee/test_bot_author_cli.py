"""What a bot author meets first, run as the real commands: ``arena match`` and
``arena bot-check`` on bots in files of their own."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def arena(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARENA_", "THOUSAND_BOT_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([str(BIN / "arena"), *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout)


class Gateway:
    """``arena serve`` on a free port, with a known organiser token."""

    TOKEN = "organiser-first-day"

    def __init__(self, tmp: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [str(BIN / "arena"), "serve", "--port", "0", "--db", str(tmp / "bots.sqlite3"),
             "--organiser-token", self.TOKEN, *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        assert self.proc.stdout is not None
        self.lines: list[str] = []
        for line in self.proc.stdout:
            self.lines.append(line)
            found = re.search(r"gateway listening on [\d.]+:(\d+)", line)
            if found:
                self.address = f"127.0.0.1:{found.group(1)}"
                break
        else:
            raise AssertionError("".join(self.lines))

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=60)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    gw = Gateway(tmp_path)
    try:
        yield gw
    finally:
        gw.close()


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


def test_a_seed_on_a_gateway_with_no_remote_bot_seated_is_played(
    tmp_path: Path, gateway: Gateway
) -> None:
    """Built-in bots on a gateway: ``--seed 7`` is that seed, no secret and no refusal."""
    res = arena("match", "--gateway", gateway.address, "--token", gateway.TOKEN, "--seed", "7",
                "--max-deals", "1", "--json", "greedy", "greedy", "random", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "secret" not in res.stdout and "remote bot" not in res.stderr
    here = arena("match", "--seed", "7", "--max-deals", "1", "--json", "greedy", "greedy",
                 "random", cwd=tmp_path)
    # The same seed deals the same cards wherever the match is played.
    assert json.loads(res.stdout[res.stdout.index("{"):])["scores"] == json.loads(
        here.stdout[here.stdout.index("{"):])["scores"]
    # A bare name that may be a registered bot is still dealt from a secret.
    refused = arena("match", "--gateway", gateway.address, "--token", gateway.TOKEN,
                    "--seed", "7", "my-bot", "greedy", "random", cwd=tmp_path)
    assert refused.returncode == 2 and "--public-seed" in refused.stderr


def test_local_events_carry_the_match_id_as_over_a_gateway(tmp_path: Path) -> None:
    write(tmp_path / "follower.py", """
        import json
        from thousand_bot import Bot

        class Follower(Bot):
            seen = []

            def on_event(self, event):
                self.seen.append([event.get("type"), event.get("match_id")])
                if event["type"] == "match_end":
                    with open("events.json", "w") as out:
                        json.dump(self.seen, out)
    """)
    res = arena("match", "--seed", "3", "--max-deals", "1", "--quiet", "follower.py:Follower",
                "greedy", "random", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    seen = json.loads((tmp_path / "events.json").read_text())
    assert {kind for kind, _ in seen} >= {"match_start", "deal_start", "action", "trick",
                                         "deal_end", "match_end"}
    assert {match_id for _, match_id in seen} == {f"match-{hashlib.sha256(b'3').hexdigest()[:12]}"}


BOOM = """
    from thousand_bot import Bot

    class Boom(Bot):
        def play(self, observation, legal):
            return helper(legal)

    def helper(legal):
        return 1 / 0
"""


def start_sdk_bot(tmp: Path, gateway: Gateway, name: str, ref: str,
                  *extra: str) -> subprocess.Popen[str]:
    """Register ``name`` on the gateway and run ``thousand-bot`` for it; wait until it is
    connected."""
    token = arena("bot", "register", name, "--gateway", gateway.address, "--token",
                  gateway.TOKEN, cwd=tmp)
    assert token.returncode == 0, token.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARENA_", "THOUSAND_BOT_"))}
    env["THOUSAND_BOT_TOKEN"] = token.stdout.strip().split()[-1]
    log = (tmp / f"{name}.log").open("w")
    proc = subprocess.Popen([str(BIN / "thousand-bot"), "run", ref, "--gateway",
                             gateway.address, *extra], cwd=tmp, env=env, stdout=log,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = 60.0
    start = time.monotonic()
    while "connected to" not in (tmp / f"{name}.log").read_text():
        assert proc.poll() is None, (tmp / f"{name}.log").read_text()
        assert time.monotonic() - start < deadline, "the bot never connected"
        time.sleep(0.05)
    return proc


def stop(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def test_a_bot_that_raises_strikes_and_shows_its_traceback_everywhere(
    tmp_path: Path, gateway: Gateway
) -> None:
    write(tmp_path / "boom.py", BOOM)
    # Here: the fallback, a strike for each error, the forfeit, and the traceback.
    here = arena("match", "--seed", "1", "--max-deals", "3", "--json", "boom.py:Boom",
                 "greedy", "random", cwd=tmp_path)
    assert here.returncode == 0, here.stderr
    result = json.loads(here.stdout[here.stdout.index("{\n"):])
    assert result["status"] == "forfeit" and result["forfeit_seat"] == 0
    assert result["seat_stats"][0]["malformed"] == 3
    assert "Traceback (most recent call last)" in here.stderr
    assert 'boom.py", line 9, in helper' in here.stderr
    assert "ZeroDivisionError: division by zero" in here.stderr

    # bot-check: the line that raised, and the first traceback in full.
    check = arena("bot-check", "boom.py:Boom", "--deals", "1", "--max-problems", "2",
                  cwd=tmp_path)
    assert check.returncode == 1
    assert ("error: raised ZeroDivisionError: division by zero (boom.py:9 in helper: "
            "return 1 / 0)") in check.stdout
    assert "the first error the bot raised, in full:" in check.stdout
    assert 'boom.py", line 9, in helper' in check.stdout

    # Over a gateway: the same strikes and forfeit; the SDK logs the traceback.
    bot = start_sdk_bot(tmp_path, gateway, "boom", "boom:Boom")
    try:
        there = arena("match", "--gateway", gateway.address, "--token", gateway.TOKEN,
                      "--max-deals", "3", "--json", "remote:boom", "greedy", "random",
                      cwd=tmp_path)
    finally:
        stop(bot)
    assert there.returncode == 0, there.stderr
    end = json.loads(there.stdout[there.stdout.index("{\n"):])
    assert end["status"] == "forfeit" and end["forfeit_seat"] == 0
    log = (tmp_path / "boom.log").read_text()
    assert "the bot raised ZeroDivisionError" in log and 'boom.py", line 9, in helper' in log
    assert "ended (forfeit" in log and "seat 0 forfeited it after 3 strikes" in log


def test_the_sdk_logs_its_matches_strikes_slow_answers_and_decisions(
    tmp_path: Path, gateway: Gateway
) -> None:
    write(tmp_path / "chatty.py", """
        import time
        from thousand_bot import Bot

        class Chatty(Bot):
            n = 0

            def decide(self, observation, legal):
                self.n += 1
                if self.n == 1:
                    time.sleep(0.1)  # over the deadline, paid from the bank
                elif self.n == 2:
                    return "bid 995" if "bid 995" not in legal else "pass"  # illegal
                elif self.n == 3:
                    # Past the deadline and the bank: a timeout (and the requests that
                    # arrive while it sleeps time out too).
                    time.sleep(0.3)
                return super().decide(observation, legal)
    """)
    bot = start_sdk_bot(tmp_path, gateway, "chatty", "chatty:Chatty", "--log-level", "DEBUG")
    try:
        # A public seed whose deals ask seat 0 for more than three decisions: with a
        # secret one, some deals asked for two only, and the timeout never came.
        res = arena("match", "--gateway", gateway.address, "--token", gateway.TOKEN,
                    "--seed", "7", "--public-seed",
                    "--max-deals", "2", "--decision-ms", "50", "--bank-ms", "150",
                    "--strike-limit", "50", "--json",
                    "remote:chatty", "greedy", "random", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        match_id = json.loads(res.stdout[res.stdout.index("{\n"):])["match_id"]
        log_path = tmp_path / "chatty.log"
        deadline = time.monotonic() + 30
        while f"match {match_id} ended" not in log_path.read_text():
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
    finally:
        stop(bot)
    log = log_path.read_text()
    asked = re.findall(rf"DEBUG thousand_bot: match {match_id} seat 0: '", log)
    assert len(asked) > 3, log
    assert f"INFO thousand_bot: match {match_id} started: classic, seats remote:chatty, " \
           "greedy, random" in log
    assert re.search(rf"INFO thousand_bot: match {match_id} seat 0: slow answer, \d+ ms for a "
                     r"50 ms deadline: \d+ ms from the time bank, \d+ ms left", log), log
    assert re.search(rf"WARNING thousand_bot: match {match_id} seat 0: \d+ ms to answer, past "
                     r"the 50 ms deadline and the \d+ ms left in the time bank: a timeout", log)
    assert "answer to" in log and "not taken (too late" in log
    assert re.search(r"WARNING thousand_bot: strike on request \S+ \(the referee plays its "
                     r"fallback\): 'bid 995' is not legal here", log), log
    assert re.search(rf"DEBUG thousand_bot: match {match_id} seat 0: '[a-z]+[^']*' in "
                     r"[\d.]+ ms \(\d+ legal; deadline 50 ms, bank \d+ ms\)", log), log
    assert re.search(rf"INFO thousand_bot: match {match_id} ended \(completed, 2 deals\): "
                     r"seat 0: rank \d of 3, -?\d+ points, \d+ strike\(s\)", log), log


def test_bot_check_warns_of_legal_but_broken_play(tmp_path: Path) -> None:
    write(tmp_path / "broken.py", """
        from thousand_bot import Bot

        class Conceder(Bot):
            def bid(self, observation, legal):  # the lowest bid, to declare often
                bids = [a for a in legal if a.startswith("bid ")]
                return bids[0] if bids else legal[0]

            def decide(self, observation, legal):
                return "concede" if "concede" in legal else super().decide(observation, legal)

        class Passer(Bot):
            pass  # the defaults: pass whenever it may, and never concede
    """)
    conceder = arena("bot-check", "broken.py:Conceder", "--json", cwd=tmp_path)
    report = json.loads(conceder.stdout)
    assert conceder.returncode == 0 and report["passed"]  # legal, so no problem...
    assert [w.split(" (")[0] for w in report["warnings"]] == ["conceded every time it could"]
    passer = arena("bot-check", "broken.py:Passer", cwd=tmp_path)
    assert passer.returncode == 0
    lines = passer.stdout.splitlines()
    assert lines[-1] == "PASS"  # ...but said, before the verdict
    assert re.match(r"  warning: never bid \(\d+ turns where a bid was allowed\): it declares "
                    r"only when it must", lines[-2]), lines


def test_a_match_on_the_gateway_writes_its_replay_here(tmp_path: Path, gateway: Gateway) -> None:
    write(tmp_path / "mybot.py", """
        from thousand_bot import Bot

        class MyBot(Bot):
            pass
    """)
    bot = start_sdk_bot(tmp_path, gateway, "my-bot", "mybot:MyBot")
    try:
        res = arena("match", "--gateway", gateway.address, "--token", gateway.TOKEN,
                    "--max-deals", "2", "--replay", "game.json", "remote:my-bot", "greedy",
                    "random", cwd=tmp_path)
    finally:
        stop(bot)
    assert res.returncode == 0, res.stderr
    assert "replay written to game.json" in res.stdout
    verified = arena("replay", "verify", "game.json", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.startswith("OK: ")
    replay = json.loads((tmp_path / "game.json").read_text())
    assert replay["seats"][0] == "remote:my-bot" and "commitment" in replay  # a secret seed
