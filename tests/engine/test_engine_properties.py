"""Properties of random games under every preset and many option sets (hypothesis).

Random legal play explores corners no hand-written case reaches: at every step the
cards are conserved, the legal list is exact (each listed action applies, others are
refused without a trace), no observation shows another seat's hidden card, copies are
independent and faithful, and games end.
"""

from __future__ import annotations

import random
from typing import Any

from engine_support import snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.engine import PRESETS, Game, IllegalActionError, Rules, parse_action
from arena.engine.cards import CARD_NAMES, DECK_24, DECK_32, cards_of, cards_str, mask_points

#: Option sets explored besides the bare presets (every one valid for its preset).
CONFIGS: list[tuple[str, dict[str, Any]]] = [
    *[(name, {}) for name in PRESETS],
    ("classic", {"blind_bid": True, "blind_hides_talon": True, "blind_min_score": 0}),
    ("classic", {"rebuy": True}),
    ("classic", {"golden_round": True}),
    ("classic", {"four_nines": "redeal-before-auction", "redeal_low_hand": 14,
                 "redeal_low_talon": 5}),
    ("classic", {"four_nines": "redeal-after-talon"}),
    ("classic", {"four_nines": "redeal-after-exchange", "opener": "dealer",
                 "first_lead": "dealer"}),
    ("classic", {"half_marriage": True, "ace_marriage": 200, "nines_marriage": 360,
                 "marriage_needs_trick": False}),
    ("classic", {"trump_lead_restricted": True, "marriage_declarer_only": True,
                 "must_trump": False}),
    ("classic", {"barrel_mode": "talon", "barrel": 100, "barrel_fall": "minus-120"}),
    ("classic", {"barrel": 150, "barrel_knock_off": True, "barrel_falls_reset": 2}),
    ("classic", {"barrel": 150, "barrel_both_fall": True, "barrel_tries": 1}),
    ("classic", {"concede_limit": 2, "concede_limit_penalty": 120,
                 "concede_opponents": "half", "concede_declarer_loses": False}),
    ("classic", {"sale": True, "talon_public": False, "raise_contract": False}),
    ("classic", {"blind_first_trick": True, "bolt_on": "no-points", "bolt_every": 1,
                 "bolt_consecutive": True}),
    ("classic", {"fixed_trump": True, "dump_truck": "555-and-minus", "virgin_bonus": 10}),
    ("classic", {"marriage_ascending": True, "minus_may_not_bid": -120, "bid_step": 10}),
    ("classic", {"bid_limit_plain": None, "bid_max": 200, "forced_bid": False}),
    ("classic", {"barrel": None, "target": 300, "win_above_target": True}),
    ("classic-4", {"sitter_scores_talon": True, "golden_round": True}),
    ("two-player", {"spare_talon": "last-trick", "four_nines": "redeal-after-talon"}),
    ("estonian", {"players": 2}),
    ("estonian", {"players": 4}),
    ("estonian-800", {"players": 4, "blind_bid": True}),
    ("german-1001", {"players": 4}),
    ("german-1001", {"auction": True, "barrel": None}),
    # Readings of the texts and the rules once left out (docs/rules.md).
    ("classic", {"blind_bid": True, "blind_by": "anyone", "blind_doubles_opponents": True}),
    ("classic", {"blind_bid": True, "blind_by": "anyone", "blind_outbid": "blind",
                 "forced_bid": False}),
    ("classic", {"blind_bid": True, "blind_fixed_bid": 120, "opener": "dealer",
                 "four_nines": "redeal-before-auction", "redeal_low_hand": 20}),
    ("classic", {"redeal_low_hand": 20, "redeal_low_hand_at": "both", "redeal_low_talon": 10,
                 "hide_talon_at_opening": True}),
    ("classic", {"redeal_low_hand": 20, "redeal_low_hand_at": "exchange",
                 "redeal_low_ask": False, "four_nines": "redeal-after-exchange"}),
    ("classic", {"golden_round": True, "concede_declarer_loses": False,
                 "concede_free_in_golden": False, "concede_opponents": "half",
                 "concede_half_round": "up"}),
    ("classic", {"golden_round": True, "golden_round_count": "deals", "golden_restart": False,
                 "redeal_low_talon": 8}),
    ("classic", {"barrel": 150, "barrel_jump": "contract", "barrel_bolt_penalty": False,
                 "bolt_every": 1, "concede_declarer_loses": False,
                 "concede_free_on_barrel": False}),
    ("classic", {"barrel": 150, "barrel_falls_reset": 1, "barrel_falls_reset_to": 5,
                 "barrel_falls_no_barrel": True, "barrel_tries": 1, "bolt_every": 1}),
    ("classic-4", {"golden_round": True, "blind_bid": True, "blind_by": "anyone"}),
    ("two-player", {"discards_to": "nobody", "redeal_low_talon": 10}),
    ("two-player", {"discards_to": "last-trick", "spare_talon": "last-trick"}),
    ("estonian", {"four_nines_counted": "after-exchange", "blind_outbid": "look"}),
    ("estonian", {"four_nines_counted": "either", "blind_by": "anyone", "players": 4}),
    ("german-1001", {"players": 2}),
]


def rules_of(config: tuple[str, dict[str, Any]], max_deals: int = 3) -> Rules:
    preset, options = config
    return Rules.preset(preset, **{"max_deals": max_deals, **options})


def _universe() -> list[str]:
    """Every action text of every kind, to sample refusals from."""
    out = ["pass", "look", "redeal", "sell", "keep", "concede"]
    for c in CARD_NAMES:
        out += [f"{k} {c}" for k in ("play", "marry", "half", "aces", "nines", "crawl",
                                     "discard", "bank")]
        out += [f"give {c} {s}" for s in range(4)]
    for v in range(0, 420, 5):
        out += [f"bid {v}", f"blind {v}", f"buy {v}", f"contract {v}"]
    out += ["bid 103", "contract 101", "talon 1", "talon 2", "talon 3"]
    out += [f"trump {s}" for s in "CSHD"]
    return out


UNIVERSE = _universe()

#: For each phase, every action of the kinds that phase takes: all of them are tried.
_BY_KIND: dict[str, list[str]] = {}
for _t in UNIVERSE:
    _BY_KIND.setdefault(_t.split()[0], []).append(_t)
PHASE_KINDS = {
    "play": ("play", "marry", "half", "aces", "nines", "crawl"),
    "auction": ("pass", "bid", "blind"),
    "blind": ("look", "blind", "bid"),
    "exchange": ("give", "discard", "bank", "concede"),
    "contract": ("contract", "concede"),
    "sale": ("pass", "buy"),
    "sale-offer": ("sell", "keep"),
    "talon-choice": ("talon",),
    "nines": ("redeal", "pass"),
    "redeal": ("redeal", "pass"),
    "trump": ("trump",),
}
PHASE_CANDIDATES = {
    phase: [t for k in kinds for t in _BY_KIND[k]] for phase, kinds in PHASE_KINDS.items()
}


# --------------------------------------------------------------------------- invariants


def played_cards(game: Game) -> list[int]:
    out = [c for ev in game.records[-1].events if ev[0] == "trick" for _, c in ev[2]]
    return out + [c for _, c in game.trick]


def check_conservation(game: Game) -> None:
    """Hands, played cards, discards and bank are disjoint; the rest lies in the talons."""
    if not game.records:
        return
    r = game.rules
    deck = set(DECK_24 if r.deck == 24 else DECK_32)
    parts = [set(cards_of(h)) for h in game.hands]
    parts += [set(played_cards(game)), set(cards_of(game.discards)), set(cards_of(game.bank))]
    seen: set[int] = set()
    for p in parts:
        assert not (p & seen), f"a card is in two places: {cards_str_set(p & seen)}"
        seen |= p
    assert seen <= deck
    rest = deck - seen
    talons = set(cards_of(game.orig_talon))
    assert rest <= talons, f"cards lost: {cards_str_set(rest - talons)}"
    assert sum(len(p) for p in parts) + len(rest) == len(deck)
    assert sum(mask_points(1 << c) for c in deck) == 120


def cards_str_set(cs: set[int]) -> list[str]:
    return sorted(CARD_NAMES[c] for c in cs)


def check_deal_points(game: Game) -> None:
    """A deal played to its last trick hands out exactly the card points in play."""
    res = game.records[-1].result
    if not res or "redeal" in res or "conceded" in res:
        return
    r = game.rules
    spare = 0
    if r.talons == 2 and r.spare_talon == "none" and r.exchange != "bank":
        spare = mask_points(game.spare)
    if r.discards_to == "nobody":
        spare += mask_points(game.discards)
    taken = game.observation(0)["points_taken"]
    assert sum(taken) == 120 - spare, (taken, spare)
    tricks = sum(game.observation(0)["tricks_taken"])
    assert tricks * len(game.active) == len(played_cards(game))
    hands = [game.hands[s] for s in range(game.n)]
    assert not any(hands), "cards left in hands after the last trick"


def check_hidden(game: Game, declarers: set[int]) -> None:
    """No observation shows a card another seat holds, except what the rules reveal."""
    r = game.rules
    hands = [set(cards_str(game.hands[s])) for s in range(game.n)]
    for a in range(game.n):
        obs = game.observation(a)
        blind = bool(game.unseen >> a & 1)
        if blind:  # a seat goes without its cards only while it may still bid blind
            assert r.blind_bid and game.phase_name in ("blind", "auction")
            assert r.blind_by == "anyone" or a == game.forehand
        if game.phase_name == "blind" and a == game.to_act:
            assert blind
        assert obs["hand"] == ([] if blind else cards_str(game.hands[a]))
        talon = set(obs["talon"])
        given = {(c, t) for c, t in obs["given"]}
        visible = set(obs["hand"]) | talon | {c for c, _ in given} | set(obs["received"])
        visible |= set(obs["discarded"]) | {c for _, c in obs["trick"]}
        for b in range(game.n):
            if b == a:
                continue
            leak = (visible & hands[b]) - talon - {c for c, t in given if t == b}
            assert not leak, f"seat {a} sees {sorted(leak)} of seat {b}"
        if talon:
            assert a in declarers or r.talons == 2 or (
                r.talon_public and not (obs["blind"] and r.blind_hides_talon)
            ), f"seat {a} sees the talon"
        if obs["given"] or obs["discarded"]:
            assert obs["declarer"] == a
        if game.crawl:
            for s, c in obs["trick"]:
                assert (c == "XX") == (s != a)
    events = game.events
    if game.crawl:
        start = max(i for i, e in enumerate(events) if e["type"] == "deal_start")
        for s, c in game.trick:
            assert not [e for e in events[start:] if e.get("seat") == s
                        and e.get("action") == f"play {CARD_NAMES[c]}"], "face-down card shown"
    for ev in events:
        if ev["type"] == "action":
            kind = ev["action"].split()[0]
            if kind in ("give", "discard", "bank", "crawl"):
                assert "??" in ev["action"], ev


def check_legal(game: Game, rng: random.Random) -> None:
    acts = game.legal_actions()
    if game.is_over or game.is_chance:
        assert acts == [] and game.to_act is None
        return
    assert acts, f"no legal action in phase {game.phase_name}"
    texts = [str(a) for a in acts]
    assert len(set(texts)) == len(texts), "duplicate legal actions"
    for a in acts:
        g2 = game.copy()
        g2.apply(a)
        assert str(parse_action(str(a))) == str(a)
    listed = set(texts)
    pool = PHASE_CANDIDATES[game.phase_name] + rng.sample(UNIVERSE, 12)
    candidates = [t for t in pool if t not in listed]
    before = snapshot(game)
    for t in candidates:
        try:
            game.apply(t)
        except IllegalActionError as e:
            assert str(e)
        else:
            raise AssertionError(f"{t!r} applied but was not listed in {texts}")
    assert snapshot(game) == before


def run_checked(rules: Rules, seed: str, policy: int, *, full: bool = True) -> Game:
    game = Game(rules, seed=seed, dealer=policy % rules.players)
    rng = random.Random(policy)
    declarers: set[int] = set()
    steps = 0
    while not game.is_over:
        steps += 1
        assert steps < 5000, "the game does not end"
        if game.is_chance:
            declarers = set()
            game.deal()
        else:
            acts = game.legal_actions()
            game.apply(acts[rng.randrange(len(acts))])
        if game.declarer >= 0:
            declarers.add(game.declarer)
        if game.phase_name in ("sale", "sale-offer") and game.declarer >= 0:
            declarers.add(game.declarer)
        check_conservation(game)
        if full:
            check_hidden(game, declarers)
            check_legal(game, rng)
        if game.is_chance or game.is_over:
            check_deal_points(game)
    assert game.deals_played <= rules.max_deals if rules.max_deals else True
    assert game.legal_actions() == []
    ranks = game.ranking()
    assert sorted(ranks)[0] == 1
    return game


CONFIG = st.sampled_from(CONFIGS)
SEED = st.text(alphabet="abcxyz019/-", max_size=10)
POLICY = st.integers(min_value=0, max_value=2**32 - 1)
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(config=CONFIG, seed=SEED, policy=POLICY)
def test_random_games_keep_every_invariant(
    config: tuple[str, dict[str, Any]], seed: str, policy: int
) -> None:
    run_checked(rules_of(config, max_deals=2), seed, policy)


def test_every_config_plays_checked_games() -> None:
    """Each option set at least once (hypothesis picks configurations at random)."""
    for k, config in enumerate(CONFIGS):
        run_checked(rules_of(config, max_deals=2), f"cfg/{k}", k)


@settings(max_examples=200, deadline=None)
@given(config=CONFIG, seed=SEED, policy=POLICY, at=st.integers(0, 400))
def test_copies_are_independent_and_faithful(
    config: tuple[str, dict[str, Any]], seed: str, policy: int, at: int
) -> None:
    rules = rules_of(config, max_deals=2)
    game = Game(rules, seed=seed)
    rng = random.Random(policy)
    for _ in range(at):
        if game.is_over:
            break
        if game.is_chance:
            game.deal()
        else:
            acts = game.legal_actions()
            game.apply(acts[rng.randrange(len(acts))])
    before = snapshot(game)
    twin = game.copy()
    assert snapshot(twin) == before
    # Play the copy on: the original does not move.
    rng2 = random.Random(policy + 1)
    for _ in range(60):
        if twin.is_over:
            break
        if twin.is_chance:
            twin.deal()
        else:
            acts = twin.legal_actions()
            twin.apply(acts[rng2.randrange(len(acts))])
    assert snapshot(game) == before
    # And the same step on both gives the same state.
    twin = game.copy()
    if game.is_over:
        return
    if game.is_chance:
        game.deal()
        twin.deal()
    else:
        a = game.legal_actions()[rng.randrange(len(game.legal_actions()))]
        game.apply(a)
        twin.apply(str(a))
    assert snapshot(twin) == snapshot(game)


@settings(max_examples=100, deadline=None)
@given(config=CONFIG, seed=SEED, policy=POLICY)
def test_same_seed_same_game(config: tuple[str, dict[str, Any]], seed: str, policy: int) -> None:
    rules = rules_of(config, max_deals=3)
    a = run_checked(rules, seed, policy, full=False)
    b = run_checked(rules, seed, policy, full=False)
    log_a = [(d, s, str(x)) for d, s, x in a.actions_log]
    log_b = [(d, s, str(x)) for d, s, x in b.actions_log]
    assert log_a == log_b
    assert a.scores == b.scores and a.events == b.events
    assert [r.deck for r in a.records] == [r.deck for r in b.records]


def sober_choice(game: Game, rng: random.Random) -> str:
    """Random play that avoids the ruinous choices of a random bidder: it passes when it
    may, concedes when it can (60 to each opponent), else takes the lowest contract, so
    the totals drift upwards."""
    texts = [str(a) for a in game.legal_actions()]
    if "concede" in texts:
        return "concede"
    bids = [t for t in texts if t.startswith("bid ")]
    if bids and game.observation(0)["bid"] is None:
        return bids[0]  # open when nobody has: all passing would redeal for ever
    for pick in ("pass", "look", "keep"):
        if pick in texts:
            return pick
    contracts = [t for t in texts if t.startswith("contract")]
    if contracts:
        return contracts[0]
    texts = [t for t in texts if t not in ("concede", "redeal")] or texts
    return texts[rng.randrange(len(texts))]


@settings(max_examples=100, deadline=None)
@given(config=CONFIG, seed=SEED, policy=POLICY)
def test_games_without_a_deal_limit_end_at_the_target(
    config: tuple[str, dict[str, Any]], seed: str, policy: int
) -> None:
    preset, options = config
    opts = dict(options)
    opts.update(barrel=None, target=250, win_above_target=False)
    opts.pop("bolt_every", None)  # a bolt every deal drags every score down
    if opts.get("barrel_mode") == "talon":
        opts["barrel_mode"] = "hold"
    rules = Rules.preset(preset, **opts)
    game = Game(rules, seed=seed)
    rng = random.Random(policy)
    while not game.is_over:
        assert game.deal_index < 2000, f"no winner after 2000 deals: {game.scores}"
        if game.is_chance:
            game.deal()
        else:
            game.apply(sober_choice(game, rng))
    assert game.winners and all(game.scores[s] >= 250 for s in game.winners)
    assert game.ranking().index(1) in game.winners


# --------------------------------------------------------------------------- an oracle

RANK_ORDER = "789JQKTA"
POINTS = {"7": 0, "8": 0, "9": 0, "J": 2, "Q": 3, "K": 4, "T": 10, "A": 11}


def trick_winner(cards: list[tuple[int, str]], trump: str | None) -> int:
    """The seat that wins a trick, from the rules of 1000 alone."""
    led = cards[0][1][1]
    trumps = [(s, c) for s, c in cards if trump is not None and c[1] == trump]
    pool = trumps or [(s, c) for s, c in cards if c[1] == led]
    return max(pool, key=lambda sc: RANK_ORDER.index(sc[1][0]))[0]


def round5(x: int) -> int:
    return (x + 2) // 5 * 5


def oracle_check(game: Game) -> None:
    """Re-derive a finished deal from its public events: every trick's winner and points,
    the marriages, and (for plain scoring rules) every seat's score change."""
    r = game.rules
    events = game.events
    start = max(i for i, e in enumerate(events) if e["type"] == "deal_start")
    deal = events[start:]
    trump: str | None = None
    taken = [0] * game.n
    marriages = [0] * game.n
    last = -1
    declarer = game.declarer
    for e in deal:
        if e["type"] == "action" and e["action"].startswith("trump "):
            trump = e["action"].split()[1]
        elif e["type"] == "marriage":
            if e["kind"] in ("marriage", "half", "aces") and not r.fixed_trump:
                trump = e["suit"]
            suit = "CSHD".index(e["suit"])
            value = {"marriage": r.marriage_values[suit],
                     "half": r.marriage_values[suit] // 2,
                     "aces": r.ace_marriage, "nines": r.nines_marriage}[e["kind"]]
            if r.marriage_declarer_only and e["seat"] != declarer:
                value = 0
            assert e["points"] == value, e
            marriages[e["seat"]] += value
        elif e["type"] == "trick":
            cards = [(s, c) for s, c in e["cards"]]
            assert e["winner"] == trick_winner(cards, trump), (e, trump)
            assert e["points"] == sum(POINTS[c[0]] for _, c in cards)
            taken[e["winner"]] += e["points"]
            last = e["winner"]
    end = deal[-1]
    if end["type"] != "deal_end" or game.records[-1].result is None:
        return
    res = game.records[-1].result
    if "conceded" in res:
        return
    # Cards counted outside the tricks.
    if declarer >= 0 and r.discards_to != "nobody":
        to = declarer if r.discards_to == "declarer" else last
        taken[to] += mask_points(game.discards)
    taken[last] += mask_points(game.bank)
    if r.spare_talon == "last-trick":
        taken[last] += mask_points(game.spare)
    assert taken == game.observation(0)["points_taken"]
    raw = [taken[s] + marriages[s] for s in range(game.n)]
    assert raw == res["points"]
    want = [0] * game.n
    made = False
    for s in game.active:
        pts = round5(raw[s]) if r.rounding else raw[s]
        if s == declarer:
            cmp = pts if r.round_before_compare else raw[s]
            made = cmp >= game.contract
            mult = r.blind_multiplier if res["blind"] else 1
            want[s] = (game.contract if made else -game.contract) * mult
        elif declarer < 0 or r.opponents_score:
            double = res["blind"] and r.blind_doubles_opponents
            want[s] = pts * (r.blind_multiplier if double else 1)
    assert made == res["made"]
    assert want == res["deltas"], (want, res)


def plain_scoring(config: tuple[str, dict[str, Any]]) -> Rules:
    """The configuration with the scoring extras off, so deal deltas follow the oracle."""
    preset, options = config
    opts = {**options, "barrel": None, "bolts": False, "dump_truck": "off",
            "golden_round": False, "virgin_bonus": 0, "max_deals": 4}
    if opts.get("barrel_mode") == "talon":
        opts["barrel_mode"] = "hold"
    if Rules.preset(preset, **options).four_nines == "points":
        opts["four_nines"] = "none"
    if "sitter_scores_talon" in opts:
        opts["sitter_scores_talon"] = False
    return Rules.preset(preset, **opts)


@settings(max_examples=500, deadline=None)
@given(config=CONFIG, seed=SEED, policy=POLICY)
def test_tricks_and_scores_match_an_independent_oracle(
    config: tuple[str, dict[str, Any]], seed: str, policy: int
) -> None:
    rules = plain_scoring(config)
    game = Game(rules, seed=seed)
    rng = random.Random(policy)
    checked = 0
    while not game.is_over:
        if game.is_chance:
            game.deal()
            continue
        acts = game.legal_actions()
        game.apply(acts[rng.randrange(len(acts))])
        if game.is_chance or game.is_over:
            oracle_check(game)
            checked += 1
    assert checked


def test_copy_sets_every_attribute_of_the_state() -> None:
    """A field added to the state and forgotten in ``copy`` would make a copy raise or,
    worse, share a list with its original. The copies are generated from the fields
    (scripts/generate.py); read from the source files, which stay the reference when the
    engine runs compiled (arena.compiled)."""
    import ast

    from arena.compiled import source_path

    def class_of(module: str, name: str) -> ast.ClassDef:
        tree = ast.parse(source_path(module).read_text(encoding="utf-8"))
        return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)

    def slots_of(cls: ast.ClassDef) -> set[str]:
        value = next(
            n.value for n in cls.body
            if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "__slots__"
        )
        return set(ast.literal_eval(value))

    slots = (
        slots_of(class_of("arena.engine.game", "Game"))
        | slots_of(class_of("arena.engine.state", "State"))
        | slots_of(class_of("arena.engine.tricks", "TrickPlay"))
    )
    tree = ast.parse(source_path("arena.engine.copies").read_text(encoding="utf-8"))
    assigned = {
        t.attr for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
        if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "dst"
    }
    assert assigned == slots
