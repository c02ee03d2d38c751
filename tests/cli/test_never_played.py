"""A run in which a bot never played (every game its start-up failure) is not a success."""

from __future__ import annotations

from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]


def test_a_tournament_with_a_bot_that_never_starts_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(
        ["tournament", "run", "builtin:greedy", str(ROOT / "tests/referee/bots/exits-at-start"),
         "--games", "2", "--backend", "process", "--unsafe", "--name", "idle"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == ExitCode.FAILED
    assert "exits-at-start 1.0.0 never played" in " ".join(err.split())


def test_a_tournament_shows_a_bot_that_never_started_with_its_last_output_below(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reason on the "never played" line, how the process ended and its last output
    below it, indented and escaped, at most NEVER_PLAYED_LINES: the whole detail was one
    line of \\x0a escapes cut at 200 characters."""
    from kryt.commands.tournament import NEVER_PLAYED_LINES

    monkeypatch.chdir(tmp_path)
    loud = _copy_named(ROOT / "tests/referee/bots/exits-at-start", tmp_path / "loud", "loud")
    (loud / "bot.py").write_text(
        "import sys\nfor n in range(20):\n    sys.stderr.write(f'line {n} \\x1b[2J\\n')\n"
        "sys.exit(4)\n",
        encoding="utf-8",
    )
    code = main(
        ["tournament", "run", "builtin:greedy", str(loud), "--games", "2", "--backend",
         "process", "--unsafe", "--name", "loud"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == ExitCode.FAILED, err
    lines = err.splitlines()
    at = next(i for i, line in enumerate(lines) if "loud 1.0.0 never played" in line)
    assert "\\x0a" not in lines[at] and "its process" not in lines[at], lines[at]
    below = lines[at + 1 : at + 1 + NEVER_PLAYED_LINES]
    assert all(line.startswith("    ") for line in below), below
    assert below[0].strip() == "its process: crashed, exit code 4", below
    assert below[1].strip() == "last output:", below
    assert below[2].strip() == "line 0 \\x1b[2J", below
    assert below[-1].strip().startswith("... (") and "kryt replay" in below[-1], below
    assert "\x1b" not in err


def test_a_tournament_where_everyone_played_exits_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(
        ["tournament", "run", "builtin:greedy", "builtin:random", "--games", "2",
         "--backend", "process", "--name", "busy"]
    )  # fmt: skip
    assert code == ExitCode.OK
    assert "never played" not in capsys.readouterr().err


def test_play_with_a_bot_that_never_starts_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(
        ["play", "builtin:greedy", str(ROOT / "tests/referee/bots/exits-at-start"),
         "--games", "2", "--backend", "process"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == ExitCode.FAILED
    assert "never played" in " ".join(err.split())


def test_two_bots_that_never_start_at_one_table_are_both_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Several seats of a table that could not start: the record's forfeit names the first
    of them only, and the others passed for having played (exit 0, no line)."""
    import shutil

    monkeypatch.chdir(tmp_path)
    second = tmp_path / "exits-too"
    shutil.copytree(ROOT / "tests/referee/bots/exits-at-start", second)
    manifest = second / "bot.toml"
    manifest.write_text(manifest.read_text().replace('"exits-at-start"', '"exits-too"'))
    code = main(
        ["tournament", "run", "builtin:greedy", str(ROOT / "tests/referee/bots/exits-at-start"),
         str(second), "--ruleset", "classic", "--table-size", "3", "--games", "2",
         "--backend", "process", "--unsafe", "--name", "idle table"]
    )  # fmt: skip
    err = " ".join(capsys.readouterr().err.split())
    assert code == ExitCode.FAILED
    assert "exits-at-start 1.0.0 never played" in err and "exits-too 1.0.0 never played" in err
    assert "greedy 1.0.0 never played" not in err


def _copy_named(source: Path, folder: Path, name: str) -> Path:
    """``source`` copied to ``folder`` with the bot renamed to ``name`` in its bot.toml."""
    import shutil

    shutil.copytree(source, folder)
    manifest = folder / "bot.toml"
    old = manifest.read_text(encoding="utf-8").split('name = "', 1)[1].split('"', 1)[0]
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace(f'"{old}"', f'"{name}"'), encoding="utf-8"
    )
    return folder


def test_play_where_neither_bot_starts_says_so_and_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every game a double forfeit: no score of draws and no Elo estimate of 0 (audit-langs
    finding 4), but each bot's own reason, escaped, and exit 1 as when one bot never starts."""
    monkeypatch.chdir(tmp_path)
    first = ROOT / "tests/referee/bots/exits-at-start"
    # The second one crashes at start-up printing an escape sequence: shown escaped.
    second = _copy_named(first, tmp_path / "loud", "loud")
    (second / "bot.py").write_text(
        "import sys\nsys.stderr.write('loud \\x1b[2J crash\\n')\nsys.exit(4)\n", encoding="utf-8"
    )
    code = main(["play", str(first), str(second), "--games", "2", "--backend", "process"])
    out, err = capsys.readouterr()
    lines = [" ".join(line.split()) for line in err.splitlines()]
    assert code == ExitCode.FAILED, (out, err)
    assert "neither bot played: every game was lost to start-up failures" in lines
    ours = [line for line in lines if "never played: every game was its start-up failure" in line]
    assert len(ours) == 2, err
    assert ours[0].startswith("exits-at-start 1.0.0 never played") and "loud" not in ours[0]
    # Each reason on its line, the process and its last output below it, indented (raw
    # lines: the flattened ones lost the indent).
    raw = err.splitlines()
    at = raw.index(next(line for line in raw if line.startswith("exits-at-start 1.0.0 never")))
    assert raw[at + 1 : at + 4] == [
        "    its process: crashed, exit code 1",
        "    last output:",
        "    this bot refuses to start",
    ]
    assert ours[1].startswith("loud 1.0.0 never played") and "\\x0a" not in ours[1]
    at = raw.index(next(line for line in raw if line.startswith("loud 1.0.0 never")))
    assert raw[at + 1 : at + 4] == [
        "    its process: crashed, exit code 4",
        "    last output:",
        "    loud \\x1b[2J crash",
    ]
    assert "\x1b" not in out + err
    # No statistics made of the double forfeits.
    assert "Elo" not in out and "LOS" not in out and "draw ratio" not in out
    # The table says why each game was not played (its cells wrap: the first words only).
    assert out.count("double forfeit") == 2 and out.count("neither bot") == 2


@pytest.mark.parametrize("flag", ["--backend", "--sandbox"])
def test_play_on_the_process_backend_refuses_a_bot_of_another_runtime_before_playing(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The process backend runs Python only: a node bot is refused at once, in the words of
    `kryt bot check --backend none`, naming the bot as given (quoted), before any game or
    sandbox line (audit-langs finding 4)."""
    monkeypatch.chdir(tmp_path)
    node = _copy_named(ROOT / "sdk/tools/starters/js", tmp_path / "js\x1bbot", "js-bot")
    code = main(["play", "builtin:greedy", str(node), "-n", "2", flag, "process"])
    out, err = capsys.readouterr()
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert out == ""
    assert err.splitlines() == [
        f"error: {str(node)!r}: a node bot is built and run by a sandbox: play it with"
        " --backend bwrap or --backend docker (the process backend runs Python bots only)"
    ]
    assert "\x1b" not in err and "\\x1b" in err


def test_play_on_the_process_backend_names_the_first_bot_it_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    go = _copy_named(ROOT / "sdk/tools/starters/go", tmp_path / "gobot", "gobot")
    cpp = _copy_named(ROOT / "sdk/tools/starters/cpp", tmp_path / "cppbot", "cppbot")
    code = main(["play", str(go), str(cpp), "-n", "1", "--backend", "process"])
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT
    assert err.startswith(f"error: {str(go)!r}: a go bot is built and run by a sandbox"), err
    assert len(err.splitlines()) == 1


def test_a_tournament_on_the_process_backend_refuses_a_bot_of_another_runtime_up_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The backend's runtime_problem refuses the tournament before it is stored, as the
    untrusted check does: before, every game of the node bot was a start-up forfeit and
    the run ended with "never played" lines."""
    from arena.db import open_database

    monkeypatch.chdir(tmp_path)
    node = _copy_named(ROOT / "sdk/tools/starters/js", tmp_path / "jsbot", "js-bot")
    code = main(
        ["tournament", "run", "builtin:greedy", str(node), "--games", "2", "--backend",
         "process", "--unsafe", "--name", "mixed"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == ExitCode.BAD_INPUT, (out, err)
    line = " ".join(err.split())
    assert "refusing bot js-bot@" in line, err
    assert "a node bot is built and run by a sandbox" in line, err
    assert "the process backend runs Python bots only" in line, err
    assert "no tournament was created" in line, err
    assert "created" not in out and "never played" not in err
    with open_database(f"sqlite:///{tmp_path / 'kryt.db'}").read_session() as session:
        from arena.db import list_tournaments

        assert list_tournaments(session=session) == []
