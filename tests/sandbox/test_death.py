"""Exit statuses map to death causes; limits reject nonsense."""

from __future__ import annotations

import signal

import pytest

from sandbox.death import SIGXFSZ_EXIT, DeathCause, classify_exit
from sandbox.limits import SandboxLimits


@pytest.mark.parametrize(
    ("code", "oom", "log", "cause", "sig"),
    [
        (0, False, "", DeathCause.EXITED, None),
        (1, False, "Traceback ... ValueError", DeathCause.CRASHED, None),
        # The bot's own words are no evidence: a crash, whatever it printed.
        (1, False, "Traceback ... MemoryError", DeathCause.CRASHED, None),
        (137, True, "", DeathCause.OOM, None),
        (0, True, "", DeathCause.OOM, None),  # OOM killed a child; main exited 0
        # 128 + N is an exit status a bot can choose: no signal without evidence.
        (137, False, "", DeathCause.CRASHED, None),
        (SIGXFSZ_EXIT, False, "", DeathCause.CRASHED, None),
        (-signal.SIGXFSZ, False, "", DeathCause.FILE_SIZE, signal.SIGXFSZ),
        (-signal.SIGSEGV, False, "", DeathCause.SIGNALED, signal.SIGSEGV),
        (-signal.SIGKILL, True, "", DeathCause.OOM, signal.SIGKILL),
        (None, False, "", DeathCause.VANISHED, None),
    ],
)
def test_classify_exit(
    code: int | None, oom: bool, log: str, cause: DeathCause, sig: int | None
) -> None:
    report = classify_exit(code, oom_killed=oom, log_tail=log)
    assert report.cause is cause
    assert report.signal == sig
    assert cause.value in report.describe()


def test_a_supervisors_report_is_the_evidence_of_a_signal() -> None:
    """A flattened 128 + N is a signal death only with a supervisor's report of N."""
    report = classify_exit(SIGXFSZ_EXIT, signal_number=signal.SIGXFSZ)
    assert report.cause is DeathCause.FILE_SIZE and report.exit_code == SIGXFSZ_EXIT
    assert classify_exit(137, signal_number=signal.SIGKILL).cause is DeathCause.SIGNALED


def test_a_memory_error_the_bot_printed_is_said_as_its_own() -> None:
    report = classify_exit(1, log_tail="Traceback (most recent call last):\nMemoryError\n")
    assert report.cause is DeathCause.CRASHED
    assert "reported MemoryError" in report.describe()


def test_describe_names_the_signal() -> None:
    assert "SIGXFSZ" in classify_exit(-signal.SIGXFSZ).describe()
    assert "SIGXFSZ" not in classify_exit(SIGXFSZ_EXIT).describe()


@pytest.mark.parametrize("field", ["memory_bytes", "pids", "cpus", "startup_timeout"])
def test_limits_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SandboxLimits(**{field: 0})


def test_limits_need_room_for_threads() -> None:
    with pytest.raises(ValueError, match="at least 4"):
        SandboxLimits(pids=2)
