"""The search's lean play engine and deal scoring against the engine, side by side.

Random games of every preset and of many house-option sets are played by the engine; from
the first card of each deal the lean engine plays the same moves.  At every step both list
the same legal moves in the same order and end the trick the same way; at the end of the
deal both count the same points and the lean scoring gives the engine's new scores and
winners (conceded deals included).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from arena.bots.search.lean import NINES_MASK, LeanRules, PlayState, move_text, parse_move
from arena.bots.search.scoring import DealContext, Evaluator
from arena.bots.search.tracker import MatchTracker
from arena.bots.search.world import deal_context
from arena.engine import PRESETS, Game, Rules
from arena.engine.cards import mask_points
from arena.engine.game import PLAY

CONFIGS: list[tuple[str, dict[str, Any]]] = [
    *[(name, {}) for name in PRESETS],
    ("classic", {"blind_bid": True, "blind_hides_talon": True, "blind_min_score": 0}),
    ("classic", {"rebuy": True}),
    ("classic", {"golden_round": True}),
    ("classic", {"four_nines": "redeal-after-talon"}),
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
    ("classic", {"barrel": None, "target": 300, "win_above_target": True}),
    ("classic-4", {"sitter_scores_talon": True, "golden_round": True}),
    ("classic", {"golden_round": True, "golden_round_count": "deals"}),
    ("classic", {"golden_round": True, "golden_restart": False, "target": 300, "barrel": None}),
    ("classic", {"barrel_jump": "contract", "barrel_bolt_penalty": True, "bolt_every": 1}),
    ("classic", {"barrel": 150, "barrel_falls_reset": 1, "barrel_falls_reset_to": 5,
                 "barrel_falls_no_barrel": True}),
    ("classic", {"blind_bid": True, "blind_doubles_opponents": True, "blind_min_score": 0,
                 "concede_half_round": "up", "concede_opponents": "half"}),
    ("classic", {"four_nines": "points", "four_nines_counted": "either"}),
    ("two-player", {"spare_talon": "last-trick"}),
    ("estonian", {"players": 2}),
    ("estonian", {"players": 4}),
    ("german-1001", {"players": 4}),
    ("german-1001", {"auction": True, "barrel": None}),
]



def lean_from_game(game: Game) -> PlayState:
    """The lean position of a game at the first card of a deal."""
    r = game.rules
    st = PlayState.new(LeanRules(r), list(game.active), game.n, list(game.hands),
                       game.to_act or 0, game.declarer)
    st.trump = game.trump
    st.trump_by = game.trump_by
    extra = mask_points(game.bank)
    if r.spare_talon == "last-trick":
        extra += mask_points(game.spare)
    st.extra_last = extra
    st.extra_declarer = mask_points(game.discards)
    return st


def context_from_game(game: Game) -> DealContext:
    """What a seat following the match would know, taken here from the engine itself."""
    return DealContext(
        game.rules, scores=game.scores, active=game.active, declarer=game.declarer,
        contract=game.contract, bolts=game.bolts, barrel_on=game.barrel_on,
        barrel_tries=game.barrel_tries, barrel_falls=game.barrel_falls,
        concessions=game.concessions, blind_won=game.blind_won, golden=game.golden,
        golden_done=game.golden_done, golden_from=game.golden_from,
        golden_made=game.golden_made, no_barrel=game.no_barrel,
        forced_declarer=game.forced_declarer, deal_number=game.deal_index,
        deals_played=game.deals_played,
        nines_dealt=[s for s in game.active if game.dealt[s] & NINES_MASK == NINES_MASK],
        nines_held=([s for s in game.active if game.held[s] & NINES_MASK == NINES_MASK]
                    if game.held else None),
        talon=game.orig_talon,
    )


def play_and_compare(rules: Rules, seed: str, rng: random.Random) -> tuple[int, int]:
    game = Game(rules, seed=seed)
    lean: PlayState | None = None
    ctx: DealContext | None = None
    played = conceded = 0
    while not game.is_over:
        if game.is_chance:
            game.deal()
            lean = None
            continue
        legal = game.legal_actions()
        if game.phase == PLAY:
            if lean is None:
                lean = lean_from_game(game)
                ctx = context_from_game(game)
            moves = lean.legal()
            assert [move_text(m) for m in moves] == [a.text for a in legal]
            assert lean.to_act == game.to_act
            action = legal[rng.randrange(len(legal))]
            move = parse_move(action.text)
            assert move is not None
            game.apply(action)
            lean.apply(move)
            assert lean.trump == game.trump
            assert lean.tricks == game.tricks_taken
            if lean.over:
                assert ctx is not None
                raw = lean.raw_points()
                rec = game.records[-1].result
                assert rec is not None and raw == rec["points"]
                scores, winners = ctx.played(raw, lean.tricks)
                assert scores == game.scores
                assert winners == (game.winners if game.is_over else [])
                played += 1
            continue
        action = legal[rng.randrange(len(legal))]
        if action.text == "concede" and game.phase_name in ("contract", "exchange"):
            before = context_from_game(game)
            game.apply(action)
            scores, winners = before.conceded()
            assert scores == game.scores
            assert winners == (game.winners if game.is_over else [])
            conceded += 1
            continue
        game.apply(action)
    return played, conceded


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c[0]}-{len(c[1])}")
def test_lean_engine_and_scoring_match_the_engine(config: tuple[str, dict[str, Any]]) -> None:
    preset, options = config
    rules = Rules.preset(preset, **{"max_deals": 12, **options})
    rng = random.Random(f"lean/{preset}/{sorted(options)}")
    played = 0
    for k in range(8):
        p, _ = play_and_compare(rules, f"lean-{k}", rng)
        played += p
    assert played >= 8


def test_concessions_and_barrel_falls_are_scored_like_the_engine() -> None:
    rules = Rules.preset("classic", barrel=200, max_deals=40)
    rng = random.Random("concede")
    conceded = played = 0
    for k in range(6):
        p, c = play_and_compare(rules, f"barrel-{k}", rng)
        played += p
        conceded += c
    assert played > 20 and conceded > 5


def test_evaluator_values_standings_and_a_won_game() -> None:
    rules = Rules.preset("classic")
    ctx = DealContext(rules, scores=[880, 500, 100], active=[0, 1, 2], declarer=1,
                      contract=100, barrel_on=[True, False, False])
    ev = Evaluator(ctx, seat=1)
    # Seat 1 makes 100: +100 for it, seat 0 on the barrel scores nothing, seat 2 gets 15.
    v = ev.played([10, 100, 10], [1, 6, 1])
    assert v == pytest.approx(((100 - 0) + (100 - 10)) / 2)
    # A failed contract moves the standings the other way.
    assert ev.played([30, 60, 30], [2, 4, 2]) < 0
    # Winning the game is worth more than any lead: seat 0 at 880 on the barrel wins.
    ctx0 = DealContext(rules, scores=[880, 500, 100], active=[0, 1, 2], declarer=0,
                       contract=120, barrel_on=[True, False, False])
    win = Evaluator(ctx0, seat=0).played([120, 0, 0], [8, 0, 0])
    assert win == pytest.approx(1000 - (380 + 780) / 2)


@pytest.mark.parametrize("preset", ["classic", "estonian", "german-1001", "two-player",
                                    "classic-4", "classic-501"])
def test_the_fast_rollout_plays_the_default_policy_move_for_move(preset: str) -> None:
    from arena.bots.search.rollout import costs_for, fast_playout, playout

    rules = Rules.preset(preset)
    lr = LeanRules(rules)
    costs = costs_for(lr)
    rng = random.Random(preset)
    compared = 0
    for k in range(40):
        game = Game(rules, seed=f"fast-{k}")
        game.deal()
        while game.phase != PLAY and not game.is_chance and not game.is_over:
            legal = game.legal_actions()
            game.apply(legal[rng.randrange(len(legal))])
        if game.phase != PLAY:
            continue
        st = lean_from_game(game)
        for _ in range(rng.randrange(12)):
            moves = st.legal()
            if not moves:
                break
            st.apply(moves[rng.randrange(len(moves))])
        if st.over:
            continue
        team = tuple(s for s in game.active if s != game.declarer) if game.declarer >= 0 \
            else None
        a = playout(st.copy(), costs, team, 0)
        b = fast_playout(st.copy(), costs, team, 0)
        assert (a.taken, a.marr, a.tricks, a.trump, a.last_trick) == (
            b.taken, b.marr, b.tricks, b.trump, b.last_trick)
        compared += 1
    assert compared > 20


@pytest.mark.parametrize("options", [
    {"golden_round": True},
    {"golden_round": True, "golden_round_count": "deals"},
    {"golden_round": True, "barrel": 300, "bolt_every": 1},
    {"golden_round": True, "concede_limit": 2},
], ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_a_seat_follows_the_golden_round_from_the_public_events(options: dict[str, Any]) -> None:
    """The bot's own view, not the engine's: a tracker fed what seat 0 receives knows
    whether the deal is golden, the golden round's progress and the concessions, and its
    context then scores every played deal as the engine does (restarts included)."""
    rules = Rules.preset("classic", **{"max_deals": 20, **options})
    rng = random.Random(f"golden/{sorted(options.items())}")
    golden_deals = restarts = scored = 0
    for k in range(10):
        game = Game(rules, seed=f"golden-{k}")
        tracker = MatchTracker(rules)
        fed = 0
        ctx: DealContext | None = None
        while not game.is_over:
            if game.is_chance:
                game.deal()
                continue
            events = game.events
            for event in events[fed:]:
                tracker.on_event(event)
            fed = len(events)
            if game.to_act == 0:
                tracker.observe(game.observation(0))  # as seat 0 is asked, at every turn
            if game.phase == PLAY and ctx is None:
                obs = game.observation(0)
                tracker.observe(obs)
                assert tracker.golden == game.golden
                assert (tracker.golden_done, tracker.golden_from, tracker.golden_made) == (
                    game.golden_done, game.golden_from, game.golden_made)
                assert tracker.concessions == game.concessions
                on_barrel = [s for s in range(rules.players) if game.barrel_on[s]]
                assert [tracker.barrel_tries[s] for s in on_barrel] == [
                    game.barrel_tries[s] for s in on_barrel]
                ctx = deal_context(rules, obs, tracker)
                golden_deals += game.golden
            legal = game.legal_actions()
            action = legal[rng.randrange(len(legal))]
            if action.text == "concede":
                ctx = None
            game.apply(action)
            rec = game.records[-1].result
            if ctx is not None and rec is not None and "points" in rec:
                scores, _ = ctx.played(rec["points"], game.tricks_taken)
                assert scores == game.scores
                restarts += bool(rec.get("golden_restart"))
                scored += 1
                ctx = None
            elif rec is not None:
                ctx = None
    assert golden_deals >= 10 and scored >= 20
    assert restarts >= 1
