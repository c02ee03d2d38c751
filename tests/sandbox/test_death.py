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
        (1, False, "Traceback ... MemoryError", DeathCause.OOM, None),
        (137, True, "", DeathCause.OOM, signal.SIGKILL),
        (0, True, "", DeathCause.OOM, None),  # OOM killed a child; main exited 0
        (137, False, "", DeathCause.SIGNALED, signal.SIGKILL),
        (SIGXFSZ_EXIT, False, "", DeathCause.FILE_SIZE, signal.SIGXFSZ),
        (-signal.SIGXFSZ, False, "", DeathCause.FILE_SIZE, signal.SIGXFSZ),
        (-signal.SIGSEGV, False, "", DeathCause.SIGNALED, signal.SIGSEGV),
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


def test_describe_names_the_signal() -> None:
    assert "SIGXFSZ" in classify_exit(153).describe()


@pytest.mark.parametrize("field", ["memory_bytes", "pids", "cpus", "startup_timeout"])
def test_limits_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SandboxLimits(**{field: 0})


def test_limits_need_room_for_threads() -> None:
    with pytest.raises(ValueError, match="at least 4"):
        SandboxLimits(pids=2)
