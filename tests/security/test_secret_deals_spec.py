"""When a tournament's seed is secret, how its seeds and ids derive, and its life cycle.

Matches here are played by built-in bots on the inline executor (``public_seed: false``
asks for a secret without a remote participant), so the rules are checked quickly; the
hostile cases with a real gateway are in the other files of this folder.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest
from security_support import guesses

from arena.engine import commitment as cm
from arena.tournament.cli import tournament_main
from arena.tournament.formats import expand
from arena.tournament.spec import SpecError, TournamentSpec, validate_spec
from arena.tournament.store import ResultStore

REMOTE = ["greedy", "random", "remote:alice"]
LOCAL = ["greedy", "random", {"name": "g2", "bot": "greedy"}]


def spec_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "cup",
        "rules": "classic",
        "participants": REMOTE,
        "format": "duplicate",
        "sets": 2,
        "max_deals": 2,
        "executor": "inline",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def problems(data: dict[str, Any]) -> str:
    with pytest.raises(SpecError) as info:
        validate_spec(data)
    return str(info.value)


def test_remote_participants_get_a_secret_seed_unless_the_spec_opts_out() -> None:
    secret = validate_spec(spec_data())
    assert secret.secret_seed and secret.seed is None
    assert secret.to_json()["seed"] is None
    assert "seed: remote participants could derive every deal" in problems(spec_data(seed="7"))
    public = validate_spec(spec_data(seed="7", public_seed=True))
    assert public.seed == "7" and not public.secret_seed
    assert validate_spec(spec_data(public_seed=True)).seed == "cup"  # the name, as before
    # Local bots keep their reproducible default; a secret can still be asked for.
    assert validate_spec(spec_data(participants=LOCAL)).seed == "cup"
    assert validate_spec(spec_data(participants=LOCAL, public_seed=False)).secret_seed
    assert "contradicts public_seed: false" in problems(
        spec_data(participants=LOCAL, seed="x", public_seed=False)
    )
    assert "public_seed: must be true or false" in problems(spec_data(public_seed="yes"))


def test_secret_seeds_ids_and_commitments_follow_the_documented_derivation() -> None:
    secret = cm.new_secret()
    spec = validate_spec(spec_data()).with_secret(secret)
    assert secret not in repr(spec) and secret not in json.dumps(spec.to_json())
    plan = expand(spec)
    key = bytes.fromhex(secret)
    commitment = hashlib.sha256(
        b"thousand-arena/v1/tournament\x00cup\x00" + key
    ).hexdigest()
    assert spec.commitment == commitment
    for m in plan:
        k = int(m.group.removeprefix("set-"))
        seed = hmac.new(key, f"set/{k}".encode(), hashlib.sha256).hexdigest()
        mid = hmac.new(key, f"match-id/{m.index}".encode(), hashlib.sha256).hexdigest()[:32]
        assert (m.spec.seed, m.match_id) == (seed, mid)
        assert m.spec.commitment == {
            "seed_commitment": hashlib.sha256(
                f"thousand-arena/v1/seed\x00{mid}\x00{seed}".encode()
            ).hexdigest(),
            "tournament": "cup",
            "tournament_commitment": commitment,
            "key": f"set/{k}",
            "reveal": False,
        }
    # A duplicate set shares its seed, but not its seed commitments.
    set0 = [m for m in plan if m.group == "set-0"]
    assert len({m.spec.seed for m in set0}) == 1
    assert len({m.spec.commitment["seed_commitment"] for m in set0}) == len(set0)  # type: ignore[index]
    # Another secret: other seeds and ids, same shape.
    other = expand(validate_spec(spec_data()).with_secret(cm.new_secret()))
    assert {m.match_id for m in other}.isdisjoint(m.match_id for m in plan)
    assert [(m.group, m.players) for m in other] == [(m.group, m.players) for m in plan]


def test_public_seeds_deal_as_before_and_ids_hash_only_name_and_index() -> None:
    plan = expand(validate_spec(spec_data(participants=LOCAL, seed="s1")))
    for m in plan:
        k = m.group.removeprefix("set-")
        assert m.spec.seed == hashlib.sha256(f"s1/set/{k}".encode()).hexdigest()
        assert m.match_id == hashlib.sha256(f"cup/{m.index}".encode()).hexdigest()[:32]
        assert m.spec.commitment is None


def test_the_guesses_of_the_hostile_tests_find_a_public_tournament_seed() -> None:
    """The search the tournament test runs is no straw man: with the old default (the
    seed is the name) every match seed is among its guesses."""
    plan = expand(validate_spec(spec_data(public_seed=True)))
    assert {m.spec.seed for m in plan} <= guesses({"cup"}, small=0, sets=2)


def write_spec(tmp_path: Path, **changes: Any) -> Path:
    data = spec_data(participants=LOCAL, public_seed=False,
                     db=f"sqlite:///{tmp_path / 'cup.sqlite3'}", **changes)
    path = tmp_path / "cup.json"
    path.write_text(json.dumps(data))
    return path


def load(path: Path) -> TournamentSpec:
    return validate_spec(json.loads(path.read_text()))


def test_the_secret_is_kept_revealed_at_the_end_and_then_closes_the_tournament(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_spec(tmp_path)
    spec = load(path)
    assert tournament_main(["reveal", str(path)]) == 2
    assert "has not started" in capsys.readouterr().err

    assert tournament_main(["run", str(path), "--quiet", "--max-matches", "3"]) == 0
    err = capsys.readouterr().err
    assert "its commitment is" in err
    with ResultStore(spec.db) as store:
        kept = store.get_deal_secret("cup")
    assert kept is not None and not kept.revealed
    assert kept.secret not in err
    assert tournament_main(["reveal", str(path)]) == 2
    assert "has not ended (3 matches stored)" in capsys.readouterr().err
    assert tournament_main(["verify", str(path)]) == 2
    capsys.readouterr()

    assert tournament_main(["run", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"deal secret revealed: {kept.secret}" in out
    with ResultStore(spec.db) as store:
        after = store.get_deal_secret("cup")
        rows = list(store.iter_results("cup"))
    assert after is not None and after.revealed and after.secret == kept.secret
    assert len(rows) == 12
    assert tournament_main(["verify", str(path), "--commitment", kept.commitment]) == 0
    assert "OK: cup: the secret matches its commitment; 12 matches" in capsys.readouterr().out

    # More sets would be dealt from a secret everyone knows now: refused.
    bigger = write_spec(tmp_path, sets=3)
    assert tournament_main(["run", str(bigger), "--quiet"]) == 2
    assert "deal secret was revealed" in capsys.readouterr().err
    with ResultStore(spec.db) as store:
        assert store.count("cup") == 12


def test_a_replay_checks_against_the_revealed_tournament_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.cli import main

    path = write_spec(tmp_path)
    assert tournament_main(["run", str(path), "--quiet"]) == 0
    capsys.readouterr()
    spec = load(path)
    with ResultStore(spec.db) as store:
        secret = store.get_deal_secret("cup")
        rec = next(store.iter_results("cup", with_replay=True))
    assert secret is not None and rec.replay is not None
    assert rec.replay["commitment"]["tournament_commitment"] == secret.commitment
    file = tmp_path / "replay.json"
    file.write_text(json.dumps(rec.replay))
    assert main(["replay", "verify", str(file)]) == 0
    assert "not checked (give its revealed secret" in capsys.readouterr().out
    assert main(["replay", "verify", str(file), "--tournament-secret", secret.secret]) == 0
    assert "derived from tournament 'cup'" in capsys.readouterr().out
    assert main(["replay", "verify", str(file), "--tournament-secret", "cd" * 32]) == 1
    assert "tournament secret: its commitment is" in capsys.readouterr().out
    assert main(["replay", "verify", str(file), "--tournament-secret", "nothex"]) == 2
    assert "--tournament-secret: expected 64 lowercase hex digits" in capsys.readouterr().err
    # The secret revealed inside the replay itself is checked the same way.
    rec.replay["commitment"]["tournament_secret"] = secret.secret
    file.write_text(json.dumps(rec.replay))
    assert main(["replay", "verify", str(file)]) == 0
    capsys.readouterr()


def test_ending_an_unfinished_tournament_reveals_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_spec(tmp_path)
    assert tournament_main(["run", str(path), "--quiet", "--max-matches", "2"]) == 0
    capsys.readouterr()
    assert tournament_main(["reveal", str(path), "--end", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["matches"]) == 2 and cm.is_hex64(data["secret"])
    assert tournament_main(["verify", str(path)]) == 0
    capsys.readouterr()
    assert tournament_main(["run", str(path), "--quiet"]) == 2
    assert "deal secret was revealed" in capsys.readouterr().err


def test_plan_shows_no_secret_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_spec(tmp_path)
    assert tournament_main(["plan", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert len(rows) == 12 and {r["spec"]["seed"] for r in rows} == {None}
    assert {r["spec"]["match_id"] for r in rows} == {"-"}
    assert "shown as '-' until then" in captured.err
    assert tournament_main(["run", str(path), "--quiet", "--max-matches", "1"]) == 0
    capsys.readouterr()
    assert tournament_main(["plan", str(path)]) == 0
    spec = load(path)
    with ResultStore(spec.db) as store:
        (stored,) = store.iter_results("cup")
    assert stored.match_id in capsys.readouterr().out


def test_check_warns_about_a_public_seed_with_remote_participants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pub.json"
    # check also wants the route to the remote bots the run would need.
    routed = {"type": "inline", "routing": "redis://127.0.0.1:6379/0"}
    path.write_text(json.dumps(spec_data(seed="7", public_seed=True, executor=routed)))
    assert tournament_main(["check", str(path)]) == 0
    assert "warning: cup has remote participants and a public seed ('7')" in (
        capsys.readouterr().err
    )
    path.write_text(json.dumps(spec_data(seed="7", executor=routed)))
    assert tournament_main(["check", str(path)]) == 2
    assert "public_seed: true" in capsys.readouterr().err


def test_a_league_keeps_its_seeding_when_a_remote_bot_is_added(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from arena.tournament.formats import LeagueFormat
    from arena.tournament.spec import load_spec

    path = tmp_path / "league.json"
    data = spec_data(participants=LOCAL, format={"type": "league", "rounds": 2}, sets=None)
    path.write_text(json.dumps(data))
    league = LeagueFormat(load_spec(path))
    path.write_text(json.dumps({**data, "participants": [*LOCAL, "remote:alice"]}))
    with caplog.at_level("WARNING"):
        kept = league._reload_from_file()
    assert [p.name for p in kept] == ["greedy", "random", "g2"]
    assert "would change how the deals are seeded" in caplog.text
