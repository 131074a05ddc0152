"""``arena watch``: follow a match live in a terminal.

The gateway's ``OrganiserService.WatchMatch`` streams a match's public events from the
first one, so a spectator who arrives late still sees the whole match.  This module folds
those events into a small table view (scores, the auction, the trick on the table, the last
trick, deal history) and redraws it with plain ANSI escapes: no curses, so it works in any
terminal and over ssh.  When the output is not a terminal (a pipe, a log file) it prints
one line per event instead, which is also what the tests read.

Only public events are shown; the gateway never sends hidden cards, and neither would this
view show them.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from arena.server.tls import ClientTls

#: Actions that put a card on the table.
_PLAY_VERBS = frozenset({"play", "marry", "half", "aces", "nines", "crawl"})
#: Actions of the auction.
_BID_VERBS = frozenset({"pass", "bid", "blind", "look", "redeal", "sell", "keep", "buy"})
_SUIT_SYMBOLS = {"C": "\u2663", "S": "\u2660", "H": "\u2665", "D": "\u2666"}
_RED = "\x1b[31m"
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"
_RESET = "\x1b[0m"
_HOME_CLEAR = "\x1b[H\x1b[2J"
#: Redraw at most this often while events stream in; a bot match produces thousands of
#: events a second, more than a terminal (or a reader) can take.
_REDRAW_EVERY_S = 0.1


@dataclass
class DealLine:
    deal: int
    declarer: int | None
    contract: int
    made: bool
    deal_scores: list[int]
    scores: list[int]


@dataclass
class MatchView:
    """The state a spectator sees, rebuilt from public events only."""

    match_id: str = ""
    tournament: str | None = None
    bots: list[str] = field(default_factory=list)
    deal: int | None = None
    dealer: int | None = None
    scores: list[int] = field(default_factory=list)
    auction: list[tuple[int, str]] = field(default_factory=list)
    declarer: int | None = None
    contract: int | None = None
    trump: str | None = None
    marriages: list[tuple[int, str, int]] = field(default_factory=list)
    talon: list[str] = field(default_factory=list)
    table: list[tuple[int, str]] = field(default_factory=list)
    last_trick: tuple[int, list[tuple[int, str]], int] | None = None
    tricks: dict[int, int] = field(default_factory=dict)
    points: dict[int, int] = field(default_factory=dict)
    other_actions: list[tuple[int, str]] = field(default_factory=list)
    history: list[DealLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    status: str | None = None
    ranks: list[int] = field(default_factory=list)
    forfeit_seat: int | None = None
    events_seen: int = 0

    # --- folding events -------------------------------------------------------------------

    def seat_name(self, seat: int | None) -> str:
        if seat is None:
            return "-"
        if 0 <= seat < len(self.bots):
            return self.bots[seat]
        return f"seat {seat}"

    def apply(self, event: Mapping[str, Any]) -> str:
        """Fold one event in; return a one-line description of it."""
        self.events_seen += 1
        kind = str(event.get("type", ""))
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            return f"({kind or 'unknown'} event)"
        line: str = handler(event)
        return line

    def _on_match_start(self, e: Mapping[str, Any]) -> str:
        # ``bots`` from the gateway's typed event, ``seats`` in the events published live.
        self.bots = [str(b) for b in e.get("bots") or e.get("seats") or []]
        self.scores = [0] * len(self.bots)
        return "match starts: " + ", ".join(f"{seat}={name}" for seat, name in enumerate(self.bots))

    def _on_deal_start(self, e: Mapping[str, Any]) -> str:
        self.deal = _int(e.get("deal"), 0)
        self.dealer = _opt_int(e.get("dealer"))
        self.auction.clear()
        self.declarer = self.contract = self.trump = None
        self.marriages.clear()
        self.talon.clear()
        self.table.clear()
        self.last_trick = None
        self.tricks.clear()
        self.points.clear()
        self.other_actions.clear()
        return f"deal {self.deal}: {self.seat_name(self.dealer)} deals"

    def _on_action(self, e: Mapping[str, Any]) -> str:
        seat = _int(e.get("seat"), -1)
        text = str(e.get("action", ""))
        verb, _, rest = text.partition(" ")
        if verb in _PLAY_VERBS:
            self.table.append((seat, rest.split(" ")[0] if rest else "??"))
        elif verb in _BID_VERBS:
            self.auction.append((seat, text))
            if verb in ("bid", "blind") and rest.strip().isdigit():
                self.declarer, self.contract = seat, int(rest.strip())
        elif verb == "contract" and rest.strip().isdigit():
            self.declarer, self.contract = seat, int(rest.strip())
            self.other_actions.append((seat, text))
        elif verb == "trump":
            self.trump = rest.strip() or None
            self.other_actions.append((seat, text))
        else:
            self.other_actions.append((seat, text))
        auto = " (automatic)" if e.get("auto") or e.get("automatic") else ""
        return f"{self.seat_name(seat)}: {text}{auto}"

    def _on_talon(self, e: Mapping[str, Any]) -> str:
        self.talon = [str(c) for c in e.get("cards") or []]
        return "talon shown: " + " ".join(self.talon)

    def _on_marriage(self, e: Mapping[str, Any]) -> str:
        seat = _int(e.get("seat"), -1)
        suit = str(e.get("suit", ""))
        points = _int(e.get("points"), 0)
        self.marriages.append((seat, suit, points))
        self.trump = suit or self.trump
        kind = str(e.get("kind") or "marriage")
        return f"{self.seat_name(seat)} declares {kind} {suit} for {points}"

    def _on_trick(self, e: Mapping[str, Any]) -> str:
        winner = _int(e.get("winner"), -1)
        points = _int(e.get("points"), 0)
        cards: list[tuple[int, str]] = []
        for item in e.get("cards") or []:
            if isinstance(item, Mapping):
                cards.append((_int(item.get("seat"), -1), str(item.get("card", "??"))))
            elif isinstance(item, list | tuple) and len(item) == 2:
                cards.append((_int(item[0], -1), str(item[1])))
        self.last_trick = (winner, cards, points)
        self.table.clear()
        self.tricks[winner] = self.tricks.get(winner, 0) + 1
        self.points[winner] = self.points.get(winner, 0) + points
        shown = " ".join(card for _, card in cards)
        return f"{self.seat_name(winner)} takes {shown} ({points})"

    def _on_redeal(self, e: Mapping[str, Any]) -> str:
        reason = str(e.get("reason", ""))
        self.notes.append(f"deal {self.deal or 0} dealt again: {reason}")
        return f"redeal: {reason}"

    def _on_deal_end(self, e: Mapping[str, Any]) -> str:
        deal_scores = [_int(v, 0) for v in e.get("deal_scores", e.get("deltas")) or []]
        scores = [_int(v, 0) for v in e.get("scores") or []]
        declarer = _opt_int(e.get("declarer"))
        line = DealLine(
            deal=self.deal if self.deal is not None else len(self.history),
            declarer=declarer,
            contract=_int(e.get("contract"), 0),
            made=bool(e.get("made", False)),
            deal_scores=deal_scores,
            scores=scores,
        )
        self.history.append(line)
        if scores:
            self.scores = scores
        self.table.clear()
        return "deal ends: " + self._describe_deal(line)

    def _on_match_end(self, e: Mapping[str, Any]) -> str:
        self.status = str(e.get("status") or "completed")
        scores = [_int(v, 0) for v in e.get("scores") or []]
        if scores:
            self.scores = scores
        self.ranks = [_int(v, 0) for v in e.get("ranks") or []]
        self.forfeit_seat = _opt_int(e.get("forfeit_seat"))
        return "match over: " + self._describe_end()

    # --- words ----------------------------------------------------------------------------

    def _describe_deal(self, line: DealLine) -> str:
        if line.declarer is None:
            head = "no declarer"
        else:
            outcome = "made" if line.made else "went down"
            head = f"{self.seat_name(line.declarer)} {outcome} {line.contract}"
        deltas = " ".join(f"{d:+d}" for d in line.deal_scores)
        totals = " ".join(str(s) for s in line.scores)
        return f"{head}; deal [{deltas}] total [{totals}]"

    def _describe_end(self) -> str:
        parts = [self.status or "completed"]
        if self.forfeit_seat is not None:
            parts.append(f"{self.seat_name(self.forfeit_seat)} forfeited")
        if self.ranks:
            order = sorted(range(len(self.ranks)), key=lambda s: (self.ranks[s], s))
            parts.append(
                ", ".join(f"{self.ranks[s]}. {self.seat_name(s)} {self._score(s)}" for s in order)
            )
        return "; ".join(parts)

    def _score(self, seat: int) -> str:
        return str(self.scores[seat]) if seat < len(self.scores) else "?"

    # --- the screen -----------------------------------------------------------------------

    def render(self, color: bool = False, history_lines: int = 8) -> list[str]:
        """The whole screen as lines (no trailing newlines)."""

        def card(text: str) -> str:
            return _card(text, color)

        def bold(text: str) -> str:
            return f"{_BOLD}{text}{_RESET}" if color else text

        def dim(text: str) -> str:
            return f"{_DIM}{text}{_RESET}" if color else text

        title = f"Thousand Arena - match {self.match_id}"
        if self.tournament:
            title += f" - {self.tournament}"
        lines = [bold(title)]
        if self.deal is not None:
            lines.append(f"Deal {self.deal}, dealer {self.seat_name(self.dealer)}")
        else:
            lines.append("Waiting for the first deal")
        lines.append("")
        width = max([len(b) for b in self.bots] + [3])
        lines.append(f"  {'seat':<4}  {'bot':<{width}}  {'score':>6}  {'tricks':>6}  {'points':>6}")
        for seat, name in enumerate(self.bots):
            marks = []
            if seat == self.declarer and self.contract is not None:
                marks.append(f"declarer {self.contract}")
            if seat == self.dealer:
                marks.append("dealer")
            if self.ranks and seat < len(self.ranks):
                marks.append(f"rank {self.ranks[seat]}")
            lines.append(
                f"  {seat:<4}  {name:<{width}}  {self._score(seat):>6}  "
                f"{self.tricks.get(seat, 0):>6}  {self.points.get(seat, 0):>6}  "
                + dim(", ".join(marks))
            )
        lines.append("")
        trump = card(self.trump) if self.trump else "none"
        married = ", ".join(
            f"{self.seat_name(s)} {card(suit)} {pts}" for s, suit, pts in self.marriages
        )
        lines.append(f"Trump: {trump}" + (f"   Marriages: {married}" if married else ""))
        auction = ", ".join(f"{self.seat_name(s)} {a}" for s, a in self.auction[-12:])
        lines.append(f"Auction: {auction or '-'}")
        if self.talon:
            lines.append("Talon: " + " ".join(card(c) for c in self.talon))
        others = ", ".join(f"{self.seat_name(s)} {a}" for s, a in self.other_actions[-6:])
        if others:
            lines.append(f"Talon and exchange: {others}")
        table = "  ".join(f"{self.seat_name(s)} {card(c)}" for s, c in self.table)
        lines.append(f"On the table: {table or '-'}")
        if self.last_trick is not None:
            winner, cards, points = self.last_trick
            shown = " ".join(card(c) for _, c in cards)
            lines.append(f"Last trick: {self.seat_name(winner)} took {shown} ({points})")
        lines.append("")
        lines.append(bold("Deals"))
        for line in self.history[-history_lines:]:
            lines.append(f"  {line.deal:>3}. {self._describe_deal(line)}")
        if not self.history:
            lines.append("  -")
        for note in self.notes[-3:]:
            lines.append(dim(f"  {note}"))
        lines.append("")
        if self.status is not None:
            lines.append(bold("Match over: " + self._describe_end()))
        else:
            lines.append(dim(f"live - {self.events_seen} events"))
        return lines


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    return default


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _card(text: str, color: bool) -> str:
    """``TH`` -> ``T♥`` (red with colour); suits alone (a trump) work too."""
    if not text or text == "??":
        return text
    suit = text[-1]
    symbol = _SUIT_SYMBOLS.get(suit)
    if symbol is None:
        return text
    shown = text[:-1] + symbol
    if color and suit in "HD":
        return f"{_RED}{shown}{_RESET}"
    return shown


def event_to_dict(message: Any) -> dict[str, Any]:
    """A ``MatchEvent`` message as the plain dictionary :class:`MatchView` folds.

    The typed body wins; ``detail_json`` fills in what the body lacks (and covers event
    kinds newer than this viewer).
    """
    from google.protobuf.json_format import MessageToDict

    out: dict[str, Any] = {}
    if message.detail_json:
        try:
            detail = json.loads(message.detail_json)
        except ValueError:
            detail = {}
        if isinstance(detail, dict):
            out.update(detail)
    body_name = message.WhichOneof("body")
    if body_name is not None:
        body = MessageToDict(
            getattr(message, body_name),
            preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True,
        )
        out.update(body)
    out["type"] = message.type or out.get("type", "")
    if "bots" in out:
        out["bots"] = [str(b) for b in out["bots"]]
    return out


class _Screen:
    """Writes the view: full redraws on a terminal, one line per event elsewhere."""

    def __init__(self, out: TextIO, redraw: bool, color: bool, err: TextIO | None = None) -> None:
        self.out = out
        self.err = err if err is not None else out
        self.redraw = redraw
        self.color = color
        self._last = 0.0

    @classmethod
    def on(cls, out: TextIO | None, redraw: bool | None, color: bool | None) -> _Screen:
        """On ``out`` (without one: the view on stdout, messages on stderr); redraws and
        colours by default where that is a terminal."""
        stream_out = out if out is not None else sys.stdout
        is_tty = bool(getattr(stream_out, "isatty", lambda: False)())
        return cls(
            stream_out,
            redraw=is_tty if redraw is None else redraw,
            color=is_tty if color is None else color,
            err=out if out is not None else sys.stderr,
        )

    def show(self, view: MatchView, line: str, *, force: bool = False) -> None:
        if not self.redraw:
            self.out.write(line + "\n")
            self.out.flush()
            return
        now = time.monotonic()
        if not force and now - self._last < _REDRAW_EVERY_S:
            return
        self._last = now
        self.out.write(_HOME_CLEAR + "\n".join(view.render(self.color)) + "\n")
        self.out.flush()

    def message(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()


async def watch_async(
    target: str,
    match_id: str,
    token: str,
    screen: _Screen,
    *,
    tournament: str | None = None,
    timeout: float | None = None,
    tls: ClientTls | None = None,
) -> int:
    """Follow one match of the gateway to its end; see :func:`watch` for the exit codes."""
    import grpc
    import grpc.aio
    from thousand_bot.proto.thousand.v1 import organiser_pb2, organiser_pb2_grpc

    view = MatchView(match_id=match_id, tournament=tournament)
    metadata = (("authorization", f"Bearer {token}"),)
    from arena.server.tls import aio_channel

    async with aio_channel(target, tls) as channel:
        stub = organiser_pb2_grpc.OrganiserServiceStub(channel)
        call = stub.WatchMatch(
            organiser_pb2.WatchMatchRequest(match_id=match_id), metadata=metadata, timeout=timeout
        )
        try:
            async for response in call:
                event = event_to_dict(response.event)
                line = view.apply(event)
                screen.show(view, line, force=event["type"] in ("deal_end", "match_end"))
        except grpc.aio.AioRpcError as exc:
            if screen.redraw and view.events_seen:
                screen.show(view, "", force=True)
            screen.message(_explain(exc, target, match_id))
            from arena.server.admin import rpc_exit_code

            return rpc_exit_code(exc.code())
    if view.status is None:
        screen.show(view, "", force=True)
        screen.message(f"arena watch: the stream of match {match_id} ended before the match did")
        return 1
    if screen.redraw:
        screen.show(view, "", force=True)
    return 0


#: Seconds without a new event after which a live match that has not ended is given up.
LIVE_SILENCE_S = 180.0


def watch_live(reader: Any, match_id: str, screen: _Screen, *,
               tournament: str | None = None) -> int:
    """Follow a match published live (a tournament's, on any executor) from its first event
    to its end, as the web's live pages do; see :func:`watch` for the exit codes."""
    from arena.observability.live import public_event

    meta = reader.meta(match_id)
    view = MatchView(match_id=match_id,
                     tournament=tournament or (meta.meta.get("tournament") if meta else None))
    cursor: str | None = None
    heard = time.monotonic()
    while view.status is None:
        batches = reader.read(match_id, cursor, block_ms=1000)
        for batch in batches:
            cursor = batch.cursor
            for raw in batch.events:
                event = public_event(raw) if isinstance(raw, dict) else None
                if event is None:
                    continue
                line = view.apply(event)
                screen.show(view, line, force=event["type"] in ("deal_end", "match_end"))
        if batches:
            heard = time.monotonic()
            continue
        entry = reader.meta(match_id)
        if entry is not None and entry.state == "ended" and view.status is None:
            # Everything was read and the publisher said it ended without a match_end
            # (a match stopped with its worker).
            screen.message(f"arena watch: match {match_id} ended before its last event "
                           "was published (its worker stopped?)")
            return 1
        if time.monotonic() - heard > LIVE_SILENCE_S:
            screen.message(f"arena watch: nothing heard of match {match_id} for "
                           f"{LIVE_SILENCE_S:.0f}s; giving up")
            return 1
    if screen.redraw:
        screen.show(view, "", force=True)
    return 0


def _live_reader(routing: str | None, db: str | None, live_dir: str | None) -> Any:
    """The live sources given (None when none is): Redis and/or a spool directory."""
    from pathlib import Path

    from arena.observability.live import LiveReader, spool_dir_for

    if not routing and not db and not live_dir:
        return None
    spool = Path(live_dir) if live_dir else (spool_dir_for(db) if db else None)
    return LiveReader(routing or None, spool)


def _find_live(reader: Any, match_id: str) -> tuple[str | None, str | None]:
    """The live match named by an id or a unique start of one; else None and why not."""
    if reader.meta(match_id) is not None:
        return match_id, None
    ids = [str(m.meta.get("match_id")) for m in reader.matches()]
    found = [i for i in ids if i.startswith(match_id)]
    if len(found) == 1:
        return found[0], None
    if len(found) > 1:
        return None, f"{len(found)} live matches start with {match_id!r}: give more of the id"
    return None, f"no live match {match_id!r} in {reader.source}"


def _list_live(reader: Any, out: TextIO) -> int:
    matches = reader.matches()
    if not matches:
        out.write(f"no match is being played (or ended in the last hour) in {reader.source}\n")
        return 0
    for m in matches:
        meta = m.meta
        where = meta.get("tournament") or "-"
        index = meta.get("index")
        players = ", ".join(str(p) for p in meta.get("players") or meta.get("bots") or [])
        out.write(f"{meta.get('match_id')}  {m.state:<7}  {where}"
                  f"{'' if index is None else f' #{index}'}  {players}\n")
    return 0


def _explain(exc: Any, target: str, match_id: str) -> str:
    import grpc

    code = exc.code()
    detail = exc.details() or ""
    if code == grpc.StatusCode.NOT_FOUND:
        return (f"arena watch: {detail or f'no match {match_id!r} in the gateway at {target}'}"
                "; a tournament's match is followed from where it is published: --routing "
                "REDIS_URL (Celery workers, runs with routing) or --db URL (a local pool)")
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return f"arena watch: the gateway refused the organiser token: {detail}"
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"arena watch: cannot reach the gateway at {target}: {detail}"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"arena watch: gave up waiting for match {match_id}"
    return f"arena watch: {code.name}: {detail}"


def watch(
    target: str,
    match_id: str | None,
    tournament: str | None,
    token: str,
    *,
    out: TextIO | None = None,
    redraw: bool | None = None,
    color: bool | None = None,
    tls: ClientTls | None = None,
    routing: str | None = None,
    db: str | None = None,
    live_dir: str | None = None,
) -> int:
    """Follow a match until it ends: one published live (a tournament's, on any executor)
    when ``routing``, ``db`` or ``live_dir`` name where, else one the gateway at ``target``
    plays.

    ``match_id`` names the match (as printed by ``StartMatch`` or a tournament's results;
    a unique start of a live match's id will do); ``tournament`` is shown in the title.
    Without a match id the live matches are listed.  ``token`` is the organiser's token,
    needed for the gateway only.

    Exit codes (docs/cli.md): 0 the match ended and was shown; 1 the gateway does not know
    the match or the stream stopped before the end (the reason is printed); 2 bad
    arguments; 3 the gateway cannot be reached; 4 it refused the organiser token; 130
    interrupted with Ctrl-C.
    """
    errors = out if out is not None else sys.stderr
    try:
        reader = _live_reader(routing, db, live_dir)
    except Exception as exc:
        errors.write(f"arena watch: cannot read live matches: {exc}\n")
        return 2
    if reader is not None:
        try:
            if not match_id:
                return _list_live(reader, out if out is not None else sys.stdout)
            found, why = _find_live(reader, match_id)
            if found is not None:
                return watch_live(reader, found, _Screen.on(out, redraw, color),
                                  tournament=tournament)
            if not token:
                errors.write(f"arena watch: {why}\n")
                return 1
        except KeyboardInterrupt:
            (out if out is not None else sys.stdout).write("\n")
            return 130
        except Exception as exc:  # Redis down, an unreadable spool
            errors.write(f"arena watch: cannot read live matches from {reader.source}: "
                         f"{exc}\n")
            return 3
        finally:
            reader.close()
    if not match_id:
        errors.write(
            "arena watch: give the id of the match to follow; the gateway streams one match "
            "at a time (its id is printed when the match is started)\n"
        )
        return 2
    if not token:
        errors.write("arena watch: an organiser token is required\n")
        return 2
    from thousand_bot.address import gateway_problem

    problem = gateway_problem(target or "")
    if problem:
        errors.write(f"arena watch: {problem}\n")
        return 2
    try:
        return asyncio.run(
            watch_async(target, match_id, token, _Screen.on(out, redraw, color),
                        tournament=tournament, tls=tls)
        )
    except KeyboardInterrupt:
        (out if out is not None else sys.stdout).write("\n")
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    """``arena watch``: follow one match of a gateway in the terminal."""
    import argparse
    import os

    parser = argparse.ArgumentParser(
        prog="arena watch",
        description="Follow a match live: one a gateway plays, or any tournament's match "
        "(with --routing or --db, where the executors publish it); without a match id, "
        "list the live matches there.",
    )
    parser.add_argument("match_id", nargs="?", help="id of the match to follow (a unique "
                        "start of a live match's id will do)")
    parser.add_argument("--routing", metavar="REDIS_URL",
                        default=os.environ.get("ARENA_ROUTING_URL") or None,
                        help="the Redis that Celery workers and --routing runs publish live "
                        "matches to (env ARENA_ROUTING_URL)")
    parser.add_argument("--db", metavar="URL",
                        help="the results store of a tournament on a local pool or inline: "
                        "its matches are published in a directory beside it")
    parser.add_argument("--live-dir", metavar="DIR", default=os.environ.get("ARENA_LIVE_DIR"),
                        help="that directory, given outright (env ARENA_LIVE_DIR)")
    parser.add_argument("--gateway", metavar="HOST:PORT",
                        default=os.environ.get("ARENA_GATEWAY", "localhost:50051"),
                        help="the gateway (env ARENA_GATEWAY; default localhost:50051)")
    # The option's earlier name, kept working.
    parser.add_argument("--target", dest="gateway", help=argparse.SUPPRESS)
    parser.add_argument("--tournament", help="tournament name shown in the title")
    parser.add_argument(
        "--token",
        default=os.environ.get("ARENA_ORGANISER_TOKEN", ""),
        help="organiser token (default $ARENA_ORGANISER_TOKEN)",
    )
    parser.add_argument("--plain", action="store_true", help="one line per event, no redraw")
    parser.add_argument("--no-color", action="store_true", help="no ANSI colours")
    from arena.server.tls import TlsConfigError, add_client_options, client_tls

    add_client_options(parser)
    args = parser.parse_args(argv)
    try:
        tls = client_tls(args)
    except TlsConfigError as exc:
        print(f"arena watch: {exc}", file=sys.stderr)
        return 2
    return watch(
        args.gateway,
        args.match_id,
        args.tournament,
        args.token,
        redraw=False if args.plain else None,
        color=False if args.no_color else None,
        tls=tls,
        routing=args.routing,
        db=args.db,
        live_dir=args.live_dir,
    )


if __name__ == "__main__":
    sys.exit(main())
