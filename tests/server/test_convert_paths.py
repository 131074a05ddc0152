"""The fast observation conversion gives exactly the message of the careful one.

Every decision request carries an observation, so the gateway builds it with one
constructor call; the field-by-field path remains for anything unusual. Both must agree on
every observation the engine makes (every preset, random play) and on crafted ones.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.engine import PRESETS, Game, Rules
from arena.server import convert


def observations(preset: str, seed: int, limit: int = 400) -> list[dict[str, object]]:
    rng = random.Random(seed)
    game = Game(Rules.preset(preset, max_deals=6), seed=f"convert/{seed}")
    out = []
    while not game.is_over and len(out) < limit:
        if game.is_chance:
            game.deal()
            continue
        seat = game.to_act
        assert seat is not None
        out.append(game.observation(seat))
        out.append(game.observation((seat + 1) % game.n))
        game.apply(rng.choice(game.legal_actions()))
    return out


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_fast_path_equals_careful_path_on_engine_observations(preset: str) -> None:
    for seed in range(3):
        for obs in observations(preset, seed):
            fast = convert._fast_observation(obs)
            assert fast == convert._careful_observation(obs)
            assert convert.observation_to_proto(obs) == fast


_garbage = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False),
    st.text(max_size=5), st.lists(st.integers(-5, 5), max_size=3),
    st.lists(st.booleans(), max_size=3), st.lists(st.text(max_size=3), max_size=3),
    st.lists(st.lists(st.integers(0, 3), max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(
    key=st.sampled_from([*convert.OBSERVATION_KEYS, "extra_key"]),
    value=_garbage,
    index=st.integers(0, 50),
)
def test_crafted_values_take_the_careful_path(key: str, value: object, index: int) -> None:
    base = observations("classic", 0, limit=60)
    obs = dict(base[index % len(base)])
    obs[key] = value
    assert convert.observation_to_proto(obs) == convert._careful_observation(obs)
