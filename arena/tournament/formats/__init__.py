"""Tournament formats: how participants meet, as a deterministic list of matches.

Every format is driven the same way: the scheduler asks ``next_batch(done)`` with the
results stored so far and plays what it gets until the format answers ``None``.  Fixed
formats (round robin, duplicate, gauntlet) return their whole plan at once; adaptive ones
(Swiss, SPRT, league) return one round at a time and recompute earlier rounds from the
stored results, so a stopped tournament resumes exactly where it was and a re-run with
the same seed asks for the same matches.

Match ids and seeds come from :meth:`TournamentSpec.match_id` and
:meth:`TournamentSpec.derive`: the seed of duplicate set K is ``derive("set/K")``, so the
games of one set share their deals and every bot holds every hand; an independent game I
has ``derive("game/I")``.  With a secret seed each match also carries its commitment.

Each format is one module of this package; :data:`FORMATS` is the registry the scheduler
makes them from, by the name a spec gives (``format: {type: NAME}``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from arena.tournament.formats.base import Format, pair_score
from arena.tournament.formats.fixed import (
    FixedFormat,
    duplicate,
    gauntlet,
    round_robin,
    sets_needed,
)
from arena.tournament.formats.league import LeagueFormat, MemoryPlans, PlanMemory, StorePlans
from arena.tournament.formats.sprt import SPRT_ROUND_SETS, SprtFormat, SprtOutcome
from arena.tournament.formats.swiss import SwissFormat, rank_points
from arena.tournament.model import ScheduledMatch
from arena.tournament.spec import TournamentSpec

if TYPE_CHECKING:
    from arena.tournament.store import ResultStore

#: Makes a validated spec's format; a league keeps its round plans in the store it is given.
FormatMaker = Callable[[TournamentSpec, "ResultStore | None"], Format]


def _league(spec: TournamentSpec, store: ResultStore | None) -> Format:
    pin = None
    if store is not None and spec.has_hosted:
        from arena.hosted.specs import league_pin

        pin = league_pin(store)
    return LeagueFormat(spec, StorePlans(store, spec.name) if store is not None else None,
                        pin=pin)


#: Every format by the name a spec gives it (:data:`arena.tournament.spec.FORMATS` lists the
#: same names, for the spec's own check; a test holds the two equal).
FORMATS: dict[str, FormatMaker] = {
    "round-robin": lambda spec, _store: FixedFormat(round_robin(spec)),
    "duplicate": lambda spec, _store: FixedFormat(duplicate(spec)),
    "gauntlet": lambda spec, _store: FixedFormat(gauntlet(spec)),
    "swiss": lambda spec, _store: SwissFormat(spec),
    "sprt": lambda spec, _store: SprtFormat(spec),
    "league": _league,
}


def make_format(spec: TournamentSpec, store: ResultStore | None = None) -> Format:
    """The format object for a validated spec; a league keeps its round plans in ``store``."""
    try:
        make = FORMATS[spec.format.type]
    except KeyError:
        raise ValueError(f"unknown format {spec.format.type!r}") from None
    return make(spec, store)


def expand(spec: TournamentSpec) -> list[ScheduledMatch]:
    """The full plan of a fixed format, or the first round of an adaptive one."""
    batch = make_format(spec).next_batch({})
    return batch or []


__all__ = [
    "FORMATS",
    "SPRT_ROUND_SETS",
    "FixedFormat",
    "Format",
    "FormatMaker",
    "LeagueFormat",
    "MemoryPlans",
    "PlanMemory",
    "SprtFormat",
    "SprtOutcome",
    "StorePlans",
    "SwissFormat",
    "duplicate",
    "expand",
    "gauntlet",
    "make_format",
    "pair_score",
    "rank_points",
    "round_robin",
    "sets_needed",
]
