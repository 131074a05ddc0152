"""Golden files: replays that ``arena replay verify`` must accept (and reject when
tampered with), and the legal-action counts of scripted games.

The files are written by ``tests/engine/make_golden.py``; a failure here after a
deliberate rule change means: regenerate them and review the diff.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import make_golden
import pytest

from arena.engine import Game, Rules
from arena.engine import replay as rp
from arena.engine.rules import earlier_defaults

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
REPLAYS = sorted(GOLDEN.glob("replay-*.json"))


def arena(*args: str, script: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a real process: ``python -m arena.cli`` or the ``arena`` script."""
    if script:
        cmd = [str(Path(sys.executable).parent / "arena"), *args]
    else:
        cmd = [sys.executable, "-m", "arena.cli", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def write(tmp_path: Path, data: Any, name: str = "r.json") -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return p


def test_every_preset_has_a_golden_replay() -> None:
    names = {p.stem.removeprefix("replay-") for p in REPLAYS}
    assert names == set(make_golden.CONFIGS)
    for p in REPLAYS:
        data = load(p)
        assert Rules.from_json(data["rules"]).name == make_golden.CONFIGS[
            p.stem.removeprefix("replay-")][0]


@pytest.mark.parametrize("path", REPLAYS, ids=lambda p: p.stem)
def test_golden_replay_verifies(path: Path) -> None:
    res = arena("replay", "verify", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
    data = load(path)
    assert res.stdout.strip() == (
        f"OK: {len(data['deals'])} deal(s) re-simulated, scores {data['result']['scores']}"
    )
    # In process too: no difference, and the game really ended.
    assert rp.verify(data) is None
    assert rp.simulate(data).game.is_over


def test_every_game_the_earlier_defaults_played_differently_is_kept() -> None:
    """A preset whose defaults changed to follow a rule text keeps the game its earlier
    defaults played (``-old-defaults``) whenever the scripted game differs: replays
    recorded before the change verify with those values written in."""
    for name, (preset, options) in list(make_golden.CONFIGS.items()):
        if name.endswith("-old-defaults"):
            continue
        earlier = {**options, **earlier_defaults(preset)}
        old = Game(Rules.preset(preset, **earlier), seed=make_golden.seed_of(name))
        new = Game(Rules.preset(preset, **options), seed=make_golden.seed_of(name))
        log_old = rp.replay_from_game(make_golden.play_game(old)[0], [])["deals"]
        log_new = rp.replay_from_game(make_golden.play_game(new)[0], [])["deals"]
        kept = f"{name}-old-defaults" in make_golden.CONFIGS
        assert kept == (log_old != log_new), name


def test_console_script_verifies() -> None:
    res = arena("replay", "verify", str(REPLAYS[0]), script=True)
    assert res.returncode == 0, res.stderr


def test_golden_files_are_up_to_date() -> None:
    """Regenerating gives the committed bytes: the engine still plays these games the
    same way (else: run make_golden.py and review the diff)."""
    for path, text in make_golden.expected_files().items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is out of date"


def test_tampered_final_score_exits_1(tmp_path: Path) -> None:
    data = load(GOLDEN / "replay-classic.json")
    data["result"]["scores"][0] += 5
    res = arena("replay", "verify", str(write(tmp_path, data)))
    assert res.returncode == 1
    want = data["result"]["scores"]
    got = list(want)
    got[0] -= 5
    assert res.stdout.strip() == f"MISMATCH: result.scores: recorded {want}, re-simulated {got}"


def test_tampered_deal_score_names_the_first_difference(tmp_path: Path) -> None:
    data = load(GOLDEN / "replay-estonian.json")
    scored = [i for i, d in enumerate(data["deals"]) if "scores" in d]
    first, second = scored[1], scored[2]
    true_first = list(data["deals"][first]["scores"])
    data["deals"][second]["scores"][1] -= 10
    data["deals"][first]["scores"][0] += 10
    res = arena("replay", "verify", str(write(tmp_path, data)))
    assert res.returncode == 1
    assert res.stdout.startswith(
        f"MISMATCH: deals[{first}]: recorded scores {data['deals'][first]['scores']}, "
        f"re-simulated {true_first}"
    )


def test_tampered_ranks_and_status(tmp_path: Path) -> None:
    data = load(GOLDEN / "replay-german-1001.json")
    bad = copy.deepcopy(data)
    bad["result"]["ranks"] = list(reversed(bad["result"]["ranks"]))
    res = arena("replay", "verify", str(write(tmp_path, bad)))
    assert res.returncode == 1 and "result.ranks" in res.stdout
    bad = copy.deepcopy(data)
    bad["result"]["status"] = "unfinished"
    res = arena("replay", "verify", str(write(tmp_path, bad)))
    assert res.returncode == 1 and "result.status" in res.stdout


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "a replay is a JSON object"),
        ('{"format": "chess-pgn"}', "field 'format': expected 'thousand-replay'"),
    ],
)
def test_malformed_files_exit_2(tmp_path: Path, content: str, fragment: str) -> None:
    res = arena("replay", "verify", str(write(tmp_path, content)))
    assert res.returncode == 2
    assert res.stderr.startswith("invalid replay:") and fragment in res.stderr
    assert res.stdout == ""


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda d: d.update(format_version=99), "field 'format_version'"),
        (lambda d: d.pop("seed"), "field 'seed': missing or not a str"),
        (lambda d: d.update(rules={"preset": "nope"}), "field 'rules': unknown preset 'nope'"),
        (lambda d: d.update(seats=["a"]), "field 'seats': 1 seats for 3 players"),
        (lambda d: d["deals"][0]["actions"].__setitem__(0, ["x", 1]),
         "deals[0].actions[0]: expected [seat, \"action\"]"),
        (lambda d: d["deals"][0].__setitem__("deck", ["AS"] * 24),
         "deals[0].deck: an explicit deck must hold each of the 24 cards exactly once"),
    ],
)
def test_bad_fields_exit_2(tmp_path: Path, change: Any, fragment: str) -> None:
    data = load(GOLDEN / "replay-classic.json")
    change(data)
    res = arena("replay", "verify", str(write(tmp_path, data)))
    assert res.returncode == 2, res.stdout
    assert fragment in res.stderr


def test_illegal_action_exits_2_naming_its_index_and_why(tmp_path: Path) -> None:
    data = load(GOLDEN / "replay-classic.json")
    # Find a play where the seat is not leading and change it to a card it lacks.
    for i, deal in enumerate(data["deals"]):
        acts = deal["actions"]
        for j, (seat, text) in enumerate(a[:2] for a in acts):
            if text.startswith("play"):
                held = rp.simulate(_cut(data, i, j)).game.observation(seat)["hand"]
                missing = next(c for c in ("AS", "AC", "AH", "AD", "TS") if c not in held)
                acts[j] = [seat, f"play {missing}"]
                res = arena("replay", "verify", str(write(tmp_path, data)))
                assert res.returncode == 2
                assert res.stderr.strip() == (
                    f"invalid replay: deals[{i}].actions[{j}] ({seat}: 'play {missing}'): "
                    f"play {missing}: seat {seat} does not hold {missing}"
                )
                return
    raise AssertionError("no play found")


def _cut(data: dict[str, Any], deal: int, action: int) -> dict[str, Any]:
    """The replay up to (not including) one action, unfinished."""
    cut = copy.deepcopy(data)
    cut["deals"] = cut["deals"][: deal + 1]
    cut["deals"][deal]["actions"] = cut["deals"][deal]["actions"][:action]
    cut["deals"][deal].pop("scores", None)
    return cut


def test_wrong_turn_exits_2(tmp_path: Path) -> None:
    data = load(GOLDEN / "replay-two-player.json")
    seat, text = data["deals"][0]["actions"][0][:2]
    data["deals"][0]["actions"][0] = [1 - seat, text]
    res = arena("replay", "verify", str(write(tmp_path, data)))
    assert res.returncode == 2
    assert f"deals[0].actions[0] ({1 - seat}: {text!r}): it is seat {seat}'s turn" in res.stderr


def test_replay_without_decks_is_dealt_from_the_seed(tmp_path: Path) -> None:
    data = load(GOLDEN / "replay-classic-4.json")
    for deal in data["deals"]:
        deal.pop("deck")
    res = arena("replay", "verify", str(write(tmp_path, data)))
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("path", REPLAYS, ids=lambda p: p.stem)
def test_replay_show_prints_every_deal(path: Path) -> None:
    res = arena("replay", "show", str(path))
    assert res.returncode == 0, res.stderr
    data = load(path)
    out = res.stdout
    assert f"seed {data['seed']!r}" in out
    for deal in data["deals"]:
        assert f"Deal {deal['index']} (dealer " in out
        if "redeal" in deal:
            assert f"redeal: {deal['redeal']}" in out
    scored = [d for d in data["deals"] if "scores" in d]
    assert out.count("deal scores:") == len(scored)
    for d in scored:
        assert "totals: " + ", ".join(str(x) for x in d["scores"]) in out
    assert out.rstrip().splitlines()[-1].startswith(f"Result ({data['result']['status']}):")


def test_replay_show_of_a_bad_file_exits_2(tmp_path: Path) -> None:
    res = arena("replay", "show", str(write(tmp_path, "{")))
    assert res.returncode == 2 and "not valid JSON" in res.stderr
    res = arena("replay", "show", str(tmp_path / "missing.json"))
    assert res.returncode == 2 and "cannot read" in res.stderr


# --------------------------------------------------------------------------- perft


def test_legal_action_counts_match_the_golden_file() -> None:
    doc = json.loads((GOLDEN / "legal-counts.json").read_text(encoding="utf-8"))
    assert doc["format"] == "thousand-legal-counts"
    assert [g["name"] for g in doc["games"]] == make_golden.COUNT_CONFIGS
    for g in doc["games"]:
        game, counts, taken = make_golden.play(g["name"], max_deals=3)
        assert Rules.from_json(g["rules"]) == game.rules
        # First divergence, for a readable failure.
        for k, (want, got) in enumerate(zip(g["counts"], counts, strict=False)):
            assert (want, g["actions"][k]) == (got, taken[k]), f"{g['name']} step {k}"
        assert counts == g["counts"] and taken == g["actions"]
        assert game.scores == g["scores"]


@pytest.mark.parametrize("preset", ["classic", "estonian", "two-player-9"])
def test_arena_play_writes_a_replay_that_verifies(tmp_path: Path, preset: str) -> None:
    out = tmp_path / "play.json"
    res = arena("play", "--rules", preset, "--seed", "7", "--max-deals", "3",
                "--replay", str(out))
    assert res.returncode == 0, res.stderr
    assert f"replay written to {out}" in res.stdout
    res = arena("replay", "verify", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
