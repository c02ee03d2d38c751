"""Properties of the classic table checked inside real games (hypothesis drives seeds and
choices) for 2, 3 and 4 players."""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import combinations, islice, permutations

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import Card, ClassicAction, ClassicGame, Game

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
PLAYERS = st.sampled_from([2, 3, 4])
ALL_LEADS = [
    ClassicAction.lead(*combo)
    for rank in range(9)
    for size in range(1, 5)
    for combo in combinations([Card(rank, suit) for suit in range(4)], size)
]


def random_game(seed: int, players: int, steps: int | None = None) -> ClassicGame:
    rng = random.Random(seed)
    game = Game.new(seed=seed, dealer=seed % players, players=players, ruleset="classic")
    limit = rng.randrange(120) if steps is None else steps
    for _ in range(limit):
        if game.over:
            break
        game.play(rng.choice(game.legal_actions()))
    return game


def state(game: ClassicGame) -> tuple[object, ...]:
    """Everything about a game, hidden or not."""
    return (
        game.hands,
        game.led,
        game.discard,
        game.stock,
        game.out,
        tuple(game.known_cards(s) for s in range(game.players)),
        game.history,
        game.movers,
        game.to_move,
        game.leader,
        game.defender,
        game.over,
        game.loser,
        game.reason,
    )


def assert_cards_accounted(game: ClassicGame) -> None:
    everything = [*(c for h in game.hands for c in h), *game.led, *game.discard, *game.stock]
    assert sorted(everything) == sorted(Card.all())


@settings(max_examples=60, deadline=None)
@given(SEEDS, PLAYERS)
def test_all_36_cards_are_always_accounted_for_and_hands_hold_cards(seed: int, n: int) -> None:
    rng = random.Random(seed)
    game = Game.new(seed=seed, dealer=seed % n, players=n, ruleset="classic")
    while not game.over:
        assert_cards_accounted(game)
        # Between tricks every seat still playing holds cards; out seats hold none.
        if not game.led:
            assert all(bool(h) != out for h, out in zip(game.hands, game.out, strict=True))
            assert game.leader != game.defender
            assert not game.out[game.leader] and not game.out[game.defender]  # type: ignore[index]
        game.play(rng.choice(game.legal_actions()))
    assert_cards_accounted(game)
    assert game.stock == () or game.reason is not None


@settings(max_examples=40, deadline=None)
@given(SEEDS, PLAYERS)
def test_replay_of_deck_dealer_and_actions_reproduces_the_game(seed: int, n: int) -> None:
    game = random_game(seed, n)
    assert game.deck is not None
    texts = [str(a) for a in game.history]
    again = ClassicGame.replay(game.deck, game.dealer, texts, players=n)
    assert state(again) == state(game)
    assert all(again.view(s) == game.view(s) for s in range(n))
    via_dispatch = Game.from_deck(game.deck, game.dealer, players=n, ruleset="classic")
    for text in texts:
        via_dispatch.play(text)
    assert state(via_dispatch) == state(game)


@settings(max_examples=60, deadline=None)
@given(SEEDS, PLAYERS, st.integers(0, 3), st.randoms(use_true_random=False))
def test_view_depends_only_on_public_information_and_own_hand(
    seed: int, n: int, seat: int, shuffler: random.Random
) -> None:
    """Re-deal with every card hidden from ``seat`` permuted (the others' unseen cards and the
    stock below the face-up card); replaying the same actions must give ``seat`` exactly the
    same view, although the hidden state differs."""
    game = random_game(seed, n)
    seat %= n
    assert game.deck is not None
    hidden = [
        c for s in range(n) if s != seat for c in game.hands[s] if c not in game.known_cards(s)
    ]
    hidden += list(game.stock[:-1])
    permuted = hidden.copy()
    shuffler.shuffle(permuted)
    mapping = dict(zip(hidden, permuted, strict=True))
    other_deck = [mapping.get(c, c) for c in game.deck]
    other = ClassicGame.replay(other_deck, game.dealer, game.history, players=n)
    assert other.view(seat) == game.view(seat)
    # ...while the hidden state really is the permuted one.
    for s in range(n):
        assert set(other.hands[s]) == {mapping.get(c, c) for c in game.hands[s]}
    assert other.stock == tuple(mapping.get(c, c) for c in game.stock)


def cover_candidates(game: ClassicGame, rng: random.Random) -> Iterator[ClassicAction]:
    """Covers of the led cards (or of a made-up lead) with cards from the defender's hand and a
    few others, every assignment when there are few, else a large random sample."""
    led = list(game.led)
    if not led:
        rank = rng.randrange(9)
        led = rng.sample([Card(rank, s) for s in range(4)], rng.randint(1, 4))
    defender = game.defender if game.defender is not None else 0
    pool = [c for c in game.hands[defender] if c not in led]
    pool += rng.sample([c for c in Card.all() if c not in led and c not in pool], 4)
    every: Iterator[tuple[Card, ...]] = permutations(pool, len(led))
    if len(pool) ** len(led) > 20_000:
        every = (tuple(rng.sample(pool, len(led))) for _ in range(20_000))
    for covers in islice(every, 20_000):
        yield ClassicAction.cover(*zip(led, covers, strict=True))


@settings(max_examples=80, deadline=None)
@given(SEEDS, PLAYERS, st.randoms(use_true_random=False))
def test_legality_gate_agrees_with_the_generator_on_every_candidate_action(
    seed: int, n: int, rng: random.Random
) -> None:
    game = random_game(seed, n)
    legal = game.legal_actions()
    assert len(set(legal)) == len(legal)
    legal_set = set(legal)
    candidates = [*ALL_LEADS, ClassicAction.take(), *cover_candidates(game, rng)]
    for action in candidates:
        assert game.is_legal(action) == (action in legal_set), (str(action), repr(game))
    # Every generated action passes the gate (also the covers no candidate happened to hit).
    assert all(game.is_legal(a) for a in legal)
    assert {str(a) for a in legal} == {ClassicAction.parse(str(a)).text for a in legal}


@settings(max_examples=40, deadline=None)
@given(SEEDS, PLAYERS)
def test_from_view_with_the_true_hidden_cards_rebuilds_the_game(seed: int, n: int) -> None:
    game = random_game(seed, n)
    for seat in range(n):
        view = game.view(seat)
        rebuilt = ClassicGame.from_view(view, game.hands, game.stock)
        assert all(rebuilt.view(s) == game.view(s) for s in range(n))
        assert rebuilt.legal_actions() == game.legal_actions()


def test_copy_is_independent() -> None:
    game = random_game(11, 3, steps=20)
    clone = game.copy()
    rng = random.Random(1)
    while not clone.over:
        clone.play(rng.choice(clone.legal_actions()))
    assert len(game.history) == 20 and not game.over
    assert len(clone.history) > 20


def test_random_games_end_and_have_plausible_lengths() -> None:
    for n in (2, 3, 4):
        rng = random.Random(n)
        lengths = []
        for seed in range(100):
            game = Game.new(seed=seed, dealer=seed % n, players=n, ruleset="classic")
            while not game.over:
                game.play(rng.choice(game.legal_actions()))
            assert game.reason is not None and game.stock == ()
            assert sum(map(bool, game.hands)) <= 1
            lengths.append(len(game.history))
        mean = sum(lengths) / len(lengths)
        assert 30 < mean < 300, (n, mean)
