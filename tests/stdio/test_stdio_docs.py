"""docs/stdio.md and the starters' READMEs run as printed, and the manual's transcript of a
real deal is what the bridge writes today."""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from docblocks import REPO, block
from docs_shell import Shell, shape
from stdio_support import HOSTILE, LANGUAGES, Starter, readme_commands

from arena.rigs.processes import free_port
from arena.server.limits import ACTION_MAX, StreamLimits
from arena.stdio.seat import LOG_MAX_BYTES

DOC = "docs/stdio.md"


@pytest.fixture
def sh(tmp_path: Path, tools: dict[str, str]) -> Iterator[Shell]:
    shell = Shell(tmp_path, {k: v for k, v in tools.items() if k.startswith("GO")})
    shell.env["PATH"] = tools["PATH"]
    try:
        yield shell
    finally:
        shell.close()


def _gateway(sh: Shell) -> tuple[str, str]:
    """``arena serve`` on a free port, as the SDK's README starts it; its address and
    organiser token."""
    port = free_port()
    sh.start(f"arena serve --port {port} &", "gateway.log")
    token = sh.wait_for("gateway.log", r"organiser token.*?: (\S+)").group(1)
    sh.wait_for("gateway.log", rf"gateway listening on .*:{port}")
    return f"localhost:{port}", token


def test_the_transcript_of_a_real_deal_is_what_the_bridge_writes(sh: Shell) -> None:
    bot = block("docs/stdio.md", 'print("hello 1 events=all", flush=True)')
    (sh.cwd / "docbot.py").write_text(bot.text)
    command = block("docs/stdio.md", "arena match --seed 1 --max-deals 1 --transcript")
    sh.run(command.commands()[0])
    printed = block("docs/stdio.md", "< welcome 1 cmd:python3").text
    assert (sh.cwd / "transcript.txt").read_text() == printed, (
        "docs/stdio.md's transcript is stale: run its command and paste transcript.txt"
    )
    lines = printed.splitlines()
    # The deal the manual says it is: every phase of the declarer's work, from the bot.
    said = [line[2:] for line in lines if line.startswith("> ")]
    assert said[0] == "hello 1 events=all"
    assert [s.split()[0] for s in said[1:4]] == ["give", "give", "contract"]
    assert lines[-1] == "< bye the match is over"


def test_the_manuals_bot_plays_locally_and_on_a_gateway(sh: Shell) -> None:
    bot = block("docs/stdio.md", 'print("hello 1 events=all", flush=True)')
    (sh.cwd / "docbot.py").write_text(bot.text)
    quick = block("docs/stdio.md", "arena match 'cmd:python3 docbot.py' greedy random")
    match, check = quick.commands()
    played = sh.run(match)
    assert "Seats: 0:cmd:python3 docbot.py, 1:greedy, 2:random" in played.stdout
    checked = sh.run(check)
    assert checked.stdout.strip().endswith("PASS"), checked.stdout
    address, organiser = _gateway(sh)
    token = sh.run(f"arena bot register docbot --gateway {address} --token {organiser}")
    bridge = block("docs/stdio.md", "thousand-bot run --stdio --gateway HOST:PORT --token TOKEN")
    sh.start(bridge.commands()[0], "bridge.log",
             **{"HOST:PORT": address, "TOKEN": token.stdout.split()[-1]})
    sh.wait_for("gateway.log", "bot docbot connected")
    on_gateway = sh.run(f"arena match --gateway {address} --token {organiser} remote:docbot "
                        "greedy random --max-deals 2")
    assert "Result (completed" in on_gateway.stdout, on_gateway.stdout


def test_the_benchmark_prints_what_the_manual_shows(sh: Shell, starters: dict[str, Starter]
                                                    ) -> None:
    sample = block("docs/stdio.md", "$ arena bench stdio --program c=sdk/starters/c/mybot")
    (sh.cwd / "sdk" / "starters" / "c").mkdir(parents=True)
    (sh.cwd / "sdk" / "starters" / "c" / "mybot").symlink_to(starters["c"].argv[0])
    small = sample.commands()[0] + " --matches 1 --rounds 1 --deals 2"
    got = sh.run(small, timeout=300).stdout.splitlines()
    doc = sample.output().splitlines()
    assert len(got) == len(doc)
    assert got[0].startswith("stdio benchmark (") and doc[0].startswith("stdio benchmark (")

    def figures(line: str) -> str:  # the verdict too is a figure of the machine
        return shape(re.sub(r"\b(within|over) the goal", "WITHIN/OVER the goal", line))

    assert [figures(x) for x in got[1:]] == [figures(x) for x in doc[1:]]


def test_the_limits_the_manual_states_are_the_code(sh: Shell) -> None:
    from thousand_bot.stdio.protocol import LINE_MAX

    text = " ".join((REPO / DOC).read_text().split())
    limits = StreamLimits()
    for stated in (
        f"more than {limits.refusal_burst} at once or {limits.refusal_rate:g} a second",
        f"a line of more than {LINE_MAX >> 20} MiB",
        f"does not read its input for {limits.stall_s:g} s",
        f"says no hello within {limits.hello_timeout_s:g} s",
        f"up to {LOG_MAX_BYTES >> 20} MiB a match",
        f"or is longer than {ACTION_MAX} characters",
    ):
        assert stated in text, stated


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_newcomer_follows_a_starters_readme(
    sh: Shell, starters: dict[str, Starter], lang: str
) -> None:
    """From clone to a first match: the README's build (done once for the session, with
    its command), its match, its check, then its gateway command."""
    starter = starters[lang]
    cd, _build, match, check = readme_commands()[lang]
    played = sh.run(f"cd {starter.folder} && {match}")
    assert re.search(r"Result \(completed, \d+ deals\)", played.stdout), played.stdout
    assert "match-" in played.stderr and "ended: completed" in played.stderr  # its stderr
    checked = sh.run(f"cd {starter.folder} && {check}")
    assert checked.stdout.strip().endswith("PASS"), checked.stdout
    gateway = {
        "c": block("sdk/starters/c/README.md", "thousand-bot run --stdio --gateway localhost"),
        "go": block("sdk/starters/go/README.md", "thousand-bot run --stdio --gateway localhost"),
        "rust": block("sdk/starters/rust/README.md", "--token BOT_TOKEN -- target/release/mybot"),
        "java": block("sdk/starters/java/README.md", "--token BOT_TOKEN -- java -cp build Bot"),
    }[lang].commands()[0]
    address, organiser = _gateway(sh)
    name = f"{lang}-bot"
    token = sh.run(f"arena bot register {name} --gateway {address} --token {organiser}")
    port = address.rsplit(":", 1)[1]
    sh.start(f"cd {starter.folder} && {gateway.replace('localhost:50051', address)}",
             "bridge.log", BOT_TOKEN=token.stdout.split()[-1])
    sh.wait_for("gateway.log", f"bot {name} connected")
    on_gateway = sh.run(f"arena match --gateway localhost:{port} --token {organiser} "
                        f"remote:{name} greedy random --max-deals 2")
    assert "Result (completed" in on_gateway.stdout, on_gateway.stdout
    assert shlex.split(cd)[-1] == f"sdk/starters/{lang}"
    assert shutil.which(shlex.split(gateway)[0], path=sh.env["PATH"])


def test_the_readme_and_the_sdk_readme_show_programs_as_bots(sh: Shell) -> None:
    """README "For bot authors": the C starter built, played and put on a gateway; the SDK's
    README: a program with options of its own behind the bridge."""
    shutil.copytree(REPO / "sdk" / "starters" / "c", sh.cwd / "sdk" / "starters" / "c",
                    ignore=shutil.ignore_patterns("mybot"))
    build, match, bridge = block("README.md", "arena match cmd:./mybot greedy random").commands()
    cd = build.split(" && ")[0]
    sh.run(build)
    played = sh.run(f"{cd} && {match}")
    assert "Seats: 0:cmd:./mybot, 1:greedy, 2:random" in played.stdout
    address, organiser = _gateway(sh)
    sh.env["THOUSAND_BOT_GATEWAY"] = address  # the default gateway, as a reader's would be
    token = sh.run(f"arena bot register readme-c --gateway {address} --token {organiser}")
    sh.start(f"{cd} && {bridge}", "readme-bridge.log", BOT_TOKEN=token.stdout.split()[-1])
    sh.wait_for("gateway.log", "bot readme-c connected")

    program = sh.cwd / "mybot"
    program.write_text(f"#!/bin/sh\n# its own options: \"$@\"\nexec {shlex.quote(sys.executable)} "
                       f"{shlex.quote(str(HOSTILE))} honest\n")
    program.chmod(0o755)
    sdk = block("sdk/python/README.md", "thousand-bot run --stdio --gateway localhost:50051 --")
    token = sh.run(f"arena bot register sdk-readme --gateway {address} --token {organiser}")
    sh.env["THOUSAND_BOT_TOKEN"] = token.stdout.split()[-1]
    sh.start(sdk.commands()[0].replace("localhost:50051", address), "sdk-bridge.log")
    sh.wait_for("gateway.log", "bot sdk-readme connected")
    for name in ("readme-c", "sdk-readme"):
        on_gateway = sh.run(f"arena match --gateway {address} --token {organiser} "
                            f"remote:{name} greedy random --max-deals 2")
        assert "Result (completed" in on_gateway.stdout, on_gateway.stdout
