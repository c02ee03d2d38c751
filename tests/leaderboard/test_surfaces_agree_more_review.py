"""An outside review, continued from ``test_surfaces_agree_review.py``: every surface that
shows results tells the truth of the raw rows, now on **PostgreSQL** as well as SQLite, with
**forfeits at classic tables** (three and four seats) and the **duplicate format**.

One database per backend (a fresh PostgreSQL database of this module's own, created and
dropped by ``tests.db.conftest.scratch_postgres_database``; a SQLite file) is filled with real
``kryt tournament run`` runs on the process backend, bots written into the temporary folder:

* tables of three of ``builtin:random``, ``builtin:greedy`` and one misbehaving bot each: one
  that sleeps an hour at its first move (its own clock, ``--time sleeper=0.5+0.5``, against
  everyone else's 20 s a move), one that raises in its own code (a crash), one that answers a
  well-formed but illegal action;
* a table of four: ``builtin:random``, ``builtin:greedy``, a bot that plays its first legal
  action and one that answers garbage (a malformed reply);
* a table of three where two bots never start: both forfeit, the first in the order of play
  is the recorded loser (docs/rules.md, "Bots that cannot start");
* a duplicate round robin (``--format duplicate``) with a bot that forfeits one game of two
  deals, and a duplicate run interrupted (Ctrl-C) inside a deal, leaving a single game;
* the colleague's recorded tournament (:func:`_fill_recorded`: every two-player ending, a
  double forfeit, voided games, two versions of a bot) and a stopped one.

The recount reads the ``games`` and ``series`` rows with SQLAlchemy straight from the database
(psycopg on PostgreSQL) and scores them by docs/rules.md and docs/leaderboard.md: a forfeit is
a loss for the offender; at a table, each pair of seats with a result counts once (each other
seat beats the loser; two winners have no result between them; bots that could not start draw
among themselves), and the game's forfeit (the Forfeits column, by reason) belongs to the seat
the record names; duplicate deal pairs are games 2k-1 and 2k of a series (docs/ratings.md), a
pentanomial counts each pairing's complete pairs from the alphabetically first bot's side.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.pool import NullPool

import arena.tournament.runner as runner
from arena.db import open_database
from kryt.cli import main
from tests.db.conftest import scratch_postgres_database
from tests.leaderboard.test_surfaces_agree_review import (
    Recount,
    Tally,
    _fill_recorded,
    _plain_table,
    _table_results,
    api,
    cli,
    forfeits_text,
    html_row,
    parse,
    table_cells,
)

pytestmark = pytest.mark.timeout(600)

TABLE_FORFEITS = {"timeout", "crash", "malformed reply", "illegal action", "startup failure"}
TABLE_RUNS = ("sleeper three", "raiser three", "illegal three", "hostile four", "never started")
"""The table tournaments: one misbehaving seat each (two that never start in the last)."""

HOSTILE = '''\
"""A bot of the review that misbehaves as its name says."""

import sys
import time

from sdk import Bot, serve

KIND = {kind!r}
if KIND.startswith("nostart"):
    print("planned start-up failure", file=sys.stderr, flush=True)
    sys.exit(5)


class Hostile(Bot):
    rulesets = ("default", "classic")

    def act(self, view):
        return self.act_table(view)

    def act_table(self, view):
        if KIND == "dupgarbage" and self.context.game_number % 3 != 0:
            return view.legal_actions[0]
        if KIND == "sleeper":
            time.sleep(3600)
        if KIND == "raiser":
            raise RuntimeError("planned error")
        if KIND in ("garbage", "dupgarbage"):
            return "fold everything"
        if KIND == "illegal":
            return "take" if not view.led else "lead " + str(view.hand[0])
        return view.legal_actions[0]


if __name__ == "__main__":
    serve(Hostile())
'''


def _hostile(root: Path, kind: str) -> str:
    folder = root / kind
    folder.mkdir(parents=True)
    (folder / "bot.py").write_text(HOSTILE.format(kind=kind))
    (folder / "bot.toml").write_text(
        f'name = "{kind}"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    return str(folder)


# ----------------------------------------------------------------------------- the world


@dataclass
class World:
    backend: str
    url: str
    export: Path
    engine: Engine
    tournaments: dict[str, int] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)


def _run(world: World, name: str, *args: str) -> None:
    world.codes[name] = main(["tournament", "run", *args, "--name", name])


def _build(url: str, root: Path, backend: str, engine: Engine) -> World:
    world = World(backend, url, root / "export", engine)
    bots = root / "bots"
    sleeper, raiser, garbage, illegal, calm, nostart, nostart2, dupgarbage = (
        _hostile(bots, k)
        for k in (
            "sleeper", "raiser", "garbage", "illegal", "calm", "nostart", "nostart2", "dupgarbage"
        )
    )  # fmt: skip
    db = ["-d", url, "--store", str(root / "store")]
    # Generous clocks everywhere except the sleeper's own (it sleeps an hour).
    run = ["--backend", "process", "--unsafe", "--move-seconds", "20", "--bank-seconds", "120",
           "-j", "1", *db]  # fmt: skip
    table = ["--ruleset", "classic", "--table-size"]
    # One misbehaving seat a table: two at one table, the one asked first (the deal decides)
    # ended the game and the other was never asked, so its forfeit was missing at random.
    _run(world, "sleeper three", "builtin:random", "builtin:greedy", sleeper, *table, "3",
         "--games", "1", "--time", "sleeper=0.5+0.5", *run)  # fmt: skip
    _run(world, "raiser three", "builtin:random", "builtin:greedy", raiser, *table, "3",
         "--games", "1", *run)  # fmt: skip
    _run(world, "illegal three", "builtin:random", "builtin:greedy", illegal, *table, "3",
         "--games", "1", *run)  # fmt: skip
    _run(world, "hostile four", "builtin:random", "builtin:greedy", calm, garbage,
         *table, "4", "--games", "1", *run)  # fmt: skip
    _run(world, "never started", "builtin:random", nostart, nostart2, *table, "3",
         "--games", "1", *run)  # fmt: skip
    _run(world, "duplicate", "builtin:random", "builtin:greedy", dupgarbage,
         "--format", "duplicate", "--games", "4", *run)  # fmt: skip
    # A duplicate run interrupted by Ctrl-C while recording its fourth game: 3 games stored.
    real = runner.record_game  # type: ignore[attr-defined]
    calls = [0]

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 4:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "record_game", interrupted)
        _run(world, "duplicate cut", "builtin:random", "builtin:greedy",
             "--format", "duplicate", "--games", "6", *run)  # fmt: skip
    _fill_recorded(url)
    _fill_duplicate(url)
    code = main(["leaderboard", "--html", str(world.export), "-d", url])
    assert code == 0, code
    with engine.connect() as conn:
        world.tournaments = {
            str(n): int(i) for n, i in conn.execute(text("SELECT name, id FROM tournaments"))
        }
    return world


def _fill_duplicate(url: str) -> None:
    """A duplicate tournament recorded through :func:`arena.db.record_game`: deal 1 whole;
    deal 2's first game voided and never replayed (its second game is a deal of one, counted
    from the even side); deal 3's second game voided and replayed; deal 4 a draw by final
    answer and a win; deal 5 only its first game."""
    from datetime import UTC, datetime, timedelta

    from arena.db import (
        GamePlace,
        NewSubmission,
        SeriesFormat,
        SeriesSpec,
        TournamentSpec,
        create_tournament,
        record_game,
        series_of_tournament,
        submit,
    )
    from referee.protocol.messages import GameEndReason
    from referee.record import GameRecord
    from tests.web.world import drawn_by_final_answer, play

    db = open_database(url)
    try:
        with db.session() as s:
            ids = []
            for k, name in enumerate(("delta", "echo")):
                row = submit(
                    NewSubmission(
                        bot_name=name,
                        version="1.0.0",
                        sha256=f"{0xD00 + k:064x}",
                        submitted_by="reviewer",
                        manifest={"name": name, "version": "1.0.0"},
                    ),
                    session=s,
                ).submission
                assert row.id is not None
                ids.append(row.id)
            spec = SeriesSpec(ids[0], ids[1], 10, 0, format=SeriesFormat.DUPLICATE)
            cup = create_tournament(
                TournamentSpec(name="recorded duplicate", seed=7, config={}, series=[spec]),
                session=s,
            )
            assert cup.id is not None
            (series,) = series_of_tournament(cup.id, session=s)
            assert series.id is not None
        at = datetime(2026, 5, 1, tzinfo=UTC)
        draw_seed, draw_dealer = drawn_by_final_answer()

        def rec(
            number: int, seed: int, dealer: int, *, attempt: int = 1, void: bool = False
        ) -> None:
            nonlocal at
            at += timedelta(minutes=1)
            g = play(seed, dealer, stop_after=4 if void else None)
            ending = GameEndReason.VOID if void else g.ending
            assert ending is not None
            record = GameRecord(
                deck=tuple(g.deck),
                dealer=dealer,
                turn_limit=1000,
                moves=tuple(g.moves),
                ending=ending,
                winner=None if void else g.winner,
                final_cover=None if void else g.final_cover,
                void_reason="the sandbox host went away" if void else "",
                referee_version="review 1",
                started=at.timestamp(),
                finished=at.timestamp() + 1,
            )
            assert series.id is not None
            with db.session() as s:
                record_game(record, GamePlace(series.id, number, attempt, tuple(ids)), session=s)

        for deal, seed in enumerate((71, 72, 73), start=0):
            first, second = 2 * deal + 1, 2 * deal + 2
            rec(first, seed, 0, void=deal == 1)
            rec(second, seed, 1, void=deal == 2)
            if deal == 2:
                rec(second, seed, 1, attempt=2)
        rec(7, draw_seed, draw_dealer)
        rec(8, draw_seed, 1 - draw_dealer)
        rec(9, 75, 0)
    finally:
        db.close()


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ],
)
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    backend = str(request.param)
    root = tmp_path_factory.mktemp(f"more-{backend}")
    if backend == "sqlite":
        url = f"sqlite:///{root / 'kryt.db'}"
        engine = create_engine(url, poolclass=NullPool)
        try:
            yield _build(url, root, backend, engine)
        finally:
            engine.dispose()
        return
    with scratch_postgres_database() as url:
        engine = create_engine(url, poolclass=NullPool)
        try:
            yield _build(url, root, backend, engine)
        finally:
            engine.dispose()


@pytest.fixture(scope="module")
def client(world: World) -> Iterator[TestClient]:
    from leaderboard.web import create_app

    db = open_database(world.url, create=False)
    try:
        with TestClient(create_app(db)) as http:
            yield http
    finally:
        db.close()


@pytest.fixture(scope="module")
def arena(world: World) -> Iterator[TestClient]:
    from arena.service.app import create_service_app
    from arena.service.settings import ServiceSettings

    db = open_database(world.url, create=False)
    try:
        app = create_service_app(
            db, ServiceSettings(store=world.export.parent / "arena-store"), run_background=False
        )
        with TestClient(app) as http:
            yield http
    finally:
        db.close()


# ----------------------------------------------------------------------------- the rows


@dataclass(frozen=True)
class Row:
    """One stored game, as the recount needs it."""

    id: int
    series_id: int
    tournament_id: int
    number: int
    voided: bool
    ruleset: str
    players: int
    seats: tuple[int, ...]
    result: str | None
    reason: str
    forfeit_seat: int | None
    pairwise: tuple[tuple[int, int], ...]
    first_mover: int
    format: str
    dealer: int


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def rows(world: World) -> list[Row]:
    query = text(
        "SELECT g.id, g.series_id, s.tournament_id, g.number, g.voided, g.ruleset, g.players,"
        " g.seats, g.seat0_submission_id, g.seat1_submission_id, g.result, g.end_reason,"
        " g.forfeit_seat, g.pairwise, g.first_mover, s.format, g.dealer"
        " FROM games g JOIN series s ON s.id = g.series_id ORDER BY g.id"
    )
    found = []
    with world.engine.connect() as conn:
        for r in conn.execute(query):
            seats_json = _json(r[7])
            seats = tuple(int(x) for x in seats_json) if seats_json else (int(r[8]), int(r[9]))
            pairwise = tuple((int(a), int(b)) for a, b in (_json(r[13]) or []))
            found.append(
                Row(int(r[0]), int(r[1]), int(r[2]), int(r[3]), bool(r[4]), str(r[5]),
                    int(r[6]), seats, None if r[10] is None else str(r[10]), str(r[11]),
                    None if r[12] is None else int(r[12]), pairwise, int(r[14]), str(r[15]),
                    int(r[16]))
            )  # fmt: skip
    return found


def sql(world: World, query: str, **params: Any) -> list[tuple[Any, ...]]:
    with world.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(query), params)]


def labels(world: World) -> dict[int, str]:
    return {
        int(i): f"{n} {v}"
        for i, n, v in sql(
            world,
            "SELECT s.id, b.name, s.version FROM submissions s JOIN bots b ON b.id = s.bot_id",
        )
    }


def in_scope(games: list[Row], tournament: int | None) -> list[Row]:
    return [g for g in games if tournament is None or g.tournament_id == tournament]


def counted(games: list[Row], tournament: int | None, board: tuple[str, int]) -> list[Row]:
    return [
        g for g in in_scope(games, tournament) if not g.voided and (g.ruleset, g.players) == board
    ]


def pair_points(game: Row) -> list[tuple[int, int, float]]:
    """(seat a, seat b, a's points) for each pair of seats with a result."""
    if game.ruleset == "default":
        first = {"seat0": 1.0, "seat1": 0.0, "draw": 0.5}[str(game.result)]
        return [(0, 1, first)]
    return _table_results(list(game.seats), [list(p) for p in game.pairwise])


def recount(games: list[Row], tournament: int | None, board: tuple[str, int]) -> Recount:
    mine = counted(games, tournament, board)
    found = Recount(games=len(mine))
    for g in mine:
        for a, b, points in pair_points(g):
            found.score(g.seats[a], g.seats[b], points)
            found.score(g.seats[b], g.seats[a], 1 - points)
        if g.forfeit_seat is not None:
            found.per.setdefault(g.seats[g.forfeit_seat], Tally()).forfeits[g.reason] += 1
    return found


def boards(games: list[Row], tournament: int | None) -> list[tuple[str, int]]:
    return sorted({(g.ruleset, g.players) for g in in_scope(games, tournament) if not g.voided})


def scopes(world: World) -> list[int | None]:
    return [None, *sorted(world.tournaments.values())]


def cli_json(
    capsys: pytest.CaptureFixture[str], world: World, tournament: int | None, board: Any
) -> dict[str, Any]:
    args = ["leaderboard", "--json", "-d", world.url]
    args += [] if tournament is None else ["-t", str(tournament)]
    if board is not None:
        args += ["--ruleset", board[0], "--table-size", str(board[1])]
    data: dict[str, Any] = json.loads(cli(capsys, *args))
    return data


def check_board(data: dict[str, Any], count: Recount, names: dict[int, str], where: str) -> None:
    assert data["board"]["games"] == count.games, where
    got = {row["submission_id"]: row for row in data["rows"]}
    assert set(got) == set(count.per), where
    for sid, tally in count.per.items():
        row, who = got[sid], f"{where}: {names[sid]}"
        assert (row["wins"], row["draws"], row["losses"]) == (
            tally.wins,
            tally.draws,
            tally.losses,
        ), who
        assert row["games"] == tally.games, who
        assert row["score"] == pytest.approx((tally.wins + tally.draws / 2) / tally.games), who
        assert row["forfeits"] == dict(tally.forfeits), who
    assert [row["rank"] for row in data["rows"]] == list(range(1, len(data["rows"]) + 1)), where


# ----------------------------------------------------------------------------- the tests


def test_the_world_holds_what_the_review_needs(world: World) -> None:
    """Real runs on this backend left table forfeits of every kind, a game two seats could
    not start, duplicate deals (complete and not) and the recorded two-player endings."""
    games = rows(world)
    tables = [g for g in games if g.ruleset == "classic" and not g.voided]
    assert {g.players for g in tables} == {3, 4}
    assert {g.reason for g in tables if g.forfeit_seat is not None} == TABLE_FORFEITS
    # Two seats that could not start: both lose to the seat that did, draw between themselves.
    never = [g for g in tables if g.tournament_id == world.tournaments["never started"]]
    assert never and all(len(g.pairwise) == 2 for g in never), never
    assert all(len({w for w, _ in g.pairwise}) == 1 for g in never)
    # The sleeper's games ended by its timeout, not by the others' (generous) clocks.
    assert {
        g.seats[g.forfeit_seat]
        for g in tables
        if g.forfeit_seat is not None and g.reason == "timeout"
    } == {k for k, v in labels(world).items() if v == "sleeper 1.0.0"}
    dup = [g for g in games if g.format == "duplicate" and not g.voided]
    assert len(dup) == 3 * 4 + 3 + 8, len(dup)
    assert any(g.forfeit_seat is not None for g in dup)
    # A deal whose first game was voided and never replayed: its second game stands alone.
    recorded = {g.number for g in dup if g.tournament_id == world.tournaments["recorded duplicate"]}
    assert any(n % 2 == 0 and n - 1 not in recorded for n in recorded), recorded
    assert any(n % 2 == 1 and n + 1 not in recorded for n in recorded), recorded
    assert {"double forfeit", "void", "draw by final answer"} <= {g.reason for g in games}
    # The nostart run is the only one whose bots never played (and says so by its exit code).
    assert world.codes["never started"] != 0
    assert all(world.codes[n] == 0 for n in (*TABLE_RUNS[:-1], "duplicate"))


def test_cli_json_and_web_api_are_one_document(
    capsys: pytest.CaptureFixture[str], world: World, client: TestClient
) -> None:
    games = rows(world)
    for tournament in scopes(world):
        for board in [*boards(games, tournament), None]:
            mine = cli_json(capsys, world, tournament, board)
            assert mine == api(client, tournament, board), (tournament, board)


def test_every_board_equals_an_independent_recount(world: World, client: TestClient) -> None:
    games, names = rows(world), labels(world)
    checked = set()
    for tournament in scopes(world):
        for board in boards(games, tournament):
            data = api(client, tournament, board)
            assert (data["board"]["ruleset"], data["board"]["table_size"]) == board
            check_board(data, recount(games, tournament, board), names, f"{tournament} {board}")
            checked.add(board)
    assert checked == {("default", 2), ("classic", 3), ("classic", 4)}


def test_progress_equals_the_rows(world: World, client: TestClient) -> None:
    games = rows(world)
    for tournament in scopes(world):
        mine = in_scope(games, tournament)
        where = "" if tournament is None else " WHERE tournament_id = :t"
        planned, total, done = sql(
            world,
            "SELECT coalesce(sum(games_planned), 0), count(*), coalesce(sum(CASE WHEN status IN"
            " ('finished', 'aborted') THEN 1 ELSE 0 END), 0) FROM series" + where,
            t=tournament,
        )[0]
        assert api(client, tournament, None)["progress"] == {
            "games_done": sum(1 for g in mine if not g.voided),
            "games_planned": int(planned),
            "series_done": int(done),
            "series_total": int(total),
            "voided": sum(1 for g in mine if g.voided),
        }, tournament


def test_the_plain_table_prints_the_json_numbers(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    games = rows(world)
    for tournament in scopes(world):
        for board in boards(games, tournament):
            data = cli_json(capsys, world, tournament, board)
            args = ["leaderboard", "-d", world.url, "--ruleset", board[0]]
            args += ["--table-size", str(board[1])]
            args += [] if tournament is None else ["-t", str(tournament)]
            shown, caption = _plain_table(cli(capsys, *args))
            want = [table_cells(r) for r in data["rows"]]
            assert shown == want, (tournament, board)
            if data["model"] is not None:
                assert f"intervals {data['intervals']}" in caption, (tournament, board)


def test_pages_export_and_arena_server_show_the_json_numbers(
    world: World, client: TestClient, arena: TestClient
) -> None:
    """Standings tables of the live site, the static export and the arena server; the
    export's JSON files and the arena server's API are the web API's documents."""
    exported = json.loads((world.export / "leaderboard.json").read_text())
    assert exported == api(client, None, None)
    for tournament in scopes(world):
        data = api(client, tournament, None)
        q = "" if tournament is None else f"?tournament={tournament}"
        response = arena.get(f"/api/leaderboard{q}")
        assert response.status_code == 200, response.text
        assert response.json() == data, tournament
        if tournament is not None:
            file = world.export / f"leaderboard-{tournament}.json"
            assert json.loads(file.read_text()) == data, tournament
        page = "/" if tournament is None else f"/tournaments/{tournament}"
        static = world.export / (
            "index.html" if tournament is None else f"tournaments/{tournament}.html"
        )
        want = [html_row(r) for r in data["rows"]]
        for where, html in (
            ("live", client.get(page).text),
            ("arena", arena.get(page).text),
            ("export", static.read_text(encoding="utf-8")),
        ):
            assert parse(html).tables.get("standings", []) == want, (where, tournament)
            if data["rows"] and data["model"] is not None:
                assert f"intervals {data['intervals']}" in html, (where, tournament)
            board = data["board"]
            if board["ruleset"] != "default":
                assert (
                    f"Board: {board['ruleset']}, table of {board['table_size']} seats · "
                    f"{board['games']} games"
                ) in html, (where, tournament)


def test_submission_pages_show_recounted_results_and_forfeits_per_opponent(
    world: World, client: TestClient, arena: TestClient
) -> None:
    """Each board's facts and per-opponent rows of every submission page (live, arena,
    export) against the recount: W/D/L pairwise at tables, and Forfeits per opponent the
    games the submission forfeited with that opponent seated (leaderboard/web/queries.py
    OpponentResult.forfeits), the facts' Forfeits by reason."""
    games, names = rows(world), labels(world)
    label_to_id = {v: k for k, v in names.items()}
    all_boards = boards(games, None)
    counts = {b: recount(games, None, b) for b in all_boards}
    docs = {b: {r["submission_id"]: r for r in api(client, None, b)["rows"]} for b in all_boards}
    for sid in names:
        pages = (
            ("live", client.get(f"/submissions/{sid}").text),
            ("arena", arena.get(f"/submissions/{sid}").text),
            ("export", (world.export / f"submissions/{sid}.html").read_text(encoding="utf-8")),
        )
        for where, html in pages:
            page = parse(html)
            for board in all_boards:
                key = f"{board[0]}-{board[1]}"
                tally = counts[board].per.get(sid)
                if tally is None:
                    assert key not in page.facts, (where, sid, board)
                    continue
                facts, row = page.facts[key], docs[board][sid]
                who = (where, names[sid], board)
                assert facts["W / D / L"] == f"{tally.wins} / {tally.draws} / {tally.losses}", who
                assert facts["Forfeits"] == (forfeits_text(dict(tally.forfeits)) or "none"), who
                assert facts["Rank"] == str(row["rank"]), who
                want: dict[int, list[int]] = {}
                for (me, other), t in counts[board].pair.items():
                    if me == sid:
                        want[other] = [t.games, t.wins, t.draws, t.losses, 0]
                for g in counted(games, None, board):
                    if g.forfeit_seat is not None and g.seats[g.forfeit_seat] == sid:
                        for other in set(g.seats) - {sid}:
                            want[other][4] += 1
                got = {
                    label_to_id[cells[0]]: [
                        int(cells[1]),
                        *(int(x) for x in cells[2].split(" / ")),
                        int(cells[4]),
                    ]
                    for cells in page.tables[f"opponents:{key}"]
                }
                assert got == want, who


def _count(capsys: pytest.CaptureFixture[str], world: World, *args: str) -> int:
    out = cli(capsys, "games", "list", "-d", world.url, "-n", "100000", *args)
    if "no games match" in out:
        return 0
    (n,) = re.findall(r"^(\d+) games?;", out, flags=re.MULTILINE)
    return int(n)


def test_games_list_at_tables_agrees_with_the_rows_and_the_boards(
    capsys: pytest.CaptureFixture[str], world: World, client: TestClient
) -> None:
    """``kryt games list -t T --reason R`` lists the games that ended so, which on a table
    board is the sum of that reason in the Forfeits column; ``--bot B --result win|loss|draw``
    at a table (docs/games-format.md): a loss when B lost to any seat, a win when it beat one
    and lost to none, a draw a game with no pairwise result."""
    games, names = rows(world), labels(world)
    for name in TABLE_RUNS:
        tid = world.tournaments[name]
        mine = [g for g in games if g.tournament_id == tid]
        data = api(client, tid, None)
        for reason in sorted({g.reason for g in mine}):
            n = _count(capsys, world, "-t", str(tid), "--reason", reason)
            assert n == sum(1 for g in mine if g.reason == reason), (name, reason)
            if reason in TABLE_FORFEITS:
                assert n == sum(r["forfeits"].get(reason, 0) for r in data["rows"]), reason
        bots = {names[s].split()[0] for g in mine for s in g.seats}
        for bot in sorted(bots):
            seated = [g for g in mine if any(names[s].split()[0] == bot for s in g.seats)]

            def outcome(g: Row, bot: str = bot) -> str:
                mine_seats = {k for k, s in enumerate(g.seats) if names[s].split()[0] == bot}
                if any(b in mine_seats for _, b in g.pairwise):
                    return "loss"
                if any(a in mine_seats for a, _ in g.pairwise):
                    return "win"
                return "draw" if not g.pairwise else "none"

            for result in ("win", "loss", "draw"):
                n = _count(capsys, world, "-t", str(tid), "--bot", bot, "--result", result)
                assert n == sum(1 for g in seated if outcome(g) == result), (name, bot, result)


def _series_rows(out: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.split("│")[1:-1]]
        for line in out.splitlines()
        if line.startswith("│")
    ]


def test_tournament_status_series_of_tables_equal_the_rows(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    """The series table of a table tournament: the seats clockwise, games played/planned,
    games each seat lost (to any seat), games without a pairwise result, forfeited games."""
    games, names = rows(world), labels(world)
    for name in TABLE_RUNS:
        tid = world.tournaments[name]
        out = cli(capsys, "tournament", "status", str(tid), "-d", world.url)
        want = []
        for sid, seats_json, planned in sql(
            world,
            "SELECT id, seats, games_planned FROM series WHERE tournament_id = :t"
            " ORDER BY position",
            t=tid,
        ):
            seats = [int(s) for s in _json(seats_json)]
            mine = [g for g in games if g.series_id == sid and not g.voided]
            assert all(list(g.seats) == seats for g in mine)
            losses = [sum(1 for g in mine if any(b == k for _, b in g.pairwise)) for k in
                      range(len(seats))]  # fmt: skip
            want.append(
                [
                    ", ".join(names[s] for s in seats),
                    f"{len(mine)}/{planned}",
                    " ".join(str(n) for n in losses),
                    str(sum(1 for g in mine if not g.pairwise)),
                    str(sum(1 for g in mine if g.forfeit_seat is not None)),
                ]
            )
        assert [r[:5] for r in _series_rows(out)] == want, name


def test_tournament_status_series_of_duplicate_pairs_equal_the_rows(
    capsys: pytest.CaptureFixture[str], world: World
) -> None:
    games, names = rows(world), labels(world)
    for name in ("duplicate", "duplicate cut", "recorded duplicate"):
        tid = world.tournaments[name]
        out = cli(capsys, "tournament", "status", str(tid), "-d", world.url)
        want = []
        for sid, a, b, planned in sql(
            world,
            "SELECT id, submission_a_id, submission_b_id, games_planned FROM series"
            " WHERE tournament_id = :t ORDER BY position",
            t=tid,
        ):
            mine = [g for g in games if g.series_id == sid and not g.voided]
            won = Counter(
                "draw" if g.result == "draw" else g.seats[0 if g.result == "seat0" else 1]
                for g in mine
            )
            want.append(
                [
                    names[int(a)],
                    names[int(b)],
                    f"{len(mine)}/{planned}",
                    str(won[int(a)]),
                    str(won["draw"]),
                    str(won[int(b)]),
                    str(sum(1 for g in mine if g.forfeit_seat is not None)),
                ]
            )
        assert [r[:7] for r in _series_rows(out)] == want, name


def _pentanomials(world: World, games: list[Row], tournament: int) -> tuple[list[Any], int]:
    """Complete deal pairs (games 2k-1 and 2k of a series, both counted) by pairing, from the
    alphabetically first bot's side, and the games without their partner."""
    names = labels(world)
    by_place = {
        (g.series_id, g.number): g
        for g in counted(games, tournament, ("default", 2))
        if g.format == "duplicate"
    }
    table: dict[tuple[str, str], list[int]] = {}
    singles = 0
    for (series, number), g in by_place.items():
        partner = by_place.get((series, number + 1 if number % 2 else number - 1))
        if partner is None:
            singles += 1
            continue
        if number % 2 == 0:
            continue
        player, opponent = sorted((names[g.seats[0]], names[g.seats[1]]))
        points = 0.0
        for game in (g, partner):
            (_, _, first) = pair_points(game)[0]
            points += first if names[game.seats[0]] == player else 1 - first
        table.setdefault((player, opponent), [0] * 5)[round(2 * points)] += 1
    found = [{"bot": p, "opponent": o, "counts": c} for (p, o), c in sorted(table.items())]
    return found, singles


def test_duplicate_boards_show_the_recounted_deal_pairs(
    capsys: pytest.CaptureFixture[str], world: World, client: TestClient, arena: TestClient
) -> None:
    """docs/leaderboard.md, Duplicate format: on a board whose counted games are all in
    duplicate series, intervals per deal pair, the pentanomials of the complete pairs, the
    games of unfinished deals counted as units of their own (and said so in the note); a
    board that also holds standard games has intervals per game and no pentanomials."""
    games = rows(world)
    for name in ("duplicate", "duplicate cut", "recorded duplicate"):
        tid = world.tournaments[name]
        pentanomials, singles = _pentanomials(world, games, tid)
        assert pentanomials, name
        data = api(client, tid, None)
        assert data["intervals"] == "per deal pair", name
        assert data["pentanomials"] == pentanomials, name
        assert data["single_games"] == singles, name
        said = f"{singles} game{'s' if singles != 1 else ''} of unfinished deals"
        assert (said in data["note"]) == bool(singles), (name, data["note"])
        assert cli_json(capsys, world, tid, None) == data
        assert arena.get(f"/api/leaderboard?tournament={tid}").json() == data
        assert json.loads((world.export / f"leaderboard-{tid}.json").read_text()) == data
        _, caption = _plain_table(cli(capsys, "leaderboard", "-d", world.url, "-t", str(tid)))
        assert "intervals per deal pair" in caption, name
        if singles:
            assert said in caption, name
        # Each deal pair counts its two games: the pentanomials add up to the pairs' games.
        pair_games = 2 * sum(sum(p["counts"]) for p in pentanomials)
        assert pair_games + singles == data["board"]["games"], name
    assert (
        world.tournaments["duplicate cut"]
        and _pentanomials(world, games, world.tournaments["duplicate cut"])[1] == 1
    )
    mixed = api(client, None, ("default", 2))
    assert mixed["intervals"] == "per game"
    assert mixed["pentanomials"] == [] and mixed["single_games"] == 0


def test_the_paired_fit_is_the_one_of_the_recounted_deals(world: World, client: TestClient) -> None:
    """The ratings and paired intervals of a duplicate board are ``paired_intervals`` of
    the recounted deal pairs and single games (docs/ratings.md; the leaderboard's fallback of
    docs/leaderboard.md when the full fit has no maximum), to display precision."""
    from leaderboard.ratings import DealPair, Game, Outcome, RatingsError, paired_intervals

    games, names = rows(world), labels(world)
    for name in ("duplicate", "duplicate cut", "recorded duplicate"):
        tid = world.tournaments[name]
        mine = {(g.series_id, g.number): g for g in counted(games, tid, ("default", 2))}

        def rated(game: Row) -> Game:
            first = game.seats[game.first_mover]
            second = game.seats[1 - game.first_mover]
            (_, _, p0) = pair_points(game)[0]
            score = p0 if game.first_mover == 0 else 1 - p0
            return Game(names[first], names[second], Outcome.from_score(score))

        pairs: list[DealPair] = []
        singles: list[Game] = []
        for (series, number), g in sorted(mine.items()):
            partner = mine.get((series, number + 1 if number % 2 else number - 1))
            if partner is None:
                singles.append(rated(g))
            elif number % 2:
                pairs.append(DealPair(rated(g), rated(partner)))
        data = api(client, tid, None)
        try:
            result = paired_intervals(pairs, singles=singles, offset=1500.0)
        except RatingsError:
            result = paired_intervals(
                pairs, singles=singles, offset=1500.0, fit_advantage=False, fit_drawelo=False
            )
            assert data["note"].startswith("first-mover advantage 0 and drawelo"), data["note"]
        fit = result.fit
        for row in data["rows"]:
            label = names[row["submission_id"]]
            k = list(fit.names).index(label)
            assert row["rating"] == pytest.approx(float(fit.ratings[k]), abs=1e-6), (name, label)
            paired = result.by_name()[label][1]
            assert row["interval"] == pytest.approx(paired, abs=1e-6), (name, label)


def test_table_boards_ratings_are_the_fit_of_the_recounted_pairs(
    world: World, client: TestClient
) -> None:
    """docs/rules.md: at a table each pair of seats with a result counts once, the seat that
    plays earlier (clockwise from the dealer's left) standing where the first mover stands;
    the board's ratings are the BayesElo fit of those pairs (or the documented fallback)."""
    from leaderboard.ratings import PairCounts, RatingsError, fit_bayeselo

    games, names = rows(world), labels(world)
    for tournament in scopes(world):
        for board in boards(games, tournament):
            if board[0] == "default":
                continue
            cells: dict[tuple[str, str], list[int]] = {}
            for g in counted(games, tournament, board):
                n = len(g.seats)
                for a, b, points in pair_points(g):
                    # The earlier of the two in the order of play is the pair's first.
                    if (a - g.dealer - 1) % n < (b - g.dealer - 1) % n:
                        key, mine = (names[g.seats[a]], names[g.seats[b]]), points
                    else:
                        key, mine = (names[g.seats[b]], names[g.seats[a]]), 1 - points
                    cell = cells.setdefault(key, [0, 0, 0])
                    cell[0 if mine == 1 else 1 if mine == 0.5 else 2] += 1
            table = PairCounts.from_mapping({k: (w, d, lo) for k, (w, d, lo) in cells.items()})
            data = api(client, tournament, board)
            try:
                fit = fit_bayeselo(table, offset=1500.0)
                fallback = False
            except RatingsError:
                try:
                    fit = fit_bayeselo(table, offset=1500.0, fit_advantage=False, fit_drawelo=False)
                except RatingsError:
                    assert data["note"].startswith("no rating fit: "), data["note"]
                    continue
                fallback = True
            where = (tournament, board)
            assert data["note"].startswith("first-mover advantage 0 and drawelo") == fallback
            assert data["model"]["advantage"] == pytest.approx(fit.advantage, abs=1e-9), where
            for row in data["rows"]:
                k = list(fit.names).index(names[row["submission_id"]])
                assert row["rating"] == pytest.approx(float(fit.ratings[k]), abs=1e-6), where
                assert row["interval"] == pytest.approx(float(fit.intervals[k]), abs=1e-6)


def test_table_forfeit_games_are_shown_as_recorded(world: World, client: TestClient) -> None:
    """A table game ended by a forfeit: the game API names the seats, the offender's seat and
    reason, and the offender as the loser, beaten by every seat that started (docs/rules.md);
    the series page (live and exported) lists the game with its reason."""
    games, names = rows(world), labels(world)
    forfeited = [g for g in games if g.ruleset == "classic" and g.forfeit_seat is not None]
    assert forfeited
    for g in forfeited:
        assert g.forfeit_seat is not None
        data = client.get(f"/api/games/{g.id}").json()
        assert [p["submission_id"] for p in data["players"]] == list(g.seats), g.id
        assert data["forfeit"]["seat"] == g.forfeit_seat, g.id
        assert data["forfeit"]["reason"] == g.reason, g.id
        losers = {b for _, b in g.pairwise}
        # Every seat that lost is named, the forfeit's first (several could not start).
        named = [g.forfeit_seat, *sorted(losers - {g.forfeit_seat})]
        shown = ", ".join(f"{names[g.seats[x]]} lost" for x in named)
        assert data["result_text"] == shown, g.id
        assert g.forfeit_seat in losers, g.id
        beaten_by = {a for a, b in g.pairwise if b == g.forfeit_seat}
        assert beaten_by == set(range(len(g.seats))) - losers, g.id
    for series in sorted({g.series_id for g in forfeited}):
        for html in (
            client.get(f"/series/{series}").text,
            (world.export / f"series/{series}.html").read_text(encoding="utf-8"),
        ):
            body = " ".join(" ".join(r) for t in parse(html).tables.values() for r in t)
            for g in forfeited:
                if g.series_id == series:
                    assert g.reason in body, (series, g.reason)
