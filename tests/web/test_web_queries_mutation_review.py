"""Tests from a mutation review of the web pages' data layer (``leaderboard/web/queries.py``,
``pages.py``, ``bot_page.py``): each pins a figure a mutant of that code changed while the
rest of the suite stayed green.

One small SQLite world is built through ``arena.db``'s public API (see :func:`_build`), and
the pages are read with FastAPI's test client. Every expected value is written out by hand
from the documented rules (docs/leaderboard.md, docs/ratings.md, rules-classic.md's pairwise
results as docs/leaderboard.md states them) or computed here independently (live Elo, from
docs/ratings.md), never read back from the code under test.

What each test pins, and the mutants it kills:

- ``test_tournament_progress_counts_aborted_series_and_caps_the_bar``: "series done" counts
  finished and aborted series; voided games are counted apart; a tournament with more
  games than planned has a full bar (100 %), never a wider one; a tournament without series
  shows 0 / 0 instead of failing; the overall page gives each tournament its own progress
  (mutants: ``aborted`` dropped from the done statuses, the cap of the bar removed, ``<= 0``
  turned into ``< 0``, the overall progress in every tournament's row).
- ``test_recent_games_are_the_newest_of_the_tournament``: the tournament page lists exactly
  ``RECENT_GAMES`` games of that tournament, newest finish first, equal finishes by the
  later-recorded first (mutants: ascending order, id as the first key, ties ascending,
  ``limit - 1``, ``limit + 1``, the tournament filter dropped).
- ``test_series_page_lists_games_by_number_then_attempt``: a series recorded out of order
  lists its games by number, then attempt, voided attempts included (mutants: number
  descending, attempt descending, attempt before number).
- ``test_default_results_against_each_opponent``: W/D/L, score % (a draw is half a point),
  forfeits, their order (most results first, then opponent id), voided games and table
  games left out (mutants: W and L swapped, draws as wins, the forfeit seat swapped, the
  voided filter dropped, the ruleset filter dropped, sort keys reversed).
- ``test_table_results_against_each_opponent``: the pairwise results of each table board,
  its table-game count, forfeits against every seated opponent, boards in size order, and no
  board for a table size the bot only played in voided games (mutants: orientation of a
  pair swapped, draws dropped, the forfeit condition negated, the bot as its own opponent,
  the voided filter of the boards dropped, boards reversed, other series' games counted).
- ``test_series_list_of_a_submission``: newest tournament first, then series position,
  the bot's seat, games played without voided attempts (mutants: tournament order
  ascending, position descending, voided games counted).
- ``test_live_elo_plot_follows_the_documented_formula``: the live Elo after each counted
  default game, computed here from docs/ratings.md (1500 start, K 32 for a bot's first 30
  games then 16), game by game in recording order, one marker per game at a distinct x
  (mutants: the score inverted, the two ratings swapped, x shifted by one, no start point,
  a one-game history not plotted).
- ``test_snapshot_plots_one_per_board_oldest_first``: the stored BayesElo snapshots of
  model ``bayeselo`` only, one plot per board (the stored board, else the tournament's,
  else the default game), default game first, each plot oldest first and named when there
  are several (mutants: newest first, the model filter dropped, the stored table size or
  ruleset ignored, the tournament's config ignored, boards sorted by name only, the plot
  title without its board).
- ``test_bot_page_versions_and_games``: every version has a row (one per board it played,
  with that board's games; a version that never played has one row), newest version first
  and its boards in its own page's order, the Board column appears, the recent games are
  the newest ``BOT_RECENT_GAMES`` of all versions, each once, and the Elo plot is the
  latest version's (mutants: the empty version's row dropped, oldest version first, boards
  by name, the board column hidden, a per-version cut before the merge, ascending order,
  id order, the first version taken as the latest, one game too few, another version's
  standing).
- ``test_tournament_page_standings_count_that_tournament_only`` and
  ``test_submission_standing_is_that_boards``: a tournament's standings count its games
  only; a submission's standing on a table board is that board's, not the default game's
  (mutants: the tournament dropped from the standings, every board given the default
  game's standing).
- ``test_a_game_names_each_seat_and_the_forfeiting_seat``: the game's JSON and the series
  page say who sat where and which seat forfeited (mutants: seats reversed, the forfeit's
  seat flipped).
- ``test_a_table_game_voided_after_recording_reads_voided``: its row keeps its loser and
  pairwise results, but its result text is ``voided`` (mutant: the voided check dropped
  for table games).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from arena.db import (
    Database,
    GamePlace,
    NewRatingSnapshot,
    RatingLine,
    SeriesSpec,
    TournamentSpec,
    TournamentStatus,
    create_tournament,
    open_database,
    record_game,
    save_rating_snapshot,
    series_of_tournament,
    set_series_status,
    submit,
)
from arena.db.enums import SeriesStatus
from arena.tournament.ladder import LADDER_KEY, LADDER_NAME
from arena.tournament.service import tournament_state
from leaderboard.web import create_app
from leaderboard.web.pages import BOT_RECENT_GAMES, RECENT_GAMES
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from tests.db.helpers import deck, new_submission

BASE = datetime(2026, 1, 1, tzinfo=UTC)
MARATHON = 52
"""Games of mira 1.0 against zulu in the first tournament: more than either page limit."""


@dataclass
class Site:
    """The ids the tests check, and what was recorded (for independent computations)."""

    client: TestClient
    sub: dict[str, int] = field(default_factory=dict)
    tournament: dict[str, int] = field(default_factory=dict)
    series: dict[str, int] = field(default_factory=dict)
    games: dict[str, int] = field(default_factory=dict)
    finished: dict[int, datetime] = field(default_factory=dict)
    """Every game's finish time, by id."""
    tournament_of: dict[int, str] = field(default_factory=dict)
    """Every game's tournament (its key in ``tournament``), by id."""
    seated: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Every game's seats, by id."""
    counted_default: list[tuple[int, int, int, float]] = field(default_factory=list)
    """Counted default games in recording order: (id, seat 0, seat 1, seat 0's score)."""


def _moves(first: int, seats: int = 2) -> tuple[Move, ...]:
    return (Move(first, "lead 6C", 0.01), Move((first + 1) % seats, "take", 0.02))


class _Recorder:
    def __init__(self, db: Database, site: Site) -> None:
        self.db, self.site = db, site

    def default(
        self,
        tournament: str,
        series: str,
        number: int,
        seats: tuple[int, int],
        outcome: str,
        at: datetime,
        *,
        attempt: int = 1,
        voided_after: str | None = None,
    ) -> int:
        """``outcome``: ``seat0``, ``seat1``, ``draw``, ``forfeit0`` or ``forfeit1``."""
        forfeit = None
        ending = GameEndReason.OUT
        winner: int | None
        if outcome.startswith("forfeit"):
            offender = int(outcome[-1])
            forfeit = Forfeit(offender, GameEndReason.TIMEOUT, "", "slow")
            ending, winner = GameEndReason.TIMEOUT, 1 - offender
        elif outcome == "draw":
            ending, winner = GameEndReason.TURN_LIMIT, None
        else:
            winner = int(outcome[-1])
        dealer = number % 2
        record = GameRecord(
            deck=tuple(deck(number * 7 + attempt)),
            dealer=dealer,
            turn_limit=500,
            moves=_moves(1 - dealer),
            ending=ending,
            winner=winner,
            forfeit=forfeit,
            referee_version="test",
            started=at.timestamp() - 5,
            finished=at.timestamp(),
        )
        place = GamePlace(self.site.series[series], number, attempt, seats)
        with self.db.session() as s:
            game = record_game(record, place, session=s, voided_after=voided_after).game
        assert game.id is not None
        self._note(game.id, tournament, seats, at)
        if voided_after is None:
            score = {"seat0": 1.0, "forfeit1": 1.0, "draw": 0.5}.get(outcome, 0.0)
            self.site.counted_default.append((game.id, seats[0], seats[1], score))
        return game.id

    def table(
        self,
        tournament: str,
        series: str,
        number: int,
        seats: tuple[int, ...],
        at: datetime,
        *,
        loser: int | None = None,
        pairwise: tuple[tuple[int, int], ...] = (),
        forfeit: int | None = None,
        turn_limit: bool = False,
        voided_after: str | None = None,
    ) -> int:
        n = len(seats)
        if forfeit is not None:
            ending = GameEndReason.TIMEOUT
        elif turn_limit:
            ending = GameEndReason.TURN_LIMIT
        elif loser is None:
            ending = GameEndReason.ALL_OUT
        else:
            ending = GameEndReason.LAST_HOLDER
        dealer = number % n
        record = GameRecord(
            deck=tuple(deck(500 + number)),
            dealer=dealer,
            turn_limit=500,
            moves=(Move((dealer + 1) % n, "lead 6C", 0.01),),
            ending=ending,
            # At a table of two the seat that did not lose is the winner too.
            winner=None if n != 2 or loser is None else 1 - loser,
            forfeit=None if forfeit is None else Forfeit(forfeit, ending, "", "slow"),
            referee_version="test",
            players=tuple(f"p{i}" for i in range(n)),
            started=at.timestamp() - 5,
            finished=at.timestamp(),
            ruleset="classic",
            seats=n,
            loser=loser,
            pairwise=pairwise,
        )
        place = GamePlace(self.site.series[series], number, 1, seats)
        with self.db.session() as s:
            game = record_game(record, place, session=s, voided_after=voided_after).game
        assert game.id is not None
        self._note(game.id, tournament, seats, at)
        return game.id

    def _note(self, game_id: int, tournament: str, seats: tuple[int, ...], at: datetime) -> None:
        self.site.finished[game_id] = at
        self.site.tournament_of[game_id] = tournament
        self.site.seated[game_id] = seats


def _lost(seat: int, n: int) -> tuple[tuple[int, int], ...]:
    return tuple((s, seat) for s in range(n) if s != seat)


def _build(db: Database, site: Site) -> None:
    """The world (submission ids in creation order: xeno, yara, zulu, mira 1.0, mira 2.0,
    uno, nemo):

    - ``marathon``: mira 1.0 v zulu, 52 games, one a minute from BASE; game 50 finishes
      with game 49 (a tie) and game 51, recorded last, finishes between games 44 and 45.
    - ``spring`` (BASE + 40 days): s1 mira2 v xeno (4 planned, finished): 1 mira2 wins at
      seat 0, 2 xeno wins at seat 0, 3 voided after recording (a mira2 win at seat 0),
      replayed as attempt 2, a draw, 4 xeno forfeits at seat 0; recorded in the order 2, 4,
      1, 3/1, 3/2. s2 yara v mira2 (4 planned, aborted): 1 mira2 forfeits at seat 1, 2
      mira2 wins at seat 0. s3 mira2 v zulu (4, running): 1 zulu wins at seat 1, 2 mira2
      wins at seat 1, 3 mira2 wins at seat 0. s4 xeno v yara (2, pending): none. s5 mira1
      v mira2 (1, finished): mira2 wins at seat 1. Progress: 10 of 15 games, 3 of 5 series
      done (s1, s5 finished, s2 aborted), 1 voided.
    - ``autumn``: s6 mira2 v yara (1): a draw; s7 uno v xeno (1): uno wins; s8 xeno v zulu
      (1 planned, 2 played): 4 of 3 games.
    - ``tables`` (classic, 3 seats): s9 (xeno, mira2, yara): 1 mira2 loses, 2 xeno loses,
      3 mira2 forfeits, 4 turn limit with mira2 out, 5 all out (a draw); s10 (xeno, yara,
      zulu): xeno loses.
    - ``quads`` (classic, 4 seats): s11 (yara, zulu, xeno, mira2): mira2 loses.
    - ``duel`` (classic, 2 seats): s12 (mira2, zulu): one game, mira2 lost it, voided after.
    - ``empty``: no series.
    """
    rec = _Recorder(db, site)
    with db.session() as s:
        for key, name, version in (
            ("xeno", "xeno", "1.0"),
            ("yara", "yara", "1.0"),
            ("zulu", "zulu", "1.0"),
            ("mira1", "mira", "1.0"),
            ("mira2", "mira", "2.0"),
            ("uno", "uno", "1.0"),
            ("nemo", "nemo", "1.0"),
        ):
            row = submit(new_submission(name, version), session=s).submission
            assert row.id is not None
            site.sub[key] = row.id
    x, y, z, m1, m2, u = (site.sub[k] for k in ("xeno", "yara", "zulu", "mira1", "mira2", "uno"))
    plan: list[tuple[str, dict[str, object], list[tuple[str, SeriesSpec]]]] = [
        ("marathon", {}, [("s0", SeriesSpec(m1, z, MARATHON, 1))]),
        (
            "spring",
            {},
            [
                ("s1", SeriesSpec(m2, x, 4, 2)),
                ("s2", SeriesSpec(y, m2, 4, 3)),
                ("s3", SeriesSpec(m2, z, 4, 4)),
                ("s4", SeriesSpec(x, y, 2, 5)),
                ("s5", SeriesSpec(m1, m2, 1, 6)),
            ],
        ),
        (
            "autumn",
            {},
            [
                ("s6", SeriesSpec(m2, y, 1, 7)),
                ("s7", SeriesSpec(u, x, 1, 8)),
                ("s8", SeriesSpec(x, z, 1, 9)),
            ],
        ),
        (
            "tables",
            {"ruleset": "classic", "table_size": 3},
            [
                ("s9", SeriesSpec(x, m2, 5, 10, ruleset="classic", seats=(x, m2, y))),
                ("s10", SeriesSpec(x, y, 1, 11, ruleset="classic", seats=(x, y, z))),
            ],
        ),
        (
            "quads",
            {"ruleset": "classic", "table_size": 4},
            [("s11", SeriesSpec(y, z, 1, 12, ruleset="classic", seats=(y, z, x, m2)))],
        ),
        (
            "duel",
            {"ruleset": "classic", "table_size": 2},
            [("s12", SeriesSpec(m2, z, 1, 13, ruleset="classic", seats=(m2, z)))],
        ),
        ("empty", {}, []),
    ]
    for seed, (name, config, specs) in enumerate(plan, start=1):
        with db.session() as s:
            made = create_tournament(
                TournamentSpec(name, seed, config=config, series=[sp for _, sp in specs]),
                session=s,
            )
            assert made.id is not None
            site.tournament[name] = made.id
            made_series = series_of_tournament(made.id, session=s)
            for (key, _), one in zip(specs, made_series, strict=True):
                assert one.id is not None
                site.series[key] = one.id

    # marathon: mira1 v zulu, alternating seats and results.
    for number in range(MARATHON - 1):
        at = BASE + timedelta(minutes=number if number != 50 else 49)
        seats = (m1, z) if number % 2 == 0 else (z, m1)
        outcome = ("seat0", "seat1", "draw")[number % 3]
        site.games[f"marathon{number}"] = rec.default("marathon", "s0", number, seats, outcome, at)
    late = BASE + timedelta(minutes=44, seconds=30)
    site.games["marathon51"] = rec.default("marathon", "s0", 51, (z, m1), "seat0", late)

    t = BASE + timedelta(days=40)
    minute = timedelta(minutes=1)
    # s1, recorded out of order: 2, 4, 1, 3 (voided), 3 again.
    site.games["s1g2"] = rec.default("spring", "s1", 2, (x, m2), "seat0", t + 2 * minute)
    site.games["s1g4"] = rec.default("spring", "s1", 4, (x, m2), "forfeit0", t + 5 * minute)
    site.games["s1g1"] = rec.default("spring", "s1", 1, (m2, x), "seat0", t + 1 * minute)
    site.games["s1g3v"] = rec.default(
        "spring", "s1", 3, (m2, x), "seat0", t + 3 * minute, voided_after="host lost"
    )
    site.games["s1g3"] = rec.default("spring", "s1", 3, (m2, x), "draw", t + 4 * minute, attempt=2)
    site.games["s2g1"] = rec.default("spring", "s2", 1, (y, m2), "forfeit1", t + 6 * minute)
    site.games["s2g2"] = rec.default("spring", "s2", 2, (m2, y), "seat0", t + 7 * minute)
    site.games["s3g1"] = rec.default("spring", "s3", 1, (m2, z), "seat1", t + 8 * minute)
    site.games["s3g2"] = rec.default("spring", "s3", 2, (z, m2), "seat1", t + 9 * minute)
    site.games["s3g3"] = rec.default("spring", "s3", 3, (m2, z), "seat0", t + 10 * minute)
    site.games["s5g1"] = rec.default("spring", "s5", 1, (m1, m2), "seat1", t + 11 * minute)
    t += timedelta(days=1)
    site.games["s6g1"] = rec.default("autumn", "s6", 1, (m2, y), "draw", t + 1 * minute)
    site.games["s7g1"] = rec.default("autumn", "s7", 1, (u, x), "seat0", t + 2 * minute)
    site.games["s8g1"] = rec.default("autumn", "s8", 1, (x, z), "seat1", t + 3 * minute)
    site.games["s8g2"] = rec.default("autumn", "s8", 2, (z, x), "draw", t + 4 * minute)
    t += timedelta(days=1)
    three = (x, m2, y)
    rec.table("tables", "s9", 1, three, t + 1 * minute, loser=1, pairwise=_lost(1, 3))
    rec.table("tables", "s9", 2, three, t + 2 * minute, loser=0, pairwise=_lost(0, 3))
    rec.table("tables", "s9", 3, three, t + 3 * minute, loser=1, pairwise=_lost(1, 3), forfeit=1)
    rec.table("tables", "s9", 4, three, t + 4 * minute, pairwise=((1, 0), (1, 2)), turn_limit=True)
    rec.table("tables", "s9", 5, three, t + 5 * minute)
    rec.table("tables", "s10", 1, (x, y, z), t + 6 * minute, loser=0, pairwise=_lost(0, 3))
    quad = (y, z, x, m2)
    rec.table("quads", "s11", 1, quad, t + 7 * minute, loser=3, pairwise=_lost(3, 4))
    site.games["s12g1"] = rec.table(
        "duel",
        "s12",
        1,
        (m2, z),
        t + 8 * minute,
        loser=0,
        pairwise=((1, 0),),
        voided_after="replayed elsewhere",
    )
    with db.session() as s:
        for key, status in (
            ("s1", SeriesStatus.FINISHED),
            ("s2", SeriesStatus.ABORTED),
            ("s5", SeriesStatus.FINISHED),
        ):
            set_series_status(site.series[key], status, session=s)
    # Rating snapshots of mira 2.0, stored by hand: (model, tournament, parameters, rating).
    snapshots: list[tuple[str, str | None, dict[str, object], float]] = [
        ("bayeselo", None, {}, 111.0),
        ("bayeselo", "tables", {}, 222.0),
        ("bayeselo", None, {"ruleset": "classic", "table_size": 4}, 333.0),
        ("elo", None, {}, 444.0),
        ("bayeselo", None, {"ruleset": "default", "table_size": 2}, 155.0),
        ("bayeselo", "tables", {}, 266.0),
    ]
    for model, tournament, parameters, rating in snapshots:
        with db.session() as s:
            save_rating_snapshot(
                NewRatingSnapshot(
                    model=model,
                    entries=[
                        RatingLine(m2, 1, rating, 1, 1, 0, 0, 1.0, 10.0, rating - 20, rating + 20)
                    ],
                    parameters=parameters,
                    tournament_id=None if tournament is None else site.tournament[tournament],
                ),
                session=s,
            )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The world of :func:`_build` in a SQLite file, and a test client over it."""
    path: Path = tmp_path_factory.mktemp("webq") / "kryt.db"
    db = open_database(f"sqlite:///{path}")
    try:
        with TestClient(create_app(db)) as client:
            world = Site(client)
            _build(db, world)
            yield world
    finally:
        db.close()


def _get(site: Site, url: str) -> str:
    response = site.client.get(url)
    assert response.status_code == 200, (url, response.status_code, response.text[:400])
    text: str = response.text
    return text


def _section(page: str, heading: str) -> str:
    start = page.index(f"<h2>{heading}")
    end = page.find("</section>", start)
    return page[start : end if end != -1 else len(page)]


def _cells(row: str) -> list[str]:
    return [
        re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]


def _rows(table_html: str) -> list[list[str]]:
    body = table_html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [_cells(r) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


def _game_ids(table_html: str) -> list[int]:
    return [int(g) for g in re.findall(r'class="game-link"[^>]*>#(\d+)<', table_html)]


def _newest(site: Site, ids: list[int], limit: int) -> list[int]:
    """The ``limit`` newest of ``ids``: latest finish first, equal finishes by the game
    recorded later (the larger id) first."""
    return sorted(ids, key=lambda g: (site.finished[g], g), reverse=True)[:limit]


# Progress -------------------------------------------------------------------------------


def test_tournament_progress_counts_aborted_series_and_caps_the_bar(site: Site) -> None:
    spring = _get(site, f"/tournaments/{site.tournament['spring']}")
    # s1 (5 rows, one voided), s2 (2), s3 (3), s5 (1): 10 counted of 4+4+4+2+1 planned;
    # s1 and s5 finished, s2 aborted: both are done (docs: "series done").
    assert "10 / 15 games · 3 / 5 series done · 1 voided" in spring
    api = site.client.get(f"/api/leaderboard?tournament={site.tournament['spring']}").json()
    assert api["progress"] == {
        "games_done": 10,
        "games_planned": 15,
        "series_done": 3,
        "series_total": 5,
        "voided": 1,
    }
    # autumn: 4 games played of 3 planned: the bar is full, not wider than its frame.
    autumn = _get(site, f"/tournaments/{site.tournament['autumn']}")
    assert "4 / 3 games" in autumn
    assert re.search(r'class="bar" style="width: 100\.0%"', autumn), autumn
    # empty: nothing planned, nothing played.
    empty = _get(site, f"/tournaments/{site.tournament['empty']}")
    assert "0 / 0 games · 0 / 0 series done" in empty
    index = _get(site, "/")
    widths = [float(w) for w in re.findall(r'class="bar" style="width: ([\d.]+)%"', index)]
    assert widths and all(0.0 <= w <= 100.0 for w in widths), widths
    # The overall page gives each tournament its own progress.
    listed = {r[0].split(" #")[0]: r[2] for r in _rows(_section(index, "Tournaments"))}
    assert listed["spring"] == "10 / 15 games · 3 / 5 series done · 1 voided"
    assert listed["autumn"] == "4 / 3 games · 0 / 3 series done"
    assert listed["marathon"] == f"{MARATHON} / {MARATHON} games · 0 / 1 series done"


# Game lists ------------------------------------------------------------------------------


def test_recent_games_are_the_newest_of_the_tournament(site: Site) -> None:
    page = _get(site, f"/tournaments/{site.tournament['marathon']}")
    shown = _game_ids(_section(page, "Recent games"))
    marathon = [g for g, t in site.tournament_of.items() if t == "marathon"]
    assert shown == _newest(site, marathon, RECENT_GAMES)
    assert len(shown) == RECENT_GAMES < len(marathon)
    # The overall page: the newest games of every tournament.
    index = _get(site, "/")
    assert _game_ids(_section(index, "Recent games")) == _newest(
        site, list(site.finished), RECENT_GAMES
    )


def test_series_page_lists_games_by_number_then_attempt(site: Site) -> None:
    page = _get(site, f"/series/{site.series['s1']}")
    g = site.games
    assert _game_ids(page) == [g["s1g1"], g["s1g2"], g["s1g3v"], g["s1g3"], g["s1g4"]]
    rows = _rows(page.split('<table class="games">', 1)[1])
    # Game, series, no., seat 0, seat 1, dealer, result, reason, moves, finished.
    assert [(r[2], r[6]) for r in rows] == [
        ("1", "mira 2.0 won"),
        ("2", "xeno 1.0 won"),
        ("3", "voided"),
        ("3 (attempt 2)", "draw"),
        ("4", "mira 2.0 won"),
    ]


def test_submission_recent_games_are_its_newest(site: Site) -> None:
    mira1 = site.sub["mira1"]
    page = _get(site, f"/submissions/{mira1}")
    mine = [g for g, seats in site.seated.items() if mira1 in seats]
    shown = _game_ids(_section(page, "Recent games"))
    assert shown == _newest(site, mine, BOT_RECENT_GAMES)
    assert len(shown) == BOT_RECENT_GAMES < len(mine)


# Results against each opponent -----------------------------------------------------------


def _opponents(page: str, board: str) -> list[list[str]]:
    section = _section(page, "Results against each opponent")
    match = re.search(
        rf'<table class="opponents" data-board="{board}">(.*?)</table>', section, re.S
    )
    assert match is not None, f"no results table for {board}"
    return _rows(match.group(1))


def test_default_results_against_each_opponent(site: Site) -> None:
    """mira 2.0 on the default game (counted games only, never the table games):

    - xeno: s1 games 1 (won), 2 (lost), 3 (drawn; its voided first attempt, a win, does not
      count), 4 (won by xeno's forfeit): 2/1/1, 62.5 %, no forfeit of mira's.
    - yara: s2 game 1 (lost by mira's forfeit at seat 1), 2 (won); s6 (drawn): 1/1/1, 50.0
      %, one forfeit.
    - zulu: s3 games 1 (lost at seat 0), 2 (won at seat 1), 3 (won at seat 0): 2/0/1, 66.7 %.
    - mira 1.0: s5 (won at seat 1): 1/0/0, 100.0 %.

    Most results first, equal counts by opponent id (yara before zulu)."""
    page = _get(site, f"/submissions/{site.sub['mira2']}")
    assert _opponents(page, "default-2") == [
        ["xeno 1.0", "4", "2 / 1 / 1", "62.5", "0"],
        ["yara 1.0", "3", "1 / 1 / 1", "50.0", "1"],
        ["zulu 1.0", "3", "2 / 0 / 1", "66.7", "0"],
        ["mira 1.0", "1", "1 / 0 / 0", "100.0", "0"],
    ]


def test_table_results_against_each_opponent(site: Site) -> None:
    """mira 2.0 at tables (pairwise results, docs/leaderboard.md; seats x, m, y of s9):

    1. m loses: x and y beat m. 2. x loses: m beats x (m and y, both winners, have none).
    3. m forfeits: x and y beat m; a forfeit against each of them. 4. turn limit, m out: m
    beats x and y (who draw with each other). 5. all out: every pair draws.
    vs xeno: W 2 (2, 4), D 1 (5), L 2 (1, 3) = 5 results; vs yara: W 1, D 1, L 2 = 4.
    s10 (a table without mira) changes none of it. Table of 4 (s11): m loses to all three,
    listed by id. The table of 2 (s12) holds only a voided game: no board."""
    page = _get(site, f"/submissions/{site.sub['mira2']}")
    assert _opponents(page, "classic-3") == [
        ["xeno 1.0", "5", "2 / 1 / 2", "50.0", "1"],
        ["yara 1.0", "4", "1 / 1 / 2", "37.5", "1"],
    ]
    assert _opponents(page, "classic-4") == [
        ["xeno 1.0", "1", "0 / 0 / 1", "0.0", "0"],
        ["yara 1.0", "1", "0 / 0 / 1", "0.0", "0"],
        ["zulu 1.0", "1", "0 / 0 / 1", "0.0", "0"],
    ]
    section = _section(page, "Results against each opponent")
    boards = re.findall(r'<table class="opponents" data-board="([^"]+)">', section)
    assert boards == ["default-2", "classic-3", "classic-4"]
    standing = _section(page, "Standing (all tournaments)")
    assert "(5 table games)" in standing and "(1 table games)" in standing


def test_series_list_of_a_submission(site: Site) -> None:
    """Newest tournament first, then the series' position; the Games column counts the
    series' counted games (s1: 4 of its 5 rows, the voided attempt left out)."""
    page = _get(site, f"/submissions/{site.sub['mira2']}")
    rows = _rows(_section(page, "Series"))
    s = site.series
    expected = [
        (s["s12"], "0", "0 / 1"),
        (s["s11"], "3", "1 / 1"),
        (s["s9"], "1", "5 / 5"),
        (s["s6"], "0", "1 / 1"),
        (s["s1"], "0", "4 / 4"),
        (s["s2"], "1", "2 / 4"),
        (s["s3"], "0", "3 / 4"),
        (s["s5"], "1", "1 / 1"),
    ]
    # Series, tournament, board, seat, opponents, format, games, status.
    assert [(int(r[0].lstrip("#")), r[3], r[6]) for r in rows] == expected
    spring = _rows(_section(_get(site, f"/tournaments/{site.tournament['spring']}"), "Series"))
    # Series, players, format, games, status.
    assert [r[3] for r in spring] == ["4 / 4", "2 / 4", "3 / 4", "0 / 2", "1 / 1"]


# Rating history --------------------------------------------------------------------------


def _live_elo(games: list[tuple[int, int, int, float]]) -> dict[int, list[tuple[int, float]]]:
    """docs/ratings.md: everyone starts at 1500; after each game each side moves by
    K (S - E), E = 1 / (1 + 10^((R' - R) / 400)), K 32 for a bot's first 30 games, then 16.
    Returns each submission's (game id, rating after it)."""
    rating: dict[int, float] = {}
    played: dict[int, int] = {}
    history: dict[int, list[tuple[int, float]]] = {}
    for game_id, a, b, score_a in games:
        ra, rb = rating.get(a, 1500.0), rating.get(b, 1500.0)
        ea = 1 / (1 + 10 ** ((rb - ra) / 400))
        ka = 32 if played.get(a, 0) < 30 else 16
        kb = 32 if played.get(b, 0) < 30 else 16
        rating[a] = ra + ka * (score_a - ea)
        rating[b] = rb + kb * ((1 - score_a) - (1 - ea))
        for sid in (a, b):
            played[sid] = played.get(sid, 0) + 1
            history.setdefault(sid, []).append((game_id, rating[sid]))
    return history


def _markers(svg: str) -> list[tuple[float, str]]:
    marker = r'<circle class="marker" cx="([\d.]+)"[^>]*><title>([^<]*)</title>'
    return [(float(cx), tip) for cx, tip in re.findall(marker, svg)]


def _elo_figure(page: str) -> str:
    start = page.index('id="elo-plot"')
    return page[start : page.index("</figure>", start)]


def test_live_elo_plot_follows_the_documented_formula(site: Site) -> None:
    history = _live_elo(site.counted_default)
    for key in ("mira2", "mira1", "uno"):
        sid = site.sub[key]
        markers = _markers(_elo_figure(_get(site, f"/submissions/{sid}")))
        expected = ["start"] + [f"game {g}: {r:.0f}" for g, r in history[sid]]
        assert [tip for _, tip in markers] == expected, key
        xs = [x for x, _ in markers]
        assert all(a < b for a, b in itertools.pairwise(xs)), (key, xs)
    # The bot page plots the latest version's history.
    bot = _get(site, "/bots/mira")
    plot = bot[bot.index("<h2>Rating history") :]
    assert "Live Elo of mira 2.0" in plot
    tips = [tip for _, tip in _markers(plot)]
    assert tips == ["start"] + [f"game {g}: {r:.0f}" for g, r in history[site.sub["mira2"]]]
    uno = _get(site, "/bots/uno")
    assert "Live Elo of uno 1.0" in uno


def test_snapshot_plots_one_per_board_oldest_first(site: Site) -> None:
    """Stored by hand for mira 2.0 (oldest first): bayeselo overall, no board stored (the
    default game) 111; bayeselo of ``tables`` (classic, 3 seats by its config) 222; bayeselo
    overall stored as classic/4, 333; an ``elo`` snapshot, 444 (not BayesElo: not
    plotted); bayeselo overall stored as default/2, 155; bayeselo of ``tables`` 266."""
    page = _get(site, f"/submissions/{site.sub['mira2']}")
    figures = re.findall(
        r'<figure class="plot-figure snapshot-plot"[^>]*data-board="([^"]+)">(.*?)</figure>',
        page,
        re.S,
    )
    assert [board for board, _ in figures] == [
        "default game",
        "classic, table of 3",
        "classic, table of 4",
    ]
    ratings = [[tip.rsplit(": ", 1)[1] for _, tip in _markers(svg)] for _, svg in figures]
    assert ratings == [["111", "155"], ["222", "266"], ["333"]]
    tables = site.tournament["tables"]
    assert [tip.split(" ", 2)[2] for _, tip in _markers(figures[1][1])] == [
        f"tournament {tables}: 222",
        f"tournament {tables}: 266",
    ]
    titles = [re.search(r"<title>([^<]*)</title>", svg) for _, svg in figures]
    assert [t.group(1) if t else None for t in titles] == [
        "BayesElo snapshots of mira 2.0 (default game)",
        "BayesElo snapshots of mira 2.0 (classic, table of 3)",
        "BayesElo snapshots of mira 2.0 (classic, table of 4)",
    ]


# The bot page ----------------------------------------------------------------------------


def test_bot_page_versions_and_games(site: Site) -> None:
    page = _get(site, "/bots/mira")
    versions = _section(page, "Versions")
    assert "<th>Board</th>" in versions
    rows = _rows(versions)
    # Version, status, submitted, board, rating, games: mira 2.0 played 11 counted default
    # games (see test_default_results_against_each_opponent), 9 pairwise results at the
    # table of 3 and 3 at the table of 4; mira 1.0 the 52 of the marathon and s5.
    # Newest version first, as the site lists everything; a version's boards in the order
    # its own page gives them (the default game, then each table size).
    assert [(r[0], r[3], r[5]) for r in rows] == [
        ("2.0", "default game", "11"),
        ("2.0", "classic, table of 3", "9"),
        ("2.0", "classic, table of 4", "3"),
        ("1.0", "default game", str(MARATHON + 1)),
    ]
    mine = {site.sub["mira1"], site.sub["mira2"]}
    ids = [g for g, seats in site.seated.items() if mine & set(seats)]
    shown_games = _game_ids(_section(page, "Recent games"))
    assert shown_games == _newest(site, ids, BOT_RECENT_GAMES)
    assert len(shown_games) == BOT_RECENT_GAMES < len(ids)
    # A version that never played still has its row, with no games.
    nemo = _rows(_section(_get(site, "/bots/nemo"), "Versions"))
    assert [(r[0], r[-1]) for r in nemo] == [("1.0", "0")]


def test_a_table_game_voided_after_recording_reads_voided(site: Site) -> None:
    page = _get(site, f"/series/{site.series['s12']}")
    rows = _rows(page.split('<table class="games">', 1)[1])
    assert len(rows) == 1
    assert rows[0][6] == "voided", rows[0]
    data = site.client.get(f"/api/games/{site.games['s12g1']}").json()
    assert data["voided"] is True and data["result_text"] == "voided"


# Standings as the pages place them ---------------------------------------------------------


def _standing_row(page: str, version: str) -> list[str]:
    rows = _rows(_section(page, "Standings"))
    (row,) = [r for r in rows if r[1] == "mira" and r[2] == version]
    return row


def test_tournament_page_standings_count_that_tournament_only(site: Site) -> None:
    """mira 2.0 in ``spring``: s1 2/1/1, s2 1/0/1, s3 2/0/1, s5 1/0/0 = 10 games, 6/1/3;
    overall (the default game's board) ``autumn``'s draw (s6) is added: 11 games, 6/2/3."""
    spring = _standing_row(_get(site, f"/tournaments/{site.tournament['spring']}"), "2.0")
    # Rank, bot, version, rating, Elo, games, W/D/L, score %, LOS, forfeits.
    assert (spring[5], spring[6], spring[7], spring[9]) == ("10", "6 / 1 / 3", "65.0", "timeout 1")
    overall = _standing_row(_get(site, "/"), "2.0")
    assert (overall[5], overall[6], overall[7]) == ("11", "6 / 2 / 3", "63.6")


def _facts(page: str, board: str) -> dict[str, str]:
    match = re.search(rf'<dl class="facts"[^>]*data-board="{board}">(.*?)</dl>', page, re.S)
    assert match is not None, f"no standing for {board}"
    pairs = re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", match.group(1), re.S)
    return {k: re.sub(r"<[^>]+>", "", v).strip() for k, v in pairs}


def test_submission_standing_is_that_boards(site: Site) -> None:
    """mira 2.0's standing on each board (all tournaments): the default game 11 games, 6/2/3
    (see above), its timeout in s2; the table of 3: 9 pairwise results, 3/2/4 (the sums of
    test_table_results_against_each_opponent), its timeout in s9 game 3; the table of 4:
    3 results, 0/0/3, no forfeit."""
    page = _get(site, f"/submissions/{site.sub['mira2']}")
    default = _facts(page, "default-2")
    assert (default["Games"], default["W / D / L"], default["Forfeits"]) == (
        "11",
        "6 / 2 / 3",
        "timeout 1",
    )
    three = _facts(page, "classic-3")
    assert (three["Pairwise results"], three["W / D / L"], three["Forfeits"]) == (
        "9 (5 table games)",
        "3 / 2 / 4",
        "timeout 1",
    )
    four = _facts(page, "classic-4")
    assert (four["Pairwise results"], four["W / D / L"], four["Forfeits"]) == (
        "3 (1 table games)",
        "0 / 0 / 3",
        "none",
    )


# A game's record -------------------------------------------------------------------------


def test_a_game_names_each_seat_and_the_forfeiting_seat(site: Site) -> None:
    """s2 game 1: yara at seat 0, mira 2.0 at seat 1, which timed out: yara won."""
    game_id = site.games["s2g1"]
    data = site.client.get(f"/api/games/{game_id}").json()
    players = [(p["seat"], p["submission_id"], p["bot"], p["version"]) for p in data["players"]]
    assert players == [(0, site.sub["yara"], "yara", "1.0"), (1, site.sub["mira2"], "mira", "2.0")]
    assert (data["forfeit"]["seat"], data["forfeit"]["reason"]) == (1, "timeout")
    assert data["result_text"] == "yara 1.0 won"
    rows = _rows(_get(site, f"/series/{site.series['s2']}").split('<table class="games">', 1)[1])
    # Game, series, no., seat 0, seat 1, dealer, result, reason, moves, finished.
    assert [r[3:8] for r in rows] == [
        ["yara 1.0", "mira 2.0", "1", "yara 1.0 won", "timeout (seat 1)"],
        ["mira 2.0", "yara 1.0", "0", "mira 2.0 won", "out"],
    ]


def test_the_ladder_shows_as_running_on_the_web_and_as_ladder_in_the_cli(tmp_path: Path) -> None:
    """docs/configuration.md: the web pages show statuses as ``kryt tournament status`` does,
    but for the arena's ladder, which the CLI shows as ``ladder``: its pages show the status
    it is stored with (``running``), so that a live page follows it as it plays."""
    db = open_database(f"sqlite:///{tmp_path}/ladder.db")
    try:
        with db.session() as session:
            ladder = create_tournament(
                TournamentSpec(
                    name=LADDER_NAME, seed=1, config={"name": LADDER_NAME, LADDER_KEY: True}
                ),
                session=session,
                status=TournamentStatus.RUNNING,
            )
            assert ladder.id is not None
        assert tournament_state(ladder.id, db).shown == "ladder"  # what the CLI prints
        with TestClient(create_app(db)) as client:
            data = client.get(f"/api/leaderboard?tournament={ladder.id}").json()
            page = client.get(f"/tournaments/{ladder.id}").text
            overall = client.get("/").text
        assert data["tournament"]["status"] == "running"
        assert '<meta http-equiv="refresh"' in page and '<meta http-equiv="refresh"' in overall
    finally:
        db.close()
