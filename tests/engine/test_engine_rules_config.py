"""Rules configurations: presets, option validation, JSON round-trips, ``arena rules``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arena.engine import OPTIONS, PRESETS, Game, Rules, RulesError
from arena.engine.rules import OPTION_BY_NAME, Option

ROOT = Path(__file__).resolve().parents[2]


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )


# --------------------------------------------------------------------------- presets


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_builds_and_deals(name: str) -> None:
    rules = Rules.preset(name)
    assert rules.name == name
    game = Game(rules, seed="x")
    game.deal()
    assert not game.is_chance and game.to_act is not None and game.legal_actions()


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_round_trips_through_json(name: str) -> None:
    rules = Rules.preset(name)
    data = rules.to_json()
    assert data == {"preset": name, "options": {}}
    text = json.dumps(data)
    assert Rules.from_json(json.loads(text)) == rules
    assert Rules.from_json(name) == rules
    assert json.loads(rules.dumps()) == data


@pytest.mark.parametrize("name", list(PRESETS))
def test_overrides_round_trip_through_json(name: str) -> None:
    rules = Rules.preset(name, max_deals=7, target=2000)
    data = json.loads(json.dumps(rules.to_json()))
    assert data["options"] == {"max_deals": 7, "target": 2000}
    again = Rules.from_json(data)
    assert again == rules and hash(again) == hash(rules)
    assert again.options() == rules.options()
    assert again != Rules.preset(name)


@pytest.mark.parametrize(
    ("good", "bad"),
    [
        ({"bolts": True}, {"bolts": 1}),
        ({"opening_bid": 120}, {"opening_bid": 120.0}),
        ({"opening_bid": 120}, {"opening_bid": True}),
        ({"marriage_values": [60, 40, 100, 80]}, {"marriage_values": [60, 40, 100, "80"]}),
    ],
)
def test_rules_read_again_from_json_are_checked_as_strictly(
    good: dict[str, Any], bad: dict[str, Any]
) -> None:
    """JSON equal in Python (True == 1 == 1.0) but refused by an option's check is still
    refused after the accepted form was read (and kept for the next reader)."""
    first = Rules.from_json({"preset": "classic", "options": good})
    again = Rules.from_json({"preset": "classic", "options": dict(good)})
    assert again == first
    for _ in range(2):
        with pytest.raises(RulesError):
            Rules.from_json({"preset": "classic", "options": bad})


def test_rules_read_from_json_differ_when_their_options_do() -> None:
    seen = {Rules.from_json({"preset": "classic", "options": {"opening_bid": bid}}).opening_bid
            for bid in range(100, 300, 10)}
    assert seen == set(range(100, 300, 10))


def test_marriage_values_round_trip_as_list_and_as_mapping() -> None:
    rules = Rules.preset("classic", marriage_values={"C": 80, "S": 100, "H": 60, "D": 40})
    assert rules.marriage_values == (80, 100, 60, 40)
    data = json.loads(json.dumps(rules.to_json()))
    assert data["options"] == {"marriage_values": [80, 100, 60, 40]}
    assert Rules.from_json(data) == rules


def test_all_options_listed_with_a_source_and_help() -> None:
    rules = Rules.preset("classic")
    assert set(rules.options()) == set(OPTION_BY_NAME)
    for o in OPTIONS:
        assert o.help and o.source, o.name
        assert json.loads(json.dumps(rules.options()[o.name])) == rules.options()[o.name]


def test_rules_are_immutable() -> None:
    rules = Rules.preset("classic")
    with pytest.raises(AttributeError):
        rules.target = 5


def test_estonian_layout_follows_the_player_count() -> None:
    # 000: "(24 - n) / n" cards each and one talon card per player.
    for n, hand, talon in ((2, 11, 2), (3, 7, 3), (4, 5, 4)):
        r = Rules.preset("estonian", players=n)
        assert (r.hand_size, r.talon_size) == (hand, talon)
    g4 = Rules.preset("german-1001", players=4)
    assert (g4.deck, g4.hand_size) == (32, 8)


# --------------------------------------------------------------------------- validation


def _bad_values(o: Option) -> list[Any]:
    """Values that ``o`` must refuse, whatever the preset."""
    bad: list[Any] = ["text"] if o.kind != "choice" else ["no-such-choice", 3]
    if not o.nullable:
        bad.append(None)
    if o.kind == "bool":
        bad += [1, "true"]
    if o.kind == "int":
        bad += [1.5, True]
        if o.low is not None:
            bad.append(o.low - 1)
        if o.high is not None:
            bad.append(o.high + 1)
        if o.choices:
            bad.append(max(o.choices) + 1)
    if o.kind == "suits":
        bad += [[1, 2, 3], [1, 2, 3, -4], [1, 2, 3, "4"], {"C": 1}, [1, 2, 3, 2000]]
    return bad


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_bad_values_are_refused_naming_the_option(option: Option) -> None:
    for value in _bad_values(option):
        with pytest.raises(RulesError) as info:
            Rules.preset("classic", **{option.name: value})
        assert f"'{option.name}'" in str(info.value), (value, str(info.value))


def test_unknown_option_suggests_a_name() -> None:
    with pytest.raises(RulesError, match=r"unknown option 'barel' \(did you mean 'barrel'\?\)"):
        Rules.preset("classic", barel=900)
    with pytest.raises(RulesError, match=r"unknown option 'zzz'$"):
        Rules.preset("classic", zzz=1)


def test_unknown_preset() -> None:
    with pytest.raises(RulesError, match="unknown preset 'clasic'; known: classic"):
        Rules.preset("clasic")


# (preset, options, the option the message names)
IMPOSSIBLE: list[tuple[str, dict[str, Any], str]] = [
    ("classic", {"dealer_sits_out": True}, "dealer_sits_out"),
    ("classic", {"sitter_scores_talon": True}, "sitter_scores_talon"),
    ("classic-4", {"opener": "dealer"}, "opener"),
    ("classic-4", {"first_lead": "dealer"}, "first_lead"),
    ("classic", {"hand_size": 8}, "hand_size"),
    ("classic", {"players": 4}, "hand_size"),
    ("classic", {"talons": 2}, "hand_size"),
    ("classic", {"exchange": "none"}, "exchange"),
    ("german-1001", {"exchange": "give"}, "exchange"),
    ("classic", {"auction": False}, "auction"),
    ("two-player", {"exchange": "none"}, "exchange"),
    ("estonian", {"players": 4, "hand_size": 4, "talon_size": 8}, "talon_size"),
    ("classic", {"exchange": "discard"}, "exchange"),
    ("classic", {"exchange": "bank"}, "exchange"),
    ("two-player-9", {"hand_size": 11, "talon_size": 1}, "talon_size"),
    ("classic", {"spare_talon": "last-trick"}, "spare_talon"),
    ("two-player-9", {"spare_talon": "last-trick"}, "spare_talon"),
    ("classic", {"players": 4, "deck": 32, "talon_size": 4}, "deck"),
    ("german-1001", {"sale": True}, "sale"),
    ("german-1001", {"rebuy": True}, "rebuy"),
    ("german-1001", {"blind_bid": True}, "blind_bid"),
    ("german-1001", {"concede": True}, "concede"),
    ("german-1001", {"raise_contract": True}, "raise_contract"),
    ("german-1001", {"golden_round": True}, "golden_round"),
    ("german-1001", {"fixed_trump": True}, "fixed_trump"),
    ("german-1001", {"blind_first_trick": True}, "blind_first_trick"),
    ("german-1001", {"barrel": 880, "barrel_mode": "hold"}, "barrel_mode"),
    ("german-1001", {"four_nines": "redeal-after-talon"}, "four_nines"),
    ("german-1001", {"four_nines": "redeal-after-exchange"}, "four_nines"),
    ("estonian", {"rebuy": True}, "rebuy"),
    ("classic", {"opening_bid": 102}, "opening_bid"),
    ("classic", {"bid_step": 10, "opening_bid": 105}, "opening_bid"),
    ("classic", {"bid_max": 95}, "bid_max"),
    ("classic", {"barrel": 1000}, "barrel"),
    ("classic", {"target": 800}, "barrel"),
    ("classic", {"golden_round": True, "barrel_mode": "talon"}, "golden_round"),
    ("german-1001", {"fixed_trump": True, "auction": True}, "fixed_trump"),
    ("classic", {"fixed_trump": True, "marriage_ascending": True}, "fixed_trump"),
    ("classic", {"blind_bid": True, "blind_fixed_bid": 103}, "blind_fixed_bid"),
    ("classic", {"blind_bid": True, "blind_fixed_bid": 95}, "blind_fixed_bid"),
    ("classic", {"blind_bid": True, "blind_fixed_bid": 125}, "blind_fixed_bid"),
    ("two-player", {"blind_bid": True, "bid_limit_plain": None, "blind_fixed_bid": 305},
     "blind_fixed_bid"),
]


@pytest.mark.parametrize(("preset", "options", "named"), IMPOSSIBLE)
def test_impossible_combinations_name_the_option(
    preset: str, options: dict[str, Any], named: str
) -> None:
    with pytest.raises(RulesError) as info:
        Rules.preset(preset, **options)
    assert f"option '{named}'" in str(info.value), str(info.value)


def test_hand_size_message_counts_the_cards() -> None:
    with pytest.raises(RulesError) as info:
        Rules.preset("classic", hand_size=8)
    assert str(info.value) == (
        "option 'hand_size': 3 hands of 8 and 1 talon(s) of 3 make 27 cards, "
        "but the deck has 24"
    )


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (5, "rules must be an object"),
        ([], "rules must be an object"),
        ({"preset": "classic", "extra": 1}, "unknown key(s) in rules: ['extra']"),
        ({"preset": 3}, "rules 'preset' must be a name"),
        ({"preset": "classic", "options": [1]}, "rules 'options' must be an object"),
        ({"preset": "classic", "options": {"barrel": "high"}}, "option 'barrel'"),
        ({"preset": "nope"}, "unknown preset 'nope'"),
        ("nope", "unknown preset 'nope'"),
    ],
)
def test_from_json_rejects_bad_documents(data: Any, fragment: str) -> None:
    with pytest.raises(RulesError) as info:
        Rules.from_json(data)
    assert fragment in str(info.value)


def test_from_json_defaults() -> None:
    assert Rules.from_json({}) == Rules.preset("classic")
    assert Rules.from_json({"preset": "two-player", "options": None}) == Rules.preset(
        "two-player"
    )


# A valid non-default value for every option, with the companions it needs.
SETTABLE: dict[str, tuple[str, dict[str, Any]]] = {
    "players": ("estonian", {"players": 4}),
    "deck": ("german-1001", {"players": 4, "deck": 32}),
    "hand_size": ("estonian", {"players": 2}),
    "talon_size": ("estonian", {"players": 4}),
    "talons": ("two-player", {}),
    "dealer_sits_out": ("classic-4", {}),
    "sitter_scores_talon": ("classic-4", {"sitter_scores_talon": True}),
    "exchange": ("two-player-9", {}),
    "spare_talon": ("two-player", {"spare_talon": "last-trick"}),
    "discards_to": ("two-player", {"discards_to": "nobody"}),
    "talon_public": ("classic", {"talon_public": False}),
    "auction": ("german-1001", {}),
    "opening_bid": ("classic", {"opening_bid": 60}),
    "forced_bid": ("classic", {"forced_bid": False}),
    "opener": ("classic", {"opener": "dealer"}),
    "bid_step": ("classic", {"bid_step": 10}),
    "bid_limit_plain": ("classic", {"bid_limit_plain": None}),
    "bid_cap_marriages": ("classic", {"bid_cap_marriages": False}),
    "bid_max": ("classic", {"bid_max": 300}),
    "show_marriage": ("classic", {"show_marriage": True}),
    "minus_may_not_bid": ("classic", {"minus_may_not_bid": -120}),
    "blind_bid": ("classic", {"blind_bid": True}),
    "blind_multiplier": ("classic", {"blind_bid": True, "blind_multiplier": 3}),
    "blind_min_score": ("classic", {"blind_bid": True, "blind_min_score": 1}),
    "blind_hides_talon": ("classic", {"blind_bid": True, "blind_hides_talon": True}),
    "blind_outbid": ("classic", {"blind_bid": True, "blind_outbid": "blind"}),
    "blind_by": ("classic", {"blind_bid": True, "blind_by": "anyone"}),
    "blind_fixed_bid": ("classic", {"blind_bid": True, "blind_fixed_bid": 120}),
    "blind_doubles_opponents": ("classic", {"blind_bid": True,
                                            "blind_doubles_opponents": True}),
    "hide_talon_at_opening": ("classic", {"hide_talon_at_opening": True}),
    "sale": ("classic", {"sale": True}),
    "rebuy": ("classic", {"rebuy": True}),
    "raise_contract": ("classic", {"raise_contract": False}),
    "concede": ("classic", {"concede": False}),
    "concede_opponents": ("classic", {"concede_opponents": "half"}),
    "concede_half_round": ("classic", {"concede_opponents": "half",
                                       "concede_half_round": "up"}),
    "concede_declarer_loses": ("classic", {"concede_declarer_loses": False}),
    "concede_limit": ("classic", {"concede_limit": 3}),
    "concede_limit_penalty": ("classic", {"concede_limit": 3, "concede_limit_penalty": 120}),
    "concede_free_on_barrel": ("classic", {"concede_declarer_loses": False,
                                           "concede_free_on_barrel": False}),
    "concede_free_in_golden": ("classic", {"concede_declarer_loses": False, "golden_round": True,
                                           "concede_free_in_golden": False}),
    "four_nines": ("classic", {"four_nines": "redeal-after-exchange"}),
    "four_nines_points": ("estonian", {"four_nines_points": 200}),
    "four_nines_counted": ("estonian", {"four_nines_counted": "either"}),
    "first_lead": ("classic", {"first_lead": "dealer"}),
    "must_trump": ("classic", {"must_trump": False}),
    "marriage_values": ("classic", {"marriage_values": [80, 100, 60, 40]}),
    "marriage_needs_trick": ("classic", {"marriage_needs_trick": False}),
    "marriage_min_cards": ("classic", {"marriage_min_cards": 3}),
    "marriage_ascending": ("classic", {"marriage_ascending": True}),
    "marriage_declarer_only": ("classic", {"marriage_declarer_only": True}),
    "ace_marriage": ("classic", {"ace_marriage": 200}),
    "half_marriage": ("classic", {"half_marriage": True}),
    "nines_marriage": ("classic", {"nines_marriage": 360}),
    "trump_lead_restricted": ("classic", {"trump_lead_restricted": True}),
    "blind_first_trick": ("classic", {"blind_first_trick": True}),
    "fixed_trump": ("classic", {"fixed_trump": True}),
    "rounding": ("classic", {"rounding": False}),
    "round_before_compare": ("classic", {"round_before_compare": False}),
    "opponents_score": ("classic", {"opponents_score": False}),
    "bolts": ("classic", {"bolts": False}),
    "bolt_on": ("classic", {"bolt_on": "no-points"}),
    "bolt_every": ("classic", {"bolt_every": 2}),
    "bolt_penalty": ("classic", {"bolt_penalty": 100}),
    "bolt_consecutive": ("classic", {"bolt_consecutive": True}),
    "virgin_bonus": ("classic", {"virgin_bonus": 10}),
    "dump_truck": ("classic", {"dump_truck": "555-and-minus"}),
    "golden_round": ("classic", {"golden_round": True}),
    "golden_round_count": ("classic", {"golden_round": True, "golden_round_count": "deals"}),
    "golden_restart": ("classic", {"golden_round": True, "golden_restart": False}),
    "redeal_low_hand": ("classic", {"redeal_low_hand": 14}),
    "redeal_low_hand_at": ("classic", {"redeal_low_hand": 14, "redeal_low_hand_at": "both"}),
    "redeal_low_talon": ("classic", {"redeal_low_talon": 5}),
    "redeal_low_ask": ("classic", {"redeal_low_hand": 14, "redeal_low_ask": False}),
    "barrel": ("classic", {"barrel": None}),
    "barrel_mode": ("classic", {"barrel_mode": "talon"}),
    "barrel_tries": ("classic", {"barrel_tries": 1}),
    "barrel_min_contract": ("classic", {"barrel_min_contract": 100}),
    "barrel_fall": ("classic", {"barrel_fall": "minus-120"}),
    "barrel_knock_off": ("classic", {"barrel_knock_off": True}),
    "barrel_both_fall": ("classic", {"barrel_both_fall": True}),
    "barrel_falls_reset": ("classic", {"barrel_falls_reset": 3}),
    "barrel_falls_reset_to": ("classic", {"barrel_falls_reset": 3, "barrel_falls_reset_to": 5}),
    "barrel_falls_no_barrel": ("classic", {"barrel_falls_reset": 3,
                                           "barrel_falls_no_barrel": True}),
    "barrel_jump": ("classic", {"barrel_jump": "contract"}),
    "barrel_bolt_penalty": ("classic", {"barrel_bolt_penalty": False}),
    "target": ("classic", {"target": 1001}),
    "max_deals": ("classic", {"max_deals": 5}),
    "win_above_target": ("classic", {"win_above_target": True}),
}


def test_every_option_has_a_settable_case() -> None:
    assert set(SETTABLE) == set(OPTION_BY_NAME)


@pytest.mark.parametrize("name", list(SETTABLE))
def test_every_option_is_settable(name: str) -> None:
    preset, options = SETTABLE[name]
    rules = Rules.preset(preset, **options)
    default = Rules.preset("classic").options()[name]
    assert rules.options()[name] != default, f"{name} kept its classic default"
    assert Rules.from_json(json.loads(json.dumps(rules.to_json()))) == rules
    game = Game(rules, seed=name)
    game.deal()
    assert game.legal_actions()


# --------------------------------------------------------------------------- the CLI


def test_cli_rules_list() -> None:
    res = arena("rules", "list")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(PRESETS)
    for line in lines:
        name, players = line.split()[:2]
        assert players == f"{Rules.preset(name).players}p"
        assert PRESETS[name][0] in line


@pytest.mark.parametrize("name", list(PRESETS))
def test_cli_rules_show(name: str) -> None:
    res = arena("rules", "show", name)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == f"Preset {name}"
    shown = {line.split()[0]: line.split()[1] for line in res.stdout.splitlines()[1:]}
    assert list(shown) == [o.name for o in OPTIONS]
    for key, value in Rules.preset(name).options().items():
        if not isinstance(value, list):
            assert shown[key] == json.dumps(value), key


def test_cli_rules_show_json_with_options() -> None:
    res = arena("rules", "show", "classic", "-o", "barrel=900", "-o", "opener=dealer",
                "--option", "marriage_values=[80,100,60,40]", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["preset"] == "classic"
    assert data["options"]["barrel"] == 900
    assert data["options"]["opener"] == "dealer"
    assert data["options"]["marriage_values"] == [80, 100, 60, 40]
    assert Rules.preset("classic", **data["options"]) == Rules.preset(
        "classic", barrel=900, opener="dealer", marriage_values=[80, 100, 60, 40]
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["rules", "show", "classic", "-o", "barel=900"], "unknown option 'barel'"),
        (["rules", "show", "classic", "-o", "players=9"], "option 'players': 9 is above"),
        (["rules", "show", "classic", "-o", "barrel"], "expected name=value"),
        (["rules", "show", "nosuch"], "unknown preset 'nosuch'"),
        (["rules", "show", "classic", "-o", "exchange=discard"], "option 'exchange'"),
    ],
)
def test_cli_rules_show_rejects_bad_options(args: list[str], fragment: str) -> None:
    res = arena(*args)
    assert res.returncode == 2
    assert fragment in res.stderr
    assert res.stdout == ""
