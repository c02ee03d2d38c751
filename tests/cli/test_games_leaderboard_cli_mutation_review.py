"""A mutation review of ``kryt games`` (list, export, import) and ``kryt leaderboard``: the
behaviour an organiser or an outside reviewer sees, pinned where the existing tests let a
mutant of ``kryt/commands/games.py``, ``kryt/commands/leaderboard.py`` (or of what they call:
``leaderboard/games_io.py``, ``arena.db.find_games``) live.

Every expectation comes from the docs (docs/games-format.md, docs/leaderboard.md,
docs/ratings.md, docs/database.md) or from a small computation in this file over the games
the fixture records, never from the code under test. The database is built in process
through the public API (``arena.db``), on SQLite, in about a second:

* tournament 1 ``cup`` (finished): alpha against bravo, six games: alpha wins at seat 0,
  alpha wins at seat 1, alpha forfeits by timeout, a draw by the turn limit, a bravo win
  voided after it was recorded, a game the referee recorded as void; and a second series
  (bravo against charlie) that never started, so series ids differ from tournament ids;
* tournament 2 ``other`` (finished): charlie beats alpha twice (once from each seat);
* tournament 3 ``live`` (running): bravo beats charlie once.

What each test pins, and why:

* ``test_list_is_newest_first_and_oldest_reverses``: docs "ids, newest first"; ``--oldest``
  (the default of ``newest_first`` swapped, the order flipped).
* ``test_list_limit_cuts_and_says_so_only_when_it_cut``: ``--limit N`` shows the N newest and
  says "the first N; use --limit" (an off-by-one in the limit, a footer on every list).
* ``test_a_list_that_shows_every_game_does_not_say_it_was_cut``: with exactly ``--limit``
  games stored, the footer does not say "the first N; use --limit" (found by this review:
  it did, as if games had been left out).
* ``test_list_filters_choose_exactly_the_documented_games``: ``--tournament`` scoping,
  ``--bot`` at either seat, ``--result seat0|seat1|draw|void|win|loss`` (a voided game never
  counts as a win, loss or draw: docs "voided ones never count"), ``--reason`` (a game voided
  after it was recorded ends ``void``, docs "as its record says"), repeatable ``--reason``,
  and filters combined; each set computed from the fixture's own table.
* ``test_a_voided_draw_is_no_draw_and_a_bots_list_keeps_its_limit``: ``--result draw``
  never lists a voided draw; ``--limit`` with ``--bot`` (counted apart, in Python).
* ``test_a_list_matching_no_game_says_so_and_succeeds``: ``no games match``, exit 0.
* ``test_list_cells_show_result_ending_and_tournament``: the result cell (``1-0``, ``0-1``,
  ``½-½``, ``void``), ``void (played: out)`` for a game voided after it was recorded, the
  ``tourn.`` column.
* ``test_unknown_filters_and_bad_limits_are_one_line``: ``no tournament with id 99``, an
  unknown bot, ``--limit 0``, an unknown result or ending: one ``error:`` line, exit 2.
* ``test_a_missing_database_is_one_line_exit_3_and_creates_nothing``: docs/leaderboard.md
  "opens the database without creating it ... exit code 3, and no new file", for list,
  export and the leaderboard.
* ``test_export_format_follows_the_extension_unless_given``: ``.csv``/``.json``/other
  extensions (any case), ``--format`` over the extension, an earlier export of each format
  replaced without ``--force``, an unknown ``--format`` refused before anything is written.
* ``test_export_leaves_out_unfinished_tournaments_and_counts_them``: docs "games of a
  tournament that is not finished ... are left out", with the counts on stderr (voided
  games of a finished tournament are exported, as ``*``).
* ``test_export_leaves_out_every_status_but_finished``: pending, cancelled and failed
  tournaments too, not only running ones.
* ``test_export_leaves_out_classic_table_games_and_says_how_many``: docs "leaves
  classic-table games out and says how many ... refuses in one line when only table games
  were chosen" (a table game recorded through the API, no game played).
* ``test_export_of_only_unfinished_games_is_refused_and_writes_nothing``: "nothing to
  export" (exit 2), no file.
* ``test_export_matching_no_game_writes_nothing_but_stdout_gets_the_empty_export``: exit 1,
  ``no games match: nothing written to FILE``; ``-`` gets ``[]``, exit 0.
* ``test_export_applies_every_filter``: the export holds exactly the games ``list`` chose.
* ``test_export_replaces_only_exports_and_never_a_database``: ``--force`` and the refusal.
* ``test_import_round_trip_reproduces_games_and_standings``: docs "Importing a whole export
  into an empty database reproduces the ids ..., the games (exporting it again gives the
  same file byte for byte) and the standings" (but for the series ids and the planned totals:
  cup's series without games cannot be in a file); the summary line's counts and plural; a
  second import adds nothing.
* ``test_import_of_one_tournament_says_one_new_tournament``: the singular of the summary.
* ``test_a_broken_record_after_good_ones_stores_nothing``: "the whole file is checked before
  the database is opened": no database is created, an existing one is left as it was.
* ``test_a_conflict_after_a_new_game_rolls_the_whole_import_back``: "in one transaction": a
  game created before the conflicting record is not kept (a dropped transaction would keep
  it).
* ``test_a_json_file_is_read_as_json_whatever_the_case_of_its_extension``: ``GAMES.JSON``
  is a JSON export (docs: "a ``.json`` file"), so its error is the JSON one.
* ``test_an_empty_file_imports_nothing_and_creates_no_database``.
* ``test_an_import_never_moves_a_status_back_and_says_so``: the ``kept:`` line on stderr, the
  status unchanged.
* ``test_leaderboard_of_one_tournament_matches_an_independent_count``: W/D/L, games, score,
  forfeits, live Elo (docs/ratings.md: K 32, start 1500, in recorded order, voided games
  never count), progress and title, in the JSON and in the table.
* ``test_leaderboard_of_all_tournaments_matches_an_independent_count``: the same over every
  tournament (the running one included: "every counted game, all tournaments").
* ``test_leaderboard_rows_are_ranked_by_rating``: ranks 1..N by falling rating.
* ``test_leaderboard_errors_are_one_line``: ``-t 99`` (exit 2), ``--html`` with a scoping
  option, an unknown ruleset, a size no table seats, ``-t 0``.
* ``test_a_bad_board_is_a_usage_error_before_the_database_is_opened``: an unknown ruleset is
  exit 2 (docs/leaderboard.md) even where there is no database (not exit 3), and opens none.
* ``test_leaderboard_html_exports_the_whole_site``: the summary line's counts (with a bot
  that never played, so the tournaments and submissions counts differ).
* ``test_serve_on_a_busy_port_is_one_line_exit_3``: docs "A port already in use is one error
  line (exit 3)".
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.db import (
    GamePlace,
    SeriesSpec,
    SeriesStatus,
    TournamentSpec,
    TournamentStatus,
    create_tournament,
    open_database,
    record_game,
    series_of_tournament,
    set_series_status,
    set_tournament_status,
    submit,
    void_game,
)
from kryt.errors import ExitCode
from leaderboard.gamefile import Seat, format_games
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import shuffled_deck
from tests.cli.helpers import flat, game_entry, kryt, table_counts
from tests.db.helpers import World, deck, game, new_submission, replayable

Capsys = pytest.CaptureFixture[str]

# The fixture's games, by id: (tournament, seat 0, seat 1, result, ending, voided).
GAMES: dict[int, tuple[int, str, str, str | None, str, bool]] = {
    1: (1, "alpha", "bravo", "seat0", "out", False),
    2: (1, "bravo", "alpha", "seat1", "out", False),
    3: (1, "alpha", "bravo", "seat1", "timeout", False),
    4: (1, "alpha", "bravo", "draw", "turn limit", False),
    5: (1, "bravo", "alpha", "seat0", "out", True),  # voided after it was recorded
    6: (1, "alpha", "bravo", None, "void", True),  # void as the referee recorded it
    7: (2, "alpha", "charlie", "seat1", "out", False),
    8: (2, "charlie", "alpha", "seat0", "out", False),
    9: (3, "bravo", "charlie", "seat0", "out", False),
}
FINISHED = {1, 2}
SERIES = {1: ((6, True), (2, False)), 2: ((2, True),), 3: ((4, False),)}
"""Each tournament's series: games planned, finished (cup's second series, bravo against
charlie, never started: series ids then differ from tournament ids)."""
PLANNED = {tid: sum(games for games, _ in series) for tid, series in SERIES.items()}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database of the module docstring."""
    path = tmp_path_factory.mktemp("review") / "source.db"
    database = open_database(f"sqlite:///{path}")
    with database.session() as s:
        ids: dict[str, int] = {}
        for name in ("alpha", "bravo", "charlie"):
            sub = submit(new_submission(name), session=s).submission
            assert sub.id is not None
            ids[name] = sub.id

        def tournament(name: str, seed: int, a: str, b: str) -> World:
            planned = [games for games, _ in SERIES[seed - 6]]
            pairs = [(ids[a], ids[b]), (ids["bravo"], ids["charlie"])]
            spec = TournamentSpec(
                name=name,
                seed=seed,
                config={"games": planned[0]},
                series=[
                    SeriesSpec(x, y, n, seed * 11)
                    for (x, y), n in zip(pairs[: len(planned)], planned, strict=True)
                ],
            )
            made = create_tournament(spec, session=s)
            assert made.id is not None
            series = series_of_tournament(made.id, session=s)[0]
            assert series.id is not None
            return World(ids[a], ids[b], made.id, series.id)

        cup = tournament("cup", 7, "alpha", "bravo")
        other = tournament("other", 8, "alpha", "charlie")
        live = tournament("live", 9, "bravo", "charlie")

        def played(world: World, number: int, **kw: Any) -> int:
            record, place = game(world, number, **kw)
            stored = record_game(replayable(record), place, session=s).game
            assert stored.id is not None
            return stored.id

        timeout = Forfeit(0, GameEndReason.TIMEOUT, "late", "")
        played(cup, 1, winner=0)
        played(cup, 2, winner=1, swap=True)
        played(cup, 3, winner=1, ending=GameEndReason.TIMEOUT, forfeit=timeout)
        played(cup, 4, winner=None, turn_limit=4)
        fifth = played(cup, 5, winner=0, swap=True)
        played(cup, 6, winner=None, ending=GameEndReason.VOID, void_reason="infra")
        void_game(fifth, "sandbox fault", session=s)
        played(other, 1, winner=1)
        played(other, 2, winner=0, swap=True)
        played(live, 1, winner=0)
        for world in (cup, other):
            set_series_status(world.series_id, SeriesStatus.FINISHED, session=s)
            set_tournament_status(world.tournament_id, TournamentStatus.FINISHED, session=s)
        set_tournament_status(live.tournament_id, TournamentStatus.RUNNING, session=s)
    database.close()
    return path


def copy_of(source: Path, tmp_path: Path) -> Path:
    """A copy of the fixture's database that a test may change."""
    target = tmp_path / "copy.db"
    shutil.copyfile(source, target)
    return target


def error_line(err: str) -> str:
    """The one ``error:`` line of ``err`` (a ``hint:`` line may follow), no traceback."""
    lines = err.strip().splitlines()
    assert lines and lines[0].startswith("error: "), err
    assert all(line.startswith("hint: ") for line in lines[1:]), err
    assert "Traceback" not in err
    return lines[0]


def listed(capsys: Capsys, db: Path, *args: str) -> list[int]:
    """The ids ``kryt games list ARGS`` shows, in the order shown."""
    code, out, err = kryt(capsys, "games", "list", *args, "-d", str(db))
    assert code == ExitCode.OK, err
    return [int(m) for m in re.findall(r"^\s*(\d+)\s*│", out, flags=re.MULTILINE)]


def rows_of(capsys: Capsys, db: Path, *args: str) -> dict[int, list[str]]:
    """``kryt games list ARGS``: each row's cells, by game id."""
    code, out, err = kryt(capsys, "games", "list", *args, "-d", str(db))
    assert code == ExitCode.OK, err
    rows = {}
    for line in out.splitlines():
        if re.match(r"^\s*\d+\s*│", line):
            cells = [cell.strip() for cell in line.split("│")]
            rows[int(cells[0])] = cells
    return rows


def chosen(
    *,
    tournament: int | None = None,
    bot: str | None = None,
    result: str | None = None,
    reasons: tuple[str, ...] = (),
) -> set[int]:
    """The fixture's games a filter chooses, by the docs' definitions."""
    ids = set()
    for gid, (tid, seat0, seat1, won, ending, voided) in GAMES.items():
        if tournament is not None and tid != tournament:
            continue
        if bot is not None and bot not in (seat0, seat1):
            continue
        if result in ("seat0", "seat1", "draw") and (voided or won != result):
            continue
        if result == "void" and not voided:
            continue
        if result in ("win", "loss"):
            if voided or won not in ("seat0", "seat1"):
                continue
            winner = seat0 if won == "seat0" else seat1
            if (winner == bot) != (result == "win"):
                continue
        if reasons and ("void" if voided else ending) not in reasons:
            continue
        ids.add(gid)
    return ids


# -- kryt games list ------------------------------------------------------------------------------


def test_list_is_newest_first_and_oldest_reverses(capsys: Capsys, source: Path) -> None:
    assert listed(capsys, source) == sorted(GAMES, reverse=True)
    assert listed(capsys, source, "--oldest") == sorted(GAMES)


def test_list_limit_cuts_and_says_so_only_when_it_cut(capsys: Capsys, source: Path) -> None:
    code, out, _ = kryt(capsys, "games", "list", "-n", "3", "-d", str(source))
    assert code == ExitCode.OK
    assert [int(m) for m in re.findall(r"^\s*(\d+)\s*│", out, flags=re.M)] == [9, 8, 7]
    assert "3 games (the first 3; use --limit)" in out
    assert listed(capsys, source, "-n", "1", "--oldest") == [1]
    code, out, _ = kryt(capsys, "games", "list", "-n", "10", "-d", str(source))
    assert code == ExitCode.OK and f"{len(GAMES)} games; see one with: kryt replay ID" in out
    assert "the first" not in out


def test_a_list_that_shows_every_game_does_not_say_it_was_cut(capsys: Capsys, source: Path) -> None:
    code, out, _ = kryt(capsys, "games", "list", "-n", str(len(GAMES)), "-d", str(source))
    assert code == ExitCode.OK and len(re.findall(r"^\s*\d+\s*│", out, flags=re.M)) == len(GAMES)
    assert "use --limit" not in out


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (("-t", "2"), {"tournament": 2}),
        (("--tournament", "1"), {"tournament": 1}),
        (("--bot", "charlie"), {"bot": "charlie"}),
        (("--result", "seat0"), {"result": "seat0"}),
        (("--result", "seat1"), {"result": "seat1"}),
        (("--result", "draw"), {"result": "draw"}),
        (("--result", "void"), {"result": "void"}),
        (("--bot", "alpha", "--result", "win"), {"bot": "alpha", "result": "win"}),
        (("--bot", "alpha", "--result", "loss"), {"bot": "alpha", "result": "loss"}),
        (("--bot", "bravo", "-r", "win"), {"bot": "bravo", "result": "win"}),
        (("--reason", "timeout"), {"reasons": ("timeout",)}),
        (("--reason", "void"), {"reasons": ("void",)}),
        (("--reason", "out"), {"reasons": ("out",)}),
        (
            ("--reason", "timeout", "--reason", "turn limit"),
            {"reasons": ("timeout", "turn limit")},
        ),
        (
            ("-t", "1", "-b", "alpha", "-r", "loss"),
            {"tournament": 1, "bot": "alpha", "result": "loss"},
        ),
        (
            ("-t", "2", "--reason", "out", "-r", "seat0"),
            {"tournament": 2, "reasons": ("out",), "result": "seat0"},
        ),
    ],
)
def test_list_filters_choose_exactly_the_documented_games(
    capsys: Capsys, source: Path, args: tuple[str, ...], where: dict[str, Any]
) -> None:
    expected = chosen(**where)
    assert expected, "a filter of this review must choose something"
    shown = listed(capsys, source, *args)
    assert shown == sorted(expected, reverse=True)


def test_list_cells_show_result_ending_and_tournament(capsys: Capsys, source: Path) -> None:
    code, out, _ = kryt(capsys, "games", "list", "-d", str(source))
    assert code == ExitCode.OK
    header = next(line for line in out.splitlines() if "tourn." in line)
    names = [cell.strip() for cell in re.split(r"[┃│]", header)]
    assert names == [
        *("id", "tourn.", "series", "game", "seat 0", "seat 1", "result", "ending", "moves")
    ]
    rows = rows_of(capsys, source)
    cells = {"seat0": "1-0", "seat1": "0-1", "draw": "½-½"}
    series_of = {1: 1, 2: 3, 3: 4}  # cup's second series (id 2) has no game
    for gid, (tid, seat0, seat1, won, ending, voided) in GAMES.items():
        row = rows[gid]
        assert row[1] == str(tid) and row[2] == str(series_of[tid])
        first = min(other for other, g in GAMES.items() if g[0] == tid)
        assert row[3] == str(gid - first + 1)  # the game's number in its series
        assert row[4] == f"{seat0} 1.0.0" and row[5] == f"{seat1} 1.0.0"
        assert row[6] == ("void" if voided else cells[str(won)])
        if voided and ending != "void":
            assert row[7] == f"void (played: {ending})"
        else:
            assert row[7] == ending


def test_a_voided_draw_is_no_draw_and_a_bots_list_keeps_its_limit(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    assert listed(capsys, source, "--bot", "alpha", "-n", "2") == [8, 7]
    assert listed(capsys, source, "--bot", "alpha", "-n", "3", "--oldest") == [1, 2, 3]
    db = copy_of(source, tmp_path)
    database = open_database(f"sqlite:///{db}")
    with database.session() as s:
        void_game(4, "voided in review", session=s)  # the only draw
    database.close()
    code, out, _ = kryt(capsys, "games", "list", "--result", "draw", "-d", str(db))
    assert code == ExitCode.OK and out.strip() == "no games match"
    assert 4 in listed(capsys, db, "--result", "void")


def test_a_list_matching_no_game_says_so_and_succeeds(capsys: Capsys, source: Path) -> None:
    code, out, err = kryt(capsys, "games", "list", "--reason", "crash", "-d", str(source))
    assert code == ExitCode.OK and out.strip() == "no games match" and err == ""


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("-t", "99"), "no tournament with id 99"),
        (("--bot", "zed"), "zed"),
        (("-n", "0"), "--limit"),
        (("-t", "0"), "--tournament"),
        (("--result", "won"), "won"),
        (("--result", "win"), "needs a bot"),
        (("--reason", "lost"), "lost"),
    ],
)
def test_unknown_filters_and_bad_limits_are_one_line(
    capsys: Capsys, source: Path, args: tuple[str, ...], words: str
) -> None:
    code, out, err = kryt(capsys, "games", "list", *args, "-d", str(source))
    assert code == ExitCode.BAD_INPUT
    assert words in error_line(err) and "│" not in out


def test_a_missing_database_is_one_line_exit_3_and_creates_nothing(
    capsys: Capsys, tmp_path: Path
) -> None:
    missing = tmp_path / "none.db"
    for args in (
        ("games", "list"),
        ("games", "export", str(tmp_path / "out.kgn")),
        ("leaderboard",),
        ("leaderboard", "--json"),
        ("leaderboard", "--html", str(tmp_path / "site")),
    ):
        code, out, err = kryt(capsys, *args, "-d", str(missing))
        assert code == ExitCode.UNAVAILABLE, (args, err)
        assert "no database at" in error_line(err) and out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# -- kryt games export ----------------------------------------------------------------------------


def exported_ids_of_finished() -> list[int]:
    """The fixture's games an export of everything holds: those of finished tournaments."""
    return sorted(gid for gid, g in GAMES.items() if g[0] in FINISHED)


def exported_ids(text: str) -> list[int]:
    """The ``GameId`` headers of a game file, in order."""
    return [int(m) for m in re.findall(r'^\[GameId "(\d+)"\]$', text, flags=re.MULTILINE)]


def test_export_format_follows_the_extension_unless_given(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    for name, start in (
        ("g.csv", "game_id,tournament,"),
        ("G.JSON", "["),
        ("g.kgn", '[KrytGameFile "1"]'),
        ("g.txt", '[KrytGameFile "1"]'),
    ):
        code, _, err = kryt(capsys, "games", "export", str(tmp_path / name), "-d", str(source))
        assert code == ExitCode.OK, err
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert text.startswith(start), name
        if start == "[":  # a JSON array, not a game file (which starts with "[" too)
            assert len(json.loads(text)) == len(exported_ids_of_finished())
    # Each is now an earlier export: replaced without --force, whatever the new format.
    for name in ("g.csv", "G.JSON", "g.kgn"):
        args = ("-f", "text", "-d", str(source))
        code, _, err = kryt(capsys, "games", "export", str(tmp_path / name), *args)
        assert code == ExitCode.OK, err
    target = tmp_path / "forced.csv"
    code, _, err = kryt(capsys, "games", "export", str(target), "-f", "json", "-d", str(source))
    assert code == ExitCode.OK and "(json)" in err
    finished = [str(gid) for gid in sorted(GAMES) if GAMES[gid][0] in FINISHED]
    assert [g["GameId"] for g in json.loads(target.read_text())] == finished
    bad = tmp_path / "bad.kgn"
    code, out, err = kryt(capsys, "games", "export", str(bad), "-f", "xml", "-d", str(source))
    assert code == ExitCode.BAD_INPUT and "--format" in error_line(err) and "xml" in err
    assert not bad.exists() and out == ""


def test_export_leaves_out_unfinished_tournaments_and_counts_them(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "all.kgn"
    code, out, err = kryt(capsys, "games", "export", str(target), "-d", str(source))
    assert code == ExitCode.OK and out == ""
    kept = sorted(gid for gid, g in GAMES.items() if g[0] in FINISHED)
    unfinished = len(GAMES) - len(kept)
    text = target.read_text(encoding="utf-8")
    assert exported_ids(text) == kept  # oldest first, voided games included (as "*")
    assert text.count('[Result "*"]') == sum(1 for gid in kept if GAMES[gid][5])
    assert f"left out {unfinished} games of tournaments not finished" in flat(err)
    assert f"wrote {len(kept)} games to {target} (text)" in flat(err)
    assert "classic-table" not in err
    assert '[Tournament "live"]' not in text


@pytest.mark.parametrize(
    "status", [TournamentStatus.PENDING, TournamentStatus.CANCELLED, TournamentStatus.FAILED]
)
def test_export_leaves_out_every_status_but_finished(
    capsys: Capsys, source: Path, tmp_path: Path, status: TournamentStatus
) -> None:
    db = copy_of(source, tmp_path)
    database = open_database(f"sqlite:///{db}")
    with database.session() as s:
        set_tournament_status(3, status, session=s)
    database.close()
    code, out, err = kryt(capsys, "games", "export", "-", "--bot", "charlie", "-d", str(db))
    assert code == ExitCode.OK
    assert exported_ids(out) == [7, 8]  # not game 9, of the tournament not finished
    assert "left out 1 games of tournaments not finished" in flat(err)


def test_export_leaves_out_classic_table_games_and_says_how_many(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    db = copy_of(source, tmp_path)
    database = open_database(f"sqlite:///{db}")
    with database.session() as s:
        seats = (1, 2, 3)  # alpha, bravo, charlie at a classic table of three
        spec = SeriesSpec(1, 2, 1, 5, ruleset="classic", seats=seats)
        table = create_tournament(TournamentSpec("table", 3, series=[spec]), session=s)
        assert table.id is not None
        (series,) = series_of_tournament(table.id, session=s)
        assert series.id is not None
        record = GameRecord(
            deck=tuple(deck(7)),
            dealer=0,
            turn_limit=500,
            moves=(Move(1, "lead 6C", 0.01),),
            ending=GameEndReason.LAST_HOLDER,
            winner=None,
            players=("alpha 1.0.0", "bravo 1.0.0", "charlie 1.0.0"),
            started=1.78e9,
            finished=1.78e9 + 5,
            ruleset="classic",
            seats=3,
            loser=2,
            pairwise=((0, 2), (1, 2)),
        )
        record_game(record, GamePlace(series.id, 1, 1, seats), session=s)
        set_series_status(series.id, SeriesStatus.FINISHED, session=s)
        set_tournament_status(table.id, TournamentStatus.FINISHED, session=s)
        table_id = table.id
    database.close()
    code, out, err = kryt(capsys, "games", "export", "-", "-d", str(db))
    assert code == ExitCode.OK
    assert exported_ids(out) == sorted(gid for gid, g in GAMES.items() if g[0] in FINISHED)
    assert "left out 1 classic-table games (a game file has two seats)" in flat(err)
    target = tmp_path / "table.kgn"
    args = ("-t", str(table_id), "-d", str(db))
    code, out, err = kryt(capsys, "games", "export", str(target), *args)
    assert code == ExitCode.BAD_INPUT and out == ""
    assert "nothing to export: the 1 games chosen are classic-table games" in error_line(err)
    assert not target.exists()


def test_export_of_only_unfinished_games_is_refused_and_writes_nothing(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "live.json"
    code, out, err = kryt(capsys, "games", "export", str(target), "-t", "3", "-d", str(source))
    assert code == ExitCode.BAD_INPUT and out == ""
    line = error_line(err)
    assert "nothing to export: the 1 games chosen are games of tournaments not finished" in line
    assert not target.exists()


def test_export_matching_no_game_writes_nothing_but_stdout_gets_the_empty_export(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "none.json"
    args = ("--reason", "crash", "-d", str(source))
    code, out, err = kryt(capsys, "games", "export", str(target), *args)
    assert code == ExitCode.FAILED and out == ""
    assert err.strip() == f"no games match: nothing written to {target}"
    assert not target.exists()
    code, out, err = kryt(capsys, "games", "export", "-", "-f", "json", *args)
    assert code == ExitCode.OK and json.loads(out) == [] and err == ""


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (("--bot", "charlie"), {"bot": "charlie"}),
        (("-t", "1", "--result", "void"), {"tournament": 1, "result": "void"}),
        (("--result", "draw"), {"result": "draw"}),
        (("--reason", "timeout"), {"reasons": ("timeout",)}),
        (("--bot", "alpha", "--result", "win"), {"bot": "alpha", "result": "win"}),
    ],
)
def test_export_applies_every_filter(
    capsys: Capsys, source: Path, args: tuple[str, ...], where: dict[str, Any]
) -> None:
    code, out, _ = kryt(capsys, "games", "export", "-", *args, "-d", str(source))
    assert code == ExitCode.OK
    expected = {gid for gid in chosen(**where) if GAMES[gid][0] in FINISHED}
    assert exported_ids(out) == sorted(expected)


def test_export_replaces_only_exports_and_never_a_database(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n", encoding="utf-8")
    code, _, err = kryt(capsys, "games", "export", str(notes), "-d", str(source))
    assert code == ExitCode.BAD_INPUT
    assert "is not an export of kryt games" in error_line(err)
    assert notes.read_text(encoding="utf-8") == "my notes\n"
    code, _, err = kryt(capsys, "games", "export", str(notes), "--force", "-d", str(source))
    assert code == ExitCode.OK, err
    assert exported_ids(notes.read_text(encoding="utf-8")) != []
    before = source.read_bytes()
    code, _, err = kryt(capsys, "games", "export", str(source), "--force", "-d", str(source))
    assert code == ExitCode.BAD_INPUT and "SQLite database" in error_line(err)
    assert source.read_bytes() == before


# -- kryt games import ----------------------------------------------------------------------------


def board(capsys: Capsys, db: Path, *args: str) -> dict[str, object]:
    """``kryt leaderboard --json ARGS``, without the database's own submission ids."""
    code, out, err = kryt(capsys, "leaderboard", "--json", *args, "-d", str(db))
    assert code == ExitCode.OK, err
    data: dict[str, object] = json.loads(out)
    rows = data["rows"]
    assert isinstance(rows, list)
    for row in rows:
        row.pop("submission_id")
    return data


def test_import_round_trip_reproduces_games_and_standings(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "all.kgn"
    assert kryt(capsys, "games", "export", str(exported), "-d", str(source))[0] == 0
    fresh = tmp_path / "fresh.db"
    code, out, err = kryt(capsys, "games", "import", str(exported), "-d", str(fresh))
    assert code == ExitCode.OK, err
    assert out.startswith("imported 8 new games of 8 read (2 new tournaments) into ")
    again = tmp_path / "again.kgn"
    assert kryt(capsys, "games", "export", str(again), "-d", str(fresh))[0] == 0
    # The same file, but for the series ids: the source's cup has a second series without
    # games, which no game file can carry, so the file's series have the next ids here.
    series_ids = re.compile(r'^\[SeriesId "\d+"\]\n', flags=re.MULTILINE)
    assert again.read_text() != exported.read_text()
    assert series_ids.sub("", again.read_text()) == series_ids.sub("", exported.read_text())
    for tournament in FINISHED:
        imported = board(capsys, fresh, "-t", str(tournament))
        original = board(capsys, source, "-t", str(tournament))
        if tournament == 1:  # its series without games is not in the file
            for progress in (imported["progress"], original["progress"]):
                assert isinstance(progress, dict)
                del progress["games_planned"], progress["series_total"]
        assert imported == original
    code, out, err = kryt(capsys, "games", "import", str(exported), "-d", str(fresh))
    assert code == ExitCode.OK
    assert out.startswith("imported 0 new games of 8 read (0 new tournaments) into ")
    assert err == ""


def test_import_of_one_tournament_says_one_new_tournament(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "other.json"
    assert kryt(capsys, "games", "export", str(exported), "-t", "2", "-d", str(source))[0] == 0
    code, out, _ = kryt(capsys, "games", "import", str(exported), "-d", str(tmp_path / "n.db"))
    assert code == ExitCode.OK
    assert out.startswith("imported 2 new games of 2 read (1 new tournament) into ")


def test_a_broken_record_after_good_ones_stores_nothing(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "all.kgn"
    assert kryt(capsys, "games", "export", str(exported), "-d", str(source))[0] == 0
    text = exported.read_text(encoding="utf-8")
    last = text.rindex('[Dealer "')
    broken = tmp_path / "broken.kgn"
    broken.write_text(text[:last] + '[Dealer "7"]' + text[last + len('[Dealer "0"]') :])
    fresh = tmp_path / "fresh.db"
    code, out, err = kryt(capsys, "games", "import", str(broken), "-d", str(fresh))
    assert code == ExitCode.BAD_INPUT and out == ""
    assert "broken.kgn:" in error_line(err)
    assert not fresh.exists()
    existing = copy_of(source, tmp_path)
    before = table_counts(existing)
    code, _, err = kryt(capsys, "games", "import", str(broken), "-d", str(existing))
    assert code == ExitCode.BAD_INPUT and "broken.kgn:" in error_line(err)
    assert table_counts(existing) == before


SEATS = (Seat("xray", "1.0", "c" * 64), Seat("yank", "1.0", "d" * 64))


def test_a_conflict_after_a_new_game_rolls_the_whole_import_back(
    capsys: Capsys, tmp_path: Path
) -> None:
    first_deck = tuple(str(card) for card in shuffled_deck("kryt:review:1"))
    other_deck = tuple(str(card) for card in shuffled_deck("kryt:review:2"))
    db = tmp_path / "target.db"
    one = tmp_path / "one.kgn"
    one.write_text(format_games([game_entry(1, seats=SEATS, deck=first_deck)]))
    assert kryt(capsys, "games", "import", str(one), "-d", str(db))[0] == ExitCode.OK
    before = table_counts(db)
    # Game 2 is new; then game 1 again, dealt another deck: a conflict with the stored one.
    clash = game_entry(1, seats=SEATS, deck=other_deck)
    both = tmp_path / "both.kgn"
    both.write_text(format_games([game_entry(2, seats=SEATS, deck=first_deck), clash]))
    code, out, err = kryt(capsys, "games", "import", str(both), "-d", str(db))
    assert code != ExitCode.OK and out == ""
    assert "both.kgn:" in error_line(err)
    assert table_counts(db) == before  # game 2 was not kept: one transaction


def test_a_json_file_is_read_as_json_whatever_the_case_of_its_extension(
    capsys: Capsys, tmp_path: Path
) -> None:
    upper = tmp_path / "GAMES.JSON"
    upper.write_text('{"Seat0": "alpha"}')
    db = tmp_path / "new.db"
    code, out, err = kryt(capsys, "games", "import", str(upper), "-d", str(db))
    assert code == ExitCode.BAD_INPUT and out == ""
    assert error_line(err) == "error: GAMES.JSON: expected a JSON array of games"
    assert not db.exists()


def test_an_empty_file_imports_nothing_and_creates_no_database(
    capsys: Capsys, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.kgn"
    empty.write_text("")
    db = tmp_path / "new.db"
    code, out, err = kryt(capsys, "games", "import", str(empty), "-d", str(db))
    assert code == ExitCode.OK and err == ""
    assert out.strip() == f"{empty} holds no games: nothing imported, no database created"
    assert not db.exists()


def test_an_import_never_moves_a_status_back_and_says_so(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "other.kgn"
    assert kryt(capsys, "games", "export", str(exported), "-t", "2", "-d", str(source))[0] == 0
    db = tmp_path / "imported.db"
    assert kryt(capsys, "games", "import", str(exported), "-d", str(db))[0] == ExitCode.OK
    text = exported.read_text(encoding="utf-8")
    back = tmp_path / "back.kgn"
    back.write_text(text.replace('[TournamentStatus "finished"]', '[TournamentStatus "running"]'))
    code, out, err = kryt(capsys, "games", "import", str(back), "-d", str(db))
    assert code == ExitCode.OK and "imported 0 new games of 2 read" in out
    assert err.splitlines() == [
        "kept: tournament 'other' stays finished (an import never moves a status back);"
        " back.kgn:1 says running"
    ]
    with sqlite3.connect(db) as conn:
        assert conn.execute("select status from tournaments").fetchall() == [("finished",)]
    conn.close()


# -- kryt leaderboard -----------------------------------------------------------------------------


def live_elo(games: list[tuple[str, str, float]]) -> dict[str, float]:
    """docs/ratings.md's live Elo: everyone at 1500, K 32 (under 30 games), in order."""
    rating: dict[str, float] = {}
    for a, b, score in games:
        ra, rb = rating.get(a, 1500.0), rating.get(b, 1500.0)
        expected = 1 / (1 + 10 ** ((rb - ra) / 400))
        rating[a] = ra + 32 * (score - expected)
        rating[b] = rb + 32 * ((1 - score) - (1 - expected))
    return rating


def expected_rows(tournament: int | None) -> dict[str, dict[str, object]]:
    """Each bot's games, W/D/L, score, forfeits and live Elo over the fixture's counted games
    (of ``tournament``, or all)."""
    counted = [
        (gid, g)
        for gid, g in sorted(GAMES.items())
        if not g[5] and (tournament is None or g[0] == tournament)
    ]
    tally: dict[str, list[int]] = {}
    order: list[tuple[str, str, float]] = []
    for _, (_, seat0, seat1, won, _, _) in counted:
        score = {"seat0": 1.0, "seat1": 0.0, "draw": 0.5}[str(won)]
        order.append((seat0, seat1, score))
        for bot, mine in ((seat0, score), (seat1, 1 - score)):
            wdl = tally.setdefault(bot, [0, 0, 0])
            wdl[0 if mine == 1 else 1 if mine == 0.5 else 2] += 1
    elo = live_elo(order)
    forfeiter = {"alpha": {"timeout": 1}} if tournament in (None, 1) else {}
    return {
        bot: {
            "games": sum(wdl),
            "wins": wdl[0],
            "draws": wdl[1],
            "losses": wdl[2],
            "score": (wdl[0] + wdl[1] / 2) / sum(wdl),
            "forfeits": forfeiter.get(bot, {}),
            "elo": elo[bot],
        }
        for bot, wdl in tally.items()
    }


def expected_progress(tournament: int | None) -> dict[str, int]:
    """The caption's progress, counted from the fixture (a series is done when finished)."""
    scope = [tid for tid in PLANNED if tournament is None or tid == tournament]
    games = [g for g in GAMES.values() if g[0] in scope]
    return {
        "games_done": sum(1 for g in games if not g[5]),
        "games_planned": sum(PLANNED[tid] for tid in scope),
        "series_done": sum(done for tid in scope for _, done in SERIES[tid]),
        "series_total": sum(len(SERIES[tid]) for tid in scope),
        "voided": sum(1 for g in games if g[5]),
    }


def check_board(data: dict[str, object], tournament: int | None) -> None:
    rows = data["rows"]
    assert isinstance(rows, list)
    expected = expected_rows(tournament)
    assert {row["bot"] for row in rows} == set(expected)
    for row in rows:
        want = expected[row["bot"]]
        assert row["elo"] == pytest.approx(want.pop("elo"), abs=1e-6)
        assert row["elo_provisional"] is True  # under 30 games
        assert {key: row[key] for key in want} == want
    assert data["progress"] == expected_progress(tournament)
    board_ = data["board"]
    assert isinstance(board_, dict)
    counted = [g for g in GAMES.values() if not g[5] and tournament in (None, g[0])]
    assert board_["games"] == len(counted)


def test_leaderboard_of_one_tournament_matches_an_independent_count(
    capsys: Capsys, source: Path
) -> None:
    data = board(capsys, source, "-t", "1")
    check_board(data, 1)
    assert data["tournament"] == {"id": 1, "name": "cup", "status": "finished"}
    check_board(board(capsys, source, "--tournament", "2"), 2)
    code, out, err = kryt(capsys, "leaderboard", "-t", "1", "-d", str(source))
    assert code == ExitCode.OK and err == ""
    text = flat(out)
    assert "Leaderboard: cup (#1)" in text
    for bot, want in expected_rows(1).items():
        wdl = f"{want['wins']}/{want['draws']}/{want['losses']}"
        score = f"{100 * float(str(want['score'])):.1f}"
        row = rf"│ {bot} │ 1\.0\.0 │ .* │ {want['games']} │ {wdl} │ {score} │"
        assert re.search(row, text), text
    assert "│ timeout 1 │" in text
    assert "on this board" not in text  # the board holds every counted game of the scope
    p = expected_progress(1)
    assert (
        f"{p['games_done']}/{p['games_planned']} games played,"
        f" {p['series_done']}/{p['series_total']} series done, {p['voided']} voided"
    ) in text


def test_leaderboard_of_all_tournaments_matches_an_independent_count(
    capsys: Capsys, source: Path
) -> None:
    data = board(capsys, source)
    check_board(data, None)
    assert data["tournament"] is None
    code, out, _ = kryt(capsys, "leaderboard", "-d", str(source))
    assert code == ExitCode.OK
    text = flat(out)
    assert "Leaderboard: all tournaments" in text
    p = expected_progress(None)
    assert f"{p['games_done']}/{p['games_planned']} games played" in text


def test_leaderboard_rows_are_ranked_by_rating(capsys: Capsys, source: Path) -> None:
    for args in ((), ("-t", "1"), ("-t", "2")):
        rows = board(capsys, source, *args)["rows"]
        assert isinstance(rows, list)
        assert [row["rank"] for row in rows] == list(range(1, len(rows) + 1))
        ratings = [row["rating"] for row in rows]
        assert ratings == sorted(ratings, reverse=True)
        # LOS over the next bot: above one half when rated above it, none for the last.
        assert all(row["los_next"] > 0.5 for row in rows[:-1])
        assert rows[-1]["los_next"] is None


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("-t", "99"), ExitCode.BAD_INPUT, "no tournament with id 99"),
        (("-t", "0"), ExitCode.BAD_INPUT, "--tournament"),
        (("--ruleset", "nope"), ExitCode.BAD_INPUT, "'nope'"),
        (("--ruleset", "classic", "--table-size", "9"), ExitCode.BAD_INPUT, "9"),
        (("--table-size", "3"), ExitCode.BAD_INPUT, "3"),
        (("--html", "site", "--json"), ExitCode.BAD_INPUT, "--html exports every tournament"),
        (("--html", "site", "-t", "1"), ExitCode.BAD_INPUT, "--html exports every tournament"),
        (("--html", "site", "--ruleset", "default"), ExitCode.BAD_INPUT, "--html exports"),
        (("--html", "site", "--table-size", "2"), ExitCode.BAD_INPUT, "--html exports"),
    ],
)
def test_leaderboard_errors_are_one_line(
    capsys: Capsys,
    source: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    code: ExitCode,
    words: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    got, out, err = kryt(capsys, "leaderboard", *args, "-d", str(source))
    assert got == code and out == ""
    assert words in error_line(err)
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize(
    "args", [("--ruleset", "nope"), ("--ruleset", "classic", "--table-size", "9")]
)
def test_a_bad_board_is_a_usage_error_before_the_database_is_opened(
    capsys: Capsys, tmp_path: Path, args: tuple[str, ...]
) -> None:
    missing = tmp_path / "none.db"
    code, out, err = kryt(capsys, "leaderboard", *args, "-d", str(missing))
    assert code == ExitCode.BAD_INPUT and out == ""
    assert "--ruleset/--table-size" in error_line(err)
    assert not missing.exists()


def test_leaderboard_html_exports_the_whole_site(
    capsys: Capsys, source: Path, tmp_path: Path
) -> None:
    db = copy_of(source, tmp_path)  # with a fourth bot, submitted and never played
    database = open_database(f"sqlite:///{db}")
    with database.session() as s:
        submit(new_submission("delta"), session=s)
    database.close()
    site = tmp_path / "site"
    code, out, err = kryt(capsys, "leaderboard", "--html", str(site), "-d", str(db))
    assert code == ExitCode.OK and err == ""
    tournaments, series = len(PLANNED), sum(map(len, SERIES.values()))
    assert re.fullmatch(
        rf"wrote \d+ pages to {re.escape(str(site))} \({tournaments} tournaments, 4 submissions,"
        rf" {series} series, {len(GAMES)} games\); open {re.escape(str(site))}/index.html",
        out.strip(),
    ), out
    assert (site / "index.html").is_file()
    for tid in PLANNED:
        assert (site / f"leaderboard-{tid}.json").is_file()


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port of 127.0.0.1 that a listening socket holds."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        yield int(holder.getsockname()[1])


def test_serve_on_a_busy_port_is_one_line_exit_3(
    capsys: Capsys, source: Path, busy_port: int
) -> None:
    code, out, err = kryt(
        capsys, "leaderboard", "serve", "--port", str(busy_port), "-d", str(source)
    )
    assert code == ExitCode.UNAVAILABLE and out == ""
    assert f"cannot listen on 127.0.0.1:{busy_port}" in error_line(err)
