"""The submission page of a bot that plays classic tables (3-4 seats), live and exported.

An audit found it built for two seats only: its series list left out the table series where
the bot is not ``submission_a``/``submission_b``, "Results against each opponent" counted
only games with the bot at seat 0 or 1 and results ``seat0``/``seat1``/``draw`` (never a
decisive table game), "Recent games" left out the games at seats 2 and 3, and table games
were added to the default game's results. Here a bot sits at every seat of a classic table
of four, in a database that also holds a default tournament: each board keeps its own
results, equal to the pairwise record the board's standings count.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from arena.db import (
    Database,
    GamePlace,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    get_series,
    open_database,
    record_game,
    series_of_tournament,
    submit,
)
from arena.db.elo import board_tallies
from leaderboard.export import export_html
from leaderboard.standings import standings
from leaderboard.web import create_app
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from tests.db.conftest import _fresh_postgres_database, postgres_admin_url
from tests.db.helpers import deck, new_submission
from tests.services import require

T0 = datetime(2026, 12, 5, tzinfo=UTC).timestamp()
MARKUP_VERSION = "<img src=x onerror=alert(1)>"
"""A version is bot-controlled text: the pages must show it escaped."""

# A game at a table of four: (how it ends, the seat that lost, the pairwise record, the seat
# that forfeited). At the turn limit the seats out beat those holding cards, which draw with
# each other (and the seats out have no result between themselves); ALL_OUT is a draw.
Ending = tuple[GameEndReason, int | None, tuple[tuple[int, int], ...], int | None]


def lost(seat: int) -> Ending:
    return (
        GameEndReason.LAST_HOLDER,
        seat,
        tuple((s, seat) for s in range(4) if s != seat),
        None,
    )


def forfeited(seat: int) -> Ending:
    return (GameEndReason.TIMEOUT, seat, tuple((s, seat) for s in range(4) if s != seat), seat)


def turn_limit(out: tuple[int, ...]) -> Ending:
    holding = [s for s in range(4) if s not in out]
    return (GameEndReason.TURN_LIMIT, None, tuple((o, h) for o in out for h in holding), None)


DRAW: Ending = (GameEndReason.ALL_OUT, None, (), None)


@dataclass
class TableWorld:
    """The ids the tests check."""

    me: int
    others: dict[str, int]
    my_series: set[int] = field(default_factory=set)
    other_series: set[int] = field(default_factory=set)
    my_games: set[int] = field(default_factory=set)
    other_games: set[int] = field(default_factory=set)
    games_at_seat: dict[int, set[int]] = field(default_factory=dict)


def build(db: Database) -> TableWorld:
    with db.session() as s:
        ids = {}
        for name in ("tabler", "alpha", "bravo", "charlie", "delta"):
            version = MARKUP_VERSION if name == "charlie" else "1.0.0"
            row = submit(new_submission(name, version), session=s).submission
            assert row.id is not None
            ids[name] = row.id
    me, a, b, c, d = (ids[n] for n in ("tabler", "alpha", "bravo", "charlie", "delta"))
    world = TableWorld(me, {n: i for n, i in ids.items() if n != "tabler"})
    # The bot at seat 2, at seat 3, at seat 0; and a table it does not sit at.
    seatings: list[tuple[tuple[int, ...], list[Ending]]] = [
        ((a, b, me, c), [lost(2), lost(0), turn_limit((0, 1)), DRAW, forfeited(2)]),
        ((b, c, a, me), [lost(1), turn_limit((2, 3)), forfeited(0), lost(3)]),
        ((me, a, b, c), [lost(3), DRAW]),
        ((a, b, c, d), [lost(0), turn_limit((1, 2))]),
    ]
    with db.session() as s:
        tables = create_tournament(
            TournamentSpec(
                "tables of four",
                7,
                config={"ruleset": "classic", "table_size": 4},
                series=[
                    SeriesSpec(seats[0], seats[1], len(games), k, ruleset="classic", seats=seats)
                    for k, (seats, games) in enumerate(seatings)
                ],
            ),
            session=s,
        )
        assert tables.id is not None
        table_series = series_of_tournament(tables.id, session=s)
    finished = T0
    with db.session() as s:
        for series, (seats, games) in zip(table_series, seatings, strict=True):
            assert series.id is not None and tuple(series.seats or ()) == seats
            (world.my_series if me in seats else world.other_series).add(series.id)
            for number, (ending, loser, pairwise, forfeit) in enumerate(games, start=1):
                finished += 10
                dealer = number % 4
                game = record_game(
                    GameRecord(
                        deck=tuple(deck(number)),
                        dealer=dealer,
                        turn_limit=500,
                        moves=(Move((dealer + 1) % 4, "lead 6C", 0.01),),
                        ending=ending,
                        winner=None,
                        forfeit=None
                        if forfeit is None
                        else Forfeit(forfeit, GameEndReason.TIMEOUT, "", "slow"),
                        referee_version="test",
                        players=("p0", "p1", "p2", "p3"),
                        started=finished - 5,
                        finished=finished,
                        ruleset="classic",
                        seats=4,
                        loser=loser,
                        pairwise=pairwise,
                    ),
                    GamePlace(series.id, number, 1, seats),
                    session=s,
                ).game
                assert game.id is not None
                if me in seats:
                    world.my_games.add(game.id)
                    world.games_at_seat.setdefault(seats.index(me), set()).add(game.id)
                else:
                    world.other_games.add(game.id)
    # A default tournament of the same bots: two-player results on a board of their own.
    pairs = [((me, a), ["seat0", "seat1", "draw", "seat0"]), ((b, me), ["seat1", "forfeit1"])]
    pairs.append(((a, b), ["seat0"]))
    with db.session() as s:
        default = create_tournament(
            TournamentSpec(
                "default cup",
                8,
                series=[
                    SeriesSpec(x, y, len(results), 10 + k)
                    for k, ((x, y), results) in enumerate(pairs)
                ],
            ),
            session=s,
        )
        assert default.id is not None
        default_series = series_of_tournament(default.id, session=s)
    with db.session() as s:
        for series, (seats2, results) in zip(default_series, pairs, strict=True):
            assert series.id is not None
            (world.my_series if me in seats2 else world.other_series).add(series.id)
            for number, result in enumerate(results, start=1):
                finished += 10
                forfeit_2p = None
                ending2 = GameEndReason.OUT
                winner: int | None
                if result.startswith("forfeit"):
                    loser2 = int(result[-1])
                    ending2 = GameEndReason.TIMEOUT
                    forfeit_2p = Forfeit(seat=loser2, reason=ending2)
                    winner = 1 - loser2
                elif result == "draw":
                    winner, ending2 = None, GameEndReason.TURN_LIMIT
                else:
                    winner = {"seat0": 0, "seat1": 1}[result]
                game = record_game(
                    GameRecord(
                        deck=tuple(deck(100 + number)),
                        dealer=number % 2,
                        turn_limit=1000,
                        moves=(Move(1 - number % 2, "lead 6C", 0.01),),
                        ending=ending2,
                        winner=winner,
                        forfeit=forfeit_2p,
                        referee_version="test",
                        started=finished - 5,
                        finished=finished,
                    ),
                    GamePlace(series.id, number, 1, seats2),
                    session=s,
                ).game
                assert game.id is not None
                (world.my_games if me in seats2 else world.other_games).add(game.id)
    return world


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ],
)
def tables(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Database, TableWorld]]:
    """A database of the world above, on each backend."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("tables") / "kryt.db"
        db = open_database(f"sqlite:///{path}")
        try:
            yield db, build(db)
        finally:
            db.close()
        return
    admin_url = postgres_admin_url()
    require(admin_url is not None, "PostgreSQL", "set KRYT_TEST_POSTGRES_URL")
    assert admin_url is not None
    for url in _fresh_postgres_database(admin_url):
        db = open_database(url)
        try:
            yield db, build(db)
        finally:
            db.close()


def section(page: str, heading: str) -> str:
    start = page.index(f"<h2>{heading}</h2>")
    return page[start : page.index("</section>", start)]


Results = dict[int, tuple[int, int, int, int, int]]
"""opponent -> (results, wins, draws, losses, forfeits)"""


def opponents_on(page: str, board: str) -> Results:
    """The rows of the page's results table of ``board`` (``classic-4``, ``default-2``)."""
    match = re.search(
        rf'<table class="opponents" data-board="{board}">(.*?)</table>',
        section(page, "Results against each opponent"),
        re.S,
    )
    assert match is not None, f"no results table for {board}"
    rows = re.findall(
        r'href="[^"]*submissions/(\d+)(?:\.html)?">[^<]*</a></td>\s*<td class="num">(\d+)</td>\s*'
        r'<td class="num">(\d+) / (\d+) / (\d+)</td>\s*<td class="num">[^<]*</td>\s*'
        r'<td class="num">(\d+)</td>',
        match.group(1),
    )
    return {int(r[0]): (int(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5])) for r in rows}


def expected_results(db: Database, me: int, ruleset: str, players: int) -> Results:
    """What the board itself counts for ``me`` against each opponent: its stored per-pair
    tallies, folded to ``me``'s side (forfeits: games ``me`` forfeited with them seated)."""
    with db.read_session() as s:
        tallies = board_tallies(session=s, tournament_id=None, ruleset=ruleset, players=players)
    assert tallies is not None
    out: dict[int, list[int]] = {}
    for p in tallies.pairs:
        if me not in (p.first_submission_id, p.second_submission_id):
            continue
        mine_first = p.first_submission_id == me
        other = p.second_submission_id if mine_first else p.first_submission_id
        won, lost_ = (p.wins, p.losses) if mine_first else (p.losses, p.wins)
        row = out.setdefault(other, [0, 0, 0, 0])
        row[0] += won
        row[1] += p.draws
        row[2] += lost_
    return {o: (w + d + lo, w, d, lo, 0) for o, (w, d, lo, _) in out.items()}


def check_page(page: str, db: Database, world: TableWorld) -> None:
    me = world.me
    # Series: every seat of every table, the default series too, never a table without it.
    series = section(page, "Series")
    listed = {int(x) for x in re.findall(r'href="[^"]*series/(\d+)(?:\.html)?"', series)}
    assert listed == world.my_series
    # Recent games: the games at seats 2 and 3 as well, and no game it did not play.
    recent = section(page, "Recent games")
    shown = {int(x) for x in re.findall(r'class="game-link" href="[^"]*games/(\d+)', recent)}
    assert shown == world.my_games
    assert world.games_at_seat[2] and world.games_at_seat[3]
    assert world.games_at_seat[2] | world.games_at_seat[3] <= shown
    # Results: one table per board, each equal to what that board counts.
    assert '<h3 class="board">classic, table of 4</h3>' in page
    assert '<h3 class="board">default game</h3>' in page
    with db.read_session() as s:
        boards = {
            kind: {
                r.submission_id: r
                for r in standings(session=s, ruleset=kind[0], table_size=kind[1]).rows
            }
            for kind in (("classic", 4), ("default", 2))
        }
    a, b, c, d = (world.others[n] for n in ("alpha", "bravo", "charlie", "delta"))
    for (ruleset, players), forfeits in (
        # The bot forfeited one table game with alpha, bravo and charlie seated, and lost
        # one default game to bravo by forfeit.
        (("classic", 4), {a: 1, b: 1, c: 1}),
        (("default", 2), {b: 1}),
    ):
        shown_results = opponents_on(page, f"{ruleset}-{players}")
        expected = {
            o: (*counts[:4], forfeits.get(o, 0))
            for o, counts in expected_results(db, me, ruleset, players).items()
        }
        assert shown_results == expected
        row = boards[ruleset, players][me]
        assert sum(r[0] for r in shown_results.values()) == row.games
        assert tuple(sum(r[i] for r in shown_results.values()) for i in (1, 2, 3)) == (
            row.wins,
            row.draws,
            row.losses,
        )
        # The standing of that board, next to it.
        standing = re.search(
            rf'<dl class="facts"[^>]*data-board="{ruleset}-{players}">(.*?)</dl>',
            section(page, "Standing (all tournaments)"),
            re.S,
        )
        assert standing is not None
        assert f"{row.wins} / {row.draws} / {row.losses}" in standing.group(1)
    assert d not in opponents_on(page, "classic-4")  # never at a table with it
    # Decisive table games count: the classic board is not only draws.
    classic = opponents_on(page, "classic-4")
    assert sum(r[1] for r in classic.values()) and sum(r[3] for r in classic.values())
    # Bot-controlled text stays escaped.
    assert MARKUP_VERSION not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_the_live_submission_page_of_a_table_bot(tables: tuple[Database, TableWorld]) -> None:
    db, world = tables
    with TestClient(create_app(db)) as client:
        response = client.get(f"/submissions/{world.me}")
    assert response.status_code == 200
    check_page(response.text, db, world)


def test_the_exported_submission_page_of_a_table_bot(
    tables: tuple[Database, TableWorld], tmp_path: Path
) -> None:
    db, world = tables
    export_html(db, tmp_path, include_games=False)
    check_page((tmp_path / "submissions" / f"{world.me}.html").read_text(), db, world)


def test_an_opponent_at_a_table_sees_the_same_pairs_from_its_side(
    tables: tuple[Database, TableWorld],
) -> None:
    """Delta sat at one table only, without the bot: its page lists that series and game
    and its pairwise results there, and nothing of the default game."""
    db, world = tables
    delta = world.others["delta"]
    with TestClient(create_app(db)) as client:
        page = client.get(f"/submissions/{delta}").text
    series = section(page, "Series")
    listed = {int(x) for x in re.findall(r'href="/series/(\d+)"', series)}
    assert len(listed) == 1 and listed <= world.other_series
    assert opponents_on(page, "classic-4") == {
        o: (*counts[:4], 0) for o, counts in expected_results(db, delta, "classic", 4).items()
    }
    assert 'data-board="default-2"' not in page


def _seat_cells(page: str, game_id: int) -> list[int]:
    """The submissions named in a game list's row of ``game_id``, seat 0 first."""
    row = re.search(rf'<tr class="[^"]*">\s*<td><a class="game-link" href="[^"]*games/{game_id}'
                    r'(?:\.html)?">.*?</tr>', page, re.S)  # fmt: skip
    assert row is not None, f"game {game_id} is not listed"
    cells = re.findall(r"<td>(.*?)</td>", row.group(0), re.S)
    linked = [re.search(r"submissions/(\d+)", c) for c in cells]
    return [int(m.group(1)) for m in linked if m is not None]


def test_series_and_tournament_pages_list_every_seat_of_a_table_game(
    tables: tuple[Database, TableWorld],
) -> None:
    """They listed seats 0 and 1 only (under "Seat 0", "Seat 1"), so a table game's third
    and fourth players, and the series' own header, left them out."""
    db, world = tables
    with db.read_session() as s:
        table_series = [
            (row.tournament_id, row.id, list(row.seat_ids))
            for row in (get_series(i, session=s) for i in world.my_series | world.other_series)
            if row.seats
        ]
    assert table_series and len({t for t, _, _ in table_series}) == 1
    with TestClient(create_app(db)) as client:
        tournament_page = client.get(f"/tournaments/{table_series[0][0]}").text
        assert "<th>Seat 3</th>" in tournament_page
        for _, series_id, seats in table_series:
            page = client.get(f"/series/{series_id}").text
            header = page[page.index('<p class="meta">') : page.index("</p>")]
            named = [int(x) for x in re.findall(r"submissions/(\d+)", header)]
            assert named == seats and len(named) == 4
            assert "<th>Seat 2</th><th>Seat 3</th>" in page
            ids = {int(x) for x in re.findall(r'class="game-link" href="/games/(\d+)"', page)}
            assert ids
            for game_id in ids:
                assert _seat_cells(page, game_id) == seats
        shown = {
            int(x) for x in re.findall(r'class="game-link" href="/games/(\d+)"', tournament_page)
        }
        assert shown
        for game_id in shown:
            assert len(_seat_cells(tournament_page, game_id)) == 4


def test_the_tournament_page_lists_every_seat_of_a_table_series(
    tables: tuple[Database, TableWorld],
) -> None:
    """Its "Pair" column named seats 0 and 1 only: two seatings of the same four bots read
    the same."""
    db, world = tables
    with db.read_session() as s:
        table_series = {
            row.id: (row.tournament_id, list(row.seat_ids))
            for row in (get_series(i, session=s) for i in world.my_series | world.other_series)
            if row.seats
        }
    (tournament_id,) = {t for t, _ in table_series.values()}
    with TestClient(create_app(db)) as client:
        page = client.get(f"/tournaments/{tournament_id}").text
    listing = section(page, "Series")
    rows = re.findall(r"<tr>\s*<td><a href=\"/series/(\d+)\">.*?</tr>", listing, re.S)
    assert {int(r) for r in rows} == set(table_series)
    for series_id, (_, seats) in table_series.items():
        row = re.search(rf'<td><a href="/series/{series_id}">.*?</tr>', listing, re.S)
        assert row is not None
        assert [int(x) for x in re.findall(r"/submissions/(\d+)", row.group(0))] == seats


def test_rating_snapshots_are_plotted_per_board(tmp_path: Path) -> None:
    """A bot's BayesElo snapshots of a table of four and of the default game were one line
    (its table rating, then its default rating, read as a change)."""
    from leaderboard.standings import refit_and_store

    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    try:
        world = build(db)
        with db.read_session() as s:
            tables_id = get_series(min(world.my_series), session=s).tournament_id
        assert refit_and_store(db, tournament_id=tables_id) is not None
        assert refit_and_store(db) is not None  # all tournaments: the default game's board
        with TestClient(create_app(db)) as client:
            page = client.get(f"/submissions/{world.me}").text
    finally:
        db.close()
    boards = re.findall(r'<figure class="plot-figure snapshot-plot"[^>]*data-board="([^"]+)"', page)
    assert boards == ["default game", "classic, table of 4"], boards
