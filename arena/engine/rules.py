"""Rules configurations: named presets plus options, validated and serialisable.

Where the rule texts disagree, the difference is an option and each text's way of playing
is a preset (see ``docs/rules.md``).  Every option is declared once in :data:`OPTIONS`
with its type, its allowed values, a description and the rule text it comes from; the
docs table, validation and ``arena rules show`` are all generated from that one list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import RulesError

# Seed texts the options come from (files in the shared rule sources).
SRC_ET = "000/001 (Estonian)"
SRC_ET0 = "000 (Estonian)"
SRC_ET1 = "001 (Estonian)"
SRC_EO = "002 (Esperanto)"
SRC_RU = "003 (Russian)"
SRC_RU_OPT = "003 (Russian, house option)"
SRC_DE = "004 (English, German 1000/1001)"
SRC_ALL = "all"


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


def _o(name: str, kind: str, default: Any, help: str, source: str, **kw: Any) -> Option:
    return Option(name, kind, default, help, source, **kw)


OPTIONS: tuple[Option, ...] = (
    # --- table and deal
    _o("players", "int", 3, "number of players at the table", SRC_ALL, low=2, high=4),
    _o("deck", "int", 24, "cards in the deck: 24 (9 to ace) or 32 (7 to ace)", SRC_DE,
       choices=(24, 32)),
    _o("hand_size", "int", 7, "cards dealt to each active player", SRC_ALL, low=1, high=16),
    _o("talon_size", "int", 3, "cards in each talon (0 for none)", SRC_ALL, low=0, high=8),
    _o("talons", "int", 1, "number of talons (two in the two-player variants)", SRC_RU,
       low=1, high=2),
    _o("dealer_sits_out", "bool", False,
       "with four players the dealer sits out the deal", SRC_RU),
    _o("sitter_scores_talon", "bool", False,
       "the sitting-out dealer scores the talon's points and any marriage in it", SRC_RU),
    _o("exchange", "choice", "give",
       "after taking the talon: give one card to each other player; discard face down; "
       "give one to the opponent and one to the bank; or no talon at all", SRC_ALL,
       choices=("give", "discard", "bank", "none")),
    _o("spare_talon", "choice", "none",
       "two talons: the talon not chosen is set aside, or goes to the last trick's taker",
       SRC_RU, choices=("none", "last-trick")),
    _o("discards_to", "choice", "declarer",
       "two players: the cards the declarer lays away count for the declarer, for nobody, "
       "or for the last trick's taker", SRC_RU, choices=("declarer", "nobody", "last-trick")),
    _o("talon_public", "bool", True,
       "the talon is turned face up for everyone before the declarer takes it", SRC_RU),
    # --- auction
    _o("auction", "bool", True, "deals start with an auction (German 1000 has none)", SRC_DE),
    _o("opening_bid", "int", 100, "the lowest first bid", SRC_ALL, low=0, high=400),
    _o("forced_bid", "bool", True,
       "the opener is forced to bid the opening bid (the compulsory 100)", SRC_RU),
    _o("opener", "choice", "forehand",
       "who opens the auction: forehand (left of the dealer) or the dealer", SRC_RU,
       choices=("forehand", "dealer")),
    _o("bid_step", "int", 5, "bids rise in steps of this many points", SRC_ALL, low=1, high=50),
    _o("bid_limit_plain", "int", 120, "the highest bid without a marriage in hand", SRC_ALL,
       low=0, high=1000, nullable=True),
    _o("bid_cap_marriages", "bool", True,
       "never bid above the plain limit plus the marriages held", SRC_RU),
    _o("bid_max", "int", None, "an absolute ceiling on bids (two-player: 300)", SRC_RU,
       low=0, high=2000, nullable=True),
    _o("show_marriage", "bool", False,
       "a bid above the plain limit shows the marriages held to everyone", SRC_ET),
    _o("minus_may_not_bid", "int", None,
       "a player at or below this score may not bid (house rule: -120)", SRC_RU_OPT,
       low=-2000, high=0, nullable=True),
    _o("blind_bid", "bool", False,
       "forehand may bid without looking at the hand; a blind contract counts double",
       "000 (Estonian), 003 (Russian)"),
    _o("blind_multiplier", "int", 2, "how much a won blind contract counts", SRC_ET0,
       low=1, high=4),
    _o("blind_min_score", "int", None,
       "a blind bid is allowed only from this score up", SRC_RU, low=-2000, high=2000,
       nullable=True),
    _o("blind_hides_talon", "bool", False,
       "after a blind contract the talon is not shown to the others", SRC_RU),
    _o("blind_outbid", "choice", "look",
       "a blind bidder who is outbid: looks at the hand and bids on as usual, a contract "
       "won then not doubled (003 l.53), or goes on bidding blind up to the plain limit",
       "003 (Russian), 000 (Estonian)", choices=("look", "blind")),
    _o("blind_by", "choice", "forehand",
       "who may bid blind: forehand only (000, 003 l.54) or every player before looking "
       "at the hand (003 l.95)", SRC_RU_OPT, choices=("forehand", "anyone")),
    _o("blind_fixed_bid", "int", None,
       "a blind bid is always exactly this (003 l.53: a compulsory 120); null: any bid up "
       "to the plain limit", SRC_RU_OPT, low=0, high=400, nullable=True),
    _o("blind_doubles_opponents", "bool", False,
       "a blind contract doubles the opponents' points too (003 l.95)", SRC_RU_OPT),
    _o("hide_talon_at_opening", "bool", False,
       "a talon taken at the opening bid (the compulsory 100) is not shown to the others "
       "(003 l.57)", SRC_RU_OPT),
    _o("sale", "bool", False,
       "the declarer, having looked at the talon, may offer it for sale: another player "
       "buys it by bidding at least one step more", SRC_ET),
    _o("rebuy", "bool", False,
       "once the talon is shown another player may buy it for 120, 240, ...", SRC_RU_OPT),
    _o("raise_contract", "bool", True,
       "after the talon the declarer may raise the contract (never lower it)", "002, 003"),
    # --- concession
    _o("concede", "bool", True,
       "after seeing the talon the declarer may concede (rospis) and the deal is redealt",
       SRC_RU),
    _o("concede_opponents", "choice", "60",
       "what each opponent scores on a concession: 60 or half the contract", SRC_RU,
       choices=("60", "half")),
    _o("concede_half_round", "choice", "down",
       "half the contract is rounded to the nearest 5; a value half-way (105: 52.5) goes "
       "down (50) or up (55)", SRC_RU, choices=("down", "up")),
    _o("concede_declarer_loses", "bool", True,
       "the conceding declarer loses the contract (house option: no loss)", SRC_RU),
    _o("concede_limit", "int", None,
       "how many times a player may concede in one game", SRC_RU_OPT, low=1, high=100,
       nullable=True),
    _o("concede_limit_penalty", "int", 0,
       "extra points lost by the concession that reaches the limit (house: 120)", SRC_RU_OPT,
       low=0, high=1000),
    _o("concede_free_on_barrel", "bool", True,
       "a concession that costs the declarer nothing is allowed while a player sits on the "
       "barrel (003 l.49: allowed or not, by agreement)", SRC_RU_OPT),
    _o("concede_free_in_golden", "bool", True,
       "a concession that costs the declarer nothing is allowed in the golden round "
       "(003 l.50: allowed or not, by agreement)", SRC_RU_OPT),
    # --- four nines
    _o("four_nines", "choice", "none",
       "four nines in one hand: nothing, points at once, or the holder may call a redeal "
       "before the auction, after the talon or after the exchange", "000/001, 002, 003",
       choices=("none", "points", "redeal-before-auction", "redeal-after-talon",
                "redeal-after-exchange")),
    _o("four_nines_points", "int", 100, "points for four nines held, when scored", SRC_ET,
       low=0, high=1000),
    _o("four_nines_counted", "choice", "dealt",
       "which hand four nines scored as points must be in: the hand as dealt, the hand "
       "after the talon and the gives, or either", SRC_ET,
       choices=("dealt", "after-exchange", "either")),
    # --- play
    _o("first_lead", "choice", "declarer", "who leads to the first trick", "000-003, 004",
       choices=("declarer", "dealer", "forehand")),
    _o("must_trump", "bool", True,
       "a player void in the led suit must play a trump if holding one", "000-003 (004: no)"),
    _o("marriage_values", "suits", (60, 40, 100, 80),
       "marriage points by suit in the order clubs, spades, hearts, diamonds", SRC_ALL),
    _o("marriage_needs_trick", "bool", True,
       "a marriage may be declared only by a player who has taken a trick in this deal "
       "(so never on the first lead)", "000, 002, 003"),
    _o("marriage_min_cards", "int", 0,
       "a marriage may be declared only with at least this many cards in hand", SRC_ET,
       low=0, high=16),
    _o("marriage_ascending", "bool", False,
       "each new marriage must be worth more than the last one declared", SRC_DE),
    _o("marriage_declarer_only", "bool", False,
       "only the declarer scores marriage points (others still change the trump)", SRC_RU_OPT),
    _o("ace_marriage", "int", 0,
       "four aces declared when leading an ace score this (0: off); the aces are then led "
       "one after another", SRC_RU_OPT, low=0, high=1000),
    _o("half_marriage", "bool", False,
       "queen and jack of a suit (bed marriage) declared at half the suit's value",
       SRC_RU_OPT),
    _o("nines_marriage", "int", 0,
       "four nines declared when leading a nine score this (0: off; 360 or 200)", SRC_RU_OPT,
       low=0, high=1000),
    _o("trump_lead_restricted", "bool", False,
       "the player who declared the current trump may not lead trumps (unless holding "
       "nothing else)", SRC_RU_OPT),
    _o("blind_first_trick", "bool", False,
       "crawling (roomamine): the declarer may lead the first trick face down and the "
       "others answer face down with any card", SRC_ET0),
    _o("fixed_trump", "bool", False,
       "the declarer names the trump suit after the talon (the 501 game)", SRC_RU_OPT),
    # --- scoring
    _o("rounding", "bool", True, "deal points are rounded to the nearest 5", "002, 003"),
    _o("round_before_compare", "bool", True,
       "the declarer's points are rounded before being compared with the contract", SRC_RU),
    _o("opponents_score", "bool", True,
       "opponents of the declarer score their own points", SRC_ALL),
    _o("bolts", "bool", True,
       "a deal scoring nothing gives a bolt; every third bolt costs points", SRC_RU),
    _o("bolt_on", "choice", "no-trick", "a bolt is a deal with no trick, or with no point",
       SRC_RU, choices=("no-trick", "no-points")),
    _o("bolt_every", "int", 3, "every this many bolts cost the penalty", SRC_RU, low=1,
       high=10),
    _o("bolt_penalty", "int", 120, "points a bolt penalty costs (option: 100)", SRC_RU,
       low=0, high=1000),
    _o("bolt_consecutive", "bool", False, "only bolts in a row count", SRC_RU_OPT),
    _o("virgin_bonus", "int", 0,
       "a player who took no trick gets this many points (Jungfrau: 100 or 10)", SRC_DE,
       low=0, high=1000),
    _o("dump_truck", "choice", "off",
       "a total of exactly 555 goes to 0 (option: -555 too)", SRC_RU_OPT,
       choices=("off", "555", "555-and-minus")),
    _o("golden_round", "bool", False,
       "the first round of deals counts double and each dealer must play 120", SRC_RU_OPT),
    _o("golden_round_count", "choice", "seats",
       "the golden round lasts until every seat has played its own golden deal (003 l.67; "
       "a conceded one is dealt again), or for the first deals, one per active player, "
       "concessions included", SRC_RU_OPT, choices=("seats", "deals")),
    _o("golden_restart", "bool", True,
       "when nobody made the 120 in the golden round the game starts again from 0 "
       "(003 l.67)", SRC_RU_OPT),
    _o("redeal_low_hand", "int", None,
       "a hand holding fewer card points than this may be redealt (house: 14)", SRC_RU_OPT,
       low=1, high=30, nullable=True),
    _o("redeal_low_hand_at", "choice", "deal",
       "when a low hand may be redealt: after the deal, before the auction (003 l.41), "
       "after the exchange (003 l.56), or both", SRC_RU_OPT,
       choices=("deal", "exchange", "both")),
    _o("redeal_low_talon", "int", None,
       "the declarer at the forced bid may have the deal redealt when the talon holds fewer "
       "points than this (house: 5)", SRC_RU_OPT, low=1, high=20, nullable=True),
    _o("redeal_low_ask", "bool", True,
       "a low hand or talon redeal is the player's choice, asked with redeal or pass "
       "(003 l.41, l.43: «может потребовать»); false: it happens by itself", SRC_RU_OPT),
    # --- barrel and the end of the game
    _o("barrel", "int", 880, "the barrel threshold (null: no barrel; 800, 880 or 900)",
       "000, 001, 003", low=1, high=5000, nullable=True),
    _o("barrel_mode", "choice", "hold",
       "hold: the total is held at the threshold and the player has some deals to win a "
       "contract; contracts-only: on the barrel only contracts won score; talon: the barrel "
       "player takes the talon without an auction and must make more than 120",
       "000/001, 003", choices=("hold", "contracts-only", "talon")),
    _o("barrel_tries", "int", 3, "deals a player may spend on the barrel", SRC_RU, low=1,
       high=10),
    _o("barrel_min_contract", "int", 120,
       "hold mode: the contract a barrel player must win to finish", SRC_RU, low=0, high=1000),
    _o("barrel_fall", "choice", "zero",
       "what the last failed try costs: back to 0, or 120 below the threshold", SRC_RU,
       choices=("zero", "minus-120")),
    _o("barrel_knock_off", "bool", False,
       "a player climbing on the barrel knocks off the one sitting there", SRC_RU_OPT),
    _o("barrel_both_fall", "bool", False,
       "two players climbing on the barrel in the same deal both fall", SRC_RU_OPT),
    _o("barrel_falls_reset", "int", None,
       "falling off the barrel this many times resets the total to 0", SRC_RU_OPT, low=1,
       high=10, nullable=True),
    _o("barrel_falls_reset_to", "int", 0,
       "the total after that many falls: 0 (003 l.75) or 5 (003 l.81)", SRC_RU_OPT,
       choices=(0, 5)),
    _o("barrel_falls_no_barrel", "bool", False,
       "after that reset the player goes on to the target without a barrel (003 l.81)",
       SRC_RU_OPT),
    _o("barrel_jump", "choice", "wins",
       "reaching the target from below the barrel wins (003 l.35: the barrel is 880 to "
       "999, 1000 or more wins), or wins only on a contract won and puts anyone else on "
       "the barrel", SRC_RU, choices=("wins", "contract")),
    _o("barrel_bolt_penalty", "bool", True,
       "a bolt penalty earned on the barrel is written (003 l.35: no exception): 880 - 120 "
       "= 760, off the barrel; false: the total stays held at the barrel", SRC_RU),
    _o("target", "int", 1000, "the score that wins the game (German: 1001)", SRC_ALL,
       low=1, high=100_000),
    _o("max_deals", "int", None,
       "end the game after this many deals (redeals included) even if nobody reached the "
       "target; the highest total wins (keeps tournament games bounded)", "arena", low=1,
       high=100_000, nullable=True),
    _o("win_above_target", "bool", False,
       "the game is won only by going above the target", SRC_RU_OPT),
)

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


class Rules:
    """A validated, immutable rules configuration.

    Attribute access is plain (no dict lookups) because the engine reads options on its
    hot paths.
    """

    __slots__ = ("_overrides", "_values", "name", *OPTION_BY_NAME)

    name: str
    _values: dict[str, Any]

    if True:  # typed attributes for mypy, filled in __init__
        players: int
        deck: int
        hand_size: int
        talon_size: int
        talons: int
        dealer_sits_out: bool
        sitter_scores_talon: bool
        exchange: str
        spare_talon: str
        discards_to: str
        talon_public: bool
        auction: bool
        opening_bid: int
        forced_bid: bool
        opener: str
        bid_step: int
        bid_limit_plain: int | None
        bid_cap_marriages: bool
        bid_max: int | None
        show_marriage: bool
        minus_may_not_bid: int | None
        blind_bid: bool
        blind_multiplier: int
        blind_min_score: int | None
        blind_hides_talon: bool
        blind_outbid: str
        blind_by: str
        blind_fixed_bid: int | None
        blind_doubles_opponents: bool
        hide_talon_at_opening: bool
        sale: bool
        rebuy: bool
        raise_contract: bool
        concede: bool
        concede_opponents: str
        concede_half_round: str
        concede_declarer_loses: bool
        concede_limit: int | None
        concede_limit_penalty: int
        concede_free_on_barrel: bool
        concede_free_in_golden: bool
        four_nines: str
        four_nines_points: int
        four_nines_counted: str
        first_lead: str
        must_trump: bool
        marriage_values: tuple[int, int, int, int]
        marriage_needs_trick: bool
        marriage_min_cards: int
        marriage_ascending: bool
        marriage_declarer_only: bool
        ace_marriage: int
        half_marriage: bool
        nines_marriage: int
        trump_lead_restricted: bool
        blind_first_trick: bool
        fixed_trump: bool
        rounding: bool
        round_before_compare: bool
        opponents_score: bool
        bolts: bool
        bolt_on: str
        bolt_every: int
        bolt_penalty: int
        bolt_consecutive: bool
        virgin_bonus: int
        dump_truck: str
        golden_round: bool
        golden_round_count: str
        golden_restart: bool
        redeal_low_hand: int | None
        redeal_low_hand_at: str
        redeal_low_talon: int | None
        redeal_low_ask: bool
        barrel: int | None
        barrel_mode: str
        barrel_tries: int
        barrel_min_contract: int
        barrel_fall: str
        barrel_knock_off: bool
        barrel_both_fall: bool
        barrel_falls_reset: int | None
        barrel_falls_reset_to: int
        barrel_falls_no_barrel: bool
        barrel_jump: str
        barrel_bolt_penalty: bool
        target: int
        max_deals: int | None
        win_above_target: bool

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
