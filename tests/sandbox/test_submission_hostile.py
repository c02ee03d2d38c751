"""Hostile submissions are rejected before anything is unpacked, with one typed line.

Each case once gave a traceback (``UnicodeEncodeError``, ``RecursionError``) or was only
caught after unpacking; now each is a :class:`SubmissionError` naming the path, and the
unpack directory never comes into existence.
"""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from sandbox.submission import (
    Submission,
    SubmissionChangedError,
    SubmissionError,
    SubmissionLimits,
    SubmissionTooLargeError,
    UnsafePathError,
    load_submission,
    store_submission,
)

MANIFEST = b'name = "bad"\nversion = "1"\nlanguage = "python"\nentry = "bot.py"\n'


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    opener = tarfile.open
    if path.name.endswith(".tar.gz"):
        tar_file = opener(path, "w:gz", format=tarfile.GNU_FORMAT, encoding="utf-8")
    else:
        tar_file = opener(path, "w", format=tarfile.GNU_FORMAT, encoding="utf-8")
    with tar_file as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _file(name: str | bytes, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    if isinstance(name, bytes):
        name = name.decode("utf-8", "surrogateescape")
    return tarfile.TarInfo(name), data


def _basic() -> list[tuple[tarfile.TarInfo, bytes]]:
    return [_file("bot.toml", MANIFEST), _file("bot.py", b"print(1)\n")]


def _rejects(
    archive: Path, tmp_path: Path, kind: type[SubmissionError], match: str
) -> SubmissionError:
    dest = tmp_path / "unpacked"
    with pytest.raises(kind, match=match) as caught:
        load_submission(archive, unpack_dir=dest)
    assert "\n" not in str(caught.value)
    assert not dest.exists()
    return caught.value


def test_tar_member_name_not_utf8(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "bad.tar", [*_basic(), _file(b"caf\xe9.py")])
    error = _rejects(archive, tmp_path, UnsafePathError, "not a valid UTF-8")
    assert error.path is not None and "caf" in error.path
    error.path.encode("utf-8")  # printable everywhere


def test_folder_file_name_not_utf8(tmp_path: Path) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "bot.toml").write_bytes(MANIFEST)
    (folder / "bot.py").write_text("print(1)\n")
    with open(os.path.join(os.fsencode(folder), b"\xff\xfe.py"), "wb") as handle:
        handle.write(b"x")
    with pytest.raises(UnsafePathError, match="not a valid UTF-8") as caught:
        load_submission(folder)
    assert caught.value.path is not None
    caught.value.path.encode("utf-8")
    # Each byte escaped once, as docs/sandbox.md shows it (it was \\xff).
    assert "'\\xff\\xfe.py' is not a valid UTF-8 file name" in str(caught.value), caught.value


def test_name_with_terminal_escape_is_rejected(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "esc.tar", [*_basic(), _file("\x1b]0;pwned\x07.py")])
    error = _rejects(archive, tmp_path, UnsafePathError, "control characters")
    assert "\x1b" not in str(error)


def test_zip_entry_1500_levels_deep_is_rejected_before_unpacking(tmp_path: Path) -> None:
    archive = tmp_path / "deep.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("bot.toml", MANIFEST)
        zf.writestr("bot.py", "print(1)\n")
        zf.writestr("/".join(["d"] * 1500) + "/f.py", "x")
    error = _rejects(archive, tmp_path, SubmissionTooLargeError, "nested deeper than 20")
    assert len(str(error)) < 300


def test_tar_entry_too_deep_is_rejected_before_unpacking(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "deep.tar", [*_basic(), _file("/".join(["d"] * 25) + "/f")])
    _rejects(archive, tmp_path, SubmissionTooLargeError, "nested deeper than 20")


def test_entry_count_is_checked_before_unpacking(tmp_path: Path) -> None:
    members = _basic() + [_file(f"f{i}") for i in range(30)]
    archive = _tar(tmp_path / "many.tar", members)
    dest = tmp_path / "unpacked"
    with pytest.raises(SubmissionTooLargeError, match="more than 10 entries"):
        load_submission(archive, unpack_dir=dest, limits=SubmissionLimits(max_files=10))
    assert not dest.exists()


def test_declared_size_is_checked_before_reading(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "big.tar", [*_basic(), _file("big.bin", b"\0" * 5000)])
    dest = tmp_path / "unpacked"
    with pytest.raises(SubmissionTooLargeError, match=r"'big.bin' is larger than 4096"):
        load_submission(archive, unpack_dir=dest, limits=SubmissionLimits(max_file_bytes=4096))
    assert not dest.exists()


def test_total_size_is_checked_before_reading(tmp_path: Path) -> None:
    members = [*_basic(), *(_file(f"f{i}", b"\0" * 3000) for i in range(4))]
    archive = _tar(tmp_path / "total.tar.gz", members)  # small archive, large content
    dest = tmp_path / "unpacked"
    with pytest.raises(SubmissionTooLargeError, match="unpacks to more than 10000 bytes"):
        load_submission(archive, unpack_dir=dest, limits=SubmissionLimits(max_total_bytes=10000))
    assert not dest.exists()


def test_symlink_leaving_the_folder_is_rejected_before_unpacking(tmp_path: Path) -> None:
    link = tarfile.TarInfo("sub/evil")
    link.type = tarfile.SYMTYPE
    link.linkname = "../../etc/passwd"
    archive = _tar(tmp_path / "link.tar", [*_basic(), (link, b"")])
    _rejects(archive, tmp_path, UnsafePathError, "'sub/evil' .* leaves the submission")


def test_symlink_target_not_utf8_is_rejected(tmp_path: Path) -> None:
    link = tarfile.TarInfo("ok")
    link.type = tarfile.SYMTYPE
    link.linkname = b"bot\xff.py".decode("utf-8", "surrogateescape")
    archive = _tar(tmp_path / "link.tar", [*_basic(), (link, b"")])
    _rejects(archive, tmp_path, UnsafePathError, "not a valid UTF-8")


def test_zip_symlink_leaving_the_folder_is_rejected(tmp_path: Path) -> None:
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("bot.toml", MANIFEST)
        zf.writestr("bot.py", "print(1)\n")
        info = zipfile.ZipInfo("evil")
        info.external_attr = (0o120777 << 16) | 0
        zf.writestr(info, "/etc/passwd")
    _rejects(archive, tmp_path, UnsafePathError, "'evil' -> '/etc/passwd' leaves")


def test_hard_link_and_device_are_rejected_before_unpacking(tmp_path: Path) -> None:
    hard = tarfile.TarInfo("hard")
    hard.type = tarfile.LNKTYPE
    hard.linkname = "bot.py"
    _rejects(_tar(tmp_path / "h.tar", [*_basic(), (hard, b"")]), tmp_path, UnsafePathError, "hard")
    dev = tarfile.TarInfo("dev")
    dev.type = tarfile.CHRTYPE
    _rejects(_tar(tmp_path / "d.tar", [*_basic(), (dev, b"")]), tmp_path, UnsafePathError, "device")


def test_a_clean_archive_still_loads(tmp_path: Path) -> None:
    sub = load_submission(_tar(tmp_path / "ok.tar", _basic()), unpack_dir=tmp_path / "u")
    assert sub.manifest.name == "bad"
    assert set(sub.files) == {"bot.toml", "bot.py"}


def _validated_folder(tmp_path: Path) -> tuple[Path, Submission]:
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "bot.toml").write_text(
        'name = "racer"\nversion = "1.0.0"\nruntime = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text("print('hi')\n")
    (folder / "data.txt").write_text("weights\n")
    return folder, load_submission(folder)


def test_a_file_swapped_for_a_symlink_after_validation_is_not_stored(tmp_path: Path) -> None:
    """The folder changes between validation and storing (a writer racing the organiser):
    the swapped-in symlink is not followed and nothing is stored."""
    folder, submission = _validated_folder(tmp_path)
    secret = tmp_path / "secret"
    secret.write_text("root's eyes only\n")
    (folder / "data.txt").unlink()
    (folder / "data.txt").symlink_to(secret)
    store = tmp_path / "store"
    with pytest.raises(SubmissionChangedError, match=r"'data\.txt'.*submit it again") as caught:
        store_submission(submission, store)
    assert caught.value.path == "data.txt"
    assert list(store.iterdir()) == []


def test_content_changed_after_validation_is_not_stored(tmp_path: Path) -> None:
    folder, submission = _validated_folder(tmp_path)
    (folder / "data.txt").write_text("other weights\n")
    (folder / "extra.py").write_text("X = 1\n")
    store = tmp_path / "store"
    with pytest.raises(SubmissionChangedError, match="changed while it was being stored"):
        store_submission(submission, store)
    assert list(store.iterdir()) == []
    # Validated again, the new content is stored under its own hash.
    again = load_submission(folder)
    assert store_submission(again, store) == store / again.sha256
    assert (store / again.sha256 / "data.txt").read_text() == "other weights\n"


def test_a_path_longer_than_the_limit_is_named_before_unpacking(tmp_path: Path) -> None:
    deep = "/".join(["d" * 250] * 5) + "/x.py"  # each name fits, the whole does not
    archive = _tar(tmp_path / "long.tar", [*_basic(), _file(deep)])
    error = _rejects(archive, tmp_path, UnsafePathError, "is longer than 1024 bytes")
    assert error.path == deep


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info, b""


@pytest.mark.parametrize(
    ("target", "message"),
    [("", "link.py"), ("a/" * 600 + "bot.py", "target longer than 1024 bytes")],
)
def test_a_symlink_target_empty_or_too_long_is_named(
    tmp_path: Path, target: str, message: str
) -> None:
    archive = _tar(tmp_path / "links.tar", [*_basic(), _link("link.py", target)])
    error = _rejects(archive, tmp_path, UnsafePathError, message)
    assert error.path == "link.py" and "corrupt" not in str(error)


def _zip_with(path: Path, odd_name: str) -> bytes:
    """A zip of a valid bot plus a member called ``odd_name``."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("bot.toml", MANIFEST)
        zf.writestr("bot.py", "print(1)\n")
        zf.writestr(zipfile.ZipInfo(odd_name), "x")
    return path.read_bytes()


def test_a_zip_member_with_an_empty_name_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "empty-name.zip"
    _zip_with(archive, "")
    _rejects(archive, tmp_path, SubmissionError, "archive member")


def _utf8_flag_on_a_name_that_is_not(data: bytes, header: bytes, flags_at: int) -> bytes:
    """``data`` with the member named AAAA.txt renamed to bytes that are not UTF-8 in the
    headers starting with ``header``, whose general-purpose flags (at ``flags_at``) then
    claim a UTF-8 name (bit 11)."""
    out = bytearray(data)
    start = out.find(header)
    while start != -1:
        name_at = out.find(b"AAAA.txt", start)
        if name_at != -1 and name_at - start < 64:
            flags = int.from_bytes(out[start + flags_at : start + flags_at + 2], "little")
            out[start + flags_at : start + flags_at + 2] = (flags | 0x800).to_bytes(2, "little")
            out[name_at : name_at + 8] = b"\xff\xfeAA.txt"
        start = out.find(header, start + 4)
    return bytes(out)


@pytest.mark.parametrize(
    ("header", "flags_at", "match"),
    [
        (b"PK\x01\x02", 8, "not a readable zip archive"),  # the central directory
        (b"PK\x03\x04", 6, "cannot unpack"),  # the member's own header only
    ],
)
def test_a_zip_name_flagged_utf8_that_is_not_is_refused(
    tmp_path: Path, header: bytes, flags_at: int, match: str
) -> None:
    archive = tmp_path / "flagged.zip"
    data = _zip_with(archive, "AAAA.txt")
    archive.write_bytes(_utf8_flag_on_a_name_that_is_not(data, header, flags_at))
    _rejects(archive, tmp_path, SubmissionError, match)


def test_a_store_whose_path_is_not_utf8_is_refused_before_anything_is_made(
    tmp_path: Path,
) -> None:
    """``--store`` with byte 0xff in its name: the database could not record where the
    submission lies (a UnicodeEncodeError traceback from the driver before)."""
    _, submission = _validated_folder(tmp_path)
    store = tmp_path / "st\udcff"  # how Python reads such a name from the command line
    with pytest.raises(SubmissionError, match=r"not UTF-8 text.*choose another --store"):
        store_submission(submission, store)
    assert not os.path.lexists(os.fsencode(store))
