"""The ``arena`` command line.

Subcommands import their implementation lazily: the engine commands start in a blink and
a missing optional part (say, the gateway) only affects its own subcommand.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

Handler = Callable[[argparse.Namespace], int]


def _rules_list(args: argparse.Namespace) -> int:
    from .engine import PRESETS, Rules

    for name, (desc, _) in PRESETS.items():
        r = Rules.preset(name)
        print(f"{name:<14} {r.players}p  {desc}")
    return 0


def _rules_show(args: argparse.Namespace) -> int:
    from .engine import OPTIONS, Rules, RulesError

    try:
        rules = Rules.preset(args.preset, **_parse_options(args.option))
    except RulesError as e:
        print(f"arena rules show: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"preset": rules.name, "options": rules.options()}, indent=2))
        return 0
    print(f"Preset {rules.name}")
    for o in OPTIONS:
        value = rules.options()[o.name]
        print(f"  {o.name:<24} {json.dumps(value):<22} {o.help}")
    return 0


def _rules_doc(args: argparse.Namespace) -> int:
    from .engine.rules_doc import options_table

    print(options_table())
    return 0


def _parse_options(items: Sequence[str] | None) -> dict[str, Any]:
    """``name=value`` pairs; values are JSON (``true``, ``120``, ``[1,2,3,4]``) or text."""
    from .engine import RulesError

    out: dict[str, Any] = {}
    for item in items or ():
        if "=" not in item:
            raise RulesError(f"option {item!r}: expected name=value")
        key, _, raw = item.partition("=")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


def _earlier(data: dict[str, Any]) -> dict[str, Any]:
    """The replay with the option values of before the engine followed the rule texts."""
    from .engine.rules import with_earlier_defaults

    return {**data, "rules": with_earlier_defaults(data.get("rules"))}


def _earlier_hint(data: dict[str, Any], args: argparse.Namespace) -> None:
    """Say so when the replay is one recorded under the earlier defaults."""
    from .engine import replay as rp
    from .engine.errors import EngineError

    if args.earlier_defaults:
        return
    try:
        ok = rp.verify(_earlier(data)) is None
    except EngineError:
        ok = False
    if ok:
        print(f"hint: it verifies with the defaults of before the engine followed the rule "
              f"texts (docs/rules.md): arena replay {args.replay_command} --earlier-defaults "
              f"{args.file}", file=sys.stderr)
def _load_replay(path: str) -> Any:
    """A replay file, or ReplayError: a binary file (compressed, an image) is not one."""
    from .engine import replay as rp
    from .engine.errors import ReplayError

    try:
        return rp.load(path)
    except UnicodeDecodeError:
        raise ReplayError(
            f"{path} is not a replay: a replay is a JSON text file, this one is binary "
            "(compressed? unpack it first)"
        ) from None


def _replay_verify(args: argparse.Namespace) -> int:
    from .engine import replay as rp
    from .engine.commitment import is_hex64
    from .engine.errors import ReplayError

    data: dict[str, Any] | None = None
    try:
        data = _load_replay(args.file)
        for flag, value in (("--commitment", args.commitment),
                            ("--tournament-secret", args.tournament_secret)):
            if value is not None and not is_hex64(value):
                raise ReplayError(f"{flag}: expected 64 lowercase hex digits")
        if args.earlier_defaults:
            data = _earlier(data)
        diff = rp.verify(data, tournament_secret=args.tournament_secret,
                         expected_commitment=args.commitment)
    except ReplayError as e:
        print(f"invalid replay: {e}", file=sys.stderr)
        if data is not None:
            _earlier_hint(data, args)
        return 2
    if diff is not None:
        print(f"MISMATCH: {diff}")
        _earlier_hint(data, args)
        return 1
    res = data["result"]
    print(f"OK: {len(data['deals'])} deal(s) re-simulated, scores {res['scores']}")
    if "commitment" in data:
        print("OK: " + rp.commitment_summary(data, args.tournament_secret))
    return 0


def _replay_show(args: argparse.Namespace) -> int:
    from .engine import replay as rp
    from .engine.errors import ReplayError

    data: dict[str, Any] | None = None
    try:
        data = _load_replay(args.file)
        print(rp.show(_earlier(data) if args.earlier_defaults else data))
    except ReplayError as e:
        print(f"invalid replay: {e}", file=sys.stderr)
        if data is not None:
            _earlier_hint(data, args)
        return 2
    return 0


def _bench_engine(args: argparse.Namespace) -> int:
    from .bench.engine import bench_engine

    res = bench_engine(args.preset, args.seconds, args.max_deals, play_out=args.play_out)
    if args.json:
        print(json.dumps(res))
    else:
        print(f"engine benchmark, preset {res['preset']}, {res['seconds']} s, one process")
        print(f"  deals/s      {res['deals_per_s']:>10,.0f}")
        print(f"  games/s      {res['games_per_s']:>10,.1f}   (games end at the target or "
              f"after {res['max_deals_per_game']} deals)")
        print(f"  decisions/s  {res['decisions_per_s']:>10,.0f}")
        print(f"  played out   {res['played_out_share']:>10.0%}   (the rest were conceded "
              "after the talon)")
        print(f"  state copy   {res['copy_us']:>10.2f} us")
    return 0


def _play(args: argparse.Namespace) -> int:
    """A seeded game of random bots told deal by deal, through the engine alone."""
    import random

    from .engine import Game, Rules, RulesError
    from .engine import replay as rp
    from .engine.turns import turns

    try:
        opts = _parse_options(args.option)
        opts.setdefault("max_deals", args.max_deals)
        rules = Rules.preset(args.rules, **opts)
    except RulesError as e:
        print(f"arena play: {e}", file=sys.stderr)
        return 2
    game = Game(rules, seed=str(args.seed))
    rngs = [random.Random(f"{args.seed}/seat/{s}") for s in range(rules.players)]
    for seat, legal in turns(game):
        game.apply(legal[rngs[seat].randrange(len(legal))])
    data = rp.replay_from_game(game, ["random"] * rules.players)
    print(rp.show(data))
    if args.replay:
        rp.dump(data, args.replay)
        print(f"replay written to {args.replay}")
    return 0


def _external(module: str, func: str) -> Handler:
    """A subcommand implemented elsewhere as ``func(argv) -> int``."""

    def run(args: argparse.Namespace) -> int:
        import importlib

        try:
            mod = importlib.import_module(module)
        except ImportError as e:
            print(f"arena: this command is not available: {e}", file=sys.stderr)
            return 2
        result: int = getattr(mod, func)(list(args.rest))
        return result

    return run


def _pass_through(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str,
                  help_text: str, module: str, func: str) -> None:
    """``name``, a subcommand whose arguments (``--help`` included) all go to
    ``module.func``, which parses them itself."""
    parser = sub.add_parser(name, help=help_text, add_help=False)
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    parser.set_defaults(func=_external(module, func))


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .compiled import status

    p = argparse.ArgumentParser(
        prog="arena",
        description="Thousand Arena: bots play 1000. Every command takes --help; exit codes "
        "and conventions: docs/cli.md.",
    )
    p.add_argument(
        "--version", action="version", version=f"arena {__version__}, {status().reason}"
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    rules = sub.add_parser("rules", help="list the presets or show one with its options")
    rsub = rules.add_subparsers(dest="rules_command", required=True)
    rl = rsub.add_parser("list", help="the presets")
    rl.set_defaults(func=_rules_list)
    rs = rsub.add_parser("show", help="a preset's options")
    rs.add_argument("preset")
    rs.add_argument("--option", "-o", action="append", help="name=value, repeatable")
    rs.add_argument("--json", action="store_true")
    rs.set_defaults(func=_rules_show)
    rd = rsub.add_parser("doc", help="the options table of docs/rules.md, in Markdown")
    rd.set_defaults(func=_rules_doc)

    rep = sub.add_parser("replay", help="verify or show a replay file")
    rpsub = rep.add_subparsers(dest="replay_command", required=True)
    earlier = ("a replay recorded before the engine followed the rule texts: fill in the "
               "option values of then (docs/rules.md)")
    rv = rpsub.add_parser("verify", help="re-simulate: exit 0 match, 1 mismatch, 2 invalid")
    rv.add_argument("file")
    rv.add_argument("--commitment", metavar="HEX",
                    help="the seed commitment the match showed at its start: the replay's must "
                    "be this one")
    rv.add_argument("--tournament-secret", metavar="HEX",
                    help="a tournament's revealed secret: check the seed is derived from it")
    rv.add_argument("--earlier-defaults", action="store_true", help=earlier)
    rv.set_defaults(func=_replay_verify)
    rsh = rpsub.add_parser("show", help="the game deal by deal")
    rsh.add_argument("file")
    rsh.add_argument("--earlier-defaults", action="store_true", help=earlier)
    rsh.set_defaults(func=_replay_show)
    _pass_through(rpsub, "export", "replay files and text records out of a results store",
                  "arena.web.cli", "export_main")

    play = sub.add_parser("play", help="a seeded game of random bots through the engine alone")
    play.add_argument("--rules", default="classic")
    play.add_argument("--option", "-o", action="append", help="name=value, repeatable")
    play.add_argument("--seed", default="1")
    play.add_argument("--replay", help="write the replay here")
    play.add_argument("--max-deals", type=int, default=20,
                      help="end the game after this many deals (random bots rarely reach 1000)")
    play.set_defaults(func=_play)

    bench = sub.add_parser("bench", help="benchmarks that print figures")
    bsub = bench.add_subparsers(dest="bench_command", required=True)
    be = bsub.add_parser("engine", help="deals/s of random legal play in one process")
    be.add_argument("--preset", default="classic")
    be.add_argument("--seconds", type=float, default=5.0)
    be.add_argument("--max-deals", type=int, default=50)
    be.add_argument("--play-out", action="store_true",
                    help="never concede: every deal is played to the last trick")
    be.add_argument("--json", action="store_true")
    be.set_defaults(func=_bench_engine)
    for name, module, func, help_text in _EXTERNAL_BENCH:
        _pass_through(bsub, name, help_text, module, func)
    for name, module, func, help_text in _EXTERNAL:
        _pass_through(sub, name, help_text, module, func)

    comp = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or tcsh)",
        description="Print the completion script of every arena command and option. "
        "bash: arena completion bash > ~/.local/share/bash-completion/completions/arena; "
        "zsh: arena completion zsh > \"${fpath[1]}/_arena\"; then start a new shell.",
    )
    comp.add_argument("shell", choices=("bash", "zsh", "tcsh"))
    comp.set_defaults(func=_completion)
    return p


def _completion(args: argparse.Namespace) -> int:
    from .completion import completion_script

    print(completion_script(args.shell, build_parser(), _EXTERNAL, _EXTERNAL_BENCH), end="")
    return 0


# Subcommands whose argument parsing lives with their implementation.
_EXTERNAL: list[tuple[str, str, str, str]] = [
    ("demo", "arena.demo", "demo_main",
     "the main job: a seeded duplicate tournament of the built-in bots through the gateway"),
    ("match", "arena.referee.cli", "match_main",
     "one seeded match between any bots, told deal by deal, with a replay"),
    ("bot-check", "arena.referee.cli", "bot_check_main",
     "conformance check of a bot: protocol errors, illegal moves, timeouts, latency"),
    ("serve", "arena.server.app", "main_serve", "run the gRPC gateway remote bots connect to"),
    ("worker", "workers.app", "worker_main", "run a Celery worker for distributed tournaments"),
    ("tournament", "arena.tournament.cli", "tournament_main",
     "run, check, plan or inspect a tournament from a spec file"),
    ("leaderboard", "arena.tournament.leaderboard", "leaderboard_main",
     "ratings with confidence intervals and per-bot statistics (text, JSON, CSV)"),
    ("report", "arena.web.report", "report_main",
     "an HTML report with a rating plot"),
    ("watch", "arena.observability.watch", "main", "follow a match live from the gateway"),
    ("web", "arena.web.cli", "web_main",
     "tournaments, leaderboards, matches, replays and live matches in a browser"),
    ("bot", "arena.server.admin", "bot_main",
     "register, list, revoke or rotate bots on a gateway (organiser token)"),
    ("bots", "arena.referee.bots_cli", "bots_main",
     "list the built-in bots, or compare two on seeded games"),
    ("doctor", "arena.sandbox.doctor", "doctor_main",
     "which isolation hosted bots get on this host (sandbox, cgroups, uids, seccomp)"),
    ("runtimes", "arena.sandbox.runtimes", "runtimes_main",
     "install or list the runtimes of hosted bots (python, node)"),
    ("ratings", "arena.ratings.luck.cli", "ratings_main",
     "the luck model behind luck-adjusted results: train it, say which one is used"),
]
_EXTERNAL_BENCH: list[tuple[str, str, str, str]] = [
    ("gateway", "arena.bench.gateway", "main",
     "decisions/s and added latency through one gateway with three remote bots"),
    ("tournament", "arena.bench.tournament", "bench_main",
     "games/s with the local pool and with Celery workers; ratings time"),
    ("ratings", "arena.bench.ratings", "main", "ratings with CIs for many game results"),
    ("poll", "arena.bench.poll", "main",
     "the scheduler's cost per poll at 10k, 100k and 1M results of a 1-deal tournament"),
    ("referee", "arena.bench.referee", "bench_main", "in-process decisions/s through the referee"),
    ("hub", "arena.bench.hub", "main",
     "the gateway's referee and hub per decision without gRPC (callgrind-ready)"),
    ("memory", "arena.bench.memory", "main",
     "gateway memory after many finished full-length matches"),
    ("web", "arena.bench.web", "bench_main",
     "page and API latency of arena web on a store of 100,000 matches"),
    ("hosted", "arena.bench.hosted", "main",
     "sandbox start, time per decision and games/s of hosted bots, against remote clients"),
    ("strength", "arena.bench.strength", "bench_main",
     "Elo of a bot over an opponent in duplicate sets, with decision-time percentiles"),
    ("stdio", "arena.bench.stdio", "main",
     "time a decision costs a bot program on the text protocol against the same bot over "
     "gRPC"),
    ("luck", "arena.bench.luck", "bench_main",
     "variance of raw and luck-adjusted duplicate-set results for two close pairs of bots"),
    ("hosts", "arena.bench.hosts", "main",
     "simulated hosts (root): games/s with 1-3 worker hosts, decisions at 0-20 ms delay"),
]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status is the table of docs/cli.md (:mod:`arena.exitcodes`).

    A closed pipe (``arena leaderboard --json | head``) and Ctrl-C end any command the same
    way, with one line or none, never a traceback.
    """
    from . import exitcodes

    try:
        return _dispatch(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:
        exitcodes.silence_stdout()
        return exitcodes.BROKEN_PIPE
    except KeyboardInterrupt:
        print("arena: interrupted", file=sys.stderr)
        return exitcodes.INTERRUPTED


def _dispatch(argv: list[str]) -> int:
    # Subcommands that parse their own arguments get them untouched (--help included).
    external = {name: (m, f) for name, m, f, _ in _EXTERNAL}
    bench = {name: (m, f) for name, m, f, _ in _EXTERNAL_BENCH}
    if argv and argv[0] in external:
        return _external(*external[argv[0]])(argparse.Namespace(rest=argv[1:]))
    if argv[:2] == ["replay", "export"]:
        return _external("arena.web.cli", "export_main")(argparse.Namespace(rest=argv[2:]))
    if len(argv) > 1 and argv[0] == "bench" and argv[1] in bench:
        return _external(*bench[argv[1]])(argparse.Namespace(rest=argv[2:]))
    args = build_parser().parse_args(argv)
    func: Handler = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
