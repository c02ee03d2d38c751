"""Card and action notation: parsing, canonical text, typed errors quoting the input."""

from __future__ import annotations

import pytest

from referee.rules import (
    Action,
    ActionKind,
    Card,
    InvalidActionError,
    InvalidCardError,
    Rank,
    RulesError,
    Suit,
)


@pytest.mark.parametrize("text", ["TH", "10H", "th", "10♥", " tH ", "T♡", "10h"])
def test_card_parse_accepts_every_spelling_of_ten_of_hearts(text: str) -> None:
    card = Card.parse(text)
    assert str(card) == "TH"
    assert card.rank is Rank.TEN and card.suit is Suit.HEARTS
    assert card is Card.parse("TH")


def test_all_cards_round_trip_through_text_and_index() -> None:
    assert len(Card.all()) == 36
    assert len({str(c) for c in Card.all()}) == 36
    for card in Card.all():
        assert Card.parse(str(card)) is card
        assert Card.parse(card.symbol) is card
        assert Card.from_index(card.index) is card
        assert Card(card.rank, card.suit) is card


@pytest.mark.parametrize("text", ["", "H", "1H", "5H", "TX", "TTH", "11H", "AHH", "joker"])
def test_card_parse_rejects_non_cards_quoting_them(text: str) -> None:
    with pytest.raises(InvalidCardError) as info:
        Card.parse(text)
    assert repr(text) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_covering_relation() -> None:
    hearts = Suit.HEARTS
    c = Card.parse
    assert c("9D").covers(c("8D"), hearts)  # higher, same suit
    assert not c("7D").covers(c("8D"), hearts)  # lower, same suit
    assert not c("AS").covers(c("8D"), hearts)  # other non-trump suit
    assert c("6H").covers(c("AD"), hearts)  # any trump covers a non-trump
    assert c("7H").covers(c("6H"), hearts)  # higher trump covers trump
    assert not c("AD").covers(c("6H"), hearts)  # a non-trump never covers a trump
    assert not c("6H").covers(c("7H"), hearts)


@pytest.mark.parametrize(
    ("text", "kind", "canonical"),
    [
        ("lead 7S", ActionKind.LEAD, "lead 7S"),
        ("cover 9H 6C", ActionKind.COVER_AND_LEAD, "cover 9H 6C"),
        ("cover 9H", ActionKind.COVER_AND_GO_OUT, "cover 9H"),
        ("take", ActionKind.TAKE, "take"),
        ("swap cover AH 6C", ActionKind.COVER_AND_LEAD, "swap cover AH 6C"),
        ("  SWAP   Lead 10♠ ", ActionKind.LEAD, "swap lead TS"),
        ("swap take", ActionKind.TAKE, "swap take"),
    ],
)
def test_action_parse_and_canonical_text(text: str, kind: ActionKind, canonical: str) -> None:
    action = Action.parse(text)
    assert action.kind is kind
    assert str(action) == canonical
    assert Action.parse(canonical) is action


def test_action_fields() -> None:
    action = Action.parse("swap cover AH 6C")
    assert action.swap and action.cover == Card.parse("AH") and action.lead == Card.parse("6C")
    lead = Action.parse("lead 7S")
    assert lead.cover is None and lead.lead == Card.parse("7S") and not lead.swap
    assert Action(ActionKind.COVER_AND_LEAD, cover="9H", lead="6C") is Action.parse("cover 9H 6C")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "swap",
        "take 7S",
        "lead",
        "lead 7S 8S",
        "cover",
        "cover 9H 6C 7C",
        "cover 9H 9H",
        "cover XX 6C",
        "play 7S",
        "swap swap take",
        "leadd 7S",
    ],
)
def test_malformed_actions_raise_invalid_action_error_quoting_input(text: str) -> None:
    with pytest.raises(InvalidActionError) as info:
        Action.parse(text)
    assert repr(text) in str(info.value)
    assert isinstance(info.value, RulesError)


def test_non_text_inputs_are_rejected_cleanly() -> None:
    with pytest.raises(InvalidActionError):
        Action.parse(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidCardError):
        Card.parse(None)  # type: ignore[arg-type]
