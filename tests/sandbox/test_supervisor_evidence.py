"""The supervisor's evidence for ``disk limit`` (:mod:`sandbox.supervisor`): a SIGXFSZ in a
wait status counts only with a file of the bot's filled to its file-size limit. Fast checks
without a sandbox; the backends' own are in ``test_forged_labels.py``."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from sandbox.supervisor import (
    SUPERVISOR,
    Report,
    file_at_limit,
    host_report,
    parse_report,
    proven_signal,
    reported,
    strip_status,
)

LIMIT = 64 * 1024


def _write(path: Path, size: int) -> Path:
    path.write_bytes(b"\x01" * size)
    return path


def test_a_file_filled_to_the_limit_is_evidence(tmp_path: Path) -> None:
    _write(tmp_path / "huge", LIMIT)
    assert file_at_limit((str(tmp_path),), LIMIT)


def test_a_file_in_a_subdirectory_is_found(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    _write(tmp_path / "a" / "b" / "huge", LIMIT)
    assert file_at_limit((str(tmp_path / "missing"), str(tmp_path)), LIMIT)


def test_no_evidence_without_such_a_file(tmp_path: Path) -> None:
    _write(tmp_path / "small", LIMIT - 1)
    assert not file_at_limit((str(tmp_path),), LIMIT)
    assert not file_at_limit((str(tmp_path / "missing"),), LIMIT)


def test_a_sparse_file_is_no_evidence(tmp_path: Path) -> None:
    with open(tmp_path / "sparse", "wb") as handle:
        handle.truncate(LIMIT * 16)
    assert not file_at_limit((str(tmp_path),), LIMIT)


def test_links_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    _write(outside / "huge", LIMIT)
    place = tmp_path / "place"
    place.mkdir()
    (place / "file").symlink_to(outside / "huge")
    (place / "dir").symlink_to(outside)
    assert not file_at_limit((str(place),), LIMIT)


def test_a_file_older_than_the_bot_is_no_evidence(tmp_path: Path) -> None:
    old = _write(tmp_path / "shipped", LIMIT)
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert not file_at_limit((str(tmp_path),), LIMIT, since=time.time() - 60)
    assert file_at_limit((str(tmp_path),), LIMIT, since=0.0)


def test_the_search_is_bounded(tmp_path: Path) -> None:
    for index in range(20):
        (tmp_path / f"empty{index}").touch()
    _write(tmp_path / "huge", LIMIT)
    assert not file_at_limit((str(tmp_path),), LIMIT, seconds=-1.0)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"signal 25 at-limit\n", Report(25, True)),
        (b"signal 25\n", Report(25, False)),
        (b"signal 9\n", Report(9, False)),
        (b"exit 153\n", None),
        (b"signal 25 at-limit", None),
        (b"", None),
    ],
)
def test_parse_report(data: bytes, expected: Report | None) -> None:
    assert parse_report(data) == expected


def test_the_docker_report_line() -> None:
    token = "f" * 32
    output = f"hello\nkryt-sandbox-status {token} signal 25 at-limit\n"
    assert reported(output, token) == Report(25, True)
    assert reported(output.replace(" at-limit", ""), token) == Report(25, False)
    assert reported(output, "0" * 32) is None  # a line without the secret is the bot's
    assert strip_status(output, token) == "hello"
    assert strip_status(output.replace(" at-limit", ""), token) == "hello"


def test_only_sigxfsz_needs_the_evidence() -> None:
    xfsz = int(signal.SIGXFSZ)
    assert proven_signal(None, LIMIT) == (None, "")
    assert proven_signal(Report(xfsz, True), LIMIT) == (xfsz, "")
    assert proven_signal(Report(9), LIMIT) == (9, "")
    sig, detail = proven_signal(Report(xfsz), LIMIT)
    assert sig is None
    assert "SIGXFSZ" in detail and f"{LIMIT} bytes" in detail


def test_host_report(tmp_path: Path) -> None:
    since = time.time() - 5
    places = (str(tmp_path),)
    assert host_report(0, places, LIMIT, since) is None
    assert host_report(153, places, LIMIT, since) is None
    assert host_report(-9, places, LIMIT, since) == Report(9, False)
    assert host_report(-signal.SIGXFSZ, places, LIMIT, since) == Report(25, False)
    _write(tmp_path / "huge", LIMIT)
    assert host_report(-signal.SIGXFSZ, places, LIMIT, since) == Report(25, True)
    assert host_report(-signal.SIGXFSZ, (), LIMIT, since) == Report(25, False)


def _supervised(command: list[str], fsize: int) -> tuple[int, bytes]:
    """Run ``command`` under the bwrap supervisor here (not as a namespace's process 1),
    with ``RLIMIT_FSIZE`` = ``fsize``; its exit status and its report."""
    read, write = os.pipe()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", SUPERVISOR, str(write), *command],
            pass_fds=[write],
            preexec_fn=limit,
            timeout=120,
            check=False,
        )
        os.close(write)
        write = -1
        with os.fdopen(read, "rb") as handle:
            read = -1
            return done.returncode, handle.read()
    finally:
        for fd in (read, write):
            if fd >= 0:
                os.close(fd)


def test_the_supervisor_reports_a_real_breach_at_the_limit() -> None:
    # Its places are /tmp, /dev/shm and /run/kryt: here, the host's /tmp.
    path = Path("/tmp") / f"kryt-test-fsize-{uuid.uuid4().hex}"
    limit = LIMIT + 4096 * 3
    try:
        code, said = _supervised(
            ["/bin/sh", "-c", f"exec head -c {limit * 4} /dev/zero > {path}"], limit
        )
        assert path.stat().st_size == limit
    finally:
        path.unlink(missing_ok=True)
    assert code == 128 + signal.SIGXFSZ
    assert parse_report(said) == Report(signal.SIGXFSZ, True), said


def test_the_supervisor_reports_a_raised_sigxfsz_without_evidence() -> None:
    # A limit no file of the host's /tmp reaches.
    code, said = _supervised(["/bin/sh", "-c", "kill -s XFSZ $$"], 1 << 50)
    assert code == 128 + signal.SIGXFSZ
    assert parse_report(said) == Report(signal.SIGXFSZ, False), said
