"""After a tournament: reveal its deal secret, and check every stored match against it.

A tournament with remote participants deals from a secret it committed to when it started
(:mod:`arena.engine.commitment`).  Once it has ended, :func:`reveal` gives the secret and,
match by match, the derivation key, seed and seed commitment, so that a bot author can
check the match they played: the commitment their seat saw at ``match_start`` is the one
listed, and the seed is derived from the secret.  :func:`verify` does every check on the
results store: the secret against the commitment (the one stored, or the one a verifier
wrote down when the tournament started), each match id and seed against its derivation,
each replay's commitment, decks and re-simulated result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from arena.engine import EngineError, ReplayError
from arena.engine import commitment as cm
from arena.engine import replay as rp
from arena.match.types import JSON
from arena.tournament.model import ResultRecord
from arena.tournament.spec import TournamentSpec
from arena.tournament.store import DealSecret, ResultStore

_GROUP = re.compile(r"^(set|game)-(\d+)$")


class NotRevealed(Exception):
    """The tournament's secret is not revealed yet (or it has none): nothing to check."""


def derivation_key(rec: ResultRecord) -> str:
    """The key a match's seed is derived for, from its stored group (``set-3``: ``set/3``)."""
    found = _GROUP.match(rec.group)
    if found is None:
        raise ValueError(f"match {rec.index}: group {rec.group!r} names no derivation key")
    return f"{found.group(1)}/{found.group(2)}"


def stored_secret(spec: TournamentSpec, store: ResultStore) -> DealSecret:
    """The tournament's revealed secret; :class:`NotRevealed` otherwise, saying why."""
    if not spec.secret_seed:
        raise NotRevealed(
            f"tournament '{spec.name}' has a public seed ({spec.seed!r}): there is no secret "
            "to reveal"
        )
    secret = store.get_deal_secret(spec.name)
    if secret is None:
        raise NotRevealed(f"tournament '{spec.name}' has not started in {store.url}")
    if not secret.revealed:
        raise NotRevealed(
            f"tournament '{spec.name}' has not ended ({store.count(spec.name)} matches stored): "
            "its secret is revealed when the last match is played, or with --end"
        )
    return secret


def reveal(spec: TournamentSpec, store: ResultStore, *, end: bool = False) -> JSON:
    """The revealed secret and every stored match's key, seed and seed commitment.

    ``end`` ends a tournament that has not finished (a league, or one given up): the
    secret is marked revealed and no match can be added to the tournament afterwards.
    """
    if end and spec.secret_seed and store.get_deal_secret(spec.name) is not None:
        store.reveal_deal_secret(spec.name)
    secret = stored_secret(spec, store)
    matches = []
    for rec in store.iter_results(spec.name):
        matches.append({
            "index": rec.index,
            "match_id": rec.match_id,
            "group": rec.group,
            "key": derivation_key(rec),
            "seed": rec.seed,
            "seed_commitment": cm.seed_commitment(rec.match_id, rec.seed),
        })
    return {
        "tournament": spec.name,
        "scheme": cm.SCHEME,
        "commitment": secret.commitment,
        "secret": secret.secret,
        "revealed_at": secret.revealed_at,
        "matches": matches,
    }


@dataclass
class Verification:
    """What :func:`verify` found: matches checked, and each problem in a line."""

    tournament: str
    checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(
    spec: TournamentSpec, store: ResultStore, *, commitment: str | None = None
) -> Verification:
    """Check the revealed secret and every stored match of the tournament against it.

    ``commitment`` is the tournament commitment as published at its start (printed by
    ``arena tournament run``, shown to every seat at ``match_start``); without it the
    stored one is used, which proves consistency but not that nothing was swapped.

    A tournament with a public seed has no secret: each stored match is checked against
    the seed instead (its id and seed derived from it, its decks the seed's shuffles, its
    result re-simulated), which anyone holding the spec can do.
    """
    if not spec.secret_seed:
        if commitment is not None:
            raise NotRevealed(
                f"tournament '{spec.name}' has a public seed ({spec.seed!r}): it has no "
                "commitment to check; leave --commitment out"
            )
        return _verify_public(spec, store)
    secret = stored_secret(spec, store)
    out = Verification(spec.name)
    recomputed = cm.tournament_commitment(spec.name, secret.secret)
    published = commitment or secret.commitment
    if recomputed != published:
        out.problems.append(
            f"secret: its commitment is {recomputed}, not the published {published}"
        )
        return out
    full = spec.with_secret(secret.secret)
    for rec in store.iter_results(spec.name, with_replay=True):
        out.checked += 1
        problem = _check_match(full, rec, published)
        if problem:
            out.problems.append(f"match {rec.index} ({rec.match_id}): {problem}")
    if not out.checked:
        out.problems.append("no match is stored")
    return out


def _verify_public(spec: TournamentSpec, store: ResultStore) -> Verification:
    out = Verification(spec.name)
    for rec in store.iter_results(spec.name, with_replay=True):
        out.checked += 1
        problem = _check_public_match(spec, rec)
        if problem:
            out.problems.append(f"match {rec.index} ({rec.match_id}): {problem}")
    if not out.checked:
        out.problems.append("no match is stored")
    return out


def _derivation_problem(
    spec: TournamentSpec, rec: ResultRecord, id_from: str, seed_from: str
) -> tuple[str | None, str]:
    """What is wrong with a match's id or seed, as derived ``id_from`` and ``seed_from``
    (the words of the message), or None; and the derivation key."""
    try:
        key = derivation_key(rec)
    except ValueError as exc:
        return str(exc), ""
    if rec.match_id != spec.match_id(rec.index):
        return f"the id is not the one derived{id_from} for match {rec.index}", key
    if rec.seed != spec.derive(key):
        return f"the seed is not the one derived from {seed_from} for {key!r}", key
    return None, key


def _check_public_match(spec: TournamentSpec, rec: ResultRecord) -> str | None:
    problem, _ = _derivation_problem(spec, rec, "", "the tournament's seed")
    if problem is not None:
        return problem
    replay: Any = rec.replay
    if not isinstance(replay, dict):
        return "no replay stored"
    for name, expected in (("match_id", rec.match_id), ("seed", rec.seed)):
        if replay.get(name) != expected:
            return f"the replay's {name} is not the stored one"
    try:
        diff = _deck_difference(replay) or rp.verify(replay)
    except (ReplayError, EngineError) as exc:
        return f"the replay is invalid: {exc}"
    if diff is not None:
        return f"the replay does not verify: {diff}"
    return None


def _deck_difference(replay: JSON) -> str | None:
    """The first recorded deck that is not its seed's shuffle (re-simulation alone would
    accept any deck the replay records)."""
    from arena.engine import Rules
    from arena.engine.cards import DECK_24, DECK_32, parse_card
    from arena.engine.shuffle import deal_seed, shuffled

    rp.check_shape(replay)
    base = DECK_24 if Rules.from_json(replay["rules"]).deck == 24 else DECK_32
    for i, deal in enumerate(replay["deals"]):
        deck = deal.get("deck")
        if deck is None:
            continue  # dealt from the seed when re-simulated
        index = deal.get("index", i)
        try:
            cards = [parse_card(c) for c in deck]
        except (EngineError, TypeError, AttributeError):
            raise ReplayError(f"deals[{i}].deck: expected a list of card names") from None
        if not isinstance(index, int) or cards != shuffled(base, deal_seed(replay["seed"], index)):
            return f"deals[{i}].deck: not the shuffle of the seed"
    return None


def _check_match(spec: TournamentSpec, rec: ResultRecord, commitment: str) -> str | None:
    problem, key = _derivation_problem(spec, rec, " from the secret", "the secret")
    if problem is not None:
        return problem
    replay: Any = rec.replay
    if replay is None:
        return "no replay stored"
    block = replay.get("commitment") if isinstance(replay, dict) else None
    if not isinstance(block, dict):
        return "the replay carries no commitment"
    for name, expected in (
        ("match_id", rec.match_id), ("seed", rec.seed),
    ):  # fmt: skip
        if replay.get(name) != expected:
            return f"the replay's {name} is not the stored one"
    if block.get("tournament_commitment") != commitment or block.get("key") != key:
        return "the replay's commitment is not this tournament's for this match"
    try:
        diff = rp.verify(replay, tournament_secret=spec.deal_secret)
    except (ReplayError, EngineError) as exc:
        return f"the replay is invalid: {exc}"
    if diff is not None:
        return f"the replay does not verify: {diff}"
    return None
