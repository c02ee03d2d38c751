"""End-to-end review of the classic table (3 and 4 seats) as a user meets it: ``kryt
tournament run/resume``, what is stored, ``kryt games list``, ``kryt replay --verify``,
``kryt leaderboard --json``, forfeits of every kind at a table, and each seat's view over
real gRPC. Every tournament runs as a user would run it, ``kryt`` in a subprocess on the
process backend (``--unsafe``: the misbehaving test bots are written here), on a SQLite file
in a temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from arena.db import games_of_series, open_database, series_of_tournament, stored_record
from arena.tournament.table_runner import table_tallies
from referee.protocol.messages import GameEndReason
from referee.record import GameRecord
from referee.rules import ClassicEndReason, ClassicGame
from referee.series import game_deck
from referee.table import first_table_dealer

pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parents[2]

TOML = 'name = "{name}"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'

CHAOS = '''
import os
import time
from typing import ClassVar

from sdk import Bot, serve


class Chaos(Bot):
    """Game 1: dies; game 2: an illegal action; game 3: a malformed one; game 4: too slow;
    afterwards plays its first legal action."""

    rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

    def act(self, view):
        return view.legal_actions[0]

    def act_table(self, view):
        number = self.context.game_number if self.context is not None else 0
        if number == 1:
            os._exit(3)
        if number == 2:
            return "take" if not view.led else "lead " + str(view.hand[0])
        if number == 3:
            return "swap 6H"
        if number == 4:
            time.sleep(2.5)
        return view.legal_actions[0]


if __name__ == "__main__":
    serve(Chaos())
'''

SPY = '''
import json
import random
from typing import ClassVar

from sdk import Bot, serve

OUT = {out!r}


class Spy(Bot):
    """Plays at random and writes down every view the referee sent it."""

    rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

    def __init__(self):
        self.rng = random.Random(7)

    def act(self, view):
        return view.legal_actions[0]

    def act_table(self, view):
        line = {{"game": self.context.game_number, "n": len(view.history), "view": repr(view)}}
        with open(OUT, "a") as handle:
            handle.write(json.dumps(line) + "\\n")
        return self.rng.choice(view.legal_actions)


if __name__ == "__main__":
    serve(Spy())
'''

DEAD = "import sys\n\nsys.exit(5)\n"

COMMON = ["--backend", "process", "--unsafe"]


def write_bot(folder: Path, name: str, source: str) -> Path:
    bot = folder / name
    bot.mkdir(parents=True, exist_ok=True)
    (bot / "bot.toml").write_text(TOML.format(name=name))
    (bot / "bot.py").write_text(source)
    return bot


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONDONTWRITEBYTECODE="1", COLUMNS="250", NO_COLOR="1", PYTHONPATH=str(ROOT))
    env.pop("KRYT_DATABASE_URL", None)
    return env


def kryt(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``kryt ARGS`` in a subprocess, as from a shell."""
    return subprocess.run(
        [sys.executable, "-m", "kryt", *args],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@dataclass(frozen=True)
class Run:
    """A tournament run: its database, the run's output and its working folder."""

    db: Path
    out: str
    folder: Path


def rows(db: Path, query: str, *params: object) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute(query, params))


def records(db: Path) -> dict[int, list[tuple[tuple[int, ...], int, GameRecord]]]:
    """Per series id: (seat submissions, series seed, record) of its counted games, in order."""
    database = open_database(f"sqlite:///{db}", create=False)
    found: dict[int, list[tuple[tuple[int, ...], int, GameRecord]]] = {}
    try:
        with database.read_session() as session:
            for series in series_of_tournament(1, session=session):
                assert series.id is not None
                found[series.id] = [
                    (tuple(series.seat_ids), int(series.seed), stored_record(g))
                    for g in games_of_series(series.id, session=session)
                ]
    finally:
        database.close()
    return found


def submission_id(db: Path, bot: str) -> int:
    ((sid,),) = rows(
        db, "select s.id from submissions s join bots b on b.id = s.bot_id where b.name = ?", bot
    )
    return int(sid)


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def chaos(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A table of three: random, greedy and a bot that misbehaves differently in each of the
    games 1-4 (crash, illegal, malformed, timeout), then plays game 5 properly."""
    folder = tmp_path_factory.mktemp("chaos")
    bot = write_bot(folder, "chaos", CHAOS)
    db = folder / "chaos.db"
    done = kryt(
        "tournament", "run", "builtin:random", "builtin:greedy", str(bot),
        "--ruleset", "classic", "--table-size", "3", "-n", "5", "--seed", "11",
        "--move-seconds", "0.5", "--bank-seconds", "0.5", "-j", "2", "-v",
        "-d", str(db), "--store", str(folder / "store"), *COMMON, cwd=folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return Run(db, done.stdout + done.stderr, folder)


@pytest.fixture(scope="module")
def dead(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A table of four where two bots never start (one game per seating, six seatings)."""
    folder = tmp_path_factory.mktemp("dead")
    bots = [str(write_bot(folder, name, DEAD)) for name in ("dead-a", "dead-b")]
    db = folder / "dead.db"
    done = kryt(
        "tournament", "run", "builtin:random", "builtin:greedy", *bots,
        "--ruleset", "classic", "--table-size", "4", "-n", "1", "-j", "3", "--seed", "3",
        "-d", str(db), "--store", str(folder / "store"), *COMMON, cwd=folder,
    )  # fmt: skip
    # Bots that never played make the run fail (README: exit 1).
    assert done.returncode == 1, done.stdout + done.stderr
    return Run(db, done.stdout + done.stderr, folder)


# ------------------------------------------------------------------------------ forfeits


EXPECTED = {1: "crash", 2: "illegal action", 3: "malformed reply", 4: "timeout"}


def test_each_forfeit_ends_the_game_at_once_and_every_other_seat_beats_the_offender(
    chaos: Run,
) -> None:
    """rules-classic.md: "A forfeit makes the offender the loser (he deals next) and ends
    that game at once; the others win it." README: "A bot that times out, sends an illegal or
    malformed reply, crashes ... loses that game by forfeit (recorded with the reason and its
    input ...)"."""
    chaos_id = submission_id(chaos.db, "chaos")
    by_series = records(chaos.db)
    assert len(by_series) == 2  # (3-1)! clockwise orders of one set of three
    for seats, _, _ in (games[0] for games in by_series.values()):
        assert len(seats) == 3
    for games in by_series.values():
        assert [g.ending.value for _, _, g in games[:4]] == [EXPECTED[n] for n in (1, 2, 3, 4)]
        for seats, _, record in games[:4]:
            offender = seats.index(chaos_id)
            assert record.forfeit is not None and record.forfeit.seat == offender
            assert record.loser == offender
            assert sorted(record.pairwise) == sorted(
                (s, offender) for s in range(3) if s != offender
            )
            assert record.outcome(offender) == "loss"
            assert all(record.outcome(s) == "win" for s in range(3) if s != offender)
            # Ended at once: the offender's bad reply is never recorded as a move, and the
            # moves before it were the rules' (the replay of them does not finish the game).
            game = ClassicGame.replay(
                list(record.deck), record.dealer, [m.action for m in record.moves], players=3
            )
            assert not game.over and game.to_move == offender
        # The crashed bot was started again: game 5 is played to its end by the rules.
        last = games[4][2]
        assert last.forfeit is None and last.ending.value in ("last holder", "all out")


def test_the_offender_deals_the_next_game(chaos: Run) -> None:
    """rules-classic.md: "afterwards the **loser deals**; ... A forfeit makes the offender the
    loser (he deals next)"; the first dealer "comes from the series seed"."""
    for games in records(chaos.db).values():
        seats, seed, first = games[0]
        assert first.dealer == first_table_dealer(seed, 3)
        for (_, _, before), (_, _, after) in pairwise(games):
            assert after.dealer == (before.dealer if before.loser is None else before.loser)
        chaos_seat = seats.index(submission_id(chaos.db, "chaos"))
        assert [g.dealer for _, _, g in games[1:5]] == [chaos_seat] * 4


def test_what_the_offender_sent_and_why_are_stored(chaos: Run) -> None:
    """database.md: "forfeit_input (what the offender sent ...), forfeit_detail (why ...)";
    README: the forfeit is "recorded with the reason and its input"."""
    found = rows(
        chaos.db,
        "select number, end_reason, forfeit_input, forfeit_detail from games where number <= 4",
    )
    assert len(found) == 8
    for number, reason, sent, detail in found:
        assert reason == EXPECTED[number]
        if number == 2:
            assert sent in ("take",) or str(sent).startswith("lead "), sent
            assert "illegal action" in detail and "legal:" in detail
        if number == 3:
            assert sent == "swap 6H" and "malformed action 'swap 6H'" in detail
        if number == 4:
            assert "1.050s" in detail  # move 0.5 + bank 0.5 + the 50 ms grace
        if number == 1:
            assert "exit code 3" in detail  # how its process ended


def test_every_table_game_replays_and_verifies(chaos: Run) -> None:
    """README: "kryt replay 42 --verify  # a stored game, re-checked by the rules"; a
    forfeited table game too ("shown by `kryt replay`")."""
    ids = [int(i) for (i,) in rows(chaos.db, "select id from games order by id")]
    assert len(ids) == 10
    for game_id in ids[:5]:
        done = kryt("replay", str(game_id), "--verify", "-d", str(chaos.db), cwd=chaos.folder)
        assert done.returncode == 0, done.stdout + done.stderr
        text = re.sub(r"\s+", " ", done.stdout)
        assert "verified: the rules engine reproduces the stored result" in text
        assert all(f"seat {s}:" in text for s in range(3)), text


def test_the_table_board_counts_pairwise_results_and_forfeits_by_reason(chaos: Run) -> None:
    """leaderboard.md: "On a classic table's board ... Games, W/D/L ... count **pairwise
    results**" and `board.games` "counts the board's counted games (a classic table's game
    once)"; "Forfeits | games lost by forfeit, by reason"."""
    done = kryt("leaderboard", "--json", "-d", str(chaos.db), cwd=chaos.folder)
    assert done.returncode == 0, done.stderr
    board = json.loads(done.stdout)
    assert board["board"] == {"ruleset": "classic", "table_size": 3, "games": 10}
    table = {row["bot"]: row for row in board["rows"]}
    assert table["chaos"]["forfeits"] == {reason: 2 for reason in EXPECTED.values()}
    assert sum(r["wins"] for r in board["rows"]) == sum(r["losses"] for r in board["rows"])
    for row in board["rows"]:
        assert row["games"] == row["wins"] + row["draws"] + row["losses"]
    # Each of the 8 forfeits gives two pairwise results, chaos losing both.
    assert table["chaos"]["losses"] >= 16


def test_games_list_filters_table_forfeits_by_ending(chaos: Run) -> None:
    """games list --help: "--reason: Only games that ended this way (out, timeout, crash,
    'illegal action', ...)"."""
    for reason in EXPECTED.values():
        done = kryt("games", "list", "--reason", reason, "-d", str(chaos.db), cwd=chaos.folder)
        assert done.returncode == 0, done.stderr
        assert "2 games" in done.stdout and done.stdout.count(" lost ") == 2, done.stdout


def test_the_ending_names_of_rules_md_are_the_ones_the_cli_knows(chaos: Run) -> None:
    """rules.md: "Exactly one player holds cards: **he loses** (`loser`), every other player
    wins (reason `last holder`)." protocol.md: "`EndReason` is the arena's one vocabulary of
    how a game ended (the same names are stored with every game and shown on the web)". The
    rules core named this ending `loser` while the arena stored `last holder`, and
    `kryt games list --reason loser` was refused."""
    rules = (ROOT / "docs" / "rules.md").read_text()
    named = re.search(r"every other player wins\s+\(reason `([^`]+)`\)", rules)
    assert named is not None
    ending = named.group(1)
    assert ending == ClassicEndReason.LAST_HOLDER.value == GameEndReason.LAST_HOLDER.value
    done = kryt("games", "list", "--reason", ending, "-d", str(chaos.db), cwd=chaos.folder)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------------ bots never start


def test_bots_that_never_start_lose_to_every_bot_that_did_on_the_board(dead: Run) -> None:
    """rules.md: "If still more than one cannot start, every one of them forfeits: each seat
    that started beats each of them, and they have no decisive result among themselves (a
    draw in the pairwise record)." ... "the record's forfeit (reason, detail, the forfeits
    column) is his" (the first of them in the order of play)."""
    done = kryt("leaderboard", "--json", "-d", str(dead.db), cwd=dead.folder)
    assert done.returncode == 0, done.stderr
    table = {row["bot"]: row for row in json.loads(done.stdout)["rows"]}
    for bot in ("random", "greedy"):
        assert (table[bot]["wins"], table[bot]["draws"], table[bot]["losses"]) == (12, 0, 0)
    for bot in ("dead-a", "dead-b"):
        assert (table[bot]["wins"], table[bot]["draws"], table[bot]["losses"]) == (0, 6, 12)
    # The forfeits column holds one offender per game (rules.md), six games in all.
    assert sum(sum(table[b]["forfeits"].values()) for b in ("dead-a", "dead-b")) == 6
    for loser, pairs, reason in rows(dead.db, "select loser_seat, pairwise, end_reason from games"):
        assert reason == "startup failure" and len(json.loads(pairs)) == 4
        assert loser in {x for _, x in json.loads(pairs)}


def test_losses_by_seat_count_every_bot_that_could_not_start(dead: Run) -> None:
    """rules.md: "If still more than one cannot start, every one of them forfeits: each seat
    that started beats each of them"; the run's series table shows "losses by seat"."""
    database = open_database(f"sqlite:///{dead.db}", create=False)
    try:
        tallies = table_tallies(1, database)
    finally:
        database.close()
    dead_ids = {submission_id(dead.db, "dead-a"), submission_id(dead.db, "dead-b")}
    for tally in tallies:
        for seat, sid in enumerate(tally.seats):
            assert tally.losses[seat] == (1 if sid in dead_ids else 0), tally


def test_each_never_played_line_starts_with_that_bots_own_error(dead: Run) -> None:
    """README: "A bot that never starts makes the run fail (exit 1: `NAME VERSION never
    played: ...` with its error ...)"."""
    text = re.sub(r"\s+", " ", dead.out)
    for bot in ("dead-a", "dead-b"):
        found = re.search(
            rf"{bot} 1\.0\.0 never played: every game was its start-up failure \((\S+)", text
        )
        assert found is not None, text
        assert found.group(1).startswith(bot), found.group(0)


# --------------------------------------------------------------------------- turn limit


def test_the_turn_limit_at_a_table_is_a_draw_and_the_dealer_deals_again(tmp_path: Path) -> None:
    """rules-classic.md: "A game still running after 1000 actions (configurable) is a draw.
    Players already out count as winners against those still holding cards; those still
    holding cards draw with each other." rules.md: "A game ended by the turn limit has no
    loser: the same dealer deals again, as after a draw."."""
    db = tmp_path / "limit.db"
    done = kryt(
        "tournament", "run", "builtin:random", "builtin:greedy", "builtin:mc",
        "--ruleset", "classic", "--table-size", "3", "-n", "2", "--turn-limit", "7",
        "--seed", "5", "-d", str(db), "--store", str(tmp_path / "store"), *COMMON,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for games in records(db).values():
        assert [g.ending.value for _, _, g in games] == ["turn limit", "turn limit"]
        assert all(g.loser is None and g.pairwise == () for _, _, g in games)
        assert games[0][2].dealer == games[1][2].dealer
    listed = kryt("games", "list", "--result", "draw", "-d", str(db), cwd=tmp_path)
    assert "4 games" in listed.stdout, listed.stdout
    board = json.loads(kryt("leaderboard", "--json", "-d", str(db), cwd=tmp_path).stdout)
    assert all((r["wins"], r["draws"], r["losses"]) == (0, 8, 0) for r in board["rows"])


# ------------------------------------------------------------------------------- resume


def _counted(db: Path) -> int:
    try:
        return len(rows(db, "select id from games where voided = 0"))
    except sqlite3.Error:
        return 0


def test_a_table_tournament_killed_with_sigkill_resumes_exactly_the_missing_games(
    tmp_path: Path,
) -> None:
    """README: "Each game is committed as it ends: an interrupted run loses nothing and
    `resume` plays exactly the missing games." rules-classic.md: "The first dealer comes
    from the series seed; afterwards the **loser deals**"."""
    db = tmp_path / "resume.db"
    args = [
        "tournament", "run", "builtin:random", "builtin:greedy", "builtin:mc",
        "--ruleset", "classic", "--table-size", "3", "-n", "8", "--seed", "9",
        # mc thinks for 30% of its move limit (six times that in an endgame): a short limit
        # keeps its 16 games quick, and the kill still lands mid-run.
        "--time", "mc=0.1+10",
        "-d", str(db), "--store", str(tmp_path / "store"), *COMMON,
    ]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "kryt", *args],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _counted(db) < 3 and process.poll() is None:
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    killed_at = _counted(db)
    assert killed_at >= 3
    done = kryt("tournament", "resume", "1", "-d", str(db), "--store", str(tmp_path / "store"),
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    by_series = records(db)
    assert len(by_series) == 2
    for games in by_series.values():
        _, seed, _ = games[0]
        assert [g.deck for _, _, g in games] == [
            tuple(str(c) for c in game_deck(seed, n)) for n in range(1, 9)
        ]
        dealer = first_table_dealer(seed, 3)
        for _, _, record in games:
            assert record.dealer == dealer
            dealer = dealer if record.loser is None else record.loser
    counted = rows(db, "select series_id, number, count(*) from games where voided = 0 "
                   "group by series_id, number")  # fmt: skip
    assert len(counted) == 16 and all(n == 1 for _, _, n in counted)
    status = kryt("tournament", "status", "-d", str(db), cwd=tmp_path)
    assert "16/16" in status.stdout and "finished" in status.stdout, status.stdout


# -------------------------------------------------------------------------------- views


@pytest.fixture(scope="module")
def spied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    folder = tmp_path_factory.mktemp("spy")
    out = folder / "views.jsonl"
    bot = write_bot(folder, "spy", SPY.format(out=str(out)))
    db = folder / "spy.db"
    done = kryt(
        "tournament", "run", "builtin:random", "builtin:greedy", "builtin:mc", str(bot),
        "--ruleset", "classic", "--table-size", "4", "-n", "1", "-j", "3", "--seed", "21",
        "--time", "mc=0.1+10",  # mc thinks for a share of its move limit: keep it short
        "-d", str(db), "--store", str(folder / "store"), *COMMON, cwd=folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    yield db, out


def test_each_view_a_seat_gets_over_grpc_is_exactly_the_engines_view_of_that_seat(
    spied: tuple[Path, Path],
) -> None:
    """rules-classic.md, What a player sees: "His own hand; ... Never another player's unseen
    cards or the stock order." protocol.md: "View — exactly the engine's view of one seat,
    nothing more"."""
    db, out = spied
    spy_id = submission_id(db, "spy")
    expected: list[str] = []
    for games in records(db).values():
        assert len(games) == 1
        seats, _, record = games[0]
        seat = seats.index(spy_id)
        game = ClassicGame.from_deck(list(record.deck), record.dealer, players=4)
        for move in record.moves:
            if move.seat == seat:
                expected.append(repr(game.view(seat)))
            game.play(move.action)
    got = [json.loads(line)["view"] for line in out.read_text().splitlines()]
    assert len(expected) > 20
    assert sorted(got) == sorted(expected)
