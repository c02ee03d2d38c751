"""Tests from a mutation review of deal books (``referee/book.py``): each kills a mutant that
the suite (tests/referee/test_book.py, the docs audit, the config reviews) let live, or pins
a promise of the module docstring and docs/games-format.md#deal-books.

A book is untrusted input (``kryt play --book``, ``book = "..."`` in a tournament file), so
the checks are about what a user sees:

- the limits are the documented ones, at their boundaries: at most 10,000 decks and 4 MiB
  (written here as literals, not read back from the module), and an endless file (a device)
  is refused after reading just over 4 MiB, not read to its end;
- a comment may itself hold ``#``; tabs separate cards and CRLF ends lines like spaces and
  newlines;
- every error names the file (``load_book`` passes its path), the line, and the token,
  escaped: a token with a terminal escape sequence must not reach the terminal raw;
- "the line" is a line as editors and ``grep -n`` count them (Python's ``str.splitlines``
  also breaks at form feeds, U+2028 and other separators, so a comment holding one "ended"
  early and line numbers drifted: fixed after this review);
- an error quotes a bad token bounded, as the rules' own ``quote`` does (a 4 MiB file
  without a separator gave a 4 MiB error line: fixed after this review).
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from referee.book import BookError, load_book, parse_book
from referee.rules import Card

FOUR_MIB = 4 * 1024 * 1024
"""The documented size limit, written out: the module's constant is what is under test."""


def deck(seed: int) -> list[str]:
    """The 36 canonical card texts in a seeded random order."""
    cards = [str(c) for c in Card.all()]
    random.Random(seed).shuffle(cards)
    return cards


# --- the limits, at their boundaries ---------------------------------------------------------


def test_ten_thousand_decks_are_read_and_one_more_is_refused_naming_its_line() -> None:
    line = " ".join(deck(1))
    header = "# a big book\n\n"  # two lines before the first deck: line = deck + 2
    decks = parse_book(header + (line + "\n") * 10_000, "big.txt")
    assert len(decks) == 10_000
    with pytest.raises(BookError) as caught:
        parse_book(header + (line + "\n") * 10_001, "big.txt")
    assert str(caught.value) == "big.txt: more than 10000 decks (line 10003)"


def test_a_file_of_exactly_four_mib_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    head = (" ".join(deck(2)) + "\n").encode()
    padding = b"#" * (FOUR_MIB - len(head) - 1) + b"\n"
    exact = tmp_path / "exact.txt"
    exact.write_bytes(head + padding)
    assert exact.stat().st_size == FOUR_MIB
    assert load_book(exact) == (tuple(deck(2)),)
    over = tmp_path / "over.txt"
    over.write_bytes(head + b"#" + padding)
    with pytest.raises(BookError) as caught:
        load_book(over)
    assert str(caught.value) == f"deal book {over} is larger than {FOUR_MIB} bytes"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_file_is_refused_without_reading_it_to_its_end(tmp_path: Path) -> None:
    """``/dev/zero`` never ends: it is refused as a device, and a huge regular file (sparse,
    64 GiB) is read only just past the limit. Run in a child with a bounded address space,
    so that a reader without a limit fails fast there instead of eating this machine's
    memory."""
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as out:
        out.truncate(64 << 30)
    child = textwrap.dedent(
        f"""
        import resource
        from pathlib import Path
        from referee.book import BookError, load_book
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        for path in ("/dev/zero", {str(huge)!r}):
            try:
                load_book(Path(path))
            except BookError as exc:
                print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "cannot read the deal book /dev/zero: it is a character device, not a regular file",
        f"deal book {huge} is larger than {FOUR_MIB} bytes",
    ]


# --- the format -----------------------------------------------------------------------------


def test_a_comment_may_hold_a_hash_and_tabs_and_crlf_separate_like_spaces() -> None:
    first, second = deck(3), deck(4)
    text = (
        "# # header: two decks # from the club\r\n"
        f"{' '.join(first)}  # deck 1 # (seed 3)\r\n"
        f"{chr(9).join(second)}\t#\tdeck 2, tab-separated\r\n"
    )
    assert parse_book(text, "b") == (tuple(first), tuple(second))


# --- errors name the file, the line and the token -------------------------------------------


def test_load_book_names_the_file_the_line_and_the_card(tmp_path: Path) -> None:
    path = tmp_path / "my-book.txt"
    good = deck(5)
    path.write_text(f"# two decks\n{' '.join(good)}\n{' '.join([*good[:20], 'ZZ'])}\n")
    with pytest.raises(BookError) as caught:
        load_book(path)
    assert str(caught.value).startswith(f"{path} line 3, card 21: 'ZZ' is not a card")


def test_an_unreadable_or_undecodable_file_is_named_with_where_it_fails(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(BookError) as caught:
        load_book(missing)
    assert str(caught.value).startswith(f"cannot read the deal book {missing}: ")
    latin = tmp_path / "latin1.txt"
    latin.write_bytes(b"# caf\xe9\n" + " ".join(deck(6)).encode() + b"\n")
    with pytest.raises(BookError) as caught:
        load_book(latin)
    message = str(caught.value)
    assert message.startswith(f"deal book {latin} is not UTF-8 text: ")
    assert "position 5" in message  # where the bad byte is (the é of line 1)


def test_a_token_is_quoted_escaped_so_no_control_character_reaches_the_terminal() -> None:
    token = "\x1b[2J\x1b[31mAS"  # clear the screen, then red
    with pytest.raises(BookError) as caught:
        parse_book(" ".join([*deck(7)[:3], token]), "b")
    message = str(caught.value)
    assert message.startswith(r"b line 1, card 4: '\x1b[2J\x1b[31mAS' is not a card")
    assert "\x1b" not in message


def test_a_comment_runs_to_the_newline_even_past_a_unicode_line_separator() -> None:
    text = f"# decks from the club\u2028(pasted from a web page)\n{' '.join(deck(8))}\n"
    assert parse_book(text, "b") == (tuple(deck(8)),)


def test_the_line_an_error_names_is_the_newline_counted_line() -> None:
    text = f"# page 1\x0c\n{' '.join(deck(9))}\n{' '.join(deck(9)[:35])}\n"
    with pytest.raises(BookError) as caught:
        parse_book(text, "b")
    assert str(caught.value).startswith("b line 3: a deck has 36 cards, got 35")


def test_a_huge_bad_token_is_quoted_bounded() -> None:
    with pytest.raises(BookError) as caught:
        parse_book("A" * 1_000_000, "b")
    message = str(caught.value)
    assert message.startswith("b line 1, card 1: 'AAAA")
    assert len(message) < 1_000
