"""Bot submissions: parse and validate a folder or archive with a ``bot.toml`` manifest.

A submission is untrusted input. :func:`load_submission` checks it completely before anything
is stored or run: size limits, no absolute paths, no ``..``, no symlinks leaving the folder,
no device files, FIFOs or sockets, a manifest that parses with the required fields, an entry
point that exists and is of the kind its runtime starts or builds from
(:meth:`sandbox.runtimes.Runtime.entry_problem`). Archives (``.zip``, ``.tar``,
``.tar.gz``/``.tgz``) are unpacked member by member into a fresh directory with the same
checks, never with ``extractall``.

Submissions are content-addressed: :attr:`Submission.sha256` hashes a canonical walk of the
folder (sorted relative paths, entry kinds, symlink targets and file bytes), so the same bot
packed as a zip, a tarball or a folder gets the same hash. Python byte-code caches
(``__pycache__``, ``*.pyc``) are ignored: running a bot locally must not change its identity.

Standard library only: this module is importable from the base install.
"""

from __future__ import annotations

import copy
import hashlib
import lzma
import os
import re
import shutil
import stat
import tarfile
import tempfile
import tomllib
import unicodedata
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from sandbox.death import printable
from sandbox.runtimes import REGISTRY, UnknownRuntimeError, get_runtime

__all__ = [
    "MANIFEST_NAME",
    "ArchiveError",
    "InvalidManifestError",
    "Manifest",
    "MissingEntryError",
    "Submission",
    "SubmissionError",
    "SubmissionLimits",
    "SubmissionTooLargeError",
    "UnsafePathError",
    "load_submission",
    "parse_manifest",
    "shown_as_plain_text",
    "store_submission",
]

MANIFEST_NAME = "bot.toml"
NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}\Z")
VERSION_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,39}\Z")
#: ``runtime`` names how the bot is built and run (sandbox.runtimes); ``language`` is its
#: older spelling, still accepted (``language = "python"``). One of the two is required.
SUPPORTED_LANGUAGES = frozenset(REGISTRY)
REQUIRED_FIELDS = ("name", "version", "entry")
RUNTIME_FIELDS = ("runtime", "language")
OPTIONAL_FIELDS = {"author": 200, "description": 2000}
IGNORED_DIRS = frozenset({"__pycache__"})
IGNORED_SUFFIXES = (".pyc", ".pyo")
_CHUNK = 1 << 16
_MAX_NAME_BYTES = 255  # one path component, as on every common file system
_MAX_PATH_BYTES = 1024  # a whole relative path or symlink target: well inside PATH_MAX
#: What a corrupt or unsupported compressed member raises while it is read (zlib, lzma and
#: bz2 data errors, an encrypted or unknown zip method, a stream that ends too early).
_DECODE_ERRORS = (
    OSError,
    EOFError,
    RuntimeError,
    zlib.error,
    lzma.LZMAError,
    UnicodeDecodeError,  # a zip member's name flagged as UTF-8 that is not
)


class SubmissionError(ValueError):
    """A submission was rejected; ``path`` names the offending file when there is one."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path

    def located(self, where: str) -> SubmissionError:
        """The same error (same type), its message prefixed with ``where``, e.g. the command
        line's argument for the bot: with several bots, which one is refused."""
        named = copy.copy(self)
        named.args = (f"{where}: {self}", *self.args[1:])
        return named


class InvalidManifestError(SubmissionError):
    """``bot.toml`` is missing, does not parse, or lacks / mistypes a field."""


class UnsafePathError(SubmissionError):
    """A path is absolute, climbs out with ``..``, is a symlink leaving the folder, or a device."""


class SubmissionTooLargeError(SubmissionError):
    """The submission exceeds a size or file-count limit."""


class MissingEntryError(SubmissionError):
    """The manifest's entry point does not exist or is not a regular file."""


class ArchiveError(SubmissionError):
    """The archive is corrupt or of an unsupported kind."""


class SubmissionChangedError(SubmissionError):
    """The folder changed between its validation and its copy into the store."""


class SubmissionStoreError(SubmissionError):
    """The store cannot take the submission (not the submission's fault): its folder cannot
    be made or written, or the disk is full."""


@dataclass(frozen=True)
class SubmissionLimits:
    """Upper bounds on a submission; exceeding any rejects it."""

    max_total_bytes: int = 20 * 1024 * 1024
    max_file_bytes: int = 10 * 1024 * 1024
    max_files: int = 2000
    max_depth: int = 20
    max_manifest_bytes: int = 64 * 1024


@dataclass(frozen=True)
class Manifest:
    """The parsed ``bot.toml``. ``language`` and ``runtime`` both hold the canonical runtime
    name (see :mod:`sandbox.runtimes`); ``language`` is kept for older callers."""

    name: str
    version: str
    language: str
    entry: str
    author: str | None = None
    description: str | None = None
    runtime: str = "python"


@dataclass(frozen=True)
class Submission:
    """A validated submission rooted at ``root`` (a folder; archives are unpacked first)."""

    root: Path
    manifest: Manifest
    sha256: str
    files: tuple[str, ...]
    total_bytes: int

    @property
    def entry_path(self) -> Path:
        """Absolute path of the entry point inside :attr:`root`."""
        return self.root / self.manifest.entry


def _shown(raw: str, limit: int = 120) -> str:
    """``raw`` safe for a one-line message: undecodable bytes as escapes, long paths cut."""
    text = raw.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text if len(text) <= limit else f"{text[: limit // 2]}…{text[-limit // 2 :]}"


def _quoted(raw: str, limit: int = 120) -> str:
    """``raw`` quoted for a one-line message: escaped like ``repr`` and cut when long."""
    return repr(_shown(raw, limit))


def _reason(exc: BaseException) -> str:
    """The cause of a low-level error in one line, without the temporary folder's path."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return _shown(" ".join(str(exc).split()) or type(exc).__name__, 200)


def _check_name(raw: str, *, what: str) -> None:
    """Reject names that are not valid UTF-8 or hold control characters (before any use)."""
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        shown = _shown(raw)
        # Quoted as repr would, but its bytes' escapes (\xff) shown once, not as \\xff.
        quoted = repr(shown).replace("\\\\", "\\")
        raise UnsafePathError(f"{what} {quoted} is not a valid UTF-8 file name", shown) from None
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in raw):
        shown = _shown(raw)
        raise UnsafePathError(f"{what} {shown!r} contains control characters", shown)


def _check_depth(rel: PurePosixPath, limits: SubmissionLimits) -> None:
    if len(rel.parts) > limits.max_depth:
        shown = _shown(rel.as_posix())
        raise SubmissionTooLargeError(
            f"{shown!r} is nested deeper than {limits.max_depth} levels", shown
        )


def _clean_relative(raw: str, *, what: str) -> PurePosixPath:
    """Validate a relative POSIX path: not absolute, no ``..``, no empty or NUL parts."""
    shown = _quoted(raw)
    if not raw or "\0" in raw or "\\" in raw:
        raise UnsafePathError(f"{what} {shown} is empty or contains NUL or backslash", raw)
    path = PurePosixPath(raw)
    if path.is_absolute() or raw.startswith("/"):
        raise UnsafePathError(f"{what} {shown} is an absolute path", raw)
    if any(part == ".." for part in path.parts):
        raise UnsafePathError(f"{what} {shown} climbs out of the folder with '..'", raw)
    parts = [p for p in path.parts if p != "."]
    if not parts:
        raise UnsafePathError(f"{what} {shown} names the folder itself", raw)
    if any(len(p.encode("utf-8", "surrogateescape")) > _MAX_NAME_BYTES for p in parts):
        raise UnsafePathError(f"{what} {shown} has a name longer than {_MAX_NAME_BYTES} bytes", raw)
    return PurePosixPath(*parts)


def parse_manifest(text: str, *, source: str = MANIFEST_NAME) -> Manifest:
    """Parse and validate the text of a ``bot.toml``; raise :class:`InvalidManifestError`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidManifestError(f"{source} is not valid TOML: {exc}", source) from exc
    except RecursionError:  # arrays or tables nested thousands deep
        raise InvalidManifestError(f"{source} is nested too deeply", source) from None
    known = {*REQUIRED_FIELDS, *RUNTIME_FIELDS, *OPTIONAL_FIELDS}
    unknown = sorted(set(data) - known)
    if unknown:
        names = ", ".join(_quoted(key, 60) for key in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise InvalidManifestError(f"{source} has unknown field(s): {names}{more}", source)
    values: dict[str, str | None] = {}
    for key in REQUIRED_FIELDS:
        if key not in data:
            raise InvalidManifestError(f"{source} lacks the required field {key!r}", source)
    if not any(key in data for key in RUNTIME_FIELDS):
        supported = ", ".join(sorted(SUPPORTED_LANGUAGES))
        raise InvalidManifestError(
            f"{source} lacks the required field 'runtime' (one of: {supported})", source
        )
    for key in (*REQUIRED_FIELDS, *RUNTIME_FIELDS, *OPTIONAL_FIELDS):
        if key not in data:
            values[key] = None
            continue
        value = data[key]
        if not isinstance(value, str):
            kind = type(value).__name__
            raise InvalidManifestError(f"{source}: {key!r} must be a string, not {kind}", source)
        values[key] = value
    name, version = str(values["name"]), str(values["version"])
    entry = str(values["entry"])
    if not NAME_RE.match(name):
        raise InvalidManifestError(
            f"{source}: name {_quoted(name, 60)} must match [a-z0-9][a-z0-9_-]{{0,39}}", source
        )
    if not VERSION_RE.match(version):
        raise InvalidManifestError(
            f"{source}: version {_quoted(version, 60)} must be 1-40 characters of [0-9A-Za-z.+_-]",
            source,
        )
    runtime = _manifest_runtime(values["runtime"], values["language"], source)
    try:
        entry = _clean_relative(entry, what="entry").as_posix()
    except UnsafePathError as exc:
        raise InvalidManifestError(f"{source}: {exc}", source) from exc
    for key, max_len in OPTIONAL_FIELDS.items():
        value = values[key]
        if value is not None and len(value) > max_len:
            raise InvalidManifestError(
                f"{source}: {key!r} is longer than {max_len} characters", source
            )
        if value is not None:
            _check_plain_text(value, key, source, newlines=key == "description")
    return Manifest(
        name=name,
        version=version,
        language=runtime,
        entry=entry,
        author=values["author"],
        description=values["description"],
        runtime=runtime,
    )


BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""Bidirectional formatting characters: they reorder the text shown after them (a name or
a description that reads differently from what it is)."""


def _not_plain_text(char: str, *, newlines: bool) -> bool:
    """Whether ``bot.toml`` refuses ``char`` in an ``author`` (``newlines`` false) or a
    ``description`` (true): a control character but a tab (or a line break), or a
    bidirectional formatting character."""
    if char == "\t" or (newlines and char in "\r\n"):
        return False
    return char in BIDI_CONTROLS or unicodedata.category(char) == "Cc"


def shown_as_plain_text(value: str, *, newlines: bool) -> str:
    """``value`` with each character ``bot.toml`` refuses in an author (``newlines`` false)
    or a description (true) made visible as an escape, the rest as it is.

    The database takes any manifest (a direct ``arena.db.submit``, an older release's rows):
    pages show such a text as ``bot.toml`` would have let it through, nothing more escaped
    (a line separator or a zero-width space that ``bot.toml`` accepts is shown as written).
    """
    return "".join(
        printable(char) if _not_plain_text(char, newlines=newlines) else char for char in value
    )


def _check_plain_text(value: str, key: str, source: str, *, newlines: bool) -> None:
    """``author`` and ``description`` are shown to people (web pages, the CLI): plain text,
    without control characters (tabs and, in a description, line breaks aside) or
    bidirectional formatting characters. InvalidManifestError names the first one."""
    for position, char in enumerate(value):
        if _not_plain_text(char, newlines=newlines):
            raise InvalidManifestError(
                f"{source}: {key!r} contains the control character U+{ord(char):04X} at"
                f" position {position}; write plain text",
                source,
            )


def _manifest_runtime(runtime: str | None, language: str | None, source: str) -> str:
    """The canonical runtime of ``runtime = ...`` / ``language = ...`` (they must agree)."""
    names: list[str] = []
    for key, given in (("runtime", runtime), ("language", language)):
        if given is None:
            continue
        try:
            names.append(get_runtime(given).name)
        except UnknownRuntimeError:
            supported = ", ".join(sorted(SUPPORTED_LANGUAGES))
            raise InvalidManifestError(
                f"{source}: {key} {_quoted(given, 60)} is not supported (supported: {supported})",
                source,
            ) from None
    if len(set(names)) > 1:
        raise InvalidManifestError(
            f"{source}: runtime {_quoted(str(runtime), 60)} and language "
            f"{_quoted(str(language), 60)} disagree; give only runtime",
            source,
        )
    return names[0]


def _ignored(rel: PurePosixPath) -> bool:
    return any(part in IGNORED_DIRS for part in rel.parts) or rel.name.endswith(IGNORED_SUFFIXES)


def _inside(root_real: str, target: str) -> bool:
    return target == root_real or target.startswith(root_real.rstrip("/") + "/")


@dataclass(frozen=True)
class _Entry:
    rel: str
    kind: str  # "d", "f" or "l"
    link: str = ""


def _walk(root: Path, limits: SubmissionLimits) -> Iterator[_Entry]:
    """Yield the folder's entries in canonical order, rejecting anything unsafe."""
    root_real = os.path.realpath(root)
    stack: list[PurePosixPath] = [PurePosixPath(".")]
    while stack:
        rel_dir = stack.pop()
        with os.scandir(root / rel_dir) as it:
            names = sorted(entry.name for entry in it)
        # Reverse so that popping visits children in sorted order (pre-order walk).
        subdirs: list[PurePosixPath] = []
        for name in names:
            rel = rel_dir / name if rel_dir != PurePosixPath(".") else PurePosixPath(name)
            _check_name(rel.as_posix(), what="file")
            if _ignored(rel):
                continue
            _check_depth(rel, limits)
            full = root / rel
            mode = os.lstat(full).st_mode
            if stat.S_ISLNK(mode):
                target = os.readlink(full)
                _check_name(target, what=f"target of symlink {rel.as_posix()!r}:")
                resolved = os.path.realpath(full)
                if os.path.isabs(target) or not _inside(root_real, resolved):
                    raise UnsafePathError(
                        f"symlink {rel.as_posix()!r} -> {target!r} leaves the submission folder",
                        rel.as_posix(),
                    )
                if not (os.path.isfile(resolved) or os.path.isdir(resolved)):
                    raise UnsafePathError(
                        f"symlink {rel.as_posix()!r} -> {target!r} does not point to a file",
                        rel.as_posix(),
                    )
                if _ignored(PurePosixPath(os.path.relpath(resolved, root_real))):
                    # Byte-code caches are not part of a submission: not hashed, not stored.
                    raise UnsafePathError(
                        f"symlink {rel.as_posix()!r} -> {target!r} points into a byte-code "
                        "cache (__pycache__, *.pyc), which is not part of a submission",
                        rel.as_posix(),
                    )
                yield _Entry(rel.as_posix(), "l", target)
            elif stat.S_ISDIR(mode):
                yield _Entry(rel.as_posix(), "d")
                subdirs.append(rel)
            elif stat.S_ISREG(mode):
                yield _Entry(rel.as_posix(), "f")
            else:
                raise UnsafePathError(
                    f"{rel.as_posix()!r} is a device, FIFO or socket, not a regular file",
                    rel.as_posix(),
                )
        stack.extend(reversed(subdirs))


def _scan(root: Path, limits: SubmissionLimits) -> tuple[str, tuple[str, ...], int]:
    """Hash the folder canonically; return (sha256, file list, total bytes)."""
    digest = hashlib.sha256(b"kryt-submission-v1\0")
    files: list[str] = []
    total = 0
    for entry in _walk(root, limits):
        files.append(entry.rel)
        if len(files) > limits.max_files:
            raise SubmissionTooLargeError(
                f"the submission has more than {limits.max_files} entries", entry.rel
            )
        digest.update(f"{entry.kind}\0{entry.rel}\0{entry.link}\0".encode())
        if entry.kind != "f":
            continue
        size = 0
        with open(root / entry.rel, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                size += len(chunk)
                if size > limits.max_file_bytes:
                    raise SubmissionTooLargeError(
                        f"{entry.rel!r} is larger than {limits.max_file_bytes} bytes", entry.rel
                    )
                digest.update(chunk)
        total += size
        if total > limits.max_total_bytes:
            raise SubmissionTooLargeError(
                f"the submission is larger than {limits.max_total_bytes} bytes "
                f"(limit reached at {entry.rel!r})",
                entry.rel,
            )
        digest.update(f"\0{size}\0".encode())
    return digest.hexdigest(), tuple(files), total


def _read_manifest(root: Path, limits: SubmissionLimits) -> Manifest:
    path = root / MANIFEST_NAME
    if path.is_symlink() or not path.is_file():
        raise InvalidManifestError(
            f"no {MANIFEST_NAME} (a regular file) at the top of the submission", MANIFEST_NAME
        )
    with path.open("rb") as handle:  # a huge manifest is not read into memory
        raw = handle.read(limits.max_manifest_bytes + 1)
    if len(raw) > limits.max_manifest_bytes:
        raise SubmissionTooLargeError(
            f"{MANIFEST_NAME} is larger than {limits.max_manifest_bytes} bytes", MANIFEST_NAME
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidManifestError(f"{MANIFEST_NAME} is not UTF-8: {exc}", MANIFEST_NAME) from exc
    return parse_manifest(text)


def _validate_folder(root: Path, limits: SubmissionLimits) -> Submission:
    manifest = _read_manifest(root, limits)
    sha, files, total = _scan(root, limits)
    entry = root / manifest.entry
    entry_real = os.path.realpath(entry)
    root_real = os.path.realpath(root)
    if not os.path.isfile(entry) or not _inside(root_real, entry_real):
        raise MissingEntryError(
            f"entry {manifest.entry!r} named in {MANIFEST_NAME} is not a file in the submission",
            manifest.entry,
        )
    if _ignored(PurePosixPath(os.path.relpath(entry_real, root_real))):
        # Not hashed and not stored with the submission: the stored bot could not start.
        raise MissingEntryError(
            f"entry {manifest.entry!r} named in {MANIFEST_NAME} is in a byte-code cache"
            " (__pycache__, *.pyc, *.pyo), which is not part of a submission",
            manifest.entry,
        )
    # An entry its runtime cannot start or build from (``bot.py`` for go) is refused here,
    # not at the first game: cpp and go never read it, so nothing else would say so.
    runtime = get_runtime(manifest.runtime)
    problem = runtime.entry_problem(manifest.entry)
    if problem is not None:
        raise InvalidManifestError(f"{MANIFEST_NAME}: {problem}", MANIFEST_NAME)
    if runtime.reads_entry_source:
        source = Path(entry_real).read_text(encoding="utf-8", errors="replace")
        problem = runtime.entry_source_problem(manifest.entry, source)
        if problem is not None:
            raise InvalidManifestError(f"{MANIFEST_NAME}: {problem}", MANIFEST_NAME)
    return Submission(root=root, manifest=manifest, sha256=sha, files=files, total_bytes=total)


def _archive_kind(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        return "tar"
    return None


def _copy_limited(src: IO[bytes], dest: Path, rel: str, limits: SubmissionLimits, used: int) -> int:
    """Copy at most the limits' bytes from ``src``; return the new running total."""
    size = 0
    with open(dest, "xb") as out:
        while chunk := src.read(_CHUNK):
            size += len(chunk)
            if size > limits.max_file_bytes:
                raise SubmissionTooLargeError(
                    f"{rel!r} is larger than {limits.max_file_bytes} bytes", rel
                )
            if used + size > limits.max_total_bytes:
                raise SubmissionTooLargeError(
                    f"the archive unpacks to more than {limits.max_total_bytes} bytes "
                    f"(limit reached at {rel!r})",
                    rel,
                )
            out.write(chunk)
    return used + size


def _make_dirs(dest_root: Path, rel: PurePosixPath, parts: tuple[str, ...]) -> Path:
    """Create ``dest_root/parts`` one level at a time, never through a symlink or a file.

    A symlink made by an earlier member would redirect the write: its target is only checked
    by name, and ``a -> .`` then ``b -> a/..`` passes that check yet leads out of the folder.
    """
    probe = dest_root
    for part in parts:
        probe = probe / part
        if probe.is_symlink():
            raise UnsafePathError(
                f"archive member {rel.as_posix()!r} is written through a symlink", rel.as_posix()
            )
        if probe.exists() and not probe.is_dir():
            raise ArchiveError(
                f"archive member {rel.as_posix()!r} is both a file and a directory",
                rel.as_posix(),
            )
        if not probe.exists():
            probe.mkdir()
    return probe


def _make_dir(dest_root: Path, rel: PurePosixPath) -> None:
    """Unpack a directory member."""
    _make_dirs(dest_root, rel, rel.parts)


def _make_parent(dest_root: Path, rel: PurePosixPath) -> Path:
    """Create the parents of a file or symlink member; return where it goes."""
    target = _make_dirs(dest_root, rel, rel.parts[:-1]) / rel.parts[-1]
    if target.exists() or target.is_symlink():
        raise ArchiveError(f"archive member {rel.as_posix()!r} appears twice", rel.as_posix())
    return target


def _check_link(rel: PurePosixPath, target: str) -> None:
    if not target:
        raise UnsafePathError(f"symlink {rel.as_posix()!r} has an empty target", rel.as_posix())
    if len(target.encode("utf-8", "surrogateescape")) > _MAX_PATH_BYTES:
        raise UnsafePathError(
            f"symlink {rel.as_posix()!r} has a target longer than {_MAX_PATH_BYTES} bytes",
            rel.as_posix(),
        )
    if os.path.isabs(target):
        raise UnsafePathError(
            f"symlink {rel.as_posix()!r} -> {target!r} leaves the submission folder",
            rel.as_posix(),
        )
    resolved = os.path.normpath(os.path.join(rel.parent.as_posix(), target))
    if resolved == ".." or resolved.startswith("../") or resolved.startswith("/"):
        raise UnsafePathError(
            f"symlink {rel.as_posix()!r} -> {target!r} leaves the submission folder",
            rel.as_posix(),
        )


def _check_declared(rel: PurePosixPath, size: int, limits: SubmissionLimits, declared: int) -> int:
    """Check a member's declared size before reading it; return the new declared total."""
    if size > limits.max_file_bytes:
        raise SubmissionTooLargeError(
            f"{rel.as_posix()!r} is larger than {limits.max_file_bytes} bytes", rel.as_posix()
        )
    if declared + size > limits.max_total_bytes:
        raise SubmissionTooLargeError(
            f"the archive unpacks to more than {limits.max_total_bytes} bytes "
            f"(limit reached at {rel.as_posix()!r})",
            rel.as_posix(),
        )
    return declared + size


def _member_path(raw: str, limits: SubmissionLimits) -> PurePosixPath:
    """An archive member's name, checked before anything is written: UTF-8, no control
    characters, relative, no ``..``, not deeper than the limit."""
    _check_name(raw, what="archive member")
    rel = _clean_relative(raw.rstrip("/"), what="archive member")
    _check_depth(rel, limits)  # first: a path too deep is also too long, and says why
    if len(rel.as_posix().encode("utf-8", "surrogateescape")) > _MAX_PATH_BYTES:
        raise UnsafePathError(
            f"archive member {_quoted(rel.as_posix())} is longer than {_MAX_PATH_BYTES} bytes",
            rel.as_posix(),
        )
    return rel


def _most_archive_entries(limits: SubmissionLimits) -> int:
    """The most members an archive may hold, checked before anything is unpacked: the
    folder's ``max_files`` and one directory wrapping them all (``mybot/...``); the top
    itself (``./``) is not counted. The unpacked folder is then held to ``max_files``
    exactly, as a folder submitted as it is."""
    return limits.max_files + 1


def _is_top(raw: str) -> bool:
    """A directory member naming the archive's top itself (``./``, as ``tar -C bot .``
    writes first): nothing to unpack."""
    return bool(raw) and not raw.startswith("/") and not PurePosixPath(raw).parts


_MAX_LINK_BYTES = 4096


def _zip_link_target(zf: zipfile.ZipFile, info: zipfile.ZipInfo, rel: PurePosixPath) -> str:
    if info.file_size > _MAX_LINK_BYTES:
        raise UnsafePathError(f"symlink {rel.as_posix()!r} has an oversized target", str(rel))
    raw = zf.read(info)
    try:
        target = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UnsafePathError(
            f"target of symlink {rel.as_posix()!r} is not valid UTF-8", rel.as_posix()
        ) from None
    _check_name(target, what=f"target of symlink {rel.as_posix()!r}:")
    _check_link(rel, target)
    return target


_ZIP_METHODS = frozenset(
    {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
)


def _precheck_zip(zf: zipfile.ZipFile, limits: SubmissionLimits) -> dict[str, str]:
    """Check every member of a zip before unpacking any; return the symlink targets."""
    members = zf.infolist()
    counted = [m for m in members if not (m.filename and m.is_dir() and _is_top(m.filename))]
    if len(counted) > _most_archive_entries(limits):
        raise SubmissionTooLargeError(f"the archive has more than {limits.max_files} entries")
    declared = 0
    links: dict[str, str] = {}
    for info in members:
        if not info.filename:  # ZipInfo.is_dir() would fail on it
            raise UnsafePathError("an archive member has an empty name", "")
        if info.is_dir() and _is_top(info.filename):
            continue
        rel = _member_path(info.filename, limits)
        mode = info.external_attr >> 16
        if info.is_dir():
            continue
        if info.flag_bits & 0x1:
            raise ArchiveError(
                f"archive member {rel.as_posix()!r} is encrypted; submit it unencrypted",
                rel.as_posix(),
            )
        if info.compress_type not in _ZIP_METHODS:
            raise ArchiveError(
                f"archive member {rel.as_posix()!r} uses an unsupported compression method "
                f"({info.compress_type}); use deflate or store",
                rel.as_posix(),
            )
        if mode and stat.S_ISLNK(mode):
            links[info.filename] = _zip_link_target(zf, info, rel)
        elif stat.S_IFMT(mode) and not stat.S_ISREG(mode):
            raise UnsafePathError(
                f"archive member {rel.as_posix()!r} is not a regular file", rel.as_posix()
            )
        else:
            declared = _check_declared(rel, info.file_size, limits, declared)
    return links


def _extract_zip(archive: Path, dest: Path, limits: SubmissionLimits) -> None:
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, *_DECODE_ERRORS) as exc:
        raise ArchiveError(f"{archive.name} is not a readable zip archive: {_reason(exc)}") from exc
    with zf:
        try:
            links = _precheck_zip(zf, limits)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, *_DECODE_ERRORS) as exc:
            raise ArchiveError(f"{archive.name} is corrupt: {_reason(exc)}") from exc
        used = 0
        for info in zf.infolist():
            if info.is_dir() and _is_top(info.filename):
                continue
            rel = _clean_relative(info.filename.rstrip("/"), what="archive member")
            try:
                if info.is_dir():
                    _make_dir(dest, rel)
                    continue
                if info.filename in links:
                    os.symlink(links[info.filename], _make_parent(dest, rel))
                    continue
                target_path = _make_parent(dest, rel)
                with zf.open(info) as src:
                    used = _copy_limited(src, target_path, rel.as_posix(), limits, used)
            except (zipfile.BadZipFile, zipfile.LargeZipFile, *_DECODE_ERRORS) as exc:
                raise ArchiveError(
                    f"cannot unpack {rel.as_posix()!r}: {_reason(exc)}", rel.as_posix()
                ) from exc


def _precheck_tar(tf: tarfile.TarFile, limits: SubmissionLimits) -> list[tarfile.TarInfo]:
    """Read and check every tar header before unpacking anything (stops at the limits)."""
    members: list[tarfile.TarInfo] = []
    declared = 0
    counted = 0
    for info in tf:
        members.append(info)
        if info.isdir() and _is_top(info.name):
            continue
        counted += 1
        if counted > _most_archive_entries(limits):
            raise SubmissionTooLargeError(f"the archive has more than {limits.max_files} entries")
        rel = _member_path(info.name, limits)
        if info.isdir():
            continue
        if info.issym():
            _check_name(info.linkname, what=f"target of symlink {rel.as_posix()!r}:")
            _check_link(rel, info.linkname)
        elif info.isreg():
            declared = _check_declared(rel, info.size, limits, declared)
        else:
            kind = "hard link" if info.islnk() else "device, FIFO or special file"
            raise UnsafePathError(
                f"archive member {rel.as_posix()!r} is a {kind}, not a regular file",
                rel.as_posix(),
            )
    return members


def _check_tar_end(tf: tarfile.TarFile, archive: Path, limits: SubmissionLimits) -> None:
    """Refuse a tar whose member list ends at an unreadable header rather than at the end
    (``tarfile`` stops there silently, dropping the members after it), and read the rest of
    a compressed stream, so that its checksum (gzip's CRC-32 is at the very end) is verified
    before anything is unpacked."""
    stream = tf.fileobj
    if stream is None:
        return
    stream.seek(tf.offset)
    block = stream.read(tarfile.BLOCKSIZE)
    if block.strip(b"\0"):
        raise ArchiveError(
            f"{archive.name} is corrupt: unreadable member header at byte {tf.offset}"
        )
    rest = len(block)
    while chunk := stream.read(_CHUNK):
        rest += len(chunk)
        if rest > limits.max_total_bytes:
            raise SubmissionTooLargeError(
                f"{archive.name} has more than {limits.max_total_bytes} bytes after its last member"
            )


TAR_META_BYTES = 64 * 1024
"""The largest extended header (a pax header, a GNU long name or link) an archive may carry:
``tarfile`` reads one whole into memory before any other limit is checked."""

_TAR_META_TYPES = {
    tarfile.GNUTYPE_LONGNAME: "GNU long-name",
    tarfile.GNUTYPE_LONGLINK: "GNU long-link",
    tarfile.XHDTYPE: "pax",
    tarfile.XGLTYPE: "pax global",
    tarfile.SOLARIS_XHDTYPE: "Solaris extended",
}


class _BoundedTarInfo(tarfile.TarInfo):
    """A tar header that refuses, before ``tarfile`` reads it, an extended header over
    :data:`TAR_META_BYTES` (a 64 KiB .tar.gz may declare one of gigabytes) and a GNU sparse
    member (its extension headers are read in an unbounded loop; no bot needs one)."""

    def _proc_member(self, archive: tarfile.TarFile) -> tarfile.TarInfo:
        kind = _TAR_META_TYPES.get(self.type)
        if kind is not None and self.size > TAR_META_BYTES:
            raise SubmissionTooLargeError(
                f"the archive has a {kind} header of {self.size} bytes; at most"
                f" {TAR_META_BYTES} are accepted"
            )
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise UnsafePathError(
                "the archive has a GNU sparse member, not a regular file", _shown(self.name)
            )
        member: tarfile.TarInfo = super()._proc_member(archive)  # type: ignore[misc]
        return member


def _extract_tar(archive: Path, dest: Path, limits: SubmissionLimits) -> None:
    try:  # closed by the `with tf` below
        tf = tarfile.open(archive, tarinfo=_BoundedTarInfo)  # noqa: SIM115
    except (tarfile.TarError, *_DECODE_ERRORS) as exc:
        # tarfile lists every compression it tried, one per line: say it in one.
        raise ArchiveError(
            f"{archive.name} is not a readable tar archive (plain, gzip, bzip2 or xz)"
        ) from exc
    with tf:
        used = 0
        try:
            members = _precheck_tar(tf, limits)
            _check_tar_end(tf, archive, limits)
            for info in members:
                if info.isdir() and _is_top(info.name):
                    continue
                rel = _clean_relative(info.name.rstrip("/"), what="archive member")
                if info.isdir():
                    _make_dir(dest, rel)
                elif info.issym():
                    os.symlink(info.linkname, _make_parent(dest, rel))
                else:
                    src = tf.extractfile(info)
                    if src is None:
                        raise ArchiveError(f"cannot read {rel.as_posix()!r}", rel.as_posix())
                    with src:
                        path = _make_parent(dest, rel)
                        used = _copy_limited(src, path, rel.as_posix(), limits, used)
        except (tarfile.TarError, *_DECODE_ERRORS) as exc:
            raise ArchiveError(f"{archive.name} is corrupt: {_reason(exc)}") from exc


def _archive_root(dest: Path) -> Path:
    """The folder holding ``bot.toml``: the top, or the single directory an archive wraps."""
    if (dest / MANIFEST_NAME).exists():
        return dest
    children = [child for child in dest.iterdir() if not _ignored(PurePosixPath(child.name))]
    if len(children) == 1 and children[0].is_dir() and not children[0].is_symlink():
        return children[0]
    return dest


def load_submission(
    path: str | os.PathLike[str],
    *,
    limits: SubmissionLimits | None = None,
    unpack_dir: str | os.PathLike[str] | None = None,
) -> Submission:
    """Validate a submission folder or archive and return it with its content hash.

    Archives are unpacked into ``unpack_dir`` (which must not exist yet) or into a new
    temporary directory; on any error the unpacked files are removed again.
    """
    limits = limits or SubmissionLimits()
    source = Path(path)
    if not source.exists():
        raise SubmissionError(f"submission {str(source)!r} does not exist", str(source))
    if source.is_dir():
        return _validate_folder(source.resolve(), limits)
    kind = _archive_kind(source)
    if kind is not None and not source.is_file():  # a FIFO or device would block or not end
        raise ArchiveError(f"{source.name!r} is not a regular file", str(source))
    if kind is None:
        raise ArchiveError(
            f"{source.name!r} is neither a folder nor a .zip/.tar/.tar.gz/.tgz archive",
            str(source),
        )
    archive_bytes = source.stat().st_size
    if archive_bytes > limits.max_total_bytes:
        raise SubmissionTooLargeError(
            f"archive {source.name!r} is larger than {limits.max_total_bytes} bytes", str(source)
        )
    if unpack_dir is None:
        dest = Path(tempfile.mkdtemp(prefix="kryt-submission-"))
    else:
        dest = Path(unpack_dir)
        dest.mkdir(parents=True)
    try:
        if kind == "zip":
            _extract_zip(source, dest, limits)
        else:
            _extract_tar(source, dest, limits)
        return _validate_folder(_archive_root(dest).resolve(), limits)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def _copy_regular(src: Path, dest: Path, rel: str) -> None:
    """Copy the regular file ``src``; a symlink or anything else found there now (the
    folder changed since it was validated) raises SubmissionChangedError."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SubmissionChangedError(
            f"{rel!r} changed while the submission was being stored ({exc.strerror}); "
            "submit it again",
            rel,
        ) from None
    with os.fdopen(fd, "rb") as source:
        if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
            raise SubmissionChangedError(
                f"{rel!r} is no longer a regular file; submit it again", rel
            )
        with open(dest, "wb") as target:
            shutil.copyfileobj(source, target)


def _check_copy(copy: Path, submission: Submission) -> None:
    """The stored copy must be what was validated: the same files, the same hash."""
    usual = SubmissionLimits()  # or roomier, when the submission was validated so
    depth = max((rel.count("/") + 1 for rel in submission.files), default=0)
    limits = SubmissionLimits(
        max_total_bytes=max(usual.max_total_bytes, submission.total_bytes),
        max_file_bytes=max(usual.max_file_bytes, submission.total_bytes),
        max_files=max(usual.max_files, len(submission.files)),
        max_depth=max(usual.max_depth, depth),
    )
    try:
        again = _validate_folder(copy, limits)
    except SubmissionError as exc:
        raise SubmissionChangedError(
            f"the submission changed while it was being stored ({exc}); submit it again",
            exc.path,
        ) from None
    if again.sha256 != submission.sha256:
        raise SubmissionChangedError(
            "the submission's files changed while it was being stored (hash "
            f"{again.sha256[:12]} instead of {submission.sha256[:12]}); submit it again"
        )


def _make_store(store_path: Path) -> None:
    """Create the submission store folder, or SubmissionError naming it and why it cannot be
    (a file in its place or on its path, a folder that cannot hold one, no permission, a
    path that is not UTF-8 text: the database records where each submission is stored)."""
    try:
        str(store_path).encode("utf-8")
    except UnicodeEncodeError:
        raise SubmissionStoreError(
            f"cannot use the submission store {_quoted(str(store_path))}: its path is not"
            " UTF-8 text, which the database cannot record; choose another --store",
            str(store_path),
        ) from None
    try:
        store_path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next(
            (p for p in (store_path, *store_path.parents) if p.exists() or p.is_symlink()), None
        )
        if isinstance(exc, FileExistsError | NotADirectoryError) and blocker is not None:
            why = f"{_quoted(str(blocker))} is not a folder"
        elif blocker is not None and blocker != store_path:
            why = f"no folder can be made in {_quoted(str(blocker))} ({_reason(exc)})"
        else:
            why = _reason(exc)
        raise SubmissionStoreError(
            f"cannot create the submission store {_quoted(str(store_path))}: {why};"
            " choose another --store",
            str(store_path),
        ) from None


def store_submission(submission: Submission, store: str | os.PathLike[str]) -> Path:
    """Copy a validated submission to ``store/<sha256>/`` atomically; return that folder.

    Storing the same content twice is a no-op. The copy goes to a temporary sibling that is
    renamed into place, so a failure never leaves a half-written submission behind. Files
    are opened without following symlinks and the copy is validated and hashed again before
    it is renamed: a folder changed meanwhile (a file swapped for a symlink, new content)
    raises :class:`SubmissionChangedError` and stores nothing.
    """
    store_path = Path(store)
    _make_store(store_path)
    final = store_path / submission.sha256
    if final.is_dir():
        return final
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{submission.sha256[:12]}-", dir=store_path))
    except OSError as exc:  # a folder we may not write in
        raise SubmissionStoreError(
            f"cannot store submissions in {_quoted(str(store_path))}: {_reason(exc)};"
            " choose another --store",
            str(store_path),
        ) from None
    try:
        for rel in submission.files:
            src = submission.root / rel
            dest = tmp / rel
            if src.is_symlink():
                os.symlink(os.readlink(src), dest)
            elif src.is_dir():
                dest.mkdir()
            else:
                _copy_regular(src, dest, rel)
        _check_copy(tmp, submission)
        os.chmod(tmp, 0o755)
        os.rename(tmp, final)
    except FileExistsError:
        shutil.rmtree(tmp, ignore_errors=True)
    except SubmissionError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if not final.is_dir():  # a full disk, a quota, an I/O error: one line, not a trace
            raise SubmissionStoreError(
                f"cannot store the submission in {_quoted(str(store_path))}:"
                f" {_reason(exc)}; free some space or choose another --store",
                str(store_path),
            ) from None
        shutil.rmtree(tmp, ignore_errors=True)
    return final
