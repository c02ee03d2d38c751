"""Files a user names (results CSV, deal book, tournament settings, game files) are read when
they are regular files, pipes (as ``cat`` reads them) or ``/dev/null``; any other device is
refused before anything is read (``referee.files``).

An endless device (``/dev/zero``) is only ever given to a child process whose address space
is capped: were the check lost, the child fails fast instead of taking the machine's memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from arena.tournament.config import ConfigError, load_config
from referee.book import BookError, load_book
from referee.files import NotARegularFileError, file_kind, read_regular_file
from tests.kryt_subprocess import KRYT, clean_env


def capped_child(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a child Python of this checkout with 1 GiB of address space."""
    prelude = "import resource\nresource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
    )


def test_a_regular_file_is_read_whole_or_up_to_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "data"
    path.write_bytes(b"0123456789")
    assert read_regular_file(path) == b"0123456789"
    assert read_regular_file(path, limit=4) == b"0123"
    link = tmp_path / "link"
    link.symlink_to(path)  # a link to a regular file is followed
    assert read_regular_file(str(link)) == b"0123456789"


def test_dev_null_reads_as_an_empty_file() -> None:
    assert read_regular_file(os.devnull) == b""


def test_a_pipe_is_read_to_its_end_as_a_stream() -> None:
    """What ``<(zcat games.kgn.gz)`` gives a command: ``/dev/fd/N``, an open pipe."""
    read_end, write_end = os.pipe()
    try:

        def write() -> None:
            for chunk in (b"first,", b"second\n"):
                time.sleep(0.05)  # the reader waits for data, not returning at an empty pipe
                os.write(write_end, chunk)
            os.close(write_end)

        writer = threading.Thread(target=write)
        writer.start()
        assert read_regular_file(f"/dev/fd/{read_end}") == b"first,second\n"
        writer.join(60)
    finally:
        os.close(read_end)


def test_a_named_pipe_waits_for_its_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write() -> None:
        time.sleep(0.2)
        fifo.write_bytes(b"late data\n")

    writer = threading.Thread(target=write)
    writer.start()
    assert read_regular_file(fifo) == b"late data\n"
    writer.join(60)


def test_a_directory_is_refused_naming_what_it_is(tmp_path: Path) -> None:
    with pytest.raises(NotARegularFileError) as caught:
        read_regular_file(tmp_path)
    error = caught.value
    assert isinstance(error, OSError)  # callers' `except OSError` shows it
    assert (error.kind, error.strerror) == ("a directory", "it is a directory, not a regular file")
    assert error.filename == str(tmp_path)


def test_an_endless_device_is_refused_before_it_is_read(tmp_path: Path) -> None:
    link = tmp_path / "zero"
    link.symlink_to("/dev/zero")
    done = capped_child(
        f"""
        from referee.files import NotARegularFileError, read_regular_file
        for path in ("/dev/zero", {str(link)!r}):
            try:
                read_regular_file(path)
            except NotARegularFileError as exc:
                print(exc.kind, "|", exc.strerror)
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == 2 * [
        "a character device | it is a character device, not a regular file"
    ]


def test_a_missing_file_is_the_usual_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "missing")


def test_file_kind_words() -> None:
    assert file_kind(os.stat("/dev/null").st_mode) == "a character device"
    assert file_kind(os.lstat("/").st_mode) == "a directory"
    assert file_kind(0) == "not a regular file"


def test_a_deal_book_or_settings_on_a_device_are_refused() -> None:
    with pytest.raises(BookError) as book:
        load_book(Path("/dev/zero"))  # capped read: safe in this process
    assert str(book.value) == (
        "cannot read the deal book /dev/zero: it is a character device, not a regular file"
    )
    done = capped_child(
        """
        from pathlib import Path
        from arena.tournament.config import ConfigError, load_config
        try:
            load_config(Path("/dev/zero"))
        except ConfigError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == (
        "cannot read /dev/zero: it is a character device, not a regular file"
    )


def test_settings_from_a_pipe_are_read(tmp_path: Path) -> None:
    fifo = tmp_path / "settings.toml"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text('name = "piped"\nbots = ["a", "b"]\n'))
    writer.start()
    assert load_config(fifo).name == "piped"
    writer.join(60)
    with pytest.raises(ConfigError, match="it is a directory, not a regular file"):
        load_config(tmp_path)


def test_games_import_of_a_device_is_one_error_line_and_creates_nothing(tmp_path: Path) -> None:
    def capped() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    done = subprocess.run(
        [*KRYT, "games", "import", "/dev/zero", "-d", str(tmp_path / "k.db")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
        preexec_fn=capped,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert lines == [
        "error: cannot read /dev/zero: it is a character device, not a regular file"
    ], lines
    assert not (tmp_path / "k.db").exists()
