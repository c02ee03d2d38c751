"""Hypothesis properties of the BayesElo fit: symmetry, monotonicity, order independence."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboard.ratings import Game, Outcome, PairCounts, fit_bayeselo

Counts = dict[tuple[str, str], tuple[int, int, int]]
NAMES = ("ant", "bee", "cat", "dog", "eel")


@st.composite
def tournaments(draw: st.DrawFn) -> Counts:
    """Small round robins; every ordered pair has a win, a draw and a loss, so a fit exists."""
    n = draw(st.integers(2, 5))
    names = NAMES[:n]
    counts: Counts = {}
    for a in names:
        for b in names:
            if a != b:
                w, d, lo = (draw(st.integers(1, 6)) for _ in range(3))
                counts[(a, b)] = (w, d, lo)
    return counts


SETTINGS = settings(max_examples=40, deadline=None)


@SETTINGS
@given(tournaments(), st.randoms(use_true_random=False))
def test_renaming_bots_permutes_the_ratings(counts: Counts, rnd: random.Random) -> None:
    names = sorted({a for a, _ in counts})
    shuffled = names[:]
    rnd.shuffle(shuffled)
    rename = {old: "z" + new for old, new in zip(names, shuffled, strict=True)}
    renamed = {(rename[a], rename[b]): wdl for (a, b), wdl in counts.items()}
    fit = fit_bayeselo(PairCounts.from_mapping(counts))
    fit_renamed = fit_bayeselo(PairCounts.from_mapping(renamed))
    for old in names:
        assert abs(fit.rating(old) - fit_renamed.rating(rename[old])) < 1e-4
    assert abs(fit.advantage - fit_renamed.advantage) < 1e-4
    assert abs(fit.drawelo - fit_renamed.drawelo) < 1e-4


@SETTINGS
@given(tournaments())
def test_swapping_colours_negates_only_the_advantage(counts: Counts) -> None:
    # The same games with the seats swapped: (a first, b second, a won) becomes
    # (b first, a second, b lost).
    mirrored = {(b, a): (lo, d, w) for (a, b), (w, d, lo) in counts.items()}
    fit = fit_bayeselo(PairCounts.from_mapping(counts))
    mirror = fit_bayeselo(PairCounts.from_mapping(mirrored))
    np.testing.assert_allclose(mirror.ratings, fit.ratings, atol=1e-4)
    assert abs(mirror.advantage + fit.advantage) < 1e-4


@SETTINGS
@given(tournaments(), st.data())
def test_turning_a_loss_into_a_win_never_lowers_a_rating(
    counts: Counts, data: st.DataObject
) -> None:
    pair = data.draw(st.sampled_from(sorted(counts)))
    w, d, lo = counts[pair]
    player = pair[0]
    better = dict(counts)
    better[pair] = (w + 1, d, lo - 1)  # player (first mover) wins one he had lost
    before = fit_bayeselo(PairCounts.from_mapping(counts)).rating(player)
    after = fit_bayeselo(PairCounts.from_mapping(better)).rating(player)
    assert after > before - 1e-9


@SETTINGS
@given(tournaments(), st.data())
def test_an_extra_win_never_lowers_a_rating(counts: Counts, data: st.DataObject) -> None:
    a, b = data.draw(st.sampled_from(sorted(counts)))
    more = dict(counts)
    w, d, lo = more[(b, a)]
    more[(b, a)] = (w, d, lo + 1)  # a, moving second, beats b once more
    before = fit_bayeselo(PairCounts.from_mapping(counts)).rating(a)
    after = fit_bayeselo(PairCounts.from_mapping(more)).rating(a)
    assert after > before - 1e-9


@SETTINGS
@given(tournaments(), st.randoms(use_true_random=False))
def test_game_order_never_matters(counts: Counts, rnd: random.Random) -> None:
    outcomes = (Outcome.FIRST_WINS, Outcome.DRAW, Outcome.SECOND_WINS)
    games = [
        Game(a, b, outcome)
        for (a, b), wdl in counts.items()
        for outcome, k in zip(outcomes, wdl, strict=True)
        for _ in range(k)
    ]
    shuffled = games[:]
    rnd.shuffle(shuffled)
    one = fit_bayeselo(PairCounts.from_games(games))
    two = fit_bayeselo(PairCounts.from_games(shuffled))
    assert np.array_equal(one.ratings, two.ratings)
    assert np.array_equal(one.intervals, two.intervals)
