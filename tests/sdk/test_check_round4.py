"""``kryt bot check``'s report shows what a bot controls escaped (its handshake, its error
texts, its output), and checking an archive leaves no unpacked copy behind."""

from __future__ import annotations

import tarfile
import tempfile
from pathlib import Path

import pytest

from referee.protocol.messages import TimeControl
from sdk.tools.check import CheckReport, Problem, check_bot

EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\r\u202e"


def test_what_the_bot_controls_is_escaped_in_the_report() -> None:
    report = CheckReport(
        target="unix:///tmp/x.sock",
        name=f"evil{HOSTILE}",
        version=f"1{HOSTILE}",
        problems=[Problem("crash", f"BotError: {HOSTILE}boom")],
        stderr=f"first line\n{HOSTILE}second\n",
    )
    text = report.format()
    for raw in ("\x1b", "\x07", "\r", "\u202e"):
        assert raw not in text, repr(text)
    assert "evil\\x1b]0;pwned\\x07" in text and "boom" in text
    lines = text.split("\n")
    assert lines[-2:] == ["    first line", "    \\x1b]0;pwned\\x07\\x1b[2J\\x0d\\u202esecond"]


def test_checking_an_archive_leaves_no_unpacked_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "random.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(
            EXAMPLES / "random",
            arcname="random",
            filter=lambda i: None if "__pycache__" in i.name else i,
        )
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    roomy = TimeControl(move_ms=5000, bank_ms=60_000)
    report = check_bot(archive, games=1, time_control=roomy, startup_timeout=120)
    assert report.ok, report.format()
    assert report.name == "random"
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_a_temporary_folder_too_deep_for_a_socket_does_not_fail_the_bot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Unix socket path holds at most 107 bytes: under a deeper ``TMPDIR`` the bot could
    not bind its socket and the check blamed it (``crash: the bot exited with code 1``, seen
    under pytest's own deep temporary folders). The socket's folder moves to ``/tmp``."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    roomy = TimeControl(move_ms=5000, bank_ms=60_000)
    report = check_bot(EXAMPLES / "random", games=1, time_control=roomy, startup_timeout=120)
    assert report.ok, report.format()
    assert list(deep.iterdir()) == []  # the deep folder tried first is gone
