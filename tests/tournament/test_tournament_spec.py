"""Spec files: what a correct one becomes, and the message each mistake gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from arena.tournament.spec import SpecError, load_spec, parse_spec, validate_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BASE: dict[str, Any] = {
    "name": "cup",
    "seed": "s1",
    "rules": {"preset": "classic"},
    "participants": [
        {"name": "g", "bot": "greedy"},
        {"name": "r1", "bot": "random"},
        {"name": "r2", "bot": "random"},
    ],
    "format": {"type": "duplicate"},
    "sets": 2,
}


def with_(**changes: Any) -> dict[str, Any]:
    data = {k: v for k, v in BASE.items()}
    for key, value in changes.items():
        if value is _DROP:
            data.pop(key, None)
        else:
            data[key] = value
    return data


_DROP = object()


def test_minimal_spec_and_defaults() -> None:
    spec = validate_spec(BASE)
    assert spec.name == "cup"
    assert spec.seats == 3
    assert [p.name for p in spec.participants] == ["g", "r1", "r2"]
    assert spec.executor.type == "local"
    assert spec.db == "sqlite:///arena.sqlite3"
    assert spec.time_control.decision_ms == 1000
    assert spec.format.seatings == "all"


def test_shorthands() -> None:
    spec = validate_spec(
        with_(
            rules="two-player",
            participants=["greedy", "remote:js-bot"],
            format="duplicate",
            executor="inline",
            seed=42,
            public_seed=True,
        )
    )
    assert spec.seats == 2
    assert [(p.name, p.bot) for p in spec.participants] == [
        ("greedy", "greedy"),
        ("js-bot", "remote:js-bot"),
    ]
    assert spec.executor.type == "inline"
    assert spec.seed == "42"


def test_seed_defaults_to_name() -> None:
    assert validate_spec(with_(seed=_DROP)).seed == "cup"


def test_toml_and_yaml_agree(tmp_path: Path) -> None:
    toml = """
name = "cup"
seed = "s1"
sets = 2
[rules]
preset = "classic"
[format]
type = "duplicate"
[[participants]]
name = "g"
bot = "greedy"
[[participants]]
name = "r1"
bot = "random"
[[participants]]
name = "r2"
bot = "random"
"""
    (tmp_path / "cup.toml").write_text(toml)
    (tmp_path / "cup.yaml").write_text(yaml.safe_dump(BASE))
    a = load_spec(tmp_path / "cup.toml")
    b = load_spec(tmp_path / "cup.yaml")
    assert a.to_json() == b.to_json()


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.*")), ids=lambda p: p.name)
def test_examples_are_valid(path: Path) -> None:
    spec = load_spec(path)
    assert spec.name


# Each case: a change to the base spec, and a piece of the message it must produce.
BAD: list[tuple[str, dict[str, Any], str]] = [
    ("missing name", {"name": _DROP}, "name: is required"),
    ("bad name", {"name": "my cup!"}, "name: must be 1-64 letters"),
    ("unknown field", {"gmaes": 3}, "gmaes: unknown field (did you mean 'games'?)"),
    ("missing rules", {"rules": _DROP}, "rules: is required"),
    ("unknown preset", {"rules": {"preset": "clasic"}}, "rules.preset: unknown preset 'clasic'"),
    (
        "unknown rule option",
        {"rules": {"preset": "classic", "options": {"barel": 900}}},
        "rules.options: unknown option 'barel'",
    ),
    ("rules extra key", {"rules": {"preset": "classic", "opts": {}}}, "rules.opts: unknown field"),
    ("no participants", {"participants": []}, "participants: must be a non-empty list"),
    (
        "unknown bot",
        {"participants": [{"name": "a", "bot": "grdy"}, "random", "greedy"]},
        "participants[0].bot: unknown bot 'grdy' (did you mean 'greedy'?)",
    ),
    (
        "bot missing",
        {"participants": [{"name": "a"}, "random", "greedy"]},
        "participants[0].bot: is required",
    ),
    (
        "duplicate participant",
        {"participants": ["random", "greedy", {"name": "greedy", "bot": "random"}]},
        "participants[2].name: duplicate name 'greedy'",
    ),
    (
        "unimportable module bot",
        {"participants": ["random", "greedy", {"name": "m", "bot": "no_such_mod:Bot"}]},
        "participants[2].bot: cannot import 'no_such_mod'",
    ),
    (
        "module without class",
        {"participants": ["random", "greedy", {"name": "m", "bot": "json:NoSuchBot"}]},
        "participants[2].bot: module 'json' has no 'NoSuchBot'",
    ),
    (
        "bad remote name",
        {"participants": ["random", "greedy", {"name": "x", "bot": "remote:a b"}]},
        "participants[2].bot: bad remote bot name 'a b'",
    ),
    (
        "participant extra key",
        {"participants": ["random", "greedy", {"name": "x", "bot": "random", "elo": 3}]},
        "participants[2].elo: unknown field",
    ),
    (
        "too few participants",
        {"participants": ["random", "greedy"]},
        "participants: 2 participants cannot fill a 3-seat table",
    ),
    ("unknown format", {"format": "knockout"}, "format.type: unknown format 'knockout'"),
    (
        "format option of another format",
        {"format": {"type": "duplicate", "rounds": 3}},
        "format.rounds: not used by format duplicate",
    ),
    (
        "format typo",
        {"format": {"type": "duplicate", "seating": "all"}},
        "format.seating: unknown field (did you mean 'seatings'?)",
    ),
    ("bad seatings", {"format": {"type": "duplicate", "seatings": "some"}}, "format.seatings"),
    ("sets zero", {"sets": 0}, "sets: must be a positive integer"),
    ("sets text", {"sets": "10"}, "sets: must be a positive integer"),
    ("sets missing", {"sets": _DROP}, "sets: is required for format duplicate"),
    (
        "games for duplicate",
        {"games": 10},
        "games: not used by format duplicate; use sets",
    ),
    (
        "games missing for round robin",
        {"format": "round-robin", "sets": _DROP},
        "games: is required for format round-robin",
    ),
    (
        "games negative",
        {"format": "round-robin", "sets": _DROP, "games": -3},
        "games: must be a positive integer",
    ),
    ("games bool", {"format": "round-robin", "sets": _DROP, "games": True}, "games: must be"),
    (
        "gauntlet without candidate",
        {"format": "gauntlet"},
        "format.candidate: is required for format gauntlet",
    ),
    (
        "gauntlet unknown candidate",
        {"format": {"type": "gauntlet", "candidate": "gg"}},
        "format.candidate: 'gg' is not a participant (did you mean 'g'?)",
    ),
    ("swiss without rounds", {"format": "swiss", "sets": _DROP}, "format.rounds: is required"),
    (
        "sprt same players",
        {"format": {"type": "sprt", "candidate": "g", "baseline": "g"}},
        "format.baseline: must differ from format.candidate",
    ),
    (
        "sprt bad hypotheses",
        {"format": {"type": "sprt", "candidate": "g", "baseline": "r1", "elo0": 10, "elo1": 5}},
        "format.elo1: must be greater than format.elo0",
    ),
    (
        "sprt alpha",
        {"format": {"type": "sprt", "candidate": "g", "baseline": "r1", "alpha": 2}},
        "format.alpha: must be a probability",
    ),
    ("max_deals zero", {"max_deals": 0}, "max_deals: must be a positive integer"),
    (
        "time control typo",
        {"time_control": {"decision": 100}},
        "time_control.decision: unknown field (did you mean 'decision_ms'?)",
    ),
    (
        "time control negative",
        {"time_control": {"decision_ms": -1}},
        "time_control.decision_ms: must be a positive integer",
    ),
    ("unknown executor", {"executor": "cluster"}, "executor.type: unknown executor 'cluster'"),
    (
        "executor workers",
        {"executor": {"type": "local", "workers": 0}},
        "executor.workers: must be a positive integer",
    ),
    ("executor broker", {"executor": {"type": "celery", "broker": "localhost"}}, "executor.broker"),
    ("db empty", {"db": ""}, "db: must be a database URL"),
]


@pytest.mark.parametrize(("changes", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_spec_names_the_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError) as info:
        validate_spec(with_(**changes))
    assert message in str(info.value)


def test_all_problems_are_reported_together() -> None:
    with pytest.raises(SpecError) as info:
        validate_spec(with_(sets=0, gmaes=1, participants=["random", "grdy", "greedy"]))
    text = str(info.value)
    assert "3 problems" in text
    assert "sets: must be a positive integer" in text
    assert "gmaes: unknown field" in text
    assert "participants[1].bot: unknown bot 'grdy'" in text
    assert len(info.value.problems) == 3


def test_bad_syntax_and_files(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not valid YAML"):
        parse_spec("name: [unclosed", fmt="yaml")
    with pytest.raises(SpecError, match="not valid TOML"):
        parse_spec("name = ", fmt="toml")
    with pytest.raises(SpecError, match="must be a mapping"):
        parse_spec("- a\n- b\n", fmt="yaml")
    with pytest.raises(SpecError, match="cannot read spec file"):
        load_spec(tmp_path / "missing.yaml")
    odd = tmp_path / "cup.ini"
    odd.write_text("x")
    with pytest.raises(SpecError, match=r"unknown spec file type '\.ini'"):
        load_spec(odd)


def test_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cup.yaml"
    path.write_text(yaml.safe_dump(with_(sets=-1)))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert str(info.value).startswith(f"{path}: sets: must be a positive integer")


def test_overrides_are_validated() -> None:
    spec = validate_spec(BASE)
    assert spec.with_overrides(executor="celery", workers=3).executor.workers == 3
    with pytest.raises(SpecError, match="--workers: must be a positive integer"):
        spec.with_overrides(workers=0)


def test_a_bot_file_is_refused_for_workers_on_other_machines(tmp_path: Path) -> None:
    """A ``file.py:Class`` bot is a file of the machine that reads the spec: Celery workers
    have files of their own, so the spec says so rather than let each match fail there."""
    bot = tmp_path / "mybot.py"
    bot.write_text("class MyBot:\n    def decide(self, observation, legal):\n"
                   "        return legal[0]\n")
    participants = [{"name": "mine", "bot": f"{bot}:MyBot"}, "greedy", "random"]
    local = validate_spec(with_(participants=participants))
    assert local.executor.type == "local"
    with pytest.raises(SpecError) as exc:
        validate_spec(with_(participants=participants, executor="celery"))
    assert exc.value.problems == [
        f"participants[0].bot: '{bot}:MyBot' is a file of this machine, which Celery workers "
        "on other machines cannot read: install it on every worker as a module "
        "(module.path:ClassName on their Python path), or connect it as a remote bot "
        "(thousand-bot run, then remote:NAME)"
    ]
    with pytest.raises(SpecError, match="is a file of this machine"):
        local.with_overrides(executor="celery")
    # A module on the workers' path is theirs to import.
    module = {"name": "g2", "bot": "arena.bots:GreedyBot"}
    validate_spec(with_(participants=["greedy", "random", module], executor="celery"),
                  check_imports=False)
