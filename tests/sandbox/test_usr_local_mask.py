"""bwrap hides the host's /usr/local from Python bots unless their interpreter lives there
(the end-to-end check: the snoop bot in tests/sandbox/test_hostile.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.local import _usr_local_mask


@pytest.mark.skipif(not Path("/usr/local").is_dir(), reason="no /usr/local here")
def test_usr_local_is_masked_for_a_system_python() -> None:
    assert _usr_local_mask("/usr/bin/python3") == [
        "--tmpfs",
        "/usr/local",
        "--remount-ro",
        "/usr/local",
    ]


@pytest.mark.skipif(not Path("/usr/local").is_dir(), reason="no /usr/local here")
def test_usr_local_stays_when_the_bots_python_lives_there() -> None:
    assert _usr_local_mask("/usr/local/bin/python3.11") == []
