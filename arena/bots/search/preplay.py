"""The decisions before the first card, each judged by simulation (:mod:`.dealsim`).

Every function here takes the observation, the legal actions and a budget, samples
worlds consistent with what the seat knows (its hand, a talon it saw, the cards it gave,
marriages shown, what the bids so far imply), finishes the deal in each world under each
candidate action, and returns the candidate with the best weighted mean value, or None
when it has no model for the situation (the bot then plays its plain fallback).

Worlds are weighted by how well they explain the auction so far: each bid of another seat
that its sampled hand would not make under the model, and each pass where it would have
bid, multiplies the world's weight by ``INCONSISTENT`` (:mod:`.inference`).  The weight is
soft because the other players need not bid like the model.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from arena.engine.cards import CARD_POINTS
from arena.engine.phases.base import score_may_bid
from arena.engine.rules import Rules

from .belief import CARD, SUITS, DealHistory, Knowledge, deck_mask, marriage_need, mask_of_names
from .cardplay import Budget
from .dealsim import AuctionState, DealSim, World, evaluator_for, run_auction
from .inference import INCONSISTENT
from .lean import KQ, mask_points
from .rollout import _cheapest
from .scoring import DealContext, Evaluator
from .world import auction_entries, auction_highs

_BEFORE_TALON = ("blind", "auction", "sale-offer", "sale", "talon-choice")


def _values(legal: Sequence[str], kind: str) -> list[int]:
    out = []
    for t in legal:
        k, _, v = t.partition(" ")
        if k == kind and v.isdigit():
            out.append(int(v))
    return sorted(out)


@dataclass
class AuctionStep:
    seat: int
    kind: str  # "bid" or "pass"
    value: int  # the bid, or the lowest bid the seat declined


def auction_steps(rules: Rules, obs: dict[str, Any]) -> tuple[list[AuctionStep], AuctionState]:
    """The auction entries that say something about hands, and where the auction stands.

    The compulsory opening bid says nothing and is left out; entries after the auction
    ended (the sale) are left out too.
    """
    active = [int(s) for s in obs.get("active") or ()]
    bid, bidder = 0, -1
    passed: set[int] = set()
    steps: list[AuctionStep] = []
    over = False
    first = True
    for seat, kind, value in auction_entries(obs):
        if over:
            continue
        if kind in ("bid", "blind") and value.isdigit():
            v = int(value)
            if not (first and rules.forced_bid) and kind == "bid":
                steps.append(AuctionStep(seat, "bid", v))
            bid, bidder = v, seat
        elif kind == "pass":
            lo = bid + rules.bid_step if bidder >= 0 else rules.opening_bid
            steps.append(AuctionStep(seat, "pass", lo))
            passed.add(seat)
        first = False
        live = [s for s in active if s not in passed]
        if (bidder >= 0 and live == [bidder]) or not live:
            over = True
    to_act = obs.get("to_act")
    state = AuctionState(active, bid, bidder, passed, int(to_act) if to_act is not None else 0,
                         rules.opening_bid, rules.bid_step)
    return steps, state


@dataclass
class Preplay:
    """Everything one pre-play decision needs."""

    rules: Rules
    obs: dict[str, Any]
    hist: DealHistory
    sim: DealSim
    ctx: DealContext
    budget: Budget
    rng: random.Random
    me: int
    knowledge: Knowledge
    talon_known: int
    talon_taken: bool
    steps: list[AuctionStep]
    auction: AuctionState
    hand: int
    evals: dict[tuple[int, int], Evaluator] = field(default_factory=dict)
    worlds_used: int = 0

    # ------------------------------------------------------------------ worlds
    def world(self, rng: random.Random) -> World | None:
        k = self.knowledge
        content = k.sample(rng)
        if content is None:
            return None
        n = k.n
        hands = [content[s] if s < n else 0 for s in range(n)]
        if self.hand:
            hands[self.me] = self.hand
        talons: list[int] = []
        hidden = 0
        extra_last = extra_declarer = 0
        r = self.rules
        if not self.talon_taken:
            for i in range(r.talons if r.talon_size else 0):
                name = f"talon-{i}"
                if name in k.pile_names:
                    talons.append(content[k.pile(name)])
                else:
                    talons.append(self.talon_known)
        else:
            for i, name in enumerate(k.pile_names):
                pts = mask_points(content[n + i])
                if name == "spare":
                    hidden |= content[n + i]
                    extra_last += pts * ((r.exchange == "bank") + (r.spare_talon == "last-trick"))
                elif name == "bank-card":
                    extra_last += pts
                elif name == "discards":
                    extra_declarer += pts
            extra_declarer += mask_points(mask_of_names(self.obs.get("discarded")))
            extra_last += mask_points(self.hist.my_bank)
        return World(hands, talons, extra_last, extra_declarer, hidden, self.weight(hands))

    def weight(self, hands: list[int]) -> float:
        w = 1.0
        sim = self.sim
        for st in self.steps:
            if st.seat == self.me:
                continue
            hand = hands[st.seat]
            if self.talon_taken and st.seat == self.ctx.declarer:
                continue
            top = sim.model_max(hand)
            if (st.kind == "bid" and top < st.value) or (st.kind == "pass" and top >= st.value):
                w *= INCONSISTENT
        return w

    def evaluator(self, d: int, contract: int, blind: bool = False) -> Evaluator:
        return evaluator_for(self.ctx, self.me, d, contract, self.evals, blind)

    def run(self, n_candidates: int, values: Callable[[World], list[float]],
            least: int = 1) -> list[float]:
        """Weighted mean value of each candidate over the worlds the budget allows."""
        totals = [0.0] * n_candidates
        wsum = 0.0
        count = 0
        while not self.budget.done(count, least):
            w = self.world(self.rng)
            if w is None:
                break
            vals = values(w)
            for i, v in enumerate(vals):
                totals[i] += w.weight * v
            wsum += w.weight
            count += 1
        self.worlds_used = count
        if not wsum:
            return totals
        return [t / wsum for t in totals]

    def best(self, n_candidates: int, values: Callable[[World], list[float]]) -> int | None:
        """The candidate of best weighted mean value (the first of equals), None when no
        world could be searched."""
        means = self.run(n_candidates, values)
        if not self.worlds_used:
            return None
        return max(range(n_candidates), key=lambda i: (means[i], -i))

    def choice(self, options: list[str], values: Callable[[World], list[float]]) -> str | None:
        """The option (an action text) of best value, each valued in that order."""
        best = self.best(len(options), values)
        return None if best is None else options[best]

    # ------------------------------------------------------------------ outcomes
    def outcome(self, w: World, d: int, contract: int, cache: dict[int, tuple[Any, int]],
                *, blind: bool = False) -> float:
        """The value of ``d`` declaring at ``contract`` in world ``w`` (-1: a redeal)."""
        if d < 0:
            return 0.0
        got = cache.get(d)
        if got is None:
            got = cache[d] = self.sim.declare_and_play(w, d)
        st, kept = got
        # The declarer may raise after the talon (the seat's own raise is searched when it
        # comes; here the model's raise stands for it: without it a strong hand would
        # rather defend than win a contract capped at the bid).
        c = self.sim.model_contract(kept, contract)
        return self.evaluator(d, c, blind and d == self.me).played(st.raw_points(), st.tricks)


# ---------------------------------------------------------------------- knowledge
def preplay_knowledge(rules: Rules, obs: dict[str, Any], hist: DealHistory
                      ) -> tuple[Knowledge, int, bool] | None:
    """Where the unseen cards may be before the play: hands, talons, piles aside."""
    me = int(obs["seat"])
    n = int(obs["players"])
    active = [int(s) for s in obs.get("active") or range(n)]
    sizes = [int(x) for x in obs.get("hand_sizes") or [0] * n]
    hand = mask_of_names(obs.get("hand"))
    phase = str(obs.get("phase"))
    declarer = obs.get("declarer")
    d = int(declarer) if declarer is not None else -1
    k = Knowledge(n, me, hand)
    k.mv = tuple(rules.marriage_values)
    known = hand
    for s in active:
        if s != me or not hand:
            k.capacity[s] = sizes[s]
    talon_known = mask_of_names(obs.get("talon"))
    taken = d >= 0 and phase not in _BEFORE_TALON
    if not taken:
        if rules.talon_size and rules.exchange != "none":
            if talon_known and rules.talons == 1:
                known |= talon_known
            else:
                for i in range(rules.talons):
                    k.add_pile(f"talon-{i}", rules.talon_size)
    else:
        if rules.talons == 2:
            k.add_pile("spare", rules.talon_size, allowed=~talon_known & deck_mask(rules))
        if d != me:
            if rules.exchange == "discard":
                k.add_pile("discards", rules.talon_size)
            elif rules.exchange == "bank":
                k.add_pile("bank-card", 1)
            if talon_known:
                k.talon_cards = talon_known & ~hand
                k.talon_home = d
        else:
            known |= mask_of_names(obs.get("discarded")) | hist.my_bank
            for entry in obs.get("given") or ():
                c = CARD.get(str(entry[0]))
                target = int(entry[1])
                if c is not None and 0 <= target < n:
                    k.must[target] |= 1 << c
    for entry in obs.get("shown_marriages") or ():
        s = int(entry[0])
        if s != me and str(entry[1]) in SUITS:
            k.must[s] |= KQ[SUITS.index(str(entry[1]))]
    for s, v in auction_highs(obs).items():
        need = marriage_need(rules, v)
        if need and s != me and s in active and not (taken and s == d):
            k.needs_marriage[s] = need
    must_all = 0
    for i in range(len(k.must)):
        k.must[i] &= ~known
        must_all |= k.must[i]
        k.capacity[i] -= k.must[i].bit_count()
    k.unknown = deck_mask(rules) & ~known & ~must_all
    if not k.consistent_size():
        return None
    return k, talon_known, taken


# ---------------------------------------------------------------------- decisions
def decide_auction(p: Preplay, legal: Sequence[str]) -> str | None:
    """Pass, or bid the minimum: whichever plan (pass, or bid up to M) is worth most."""
    blind = any(t.startswith("blind ") for t in legal)
    kind = "blind" if blind else "bid"
    values = _values(legal, kind)
    if not values:
        return None
    plans: list[int] = [-1, *values]
    me = p.me
    sim = p.sim
    state = p.auction
    state.to_act = me
    others = [s for s in state.active if s != me and s not in state.passed]
    blind_contract = blind or bool(p.obs.get("blind") and state.bidder == me)

    def vals(w: World) -> list[float]:
        maxes = {s: sim.model_max(w.hands[s]) for s in others}
        cache: dict[int, tuple[Any, int]] = {}
        out = []
        for m in plans:
            maxes[me] = m
            d, c = run_auction(state, maxes)
            out.append(p.outcome(w, d, c, cache, blind=blind_contract))
        return out

    best = p.best(len(plans), vals)
    if best is None:
        return None
    if plans[best] < 0:
        return "pass" if "pass" in legal else None
    return f"{kind} {values[0]}"


def decide_blind(p: Preplay, legal: Sequence[str]) -> str | None:
    """Look at the hand, or bid blind: the hand is unknown here, so it is sampled too."""
    values = _values(legal, "blind")
    if "look" not in legal or not values:
        return None
    me = p.me
    sim = p.sim
    r = p.rules
    active = p.auction.active
    opener = p.sim.forehand() if r.opener == "forehand" else p.sim.dealer
    plans = [-1, *values]

    def plan(w: World, m: int, maxes: dict[int, int], cache: dict[int, tuple[Any, int]]
             ) -> float:
        if m < 0:  # look, and bid as the model does
            looked = AuctionState(active, 0, -1, set(), opener, r.opening_bid, r.bid_step)
            return p.outcome(w, *run_auction(looked, maxes), cache)
        blind = AuctionState(active, values[0], me, set(), sim.order_from(me)[1],
                             r.opening_bid, r.bid_step)
        return p.outcome(w, *run_auction(blind, {**maxes, me: m}), cache, blind=True)

    def vals(w: World) -> list[float]:
        cache: dict[int, tuple[Any, int]] = {}
        maxes = {s: sim.model_max(w.hands[s]) for s in active}
        return [plan(w, m, maxes, cache) for m in plans]

    best = p.best(len(plans), vals)
    if best is None:
        return None
    return "look" if plans[best] < 0 else f"blind {values[0]}"


def decide_sale_offer(p: Preplay, legal: Sequence[str]) -> str | None:
    """Keep the talon and play, or offer it for sale (the others buy as the model does)."""
    if "sell" not in legal or "keep" not in legal:
        return None
    me = p.me
    sim = p.sim
    r = p.rules
    contract = int(p.obs.get("contract") or 0)
    buyers = [s for s in sim.order_from(me)[1:] if score_may_bid(r, p.ctx.scores[s])]

    def vals(w: World) -> list[float]:
        cache: dict[int, tuple[Any, int]] = {}
        keep = p.outcome(w, me, contract, cache)
        price = contract + r.bid_step
        d, c = me, contract
        for s in buyers:
            cap = sim.model_max(w.hands[s], talon_known=True)
            if price <= cap:
                d, c = s, price
                price += r.bid_step
        sell = keep if d == me else p.outcome(w, d, c, cache)
        return [keep, sell]

    return p.choice(["keep", "sell"], vals)


def decide_buy(p: Preplay, legal: Sequence[str]) -> str | None:
    """Buy the talon offered for sale (at the lowest price) or pass."""
    values = _values(legal, "buy")
    if not values or "pass" not in legal:
        return None
    me = p.me
    sim = p.sim
    r = p.rules
    seller = p.obs.get("declarer")
    d0 = int(seller) if seller is not None else -1
    contract = int(p.obs.get("contract") or 0)
    order = sim.order_from(d0)[1:] if d0 >= 0 else []
    later = order[order.index(me) + 1:] if me in order else []

    def finish(w: World, d: int, c: int) -> tuple[int, int]:
        price = c + r.bid_step
        for s in later:
            if price <= sim.model_max(w.hands[s], talon_known=True):
                d, c = s, price
                price += r.bid_step
        return d, c

    def vals(w: World) -> list[float]:
        cache: dict[int, tuple[Any, int]] = {}
        d, c = finish(w, d0, contract)
        pas = p.outcome(w, d, c, cache)
        d, c = finish(w, me, values[0])
        buy = p.outcome(w, d, c, cache)
        return [pas, buy]

    return p.choice(["pass", f"buy {values[0]}"], vals)


def _card_actions(legal: Sequence[str]) -> list[tuple[str, int, int]]:
    out = []
    for t in legal:
        parts = t.split()
        if parts[0] in ("give", "discard", "bank") and len(parts) >= 2 and parts[1] in CARD:
            target = int(parts[2]) if parts[0] == "give" and len(parts) > 2 else (
                -1 if parts[0] == "discard" else -2)
            out.append((t, CARD[parts[1]], target))
    return out


def decide_exchange(p: Preplay, legal: Sequence[str], max_cards: int = 6) -> str | None:
    """Which card to pass on (and to whom): each candidate is finished and played out."""
    cards = _card_actions(legal)
    if not cards:
        return None
    me = p.me
    sim = p.sim
    r = p.rules
    hand = p.hand
    costs = sim.costs
    # The cards worth least to keep, by the plain card sense: the rest are never given.
    ranked = sorted({c for _, c, _ in cards},
                    key=lambda c: costs[(c >> 3) << 11 | ((hand >> (c & 0x18)) & 0xFF) << 3
                                        | (c & 7)])
    keep_cards = set(ranked[:max_cards])
    cands = [x for x in cards if x[1] in keep_cards]
    contract = int(p.obs.get("contract") or 0)
    concede = "concede" in legal and not r.raise_contract

    def vals(w: World) -> list[float]:
        out = []
        ev = p.evaluator(me, contract)
        for _text, c, target in cands:
            hands = list(w.hands)
            to_decl, to_last = _pass_on(hands, me, c, target)
            rest = World(hands, [], w.extra_last + to_last, w.extra_declarer + to_decl,
                         w.hidden)
            st, _ = _finish_exchange(sim, rest, me, target, p)
            out.append(ev.played(st.raw_points(), st.tricks))
        if concede:
            out.append(ev.conceded())
        return out

    return p.choice([text for text, _c, _t in cands] + ["concede"] * concede, vals)


def _pass_on(hands: list[int], me: int, c: int, target: int) -> tuple[int, int]:
    """The declarer ``me`` passes ``c`` on to a seat, a discard (-1) or the bank (-2);
    returns the points this adds to the declarer's discards and to the last trick."""
    hands[me] &= ~(1 << c)
    if target >= 0:
        hands[target] |= 1 << c
        return 0, 0
    return (CARD_POINTS[c], 0) if target == -1 else (0, CARD_POINTS[c])


def _finish_exchange(sim: DealSim, w: World, me: int, done_target: int, p: Preplay
                     ) -> tuple[Any, int]:
    """Play out after the rest of the exchange is done by the plain card sense."""
    r = sim.rules
    hands = w.hands
    extra_last, extra_decl = w.extra_last, w.extra_declarer
    left = _exchange_left(p, done_target)
    for target in left:
        to_decl, to_last = _pass_on(hands, me, _cheapest(hands[me], hands[me], sim.costs),
                                    target)
        extra_decl += to_decl
        extra_last += to_last
    trump = sim.model_trump(hands[me]) if r.fixed_trump else -1
    st = sim.play(hands, me, trump=trump, extra_last=extra_last, extra_declarer=extra_decl,
                  hidden=w.hidden)
    return st, hands[me]


def _exchange_left(p: Preplay, done_target: int) -> list[int]:
    """The exchange steps still to come after the one being decided."""
    r = p.rules
    me = p.me
    if r.exchange == "give":
        given = {int(e[1]) for e in p.obs.get("given") or ()}
        given.add(done_target)
        return [s for s in p.sim.order_from(me)[1:] if s not in given]
    if r.exchange == "discard":
        done = len(p.obs.get("discarded") or ()) + 1
        return [-1] * max(0, r.talon_size - done)
    if r.exchange == "bank":
        out = []
        gave_opponent = bool(p.obs.get("given"))
        banked = bool(p.hist.my_bank)
        if done_target == -2:
            banked = True
        elif done_target >= 0:
            gave_opponent = True
        if not banked:
            out.append(-2)
        if not gave_opponent:
            out.append(p.sim.order_from(me)[1])
        return out
    return []


def decide_contract(p: Preplay, legal: Sequence[str]) -> str | None:
    """The contract (at the bid or raised) or a concession, by its value over the worlds."""
    values = _values(legal, "contract")
    concede = "concede" in legal
    if not values:
        return None
    me = p.me
    sim = p.sim
    r = p.rules
    evs = [p.evaluator(me, v) for v in values]

    def vals(w: World) -> list[float]:
        trump = sim.model_trump(w.hands[me]) if r.fixed_trump else -1
        st = sim.play(list(w.hands), me, trump=trump, extra_last=w.extra_last,
                      extra_declarer=w.extra_declarer, hidden=w.hidden)
        raw = st.raw_points()
        out = [ev.played(raw, st.tricks) for ev in evs]
        if concede:
            out.append(evs[0].conceded())
        return out

    return p.choice([f"contract {v}" for v in values] + ["concede"] * concede, vals)


def decide_trump(p: Preplay, legal: Sequence[str]) -> str | None:
    suits = [SUITS.index(t.split()[1]) for t in legal if t.startswith("trump ")]
    if not suits:
        return None
    me = p.me
    sim = p.sim
    contract = int(p.obs.get("contract") or 0)
    ev = p.evaluator(me, contract)

    def vals(w: World) -> list[float]:
        out = []
        for s in suits:
            st = sim.play(list(w.hands), me, trump=s, extra_last=w.extra_last,
                          extra_declarer=w.extra_declarer, hidden=w.hidden)
            out.append(ev.played(st.raw_points(), st.tricks))
        return out

    return p.choice([f"trump {SUITS[s]}" for s in suits], vals)


def decide_nines(p: Preplay, legal: Sequence[str]) -> str | None:
    """Four nines: redeal (a fresh deal is worth nothing either way) or play on."""
    if "redeal" not in legal or "pass" not in legal:
        return None
    sim = p.sim
    d0 = p.ctx.declarer
    contract = p.ctx.contract

    def vals(w: World) -> list[float]:
        cache: dict[int, tuple[Any, int]] = {}
        if d0 >= 0:
            if p.talon_taken:
                st = sim.play(list(w.hands), d0, extra_last=w.extra_last,
                              extra_declarer=w.extra_declarer, hidden=w.hidden)
                return [p.evaluator(d0, contract).played(st.raw_points(), st.tricks)]
            return [p.outcome(w, d0, contract, cache)]
        maxes = {s: sim.model_max(w.hands[s]) for s in p.auction.active}
        state = AuctionState(p.auction.active, 0, -1, set(), sim.forehand(),
                             p.rules.opening_bid, p.rules.bid_step)
        if p.rules.forced_bid:
            state = AuctionState(p.auction.active, p.rules.opening_bid, sim.forehand(), set(),
                                 sim.order_from(sim.forehand())[1], p.rules.opening_bid,
                                 p.rules.bid_step)
        d, c = run_auction(state, maxes)
        return [p.outcome(w, d, c, cache)]

    means = p.run(1, vals)
    if not p.worlds_used:
        return None
    return "redeal" if means[0] < 0 else "pass"


def decide_talon(p: Preplay, legal: Sequence[str]) -> str | None:
    """Two talons, neither seen: nothing tells them apart, so the first one is taken."""
    choices = [t for t in legal if t.startswith("talon ")]
    return choices[0] if choices else None


DECISIONS: dict[str, Callable[[Preplay, Sequence[str]], str | None]] = {
    "talon-choice": decide_talon,
    "auction": decide_auction,
    "blind": decide_blind,
    "sale-offer": decide_sale_offer,
    "sale": decide_buy,
    "exchange": decide_exchange,
    "contract": decide_contract,
    "trump": decide_trump,
    "nines": decide_nines,
}
