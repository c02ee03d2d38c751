"""Every option's and argument's help is shown whole by ``--help``: text in square brackets
(a pattern, a default) is escaped from Rich markup, never swallowed as a tag."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import click
import pytest
import typer

from kryt.cli import COMMANDS as LAZY
from kryt.cli import app, load_command, reflow_help
from tests.cli.helpers import kryt

BOX = re.compile(r"[│╭╮╰╯─┃━]")


def _commands(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    if hasattr(command, "list_commands"):  # a group (typer carries its own click)
        ctx = command.context_class(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                yield from _commands(sub, (*path, name))


def _shown(text: str) -> str:
    return " ".join(BOX.sub(" ", text).split())


# The top level lists its commands lazily (placeholders); load each one as an invocation does.
COMMANDS = [((), typer.main.get_command(app))] + [
    found for name in LAZY for found in _commands(load_command(name), (name,))
]


def _help(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    path: tuple[str, ...],
    *,
    columns: int,
) -> str:
    """What ``kryt PATH --help`` prints on a terminal ``columns`` wide."""
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, err = kryt(capsys, *path, "--help")
    assert code == 0, err
    return out


EACH_COMMAND = pytest.mark.parametrize(
    ("path", "command"), COMMANDS, ids=[" ".join(p) or "kryt" for p, _ in COMMANDS]
)
"""Every command and group, loaded as an invocation loads it."""


@EACH_COMMAND
def test_every_help_text_is_shown_whole(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    path: tuple[str, ...],
    command: Any,
) -> None:
    # One line per option: its help is never wrapped.
    shown = _shown(_help(capsys, monkeypatch, path, columns=1000))
    for param in command.params:
        text = getattr(param, "help", None)
        if not text or getattr(param, "hidden", False):
            continue
        expected = " ".join(text.replace("\\[", "[").split())
        assert expected in shown, (param.name, expected)


@EACH_COMMAND
def test_every_visible_option_says_what_it_does(path: tuple[str, ...], command: Any) -> None:
    silent = [
        param.name
        for param in command.params
        if isinstance(param, click.Option)
        and not getattr(param, "hidden", False)
        and not (getattr(param, "help", None) or "").strip()
    ]
    assert silent == [], f"kryt {' '.join(path)}: options without help: {silent}"


def test_reflow_joins_prose_and_keeps_lists() -> None:
    kept = "- a list\n- kept\n\n\bno\nrewrap"
    text = f"First line.\n\nSecond paragraph, wrapped\nin the source.\n\n{kept}"
    assert reflow_help(text) == f"First line.\n\nSecond paragraph, wrapped in the source.\n\n{kept}"
    assert reflow_help(None) is None


@EACH_COMMAND
def test_no_help_paragraph_keeps_the_docstrings_line_breaks(
    path: tuple[str, ...], command: Any
) -> None:
    """Rich keeps every line break of a help text: a docstring's source breaks would cut
    lines mid-sentence at 80 columns."""
    for paragraph in (command.help or "").split("\n\n"):
        assert "\n" not in paragraph, (path, paragraph)


@EACH_COMMAND
def test_help_prose_fills_an_80_column_terminal(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    path: tuple[str, ...],
    command: Any,
) -> None:
    out = _help(capsys, monkeypatch, path, columns=80)
    prose = out.split("╭")[0].split("Usage:")[1].split("\n")[1:]
    paragraph: list[str] = []
    for line in [*prose, ""]:
        if line.strip():
            paragraph.append(line.rstrip())
            continue
        # Every line of a paragraph but its last is filled close to the width.
        short = [p for p in paragraph[:-1] if len(p) < 60]
        assert short == [], (path, paragraph)
        paragraph = []
