"""What the multi-host tests share: the deployment, specs, and the one-machine reference."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.rigs.cluster import CAUTIOUS, GREEDY, Deployment
from arena.tournament.executors import InlineExecutor
from arena.tournament.run import run_tournament
from arena.tournament.spec import validate_spec
from arena.tournament.store import ResultStore

#: The remote bots (SDK processes on the bots host) and their one-process equivalents.
REMOTE = {"g1": GREEDY, "c1": CAUTIOUS}
IN_PROCESS = {"g1": "greedy", "c1": "arena.server.builtin_remote:CautiousGreedyBot"}


def spec_data(name: str, d: Deployment | None, *, sets: int, max_deals: int,
              time_control: dict[str, int], remote: bool = True) -> dict[str, Any]:
    """A duplicate tournament of two remote bots and the built-in random bot."""
    bots = {n: (f"remote:{n}" if remote else IN_PROCESS[n]) for n in REMOTE}
    data: dict[str, Any] = {
        "name": name,
        "seed": f"{name}-seed",
        "public_seed": True,
        "rules": "classic",
        "participants": [{"name": n, "bot": b} for n, b in bots.items()] + ["random"],
        "format": "duplicate",
        "sets": sets,
        "max_deals": max_deals,
        "time_control": time_control,
    }
    if d is not None:
        data["executor"] = {"type": "celery", "routing": d.routing_url}
        data["db"] = d.db_url(name.replace("-", "_"))
    return data


def fingerprint(rows: list[Any]) -> list[tuple[Any, ...]]:
    """What must not depend on where a match was played: outcome and every move."""
    return sorted((*r.outcome_key(), repr(r.replay["deals"] if r.replay else None))
                  for r in rows)


def one_machine(tmp: Path, name: str, **kw: Any) -> list[Any]:
    """The same tournament in this process, the bots in-process: the reference."""
    data = spec_data(name, None, remote=False, **kw)
    data["db"] = f"sqlite:///{tmp / (name + '-reference.sqlite3')}"
    spec = validate_spec(data)
    run_tournament(spec, executor=InlineExecutor())
    with ResultStore(spec.db) as store:
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
