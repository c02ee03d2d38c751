"""Deal books: a fixed list of decks to play instead of decks drawn from a seed.

The counterpart of a chess opening book. A book is a plain-text file, one deck per line: 36
card codes (rank ``6 7 8 9 T J Q K A``, ``10`` for ``T`` accepted, then suit ``C D H S``,
any case) separated by spaces or commas, top of the deck first, as in docs/rules.md's deck
order. ``#`` starts a comment that runs to the end of the line; blank lines are skipped; a
leading UTF-8 byte order mark is ignored.
The decks are used in order, each played twice with the hands swapped (the duplicate format),
round the book again when a run has more deals than the book has decks.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from referee.files import read_regular_file
from referee.rules import Card, InvalidCardError
from referee.rules.errors import quote

__all__ = ["MAX_BOOK_DECKS", "Book", "BookError", "format_book", "load_book", "parse_book"]

DECK_SIZE: Final = 36

MAX_BOOK_DECKS: Final = 10_000
"""Most decks a book may hold: a book is copied into the tournament's stored configuration."""

MAX_BOOK_BYTES: Final = 4 * 1024 * 1024
"""Largest book file read (bytes); more than enough for :data:`MAX_BOOK_DECKS` decks."""

_SEPARATORS = re.compile(r"[\s,]+")
_LINE_BREAKS = re.compile(r"\r\n|\r|\n")

Book = tuple[tuple[str, ...], ...]
"""A book's decks, each as 36 canonical card texts, top first."""


class BookError(ValueError):
    """A deal book cannot be used; the message names the file, line and token at fault."""


def parse_book(text: str, source: str = "book") -> Book:
    """The decks of a book's ``text`` (``source`` names it in errors), each checked: 36
    cards, every one a card, none twice. Raises :class:`BookError`."""
    decks: list[tuple[str, ...]] = []
    text = text.removeprefix("\ufeff")  # a byte order mark, as some editors write
    # Only these end a line, as editors and grep -n count them (str.splitlines also breaks
    # at form feeds, U+2028...: a comment would end early and errors name the wrong line).
    for number, line in enumerate(_LINE_BREAKS.split(text), start=1):
        content = line.partition("#")[0]
        tokens = [t for t in _SEPARATORS.split(content) if t]
        if not tokens:
            continue
        decks.append(_deck(tokens, f"{source} line {number}"))
        if len(decks) > MAX_BOOK_DECKS:
            raise BookError(f"{source}: more than {MAX_BOOK_DECKS} decks (line {number})")
    if not decks:
        raise BookError(f"{source}: no decks (one deck of 36 cards per line; # starts a comment)")
    return tuple(decks)


def _deck(tokens: list[str], where: str) -> tuple[str, ...]:
    seen: dict[Card, int] = {}
    for position, token in enumerate(tokens, start=1):
        try:
            card = Card.parse(token)
        except InvalidCardError:
            raise BookError(
                f"{where}, card {position}: {quote(token)} is not a card (rank 6 7 8 9 T J Q K A"
                " or 10, then suit C D H S)"
            ) from None
        if card in seen:
            raise BookError(
                f"{where}, card {position}: {quote(token)} is card {seen[card]} again"
                " (a deck holds each card once)"
            )
        seen[card] = position
    if len(tokens) != DECK_SIZE:
        missing = sorted((c for c in Card.all() if c not in seen), key=lambda c: c.index)
        hint = f"; missing: {' '.join(str(c) for c in missing)}" if missing else ""
        raise BookError(f"{where}: a deck has {DECK_SIZE} cards, got {len(tokens)}{hint}")
    return tuple(str(card) for card in seen)


def load_book(path: Path) -> Book:
    """The decks of the book file at ``path``; raises :class:`BookError` (unreadable, too
    large, not UTF-8, or a bad line)."""
    try:
        data = read_regular_file(path, limit=MAX_BOOK_BYTES + 1)
    except OSError as exc:
        raise BookError(f"cannot read the deal book {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_BOOK_BYTES:
        raise BookError(f"deal book {path} is larger than {MAX_BOOK_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BookError(f"deal book {path} is not UTF-8 text: {exc}") from None
    return parse_book(text, str(path))


def format_book(decks: Book) -> str:
    """The text of a book holding ``decks`` (readable by :func:`parse_book`)."""
    return "".join(" ".join(deck) + "\n" for deck in decks)
