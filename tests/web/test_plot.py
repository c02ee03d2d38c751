"""Server-side SVG plots."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from leaderboard.web.plot import HEIGHT, Point, line_plot


def test_plot_is_valid_svg_with_one_vertex_per_point_inside_the_canvas() -> None:
    points = [Point(i, 1500 + 10 * (-1) ** i * i, label=f"<game {i}>") for i in range(8)]
    svg = line_plot(points, title="Elo & co", x_label="games", y_label="Elo", reference=1500)
    root = ET.fromstring(svg)  # well-formed, so labels were escaped
    ns = "{http://www.w3.org/2000/svg}"
    line = root.find(f"{ns}polyline")
    assert line is not None
    vertices = [tuple(map(float, v.split(","))) for v in line.attrib["points"].split()]
    assert len(vertices) == 8
    assert all(0 <= y <= HEIGHT for _, y in vertices)
    xs = [x for x, _ in vertices]
    assert xs == sorted(xs)
    # Higher ratings are drawn higher up (smaller y).
    best = max(range(8), key=lambda i: points[i].y)
    assert vertices[best][1] == min(y for _, y in vertices)
    assert root.find(f"{ns}title") is not None and "Elo &amp; co" in svg


def test_error_bars_and_flat_series() -> None:
    svg = line_plot(
        [Point(1, 1500, 1400, 1600), Point(2, 1500, 1450, 1550)],
        title="t",
        x_label="x",
        y_label="y",
    )
    assert len(re.findall(r'class="errorbar"', svg)) == 2
    single = line_plot([Point(0, 7)], title="t", x_label="x", y_label="y")
    ET.fromstring(single)


def test_no_points_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one point"):
        line_plot([], title="empty", x_label="x", y_label="y")


def test_counted_axes_get_whole_number_ticks() -> None:
    svg = line_plot([Point(i, 1500 + i) for i in range(14)], title="t", x_label="x", y_label="y")
    x_ticks = re.findall(r'text-anchor="middle">([^<]+)</text>', svg)[:-1]  # last: the label
    assert x_ticks and all(t.isdigit() for t in x_ticks)
    assert len(x_ticks) >= 3
