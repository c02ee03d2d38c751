"""`kryt play` shows what a forfeited bot printed, as a tournament stores it for replay."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)

SAYS = "thinking very hard \x1b[2J"


def _stuck_bot(folder: Path) -> Path:
    """The sleeper fixture, renamed, saying something on stderr before it hangs."""
    shutil.copytree(ROOT / "tests/referee/bots/sleeper", folder)
    manifest = folder / "bot.toml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace('"sleeper"', '"stuck"'), encoding="utf-8"
    )
    code = (folder / "bot.py").read_text(encoding="utf-8")
    code = code.replace(
        "            time.sleep(30)",
        f"            import sys\n            print({SAYS!r}, file=sys.stderr, flush=True)\n"
        "            time.sleep(30)",
    )
    assert SAYS[:8] in code
    (folder / "bot.py").write_text(code, encoding="utf-8")
    return folder


@pytest.mark.parametrize("verbose", [False, True])
def test_a_move_timeout_shows_the_bots_last_output(
    verbose: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before, a move timeout in `kryt play` said only "no reply within ...": the bot's
    output was read by the tournament's recorder alone."""
    monkeypatch.chdir(tmp_path)
    stuck = _stuck_bot(tmp_path / "stuck")
    args = ["play", str(stuck), "builtin:random", "-n", "1", "--backend", "process"]
    code = main([*args, "--time", "0.3+1", *(["-v"] if verbose else [])])
    out, err = capsys.readouterr()
    assert code == ExitCode.OK, (out, err)
    shown = (out if verbose else err).splitlines()
    if verbose:
        at = next(i for i, line in enumerate(shown) if line.startswith("game 1/1 "))
        assert "stuck 1.0.0 wins" not in shown[at] and "random" in shown[at], shown[at]
    else:
        at = next(i for i, line in enumerate(shown) if "stuck 1.0.0 forfeited" in line)
        assert shown[at].startswith("stuck 1.0.0 forfeited series 1 game 1 ("), shown[at]
    assert shown[at + 1 : at + 3] == ["    its process: still running", "    last output:"]
    # After the SDK's "serving on" line.
    assert "    thinking very hard \\x1b[2J" in shown[at + 3 : at + 6], (out, err)
    assert "\x1b" not in out + err
