"""``kryt games import/export`` and ``kryt replay`` on the records an audit found mishandled:
an import that would change the status of a tournament, games voided after they were
recorded, CPU times, text a database may hold from an older import, a crash message with
``\\r\\n``, a CSV cell a spreadsheet would run, and conflicts that did not name the file."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from arena.db import (
    Database,
    GamePlace,
    SeriesStatus,
    TournamentStatus,
    find_games,
    open_database,
    record_game,
    set_series_status,
    set_tournament_status,
    void_game,
)
from arena.db.models import Tournament
from kryt.errors import ExitCode
from referee.protocol.messages import GameEndReason
from referee.record import GameRecord, Move
from tests.cli.helpers import kryt
from tests.db.helpers import World, build_world, forfeit_game, game, replayable

CRASH = "bot reported an error: ValueError: \x1b[2J\u202e<b>x</b>\r\nFAKE LINE at bot.py:3 in act"
"""What a hostile bot's exception message makes of a crash detail (its own \\r\\n)."""
TRACEBACK = '\nTraceback (most recent call last):\n  File "bot.py", line 3, in act\nValueError: x'


def legal(made: tuple[GameRecord, GamePlace]) -> tuple[GameRecord, GamePlace]:
    """A game of the helpers with moves the rules replay (an import replays every game)."""
    record, place = made
    return replayable(record), place


def finish(db: Database, world: World) -> None:
    with db.session() as s:
        set_series_status(world.series_id, SeriesStatus.FINISHED, session=s)
        set_tournament_status(world.tournament_id, TournamentStatus.FINISHED, session=s)


def own_database(path: Path, *, name: str = "cup") -> tuple[Database, World]:
    """A tournament this database ran itself (not imported), finished: a plain game with CPU
    times, a crash whose message has ``\\r\\n`` and a traceback, a timeout."""
    db = open_database(f"sqlite:///{path}")
    world = build_world(db, games=4)
    with db.session() as s:
        if name != "cup":
            row = s.get(Tournament, world.tournament_id)
            assert row is not None
            row.name = name
            s.add(row)
        cpu = (Move(1, "lead 6C", 0.012, 0.000635), Move(0, "take", 0.5, 1 / 3))
        record_game(*legal(game(world, 1, moves=cpu)), session=s)
        crash = legal(
            forfeit_game(world, 2, 0, GameEndReason.CRASH, offending_input="", detail=CRASH)
        )
        record_game(crash[0], crash[1], session=s)
        crash_with_traceback = legal(
            forfeit_game(
                world, 3, 1, GameEndReason.CRASH, offending_input="", detail=CRASH + TRACEBACK
            )
        )
        record_game(*crash_with_traceback, session=s)
        record_game(*legal(forfeit_game(world, 4, 1)), session=s)
    finish(db, world)
    return db, world


def rows(path: Path, table: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()


def games(path: Path) -> list[dict[str, object]]:
    """Every game with its columns (but when it was recorded) and its moves."""
    db = open_database(f"sqlite:///{path}", create=False)
    try:
        with db.read_session() as s:
            found = []
            for row in find_games(session=s):
                values = row.model_dump(exclude={"recorded_at", "packed"})
                values["actions"] = row.actions
                values["deck"] = row.deck
                found.append(values)
            return found
    finally:
        db.close()


def export(capsys: pytest.CaptureFixture[str], db: Path, file: Path) -> str:
    code, _, err = kryt(capsys, "games", "export", str(file), "-d", str(db))
    assert code == 0, err
    return file.read_text(encoding="utf-8")


# -- 1. statuses ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["running", "pending", "cancelled", "failed"])
def test_an_import_never_changes_the_status_of_a_tournament_run_here(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, status: str
) -> None:
    """Re-importing one game with only its statuses changed used to un-finish the
    tournament (and wipe when it finished), after which export hid all its games."""
    path = tmp_path / "own.db"
    own_database(path)[0].close()
    text = export(capsys, path, tmp_path / "all.kgn")
    before = rows(path, "tournaments"), rows(path, "series")
    first = text.split("\n\n[KrytGameFile")[0] + "\n"
    flipped = first.replace('[TournamentStatus "finished"]', f'[TournamentStatus "{status}"]')
    flipped = flipped.replace('[SeriesStatus "finished"]', '[SeriesStatus "running"]')
    file = tmp_path / "flip.kgn"
    file.write_text(flipped, encoding="utf-8")
    code, out, err = kryt(capsys, "games", "import", str(file), "-d", str(path))
    assert code == 0, err
    assert "imported 0 new games of 1 read (0 new tournaments)" in out
    assert err.splitlines() == [
        f"kept: tournament 'cup' stays finished (this database ran it: an import never changes"
        f" its status); flip.kgn:1 says {status}",
        "kept: series 0 of tournament 'cup' stays finished (this database ran it: an import"
        " never changes its status); flip.kgn:1 says running",
    ]
    assert (rows(path, "tournaments"), rows(path, "series")) == before
    assert export(capsys, path, tmp_path / "again.kgn") == text  # nothing hidden


def test_an_imported_tournament_only_moves_forward(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "own.db"
    own_database(path)[0].close()
    text = export(capsys, path, tmp_path / "all.kgn")

    def variant(name: str, tournament: str, series: str) -> Path:
        file = tmp_path / f"{name}.kgn"
        changed = text.replace(
            '[TournamentStatus "finished"]', f'[TournamentStatus "{tournament}"]'
        )
        file.write_text(changed.replace('[SeriesStatus "finished"]', f'[SeriesStatus "{series}"]'))
        return file

    def status(db: Path) -> tuple[object, ...]:
        """The tournament's status, its series', and when the tournament finished."""
        with sqlite3.connect(db) as conn:
            ((tournament, finished_at),) = conn.execute(
                "SELECT status, finished_at FROM tournaments"
            ).fetchall()
            ((series,),) = conn.execute("SELECT status FROM series").fetchall()
        return tournament, series, finished_at

    target = tmp_path / "imported.db"
    code, _, err = kryt(
        capsys, "games", "import", str(variant("running", "running", "running")), "-d", str(target)
    )
    assert code == 0 and err == ""
    assert status(target)[:2] == ("running", "running") and status(target)[2] is None
    # Forward: the tournament finished since (an export of it says so).
    for step in ("cancelled", "finished"):
        code, out, err = kryt(
            capsys, "games", "import", str(variant(step, step, "finished")), "-d", str(target)
        )
        assert code == 0 and err == "" and "imported 0 new games" in out
        assert status(target)[:2] == (step, "finished") and status(target)[2] is not None
    finished_at = status(target)[2]
    # Back: never. Said, and nothing changes.
    for back in ("running", "pending", "cancelled", "failed"):
        code, out, err = kryt(
            capsys, "games", "import", str(variant(back, back, "running")), "-d", str(target)
        )
        assert code == 0 and "imported 0 new games" in out
        assert (
            "kept: tournament 'cup' stays finished (an import never moves a status back);"
            f" {back}.kgn:1 says {back}" in err
        )
        assert "kept: series 0 of tournament 'cup' stays finished" in err
        assert status(target) == ("finished", "finished", finished_at)
    assert export(capsys, target, tmp_path / "back.kgn") == text


# -- 4. a game voided after it was recorded -----------------------------------------------------


def test_a_game_voided_after_it_was_recorded_round_trips(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Its row keeps the result, ending, forfeit and final cover it had; the export used to
    write only Result "*" / Ending "void", so an import lost them. A voided draw by the
    final answer could not even be read back (a final cover belongs to a draw)."""
    path = tmp_path / "own.db"
    db, world = own_database(path)
    with db.session() as s:
        draw = legal(game(
            world, 1, attempt=2, winner=None, ending=GameEndReason.DRAW_BY_FINAL_ANSWER,
            final_cover="AS", void_reason="",
        ))  # fmt: skip
        void_game(1, "audit: \x1b[31m wrong deal", session=s)
        record_game(*draw, session=s)
        void_game(5, "the draw too", session=s)  # game 1, attempt 2
        void_game(2, "a crash voided", session=s)  # the crash, with its forfeit
    # Voiding opened the series again for the replays; they are not played here (no bots):
    # the tournament is marked finished as it stands, which a game file needs.
    finish(db, world)
    db.close()
    text = export(capsys, path, tmp_path / "all.kgn")
    assert text.count('[Result "*"]\n[Ending "void"]\n[VoidedResult ') == 3
    assert '[VoidedResult "1/2-1/2"]\n[VoidedEnding "draw by final answer"]' in text
    assert '[VoidedResult "0-1"]\n[VoidedEnding "crash"]\n[ForfeitSeat "0"]' in text
    target = tmp_path / "imported.db"
    code, out, err = kryt(capsys, "games", "import", str(tmp_path / "all.kgn"), "-d", str(target))
    assert code == 0, err
    assert "imported 5 new games" in out
    assert games(target) == games(path)  # result, ending, forfeit, final cover, void reason
    assert export(capsys, target, tmp_path / "again.kgn") == text
    code, out, _ = kryt(capsys, "games", "import", str(tmp_path / "all.kgn"), "-d", str(target))
    assert code == 0 and "imported 0 new games of 5 read" in out
    for where in (path, target):
        code, out, _ = kryt(capsys, "replay", "5", "-d", str(where))
        assert code == 0 and "result: none (voided) by void" in out and "the draw too" in out
        code, out, _ = kryt(capsys, "games", "list", "--result", "void", "-d", str(where))
        assert [int(n) for n in re.findall(r"^\s*(\d+) │", out, re.M)] == [5, 2, 1]


# -- 3. CPU times ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".kgn", ".json"])
def test_cpu_times_survive_an_export_and_an_import(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / "own.db"
    own_database(path)[0].close()
    file = tmp_path / f"all{suffix}"
    text = export(capsys, path, file)
    assert ("{0.012 cpu=0.000635}" if suffix == ".kgn" else '"cpu": 0.000635') in text
    target = tmp_path / "imported.db"
    code, _, err = kryt(capsys, "games", "import", str(file), "-d", str(target))
    assert code == 0, err
    (first, *_) = games(target)
    actions = first["actions"]
    assert isinstance(actions, list)
    assert [(a["seat"], a["seconds"], a["cpu"]) for a in actions[:2]] == [
        (1, 0.012, 0.000635),
        (0, 0.5, 1 / 3),
    ]
    assert games(target) == games(path)
    assert export(capsys, target, tmp_path / f"again{suffix}") == text


# -- 2. text an older import may have stored ---------------------------------------------------


def test_hostile_actions_already_stored_export_and_replay_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "old.db"
    db = open_database(f"sqlite:///{path}")
    world = build_world(db, games=2)
    fake = 'lead 9S\n1-0\n\n[KrytGameFile "1"]'
    escape = "lead \x1b]0;PWNED\x07\x1b[31m9S\u202e"
    with db.session() as s:
        record_game(*game(world, 1, moves=(Move(1, fake, 0.1),)), session=s)
        record_game(
            *game(world, 2, moves=(Move(1, escape, 0.1), Move(0, "take {x}", 0.2))), session=s
        )
    finish(db, world)
    db.close()
    text = export(capsys, path, tmp_path / "old.kgn")
    assert sum(line.startswith("[KrytGameFile") for line in text.splitlines()) == 2
    assert "\n1. 1 " + json.dumps(fake) + " {0.1}\n" in text
    assert "\x1b" not in text and "\u202e" not in text and '\n2. 0 "take {x}" {0.2}\n' in text
    target = tmp_path / "new.db"
    code, out, err = kryt(capsys, "games", "import", str(tmp_path / "old.kgn"), "-d", str(target))
    line = text.splitlines().index("1. 1 " + json.dumps(fake) + " {0.1}") + 1
    assert code == ExitCode.BAD_INPUT and len(err.splitlines()) == 1
    assert err.startswith(f"error: old.kgn:{line}: move 1: a move's action may not hold control")
    assert not target.exists()  # nothing stored
    code, out, _ = kryt(capsys, "replay", "2", "-d", str(path))
    assert code == 0 and "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "lead \\x1b]0;PWNED\\x07\\x1b[31m9S\\u202e" in out


def test_a_forfeits_offending_input_is_escaped_once_in_replay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """It was made printable and then repr()'d: every escape printed with two backslashes,
    so a bot's real ``\\x1b`` text and an escape character looked alike."""
    path = tmp_path / "sent.db"
    db = open_database(f"sqlite:///{path}")
    world = build_world(db, games=1)
    sent = "lead \x1b]0;PWNED\x07 9S\u202e and a real \\x1b"
    with db.session() as s:
        record_game(
            *forfeit_game(world, 1, 0, GameEndReason.MALFORMED_REPLY, offending_input=sent),
            session=s,
        )
    finish(db, world)
    db.close()
    code, out, _ = kryt(capsys, "replay", "1", "-d", str(path))
    assert code == 0 and "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    line = " ".join(out.split())
    assert "sent: 'lead \\x1b]0;PWNED\\x07 9S\\u202e and a real \\\\x1b'" in line, out


# -- 6. replay of a crash message with \r\n; CSV formulas; conflicts named ----------------------


def test_a_crash_message_cannot_print_lines_of_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "own.db"
    own_database(path)[0].close()
    code, out, _ = kryt(capsys, "replay", "2", "-d", str(path))
    assert code == 0
    assert not any(line.lstrip().startswith("FAKE") for line in out.splitlines()), out
    assert "\\x1b[2J\\u202e<b>x</b>\\x0d\\x0aFAKE LINE at bot.py:3 in act" in out.replace("\n", "")
    assert "\x1b" not in out and "\u202e" not in out and "\r" not in out
    # What the tournament appended (the bot's traceback) is shown below, line by line, marked.
    code, out, _ = kryt(capsys, "replay", "3", "-d", str(path))
    assert code == 0
    lines = out.splitlines()
    at = lines.index("  │ Traceback (most recent call last):")
    assert lines[at + 1 : at + 3] == ['  │   File "bot.py", line 3, in act', "  │ ValueError: x"]
    assert not any(line.lstrip().startswith("FAKE") for line in lines), out


def test_the_csv_export_is_safe_in_a_spreadsheet(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "own.db"
    own_database(path, name='=HYPERLINK("http://evil.example/","x")')[0].close()
    code, out, _ = kryt(capsys, "games", "export", "-", "-f", "csv", "-d", str(path))
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 5  # a header and a row per game: no line of a bot's own
    assert all(line.split(",")[1] == '"\'=HYPERLINK(""http://evil.example/""' for line in lines[1:])
    assert "\x1b" not in out and "\u202e" not in out and "\r" not in out
    assert "\\x1b[2J\\u202e<b>x</b>\\x0d\\x0aFAKE LINE at bot.py:3 in act" in lines[2]


def test_the_json_export_escapes_what_json_leaves_raw(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """json.dumps escapes only characters below U+0020: a C1 CSI (U+009B), a bidi override, a
    line separator or a tag character of a bot's text reached the file raw."""
    path = tmp_path / "own.db"
    name = "cup \x9b2J\u202e\u2028\U000e0041\x7f é"
    own_database(path, name=name)[0].close()
    code, out, _ = kryt(capsys, "games", "export", "-", "-f", "json", "-d", str(path))
    assert code == 0
    assert not any(char in out for char in "\x9b\u202e\u2028\U000e0041\x7f")
    assert "\\u009b2J\\u202e\\u2028\\udb40\\udc41\\u007f é" in out
    assert name in json.dumps(json.loads(out), ensure_ascii=False)


def test_a_conflict_with_a_stored_game_names_the_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "own.db"
    own_database(path)[0].close()
    text = export(capsys, path, tmp_path / "all.kgn")
    second = text.index('[Game "2"]')
    changed = text[:second] + text[second:].replace("{0.012}", "{0.013}", 1)
    assert changed != text
    line = text.count("\n", 0, text.rindex("[KrytGameFile", 0, second)) + 1
    file = tmp_path / "changed.kgn"
    file.write_text(changed, encoding="utf-8")
    before = games(path)
    code, _, err = kryt(capsys, "games", "import", str(file), "-d", str(path))
    assert code != 0 and len(err.splitlines()) == 1
    assert (
        f"changed.kgn:{line}: game 2 of series 1 (attempt 1, game id 2) is already recorded with"
        " different move times" in err
    )
    assert games(path) == before


def test_a_game_twice_in_a_file_is_refused_before_the_database_is_opened(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "own.db"
    own_database(path)[0].close()
    text = export(capsys, path, tmp_path / "all.kgn")
    first = text.split("\n\n[KrytGameFile")[0] + "\n"
    assert "{0.012 cpu" in first
    twice = text + "\n" + first.replace("{0.012 cpu", "{0.013 cpu", 1)
    second = len(text.splitlines()) + 2
    file = tmp_path / "twice.kgn"
    file.write_text(twice, encoding="utf-8")
    target = tmp_path / "empty.db"
    code, _, err = kryt(capsys, "games", "import", str(file), "-d", str(target))
    assert code == ExitCode.BAD_INPUT
    assert err == (
        f"error: twice.kgn:{second}: game 1 of series 0 of tournament 'cup' (attempt 1) is also"
        " the record at twice.kgn:1, with different content: a game is recorded once\n"
    )
    assert not target.exists()


def test_loose_json_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "own.db"
    own_database(path)[0].close()
    data = json.loads(export(capsys, path, tmp_path / "all.json"))
    cases: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
        "null": (
            lambda g: g.update(Tournament=None),
            "header 'Tournament' must be a string, got null",
        ),
        "false": (
            lambda g: g["Moves"][0].update(seconds=False),
            "move 1: a move's seconds must be a finite number >= 0, got false",
        ),
        "escape": (lambda g: g["Moves"][0].update(action="lead\x1b{9S}"), "U+001B"),
    }
    for name, (change, message) in cases.items():
        games_data = json.loads(json.dumps(data))
        change(games_data[0])
        file = tmp_path / f"{name}.json"
        file.write_text(json.dumps(games_data), encoding="utf-8")
        target = tmp_path / f"{name}.db"
        code, _, err = kryt(capsys, "games", "import", str(file), "-d", str(target))
        assert code == ExitCode.BAD_INPUT and len(err.splitlines()) == 1, err
        assert err.startswith(f"error: {name}.json[0]: ") and message in err, err
        assert not target.exists()
    big = tmp_path / "big.json"
    big.write_text("[" + "1" * 5000 + "]")
    code, _, err = kryt(capsys, "games", "import", str(big), "-d", str(tmp_path / "big.db"))
    assert code == ExitCode.BAD_INPUT and err == (
        "error: big.json: not JSON a game file can hold: it has a number of more than 4300 digits\n"
    ), err


def test_a_brace_in_an_imported_action_round_trips(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``lead {9S}`` (stored by an import before imports replayed their games) used to be
    exported to a file the text importer could not even read: it is written quoted, and that
    file is read, then refused as a game that does not replay (no such action exists)."""
    path = tmp_path / "old.db"
    db = open_database(f"sqlite:///{path}")
    world = build_world(db, games=1)
    with db.session() as s:
        record_game(*game(world, 1, moves=(Move(1, "lead {9S}", 0.012, 0.000635),)), session=s)
    finish(db, world)
    db.close()
    text = export(capsys, path, tmp_path / "brace.kgn")
    assert '\n1. 1 "lead {9S}" {0.012 cpu=0.000635}\n' in text
    target = tmp_path / "second.db"
    code, _, err = kryt(capsys, "games", "import", str(tmp_path / "brace.kgn"), "-d", str(target))
    assert code == ExitCode.BAD_INPUT, err
    assert "brace.kgn:1: game 1 does not replay as recorded: move 1:" in err, err
    assert not target.exists()
