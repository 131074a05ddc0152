"""The search bot: legal in every preset, inside its budget, reproducible, and honest.

Matches run through the real referee (events, clock, replay) against the other built-in
bots.  What the bot believes about hidden cards is checked against the real deal at every
play decision: the true hands always fit the constraints it derived (it never rules out
what is true), and every world it samples fits them too (it never invents what it has
seen to be impossible).  Strength is not tested here: ``arena bench strength`` measures it.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from arena.bots import BUILTIN_BOTS, SearchBot, get_bot
from arena.bots.search import LEVELS
from arena.bots.search.belief import suit_bits
from arena.bots.search.world import play_knowledge
from arena.engine import PRESETS, Game, Rules
from arena.engine.cards import CARD_NAMES, SUIT_MASK, cards_of
from arena.engine.game import DealRecord, events_public
from arena.engine.replay import verify
from arena.match.types import JSON, MatchResult, MatchSpec
from arena.referee.runner import run_match
from arena.referee.seats import InProcessSeat

#: Quick settings: a handful of worlds a decision, no dependence on the clock.
QUICK: dict[str, Any] = {"iterations": 3, "budget_ms": 60_000.0}

HOUSE: list[tuple[str, dict[str, Any]]] = [
    ("classic", {"blind_bid": True, "rebuy": True}),
    ("classic", {"four_nines": "redeal-before-auction", "half_marriage": True,
                 "ace_marriage": 200, "nines_marriage": 360}),
    ("classic", {"four_nines": "redeal-after-talon", "trump_lead_restricted": True}),
    ("classic", {"sale": True, "talon_public": False, "raise_contract": False,
                 "blind_first_trick": True}),
    ("classic", {"fixed_trump": True, "golden_round": True}),
    ("classic", {"marriage_ascending": True, "must_trump": False}),
    ("classic", {"barrel_mode": "talon", "barrel": 200, "concede_limit": 1}),
    ("two-player", {"spare_talon": "last-trick", "exchange": "give"}),
    ("estonian", {"players": 4}),
    ("estonian", {"players": 2}),
    ("german-1001", {"players": 4}),
]


def _match(preset: str, options: dict[str, Any], seed: str, bots: list[Any],
           max_deals: int = 4) -> MatchResult:
    spec = MatchSpec(match_id=f"search-{seed}", rules={"preset": preset, "options": options},
                     seed=seed, bots=tuple(getattr(b, "name", "bot") for b in bots),
                     max_deals=max_deals)
    return asyncio.run(run_match(spec, [InProcessSeat(b) for b in bots]))


def _rules_json(preset: str, options: dict[str, Any]) -> JSON:
    return Rules.preset(preset, **options).to_json()


# ---------------------------------------------------------------------- registry, CLI
def test_levels_are_registered_and_listed(capsys: pytest.CaptureFixture[str]) -> None:
    from arena.referee.bots_cli import bots_main

    for name in LEVELS:
        assert name in BUILTIN_BOTS
        bot = get_bot(name, seed="x")
        assert isinstance(bot, SearchBot) and bot.budget_ms == LEVELS[name][0]
    assert bots_main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("search", "search-fast", "search-strong"):
        assert f"\n{name} " in f"\n{out}"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="budget_ms"):
        SearchBot(budget_ms=0)
    with pytest.raises(ValueError, match="iterations"):
        SearchBot(iterations=0)


# ---------------------------------------------------------------------- legality
def _check_clean(res: MatchResult, bots: list[Any]) -> None:
    assert res.status == "completed"
    for st in res.seat_stats:
        assert (st.illegal, st.malformed, st.timeouts, st.strikes) == (0, 0, 0, 0)
    for b in bots:
        if isinstance(b, SearchBot):
            assert b.errors == 0
    assert res.replay is not None and verify(res.replay) is None


@pytest.mark.parametrize("preset", list(PRESETS))
def test_never_an_illegal_move_in_any_preset(preset: str) -> None:
    rj = _rules_json(preset, {})
    n = Rules.preset(preset).players
    for k in range(2):
        bots: list[Any] = [SearchBot(seed=f"{preset}/{k}/{s}", rules=rj, **QUICK)
                           for s in range(n)]
        bots[1] = get_bot("greedy" if k == 0 else "random", seed="o", rules=rj)
        res = _match(preset, {}, f"{preset}-{k}", bots, max_deals=5)
        _check_clean(res, bots)
        searched = [b for b in bots if isinstance(b, SearchBot)]
        # The search decided (almost) everything itself: no model was missing.
        assert sum(b.fallbacks for b in searched) <= 2


@pytest.mark.parametrize("config", HOUSE, ids=lambda c: f"{c[0]}-{'-'.join(c[1])}")
def test_never_an_illegal_move_under_house_rules(config: tuple[str, dict[str, Any]]) -> None:
    preset, options = config
    rj = _rules_json(preset, options)
    n = Rules.preset(preset, **options).players
    bots: list[Any] = [SearchBot(seed=f"h/{s}", rules=rj, **QUICK) for s in range(n)]
    bots[0] = get_bot("random", seed="r", rules=rj)
    res = _match(preset, options, f"house-{preset}", bots, max_deals=6)
    _check_clean(res, bots)


def test_observations_alone_are_enough_to_play() -> None:
    """A bot fed no events (a gateway that forwards none) still plays legal moves."""

    class Deaf(SearchBot):
        def on_event(self, event: JSON) -> None:
            return None

    rj = _rules_json("classic", {})
    bots: list[Any] = [Deaf(seed="d", rules=rj, **QUICK), get_bot("greedy"), get_bot("greedy")]
    res = _match("classic", {}, "deaf", bots)
    _check_clean(res, bots)


def test_garbage_observations_get_a_legal_answer() -> None:
    bot = SearchBot(seed="g", **QUICK)
    legal = ["play AH", "play 9H"]
    for obs in ({}, {"phase": "play", "seat": "x"}, {"phase": "play", "hand": 7, "seat": 0,
                                                    "players": 3, "trick": [[0, None]]},
                {"phase": "auction", "auction": [[None, 5]], "seat": 0, "players": 3}):
        assert bot.decide(obs, legal) in legal
    assert bot.decide({"phase": "auction"}, ["pass", "bid 105"]) in ("pass", "bid 105")


# ---------------------------------------------------------------------- budget
class TickClock:
    """A clock that moves only when read: each reading costs ``step`` seconds."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step
        self.reads = 0

    def __call__(self) -> float:
        self.now += self.step
        self.reads += 1
        return self.now


@pytest.mark.parametrize("preset", ["classic", "estonian", "two-player"])
def test_every_decision_stays_inside_its_budget(preset: str) -> None:
    """The search reads the clock inside its loops and stops before the budget is spent."""
    rj = _rules_json(preset, {})
    n = Rules.preset(preset).players
    spent: list[float] = []

    class Watched(SearchBot):
        def decide(self, observation: JSON, legal: Any) -> str:
            answer = super().decide(observation, legal)
            spent.append(self.last_ms)
            return answer

    bots: list[Any] = [Watched(seed=f"b{s}", rules=rj, budget_ms=20.0, clock=TickClock(0.0005))
                       for s in range(n)]
    spec = MatchSpec(match_id="budget", rules={"preset": preset}, seed="budget",
                     bots=("search",) * n, max_deals=3)
    res = asyncio.run(run_match(spec, [InProcessSeat(b) for b in bots]))
    _check_clean(res, bots)
    assert spent and max(spent) <= 20.0
    # It used the budget it had: many searched decisions ran to the deadline.
    from arena.bots.search.bot import SAFETY, SAFETY_MS

    deadline = 20.0 * SAFETY - min(SAFETY_MS, 2.0)
    assert sum(1 for x in spent if x >= deadline) >= len(spent) // 4


def test_a_stalled_clock_still_gets_an_answer() -> None:
    """Time that jumps past the deadline (the process was descheduled) ends the search."""
    jumps = iter([0.0] + [5.0] * 10_000)
    bot = SearchBot(seed="s", budget_ms=50.0, clock=lambda: next(jumps))
    rj = _rules_json("classic", {})
    bots: list[Any] = [bot, get_bot("greedy", rules=rj), get_bot("greedy", rules=rj)]
    bot._setup(rj)
    res = _match("classic", {}, "stall", bots, max_deals=1)
    assert res.seat_stats[0].strikes == 0


# ---------------------------------------------------------------------- determinism
def _actions(res: MatchResult) -> list[Any]:
    assert res.replay is not None
    return [d["actions"] for d in res.replay["deals"]]


@pytest.mark.parametrize("preset", ["classic", "estonian"])
def test_same_seed_and_iterations_give_the_same_moves(preset: str) -> None:
    rj = _rules_json(preset, {})

    def run(seed: str) -> list[Any]:
        bots: list[Any] = [SearchBot(seed=f"{seed}/{s}", rules=rj, iterations=4,
                                     budget_ms=60_000.0) for s in range(3)]
        bots[2] = get_bot("greedy", rules=rj)
        random.seed(seed)  # the global generator must not matter
        return _actions(_match(preset, {}, "same-deals", bots, max_deals=3))

    first = run("alpha")
    assert run("alpha") == first
    assert run("beta") != first


# ---------------------------------------------------------------------- inference
def _true_places(game: Game, seat: int, k: Any) -> list[int]:
    """Where each place of the knowledge really is: seats' hands, then the piles."""
    out = [game.hands[s] if s != seat else 0 for s in range(game.n)]
    for name in k.pile_names:
        if name == "discards":
            out.append(game.discards)
        elif name == "spare":
            out.append(game.spare)
        elif name == "bank-card":
            out.append(game.bank & ~game.spare)
        elif name.startswith("down-"):
            s = int(name[5:])
            out.append(sum(1 << c for t, c in game.trick if t == s))
        else:
            raise AssertionError(f"unexpected pile {name}")
    return out


def _fits(k: Any, content: list[int], *, strict_talon: bool) -> None:
    assert len(content) == len(k.capacity)
    seen = k.my_hand
    for place, cards in enumerate(content):
        assert not cards & seen, "a place holds a card the seat has seen elsewhere"
        assert cards & k.must[place] == k.must[place]
        assert (cards & ~k.must[place]).bit_count() == k.capacity[place]
        if place < k.n:
            assert not suit_bits(cards & ~k.must[place]) & k.voids[place], "void broken"
            assert not suit_bits(cards) & k.voids[place] or k.must[place]
        if k.allowed[place] != -1:
            assert not (cards & ~k.must[place]) & ~k.allowed[place]
    if strict_talon and k.talon_home >= 0:
        for place in range(k.n):
            if place != k.talon_home:
                assert (content[place] & k.talon_cards).bit_count() <= 1


@pytest.mark.parametrize("preset", ["classic", "estonian", "two-player", "two-player-9",
                                    "german-1001", "classic-4"])
def test_beliefs_never_exclude_the_truth_and_samples_respect_them(preset: str) -> None:
    rules = Rules.preset(preset)
    rj = rules.to_json()
    rng = random.Random(preset)
    checked = 0
    for g in range(3):
        game = Game(rules, seed=f"belief-{g}")
        bots = [SearchBot(seed=f"{g}/{s}", rules=rj, **QUICK) for s in range(game.n)]
        for b in bots:
            b.on_event({"type": "match_start", "rules": rj})
        cursor = 0
        for _ in range(6):
            if game.is_over:
                break
            game.deal()
            cursor = 0
            for b in bots:
                b.on_event({"type": "deal_start", "deal": game.records[-1].index,
                            "dealer": game.dealer})
            talon_sent = False
            while not game.is_chance and not game.is_over:
                rec = game.records[-1]
                shim = DealRecord(rec.index, rec.dealer, rec.deck)
                shim.events = rec.events[cursor:]
                cursor = len(rec.events)
                for ev in events_public(shim):
                    for b in bots:
                        b.on_event(ev)
                if not talon_sent and game.talon_public and game.talon:
                    talon_sent = True
                    cards = [CARD_NAMES[c] for c in cards_of(game.talon[game.chosen])]
                    for b in bots:
                        b.on_event({"type": "talon", "deal": rec.index, "cards": cards})
                seat = game.to_act
                assert seat is not None
                obs = game.observation(seat)
                legal = [a.text for a in game.legal_actions()]
                if game.phase_name == "play":
                    bot = bots[seat]
                    k = play_knowledge(rules, obs, bot.tracker.observe(obs))
                    assert k is not None, "the seat's knowledge does not add up"
                    _fits(k, _true_places(game, seat, k), strict_talon=True)
                    for _ in range(4):
                        world = k.sample(rng)
                        assert world is not None
                        _fits(k, world, strict_talon=False)
                    checked += 1
                game.apply(bots[seat].decide(obs, legal))
    assert checked > 50


def test_voids_and_declared_marriages_shape_the_worlds() -> None:
    """A seat that did not follow hearts gets no heart; a declared marriage's other half
    stays with its declarer."""
    from arena.bots.search.belief import DealHistory, TrickSeen
    from arena.bots.search.lean import KQ

    rules = Rules.preset("classic")
    hist = DealHistory(deal=0)
    # Trick 1: seat 0 leads AH, seat 1 plays 9S (void in hearts), seat 2 plays 9H.
    c = {n: i for i, n in enumerate(CARD_NAMES)}
    hist.tricks.append(TrickSeen([(0, c["AH"]), (1, c["9S"]), (2, c["9H"])], -1, False))
    hist.declarations.append((0, 1, "marriage"))  # seat 0 declared spades (led KS)
    hist.tricks.append(TrickSeen([(0, c["KS"]), (1, c["AS"]), (2, c["JS"])], 1, False))
    hist.trump = 1
    obs: JSON = {
        "seat": 2, "players": 3, "active": [0, 1, 2], "declarer": 0, "phase": "play",
        "hand": ["TH", "KH", "QC", "KC", "9D", "JD"], "hand_sizes": [6, 6, 6],
        "trick": [], "trump": "S", "talon": [], "given": [], "received": [],
        "shown_marriages": [], "auction": [], "tricks_taken": [2, 0, 0],
        "points_taken": [40, 0, 0], "marriages": [[0, "S", 40]], "leader": 0,
    }
    k = play_knowledge(rules, obs, hist)
    assert k is not None
    assert k.voids[1] & (1 << 2)  # hearts
    assert k.must[0] & KQ[1] == 1 << c["QS"]  # the queen of spades is still with seat 0
    rng = random.Random(1)
    for _ in range(50):
        world = k.sample(rng)
        assert world is not None
        assert not world[1] & SUIT_MASK[2]
        assert world[0] >> c["QS"] & 1


def test_the_search_stops_early_only_when_the_best_move_is_beyond_doubt() -> None:
    from arena.bots.search.cardplay import settled

    rng = random.Random(5)
    noise = [rng.gauss(0, 30) for _ in range(16)]
    clear = [[50 + x for x in noise], [x for x in noise], [x - 40 for x in noise]]
    assert settled(clear)
    assert not settled([v[:8] for v in clear])  # too few worlds yet
    close = [[rng.gauss(5, 30) for _ in range(16)], [rng.gauss(0, 30) for _ in range(16)]]
    assert not settled(close)
    same = [[float(x) for x in range(16)], [float(x) for x in range(16)]]
    assert settled(same)  # equivalent cards: nothing to find out


# ---------------------------------------------------------------------- pre-play choices
def _deal(rules: Rules, hands: dict[int, str], talon: str) -> Game:
    """Dealer 0: the deck gives seats 1, 2, ... (the dealer last) the named hands."""
    from arena.engine.cards import DECK_24, parse_card

    named = {s: [parse_card(t) for t in text.split()] for s, text in hands.items()}
    tal = [parse_card(t) for t in talon.split()]
    used = {c for cs in named.values() for c in cs} | set(tal)
    rest = [c for c in DECK_24 if c not in used]
    order = [(1 + i) % rules.players for i in range(rules.players)]
    deck: list[int] = []
    for s in order:
        cs = named.get(s, [])
        while len(cs) < rules.hand_size:
            cs.append(rest.pop(0))
        deck += cs
    deck += tal + rest
    game = Game(rules, seed="scenario")
    game.deal(deck)
    return game


def _ask(game: Game, bot: SearchBot) -> str:
    seat = game.to_act
    assert seat is not None
    return bot.decide(game.observation(seat), [a.text for a in game.legal_actions()])


def _declarer_bot(rules: Rules, seat: int) -> SearchBot:
    bot = SearchBot(seed="scenario", rules=rules.to_json(), iterations=60, budget_ms=60_000.0)
    bot.on_event({"type": "deal_start", "deal": 0, "dealer": 0})
    return bot


def _to_contract(game: Game, bot: SearchBot) -> None:
    """The others pass; the forced declarer (seat 1) takes the talon and gives cards."""
    while game.phase_name == "auction":
        game.apply("pass")
    cards = [CARD_NAMES[c] for c in cards_of(game.talon[0])]
    bot.on_event({"type": "talon", "deal": 0, "cards": cards})
    while game.phase_name == "exchange":
        game.apply(_ask(game, bot))


def test_a_hopeless_hand_concedes_when_conceding_costs_nothing() -> None:
    rules = Rules.preset("classic", concede_declarer_loses=False, concede_opponents="half")
    game = _deal(rules, {1: "9C JC 9S JS 9H JH 9D"}, "JD QC QS")
    bot = _declarer_bot(rules, 1)
    _to_contract(game, bot)
    assert game.phase_name == "contract"
    assert _ask(game, bot) == "concede"


def test_a_strong_hand_raises_and_a_weak_one_does_not() -> None:
    rules = Rules.preset("classic")
    game = _deal(rules, {1: "AH TH KH QH AS TS AD"}, "AC TC KC")
    bot = _declarer_bot(rules, 1)
    _to_contract(game, bot)
    choice = _ask(game, bot)
    assert choice.startswith("contract ") and int(choice.split()[1]) >= 150
    weak = _deal(rules, {1: "9C JC QC 9S JS 9H AD"}, "JH 9D JD")
    bot = _declarer_bot(rules, 1)
    _to_contract(weak, bot)
    assert _ask(weak, bot) in ("contract 100", "concede")


def test_the_auction_bids_a_strong_hand_and_passes_a_weak_one() -> None:
    """Estonian, no forced bid: forehand (seat 1) looks and passes, then seat 2 decides."""
    rules = Rules.preset("estonian", blind_bid=False)
    for hand, talon, want in (("AC TC KC QC AS TS AH", "9D JD 9H", "bid 40"),
                              ("9C JC 9S JS 9H JH 9D", "AC AS AH", "pass")):
        game = _deal(rules, {2: hand}, talon)
        game.apply("pass")
        assert game.to_act == 2
        assert _ask(game, _declarer_bot(rules, 2)) == want
