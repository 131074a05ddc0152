"""The manuals' commands and snippets run as printed and do what the text says.

Each test takes its blocks from the manuals with ``block(path, needle)`` and runs them
against real services it starts: a gateway (``arena serve``), Redis, Celery workers, SDK
and Node.js bots. ``test_docs_blocks.py`` checks that no block is left out.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from docblocks import REPO, block
from docs_shell import Shell, options_of, shape

from arena.completion import command_parser
from arena.rigs.processes import RedisProcess, free_port


@pytest.fixture
def sh(tmp_path: Path) -> Iterator[Shell]:
    shell = Shell(tmp_path)
    try:
        yield shell
    finally:
        shell.close()


def _python(text: str, scope: dict[str, Any], cwd: Path) -> str:
    """Run a snippet in ``scope`` (snippets of one page share it, as in one session)."""
    out = io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(text, "<doc>", "exec"), scope)
    finally:
        os.chdir(old)
    return out.getvalue()


# ------------------------------------------------------------------- a bot author's path


def test_a_bot_author_follows_the_readme_and_the_sdk_readme(sh: Shell) -> None:
    """README "For bot authors" with the SDK README's bot: a gateway, a registered bot
    playing over the SDK (and the Node.js bot and the demo's SDK bots), a match with a
    replay, a bot-check, a match on the gateway followed with arena watch."""
    port = str(free_port())
    sh.subs = {"50051": port}
    # The reader's default gateway, localhost:50051, is this free port here.
    sh.env["ARENA_GATEWAY"] = f"localhost:{port}"
    # sdk/python/README.md, step 3: the bot, saved as mybot.py.
    mybot = block("sdk/python/README.md", "class MyBot(Bot):")
    (sh.cwd / "mybot.py").write_text(mybot.text)

    readme = block("README.md", "arena bot register my-bot --token ORGANISER_TOKEN").commands()
    serve, register, sdk_run, match, check, replays = readme
    sh.start(serve, "gateway.log")
    token = sh.wait_for("gateway.log", r"organiser token.*?: (\S+)").group(1)
    sh.wait_for("gateway.log", rf"gateway listening on .*:{port}")
    reg = sh.run(register, ORGANISER_TOKEN=token)
    assert "registered my-bot" in reg.stdout
    bot_token = reg.stdout.strip().splitlines()[-1]
    sh.start(sdk_run, "mybot.log", BOT_TOKEN=bot_token)
    sh.wait_for("mybot.log", "connected|welcome")

    played = sh.run(match)
    assert "Seats: 0:mybot.py:MyBot, 1:greedy, 2:random" in played.stdout
    assert "replay written to game.json" in played.stdout and (sh.cwd / "game.json").exists()
    checked = sh.run(check, ok=False)
    assert checked.returncode == 0 and checked.stdout.strip().endswith("PASS"), checked.stdout
    shown = sh.run(replays)
    assert shown.stdout.startswith("OK: ") and "Deal 0" in shown.stdout

    # docs/referee.md: the bot-check report has the printed shape.
    sample = block("docs/referee.md", "$ arena bot-check mybot.py:MyBot")
    got = sh.run(sample.commands()[0], ok=False).stdout.splitlines()
    for doc_line, real in zip(sample.output().splitlines()[:4], got[:4], strict=True):
        assert shape(real).split(":")[0] == shape(doc_line).split(":")[0], (doc_line, real)

    # The registered bot plays on the gateway (SDK README, step 4) and can be watched
    # (docs/observability.md), finished or not.
    env_token = {"ARENA_ORGANISER_TOKEN": token}
    sh.env.update(env_token)
    on_gateway = sh.run(f"arena match --gateway localhost:{port} remote:my-bot greedy random "
                        "--max-deals 2")
    match_id = re.search(r"Match (\S+):", on_gateway.stdout)
    assert match_id and "Seed revealed" in on_gateway.stdout, on_gateway.stdout
    export, watch = block("docs/observability.md", "arena watch MATCH_ID").commands()
    assert export == "export ARENA_ORGANISER_TOKEN=..."
    watched = sh.run(watch + " --plain", MATCH_ID=match_id.group(1))
    assert watched.stdout.startswith("match starts: 0=remote:my-bot"), watched.stdout

    # SDK README step 2: register with the organiser token from the environment, or from
    # Python; step 4 and docs/sdk.md: thousand-bot run with the gateway given.
    step2 = block("sdk/python/README.md", "export ARENA_ORGANISER_TOKEN=my-organiser-secret")
    exported, _serve, register_env = step2.commands()
    assert exported == "export ARENA_ORGANISER_TOKEN=my-organiser-secret"
    sh.env["ARENA_ORGANISER_TOKEN"] = token
    assert sh.run(register_env.replace("my-bot", "my-bot-2")).stdout.startswith("registered")
    snippet = block("sdk/python/README.md", "stub.RegisterBot(").text
    printed = _python(sh.fill(snippet.replace("my-organiser-secret", token)
                              .replace('"my-bot"', '"my-bot-3"')), {}, sh.cwd)
    assert len(printed.strip()) > 20
    step4 = block("sdk/python/README.md", "thousand-bot run mybot:MyBot --gateway").commands()
    sh.env["THOUSAND_BOT_TOKEN"] = printed.strip()
    sh.start(step4[0], "mybot3.log")
    sh.wait_for("mybot3.log", "connected|welcome")
    sdk_doc = block("docs/sdk.md", "thousand-bot run mybot:MyBot --gateway HOST:PORT")
    reg4 = sh.run(f"arena bot register sdk-doc --gateway localhost:{port} --token {token}")
    sh.start(sdk_doc.commands()[0], "sdkdoc.log", **{"HOST:PORT": f"localhost:{port}",
                                                    "TOKEN": reg4.stdout.split()[-1]})
    sh.wait_for("sdkdoc.log", "connected|welcome")
    # The class of docs/sdk.md plays in-process too.
    (sh.cwd / "sdkbot.py").write_text(block("docs/sdk.md", "class MyBot(Bot):").text)
    sh.run("arena match sdkbot.py:MyBot greedy random --max-deals 1 -q")

    # docs/demo.md: the built-in bots over the SDK, each with a token of its own.
    builtin = block("docs/demo.md", "thousand-bot run arena.server.builtin_remote:Greedy --")
    for i, line in enumerate(builtin.commands()):
        name = line.split(":")[1].split()[0].lower()
        tok = sh.run(f"arena bot register {name}-sdk --gateway localhost:{port} "
                     f"--token {token}").stdout.split()[-1]
        sh.start(line, f"builtin{i}.log", **{"HOST:PORT": f"localhost:{port}", "TOKEN": tok})
        sh.wait_for(f"builtin{i}.log", "connected|welcome")

    # The Node.js bot, from a copy of its folder (npm ci replaces node_modules).
    if shutil.which("node") and shutil.which("npm"):
        js = sh.cwd / "sdk" / "javascript"
        shutil.copytree(REPO / "sdk" / "javascript", js,
                        ignore=shutil.ignore_patterns("node_modules"))
        (sh.cwd / "proto").symlink_to(REPO / "proto")
        node = block("sdk/javascript/README.md", "npm ci").commands()
        assert node[0] == "npm ci" and node[1].startswith("export THOUSAND_BOT_TOKEN=")
        sh.run(f"cd sdk/javascript && {node[0]}", timeout=300)
        js_token = sh.run(f"arena bot register js-bot --gateway localhost:{port} "
                          f"--token {token}").stdout.split()[-1]
        sh.env["THOUSAND_BOT_TOKEN"] = js_token
        sh.start(f"cd sdk/javascript && {sh.fill(node[2])}", "node.log")
        sh.wait_for("node.log", "connected as")
        sdk_js = block("docs/sdk.md", "cd sdk/javascript && npm ci").commands()
        assert sdk_js[0] == "cd sdk/javascript && npm ci"
        sh.start(f"cd sdk/javascript && {sdk_js[1]}", "node2.log",
                 **{"HOST:PORT": f"localhost:{port}", "TOKEN": js_token})
        sh.wait_for("node2.log", "connected as")
        decide = block("sdk/javascript/README.md", "function decide(obs, legal)")
        assert decide.text.split("{")[0] in (js / "bot.js").read_text()
    listed = sh.run(f"arena bot list --gateway localhost:{port} --json")
    instances = {r["name"]: r["instances"] for r in json.loads(listed.stdout)}
    assert instances["my-bot"] == 1 and instances["greedy-sdk"] == 1, instances

    # docs/bots.md: the author's bot against greedy; and docs/referee.md's minimal bot.
    compared = sh.run(block("docs/bots.md", "arena bots compare mybot.py:MyBot").commands()[0],
                      timeout=300)
    assert "mybot.py:MyBot against greedy x2, classic, 300 games" in compared.stdout
    first_legal = block("docs/referee.md", "class FirstLegal:")
    (sh.cwd / "mybot.py").write_text(mybot.text + "\n\n" + first_legal.text)
    sh.run("arena match mybot.py:FirstLegal greedy greedy --max-deals 2 -q")


def test_the_sdk_installs_into_a_fresh_environment_as_its_readme_says(sh: Shell) -> None:
    shutil.copytree(REPO / "sdk" / "python", sh.cwd / "sdk" / "python",
                    ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    install = block("sdk/python/README.md", "pip install ./sdk/python")
    script = "\n".join(install.commands())
    sh.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    res = sh.run(script, timeout=600)
    assert res.stdout.strip().splitlines()[-1] == "thousand-bot 0.1.0"


# ------------------------------------------------------------------ an organiser's path


def test_an_organiser_follows_the_readme_and_the_tournament_manual(sh: Shell) -> None:
    """README "For organisers" and docs/tournaments.md: check, run (local pool, then
    Celery workers), leaderboard and report; plan, status, a secret-seeded tournament's
    run, reveal and verify; the worker's metrics."""
    redis = RedisProcess.start(sh.cwd / "redis", sh.cwd / "redis.log")
    try:
        sh.subs = {"redis://127.0.0.1:6379/0": redis.url, "9102": str(free_port()),
                   "9103": str(free_port())}
        check, run, worker, celery, board, report = block(
            "README.md", "arena tournament check examples/duplicate-classic.yaml").commands()
        assert "classic-duplicate: duplicate" in sh.run(check).stdout
        sh.run(run, timeout=600)
        sh.start(worker, "worker.log")
        sh.wait_for("worker.log", r"ready", timeout=120)
        sh.run(celery, timeout=600)
        shown = sh.run(board)
        printed = block("docs/tournaments.md", "tournament classic-duplicate: 120 games").text
        assert shown.stdout == printed, shown.stdout
        sh.run(report)
        assert "<svg" in (sh.cwd / "report.html").read_text()

        # docs/tournaments.md: the same first commands, and leaderboard/report synopses.
        manual = block("docs/tournaments.md", "# validate, say what it would play").commands()
        assert manual == [check, run, board, report]
        for synopsis_block in (
            block("docs/tournaments.md", "arena leaderboard --db sqlite:///classic-duplicate"
                  ".sqlite3 ["),
            block("docs/tournaments.md", "--out report.html [--tournament NAME]"),
        ):
            synopsis = synopsis_block.commands()[0]
            base = synopsis.split(" [")[0]
            sh.run(base)
            helptext = sh.run(" ".join(base.split()[:2]) + " --help").stdout
            assert all(o in helptext for o in options_of(synopsis)), synopsis

        # The other tournament commands, on the classic spec and on a secret-seeded one.
        others = block("docs/tournaments.md", "arena tournament check SPEC").commands()
        spec = "examples/duplicate-classic.yaml"
        for line in others[:3]:
            sh.run(line, SPEC=spec)
        secret = sh.cwd / "secret.yaml"
        secret.write_text(yaml.safe_dump({
            "name": "secret-cup", "rules": "classic", "public_seed": False,
            "participants": ["greedy", "random", {"name": "g2", "bot": "greedy"}],
            "format": "duplicate", "sets": 1, "max_deals": 2, "executor": "inline",
            "db": "sqlite:///secret.sqlite3"}))
        run_s, reveal_s, verify_s = block("docs/tournaments.md", "reveal.json").commands()
        started = sh.run(run_s, SPEC="secret.yaml")
        commitment = re.search(r"commitment (?:is )?([0-9a-f]{64})",
                               started.stderr + started.stdout)
        assert commitment, started.stderr
        sh.run(reveal_s, SPEC="secret.yaml")
        assert json.loads((sh.cwd / "reveal.json").read_text())["commitment"] == commitment[1]
        verified = sh.run(verify_s, SPEC="secret.yaml", HEX=commitment[1])
        assert verified.stdout.startswith("OK: secret-cup")
        for line in others[3:]:
            sh.run(line, SPEC="secret.yaml")

        # docs/tournaments.md: the worker with metrics.
        metrics_worker = block("docs/tournaments.md", "arena worker --broker").commands()[0]
        sh.start(metrics_worker, "worker2.log")
        sh.wait_for("worker2.log", r"ready", timeout=120)
        port = sh.subs["9102"]
        sh.run(f"curl -sf http://127.0.0.1:{port}/metrics | grep -q arena_", timeout=60)

        # docs/observability.md, "Running without Compose": gateway, worker and a
        # tournament, each with its metrics port.
        sh.subs.update({"50051": str(free_port()), "9101": str(free_port()),
                        "9102": str(free_port())})
        sh.env["ARENA_BROKER_URL"] = redis.url
        sh.env["ARENA_DB_URL"] = "sqlite:///classic-duplicate.sqlite3"
        gw, mp_worker, tour = block("docs/observability.md", "--metrics-port 9101").commands()
        sh.start(gw, "gw.log")
        sh.wait_for("gw.log", "gateway listening")
        sh.run(f"curl -sf http://127.0.0.1:{sh.subs['9101']}/metrics | grep -q grpc_server",
               timeout=60)
        sh.start(mp_worker.replace("/run/arena-metrics", str(sh.cwd / "mp")), "mp.log")
        sh.wait_for("mp.log", r"ready", timeout=120)
        sh.run(tour, timeout=600)
    finally:
        redis.stop()


def test_the_spec_examples_validate(tmp_path: Path) -> None:
    from arena.tournament.spec import SpecError, validate_spec

    base = yaml.safe_load(block("docs/tournaments.md", "name: classic-duplicate").text)
    validate_spec(base, check_imports=False)
    fragments = [block("docs/tournaments.md", "seatings: all}   # or latin"),
                 block("docs/tournaments.md", "type: gauntlet"),
                 block("docs/tournaments.md", "type: swiss"),
                 block("docs/tournaments.md", "type: sprt"),
                 block("docs/tournaments.md", "type: league")]
    for fragment_block in fragments:
        fragment = yaml.safe_load(fragment_block.text)
        parts = [{"name": "my-new-bot", "bot": "greedy"}, {"name": "new", "bot": "greedy"},
                 {"name": "old", "bot": "random"}, {"name": "x", "bot": "random"}]
        data = {**base, **fragment, "participants": parts}
        if fragment["format"]["type"] == "sprt":
            data["participants"] = parts[1:]
        validate_spec(data, check_imports=False)
    # The sample of messages is what check prints for such a file.
    sample = block("docs/tournaments.md", "examples/cup.yaml: 3 problems:").text
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "cup.yaml").write_text(
        "name: cup\nrules: classic\ngmaes: 10\nformat: duplicate\nsets: 0\n"
        "participants: [greedy, {name: b, bot: grdy}, random]\n")
    with pytest.raises(SpecError) as err:
        from arena.tournament.spec import load_spec

        old = Path.cwd()
        os.chdir(tmp_path)
        try:
            load_spec("examples/cup.yaml")
        finally:
            os.chdir(old)
    assert str(err.value).strip() == sample.strip()


# -------------------------------------------------------------- printed output and snippets


def test_printed_runs_show_what_the_commands_print(sh: Shell) -> None:
    match = block("docs/referee.md", "$ arena match --seed 7 --max-deals 3")
    real = sh.run(match.commands()[0]).stdout.splitlines()
    doc = match.output().splitlines()
    cut = doc.index("...")
    assert real[:cut] == doc[:cut]
    # The story is the same everywhere; the thinking times differ by machine.
    assert [shape(x) for x in real[-(len(doc) - cut - 1):]] == [shape(x) for x in doc[cut + 1:]]
    compare = block("docs/bots.md", "$ arena bots compare greedy random")
    assert sh.run(compare.commands()[0], timeout=300).stdout == compare.output() + "\n"
    bench = block("docs/referee.md", "$ arena bench referee --seconds 5")
    got = sh.run(bench.commands()[0], timeout=120).stdout.splitlines()
    assert [shape(x) for x in got] == [shape(x) for x in bench.output().splitlines()]
    hub = block("docs/protocol.md", "$ arena bench hub --matches 16 --deals 4")
    got = sh.run(hub.commands()[0], timeout=120).stdout.splitlines()
    assert [shape(x) for x in got] == [shape(x) for x in hub.output().splitlines()]
    cli_blocks = [block("docs/cli.md", "arena --version"),
                  block("docs/cli.md", "arena completion bash > arena-completion.bash")]
    for cli_block in cli_blocks:
        for line in cli_block.commands():
            res = sh.run(line)
            assert res.stderr == "", (line, res.stderr)
    assert (sh.cwd / "arena-completion.bash").read_text().count("--decision-ms") >= 2


def test_the_engine_and_library_snippets_run(tmp_path: Path) -> None:
    out = _python(block("README.md", "from arena.engine import Game, Rules").text, {}, tmp_path)
    scores, ranks = out.strip().split("] [")
    assert scores.startswith("[") and ranks.endswith("]")
    ratings: dict[str, Any] = {}
    out = _python(block("docs/ratings.md", "ratings_table(results)").text, ratings, tmp_path)
    assert sorted(line.split()[0] for line in out.splitlines()) == ["alpha", "beta", "gamma"]
    out = _python(block("docs/ratings.md", "PairData.from_results(results)").text, ratings,
                  tmp_path)
    assert "LLR" in out
    api = block("docs/ratings.md", "sprt_bounds(alpha=0.05, beta=0.05)").text
    import arena.ratings as r

    for name in re.findall(r"^(\w+)\(", api, flags=re.M):
        assert hasattr(r, name), name
    (tmp_path / "mymodule.py").write_text(block("sdk/python/README.md", "class MyBot(Bot):").text)
    scope: dict[str, Any] = {}
    _python(block("docs/referee.md", "run_match_sync(spec)").text, scope, tmp_path)
    assert scope["result"].status == "completed"


def test_the_luck_model_commands_run_as_printed(sh: Shell) -> None:
    """docs/ratings.md: the shipped model's name, a small model of one's own (fewer
    training games than printed), and that model's name."""
    shipped, train, own = block("docs/ratings.md", "arena ratings luck-model").commands()
    from arena.engine import Rules
    from arena.ratings.luck import model_for

    model = model_for(Rules.preset("classic"))
    assert model is not None
    assert f"luck model {model.short} (3p-24c-7h-1x3)" in sh.run(shipped).stdout
    made = sh.run(train.replace("--games 200", "--games 12"), timeout=300)
    assert "my-model.npz" in made.stdout and (sh.cwd / "my-model.npz").is_file()
    assert "trained on 12 games of classic" in sh.run(own).stdout
    # docs/bots.md: the benchmark's short run, as JSON.
    bench = block("docs/bots.md",
                  "arena bench luck --sets 4 --pairs greedy --seed doc").commands()[0]
    figures = json.loads(sh.run(f"{bench} --json", timeout=300).stdout)
    assert figures["model"] == model.short
    (pair,) = figures["pairs"]
    assert pair["games"] == 24 and pair["vrf"] > 0 and pair["luck_cpu_share"] is not None


def test_the_fixed_depth_gateway_bench_runs_as_printed(sh: Shell) -> None:
    """protocol.md's --depth example parses as printed, and runs (with a shorter, smaller
    load) holding the gateway and the ping-pong at that depth."""
    line = block("docs/protocol.md", "arena bench gateway --seconds 30 --matches 100 --depth 40"
                 ).commands()[0]
    argv = shlex.split(line)[3:]
    command_parser("arena.bench.gateway", "main").parse_args(argv)
    for option, small in (("--seconds", "2"), ("--matches", "8"), ("--depth", "3")):
        argv[argv.index(option) + 1] = small
    figures = json.loads(sh.run(shlex.join(["arena", "bench", "gateway", *argv, "--rounds",
                                            "1", "--json"]), timeout=180).stdout)
    assert figures["load_run"]["admission_limit_range"] == [3, 3]
    assert figures["pingpong"]["in_flight"] == 3


def test_synopses_name_only_options_the_commands_take() -> None:
    synopses = [
        (block("docs/referee.md", "arena match [--rules PRESET]"), "arena.referee.cli",
         "match_main"),
        (block("docs/referee.md", "arena bot-check BOT [--rules"), "arena.referee.cli",
         "bot_check_main"),
        (block("docs/protocol.md", "arena serve [--host 127.0.0.1]"), "arena.server.app",
         "main_serve"),
        (block("docs/bots.md", "arena bench strength [--bot BOT]"), "arena.bench.strength",
         "bench_main"),
        (block("docs/ratings.md", "arena bench ratings [--n-results"), "arena.bench.ratings",
         "main"),
        (block("docs/ratings.md", "arena bench luck [--sets"), "arena.bench.luck", "bench_main"),
    ]
    for synopsis, module, func in synopses:
        known = {o for a in command_parser(module, func)._actions for o in a.option_strings}
        missing = [o for o in options_of(synopsis.text) if o not in known]
        assert not missing, (synopsis.path, synopsis.line, missing)
    # The recorded strength commands parse; the first one runs with small figures.
    lines = block("docs/bots.md", "--preset classic --sets 40 --seed final").commands()
    parser = command_parser("arena.bench.strength", "bench_main")
    for line in lines:
        parser.parse_args(shlex.split(line)[3:])
    from arena.bench.strength import bench_main

    argv = shlex.split(lines[0])[3:]
    argv[argv.index("--sets") + 1] = "1"
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert bench_main([*argv, "--max-deals", "2"]) == 0
    printed = block("docs/bots.md", "search against greedy, classic: 40 duplicate sets").text
    assert [shape(x).split(" ")[0:3] for x in out.getvalue().splitlines()[:2]] == [
        shape(x).split(" ")[0:3] for x in printed.splitlines()[:2]]


def test_the_protocol_page_quotes_the_proto() -> None:
    rpc = block("docs/protocol.md", "rpc Play(stream PlayRequest)").text.strip()
    assert rpc in (REPO / "proto" / "thousand" / "v1" / "bot.proto").read_text()


def test_the_alert_rules_check_as_the_manual_says(sh: Shell) -> None:
    if shutil.which("promtool") is None:
        pytest.fail("promtool is not installed (scripts/setup.sh --test installs prometheus)")
    lines = block("docs/observability.md", "promtool check config").commands()
    assert lines[0] == "cd deploy/prometheus"
    shutil.copytree(REPO / "deploy", sh.cwd / "deploy")
    sh.run(" && ".join(lines), timeout=120)


def test_the_demo_as_its_manual_prints_it(sh: Shell) -> None:
    """docs/demo.md: the demo with the manual's options, its report as printed (figures
    aside). ``scripts/demo.sh`` and a bare ``arena demo`` are the same run with the
    default 10 sets, which tests/demo plays in small."""
    lines = block("docs/demo.md", "arena demo --sets").commands()
    assert lines[:2] == ["scripts/demo.sh", "arena demo"]
    assert "exec" in (REPO / "scripts" / "demo.sh").read_text()
    res = sh.run(lines[2], timeout=900)
    printed = block("docs/demo.md", "Thousand Arena demo: main").text.splitlines()
    got = [*res.stdout.splitlines(), *res.stderr.splitlines()]
    for doc_line in printed:
        head = " ".join(doc_line.split()[:2])
        if head and not head[0].isdigit() and not head.startswith(("main [", "#", "-")):
            assert any(g.strip().startswith(doc_line.split()[0]) for g in got), doc_line
    assert sys.executable  # the demo used this environment's arena


def test_replay_format_names_the_fields_of_a_real_replay(sh: Shell) -> None:
    sh.run("arena play --seed 3 --replay r.json")
    real = json.loads((sh.cwd / "r.json").read_text())
    doc = json.loads(block("docs/replay.md", '"format": "thousand-replay"').text)
    assert set(doc) - {"match_id"} <= set(real) | {"match_id"}
    assert set(doc["deals"][0]) <= set(real["deals"][0]) | {"deck"}


def test_two_gateways_on_one_machine_as_the_scale_out_manual_runs_them(sh: Shell) -> None:
    """docs/scale-out.md, "On one machine": both blocks as one shell session (the second
    stops the first gateway by its job number), then the clean-up the text gives."""
    for fixed in ("6390", "50061", "50062"):
        sh.subs[fixed] = str(free_port())
    start = block("docs/scale-out.md", "redis-server --port 6390").text
    move = block("docs/scale-out.md", "kill %1").text
    script = f"set -e\n{start}\n{move}\nkill %2 %3; redis-cli -p 6390 shutdown || true\n"
    res = sh.run(script, timeout=180)
    lists = [line for line in res.stdout.splitlines() if line.startswith("scaled")]
    assert len(lists) == 2, res.stdout
    assert lists[0].split()[2] == "0" and lists[1].split()[2] == "1", res.stdout
    assert "reconnecting to 127.0.0.1:" in res.stdout
