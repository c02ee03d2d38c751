"""How ``kryt replay`` lays out a forfeit that carries the bot's output (a start-up crash or
timeout, a handshake or move timeout): the reason on the forfeit's line (``; sent: ...``
right after it), how its process stands and its output below it, line by line."""

from __future__ import annotations

from kryt.commands.replay import detail_parts
from sandbox.backend import no_socket_reason
from sandbox.death import STILL_RUNNING, classify_exit, output_note

OUTPUT = "starting\nserving on 127.0.0.1:50051 \x1b[2J\n"


def test_a_start_up_crash_reads_its_reason_then_its_output() -> None:
    report = classify_exit(3, log_tail=OUTPUT)
    said = output_note(report.describe(), report.log_tail)
    detail = f"c-tcp@1.0.0 could not start: the bot exited before creating its socket{said}"
    first, rest = detail_parts(detail)
    assert first == "c-tcp@1.0.0 could not start: the bot exited before creating its socket"
    assert rest.split("\n") == [
        "its process: crashed, exit code 3",
        "last output:",
        "starting",
        "serving on 127.0.0.1:50051 \\x1b[2J",
    ]


def test_a_start_up_timeout_of_each_runtime_reads_its_reason_then_its_output() -> None:
    for runtime in ("java", "cpp"):
        reason = no_socket_reason(runtime, 15)
        detail = f"b@1.0.0 could not start: {reason}{output_note(STILL_RUNNING, OUTPUT)}"
        first, rest = detail_parts(detail)
        assert first == f"b@1.0.0 could not start: {reason}"
        assert "last output" not in first and "\n" not in first
        assert rest.startswith("its process: still running\nlast output:\nstarting\n")
