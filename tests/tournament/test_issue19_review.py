"""Review of issue 19 from the outside: the organiser's and the author's daily tools.

Everything goes through ``kryt`` in a subprocess, as a user would, with a minimal
environment: the gauntlet, ``kryt tournament extend``, deal books, export and import of games
(text, JSON, CSV; hostile files), ``kryt games list`` with its filters and per-bot time
controls with an increment. What is right comes from README.md, ``--help``,
docs/configuration.md and docs/games-format.md. The bundled bots and small copies of them run
in the process sandbox (``--unsafe`` for the copies), with few games, on temporary SQLite
files. The machine is busy: timeouts are generous and no test depends on which of two
concurrent series ends first.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.kryt_subprocess import clean_env, run_kryt

ROOT = Path(__file__).resolve().parents[2]
KRYT = [sys.executable, "-m", "kryt"]
DEADLINE = 240.0
ENV = clean_env(COLUMNS="200")
PROCESS = ["--backend", "process"]
DECK1 = (
    "9D TD AC KH TS KD AH JC 7C QS 6H 8S 7D QH 9C 6S JD 8C "
    "TC 9S QC 6D KC AD 8H JS 7H 8D KS AS 9H TH JH 6C QD 7S"
)
DECK2 = (
    "7C 6D QS KD TC 8S 9H AS JD 6H KH 7D 8C TS QH AC 9S JH "
    "6S TD 8D KC QC 7H JC AD 9D 8H 6C AH QD KS TH 9C JS 7S"
)
HEX64 = re.compile(r"\b[0-9a-f]{64}\b")


# --- helpers ----------------------------------------------------------------------------


def kryt(cwd: Path, *args: str, timeout: float = DEADLINE) -> subprocess.CompletedProcess[str]:
    return run_kryt(cwd, *args, env=ENV, timeout=timeout)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.returncode, result.stdout[-3000:], result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def refused(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The one ``error:`` line of a refusal (a ``hint:`` line may follow), no traceback."""
    assert result.returncode == code, (result.returncode, result.stdout[-2000:], result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def bot_copy(folder: Path, name: str, source: str = "greedy") -> Path:
    """A copy of a bundled bot under another name (an untrusted bot: runs with --unsafe)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "sdk" / "examples" / source / "bot.py", folder / "bot.py")
    (folder / "bot.toml").write_text(
        f'name = "{name}"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    return folder


def small_bot(folder: Path, name: str, body: str) -> Path:
    """A bot whose ``act`` is ``body`` (indented by the caller's text)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bot.toml").write_text(
        f'name = "{name}"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text(
        "import json, time\n"
        "from sdk import Bot, serve\n"
        "from sdk.strategy import greedy_action\n\n\n"
        "class B(Bot):\n"
        "    moves = 0\n\n" + body + "\n\nif __name__ == '__main__':\n    serve(B())\n"
    )
    return folder


def games_of(cwd: Path, db: Path, *args: str) -> list[dict[str, Any]]:
    """The games of ``db`` as the JSON export gives them (on standard output)."""
    data = json.loads(
        ok(kryt(cwd, "games", "export", "-", "--format", "json", "-d", str(db), *args))
    )
    assert isinstance(data, list)
    return data


def listed_ids(cwd: Path, db: Path, *args: str) -> set[int]:
    """The game ids ``kryt games list`` shows."""
    out = ok(kryt(cwd, "games", "list", "-d", str(db), "-n", "1000", *args))
    return {int(m.group(1)) for m in re.finditer(r"^\s*(\d+)\s*│", out, re.MULTILINE)}


def count(db: Path, table: str) -> int:
    with sqlite3.connect(db) as connection:
        value = connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    connection.close()
    assert isinstance(value, int)
    return value


def stored_config(db: Path, tournament: int = 1) -> dict[str, Any]:
    with sqlite3.connect(db) as connection:
        row = connection.execute("SELECT config FROM tournaments WHERE id = ?", (tournament,))
        text = row.fetchone()[0]
    connection.close()
    config = json.loads(text)
    assert isinstance(config, dict)
    return config


def records(text: str) -> list[str]:
    """The records of a game file, each with its ``[KrytGameFile`` line."""
    parts = text.split('[KrytGameFile "1"]')
    return ['[KrytGameFile "1"]' + part.rstrip("\n") + "\n" for part in parts[1:]]


# --- shared worlds ----------------------------------------------------------------------


@dataclass(frozen=True)
class Gauntlet:
    """A finished gauntlet (greedy2 against random and greedy) and one extension of it."""

    home: Path
    db: Path
    before: Path  # a copy of the database before the extension
    run_out: str
    extend_out: str


@pytest.fixture(scope="module")
def gauntlet(tmp_path_factory: pytest.TempPathFactory) -> Gauntlet:
    home = tmp_path_factory.mktemp("gauntlet")
    bot_copy(home / "g2", "greedy2")
    db = home / "g.db"
    run = kryt(
        home,
        "tournament",
        "run",
        "--gauntlet",
        "./g2",
        "builtin:random",
        "builtin:greedy",
        "--games",
        "2",
        "--unsafe",
        "-d",
        str(db),
        *PROCESS,
    )
    run_out = ok(run) + run.stderr
    before = home / "before.db"
    shutil.copy(db, before)
    extend = kryt(home, "tournament", "extend", "1", "--games", "2", "-d", str(db))
    extend_out = ok(extend) + extend.stderr
    return Gauntlet(home, db, before, run_out, extend_out)


@pytest.fixture(scope="module")
def exported(gauntlet: Gauntlet) -> dict[str, Path]:
    """The gauntlet's games exported in the three formats."""
    files = {}
    for suffix in ("kgn", "json", "csv"):
        target = gauntlet.home / f"games.{suffix}"
        ok(kryt(gauntlet.home, "games", "export", str(target), "-d", str(gauntlet.db)))
        files[suffix] = target
    return files


# --- 1. the gauntlet --------------------------------------------------------------------


@pytest.mark.timeout(300)
def test_gauntlet_pairs_the_gauntlet_bot_with_every_other_and_no_one_else(
    gauntlet: Gauntlet,
) -> None:
    games = games_of(gauntlet.home, gauntlet.before)
    assert len(games) == 4
    pairs = {frozenset((g["Seat0"], g["Seat1"])) for g in games}
    assert pairs == {frozenset({"greedy2", "random"}), frozenset({"greedy2", "greedy"})}
    assert "tournament 1 created" in gauntlet.run_out
    assert stored_config(gauntlet.before)["gauntlet"] == "./g2"


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "bots",
    [
        ["--gauntlet", "builtin:greedy"],
        ["--gauntlet", "builtin:greedy", "builtin:greedy"],
    ],
)
def test_a_gauntlet_without_an_opponent_is_refused_and_stores_nothing(
    tmp_path: Path, bots: list[str]
) -> None:
    db = tmp_path / "none.db"
    line = refused(kryt(tmp_path, "tournament", "run", *bots, "-n", "2", "-d", str(db), *PROCESS))
    assert "at least two bots" in line
    assert not db.exists()


@pytest.mark.timeout(300)
def test_gauntlet_from_a_config_file_relative_to_it_with_a_per_bot_time(tmp_path: Path) -> None:
    bot_copy(tmp_path / "g2", "greedy2")
    (tmp_path / "cfg").mkdir()
    config = tmp_path / "cfg" / "cup.toml"
    config.write_text(
        'name = "gcup"\nbots = ["builtin:random", "builtin:greedy"]\ngames_per_pair = 2\n'
        'gauntlet = "../g2"\n[sandbox]\nbackend = "process"\nallow_unsafe = true\n'
        '[bot_time]\ngreedy2 = "0.5+5+0.1"\n'
    )
    db = tmp_path / "c.db"
    ok(kryt(tmp_path, "tournament", "run", "--config", str(config), "-d", str(db)))
    games = games_of(tmp_path, db)
    assert len(games) == 4
    for g in games:
        assert "greedy2" in (g["Seat0"], g["Seat1"])
        seat = 0 if g["Seat0"] == "greedy2" else 1
        assert g[f"Seat{seat}Time"].startswith("0.5+5+0.1 ")
        assert g[f"Seat{1 - seat}Time"].startswith("1+10+0 ")
    line = refused(
        kryt(tmp_path, "tournament", "set", "1", "gauntlet=builtin:random", "-d", str(db))
    )
    assert "gauntlet cannot change" in line


# --- 2. kryt tournament extend ----------------------------------------------------------


@pytest.mark.timeout(300)
def test_extend_adds_n_games_per_gauntlet_pair_with_a_fresh_committed_seed(
    gauntlet: Gauntlet,
) -> None:
    out = flat(gauntlet.extend_out)
    assert "extension 1 adds 2 series (4 games)" in out
    printed = HEX64.findall(out)
    assert len(printed) == 1
    config = stored_config(gauntlet.db)
    (extension,) = config["extensions"]
    assert extension["seed_commitment"] == printed[0]
    digest = f"kryt-arena seed commitment v1:{extension['seed']}".encode()
    assert hashlib.sha256(digest).hexdigest() == printed[0]
    games = games_of(gauntlet.home, gauntlet.db)
    assert len(games) == 8
    assert {g["TournamentSeed"] for g in games} != {str(extension["seed"])}
    new = [g for g in games if int(g["SeriesId"]) > 2]
    assert len(new) == 4
    assert {frozenset((g["Seat0"], g["Seat1"])) for g in new} == {
        frozenset({"greedy2", "random"}),
        frozenset({"greedy2", "greedy"}),
    }
    assert {g["RoundSeed"] for g in new} == {str(extension["seed"])}
    status = flat(ok(kryt(gauntlet.home, "tournament", "status", "1", "-d", str(gauntlet.db))))
    assert "status: finished" in status
    last = max(int(g["GameId"]) for g in new)
    verify = flat(ok(kryt(gauntlet.home, "replay", str(last), "--verify", "-d", str(gauntlet.db))))
    assert "extension round" in verify and "mismatch" not in verify
    board = json.loads(ok(kryt(gauntlet.home, "leaderboard", "--json", "-d", str(gauntlet.db))))
    assert board["board"]["games"] == 8
    assert {row["bot"]: row["games"] for row in board["rows"]} == {
        "greedy2": 8,
        "random": 4,
        "greedy": 4,
    }


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["1", "--games", "0"], "must be in [1, 1000000]"),
        (["1", "--games", "1000001"], "must be in [1, 1000000]"),
        (["99", "--games", "2"], "no tournament with id 99"),
        (["1"], "Missing option"),
    ],
)
def test_extend_refuses_bad_requests_in_one_line(
    gauntlet: Gauntlet, tmp_path: Path, args: list[str], expected: str
) -> None:
    db = tmp_path / "x.db"
    shutil.copy(gauntlet.before, db)
    line = refused(kryt(tmp_path, "tournament", "extend", *args, "-d", str(db)))
    assert expected in line
    assert count(db, "series") == 2 and count(db, "games") == 4


@pytest.mark.timeout(180)
def test_extend_refuses_an_odd_count_for_duplicate_and_an_imported_tournament(
    book_world: BookWorld, gauntlet: Gauntlet, exported: dict[str, Path], tmp_path: Path
) -> None:
    db = tmp_path / "b.db"
    shutil.copy(book_world.db, db)
    line = refused(kryt(tmp_path, "tournament", "extend", "1", "--games", "3", "-d", str(db)))
    assert "even number" in line
    imported = tmp_path / "imported.db"
    ok(kryt(tmp_path, "games", "import", str(exported["kgn"]), "-d", str(imported)))
    line = refused(kryt(tmp_path, "tournament", "extend", "1", "--games", "2", "-d", str(imported)))
    assert "imported" in line
    assert count(imported, "games") == 8


# --- 3. deal books ----------------------------------------------------------------------


@dataclass(frozen=True)
class BookWorld:
    home: Path
    db: Path
    games: list[dict[str, Any]]


@pytest.fixture(scope="module")
def book_world(tmp_path_factory: pytest.TempPathFactory) -> BookWorld:
    home = tmp_path_factory.mktemp("book")
    bot_copy(home / "g2", "greedy2")
    (home / "book.txt").write_text(f"# two decks\n{DECK1}\n\n{DECK2}   # deck 2\n")
    db = home / "b.db"
    ok(
        kryt(
            home,
            "tournament",
            "run",
            "./g2",
            "builtin:random",
            "builtin:greedy",
            "--games",
            "6",
            "--book",
            "book.txt",
            "--unsafe",
            "-d",
            str(db),
            *PROCESS,
        )
    )
    return BookWorld(home, db, games_of(home, db))


@pytest.mark.timeout(300)
def test_book_decks_are_played_in_order_each_twice_with_the_hands_swapped(
    book_world: BookWorld,
) -> None:
    games = book_world.games
    assert len(games) == 18  # three pairs, six games each
    by_series: dict[str, dict[int, dict[str, Any]]] = {}
    for g in games:
        by_series.setdefault(g["SeriesId"], {})[int(g["Game"])] = g
    assert len(by_series) == 3
    order = [DECK1, DECK1, DECK2, DECK2, DECK1, DECK1]  # in order, then from the start again
    for series in by_series.values():
        assert sorted(series) == [1, 2, 3, 4, 5, 6]
        assert [series[n]["Deck"] for n in range(1, 7)] == order
        for first in (1, 3, 5):
            a, b = series[first], series[first + 1]
            assert (a["Seat0"], a["Seat1"]) == (b["Seat0"], b["Seat1"])
            assert {a["Dealer"], b["Dealer"]} == {"0", "1"}  # each bot holds each hand once
        assert {g["SeriesFormat"] for g in series.values()} == {"duplicate"}
        assert {g["DealBook"] for g in series.values()} == {"2"}
    assert stored_config(book_world.db)["book"] == [DECK1, DECK2]
    verify = flat(ok(kryt(book_world.home, "replay", "3", "--verify", "-d", str(book_world.db))))
    assert "mismatch" not in verify


@pytest.mark.timeout(180)
def test_book_accepts_a_bom_lower_case_commas_and_10(tmp_path: Path) -> None:
    text = DECK1.replace("T", "10").lower().replace(" ", ",")
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbf" + text.encode() + b"\n")
    db = tmp_path / "bom.db"
    ok(
        kryt(
            tmp_path,
            "tournament",
            "run",
            "builtin:random",
            "builtin:greedy",
            "--games",
            "2",
            "--book",
            "bom.txt",
            "-d",
            str(db),
            *PROCESS,
        )
    )
    assert {g["Deck"] for g in games_of(tmp_path, db)} == {DECK1}


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (DECK1.replace("9D", "XZ", 1), "bad.txt line 1, card 1: 'XZ' is not a card"),
        (DECK1.replace("TD", "9D", 1), "card 2: '9D' is card 1 again"),
        ("# c\n" + DECK1.rsplit(" ", 1)[0], "bad.txt line 2: a deck has 36 cards, got 35"),
        (DECK1 + " 6C", "card 37"),
        ("# nothing here\n", "no decks"),
    ],
)
def test_a_bad_book_is_one_line_naming_the_file_and_nothing_is_stored(
    tmp_path: Path, content: str, expected: str
) -> None:
    (tmp_path / "bad.txt").write_text(content + "\n")
    db = tmp_path / "bad.db"
    line = refused(
        kryt(
            tmp_path,
            "tournament",
            "run",
            "builtin:random",
            "builtin:greedy",
            "--games",
            "2",
            "--book",
            "bad.txt",
            "-d",
            str(db),
            *PROCESS,
        )
    )
    assert expected in line
    assert not db.exists()


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--format", "standard"], 'format = "duplicate"'),
        (["--games", "3"], "even number"),
        (["--ruleset", "classic"], "two-player game"),
    ],
)
def test_a_book_with_a_setting_it_cannot_serve_is_refused(
    tmp_path: Path, extra: list[str], expected: str
) -> None:
    (tmp_path / "book.txt").write_text(DECK1 + "\n")
    db = tmp_path / "r.db"
    args = ["tournament", "run", "builtin:random", "builtin:greedy", "--book", "book.txt"]
    if "--games" not in extra:
        extra = [*extra, "--games", "2"]
    line = refused(kryt(tmp_path, *args, *extra, "-d", str(db), *PROCESS))
    assert expected in line
    assert not db.exists()


@pytest.mark.timeout(180)
def test_kryt_play_plays_a_book_in_order(tmp_path: Path) -> None:
    (tmp_path / "book.txt").write_text(f"{DECK1}\n{DECK2}\n")
    args = ["play", "builtin:random", "builtin:greedy", "-n", "4", "--book", "book.txt"]
    result = kryt(tmp_path, *args, *PROCESS)
    out = flat(ok(result) + result.stderr)
    assert "deal book: 2 decks from book.txt" in out
    assert "4/4" in out and "pentanomial" in out


# --- 4. export and import ---------------------------------------------------------------


@pytest.mark.timeout(300)
@pytest.mark.parametrize("suffix", ["kgn", "json"])
def test_round_trip_gives_identical_games_and_standings(
    gauntlet: Gauntlet, exported: dict[str, Path], tmp_path: Path, suffix: str
) -> None:
    fresh = tmp_path / "fresh.db"
    out = ok(kryt(tmp_path, "games", "import", str(exported[suffix]), "-d", str(fresh)))
    assert "imported 8 new games of 8 read" in out
    again = tmp_path / f"again.{suffix}"
    ok(kryt(tmp_path, "games", "export", str(again), "-d", str(fresh)))
    assert again.read_bytes() == exported[suffix].read_bytes()
    mine = ok(kryt(gauntlet.home, "games", "list", "-d", str(gauntlet.db)))
    assert ok(kryt(tmp_path, "games", "list", "-d", str(fresh))) == mine  # the same ids
    # the standings; submission ids (and so the order of tied bots) may differ, as documented
    boards = [
        json.loads(ok(kryt(where, "leaderboard", "--json", "-d", str(db))))
        for where, db in ((gauntlet.home, gauntlet.db), (tmp_path, fresh))
    ]
    for board in boards:
        board["rows"] = {
            row["bot"]: {
                k: v for k, v in row.items() if k not in ("submission_id", "rank", "los_next")
            }
            for row in board["rows"]
        }
    assert boards[0] == boards[1]
    verify = flat(ok(kryt(tmp_path, "replay", "8", "--verify", "-d", str(fresh))))
    assert "verified" in verify and "mismatch" not in verify
    # idempotent: a second import adds nothing
    out = ok(kryt(tmp_path, "games", "import", str(exported[suffix]), "-d", str(fresh)))
    assert "imported 0 new games of 8 read" in out
    assert count(fresh, "games") == 8


@pytest.mark.timeout(120)
def test_csv_export_has_a_row_per_game_and_is_not_imported(
    exported: dict[str, Path], tmp_path: Path
) -> None:
    lines = exported["csv"].read_text().splitlines()
    assert lines[0].startswith("game_id,tournament,tournament_id,series_id,game,attempt,")
    assert len(lines) == 9
    db = tmp_path / "csv.db"
    line = refused(kryt(tmp_path, "games", "import", str(exported["csv"]), "-d", str(db)))
    assert "games.csv:1" in line
    assert not db.exists()


HOSTILE_TEXT: list[tuple[str, Callable[[str], str], str]] = [
    (
        "truncated in a header",
        lambda t: t[: t.index("[Seat0Sha256", len(t) // 2) + 20],
        'expected a [Key "value"] header',
    ),
    ("truncated before its result line", lambda t: t.rstrip("\n").rsplit("\n", 1)[0], "result"),
    ("a wrong card in the deck", lambda t: re.sub(r'\[Deck "\S+', '[Deck "XZ', t, count=1), "'XZ'"),
    (
        "a deck with a card twice",
        lambda t: re.sub(r'\[Deck "(\S+) \S+', r'[Deck "\1 \1', t, count=1),
        "deck",
    ),
    (
        "a huge game number",
        lambda t: t.replace('[Game "1"]', '[Game "' + "9" * 60 + '"]', 1),
        "Game",
    ),
    (
        "a huge id",
        lambda t: t.replace('[GameId "1"]', '[GameId "' + "9" * 5000 + '"]', 1),
        "(5000 characters)",
    ),
    (
        "a huge seed",
        lambda t: re.sub(r'\[TournamentSeed "\d+"\]', '[TournamentSeed "' + "9" * 30 + '"]', t),
        "TournamentSeed",
    ),
    (
        "a huge move time",
        lambda t: re.sub(r"\{[0-9.e-]+\}", "{1e999}", t, count=1),
        "finite number",
    ),
    (
        "a huge move number",
        lambda t: re.sub(r"^1\. ", "99999999999999999999999. ", t, count=1, flags=re.M),
        "move",
    ),
    (
        "an escape sequence in a bot name",
        lambda t: t.replace('[Seat0 "greedy2"]', '[Seat0 "gr\\u001b[31meedy"]', 1),
        "\\x1b[31m",
    ),
    (
        "a raw escape in a bot name",
        lambda t: t.replace('[Seat0 "greedy2"]', '[Seat0 "gr\x1b[31meedy"]', 1),
        "bad header value",
    ),
    (
        "a terminal title in the tournament name",
        lambda t: t.replace('[Tournament "tournament"]', '[Tournament "t\\u001b]0;pwned\\u0007"]'),
        "\\x1b]0;pwned\\x07",
    ),
    (
        "a bad result line",
        lambda t: t.replace("\n1-0\n", "\n0-1\n", 1),
        "differs from the Result header",
    ),
    (
        "the same game twice, different",
        lambda t: t + "\n" + re.sub(r"\{[0-9.e-]+\}", "{0.5}", records(t)[0], count=1),
        "with different content",
    ),
]


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("what", "change", "expected"), HOSTILE_TEXT, ids=[h[0] for h in HOSTILE_TEXT]
)
def test_a_hostile_game_file_is_one_line_and_stores_nothing(
    gauntlet: Gauntlet,
    exported: dict[str, Path],
    tmp_path: Path,
    what: str,
    change: Callable[[str], str],
    expected: str,
) -> None:
    text = exported["kgn"].read_text()
    hostile = tmp_path / "hostile.kgn"
    hostile.write_text(change(text))
    assert hostile.read_text() != text, what
    fresh = tmp_path / "fresh.db"
    line = refused(kryt(tmp_path, "games", "import", str(hostile), "-d", str(fresh)))
    assert line.startswith("error: hostile.kgn"), line
    assert expected in line, line
    assert "\x1b" not in line and "\x07" not in line
    assert not fresh.exists()  # the whole file is checked before the database is opened
    held = tmp_path / "held.db"
    shutil.copy(gauntlet.before, held)
    refused(kryt(tmp_path, "games", "import", str(hostile), "-d", str(held)))
    assert count(held, "games") == 4 and count(held, "series") == 2


HOSTILE_JSON: list[tuple[str, Callable[[list[dict[str, Any]]], str], str]] = [
    ("deeply nested", lambda g: "[" * 100000 + "]" * 100000, "not JSON"),
    ("truncated", lambda g: json.dumps(g)[:3000], "not JSON"),
    ("an object", lambda g: json.dumps({"games": g}), "JSON array"),
    ("a null header", lambda g: json.dumps([dict(g[0], Tournament=None)]), "must be a string"),
    ("a number header", lambda g: json.dumps([dict(g[0], Game=1)]), "must be a string"),
    (
        "a 5000-digit number",
        lambda g: json.dumps(g).replace('"seconds": ', '"seconds": ' + "9" * 5000 + ', "x": ', 1),
        "not JSON",
    ),
    (
        "NaN seconds",
        lambda g: json.dumps(
            [dict(g[0], Moves=[{"seat": 0, "action": "take", "seconds": float("nan")}])]
        ),
        "finite number",
    ),
    (
        "a bool seat",
        lambda g: json.dumps([dict(g[0], Moves=[{"seat": True, "action": "take", "seconds": 0}])]),
        "seat",
    ),
    ("an escape in a name", lambda g: json.dumps([dict(g[0], Seat1="a\u001b[2J")]), "\\x1b[2J"),
    (
        "a bidi override in a name",
        lambda g: json.dumps([dict(g[0], Tournament="cup\u202e")]),
        "\\u202e",
    ),
]


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("what", "change", "expected"), HOSTILE_JSON, ids=[h[0] for h in HOSTILE_JSON]
)
def test_a_hostile_json_file_is_one_line_and_stores_nothing(
    exported: dict[str, Path],
    tmp_path: Path,
    what: str,
    change: Callable[[list[dict[str, Any]]], str],
    expected: str,
) -> None:
    games = json.loads(exported["json"].read_text())
    hostile = tmp_path / "hostile.json"
    hostile.write_text(change(games))
    fresh = tmp_path / "fresh.db"
    line = refused(kryt(tmp_path, "games", "import", str(hostile), "-d", str(fresh)))
    assert line.startswith("error: hostile.json"), (what, line)
    assert expected in line, (what, line)
    assert "\x1b" not in line and "\u202e" not in line
    assert len(line) < 600
    assert not fresh.exists()


@pytest.mark.timeout(120)
def test_a_file_that_is_not_utf8_is_refused(exported: dict[str, Path], tmp_path: Path) -> None:
    data = exported["kgn"].read_bytes()
    hostile = tmp_path / "binary.kgn"
    hostile.write_bytes(data[:100] + b"\xff\xfe" + data[100:])
    fresh = tmp_path / "fresh.db"
    line = refused(kryt(tmp_path, "games", "import", str(hostile), "-d", str(fresh)))
    assert "not a UTF-8 text file" in line
    assert not fresh.exists()


@pytest.mark.timeout(180)
def test_a_conflict_found_in_the_database_stores_none_of_the_file(
    gauntlet: Gauntlet, exported: dict[str, Path], tmp_path: Path
) -> None:
    """New games first, then a record that differs from a stored game: nothing is kept."""
    parts = records(exported["kgn"].read_text())
    assert len(parts) == 8
    changed = re.sub(r"\{[0-9.e-]+\}", "{0.5}", parts[0], count=1)
    hostile = tmp_path / "conflict.kgn"
    hostile.write_text("\n".join([*parts[4:], changed]))
    held = tmp_path / "held.db"
    shutil.copy(gauntlet.before, held)
    line = refused(kryt(tmp_path, "games", "import", str(hostile), "-d", str(held)))
    assert "already recorded" in line
    assert count(held, "games") == 4 and count(held, "series") == 2


@pytest.mark.timeout(180)
def test_the_same_game_twice_with_the_same_content_is_stored_once(
    exported: dict[str, Path], tmp_path: Path
) -> None:
    first = records(exported["kgn"].read_text())[0]
    twice = tmp_path / "twice.kgn"
    twice.write_text(first + "\n" + first)
    fresh = tmp_path / "fresh.db"
    out = ok(kryt(tmp_path, "games", "import", str(twice), "-d", str(fresh)))
    assert "imported 1 new games of 2 read" in out
    assert count(fresh, "games") == 1


ILLEGAL: list[tuple[str, Callable[[str], str]]] = [
    (
        "a card the seat does not hold",
        lambda r: _first_move(
            r, "lead " + next(c for c in ("AS", "AH", "AD", "AC") if c not in _hand(r))
        ),
    ),
    ("an action that is no action", lambda r: _first_move(r, "dance")),
    ("a wrong card code in a move", lambda r: _first_move(r, "lead 6Z")),
    ("a result the moves contradict", lambda r: _flip_result(r)),
    (
        "moves after the game ended",
        lambda r: re.sub(
            r"\n(1-0|0-1)\n$",
            lambda m: (
                "\n"
                + "\n".join(f"{n}. 0 take {{0.1}}" for n in range(_moves(r) + 1, _moves(r) + 2001))
                + "\n"
                + m.group(1)
                + "\n"
            ),
            r,
        ),
    ),
]


def _moves(record: str) -> int:
    return len(re.findall(r"^\d+\. ", record, re.MULTILINE))


def _hand(record: str) -> list[str]:
    """The cards of the seat that moves first (the non-dealer: deck cards 1, 3 and 5)."""
    deck = re.search(r'\[Deck "([^"]+)"\]', record)
    assert deck is not None
    return deck.group(1).split()[0:6:2]


def _first_move(record: str, action: str) -> str:
    return re.sub(
        r"^1\. (\d) [^{]+ \{", lambda m: f"1. {m.group(1)} {action} {{", record, count=1, flags=re.M
    )


def _flip_result(record: str) -> str:
    result = re.search(r'\[Result "(1-0|0-1)"\]', record)
    assert result is not None
    other = "0-1" if result.group(1) == "1-0" else "1-0"
    record = record.replace(f'[Result "{result.group(1)}"]', f'[Result "{other}"]', 1)
    return re.sub(r"\n(1-0|0-1)\n$", f"\n{other}\n", record)


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("what", "change"), ILLEGAL, ids=[i[0] for i in ILLEGAL])
def test_an_illegal_game_is_refused_by_the_import(
    exported: dict[str, Path], tmp_path: Path, what: str, change: Callable[[str], str]
) -> None:
    # A game someone won by playing out (some illegal changes need a winner): the first
    # game may be a draw, as the bots draw their own seeds.
    decided = [r for r in records(exported["kgn"].read_text()) if 'Ending "out"' in r]
    assert decided, "no game of the gauntlet was won by playing out"
    record = decided[0]
    bad = change(record)
    assert bad != record, what
    hostile = tmp_path / "illegal.kgn"
    hostile.write_text(bad)
    fresh = tmp_path / "fresh.db"
    result = kryt(tmp_path, "games", "import", str(hostile), "-d", str(fresh))
    line = refused(result)
    assert "illegal.kgn:" in line and "does not replay as recorded" in line, line
    assert not fresh.exists() or count(fresh, "games") == 0


@pytest.mark.timeout(180)
def test_escapes_in_imported_free_text_reach_no_terminal(
    lists_world: ListsWorld, tmp_path: Path
) -> None:
    text = ok(kryt(tmp_path, "games", "export", "-", "-d", str(lists_world.db)))
    assert '[ForfeitDetail "bot reported an error' in text
    nasty = "\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m\\u202e"
    hostile = tmp_path / "nasty.kgn"
    hostile.write_text(
        text.replace('[ForfeitDetail "bot reported', f'[ForfeitDetail "{nasty} bot reported')
    )
    fresh = tmp_path / "fresh.db"
    ok(kryt(tmp_path, "games", "import", str(hostile), "-d", str(fresh)))
    crashed = sorted(listed_ids(tmp_path, fresh, "--reason", "crash"))
    assert crashed
    for args in (["games", "list"], ["replay", str(crashed[0])]):
        out = ok(kryt(tmp_path, *args, "-d", str(fresh)))
        for char in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert char not in out, (args, char)
    shown = ok(kryt(tmp_path, "replay", str(crashed[0]), "-d", str(fresh)))
    assert "\\x1b]0;pwned" in shown
    csv = tmp_path / "x.csv"
    ok(kryt(tmp_path, "games", "export", str(csv), "-d", str(fresh)))
    assert "\x1b" not in csv.read_text()
    again = tmp_path / "again.kgn"
    ok(kryt(tmp_path, "games", "export", str(again), "-d", str(fresh)))
    assert again.read_text() == hostile.read_text()


# --- 5. kryt games list -----------------------------------------------------------------


@dataclass(frozen=True)
class ListsWorld:
    home: Path
    db: Path
    games: list[dict[str, Any]]


@pytest.fixture(scope="module")
def lists_world(tmp_path_factory: pytest.TempPathFactory) -> ListsWorld:
    """Tournament 1: crashy, sloppy (malformed replies) and greedy; tournament 2: random and
    greedy."""
    home = tmp_path_factory.mktemp("lists")
    small_bot(
        home / "crashy",
        "crashy",
        "    def act(self, view):\n"
        "        self.moves += 1\n"
        "        if self.moves >= 3:\n"
        "            raise KeyError('boom')\n"
        "        return view.legal_actions[0]\n",
    )
    small_bot(home / "sloppy", "sloppy", "    def act(self, view):\n        return 'lead XZ'\n")
    db = home / "l.db"
    first = ["tournament", "run", "./crashy", "./sloppy", "builtin:greedy", "--unsafe"]
    ok(kryt(home, *first, "--games", "2", "-d", str(db), *PROCESS))
    second = ["tournament", "run", "builtin:random", "builtin:greedy", "--games", "2"]
    ok(kryt(home, *second, "-d", str(db), *PROCESS))
    return ListsWorld(home, db, games_of(home, db))


def _ids(games: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]) -> set[int]:
    return {int(g["GameId"]) for g in games if keep(g)}


def _winner(g: dict[str, Any]) -> str | None:
    return {"1-0": g["Seat0"], "0-1": g["Seat1"]}.get(g["Result"])


@pytest.mark.timeout(300)
def test_games_list_filters_match_the_games(lists_world: ListsWorld) -> None:
    home, db, games = lists_world.home, lists_world.db, lists_world.games
    assert len(games) == 8
    assert listed_ids(home, db) == _ids(games, lambda g: True)

    def has(bot: str) -> Callable[[dict[str, Any]], bool]:
        return lambda g: bot in (g["Seat0"], g["Seat1"])

    crashy = _ids(games, has("crashy"))
    assert len(crashy) == 4
    assert listed_ids(home, db, "--bot", "crashy") == crashy
    wins = _ids(games, lambda g: has("crashy")(g) and _winner(g) == "crashy")
    losses = _ids(games, lambda g: has("crashy")(g) and _winner(g) not in ("crashy", None))
    assert wins and losses
    assert listed_ids(home, db, "--bot", "crashy", "--result", "win") == wins
    assert listed_ids(home, db, "--bot", "crashy", "--result", "loss") == losses
    # greedy may lose to random (the bots draw their own seeds): whatever it lost is listed.
    greedy_lost = _ids(games, lambda g: has("greedy")(g) and _winner(g) not in ("greedy", None))
    assert listed_ids(home, db, "--bot", "greedy", "--result", "loss") == greedy_lost
    assert listed_ids(home, db, "--tournament", "2") == _ids(
        games, lambda g: g["TournamentId"] == "2"
    )
    crash = _ids(games, lambda g: g["Ending"] == "crash")
    malformed = _ids(games, lambda g: g["Ending"] == "malformed reply")
    assert len(crash) == 2 and len(malformed) == 4
    assert listed_ids(home, db, "--reason", "crash") == crash
    assert (
        listed_ids(home, db, "--reason", "malformed reply", "--reason", "crash")
        == crash | malformed
    )
    assert listed_ids(home, db, "--reason", "crash", "--tournament", "2") == set()
    assert listed_ids(home, db, "--result", "seat0") == _ids(games, lambda g: g["Result"] == "1-0")
    assert listed_ids(home, db, "--result", "draw") == _ids(
        games, lambda g: g["Result"] == "1/2-1/2"
    )
    listed = ok(kryt(home, "games", "list", "--reason", "crash", "-d", str(db)))
    assert re.search(r"crash at bot\.py:\d+", listed)
    oldest = ok(kryt(home, "games", "list", "--oldest", "-n", "2", "-d", str(db)))
    assert [int(i) for i in re.findall(r"^\s*(\d+)\s*│", oldest, re.MULTILINE)] == [1, 2]
    # export takes the same filters
    exported = games_of(home, db, "--bot", "crashy", "--result", "loss")
    assert {int(g["GameId"]) for g in exported} == losses


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--result", "win"], "needs a bot"),
        (["--result", "bogus"], "bogus"),
        (["--reason", "bogus"], "unknown ending 'bogus'"),
        (["--bot", "nobody"], "no bot named 'nobody'"),
        (["--tournament", "9"], "no tournament with id 9"),
    ],
)
def test_games_list_refuses_bad_filters_in_one_line(
    lists_world: ListsWorld, args: list[str], expected: str
) -> None:
    line = refused(kryt(lists_world.home, "games", "list", *args, "-d", str(lists_world.db)))
    assert expected in line


# --- 6. time controls with an increment -------------------------------------------------

PROBE = """\
    def on_handshake(self, series):
        tc = series.time_control
        self.log({"handshake": [tc.move_ms, tc.bank_ms, tc.increment_ms]})

    def log(self, what):
        with open(LOG, "a") as f:
            f.write(json.dumps(what) + "\\n")

    def act(self, view):
        self.moves += 1
        clock = self.clock
        self.log({"clock": [clock.move_ms, clock.bank_ms] if clock else None})
        if self.moves <= SLOW_MOVES:
            time.sleep(SLOW_SECONDS)
        return greedy_action(view.legal_actions, view.trump)
"""


def probe(folder: Path, log: Path, slow_moves: int = 0, slow_seconds: float = 0.0) -> Path:
    small_bot(folder, "probe", PROBE)
    code = (folder / "bot.py").read_text()
    settings = f"LOG = {str(log)!r}\nSLOW_MOVES = {slow_moves}\nSLOW_SECONDS = {slow_seconds}\n"
    (folder / "bot.py").write_text(settings + code)
    return folder


@pytest.mark.timeout(300)
def test_each_bot_gets_its_own_control_and_the_increment_grows_its_bank(tmp_path: Path) -> None:
    log = tmp_path / "probe.log"
    probe(tmp_path / "probe", log)
    db = tmp_path / "t.db"
    ok(
        kryt(
            tmp_path,
            "tournament",
            "run",
            "./probe",
            "builtin:greedy",
            "--unsafe",
            "--games",
            "2",
            "--time",
            "3+10",
            "--time",
            "probe=2+3+0.25",
            "-d",
            str(db),
            *PROCESS,
        )
    )
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert entries[0] == {"handshake": [2000, 3000, 250]}
    clocks = [e["clock"] for e in entries[1:4]]
    # each of its moves is far inside 2 s: the bank grows by the increment after each one
    assert clocks == [[2000, 3000], [2000, 3250], [2000, 3500]], entries[:6]
    games = games_of(tmp_path, db)
    assert len(games) == 2
    for g in games:
        seat = 0 if g["Seat0"] == "probe" else 1
        assert g[f"Seat{seat}Time"] == "2+3+0.25 grace=0.05 clock=wall"
        assert g[f"Seat{1 - seat}Time"] == "3+10+0 grace=0.05 clock=wall"
    verify = flat(ok(kryt(tmp_path, "replay", "1", "--verify", "-d", str(db))))
    assert "fits its seat's clock" in verify


@pytest.mark.timeout(300)
def test_the_increment_keeps_a_slow_bot_in_time_and_without_it_the_bot_loses_on_time(
    tmp_path: Path,
) -> None:
    """0.5 s for each of its first six moves with 0.05 s a move and a 1 s bank: it runs out by
    its third move; with 2 s added after each move it never does."""
    endings = {}
    for increment in ("0", "2"):
        home = tmp_path / f"inc{increment}"
        home.mkdir()
        probe(home / "probe", home / "probe.log", slow_moves=6, slow_seconds=0.5)
        db = home / "t.db"
        ok(
            kryt(
                home,
                "tournament",
                "run",
                "./probe",
                "builtin:greedy",
                "--unsafe",
                "--games",
                "2",
                "--time",
                "5+30",
                "--time",
                f"probe=0.05+1+{increment}",
                "-d",
                str(db),
                *PROCESS,
            )
        )
        games = games_of(home, db)
        assert len(games) == 2
        endings[increment] = [(g["Ending"], g.get("ForfeitSeat")) for g in games]
        for g in games:
            seat = 0 if g["Seat0"] == "probe" else 1
            if increment == "0":
                assert g["Ending"] == "timeout" and g["ForfeitSeat"] == str(seat), g
            else:
                assert g["Ending"] != "timeout", g
    assert endings["0"] != endings["2"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("times", "expected"),
    [
        (["1+10+0.1", "1+5"], "given 2 times"),
        (["0+1"], "must be from 0.001 to 3600"),
        (["1+10+-1"], "the increment '-1'"),
        (["1+10+3601"], "the increment '3601'"),
        (["abc"], "is not MOVE+BANK"),
        (["random=1+2+nan"], "not finite"),
        (["random=1+1", "random@1.0.0=2+2"], "twice"),
        (["nobody=1+1"], "not an entered bot"),
    ],
)
def test_bad_time_controls_are_one_line(tmp_path: Path, times: list[str], expected: str) -> None:
    args = [arg for t in times for arg in ("--time", t)]
    db = tmp_path / "t.db"
    line = refused(
        kryt(
            tmp_path,
            "tournament",
            "run",
            "builtin:random",
            "builtin:greedy",
            "--games",
            "2",
            *args,
            "-d",
            str(db),
            *PROCESS,
        )
    )
    assert expected in line
    assert not db.exists() or count(db, "tournaments") == 0
