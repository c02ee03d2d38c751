"""Every refusal of the rules core is a typed ``RulesError`` with a bounded quote of the input.

Arguments of the wrong type (``None`` for the hidden cards, one text for a list of actions) are
``...TypeError``\\ s that are also ``TypeError`` (what they raised before) and subclasses of
the error of the same input; a failed replay says which action failed; and no error message
grows with its input (a 5 MB reply gave a 5 MB message, ``'lead ' + 'A' * 10**6`` twice that).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from referee.rules import (
    ClassicAction,
    ClassicActionKind,
    ClassicGame,
    Game,
    IllegalActionError,
    InvalidActionError,
    InvalidCardError,
    InvalidDeckError,
    RulesError,
    shuffled_deck,
)
from referee.rules.actions import Action, ActionKind
from referee.rules.cards import Card, Suit
from referee.rules.errors import (
    QUOTE_LIMIT,
    ActionTypeError,
    CardTypeError,
    DeckTypeError,
    InvalidParameterError,
    quote,
)
from tests.rules.helpers import played

# A quoted input is at most QUOTE_LIMIT characters plus its quotes, '... (N characters)' and
# escapes; a message quotes at most two inputs next to fixed text.
MESSAGE_LIMIT = 600


# ------------------------------------------------------------------ wrong types


def default_position() -> tuple[Game, int, list[str], list[str]]:
    game = played(Game.new(seed=3, dealer=0), 7)
    seat = game.to_move
    assert seat is not None
    return game, seat, [c.text for c in game.hands[1 - seat]], [c.text for c in game.stock]


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (("view", None, "stock"), DeckTypeError, "opponent_hand must be a collection of cards"),
        (("view", "opp", None), DeckTypeError, "stock must be a collection of cards, got None"),
        ((None, "opp", "stock"), DeckTypeError, "needs a View of the default game, got None"),
        (("view", "7C JD KD", "stock"), DeckTypeError, "got '7C JD KD'"),
        (("view", 5, "stock"), DeckTypeError, "got 5"),
        (("view", ["7C", None], "stock"), CardTypeError, "not a card: None"),
    ],
)
def test_from_view_refuses_arguments_of_the_wrong_type(
    args: tuple[object, object, object], error: type[RulesError], message: str
) -> None:
    game, seat, opp, stock = default_position()
    named = {"view": game.view(seat), "opp": opp, "stock": stock}
    call = [named.get(a, a) if isinstance(a, str) else a for a in args]
    with pytest.raises(error, match=message) as info:
        Game.from_view(*call)  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError) and isinstance(info.value, RulesError)
    assert Game.from_view(game.view(seat), opp, stock).hands == game.hands  # the true guess


def test_classic_from_view_refuses_arguments_of_the_wrong_type() -> None:
    game = ClassicGame.new(seed=4, dealer=0, players=3)
    for _ in range(5):
        game.play(game.legal_actions()[0])
    seat = game.to_move
    assert seat is not None
    view = game.view(seat)
    hands = [[c.text for c in h] for h in game.hands]
    stock = [c.text for c in game.stock]
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: ClassicGame.from_view(view, None, stock), "hands must be a sequence"),  # type: ignore[arg-type]
        (lambda: ClassicGame.from_view(view, "7C 8C", stock), "got '7C 8C'"),
        (lambda: ClassicGame.from_view(view, [*hands[:2], None], stock), r"hands\[2\] must be"),  # type: ignore[list-item]
        (lambda: ClassicGame.from_view(view, hands, None), "stock must be a collection"),  # type: ignore[arg-type]
        (lambda: ClassicGame.from_view(None, hands, stock), "needs a ClassicView"),  # type: ignore[arg-type]
        (lambda: ClassicGame.from_view(Game.new(seed=1).view(0), hands, stock), "ClassicView"),  # type: ignore[arg-type]
    ]
    for call, message in cases:
        with pytest.raises(DeckTypeError, match=message):
            call()
    assert ClassicGame.from_view(view, hands, stock).hands == game.hands


@pytest.mark.parametrize("actions", ["lead 7H", "", b"take", None, 7, Action.parse("take")])
def test_replay_refuses_what_is_not_a_collection_of_actions(actions: object) -> None:
    deck = shuffled_deck(5)
    with pytest.raises(ActionTypeError, match="actions must be a collection of actions") as info:
        Game.replay(deck, 1, actions)  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError) and isinstance(info.value, InvalidActionError)
    with pytest.raises(ActionTypeError, match="actions must be a collection of actions"):
        ClassicGame.replay(deck, 1, actions, players=3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("actions", "error", "message"),
    [
        (["lead 7H", "cover TD AC", "lead 9S"], IllegalActionError, r"^action 2 of the replay"),
        (["lead 7H", None], ActionTypeError, r"^action 1 of the replay .*not an action: None"),
        ([""], InvalidActionError, r"^action 0 of the replay .*malformed action ''"),
        (["lead 7H"] * 3, IllegalActionError, r"^action 1 of the replay .*'lead 7H' for seat 1"),
    ],
)
def test_a_failed_replay_says_which_action_failed(
    actions: list[str], error: type[RulesError], message: str
) -> None:
    with pytest.raises(error, match=message):
        Game.replay(shuffled_deck(5), 1, actions)


def test_a_failed_classic_replay_says_which_action_failed() -> None:
    game = ClassicGame.new(seed=2, dealer=0, players=3)
    good = [game.play(game.legal_actions()[0]).text for _ in range(4)]
    with pytest.raises(IllegalActionError, match=r"^action 4 of the replay .*'take' for seat"):
        ClassicGame.replay(shuffled_deck(2), 0, [*good, "take"], players=3)
    replayed = ClassicGame.replay(shuffled_deck(2), 0, iter(good), players=3)
    assert replayed.history == game.history


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Game.new(seed=1, dealer=2), "dealer must be seat 0 or 1, got 2"),
        (lambda: Game.new(seed=1, turn_limit=0), "turn_limit must be a positive integer"),
        (lambda: Game.new(seed=1, players=3), "the default ruleset seats 2 players"),
        (lambda: Game.new(seed=1, ruleset="poker"), "unknown ruleset 'poker'"),
        (lambda: Game.new(seed=1).view(2), "seat must be seat 0 or 1"),
        (lambda: Game.new(seed=1, players=5, ruleset="classic"), "seats 2, 3 or 4 players"),
        (lambda: ClassicGame.new(seed=1, players=5), "seats 2, 3 or 4 players"),
        (lambda: ClassicGame.new(seed=1, players=3, dealer=3), "dealer must be a seat 0..2"),
        (lambda: ClassicGame.new(seed=1, turn_limit=True), "turn_limit"),
        (lambda: ClassicGame.new(seed=1, players=3).view(3), "seat must be 0..2"),
    ],
)
def test_bad_parameters_are_invalid_parameter_errors_still_caught_as_deck_errors(
    call: Callable[[], object], message: str
) -> None:
    with pytest.raises(InvalidParameterError, match=message) as info:
        call()
    assert isinstance(info.value, InvalidDeckError)


def test_a_bad_deck_is_still_an_invalid_deck_error_but_not_a_parameter_error() -> None:
    with pytest.raises(InvalidDeckError) as info:
        Game.from_deck(["7C"] * 36, 0)
    assert not isinstance(info.value, InvalidParameterError)
    with pytest.raises(DeckTypeError):
        Game.from_deck(None, 0)  # type: ignore[call-overload]
    with pytest.raises(CardTypeError):
        Game.from_deck(list(range(36)), 0)  # type: ignore[arg-type]


def test_non_text_cards_suits_and_actions_are_type_errors_of_their_kind() -> None:
    cases: list[tuple[Callable[[], object], type[RulesError]]] = [
        (lambda: Card.parse(None), CardTypeError),  # type: ignore[arg-type]
        (lambda: Card("T", "H"), CardTypeError),  # type: ignore[arg-type]
        (lambda: Suit.parse(None), CardTypeError),  # type: ignore[arg-type]
        (lambda: Action.parse(None), ActionTypeError),  # type: ignore[arg-type]
        (lambda: Action(None, lead="7H"), ActionTypeError),  # type: ignore[arg-type]
        (lambda: ClassicAction.parse(Action.parse("take")), ActionTypeError),  # type: ignore[arg-type]
        (lambda: ClassicAction(ClassicActionKind.LEAD, None), ActionTypeError),  # type: ignore[arg-type]
        (lambda: ClassicAction("lead", ()), ActionTypeError),  # type: ignore[arg-type]
    ]
    for call, error in cases:
        with pytest.raises(error) as info:
            call()
        assert isinstance(info.value, TypeError) and isinstance(info.value, RulesError)
    assert issubclass(CardTypeError, InvalidCardError)


# ------------------------------------------------------------------ bounded quotes


def test_quote_bounds_text_and_other_values() -> None:
    assert quote("lead 7H") == "'lead 7H'"
    assert quote("x" * QUOTE_LIMIT) == repr("x" * QUOTE_LIMIT)
    assert quote("x" * 5_000_000) == repr("x" * QUOTE_LIMIT) + "... (5000000 characters)"
    assert quote(None) == "None"
    assert quote(list(range(10**6))).endswith("... (1000000 items)")
    assert len(quote(list(range(10**6)))) < 2 * QUOTE_LIMIT
    assert len(quote(b"y" * 10**6)) < 2 * QUOTE_LIMIT

    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    class Text(str):
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert quote(Hostile()) == "<Hostile object>"
    assert quote(Text("take")) == "'take'"


HUGE_INPUTS = [
    "x" * 5_000_000,
    "lead " + "A" * 10**6,
    "lead 7S" + " " * 10**6,  # well-formed, illegal: seat 0 holds 7H AH AS
    "cover AH " + "7" * 10**6,
    "take " * 200_000,
    "swap " + "\u2661" * 10**6,
]


@pytest.mark.parametrize("text", HUGE_INPUTS, ids=lambda t: f"{t[:12]!r}x{len(t)}")
def test_errors_about_huge_text_quote_a_bounded_head(text: str) -> None:
    game = Game.new(seed=5, dealer=1)
    for call in (game.play, Action.parse, game.is_legal):
        try:
            call(text)
        except RulesError as exc:
            message = str(exc)
            assert len(message) < MESSAGE_LIMIT, message[:200]
            assert repr(text[:40])[:-1] in message  # the head of the input is quoted
            assert f"({len(text)} characters)" in message
        else:
            assert call is not game.play  # parsing may succeed, playing may not
    assert not game.history


@pytest.mark.parametrize(
    "text",
    ["lead " + "8C " * 10**6, "cover " + "8C:9C " * 10**6, "lead 8c:" + "x" * 10**6, "x" * 10**6],
    ids=["lead-many", "cover-many", "long-card", "long-word"],
)
def test_classic_errors_about_huge_text_are_bounded_and_quick(text: str) -> None:
    game = ClassicGame.new(seed=1, players=3)
    start = time.process_time()
    with pytest.raises(InvalidActionError) as info:
        game.play(text)
    # A split of the text, not a million card parses (that took seconds before).
    assert time.process_time() - start < 2.0
    assert len(str(info.value)) < MESSAGE_LIMIT
    assert f"({len(text)} characters)" in str(info.value)


def test_errors_about_huge_non_text_inputs_are_bounded() -> None:
    huge = list(range(10**6))
    game = Game.new(seed=1)
    classic = ClassicGame.new(seed=1, players=3)
    for call in (
        lambda: game.play(huge),  # type: ignore[arg-type]
        lambda: Game.from_deck(["6C"] * 10**5, 0),
        lambda: Game.new(seed=1, dealer=huge),  # type: ignore[call-overload]
        lambda: Game.new(seed=1, ruleset="x" * 10**6),
        lambda: Game.new(seed=1, turn_limit=10**100000 * -1),
        lambda: ClassicGame.from_deck(["6C"] * 10**5, 0, players=3),
        lambda: ClassicAction(ClassicActionKind.LEAD, (Card.parse("7C"),) * 10**5),
        lambda: ClassicAction(ClassicActionKind.LEAD, ("x" * 10**6,)),  # type: ignore[arg-type]
        lambda: classic.play(huge),  # type: ignore[arg-type]
        lambda: Action(ActionKind.LEAD, lead="7" * 10**6),
        lambda: Card.parse("Q" * 10**6),
        lambda: Suit.parse("S" * 10**6),
        lambda: Game.replay(shuffled_deck(1), 0, ["take", "x" * 10**6]),
    ):
        with pytest.raises(RulesError) as info:
            call()
        assert len(str(info.value)) < MESSAGE_LIMIT, str(info.value)[:200]


def test_short_inputs_are_still_quoted_whole() -> None:
    # What the other tests and the referee's records rely on: repr of the input, as before.
    text = "lead 7H\x00" + "y" * 30
    with pytest.raises(InvalidActionError) as info:
        Action.parse(text)
    assert repr(text) in str(info.value)
    game = Game.new(seed=5, dealer=1)
    with pytest.raises(IllegalActionError, match=r"^illegal action 'lead  AC' for seat 0"):
        game.play("lead  AC")


@pytest.mark.parametrize("seed", [[1], {"a": 1}, 1.5, True, False, object()])
def test_a_seed_of_another_type_is_a_typed_error_quoting_it(seed: object) -> None:
    """``random`` refused a list with its own ``TypeError`` and silently dealt ``1.5`` and
    ``True`` (as 1): every seed but an integer, text, bytes or None is refused, the same
    way by ``shuffled_deck``, ``Game.new`` and ``ClassicGame.new``."""
    from referee.rules.errors import InvalidParameterError

    deals: list[Callable[[], object]] = [
        lambda: shuffled_deck(seed),  # type: ignore[arg-type]
        lambda: Game.new(seed),  # type: ignore[call-overload]
        lambda: ClassicGame.new(seed, players=3),  # type: ignore[arg-type]
    ]
    for deal in deals:
        with pytest.raises(InvalidParameterError, match="seed must be") as caught:
            deal()
        assert isinstance(caught.value, RulesError)
        assert repr(seed)[:20] in str(caught.value)


@pytest.mark.parametrize("seed", [0, 2**70, -5, "cup", b"\x00", None])
def test_the_seed_types_the_docs_name_still_deal(seed: int | str | bytes | None) -> None:
    assert sorted(c.text for c in shuffled_deck(seed)) == sorted(c.text for c in shuffled_deck(0))


@pytest.mark.parametrize("pairs", [[("7C",)], ["7C:9C"], [5], [("7C", "9C", "TC")], [None]])
def test_classic_cover_refuses_what_is_not_a_pair_with_a_typed_error(pairs: list[object]) -> None:
    """An outside audit of the classic table: a plain ValueError or TypeError that did not
    quote the input (every other constructor and the parser raise typed errors)."""
    with pytest.raises(ActionTypeError, match="pairs, got") as refused:
        ClassicAction.cover(*pairs)  # type: ignore[arg-type]
    assert isinstance(refused.value, RulesError)
