"""Files a user names (results CSV, deal book, tournament settings, game files) are read only
when they are regular files: a device is not read without end, a named pipe with no writer
is not waited on (``referee.files``).

Devices here are ``/dev/null`` (except where the read is capped): were the check lost, an
endless device would take the machine's memory, where ``/dev/null`` only fails the test."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.tournament.config import ConfigError, load_config
from referee.book import BookError, load_book
from referee.files import NotARegularFileError, file_kind, read_regular_file
from tests.kryt_subprocess import clean_env, run_kryt


def finishes(call: Callable[[], object]) -> BaseException | object:
    """``call()``'s result or exception, from a thread given 60 s: a call that blocks (a
    named pipe waited on) fails the test instead of hanging the run."""
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # handed to the test to judge
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the read blocked"
    return outcome[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_a_regular_file_is_read_whole_or_up_to_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "data"
    path.write_bytes(b"0123456789")
    assert read_regular_file(path) == b"0123456789"
    assert read_regular_file(path, limit=4) == b"0123"
    link = tmp_path / "link"
    link.symlink_to(path)  # a link to a regular file is followed
    assert read_regular_file(str(link)) == b"0123456789"


@pytest.mark.parametrize(
    ("target", "kind"),
    [("pipe", "a named pipe"), ("/dev/null", "a character device"), ("dir", "a directory")],
)
def test_anything_else_is_refused_at_once_naming_what_it_is(
    tmp_path: Path, fifo: Path, target: str, kind: str
) -> None:
    path = fifo if target == "pipe" else tmp_path if target == "dir" else Path(target)
    error = finishes(lambda: read_regular_file(path))
    assert isinstance(error, NotARegularFileError), error
    assert isinstance(error, OSError)  # callers' `except OSError` shows it
    assert error.kind == kind
    assert error.strerror == f"it is {kind}, not a regular file"
    assert error.filename == str(path)
    link = tmp_path / "link"
    link.symlink_to(path)
    through = finishes(lambda: read_regular_file(link))
    assert isinstance(through, NotARegularFileError) and through.kind == kind


def test_a_missing_file_is_the_usual_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "missing")


def test_file_kind_words() -> None:
    assert file_kind(os.stat("/dev/null").st_mode) == "a character device"
    assert file_kind(os.lstat("/").st_mode) == "a directory"
    assert file_kind(0) == "not a regular file"


def test_a_deal_book_that_is_a_pipe_or_a_device_is_refused(fifo: Path) -> None:
    error = finishes(lambda: load_book(fifo))
    assert isinstance(error, BookError), error
    assert str(error) == f"cannot read the deal book {fifo}: it is a named pipe, not a regular file"
    error = finishes(lambda: load_book(Path("/dev/zero")))
    assert isinstance(error, BookError), error
    assert "it is a character device, not a regular file" in str(error)


def test_tournament_settings_that_are_a_pipe_or_a_device_are_refused(fifo: Path) -> None:
    for path, kind in ((fifo, "a named pipe"), (Path("/dev/null"), "a character device")):
        error = finishes(lambda path=path: load_config(path))  # type: ignore[misc]
        assert isinstance(error, ConfigError), error
        assert str(error) == f"cannot read {path}: it is {kind}, not a regular file"


@pytest.mark.parametrize("target", ["pipe", "/dev/null"])
def test_games_import_of_a_pipe_or_a_device_is_one_error_line(
    tmp_path: Path, fifo: Path, target: str
) -> None:
    path = fifo if target == "pipe" else Path(target)
    done = run_kryt(
        tmp_path, "games", "import", str(path), "-d", str(tmp_path / "k.db"), env=clean_env()
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot read {path}: it is a"), lines
    assert not (tmp_path / "k.db").exists()  # nothing created for a refused input
