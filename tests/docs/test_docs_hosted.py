"""docs/hosted.md as printed: from an empty folder to a rated hosted bot, with a real
gateway keeping hosted bots, the check match in the sandbox, a tournament on the local
pool, the leaderboard and the author's logs; ``arena doctor``; the benchmark's report."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from docblocks import block
from docs_shell import Shell, shape

from arena.rigs.processes import free_port

ORG = "org-hosted-docs"


@pytest.fixture
def sh(tmp_path: Path) -> Iterator[Shell]:
    shell = Shell(tmp_path)
    try:
        yield shell
    finally:
        shell.close()


def test_from_an_empty_folder_to_a_rated_hosted_bot(sh: Shell) -> None:
    port = str(free_port())
    sh.subs["50051"] = port
    sh.env.update(ARENA_ORGANISER_TOKEN=ORG, ARENA_GATEWAY=f"127.0.0.1:{port}")
    sh.run(block("docs/hosted.md", "mkdir -p mybot").text)
    assert (sh.cwd / "mybot" / "bot.toml").exists()

    serve, register = block("docs/hosted.md", "arena serve --port 50051 --store").commands()
    sh.start(serve, "gateway.log")
    sh.wait_for("gateway.log", r"gateway listening on")
    token = sh.run(register, ORGANISER_TOKEN=ORG).stdout.strip().splitlines()[-1]

    submit, versions = block("docs/hosted.md", "arena bot submit my-bot ./mybot").commands()
    out = sh.run(submit, BOT_TOKEN=token).stdout
    printed = block("docs/hosted.md", "submitted my-bot version").text
    assert [shape(re.sub(r"[0-9a-f]{12}", "HASH", x)) for x in out.splitlines()] == [
        shape(re.sub(r"[0-9a-f]{12}", "HASH", x)) for x in printed.splitlines()]
    listed = sh.run(versions, BOT_TOKEN=token).stdout.splitlines()
    assert len(listed) == 2 and listed[1].endswith("passed"), listed
    version = listed[1].split()[0]

    run, board, logs = block("docs/hosted.md", "arena tournament run examples/hosted.yaml"
                             ).commands()
    sh.run(run, timeout=300)
    table = sh.run(board).stdout
    assert f"my-bot@{version}" in table, table
    shown = sh.run(logs, BOT_TOKEN=token).stdout
    assert shown.startswith("== match ") and ": ok" in shown.splitlines()[0], shown


def test_the_doctor_and_the_benchmark_as_printed(sh: Shell) -> None:
    doctor = sh.run(block("docs/hosted.md", "arena doctor").commands()[0], timeout=120)
    assert doctor.stdout.startswith("hosted bots: can run on this host")
    assert re.search(r"cgroups\s+cgroup v[12] \(memory, pids, cpu", doctor.stdout)
    bench = block("docs/hosted.md", "$ arena bench hosted")
    got = sh.run(bench.commands()[0], timeout=600).stdout.splitlines()
    assert [shape(x) for x in got] == [shape(x) for x in bench.output().splitlines()]
