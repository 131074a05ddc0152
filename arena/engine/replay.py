"""Replay files: a whole game as JSON that re-simulates to the same result.

A replay holds the rules, the seats, the seed, each deal's cards (optional: without them
the deal is re-derived from the seed) and every action in order.  Re-simulating it with
the engine must give the recorded scores; ``arena replay verify`` checks exactly that,
so a replay is proof of a result, not just a log of it.  The format is documented in
``docs/replay.md``.

A match dealt from a secret seed also carries the ``commitment`` the seats were shown
before the first deal (:mod:`arena.engine.commitment`): verifying then also checks that the
seed is the one committed to, that every recorded deck is that seed's shuffle, and, once
the tournament's secret is known, that the seed is the one derived from it.  That is what
makes the deals provably not chosen after the fact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from . import commitment as cm
from .actions import parse_action
from .cards import CARD_NAMES, DECK_24, DECK_32, hand_str, mask_of, parse_card
from .errors import EngineError, ReplayError
from .game import Game
from .rules import Rules
from .shuffle import deal_seed, shuffled

FORMAT = "thousand-replay"
FORMAT_VERSION = 1
ANNOTATIONS = ("timeout", "illegal", "malformed", "forfeit", "platform")


def replay_from_game(
    game: Game,
    seats: list[str],
    *,
    annotations: dict[tuple[int, int], str] | None = None,
    status: str | None = None,
    ranks: list[int] | None = None,
    include_deck: bool = True,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build the replay of a game played so far.

    ``annotations`` marks actions the referee chose for a seat (fallbacks), keyed by
    (position of the deal record, position of the action in it).
    """
    # The referee's notes by deal, so that a deal without any (nearly all of them) is
    # written in one pass; a replay is built at the end of every match.
    by_deal: dict[int, dict[int, str]] = {}
    for (di, ai), note in (annotations or {}).items():
        by_deal.setdefault(di, {})[ai] = note
    deals = []
    for di, rec in enumerate(game.records):
        entry: dict[str, Any] = {"index": rec.index, "dealer": rec.dealer}
        if include_deck:
            entry["deck"] = [CARD_NAMES[c] for c in rec.deck]
        marks = by_deal.get(di)
        acts: list[list[Any]]
        if marks is None and not rec.notes:
            acts = [[seat, action.text] for seat, action in rec.actions]
        else:
            acts = []
            for ai, (seat, action) in enumerate(rec.actions):
                item: list[Any] = [seat, action.text]
                mark = (marks.get(ai) if marks else None) or rec.notes.get(ai)
                if mark:
                    item.append(mark)
                acts.append(item)
        entry["actions"] = acts
        if rec.result is not None:
            if "redeal" in rec.result:
                entry["redeal"] = rec.result["redeal"]
            else:
                entry["scores"] = list(rec.result["scores"])
        deals.append(entry)
    if status is None:
        status = "completed" if game.is_over else "unfinished"
    out: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "engine_version": __version__,
        "rules": game.rules.to_json(),
        "seats": list(seats),
        "seed": game.seed,
        "first_dealer": game.records[0].dealer if game.records else game.dealer,
        "deals": deals,
        "result": {
            "status": status,
            "scores": list(game.scores),
            "ranks": list(ranks) if ranks is not None else game.ranking(),
            "deals": game.deals_played,
        },
    }
    if extra:
        out.update(extra)
    return out


def load(path: str | Path) -> dict[str, Any]:
    """Read a replay file; a file that is not JSON raises :class:`ReplayError`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ReplayError(f"cannot read {path}: {e.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ReplayError(f"{path}: not valid JSON: {e.msg} at line {e.lineno}") from None
    return check_shape(data)


def dump(replay: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(replay, indent=1) + "\n", encoding="utf-8")


def check_shape(data: Any) -> dict[str, Any]:
    """Reject a replay whose structure is wrong, naming the field."""
    if not isinstance(data, dict):
        raise ReplayError("a replay is a JSON object")
    if data.get("format") != FORMAT:
        raise ReplayError(f"field 'format': expected {FORMAT!r}, got {data.get('format')!r}")
    if data.get("format_version") != FORMAT_VERSION:
        raise ReplayError(
            f"field 'format_version': this engine reads version {FORMAT_VERSION}, "
            f"got {data.get('format_version')!r}"
        )
    for key, typ in (("seats", list), ("seed", str), ("deals", list), ("result", dict)):
        if not isinstance(data.get(key), typ):
            raise ReplayError(f"field {key!r}: missing or not a {typ.__name__}")
    if "rules" not in data:
        raise ReplayError("field 'rules': missing")
    for i, d in enumerate(data["deals"]):
        if not isinstance(d, dict) or not isinstance(d.get("actions"), list):
            raise ReplayError(f"deals[{i}]: expected an object with an 'actions' list")
        for j, a in enumerate(d["actions"]):
            if (
                not isinstance(a, list)
                or len(a) not in (2, 3)
                or not isinstance(a[0], int)
                or not isinstance(a[1], str)
            ):
                raise ReplayError(f"deals[{i}].actions[{j}]: expected [seat, \"action\"]")
    if "commitment" in data:
        _check_commitment_shape(data)
    return data


def _check_commitment_shape(data: dict[str, Any]) -> None:
    block = data["commitment"]
    if not isinstance(block, dict):
        raise ReplayError("field 'commitment': expected an object")
    if block.get("scheme") != cm.SCHEME:
        raise ReplayError(
            f"field 'commitment.scheme': expected {cm.SCHEME!r}, got {block.get('scheme')!r}"
        )
    if not isinstance(data.get("match_id"), str):
        raise ReplayError("field 'match_id': a replay with a commitment needs its match id")
    for key in ("seed_commitment", "tournament_commitment", "tournament_secret"):
        if key in block and not cm.is_hex64(block[key]):
            raise ReplayError(f"field 'commitment.{key}': expected 64 lowercase hex digits")
    if "seed_commitment" not in block:
        raise ReplayError("field 'commitment.seed_commitment': missing")
    for key in ("tournament", "key"):
        if key in block and not isinstance(block[key], str):
            raise ReplayError(f"field 'commitment.{key}': expected text")
    if "tournament_commitment" in block and not (
        isinstance(block.get("tournament"), str) and isinstance(block.get("key"), str)
    ):
        raise ReplayError(
            "field 'commitment': a tournament commitment needs 'tournament' and 'key'"
        )


@dataclass
class Simulation:
    game: Game
    #: Per deal: (deal index, the scores the replay recorded, the scores re-simulated).
    checkpoints: list[tuple[int, list[int] | None, list[int] | None]]


def simulate(replay: dict[str, Any]) -> Simulation:
    """Re-play every action; an illegal or malformed one raises :class:`ReplayError`."""
    check_shape(replay)
    try:
        rules = Rules.from_json(replay["rules"])
    except EngineError as e:
        raise ReplayError(f"field 'rules': {e}") from None
    if len(replay["seats"]) != rules.players:
        raise ReplayError(
            f"field 'seats': {len(replay['seats'])} seats for {rules.players} players"
        )
    game = Game(rules, seed=replay["seed"], dealer=int(replay.get("first_dealer", 0)))
    checkpoints: list[tuple[int, list[int] | None, list[int] | None]] = []
    for i, deal in enumerate(replay["deals"]):
        if game.is_over:
            raise ReplayError(f"deals[{i}]: the game was already over")
        if not game.is_chance:
            raise ReplayError(f"deals[{i}]: the previous deal is not finished")
        if deal.get("index", game.deal_index) != game.deal_index:
            raise ReplayError(
                f"deals[{i}]: index {deal.get('index')} but the next deal is {game.deal_index}"
            )
        try:
            game.deal(deal.get("deck"))
        except EngineError as e:
            raise ReplayError(f"deals[{i}].deck: {e}") from None
        for j, item in enumerate(deal["actions"]):
            seat, text = item[0], item[1]
            where = f"deals[{i}].actions[{j}] ({seat}: {text!r})"
            if game.to_act != seat:
                raise ReplayError(f"{where}: it is seat {game.to_act}'s turn, not seat {seat}'s")
            try:
                game.apply(parse_action(text))
            except EngineError as e:
                raise ReplayError(f"{where}: {e}") from None
        recorded = deal.get("scores")
        done = game.records[-1].result
        got = list(done["scores"]) if done and "scores" in done else None
        checkpoints.append((i, recorded, got))
    return Simulation(game, checkpoints)


def first_difference(replay: dict[str, Any], sim: Simulation) -> str | None:
    """The first place where the re-simulation disagrees with the record, or None."""
    for i, recorded, got in sim.checkpoints:
        if recorded is not None and recorded != got:
            return f"deals[{i}]: recorded scores {recorded}, re-simulated {got}"
    res = replay["result"]
    game = sim.game
    if res.get("scores") != game.scores:
        return f"result.scores: recorded {res.get('scores')}, re-simulated {game.scores}"
    if res.get("deals", game.deals_played) != game.deals_played:
        return f"result.deals: recorded {res.get('deals')}, re-simulated {game.deals_played}"
    status = res.get("status")
    if status == "completed":
        if not game.is_over:
            return "result.status: recorded 'completed' but the game is not over"
        if res.get("ranks") != game.ranking():
            return f"result.ranks: recorded {res.get('ranks')}, re-simulated {game.ranking()}"
    elif game.is_over and status not in ("forfeit", "aborted"):
        return f"result.status: recorded {status!r} but the game is over"
    return None


def verify(
    replay: dict[str, Any],
    *,
    tournament_secret: str | None = None,
    expected_commitment: str | None = None,
) -> str | None:
    """None when the replay re-simulates to its recorded result, else the difference.

    With a ``commitment`` the seed and the deals are checked against it first (see
    :func:`commitment_difference`); ``expected_commitment`` is the seed commitment a seat
    saw at ``match_start``, so a seat can check the replay it is given is its own match.
    """
    check_shape(replay)
    # The commitment first: a deck changed after the fact may also make a move illegal,
    # and the change, not the move, is what the reader needs to hear about.
    diff = commitment_difference(replay, tournament_secret, expected_commitment)
    return diff or first_difference(replay, simulate(replay))


def commitment_summary(replay: dict[str, Any], tournament_secret: str | None = None) -> str:
    """One line saying what a verified commitment established."""
    block = replay["commitment"]
    text = "the seed matches its commitment and every deal is its shuffle"
    if tournament_secret or block.get("tournament_secret"):
        text += f"; it is derived from tournament {block['tournament']!r}'s revealed secret"
    elif "tournament_commitment" in block:
        text += (f"; tournament {block['tournament']!r} not checked (give its revealed secret "
                 "with --tournament-secret)")
    return text


def commitment_difference(
    replay: dict[str, Any], tournament_secret: str | None, expected_commitment: str | None
) -> str | None:
    """The first way the seed or the deals break the replay's commitment, or None.

    Checks, in order: the seed commitment the caller expects; the seed against the
    commitment; each recorded deck against the seed's shuffle; and, when the tournament's
    secret is known (given, or revealed in the replay), the secret against the tournament
    commitment and the seed against its derivation.
    """
    block = replay.get("commitment")
    if block is None:
        if expected_commitment is not None or tournament_secret is not None:
            return "commitment: the replay carries no commitment (its seed was not secret)"
        return None
    seed = replay["seed"]
    committed = block["seed_commitment"]
    if expected_commitment is not None and expected_commitment != committed:
        return (
            f"commitment.seed_commitment: the replay says {committed}, "
            f"the match showed {expected_commitment}"
        )
    actual = cm.seed_commitment(replay["match_id"], seed)
    if actual != committed:
        return (
            f"seed: its commitment is {actual}, not the {committed} "
            "published when the match started"
        )
    try:
        base = DECK_24 if Rules.from_json(replay["rules"]).deck == 24 else DECK_32
    except EngineError as e:
        raise ReplayError(f"field 'rules': {e}") from None
    for i, deal in enumerate(replay["deals"]):
        deck = deal.get("deck")
        if deck is None:
            continue  # dealt from the seed when re-simulated
        index = deal.get("index", i)
        if not isinstance(deck, list):
            raise ReplayError(f"deals[{i}].deck: expected a list of card names")
        try:
            cards = [parse_card(c) for c in deck]
        except (EngineError, TypeError, AttributeError):
            raise ReplayError(f"deals[{i}].deck: expected a list of card names") from None
        if not isinstance(index, int) or cards != shuffled(base, deal_seed(seed, index)):
            return f"deals[{i}].deck: not the shuffle of the committed seed"
    secret = tournament_secret or block.get("tournament_secret")
    if secret is not None:
        if "tournament_commitment" not in block:
            return "commitment: not a tournament match; it has no tournament secret to check"
        if not cm.is_hex64(secret):
            raise ReplayError("tournament secret: expected 64 lowercase hex digits")
        got = cm.tournament_commitment(block["tournament"], secret)
        if got != block["tournament_commitment"]:
            return (
                f"tournament secret: its commitment is {got}, not the "
                f"{block['tournament_commitment']} published when the tournament started"
            )
        derived = cm.derive(secret, block["key"])
        if derived != seed:
            return f"seed: not the one derived from the tournament secret for {block['key']!r}"
    return None


def show(replay: dict[str, Any]) -> str:
    """The game deal by deal, for a person: hands, auction, exchange, tricks, scores."""
    sim = simulate(replay)
    game = sim.game
    seats = replay["seats"]
    names = [f"{k}:{s}" for k, s in enumerate(seats)]
    lines = [
        f"Replay of a {game.rules.name} game, seed {replay['seed']!r}",
        "Seats: " + ", ".join(names),
    ]
    for rec in game.records:
        lines.append("")
        lines.append(f"Deal {rec.index} (dealer {names[rec.dealer]})")
        lines.extend(_deal_story(game, rec, names))
    res = replay["result"]
    lines.append("")
    lines.append(f"Result ({res.get('status')}): " + ", ".join(
        f"{names[s]} {game.scores[s]} (rank {res.get('ranks', game.ranking())[s]})"
        for s in range(game.n)
    ))
    return "\n".join(lines)


def _deal_story(game: Game, rec: Any, names: list[str]) -> list[str]:
    r = game.rules
    out: list[str] = []
    n = r.players
    order = [(rec.dealer + 1 + i) % n for i in range(n)]
    if r.dealer_sits_out:
        order = [s for s in order if s != rec.dealer]
    h = r.hand_size
    deck = rec.deck
    for k, s in enumerate(order):
        out.append(f"  {names[s]:>12} holds {hand_str(mask_of(deck[k * h:(k + 1) * h]))}")
    pos = len(order) * h
    for t in range(r.talons):
        talon = deck[pos + t * r.talon_size: pos + (t + 1) * r.talon_size]
        if talon:
            out.append(f"  {'talon':>12}: {hand_str(mask_of(talon))}")
    bidding: list[str] = []
    trick_no = 0
    for ev in rec.events:
        kind = ev[0]
        if kind in ("action", "auto"):
            seat, action = ev[1], ev[2]
            if action.kind_name in ("play", "marry", "half", "aces", "nines", "crawl"):
                continue
            tag = " (forced)" if kind == "auto" else ""
            bidding.append(f"{names[seat]} {action}{tag}")
        elif kind == "trick":
            if bidding:
                out.append("  " + "; ".join(bidding))
                bidding = []
            trick_no += 1
            cards = ", ".join(f"{names[s]} {CARD_NAMES[c]}" for s, c in ev[2])
            out.append(f"  trick {trick_no}: {cards} -> {names[ev[1]]} ({ev[3]})")
        elif kind == "marriage":
            out.append(f"  {names[ev[1]]} declares {ev[4]} in {'CSHD'[ev[2]]} for {ev[3]}")
        elif kind == "redeal":
            if bidding:
                out.append("  " + "; ".join(bidding))
                bidding = []
            out.append(f"  redeal: {ev[1]}")
        elif kind == "deal_end":
            if bidding:
                out.append("  " + "; ".join(bidding))
                bidding = []
            d = ev[3]
            if d >= 0:
                made = "made" if ev[5] else "failed"
                out.append(f"  {names[d]} {made} the contract of {ev[4]}")
            deltas = ", ".join(f"{x:+d}" for x in ev[1])
            totals = ", ".join(str(x) for x in ev[2])
            out.append(f"  deal scores: {deltas}   totals: {totals}")
    if bidding:
        out.append("  " + "; ".join(bidding))
    return out
