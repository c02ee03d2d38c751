"""Tests from a mutation review of how a bot submission is accepted (``sandbox/submission.py``,
``sandbox/source_check.py``, the ``check`` tool): each pins a behaviour a small mutant of
the code changed without any other test noticing.

The expected behaviour comes from the documentation, not from the code's output:
docs/writing-a-bot.md (the ``bot.toml`` fields: name ``[a-z0-9][a-z0-9_-]{0,39}``, version
"1-40 characters of ``0-9 A-Z a-z . + _ -``, starting with a letter or digit", ``author``
at most 200 characters and ``description`` at most 2,000, plain text) and docs/sandbox.md
(what a submission or an archive may not hold, the limits: 20 MiB in total, 10 MiB a file,
2,000 entries, 20 levels deep, ``bot.toml`` at most 64 KiB, one typed error naming the
offending path, every member checked before anything is unpacked, nothing kept of a refused
archive), docs/arena.md (Python sources that compile, a syntax error named ``file:line``)
and, for the compile check's CPU bound and its scope, the contract in
``sandbox/source_check.py``'s docstrings. The check tool's expectations come from
docs/writing-a-bot.md ("Check").

One test is a strict xfail for a fault found on the way: the ``./`` top member a tarball
made with ``tar czf bot.tar.gz -C mybot .`` starts with counts against ``max_files``.
"""

from __future__ import annotations

import io
import re
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

import sandbox.source_check as source_check
from referee.protocol.messages import TimeControl
from referee.rules import Action, View
from sandbox.source_check import SourceSyntaxError, check_python_sources
from sandbox.submission import (
    ArchiveError,
    InvalidManifestError,
    MissingEntryError,
    SubmissionError,
    SubmissionLimits,
    SubmissionTooLargeError,
    UnsafePathError,
    load_submission,
    parse_manifest,
)
from sdk import Bot
from sdk.tools.check import check_bot


def _manifest(**fields: str) -> str:
    """A ``bot.toml`` text: a valid Python bot with ``fields`` replacing or adding keys."""
    values = {"name": "mybot", "version": "1.0.0", "runtime": "python", "entry": "bot.py"}
    values.update(fields)
    return "".join(f"{key} = {value!r}\n".replace("'", '"') for key, value in values.items())


# ------------------------------------------------------------------ manifest: name, version


@pytest.mark.parametrize("name", ["a", "0bot", "my_bot-2", "b" * 40])
def test_a_documented_name_is_accepted(name: str) -> None:
    """writing-a-bot.md: ``name`` is ``[a-z0-9][a-z0-9_-]{0,39}``: 1 to 40 characters."""
    assert parse_manifest(_manifest(name=name)).name == name


@pytest.mark.parametrize("name", ["MyBot", "myBot", "b" * 41, "-bot", "_bot", "my.bot", "my bot"])
def test_a_name_outside_the_documented_syntax_is_refused_naming_it(name: str) -> None:
    """writing-a-bot.md: ``name`` is ``[a-z0-9][a-z0-9_-]{0,39}``: no capitals (two bots
    ``MyBot`` and ``mybot`` would be told apart by case only), at most 40 characters; the
    refusal names the value."""
    with pytest.raises(InvalidManifestError, match=re.escape(repr(name))):
        parse_manifest(_manifest(name=name))


@pytest.mark.parametrize("version", ["1", "v2", "1.0.0+build_7-rc1", "9" * 40])
def test_a_documented_version_is_accepted(version: str) -> None:
    """writing-a-bot.md: ``version`` is 1-40 characters of ``0-9 A-Z a-z . + _ -``,
    starting with a letter or digit."""
    assert parse_manifest(_manifest(version=version)).version == version


@pytest.mark.parametrize("version", [".1", "-1", "+1", "_1", "1/2", "../1", "1 0", "9" * 41])
def test_a_version_outside_the_documented_syntax_is_refused_naming_it(version: str) -> None:
    """writing-a-bot.md: a version starts with a letter or digit and holds only
    ``0-9 A-Z a-z . + _ -`` (no ``/``: versions name stored things), at most 40 of them."""
    with pytest.raises(InvalidManifestError, match=re.escape(repr(version))):
        parse_manifest(_manifest(version=version))


@pytest.mark.parametrize("missing", ["name", "version", "entry"])
def test_a_manifest_without_a_required_field_is_refused_naming_it(missing: str) -> None:
    """sandbox.md: a ``bot.toml`` without its required fields is refused; the error names
    the field (the bot is never stored under a made-up name or version)."""
    text = "".join(
        line for line in _manifest().splitlines(keepends=True) if not line.startswith(missing)
    )
    with pytest.raises(InvalidManifestError, match=f"'{missing}'"):
        parse_manifest(text)


# ------------------------------------------------------------ manifest: author, description


@pytest.mark.parametrize(("key", "limit"), [("author", 200), ("description", 2000)])
def test_author_and_description_may_be_exactly_their_documented_length(
    key: str, limit: int
) -> None:
    """writing-a-bot.md: ``author`` (at most 200 characters) and ``description`` (at most
    2,000): the longest allowed value is accepted, one character more is refused."""
    assert getattr(parse_manifest(_manifest(**{key: "x" * limit})), key) == "x" * limit
    with pytest.raises(InvalidManifestError, match=f"'{key}'"):
        parse_manifest(_manifest(**{key: "x" * (limit + 1)}))


def test_a_manifest_that_is_not_utf8_is_an_invalid_manifest(tmp_path: Path) -> None:
    """sandbox.md: a missing or invalid ``bot.toml`` is refused with a typed one-line error
    (:class:`InvalidManifestError`, a :class:`SubmissionError`), also when its bytes are
    not UTF-8 text, never a decoding exception."""
    root = tmp_path / "bot"
    root.mkdir()
    (root / "bot.toml").write_bytes(_manifest(author="Jos\xe9").encode("latin-1"))
    (root / "bot.py").write_text("x = 1\n")
    with pytest.raises(InvalidManifestError, match=re.escape("bot.toml")):
        load_submission(root)


@pytest.mark.parametrize(
    "error",
    [
        UnsafePathError("'..' in 'x'", "x"),
        SubmissionTooLargeError("too big", "big.bin"),
        InvalidManifestError("bot.toml lacks 'name'", "bot.toml"),
        MissingEntryError("no entry", "bot.py"),
    ],
)
def test_an_error_located_at_a_bot_keeps_its_type_and_path(error: SubmissionError) -> None:
    """sandbox.md: a refusal is "a one-line typed error (UnsafePathError,
    SubmissionTooLargeError, ...) with the offending path ... in ``exc.path``": naming which
    of several bots given is refused (``located``) keeps both."""
    named = error.located("mybot")
    assert type(named) is type(error)
    assert str(named) == f"mybot: {error}"
    assert named.path == error.path


# ------------------------------------------------------------------------- folders

GOOD_FILES = {"bot.py": "print('hi')\n", "lib/util.py": "X = 1\n"}


def _folder(root: Path, files: dict[str, str] | None = None, **fields: str) -> Path:
    """A valid Python bot folder at ``root`` with ``files`` added and manifest ``fields``."""
    for rel, text in {"bot.toml": _manifest(**fields), **GOOD_FILES, **(files or {})}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _refused(
    path: Path, kind: type[SubmissionError], names: str, unpack_dir: Path | None = None
) -> SubmissionError:
    """The error ``load_submission(path)`` raises: of ``kind``, naming ``names`` in its
    message and in ``exc.path`` (sandbox.md: "the offending path in the message and in
    ``exc.path``")."""
    with pytest.raises(kind) as caught:
        load_submission(path, unpack_dir=unpack_dir)
    assert names in str(caught.value), caught.value
    assert caught.value.path is not None and names in caught.value.path, caught.value.path
    return caught.value


def test_an_absolute_symlink_is_refused_even_to_a_file_of_the_folder(tmp_path: Path) -> None:
    """sandbox.md: absolute paths are refused. A symlink to the folder's own file by its
    absolute path would point back at the author's folder once the submission is stored
    elsewhere (and at nothing inside a sandbox)."""
    root = _folder(tmp_path / "bot")
    (root / "alias.py").symlink_to(root / "lib" / "util.py")
    _refused(root, UnsafePathError, "alias.py")


def test_a_dangling_symlink_is_refused_naming_it(tmp_path: Path) -> None:
    """sandbox.md: symlinks leaving the folder "(or dangling)" are refused: a link to a file
    the submission does not hold would fail only when the bot runs."""
    root = _folder(tmp_path / "bot")
    (root / "lib" / "gone.py").symlink_to("missing.py")
    _refused(root, UnsafePathError, "lib/gone.py")


def test_exactly_max_files_entries_are_accepted(tmp_path: Path) -> None:
    """sandbox.md: "more than ``max_files`` entries (2,000)" are refused, so a submission of
    exactly that many is taken (files and folders count: bot.toml, bot.py, lib,
    lib/util.py are 4), and one more is refused with the limit in the message."""
    root = _folder(tmp_path / "bot")
    assert len(load_submission(root, limits=SubmissionLimits(max_files=4)).files) == 4
    with pytest.raises(SubmissionTooLargeError, match="more than 3 entries"):
        load_submission(root, limits=SubmissionLimits(max_files=3))


def test_a_file_exactly_max_depth_levels_deep_is_accepted(tmp_path: Path) -> None:
    """sandbox.md: "nesting deeper than ``max_depth`` (20)" is refused: a file 20 levels deep
    (19 folders, then the file) is taken, one a level deeper is refused naming it."""
    deep = "/".join(["d"] * 19) + "/x.py"
    assert deep in load_submission(_folder(tmp_path / "ok", {deep: ""})).files
    deeper = "e/" + deep
    _refused(_folder(tmp_path / "deep", {deeper: ""}), SubmissionTooLargeError, "e/d/d")


def test_an_entry_reached_through_a_symlinked_bytecode_cache_is_refused(tmp_path: Path) -> None:
    """sandbox.md: the entry must be a file of the submission, and a byte-code cache
    (``__pycache__``) is never part of one. A ``__pycache__`` that is a symlink out of the
    folder must not make a file outside the submission its entry point."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text("print('not in the submission')\n")
    root = _folder(tmp_path / "bot", entry="__pycache__/evil.py")
    (root / "__pycache__").symlink_to(outside)
    _refused(root, MissingEntryError, "__pycache__/evil.py")


@pytest.mark.parametrize("char", ["\x9b", "\x85", "\x7f"], ids=["csi", "nel", "del"])
def test_a_file_name_with_a_c1_control_character_is_refused(tmp_path: Path, char: str) -> None:
    """sandbox.md: file names that "contain control characters" are refused; U+009B (CSI)
    starts a terminal escape sequence just like ESC [ does, so C1 controls and DEL count."""
    root = _folder(tmp_path / "bot", {f"a{char}b.txt": "x"})
    with pytest.raises(UnsafePathError, match="control characters"):
        load_submission(root)


@pytest.mark.parametrize(
    ("runtime", "entry", "files"),
    [
        ("go", "bot.py", {}),
        ("python", "bot.txt", {"bot.txt": "print('hi')\n"}),
        ("node", "bot.py", {}),
        ("cpp", "bot.py", {}),
    ],
)
def test_an_entry_its_runtime_cannot_start_is_refused_naming_both(
    tmp_path: Path, runtime: str, entry: str, files: dict[str, str]
) -> None:
    """sandbox.md: an entry its runtime cannot start or build from is refused, in one line
    naming the field, the value and the runtime (``bot.toml: entry 'bot.py' does not fit
    runtime 'go': ...``): python needs a ``.py`` file, node ``.js``, cpp ``.cc``/``.cpp``."""
    root = _folder(tmp_path / "bot", files, runtime=runtime, entry=entry)
    with pytest.raises(InvalidManifestError) as caught:
        load_submission(root)
    message = str(caught.value)
    assert f"entry {entry!r}" in message and f"runtime {runtime!r}" in message, message
    assert "\n" not in message


# ------------------------------------------------------------------------- archives

GOOD_MEMBERS = {"bot.toml": _manifest().encode(), **{k: v.encode() for k, v in GOOD_FILES.items()}}


def _tar(path: Path, members: list[tuple[str, bytes]]) -> Path:
    """A ``.tar.gz`` at ``path`` of regular files (name, content), in this order."""
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return path


def test_a_member_twice_in_a_tarball_is_refused_naming_it(tmp_path: Path) -> None:
    """sandbox.md: duplicate members are refused, with the offending path in the message
    and in ``exc.path`` (which of two copies would be the bot is anyone's guess)."""
    members = [*GOOD_MEMBERS.items(), ("bot.py", b"print('the other one')\n")]
    archive = _tar(tmp_path / "twice.tar.gz", members)
    dest = tmp_path / "unpacked"
    _refused(archive, ArchiveError, "bot.py", unpack_dir=dest)
    assert not dest.exists()


def test_a_zip_member_marked_as_a_fifo_is_refused(tmp_path: Path) -> None:
    """sandbox.md: devices, FIFOs and sockets are refused, in an archive too (a zip member's
    mode says what it is), before anything is unpacked."""
    archive = tmp_path / "fifo.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in GOOD_MEMBERS.items():
            zf.writestr(name, data)
        info = zipfile.ZipInfo("pipe")
        info.external_attr = (stat.S_IFIFO | 0o644) << 16
        zf.writestr(info, b"")
    dest = tmp_path / "unpacked"
    _refused(archive, UnsafePathError, "pipe", unpack_dir=dest)
    assert not dest.exists()


def test_an_archive_larger_than_the_total_limit_is_refused_however_small_it_unpacks(
    tmp_path: Path,
) -> None:
    """sandbox.md: "20 MiB in total (archive and unpacked)": the archive file itself counts,
    also when what it unpacks to is small (here: bytes no member holds, a zip comment)."""
    archive = tmp_path / "padded.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in GOOD_MEMBERS.items():
            zf.writestr(name, data)
        zf.comment = b"p" * 60_000
    unpacked = sum(len(data) for data in GOOD_MEMBERS.values())
    limits = SubmissionLimits(max_total_bytes=unpacked + 1000)
    assert archive.stat().st_size > limits.max_total_bytes
    with pytest.raises(SubmissionTooLargeError, match=re.escape("padded.zip")):
        load_submission(archive, limits=limits)
    assert load_submission(archive).total_bytes == unpacked  # within the usual limits


def test_a_dot_top_member_does_not_count_against_max_files(tmp_path: Path) -> None:
    """sandbox.md: "A ``./`` entry at the top of a tarball (``tar czf bot.tar.gz -C mybot
    .``) is the folder itself and is skipped", and "folder, zip and tarball of the same bot
    hash alike": packed that way, a bot of exactly ``max_files`` entries (more are refused)
    loads like its folder."""
    root = _folder(tmp_path / "bot")
    limits = SubmissionLimits(max_files=4)  # bot.toml, bot.py, lib, lib/util.py
    folder = load_submission(root, limits=limits)
    archive = tmp_path / "bot.tar.gz"
    with tarfile.open(archive, "w:gz") as packed:
        packed.add(root, arcname=".")  # what `tar czf bot.tar.gz -C bot .` writes
    assert load_submission(archive, limits=limits).sha256 == folder.sha256


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_a_wrapping_directory_does_not_count_against_max_files(tmp_path: Path, kind: str) -> None:
    """sandbox.md: "an archive that wraps everything in one top directory is accepted": a bot
    of exactly ``max_files`` entries wrapped in ``bot/`` loads like its folder; one entry more
    is refused, for the folder's count, whatever the wrapping."""
    limits = SubmissionLimits(max_files=4)  # bot.toml, bot.py, lib, lib/util.py
    root = _folder(tmp_path / "bot")
    folder = load_submission(root, limits=limits)
    over = _folder(tmp_path / "over" / "bot", {"extra.txt": "x"})

    def packed(top: Path, name: str) -> Path:
        archive = tmp_path / f"{name}.{kind}"
        if kind == "zip":
            with zipfile.ZipFile(archive, "w") as zf:
                zf.write(top, "bot/")
                for path in sorted(top.rglob("*")):
                    zf.write(path, f"bot/{path.relative_to(top).as_posix()}")
        else:
            with tarfile.open(archive, "w") as tf:
                tf.add(top, arcname="bot")
        return archive

    assert load_submission(packed(root, "exact"), limits=limits).sha256 == folder.sha256
    with pytest.raises(SubmissionTooLargeError, match="more than 4 entries"):
        load_submission(packed(over, "over"), limits=limits)


def test_a_zip_over_the_entry_count_is_refused_before_any_member_is_read(tmp_path: Path) -> None:
    """sandbox.md: every member of an archive is checked "before anything is unpacked
    (names, depth, count, ...)": a zip of more than ``max_files`` members is refused for
    that, not for a member that could not be unpacked (here: one whose bytes are corrupt)."""
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        for name, data in GOOD_MEMBERS.items():
            zf.writestr(name, data)
        for number in range(8):
            zf.writestr(f"f{number}.txt", b"filler")
        zf.writestr("zzz.txt", b"CORRUPT-ME" * 10)
    raw = archive.read_bytes()
    assert raw.count(b"CORRUPT-ME") == 10
    archive.write_bytes(raw.replace(b"CORRUPT-ME", b"corrupted!", 1))  # its CRC no longer fits
    dest = tmp_path / "unpacked"
    with pytest.raises(SubmissionTooLargeError, match="more than 10 entries"):
        load_submission(archive, unpack_dir=dest, limits=SubmissionLimits(max_files=10))
    assert not dest.exists()


def test_a_symlink_climbing_out_of_a_tarball_is_refused_before_unpacking(tmp_path: Path) -> None:
    """sandbox.md: symlink targets are checked "before anything is unpacked": a link
    climbing out with ``..`` is the refusal, named, even when a later member could not be
    unpacked (here: a second ``bot.py``)."""
    link = tarfile.TarInfo("lib/up")
    link.type, link.linkname = tarfile.SYMTYPE, "../../outside"
    archive = tmp_path / "climb.tar.gz"
    with tarfile.open(archive, "w:gz") as packed:
        for name, data in GOOD_MEMBERS.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            packed.addfile(info, io.BytesIO(data))
        packed.addfile(link)
        again = tarfile.TarInfo("bot.py")
        again.size = 3
        packed.addfile(again, io.BytesIO(b"x=1"))
    dest = tmp_path / "unpacked"
    _refused(archive, UnsafePathError, "lib/up", unpack_dir=dest)
    assert not dest.exists()


# -------------------------------------------------------------- the compile check


def test_a_python_file_in_a_subfolder_that_does_not_compile_is_refused(tmp_path: Path) -> None:
    """arena.md: the upload is checked like ``kryt submit``: "Python sources that compile (a
    syntax error is a 422 naming ``file:line``)": every source, not only those at the top
    (a helper module the bot imports would crash it at start)."""
    root = _folder(tmp_path / "bot", {"lib/broken.py": "x = 1\ndef f(:\n"})
    with pytest.raises(SourceSyntaxError, match=r"lib/broken\.py:2") as caught:
        check_python_sources(load_submission(root))
    assert caught.value.path == "lib/broken.py"


def test_a_source_whose_compile_runs_out_of_cpu_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sandbox/source_check.py (its contract): a source that "does not compile within
    COMPILE_CPU_SECONDS of CPU" is refused (the bot would not start either), not passed
    because the compiling process was stopped before it could say anything. Here the bound
    is 1 s and the sources need several seconds of CPU."""
    monkeypatch.setattr(source_check, "COMPILE_CPU_SECONDS", 1)
    lines = "\n".join(f"x{i} = [{i}, {i} + 1, 's{i}']" for i in range(150_000))
    root = _folder(tmp_path / "bot", {"lib/a.py": lines, "lib/b.py": lines})
    with pytest.raises(SourceSyntaxError, match="does not compile within 1 s of CPU"):
        check_python_sources(load_submission(root))


def test_the_python_sources_of_a_bot_of_another_runtime_are_not_compile_checked(
    tmp_path: Path,
) -> None:
    """sandbox/source_check.py (its contract) and README.md (``kryt submit`` validates
    "manifest, size, Python compiles" of a Python bot): the compile check is for Python
    submissions only; a C++ bot may carry a helper script in another Python dialect."""
    root = _folder(
        tmp_path / "bot",
        {"bot.cpp": "int main() { return 0; }\n", "tools/gen.py": "print 'python 2'\n"},
        runtime="cpp",
        entry="bot.cpp",
    )
    check_python_sources(load_submission(root))  # raises nothing


# --------------------------------------------------------------------- the check tool

EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"
STARTUP_S = 120.0
"""Seconds a checked bot may take to start: not under test (a busy machine is slow)."""
ROOMY = TimeControl(move_ms=10_000, bank_ms=60_000)
"""No reply is slow or late on a busy machine: the verdicts here are not about time."""


class _CrashingOpponent(Bot):
    """A reference opponent that fails at its first move."""

    def act(self, view: View) -> Action:
        raise RuntimeError("the opponent's own bug")


def test_the_opponents_forfeits_are_not_held_against_the_checked_bot() -> None:
    """writing-a-bot.md: the checker reports the checked bot's crashes, timeouts, illegal
    actions...: games its opponent forfeits are no problem of the bot's (the example bot
    passes however its opponent fares)."""
    report = check_bot(
        EXAMPLES / "random",
        games=2,
        opponent=_CrashingOpponent(),
        time_control=ROOMY,
        startup_timeout=STARTUP_S,
    )
    assert report.series is not None and len(report.series.games) == 2, report.format()
    assert report.problems == [], report.format()
    assert report.ok


def test_a_target_that_is_neither_a_folder_nor_an_address_is_named(tmp_path: Path) -> None:
    """writing-a-bot.md: where the checker cannot reach what it was given, it fails "in one
    line naming the address"; a path that does not exist is named the same way, so an
    author sees which argument was wrong."""
    missing = tmp_path / "no-such-bot"
    report = check_bot(missing, games=1)
    assert not report.ok
    assert [p.kind for p in report.problems] == ["not found"]
    assert str(missing) in report.problems[0].detail
