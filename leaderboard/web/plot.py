"""Small line plots as inline SVG, drawn on the server (no JavaScript, works in the export)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 640
HEIGHT = 240
_MARGIN_LEFT = 56
_MARGIN_RIGHT = 16
_MARGIN_TOP = 16
_MARGIN_BOTTOM = 36


@dataclass(frozen=True, slots=True)
class Point:
    """One value, optionally with an interval ``low``..``high`` drawn as an error bar."""

    x: float
    y: float
    low: float | None = None
    high: float | None = None
    label: str = ""
    """Tooltip text."""


def _ticks(low: float, high: float, count: int = 5, *, integer: bool = False) -> list[float]:
    """About ``count`` round tick values covering ``low``..``high`` (whole numbers only
    when ``integer``: games and snapshots are counted, never fractional)."""
    span = high - low
    raw = span / max(1, count)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    if integer:
        step = max(1.0, float(math.ceil(step)))
    first = math.ceil(low / step) * step
    ticks = []
    value = first
    while value <= high + 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _fmt(value: float) -> str:
    return f"{value:.0f}" if abs(value - round(value)) < 1e-9 else f"{value:g}"


def line_plot(
    points: Sequence[Point],
    *,
    title: str,
    x_label: str,
    y_label: str,
    reference: float | None = None,
) -> str:
    """An SVG line plot of ``points`` (sorted by x), with error bars where given and an
    optional dashed horizontal ``reference`` line. Returns markup safe to embed in HTML."""
    if not points:
        raise ValueError(f"line_plot({title!r}) needs at least one point")
    points = sorted(points, key=lambda p: p.x)
    ys = [p.y for p in points]
    ys += [p.low for p in points if p.low is not None]
    ys += [p.high for p in points if p.high is not None]
    if reference is not None:
        ys.append(reference)
    y_min, y_max = min(ys), max(ys)
    if y_max - y_min < 1e-9:  # a flat line still needs a visible axis range
        y_min, y_max = y_min - 10, y_max + 10
    pad = (y_max - y_min) * 0.05
    y_min, y_max = y_min - pad, y_max + pad
    integer_x = all(float(p.x).is_integer() for p in points)
    x_first, x_last = points[0].x, points[-1].x
    if x_last - x_first < 1e-9:
        x_first, x_last = x_first - 1, x_last + 1
    # A little room on both sides, so end markers and error bars are not cut by the frame.
    x_pad = (x_last - x_first) * 0.03
    x_min, x_max = x_first - x_pad, x_last + x_pad
    plot_w = WIDTH - _MARGIN_LEFT - _MARGIN_RIGHT
    plot_h = HEIGHT - _MARGIN_TOP - _MARGIN_BOTTOM

    def sx(x: float) -> float:
        return _MARGIN_LEFT + (x - x_min) / (x_max - x_min) * plot_w

    def sy(y: float) -> float:
        return _MARGIN_TOP + (y_max - y) / (y_max - y_min) * plot_h

    parts = [
        f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for tick in _ticks(y_min, y_max):
        y = sy(tick)
        parts.append(
            f'<line class="grid" x1="{_MARGIN_LEFT}" x2="{WIDTH - _MARGIN_RIGHT}" '
            f'y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{_MARGIN_LEFT - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{_fmt(tick)}</text>'
        )
    for tick in _ticks(x_first, x_last, 6, integer=integer_x):
        x = sx(tick)
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{HEIGHT - _MARGIN_BOTTOM + 16}" '
            f'text-anchor="middle">{_fmt(tick)}</text>'
        )
    if reference is not None:
        y = sy(reference)
        parts.append(
            f'<line class="reference" x1="{_MARGIN_LEFT}" x2="{WIDTH - _MARGIN_RIGHT}" '
            f'y1="{y:.1f}" y2="{y:.1f}"/>'
        )
    for p in points:
        if p.low is not None and p.high is not None:
            x = sx(p.x)
            parts.append(
                f'<line class="errorbar" x1="{x:.1f}" x2="{x:.1f}" '
                f'y1="{sy(p.low):.1f}" y2="{sy(p.high):.1f}"/>'
            )
    path = " ".join(f"{sx(p.x):.1f},{sy(p.y):.1f}" for p in points)
    parts.append(f'<polyline class="line" points="{path}"/>')
    if len(points) <= 60:  # markers only where they stay readable
        for p in points:
            tip = f"<title>{escape(p.label)}</title>" if p.label else ""
            parts.append(
                f'<circle class="marker" cx="{sx(p.x):.1f}" cy="{sy(p.y):.1f}" r="3">{tip}</circle>'
            )
    parts.append(
        f'<text class="axis-label" x="{_MARGIN_LEFT + plot_w / 2:.1f}" y="{HEIGHT - 4}" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text class="axis-label" x="12" y="{_MARGIN_TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {_MARGIN_TOP + plot_h / 2:.1f})">{escape(y_label)}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)
