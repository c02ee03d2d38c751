"""``kryt games export`` and ``list`` on what an audit found mishandled: targets that are not
regular files (a symbolic link, a device, a named pipe, a socket, a directory) and a link
planted at the temporary name; a mistyped ``--tournament`` or ``--bot`` that emptied an
earlier export; a ``--limit`` too large for the database driver."""

from __future__ import annotations

import os
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kryt.commands import games as games_command
from kryt.errors import ExitCode
from tests.cli.helpers import finished_games_db, kryt

OLD = '[KrytGameFile "1"]\n[Tournament "an earlier export"]\n'


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return finished_games_db(tmp_path)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    return out


def export(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str, str]:
    return kryt(capsys, "games", "export", *args, "-d", str(db))


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "kryt-tmp" in p.name)


def only_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# -- 1. targets that are not regular files --------------------------------------------------------


def test_a_symbolic_link_is_refused_and_neither_it_nor_its_file_changes(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path
) -> None:
    real = folder / "real.kgn"
    real.write_text("shared copy\n")
    link = folder / "link.kgn"
    link.symlink_to("real.kgn")
    code, _, err = export(capsys, db, str(link))
    assert code == ExitCode.BAD_INPUT
    assert "it is a symbolic link, not a regular file" in only_error_line(err)
    assert link.is_symlink() and os.readlink(link) == "real.kgn"
    assert real.read_text() == "shared copy\n"
    assert temporaries(folder) == []


def test_a_dangling_symbolic_link_is_refused_and_nothing_is_created(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path
) -> None:
    link = folder / "link.kgn"
    link.symlink_to("nowhere.kgn")
    code, _, err = export(capsys, db, str(link))
    assert code == ExitCode.BAD_INPUT
    assert "symbolic link" in only_error_line(err)
    assert link.is_symlink() and not (folder / "nowhere.kgn").exists()


def test_a_device_is_refused_and_stays_a_device(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path
) -> None:
    device = folder / "null.kgn"
    try:
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except OSError as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    code, _, err = export(capsys, db, str(device))
    assert code == ExitCode.BAD_INPUT
    assert "it is a character device, not a regular file" in only_error_line(err)
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert temporaries(folder) == []


def test_a_named_pipe_is_refused_without_waiting_on_it(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path
) -> None:
    """The export used to open the pipe to look for an SQLite header: blocked for ever."""
    pipe = folder / "pipe.kgn"
    os.mkfifo(pipe)
    outcome: list[tuple[int, str, str]] = []
    worker = threading.Thread(target=lambda: outcome.append(export(capsys, db, str(pipe))))
    worker.start()
    worker.join(timeout=30)
    if worker.is_alive():  # unblock it (a writer arrives, then leaves) before failing
        writer = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
        os.close(writer)
        worker.join(timeout=30)
        pytest.fail("kryt games export waited on a named pipe")
    ((code, _, err),) = outcome
    assert code == ExitCode.BAD_INPUT
    assert "it is a named pipe, not a regular file" in only_error_line(err)
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "s.kgn"  # short: a socket's path has a small limit
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        yield path


def test_a_socket_and_a_directory_are_refused(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path, unix_socket: Path
) -> None:
    code, _, err = export(capsys, db, str(unix_socket))
    assert code == ExitCode.BAD_INPUT
    assert "it is a socket, not a regular file" in only_error_line(err)
    assert stat.S_ISSOCK(os.lstat(unix_socket).st_mode)
    directory = folder / "dir.kgn"
    directory.mkdir()
    code, _, err = export(capsys, db, str(directory))
    assert code == ExitCode.BAD_INPUT
    assert "it is a directory" in only_error_line(err)
    assert directory.is_dir() and list(directory.iterdir()) == []


def test_a_link_planted_at_the_old_temporary_name_is_not_followed(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path
) -> None:
    """The temporary file had a fixed name, ``.NAME.kryt-tmp``: a link there made the export
    write into the file it pointed to (and then move the link over the target)."""
    victim = folder / "victim.txt"
    victim.write_text("victim's data\n")
    planted = folder / ".out.kgn.kryt-tmp"
    planted.symlink_to("victim.txt")
    target = folder / "out.kgn"
    code, _, err = export(capsys, db, str(target))
    assert code == ExitCode.OK, err
    assert "wrote 2 games" in err
    assert victim.read_text() == "victim's data\n"
    assert planted.is_symlink() and os.readlink(planted) == "victim.txt"
    assert not target.is_symlink() and target.read_text().startswith('[KrytGameFile "1"]')
    assert temporaries(folder) == [".out.kgn.kryt-tmp"]  # only the planted one, untouched


def test_the_temporary_file_is_made_exclusively_with_an_unpredictable_name(
    capsys: pytest.CaptureFixture[str],
    db: Path,
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[str] = []
    mkstemp = tempfile.mkstemp

    def recording(*args: Any, **kwargs: Any) -> tuple[int, str]:
        handle, name = mkstemp(*args, **kwargs)
        made.append(name)
        return handle, name

    monkeypatch.setattr(tempfile, "mkstemp", recording)
    target = folder / "out.kgn"
    for _ in range(2):
        assert export(capsys, db, str(target))[0] == ExitCode.OK
    assert len(made) == 2 and made[0] != made[1]
    assert all(Path(name).parent == folder for name in made)
    assert temporaries(folder) == []


def test_an_export_that_fails_half_way_leaves_the_old_file(
    capsys: pytest.CaptureFixture[str],
    db: Path,
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = folder / "out.kgn"
    target.write_text(OLD)

    def full(handle: int, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(games_command, "_write_all", full)
    code, _, err = export(capsys, db, str(target))
    assert code == ExitCode.BAD_INPUT
    assert only_error_line(err).endswith(
        "cannot write " + str(target) + ": No space left on device"
    )
    assert target.read_text() == OLD
    assert temporaries(folder) == []


def test_a_regular_file_is_replaced_whole_keeping_its_permissions(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path
) -> None:
    target = folder / "out.csv"
    target.write_text(OLD)
    target.chmod(0o600)
    code, _, err = export(capsys, db, str(target))
    assert code == ExitCode.OK, err
    assert target.read_text().startswith("game_id,")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    new = folder / "new.kgn"
    assert export(capsys, db, str(new))[0] == ExitCode.OK
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask
    assert temporaries(folder) == []


def test_standard_output_still_works(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    code, out, _ = export(capsys, db, "-", "-f", "csv")
    assert code == ExitCode.OK
    assert out.startswith("game_id,") and len(out.splitlines()) == 3


# -- 2. a mistyped filter ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-t", "9"), "error: no tournament with id 9"),
        (("--tournament", "2147483647"), "error: no tournament with id 2147483647"),
        (("--bot", "alpah"), "error: no bot named 'alpah'"),
    ],
)
def test_an_unknown_tournament_or_bot_leaves_an_earlier_export_alone(
    capsys: pytest.CaptureFixture[str],
    db: Path,
    folder: Path,
    args: tuple[str, ...],
    message: str,
) -> None:
    target = folder / "ee.kgn"
    assert export(capsys, db, str(target))[0] == ExitCode.OK
    before = target.read_bytes()
    code, out, err = export(capsys, db, str(target), *args)
    assert code == ExitCode.BAD_INPUT
    assert only_error_line(err) == message and out == ""
    assert target.read_bytes() == before
    code, out, err = kryt(capsys, "games", "list", *args, "-d", str(db))
    assert code == ExitCode.BAD_INPUT
    assert only_error_line(err) == message and out == ""


def test_known_filters_still_export_and_list(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path
) -> None:
    target = folder / "alpha.kgn"
    code, _, err = export(capsys, db, str(target), "-t", "1", "--bot", "alpha")
    assert code == ExitCode.OK and "wrote 2 games" in err
    code, out, _ = kryt(capsys, "games", "list", "-t", "1", "--bot", "bravo", "-d", str(db))
    assert code == ExitCode.OK and "2 games" in out


# -- 3. numbers the database cannot take ------------------------------------------------------


@pytest.mark.parametrize("limit", [str(2**63), str(2**31), "10" * 20])
def test_a_limit_too_large_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], db: Path, limit: str
) -> None:
    code, out, err = kryt(capsys, "games", "list", "--limit", limit, "-d", str(db))
    assert code == ExitCode.BAD_INPUT
    assert "Invalid value for '--limit'" in err and "Traceback" not in out + err
    code, out, _ = kryt(capsys, "games", "list", "--limit", str(2**31 - 1), "-d", str(db))
    assert code == ExitCode.OK and "2 games" in out


PRECIOUS = "precious notes\n"


# ---------------------------------------------------------------- a file it did not write
# (an outside CLI audit: no game matched, or the file was someone's notes)


def test_an_export_matching_no_game_creates_and_replaces_nothing(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path
) -> None:
    earlier = folder / "earlier.kgn"
    assert export(capsys, db, str(earlier))[0] == ExitCode.OK
    before = earlier.read_bytes()
    for target in (earlier, folder / "new.kgn", folder / "new.csv"):
        code, out, err = export(capsys, db, str(target), "--reason", "timeout")
        assert code == ExitCode.FAILED and out == ""
        assert err == f"no games match: nothing written to {target}\n"
    assert earlier.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["earlier.kgn"]


@pytest.mark.parametrize("name", ["keep.txt", "keep.kgn", "keep.csv", "keep.json"])
def test_a_file_that_is_no_export_of_ours_is_replaced_only_with_force(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path, name: str
) -> None:
    target = folder / name
    target.write_text(PRECIOUS)
    code, out, err = export(capsys, db, str(target))
    assert code == ExitCode.BAD_INPUT and out == ""
    lines = err.strip().splitlines()
    assert lines[0] == (
        f"error: {target} exists and is not an export of kryt games (a game file, CSV or"
        " JSON): not replaced"
    )
    assert lines[1:] == ["hint: name a new file, or add --force to replace it"]
    assert target.read_text() == PRECIOUS
    code, _, err = export(capsys, db, str(target), "--force")
    assert code == ExitCode.OK and "wrote 2 games" in err
    assert target.read_text() != PRECIOUS
    assert [p.name for p in folder.iterdir()] == [name]


@pytest.mark.parametrize("before", ["text", "csv", "json"])
@pytest.mark.parametrize("after", ["text", "csv", "json"])
def test_an_earlier_export_is_replaced_without_force_but_not_by_no_games(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path, before: str, after: str
) -> None:
    target = folder / "games.out"
    target.write_text("")
    assert export(capsys, db, str(target), "-f", before)[0] == ExitCode.OK
    assert export(capsys, db, str(target), "-f", after, "--bot", "alpha")[0] == ExitCode.OK
    empty = folder / "empty.json"
    # ... and a JSON export of no games ('[]'), as an earlier version wrote it, too.
    empty.write_text("[]\n")
    code, _, err = export(capsys, db, str(empty), "-f", after)
    assert code == ExitCode.OK, err
    # Never by an export of no game, though: the earlier one stays as it was.
    kept = target.read_bytes()
    assert export(capsys, db, str(target), "-f", after, "--reason", "crash")[0] == ExitCode.FAILED
    assert target.read_bytes() == kept


def test_force_never_replaces_a_database(
    capsys: pytest.CaptureFixture[str], db: Path, folder: Path
) -> None:
    before = db.read_bytes()
    code, _, err = export(capsys, db, str(db), "--force")
    assert code == ExitCode.BAD_INPUT
    assert f"{db} is an SQLite database, not overwritten with the export" in err
    assert db.read_bytes() == before
