"""Tests from a mutation review of determinization (``sdk/sim.py``): each kills a mutant the
suite (tests/sdk/test_tracker_sim.py, tests/table/test_table.py, the author and impossible-view
reviews) let live.

The suite checks that a sample is *consistent* with the view (the engine gives the same view
back) and that it varies with the rng; it never checked that the sample is *uniform*, which
is what ``sample_hidden`` promises and what a bot author's Monte-Carlo estimates rest on. A
"cut the deck" instead of a shuffle, a textbook off-by-one Fisher-Yates (Sattolo's cycle) or
a naive swap-with-any shuffle, a stock left in card order, or trumps dealt first all pass
those checks. So here:

- a late position with 4 unseen cards: every one of the 12 placements (which 2 cards the
  opponent hides, in which order the 2 face-down stock cards come) is equally frequent;
- the deal's position (32 unseen cards): each card is in the opponent's hand with probability
  3/32, and is the next card (and the last face-down card) drawn with probability 1/32;
  opponent hands repeat no more than uniform draws do;
- at the classic table (2-4 players): my own hand is mine, known cards come first, a seat that
  is out gets nothing, each unseen card lands in a seat's hand in proportion to what it hides,
  and the next draw is uniform;
- the same rng state gives the same sample and leaves the rng in the same state;
  ``determinizations`` yields ``count`` independent samples.

Every sample is drawn from a seeded ``random.Random``: each statistic is one fixed number, so
the tests are deterministic; the bounds are p-values of 1e-6 (a correct sampler fails them
for one seed in a million).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from math import comb, sqrt

from scipy.stats import chisquare

from referee.rules import Card, ClassicGame, ClassicView, Game, View
from sdk import CardTracker, TableTracker, sample_hidden, sample_table_hidden
from sdk.sim import determinizations, sample_game

P_MIN = 1e-6


def uniform_p(counts: Counter[Hashable], cells: Iterable[Hashable]) -> float:
    """The chi-square p-value of ``counts`` against a uniform law over ``cells``."""
    observed = [counts[cell] for cell in cells]
    assert sum(observed) == sum(counts.values()), "a count fell outside the cells"
    return float(chisquare(observed).pvalue)


def within_binomial(count: int, trials: int, p: float) -> bool:
    """``count`` successes in ``trials`` is within 5.5 standard deviations of ``p``."""
    mean = trials * p
    return abs(count - mean) <= 5.5 * sqrt(mean * (1 - p))


def first_view(pick: Callable[[View], bool]) -> View:
    """The first view (seed, then move, then seat) of randomly played games that ``pick``s."""
    for seed in range(200):
        game = Game.new(seed=seed, dealer=seed % 2)
        rng = random.Random(seed)
        while not game.over:
            for seat in (0, 1):
                if pick(view := game.view(seat)):
                    return view
            game.play_random(rng)
    raise AssertionError("no such view")


def first_table_view(
    players: int, pick: Callable[[ClassicView, TableTracker], bool]
) -> ClassicView:
    """The first view of randomly played classic-table games that ``pick``s."""
    for seed in range(300):
        game = ClassicGame.new(seed=seed, dealer=seed % players, players=players)
        rng = random.Random(seed)
        while not game.over:
            for seat in range(players):
                view = game.view(seat)
                if pick(view, TableTracker.from_view(view)):
                    return view
            game.play(rng.choice(game.legal_actions()))
    raise AssertionError("no such table view")


# --- the two-player game --------------------------------------------------------------------


def test_every_placement_of_four_unseen_cards_is_equally_likely() -> None:
    def pick(view: View) -> bool:
        tracker = CardTracker.from_view(view)
        return len(tracker.unseen) == 4 and tracker.opponent_hidden_count == 2

    view = first_view(pick)
    assert view.face_up is not None and view.stock_count == 3  # 2 face down, then the trump
    unseen = sorted(CardTracker.from_view(view).unseen)
    known = len(view.opponent_known)
    rng = random.Random(2024)
    counts: Counter[Hashable] = Counter()
    for _ in range(12_000):
        opponent, stock = sample_hidden(view, rng)
        assert opponent[:known] == list(view.opponent_known)
        assert stock[-1] == view.face_up
        counts[frozenset(opponent[known:]), tuple(stock[:-1])] += 1
    cells = [
        (frozenset(unseen) - {a, b}, (a, b)) for a in unseen for b in unseen if a != b
    ]  # the opponent hides the two cards the stock does not
    assert len(cells) == 12
    assert uniform_p(counts, cells) > P_MIN, counts


def test_at_the_deal_each_unseen_card_is_as_likely_in_his_hand_and_as_the_next_draw() -> None:
    view = Game.new(seed=11, dealer=0).view(1)
    unseen = sorted(CardTracker.from_view(view).unseen)
    n, k = len(unseen), view.opponent_count
    assert (n, k, view.opponent_known) == (32, 3, ())  # 3 cards each, the trump face up
    rng = random.Random(7)
    trials = 6_000
    in_hand: Counter[Card] = Counter()
    next_draw: Counter[Hashable] = Counter()
    last_hidden: Counter[Hashable] = Counter()
    hands: set[frozenset[Card]] = set()
    for m in range(trials):
        opponent, stock = sample_hidden(view, rng)
        in_hand.update(opponent)
        next_draw[stock[0]] += 1
        last_hidden[stock[-2]] += 1  # the last face-down card, drawn just before the trump
        if m < 2_000:
            hands.add(frozenset(opponent))
    bad = [c for c in unseen if not within_binomial(in_hand[c], trials, k / n)]
    assert not bad, {str(c): in_hand[c] for c in unseen}
    assert uniform_p(next_draw, unseen) > P_MIN, next_draw
    assert uniform_p(last_hidden, unseen) > P_MIN, last_hidden
    # 2,000 uniform draws among C(32, 3) = 4,960 hands give about 1,646 distinct ones (a cut
    # deck gives at most 32).
    expected = comb(n, k) * (1 - (1 - 1 / comb(n, k)) ** 2_000)
    assert len(hands) >= 0.9 * expected


def test_the_same_rng_state_gives_the_same_sample_and_leaves_the_same_state() -> None:
    view = Game.new(seed=5, dealer=1).view(0)
    first, second = random.Random(99), random.Random(99)
    assert sample_hidden(view, first) == sample_hidden(view, second)
    assert first.getstate() == second.getstate()
    game = sample_game(view, first)
    again = sample_game(view, second)
    assert game.view(1) == again.view(1)  # the sampled opponent's hand and the same stock


def test_determinizations_yields_count_independent_samples_reproducibly() -> None:
    view = Game.new(seed=8, dealer=0).view(0)
    games = list(determinizations(view, random.Random(3), 8))
    assert len(games) == 8
    assert all(g.view(0) == view for g in games)
    hands = [g.view(1).hand for g in games]
    assert len(set(hands)) >= 7  # C(32, 3) = 4,960 hands: eight independent draws
    rng = random.Random(3)
    assert hands == [sample_game(view, rng).view(1).hand for _ in range(8)]
    assert list(determinizations(view, random.Random(3), 0)) == []


# --- the classic table ----------------------------------------------------------------------


def check_table_sample(view: ClassicView, hands: list[list[Card]], stock: list[Card]) -> None:
    """The documented shape of a table sample: one hand per seat, mine as it is, known cards
    first, hand sizes kept, nothing for a seat that is out, the stock ending with the trump,
    and every card of the deck exactly once."""
    assert len(hands) == view.players
    assert hands[view.seat] == list(view.hand)
    for seat in range(view.players):
        assert len(hands[seat]) == view.hand_sizes[seat]
        if view.out[seat]:
            assert hands[seat] == []
        if seat != view.seat:
            assert hands[seat][: len(view.known[seat])] == list(view.known[seat])
    assert len(stock) == view.stock_count
    if view.face_up is not None:
        assert stock[-1] == view.face_up
    everything = [*(c for hand in hands for c in hand), *stock, *view.led, *view.discard]
    assert sorted(everything) == list(Card.all())


def test_table_samples_keep_my_hand_known_cards_first_and_seats_that_are_out_empty() -> None:
    for players in (2, 3, 4):
        rng = random.Random(players)
        game = ClassicGame.new(seed=players, dealer=0, players=players)
        play = random.Random(100 + players)
        while not game.over:
            for seat in range(players):
                view = game.view(seat)
                check_table_sample(view, *sample_table_hidden(view, rng))
            game.play(play.choice(game.legal_actions()))


def test_a_seat_that_is_out_gets_nothing_and_the_others_share_the_unseen_cards_evenly() -> None:
    view = first_table_view(
        4,
        lambda v, t: any(v.out) and not v.out[v.seat] and sum(1 for h in t.hidden if h) >= 2,
    )
    tracker = TableTracker.from_view(view)
    hiders = [s for s in range(4) if tracker.hidden[s]]
    rng = random.Random(4)
    counts: Counter[Hashable] = Counter()
    for _ in range(4_000):
        hands, stock = sample_table_hidden(view, rng)
        check_table_sample(view, hands, stock)
        counts[tuple(frozenset(hands[s][len(view.known[s]) :]) for s in hiders)] += 1
    assert len(counts) > 1
    assert uniform_p(counts, list(counts)) > P_MIN, counts


def test_at_the_table_each_unseen_card_lands_in_proportion_to_what_a_seat_hides() -> None:
    def pick(view: ClassicView, tracker: TableTracker) -> bool:
        others = [s for s in range(view.players) if s != view.seat]
        return (
            tracker.stock_hidden_count >= 5
            and any(view.known[s] for s in others)
            and len({tracker.hidden[s] for s in others}) == len(others)  # they hide unequally
        )

    view = first_table_view(3, pick)
    tracker = TableTracker.from_view(view)
    unseen = sorted(tracker.unseen)
    others = [s for s in range(3) if s != view.seat]
    rng = random.Random(33)
    trials = 6_000
    held: dict[int, Counter[Card]] = {s: Counter() for s in others}
    next_draw: Counter[Hashable] = Counter()
    deals: set[tuple[frozenset[Card], ...]] = set()
    for n in range(trials):
        hands, stock = sample_table_hidden(view, rng)
        for s in others:
            held[s].update(hands[s][len(view.known[s]) :])
        next_draw[stock[0]] += 1
        if n < 1_000:
            deals.add(tuple(frozenset(hands[s]) for s in others))
    for s in others:
        p = tracker.hidden[s] / len(unseen)
        bad = [c for c in unseen if not within_binomial(held[s][c], trials, p)]
        assert not bad, (s, {str(c): held[s][c] for c in unseen})
    assert uniform_p(next_draw, unseen) > P_MIN, next_draw
    assert len(deals) >= 950  # a cut deck gives at most len(unseen) deals


def test_a_table_sample_is_reproducible_from_the_rng_state_and_varies_with_it() -> None:
    game = ClassicGame.new(seed=9, dealer=1, players=3)
    view = game.view(2)
    first, second = random.Random(12), random.Random(12)
    assert sample_table_hidden(view, first) == sample_table_hidden(view, second)
    assert first.getstate() == second.getstate()
    samples = {
        tuple(tuple(hand) for hand in sample_table_hidden(view, random.Random(n))[0])
        for n in range(20)
    }
    assert len(samples) == 20
