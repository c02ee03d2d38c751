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
from kryt.cli import app, load_command
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


@pytest.mark.parametrize(
    ("path", "command"), COMMANDS, ids=[" ".join(p) or "kryt" for p, _ in COMMANDS]
)
def test_every_help_text_is_shown_whole(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    path: tuple[str, ...],
    command: Any,
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # one line per option: its help is never wrapped
    code, out, err = kryt(capsys, *path, "--help")
    assert code == 0, err
    shown = _shown(out)
    for param in command.params:
        text = getattr(param, "help", None)
        if not text or getattr(param, "hidden", False):
            continue
        expected = " ".join(text.replace("\\[", "[").split())
        assert expected in shown, (param.name, expected)


@pytest.mark.parametrize(
    ("path", "command"), COMMANDS, ids=[" ".join(p) or "kryt" for p, _ in COMMANDS]
)
def test_every_visible_option_says_what_it_does(path: tuple[str, ...], command: Any) -> None:
    silent = [
        param.name
        for param in command.params
        if isinstance(param, click.Option)
        and not getattr(param, "hidden", False)
        and not (getattr(param, "help", None) or "").strip()
    ]
    assert silent == [], f"kryt {' '.join(path)}: options without help: {silent}"
