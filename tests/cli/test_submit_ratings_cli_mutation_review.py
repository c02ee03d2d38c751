"""Mutation review of ``kryt submit`` (``kryt/commands/submit.py``) and ``kryt ratings fit``
(``kryt/commands/ratings.py``).

Every command runs in process through ``kryt.cli.main`` (the real exit codes and the one-line
``error:`` mapping of ``kryt.errors.classify``), and ``kryt ratings fit`` also through typer's
``CliRunner`` on its own Typer app (where no ``classify`` backs up its own error handling).
Every path given to a command is under ``tmp_path``; the working directory is ``tmp_path``.

Where the expected values come from:

* ``kryt submit``: README.md, docs/arena.md and docs/configuration.md (exit codes 0/1/2/3,
  "nothing is stored if it is bad", a bad ``--server`` refused before any work, the upload
  limit read from ``/health``, "closed the connection while receiving an upload of N bytes",
  bot text shown with control characters escaped and never as markup). The stored row is read
  back from the SQLite file with ``sqlite3``; the printed sha256 prefix is compared with it.
  A server is stood in for by a fake ``arena.service.server.Client`` whose answers the test
  writes, so every printed value is known beforehand.
* ``kryt ratings fit``: docs/ratings.md. Games, wins, draws, losses, score and draw rate are
  counted from the CSV rows by the test; pentanomials are counted from consecutive row pairs
  by the test; the display scale is ``4x / (1 + x)²`` with ``x = 10^(-drawelo/400)``; the
  ratio of interval widths at two confidence levels is the ratio of normal quantiles
  (``statistics.NormalDist``); a symmetric result set gives equal ratings (0), LOS 0.5 and
  name order. Only the fitted ratings, intervals and LOS (library numbers validated against
  BayesElo 0057 elsewhere) are taken from ``leaderboard.ratings``: the tests check that the
  command passes its options through and prints those numbers in the right cells.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import tarfile
import urllib.error
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pytest
from typer.testing import CliRunner

from kryt.errors import ExitCode
from tests.cli.helpers import flat, kryt

ROOT = Path(__file__).resolve().parents[2]
RANDOM_BOT = (ROOT / "sdk" / "examples" / "random" / "bot.py").read_text()


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The working directory is ``tmp_path`` (the default ./kryt.db and ./.kryt land there);
    no server or token from the caller's environment; wide tables."""
    monkeypatch.chdir(tmp_path)
    for name in ("KRYT_SERVER", "KRYT_DATABASE_URL", "KRYT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    yield tmp_path


def make_bot(folder: Path, *, name: str = "mine", version: str = "1.0.0") -> Path:
    folder.mkdir(parents=True)
    (folder / "bot.toml").write_text(
        f'name = "{name}"\nversion = "{version}"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text(RANDOM_BOT)
    return folder


def rows(db: Path) -> list[tuple[int, str, str, str]]:
    """(id, sha256, submitted_by, storage_path) of every stored submission."""
    with sqlite3.connect(db) as connection:
        found = connection.execute(
            "SELECT id, sha256, submitted_by, storage_path FROM submissions ORDER BY id"
        ).fetchall()
    connection.close()
    return [(int(a), str(b), str(c), str(d)) for a, b, c, d in found]


def stored_folders(store: Path) -> list[str]:
    """The submission folders in ``store`` (lock files and dot files left out)."""
    if not store.exists():
        return []
    return sorted(p.name for p in store.iterdir() if not p.name.startswith("."))


def one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert lines and lines[0].startswith("error: "), err
    assert all(line.startswith(("error: ", "hint: ")) for line in lines), err
    assert "Traceback" not in err
    return lines[0]


# ====================================================================== kryt submit, local


def test_submit_prints_the_stored_row_and_uses_the_given_store_and_database(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    bot = make_bot(in_tmp / "mine")
    db, store = in_tmp / "results.sqlite", in_tmp / "my-store"
    code, out, err = kryt(
        capsys, "submit", str(bot), "--by", "alice", "-d", str(db), "--store", str(store)
    )
    assert code == ExitCode.OK, (out, err)
    [(sub_id, sha, by, storage)] = rows(db)
    assert by == "alice" and sub_id == 1
    assert len(sha) == 64
    assert out.strip() == f"mine 1.0.0: stored as submission 1 (sha256 {sha[:16]}…)"
    assert stored_folders(store) == [sha] and Path(storage).resolve() == (store / sha).resolve()
    # Nothing at the defaults: the options were used.
    assert not (in_tmp / "kryt.db").exists() and not (in_tmp / ".kryt").exists()
    # The same content again: the same row, said so.
    code, out, err = kryt(capsys, "submit", str(bot), "-d", str(db), "--store", str(store))
    assert code == ExitCode.OK, (out, err)
    assert out.strip() == (
        f"mine 1.0.0: already stored (same content) as submission 1 (sha256 {sha[:16]}…)"
    )
    assert len(rows(db)) == 1


def test_submit_defaults_are_kryt_db_the_kryt_store_and_the_login_name(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(variable, "login-x")
    bot = make_bot(in_tmp / "mine")
    code, out, err = kryt(capsys, "submit", str(bot))
    assert code == ExitCode.OK, (out, err)
    [(_, sha, by, _)] = rows(in_tmp / "kryt.db")
    assert by == "login-x"
    assert stored_folders(in_tmp / ".kryt" / "submissions") == [sha]


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_an_archive_is_checked_and_stored_as_its_folder(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An archive is unpacked for the check and for storing, into temporary folders that are
    removed again (a private temporary directory: other tests submit at the same time)."""
    import tempfile

    private = in_tmp / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    bot = make_bot(in_tmp / "src" / "mine")
    archive = in_tmp / f"mine.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(archive, "w") as z:
            for path in bot.iterdir():
                z.write(path, path.name)
    else:
        with tarfile.open(archive, "w:gz") as t:
            for path in bot.iterdir():
                t.add(path, path.name)
    code, out, err = kryt(capsys, "submit", str(archive), "--by", "al")
    assert code == ExitCode.OK, (out, err)
    assert "mine 1.0.0: stored as submission 1" in out
    code, out, err = kryt(capsys, "submit", str(bot), "--by", "al")
    assert code == ExitCode.OK and "already stored (same content) as submission 1" in out
    assert list(private.iterdir()) == []
    # A broken archive: the compile check reads the unpacked files.
    (bot / "bot.py").write_text("def act(view)\n    return 1\n")
    (bot / "bot.toml").write_text((bot / "bot.toml").read_text().replace("1.0.0", "2.0.0"))
    broken = in_tmp / "broken.zip"
    with zipfile.ZipFile(broken, "w") as z:
        for path in bot.iterdir():
            z.write(path, path.name)
    code, out, err = kryt(capsys, "submit", str(broken), "--by", "al")
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "bot.py:1" in one_error(err) and "SyntaxError" in err
    assert len(rows(in_tmp / "kryt.db")) == 1
    assert list(private.iterdir()) == []


def _syntax_error(bot: Path) -> None:
    (bot / "bot.py").write_text("from sdk import Bot\n\ndef act(view)\n    return 'take'\n")


def _helper_syntax_error(bot: Path) -> None:
    (bot / "helpers.py").write_text("X = (\n")


def _no_manifest(bot: Path) -> None:
    (bot / "bot.toml").unlink()


def _bad_name(bot: Path) -> None:
    (bot / "bot.toml").write_text(
        'name = "Bad Name!"\nversion = "1"\nlanguage = "python"\nentry = "bot.py"\n'
    )


def _no_entry(bot: Path) -> None:
    (bot / "bot.py").unlink()


@pytest.mark.parametrize(
    ("breaks", "said"),
    [
        (_syntax_error, "bot.py:3"),
        (_helper_syntax_error, "helpers.py:1"),
        (_no_manifest, "bot.toml"),
        (_bad_name, "Bad Name!"),
        (_no_entry, "bot.py"),
    ],
    ids=["syntax-error", "helper-syntax-error", "no-manifest", "bad-name", "no-entry"],
)
def test_a_broken_submission_is_one_line_exit_2_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, breaks: Callable[[Path], None], said: str
) -> None:
    # A database that already holds a submission: it must come out byte for byte the same.
    code, _, err = kryt(capsys, "submit", str(make_bot(in_tmp / "good", name="good")), "--by", "x")
    assert code == ExitCode.OK, err
    db = in_tmp / "kryt.db"
    before = db.read_bytes()
    store = in_tmp / ".kryt" / "submissions"
    folders = stored_folders(store)
    bot = make_bot(in_tmp / "bad", version="3.0.0")
    breaks(bot)
    code, out, err = kryt(capsys, "submit", str(bot), "--by", "x")
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert said in one_error(err) and not out
    assert db.read_bytes() == before
    assert stored_folders(store) == folders


def test_a_broken_submission_creates_no_database(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    """The check runs before the database is opened: a refused bot leaves no kryt.db."""
    bot = make_bot(in_tmp / "bad")
    _syntax_error(bot)
    code, _, err = kryt(capsys, "submit", str(bot), "--by", "x")
    assert code == ExitCode.BAD_INPUT and "SyntaxError" in err
    assert not (in_tmp / "kryt.db").exists() and not (in_tmp / ".kryt").exists()


def test_a_missing_path_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    code, out, err = kryt(capsys, "submit", str(in_tmp / "nope"), "--by", "x")
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "nope" in one_error(err) and "does not exist" in err
    assert not (in_tmp / "kryt.db").exists()


@pytest.mark.parametrize("target", ["text-file", "directory"])
def test_an_unusable_database_is_exit_3_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, target: str
) -> None:
    bot = make_bot(in_tmp / "mine")
    database = in_tmp / "db"
    if target == "text-file":
        database.write_text("not a database\n")
    else:
        database.mkdir()
    code, out, err = kryt(capsys, "submit", str(bot), "--by", "x", "-d", str(database))
    assert code == ExitCode.UNAVAILABLE, (out, err)
    one_error(err)
    assert "hint: " in err
    if target == "text-file":
        assert database.read_text() == "not a database\n"
    else:
        assert list(database.iterdir()) == []
    assert not (in_tmp / ".kryt").exists() and not (in_tmp / "kryt.db").exists()


def test_a_submitter_of_200_characters_is_stored_and_201_refused(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    bot = make_bot(in_tmp / "mine")
    code, out, err = kryt(capsys, "submit", str(bot), "--by", "b" * 201)
    assert code == ExitCode.BAD_INPUT, (out, err)
    line = one_error(err)
    # The name is shown cut to 200 characters.
    assert line == f"error: --by: {'b' * 200!r} must be 1 to 200 printable characters", line
    assert not (in_tmp / ".kryt").exists() and not (in_tmp / "kryt.db").exists()
    code, out, err = kryt(capsys, "submit", str(bot), "--by", "b" * 200)
    assert code == ExitCode.OK, (out, err)
    assert rows(in_tmp / "kryt.db")[0][2] == "b" * 200


@pytest.mark.parametrize(
    "by", ["   ", "tab\there", "bidi\u202eevil", "esc\x1b[2J", "nl\nx", "nel\x85x"]
)
def test_a_submitter_that_is_blank_or_not_printable_is_refused_escaped(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, by: str
) -> None:
    bot = make_bot(in_tmp / "mine")
    code, out, err = kryt(capsys, "submit", str(bot), "--by", by)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert one_error(err).startswith("error: --by: ") and "printable characters" in err
    for raw in ("\x1b", "\u202e", "\x85"):
        assert raw not in err
    assert not (in_tmp / "kryt.db").exists()


def test_a_bad_login_name_asks_for_by(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(variable, "name\x07bell")
    bot = make_bot(in_tmp / "mine")
    code, out, err = kryt(capsys, "submit", str(bot))
    assert code == ExitCode.BAD_INPUT, (out, err)
    line = one_error(err)
    assert line.startswith("error: your user name (from the environment; give --by): "), line
    assert "\x07" not in err
    code, out, err = kryt(capsys, "submit", str(bot), "--by", "ok")
    assert code == ExitCode.OK, (out, err)


# ====================================================================== kryt submit --server


def test_a_bad_server_url_is_refused_before_the_bot_is_checked(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    bot = make_bot(in_tmp / "bad")
    _syntax_error(bot)
    code, out, err = kryt(capsys, "submit", str(bot), "--server", "ftp://arena.example.org")
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert one_error(err) == (
        "error: --server 'ftp://arena.example.org' is not an http:// or https:// URL with a host"
    )
    assert "hint: e.g. --server https://arena.example.org" in err
    assert "SyntaxError" not in err


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://", "is not an http:// or https:// URL with a host"),
        ("https://:8000", "is not an http:// or https:// URL with a host"),
        ("http://host:70000", "is not a valid URL"),
        ("http://host:port", "is not a valid URL"),
    ],
)
def test_a_server_url_without_a_host_or_a_valid_port_is_refused(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, url: str, said: str
) -> None:
    code, out, err = kryt(capsys, "submit", str(make_bot(in_tmp / "m")), "--server", url)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert one_error(err).startswith(f"error: --server {url!r} {said}"), err


def test_an_unreachable_server_is_exit_3(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("KRYT_TOKEN", "kryt_test")
    bot = make_bot(in_tmp / "mine")
    code, out, err = kryt(capsys, "submit", str(bot), "--server", f"http://127.0.0.1:{port}")
    assert code == ExitCode.UNAVAILABLE, (out, err)
    assert one_error(err).startswith(f"error: cannot reach http://127.0.0.1:{port}/"), err
    assert not (in_tmp / "kryt.db").exists()


ARCHIVE = b"A" * 1000
"""What the fake ``archive_of`` packs: its length is what the upload limit is compared with."""


@dataclass
class FakeArena:
    """Answers of an arena server, written by the test; records what the command asked."""

    health: dict[str, Any] | Exception = field(default_factory=dict)
    upload_answer: dict[str, Any] | Callable[[], dict[str, Any]] = field(default_factory=dict)
    wait_answer: dict[str, Any] = field(default_factory=dict)
    urls: list[str] = field(default_factory=list)
    uploads: list[tuple[bytes, str]] = field(default_factory=list)
    waited: list[int] = field(default_factory=list)

    def client(self, url: str, token: str) -> FakeArena:
        self.urls.append(url)
        assert token == "kryt_token"
        return self

    def request(self, method: str, path: str) -> dict[str, Any]:
        assert (method, path) == ("GET", "/health")
        if isinstance(self.health, Exception):
            raise self.health
        return self.health

    def upload(self, archive: bytes, filename: str) -> dict[str, Any]:
        self.uploads.append((archive, filename))
        answer = self.upload_answer
        return answer() if callable(answer) else answer

    def wait(self, submission_id: int) -> dict[str, Any]:
        self.waited.append(submission_id)
        return self.wait_answer


@pytest.fixture
def arena(monkeypatch: pytest.MonkeyPatch) -> FakeArena:
    import arena.service.server as server

    fake = FakeArena()
    monkeypatch.setattr(server, "Client", fake.client)
    monkeypatch.setattr(server, "archive_of", lambda path: (ARCHIVE, f"{path.name}.tar.gz"))
    monkeypatch.setattr(server, "read_token", lambda: "kryt_token")
    return fake


def answer(*, created: bool = True, status: str = "pending", check: Any = None) -> dict[str, Any]:
    return {
        "submission_id": 7,
        "bot": "mine",
        "version": "1.0.0",
        "created": created,
        "status": status,
        "check": {"status": "pending", "message": "queued"} if check is None else check,
    }


def test_upload_waits_for_the_verdict_and_prints_it(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, arena: FakeArena
) -> None:
    arena.upload_answer = answer()
    arena.wait_answer = answer(status="active", check={"status": "passed", "message": "2 games"})
    bot = make_bot(in_tmp / "mine")
    code, out, err = kryt(capsys, "submit", str(bot), "--server", "https://arena.test:8443")
    assert code == ExitCode.OK, (out, err)
    assert arena.urls == ["https://arena.test:8443"]
    assert arena.uploads == [(ARCHIVE, "mine.tar.gz")] and arena.waited == [7]
    assert out.splitlines() == [
        "mine 1.0.0: uploaded as submission 7",
        "validation games against the reference bots...",
        "status active; validation passed: 2 games",
    ]
    assert not (in_tmp / "kryt.db").exists() and not (in_tmp / ".kryt").exists()


def test_no_wait_does_not_wait(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, arena: FakeArena
) -> None:
    arena.upload_answer = answer()
    bot = make_bot(in_tmp / "mine")
    code, out, err = kryt(capsys, "submit", str(bot), "--server", "http://a.test", "--no-wait")
    assert code == ExitCode.OK, (out, err)
    assert arena.waited == []
    assert out.splitlines() == [
        "mine 1.0.0: uploaded as submission 7",
        "status pending; validation pending: queued",
    ]


def test_a_decided_check_is_not_waited_for(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, arena: FakeArena
) -> None:
    arena.upload_answer = answer(
        created=False, status="active", check={"status": "passed", "message": "ok"}
    )
    bot = make_bot(in_tmp / "mine")
    code, out, err = kryt(capsys, "submit", str(bot), "--server", "http://a.test")
    assert code == ExitCode.OK, (out, err)
    assert arena.waited == []
    assert out.splitlines() == [
        "mine 1.0.0: already on the server (same content) as submission 7",
        "status active; validation passed: ok",
    ]


def test_the_server_comes_from_kryt_server(
    capsys: pytest.CaptureFixture[str],
    in_tmp: Path,
    arena: FakeArena,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KRYT_SERVER", "http://from-env.test")
    arena.upload_answer = answer(status="active", check={})
    code, out, err = kryt(capsys, "submit", str(make_bot(in_tmp / "mine")))
    assert code == ExitCode.OK, (out, err)
    assert arena.urls == ["http://from-env.test"]
    assert out.splitlines()[-1] == "status active; validation -: "
    assert not (in_tmp / "kryt.db").exists()


def test_a_rejected_version_is_exit_1(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, arena: FakeArena
) -> None:
    arena.upload_answer = answer()
    arena.wait_answer = answer(
        status="rejected", check={"status": "failed", "message": "forfeit: timeout"}
    )
    code, out, err = kryt(capsys, "submit", str(make_bot(in_tmp / "m")), "--server", "http://a.t")
    assert code == ExitCode.FAILED, (out, err)
    assert out.splitlines()[-1] == "status rejected; validation failed: forfeit: timeout"


@pytest.mark.parametrize(
    ("limit", "refused"),
    [(len(ARCHIVE), False), (len(ARCHIVE) - 1, True), (True, False), (0, False), (None, False)],
    ids=["equal", "one-less", "bool", "zero", "absent"],
)
def test_the_upload_limit_from_health(
    capsys: pytest.CaptureFixture[str],
    in_tmp: Path,
    arena: FakeArena,
    limit: object,
    refused: bool,
) -> None:
    """An archive as large as ``max_upload_bytes`` goes; one byte over is refused before
    sending; a limit that is not a positive integer is no limit."""
    arena.health = {} if limit is None else {"max_upload_bytes": limit}
    arena.upload_answer = answer(status="active", check={"status": "passed", "message": ""})
    bot = make_bot(in_tmp / "mine")
    code, out, err = kryt(capsys, "submit", str(bot), "--server", "http://a.test")
    if not refused:
        assert code == ExitCode.OK, (out, err)
        assert len(arena.uploads) == 1
        return
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert arena.uploads == []
    assert one_error(err) == (
        f"error: mine.tar.gz is {len(ARCHIVE)} bytes packed; http://a.test accepts uploads of"
        f" at most {len(ARCHIVE) - 1} bytes"
    )
    assert "hint: leave out what the bot does not need at run time" in err


def test_a_health_that_does_not_answer_leaves_the_upload_to_say_why(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, arena: FakeArena
) -> None:
    from arena.service.server import ClientError

    arena.health = ClientError("http://a.test/health: 404")
    arena.upload_answer = answer(status="active", check={"status": "passed", "message": "ok"})
    code, out, err = kryt(
        capsys, "submit", str(make_bot(in_tmp / "m")), "--server", "http://a.test"
    )
    assert code == ExitCode.OK, (out, err)
    assert len(arena.uploads) == 1


def _reset() -> dict[str, Any]:
    from arena.service.server import ServerUnreachableError

    try:
        raise ConnectionResetError(104, "Connection reset by peer")
    except ConnectionResetError:
        raise ServerUnreachableError("cannot reach http://a.test/api/submissions: reset") from None


def _broken_pipe_in_urlerror() -> dict[str, Any]:
    from arena.service.server import ServerUnreachableError

    try:
        raise urllib.error.URLError(BrokenPipeError(32, "Broken pipe"))
    except urllib.error.URLError:
        raise ServerUnreachableError(
            "cannot reach http://a.test/api/submissions: broken pipe"
        ) from None


def _refused_connection() -> dict[str, Any]:
    from arena.service.server import ServerUnreachableError

    try:
        raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
    except urllib.error.URLError:
        raise ServerUnreachableError(
            "cannot reach http://a.test/api/submissions: refused"
        ) from None


def _server_cannot_compile() -> dict[str, Any]:
    from arena.service.server import ClientError

    raise ClientError("http://a.test/api/submissions: 422 bot.py cannot be compiled")


def _server_refusal_saying_cannot_reach() -> dict[str, Any]:
    from arena.service.server import ClientError

    # The server's words, not a lost connection: the exit code is a refusal's.
    raise ClientError("http://a.test/api/submissions: 409 cannot reach a verdict")


def _server_says_no() -> dict[str, Any]:
    from arena.service.server import ClientError

    raise ClientError("http://a.test/api/submissions: 403 this bot belongs to \x1b[31mbob")


@pytest.mark.parametrize(
    ("failure", "code", "said"),
    [
        (
            _reset,
            ExitCode.BAD_INPUT,
            "http://a.test closed the connection while receiving an upload of 1000 bytes"
            " (likely over its upload limit)",
        ),
        (
            _broken_pipe_in_urlerror,
            ExitCode.BAD_INPUT,
            "http://a.test closed the connection while receiving an upload of 1000 bytes"
            " (likely over its upload limit)",
        ),
        (
            _refused_connection,
            ExitCode.UNAVAILABLE,
            "cannot reach http://a.test/api/submissions: refused",
        ),
        (
            _server_says_no,
            ExitCode.BAD_INPUT,
            "http://a.test/api/submissions: 403 this bot belongs to \\x1b[31mbob",
        ),
        (
            _server_cannot_compile,
            ExitCode.BAD_INPUT,
            "http://a.test/api/submissions: 422 bot.py cannot be compiled",
        ),
        (
            _server_refusal_saying_cannot_reach,
            ExitCode.BAD_INPUT,
            "http://a.test/api/submissions: 409 cannot reach a verdict",
        ),
    ],
    ids=[
        "reset",
        "broken-pipe",
        "refused",
        "refused-by-server",
        "cannot-compile",
        "server-words",
    ],
)
def test_a_failed_upload_is_one_line_with_its_exit_code(
    capsys: pytest.CaptureFixture[str],
    in_tmp: Path,
    arena: FakeArena,
    failure: Callable[[], dict[str, Any]],
    code: ExitCode,
    said: str,
) -> None:
    arena.upload_answer = failure
    got, out, err = kryt(capsys, "submit", str(make_bot(in_tmp / "m")), "--server", "http://a.test")
    assert got == code, (out, err)
    assert one_error(err) == f"error: {said}"
    assert "\x1b" not in err and not out


HOSTILE_BOT = "[bold]evil[/bold]\x1b]0;PWNED\x07"
HOSTILE_MESSAGE = "crashed: [bold red]MARKUP[/bold red] \r\u202egnp.exe \x9b2J"


def test_text_the_server_sends_is_escaped_and_never_markup(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, arena: FakeArena
) -> None:
    arena.upload_answer = {
        "submission_id": 7,
        "bot": HOSTILE_BOT,
        "version": "1.0\r",
        "created": True,
        "status": "pending",
        "check": {"status": "pending", "message": ""},
    }
    arena.wait_answer = {
        "submission_id": 7,
        "bot": HOSTILE_BOT,
        "version": "1.0\r",
        "status": "rejected\x1b[2J",
        "check": {"status": "failed\u2028", "message": HOSTILE_MESSAGE},
    }
    code, out, err = kryt(capsys, "submit", str(make_bot(in_tmp / "m")), "--server", "http://a.t")
    assert code == ExitCode.OK, (out, err)  # "rejected\x1b[2J" is not "rejected"
    for raw in ("\x1b", "\x07", "\r", "\u202e", "\x9b", "\u2028"):
        assert raw not in out + err, repr(out)
    lines = out.splitlines()
    assert lines[0] == "[bold]evil[/bold]\\x1b]0;PWNED\\x07 1.0\\x0d: uploaded as submission 7"
    assert lines[-1] == (
        "status rejected\\x1b[2J; validation failed\\u2028: crashed: [bold red]MARKUP[/bold red]"
        " \\x0d\\u202egnp.exe \\x9b2J"
    )


# ====================================================================== kryt ratings fit

SYMMETRIC = "first,second,result\na,b,1-0\nb,a,1-0\na,b,0-1\nb,a,0-1\na,b,1/2-1/2\nb,a,1/2-1/2\n"

# Deal pairs (rows 1+2, 3+4, ...); the first mover wins more often than not.
PAIRED = """first,second,result
alpha,bravo,1-0
bravo,alpha,1/2-1/2
bravo,charlie,1-0
charlie,bravo,0-1
alpha,charlie,1-0
charlie,alpha,1/2-1/2
charlie,alpha,1-0
alpha,charlie,1-0
alpha,bravo,1-0
bravo,alpha,1-0
charlie,bravo,1-0
bravo,charlie,1-0
alpha,charlie,0-1
charlie,alpha,1-0
bravo,alpha,1/2-1/2
alpha,bravo,1-0
"""


def csv_file(folder: Path, text: str, name: str = "results.csv") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def parsed(text: str) -> list[tuple[str, str, str]]:
    """The rows of a CSV of these tests (no quoting, no blanks) as (first, second, result)."""
    found = []
    for line in text.strip().splitlines()[1:]:
        first, second, result = line.split(",")
        found.append((first, second, result))
    return found


def tally(text: str) -> dict[str, tuple[int, int, int]]:
    """Wins, draws, losses of each player, counted from the rows."""
    counts: dict[str, list[int]] = {}
    for first, second, result in parsed(text):
        a, b = counts.setdefault(first, [0, 0, 0]), counts.setdefault(second, [0, 0, 0])
        if result == "1-0":
            a[0], b[2] = a[0] + 1, b[2] + 1
        elif result == "0-1":
            a[2], b[0] = a[2] + 1, b[0] + 1
        else:
            a[1], b[1] = a[1] + 1, b[1] + 1
    return {name: (w, d, lo) for name, (w, d, lo) in counts.items()}


def pentanomials(text: str) -> dict[tuple[str, str], list[int]]:
    """Deal-pair points of the alphabetically first bot, counted from rows 1+2, 3+4, ..."""
    points = {"1-0": (1.0, 0.0), "0-1": (0.0, 1.0), "1/2-1/2": (0.5, 0.5)}
    games = parsed(text)
    found: dict[tuple[str, str], list[int]] = {}
    for k in range(0, len(games), 2):
        pair = sorted({games[k][0], games[k][1]})
        mine = 0.0
        for first, _second, result in games[k : k + 2]:
            mine += points[result][0] if first == pair[0] else points[result][1]
        found.setdefault((pair[0], pair[1]), [0] * 5)[round(2 * mine)] += 1
    return found


def table_rows(out: str, title: str) -> list[list[str]]:
    """The body cells of the rich table titled ``title`` in ``out``."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == title)
    body: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            body.append([cell.strip() for cell in line.strip().strip("│").split("│")])
    return body


def fit_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = kryt(capsys, "ratings", "fit", *args, "--json")
    assert code == ExitCode.OK, (out, err)
    data: dict[str, Any] = json.loads(out)
    return data


def scale_of(drawelo: float) -> float:
    x = 10 ** (-drawelo / 400)
    return 4 * x / (1 + x) ** 2


def test_a_symmetric_result_set_rates_both_bots_equal(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    path = csv_file(in_tmp, SYMMETRIC)
    data = fit_json(capsys, str(path))
    assert data["model"] == "bayeselo" and data["prior"] == 2.0 and data["offset"] == 0.0
    assert data["confidence"] == 0.95
    players = data["players"]
    assert [p["name"] for p in players] == ["a", "b"]  # equal ratings: by name
    assert [p["rank"] for p in players] == [1, 2]
    for p in players:
        assert p["rating"] == pytest.approx(0.0, abs=1e-6)
        assert (p["games"], p["wins"], p["draws"], p["losses"]) == (6, 2, 2, 2)
        assert p["score"] == 0.5 and p["draw_rate"] == pytest.approx(1 / 3)
    assert data["advantage"] == pytest.approx(0.0, abs=1e-6)
    assert players[0]["los_next"] == pytest.approx(0.5, abs=1e-6)
    assert players[1]["los_next"] is None
    assert data["scale"] == pytest.approx(scale_of(data["drawelo"]), rel=1e-12)
    code, out, err = kryt(capsys, "ratings", "fit", str(path))
    assert code == ExitCode.OK, (out, err)
    cells = table_rows(out, "BayesElo ratings")
    interval = f"{players[0]['interval']:.1f}"
    assert cells == [
        ["1", "a", "0.0", interval, "6", "50.0", "33.3", "0.500"],
        ["2", "b", "0.0", interval, "6", "50.0", "33.3", ""],
    ]


def test_table_and_json_carry_the_counted_results_and_the_fitted_numbers(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    from leaderboard.ratings import PairCounts, fit_bayeselo, read_games_csv

    path = csv_file(in_tmp, PAIRED)
    data = fit_json(capsys, str(path))
    counted = tally(PAIRED)
    library = fit_bayeselo(PairCounts.from_games(read_games_csv(path)))
    expected_order = [row.name for row in library.table()]
    players = data["players"]
    assert [p["name"] for p in players] == expected_order
    ratings = [p["rating"] for p in players]
    assert ratings == sorted(ratings, reverse=True)
    for rank, (p, row) in enumerate(zip(players, library.table(), strict=True), start=1):
        w, d, lo = counted[p["name"]]
        assert p["rank"] == rank
        assert (p["games"], p["wins"], p["draws"], p["losses"]) == (w + d + lo, w, d, lo)
        assert p["score"] == pytest.approx((w + d / 2) / (w + d + lo), rel=1e-12)
        assert p["draw_rate"] == pytest.approx(d / (w + d + lo), rel=1e-12)
        assert p["rating"] == pytest.approx(row.rating, abs=1e-9)
        assert p["interval"] == pytest.approx(row.interval, abs=1e-9)
    for upper, lower in pairwise(players):
        assert upper["los_next"] == pytest.approx(library.los(upper["name"], lower["name"]))
    assert players[-1]["los_next"] is None
    assert data["advantage"] != 0.0  # fitted: the first mover wins more often here
    code, out, err = kryt(capsys, "ratings", "fit", str(path))
    assert code == ExitCode.OK, (out, err)
    assert flat(out).count("BayesElo ratings") == 1
    cells = table_rows(out, "BayesElo ratings")
    assert cells == [
        [
            str(p["rank"]),
            p["name"],
            f"{p['rating']:.1f}",
            f"{p['interval']:.1f}",
            str(p["games"]),
            f"{100 * p['score']:.1f}",
            f"{100 * p['draw_rate']:.1f}",
            "" if p["los_next"] is None else f"{p['los_next']:.3f}",
        ]
        for p in players
    ]
    caption = (
        f"prior 2 virtual draws, first-mover advantage {data['advantage']:.1f}, drawelo"
        f" {data['drawelo']:.1f}, scale {scale_of(data['drawelo']):.4f}, 95% intervals"
    )
    assert caption in flat(out)
    header = next(line for line in out.splitlines() if "Rank" in line)
    assert [c.strip() for c in header.strip().strip("┃").split("┃")] == [
        "Rank", "Bot", "Rating", "±", "Games", "Score %", "Draws %", "LOS next",
    ]  # fmt: skip


def test_fixed_advantage_and_drawelo_are_used_as_given(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    path = csv_file(in_tmp, PAIRED)
    data = fit_json(capsys, str(path), "--advantage", "37", "--drawelo", "97.3")
    assert data["advantage"] == 37.0 and data["drawelo"] == 97.3
    assert data["scale"] == pytest.approx(scale_of(97.3), rel=1e-12)
    only_advantage = fit_json(capsys, str(path), "--advantage", "0")
    assert only_advantage["advantage"] == 0.0 and only_advantage["drawelo"] != 97.3
    only_drawelo = fit_json(capsys, str(path), "--drawelo", "150")
    assert only_drawelo["drawelo"] == 150.0 and only_drawelo["advantage"] != 0.0
    for options in (("--paired",), ()):
        paired = fit_json(capsys, str(path), *options, "--advantage", "-20", "--drawelo", "80")
        assert paired["advantage"] == -20.0 and paired["drawelo"] == 80.0
    code, out, _ = kryt(
        capsys, "ratings", "fit", str(path), "--advantage", "-0.04", "--drawelo", "97.3"
    )
    assert code == ExitCode.OK
    assert (
        f"first-mover advantage 0.0, drawelo 97.3, scale {scale_of(97.3):.4f}, 95% intervals"
        in flat(out)
    )


@pytest.mark.parametrize("paired", [False, True], ids=["per-game", "paired"])
def test_prior_offset_and_confidence_reach_the_fit(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, paired: bool
) -> None:
    path = csv_file(in_tmp, PAIRED)
    mode = ("--paired",) if paired else ()
    base = fit_json(capsys, str(path), *mode)
    shifted = fit_json(capsys, str(path), *mode, "--offset", "1500")
    assert shifted["offset"] == 1500.0
    for p, q in zip(base["players"], shifted["players"], strict=True):
        assert q["rating"] == pytest.approx(p["rating"] + 1500, abs=1e-6)
    narrow = fit_json(capsys, str(path), *mode, "--confidence", "0.9")
    assert narrow["confidence"] == 0.9
    ratio = NormalDist().inv_cdf(0.95) / NormalDist().inv_cdf(0.975)
    keys = ("interval", "interval_paired") if paired else ("interval",)
    for p, q in zip(base["players"], narrow["players"], strict=True):
        for key in keys:
            assert q[key] == pytest.approx(p[key] * ratio, rel=1e-6)
    other_prior = fit_json(capsys, str(path), *mode, "--prior", "0.5")
    assert other_prior["prior"] == 0.5
    assert other_prior["players"][0]["rating"] != pytest.approx(base["players"][0]["rating"])
    code, out, _ = kryt(
        capsys, "ratings", "fit", str(path), *mode, "--prior", "0.5", "--confidence", "0.9995"
    )
    assert code == ExitCode.OK
    assert "prior 0.5 virtual draws" in flat(out) and "99.95% intervals" in flat(out)


def test_paired_mode_adds_paired_columns_and_the_pentanomials(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    from leaderboard.ratings import pair_consecutive, paired_intervals, read_games_csv

    path = csv_file(in_tmp, PAIRED)
    data = fit_json(capsys, str(path), "--paired")
    library = paired_intervals(pair_consecutive(read_games_csv(path)))
    players = data["players"]
    assert data["paired_method"] == "sandwich"
    for upper, lower in pairwise(players):
        assert upper["los_next_paired"] == pytest.approx(library.los(upper["name"], lower["name"]))
    assert players[-1]["los_next_paired"] is None
    by_name = library.by_name()
    for p in players:
        assert p["interval_paired"] == pytest.approx(by_name[p["name"]][1])
        assert p["interval_paired"] != pytest.approx(p["interval"])
    counted = pentanomials(PAIRED)
    assert data["pentanomials"] == [
        {"player": a, "opponent": b, "counts": counts} for (a, b), counts in sorted(counted.items())
    ]
    code, out, err = kryt(capsys, "ratings", "fit", str(path), "--paired")
    assert code == ExitCode.OK, (out, err)
    assert table_rows(out, "BayesElo ratings") == [
        [
            str(p["rank"]),
            p["name"],
            f"{p['rating']:.1f}",
            f"{p['interval']:.1f}",
            f"{p['interval_paired']:.1f}",
            str(p["games"]),
            f"{100 * p['score']:.1f}",
            f"{100 * p['draw_rate']:.1f}",
            "" if p["los_next"] is None else f"{p['los_next']:.3f}",
            "" if p["los_next_paired"] is None else f"{p['los_next_paired']:.3f}",
        ]
        for p in players
    ]
    pent_rows = table_rows(out, "Deal pairs (paired intervals: sandwich)")
    assert pent_rows == [
        [
            f"{a} v {b}",
            *map(str, counts),
            f"{100 * sum(k * 0.5 * c for k, c in enumerate(counts)) / (2 * sum(counts)):.1f}",
        ]
        for (a, b), counts in sorted(counted.items())
    ]
    header = next(line for line in out.splitlines() if "Pairing" in line)
    assert [c.strip() for c in header.strip().strip("┃").split("┃")] == [
        "Pairing", "0", "½", "1", "1½", "2", "Score %",
    ]  # fmt: skip
    # Without --paired: no paired column, no pentanomials.
    code, out, _ = kryt(capsys, "ratings", "fit", str(path))
    assert "paired" not in out and "Deal pairs" not in out
    assert "pentanomials" not in fit_json(capsys, str(path))


@pytest.mark.parametrize(
    ("text", "options", "said"),
    [
        (None, (), "error: cannot read {path}: No such file or directory"),
        ("dir", (), "error: {path} is a directory, not a CSV file"),
        (
            "first,second,result\na,b,1-0\na,b,2-0\n",
            (),
            "error: {path}:3: unknown result '2-0'; expected one of 1-0, 0-1, 1/2-1/2: 'a,b,2-0'",
        ),
        ('first,second,result\n"\x1b[2Jx",b,1-0\n', (), "error: {path}:2: "),
        ("first,second,result\na,b,1-0\nc,d,1-0\n", (), "never played each other"),
        (SYMMETRIC, ("--prior", "1e17"), "error: prior"),
        (SYMMETRIC, ("--prior", "-1"), "error: prior"),
        (SYMMETRIC, ("--confidence", "1.5"), "error: confidence must be between 0 and 1"),
        (SYMMETRIC + "a,b,1-0\n", ("--paired",), "cannot be split into deal pairs"),
    ],
    ids=[
        "missing", "directory", "bad-result", "escape-in-name", "disconnected",
        "huge-prior", "negative-prior", "confidence", "odd-rows",
    ],
)  # fmt: skip
def test_ratings_errors_are_one_line_exit_2_through_main_and_the_app(
    capsys: pytest.CaptureFixture[str],
    in_tmp: Path,
    text: str | None,
    options: tuple[str, ...],
    said: str,
) -> None:
    path = in_tmp / "results.csv"
    if text == "dir":
        path.mkdir()
    elif text is not None:
        path.write_text(text)
    expected = said.format(path=path)
    code, out, err = kryt(capsys, "ratings", "fit", str(path), *options)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert not out and len(err.splitlines()) == 1, err
    assert expected in one_error(err) and "\x1b" not in err
    if not said.startswith("error: "):
        assert err.startswith("error: ")
    # The command's own handling, without kryt.cli.main's classification behind it.
    result = CliRunner().invoke(_ratings_app(), ["fit", str(path), *options])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert expected in result.output and "Traceback" not in result.output


def test_a_device_given_as_results_is_one_line_exit_2(tmp_path: Path) -> None:
    """In a process of its own whose address space is capped at 600 MB: the reading that
    runs away hits the cap in a second or two instead of taking the machine's memory."""
    import resource
    import subprocess
    import sys

    from tests.kryt_subprocess import clean_env

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (600 * 2**20, 600 * 2**20))

    done = subprocess.run(
        [sys.executable, "-m", "kryt", "ratings", "fit", "/dev/zero"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        env=clean_env(),
        preexec_fn=capped,
    )
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr[-2000:]
    assert one_error(done.stderr).startswith("error: /dev/zero")


def test_results_from_a_pipe_are_read_as_a_stream(tmp_path: Path) -> None:
    """``kryt ratings fit <(cmd)``: the shell gives /dev/fd/N, an open pipe; it is read to
    its end (a pipe is not refused as a device is)."""
    import subprocess
    import sys
    import threading

    from tests.kryt_subprocess import clean_env

    read_end, write_end = os.pipe()

    def write() -> None:
        rows = "alpha,bravo,1-0\nbravo,alpha,1-0\nalpha,bravo,1/2-1/2\nbravo,alpha,1/2-1/2\n"
        os.write(write_end, b"first,second,result\n" + rows.encode())
        os.close(write_end)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        done = subprocess.run(
            [
                *(sys.executable, "-m", "kryt", "ratings", "fit", f"/dev/fd/{read_end}"),
                *("--json", "--advantage", "0"),
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
            env=clean_env(),
            pass_fds=(read_end,),
        )
    finally:
        writer.join(60)
        os.close(read_end)
    assert done.returncode == 0, done.stderr[-2000:]
    players = {p["name"]: p for p in json.loads(done.stdout)["players"]}
    alpha = players["alpha"]
    assert (alpha["wins"], alpha["draws"], alpha["losses"]) == (1, 2, 1)


def _ratings_app() -> Any:
    from kryt.commands.ratings import app

    return app


def test_a_file_name_with_an_escape_is_shown_escaped(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    path = in_tmp / "res\x1b[2Jults.csv"
    code, out, err = kryt(capsys, "ratings", "fit", str(path))
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert one_error(err) == (
        f"error: cannot read {in_tmp}/res\\x1b[2Jults.csv: No such file or directory"
    )


@pytest.mark.skipif(
    not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0,
    reason="root reads any file",
)
def test_an_unreadable_file_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    path = csv_file(in_tmp, SYMMETRIC)
    path.chmod(0)
    try:
        code, out, err = kryt(capsys, "ratings", "fit", str(path))
    finally:
        path.chmod(0o600)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert one_error(err) == f"error: cannot read {path}: Permission denied"


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (("--confidence", "high"), "Invalid value for '--confidence'"),
        (("--prior", "two"), "Invalid value for '--prior'"),
        (("--paird",), "No such option: --paird"),
        ((), "Missing argument 'file'"),
    ],
)
def test_a_wrong_flag_value_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, options: tuple[str, ...], said: str
) -> None:
    path = csv_file(in_tmp, SYMMETRIC)
    args = (str(path), *options) if options else ()
    code, out, err = kryt(capsys, "ratings", "fit", *args)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert one_error(err).startswith(f"error: {said}"), err
    assert "hint: see kryt ratings fit --help" in err


def test_the_default_output_is_the_table_and_json_is_only_json(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    path = csv_file(in_tmp, SYMMETRIC)
    code, out, _ = kryt(capsys, "ratings", "fit", str(path))
    assert code == ExitCode.OK and "BayesElo ratings" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)
    code, out, err = kryt(capsys, "ratings", "fit", str(path), "--json")
    assert code == ExitCode.OK and not err
    assert json.loads(out)["players"][0]["name"] == "a"
    assert math.isfinite(json.loads(out)["players"][0]["interval"])


def test_a_bot_name_that_looks_like_markup_is_printed_as_written(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    """A name is the CSV's text: rich markup in it is shown, not applied (or dropped)."""
    evil = "[red]evil[/red]"
    text = f"first,second,result\n{evil},b,1-0\nb,{evil},1-0\n{evil},b,0-1\nb,{evil},0-1\n"
    path = csv_file(in_tmp, text)
    code, out, err = kryt(capsys, "ratings", "fit", str(path), "--paired")
    assert code == ExitCode.OK, (out, err)
    assert [row[1] for row in table_rows(out, "BayesElo ratings")] == [evil, "b"]
    assert [row[0] for row in table_rows(out, "Deal pairs (paired intervals: sandwich)")] == [
        f"{evil} v b"
    ]
