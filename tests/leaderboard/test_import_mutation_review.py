"""A mutation review of what comes into the database: ``leaderboard.games_io.import_entries``
(with ``_keep_commitments``, ``_update_imported``, ``_located`` and ``_settle_statuses``) and
the ``kryt games import`` command, pinned where the earlier reviews (the export's, the game
file's, ``tests/cli/test_games_leaderboard_cli_mutation_review.py``) and the import tests let
a mutant of them live.

Expectations come from docs/games-format.md ("Import"), never from the code's output:

* the summary counts the games read, the games newly stored and the tournaments newly
  created; a second import of the same games adds nothing (the same game twice in one list
  is stored once), attempts and games voided after they were recorded are kept as they were;
* statuses move only forward, by the documented table (tournament ``pending`` → ``running``
  → ``finished``/``cancelled``/``failed``, ``cancelled``/``failed`` → ``finished``; series
  ``pending`` → ``running`` → ``finished``/``aborted``, ``aborted`` → ``finished``), checked
  pair by pair; a tournament this database ran itself keeps every status, its series too;
  every status kept is one line, per tournament and per series (not per record), naming the
  series by its position and the file's first record of it (``the file`` without one);
* a conflict names the file's record it comes from (a bot version stored with other content,
  a content stored under another name, a different series or game at the place, a commitment
  stored otherwise) and leaves the database as it was; an entry not read from a file gets the
  database's message unchanged;
* ``kryt games import`` names the file as given (``clash.kgn:N:``), shows at most 10 ``kept:``
  lines and then how many more, and shows a tournament name holding Rich markup literally.

The last two of the conflict tests found a fault (at 6bb3357): ``ensure_series`` compared
only pair, format, games and seed, so a classic-table series of this database at the file's
place (the file's pair in seats 0 and 1, its games and seed) was taken for the file's
two-seat series: with three seats the import failed with a message naming no record
(``InvalidRecordError`` from ``record_game``, which the import does not locate), with two
seats it stored a two-seat game in the table series. ``ensure_series`` now compares the
ruleset and a table's seats too; these tests keep it so.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from sqlmodel import Session, select

from arena.db import (
    ConflictError,
    Database,
    NewSubmission,
    SeriesFormat,
    SeriesSpec,
    SeriesStatus,
    TournamentSpec,
    TournamentStatus,
    VersionReusedError,
    create_tournament,
    open_database,
    series_of_tournament,
    set_series_status,
    set_tournament_status,
    store_tournament_config,
    submit,
)
from arena.db.models import Submission
from arena.tournament.origin import SeriesOrigin, imported_origin
from arena.tournament.seeds import commitment
from kryt.errors import ExitCode
from leaderboard.gamefile import GameEntry, Seat, format_games
from leaderboard.games_io import ImportSummary, import_entries
from referee.protocol.messages import GameEndReason
from referee.record import GameRecord, Move
from referee.rules import shuffled_deck
from tests.cli.helpers import game_entry, kryt, table_counts
from tests.db.helpers import replayable

Capsys = pytest.CaptureFixture[str]

SEATS = (Seat("alpha", "1.0", "a" * 64), Seat("bravo", "2.0", "b" * 64))
SERIES_SEED = 123456789012  # what tests.cli.helpers.game_entry gives every series


@functools.cache
def dealt(deal: int) -> GameEntry:
    """A two-seat game of the file's tournament 'cup' (seed 7), series 0, game 1, both
    statuses finished, dealt the ``deal``-th deck (the rules replay it)."""
    deck = tuple(str(card) for card in shuffled_deck(f"kryt:test:import-review:{deal}"))
    return game_entry(1, seats=SEATS, deck=deck)


def entry(
    number: int = 1, *, position: int = 0, where: str = "", deal: int = 1, **changes: object
) -> GameEntry:
    """Game ``number`` of series ``position`` (``changes``: any other field)."""
    base = dealt(deal)
    return replace(
        base,
        number=number,
        series_position=position,
        where=where,
        **changes,  # type: ignore[arg-type]
    )


@functools.cache
def voided_record() -> GameRecord:
    """A game the referee recorded as void (an infrastructure failure) after two moves."""
    played = dealt(1).record
    record = GameRecord(
        played.deck,
        played.dealer,
        played.turn_limit,
        (Move(0, "lead 6H", 0.012), Move(1, "take", 0.5)),
        GameEndReason.VOID,
        None,
        void_reason="engine went away",
        players=played.players,
        started=played.started,
        finished=played.finished,
    )
    return replayable(record)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "kryt.db"


@pytest.fixture
def db(path: Path) -> Iterator[Database]:
    database = open_database(f"sqlite:///{path}")
    try:
        yield database
    finally:
        database.close()


def run(db: Database, entries: Sequence[GameEntry]) -> ImportSummary:
    with db.session() as session:
        return import_entries(entries, session=session)


def refused(db: Database, path: Path, entries: Sequence[GameEntry]) -> ConflictError:
    """Import ``entries``: a ConflictError, and not a row changed."""
    before = table_counts(path), _config(path)
    with pytest.raises(ConflictError) as caught, db.session() as session:
        import_entries(entries, session=session)
    assert (table_counts(path), _config(path)) == before
    return caught.value


def _config(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id, status, config FROM tournaments ORDER BY id").fetchall()
    conn.close()
    return rows


def statuses(path: Path) -> tuple[dict[str, str], dict[tuple[str, int], str]]:
    """Each tournament's status by name; each series' status by (tournament, position)."""
    with sqlite3.connect(path) as conn:
        tournaments = dict(conn.execute("SELECT name, status FROM tournaments").fetchall())
        series = conn.execute(
            "SELECT t.name, s.position, s.status FROM series s"
            " JOIN tournaments t ON t.id = s.tournament_id"
        ).fetchall()
    conn.close()
    return tournaments, {(name, position): status for name, position, status in series}


def own_submissions(db: Database, *seats: Seat) -> list[int]:
    """``seats`` stored as bot versions of this database (as ``kryt bot submit`` would)."""
    ids = []
    with db.session() as s:
        for seat in seats:
            manifest = {"name": seat.bot, "version": seat.version, "language": "python"}
            new = NewSubmission(
                bot_name=seat.bot,
                version=seat.version,
                sha256=seat.sha256,
                submitted_by="tester",
                manifest=manifest | {"entry": "bot.py"},
            )
            row = submit(new, session=s).submission
            assert row.id is not None
            ids.append(row.id)
    return ids


def own_tournament(
    db: Database,
    name: str,
    status: TournamentStatus,
    series_status: SeriesStatus,
    *,
    seed: int = 7,
    spec: SeriesSpec | None = None,
) -> int:
    """A tournament this database ran itself whose series 0 is the file's (or ``spec``)."""
    with db.session() as s:
        ids = {row.sha256: row.id or 0 for row in _submissions(s)}
        series = spec or SeriesSpec(ids["a" * 64], ids["b" * 64], 2, SERIES_SEED)
        made = create_tournament(
            TournamentSpec(name=name, seed=seed, config={"games": 2}, series=[series]), session=s
        )
        assert made.id is not None
        (row,) = series_of_tournament(made.id, session=s)
        assert row.id is not None
        set_series_status(row.id, series_status, session=s)
        set_tournament_status(made.id, status, session=s)
        return made.id


def _submissions(session: Session) -> list[Submission]:
    return list(session.exec(select(Submission)).all())


# -- counts, idempotence, attempts, voided games ---------------------------------------------


def test_a_second_import_adds_nothing_and_the_summary_counts_what_was_read(
    db: Database, path: Path
) -> None:
    """Three games in two series (one voided after it was recorded, its reason holding Rich
    markup and a bidi override: stored as given), one of them twice in the list."""
    reason = "[bold red]late[/] fault \u202e found"
    games = [
        entry(1),
        entry(2),
        entry(1, position=1, voided_after=reason),
        entry(1),  # the same game again: stored once
    ]
    assert run(db, games) == ImportSummary(4, 3, 1, ())
    after = table_counts(path)
    assert after == {"submissions": 2, "tournaments": 1, "series": 2, "games": 3}
    assert run(db, games) == ImportSummary(4, 0, 0, ())
    assert table_counts(path) == after
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT s.position, g.number, g.voided, g.void_reason, g.result FROM games g"
            " JOIN series s ON s.id = g.series_id ORDER BY g.id"
        ).fetchall()
        subs = conn.execute("SELECT status, submitted_by FROM submissions").fetchall()
    conn.close()
    assert [row[:3] for row in rows] == [(0, 1, 0), (0, 2, 0), (1, 1, 1)]
    assert rows[2][3:] == (reason, "seat1")  # the result it was played to, kept
    # An imported version counts (active) and says where it came from.
    assert subs == [("active", "kryt games import")] * 2


def test_a_voided_attempt_and_its_replay_keep_their_attempt_numbers(
    db: Database, path: Path
) -> None:
    games = [entry(1, attempt=1, record=voided_record()), entry(1, attempt=2)]
    assert run(db, games).created == 2
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT number, attempt, voided FROM games ORDER BY id").fetchall()
    conn.close()
    assert rows == [(1, 1, 1), (1, 2, 0)]
    assert run(db, games).created == 0


# -- statuses --------------------------------------------------------------------------------

TOURNAMENT_FORWARD_DOC = {
    "pending": {"running", "finished", "cancelled", "failed"},
    "running": {"finished", "cancelled", "failed"},
    "cancelled": {"finished"},
    "failed": {"finished"},
    "finished": set(),
}
"""docs/games-format.md: pending → running → finished/cancelled/failed, and cancelled/failed
→ finished (a step forward may skip one: pending → finished)."""
SERIES_FORWARD_DOC = {
    "pending": {"running", "finished", "aborted"},
    "running": {"finished", "aborted"},
    "aborted": {"finished"},
    "finished": set(),
}


def back(what: str, stored: str, said: str, where: str) -> str:
    return f"{what} stays {stored} (an import never moves a status back); {where} says {said}"


def test_an_imported_tournament_moves_only_forward_pair_by_pair(db: Database, path: Path) -> None:
    """Each pair (status stored by a first import, status a second file says), one
    tournament each; its series is finished in both files."""
    for first, moves in TOURNAMENT_FORWARD_DOC.items():
        for then in TOURNAMENT_FORWARD_DOC:
            name = f"t {first} {then}"
            assert run(db, [entry(tournament=name, tournament_status=first)]).kept == ()
            said = entry(tournament=name, tournament_status=then, where="b.kgn:1")
            kept = run(db, [said]).kept
            allowed = then == first or then in moves
            assert statuses(path)[0][name] == (then if allowed else first), (first, then)
            lines = [] if allowed else [back(f"tournament {name!r}", first, then, "b.kgn:1")]
            assert list(kept) == lines, (first, then)


def test_an_imported_series_moves_only_forward_pair_by_pair(db: Database, path: Path) -> None:
    """As above for the series (its tournament finished in both files); a first import
    that says ``pending`` leaves it running: recording its game started it."""
    for first in SERIES_FORWARD_DOC:
        for then in SERIES_FORWARD_DOC:
            name = f"s {first} {then}"
            run(db, [entry(tournament=name, series_status=first)])
            stored = "running" if first == "pending" else first
            said = entry(tournament=name, series_status=then, where="b.kgn:9")
            kept = run(db, [said]).kept
            allowed = then == stored or then in SERIES_FORWARD_DOC[stored]
            assert statuses(path)[1][(name, 0)] == (then if allowed else stored), (first, then)
            what = f"series 0 of tournament {name!r}"
            lines = [] if allowed else [back(what, stored, then, "b.kgn:9")]
            assert list(kept) == lines, (first, then)


@pytest.mark.parametrize("status", [s.value for s in TournamentStatus if s.value != "extended"])
def test_a_tournament_run_here_keeps_its_status_and_its_series_whatever_the_file_says(
    db: Database, path: Path, status: str
) -> None:
    """Even where the file's status would be a step forward (pending → finished); and it
    keeps its own configuration (docs: "keeps its own commitments"), though the file
    publishes a commitment (the one of its seed)."""
    own_submissions(db, *SEATS)
    own_tournament(db, "cup", TournamentStatus(status), SeriesStatus.RUNNING)
    config = _stored_config(db)
    said = "running" if status == "finished" else "finished"
    file = entry(
        tournament_status=said,
        series_status="finished",
        where="f.kgn:3",
        seed_commitment=commitment(7),
    )
    kept = run(db, [file]).kept
    assert _stored_config(db) == config
    ran = "this database ran it: an import never changes its status"
    assert kept == (
        f"tournament 'cup' stays {status} ({ran}); f.kgn:3 says {said}",
        f"series 0 of tournament 'cup' stays running ({ran}); f.kgn:3 says finished",
    )
    assert statuses(path) == ({"cup": status}, {("cup", 0): "running"})


def test_statuses_kept_are_one_line_per_series_and_tournament_naming_its_first_record(
    db: Database,
) -> None:
    """Records of series 1 and 0 (two of series 0), all moved back: the tournament's line
    names the file's first record, each series' line the first record of that series; the
    tournament first, then the series in order."""
    run(db, [entry(1), entry(2), entry(1, position=1)])
    file = [
        entry(1, position=1, where="g.kgn:1"),
        entry(1, where="g.kgn:30"),
        entry(2, where="g.kgn:60"),
    ]
    file = [replace(e, tournament_status="running", series_status="running") for e in file]
    assert run(db, file).kept == (
        back("tournament 'cup'", "finished", "running", "g.kgn:1"),
        back("series 0 of tournament 'cup'", "finished", "running", "g.kgn:30"),
        back("series 1 of tournament 'cup'", "finished", "running", "g.kgn:1"),
    )


def test_a_series_is_named_by_its_position_and_entries_without_a_file_by_the_file(
    db: Database,
) -> None:
    """Series 3 is the only one (its row is id 1); entries made in code have no record."""
    run(db, [entry(position=3)])
    assert run(db, [entry(position=3, series_status="running")]).kept == (
        back("series 3 of tournament 'cup'", "finished", "running", "the file"),
    )


# -- conflicts: named, and nothing written -----------------------------------------------------


def test_a_version_stored_with_other_content_names_the_record_and_both_contents(
    db: Database, path: Path
) -> None:
    own_submissions(db, Seat("alpha", "1.0", "e" * 64))
    error = refused(db, path, [entry(where="v.kgn:7")])
    assert type(error) is VersionReusedError
    message = str(error)
    assert message.startswith("v.kgn:7: alpha 1.0 already exists with different content"), message
    assert message.endswith(f"; the file's is sha256 {'a' * 64}"), message


def test_content_stored_under_another_name_names_the_record(db: Database, path: Path) -> None:
    own_submissions(db, Seat("zed", "1.0", "a" * 64))
    message = str(refused(db, path, [entry(2, where="n.kgn:12")]))
    assert message.startswith("n.kgn:12: "), message
    assert "zed" in message and "alpha" in message, message


def test_a_different_series_at_the_place_names_the_record(db: Database, path: Path) -> None:
    """The database's 'cup' (seed 7) has another series at position 0 (another seed)."""
    a, b = own_submissions(db, *SEATS)
    own_tournament(
        db,
        "cup",
        TournamentStatus.FINISHED,
        SeriesStatus.FINISHED,
        spec=SeriesSpec(a, b, 2, SERIES_SEED + 1),
    )
    message = str(refused(db, path, [entry(1, where="s.kgn:1"), entry(2, where="s.kgn:20")]))
    assert message.startswith("s.kgn:1: tournament 1 already has a different series"), message


def test_a_different_game_at_the_place_names_that_record_and_keeps_nothing_new(
    db: Database, path: Path
) -> None:
    """A new series and game first, then a game of another deal at a stored place: the
    conflict names the second record, and the new series and game are not kept."""
    run(db, [entry(1)])
    clash = entry(1, deal=2, where="c.kgn:44")
    message = str(refused(db, path, [entry(1, position=1, where="c.kgn:1"), clash]))
    assert message.startswith("c.kgn:44: game 1 of series 1 "), message


def test_a_conflict_of_entries_not_read_from_a_file_is_the_databases_message(
    db: Database, path: Path
) -> None:
    run(db, [entry(1)])
    message = str(refused(db, path, [entry(1, deal=2)]))
    assert message.startswith("game 1 of series 1 "), message


def test_a_commitment_stored_otherwise_names_the_files_first_record_of_it(
    db: Database, path: Path
) -> None:
    """docs: ``games.kgn:1: tournament 'cup': the tournament's seed is stored with the
    commitment ...``: the stored one was edited (the file's matches its seed)."""
    mark = commitment(7)
    games = [entry(1, seed_commitment=mark), entry(2, seed_commitment=mark)]
    run(db, games)
    config = dict(_stored_config(db))
    assert config["seed_commitment"] == mark
    config["seed_commitment"] = "0" * len(mark)
    with db.session() as s:
        store_tournament_config(1, config, session=s)
    where = [replace(games[0], where="k.kgn:1"), replace(games[1], where="k.kgn:40")]
    message = str(refused(db, path, where))
    assert message.startswith(
        f"k.kgn:1: tournament 'cup': the tournament's seed is stored with the commitment"
        f" {'0' * 16!r}..., not {mark[:16]!r}..."
    ), message


def test_an_imported_tournament_keeps_the_files_commitments_and_origins(db: Database) -> None:
    """docs: the file's ``SeedCommitment`` and ``RoundSeedCommitment`` are stored as
    ``seed_commitment`` and ``imported_round_commitments`` (round seed → commitment), and
    each series' origin (``SeriesSeedIds``, ``RoundSeed``, ``DealBook``) by its position."""
    first = SeriesOrigin((4, 9))
    extended = SeriesOrigin((9, 4), round_seed=55, book_decks=None)
    run(
        db,
        [
            entry(position=0, seed_commitment=commitment(7), origin=first),
            entry(position=2, origin=extended, round_commitment=commitment(55)),
        ],
    )
    config = _stored_config(db)
    assert config["seed_commitment"] == commitment(7)
    assert config["imported_round_commitments"] == {"55": commitment(55)}
    assert [imported_origin(config, p) for p in range(3)] == [first, None, extended]


def _stored_config(db: Database) -> dict[str, object]:
    from arena.db import get_tournament

    with db.read_session() as s:
        return dict(get_tournament(1, session=s).config)


# -- a classic table at the file's place (a fault, fixed) ------------------------------------


def _table_at_the_place(db: Database, seats: int) -> None:
    """The database's own 'cup' (seed 7): a classic table whose seats 0 and 1 are the
    file's pair, with the file's games and series seed."""
    extra = [Seat("charlie", "1.0", "c" * 64), Seat("delta", "1.0", "d" * 64)]
    ids = own_submissions(db, *SEATS, *extra[: seats - 2])
    spec = SeriesSpec(ids[0], ids[1], 2, SERIES_SEED, SeriesFormat.STANDARD, "classic", tuple(ids))
    own_tournament(db, "cup", TournamentStatus.FINISHED, SeriesStatus.FINISHED, spec=spec)


def test_a_three_seat_table_at_the_place_is_a_conflict_naming_the_record(
    db: Database, path: Path
) -> None:
    """Found failing: an InvalidRecordError naming no record of the file."""
    _table_at_the_place(db, 3)
    message = str(refused(db, path, [entry(where="t.kgn:1")]))
    assert message.startswith("t.kgn:1: tournament 1 already has a different series"), message


def test_a_two_seat_table_at_the_place_is_a_conflict_not_a_game_of_it(
    db: Database, path: Path
) -> None:
    """Found failing: the file's two-seat game was stored in the classic table's series."""
    _table_at_the_place(db, 2)
    message = str(refused(db, path, [entry(where="t.kgn:1")]))
    assert message.startswith("t.kgn:1: tournament 1 already has a different series"), message


# -- kryt games import -----------------------------------------------------------------------


def write(tmp_path: Path, name: str, entries: Sequence[GameEntry]) -> Path:
    file = tmp_path / name
    file.write_text(format_games(list(entries)), encoding="utf-8")
    return file


def test_a_conflict_is_one_line_naming_the_file_as_given(
    capsys: Capsys, db: Database, path: Path, tmp_path: Path
) -> None:
    run(db, [entry(1)])
    before = table_counts(path)
    file = write(tmp_path, "clash.kgn", [entry(1, deal=2)])
    code, out, err = kryt(capsys, "games", "import", str(file), "-d", str(path))
    assert (code, out) == (ExitCode.BAD_INPUT, "")
    assert err.startswith("error: clash.kgn:1: game 1 of series 1 "), err
    assert len(err.splitlines()) == 1
    assert table_counts(path) == before


@pytest.mark.parametrize(("series", "more"), [(9, None), (11, 2)])
def test_at_most_ten_kept_lines_then_how_many_more(
    capsys: Capsys, tmp_path: Path, series: int, more: int | None
) -> None:
    """``series`` series and their tournament moved back: one line each, at most 10."""
    target = tmp_path / "many.db"
    games = [entry(position=p) for p in range(series)]
    first = write(tmp_path, "first.kgn", games)
    assert kryt(capsys, "games", "import", str(first), "-d", str(target))[0] == ExitCode.OK
    moved = [replace(e, tournament_status="running", series_status="running") for e in games]
    code, out, err = kryt(
        capsys, "games", "import", str(write(tmp_path, "b.kgn", moved)), "-d", str(target)
    )
    assert code == ExitCode.OK and out.startswith(f"imported 0 new games of {series} read")
    lines = err.splitlines()
    shown = [line for line in lines if not line.startswith("kept: ... and")]
    assert len(shown) == min(series + 1, 10) and all(x.startswith("kept: ") for x in shown)
    assert shown[0] == "kept: " + back("tournament 'cup'", "finished", "running", "b.kgn:1")
    tail = [line for line in lines if line.startswith("kept: ... and")]
    assert tail == ([] if more is None else [f"kept: ... and {more} more statuses"])


def test_rich_markup_in_a_tournament_name_is_shown_literally(
    capsys: Capsys, tmp_path: Path
) -> None:
    name = "[bold red]cup[/] [link=http://x]y[/link]"
    target = tmp_path / "markup.db"
    games = [entry(tournament=name)]
    first = write(tmp_path, "m.kgn", games)
    code, out, err = kryt(capsys, "games", "import", str(first), "-d", str(target))
    assert code == ExitCode.OK and err == "" and "(1 new tournament)" in out
    moved = write(tmp_path, "n.kgn", [replace(games[0], tournament_status="running")])
    code, out, err = kryt(capsys, "games", "import", str(moved), "-d", str(target))
    assert code == ExitCode.OK
    assert err.splitlines() == [
        "kept: " + back(f"tournament {name!r}", "finished", "running", "n.kgn:1")
    ]
    assert statuses(target)[0] == {name: "finished"}


def test_a_void_reason_with_control_characters_imports_once_and_never_raw(
    capsys: Capsys, tmp_path: Path
) -> None:
    """A game voided after it was recorded whose reason holds ESC, BEL, a bidi override and
    Rich markup: stored as the file says, a second import adds nothing (no conflict with
    itself), and nothing the import prints carries the raw characters."""
    reason = "bad \x1b[2J\u202e[red]x[/red]\x07"
    target = tmp_path / "void.db"
    file = write(tmp_path, "v.kgn", [entry(voided_after=reason)])
    for created in (1, 0):
        code, out, err = kryt(capsys, "games", "import", str(file), "-d", str(target))
        assert (code, err) == (ExitCode.OK, ""), err
        assert out.startswith(f"imported {created} new games of 1 read")
        assert not {"\x1b", "\x07", "\u202e"} & set(out)
    with sqlite3.connect(target) as conn:
        assert conn.execute("SELECT voided, void_reason FROM games").fetchall() == [(1, reason)]
    conn.close()


def test_an_import_that_fails_leaves_no_database_it_created(
    capsys: Capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure once the database is open (here a conflict raised by the store itself: a
    full disk or a lost server fail there too) rolls back, and a database this import created
    is not left behind empty (docs: a refused import creates no database)."""
    import leaderboard.games_io

    def failing(entries: Sequence[GameEntry], *, session: Session) -> ImportSummary:
        raise ConflictError("the store failed half-way")

    monkeypatch.setattr(leaderboard.games_io, "import_entries", failing)
    target = tmp_path / "new.db"
    file = write(tmp_path, "g.kgn", [entry()])
    code, out, err = kryt(capsys, "games", "import", str(file), "-d", str(target))
    assert (code, out) == (ExitCode.BAD_INPUT, "")
    assert err.strip() == "error: the store failed half-way"
    assert not target.exists()


def test_a_raw_control_character_in_the_file_is_refused_not_dropped(
    capsys: Capsys, tmp_path: Path
) -> None:
    """A header value holding a raw ESC (not the ``\\u001b`` escape an export writes) is
    refused in one line naming its line, nothing created: it is not read with the character
    dropped."""
    text = format_games([entry(voided_after="bad x")])
    file = tmp_path / "raw.kgn"
    file.write_text(text.replace('"bad x"', '"bad \x1b[2J x"'), encoding="utf-8")
    (line,) = [n for n, x in enumerate(text.splitlines(), 1) if x.startswith("[VoidReason ")]
    target = tmp_path / "raw.db"
    code, out, err = kryt(capsys, "games", "import", str(file), "-d", str(target))
    assert (code, out) == (ExitCode.BAD_INPUT, "")
    assert err.startswith(f"error: raw.kgn:{line}: bad header value: "), err
    assert "\x1b" not in err and len(err.splitlines()) == 1
    assert not target.exists()
