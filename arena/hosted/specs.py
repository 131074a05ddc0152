"""Hosted bots in tournament specs: ``hosted:NAME`` pinned to a version when a run starts.

``hosted:NAME`` means the latest version of NAME that passed its check and is not
suspended; ``hosted:NAME@HASH`` one version (the hash or its first 8 or more hex digits).
When a tournament runs, each hosted participant is pinned: its matches name the full hash
(``hosted:NAME@HASH``), which is what workers fetch, and it is rated as ``NAME@SHORTHASH``,
so a new version is a new entrant with a rating of its own. A stopped tournament resumes
with the versions it was pinned to; a league pins again before every round, so a new
version that passed its check joins at the next round (and a suspended one leaves).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from arena.tournament.spec import Participant, SpecError, TournamentSpec
from arena.tournament.store import ResultStore, StoreError

from .store import HostedStore, parse_ref


def _base(name: str) -> str:
    return name.rsplit("@", 1)[0]


def pin_participants(
    participants: Sequence[Participant],
    store: ResultStore,
    previous: Sequence[Participant] = (),
) -> tuple[list[Participant], list[str]]:
    """The participants with every hosted one pinned to a version, and what could not be
    (a bot with no passing version, an unknown hash). ``previous`` (a resumed run's pinned
    participants) keeps the versions a tournament started with."""
    hosted = HostedStore(store)
    pinned_before = {
        _base(p.name): p for p in previous if p.bot.startswith("hosted:") and "@" in p.bot
    }
    out: list[Participant] = []
    problems: list[str] = []
    for i, p in enumerate(participants):
        if not p.bot.startswith("hosted:"):
            out.append(p)
            continue
        digest = parse_ref(p.bot)[1]
        before = pinned_before.get(_base(p.name))
        if before is not None and (digest is None or parse_ref(before.bot)[1] == digest
                                   or (parse_ref(before.bot)[1] or "").startswith(digest)):
            out.append(before)
            continue
        try:
            version = hosted.resolve(p.bot)
        except StoreError as exc:
            problems.append(f"participants[{i}].bot: {exc}")
            continue
        out.append(Participant(name=f"{_base(p.name)}@{version.short}", bot=version.ref))
    return out, problems


def pin_hosted(spec: TournamentSpec, store: ResultStore) -> TournamentSpec:
    """``spec`` with its hosted participants pinned (SpecError names those that cannot)."""
    if not spec.has_hosted:
        return spec
    previous: list[Participant] = []
    if spec.format.type != "league":
        stored: dict[str, Any] | None = store.tournament_spec(spec.name)
        for item in (stored or {}).get("participants", []):
            previous.append(Participant(name=str(item["name"]), bot=str(item["bot"])))
    pinned, problems = pin_participants(spec.participants, store, previous)
    if problems:
        raise SpecError(problems, spec.source)
    renamed = {_base(p.name): p.name for p in pinned if p.bot.startswith("hosted:")}
    fmt = spec.format
    fmt = dataclasses.replace(
        fmt,
        candidate=renamed.get(fmt.candidate, fmt.candidate) if fmt.candidate else None,
        baseline=renamed.get(fmt.baseline, fmt.baseline) if fmt.baseline else None,
    )
    return dataclasses.replace(spec, participants=tuple(pinned), format=fmt)


def league_pin(store: ResultStore) -> Any:
    """A league's pinning for each round: hosted bots without a playable version sit the
    round out (said in the log), the others play their latest passing version."""
    import logging

    log = logging.getLogger(__name__)

    def pin(participants: Sequence[Participant]) -> list[Participant]:
        pinned, problems = pin_participants(participants, store)
        for problem in problems:
            log.warning("league round without %s", problem)
        return pinned

    return pin
