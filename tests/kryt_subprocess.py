"""``kryt`` run as a user runs it from a shell, in a process of its own: for tests that
signal or kill it, time it out, or run it as another user. In-process runs (``kryt.cli.main``
with pytest's capture) are in ``tests/cli/helpers.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KRYT = [sys.executable, "-m", "kryt"]
DEADLINE = 240.0
"""Seconds a command may take: generous, a loaded two-core machine."""


def clean_env(**extra: str) -> dict[str, str]:
    """A minimal environment importing this checkout: no ``KRYT_*`` setting of the caller
    (a database URL, a sandbox) reaches the command unless ``extra`` gives it."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def run_kryt(
    cwd: Path,
    *args: str,
    env: dict[str, str],
    timeout: float = DEADLINE,
    user: int | None = None,
    errors: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``kryt ARGS`` in ``cwd`` to its end: its status and output (as ``user`` and that
    user's group alone, when given)."""
    return subprocess.run(
        [*KRYT, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors=errors,
        timeout=timeout,
        env=env,
        user=user,
        group=user,
        extra_groups=[] if user is not None else None,
    )


def start_kryt(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """``kryt ARGS`` started in a session and process group of its own (so the group can
    be signalled or killed as a whole), its output piped."""
    return subprocess.Popen(
        [*KRYT, *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
