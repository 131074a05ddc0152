"""Hosted bots for the tests: bot folders (world-readable, as a seat's uid must read them),
a results store with versions in it, and matches of them."""

from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path

from arena.engine.replay import verify
from arena.hosted.bundle import pack
from arena.hosted.store import PASSED, HostedStore, Version
from arena.match.types import MatchSpec, TimeControl
from arena.tournament.model import ScheduledMatch
from arena.tournament.store import ResultStore

REPO = Path(__file__).resolve().parents[2]

FIRST_LEGAL = """
from thousand_bot import Bot


class First(Bot):
    def decide(self, observation, legal):
        return legal[0]
"""

GREEDY_SDK = """
from thousand_bot.examples import Greedy
"""


def open_dir(prefix: str) -> Path:
    """A fresh directory under /tmp that every uid may read (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix=f"arena-{prefix}-", dir="/tmp"))
    os.chmod(path, 0o755)
    return path


def python_bot(root: Path, name: str, source: str = FIRST_LEGAL, entry: str = "bot.py:First",
               extra: dict[str, str] | None = None) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "bot.toml").write_text(f'runtime = "python"\nentry = "{entry}"\n')
    (folder / entry.split(":")[0]).write_text(textwrap.dedent(source))
    for rel, text in (extra or {}).items():
        (folder / rel).write_text(text)
    return folder


def node_bot(root: Path, name: str = "node") -> Path:
    folder = root / name
    folder.mkdir()
    shutil.copy(REPO / "sdk" / "javascript" / "bot.js", folder / "bot.js")
    (folder / "bot.toml").write_text('runtime = "node"\nentry = "bot.js"\n')
    return folder


def binary_bot(root: Path, name: str = "cbot", source: Path | None = None) -> Path:
    """The C starter bot, compiled with the host's C compiler, as a ``binary`` hosted bot."""
    import subprocess

    folder = root / name
    folder.mkdir()
    src = source or REPO / "sdk" / "starters" / "c" / "mybot.c"
    subprocess.run(["cc", "-O2", "-o", str(folder / "mybot"), str(src)], check=True)
    (folder / "bot.toml").write_text('runtime = "binary"\nentry = "mybot"\n')
    return folder


def add_passed(store: ResultStore, name: str, folder: Path) -> Version:
    """Store a version and mark it passed (the check match is tested on its own)."""
    hosted = HostedStore(store)
    version, _ = hosted.add_version(name, pack(folder))
    hosted.set_status(name, version.hash, PASSED)
    return version


def scheduled(index: int, bots: Sequence[str], *, tournament: str = "hosted-test",
              max_deals: int = 3, seed: str = "hosted", decision_ms: int = 2000,
              bank_ms: int = 10000, strike_limit: int = 3) -> ScheduledMatch:
    spec = MatchSpec(
        match_id=f"{tournament}-{index:04d}", rules={"preset": "classic"}, seed=f"{seed}/{index}",
        bots=tuple(bots), max_deals=max_deals,
        time_control=TimeControl(decision_ms, bank_ms, strike_limit),
    )
    players = tuple(f"p{i}-{b.split('@')[0]}" for i, b in enumerate(bots))
    return ScheduledMatch(tournament, index, f"g{index}", 0, players, spec)


def assert_verifies(replay: dict[str, object] | None) -> None:
    assert replay is not None
    assert verify(replay) is None  # type: ignore[arg-type]


def register(port: int, organiser_token: str, name: str) -> str:
    """Register a bot on a gateway; its token."""
    import grpc
    from thousand_bot.proto.thousand.v1 import organiser_pb2, organiser_pb2_grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = organiser_pb2_grpc.OrganiserServiceStub(channel).RegisterBot(
            organiser_pb2.RegisterBotRequest(name=name),
            metadata=[("authorization", f"Bearer {organiser_token}")], timeout=10)
    return str(reply.token)
