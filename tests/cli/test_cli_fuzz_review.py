"""An outside review's systematic fuzzing of the ``kryt`` command line (2026-12-06).

The promise under test: bad input of every kind (a wrong flag, a malformed value, a missing or
damaged database, a path that is a directory or cannot be read, control characters in names)
is one ``error:`` line (and a ``hint:``), never a traceback, a non-zero exit code, control
characters shown escaped, and a database given to a refused command left byte for byte as it
was. The command tree is walked from the Typer app (``kryt.cli.app``, the ``kryt`` entry
point), so a command added later without a base invocation here fails
:func:`test_every_command_of_the_tree_has_a_base_invocation`.

Commands run in process (:func:`kryt.cli.main`, what the console script calls); a sample runs
through the real console script to show it behaves the same. What does not hold is kept as
``xfail(strict=True)`` tests asserting the right behaviour, each naming the cause.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kryt.cli import COMMANDS, app, load_command, main
from kryt.errors import ExitCode
from kryt.options import MAX_ID
from tests.cli.helpers import finished_games_db

KRYT = Path(sys.executable).with_name("kryt")
"""The console script of this environment (``.venv/bin/kryt``)."""

SUBPROCESS_TIMEOUT = 180.0
"""Seconds a ``kryt`` process may take on a busy machine (it imports in about a second)."""

EXAMPLE_BOT = Path(__file__).resolve().parents[2] / "sdk" / "examples" / "random"

MARKER = "Zq9"
"""A printable piece of every hostile value: the error must name the value given."""

HOSTILE_TEXT = "\x1b[2J\x1b]0;PWN\x07\u202eevil\r\n"
"""Control characters a terminal obeys: clear screen, retitle, bell, bidi override, CR, LF."""


# --------------------------------------------------------------------------- running kryt


@dataclass(frozen=True)
class Run:
    """One ``kryt`` invocation: exit code (None: an exception escaped, i.e. a traceback)."""

    code: int | None
    out: str
    err: str
    crash: str = ""

    @property
    def text(self) -> str:
        return self.out + self.err + self.crash


def kryt(*args: str) -> Run:
    """``kryt ARGS...`` in this process, as the console script runs it."""
    out, err = io.StringIO(), io.StringIO()
    crash = ""
    code: int | None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = int(main(list(args)))
        except Exception as exc:  # what the console script would show as a traceback
            code = None
            crash = f"Traceback: {type(exc).__name__}: {exc}"
    return Run(code, out.getvalue(), err.getvalue(), crash)


def kryt_process(
    *args: str | bytes, cwd: Path, user: int | None = None, timeout: float = SUBPROCESS_TIMEOUT
) -> tuple[int, str, str]:
    """``kryt ARGS...`` through the console script (``user``: as that uid); exit code and
    the output decoded as a terminal would get it (raw bytes kept as surrogates)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "COLUMNS": "200"}
    env.pop("KRYT_DATABASE_URL", None)
    done = subprocess.run(
        [os.fsencode(KRYT), *(a if isinstance(a, bytes) else os.fsencode(a) for a in args)],
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
        user=user,
        group=user,
        extra_groups=[] if user is not None else None,
    )
    return done.returncode, _decoded(done.stdout), _decoded(done.stderr)


def _decoded(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def raw_controls(text: str) -> list[str]:
    """The control, format and separator characters of ``text`` a terminal would obey (a
    newline between lines and a tab are layout)."""
    return [
        ch
        for ch in text
        if ch not in "\n\t" and unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"}
    ]


def assert_refused(run: Run, *codes: int) -> None:
    """``run`` is a refusal as promised: no traceback, a non-zero exit (one of ``codes`` when
    given), one ``error:`` line (and at most a ``hint:``), no raw control character."""
    assert run.code is not None, run.crash
    assert "Traceback" not in run.text, run.text
    assert run.code != 0, run.text
    if codes:
        assert run.code in codes, (run.code, run.err)
    messages = [line for line in run.err.splitlines() if line.startswith(("error:", "hint:"))]
    assert [m for m in messages if m.startswith("error:")], run.err
    assert len(messages) <= 2, run.err
    assert not raw_controls(run.text), repr(run.text)


# --------------------------------------------------------------------------- files


def digest(folder: Path, *, sidecars: bool = False) -> dict[str, str]:
    """Every file and folder under ``folder`` with a hash of its bytes. SQLite's shared
    memory file and an empty write-ahead log, which reading a WAL database makes beside it,
    are left out unless ``sidecars`` (a database refused must not get even those)."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if not sidecars and (
            key.endswith("-shm") or (key.endswith("-wal") and path.stat().st_size == 0)
        ):
            continue
        found[key] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.fixture(scope="module")
def pristine_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file with a finished tournament of two games (made once per module)."""
    return finished_games_db(tmp_path_factory.mktemp("pristine"))


@pytest.fixture
def world(tmp_path: Path, pristine_db: Path) -> Path:
    """A folder holding a copy of the games database as ``games.db`` and a results CSV."""
    folder = tmp_path / "world"
    folder.mkdir()
    shutil.copy(pristine_db, folder / "games.db")
    (folder / "results.csv").write_text("first,second,result\na,b,1-0\nb,a,1/2-1/2\n")
    bot = folder / "mybot"
    shutil.copytree(EXAMPLE_BOT, bot)
    manifest = bot / "bot.toml"
    manifest.write_text(manifest.read_text().replace('name = "random"', 'name = "mybot"'))
    return folder


# --------------------------------------------------------------------------- the command tree


def leaf_commands() -> dict[str, Any]:
    """Every command of ``kryt`` that runs (a group with options of its own too, such as
    ``kryt leaderboard``), by its path: ``"tournament run"``."""
    root = typer.main.get_command(app)
    found: dict[str, Any] = {}

    def walk(command: Any, path: list[str]) -> None:
        subcommands = getattr(command, "commands", None)
        if path and (subcommands is None or command.params):
            found[" ".join(path)] = command
        if subcommands is None:
            return
        names = set(subcommands) | (set(COMMANDS) if not path else set())
        for name in sorted(names):
            walk(subcommands.get(name) or load_command(name), [*path, name])

    walk(root, [])
    return found


LEAVES = leaf_commands()

BASE: dict[str, list[str]] = {
    "arena author add": ["arena", "author", "add", "zed", "-d", "{db}"],
    "arena author disable": ["arena", "author", "disable", "zed", "-d", "{db}"],
    "arena author enable": ["arena", "author", "enable", "zed", "-d", "{db}"],
    "arena author list": ["arena", "author", "list", "-d", "{db}"],
    "arena invite create": ["arena", "invite", "create", "-d", "{db}"],
    "arena invite list": ["arena", "invite", "list", "-d", "{db}"],
    "arena serve": ["arena", "serve", "--port", "0", "--no-ladder", "-d", "{db}"],
    "arena token create": ["arena", "token", "create", "zed", "-d", "{db}"],
    "arena token list": ["arena", "token", "list", "zed", "-d", "{db}"],
    "arena token revoke": ["arena", "token", "revoke", "1", "-d", "{db}"],
    "bot check": ["bot", "check", "builtin:random"],
    "bot new": ["bot", "new", "fuzzed", "--dir", "{dir}"],
    "demo": ["demo", "--html", "{dir}/site", "-d", "{db}"],
    "games export": ["games", "export", "{dir}/out.kgn", "-d", "{db}"],
    "games import": ["games", "import", "{dir}/results.csv", "-d", "{db}"],
    "games list": ["games", "list", "-d", "{db}"],
    "leaderboard": ["leaderboard", "-d", "{db}"],
    "leaderboard serve": ["leaderboard", "serve", "-d", "{db}"],
    "play": ["play", "builtin:random", "builtin:greedy"],
    "ratings fit": ["ratings", "fit", "{dir}/results.csv"],
    "replay": ["replay", "1", "-d", "{db}"],
    "submissions": ["submissions", "--server", "http://127.0.0.1:9"],
    "submit": ["submit", "{dir}/mybot", "--store", "{dir}/store", "-d", "{db}"],
    "tournament cancel": ["tournament", "cancel", "1", "-d", "{db}"],
    "tournament extend": ["tournament", "extend", "1", "--games", "2", "-d", "{db}"],
    "tournament resume": ["tournament", "resume", "1", "-d", "{db}"],
    "tournament run": [
        "tournament",
        "run",
        "builtin:random",
        "builtin:greedy",
        "--backend",
        "process",
        "--store",
        "{dir}/store",
        "-d",
        "{db}",
    ],
    "tournament set": ["tournament", "set", "1", "name=x", "-d", "{db}"],
    "tournament status": ["tournament", "status", "-d", "{db}"],
}
"""A valid invocation of every command; the tests add one hostile piece to it (last, so
that it wins over the base's own value). ``{db}`` is the games database, ``{dir}`` its
folder."""


def base(command: str, folder: Path) -> list[str]:
    return [
        part.replace("{db}", str(folder / "games.db")).replace("{dir}", str(folder))
        for part in BASE[command]
    ]


def value_options(command: str) -> list[Any]:
    """The options of ``command`` that take a value (flags and arguments left out)."""
    return [
        p
        for p in LEAVES[command].params
        if p.opts[0].startswith("-") and not getattr(p, "is_flag", False)
    ]


def typed_options(kind: str) -> list[tuple[str, str, Any]]:
    """``(command, option, param)`` for every option whose values are of type ``kind``."""
    return [
        (command, p.opts[0], p)
        for command in sorted(LEAVES)
        for p in value_options(command)
        if p.bare_type() == kind  # the annotation's name: "int", "float", "list[str]"
    ]


NOT_INTEGERS = ["abc", "1.5", "nan", "inf", "1e309", "0x10", f"{MARKER}\x1b[31m"]
NOT_NUMBERS = ["abc", "1,5", "½", "1e", f"{MARKER}\u202e"]


def test_every_command_of_the_tree_has_a_base_invocation() -> None:
    assert set(LEAVES) == set(BASE)
    assert len(LEAVES) >= 25  # the walk found the lazily loaded groups too


@pytest.mark.parametrize(
    ("command", "option"), [(c, o) for c, o, _ in typed_options("int")], ids=lambda x: str(x)
)
def test_a_whole_number_option_refuses_what_is_no_whole_number(
    world: Path, command: str, option: str
) -> None:
    """Every integer option of every command: a usage error (exit 2) naming the option and
    the value, before anything is opened or written."""
    before = digest(world)
    for value in NOT_INTEGERS:
        run = kryt(*base(command, world), option, value)
        assert_refused(run, ExitCode.BAD_INPUT)
        assert option in run.err or option.lstrip("-") in run.err, run.err
        if MARKER in value:
            assert MARKER in run.err and "\\x1b" in run.err, run.err
    assert digest(world) == before


@pytest.mark.parametrize(
    ("command", "option", "param"),
    [t for t in typed_options("int") if t[2].min is not None or t[2].max is not None],
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_a_bounded_option_refuses_numbers_out_of_its_range(
    world: Path, command: str, option: str, param: Any
) -> None:
    before = digest(world)
    values = []
    if param.min is not None:
        values += [str(param.min - 1), str(-(10**30))]
    if param.max is not None:
        values += [str(param.max + 1), str(10**30)]
    for value in values:
        run = kryt(*base(command, world), option, value)
        assert_refused(run, ExitCode.BAD_INPUT)
        assert value in run.err, run.err
    assert digest(world) == before


@pytest.mark.parametrize(
    ("command", "option"), [(c, o) for c, o, _ in typed_options("float")], ids=lambda x: str(x)
)
def test_a_number_option_refuses_what_is_no_number(world: Path, command: str, option: str) -> None:
    before = digest(world)
    for value in NOT_NUMBERS:
        run = kryt(*base(command, world), option, value)
        assert_refused(run, ExitCode.BAD_INPUT)
        assert option in run.err, run.err
    assert digest(world) == before


@pytest.mark.parametrize("command", sorted(BASE))
def test_an_unknown_option_and_an_option_without_its_value_are_usage_errors(
    world: Path, command: str
) -> None:
    """Every command: an option it does not have, and each of its options given last without
    a value, is exit 2 naming the option; nothing is written."""
    before = digest(world)
    run = kryt(*base(command, world), f"--{MARKER}-nope")
    assert_refused(run, ExitCode.BAD_INPUT)
    assert f"--{MARKER}-nope" in run.err
    for param in value_options(command):
        option = param.opts[-1] if param.opts[-1].startswith("--") else param.opts[0]
        run = kryt(*base(command, world), option)
        assert_refused(run, ExitCode.BAD_INPUT)
        assert option in run.err, (option, run.err)
    assert digest(world) == before


# --------------------------------------------------------------------------- bad databases


def _newer(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
        connection.commit()


def _damaged_revision(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("DELETE FROM alembic_version")
        connection.commit()


def _foreign(path: Path) -> None:
    path.unlink()
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("CREATE TABLE notes (body TEXT)")
        connection.commit()


def _text(path: Path) -> None:
    path.write_text("not a database\n")


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _scribbled(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for offset in range(4096, len(data), 8192):  # every other page, the schema's included
        data[offset : offset + 512] = bytes((offset + i) % 251 for i in range(512))
    path.write_bytes(bytes(data))


def _bad_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[16:24] = b"\xff" * 8  # page size and format bytes no SQLite writes
    path.write_bytes(bytes(data))


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


BAD_DATABASES = {
    "newer-revision": _newer,
    "empty-revision-table": _damaged_revision,
    "another-applications": _foreign,
    "text-file": _text,
    "truncated": _truncated,
    "scribbled-pages": _scribbled,
    "bad-header": _bad_header,
    "directory": _directory,
}

SERVING = {"arena serve", "leaderboard serve", "demo"}
"""Commands that would serve or play were the database accepted: checked in a subprocess."""


def database_commands() -> list[str]:
    return sorted(
        c for c in LEAVES if "--database" in {o for p in LEAVES[c].params for o in p.opts}
    )


def test_the_bad_database_sweep_covers_every_command_with_a_database_option() -> None:
    assert "games list" in database_commands()
    assert all(c in BASE for c in database_commands())


@pytest.mark.parametrize("kind", sorted(BAD_DATABASES))
def test_every_command_refuses_an_unusable_database_and_leaves_it_as_it_was(
    world: Path, kind: str
) -> None:
    """Every command taking ``--database``, on a database it cannot use: exit 3, one line, and
    the file (and its folder: no ``-wal``/``-shm`` beside it) byte for byte as it was."""
    BAD_DATABASES[kind](world / "games.db")
    (world / "results.csv").write_text("")  # `games import`: an empty game file is valid
    before = digest(world, sidecars=True)
    for command in database_commands():
        if command in SERVING:
            continue
        run = kryt(*base(command, world))
        assert_refused(run, ExitCode.UNAVAILABLE)
        assert "games.db" in run.err, (command, run.err)
        assert digest(world, sidecars=True) == before, command


def test_a_database_of_a_newer_revision_names_both_revisions(world: Path) -> None:
    _newer(world / "games.db")
    before = digest(world)
    run = kryt("leaderboard", "-d", str(world / "games.db"))
    assert_refused(run, ExitCode.UNAVAILABLE)
    assert "9999_from_the_future" in run.err and "upgrade" in run.err, run.err
    assert digest(world) == before


@pytest.mark.parametrize("command", sorted(SERVING))
def test_serving_commands_refuse_a_text_file_as_the_database(world: Path, command: str) -> None:
    _text(world / "games.db")
    before = digest(world)
    code, out, err = kryt_process(*base(command, world), cwd=world)
    assert code == ExitCode.UNAVAILABLE, err
    assert "Traceback" not in out + err and "error:" in err
    assert (world / "games.db").read_text() == "not a database\n"
    # `demo` makes its site's folders before opening the database (a finding below).
    assert {k: v for k, v in digest(world).items() if not k.startswith("site")} == before


BAD_URLS = [
    ("sqlite://", ExitCode.BAD_INPUT, "in-memory"),
    ("sqlite:///:memory:", ExitCode.BAD_INPUT, "in-memory"),
    ("mysql://user@host/db", ExitCode.BAD_INPUT, "mysql"),
    ("postgresql://u:s3cr3t@h:99999/db", ExitCode.BAD_INPUT, "99999"),
    ("postgresql://u:s3cr3t@[::1/db", ExitCode.BAD_INPUT, "[::1"),
    ("postgresql://u:s3cr3t@h/", ExitCode.BAD_INPUT, "no database name"),
    ("sqlite:///x%00y.db", ExitCode.BAD_INPUT, "NUL"),
    ("~no-such-user-zq9/k.db", ExitCode.BAD_INPUT, "home folder"),
    ("{dir}/missing-folder/k.db", ExitCode.UNAVAILABLE, "missing-folder"),
    ("{dir}/results.csv/k.db", ExitCode.UNAVAILABLE, "results.csv"),
    ("postgresql://u:s3cr3t@127.0.0.1:1/db", ExitCode.UNAVAILABLE, "127.0.0.1"),
]


@pytest.mark.parametrize(("url", "code", "named"), BAD_URLS)
def test_a_malformed_or_unreachable_database_url_is_one_line(
    world: Path, url: str, code: int, named: str
) -> None:
    url = url.replace("{dir}", str(world))
    before = digest(world)
    for command in ("games list", "arena author add", "tournament status"):
        run = kryt(*BASE[command][:-2], "-d", url)
        assert_refused(run, code)
        assert named in run.err, run.err
        assert "s3cr3t" not in run.text  # the password is masked
    assert digest(world) == before


# --------------------------------------------------------------------------- ids that do not exist


ID_COMMANDS = [
    (["replay", "{id}"], "no game with id"),
    (["tournament", "status", "{id}"], "no tournament with id"),
    (["tournament", "cancel", "{id}"], "no tournament with id"),
    (["tournament", "resume", "{id}"], "no tournament with id"),
    (["tournament", "extend", "{id}", "--games", "2"], "no tournament with id"),
    (["tournament", "set", "{id}", "name=x"], "no tournament with id"),
    (["games", "list", "-t", "{id}"], "no tournament with id"),
    (["games", "export", "{dir}/o.kgn", "-t", "{id}"], "no tournament with id"),
    (["leaderboard", "-t", "{id}"], "no tournament with id"),
    (["arena", "token", "revoke", "{id}"], "no API token with id"),
]


@pytest.mark.parametrize(("args", "said"), ID_COMMANDS, ids=lambda x: str(x))
def test_an_id_that_is_not_stored_is_named_and_changes_nothing(
    world: Path, args: list[str], said: str
) -> None:
    before = digest(world)
    for key in ("424242", str(MAX_ID)):
        filled = [a.replace("{id}", key).replace("{dir}", str(world)) for a in args]
        run = kryt(*filled, "-d", str(world / "games.db"))
        assert_refused(run, ExitCode.BAD_INPUT)
        assert f"{said} {key}" in run.err, run.err
    assert digest(world) == before


# --------------------------------------------------------------------------- generated input


FUZZ_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
ANY_TEXT = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]))
CONTROL = st.sampled_from(
    ["\x1b[2J", "\x1b]0;x\x07", "\x07", "\r", "\n", "\u202e", "\u200f", "\x9b"]
)


@FUZZ_SETTINGS
@given(key=ANY_TEXT.filter(lambda s: s != "" and not s.startswith("--")))
def test_any_text_as_a_game_id_is_a_usage_error_or_not_found(world: Path, key: str) -> None:
    missing = world / "none.db"
    run = kryt("replay", key, "-d", str(missing))
    assert_refused(run, ExitCode.BAD_INPUT, ExitCode.UNAVAILABLE)
    assert not missing.exists()


@FUZZ_SETTINGS
@given(name=st.lists(st.one_of(CONTROL, st.text("ab/-_ é", max_size=3)), min_size=1, max_size=6))
def test_any_missing_database_path_is_named_escaped(world: Path, name: list[str]) -> None:
    path = world / "nowhere" / f"{MARKER}{''.join(name)}.db"
    run = kryt("games", "list", "-d", str(path))
    assert_refused(run, ExitCode.UNAVAILABLE)
    assert MARKER in run.err, run.err
    assert not (world / "nowhere").exists()


STRING_OPTIONS = [
    ["games", "list", "-d", "{db}", "--result"],
    ["games", "list", "-d", "{db}", "--reason"],
    ["games", "export", "{dir}/x.kgn", "-d", "{db}", "--format"],
    ["leaderboard", "-d", "{db}", "--ruleset"],
    ["play", "builtin:random", "builtin:greedy", "--backend", "process", "--format"],
    ["play", "builtin:random", "builtin:greedy", "--backend", "process", "--clock"],
    ["play", "builtin:random", "builtin:greedy", "--backend", "process", "--sprt"],
    ["play", "builtin:random", "builtin:greedy", "--backend", "process", "--time"],
    ["bot", "new", "--dir", "{dir}", "--", "{value}"],
    ["bot", "new", "ok", "--dir", "{dir}", "--language"],
    ["tournament", "run", "builtin:random", "builtin:greedy", "-d", "{db}", "--backend"],
    ["submissions", "--server"],
]


@FUZZ_SETTINGS
@given(
    which=st.integers(0, len(STRING_OPTIONS) - 1),
    pieces=st.lists(st.one_of(CONTROL, st.text("ab +,", max_size=3)), min_size=1, max_size=5),
)
def test_control_characters_of_a_refused_value_are_shown_escaped(
    world: Path, which: int, pieces: list[str]
) -> None:
    """A value with control characters, refused by a string option: exit 2, the value named
    with every control character escaped, and nothing written."""
    value = MARKER + "".join(pieces)
    template = STRING_OPTIONS[which]
    args = [
        a.replace("{db}", str(world / "games.db")).replace("{dir}", str(world)) for a in template
    ]
    args = [a.replace("{value}", value) for a in args]
    if not any(value in a for a in args):
        args.append(value)
    before = digest(world)
    run = kryt(*args)
    assert_refused(run, ExitCode.BAD_INPUT)
    assert MARKER in run.err, run.err
    assert digest(world) == before


# --------------------------------------------------------------------------- files


def test_paths_that_are_directories_or_devices_are_one_line(world: Path) -> None:
    db = str(world / "games.db")
    cases = [
        ["ratings", "fit", str(world)],
        ["games", "import", str(world), "-d", db],
        ["games", "export", str(world), "-d", db],
        ["games", "export", "/dev/full", "-d", db],
        ["tournament", "run", "--config", str(world), "-d", db],
        ["play", "builtin:random", "builtin:greedy", "--book", str(world)],
        ["leaderboard", "--html", str(world / "results.csv"), "-d", db],
        ["submit", str(world / "mybot"), "--store", str(world / "results.csv"), "-d", db],
        ["bot", "new", "ok", "--dir", str(world / "results.csv")],
        ["arena", "serve", "--no-ladder", "--port", "0", "--port-file", str(world), "-d", db],
    ]
    before = digest(world)
    for args in cases:
        run = kryt(*args)
        assert_refused(run, ExitCode.BAD_INPUT)
    assert digest(world) == before


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder every user may enter (pytest's own are private to their owner)."""
    folder = Path(tempfile.mkdtemp(prefix="kryt-fuzz-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_files_that_cannot_be_read_are_one_line(shared_folder: Path, pristine_db: Path) -> None:
    """chmod 000 files: read as an unprivileged user (as root, chmod does not stop reads, so
    the command runs as ``nobody``)."""
    user = 65534 if os.geteuid() == 0 else None
    for name, text in (
        ("results.csv", "first,second,result\na,b,1-0\n"),
        ("games.kgn", ""),
        ("cup.toml", 'bots = ["builtin:random", "builtin:greedy"]\n'),
        ("book.txt", "# empty\n"),
    ):
        (shared_folder / name).write_text(text)
    shutil.copy(pristine_db, shared_folder / "games.db")
    writable = shared_folder / "out"
    writable.mkdir()
    writable.chmod(0o777)
    for path in shared_folder.iterdir():
        if path.is_file():
            path.chmod(0)
    before = digest(shared_folder)
    cases = [
        (["ratings", "fit", "results.csv"], ExitCode.BAD_INPUT, "results.csv"),
        (["games", "import", "games.kgn", "-d", "out/new.db"], ExitCode.BAD_INPUT, "games.kgn"),
        (
            ["tournament", "run", "--config", "cup.toml", "-d", "out/t.db"],
            ExitCode.BAD_INPUT,
            "cup",
        ),
        (
            ["play", "builtin:random", "builtin:greedy", "--book", "book.txt"],
            ExitCode.BAD_INPUT,
            "book.txt",
        ),
        (["games", "list", "-d", "games.db"], ExitCode.UNAVAILABLE, "games.db"),
    ]
    for args, expected, named in cases:
        code, out, err = kryt_process(*args, cwd=shared_folder, user=user)
        assert code == expected, (args, out, err)
        assert "Traceback" not in out + err and named in err, (args, err)
        assert "error:" in err
    assert digest(shared_folder) == before


# --------------------------------------------------------------------------- the console script


def test_the_console_script_refuses_as_the_function_does(world: Path) -> None:
    """A sample through ``.venv/bin/kryt``: the same exit code and first line as in process,
    raw bytes never echoed."""
    _text(world / "games.db")
    before = digest(world)
    samples = [
        ["replay", "abc"],
        ["games", "list", "--limit", "0", "-d", "games.db"],
        ["tournament", "status", "-d", "games.db"],
        ["leaderboard", "-d", f"{MARKER}\x1b[2J\u202e/k.db"],
        ["tournament", "run", "builtin:random", "builtin:random", "-d", "games.db"],
    ]
    for args in samples:
        code, out, err = kryt_process(*args, cwd=world)
        with contextlib.chdir(world):
            inside = kryt(*args)
        assert code == inside.code, (args, err, inside.err)
        assert err.splitlines()[:1] == inside.err.splitlines()[:1], (err, inside.err)
        assert "Traceback" not in out + err and not raw_controls(out + err), repr(err)
    code, out, err = kryt_process("games", "list", "-d", b"caf\xe9.db", cwd=world)
    assert code == ExitCode.BAD_INPUT and "not UTF-8" in err and "Traceback" not in err, err
    assert digest(world) == before


# --------------------------------------------------------------------------- findings


def test_the_export_line_shows_a_folder_with_control_characters_escaped(world: Path) -> None:
    site = world / f"site{MARKER}\x1b[2J\x07\u202e"
    run = kryt("leaderboard", "--html", str(site), "-d", str(world / "games.db"))
    assert run.code == ExitCode.OK, run.text
    assert site.is_dir()
    assert not raw_controls(run.text), repr(run.text)
    assert f"site{MARKER}\\x1b[2J" in run.out, repr(run.out)


def test_arena_serve_warns_about_a_new_database_with_its_path_escaped(tmp_path: Path) -> None:
    """The warning comes once the address is bound and the database opened (created); the
    start then fails on its port file, so the test ends without a server to stop."""
    db = tmp_path / f"arena{MARKER}\x1b[2J\x07\u202e.db"
    code, out, err = kryt_process(
        "arena", "serve", "--no-ladder", "--host", "127.0.0.1", "--port", "0", "-d", str(db),
        "--port-file", str(tmp_path / "missing" / "port"), cwd=tmp_path,
    )  # fmt: skip
    assert code == ExitCode.BAD_INPUT, err
    assert "created a new, empty database" in err, err
    assert "Traceback" not in out + err and MARKER in err
    assert not raw_controls(out + err), repr(err)


def test_arena_serve_that_cannot_listen_leaves_no_new_database(tmp_path: Path) -> None:
    db = tmp_path / "typo.db"
    run = kryt("arena", "serve", "--no-ladder", "--host", "256.0.0.1", "--port", "0", "-d", str(db))
    assert_refused(run, ExitCode.UNAVAILABLE)
    assert not db.exists()


def test_a_device_as_the_database_is_refused_at_once(tmp_path: Path) -> None:
    try:
        code, _, err = kryt_process("games", "list", "-d", "/dev/null", cwd=tmp_path, timeout=25)
    except subprocess.TimeoutExpired:
        pytest.fail("kryt games list -d /dev/null did not answer within 25 s")
    assert code == ExitCode.UNAVAILABLE and "Traceback" not in err
    assert "locked" not in err and "/dev/null" in err


LONG = "n" * 300
"""A file name longer than any file system allows (ENAMETOOLONG)."""


@pytest.mark.parametrize(
    "args",
    [
        ["leaderboard", "--html", "{dir}/" + LONG, "-d", "{db}"],
        ["demo", "--html", "{dir}/" + LONG, "-d", "{db}"],
        ["submit", "{dir}/" + LONG, "-d", "{db}"],
        ["submit", "{dir}/mybot", "--store", "{dir}/" + LONG, "-d", "{db}"],
        ["play", "{dir}/" + LONG, "builtin:random"],
        ["bot", "check", "{dir}/" + LONG],
        ["tournament", "run", "{dir}/" + LONG, "builtin:random", "-d", "{db}"],
    ],
    ids=["leaderboard-html", "demo-html", "submit", "submit-store", "play", "bot-check", "run"],
)
def test_a_file_name_too_long_is_one_line(world: Path, args: list[str]) -> None:
    filled = [a.replace("{db}", str(world / "games.db")).replace("{dir}", str(world)) for a in args]
    before = digest(world)
    run = kryt(*filled, "--backend", "process") if args[0] == "tournament" else kryt(*filled)
    assert_refused(run, ExitCode.BAD_INPUT, ExitCode.FAILED)
    assert "too long" in run.err, run.err
    assert digest(world) == before


NOT_UTF8 = "caf\udce9"
"""``café`` spelled in Latin-1 on the command line, as Python reads such argv bytes."""


@pytest.mark.parametrize(
    "args",
    [
        ["games", "list", "--bot", NOT_UTF8, "-d", "{db}"],
        ["games", "export", "{dir}/o.kgn", "--bot", NOT_UTF8, "-d", "{db}"],
        ["arena", "invite", "create", "--label", NOT_UTF8, "-d", "{db}"],
        ["tournament", "run", NOT_UTF8, "builtin:random", "--backend", "process", "-d", "{db}"],
    ],
    ids=["games-list", "games-export", "invite-label", "run-stored-bot"],
)
def test_a_name_that_is_not_utf8_is_one_line(world: Path, args: list[str]) -> None:
    filled = [a.replace("{db}", str(world / "games.db")).replace("{dir}", str(world)) for a in args]
    before = digest(world)
    run = kryt(*filled)
    assert_refused(run, ExitCode.BAD_INPUT)
    assert "UTF-8" in run.err, run.err
    assert digest(world) == before


def test_a_binary_file_given_as_results_is_a_short_error(world: Path) -> None:
    run = kryt("ratings", "fit", str(world / "games.db"))
    assert_refused(run, ExitCode.BAD_INPUT)
    assert "UTF-8" in run.err
    assert max(len(line) for line in run.err.splitlines()) <= 500, len(run.err)


def test_bot_check_refuses_more_games_than_the_protocol_can_carry(tmp_path: Path) -> None:
    try:
        code, out, err = kryt_process(
            "bot", "check", "builtin:random", "-n", "5000000000", "--backend", "process",
            cwd=tmp_path, timeout=30,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("kryt bot check -n 5000000000 was still playing after 30 s")
    assert code == ExitCode.BAD_INPUT, out + err
    assert "5000000000" in err and "Traceback" not in out + err


def test_demo_refusing_its_database_leaves_no_site_behind(world: Path) -> None:
    _text(world / "games.db")
    run = kryt("demo", "--html", str(world / "site"), "-d", str(world / "games.db"))
    assert_refused(run, ExitCode.UNAVAILABLE)
    assert not (world / "site").exists()
