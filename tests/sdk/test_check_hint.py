"""The checker explains the one start-up failure that only shows outside bwrap and Docker:
stubs generated into a ``kryt/`` folder without ``__init__.py`` lose to the arena's own
``kryt`` package (docs/protocol.md, the Python runtime)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdk.tools.check import check_bot

pytestmark = pytest.mark.timeout(300)


def _raw_bot(tmp_path: Path, imports: str) -> Path:
    """A bot folder with protoc's output layout (``kryt/v1/bot_pb2.py``, no ``__init__.py``)
    whose entry starts with ``imports``."""
    folder = tmp_path / "raw"
    (folder / "kryt" / "v1").mkdir(parents=True)
    (folder / "kryt" / "v1" / "bot_pb2.py").write_text("# generated\n")
    (folder / "bot.toml").write_text(
        'name = "raw"\nversion = "1.0.0"\nruntime = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text(f"{imports}\nraise SystemExit('not reached')\n")
    return folder


def test_a_shadowed_kryt_namespace_gets_a_one_line_hint(tmp_path: Path) -> None:
    folder = _raw_bot(tmp_path, "from kryt.v1 import bot_pb2")
    report = check_bot(folder, games=1, startup_timeout=60)
    assert not report.ok
    assert "No module named 'kryt.v1'" in report.stderr, report.format()
    (hint,) = report.hints
    assert "kryt/ has no __init__.py" in hint and "kryt/__init__.py" in hint
    assert "kryt_proto.v1" in hint
    lines = [line for line in report.format().splitlines() if "hint:" in line]
    assert len(lines) == 1 and lines[0].strip().startswith("hint: kryt/ has no __init__.py")


def test_no_hint_for_another_start_up_failure(tmp_path: Path) -> None:
    folder = _raw_bot(tmp_path, "import no_such_module_here")
    report = check_bot(folder, games=1, startup_timeout=60)
    assert not report.ok and "no_such_module_here" in report.stderr
    assert report.hints == [] and "hint:" not in report.format()


def test_no_hint_once_the_folder_is_a_regular_package(tmp_path: Path) -> None:
    folder = _raw_bot(tmp_path, "from kryt.v1 import bot_pb2")
    (folder / "kryt" / "__init__.py").write_text("")
    report = check_bot(folder, games=1, startup_timeout=60)
    # It imports now, and fails for what it is: a bot that exits at once.
    assert "ModuleNotFoundError" not in report.stderr, report.format()
    assert "not reached" in report.stderr and report.hints == []
