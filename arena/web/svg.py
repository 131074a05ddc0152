"""Server-side SVG charts: no chart library in the browser, no build step, prints well."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

PALETTE = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7b83",
           "#57606a", "#fb8500", "#6639ba")


def colours_for(names: Sequence[str]) -> dict[str, str]:
    """One colour per name, for every chart of a page: a player keeps its colour from the
    interval chart to the rating history (charts that colour by position would not)."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _nice_step(span: float) -> float:
    raw = span / 5 if span > 0 else 1.0
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= m * mag:
            return m * mag
    return 10.0 * mag


def _fmt(v: float) -> str:
    if abs(v) >= 10 or v == int(v):
        return f"{v:.0f}"
    return f"{v:.3g}"


def line_chart(
    x: Sequence[float],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    x_label: str,
    y_label: str,
    hlines: Sequence[tuple[float, str, str]] = (),
    width: int = 760,
    height: int = 300,
    label: str = "chart",
    colours: Mapping[str, str] | None = None,
) -> str:
    """Lines over a shared x axis, a legend, and horizontal reference lines (bounds);
    ``colours`` gives a series its colour by name (else by position)."""
    values = [v for _, ys in series for v in ys if v is not None and math.isfinite(v)]
    values += [h for h, _, _ in hlines]
    if not x or not values:
        return "<p class='muted'>not enough results for a chart yet</p>"
    left, right, top, bottom = 56, 150, 14, 40
    pw, ph = width - left - right, height - top - bottom
    x0, x1 = min(x), max(x)
    if x1 == x0:
        x1 = x0 + 1
    y0, y1 = min(values), max(values)
    pad = max((y1 - y0) * 0.08, 1.0 if y1 - y0 >= 1 else max(abs(y1) * 0.1, 1e-3))
    non_negative = y0 >= 0
    y0, y1 = y0 - pad, y1 + pad
    if non_negative:  # latencies, counts: no axis below zero
        y0 = max(0.0, y0)

    def sx(v: float) -> float:
        return left + (v - x0) / (x1 - x0) * pw

    def sy(v: float) -> float:
        return top + (1 - (v - y0) / (y1 - y0)) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-label="{html.escape(label)}">'
    ]
    step = _nice_step(y1 - y0)
    t = math.ceil(y0 / step) * step
    while t <= y1:
        y = sy(t)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" '
                   'class="grid"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" '
                   f'class="tick">{_fmt(t)}</text>')
        t += step
    xstep = max(1.0, _nice_step(x1 - x0))
    t = math.ceil(x0 / xstep) * xstep
    while t <= x1 + 1e-9:
        xx = sx(t)
        out.append(f'<text x="{xx:.1f}" y="{top + ph + 16}" text-anchor="middle" '
                   f'class="tick">{_fmt(t)}</text>')
        t += xstep
    out.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" '
               'class="axis"/>')
    for value, text, colour in hlines:
        y = sy(value)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" '
                   f'stroke="{colour}" stroke-dasharray="5 4" stroke-width="1.5"/>')
        out.append(f'<text x="{left + pw + 6}" y="{y + 4:.1f}" fill="{colour}" '
                   f'class="tick">{html.escape(text)}</text>')
    for i, (name, ys) in enumerate(series):
        colour = (colours or {}).get(name) or PALETTE[i % len(PALETTE)]
        pts = [f"{sx(xv):.1f},{sy(yv):.1f}" for xv, yv in zip(x, ys, strict=False)
               if yv is not None and math.isfinite(yv)]
        if not pts:
            continue
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{colour}" '
                   'stroke-width="2" stroke-linejoin="round"/>')
        last = pts[-1].split(",")
        out.append(f'<circle cx="{last[0]}" cy="{last[1]}" r="3" fill="{colour}"/>')
        if not hlines:
            ly = top + 14 + i * 18
            out.append(f'<rect x="{left + pw + 14}" y="{ly - 9}" width="12" height="3" '
                       f'fill="{colour}"/>')
            out.append(f'<text x="{left + pw + 32}" y="{ly - 4}" class="legend">'
                       f"{html.escape(name)}</text>")
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" '
               f'class="label">{html.escape(x_label)}</text>')
    out.append(f'<text x="14" y="{top + ph / 2:.1f}" text-anchor="middle" class="label" '
               f'transform="rotate(-90 14 {top + ph / 2:.1f})">{html.escape(y_label)}</text>')
    out.append("</svg>")
    return "".join(out)


def interval_chart(
    rows: Sequence[tuple[str, float, float, float]],
    *,
    width: int = 760,
    colours: Mapping[str, str] | None = None,
) -> str:
    """Ratings as dots with 95% intervals as bars, best first (``colours`` by name)."""
    if not rows:
        return "<p class='muted'>no ratings yet</p>"
    row_h, top, bottom, left, right = 28, 10, 34, 150, 60
    height = top + bottom + row_h * len(rows)
    vals = [v for _, r, lo, hi in rows for v in (r, lo, hi) if math.isfinite(v)] + [0.0]
    lo, hi = min(vals), max(vals)
    pad = max(10.0, (hi - lo) * 0.06)
    lo, hi = lo - pad, hi + pad
    pw = width - left - right

    def sx(v: float) -> float:
        return left + (v - lo) / (hi - lo) * pw

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} '
           f'{height}" width="100%" role="img" aria-label="ratings with 95% intervals">']
    step = _nice_step(hi - lo)
    t = math.ceil(lo / step) * step
    axis_y = top + row_h * len(rows)
    while t <= hi:
        x = sx(t)
        cls = "zero" if abs(t) < 1e-9 else "grid"
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{axis_y}" class="{cls}"/>')
        out.append(f'<text x="{x:.1f}" y="{axis_y + 16}" text-anchor="middle" '
                   f'class="tick">{_fmt(t)}</text>')
        t += step
    for i, (name, r, clo, chi) in enumerate(rows):
        cy = top + row_h * i + row_h / 2
        colour = (colours or {}).get(name) or PALETTE[i % len(PALETTE)]
        out.append(f'<text x="{left - 10}" y="{cy + 4:.1f}" text-anchor="end" '
                   f'class="legend">{html.escape(name)}</text>')
        if math.isfinite(clo) and math.isfinite(chi):
            out.append(f'<line x1="{sx(clo):.1f}" y1="{cy:.1f}" x2="{sx(chi):.1f}" '
                       f'y2="{cy:.1f}" stroke="{colour}" stroke-width="4" '
                       'stroke-linecap="round" opacity="0.45"/>')
        if math.isfinite(r):
            out.append(f'<circle cx="{sx(r):.1f}" cy="{cy:.1f}" r="6" fill="{colour}"/>')
            out.append(f'<text x="{width - right + 8}" y="{cy + 4:.1f}" '
                       f'class="legend">{r:+.0f}</text>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" '
               'class="label">rating (Elo scale, mean 0) with 95% interval</text></svg>')
    return "".join(out)
