"""The ``search`` bot: determinized search with inference, for every preset.

Each decision is searched within its own budget (``budget_ms``, 50 ms by default, with a
safety margin for the answer to get back), or for a fixed number of iterations
(``iterations``) when moves must not depend on the speed of the machine.  How it decides
each kind of step is described in ``docs/bots.md``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from arena.bots.greedy import GreedyBot
from arena.engine import Rules, RulesError
from arena.engine.phases.base import bid_cap
from arena.match.fallback import fallback_action
from arena.match.types import JSON

from .belief import CARD, mask_of_names
from .cardplay import Budget, PlaySearch, search_play
from .dealsim import DealSim
from .inference import INCONSISTENT, PlayJudge, auction_mismatches
from .lean import LeanRules, PlayState, move_text, parse_move
from .preplay import DECISIONS, Preplay, auction_steps, preplay_knowledge
from .rollout import costs_for
from .scoring import Evaluator
from .tracker import MatchTracker
from .world import PlayWorlds, deal_context, play_knowledge

log = logging.getLogger(__name__)

#: Share of the budget the search may use; the rest covers sampling and the answer.
SAFETY = 0.7
#: Fixed part of the safety margin, in milliseconds (a tenth of smaller budgets).
SAFETY_MS = 3.0


class SearchBot:
    """Determinized search over worlds consistent with what the seat has seen."""

    def __init__(self, seed: str = "search", rules: JSON | None = None, name: str = "search",
                 *, budget_ms: float = 50.0, iterations: int | None = None,
                 solve_tricks: int | None = None, candidates: int = 3,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if budget_ms <= 0:
            raise ValueError("budget_ms must be positive")
        if iterations is not None and iterations < 1:
            raise ValueError("iterations must be at least 1")
        self.name = name
        self.seed = seed
        self.budget_ms = float(budget_ms)
        self.iterations = iterations
        #: Tricks left at which card play switches to the exact solver (default: 3 with
        #: two or three players, 2 with four).
        self.solve_tricks = solve_tricks
        #: Candidate worlds drawn for each world searched; one is kept, with a chance
        #: proportional to how well it explains what the others did.
        self.candidates = candidates
        self.clock = clock
        self.rules = Rules("classic")
        self._greedy = GreedyBot(seed=seed, rules=rules)
        self._decisions = 0
        #: Decisions the search could not make (then the plain card sense decides), and
        #: how many of those were failures of the search itself (bugs, logged once).
        self.fallbacks = 0
        self.errors = 0
        self.fallback_phases: dict[str, int] = {}
        #: The last decision: how many worlds were searched and the time it took (ms).
        self.last_worlds = 0
        self.last_ms = 0.0
        self._setup(rules)

    def _setup(self, data: Any) -> None:
        if data is not None:
            with contextlib.suppress(RulesError, TypeError, ValueError):
                self.rules = Rules.from_json(data)
        self.lr = LeanRules(self.rules)
        self.costs = costs_for(self.lr)
        self.tracker = MatchTracker(self.rules)

    # ------------------------------------------------------------------ events
    def on_event(self, event: JSON) -> None:
        if event.get("type") == "match_start" and "rules" in event:
            self._setup(event["rules"])
            self._greedy.on_event(event)
            return
        self.tracker.on_event(event)
        self._greedy.on_event(event)

    # ------------------------------------------------------------------ decisions
    def decide(self, observation: JSON, legal: Sequence[str]) -> str:
        try:
            answer = self._decide(observation, legal)
        except Exception:  # an observation nobody could make sense of: still answer
            self.errors += 1
            log.warning("search bot %s: could not read the observation; playing the "
                        "referee's fallback", self.name, exc_info=self.errors == 1)
            answer = fallback_action(legal)
        self.tracker.answered(answer, tuple(legal))
        return answer

    def _decide(self, observation: JSON, legal: Sequence[str]) -> str:
        start = self.clock()
        self._decisions += 1
        self.last_worlds = 0
        try:
            if len(legal) == 1:
                return legal[0]
            phase = observation.get("phase")
            budget = self._budget(start)
            move: str | None = None
            try:
                hist = self.tracker.observe(observation)
                rng = self._rng(observation)
                if phase == "play":
                    move = self._play(observation, legal, hist, budget, rng)
                elif phase in DECISIONS:
                    move = self._preplay(str(phase), observation, legal, hist, budget, rng)
            except Exception:  # a bug here must cost a good move, never the match
                self.errors += 1
                if self.errors == 1:
                    log.exception("search bot %s: the search failed in phase %s; playing "
                                  "the plain fallback (later failures are not logged)",
                                  self.name, phase)
                move = None
            if move is not None and move in legal:
                return move
            self.fallbacks += 1
            self.fallback_phases[str(phase)] = self.fallback_phases.get(str(phase), 0) + 1
            return self._greedy.decide(observation, legal)
        finally:
            self.last_ms = (self.clock() - start) * 1000.0

    def _budget(self, start: float) -> Budget:
        usable = self.budget_ms * SAFETY - min(SAFETY_MS, self.budget_ms * 0.1)
        usable = max(0.0, usable) / 1000.0
        return Budget(deadline=start + usable, iterations=self.iterations, clock=self.clock)

    def _rng(self, obs: JSON) -> random.Random:
        """A generator for this decision only, derived from the seed (SHA-256)."""
        text = f"{self.seed}/{obs.get('deal')}/{self._decisions}"
        digest = hashlib.sha256(text.encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def _judge(self, obs: JSON, hist: Any, me: int, active: list[int], declarer: int
               ) -> Callable[[PlayState, int], float]:
        """The weight of a sampled play-phase world: how well it explains the others."""
        rules = self.rules
        n = rules.players
        steps, _ = auction_steps(rules, obs)
        auction = [(st.seat, st.kind, st.value) for st in steps]
        received = mask_of_names(obs.get("received"))
        gave: dict[int, int] = {}
        for entry in obs.get("given") or ():
            c = mask_of_names([entry[0]])
            gave[int(entry[1])] = gave.get(int(entry[1]), 0) | c
        talon: int = hist.talon
        start_trump = hist.trump if rules.fixed_trump else -1
        trick_now = [(int(e[0]), CARD[str(e[1])]) for e in obs.get("trick") or ()
                     if str(e[1]) in CARD]
        estimate = self._greedy.estimate
        sim_max = self._model_max
        plays = PlayJudge(self.lr, self.costs, hist, me, active, n, declarer, trick_now,
                          start_trump)
        played = plays.played

        def judge(st: PlayState, hidden: int) -> float:
            hands = st.hands
            misses = plays(hands, hidden)
            if auction:

                def dealt(s: int) -> int:
                    h: int = hands[s] | played[s]
                    if s == declarer:
                        return (h | (received if me != declarer else 0)) & ~talon
                    return h & ~gave.get(s, 0)

                misses += auction_mismatches(auction, me, dealt,
                                             lambda h: sim_max(estimate, h))
            return INCONSISTENT ** misses

        return judge

    def _model_max(self, estimate: Callable[[int], int], hand: int) -> int:
        r = self.rules
        top: int = estimate(hand) + r.talon_size * self._greedy.talon_card_value
        return min(top, bid_cap(r, hand))

    # ------------------------------------------------------------------ before the play
    def _preplay(self, phase: str, obs: JSON, legal: Sequence[str], hist: Any,
                 budget: Budget, rng: random.Random) -> str | None:
        got = preplay_knowledge(self.rules, obs, hist)
        if got is None:
            return None
        k, talon_known, taken = got
        me = int(obs["seat"])
        n = self.rules.players
        active = [int(s) for s in obs.get("active") or range(n)]
        sim = DealSim(self.rules, self.lr, self.costs, self._greedy.estimate, active,
                      int(obs.get("dealer") or 0), n)
        steps, auction = auction_steps(self.rules, obs)
        hand = mask_of_names(obs.get("hand"))
        ctx = deal_context(self.rules, obs, self.tracker, hand_dealt=hand)
        p = Preplay(self.rules, obs, hist, sim, ctx, budget, rng, me, k, talon_known, taken,
                    steps, auction, hand)
        move = DECISIONS[phase](p, legal)
        self.last_worlds = p.worlds_used
        return move

    # ------------------------------------------------------------------ play
    def _play(self, obs: JSON, legal: Sequence[str], hist: Any, budget: Budget,
              rng: random.Random) -> str | None:
        if not hist.complete:
            return None
        moves = [parse_move(t) for t in legal]
        if any(m is None for m in moves):
            return None
        k = play_knowledge(self.rules, obs, hist)
        if k is None:
            return None
        me = int(obs["seat"])
        d = obs.get("declarer")
        declarer = int(d) if d is not None else -1
        active = [int(s) for s in obs.get("active") or ()]
        team = tuple(s for s in active if s != declarer) if declarer >= 0 else None
        if declarer < 0:
            maximizers: tuple[int, ...] = (me,)
        elif me == declarer:
            maximizers = (me,)
        else:
            maximizers = tuple(s for s in active if s != declarer)
        ctx = deal_context(self.rules, obs, self.tracker,
                           hand_dealt=mask_of_names(obs.get("hand")))
        tricks = self.solve_tricks
        if tricks is None:
            tricks = 2 if len(active) >= 4 else 3
        search = PlaySearch(self.lr, self.costs, Evaluator(ctx, me), team, maximizers,
                            tricks * len(active))
        lr = self.lr
        judge = self._judge(obs, hist, me, active, declarer)
        draws = self.candidates
        maker = PlayWorlds(lr, obs, hist, k)

        def worlds(r: random.Random) -> tuple[PlayState, int] | None:
            # Sampling-importance-resampling: a few candidate worlds, one kept with a
            # chance proportional to how well it explains the play and the auction.
            picked: list[tuple[PlayState, int]] = []
            weights: list[float] = []
            for _ in range(draws):
                content = k.sample(r)
                if content is None:
                    break
                st = maker.make(content)
                hidden = maker.hidden(content)
                picked.append((st, hidden))
                weights.append(judge(st, hidden) if draws > 1 else 1.0)
            if not picked:
                return None
            x = r.random() * sum(weights)
            for w, item in zip(weights, picked, strict=True):
                x -= w
                if x <= 0:
                    return item
            return picked[-1]

        ints = [m for m in moves if m is not None]
        best, _means, count = search_play(search, ints, worlds, rng, budget)
        self.last_worlds = count
        if count == 0:
            return None
        text = move_text(best)
        return text if text in legal else None


def derive_seed(seed: str, label: str) -> str:
    return hashlib.sha256(f"{seed}/{label}".encode()).hexdigest()
