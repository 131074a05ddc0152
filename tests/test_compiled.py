"""The compiled hot path (``arena.compiled``): it is what runs here, it plays exactly as its
source does, and a source edited after the build is run as source, never shadowed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena import compiled

REPO = Path(__file__).resolve().parents[1]

#: Plays seeded matches of every preset through the referee (built-in bots) and encodes
#: every decision request of a game as the gateway writes it; prints one digest a line.
PLAY = """
import hashlib, json
import arena.compiled
from arena.engine import Game, Rules
from arena.engine.rules import PRESETS
from arena.match.types import DecisionRequest, MatchSpec
from arena.referee.runner import run_match_sync
from arena.server.wire import ObservationEncoder, decision_request_bytes

print(arena.compiled.status().compiled)
for preset in PRESETS:
    players = Rules.preset(preset).players
    for seed in ("one", "two"):
        bots = ("greedy", "random", "greedy", "random")[:players]
        spec = MatchSpec(match_id=f"{preset}-{seed}", rules={"preset": preset},
                         seed=f"{preset}/{seed}", bots=bots, max_deals=8)
        result = run_match_sync(spec)
        replay = json.dumps(result.replay, sort_keys=True).encode()
        print(preset, seed, result.scores, result.ranks, hashlib.sha256(replay).hexdigest())
    game = Game(Rules.preset(preset, max_deals=3), seed=f"wire/{preset}")
    encoders = [ObservationEncoder() for _ in range(players)]
    wire = hashlib.sha256()
    n = 0
    while not game.is_over:
        if game.is_chance:
            game.deal()
            continue
        seat = game.to_act
        legal = game.legal_actions()
        request = DecisionRequest(match_id="m", request_id=f"m/{n}", seat=seat,
                                  observation=game.observation(seat),
                                  legal=tuple(a.text for a in legal), deadline_ms=50,
                                  time_bank_ms=0)
        wire.update(decision_request_bytes(request, encoders[seat]))
        game.apply(legal[n % len(legal)])
        n += 1
    print(preset, "wire", n, wire.hexdigest())
"""


def _run(
    code: str, env: dict[str, str] | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _compiled_here() -> None:
    if not compiled.status().compiled:
        pytest.skip(f"the arena runs as source here: {compiled.status().reason}")


def test_the_hot_path_runs_compiled_in_this_install() -> None:
    """The tests exercise what users run. ``ARENA_PURE=1`` runs them on the source."""
    if os.environ.get(compiled.PURE_ENV, "") not in ("", "0"):
        pytest.skip(f"{compiled.PURE_ENV} is set")
    status = compiled.status()
    assert status.compiled, status.reason
    import arena.engine.game
    import arena.server.hub

    for module in (arena.engine.game, arena.server.hub):
        assert not str(module.__file__).endswith(".py"), module.__file__


def test_compiled_and_source_play_every_preset_alike() -> None:
    _compiled_here()
    fast = _run(PLAY)
    slow = _run(PLAY, {compiled.PURE_ENV: "1"})
    assert fast.returncode == 0, fast.stderr
    assert slow.returncode == 0, slow.stderr
    fast_lines, slow_lines = fast.stdout.splitlines(), slow.stdout.splitlines()
    assert fast_lines[0] == "True" and slow_lines[0] == "False"
    assert len(fast_lines) > 20
    assert fast_lines[1:] == slow_lines[1:]


def test_a_source_edited_after_the_build_runs_as_source(tmp_path: Path) -> None:
    """A copy of the installed package with one compiled module's source changed: that
    edit is what runs (all of the group from source, with a warning), never the build."""
    _compiled_here()
    copy = tmp_path / "arena"
    shutil.copytree(REPO / "arena", copy, ignore=shutil.ignore_patterns("__pycache__"))
    probe = (
        "import arena, arena.compiled as c, arena.engine.game as g, arena.server.hub as h\n"
        "print(c.status().compiled, g.__file__.endswith('.py'), h.__file__.endswith('.py'))\n"
        "print(getattr(g, 'EDITED', None))\n"
    )
    env = {"PYTHONPATH": str(tmp_path)}
    untouched = _run(probe, env, cwd=tmp_path)
    assert untouched.returncode == 0, untouched.stderr
    assert untouched.stdout.splitlines() == ["True False False", "None"]
    assert untouched.stderr == ""

    source = copy / "engine" / "game.py"
    source.write_text(source.read_text(encoding="utf-8") + "\nEDITED = 'yes'\n")
    edited = _run(probe, env, cwd=tmp_path)
    assert edited.returncode == 0, edited.stderr
    assert edited.stdout.splitlines() == ["False True True", "yes"]
    assert "game.py of arena.engine.game changed since it was compiled" in edited.stderr


def test_status_reasons_say_what_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)
    manifest = tmp_path / compiled.MANIFEST_NAME
    assert "installed without compiling" in compiled._check(manifest, compiled.MODULES).reason
    manifest.write_text("{not json")
    assert "unreadable" in compiled._check(manifest, compiled.MODULES).reason
    digests = {m: compiled.digest(compiled.source_path(m)) for m in compiled.MODULES}
    wrong = dict(digests, **{"arena.server.wire": "0" * 64})
    manifest.write_text(json.dumps({"mypyc": "x", "modules": wrong}))
    reason = compiled._check(manifest, compiled.MODULES).reason
    if compiled.status().compiled:
        assert "wire.py of arena.server.wire changed since it was compiled" in reason
        assert compiled._check(manifest, compiled.MODULES).stale
        manifest.write_text(json.dumps({"mypyc": "x", "modules": digests}))
        assert compiled._check(manifest, compiled.MODULES).compiled


@pytest.mark.parametrize("env", [{"ARENA_COMPILE": "0"}, {"CC": "false"}], ids=["off", "no-cc"])
def test_a_build_told_not_to_or_unable_to_compile_is_pure(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """The wheel holds no extension module and no digests, and the checkout's own in-place
    build (an editable install) is left as it was."""
    import zipfile

    before = {p: p.stat().st_mtime_ns for p in (REPO / "arena").rglob("*.so")}
    manifest = REPO / "arena" / compiled.MANIFEST_NAME
    recorded = manifest.read_bytes() if manifest.exists() else None
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path), str(REPO)],
        capture_output=True, text=True, timeout=600, env={**os.environ, **env}, check=False,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    (wheel,) = tmp_path.glob("thousand_arena-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "arena/engine/game.py" in names
    assert not [n for n in names if n.endswith(".so") or n.endswith(compiled.MANIFEST_NAME)]
    assert {p: p.stat().st_mtime_ns for p in (REPO / "arena").rglob("*.so")} == before
    assert (manifest.read_bytes() if manifest.exists() else None) == recorded
