"""Extended tar headers are bounded before ``tarfile`` reads them: a pax header or a GNU long
name of more than TAR_META_BYTES is refused by name (a 64 KiB .tar.gz could declare one of
gigabytes, read whole into memory), a GNU sparse member is refused, and ordinary extended
headers (a long name, pax metadata) still unpack."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from sandbox.submission import (
    TAR_META_BYTES,
    SubmissionTooLargeError,
    UnsafePathError,
    load_submission,
)

MANIFEST = b'name = "tarry"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'


def _member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _bot_tar(path: Path, extra: bytes = b"", form: int = tarfile.PAX_FORMAT) -> Path:
    """A bot's .tar.gz; ``extra``: raw header bytes put before its members."""
    body = io.BytesIO()
    with tarfile.open(fileobj=body, mode="w", format=form) as tar:
        _member(tar, "bot.toml", MANIFEST)
        _member(tar, "bot.py", b"x = 1\n")
    path.write_bytes(gzip.compress(extra + body.getvalue()))
    return path


def _header(kind: bytes, size: int) -> bytes:
    info = tarfile.TarInfo("././@LongLink")
    info.type = kind
    info.size = size
    data = b"a" * size
    padding = b"\0" * (-size % tarfile.BLOCKSIZE)
    return info.tobuf(format=tarfile.USTAR_FORMAT) + data + padding


@pytest.mark.parametrize(
    ("kind", "named"),
    [(tarfile.GNUTYPE_LONGNAME, "GNU long-name"), (tarfile.XHDTYPE, "pax")],
    ids=["gnu-longname", "pax"],
)
def test_an_extended_header_over_the_bound_is_refused_by_name(
    tmp_path: Path, kind: bytes, named: str
) -> None:
    archive = _bot_tar(tmp_path / "bot.tar.gz", _header(kind, TAR_META_BYTES + 1))
    with pytest.raises(SubmissionTooLargeError, match=f"a {named} header of {TAR_META_BYTES + 1}"):
        load_submission(archive, unpack_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing left unpacked


def test_a_sparse_member_is_refused(tmp_path: Path) -> None:
    info = tarfile.TarInfo("sparse.bin")
    info.type = tarfile.GNUTYPE_SPARSE
    archive = _bot_tar(tmp_path / "bot.tar.gz", info.tobuf(format=tarfile.GNU_FORMAT))
    with pytest.raises(UnsafePathError, match="GNU sparse member"):
        load_submission(archive, unpack_dir=tmp_path / "out")


@pytest.mark.parametrize("form", [tarfile.PAX_FORMAT, tarfile.GNU_FORMAT], ids=["pax", "gnu"])
def test_ordinary_extended_headers_still_unpack(tmp_path: Path, form: int) -> None:
    long_name = "d/" + "n" * 150 + ".py"  # over ustar's 100 bytes: an extended header
    body = io.BytesIO()
    with tarfile.open(fileobj=body, mode="w:gz", format=form) as tar:
        _member(tar, "bot.toml", MANIFEST)
        _member(tar, "bot.py", b"x = 1\n")
        _member(tar, long_name, b"y = 2\n")
    archive = tmp_path / "bot.tar.gz"
    archive.write_bytes(body.getvalue())
    submission = load_submission(archive, unpack_dir=tmp_path / "out")
    assert long_name in submission.files
