"""Formats expand deterministically into matches with stable ids and shared duplicate seeds."""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from typing import Any

import pytest

from arena.tournament.formats import LeagueFormat, SprtFormat, SwissFormat, expand, make_format
from arena.tournament.model import ResultRecord, ScheduledMatch
from arena.tournament.seating import all_seatings, latin_seatings
from arena.tournament.spec import Participant, TournamentSpec, validate_spec


def spec_of(**changes: Any) -> TournamentSpec:
    data: dict[str, Any] = {
        "name": "cup",
        "seed": "s1",
        "rules": "classic",
        "participants": [
            "greedy",
            {"name": "r1", "bot": "random"},
            {"name": "r2", "bot": "random"},
        ],
        "format": "duplicate",
        "sets": 3,
    }
    data.update(changes)
    return validate_spec(data)


def fake_result(m: ScheduledMatch, ranks: list[int]) -> ResultRecord:
    """A stored row as the scheduler would see it (outcome chosen by the test)."""
    return ResultRecord(
        match_id=m.match_id,
        tournament=m.tournament,
        index=m.index,
        group=m.group,
        round=m.round,
        players=list(m.players),
        bots=list(m.spec.bots),
        seed=m.spec.seed,
        status="completed",
        scores=[1000 - 100 * r for r in ranks],
        ranks=ranks,
        deals=1,
        seat_stats=[{} for _ in ranks],
    )


def test_match_ids_are_sha256_of_name_and_index_never_of_the_seed() -> None:
    plan = expand(spec_of())
    for m in plan:
        expected = hashlib.sha256(f"cup/{m.index}".encode()).hexdigest()[:32]
        assert m.match_id == expected
        assert m.spec.commitment is None  # a public seed: nothing to commit to
    other_seed = [m.match_id for m in expand(spec_of(seed="another"))]
    assert other_seed == [m.match_id for m in plan]
    assert [m.index for m in plan] == list(range(len(plan)))
    assert len({m.match_id for m in plan}) == len(plan)


def test_expansion_is_deterministic_and_seed_dependent() -> None:
    a = [m.to_json() for m in expand(spec_of())]
    b = [m.to_json() for m in expand(spec_of())]
    c = [m.to_json() for m in expand(spec_of(seed="s2"))]
    assert a == b
    assert a != c


@pytest.mark.parametrize(("rules", "players", "games"), [("two-player", 2, 2), ("classic", 3, 6)])
def test_duplicate_set_plays_every_permutation_with_one_seed(
    rules: str, players: int, games: int
) -> None:
    names = ["greedy", "random", {"name": "r2", "bot": "random"}][:players]
    plan = expand(spec_of(rules=rules, participants=names, sets=2))
    assert len(plan) == 2 * games
    by_set: dict[str, list[ScheduledMatch]] = {}
    for m in plan:
        by_set.setdefault(m.group, []).append(m)
    assert len(by_set) == 2
    seeds = set()
    for matches in by_set.values():
        assert len(matches) == games
        assert len({m.spec.seed for m in matches}) == 1
        seeds.add(matches[0].spec.seed)
        assert {m.players for m in matches} == set(itertools.permutations(matches[0].players))
    assert len(seeds) == 2, "different sets get different deals"


def test_four_players_all_or_latin() -> None:
    four = ["greedy", "random", {"name": "r2", "bot": "random"}, {"name": "g2", "bot": "greedy"}]
    full = expand(spec_of(rules="classic-4", participants=four, sets=1))
    assert len(full) == 24
    latin = expand(
        spec_of(
            rules="classic-4",
            participants=four,
            sets=1,
            format={"type": "duplicate", "seatings": "latin"},
        )
    )
    assert len(latin) == 4
    names = [p if isinstance(p, str) else p["name"] for p in four]
    for seat in range(4):
        assert sorted(m.players[seat] for m in latin) == sorted(names)


@pytest.mark.parametrize("k", [2, 3, 4, 6])
def test_latin_seatings_are_latin_squares(k: int) -> None:
    rows = latin_seatings(k)
    assert len(rows) == k if k > 2 else len(rows) == 2
    for row in rows:
        assert sorted(row) == list(range(k))
    for seat in range(k):
        assert sorted(r[seat] for r in rows) == list(range(k))
    if k % 2 == 0:
        # Williams design: each player sits directly after each other player exactly once.
        follows = Counter((r[i], r[(i + 1) % k]) for r in rows for i in range(k - 1))
        assert all(c == 1 for c in follows.values())
        assert len(follows) == k * (k - 1)


def test_round_robin_spreads_groups_and_seatings() -> None:
    four = ["greedy", "random", {"name": "r2", "bot": "random"}, {"name": "g2", "bot": "greedy"}]
    spec = spec_of(participants=four, format="round-robin", sets=None, games=48)
    plan = expand(spec)
    assert len(plan) == 48
    assert len({m.players for m in plan}) == 24  # 4 groups x 6 seatings, each twice
    assert len({m.spec.seed for m in plan}) == 48  # independent deals
    seats = Counter((m.players[0]) for m in plan)
    assert set(seats.values()) == {12}


def test_gauntlet_always_seats_the_candidate() -> None:
    four = ["greedy", "random", {"name": "r2", "bot": "random"}, {"name": "g2", "bot": "greedy"}]
    spec = spec_of(participants=four, format={"type": "gauntlet", "candidate": "g2"}, sets=3)
    plan = expand(spec)
    assert len(plan) == 18
    assert all("g2" in m.players for m in plan)
    pools = {frozenset(m.players) - {"g2"} for m in plan}
    assert len(pools) == 3


def test_swiss_rounds_follow_results_deterministically() -> None:
    names: list[Any] = [{"name": f"p{i}", "bot": "random"} for i in range(7)]
    spec = spec_of(participants=names, format={"type": "swiss", "rounds": 3}, sets=1)
    fmt = make_format(spec)
    assert isinstance(fmt, SwissFormat)
    assert fmt.planned_total() == 3 * 2 * 6

    def play_all() -> list[list[ScheduledMatch]]:
        done: dict[str, ResultRecord] = {}
        rounds = []
        f = make_format(spec)
        while (batch := f.next_batch(done)) is not None:
            rounds.append(batch)
            for m in batch:
                # The lower-numbered player always wins: a strict order to pair by.
                order = sorted(m.players, key=lambda p: int(p[1:]))
                done[m.match_id] = fake_result(m, [order.index(p) + 1 for p in m.players])
        return rounds

    first, second = play_all(), play_all()
    assert [[m.to_json() for m in r] for r in first] == [[m.to_json() for m in r] for r in second]
    assert len(first) == 3
    indexes = [m.index for r in first for m in r]
    assert indexes == list(range(len(indexes)))
    # One player sits out each round (7 players, tables of 3); nobody sits out twice.
    sat_out = [set(n["name"] for n in names) - {p for m in r for p in m.players} for r in first]
    assert all(len(s) == 1 for s in sat_out)
    assert len(set().union(*sat_out)) == 3
    # After round one the winners meet: p0 plays at the top table.
    assert "p0" in first[1][0].players


def test_sprt_stops_when_the_test_decides() -> None:
    spec = spec_of(
        format={"type": "sprt", "candidate": "greedy", "baseline": "r1", "elo0": 0, "elo1": 50},
        sets=400,
    )
    fmt = make_format(spec)
    assert isinstance(fmt, SprtFormat)
    done: dict[str, ResultRecord] = {}
    batches = 0
    while (batch := fmt.next_batch(done)) is not None:
        batches += 1
        for m in batch:
            ranks = [1 if p == "greedy" else 2 if p == "r2" else 3 for p in m.players]
            done[m.match_id] = fake_result(m, ranks)
    assert fmt.outcome.decision == "H1 accepted"
    assert fmt.outcome.sets < 400
    assert batches * 8 * 6 >= len(done)
    assert "greedy is stronger than r1" in fmt.outcome.describe("greedy", "r1")


def test_league_pairs_joiners_at_the_next_round() -> None:
    spec = spec_of(format={"type": "league", "rounds": 4}, sets=1)
    roster = list(spec.participants)
    fmt = LeagueFormat(spec, reload=lambda: roster)
    done: dict[str, ResultRecord] = {}
    seen_rounds = []
    while (batch := fmt.next_batch(done)) is not None:
        assert batch, "enough players from the start"
        seen_rounds.append({p for m in batch for p in m.players})
        for m in batch:
            done[m.match_id] = fake_result(m, [1, 2, 3])
        if len(seen_rounds) == 2:
            roster += [
                Participant("late-1", "greedy"),
                Participant("late-2", "random"),
                Participant("late-3", "random"),
            ]
    assert len(seen_rounds) == 4
    assert "late-1" not in seen_rounds[1]
    assert {"late-1", "late-2", "late-3"} <= seen_rounds[2]
    # Replaying from the same results gives the same plan (the saved round plans).
    again = LeagueFormat(spec, plans=fmt.plans, reload=lambda: roster)
    assert again.next_batch(done) is None


def test_league_waits_for_enough_players() -> None:
    spec = spec_of(participants=["greedy"], format={"type": "league"}, sets=1)
    fmt = make_format(spec)
    assert fmt.next_batch({}) == []


def test_all_seatings_order() -> None:
    assert all_seatings(3)[0] == (0, 1, 2)
    assert len(all_seatings(4)) == 24


def test_every_format_a_spec_may_name_is_in_the_registry() -> None:
    from arena.tournament.formats import FORMATS
    from arena.tournament.spec import FORMATS as NAMES

    assert tuple(FORMATS) == NAMES
