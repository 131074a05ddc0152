"""A self-contained HTML report: leaderboard, rating plot (inline SVG), LOS matrix, specs.

One file with no scripts or external assets, so it can be mailed, archived as a CI
artifact or opened from disk years later and still look the same.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import html
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from arena.ratings import los_matrix
from arena.tournament.leaderboard import (
    BOOTSTRAP,
    LeaderRow,
    compute_leaderboard,
    game_table,
    has_adjusted,
    interval_text,
    load_records,
    luck_summary,
    unbounded_note,
)
from arena.tournament.model import ResultRecord
from arena.tournament.store import (
    ResultStore,
    StoreError,
    TournamentInfo,
    add_db_option,
    store_failed,
)

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1240px;
color:#222;padding:0 1rem}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9rem}
td,th{padding:.25rem .6rem;text-align:right;white-space:nowrap}.wide{overflow-x:auto}
svg{max-width:960px}
th{background:#f3f3f3}td.l,th.l{text-align:left}tr:nth-child(even) td{background:#fafafa}
.muted{color:#777}pre{background:#f6f6f6;padding:.6rem;overflow-x:auto;font-size:.8rem}
"""


def _nice_step(span: float) -> float:
    raw = span / 6 if span > 0 else 10.0
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if raw <= m * mag:
            return m * mag
    return 10.0 * mag


def rating_svg(rows: Sequence[LeaderRow], *, width: int = 760) -> str:
    """Ratings as points with their 95% intervals as bars, best at the top."""
    if not rows:
        return "<p class='muted'>no ratings yet</p>"
    row_h, top, bottom, left, right = 26, 18, 34, 170, 70
    height = top + bottom + row_h * len(rows)
    values: list[float] = [
        v for r in rows for v in (r.rating, *((r.ci_low, r.ci_high) if r.bounded else ()))
        if math.isfinite(v)
    ]
    lo, hi = min([*values, 0.0]), max([*values, 0.0])
    pad = max(10.0, (hi - lo) * 0.05)
    lo, hi = lo - pad, hi + pad
    plot_w = width - left - right

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * plot_w

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="ratings with 95% intervals" '
        'font-family="system-ui,sans-serif" font-size="12">'
    ]
    step = _nice_step(hi - lo)
    tick = math.ceil(lo / step) * step
    axis_y = top + row_h * len(rows)
    while tick <= hi:
        tx = x(tick)
        zero = abs(tick) < 1e-9
        style = 'stroke="#999" stroke-dasharray="4 3"' if zero else 'stroke="#e4e4e4"'
        parts.append(f'<line x1="{tx:.1f}" y1="{top - 6}" x2="{tx:.1f}" y2="{axis_y}" {style}/>')
        parts.append(
            f'<text x="{tx:.1f}" y="{axis_y + 16}" text-anchor="middle" fill="#555">{tick:g}</text>'
        )
        tick += step
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle" fill="#555">'
        "rating (Elo scale, mean 0) with 95% interval</text>"
    )
    for i, r in enumerate(rows):
        cy = top + row_h * i + row_h / 2
        name = html.escape(r.player)
        parts.append(f'<text x="{left - 10}" y="{cy + 4:.1f}" text-anchor="end">{name}</text>')
        if r.bounded and math.isfinite(r.ci_low) and math.isfinite(r.ci_high):
            parts.append(
                f'<line x1="{x(r.ci_low):.1f}" y1="{cy:.1f}" x2="{x(r.ci_high):.1f}" y2="{cy:.1f}" '
                'stroke="#4a7ab5" stroke-width="3" stroke-linecap="round"/>'
            )
        parts.append(
            f'<circle cx="{x(r.rating):.1f}" cy="{cy:.1f}" r="5" fill="#1f4e8c">'
            f"<title>{name}: {r.rating:.1f} [{r.ci_low:.1f}, {r.ci_high:.1f}]</title></circle>"
        )
        parts.append(
            f'<text x="{width - right + 8}" y="{cy + 4:.1f}" fill="#333">{r.rating:+.0f}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _f(value: float, digits: int = 1) -> str:
    return "-" if not math.isfinite(value) else f"{value:.{digits}f}"


def _table(head: str, body: str) -> str:
    """A table in a box of its own that scrolls sideways when the table is wider than the
    report's column, so the page keeps its width and no cell folds."""
    return f"<div class='wide'><table>{head}{body}</table></div>"


def _leader_table(rows: Sequence[LeaderRow]) -> str:
    adjusted = has_adjusted(rows)
    adj_head = "<th>adjusted</th><th>adjusted 95% CI</th>" if adjusted else ""
    head = (
        "<tr><th>#</th><th class='l'>player</th><th class='l'>bot</th><th>rating</th>"
        f"<th>95% CI</th>{adj_head}<th>games</th><th>mean score</th><th>win %</th>"
        "<th>timeouts</th><th>illegal</th><th>forfeits</th></tr>"
    )

    def adj(r: LeaderRow) -> str:
        if not adjusted:
            return ""
        text = interval_text(r.adj_rating, r.adj_ci_low, r.adj_ci_high, r.adj_bounded)
        return f"<td>{_f(r.adj_rating)}</td><td>{html.escape(text)}</td>"

    body = "".join(
        f"<tr><td>{r.rank}</td><td class='l'>{html.escape(r.player)}</td>"
        f"<td class='l'><code>{html.escape(r.bot)}</code></td><td>{_f(r.rating)}</td>"
        f"<td>{html.escape(interval_text(r.rating, r.ci_low, r.ci_high, r.bounded))}</td>"
        f"{adj(r)}<td>{r.games}</td><td>{_f(r.mean_score)}</td>"
        f"<td>{_f(100 * r.win_rate)}</td><td>{r.timeouts}</td><td>{r.illegal}</td>"
        f"<td>{r.forfeits}</td></tr>"
        for r in rows
    )
    return _table(head, body)


def _los_table(records: Sequence[ResultRecord], rows: Sequence[LeaderRow]) -> str:
    if len(rows) < 2 or len(rows) > 24:
        return ""
    los = los_matrix(game_table(records))
    order = [r.player for r in rows]
    head = "<tr><th></th>" + "".join(f"<th>{html.escape(p)}</th>" for p in order) + "</tr>"
    body = []
    for a in order:
        cells = []
        for b in order:
            if a == b:
                cells.append("<td class='muted'>-</td>")
            else:
                v = los.get(a, b)
                shade = int(255 - 90 * abs(v - 0.5) * 2)
                color = f"rgb({shade},255,{shade})" if v > 0.5 else f"rgb(255,{shade},{shade})"
                cells.append(f"<td style='background:{color}'>{100 * v:.0f}%</td>")
        body.append(f"<tr><th class='l'>{html.escape(a)}</th>{''.join(cells)}</tr>")
    return (
        "<h2>Likelihood of superiority</h2><p class='muted'>Chance that the row player is "
        "stronger than the column player, with duplicate sets as the samples.</p>"
        f"{_table(head, ''.join(body))}"
    )


def _h2h_section(records: Sequence[ResultRecord], rows: Sequence[LeaderRow]) -> str:
    from arena.web.data import _head_to_head

    if len(rows) < 2 or len(rows) > 24:
        return ""
    h = _head_to_head(records, [r.player for r in rows])
    order = h["players"]
    head = "<tr><th></th>" + "".join(f"<th>{html.escape(p)}</th>" for p in order) + "</tr>"
    body = []
    for i, a in enumerate(order):
        cells = []
        for j in range(len(order)):
            if i == j:
                cells.append("<td class='muted'>-</td>")
            elif h["games"][i][j]:
                cells.append(f"<td>{100 * h['score'][i][j]:.0f}% "
                             f"<span class='muted'>of {h['games'][i][j]}</span></td>")
            else:
                cells.append("<td class='muted'>·</td>")
        body.append(f"<tr><th class='l'>{html.escape(a)}</th>{''.join(cells)}</tr>")
    return ("<h2>Head to head</h2><p class='muted'>The row player's score against the column "
            "player in the games both played (win 1, tie 1/2).</p>"
            f"{_table(head, ''.join(body))}")


def _sprt_section(infos: Sequence[TournamentInfo], records: Sequence[ResultRecord]) -> str:
    from arena.tournament.spec import SpecError, parse_spec
    from arena.web.data import _sprt_trace
    from arena.web.svg import line_chart

    parts = []
    for t in infos:
        if t.spec.get("format", {}).get("type") != "sprt":
            continue
        try:
            spec = parse_spec(json.dumps(t.spec), fmt="json", check_imports=False)
        except (SpecError, ValueError):
            continue
        sp = _sprt_trace(spec, [r for r in records if r.tournament == t.name])
        chart = line_chart(
            [p["sets"] for p in sp["trace"]], [("LLR", [p["llr"] for p in sp["trace"]])],
            x_label="duplicate sets", y_label="LLR", label="SPRT log-likelihood ratio",
            hlines=[(sp["upper"], f"H1 {sp['upper']:.2f}", "#1a7f37"),
                    (sp["lower"], f"H0 {sp['lower']:.2f}", "#d1242f")]) if sp["trace"] else ""
        llr = "-" if sp["llr"] is None else f"{sp['llr']:.2f}"
        parts.append(
            f"<h2>SPRT {html.escape(t.name)}: {html.escape(sp['candidate'])} against "
            f"{html.escape(sp['baseline'])}</h2><p><b>{html.escape(sp['decision'])}</b>: LLR "
            f"{llr} in ({sp['lower']:.2f}, {sp['upper']:.2f}) after {sp['sets']} of at most "
            f"{sp['max_sets']} sets; H0 Elo {sp['elo0']}, H1 Elo {sp['elo1']}"
            f"{'; on luck-adjusted results' if sp.get('luck_adjusted') else ''}.</p>{chart}")
    return "".join(parts)


def _matches_section(records: Sequence[ResultRecord], web_url: str | None, most: int) -> str:
    """The latest matches; with ``web_url`` each links to its replay in ``arena web``."""
    latest = sorted(records, key=lambda r: (-r.finished_at, r.match_id))[:most]
    if not latest:
        return ""
    head = ("<tr><th class='l'>tournament</th><th>#</th><th class='l'>players (score)</th>"
            "<th class='l'>status</th><th>deals</th><th>timeouts</th><th>illegal</th>"
            "<th class='l'>replay</th></tr>")
    body = []
    for r in latest:
        players = ", ".join(f"{html.escape(p)} {r.scores[i]}" for i, p in enumerate(r.players))
        mid = html.escape(r.match_id)
        link = (f"<a href='{html.escape(web_url.rstrip('/'))}/matches/{mid}'>{mid[:12]}</a>"
                if web_url else f"<code>{mid}</code>")
        body.append(
            f"<tr><td class='l'>{html.escape(r.tournament)}</td><td>{r.index}</td>"
            f"<td class='l'>{players}</td><td class='l'>{html.escape(r.status)}</td>"
            f"<td>{r.deals}</td><td>{sum(r.timeouts)}</td><td>{sum(r.illegal)}</td>"
            f"<td class='l'>{link}</td></tr>")
    more = len(records) - len(latest)
    note = (f"<p class='muted'>The latest {len(latest)} of {len(records)} matches; "
            "<code>arena replay export</code> writes any match's replay and text record."
            "</p>") if more > 0 else ""
    return f"<h2>Matches</h2>{note}{_table(head, ''.join(body))}"


def _tournaments_section(infos: Sequence[TournamentInfo]) -> str:
    items = []
    for t in infos:
        spec = t.spec
        fmt = spec.get("format", {}).get("type", "?")
        rules = spec.get("rules", {}).get("preset", "?")
        n = len(spec.get("participants", []))
        when = _dt.datetime.fromtimestamp(t.created_at, _dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        items.append(
            f"<details><summary><b>{html.escape(t.name)}</b>: {html.escape(fmt)}, rules "
            f"{html.escape(rules)}, {n} participants, {t.matches} matches stored "
            f"<span class='muted'>(started {when})</span></summary>"
            f"<pre>{html.escape(json.dumps(spec, indent=2))}</pre></details>"
        )
    return "<h2>Tournaments</h2>" + "".join(items)


def render_report(
    store: ResultStore,
    tournament: str | None = None,
    *,
    n_bootstrap: int = BOOTSTRAP,
    web_url: str | None = None,
    matches: int = 200,
) -> str:
    """The report as an HTML string."""
    records = load_records(store, tournament)
    rows = compute_leaderboard(records, n_bootstrap=n_bootstrap)
    infos = [t for t in store.tournaments() if tournament is None or t.name == tournament]
    title = f"Tournament {tournament}" if tournament else "Thousand Arena results"
    games = len(records)
    deals = sum(r.deals for r in records)
    timeouts = sum(sum(r.timeouts) for r in records)
    illegal = sum(sum(r.illegal) for r in records)
    generated = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{games} games, {deals} deals, {timeouts} timeouts, {illegal} illegal moves. "
        f"<span class='muted'>Generated {generated}.</span></p>",
        "<h2>Ratings</h2>",
        rating_svg(rows),
        _leader_table(rows) if rows else "<p class='muted'>no results yet</p>",
        f"<p class='muted'>{html.escape(unbounded_note(rows) or '')}</p>",
        "<p class='muted'>Bradley-Terry ratings on the Elo scale (mean 0) from pairwise "
        "finishing order; 95% intervals by bootstrap over duplicate sets. "
        f"{html.escape(luck_summary(records).line())}.</p>",
        _los_table(records, rows),
        _h2h_section(records, rows),
        _sprt_section(infos, records),
        _matches_section(records, web_url, matches),
        _tournaments_section(infos),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p)


def report_main(argv: Sequence[str] | None = None) -> int:
    """``arena report``: write the HTML report of stored results."""
    parser = argparse.ArgumentParser(
        prog="arena report", description="Write an HTML report (ratings plot, tables) of results."
    )
    add_db_option(parser)
    parser.add_argument("--tournament", "-t", help="one tournament (default: all)")
    parser.add_argument(
        "--out", "-o", default="report.html", help="output file (default report.html)"
    )
    parser.add_argument("--bootstrap", type=int, default=BOOTSTRAP, help="bootstrap replicates")
    parser.add_argument("--matches", type=int, default=200,
                        help="list this many of the latest matches (default 200)")
    parser.add_argument("--web-url", help="link each match to its replay on this arena web "
                        "(e.g. http://127.0.0.1:8000)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.matches < 0:
        parser.error("--matches must be 0 or more")
    try:
        with ResultStore(args.db, create=False) as store:
            text = render_report(store, args.tournament, n_bootstrap=args.bootstrap,
                                 web_url=args.web_url, matches=args.matches)
    except StoreError as exc:
        return store_failed("arena report", exc)
    out = Path(args.out)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"arena report: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"wrote {out}")
    return 0
