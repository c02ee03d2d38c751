"""An outside review: every surface that shows results tells the same truth, and that truth
is an independent recount of the stored game rows.

One SQLite database is filled with real ``kryt tournament run`` runs (``builtin:random`` and
``builtin:greedy`` in the process backend) and with games recorded through
:func:`arena.db.record_game`:

* a round robin that is then extended (``kryt tournament extend``);
* a round robin interrupted (Ctrl-C on its third game) and resumed;
* classic tables of three and of four seats (pairwise results come from table games);
* a tournament imported from a game file (``kryt games export`` / ``kryt games import``);
* a recorded tournament with draws, a forfeit of every reason on either seat, a double
  forfeit, voided games (replayed, and one never replayed), two versions of one bot that
  meet, versions and a tournament name with markup and non-ASCII characters;
* a tournament whose run stopped (stored as running, no live run).

The surfaces: ``kryt leaderboard`` (table and ``--json``), ``kryt tournament status``, the web
app (``leaderboard.web.create_app``: HTML pages and ``/api/leaderboard``), the static export
(``kryt leaderboard --html``) and the arena server (``create_service_app``), which serves the
same pages. The recount reads the ``games``, ``series`` and ``submissions`` rows with
``sqlite3`` and scores them by docs/rules.md and docs/leaderboard.md: a forfeit is a loss for
the offender and a win for the other seat, a double forfeit a draw, a voided game counts
nowhere, a classic table game gives one result per pair of seats with a result.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import arena.tournament.runner as runner
from arena.db import (
    GamePlace,
    NewSubmission,
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
)
from kryt.cli import main
from leaderboard.formatting import board_name
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import Game as RulesGame
from tests.web.world import drawn_by_final_answer, play

T0 = datetime(2026, 4, 1, 8, 0, 0, tzinfo=UTC)
CUP_NAME = 'coupe <été> & "co" ☃'
V1 = "1.0 <b>&amp;é"
V2 = "2.0-ß☃</td>"
FORFEIT_REASONS = (
    GameEndReason.TIMEOUT,
    GameEndReason.ILLEGAL_ACTION,
    GameEndReason.MALFORMED_REPLY,
    GameEndReason.CRASH,
    GameEndReason.STARTUP_FAILURE,
    GameEndReason.MEMORY_LIMIT,
    GameEndReason.PROCESS_LIMIT,
    GameEndReason.DISK_LIMIT,
)
RUN = ["--backend", "process", "--move-seconds", "2", "-j", "1"]


# ----------------------------------------------------------------------------- the database


@dataclass
class Site:
    """The filled database and what the tests need to find in it."""

    path: Path
    export: Path
    tournaments: dict[str, int] = field(default_factory=dict)


def _kryt(*args: str) -> None:
    code = main(list(args))
    assert code == 0, (args, code)


def _partial(seed: int, dealer: int, moves: int) -> tuple[list[str], list[Move], int]:
    """A game of seeded random moves cut after ``moves`` moves: its deck, the moves and the
    seat to move next (the one that forfeits)."""
    import random

    game = RulesGame.new(seed=seed, dealer=dealer)
    rng = random.Random(seed)
    played: list[Move] = []
    while len(played) < moves and not game.over:
        seat = game.to_move
        assert seat is not None
        played.append(Move(seat, str(game.play_random(rng)), 0.01))
    assert not game.over and game.to_move is not None
    return [str(c) for c in game.deck or ()], played, game.to_move


def _fill_recorded(url: str) -> tuple[int, int]:
    """The recorded tournament (every way a game can end) and a stopped one; their ids."""
    db = open_database(url)
    try:
        with db.session() as s:
            ids: dict[str, int] = {}
            for key, name, version in (
                ("a1", "alpha", V1),
                ("a2", "alpha", V2),
                ("b", "bravo", "1.0.0"),
                ("c", "charlie", "0.9 «β»"),
            ):
                row = submit(
                    NewSubmission(
                        bot_name=name,
                        version=version,
                        sha256=f"{len(ids) + 0xABC:064x}",
                        submitted_by="reviewer",
                        manifest={"name": name, "version": version},
                    ),
                    session=s,
                ).submission
                assert row.id is not None
                ids[key] = row.id
            a1, a2, b, c = ids["a1"], ids["a2"], ids["b"], ids["c"]
            pairs = [(a1, b), (a2, b), (a1, a2), (b, c), (a2, c)]
            cup = create_tournament(
                TournamentSpec(
                    name=CUP_NAME,
                    seed=31,
                    config={},
                    series=[SeriesSpec(x, y, 40, k) for k, (x, y) in enumerate(pairs)],
                ),
                session=s,
            )
            stopped = create_tournament(
                TournamentSpec(
                    name="stopped run", seed=32, config={}, series=[SeriesSpec(c, a1, 6, 0)]
                ),
                session=s,
            )
            assert cup.id is not None and stopped.id is not None
            series = [x.id for x in series_of_tournament(cup.id, session=s) if x.id is not None]
            (stopped_series,) = series_of_tournament(stopped.id, session=s)
            assert stopped_series.id is not None
        at = T0
        numbers: Counter[int] = Counter()

        def rec(
            sid: int,
            seats: tuple[int, int],
            record: GameRecord,
            *,
            attempt: int = 1,
            number: int | None = None,
        ) -> None:
            nonlocal at
            at += timedelta(minutes=1)
            if number is None:
                numbers[sid] += 1
                number = numbers[sid]
            stamped = GameRecord(
                **{
                    **{f: getattr(record, f) for f in ("deck", "dealer", "turn_limit", "moves")},
                    "ending": record.ending,
                    "winner": record.winner,
                    "forfeit": record.forfeit,
                    "final_cover": record.final_cover,
                    "void_reason": record.void_reason,
                    "double_forfeit_detail": record.double_forfeit_detail,
                    "referee_version": "review 1",
                    "started": at.timestamp(),
                    "finished": at.timestamp() + 2,
                }
            )
            with db.session() as s:
                record_game(stamped, GamePlace(sid, number, attempt, seats), session=s)

        def played(seed: int, dealer: int) -> GameRecord:
            g = play(seed, dealer)
            assert g.ending is not None
            return GameRecord(
                deck=tuple(g.deck),
                dealer=dealer,
                turn_limit=1000,
                moves=tuple(g.moves),
                ending=g.ending,
                winner=g.winner,
                final_cover=g.final_cover,
                referee_version="x",
                started=0.0,
                finished=1.0,
            )

        seed = 300
        # Decisive games in both seat orders.
        for sid, (x, y) in zip(series, pairs, strict=True):
            for k in range(3):
                seed += 1
                rec(sid, (x, y) if k % 2 == 0 else (y, x), played(seed, k % 2))
        # Draws by final answer.
        draw_seed, draw_dealer = drawn_by_final_answer()
        for sid, (x, y) in zip(series[:3], pairs[:3], strict=True):
            rec(sid, (y, x), played(draw_seed, draw_dealer))
        # A forfeit of every reason, on either seat, by different bots.
        for k, reason in enumerate(FORFEIT_REASONS):
            for seat_order in (0, 1):
                sid, (x, y) = series[(k + seat_order) % 5], pairs[(k + seat_order) % 5]
                cut = 0 if reason is GameEndReason.STARTUP_FAILURE else 3 + k
                deck, moves, offender = _partial(500 + 2 * k + seat_order, seat_order, cut)
                # seat_order 0: the pair's first bot forfeits, 1: the second one does.
                victim = x if seat_order == 0 else y
                other = y if victim == x else x
                seats = (victim, other) if offender == 0 else (other, victim)
                rec(
                    sid,
                    seats,
                    GameRecord(
                        deck=tuple(deck),
                        dealer=seat_order,
                        turn_limit=1000,
                        moves=tuple(moves),
                        ending=reason,
                        winner=1 - offender,
                        forfeit=Forfeit(offender, reason, "b'?'", f"review {reason.value}"),
                        referee_version="x",
                        started=0.0,
                        finished=1.0,
                    ),
                )
        # A double forfeit (neither bot started): a draw.
        deck, _, _ = _partial(900, 0, 0)
        rec(
            series[3],
            (b, c),
            GameRecord(
                deck=tuple(deck),
                dealer=0,
                turn_limit=1000,
                moves=(),
                ending=GameEndReason.DOUBLE_FORFEIT,
                winner=None,
                double_forfeit_detail="neither bot started",
                referee_version="x",
                started=0.0,
                finished=1.0,
            ),
        )
        # Voided games (ours): one replayed as attempt 2, one never replayed.
        for sid, (x, y), replayed in ((series[0], pairs[0], True), (series[4], pairs[4], False)):
            deck, moves, _ = _partial(950 + sid, 0, 4)
            numbers[sid] += 1
            number = numbers[sid]
            rec(
                sid,
                (x, y),
                GameRecord(
                    deck=tuple(deck),
                    dealer=0,
                    turn_limit=1000,
                    moves=tuple(moves),
                    ending=GameEndReason.VOID,
                    winner=None,
                    void_reason="the sandbox host went away",
                    referee_version="x",
                    started=0.0,
                    finished=1.0,
                ),
                number=number,
            )
            if replayed:
                rec(sid, (x, y), played(960 + sid, 0), attempt=2, number=number)
        # The stopped tournament: two games, stored as running, no run holds it.
        for k in range(2):
            rec(stopped_series.id, (c, a1) if k == 0 else (a1, c), played(980 + k, k))
        with db.session() as s:
            for sid in series:
                set_series_status(sid, SeriesStatus.FINISHED, session=s)
            set_tournament_status(cup.id, TournamentStatus.FINISHED, session=s)
            set_series_status(stopped_series.id, SeriesStatus.RUNNING, session=s)
            set_tournament_status(stopped.id, TournamentStatus.RUNNING, session=s)
        return cup.id, stopped.id
    finally:
        db.close()


def _bot_copy(folder: Path, name: str) -> Path:
    """The bundled random bot under another name (a fourth player for a table of four)."""
    source = Path(__file__).resolve().parents[2] / "sdk" / "examples" / "random"
    folder.mkdir(parents=True)
    (folder / "bot.py").write_text((source / "bot.py").read_text())
    toml = (source / "bot.toml").read_text().replace('name = "random"', f'name = "{name}"')
    (folder / "bot.toml").write_text(toml)
    return folder


def _tournament_ids(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name, id FROM tournaments").fetchall()
    conn.close()
    return {str(n): int(i) for n, i in rows}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    root = tmp_path_factory.mktemp("surfaces")
    path = root / "kryt.db"
    store = root / "store"
    db = ["-d", str(path), "--store", str(store)]
    two = ["builtin:random", "builtin:greedy"]
    # 1. A round robin, then extended.
    _kryt("tournament", "run", *two, "--games", "4", "--name", "extended", *RUN, *db)
    ids = _tournament_ids(path)
    _kryt("tournament", "extend", str(ids["extended"]), "--games", "2", *db)
    # 2. A round robin interrupted by Ctrl-C while recording its third game, then resumed.
    real = runner.record_game  # type: ignore[attr-defined]
    calls = [0]

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "record_game", interrupted)
        assert (
            main(["tournament", "run", *two, "--games", "5", "--name", "resumed", *RUN, *db]) != 0
        )
    ids = _tournament_ids(path)
    _kryt("tournament", "resume", str(ids["resumed"]), *db)
    # 3. Classic tables of three and four seats.
    fourth = str(_bot_copy(root / "bots" / "randy", "randy"))
    third = str(_bot_copy(root / "bots" / "rando", "rando"))
    classic = ["--ruleset", "classic", "--unsafe", *RUN]
    _kryt("tournament", "run", *two, third, "--table-size", "3", "--games", "2",
          "--name", "tables of three", *classic, *db)  # fmt: skip
    _kryt("tournament", "run", *two, third, fourth, "--table-size", "4", "--games", "1",
          "--name", "tables of four", *classic, *db)  # fmt: skip
    # 4. A tournament imported from another database's game file.
    other = root / "other.db"
    _kryt("tournament", "run", *two, "--games", "3", "--name", "imported cup", *RUN,
          "-d", str(other), "--store", str(root / "store2"))  # fmt: skip
    _kryt("games", "export", str(root / "games.kgn"), "-d", str(other))
    _kryt("games", "import", str(root / "games.kgn"), "-d", str(path))
    # 5. Recorded games: every ending, voided games, two versions of a bot, a stopped run.
    _fill_recorded(f"sqlite:///{path}")
    export = root / "export"
    _kryt("leaderboard", "--html", str(export), "-d", str(path))
    return Site(path, export, _tournament_ids(path))


@pytest.fixture(scope="module")
def client(site: Site) -> Iterator[TestClient]:
    from leaderboard.web import create_app

    db = open_database(f"sqlite:///{site.path}", create=False)
    try:
        with TestClient(create_app(db)) as http:
            yield http
    finally:
        db.close()


# ----------------------------------------------------------------------------- the recount


@dataclass
class Tally:
    wins: int = 0
    draws: int = 0
    losses: int = 0
    forfeits: Counter[str] = field(default_factory=Counter)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def add(self, score: float) -> None:
        if score == 1:
            self.wins += 1
        elif score == 0:
            self.losses += 1
        else:
            self.draws += 1


@dataclass
class Recount:
    """A board's results counted from the raw rows."""

    per: dict[int, Tally] = field(default_factory=dict)
    pair: dict[tuple[int, int], Tally] = field(default_factory=dict)
    games: int = 0

    def score(self, me: int, other: int, points: float) -> None:
        self.per.setdefault(me, Tally()).add(points)
        self.pair.setdefault((me, other), Tally()).add(points)


def _rows(path: Path, query: str, *params: object) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.close()


def _table_results(seats: list[int], pairwise: list[list[int]]) -> list[tuple[int, int, float]]:
    """(seat a, seat b, a's points) for each pair of seats with a result (docs/rules.md)."""
    decided = {(int(w), int(x)) for w, x in pairwise}
    winners = {w for w, _ in decided}
    out = []
    for a, b in combinations(range(len(seats)), 2):
        if (a, b) in decided:
            out.append((a, b, 1.0))
        elif (b, a) in decided:
            out.append((a, b, 0.0))
        elif a in winners and b in winners:
            continue  # two winners have no result between themselves
        else:
            out.append((a, b, 0.5))
    return out


def recount(path: Path, tournament: int | None, board: tuple[str, int]) -> Recount:
    """The board ``(ruleset, seats)`` of a tournament (or of all) from the games' rows."""
    where = "" if tournament is None else f" AND s.tournament_id = {int(tournament)}"
    games = _rows(
        path,
        "SELECT g.seat0_submission_id, g.seat1_submission_id, g.result, g.forfeit_seat,"
        " g.end_reason, g.seats, g.pairwise FROM games g JOIN series s ON s.id = g.series_id"
        " WHERE NOT g.voided AND g.ruleset = ? AND g.players = ?" + where,
        *board,
    )
    found = Recount(games=len(games))
    for s0, s1, result, forfeit_seat, reason, seats_json, pairwise_json in games:
        if board == ("default", 2):
            seats = [int(s0), int(s1)]
            first = {"seat0": 1.0, "seat1": 0.0, "draw": 0.5}[result]
            found.score(seats[0], seats[1], first)
            found.score(seats[1], seats[0], 1 - first)
        else:
            seats = [int(x) for x in json.loads(seats_json)]
            for a, b, points in _table_results(seats, json.loads(pairwise_json or "[]")):
                found.score(seats[a], seats[b], points)
                found.score(seats[b], seats[a], 1 - points)
        if forfeit_seat is not None:
            found.per.setdefault(seats[int(forfeit_seat)], Tally()).forfeits[str(reason)] += 1
    return found


def progress_recount(path: Path, tournament: int | None) -> dict[str, int]:
    where = "" if tournament is None else f" WHERE s.tournament_id = {int(tournament)}"
    (done, voided) = _rows(
        path,
        "SELECT coalesce(sum(NOT g.voided), 0), coalesce(sum(g.voided), 0)"
        " FROM games g JOIN series s ON s.id = g.series_id" + where,
    )[0]
    planned, total, finished = _rows(
        path,
        "SELECT coalesce(sum(games_planned), 0), count(*),"
        " coalesce(sum(status IN ('finished', 'aborted')), 0) FROM series s" + where,
    )[0]
    return {
        "games_done": int(done),
        "games_planned": int(planned),
        "series_done": int(finished),
        "series_total": int(total),
        "voided": int(voided),
    }


def labels(path: Path) -> dict[int, tuple[str, str]]:
    return {
        int(i): (str(n), str(v))
        for i, n, v in _rows(
            path,
            "SELECT s.id, b.name, s.version FROM submissions s JOIN bots b ON b.id = s.bot_id",
        )
    }


def boards_of(path: Path, tournament: int | None) -> list[tuple[str, int]]:
    where = "" if tournament is None else f" AND s.tournament_id = {int(tournament)}"
    return sorted(
        (str(r), int(p))
        for r, p in _rows(
            path,
            "SELECT DISTINCT g.ruleset, g.players FROM games g JOIN series s"
            " ON s.id = g.series_id WHERE NOT g.voided" + where,
        )
    )


def scopes(site: Site) -> list[int | None]:
    return [None, *sorted(site.tournaments.values())]


# ----------------------------------------------------------------------------- the surfaces


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, (args, err)
    return out


def cli_json(
    capsys: pytest.CaptureFixture[str], site: Site, tournament: int | None, board: tuple[str, int]
) -> dict[str, Any]:
    args = ["leaderboard", "--json", "-d", str(site.path)]
    if tournament is not None:
        args += ["-t", str(tournament)]
    args += ["--ruleset", board[0], "--table-size", str(board[1])]
    data: dict[str, Any] = json.loads(cli(capsys, *args))
    return data


def api(client: TestClient, tournament: int | None, board: tuple[str, int] | None) -> Any:
    query = [] if tournament is None else [f"tournament={tournament}"]
    if board is not None:
        query += [f"ruleset={board[0]}", f"table_size={board[1]}"]
    response = client.get("/api/leaderboard" + ("?" + "&".join(query) if query else ""))
    assert response.status_code == 200, response.text
    return response.json()


class Tables(HTMLParser):
    """Cell texts of every table's body rows, by the table's id or first class (and
    ``data-board``); ``<dl>`` facts by ``data-board``; the ``class`` of each cell."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.facts: dict[str, dict[str, str]] = {}
        self._rows: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self._body = False
        self._dl: dict[str, str] | None = None
        self._term: str | None = None
        self._text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            key = a.get("id") or (a.get("class") or "").split(" ")[0]
            if a.get("data-board"):
                key += f":{a['data-board']}"
            self._rows = self.tables.setdefault(key, [])
        elif tag == "tbody":
            self._body = True
        elif tag == "tr" and self._rows is not None and self._body:
            self._rows.append([])
        elif tag == "td" and self._rows is not None and self._body:
            self._cell = []
        elif tag == "dl" and a.get("data-board"):
            self._dl = self.facts.setdefault(str(a["data-board"]), {})
        elif tag in ("dt", "dd") and self._dl is not None:
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._rows:
            self._rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tbody":
            self._body = False
        elif tag == "table":
            self._rows = None
        elif tag in ("dt", "dd") and self._dl is not None and self._text is not None:
            text = " ".join("".join(self._text).split())
            if tag == "dt":
                self._term = text
            elif self._term is not None:
                self._dl[self._term] = text
            self._text = None
        elif tag == "dl":
            self._dl = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._text is not None:
            self._text.append(data)


def parse(html: str) -> Tables:
    parser = Tables()
    parser.feed(html)
    return parser


def forfeits_text(forfeits: dict[str, int]) -> str:
    return ", ".join(f"{r.replace('_', ' ')} {n}" for r, n in sorted(forfeits.items()))


def rating_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def table_cells(row: dict[str, Any]) -> list[str]:
    """The cells of ``kryt leaderboard``'s plain table for one row of its JSON, as
    docs/leaderboard.md says they are rounded."""
    return [
        str(row["rank"]),
        row["bot"],
        row["version"],
        rating_text(row["rating"]),
        rating_text(row["interval"]),
        f"{row['elo']:.0f}" + ("*" if row["elo_provisional"] else ""),
        str(row["games"]),
        f"{row['wins']}/{row['draws']}/{row['losses']}",
        f"{100 * row['score']:.1f}",
        "" if row["los_next"] is None else f"{row['los_next']:.2f}",
        forfeits_text(row["forfeits"]),
    ]


def html_row(row: dict[str, Any]) -> list[str]:
    """A JSON row as the standings table of the web page shows it."""
    rating = rating_text(row["rating"])
    if row["interval"] is not None:
        rating += f" ± {row['interval']:.0f}"
    return [
        str(row["rank"]),
        row["bot"],
        " ".join(row["version"].split()),
        rating,
        f"{row['elo']:.0f}" + ("?" if row["elo_provisional"] else ""),
        str(row["games"]),
        f"{row['wins']} / {row['draws']} / {row['losses']}",
        f"{100 * row['score']:.1f}",
        "—" if row["los_next"] is None else f"{row['los_next']:.2f}",
        forfeits_text(row["forfeits"]),
    ]


def check_rows_against_recount(data: dict[str, Any], counted: Recount, where: str) -> None:
    names = labels_cache
    assert data["board"]["games"] == counted.games, where
    got = {row["submission_id"]: row for row in data["rows"]}
    assert set(got) == set(counted.per), where
    for sid, tally in counted.per.items():
        row = got[sid]
        who = f"{where}: {names.get(sid)}"
        assert (row["wins"], row["draws"], row["losses"]) == (
            tally.wins,
            tally.draws,
            tally.losses,
        ), who
        assert row["games"] == tally.games, who
        assert row["score"] == pytest.approx((tally.wins + tally.draws / 2) / tally.games), who
        assert row["forfeits"] == dict(tally.forfeits), who
    assert [row["rank"] for row in data["rows"]] == list(range(1, len(data["rows"]) + 1)), where


labels_cache: dict[int, tuple[str, str]] = {}


# ----------------------------------------------------------------------------- the tests


def test_the_database_holds_what_the_review_needs(site: Site) -> None:
    reasons = {str(r) for (r,) in _rows(site.path, "SELECT DISTINCT end_reason FROM games")}
    assert {r.value for r in FORFEIT_REASONS} <= reasons
    assert {"double forfeit", "void", "draw by final answer"} <= reasons
    assert set(boards_of(site.path, None)) == {("default", 2), ("classic", 3), ("classic", 4)}
    assert {"extended", "resumed", "imported cup", CUP_NAME, "stopped run"} <= set(site.tournaments)
    # Forfeits on either seat, a version of a bot meeting another version of it.
    seats = {
        int(s)
        for (s,) in _rows(
            site.path, "SELECT forfeit_seat FROM games WHERE forfeit_seat IS NOT NULL"
        )
    }
    assert seats == {0, 1}
    (config,) = _rows(site.path, "SELECT config FROM tournaments WHERE name = 'imported cup'")[0]
    assert json.loads(config).get("imported") is True


def test_cli_json_and_web_api_are_one_document(
    capsys: pytest.CaptureFixture[str], site: Site, client: TestClient
) -> None:
    for tournament in scopes(site):
        for board in boards_of(site.path, tournament) or [("default", 2)]:
            mine = cli_json(capsys, site, tournament, board)
            assert mine == api(client, tournament, board), (tournament, board)
        # Without options both choose the same board.
        args = ["leaderboard", "--json", "-d", str(site.path)]
        if tournament is not None:
            args += ["-t", str(tournament)]
        assert json.loads(cli(capsys, *args)) == api(client, tournament, None), tournament


def test_every_board_equals_an_independent_recount(site: Site, client: TestClient) -> None:
    labels_cache.update(labels(site.path))
    for tournament in scopes(site):
        for board in boards_of(site.path, tournament):
            data = api(client, tournament, board)
            assert (data["board"]["ruleset"], data["board"]["table_size"]) == board
            check_rows_against_recount(
                data, recount(site.path, tournament, board), f"{tournament} {board}"
            )


def test_progress_and_status_equal_the_rows(
    capsys: pytest.CaptureFixture[str], site: Site, client: TestClient
) -> None:
    for tournament in scopes(site):
        data = api(client, tournament, None)
        assert data["progress"] == progress_recount(site.path, tournament), tournament
    # `kryt tournament status` lists each tournament's status and games as the web shows them.
    out = cli(capsys, "tournament", "status", "-d", str(site.path))
    listed = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) > 6 and cells[1].isdigit():
            listed[int(cells[1])] = (cells[3], cells[5])
    assert set(listed) == set(site.tournaments.values())
    for tid in site.tournaments.values():
        data = api(client, tid, None)
        status, games = listed[tid]
        shown = data["tournament"]["status"]
        assert status.removesuffix(" (imported)") == shown, tid
        done = data["progress"]
        assert games == f"{done['games_done']}/{done['games_planned']}", tid
        # The tournament's page names the same status.
        page = client.get(f"/tournaments/{tid}").text
        assert f'<strong class="status-{shown}">{shown}</strong>' in page, tid
    assert api(client, site.tournaments["stopped run"], None)["tournament"]["status"] == "stopped"


def test_series_of_tournament_status_equal_the_rows(
    capsys: pytest.CaptureFixture[str], site: Site
) -> None:
    names = labels(site.path)
    for name in ("extended", "resumed", "imported cup", CUP_NAME):
        tid = site.tournaments[name]
        out = cli(capsys, "tournament", "status", str(tid), "-d", str(site.path))
        rows: list[list[str]] = []
        for line in out.splitlines():
            if not line.startswith("│"):
                continue
            cells = [c.strip() for c in line.split("│")[1:-1]]
            if cells[2] or not rows:
                rows.append(cells)
            else:  # a name folded onto the next line
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
        want = []
        for sid, a, b, planned in _rows(
            site.path,
            "SELECT id, submission_a_id, submission_b_id, games_planned FROM series"
            " WHERE tournament_id = ? ORDER BY position",
            tid,
        ):
            games = _rows(
                site.path,
                "SELECT seat0_submission_id, result, forfeit_seat FROM games"
                " WHERE series_id = ? AND NOT voided",
                sid,
            )
            a_wins = sum(1 for s0, r, _ in games if r == ("seat0" if s0 == a else "seat1"))
            b_wins = sum(1 for s0, r, _ in games if r == ("seat1" if s0 == a else "seat0"))
            draws = sum(1 for _, r, _ in games if r == "draw")
            forfeits = sum(1 for _, _, f in games if f is not None)
            want.append(
                [
                    " ".join(names[a]),
                    " ".join(names[b]),
                    f"{len(games)}/{planned}",
                    str(a_wins),
                    str(draws),
                    str(b_wins),
                    str(forfeits),
                ]
            )
        assert [r[2:7] for r in rows] == [w[2:] for w in want], name
        if name != CUP_NAME:  # plain names: shown whole
            assert [r[:2] for r in rows] == [w[:2] for w in want], name


def _plain_table(out: str) -> tuple[list[list[str]], str]:
    rows = [
        [c.strip() for c in line.split("│")[1:-1]]
        for line in out.splitlines()
        if line.startswith("│")
    ]
    caption = " ".join(
        line.strip() for line in out.splitlines() if not line.startswith(("│", "┏", "┃", "┡", "└"))
    )
    return rows, caption


def test_the_plain_table_prints_the_json_numbers(
    capsys: pytest.CaptureFixture[str], site: Site
) -> None:
    for tournament in scopes(site):
        for board in boards_of(site.path, tournament):
            data = cli_json(capsys, site, tournament, board)
            args = ["leaderboard", "-d", str(site.path)]
            args += [] if tournament is None else ["-t", str(tournament)]
            args += ["--ruleset", board[0], "--table-size", str(board[1])]
            rows, caption = _plain_table(cli(capsys, *args))
            want = [table_cells(r) for r in data["rows"]]
            assert rows == want, (tournament, board)
            done = data["progress"]
            assert f"{done['games_done']}/{done['games_planned']} games played" in caption
            if done["voided"]:
                assert f"{done['voided']} voided" in caption


def _html_pages(site: Site, client: TestClient) -> Iterator[tuple[str, int | None, str]]:
    for tournament in scopes(site):
        live = client.get("/" if tournament is None else f"/tournaments/{tournament}").text
        yield "live", tournament, live
        file = site.export / (
            "index.html" if tournament is None else f"tournaments/{tournament}.html"
        )
        yield "export", tournament, file.read_text(encoding="utf-8")


def test_standings_pages_and_the_export_show_the_json_numbers(
    site: Site, client: TestClient
) -> None:
    for where, tournament, html in _html_pages(site, client):
        data = api(client, tournament, None)
        rows = parse(html).tables.get("standings", [])
        assert rows == [html_row(r) for r in data["rows"]], (where, tournament)
        board = data["board"]
        if board["ruleset"] != "default":
            assert (
                f"Board: {board['ruleset']}, table of {board['table_size']} seats · "
                f"{board['games']} games"
            ) in html, (where, tournament)


def test_export_json_files_are_the_api_documents(site: Site, client: TestClient) -> None:
    assert json.loads((site.export / "leaderboard.json").read_text()) == api(client, None, None)
    for tid in site.tournaments.values():
        exported = json.loads((site.export / f"leaderboard-{tid}.json").read_text())
        assert exported == api(client, tid, None), tid


def test_tournament_list_progress_on_the_index_equals_the_rows(
    site: Site, client: TestClient
) -> None:
    for where, html in (
        ("live", client.get("/").text),
        ("export", (site.export / "index.html").read_text(encoding="utf-8")),
    ):
        rows = parse(html).tables["tournaments"]
        assert len(rows) == len(site.tournaments), where
        for row in rows:
            tid = int(re.findall(r"#(\d+)", row[0])[-1])
            done = progress_recount(site.path, tid)
            assert f"{done['games_done']} / {done['games_planned']}" in row[2] or (
                f"{done['games_done']}/{done['games_planned']}" in row[2]
            ), (where, row)
            assert row[1] == api(client, tid, None)["tournament"]["status"], (where, row)


def _board_key(board: tuple[str, int]) -> str:
    return f"{board[0]}-{board[1]}"


def test_submission_pages_show_the_board_rows_and_recounted_opponents(
    site: Site, client: TestClient
) -> None:
    names = labels(site.path)
    label_to_id = {f"{n} {v}": sid for sid, (n, v) in names.items()}
    boards = {b: api(client, None, b) for b in boards_of(site.path, None)}
    counts = {b: recount(site.path, None, b) for b in boards}
    for sid in names:
        for where, html in (
            ("live", client.get(f"/submissions/{sid}").text),
            ("export", (site.export / f"submissions/{sid}.html").read_text(encoding="utf-8")),
        ):
            page = parse(html)
            for board, data in boards.items():
                row = next((r for r in data["rows"] if r["submission_id"] == sid), None)
                facts = page.facts.get(_board_key(board))
                if row is None:
                    assert facts is None, (where, sid, board)
                    continue
                assert facts is not None, (where, sid, board)
                rating = rating_text(row["rating"])
                if row["interval"] is not None:
                    rating += f" ± {row['interval']:.0f}"
                assert facts["Rank"] == str(row["rank"]), (where, sid, board)
                assert facts["Rating"] == rating, (where, sid, board)
                assert facts["W / D / L"] == f"{row['wins']} / {row['draws']} / {row['losses']}"
                assert facts["Score"] == f"{100 * row['score']:.1f} %", (where, sid, board)
                assert facts["Forfeits"] == (forfeits_text(row["forfeits"]) or "none")
                assert facts["Elo"].startswith(f"{row['elo']:.0f}"), (where, sid, board)
                games = facts.get("Games") or facts.get("Pairwise results") or ""
                assert games.split()[0] == str(row["games"]), (where, sid, board)
                # Results against each opponent: the recount of the rows, adding up to the row.
                table = page.tables[f"opponents:{_board_key(board)}"]
                got = {label_to_id[r[0]]: r for r in table}
                want = {o: t for (me, o), t in counts[board].pair.items() if me == sid}
                assert set(got) == set(want), (where, sid, board)
                for other, tally in want.items():
                    cells = got[other]
                    assert cells[1] == str(tally.games), (where, sid, other)
                    assert cells[2] == f"{tally.wins} / {tally.draws} / {tally.losses}"
                    assert cells[3] == f"{100 * (tally.wins + tally.draws / 2) / tally.games:.1f}"


def test_per_opponent_forfeits_count_the_games_the_bot_forfeited(
    site: Site, client: TestClient
) -> None:
    """docs/leaderboard.md: the Forfeits column counts games lost by forfeit; the page's
    per-opponent Forfeits column counts the games this submission forfeited against that
    opponent, so on the default board they add up to the submission's forfeits."""
    names = labels(site.path)
    label_to_id = {f"{n} {v}": sid for sid, (n, v) in names.items()}
    data = api(client, None, ("default", 2))
    for row in data["rows"]:
        sid = row["submission_id"]
        table = parse(client.get(f"/submissions/{sid}").text).tables["opponents:default-2"]
        per_opponent = {label_to_id[r[0]]: int(r[4]) for r in table}
        assert sum(per_opponent.values()) == sum(row["forfeits"].values()), names[sid]


def test_bot_pages_show_each_versions_standing(site: Site, client: TestClient) -> None:
    """A bot page lists each version once per board it played on (board named when any
    version played anything but the default game), with that board's rating and games."""
    boards = {board_name(*board): board for board in boards_of(site.path, None)}
    by_board = {
        name: {r["submission_id"]: r for r in api(client, None, board)["rows"]}
        for name, board in boards.items()
    }
    names = labels(site.path)
    for bot in sorted({n for n, _ in names.values()}):
        rows = parse(client.get(f"/bots/{bot}").text).tables["versions"]
        versions = {sid: " ".join(v.split()) for sid, (n, v) in names.items() if n == bot}
        assert {r[0] for r in rows} == set(versions.values()), bot
        named = any(len(r) == 6 for r in rows)
        for sid, version in versions.items():
            mine = [r for r in rows if r[0] == version]
            played = {name: rows_[sid] for name, rows_ in by_board.items() if sid in rows_}
            if not played:
                (cells,) = mine
                assert cells[-2:] == ["—", "0"], (bot, version, cells)
                continue
            shown = {(r[3] if named else "default game"): r[-2:] for r in mine}
            assert len(shown) == len(mine), (bot, version, mine)
            want = {
                name: [rating_text(row["rating"]), str(row["games"])]
                for name, row in played.items()
            }
            assert shown == want, (bot, version)


def test_the_live_elo_plot_ends_at_the_standings_elo(site: Site, client: TestClient) -> None:
    data = api(client, None, ("default", 2))
    for row in data["rows"]:
        html = client.get(f"/submissions/{row['submission_id']}").text
        points = re.findall(r"game (\d+): (-?\d+)", html)
        assert points, row["bot"]
        last = max(points, key=lambda p: int(p[0]))
        assert last[1] == f"{row['elo']:.0f}", (row["bot"], row["version"])


def test_ratings_are_the_fit_of_the_recounted_pairs(site: Site, client: TestClient) -> None:
    """The rating of record of a standard board is the BayesElo fit (docs/ratings.md) of the
    per-pair counts: fitted here from the recount, it gives the numbers every surface shows
    (to the documented display precision), and the order."""
    from leaderboard.ratings import PairCounts, RatingsError, fit_bayeselo

    for tournament in (None, site.tournaments["extended"], site.tournaments[CUP_NAME]):
        seats = _rows(
            site.path,
            "SELECT g.seat0_submission_id, g.seat1_submission_id, g.first_mover, g.result"
            " FROM games g JOIN series s ON s.id = g.series_id WHERE NOT g.voided"
            " AND g.ruleset = 'default'"
            + ("" if tournament is None else f" AND s.tournament_id = {tournament}"),
        )
        counts: dict[tuple[str, str], list[int]] = {}
        for s0, s1, first, result in seats:
            order = (str(s0), str(s1)) if first == 0 else (str(s1), str(s0))
            won = result == f"seat{first}"
            cell = counts.setdefault(order, [0, 0, 0])
            cell[0 if won else 1 if result == "draw" else 2] += 1
        table = PairCounts.from_mapping({k: (w, d, lo) for k, (w, d, lo) in counts.items()})
        data = api(client, tournament, ("default", 2))
        try:
            fit = fit_bayeselo(table, offset=1500.0)
            fallback = False
        except RatingsError:  # the documented fallback: advantage 0, drawelo 97.3
            try:
                fit = fit_bayeselo(table, offset=1500.0, fit_advantage=False, fit_drawelo=False)
            except RatingsError:  # no rating at all: groups that never met
                assert data["note"].startswith("no rating fit: ")
                assert all(r["rating"] is None and r["interval"] is None for r in data["rows"])
                continue
            fallback = True
        assert data["note"].startswith("first-mover advantage 0 and drawelo") == fallback
        assert data["model"]["drawelo"] == pytest.approx(fit.drawelo)
        assert data["model"]["advantage"] == pytest.approx(fit.advantage, abs=1e-9)
        for row in data["rows"]:
            k = fit.names.index(str(row["submission_id"]))
            assert row["rating"] == pytest.approx(float(fit.ratings[k]), abs=1e-6)
            assert row["interval"] == pytest.approx(float(fit.intervals[k]), abs=1e-6)
        names = list(fit.names)
        ranked = sorted(names, key=lambda n: (-float(fit.ratings[names.index(n)]), int(n)))
        assert [str(r["submission_id"]) for r in data["rows"]] == ranked, tournament


def test_the_arena_server_serves_the_same_standings(site: Site, client: TestClient) -> None:
    from arena.service.app import create_service_app
    from arena.service.settings import ServiceSettings

    db = open_database(f"sqlite:///{site.path}", create=False)
    try:
        app = create_service_app(
            db, ServiceSettings(store=site.path.parent / "arena-store"), run_background=False
        )
        with TestClient(app) as arena:
            for tournament in scopes(site):
                q = "" if tournament is None else f"?tournament={tournament}"
                response = arena.get(f"/api/leaderboard{q}")
                assert response.status_code == 200, response.text
                assert response.json() == api(client, tournament, None), tournament
                page = "/" if tournament is None else f"/tournaments/{tournament}"
                mine = parse(arena.get(page).text).tables.get("standings", [])
                assert mine == parse(client.get(page).text).tables.get("standings", [])
            for sid in labels(site.path):
                theirs = parse(arena.get(f"/submissions/{sid}").text)
                ours = parse(client.get(f"/submissions/{sid}").text)
                assert theirs.facts == ours.facts, sid
                assert {k: v for k, v in theirs.tables.items() if k.startswith("opponents")} == {
                    k: v for k, v in ours.tables.items() if k.startswith("opponents")
                }, sid
    finally:
        db.close()


def test_voided_games_count_nowhere_but_are_listed_as_voided(
    site: Site, client: TestClient
) -> None:
    voided = _rows(
        site.path,
        "SELECT g.id, g.series_id, s.tournament_id FROM games g JOIN series s"
        " ON s.id = g.series_id WHERE g.voided",
    )
    assert voided
    for game_id, series_id, tid in voided:
        data = client.get(f"/api/games/{game_id}").json()
        assert data["voided"] is True and data["result_text"] == "voided"
        rows = parse(client.get(f"/series/{series_id}").text).tables
        body = " ".join(" ".join(r) for t in rows.values() for r in t)
        assert "voided" in body
        # The tournament's series list counts the series' counted games only.
        (counted,) = _rows(
            site.path, "SELECT count(*) FROM games WHERE series_id = ? AND NOT voided", series_id
        )[0]
        series_rows = parse(client.get(f"/tournaments/{tid}").text).tables["series"]
        (cells,) = [r for r in series_rows if r[0] == f"#{series_id}"]
        assert cells[3].split(" / ")[0] == str(counted), series_id


def _listed(capsys: pytest.CaptureFixture[str], site: Site, *args: str) -> int:
    out = cli(capsys, "games", "list", "-d", str(site.path), "-n", "100000", *args)
    if "no games match" in out:
        return 0
    (count,) = re.findall(r"^(\d+) games?;", out, flags=re.MULTILINE)
    return int(count)


def test_games_list_filters_agree_with_the_standings(
    capsys: pytest.CaptureFixture[str], site: Site, client: TestClient
) -> None:
    """``kryt games list --bot B --result win|loss|draw`` lists the games the standings count
    as B's wins, losses and draws (a bot with one version, on a two-player board), and
    ``--reason R`` the games a forfeit board counts under R."""
    tid = site.tournaments[CUP_NAME]
    data = api(client, tid, None)
    names = labels(site.path)
    for row in data["rows"]:
        bot = row["bot"]
        if sum(1 for n, _ in names.values() if n == bot) != 1:
            continue  # --bot takes every version of a bot
        t = ["-t", str(tid), "--bot", bot]
        assert _listed(capsys, site, *t, "--result", "win") == row["wins"], bot
        assert _listed(capsys, site, *t, "--result", "loss") == row["losses"], bot
        assert _listed(capsys, site, *t, "--result", "draw") == row["draws"], bot
    for reason in FORFEIT_REASONS:
        total = sum(r["forfeits"].get(reason.value, 0) for r in data["rows"])
        assert _listed(capsys, site, "-t", str(tid), "--reason", reason.value) == total, reason
    voided = progress_recount(site.path, tid)["voided"]
    assert _listed(capsys, site, "-t", str(tid), "--result", "void") == voided


def test_a_bot_page_never_shows_no_games_for_a_version_that_played(
    site: Site, client: TestClient
) -> None:
    """A version whose only games are at classic tables has a standing on those boards (its
    submission page shows it); its bot's page lists the version once per board it played
    on, named, with the games the board counts for it. (It took every version's standing
    from the overall board only: such a version showed rating '—' and 0 games.)"""
    for bot in ("rando", "randy"):
        rows = parse(client.get(f"/bots/{bot}").text).tables["versions"]
        (sid,) = [s for s, (n, _) in labels(site.path).items() if n == bot]
        played = {
            board_name(*board): recount(site.path, None, board).per.get(sid, Tally()).games
            for board in boards_of(site.path, None)
        }
        played = {name: games for name, games in played.items() if games}
        assert played and "default game" not in played, played
        # Version, status, submitted, board, rating, games: one row per board played on.
        shown = {cells[3]: int(cells[5]) for cells in rows}
        assert len(rows) == len(shown), rows
        assert shown == played, (bot, rows)


def test_tournament_status_shows_every_bot_version_whole(
    capsys: pytest.CaptureFixture[str], site: Site
) -> None:
    tid = site.tournaments[CUP_NAME]
    out = cli(capsys, "tournament", "status", str(tid), "-d", str(site.path))
    text = " ".join(out.split())
    for version in (V1, V2, "0.9 «β»"):
        assert "…" not in text
        folded = "".join(out.split())
        assert "".join(version.split()) in folded, version
