"""Submission validation: every kind of bad input is rejected with the offending path."""

from __future__ import annotations

import io
import os
import re
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

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
    store_submission,
)

MANIFEST = 'name = "greedy"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'


def make_folder(root: Path, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    contents = {"bot.toml": MANIFEST, "bot.py": "print('hi')\n", "lib/util.py": "X = 1\n"}
    contents.update(files or {})
    for rel, text in contents.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_valid_folder_parses_and_hashes(tmp_path: Path) -> None:
    sub = load_submission(make_folder(tmp_path / "bot"))
    assert sub.manifest.name == "greedy"
    assert sub.manifest.entry == "bot.py"
    assert sub.files == ("bot.py", "bot.toml", "lib", "lib/util.py")
    assert len(sub.sha256) == 64
    assert sub.entry_path == sub.root / "bot.py"


def test_hash_is_content_addressed(tmp_path: Path) -> None:
    first = load_submission(make_folder(tmp_path / "a")).sha256
    same = load_submission(make_folder(tmp_path / "b")).sha256
    changed = load_submission(make_folder(tmp_path / "c", {"bot.py": "print('bye')\n"})).sha256
    renamed = load_submission(make_folder(tmp_path / "d", {"lib/other.py": "X = 1\n"})).sha256
    assert first == same
    assert len({first, changed, renamed}) == 3


def test_pycache_does_not_change_the_hash(tmp_path: Path) -> None:
    clean = load_submission(make_folder(tmp_path / "a")).sha256
    cached = make_folder(tmp_path / "b", {"__pycache__/bot.cpython-311.pyc": "junk", "x.pyc": "j"})
    assert load_submission(cached).sha256 == clean


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name = ", "not valid TOML"),
        ('name = "x"\nversion = "1"\nlanguage = "python"\n', "required field 'entry'"),
        (MANIFEST.replace('"greedy"', '"Greedy Bot"'), "name 'Greedy Bot'"),
        (MANIFEST.replace('"python"', '"cobol"'), "language 'cobol' is not supported"),
        (MANIFEST.replace('"1.0.0"', "1"), "'version' must be a string"),
        (MANIFEST + 'entrypoint = "x"\n', "unknown field"),
        (MANIFEST.replace('"bot.py"', '"/etc/passwd"'), "absolute path"),
        (MANIFEST.replace('"bot.py"', '"../bot.py"'), "'..'"),
        (MANIFEST + f'description = "{"d" * 3000}"\n', "longer than"),
        # Shown to people: no control or bidirectional formatting characters.
        (MANIFEST + 'description = "ok \\u0000"\n', "control character U\\+0000 at position 3"),
        (
            MANIFEST + 'author = "\\u001b[31mred"\n',
            "'author' contains the control character U\\+001B",
        ),
        (MANIFEST + 'author = "a\\nb"\n', "U\\+000A at position 1"),
        (MANIFEST + 'description = "gnp.\\u202eexe"\n', "U\\+202E at position 4"),
    ],
)
def test_bad_manifests_are_rejected(text: str, message: str) -> None:
    with pytest.raises(InvalidManifestError, match=message):
        parse_manifest(text)


def test_plain_text_with_line_breaks_and_tabs_is_a_fine_description() -> None:
    manifest = parse_manifest(MANIFEST + 'author = "Ana\tB"\ndescription = """one\ntwo\tü"""\n')
    assert manifest.description == "one\ntwo\tü" and manifest.author == "Ana\tB"


def test_missing_manifest(tmp_path: Path) -> None:
    root = make_folder(tmp_path / "bot")
    (root / "bot.toml").unlink()
    with pytest.raises(InvalidManifestError, match=re.escape("no bot.toml")):
        load_submission(root)


def test_missing_entry(tmp_path: Path) -> None:
    root = make_folder(tmp_path / "bot", {"bot.toml": MANIFEST.replace("bot.py", "main.py")})
    with pytest.raises(MissingEntryError, match=re.escape("'main.py'")) as caught:
        load_submission(root)
    assert caught.value.path == "main.py"


def test_entry_that_is_a_directory(tmp_path: Path) -> None:
    root = make_folder(tmp_path / "bot", {"bot.toml": MANIFEST.replace("bot.py", "lib")})
    with pytest.raises(MissingEntryError):
        load_submission(root)


def test_symlink_leaving_the_folder(tmp_path: Path) -> None:
    root = make_folder(tmp_path / "bot")
    (root / "secret").symlink_to("/etc/passwd")
    with pytest.raises(UnsafePathError, match="'secret'") as caught:
        load_submission(root)
    assert caught.value.path == "secret"


def test_relative_symlink_climbing_out(tmp_path: Path) -> None:
    root = make_folder(tmp_path / "bot")
    (tmp_path / "outside.py").write_text("")
    (root / "lib" / "up.py").symlink_to("../../outside.py")
    with pytest.raises(UnsafePathError, match=re.escape("lib/up.py")):
        load_submission(root)


def test_symlink_inside_the_folder_is_allowed(tmp_path: Path) -> None:
    root = make_folder(tmp_path / "bot")
    (root / "alias.py").symlink_to("lib/util.py")
    sub = load_submission(root)
    assert "alias.py" in sub.files


def test_fifo_is_rejected(tmp_path: Path) -> None:
    root = make_folder(tmp_path / "bot")
    os.mkfifo(root / "pipe")
    with pytest.raises(UnsafePathError, match="'pipe' is a device"):
        load_submission(root)


def test_size_limits(tmp_path: Path) -> None:
    root = make_folder(tmp_path / "bot", {"big.bin": "x" * 5000})
    with pytest.raises(SubmissionTooLargeError, match=re.escape("big.bin")):
        load_submission(root, limits=SubmissionLimits(max_file_bytes=4000))
    with pytest.raises(SubmissionTooLargeError, match="larger than 3000 bytes"):
        load_submission(root, limits=SubmissionLimits(max_total_bytes=3000))
    with pytest.raises(SubmissionTooLargeError, match="more than 2 entries"):
        load_submission(root, limits=SubmissionLimits(max_files=2))


def _zip(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return path


def _tar(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for info in members:
            payload = data.get(info.name)
            if payload is not None:
                info.size = len(payload)
                tf.addfile(info, io.BytesIO(payload))
            else:
                tf.addfile(info)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


GOOD = {"bot.toml": MANIFEST.encode(), "bot.py": b"print('hi')\n", "lib/util.py": b"X = 1\n"}


def test_zip_and_tar_hash_like_the_folder(tmp_path: Path) -> None:
    folder = load_submission(make_folder(tmp_path / "bot"))
    zipped = load_submission(
        _zip(tmp_path / "bot.zip", {f"greedy/{k}": v for k, v in GOOD.items()})
    )
    members = [_member(name) for name in GOOD]
    tarred = load_submission(_tar(tmp_path / "bot.tar.gz", members, GOOD))
    assert zipped.sha256 == folder.sha256 == tarred.sha256
    assert zipped.manifest == folder.manifest


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("/etc/cron.d/evil", UnsafePathError, "absolute path"),
        ("../evil.py", UnsafePathError, "'..'"),
        ("lib/../../evil.py", UnsafePathError, "'..'"),
    ],
)
def test_zip_with_bad_paths(
    tmp_path: Path, name: str, error: type[SubmissionError], message: str
) -> None:
    archive = _zip(tmp_path / "bad.zip", {**GOOD, name: b"x"})
    dest = tmp_path / "unpacked"
    with pytest.raises(error, match=message):
        load_submission(archive, unpack_dir=dest)
    assert not dest.exists()  # nothing is kept from a rejected archive
    assert not (tmp_path / "evil.py").exists()


def test_zip_symlink_escaping(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "bad.zip", GOOD, links={"passwd": "/etc/passwd"})
    with pytest.raises(UnsafePathError, match="passwd"):
        load_submission(archive)


def test_zip_bomb_stops_at_the_limit(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in GOOD.items():
            zf.writestr(name, data)
        zf.writestr("zeros.bin", b"\0" * (8 << 20))
    assert archive.stat().st_size < 100_000
    with pytest.raises(SubmissionTooLargeError, match=re.escape("zeros.bin")):
        load_submission(archive, limits=SubmissionLimits(max_file_bytes=1 << 20))


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (_member("dev", tarfile.CHRTYPE), "device"),
        (_member("fifo", tarfile.FIFOTYPE), "device"),
        (_member("hard", tarfile.LNKTYPE, "bot.py"), "hard link"),
        (_member("link", tarfile.SYMTYPE, "/var/run/docker.sock"), "leaves the submission"),
        (_member("lib/link", tarfile.SYMTYPE, "../../x"), "leaves the submission"),
    ],
)
def test_tar_with_bad_members(tmp_path: Path, member: tarfile.TarInfo, message: str) -> None:
    members = [_member(name) for name in GOOD] + [member]
    archive = _tar(tmp_path / "bad.tgz", members, GOOD)
    with pytest.raises(UnsafePathError, match=message):
        load_submission(archive)


def test_tar_write_through_symlinked_dir_is_refused(tmp_path: Path) -> None:
    members = [_member(name) for name in GOOD]
    members += [_member("sub", tarfile.SYMTYPE, "lib"), _member("sub/x.py")]
    archive = _tar(tmp_path / "bad.tgz", members, {**GOOD, "sub/x.py": b""})
    with pytest.raises(UnsafePathError, match="through a symlink"):
        load_submission(archive)


def test_corrupt_and_unknown_archives(tmp_path: Path) -> None:
    (tmp_path / "bot.zip").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(ArchiveError, match=re.escape("bot.zip")):
        load_submission(tmp_path / "bot.zip")
    (tmp_path / "bot.rar").write_bytes(b"x")
    with pytest.raises(ArchiveError, match=re.escape("bot.rar")):
        load_submission(tmp_path / "bot.rar")
    with pytest.raises(SubmissionError, match="does not exist"):
        load_submission(tmp_path / "nope")


def test_store_is_content_addressed_and_idempotent(tmp_path: Path) -> None:
    sub = load_submission(make_folder(tmp_path / "bot"))
    stored = store_submission(sub, tmp_path / "store")
    assert stored.name == sub.sha256
    assert load_submission(stored).sha256 == sub.sha256
    assert store_submission(sub, tmp_path / "store") == stored
    assert [p.name for p in (tmp_path / "store").iterdir()] == [sub.sha256]


def test_submission_module_needs_only_the_standard_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys, sandbox, sandbox.submission\n"
        "bad = [m for m in ('docker', 'grpc') if m in sys.modules]\n"
        "assert not bad, bad"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
