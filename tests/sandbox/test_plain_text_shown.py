"""``shown_as_plain_text`` escapes exactly what ``bot.toml`` refuses in an author or a
description, and nothing else.

Pages show a stored manifest's description through it: a description that came through
``bot.toml`` must be shown as written (line separators, zero-width spaces, accents and all),
one stored directly with a control or bidi character must have that character made visible.
The two sides are checked against each other here on every character class that matters.
"""

from __future__ import annotations

import pytest

from sandbox.submission import (
    BIDI_CONTROLS,
    InvalidManifestError,
    parse_manifest,
    shown_as_plain_text,
)

MANIFEST = 'name = "b"\nversion = "1"\nentry = "bot.py"\nruntime = "python"\n'

CHARACTERS = sorted(
    {
        *(chr(code) for code in range(0x00, 0x20)),  # C0 controls, tab and line breaks
        *(chr(code) for code in range(0x7F, 0xA1)),  # DEL, C1 controls, no-break space
        *BIDI_CONTROLS,
        "\u200b",  # zero-width space: a format character bot.toml accepts
        "\u200d",  # zero-width joiner (emoji sequences)
        "\u2028",  # line separator
        "\u2029",  # paragraph separator
        "\ufeff",  # byte-order mark
        "a",
        "é",
        "😀",
    }
)


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string with every character escaped, so that TOML's own
    rules (no raw control characters) never decide; the manifest's check does."""
    return (
        '"'
        + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}" for c in text)
        + '"'
    )


def _accepted(key: str, char: str) -> bool:
    try:
        parse_manifest(f"{MANIFEST}{key} = {_toml_string(f'x{char}y')}\n")
    except InvalidManifestError:
        return False
    return True


@pytest.mark.parametrize("key", ["author", "description"])
def test_exactly_what_bot_toml_refuses_is_escaped(key: str) -> None:
    newlines = key == "description"
    refused: set[str] = set()
    for char in CHARACTERS:
        shown = shown_as_plain_text(f"x{char}y", newlines=newlines)
        accepted = _accepted(key, char)
        if not accepted:
            refused.add(char)
        if accepted:
            assert shown == f"x{char}y", (key, hex(ord(char)), shown)
        else:
            assert char not in shown, (key, hex(ord(char)), shown)
            assert shown.startswith("x\\") and shown.endswith("y"), (key, hex(ord(char)), shown)
    # Both sides of the line are exercised: some characters refused, the rest accepted.
    assert {"\x1b", "\x7f", "\x85", "\u202e"} <= refused
    assert not {"a", "\t", "\u2028", "\u200b", "\ufeff"} & refused
    assert ("\n" in refused) is (key == "author")


def test_the_escape_names_the_character() -> None:
    assert shown_as_plain_text("a\u202eb\x1bc", newlines=True) == "a\\u202eb\\x1bc"
    assert shown_as_plain_text("one\ntwo\r\n", newlines=True) == "one\ntwo\r\n"
    assert shown_as_plain_text("one\ntwo", newlines=False) == "one\\x0atwo"
    assert shown_as_plain_text("tab\there", newlines=False) == "tab\there"


def test_a_description_that_passed_bot_toml_is_shown_unchanged() -> None:
    text = "plays\u2028greedily\u200b\tand\nwell: é 😀 \u200d"
    manifest = parse_manifest(f"{MANIFEST}description = {_toml_string(text)}\n")
    assert manifest.description == text
    assert shown_as_plain_text(manifest.description, newlines=True) == text
