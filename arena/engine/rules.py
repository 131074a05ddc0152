"""Rules configurations: named presets plus options, validated and serialisable.

Where the rule texts disagree, the difference is an option and each text's way of playing
is a preset (see ``docs/rules.md``).  Every option is declared once, in
``arena/engine/options.toml``, with its type, its allowed values, a description and the
rule text it comes from; ``scripts/generate.py`` turns it into :data:`OPTIONS` and the
typed attributes of :class:`Rules`, and the docs table, validation and
``arena rules show`` are all made from that one list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import RulesError
from .options import DECLARED, Options


@dataclass(frozen=True)
class Option:
    """One rule option: what values it takes, what it means, where it comes from."""

    name: str
    kind: str  # "bool", "int", "choice", "suits"
    default: Any
    help: str
    source: str
    choices: tuple[Any, ...] = ()
    low: int | None = None
    high: int | None = None
    nullable: bool = False

    def check(self, value: Any) -> Any:
        if value is None:
            if self.nullable:
                return None
            raise RulesError(f"option {self.name!r}: may not be null")
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise RulesError(f"option {self.name!r}: expected true or false, got {value!r}")
            return value
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise RulesError(f"option {self.name!r}: expected a whole number, got {value!r}")
            if self.low is not None and value < self.low:
                raise RulesError(f"option {self.name!r}: {value} is below the minimum {self.low}")
            if self.high is not None and value > self.high:
                raise RulesError(f"option {self.name!r}: {value} is above the maximum {self.high}")
            if self.choices and value not in self.choices:
                raise RulesError(
                    f"option {self.name!r}: {value} is not one of {list(self.choices)}"
                )
            return value
        if self.kind == "choice":
            if value not in self.choices:
                raise RulesError(
                    f"option {self.name!r}: {value!r} is not one of {list(self.choices)}"
                )
            return value
        if self.kind == "suits":
            if isinstance(value, Mapping):
                try:
                    value = [value[s] for s in "CSHD"]
                except KeyError as e:
                    raise RulesError(
                        f"option {self.name!r}: missing suit {e.args[0]!r} (need C S H D)"
                    ) from None
            if (
                not isinstance(value, list | tuple)
                or len(value) != 4
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
                or any(v < 0 or v > 1000 for v in value)
            ):
                raise RulesError(
                    f"option {self.name!r}: expected four whole numbers for C S H D, got {value!r}"
                )
            return tuple(value)
        raise AssertionError(self.kind)


#: Every option, in the order of ``options.toml`` (declared there, once).
OPTIONS: tuple[Option, ...] = tuple(Option(*row) for row in DECLARED)

OPTION_BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}

_CLASSIC: dict[str, Any] = {
    "marriage_values": (40, 60, 100, 80),
}

#: Presets: a description, the seeds they follow, and their differences from the defaults.
PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "classic": (
        "Russian/Esperanto 1000 for 3: forced 100, talon of 3, give one to each, raise, "
        "concede for 60 each, must trump, rounding to 5, barrel at 880, bolts (003, 002)",
        dict(_CLASSIC, marriage_values=(60, 40, 100, 80)),
    ),
    "classic-4": (
        "classic for 4 players: the dealer sits out the deal (003, 002)",
        dict(_CLASSIC, marriage_values=(60, 40, 100, 80), players=4, dealer_sits_out=True),
    ),
    "two-player": (
        "two players, 10 cards, two talons of 2: take one, discard 2, bids up to 300 (003)",
        dict(marriage_values=(60, 40, 100, 80), players=2, hand_size=10, talon_size=2,
             talons=2, exchange="discard", bid_max=300, forced_bid=True),
    ),
    "two-player-9": (
        "two players, 9 cards, two talons of 3: take one, give one to the opponent and "
        "one to the bank; the last trick takes the bank (003)",
        dict(marriage_values=(60, 40, 100, 80), players=2, hand_size=9, talon_size=3,
             talons=2, exchange="bank", bid_max=300),
    ),
    "estonian": (
        "Estonian 1000 for 2 to 4 (000, 001): talon of one card per player, give one to "
        "each, clubs 100, spades 80, hearts 60, diamonds 40, four nines 100, sale, blind "
        "bid, barrel at 880 where only contracts score",
        dict(
            marriage_values=(100, 80, 60, 40), opening_bid=40, forced_bid=False,
            talon_public=False, show_marriage=True,
            raise_contract=False, concede=False, four_nines="points", sale=True,
            blind_bid=True, marriage_min_cards=3, rounding=False, round_before_compare=False,
            bolts=False, barrel_mode="contracts-only", blind_first_trick=True,
            bid_cap_marriages=False, blind_outbid="blind",
        ),
    ),
    "estonian-800": (
        "Estonian 1000 as in text 001: like estonian, but the barrel is at 800, a marriage "
        "needs no trick taken, and there is no blind bid and no crawling",
        dict(
            marriage_values=(100, 80, 60, 40), opening_bid=40, forced_bid=False,
            talon_public=False, show_marriage=True, raise_contract=False, concede=False,
            four_nines="points", sale=True, marriage_min_cards=3, marriage_needs_trick=False,
            rounding=False, round_before_compare=False, bolts=False,
            barrel_mode="contracts-only", barrel=800, bid_cap_marriages=False,
            blind_outbid="blind",
        ),
    ),
    "german-1001": (
        "German 1000/1001 (004): 8 cards each, no talon and no auction, forehand leads, "
        "ascending melds, no compulsory trump, virgin bonus, play to 1001",
        dict(
            marriage_values=(100, 80, 60, 40), hand_size=8, talon_size=0, exchange="none",
            auction=False, first_lead="forehand", must_trump=False,
            marriage_needs_trick=False, marriage_ascending=True, virgin_bonus=100,
            rounding=False, round_before_compare=False, bolts=False, barrel=None,
            concede=False, raise_contract=False, target=1001, forced_bid=False,
        ),
    ),
    "classic-501": (
        "the 501 house game (003): the declarer names the trump after the talon, marriages "
        "20/40/60/80, play to 501",
        dict(marriage_values=(20, 60, 80, 40), fixed_trump=True, target=501, barrel=None),
    ),
}

#: Option values every preset had before the engine followed the rule texts on the barrel,
#: the blind bid, the player's redeals and the golden round (``docs/rules.md``, "Replays
#: recorded before"); per preset below, the presets' own earlier values.
_EARLIER_ALL: dict[str, Any] = {
    "blind_outbid": "blind", "golden_round_count": "deals", "golden_restart": False,
    "redeal_low_ask": False, "barrel_jump": "contract", "barrel_bolt_penalty": False,
}
_EARLIER_PRESET: dict[str, dict[str, Any]] = {
    "estonian": {"bid_cap_marriages": True},
    "estonian-800": {"bid_cap_marriages": True},
    "classic-501": {"opening_bid": 60},
}


def earlier_defaults(preset: str) -> dict[str, Any]:
    """The options to add to a replay of ``preset`` recorded before the engine followed
    the texts, so that it re-simulates as it was played (only values that differ now)."""
    if preset not in PRESETS:
        raise RulesError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    now = Rules(preset)._values
    out = {**_EARLIER_ALL, **_EARLIER_PRESET.get(preset, {})}
    return {k: v for k, v in out.items() if now[k] != v}


def with_earlier_defaults(data: Any) -> Any:
    """Rules JSON (as in a replay) with :func:`earlier_defaults` filled in under its own
    options; anything that is not a rules document comes back unchanged, to be refused
    with the usual message by :meth:`Rules.from_json`."""
    if isinstance(data, str):
        data = {"preset": data}
    if not isinstance(data, Mapping):
        return data
    preset = data.get("preset", "classic")
    options = data.get("options") or {}
    if preset not in PRESETS or not isinstance(options, Mapping):
        return data
    return {**data, "options": {**earlier_defaults(preset), **options}}


# Player counts that change the deal layout of a preset.
_ESTONIAN_LAYOUT = {2: (11, 2), 3: (7, 3), 4: (5, 4)}


class Rules(Options):
    """A validated, immutable rules configuration: every option is an attribute (typed in
    :class:`~arena.engine.options.Options`).

    Attribute access is plain (no dict lookups) because the engine reads options on its
    hot paths.
    """

    __slots__ = ("_overrides", "_values", "name", *OPTION_BY_NAME)

    name: str
    _values: dict[str, Any]

    def __init__(self, preset: str = "classic", **options: Any) -> None:
        if preset not in PRESETS:
            raise RulesError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
        for name in options:
            if name not in OPTION_BY_NAME:
                raise RulesError(f"unknown option {name!r}" + _suggest(name))
        values = {o.name: o.default for o in OPTIONS}
        values.update(PRESETS[preset][1])
        if preset in ("estonian", "estonian-800"):
            n = options.get("players", values["players"])
            if isinstance(n, int) and n in _ESTONIAN_LAYOUT:
                hand, tal = _ESTONIAN_LAYOUT[n]
                values.update(hand_size=hand, talon_size=tal)
        if preset == "german-1001" and options.get("players") == 4:
            values.update(deck=32)
        if preset == "german-1001" and options.get("players") == 2:
            # 004 names a game for two but describes three: all 24 cards are dealt out.
            values.update(hand_size=12)
        values.update(options)
        for o in OPTIONS:
            values[o.name] = o.check(values[o.name])
        object.__setattr__(self, "name", preset)
        object.__setattr__(self, "_values", values)
        for k, v in values.items():
            object.__setattr__(self, k, v)
        self._validate()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Rules are immutable; build new ones with Rules.preset(...)")

    @classmethod
    def preset(cls, name: str, **options: Any) -> Rules:
        """The rules of preset ``name`` with some options changed."""
        return cls(name, **options)

    def _validate(self) -> None:
        n = self.players
        active = n - 1 if self.dealer_sits_out else n
        if self.dealer_sits_out and n != 4:
            raise RulesError("option 'dealer_sits_out': only with 4 players")
        if self.sitter_scores_talon and not self.dealer_sits_out:
            raise RulesError("option 'sitter_scores_talon': needs dealer_sits_out")
        if self.dealer_sits_out and self.opener == "dealer":
            raise RulesError("option 'opener': the dealer sits out and cannot open")
        if self.dealer_sits_out and self.first_lead == "dealer":
            raise RulesError("option 'first_lead': the dealer sits out and cannot lead")
        total = active * self.hand_size + self.talons * self.talon_size
        if total != self.deck:
            raise RulesError(
                f"option 'hand_size': {active} hands of {self.hand_size} and "
                f"{self.talons} talon(s) of {self.talon_size} make {total} cards, "
                f"but the deck has {self.deck}"
            )
        if self.exchange == "none":
            if self.talon_size:
                raise RulesError("option 'exchange': 'none' needs talon_size 0")
        else:
            if not self.talon_size:
                raise RulesError(f"option 'exchange': {self.exchange!r} needs a talon")
            if not self.auction:
                raise RulesError("option 'auction': a talon is won at an auction")
        # Hands must come out of the exchange equal, or a deal ends with cards unplayed.
        if self.exchange == "give" and self.talon_size != active:
            raise RulesError(
                f"option 'talon_size': giving one card to each other player evens the hands "
                f"only with a talon of {active} card(s) (one per active player), "
                f"not {self.talon_size}"
            )
        if self.exchange in ("discard", "bank") and (n != 2 or self.talons != 2):
            raise RulesError(f"option 'exchange': {self.exchange!r} is for two players, two talons")
        if self.talons == 2 and self.exchange not in ("discard", "bank", "give"):
            raise RulesError("option 'talons': two talons need an exchange (discard, bank, give)")
        if self.exchange == "bank" and self.talon_size != 3:
            raise RulesError(
                "option 'talon_size': 'bank' (one card to the opponent, one to the bank) "
                "evens the hands only with talons of 3"
            )
        if self.spare_talon == "last-trick" and self.talons != 2:
            raise RulesError("option 'spare_talon': only with two talons")
        if self.exchange == "bank" and self.spare_talon != "none":
            raise RulesError("option 'spare_talon': the bank already takes the spare talon")
        if self.deck == 32 and self.auction:
            raise RulesError("option 'deck': the 32-card deck is for German play without auction")
        if not self.auction:
            for name in ("sale", "rebuy", "blind_bid", "concede", "raise_contract", "golden_round",
                         "fixed_trump", "blind_first_trick"):
                if getattr(self, name):
                    raise RulesError(f"option {name!r}: needs an auction")
            if self.barrel is not None and self.barrel_mode != "contracts-only":
                raise RulesError("option 'barrel_mode': without an auction only 'contracts-only'")
            if self.four_nines in ("redeal-after-talon", "redeal-after-exchange"):
                raise RulesError("option 'four_nines': there is no talon to redeal after")
        if self.sale and self.rebuy:
            raise RulesError("option 'rebuy': cannot be combined with 'sale'")
        if self.opening_bid % self.bid_step:
            raise RulesError("option 'opening_bid': must be a multiple of bid_step")
        if self.bid_max is not None and self.bid_max < self.opening_bid:
            raise RulesError("option 'bid_max': below the opening bid")
        if self.barrel is not None and self.barrel >= self.target:
            raise RulesError("option 'barrel': must be below the target")
        if self.four_nines == "points" and self.deck == 32:
            pass
        if self.golden_round and self.barrel_mode == "talon":
            raise RulesError("option 'golden_round': cannot be combined with barrel_mode 'talon'")
        if self.fixed_trump and self.marriage_ascending:
            raise RulesError("option 'fixed_trump': cannot be combined with ascending marriages")
        fixed = self.blind_fixed_bid
        if fixed is not None:
            if fixed % self.bid_step:
                raise RulesError("option 'blind_fixed_bid': must be a multiple of bid_step")
            if fixed < self.opening_bid:
                raise RulesError("option 'blind_fixed_bid': below the opening bid")
            if self.bid_limit_plain is not None and fixed > self.bid_limit_plain:
                raise RulesError(
                    "option 'blind_fixed_bid': above bid_limit_plain (a blind bidder cannot "
                    "show a marriage)"
                )
            if self.bid_max is not None and fixed > self.bid_max:
                raise RulesError("option 'blind_fixed_bid': above bid_max")

    # --- serialisation
    def options(self) -> dict[str, Any]:
        """All option values (not only the differences), JSON-safe."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self._values.items()}

    def overrides(self) -> dict[str, Any]:
        """Options that differ from the preset (a new dictionary on every call)."""
        cached: tuple[tuple[str, Any], ...] | None = getattr(self, "_overrides", None)
        if cached is None:
            base = _preset_values(self.name)
            cached = tuple((k, v) for k, v in self._values.items() if base[k] != v)
            # Rules never change, so the difference is worked out once: every match asks
            # for it several times (its seats, its replay, its events).
            object.__setattr__(self, "_overrides", cached)
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in cached}

    def to_json(self) -> dict[str, Any]:
        return {"preset": self.name, "options": self.overrides()}

    @classmethod
    def from_json(cls, data: Any) -> Rules:
        """Build from ``{"preset": NAME, "options": {...}}`` (or a bare preset name)."""
        if isinstance(data, str):
            return cls(data)
        if not isinstance(data, Mapping):
            raise RulesError(f"rules must be an object with 'preset' and 'options', got {data!r}")
        extra = set(data) - {"preset", "options"}
        if extra:
            raise RulesError(f"unknown key(s) in rules: {sorted(extra)}")
        preset = data.get("preset", "classic")
        if not isinstance(preset, str):
            raise RulesError(f"rules 'preset' must be a name, got {preset!r}")
        opts = data.get("options") or {}
        if not isinstance(opts, Mapping):
            raise RulesError("rules 'options' must be an object")
        try:
            # JSON text tells true from 1 and 1.0 from 1, as the option checks do.
            key: str | None = json.dumps([preset, opts], sort_keys=True)
        except (TypeError, ValueError):
            key = None
        if key is not None and cls is Rules:
            hit = _FROM_JSON.get(key)
            if hit is not None:
                return hit
        rules = cls(preset, **dict(opts))
        if key is not None and cls is Rules:
            if len(_FROM_JSON) >= _FROM_JSON_MAX:
                _FROM_JSON.clear()
            _FROM_JSON[key] = rules
        return rules

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rules) and self._values == other._values

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, str(v)) for k, v in self._values.items())))

    def __repr__(self) -> str:
        o = self.overrides()
        extra = "".join(f", {k}={v!r}" for k, v in o.items())
        return f"Rules({self.name!r}{extra})"

    @property
    def active_players(self) -> int:
        return self.players - 1 if self.dealer_sits_out else self.players


def _suggest(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(OPTION_BY_NAME), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


_PRESET_VALUES: dict[str, dict[str, Any]] = {}

#: Rules already built by :meth:`Rules.from_json`, by their JSON text. Checking every
#: option costs some 40 us, and every match reads its rules several times from JSON (each
#: bot is built with them, learns them again from ``match_start``); Rules are immutable,
#: so one object serves them all. A tournament uses a handful of configurations: the
#: bound only keeps a stream of distinct ones from growing the process.
_FROM_JSON: dict[str, Rules] = {}
_FROM_JSON_MAX = 256


def _preset_values(name: str) -> dict[str, Any]:
    """The option values of a preset as it stands (Rules are immutable: built once)."""
    values = _PRESET_VALUES.get(name)
    if values is None:
        values = _PRESET_VALUES[name] = Rules(name)._values
    return values
