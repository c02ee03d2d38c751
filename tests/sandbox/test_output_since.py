"""A bot's output read by position: the local backend's pipe tail (every byte counted, what
waits in the pipe read first) and the Docker backend's timestamped log tail."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from sandbox.backend import OutputSince
from sandbox.docker_backend import lines_since
from sandbox.local import _Tail

LIMIT = 1024


@pytest.fixture
def pipe() -> Iterator[tuple[_Tail, int]]:
    """A tail reading a fresh pipe, and the pipe's write end."""
    read_end, write_end = os.pipe()
    tail = _Tail(os.fdopen(read_end, "rb"), LIMIT)
    try:
        yield tail, write_end
    finally:
        os.close(write_end)
        tail.join(10)


def write(fd: int, text: str) -> None:
    os.write(fd, text.encode())


def test_what_is_written_before_asking_is_all_there_at_once(pipe: tuple[_Tail, int]) -> None:
    tail, fd = pipe
    position = 0
    for game in range(50):
        # Repeating output: only the position tells one game's part from the last one's.
        write(fd, "same line\n" * 7)
        output = tail.since(position)
        assert output.text == "same line\n" * 7 and not output.cut, game
        position = output.position
    assert position == 50 * 70
    assert tail.since(position) == OutputSince("", False, position)


def test_more_than_the_tail_keeps_is_its_end_and_cut(pipe: tuple[_Tail, int]) -> None:
    tail, fd = pipe
    first = tail.since(0)
    assert first == OutputSince("", False, 0)
    for _ in range(20):
        write(fd, "x" * 999 + "\n")
    output = tail.since(first.position)
    assert output.cut and output.position == 20_000
    assert len(output.text) == LIMIT and output.text.endswith("x\n")
    # The next game's output, small again, is exact.
    write(fd, "after\n")
    assert tail.since(output.position) == OutputSince("after\n", False, 20_006)


def test_output_larger_than_the_pipe_buffer_is_counted_whole(pipe: tuple[_Tail, int]) -> None:
    tail, fd = pipe
    block = "y" * 4095 + "\n"
    for _ in range(64):  # 256 KiB: the reader thread must keep draining meanwhile
        write(fd, block)
    write(fd, "end\n")
    output = tail.since(0)
    assert output.position == 64 * 4096 + 4 and output.cut
    assert output.text.endswith("y\nend\n") and len(output.text) == LIMIT


BASE = datetime(2026, 12, 2, 5, 0, tzinfo=UTC)
BASE_NS = int(BASE.timestamp()) * 1_000_000_000


def _stamped(lines: list[tuple[int, str]]) -> str:
    """``docker logs -t`` text: each line after its RFC 3339 nanosecond stamp, given as
    nanoseconds after BASE."""
    out = []
    for ns, text in lines:
        seconds, fraction = divmod(ns, 1_000_000_000)
        stamp = (BASE + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
        out.append(f"{stamp}.{fraction:09d}Z {text}\n")
    return "".join(out)


def test_docker_stamps_parse_to_nanoseconds() -> None:
    output = lines_since(_stamped([(7_000_000_123, "a")]), 0)
    assert output == OutputSince("a\n", False, BASE_NS + 7_000_000_123)
    # A shorter fraction is padded, as the engine's RFC 3339 allows.
    assert lines_since("2026-12-02T05:00:01.5Z b\n", 0).position == BASE_NS + 1_500_000_000


def test_docker_lines_after_the_position_are_exact_even_when_repeating() -> None:
    lines = [(i * 1000, "same") for i in range(1, 11)]
    first = lines_since(_stamped(lines[:4]), 0)
    assert first == OutputSince("same\n" * 4, False, BASE_NS + 4000)
    # The engine is asked from a little before the position: older lines are dropped here.
    second = lines_since(_stamped(lines), first.position)
    assert second == OutputSince("same\n" * 6, False, BASE_NS + 10_000)
    assert lines_since(_stamped(lines), second.position) == OutputSince("", False, second.position)


def test_docker_log_rotated_past_the_position_is_cut() -> None:
    before = lines_since(_stamped([(1000, "old"), (2000, "last read")]), 0)
    # The engine's log file was rotated: the line at the position is gone, and maybe more.
    after = lines_since(_stamped([(5000, "after rotation")]), before.position)
    assert after == OutputSince("after rotation\n", True, BASE_NS + 5000)
    # Not rotated: the line at the position is still there, so nothing is missing.
    kept = lines_since(_stamped([(2000, "last read"), (5000, "new")]), before.position)
    assert kept == OutputSince("new\n", False, BASE_NS + 5000)


def test_docker_lines_without_a_stamp_are_ignored() -> None:
    assert lines_since("no stamp here\n\n", 0) == OutputSince("", False, 0)
    assert lines_since("2026-13-99T00:00:00.1Z bad date\n", 0) == OutputSince("", False, 0)
