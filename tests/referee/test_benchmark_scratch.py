"""The referee's speed scripts clean up after themselves: a run leaves nothing in the
temporary folder (each run made a folder of Unix sockets and left it behind)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.protocol.helpers import socket_dir
from tests.referee.bench_loader import BENCHMARKS

TINY = ["--streams", "1", "--decisions", "60", "--repeat", "1"]


@pytest.mark.parametrize(
    ("script", "printed"),
    [("referee_overhead.py", "own work"), ("referee_breakdown.py", "total")],
)
def test_a_run_leaves_no_scratch_folder(script: str, printed: str) -> None:
    # A short folder: the scripts' Unix socket paths must stay under ~107 bytes.
    with socket_dir() as scratch:
        run = subprocess.run(
            [sys.executable, str(BENCHMARKS / script), *TINY],
            env={**os.environ, "TMPDIR": str(scratch)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        left = list(scratch.iterdir())
    # The overhead script exits 1 when its target is missed (tiny runs are noise): only a
    # crash (a traceback, or no table) is a failure here.
    assert "Traceback" not in run.stderr, run.stderr
    assert printed in run.stdout, run.stdout + run.stderr
    assert left == []
