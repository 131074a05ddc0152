"""``arena ratings``: the luck model behind luck-adjusted results.

``arena ratings train-luck`` plays the training games and writes a model file;
``arena ratings luck-model`` says which model the arena uses for a preset, or for a file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from arena.engine import Rules, RulesError

DEFAULT_GAMES = 20_000


def _train(args: argparse.Namespace) -> int:
    from arena.ratings.luck.features import DealShape
    from arena.ratings.luck.model import model_path
    from arena.ratings.luck.train import train

    try:
        rules = Rules.preset(args.preset)
    except RulesError as exc:
        print(f"arena ratings train-luck: {exc}", file=sys.stderr)
        return 2
    shape = DealShape.of(rules)
    if shape.dealer_sits_out:
        print(f"arena ratings train-luck: preset {args.preset}: a seat sits out each deal; "
              "luck models cover tables where every seat plays", file=sys.stderr)
        return 2
    if args.games < 10:
        print("arena ratings train-luck: --games must be at least 10", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print("arena ratings train-luck: --jobs must be at least 1", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else model_path(shape)
    if not out.parent.is_dir():
        print(f"arena ratings train-luck: no directory {out.parent}", file=sys.stderr)
        return 2
    started = time.monotonic()

    def say(text: str) -> None:
        if not args.quiet:
            print(f"train-luck: {text}", file=sys.stderr, flush=True)

    model = train(args.preset, args.games, jobs=args.jobs, on_progress=say)
    model.save(out)
    elapsed = time.monotonic() - started
    info = {"model": model.short, "digest": model.digest, "file": str(out),
            "shape": shape.key, "preset": args.preset, "games": args.games,
            "seconds": round(elapsed, 1)}
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(f"luck model {model.short} for {shape.key} ({args.preset}), "
              f"{args.games} training games, {elapsed:.0f} s: {out}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from arena.ratings.luck.features import DealShape
    from arena.ratings.luck.model import LuckModel, model_for, model_path

    try:
        if args.file:
            model: LuckModel | None = LuckModel.load(args.file)
            where = args.file
        else:
            rules = Rules.preset(args.preset)
            model = model_for(rules)
            where = str(model_path(DealShape.of(rules)))
    except (OSError, ValueError, KeyError, RulesError) as exc:
        print(f"arena ratings luck-model: {exc}", file=sys.stderr)
        return 2
    if model is None:
        print(f"no luck model for preset {args.preset}: its games show raw results only")
        return 0
    info = {"model": model.short, "digest": model.digest, "file": where,
            "shape": model.shape.key, "preset": model.meta.get("preset"),
            "training": model.meta.get("training")}
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        t = model.meta.get("training") or {}
        print(f"luck model {model.short} ({model.shape.key}), trained on {t.get('games', '?')} "
              f"games of {model.meta.get('preset')} (seeds {t.get('seeds', '?')})\n"
              f"  {where}\n  digest {model.digest}")
    return 0


def ratings_main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="arena ratings",
                                description="The luck model behind luck-adjusted results.")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train-luck", help="play training games and fit a luck model",
                       description="Play seeded training games of the arena's own bots (seeds "
                       "luck-train/PRESET/N, which no tournament uses) and fit the luck model.")
    t.add_argument("--preset", default="classic")
    t.add_argument("--games", type=int, default=DEFAULT_GAMES,
                   help=f"training games (default {DEFAULT_GAMES})")
    t.add_argument("--jobs", type=int, default=2, help="processes playing games (default 2)")
    t.add_argument("--out", help="model file (default: the package's model for the preset)")
    t.add_argument("--json", action="store_true")
    t.add_argument("--quiet", action="store_true", help="no progress lines")
    t.set_defaults(func=_train)
    s = sub.add_parser("luck-model", help="the luck model used for a preset, or in a file")
    s.add_argument("--preset", default="classic")
    s.add_argument("--file", help="a model file instead")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_show)
    args = p.parse_args(list(argv) if argv is not None else None)
    code: int = args.func(args)
    return code
