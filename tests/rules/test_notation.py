"""The parsers accept exactly the notation docs/rules.md ("Notation") describes.

A plain regular expression restates the documented notation; random texts mixing keywords, card
spellings, every whitespace character and lookalikes must parse exactly when it matches, and
always to the canonical action, which is what a game records.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import (
    Action,
    Card,
    ClassicAction,
    ClassicGame,
    Game,
    InvalidActionError,
    InvalidCardError,
    Suit,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules.md"

# docs/rules.md, Notation: "U+0009–U+000D, U+001C–U+001F, U+0020, U+0085, U+00A0, U+1680,
# U+2000–U+200A, U+2028, U+2029, U+202F, U+205F and U+3000".
WHITESPACE = "".join(
    map(
        chr,
        [
            *range(0x09, 0x0E),
            *range(0x1C, 0x20),
            0x20,
            0x85,
            0xA0,
            0x1680,
            *range(0x2000, 0x200B),
            0x2028,
            0x2029,
            0x202F,
            0x205F,
            0x3000,
        ],
    )
)
NOT_WHITESPACE = "\u200b\ufeff\u180e\u2060"
LOOKALIKES = "\u212a\u017f\u0131\u00df\uff4c\uff28\u041d\ufe0f\u2665\ufe0f"
"""Kelvin sign, long s, dotless i, sharp s, fullwidth l and H, Cyrillic EN, variation selector."""

_WS = f"[{re.escape(WHITESPACE)}]"
_CARD = "(?:[6-9tTjJqQkKaA]|10)[cCdDhHsS♣♦♥♠♧♢♡♤]"


def _word(word: str) -> str:
    """``word`` in any ASCII letter case."""
    return "".join(f"[{c.lower()}{c.upper()}]" for c in word)


DEFAULT_NOTATION = re.compile(
    rf"{_WS}*(?:{_word('swap')}{_WS}+)?"
    rf"(?:{_word('take')}|{_word('lead')}{_WS}+(?P<lead>{_CARD})"
    rf"|{_word('cover')}{_WS}+(?P<cover>{_CARD})(?:{_WS}+(?P<next>{_CARD}))?){_WS}*"
)
CLASSIC_NOTATION = re.compile(
    rf"{_WS}*(?:{_word('take')}|{_word('lead')}(?:{_WS}+{_CARD})+"
    rf"|{_word('cover')}(?:{_WS}+{_CARD}:{_CARD})+){_WS}*"
)


def test_the_documented_whitespace_is_what_str_split_splits_on() -> None:
    splits = {c for c in map(chr, range(sys.maxunicode + 1)) if len(f"a{c}b".split()) == 2}
    assert splits == set(WHITESPACE)
    assert not splits & set(NOT_WHITESPACE)
    text = DOCS.read_text(encoding="utf-8")
    for listed in ("U+0009–U+000D", "U+001C–U+001F", "U+2000–U+200A", "U+202F", "U+3000"):
        assert listed in text


@pytest.mark.parametrize("space", list(WHITESPACE), ids=lambda c: f"U+{ord(c):04X}")
def test_every_whitespace_character_separates_and_surrounds_words(space: str) -> None:
    assert Action.parse(f"{space}swap{space}cover{space * 2}9H{space}6C{space}").text == (
        "swap cover 9H 6C"
    )
    assert ClassicAction.parse(f"{space}lead{space}7S{space}7c{space}").text == "lead 7C 7S"
    assert Card.parse(f"{space}10♡{space}").text == "TH"


@pytest.mark.parametrize("char", list(NOT_WHITESPACE + LOOKALIKES), ids=lambda c: f"U+{ord(c):04X}")
def test_zero_width_characters_and_lookalikes_are_malformed(char: str) -> None:
    for text in (f"lead{char}7H", f"lead 7H{char}", f"{char}take", f"ta{char}ke"):
        with pytest.raises(InvalidActionError):
            Action.parse(text)
        with pytest.raises(InvalidActionError):
            ClassicAction.parse(text)


@pytest.mark.parametrize(
    "text", ["ta\u212ae", "lead \u212aH", "lead 7\u017f", "cover 9H 6\u017f", "lead \uff17H"]
)
def test_unicode_case_mapping_is_not_applied(text: str) -> None:
    # These were accepted before: str.lower() maps the Kelvin sign to 'k', str.upper() the long
    # s to 'S'; the documented notation is ASCII letters in either case.
    with pytest.raises(InvalidActionError):
        Action.parse(text)
    with pytest.raises(InvalidActionError):
        ClassicAction.parse(text)
    with pytest.raises(InvalidCardError):
        Card.parse("\u212aH")
    with pytest.raises(InvalidCardError):
        Suit.parse("\u017fpades")
    assert Suit.parse(" spades ") is Suit.SPADES and Suit.parse("♤") is Suit.SPADES


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        (f"{r}{s}", f"{'T' if r.upper() in ('T', '10') else r.upper()}{c}")
        for r in ("6", "t", "T", "10", "q", "A")
        for s, c in zip("cD♥♠♧♢♡♤", "CDHSCDHS", strict=True)
    ],
)
def test_every_card_spelling_is_the_canonical_card(spelling: str, canonical: str) -> None:
    assert Card.parse(spelling) is Card.parse(canonical)


WORDS = st.sampled_from(
    [
        "lead", "LEAD", "Lead", "cover", "coVer", "take", "TAKE", "swap", "Swap",
        "7H", "7h", "10♡", "t♥", "TS", "as", "6♣", "9d", "K♢", "9H", "6C", "7C:9C", "7s:6H",
        "7", "H", "1", "0", "x", ":", "10", "♥",
    ]
)  # fmt: skip
CHARS = st.sampled_from([*WHITESPACE, *NOT_WHITESPACE, *LOOKALIKES, "", "", ""])


RANKS = st.sampled_from(["6", "7", "9", "t", "T", "10", "j", "Q", "k", "A", "\u212a", "1"])
SUITS = st.sampled_from([*"cCdDhHsS♣♦♥♠♧♢♡♤", "\u017f", "\uff28", "♥\ufe0f"])
CARDS = st.builds(str.__add__, RANKS, SUITS)
KEYWORD_CASES = st.sampled_from([str.lower, str.upper, str.title, str.capitalize])


@st.composite
def shaped(draw: st.DrawFn) -> list[str]:
    """The words of an action of the default game, in random spellings (and some lookalikes)."""
    swap = ["swap"] if draw(st.booleans()) else []
    verb = draw(st.sampled_from(["take", "lead", "cover", "cover"]))
    n = {"take": 0, "lead": 1, "cover": draw(st.integers(1, 2))}[verb]
    cards = draw(st.lists(CARDS, min_size=n, max_size=n))
    return [draw(KEYWORD_CASES)(w) for w in (*swap, verb)] + cards


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Keywords and card spellings joined (or not) by whitespace and other characters."""
    words = draw(st.one_of(shaped(), st.lists(WORDS, max_size=5)))
    parts = [draw(CHARS)]
    for word in words:
        parts += [word, "".join(draw(st.lists(CHARS, min_size=1, max_size=2)))]
    return "".join(parts)


@settings(max_examples=1500, deadline=None)
@given(texts())
def test_the_parser_accepts_exactly_the_documented_notation(text: str) -> None:
    match = DEFAULT_NOTATION.fullmatch(text)
    legal_shape = match is not None and not (
        match["cover"] and match["next"] and Card.parse(match["cover"]) is Card.parse(match["next"])
    )
    try:
        action = Action.parse(text)
    except InvalidActionError:
        assert not legal_shape, text
    else:
        assert legal_shape, text
        assert Action.parse(action.text) is action
        assert action.text == canonical(text)


def canonical(text: str) -> str:
    """The canonical text of a text matching the documented notation, spelled out plainly."""
    suits = dict(zip("♣♦♥♠♧♢♡♤", "CDHSCDHS", strict=True))
    words = []
    for word in text.split():
        if word.lower() in ("swap", "take", "lead", "cover"):
            words.append(word.lower())
        else:
            rank = "T" if word[:-1] == "10" else word[:-1].upper()
            words.append(rank + suits.get(word[-1], word[-1].upper()))
    return " ".join(words)


@settings(max_examples=1000, deadline=None)
@given(texts())
def test_the_classic_parser_accepts_only_the_documented_notation(text: str) -> None:
    try:
        action = ClassicAction.parse(text)
    except InvalidActionError:
        pass  # the shape (one rank, distinct cards) is checked beyond the notation
    else:
        assert CLASSIC_NOTATION.fullmatch(text), text
        assert ClassicAction.parse(action.text) == action


def test_a_game_records_the_canonical_text_whatever_was_played() -> None:
    game = Game.new(seed=5, dealer=1)  # seat 0 holds 7H AH AS, trump D
    assert game.play("\u3000LEAD\t7\u2661\n").text == "lead 7H"
    assert game.play("Cover\u00a010d  ac ").text == "cover TD AC"
    assert [a.text for a in game.history] == ["lead 7H", "cover TD AC"]
    assert [a.text for a in game.view(0).history] == ["lead 7H", "cover TD AC"]
    assert Game.replay(game.deck or (), 1, ["lead 7h\r\n", "COVER 10♢ A♧"]).history == game.history

    classic = ClassicGame.new(seed=1234, dealer=2, players=3)
    lead = classic.legal_actions()[-1]
    noisy = "\tLEAD  " + "\u2003".join(c.text.lower() for c in reversed(lead.led)) + "\n"
    assert classic.play(noisy) == lead
    assert classic.history[-1].text == lead.text and classic.view(0).history[-1].text == lead.text
