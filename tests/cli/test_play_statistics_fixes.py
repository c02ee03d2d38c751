"""The two fixes of ``kryt play``'s statistics the review (test_play_statistics_review.py)
asked for, and the claims docs/ratings.md makes about the alternatives it turned down:

* games' figures only rise with a better result: checked for every count up to 30 games,
  and the docs' figures of the Wald interval and of a draw-aware Wilson interval (which do
  not) recomputed here from their definitions;
* with no complete deal pair the note under the figures says they say nothing, as they do.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import pytest

from kryt.commands.play import unpaired_note
from leaderboard.ratings.match_stats import match_stats

ROOT = Path(__file__).resolve().parents[2]
Z = NormalDist().inv_cdf(0.975)


def _elo(score: float) -> float:
    if score <= 0:
        return -math.inf
    if score >= 1:
        return math.inf
    return 400.0 * math.log10(score / (1.0 - score))


def _interval(low: float, high: float) -> str:
    def fmt(elo: float) -> str:
        text = f"{elo:+.1f}"
        return "+0.0" if text == "-0.0" else text

    return f"[{fmt(_elo(low))}, {fmt(_elo(high))}]"


def _wald(wins: int, draws: int, losses: int) -> str:
    """``x ± z sqrt(v / n)``, ``v`` the observed variance of a game's score."""
    n = wins + draws + losses
    x = (wins + draws / 2) / n
    v = (wins * (1 - x) ** 2 + draws * (0.5 - x) ** 2 + losses * x * x) / n
    return _interval(x - Z * math.sqrt(v / n), x + Z * math.sqrt(v / n))


def _draw_aware_wilson(wins: int, draws: int, losses: int) -> tuple[float, float]:
    """The roots of ``(x - s)² = z² (s (1 - s) - d / 4) / n`` (``d`` the draw ratio),
    by the quadratic formula (a double root when the discriminant rounds below 0)."""
    n = wins + draws + losses
    x, d = (wins + draws / 2) / n, draws / n
    a, b, c = n + Z * Z, 2 * n * x + Z * Z, n * x * x + Z * Z * d / 4
    root = math.sqrt(max(b * b - 4 * a * c, 0.0))
    return (b - root) / (2 * a), (b + root) / (2 * a)


def test_the_rejected_intervals_are_as_the_docs_say() -> None:
    """docs/ratings.md: Wald gave +2 =1 -0 ``[+46.6, +inf]``, 3 wins ``[+inf, +inf]``, and
    +60 =20 -20 ``[+86.2, +218.3]``; the draw-aware Wilson interval falls from +0 =1 -1's
    ``[-296.8, +127.3]`` to +1 =0 -1's ``[-392.5, +392.5]`` and gives 30 draws
    ``[+0.0, +0.0]``, where the module's Wilson interval says what the docs quote."""
    doc = " ".join((ROOT / "docs" / "ratings.md").read_text(encoding="utf-8").split())
    assert f"2 wins and a draw `{_wald(2, 1, 0)}`" in doc
    assert f"Wald's 3 wins: `{_wald(3, 0, 0)}`" in doc
    assert f"Wald `{_wald(60, 20, 20)}`" in doc
    mine = match_stats(60, 20, 20)
    assert f"Wilson `[{mine.elo_low:+.1f}, {mine.elo_high:+.1f}]`" in doc
    assert f"3 wins, `[{match_stats(3, 0, 0).elo_low:+.1f}, +inf]`" in doc
    before, after = _draw_aware_wilson(0, 1, 1), _draw_aware_wilson(1, 0, 1)
    assert after[0] < before[0]  # not monotone: a win in place of a draw lowers the low end
    assert f"+0 =1 −1's `{_interval(*before)}`" in doc
    assert f"+1 =0 −1's `{_interval(*after)}`" in doc
    assert f"30 draws would get `{_interval(*_draw_aware_wilson(0, 30, 0))}`" in doc


def test_games_figures_only_rise_with_a_better_result_up_to_30_games() -> None:
    """Every count of at most 30 games: a win in place of a draw or a loss never lowers the
    LOS nor either bound (the review's property test samples larger counts)."""
    for n in range(1, 31):
        for wins in range(n + 1):
            for draws in range(n - wins + 1):
                losses = n - wins - draws
                before = match_stats(wins, draws, losses)
                better = []
                if draws:
                    better.append(match_stats(wins + 1, draws - 1, losses))
                if losses:
                    better.append(match_stats(wins + 1, draws, losses - 1))
                for after in better:
                    assert after.los >= before.los, (wins, draws, losses)
                    assert after.elo_low >= before.elo_low, (wins, draws, losses)
                    assert after.elo_high >= before.elo_high, (wins, draws, losses)


@pytest.mark.parametrize(
    ("pentanomial", "games", "said"),
    [
        (
            [0, 0, 0, 0, 0],
            1,
            "no deal pair is complete, so Elo, interval and LOS say nothing:"
            " 1 game without its pair left out",
        ),
        (
            [0, 0, 1, 0, 0],
            3,
            "Elo, interval and LOS from the 1 complete deal pair: 1 game without its pair left out",
        ),
        (
            [0, 1, 2, 3, 3],
            20,
            "Elo, interval and LOS from the 9 complete deal pairs:"
            " 2 games without their pair left out",
        ),
    ],
)
def test_the_left_out_note_says_what_the_figures_are_from(
    pentanomial: list[int], games: int, said: str
) -> None:
    """The note under the figures names the pairs they come from; with none, it says the
    figures say nothing, and they do (no fallback to the games' trinomial)."""
    assert unpaired_note(pentanomial, games) == said
    stats = match_stats(games, 0, 0, pentanomial=pentanomial)
    assert stats.model == "pentanomial"
    if sum(pentanomial) == 0:
        assert (stats.elo, stats.elo_low, stats.elo_high, stats.los) == (
            0.0,
            -math.inf,
            math.inf,
            0.5,
        )


def test_the_docs_quote_the_note_as_printed() -> None:
    """docs/ratings.md quotes the note for 9 complete pairs and for none, one game left out."""
    doc = " ".join((ROOT / "docs" / "ratings.md").read_text(encoding="utf-8").split())
    for pentanomial, games in (([0, 1, 2, 3, 3], 19), ([0, 0, 0, 0, 0], 1)):
        note = unpaired_note(pentanomial, games)
        assert note is not None and f"`{note}`" in doc
