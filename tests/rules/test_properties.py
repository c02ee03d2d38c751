"""Properties checked inside real games (hypothesis drives seeds and choices)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import Action, ActionKind, Card, Game
from referee.rules.actions import encode

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
ALL_ACTIONS = [
    Action.from_code(encode(kind, a, b, swap))
    for swap in (False, True)
    for kind, a, b in (
        [(ActionKind.TAKE, 0, 0)]
        + [(ActionKind.LEAD, a, 0) for a in range(36)]
        + [(ActionKind.COVER_AND_GO_OUT, a, 0) for a in range(36)]
        + [(ActionKind.COVER_AND_LEAD, a, b) for a in range(36) for b in range(36) if a != b]
    )
]


def random_game(seed: int, steps: int | None = None) -> tuple[Game, random.Random]:
    rng = random.Random(seed)
    game = Game.new(seed=seed, dealer=seed % 2)
    limit = rng.randrange(250) if steps is None else steps
    for _ in range(limit):
        if game.over:
            break
        game.play(rng.choice(game.legal_actions()))
    return game, rng


def assert_cards_accounted(game: Game) -> None:
    everything = [*game.hands[0], *game.hands[1], *game.pile, *game.stock]
    assert sorted(everything) == sorted(Card.all())


@settings(max_examples=60, deadline=None)
@given(SEEDS)
def test_all_36_cards_are_always_accounted_for(seed: int) -> None:
    rng = random.Random(seed)
    game = Game.new(seed=seed, dealer=seed % 2)
    while not game.over:
        assert_cards_accounted(game)
        game.play(rng.choice(game.legal_actions()))
    assert_cards_accounted(game)


@settings(max_examples=40, deadline=None)
@given(SEEDS)
def test_replay_of_deck_dealer_and_actions_reproduces_the_state(seed: int) -> None:
    game, _ = random_game(seed)
    assert game.deck is not None
    again = Game.replay(game.deck, game.dealer, [str(a) for a in game.history])
    assert (again.hands, again.pile, again.stock, again.to_move) == (
        game.hands,
        game.pile,
        game.stock,
        game.to_move,
    )
    assert (again.over, again.outcome, again.reason) == (game.over, game.outcome, game.reason)
    assert again.view(0) == game.view(0) and again.view(1) == game.view(1)


@settings(max_examples=60, deadline=None)
@given(SEEDS, st.integers(0, 1), st.randoms(use_true_random=False))
def test_view_depends_only_on_public_information_and_own_hand(
    seed: int, seat: int, shuffler: random.Random
) -> None:
    """Re-deal with the cards hidden from ``seat`` permuted; replaying the same public actions
    must give ``seat`` exactly the same view, although the hidden state differs."""
    game, _ = random_game(seed)
    assert game.deck is not None
    opponent = 1 - seat
    known = set(game.known_cards(opponent))
    hidden = [c for c in game.hands[opponent] if c not in known]
    hidden += [c for c in game.stock if c != game.face_up]
    permuted = hidden.copy()
    shuffler.shuffle(permuted)
    mapping = dict(zip(hidden, permuted, strict=True))
    other_deck = [mapping.get(c, c) for c in game.deck]
    other = Game.replay(other_deck, game.dealer, game.history)
    assert other.view(seat) == game.view(seat)
    # ...while the hidden state really is the permuted one.
    assert set(other.hands[opponent]) == {mapping.get(c, c) for c in game.hands[opponent]}
    assert other.stock == tuple(mapping.get(c, c) for c in game.stock)


@settings(max_examples=80, deadline=None)
@given(SEEDS)
def test_legality_gate_agrees_with_the_generator_on_every_possible_action(seed: int) -> None:
    game, _ = random_game(seed)
    legal = set(game.legal_actions())
    assert len(legal) == len(game.legal_actions()) == game.legal_action_count()
    for action in ALL_ACTIONS:
        assert game.is_legal(action) == (action in legal), (str(action), repr(game))


class _FixedRandom(random.Random):
    """Makes ``play_random`` pick the ``i``-th of ``n`` legal actions."""

    def __init__(self, i: int, n: int) -> None:
        super().__init__(0)
        self.value = (i + 0.5) / n

    def random(self) -> float:
        return self.value


@settings(max_examples=40, deadline=None)
@given(SEEDS, st.integers(0, 10_000))
def test_play_random_picks_from_the_same_ordered_legal_list(seed: int, pick: int) -> None:
    game, _ = random_game(seed)
    if game.over:
        return
    legal = game.legal_actions()
    i = pick % len(legal)
    assert game.copy().play_random(_FixedRandom(i, len(legal))) == legal[i]


@settings(max_examples=40, deadline=None)
@given(SEEDS)
def test_from_view_with_the_true_hidden_cards_rebuilds_the_game(seed: int) -> None:
    game, _ = random_game(seed)
    for seat in (0, 1):
        view = game.view(seat)
        rebuilt = Game.from_view(view, game.hands[1 - seat], game.stock)
        assert rebuilt.view(0) == game.view(0) and rebuilt.view(1) == game.view(1)
        assert rebuilt.legal_actions() == game.legal_actions()


def test_copy_is_independent() -> None:
    game, rng = random_game(11, steps=20)
    clone = game.copy()
    while not clone.over:
        clone.play_random(rng)
    assert len(game.history) == 20 and not game.over


def test_random_games_end_and_average_length_is_plausible() -> None:
    rng = random.Random(0)
    lengths = []
    for seed in range(300):
        game = Game.new(seed=seed, dealer=seed % 2)
        while not game.over:
            game.play_random(rng)
        assert game.reason is not None
        lengths.append(len(game.history))
    mean = sum(lengths) / len(lengths)
    assert 100 < mean < 300, mean
