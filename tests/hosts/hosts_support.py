"""What the multi-host tests share: the deployment, specs, and the one-machine reference."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arena.hosted.bundle import pack
from arena.hosted.store import PASSED, HostedStore
from arena.rigs.cluster import CAUTIOUS, GREEDY, STORE_SCHEMA, Deployment
from arena.tournament.executors import InlineExecutor
from arena.tournament.run import run_tournament
from arena.tournament.spec import validate_spec
from arena.tournament.store import ResultStore

#: The remote bots (SDK processes on the bots host) and their one-process equivalents.
REMOTE = {"g1": GREEDY, "c1": CAUTIOUS}
IN_PROCESS = {"g1": "greedy", "c1": "arena.server.builtin_remote:CautiousGreedyBot"}
#: A hosted bot (the SDK's greedy example, submitted as a folder), named ``h1``.
HOSTED = "h1"


def hosted_files(tag: str) -> dict[str, str]:
    """The hosted bot's folder; ``tag`` makes its version (its files' hash) new, so that
    no cache anywhere holds it before the rig's workers fetch it."""
    return {
        "bot.toml": 'runtime = "python"\nentry = "bot.py:Greedy"\n',
        "bot.py": f"# {tag}\nfrom thousand_bot.examples import Greedy\n",
    }


def spec_data(name: str, d: Deployment | None, *, sets: int, max_deals: int,
              time_control: dict[str, int], remote: bool = True,
              hosted: bool = False) -> dict[str, Any]:
    """A duplicate tournament of two remote bots and the built-in random bot (or, with
    ``hosted``, the hosted bot)."""
    bots = {n: (f"remote:{n}" if remote else IN_PROCESS[n]) for n in REMOTE}
    third: Any = {"name": HOSTED, "bot": f"hosted:{HOSTED}"} if hosted else "random"
    data: dict[str, Any] = {
        "name": name,
        "seed": f"{name}-seed",
        "public_seed": True,
        "rules": "classic",
        "participants": [{"name": n, "bot": b} for n, b in bots.items()] + [third],
        "format": "duplicate",
        "sets": sets,
        "max_deals": max_deals,
        "time_control": time_control,
    }
    if d is not None:
        data["executor"] = {"type": "celery", "routing": d.routing_url}
        data["db"] = d.db_url(STORE_SCHEMA)
    return data


def fingerprint(rows: list[Any]) -> list[tuple[Any, ...]]:
    """What must not depend on where a match was played: outcome and every move."""
    return sorted((*r.outcome_key(), repr(r.replay["deals"] if r.replay else None))
                  for r in rows)


@contextmanager
def _own_bot_cache() -> Iterator[None]:
    """A cache of hosted versions of the reference's own, readable by the seats' uids."""
    root = Path(tempfile.mkdtemp(prefix="arena-reference-bots-", dir="/tmp"))
    os.chmod(root, 0o755)
    before = os.environ.get("ARENA_BOT_CACHE")
    os.environ["ARENA_BOT_CACHE"] = str(root)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("ARENA_BOT_CACHE", None)
        else:
            os.environ["ARENA_BOT_CACHE"] = before
        shutil.rmtree(root, ignore_errors=True)


def one_machine(tmp: Path, name: str, hosted_folder: Path | None = None,
                **kw: Any) -> list[Any]:
    """The same tournament in this process, the remote bots in-process and the hosted
    bot's very version in a sandbox here: the reference."""
    data = spec_data(name, None, remote=False, hosted=hosted_folder is not None, **kw)
    data["db"] = f"sqlite:///{tmp / (name + '-reference.sqlite3')}"
    spec = validate_spec(data)
    with ResultStore(spec.db) as store, _own_bot_cache():
        if hosted_folder is not None:
            versions = HostedStore(store)
            version, _ = versions.add_version(HOSTED, pack(hosted_folder))
            versions.set_status(HOSTED, version.hash, PASSED)
        run_tournament(spec, store=store, executor=InlineExecutor())
        return list(store.iter_results(name, with_replay=True))


def wait_until(check: Callable[[], Any], timeout: float, what: str,
               interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
