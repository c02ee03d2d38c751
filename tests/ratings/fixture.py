"""The BayesElo 0057 reference fixture, read from the copy in ``tests/ratings/data``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parent / "data"
CSV = DATA / "fixture_games.csv"
EXPECTED = DATA / "EXPECTED.md"


@dataclass(frozen=True)
class Expected:
    """BayesElo's published figures for the fixture."""

    ratings: dict[str, float]  # prior 2
    intervals: dict[str, int]  # prior 2, rounded as bayeselo prints them
    los_next: dict[str, float]  # prior 2, bayeselo's per-mille truncated, as a fraction
    advantage: float
    drawelo: float
    scale: float
    ratings_prior0: dict[str, float]
    advantage_prior0: float
    drawelo_prior0: float


def expected() -> Expected:
    """Parse EXPECTED.md so the tests use BayesElo's own numbers, not a transcription."""
    text = EXPECTED.read_text(encoding="utf-8")
    ratings: dict[str, float] = {}
    intervals: dict[str, int] = {}
    los: dict[str, float] = {}
    row = re.compile(r"^\| (\w+) \| (-?[\d.]+) \| (\d+) \| (\d*) ?\|$")
    for line in text.splitlines():
        m = row.match(line)
        if m:
            ratings[m[1]] = float(m[2])
            intervals[m[1]] = int(m[3])
            if m[4]:
                los[m[1]] = int(m[4]) / 1000
    fitted = re.search(r"advantage ([\d.]+) and drawelo ([\d.]+)", text)
    scale = re.search(r"scale ([\d.]+)", text)
    tail = text[text.index("With `prior 0`") :]
    prior0 = {m[1]: float(m[2]) for m in re.finditer(r"(\w+) (-?\d+\.\d+)", tail)}
    adv0 = prior0.pop("advantage")
    draw0 = prior0.pop("drawelo")
    assert fitted and scale and len(ratings) == 6 and len(prior0) == 6, "EXPECTED.md changed"
    return Expected(
        ratings=ratings,
        intervals=intervals,
        los_next=los,
        advantage=float(fitted[1]),
        drawelo=float(fitted[2]),
        scale=float(scale[1]),
        ratings_prior0=prior0,
        advantage_prior0=adv0,
        drawelo_prior0=draw0,
    )
