"""Round-4 hostile submissions: archives and manifests that escaped the checks.

Each case was found by building the archive and feeding it to :func:`load_submission`: a
chain of symlinks that passes the by-name check redirected a directory member out of the
unpack folder (anywhere on the machine); a path that is both a file and a directory, an
encrypted or corrupt zip member, a nested-too-deeply ``bot.toml`` or source gave a traceback;
a corrupt ``.tar.gz`` was accepted with members silently missing; an entry point in
``__pycache__`` was accepted but never stored; ``tar -C bot .`` archives were refused.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from sandbox.source_check import SourceSyntaxError, check_python_sources
from sandbox.submission import (
    ArchiveError,
    InvalidManifestError,
    MissingEntryError,
    SubmissionError,
    UnsafePathError,
    load_submission,
    parse_manifest,
)

MANIFEST = b'name = "bad"\nversion = "1"\nruntime = "python"\nentry = "bot.py"\n'
FIELDS = 'name = "bad"\nversion = "1"\nruntime = "python"\nentry = "bot.py"\n'


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz" if path.name.endswith(".gz") else "w") as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _member(
    name: str, data: bytes = b"x", *, kind: bytes = tarfile.REGTYPE, link: str = ""
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info, data


def _basic() -> list[tuple[tarfile.TarInfo, bytes]]:
    return [_member("bot.toml", MANIFEST), _member("bot.py", b"print(1)\n")]


def _zip(path: Path, entries: list[tuple[str, bytes]], links: dict[str, str] | None = None) -> Path:
    """A zip of the basic bot, then the symlinks ``links``, then ``entries``."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bot.toml", MANIFEST)
        zf.writestr("bot.py", b"print(1)\n")
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
        for name, data in entries:
            zf.writestr(name, data)
    return path


def _rejects(archive: Path, dest: Path, kind: type[SubmissionError], match: str) -> str:
    with pytest.raises(kind, match=match) as caught:
        load_submission(archive, unpack_dir=dest)
    message = str(caught.value)
    assert "\n" not in message and "Errno" not in message, message
    assert not dest.exists()
    return message


# ---------------------------------------------------------------- writes out of the folder


def test_symlink_chain_cannot_redirect_a_directory_member_out_of_the_folder(
    tmp_path: Path,
) -> None:
    # "up1 -> ." and "up2 -> up1/.." both stay inside by name, yet up2 is the unpack
    # folder's parent and "up3 -> up2/.." its grandparent: a directory member below them
    # was created there (with parents, so anywhere on the machine).
    dest = tmp_path / "a" / "b" / "unpacked"
    dest.parent.mkdir(parents=True)
    members = [
        *_basic(),
        _member("up1", kind=tarfile.SYMTYPE, link="."),
        _member("up2", kind=tarfile.SYMTYPE, link="up1/.."),
        _member("up3", kind=tarfile.SYMTYPE, link="up2/.."),
        _member("up3/escaped/deeper/", kind=tarfile.DIRTYPE),
    ]
    message = _rejects(_tar(tmp_path / "chain.tar", members), dest, UnsafePathError, "symlink")
    assert "up3/escaped/deeper" in message
    assert not (tmp_path / "a" / "escaped").exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "chain.tar"]


def test_symlink_chain_cannot_redirect_a_zip_directory_out_of_the_folder(tmp_path: Path) -> None:
    dest = tmp_path / "a" / "unpacked"
    dest.parent.mkdir()
    archive = _zip(tmp_path / "chain.zip", [("up2/escaped/", b"")], {"up1": ".", "up2": "up1/.."})
    _rejects(archive, dest, UnsafePathError, "through a symlink")
    assert not (tmp_path / "a" / "escaped").exists()


# ---------------------------------------------------------------- typed errors, not tracebacks


@pytest.mark.parametrize(
    "entries",
    [
        [("a", b"x"), ("a/", b"")],
        [("a", b"x"), ("a/b", b"y")],
    ],
    ids=["file-then-directory", "file-then-file-below-it"],
)
def test_zip_path_that_is_both_a_file_and_a_directory(
    tmp_path: Path, entries: list[tuple[str, bytes]]
) -> None:
    message = _rejects(
        _zip(tmp_path / "both.zip", entries), tmp_path / "out", ArchiveError, "file and a dir"
    )
    assert str(tmp_path) not in message


def test_tar_path_that_is_both_a_file_and_a_directory(tmp_path: Path) -> None:
    members = [*_basic(), _member("a"), _member("a/", kind=tarfile.DIRTYPE)]
    message = _rejects(_tar(tmp_path / "both.tar", members), tmp_path / "out", ArchiveError, "a")
    assert "both a file and a directory" in message and str(tmp_path) not in message


def _patched_zip(path: Path, offset_in_local: int, offset_in_central: int, value: bytes) -> Path:
    data = bytearray(_zip(path, []).read_bytes())
    for signature, offset in ((b"PK\x03\x04", offset_in_local), (b"PK\x01\x02", offset_in_central)):
        start = 0
        while (found := data.find(signature, start)) >= 0:
            data[found + offset : found + offset + len(value)] = value
            start = found + 4
    path.write_bytes(bytes(data))
    return path


def test_encrypted_zip_is_refused(tmp_path: Path) -> None:
    archive = _patched_zip(tmp_path / "enc.zip", 6, 8, b"\x01")  # general purpose flag bit 0
    _rejects(archive, tmp_path / "out", ArchiveError, "encrypted")


def test_zip_with_an_unknown_compression_method_is_refused(tmp_path: Path) -> None:
    archive = _patched_zip(tmp_path / "aes.zip", 8, 10, b"\x63\x00")  # method 99 (AES)
    _rejects(archive, tmp_path / "out", ArchiveError, "compression method")


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_LZMA])
def test_corrupt_compressed_zip_member_is_an_archive_error(tmp_path: Path, method: int) -> None:
    path = tmp_path / "corrupt.zip"
    with zipfile.ZipFile(path, "w", method) as zf:
        zf.writestr("bot.toml", MANIFEST)
        zf.writestr("bot.py", b"print(1)\n")
        zf.writestr("big.txt", " ".join(str(i * i) for i in range(5000)).encode())
    data = bytearray(path.read_bytes())
    start = data.find(b"big.txt") + len("big.txt") + 100
    for i in range(start, start + 40):
        data[i] ^= 0x55
    path.write_bytes(bytes(data))
    _rejects(path, tmp_path / "out", ArchiveError, "big.txt")


# ---------------------------------------------------------------- corrupt tarballs


def _tar_gz_bytes(tmp_path: Path) -> bytes:
    plain = _tar(tmp_path / "plain.tar", [*_basic(), _member("big.txt", b"hello world " * 5000)])
    return gzip.compress(plain.read_bytes())


def test_corrupt_tar_gz_is_refused_rather_than_cut_short(tmp_path: Path) -> None:
    # Damaged deflate data decompresses to garbage where a header should be: tarfile ends
    # the member list there without a word, so big.txt was silently dropped.
    data = bytearray(_tar_gz_bytes(tmp_path))
    middle = len(data) // 2
    for i in range(middle, middle + 8):
        data[i] ^= 0xA5
    path = tmp_path / "damaged.tar.gz"
    path.write_bytes(bytes(data))
    _rejects(path, tmp_path / "out", ArchiveError, "corrupt")


def test_tar_gz_with_a_wrong_checksum_or_no_trailer_is_refused(tmp_path: Path) -> None:
    data = _tar_gz_bytes(tmp_path)
    flipped = bytearray(data)
    flipped[-6] ^= 1  # the CRC-32 of the uncompressed tar
    (tmp_path / "crc.tar.gz").write_bytes(bytes(flipped))
    _rejects(tmp_path / "crc.tar.gz", tmp_path / "out", ArchiveError, "CRC")
    (tmp_path / "cut.tar.gz").write_bytes(data[:-8])
    _rejects(tmp_path / "cut.tar.gz", tmp_path / "out", ArchiveError, "corrupt")


def test_the_intact_tar_gz_still_loads(tmp_path: Path) -> None:
    (tmp_path / "ok.tar.gz").write_bytes(_tar_gz_bytes(tmp_path))
    assert "big.txt" in load_submission(tmp_path / "ok.tar.gz", unpack_dir=tmp_path / "o").files


@pytest.mark.parametrize("content", [b"", b"not a tar at all\n" * 40])
def test_unreadable_tar_is_one_line(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "x.tar.gz").write_bytes(content)
    _rejects(tmp_path / "x.tar.gz", tmp_path / "out", ArchiveError, "not a readable tar")


def test_overlong_member_name_is_refused_without_the_servers_paths(tmp_path: Path) -> None:
    members = [*_basic(), _member("d/" + "a" * 300)]
    message = _rejects(
        _tar(tmp_path / "long.tar", members), tmp_path / "out", UnsafePathError, "longer than 255"
    )
    assert len(message) < 300


def test_tar_made_with_dash_c_dot_loads(tmp_path: Path) -> None:
    # `tar czf bot.tar.gz -C mybot .` writes "./" first: the top itself, not an unsafe path.
    members = [_member("./", kind=tarfile.DIRTYPE)]
    members += [(_member("./" + info.name, data)) for info, data in _basic()]
    sub = load_submission(_tar(tmp_path / "dot.tar.gz", members), unpack_dir=tmp_path / "out")
    assert sub.files == ("bot.py", "bot.toml")


def test_an_archive_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.tar"
    os.mkfifo(fifo)
    errors: list[BaseException] = []

    def load() -> None:
        try:
            load_submission(fifo, unpack_dir=tmp_path / "out")
        except BaseException as exc:  # handed to the test thread
            errors.append(exc)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # it blocked opening the FIFO: unblock it, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("load_submission blocked on a FIFO named like an archive")
    assert len(errors) == 1 and isinstance(errors[0], ArchiveError), errors
    assert "not a regular file" in str(errors[0])


# ---------------------------------------------------------------- bot.toml


@pytest.mark.parametrize("value", ["[" * 5000 + "]" * 5000, "{a=" * 3000 + "1" + "}" * 3000])
def test_deeply_nested_manifest_is_an_invalid_manifest(value: str) -> None:
    with pytest.raises(InvalidManifestError, match="nested too deeply"):
        parse_manifest(FIELDS + f"x = {value}\n")


def test_unknown_manifest_fields_are_escaped_and_bounded() -> None:
    hostile = FIELDS + '"\\u001b[31mred\\nline" = 1\n'
    with pytest.raises(InvalidManifestError) as caught:
        parse_manifest(hostile)
    assert "\x1b" not in str(caught.value) and "\n" not in str(caught.value)
    assert "\\x1b[31mred\\nline" in str(caught.value)
    many = FIELDS + "".join(f"k{i} = 1\n" for i in range(3000))
    with pytest.raises(InvalidManifestError, match="and 2995 more") as caught:
        parse_manifest(many)
    assert len(str(caught.value)) < 200


@pytest.mark.parametrize("key", ["name", "version", "runtime"])
def test_long_manifest_values_are_shortened_in_the_message(key: str) -> None:
    fields = {"name": "bad", "version": "1", "runtime": "python", "entry": "bot.py"}
    fields[key] = "A" * 50_000
    text = "".join(f'{k} = "{v}"\n' for k, v in fields.items())
    with pytest.raises(InvalidManifestError) as caught:
        parse_manifest(text)
    assert len(str(caught.value)) < 300


# ---------------------------------------------------------------- entry point


def _folder(root: Path, entry: str) -> Path:
    root.mkdir()
    (root / "bot.toml").write_text(FIELDS.replace('"bot.py"', f'"{entry}"'))
    (root / "bot.py").write_text("print(1)\n")
    return root


@pytest.mark.parametrize("entry", ["__pycache__/bot.py", "bot.pyc"])
def test_entry_in_a_bytecode_cache_is_refused(tmp_path: Path, entry: str) -> None:
    # Byte-code caches are neither hashed nor stored: the stored bot had no entry point.
    root = _folder(tmp_path / "bot", entry)
    (root / "__pycache__").mkdir()
    (root / entry).write_text("print(1)\n")
    with pytest.raises(MissingEntryError, match="byte-code cache"):
        load_submission(root)


def test_symlink_into_a_bytecode_cache_is_refused(tmp_path: Path) -> None:
    root = _folder(tmp_path / "bot", "main.py")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "real.py").write_text("print(1)\n")
    (root / "main.py").symlink_to("__pycache__/real.py")
    with pytest.raises(UnsafePathError, match="byte-code cache"):
        load_submission(root)


# ---------------------------------------------------------------- Python sources


@pytest.mark.parametrize(
    "source", ["x = " + "-" * 200_000 + "1\n", "x = (" + "1+" * 200_000 + "1)\n"]
)
def test_source_nested_too_deeply_is_a_syntax_error(tmp_path: Path, source: str) -> None:
    root = _folder(tmp_path / "bot", "bot.py")
    (root / "deep.py").write_text(source)
    with pytest.raises(SourceSyntaxError, match=r"deep\.py: does not compile: nested too deeply"):
        check_python_sources(load_submission(root))
