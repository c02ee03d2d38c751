"""Tests from a mutation review of ``kryt replay`` (``kryt/commands/replay.py``).

Each test kills mutants of the command the rest of the suite let live, or pins what the
docs promise of it: the header (game, series, attempt, tournament, every seat's bot and
version, the dealer), the moves table (number, seat, that seat's bot), the automatic final
cover, the result in words for a two-player game and for a classic table of 3 and 4 seats
(its loser; at the turn limit who beat whom), the forfeit line and the lines a tournament
appends to its detail, a double forfeit, a voided game; ``--verify`` and its words for each
seed chain (the tournament's seed, an extension round's, the ladder's earlier seed, no
stored commitment, a deal book), its mismatches and their exit code 1; a damaged record or
configuration; a game id, a database or a flag that is wrong.

Everything a bot controls (a version, a forfeit's detail, what it sent, a void reason) must
print literally: a version like ``[red]x[/red]`` or ``[link=...]`` is Rich markup, and
printing it as markup would hide or restyle part of it. The games are built in process with
:mod:`arena.db` from the seed chain a tournament uses (series seed from the tournament's
seed, deck from the series seed), their moves found by the rules (``replayable`` and a
seeded random classic game), so ``--verify`` passes on them unless a test damages them.
Expected texts are written out from the docs (docs/games-format.md, docs/configuration.md),
not computed by the code under test.

Faults it found, fixed: a classic table's double forfeit was worded "neither bot played";
a value given to an on/off flag (``--verify=yes``) hinted at ``kryt --help`` instead of the
command's own help (kryt/cli.py ``_command_path``).
"""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from arena.db import (
    Database,
    GamePlace,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    open_database,
    record_game,
    series_of_tournament,
    submit,
    void_game,
)
from arena.tournament.config import IMPORTED_KEY
from arena.tournament.ladder import EARLIER_MASTERS_KEY, LADDER_KEY, ladder_series_seed
from arena.tournament.origin import IMPORTED_ORIGINS_KEY, SeriesOrigin
from arena.tournament.runner import series_seed
from arena.tournament.seeds import commitment
from arena.tournament.table_runner import table_series_seed
from arena.tournament.tracebacks import HEAD
from kryt.commands import replay as replay_module
from kryt.commands.replay import detail_parts
from kryt.errors import ExitCode
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import ClassicGame
from referee.series import game_deck
from tests.cli.helpers import kryt
from tests.db.helpers import new_submission, replayable

SEED = 424242
"""The tournaments' seed (each stores its commitment unless a test says otherwise)."""
ROUND_SEED = 777_001
"""The seed of the one ``kryt tournament extend`` round."""
EARLIER_SEED = 31_337
"""The ladder's earlier seed (no commitment was published for it)."""

A_VERSION = "[red]x[/red]"
"""alpha's version: Rich markup (``arena.db.submit`` takes any text as a version)."""
B_VERSION = "[link=https://e.vil]y[/link]"
C_VERSION = "[bold]c[/bold]"
D_VERSION = "d\x1b[2J"
ALPHA, BRAVO = f"alpha {A_VERSION}", f"bravo {B_VERSION}"
CHARLIE, DELTA = f"charlie {C_VERSION}", "delta d\\x1b[2J"
"""The bots as every surface names them (name, a space, the version; controls escaped)."""

DETAIL = (
    "boom [blink]here[/blink] at bot.py:3\r\x1b[2J"
    f"\n{HEAD}\n  File [i]x[/i]\nits process: crashed [b]hard[/b]\nlast output:\n"
    "[yellow]fake result: alpha wins[/yellow]\n\x1b]0;title\x07"
)
"""A crash's detail: the bot's own message (markup, ``\\r``, ESC), then the traceback and
what the tournament appended (markup, OSC)."""
SENT = "[red]take[/red]\x1b[5m"
ODD_ACTION = "[red]lead[/red] [link=https://e.vil]6C[/link]"
"""An action no rules engine checked (a voided game stores what was sent)."""
VOID_REASON = "sandbox [green]fault[/green] \x1b[1m"
DOUBLE_DETAIL = "seat 0: [b]no start[/b]; seat 1: gone\x1b[1A"
TABLE_DOUBLE = "no bot could start: seat 0: [b]x[/b]; seat 1: y; seat 2: z"
"""A table's double forfeit detail, as ``referee.table`` words it."""
BOOK = [
    " ".join(str(c) for c in game_deck("book-1", 1)),
    " ".join(str(c) for c in game_deck("book-2", 1)),
]
"""A deal book of two decks (docs/games-format.md: "the deck the tournament's deal book (N
decks) gives for this game")."""

CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""Raw control characters that must never reach the terminal (tab and newline are layout)."""


@dataclass
class World:
    """One SQLite file and the ids of the games each test reads."""

    path: Path
    games: dict[str, int] = field(default_factory=dict)
    series_seeds: dict[str, int] = field(default_factory=dict)

    @property
    def db(self) -> str:
        return str(self.path)


def _deck(seed: int, number: int) -> tuple[str, ...]:
    return tuple(str(c) for c in game_deck(seed, number))


def _default_record(seed: int, number: int, **fields: object) -> GameRecord:
    """A two-player game dealt as game ``number`` of the series seeded ``seed``: by default
    won by seat 0 going out; ``fields`` override (ending, winner, forfeit...)."""
    values: dict[str, object] = {
        "deck": _deck(seed, number),
        "dealer": 0,
        "turn_limit": 500,
        "moves": (),
        "ending": GameEndReason.OUT,
        "winner": 0,
        "referee_version": "0.1.0",
        "started": 1.7e9 + number,
        "finished": 1.7e9 + number + 1,
    }
    return replayable(GameRecord(**(values | fields)))  # type: ignore[arg-type]


def _table_record(seed: int, seats: int, *, turn_limit: int = 1000, rng: int = 1) -> GameRecord:
    """A classic table game of ``seats`` seats dealt from the series seeded ``seed``, played
    to its end by seeded random legal moves."""
    deck = [str(c) for c in game_deck(seed, 1)]
    game = ClassicGame.from_deck(deck, 0, players=seats, turn_limit=turn_limit)
    choose = random.Random(rng)
    moves = []
    while not game.over:
        seat = game.to_move
        assert seat is not None
        action = choose.choice(list(game.legal_actions()))
        game.play(action)
        moves.append(Move(seat, str(action), 0.01))
    assert game.reason is not None
    return GameRecord(
        deck=tuple(deck), dealer=0, turn_limit=turn_limit, moves=tuple(moves),
        ending=GameEndReason.from_rules(game.reason), winner=None, referee_version="0.1.0",
        started=1.7e9, finished=1.7e9 + 1, ruleset="classic", seats=seats,
        players=tuple("abcd"[:seats]), loser=game.loser, pairwise=game.pairwise_results(),
    )  # fmt: skip


def _turn_limit_table(seed: int) -> GameRecord:
    """A 4-seat table game that reached its turn limit with a seat out and others still
    holding cards: its result is pairwise, "X beats Y"."""
    for limit in range(20, 200, 4):
        for rng in range(8):
            record = _table_record(seed, 4, turn_limit=limit, rng=rng)
            if record.ending is GameEndReason.TURN_LIMIT and record.pairwise:
                return record
    raise AssertionError("no turn-limit table game found")


def _tournament(
    database: Database, name: str, config: dict[str, object], specs: list[SeriesSpec]
) -> list[int]:
    with database.session() as s:
        t = create_tournament(
            TournamentSpec(name=name, seed=SEED, config=config, series=specs), session=s
        )
        assert t.id is not None
        ids = [row.id for row in series_of_tournament(t.id, session=s)]
    assert all(i is not None for i in ids)
    return [i for i in ids if i is not None]


def _record(database: Database, record: GameRecord, place: GamePlace) -> int:
    with database.session() as s:
        game = record_game(record, place, session=s).game
    assert game.id is not None
    return game.id


def _build(path: Path) -> World:
    world = World(path)
    database = open_database(f"sqlite:///{path}")
    try:
        with database.session() as s:
            subs = [
                submit(new_submission(name, version), session=s).submission.id
                for name, version in (
                    ("alpha", A_VERSION), ("bravo", B_VERSION),
                    ("charlie", C_VERSION), ("delta", D_VERSION),
                )
            ]  # fmt: skip
        a, b, c, d = (int(i) for i in subs if i is not None)
        committed = {"games": 6, "seed_commitment": commitment(SEED)}

        # Tournament "cup": one series alpha-bravo, six games, committed seed.
        ss = series_seed(SEED, a, b)
        world.series_seeds["cup"] = ss
        (cup,) = _tournament(database, "cup", committed, [SeriesSpec(a, b, 6, ss)])
        world.games["won"] = _record(database, _default_record(ss, 1), GamePlace(cup, 1, 1, (a, b)))
        # bravo at seat 0, alpha at seat 1 wins.
        world.games["swapped"] = _record(
            database, _default_record(ss, 2, winner=1), GamePlace(cup, 2, 1, (b, a))
        )
        crash = Forfeit(1, GameEndReason.CRASH, SENT, DETAIL)
        world.games["forfeit"] = _record(
            database,
            _default_record(ss, 3, ending=GameEndReason.CRASH, forfeit=crash),
            GamePlace(cup, 3, 1, (a, b)),
        )
        world.games["final"] = _record(
            database,
            _default_record(
                ss, 4, ending=GameEndReason.DRAW_BY_FINAL_ANSWER, winner=None, final_cover="6C"
            ),
            GamePlace(cup, 4, 1, (a, b)),
        )
        double = GameRecord(
            deck=_deck(ss, 5), dealer=0, turn_limit=500, moves=(),
            ending=GameEndReason.DOUBLE_FORFEIT, winner=None, double_forfeit_detail=DOUBLE_DETAIL,
            referee_version="0.1.0", started=1.7e9, finished=1.7e9 + 1,
        )  # fmt: skip
        world.games["double"] = _record(database, double, GamePlace(cup, 5, 1, (a, b)))
        world.games["voided"] = _record(
            database, _default_record(ss, 6, winner=1), GamePlace(cup, 6, 1, (a, b))
        )
        with database.session() as s:
            void_game(world.games["voided"], VOID_REASON, session=s)
        # Its replay: attempt 2 of game 6.
        world.games["attempt 2"] = _record(
            database, _default_record(ss, 6), GamePlace(cup, 6, 2, (a, b))
        )

        # "odd": a voided game keeps what was sent, checked or not (an action of markup).
        (odd,) = _tournament(database, "odd", committed, [SeriesSpec(a, b, 1, ss)])
        unchecked = GameRecord(
            deck=_deck(ss, 1), dealer=0, turn_limit=500, moves=(Move(1, ODD_ACTION, 0.1),),
            ending=GameEndReason.VOID, winner=None, void_reason="ours",
            referee_version="0.1.0", started=1.7e9, finished=1.7e9 + 1,
        )  # fmt: skip
        world.games["odd action"] = _record(database, unchecked, GamePlace(odd, 1, 1, (a, b)))

        # "open": no stored commitment; "forged": a commitment that is another seed's.
        (plain,) = _tournament(database, "open", {"games": 1}, [SeriesSpec(a, b, 1, ss)])
        world.games["uncommitted"] = _record(
            database, _default_record(ss, 1), GamePlace(plain, 1, 1, (a, b))
        )
        forged_config = {"games": 1, "seed_commitment": commitment(SEED + 1)}
        (forged,) = _tournament(database, "forged", forged_config, [SeriesSpec(a, b, 1, ss)])
        world.games["forged"] = _record(
            database, _default_record(ss, 1), GamePlace(forged, 1, 1, (a, b))
        )
        # A series whose stored seed is not the one the tournament's seed gives.
        (skewed,) = _tournament(database, "skewed", committed, [SeriesSpec(a, b, 1, ss + 1)])
        world.games["skewed"] = _record(
            database, _default_record(ss + 1, 1), GamePlace(skewed, 1, 1, (a, b))
        )
        # A game dealt as another game of its series (game 2's deck at number 1).
        (other,) = _tournament(database, "other", committed, [SeriesSpec(a, b, 2, ss)])
        world.games["wrong deal"] = _record(
            database, _default_record(ss, 2), GamePlace(other, 1, 1, (a, b))
        )

        # "extended": series 0 from the tournament's seed, series 1 from a round's seed.
        rs = series_seed(ROUND_SEED, a, b)
        round_ = {
            "games": 1, "first_position": 1, "seed": ROUND_SEED,
            "seed_commitment": commitment(ROUND_SEED),
        }  # fmt: skip
        first, second = _tournament(
            database,
            "extended",
            {**committed, "extensions": [round_]},
            [SeriesSpec(a, b, 1, ss), SeriesSpec(a, b, 1, rs)],
        )
        world.games["before round"] = _record(
            database, _default_record(ss, 1), GamePlace(first, 1, 1, (a, b))
        )
        world.games["round"] = _record(
            database, _default_record(rs, 1), GamePlace(second, 1, 1, (a, b))
        )
        # "broken": a stored configuration whose extensions are no list.
        (broken,) = _tournament(
            database,
            "broken",
            {**committed, "extensions": "[red]x[/red]"},
            [SeriesSpec(a, b, 1, ss)],
        )
        world.games["broken config"] = _record(
            database, _default_record(ss, 1), GamePlace(broken, 1, 1, (a, b))
        )

        # The ladder: series 0 from its earlier seed (no commitment), series 1 from its own.
        ladder = {
            LADDER_KEY: True,
            "seed_commitment": commitment(SEED),
            EARLIER_MASTERS_KEY: [{"seed": EARLIER_SEED, "before_position": 1}],
        }
        old, new = ladder_series_seed(EARLIER_SEED, 0, a, b), ladder_series_seed(SEED, 1, a, b)
        early, late = _tournament(
            database, "ladder", ladder, [SeriesSpec(a, b, 1, old), SeriesSpec(a, b, 1, new)]
        )
        world.games["ladder early"] = _record(
            database, _default_record(old, 1), GamePlace(early, 1, 1, (a, b))
        )
        world.games["ladder late"] = _record(
            database, _default_record(new, 1), GamePlace(late, 1, 1, (a, b))
        )

        # "book": deals from a book of two decks; game 2 deals the book's second deck.
        (booked,) = _tournament(
            database, "book", {**committed, "book": BOOK}, [SeriesSpec(a, b, 2, ss)]
        )
        book_game = replayable(
            GameRecord(
                deck=tuple(BOOK[1].split()), dealer=0, turn_limit=500, moves=(),
                ending=GameEndReason.OUT, winner=0, referee_version="0.1.0",
                started=1.7e9, finished=1.7e9 + 1,
            )
        )  # fmt: skip
        world.games["book"] = _record(database, book_game, GamePlace(booked, 2, 1, (a, b)))

        # "imported": a game file's deal-book tournament (its 3 decks stayed in the database
        # the file came from); its series seed derives from the seed and the ids it names.
        origin = SeriesOrigin((11, 12), None, 3).to_json()
        imported = {**committed, IMPORTED_KEY: True, IMPORTED_ORIGINS_KEY: {"0": origin}}
        (outside,) = _tournament(
            database, "imported", imported, [SeriesSpec(a, b, 1, series_seed(SEED, 11, 12))]
        )
        world.games["imported book"] = _record(
            database, book_game, GamePlace(outside, 1, 1, (a, b))
        )

        # Classic tables: 3 seats played out (a loser), 4 seats stopped by the turn limit.
        seats3, seats4 = (a, b, c), (a, b, c, d)
        t3, t4 = table_series_seed(SEED, seats3), table_series_seed(SEED, seats4)
        table_config = {"games": 1, "ruleset": "classic", "seed_commitment": commitment(SEED)}
        three, four, crashed, nobody = _tournament(
            database,
            "tables",
            table_config,
            [
                SeriesSpec(a, b, 1, t3, ruleset="classic", seats=seats3),
                SeriesSpec(a, b, 1, t4, ruleset="classic", seats=seats4),
                SeriesSpec(a, b, 1, t4, ruleset="classic", seats=seats4),
                SeriesSpec(a, b, 1, t3, ruleset="classic", seats=seats3),
            ],
        )
        world.series_seeds["table3"] = t3
        world.games["table3"] = _record(
            database, _table_record(t3, 3), GamePlace(three, 1, 1, seats3)
        )
        world.games["table4"] = _record(
            database, _turn_limit_table(t4), GamePlace(four, 1, 1, seats4)
        )
        # Seat 2 (charlie) crashed before its first move at a table of four.
        table_crash = GameRecord(
            deck=_deck(t4, 1), dealer=0, turn_limit=1000, moves=(),
            ending=GameEndReason.CRASH, winner=None,
            forfeit=Forfeit(2, GameEndReason.CRASH, SENT, DETAIL), referee_version="0.1.0",
            started=1.7e9, finished=1.7e9 + 1, ruleset="classic", seats=4,
            players=("a", "b", "c", "d"), loser=2, pairwise=((0, 2), (1, 2), (3, 2)),
        )  # fmt: skip
        world.games["table crash"] = _record(
            database, table_crash, GamePlace(crashed, 1, 1, seats4)
        )
        # No bot of a table of three could start (referee.table: a double forfeit).
        unplayed = GameRecord(
            deck=_deck(t3, 1), dealer=0, turn_limit=1000, moves=(),
            ending=GameEndReason.DOUBLE_FORFEIT, winner=None, referee_version="0.1.0",
            started=1.7e9, finished=1.7e9 + 1, ruleset="classic", seats=3,
            players=("a", "b", "c"), double_forfeit_detail=TABLE_DOUBLE,
        )  # fmt: skip
        world.games["table nobody"] = _record(database, unplayed, GamePlace(nobody, 1, 1, seats3))
    finally:
        database.close()
    return world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """The module's database (built once: every test only reads it, or reads a copy)."""
    return _build(tmp_path_factory.mktemp("replay") / "replay.db")


@pytest.fixture
def wide() -> Iterator[None]:
    """``kryt replay``'s console 400 columns wide, so no line of it wraps (the width is the
    only setting changed: colours, markup and highlighting stay as the command has them)."""
    console = replay_module.out
    before = console._width  # None: the console's own width
    console.width = 400
    try:
        yield
    finally:
        console._width = before


def _copy(world: World, tmp_path: Path) -> Path:
    """A copy of the world's database a test may damage."""
    copy = tmp_path / "copy.db"
    with sqlite3.connect(world.path) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    source.close()
    target.close()
    return copy


def replay(
    capsys: pytest.CaptureFixture[str], world: World, game: str, *flags: str
) -> tuple[int, str, str]:
    """``kryt replay ID [FLAGS] -d DB`` of the world's game named ``game``."""
    return kryt(capsys, "replay", str(world.games[game]), *flags, "-d", world.db)


def moves_of(out: str) -> list[list[str]]:
    """The rows of the moves table: its cells, stripped."""
    return [
        [cell.strip() for cell in line.split("│")]
        for line in out.splitlines()
        if re.match(r"\s*\d*\s*│", line)
    ]


# --------------------------------------------------------------------------- the header


@pytest.mark.usefixtures("wide")
def test_the_header_names_the_game_its_place_every_seat_and_the_dealer(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """Mutants: ``series``/``game`` swapped or the attempt dropped in the first line, seats
    numbered from 1, the seats of a row without a ``seats`` list swapped, the version left
    out of a name, the dealer shown as another seat, the deck not space-separated."""
    code, out, err = replay(capsys, world, "swapped")
    assert code == ExitCode.OK, err
    lines = out.splitlines()
    game_id = world.games["swapped"]
    assert lines[0] == f"Game {game_id}: series 1 game 2 (attempt 1), tournament 1"
    assert lines[1] == f"seat 0: {BRAVO}    seat 1: {ALPHA}    dealer: seat 0"
    assert re.fullmatch(r"trump [♠♣♥♦] \(face up [6-9TJQKA][CDHS]\)    referee 0\.1\.0", lines[2])
    deck = " ".join(_deck(world.series_seeds["cup"], 2))
    assert lines[3] == f"deck: {deck}"
    with sqlite3.connect(world.path) as conn:
        series, number, tournament = conn.execute(
            "select g.series_id, g.number, s.tournament_id from games g"
            " join series s on s.id = g.series_id where g.id = ?",
            (world.games["round"],),
        ).fetchone()
    conn.close()
    assert series != tournament
    code, out, err = replay(capsys, world, "round")
    assert code == ExitCode.OK, err
    assert out.splitlines()[0] == (
        f"Game {world.games['round']}: series {series} game {number} (attempt 1),"
        f" tournament {tournament}"
    )
    code, out, err = replay(capsys, world, "attempt 2")
    assert code == ExitCode.OK, err
    again = world.games["attempt 2"]
    assert out.splitlines()[0] == f"Game {again}: series 1 game 6 (attempt 2), tournament 1"
    # rules.md: index 6 is turned face up; its suit is trump.
    face_up = deck.split()[6]
    assert f"(face up {face_up})" in lines[2]
    assert "trump " + {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}[face_up[1]] in lines[2]


@pytest.mark.usefixtures("wide")
def test_a_table_game_names_every_seat_and_credits_each_move_to_its_seats_bot(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """Mutants: a table row read as its first two seats (a third seat's move then has no
    name), a move credited to seat 0's bot, the seat column or the move numbers off by one,
    the seconds to another precision."""
    code, out, err = replay(capsys, world, "table3")
    assert code == ExitCode.OK, err
    assert f"seat 0: {ALPHA}    seat 1: {BRAVO}    seat 2: {CHARLIE}    dealer: seat 0" in out
    names = {"0": ALPHA, "1": BRAVO, "2": CHARLIE}
    rows = moves_of(out)
    assert rows, out
    assert [row[0] for row in rows] == [str(n) for n in range(1, len(rows) + 1)]
    # Seat 0 deals: seat 1 leads first, to seat 2 (rules-classic.md).
    assert rows[0][1:3] == ["1", BRAVO], rows[0]
    for row in rows:
        assert row[2] == names[row[1]], row
        assert row[4] == "0.010", row
    assert {row[1] for row in rows} == {"0", "1", "2"}


# --------------------------------------------------------------------------- the result


@pytest.mark.usefixtures("wide")
@pytest.mark.parametrize(
    ("game", "result"),
    [
        ("won", f"result: {ALPHA} wins by out"),
        ("swapped", f"result: {ALPHA} wins by out"),  # alpha at seat 1
        ("final", "result: draw by draw by final answer"),
        ("double", "result: draw by double forfeit"),
        ("voided", "result: none (voided) by void"),
        ("table3", f"result: {BRAVO} loses by last holder"),
        ("table crash", f"result: {CHARLIE} loses by crash"),
        ("table nobody", "result: draw by double forfeit"),
    ],
)
def test_the_result_line_in_words(
    capsys: pytest.CaptureFixture[str], world: World, game: str, result: str
) -> None:
    """Mutants: winner or seats swapped, a draw or a void worded otherwise, a table's loser
    not named or its result read as the two-player game's, the ending dropped; and every
    bot's version printed as markup instead of literally."""
    code, out, err = replay(capsys, world, game)
    assert code == ExitCode.OK, err
    (line,) = [line for line in out.splitlines() if line.startswith("result: ")]
    if game == "table3":  # the loser of a random game: whoever it is, named with its version
        loser = world_loser(world, "table3")
        result = f"result: {[ALPHA, BRAVO, CHARLIE][loser]} loses by last holder"
    assert line == result


def world_loser(world: World, game: str) -> int:
    """The stored loser seat of a table game (read with SQL, not by the code under test)."""
    with sqlite3.connect(world.path) as conn:
        (loser,) = conn.execute(
            "select loser_seat from games where id = ?", (world.games[game],)
        ).fetchone()
    conn.close()
    return int(loser)


@pytest.mark.usefixtures("wide")
def test_a_table_at_its_turn_limit_says_who_beat_whom(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """Mutants: the pairwise results dropped ("draw"), winner and loser swapped in them,
    another separator; rules-classic.md: each seat out beats each seat still holding."""
    with sqlite3.connect(world.path) as conn:
        (pairwise,) = conn.execute(
            "select pairwise from games where id = ?", (world.games["table4"],)
        ).fetchone()
    conn.close()
    names = [ALPHA, BRAVO, CHARLIE, DELTA]
    pairs = re.findall(r"\[(\d), (\d)\]", pairwise)
    assert pairs
    expected = "; ".join(f"{names[int(w)]} beats {names[int(x)]}" for w, x in pairs)
    code, out, err = replay(capsys, world, "table4")
    assert code == ExitCode.OK, err
    assert f"result: {expected} by turn limit" in out.splitlines()
    assert not CONTROLS.search(out), repr(out)


@pytest.mark.usefixtures("wide")
def test_the_automatic_final_cover_is_its_own_row_by_the_defender(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """Mutants: the final cover's row dropped, credited to the seat that made the last move,
    or worded otherwise."""
    code, out, err = replay(capsys, world, "final")
    assert code == ExitCode.OK, err
    rows = moves_of(out)
    *played, last = rows
    assert played and played[-1][0].isdigit()
    defender = "1" if played[-1][1] == "0" else "0"
    assert last[0] == "" and last[1] == defender
    assert last[2] == (ALPHA if defender == "0" else BRAVO)
    assert re.fullmatch(r"cover [6-9TJQKA][CDHS] \(automatic final answer\)", last[3]), last


# --------------------------------------------------------------------------- forfeits, voids


@pytest.mark.usefixtures("wide")
def test_a_forfeit_prints_its_detail_what_was_sent_and_the_appended_lines_literally(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """Mutants: the forfeit's seat or name swapped, the detail's first part raw or as
    markup, what the bot sent shown by ``str`` instead of ``repr``, the appended lines not
    shown, shown as one line, without their ``│`` mark, or as markup."""
    code, out, err = replay(capsys, world, "forfeit")
    assert code == ExitCode.OK, err
    assert not CONTROLS.search(out), repr(out)
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("forfeit by "))
    assert lines[at] == (
        f"forfeit by seat 1 ({BRAVO}): crash: boom [blink]here[/blink] at bot.py:3\\x0d\\x1b[2J;"
        " sent: '[red]take[/red]\\x1b[5m'"
    )
    assert lines[at + 1 :] == [
        f"  │ {HEAD}",
        "  │   File [i]x[/i]",
        "  │ its process: crashed [b]hard[/b]",
        "  │ last output:",
        "  │ [yellow]fake result: alpha wins[/yellow]",
        "  │ \\x1b]0;title\\x07",
    ]


@pytest.mark.usefixtures("wide")
def test_a_table_forfeit_names_the_seat_that_forfeited(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """Mutant: the forfeit line read as a two-player game's (``1 - seat``) at a table."""
    code, out, err = replay(capsys, world, "table crash")
    assert code == ExitCode.OK, err
    assert f"forfeit by seat 2 ({CHARLIE}): crash: boom [blink]here[/blink]" in out


def test_appended_lines_longer_than_the_terminal_keep_their_mark(
    capsys: pytest.CaptureFixture[str], world: World, tmp_path: Path
) -> None:
    """Mutant: the appended lines printed without ``soft_wrap``: at the console's 80
    columns Rich wraps a long output line onto a new line without its ``│`` mark, so it
    reads as ours."""
    path = tmp_path / "long.db"
    database = open_database(f"sqlite:///{path}")
    try:
        with database.session() as s:
            a = submit(new_submission("alpha"), session=s).submission.id
            b = submit(new_submission("bravo"), session=s).submission.id
        assert a is not None and b is not None
        ss = series_seed(SEED, a, b)
        (series,) = _tournament(database, "cup", {"games": 1}, [SeriesSpec(a, b, 1, ss)])
        long_line = " ".join(["word"] * 60)
        crash = Forfeit(
            0, GameEndReason.CRASH, "", f"boom\nits process: crashed\nlast output:\n{long_line}"
        )
        game = _record(
            database,
            _default_record(ss, 1, ending=GameEndReason.CRASH, winner=1, forfeit=crash),
            GamePlace(series, 1, 1, (a, b)),
        )
    finally:
        database.close()
    code, out, err = kryt(capsys, "replay", str(game), "-d", str(path))
    assert code == ExitCode.OK, err
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("forfeit by "))
    assert lines[at + 1 :] == ["  │ its process: crashed", "  │ last output:", f"  │ {long_line}"]


@pytest.mark.usefixtures("wide")
def test_a_double_forfeit_and_a_void_print_their_reasons_literally(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """Mutants: the double forfeit's detail or the void reason dropped, raw, or as markup;
    the lines shown for a game that has neither."""
    code, out, err = replay(capsys, world, "double")
    assert code == ExitCode.OK, err
    assert "neither bot played: seat 0: [b]no start[/b]; seat 1: gone\\x1b[1A" in out.splitlines()
    assert "voided" not in out and "forfeit by" not in out
    code, out, err = replay(capsys, world, "voided")
    assert code == ExitCode.OK, err
    assert "voided: sandbox [green]fault[/green] \\x1b[1m" in out.splitlines()
    assert "neither bot played" not in out and "forfeit by" not in out
    code, out, err = replay(capsys, world, "won")
    assert code == ExitCode.OK, err
    assert not re.search(r"voided|neither bot played|forfeit by|│ \S*$", out)


@pytest.mark.usefixtures("wide")
def test_a_tables_double_forfeit_prints_its_detail_literally(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """A table where no bot could start: its detail (each seat's failure) printed as text."""
    code, out, err = replay(capsys, world, "table nobody")
    assert code == ExitCode.OK, err
    assert any(line.endswith(f": {TABLE_DOUBLE}") for line in out.splitlines()), out


@pytest.mark.usefixtures("wide")
def test_a_tables_double_forfeit_is_not_worded_for_two_bots(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    code, out, err = replay(capsys, world, "table nobody")
    assert code == ExitCode.OK, err
    assert "neither bot" not in out, out
    assert "no bot played: " in out, out


@pytest.mark.usefixtures("wide")
def test_an_unchecked_action_prints_literally_and_verify_names_it(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """Mutants: the action cell given to the table as a string (Rich markup), the
    mismatch printed as markup."""
    code, out, err = replay(capsys, world, "odd action")
    assert code == ExitCode.OK, err
    assert moves_of(out) == [["1", "1", BRAVO, ODD_ACTION, "0.100"]]
    code, out, _ = replay(capsys, world, "odd action", "--verify")
    assert code == ExitCode.FAILED
    (problem,) = [line for line in out.splitlines() if line.startswith("mismatch")]
    assert problem.startswith(f"mismatch: move 1: malformed action {ODD_ACTION!r} (expected ")


# --------------------------------------------------------------------------- --verify


@pytest.mark.usefixtures("wide")
def test_without_verify_nothing_is_checked(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """Mutants: ``--verify`` ignored (the check always runs, or never does): a plain replay
    of a game whose seed is not the committed one shows the game and exits 0."""
    code, out, err = replay(capsys, world, "forged")
    assert code == ExitCode.OK, err
    assert "verified" not in out and "mismatch" not in out
    assert out.splitlines()[-1].startswith("result: ")


@pytest.mark.usefixtures("wide")
@pytest.mark.parametrize(
    ("game", "said"),
    [
        (
            "won",
            "verified: the deal follows from the tournament's seed, which matches its"
            f" published commitment ({commitment(SEED)[:16]}...)",
        ),
        (
            "before round",
            "verified: the deal follows from the tournament's seed, which matches its"
            f" published commitment ({commitment(SEED)[:16]}...)",
        ),
        (
            "round",
            "verified: the deal follows from the tournament's seed for its extension round,"
            f" which matches its published commitment ({commitment(ROUND_SEED)[:16]}...)",
        ),
        (
            "uncommitted",
            "verified: the deal follows from the tournament's seed; it has no stored commitment"
            " (a tournament stored before commitments were, or imported from a game file"
            " without them): that it was fixed before the games is not checked",
        ),
        (
            "ladder early",
            "verified: the deal follows from the ladder's earlier seed; it has no stored"
            " commitment (a tournament stored before commitments were, or imported from a game"
            " file without them): that it was fixed before the games is not checked",
        ),
        (
            "ladder late",
            "verified: the deal follows from the tournament's seed, which matches its"
            f" published commitment ({commitment(SEED)[:16]}...)",
        ),
        (
            "book",
            "verified: the deal is the deck the tournament's deal book (2 decks) gives for this"
            " game; the series seed follows from the tournament's seed, which matches its"
            f" published commitment ({commitment(SEED)[:16]}...)",
        ),
        (
            "imported book",
            "verified: the series seed follows from the tournament's seed, which matches its"
            f" published commitment ({commitment(SEED)[:16]}...); the deal is a deck of the"
            " tournament's deal book (3 decks), which stayed in the database the game was"
            " exported from: not checked",
        ),
        (
            "table3",
            "verified: the deal follows from the tournament's seed, which matches its"
            f" published commitment ({commitment(SEED)[:16]}...)",
        ),
        (
            "voided",
            "verified: the deal follows from the tournament's seed, which matches its"
            f" published commitment ({commitment(SEED)[:16]}...)",
        ),
    ],
)
def test_verify_says_which_seed_and_whether_it_matches_its_commitment(
    capsys: pytest.CaptureFixture[str], world: World, game: str, said: str
) -> None:
    """docs/games-format.md's words for each seed chain. Mutants: whose seed inverted or
    misnamed (the ladder's earlier seed, an extension round's), the commitment check
    inverted or skipped, the stored commitment's 16 characters shortened, the book's
    words or count, the verified lines printed for a game that fails, or not at all; a
    voided game (no result) said to reproduce its stored result."""
    code, out, err = replay(capsys, world, game, "--verify")
    assert code == ExitCode.OK, out + err
    lines = out.splitlines()
    replayed = (
        "verified: every stored move is legal by the rules engine; the game was voided, so it"
        " has no result to reproduce"
        if game == "voided"
        else "verified: the rules engine reproduces the stored result"
    )
    assert lines[-2:] == [replayed, said]
    assert "mismatch" not in out


@pytest.mark.usefixtures("wide")
@pytest.mark.parametrize(
    ("game", "problem"),
    [
        (
            "forged",
            "mismatch: the tournament's seed does not match the commitment published before the"
            f" games (stored {commitment(SEED + 1)[:16]!r}..., the seed gives"
            f" {commitment(SEED)[:16]}...)",
        ),
        ("wrong deal", "mismatch: the deal is not the one the series seed gives for this game"),
    ],
)
def test_verify_names_one_mismatch_and_exits_1(
    capsys: pytest.CaptureFixture[str], world: World, game: str, problem: str
) -> None:
    """docs/configuration.md: exit 1, "the command ran but found problems (... replay
    mismatch)". Mutants: the problems list losing the commitment's or the deal's, the
    commitment reported twice (once more by the deal check), the exit code 0 or 2, the
    verified lines printed after a mismatch."""
    code, out, _ = replay(capsys, world, game, "--verify")
    assert code == ExitCode.FAILED
    assert [line for line in out.splitlines() if "mismatch" in line] == [problem]
    assert "verified" not in out


@pytest.mark.usefixtures("wide")
def test_verify_notices_a_series_seed_the_tournament_seed_does_not_give(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """Mutant: the stored series seed not compared with the one the chain gives (the deal
    then follows from whatever series seed is stored)."""
    code, out, _ = replay(capsys, world, "skewed", "--verify")
    assert code == ExitCode.FAILED
    ss = world.series_seeds["cup"]
    assert [line for line in out.splitlines() if "mismatch" in line] == [
        f"mismatch: the series seed {ss + 1} is not the one the tournament seed gives ({ss})"
    ]


@pytest.mark.usefixtures("wide")
def test_verify_notices_an_edited_result_and_prints_the_rules_problem(
    capsys: pytest.CaptureFixture[str], world: World, tmp_path: Path
) -> None:
    """Mutants: the rules engine's problems left out of the list; ``if not problems``
    inverted; the final exit dropped."""
    db = _copy(world, tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("update games set result = 'seat1' where id = ?", (world.games["won"],))
    conn.close()
    code, out, err = kryt(capsys, "replay", str(world.games["won"]), "--verify", "-d", str(db))
    assert code == ExitCode.FAILED, err
    assert f"result: {BRAVO} wins by out" in out.splitlines()
    assert "mismatch: replay gives winner 0, the record 1" in out.splitlines()
    assert "verified" not in out
    # Every problem, each on its line: the rules', then the commitment's.
    forged = world.games["forged"]
    with sqlite3.connect(db) as conn:
        conn.execute("update games set result = 'seat1' where id = ?", (forged,))
    conn.close()
    code, out, err = kryt(capsys, "replay", str(forged), "--verify", "-d", str(db))
    assert code == ExitCode.FAILED, err
    assert [line for line in out.splitlines() if line.startswith("mismatch")] == [
        "mismatch: replay gives winner 0, the record 1",
        "mismatch: the tournament's seed does not match the commitment published before the"
        f" games (stored {commitment(SEED + 1)[:16]!r}..., the seed gives"
        f" {commitment(SEED)[:16]}...)",
    ]


@pytest.mark.usefixtures("wide")
def test_verify_of_a_game_without_time_controls_says_nothing_of_a_clock(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """docs/games-format.md: a game recorded without time controls "has no clock to check
    its times against". Mutant: "and every move fits its seat's clock" said without one."""
    code, out, _ = replay(capsys, world, "won", "--verify")
    assert code == ExitCode.OK
    assert "clock" not in out


# --------------------------------------------------------------------------- damaged data


@pytest.mark.usefixtures("wide")
@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        ("result", "seat1", "seat 1 forfeited, so seat 0 wins, not 1"),
        (
            "end_reason",
            "[red]x[/red]\x1b[2J",
            "'[red]x[/red]\\x1b[2J' is not a valid GameEndReason",
        ),
    ],
)
def test_a_record_stored_inconsistently_is_one_mismatch_line_and_exit_1(
    capsys: pytest.CaptureFixture[str],
    world: World,
    tmp_path: Path,
    column: str,
    value: str,
    said: str,
) -> None:
    """docs/leaderboard.md: "game N is stored inconsistently: ..." (the words of ``kryt
    replay``). Mutants: another exit code, another word, the message (which quotes what
    the edited row holds) as markup, no message (a traceback)."""
    db = _copy(world, tmp_path)
    game = world.games["forfeit"]
    with sqlite3.connect(db) as conn:
        conn.execute(f"update games set {column} = ? where id = ?", (value, game))
    conn.close()
    for flags in ((), ("--verify",)):
        code, out, err = kryt(capsys, "replay", str(game), *flags, "-d", str(db))
        assert code == ExitCode.FAILED, err
        assert out.splitlines() == [f"mismatch: game {game} is stored inconsistently: {said}"]
        assert "Traceback" not in err


@pytest.mark.usefixtures("wide")
def test_a_damaged_configuration_is_one_mismatch_line_printed_literally(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """Mutants: another exit code or word; the stored text (which an edited database
    controls) printed as markup."""
    for flags in ((), ("--verify",)):
        code, out, err = replay(capsys, world, "broken config", *flags)
        assert code == ExitCode.FAILED, err
        assert out.splitlines() == [
            "mismatch: the stored extensions must be a list, got '[red]x[/red]'"
        ]


# --------------------------------------------------------------------------- wrong input


def test_a_game_id_not_stored_is_named_exit_2(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    code, out, err = kryt(capsys, "replay", "999999", "-d", world.db)
    assert code == ExitCode.BAD_INPUT and not out
    assert err.splitlines() == ["error: no game with id 999999"]


def test_a_database_that_does_not_exist_is_not_created_exit_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Mutant: the database opened with ``create=True`` (an empty file is left behind and
    the error says the game is missing, exit 2)."""
    missing = tmp_path / "none.db"
    code, out, err = kryt(capsys, "replay", "1", "-d", str(missing))
    assert code == ExitCode.UNAVAILABLE and not out
    assert err.startswith(f"error: no database at {missing}")
    assert not missing.exists()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("replay", "0"), "error: Invalid value for 'game_id': "),
        (("replay", str(2**31)), "error: Invalid value for 'game_id': "),
        (("replay", "1", "--verfy"), "error: No such option: --verfy"),
        (("replay",), "error: Missing argument 'game_id'"),
        (("replay", "1", "2"), "error: Got unexpected extra argument"),
    ],
)
def test_bad_arguments_are_usage_errors_that_open_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: tuple[str, ...], error: str
) -> None:
    """Mutants: the id's bounds (1 to 2^31-1) moved."""
    missing = tmp_path / "none.db"
    code, out, err = kryt(capsys, *args, "-d", str(missing))
    assert code == ExitCode.BAD_INPUT and not out
    first, hint = err.splitlines()
    assert first.startswith(error), err
    assert hint == "hint: see kryt replay --help"
    assert not missing.exists()


def test_the_largest_id_is_looked_up(capsys: pytest.CaptureFixture[str], world: World) -> None:
    """The upper bound itself is an id (not found here), not a usage error."""
    code, _, err = kryt(capsys, "replay", str(2**31 - 1), "-d", world.db)
    assert code == ExitCode.BAD_INPUT
    assert err.splitlines() == [f"error: no game with id {2**31 - 1}"]


def test_a_value_given_to_verify_hints_at_replays_help(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = kryt(capsys, "replay", "1", "--verify=yes", "-d", str(tmp_path / "n.db"))
    assert code == ExitCode.BAD_INPUT and not out
    assert err.splitlines() == [
        "error: Option '--verify' does not take a value.",
        "hint: see kryt replay --help",
    ]


# --------------------------------------------------------------------------- detail_parts


@pytest.mark.parametrize(
    ("detail", "parts"),
    [
        ("plain", ("plain", "")),
        ("", ("", "")),
        (f"bad\n{HEAD}\n  line", ("bad", f"{HEAD}\n  line")),
        (f"{HEAD}\n  line", (f"{HEAD}\n  line", "")),  # no newline before: not appended
        (
            "bad\nits process: exited\nlast output:\nx",
            ("bad", "its process: exited\nlast output:\nx"),
        ),
        ("bad, last output:\nx\ny", ("bad, last output:", "x\ny")),
        ("a\nb\nits process: gone", ("a\nb", "its process: gone")),
        (
            f"bad\nits process: gone\n{HEAD}\n  x",
            ("bad", f"its process: gone\n{HEAD}\n  x"),
        ),
        (
            "b (java) did not build: status 1\n./B.java:1: error\n1 error",
            ("b (java) did not build: status 1", "./B.java:1: error\n1 error"),
        ),
        (") did not build: x", (") did not build: x", "")),
        (") did not build: x\n./B.java:1: error", (") did not build: x", "./B.java:1: error")),
        (
            ") did not build: x\nits process: y",
            (") did not build: x", "its process: y"),
        ),
    ],
)
def test_detail_parts_cuts_at_the_first_appended_part(detail: str, parts: tuple[str, str]) -> None:
    """Mutants of :func:`detail_parts`: a marker left out, the cut at the last marker
    instead of the first, a marker ending in a newline cut before it (or one starting with
    one cut after its first character), a build failure's mark found only after the start,
    the cut's newline kept on the first part."""
    assert detail_parts(detail) == parts


def test_a_value_given_to_a_nested_commands_flag_hints_at_its_help(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The same for a command of a group (``kryt games list``) and after the root's -v."""
    code, out, err = kryt(capsys, "-v", "games", "list", "--oldest=1", "-d", str(tmp_path / "n.db"))
    assert code == ExitCode.BAD_INPUT and not out
    assert err.splitlines()[-1] == "hint: see kryt games list --help", err
