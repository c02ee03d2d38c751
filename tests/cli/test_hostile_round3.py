"""What an outside hostile audit found in the CLI (2026-12-02): numbers no command can use,
an unknown backend, and a server's (a bot's) text reaching the terminal raw."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from arena.db import open_database
from arena.db._util import MAX_ID, get_or_raise
from arena.db.errors import NotFoundError
from arena.db.models import Game as GameRow
from arena.tournament.config import MAX_GAMES_PER_PAIR
from kryt.errors import ExitCode
from kryt.options import MAX_GAMES
from kryt.options import MAX_ID as CLI_MAX_ID
from leaderboard.web.pages import MAX_ID as WEB_MAX_ID
from tests.cli.helpers import kryt

HUGE = "99999999999999999999999"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path / "kryt.db"


def _series_rows(db: Path) -> list[tuple[int, int]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("select position, games_planned from series order by position"))


def test_the_cli_limits_are_the_stores_limits() -> None:
    assert MAX_GAMES == MAX_GAMES_PER_PAIR
    assert CLI_MAX_ID == MAX_ID == WEB_MAX_ID == 2**31 - 1


def test_extend_refuses_more_games_than_a_tournament_may_have_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "--games", "2",
        "--backend", "process", "--name", "ext",
    )  # fmt: skip
    assert code == ExitCode.OK, err
    before = _series_rows(db)
    for games in (str(MAX_GAMES_PER_PAIR + 1), "99999999999999"):
        code, _, err = kryt(capsys, "tournament", "extend", "1", "--games", games)
        assert code == ExitCode.BAD_INPUT, err
        assert f"[1, {MAX_GAMES_PER_PAIR}]" in err and games in err
        assert "Traceback" not in err
    assert _series_rows(db) == before
    # The tournament is still whole: it extends and runs as before.
    code, _, err = kryt(capsys, "tournament", "extend", "1", "--games", "1")
    assert code == ExitCode.OK, err
    assert [games for _, games in _series_rows(db)] == [2, 1]


@pytest.mark.parametrize(
    "args",
    [
        ("replay", HUGE),
        ("replay", "0"),
        ("leaderboard", "-t", HUGE),
        ("tournament", "status", HUGE),
        ("tournament", "resume", HUGE),
        ("tournament", "extend", HUGE, "--games", "1"),
        ("tournament", "cancel", HUGE),
        ("tournament", "set", HUGE, "games_per_pair=2"),
        ("games", "list", "-t", HUGE),
        ("arena", "token", "revoke", HUGE),
        ("play", "builtin:random", "builtin:greedy", "-n", HUGE),
        ("play", "builtin:random", "builtin:greedy", "-n", str(MAX_GAMES + 1)),
    ],
)
def test_numbers_no_command_can_use_are_usage_errors(
    capsys: pytest.CaptureFixture[str], db: Path, args: tuple[str, ...]
) -> None:
    code, out, err = kryt(capsys, *args)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "Invalid value" in err and "Traceback" not in err + out
    assert not db.exists()  # refused before anything was opened


def test_an_id_no_row_can_have_is_not_found(tmp_path: Path) -> None:
    database = open_database(f"sqlite:///{tmp_path / 'k.db'}")
    with database.read_session() as session:
        for key in (MAX_ID + 1, -MAX_ID - 2, 10**30):
            with pytest.raises(NotFoundError, match=str(key)):
                get_or_raise(session, GameRow, key, "game")
        with pytest.raises(NotFoundError):
            get_or_raise(session, GameRow, MAX_ID, "game")  # in range, just absent
    database.engine.dispose()


def test_play_with_an_unknown_backend_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    code, _, err = kryt(capsys, "play", "builtin:random", "builtin:greedy", "--backend", "nope")
    assert code == ExitCode.BAD_INPUT
    assert "--backend" in err and "'nope'" in err and "Traceback" not in err


HOSTILE_NAME = "evil\x1b]0;PWNED\x07"
HOSTILE_MESSAGE = "boom \x1b[2J\r[bold red]MARKUP[/bold red] \u202eevil"


class _FakeClient:
    """The arena's client, answering as a server whose bot wrote hostile text."""

    def __init__(self, server: str, token: str) -> None:
        self.server = server

    def request(self, method: str, path: str) -> dict[str, Any]:
        return {"status": "ok"}  # /health without an upload limit

    def upload(self, archive: bytes, filename: str) -> dict[str, Any]:
        return {
            "created": True,
            "bot": HOSTILE_NAME,
            "version": "1.0.0",
            "submission_id": 7,
            "status": "pending",
            "check": {"status": "pending"},
        }

    def wait(self, submission_id: int) -> dict[str, Any]:
        return {
            "status": "rejected",
            "check": {"status": "failed", "message": HOSTILE_MESSAGE},
        }


def test_submit_to_a_server_shows_its_text_escaped_and_never_as_markup(
    capsys: pytest.CaptureFixture[str], db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import arena.service.server as server

    monkeypatch.setattr(server, "Client", _FakeClient)
    monkeypatch.setattr(server, "archive_of", lambda path: (b"zip", "bot.zip"))
    monkeypatch.setattr(server, "read_token", lambda: "token")
    bot = Path(__file__).resolve().parents[2] / "sdk" / "examples" / "random"
    code, out, err = kryt(capsys, "submit", str(bot), "--server", "http://x", "--wait")
    assert code == ExitCode.FAILED, (out, err)
    shown = out + err
    for raw in ("\x1b", "\x07", "\r", "\u202e"):
        assert raw not in shown, repr(shown)
    assert "evil\\x1b]0;PWNED\\x07 1.0.0: uploaded as submission 7" in out
    # The markup is the bot's text: shown as written, not applied.
    assert "[bold red]MARKUP[/bold red]" in out
    assert "\\u202eevil" in out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--ruleset", "nope\x1b[2J"), "unknown ruleset 'nope\\x1b[2J'"),
        (
            ("--ruleset", "classic", "--table-size", "9"),
            "classic ruleset seats 2, 3 or 4 players, got 9",
        ),
        (
            ("--ruleset", "default", "--table-size", "3"),
            "the default ruleset seats 2 players, got 3",
        ),
        (("--table-size", "0"), "the default ruleset seats 2 players, got 0"),
        # No ruleset and no tournament: the board is the default game's, which seats 2.
        (("--table-size", "3"), "the default ruleset seats 2 players, got 3"),
        (("--html", "site", "--ruleset", "classic"), "drop --json/--tournament/--ruleset"),
    ],
)
def test_a_leaderboard_filter_no_game_can_match_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], db: Path, args: tuple[str, ...], said: str
) -> None:
    code, out, err = kryt(capsys, "leaderboard", *args)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert said in err and "\x1b" not in err
    assert not db.exists()


def test_a_tournaments_ruleset_decides_which_table_sizes_its_board_has(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    for name, ruleset, seats in (("pairs", "default", "2"), ("tables", "classic", "3")):
        code, _, err = kryt(
            capsys, "tournament", "run", "builtin:random", "builtin:greedy", "builtin:mc",
            "--games", "1", "--ruleset", ruleset, "--table-size", seats,
            "--backend", "process", "--name", name,
        )  # fmt: skip
        assert code == ExitCode.OK, err
    # The classic tournament's board at 3 seats is its own; at 2 seats it is empty but valid.
    code, out, err = kryt(capsys, "leaderboard", "-t", "2", "--table-size", "3")
    assert code == ExitCode.OK, err
    assert "(classic, table of 3)" in out and "random" in out
    code, out, err = kryt(capsys, "leaderboard", "-t", "2", "--table-size", "2")
    assert code == ExitCode.OK, err
    assert "(classic, table of 2)" in out
    # The default tournament's ruleset seats only 2: checked once its ruleset is read.
    code, out, err = kryt(capsys, "leaderboard", "-t", "1", "--table-size", "3")
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "the default ruleset seats 2 players, got 3" in err and "Traceback" not in err
    code, out, err = kryt(capsys, "leaderboard", "-t", "1", "--json", "--table-size", "3")
    assert code == ExitCode.BAD_INPUT, (out, err)
