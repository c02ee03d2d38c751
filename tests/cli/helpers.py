"""Running the CLI in process, as a user would from a shell."""

from __future__ import annotations

import pytest

from kryt.cli import main


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``kryt ARGS...``: its exit status, standard output and standard error."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
