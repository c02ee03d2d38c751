"""A hostile review of the leaderboard site and its static export, from outside.

Bot authors control text that reaches these pages: the ``description`` (and ``author``) of
their ``bot.toml``, what their bot sends (a malformed reply the referee quotes as the
forfeit's offending input) and what it prints when it crashes (the forfeit's detail), and,
through :func:`arena.db.submit` (the database accepts any text of up to 64 characters there,
though ``bot.toml`` and game files restrict it), the version. Here each of them carries
markup that would run a script if it were not escaped (it sets ``window.__pwned`` or
retitles the page), control, bidi and line-separator characters, NUL, and text that looks
like an entity or a number. A real headless Chromium opens every page of the live site and
of the static export (``kryt leaderboard --html``) and proves that nothing ran, nothing was
injected and the text is shown as it was stored. The HTTP level (unknown and malformed ids,
query parameters, path traversal, methods, content types) and the standings (equal to an
independent count of the games recorded here) are checked too.

Every game is recorded through :func:`arena.db.record_game` and every bot through
``arena.tournament.store.register`` (a real bot folder and its ``bot.toml``) or
:func:`arena.db.submit`; no SQL is written by hand.
"""

from __future__ import annotations

import http.client
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from arena.db import (
    Database,
    GamePlace,
    NewSubmission,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    open_database,
    record_game,
    series_of_tournament,
    submit,
)
from arena.tournament.store import register
from kryt.commands.leaderboard import app as leaderboard_cli
from leaderboard.web import create_app
from referee.protocol.messages import GameEndReason
from referee.record import MAX_TEXT, Forfeit, GameRecord, Move
from sandbox.death import printable
from tests.db.helpers import deck
from tests.web.test_browser import chromium_session
from tests.web.world import PlayedGame, drawn_by_final_answer, play
from tests.webserver import served

T0 = datetime(2026, 5, 1, 9, 0, 0, tzinfo=UTC)

# --- What a hostile bot author stores -------------------------------------------------------

DESCRIPTION = (
    "<script>window.__pwned='desc-script'</script> "
    "</script><script>window.__pwned='desc-end'</script> "
    "<img src=x onerror=\"window.__pwned='desc-img'\"> "
    '"><svg onload="window.__pwned=\'desc-svg\'"> '
    "'><b id=injected>bold</b> "
    "</title><script>document.title='PWNED'</script> "
    "<!--<script> &lt;not a tag&gt; &amp;amp; &#60;i&#62; "
    "javascript:window.__pwned='desc-js' "
    "line\u2028separator\u2029paragraph zero\u200bwidth\ttab\nnewline"
)
"""A ``bot.toml`` description: no control characters but tab and line breaks, no bidi
controls (the manifest refuses those), anything else."""

AUTHOR = "<script>window.__pwned='author'</script> \"quoted\" &amp;"

VERSION_IMG = '"><img src=x onerror="window.__pwned=\'version-img\'">'
VERSION_SCRIPT = "</script><script>window.__pwned='version-script'</script>"
VERSION_ENTITY = "&lt;b&gt;&#60;i&#62;&amp;"
"""Versions stored through :func:`arena.db.submit`, which takes any text of up to 64
characters (``bot.toml`` and game files allow only ``[0-9A-Za-z.+_-]``)."""

OFFENDING_INPUT = (
    "</script><script>window.__pwned='input'</script>\n"
    "<!--<script>\u2028\u2029 <img src=x onerror=window.__pwned='input-img'>\n"
    "\x00nul \x1b[2J\x1b]0;owned\x07 \r\u202egnp.exe"
)
"""A malformed reply the referee quotes: markup, line separators, NUL, ESC sequences, a
carriage return and a right-to-left override."""

CRASH_DETAIL = (
    "Traceback (most recent call last):\n"
    '  File "bot.py", line 1\n'
    "<svg/onload=window.__pwned='detail'> '\"><b id=injected>x</b>\n"
    "\u202eTLUSER LAICIFFO\u202c \x00 </title><script>document.title='PWNED'</script>"
)
"""What a crashing bot printed (the referee keeps its last lines as the forfeit's detail)."""

VOID_REASON = "<script>window.__pwned='void'</script>"
DOUBLE_DETAIL = "neither bot started: <img src=x onerror=window.__pwned='double'>\u202e"
TABLE_INPUT = "</script><img src=x onerror=window.__pwned='table'>\u202e\u2028"
TOURNAMENT_NAME = "</title><script>document.title='PWNED'</script>cup"
"""Organiser text, not a bot's: checked the same way since it reaches <title>."""

LONG_NAME = "z" * 40
"""The longest bot name ``bot.toml`` allows, without a break opportunity."""
LONG_VERSION = "V" * 40
"""The longest version ``bot.toml`` allows."""
LONG_DESCRIPTION = "W" * 2000
"""The longest description ``bot.toml`` allows, one word."""
LONG_DETAIL = "E" * (MAX_TEXT + 500)
"""Crash output of one long line (say a base64 blob), cut by the referee at MAX_TEXT."""

NUMBER_NAME = "007"
"""A bot name that is a number: /bots/007 must be that bot, not an id."""
NUMBER_VERSION = "1e3"


def stored(text: str) -> str:
    """What the database keeps of bot text: a NUL becomes U+FFFD (PostgreSQL cannot hold it)."""
    return text.replace("\x00", "\ufffd")


# --- The hostile world ----------------------------------------------------------------------


@dataclass(frozen=True)
class Played:
    """One recorded game as this module knows it, to count the standings independently."""

    game_id: int
    seats: tuple[int, int]
    winner: int | None
    voided: bool
    forfeit: tuple[int, str] | None = None
    """(offending seat, reason)."""


@dataclass
class Hostile:
    """The ids of the hostile database."""

    path: Path
    subs: dict[str, int]
    labels: dict[int, str]
    tournament: int
    table_tournament: int
    series: list[int]
    played: list[Played] = field(default_factory=list)
    forfeit_game: int = 0
    long_detail_game: int = 0
    void_game: int = 0
    double_game: int = 0
    table_game: int = 0


def _bot_folder(root: Path, name: str, version: str, description: str, author: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "bot.toml").write_text(
        "\n".join(
            [
                f"name = {json.dumps(name)}",
                f"version = {json.dumps(version)}",
                'runtime = "python"',
                'entry = "bot.py"',
                f"author = {json.dumps(author)}",
                f"description = {json.dumps(description)}",
                "",
            ]
        ),
        encoding="utf-8",
    )
    (folder / "bot.py").write_text("print('hello')\n", encoding="utf-8")
    return folder


def _record(
    db: Database,
    world: Hostile,
    series_id: int,
    number: int,
    seats: tuple[int, int],
    game: PlayedGame,
    at: datetime,
    *,
    forfeit: Forfeit | None = None,
    voided: str = "",
    double: str = "",
    attempt: int = 1,
) -> int:
    winner, ending = game.winner, game.ending
    if forfeit is not None:
        winner, ending = 1 - forfeit.seat, forfeit.reason
    if voided:
        winner, ending = None, GameEndReason.VOID
    if double:
        winner, ending = None, GameEndReason.DOUBLE_FORFEIT
    assert ending is not None
    record = GameRecord(
        deck=tuple(game.deck),
        dealer=game.dealer,
        turn_limit=1000,
        moves=() if double else tuple(game.moves),
        ending=ending,
        winner=winner,
        forfeit=forfeit,
        final_cover=None if forfeit or voided or double else game.final_cover,
        void_reason=voided,
        double_forfeit_detail=double,
        referee_version="hostile-review 1",
        started=at.timestamp(),
        finished=at.timestamp() + 3,
    )
    with db.session() as session:
        row = record_game(record, GamePlace(series_id, number, attempt, seats), session=session)
        game_id = row.game.id
    assert game_id is not None
    world.played.append(
        Played(
            game_id,
            seats,
            winner,
            bool(voided),
            None if forfeit is None else (seats[forfeit.seat], forfeit.reason.value),
        )
    )
    return game_id


def build_hostile(path: Path, store: Path, folders: Path) -> Hostile:
    """Fill a SQLite database at ``path``: six bots, a tournament of two-player games with
    hostile forfeits, a voided game, a double forfeit and a draw, and a classic table."""
    db = open_database(f"sqlite:///{path}")
    try:
        subs: dict[str, int] = {}
        labels: dict[int, str] = {}
        for name, version, description in (
            ("mallory", "1.0.0", DESCRIPTION),
            (LONG_NAME, LONG_VERSION, LONG_DESCRIPTION),
            (NUMBER_NAME, NUMBER_VERSION, "a number-like name"),
        ):
            folder = _bot_folder(folders, name, version, description, AUTHOR)
            done = register(folder, db=db, submitted_by="mallory-author", store=store)
            subs[name] = done.submission_id
            labels[done.submission_id] = f"{name} {version}"
        with db.session() as s:
            for name, version in (("eve", VERSION_IMG), ("trudy", VERSION_SCRIPT)):
                new = NewSubmission(
                    bot_name=name,
                    version=version,
                    sha256=f"{len(subs) + 1:064x}",
                    submitted_by="tester",
                    manifest={"name": name, "description": VERSION_ENTITY},
                )
                row = submit(new, session=s).submission
                assert row.id is not None
                subs[name] = row.id
                labels[row.id] = f"{name} {version}"
            new = NewSubmission(
                bot_name="oscar",
                version=VERSION_ENTITY,
                sha256=f"{len(subs) + 1:064x}",
                submitted_by="tester",
            )
            row = submit(new, session=s).submission
            assert row.id is not None
            subs["oscar"] = row.id
            labels[row.id] = f"oscar {VERSION_ENTITY}"
        m, lg, n, e, t, o = (
            subs[k] for k in ("mallory", LONG_NAME, NUMBER_NAME, "eve", "trudy", "oscar")
        )
        pairs = [(m, e), (e, t), (t, n), (n, lg), (lg, m), (m, t), (o, e)]
        with db.session() as s:
            cup = create_tournament(
                TournamentSpec(
                    name=TOURNAMENT_NAME,
                    seed=5,
                    config={},
                    series=[SeriesSpec(x, y, 3, k) for k, (x, y) in enumerate(pairs)],
                ),
                session=s,
            )
            tables = create_tournament(
                TournamentSpec(
                    name="tables <b>of</b> three",
                    seed=6,
                    config={"ruleset": "classic", "table_size": 3},
                    series=[SeriesSpec(m, e, 1, 99, ruleset="classic", seats=(m, e, t))],
                ),
                session=s,
            )
            assert cup.id is not None and tables.id is not None
            series = [x.id for x in series_of_tournament(cup.id, session=s) if x.id is not None]
            (table_series,) = series_of_tournament(tables.id, session=s)
            assert table_series.id is not None
        world = Hostile(path, subs, labels, cup.id, tables.id, series)
        at = T0
        seed = 300
        for series_id, (x, y) in zip(series, pairs, strict=True):
            for number in range(2):
                at += timedelta(minutes=1)
                seed += 1
                seats = (x, y) if number == 0 else (y, x)
                _record(db, world, series_id, number, seats, play(seed, number), at)
        # mallory sends garbage and crashes: the forfeit quotes it.
        partial = play(901, 0, stop_after=7)
        offender = 1 - partial.moves[-1].seat
        at += timedelta(minutes=1)
        world.forfeit_game = _record(
            db,
            world,
            series[0],
            2,
            (m, e) if offender == 0 else (e, m),
            partial,
            at,
            forfeit=Forfeit(offender, GameEndReason.MALFORMED_REPLY, OFFENDING_INPUT, CRASH_DETAIL),
        )
        # A draw by final answer between eve and trudy.
        draw_seed, draw_dealer = drawn_by_final_answer()
        at += timedelta(minutes=1)
        _record(db, world, series[1], 2, (e, t), play(draw_seed, draw_dealer), at)
        # A voided attempt (not counted), replayed.
        at += timedelta(minutes=1)
        world.void_game = _record(
            db, world, series[2], 2, (t, n), play(902, 0, stop_after=4), at, voided=VOID_REASON
        )
        at += timedelta(minutes=1)
        _record(db, world, series[2], 2, (t, n), play(903, 0), at, attempt=2)
        # The long-named bot crashes with one very long line of output.
        partial = play(904, 1, stop_after=5)
        offender = 1 - partial.moves[-1].seat
        at += timedelta(minutes=1)
        world.long_detail_game = _record(
            db,
            world,
            series[3],
            2,
            (lg, n) if offender == 0 else (n, lg),
            partial,
            at,
            forfeit=Forfeit(offender, GameEndReason.CRASH, "x" * 3000, LONG_DETAIL),
        )
        # Neither bot started: a double forfeit, scored as a draw.
        at += timedelta(minutes=1)
        world.double_game = _record(
            db, world, series[4], 2, (lg, m), play(905, 0), at, double=DOUBLE_DETAIL
        )
        # A classic table of three where eve (seat 1) forfeits with markup in its reply.
        at += timedelta(minutes=1)
        with db.session() as s:
            table = record_game(
                GameRecord(
                    deck=tuple(deck(77)),
                    dealer=0,
                    turn_limit=500,
                    moves=(Move(1, "lead 6C", 0.01),),
                    ending=GameEndReason.MALFORMED_REPLY,
                    winner=None,
                    forfeit=Forfeit(1, GameEndReason.MALFORMED_REPLY, TABLE_INPUT, CRASH_DETAIL),
                    referee_version="hostile-review 1",
                    players=("p0", "p1", "p2"),
                    started=at.timestamp(),
                    finished=at.timestamp() + 1,
                    ruleset="classic",
                    seats=3,
                    loser=1,
                    pairwise=((0, 1), (2, 1)),
                ),
                GamePlace(table_series.id, 1, 1, (m, e, t)),
                session=s,
            ).game
            assert table.id is not None
            world.table_game = table.id
        return world
    finally:
        db.close()


# --- Fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    root = tmp_path_factory.mktemp("hostile")
    return build_hostile(root / "kryt.db", root / "store", root / "folders")


@pytest.fixture(scope="module")
def hostile_client(hostile: Hostile) -> Iterator[TestClient]:
    db = open_database(str(hostile.path), create=False)
    try:
        with TestClient(create_app(db)) as test_client:
            yield test_client
    finally:
        db.close()


@pytest.fixture(scope="module")
def live(hostile: Hostile) -> Iterator[str]:
    """The app over the hostile database, served by uvicorn on a free port (its base URL)."""
    db = open_database(str(hostile.path), create=False)
    try:
        with served(create_app(db)) as url:
            yield url
    finally:
        db.close()


@pytest.fixture(scope="module")
def exported(hostile: Hostile, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The static export written by ``kryt leaderboard --html DIR --database PATH``."""
    out = tmp_path_factory.mktemp("export") / "site"
    result = CliRunner().invoke(
        leaderboard_cli, ["--html", str(out), "--database", str(hostile.path)]
    )
    assert result.exit_code == 0, result.output
    assert f"wrote {sum(1 for _ in out.rglob('*.html'))} pages" in result.output
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium (skipped locally without it, failed under CI)."""
    with chromium_session(page_load_timeout=90) as driver:
        yield driver


# --- Helpers --------------------------------------------------------------------------------

PROBE = """
var injected = document.querySelectorAll(
  'img[src="x"], svg[onload], [onerror], [onload], b#injected, script:not([src]):not([type])'
);
return {
  pwned: window.__pwned === undefined ? null : String(window.__pwned),
  title: document.title,
  injected: Array.prototype.map.call(injected, function (e) { return e.outerHTML; }),
  text: document.body ? document.body.textContent : ""
};
"""


def probe(driver: Any, url: str) -> dict[str, Any]:
    """Open ``url`` and return what ran and what the page holds."""
    driver.get(url)
    result: dict[str, Any] = driver.execute_script(PROBE)
    return result


def assert_inert(result: dict[str, Any], where: str) -> None:
    assert result["pwned"] is None, f"{where}: an injected script ran ({result['pwned']})"
    # The payloads set the whole title to PWNED; shown literally it is only part of one.
    assert result["title"] != "PWNED", f"{where}: the title was rewritten"
    assert result["title"].endswith(" · Kryt Arena"), f"{where}: {result['title']!r}"
    assert result["injected"] == [], f"{where}: injected elements {result['injected']}"


class _Tables(HTMLParser):
    """Rows of cell texts of every <table>, keyed by its id or first class."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self._current: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            key = a.get("id") or (a.get("class") or "").split(" ")[0]
            board = a.get("data-board")
            key = f"{key}:{board}" if board else key
            self._current = self.tables.setdefault(key, [])
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._current is not None and self._in_body:
            self._current.append([])
        elif tag == "td" and self._current is not None and self._in_body:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._current:
            self._current[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._current = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables_of(html: str) -> dict[str, list[list[str]]]:
    parser = _Tables()
    parser.feed(html)
    return parser.tables


@dataclass
class Tally:
    wins: int = 0
    draws: int = 0
    losses: int = 0
    forfeits: Counter[str] = field(default_factory=Counter)


def expected_tallies(world: Hostile) -> tuple[dict[int, Tally], dict[tuple[int, int], Tally]]:
    """W/D/L per submission and per (submission, opponent), counted from the games recorded
    here (voided ones do not count; a double forfeit is a draw)."""
    per: dict[int, Tally] = {}
    pair: dict[tuple[int, int], Tally] = {}
    for g in world.played:
        if g.voided:
            continue
        for seat in (0, 1):
            me, other = g.seats[seat], g.seats[1 - seat]
            for tally in (per.setdefault(me, Tally()), pair.setdefault((me, other), Tally())):
                if g.winner is None:
                    tally.draws += 1
                elif g.winner == seat:
                    tally.wins += 1
                else:
                    tally.losses += 1
                if g.forfeit is not None and g.forfeit[0] == me:
                    tally.forfeits[g.forfeit[1]] += 1
    return per, pair


def live_pages(world: Hostile) -> list[str]:
    pages = ["/", f"/tournaments/{world.tournament}", f"/tournaments/{world.table_tournament}"]
    pages += [f"/submissions/{sid}" for sid in world.subs.values()]
    pages += [f"/bots/{name}" for name in world.subs]
    pages += [f"/series/{sid}" for sid in world.series]
    pages += [
        f"/games/{gid}"
        for gid in (
            world.forfeit_game,
            world.long_detail_game,
            world.void_game,
            world.double_game,
            world.table_game,
            world.played[0].game_id,
        )
    ]
    return pages


# --- Injection in a real browser ------------------------------------------------------------


@pytest.mark.browser
def test_no_script_runs_on_any_live_page(browser: Any, live: str, hostile: Hostile) -> None:
    texts = {}
    for page in live_pages(hostile):
        result = probe(browser, live + page)
        assert_inert(result, page)
        texts[page] = result["text"]
    # The hostile text is shown as it was stored, not interpreted.
    home = texts["/"]
    for version in (VERSION_IMG, VERSION_SCRIPT, VERSION_ENTITY):
        assert version in home
    assert TOURNAMENT_NAME in home
    assert DESCRIPTION in texts[f"/submissions/{hostile.subs['mallory']}"]
    assert VERSION_ENTITY in texts[f"/submissions/{hostile.subs['eve']}"]  # its description
    assert f"{NUMBER_NAME} {NUMBER_VERSION}" in texts[f"/bots/{NUMBER_NAME}"]


@pytest.mark.browser
def test_error_pages_quote_hostile_urls_inertly(browser: Any, live: str) -> None:
    markup = "<img src=x onerror=window.__pwned=1>"
    for page in (
        "/bots/" + quote(markup, safe=""),
        "/games/" + quote("<script>window.__pwned=2</script>", safe=""),
        "/submissions/" + quote("'\"><svg onload=window.__pwned=3>", safe=""),
        "/no/such/" + quote("</title><script>document.title='PWNED'</script>", safe=""),
    ):
        result = probe(browser, live + page)
        assert_inert(result, page)
        assert "Not found" in result["title"]
    assert markup[:40] in probe(browser, live + "/bots/" + quote(markup, safe=""))["text"]


@pytest.mark.browser
def test_game_page_shows_the_forfeit_literally(browser: Any, live: str, hostile: Hostile) -> None:
    from selenium.webdriver.common.by import By

    browser.get_log("browser")  # drop what earlier pages logged
    result = probe(browser, f"{live}/games/{hostile.forfeit_game}")
    assert_inert(result, "forfeit game")
    # The viewer's data is exactly what was stored (JSON.parse of the escaped page JSON).
    data = browser.execute_script("return window.KRYT_REPLAY.game.forfeit;")
    assert data["offending_input"] == stored(OFFENDING_INPUT)
    assert data["detail"] == stored(CRASH_DETAIL)
    # On the page: control and bidi characters shown as visible escapes, markup as text.
    pre = browser.find_element(By.CSS_SELECTOR, "#forfeit pre.offending")
    shown = browser.execute_script("return arguments[0].textContent;", pre)
    assert shown == printable(stored(OFFENDING_INPUT), keep_newlines=True)
    forfeit = browser.execute_script("return document.getElementById('forfeit').textContent;")
    assert printable(stored(CRASH_DETAIL), keep_newlines=True) in forfeit
    body = result["text"]
    for invisible in ("\u202e", "\u2028", "\u2029", "\x1b", "\x00", "\r"):
        assert invisible not in body, f"{invisible!r} reached the page's text"
    # The replay still works: the last step says who forfeited.
    browser.find_element(By.ID, "btn-last").click()
    assert "forfeited: malformed reply" in browser.find_element(By.ID, "final").text
    severe = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert severe == [], severe


@pytest.mark.browser
def test_table_game_page_shows_the_forfeit_literally(
    browser: Any, live: str, hostile: Hostile
) -> None:
    result = probe(browser, f"{live}/games/{hostile.table_game}")
    assert_inert(result, "table game")
    data = browser.execute_script(
        "return JSON.parse(document.getElementById('replay-data').textContent).forfeit;"
    )
    assert data["offending_input"] == TABLE_INPUT
    shown = browser.execute_script(
        "return document.querySelector('#forfeit pre.offending').textContent;"
    )
    assert shown == printable(TABLE_INPUT, keep_newlines=True)
    assert "\u202e" not in result["text"]


@pytest.mark.browser
def test_voided_and_double_forfeit_games_are_inert(
    browser: Any, live: str, hostile: Hostile
) -> None:
    void = probe(browser, f"{live}/games/{hostile.void_game}")
    assert_inert(void, "void game")
    assert VOID_REASON in void["text"]
    double = probe(browser, f"{live}/games/{hostile.double_game}")
    assert_inert(double, "double forfeit game")
    assert "\u202e" not in double["text"]


@pytest.mark.browser
def test_no_script_runs_in_the_static_export(
    browser: Any, exported: Path, hostile: Hostile
) -> None:
    pages = sorted(exported.rglob("*.html"))
    expected = {
        "index.html",
        f"tournaments/{hostile.tournament}.html",
        f"games/{hostile.forfeit_game}.html",
        f"games/{hostile.table_game}.html",
        *(f"submissions/{sid}.html" for sid in hostile.subs.values()),
    }
    assert expected <= {p.relative_to(exported).as_posix() for p in pages}
    texts = {}
    for page in pages:
        result = probe(browser, page.as_uri())
        assert_inert(result, page.relative_to(exported).as_posix())
        texts[page.relative_to(exported).as_posix()] = result["text"]
    assert VERSION_IMG in texts["index.html"] and VERSION_SCRIPT in texts["index.html"]
    assert DESCRIPTION in texts[f"submissions/{hostile.subs['mallory']}.html"]
    game = texts[f"games/{hostile.forfeit_game}.html"]
    assert printable(stored(OFFENDING_INPUT), keep_newlines=True) in game
    assert "\u202e" not in game


def test_export_json_keeps_hostile_text_exactly(exported: Path, hostile: Hostile) -> None:
    board = json.loads((exported / "leaderboard.json").read_text(encoding="utf-8"))
    versions = {row["bot"]: row["version"] for row in board["rows"]}
    assert versions["eve"] == VERSION_IMG
    assert versions["trudy"] == VERSION_SCRIPT
    assert versions["oscar"] == VERSION_ENTITY
    per_tournament = json.loads(
        (exported / f"leaderboard-{hostile.tournament}.json").read_text(encoding="utf-8")
    )
    assert per_tournament["tournament"]["name"] == TOURNAMENT_NAME
    # Only the site's own files were written, all inside the folder.
    written = {p.relative_to(exported).parts[0] for p in exported.rglob("*")}
    assert written <= {
        "index.html",
        "leaderboard.json",
        *(f"leaderboard-{t}.json" for t in (hostile.tournament, hostile.table_tournament)),
        "tournaments",
        "submissions",
        "series",
        "games",
        "static",
    }


def test_game_page_source_holds_no_raw_script_end_or_invisible_characters(
    hostile_client: TestClient, hostile: Hostile
) -> None:
    for game in (hostile.forfeit_game, hostile.long_detail_game, hostile.double_game):
        html = hostile_client.get(f"/games/{game}").text
        data = html.split('<script type="application/json" id="replay-data">', 1)[1]
        data = data.split("</script>", 1)[0]
        assert "<" not in data and ">" not in data
        for char in ("\u2028", "\u2029", "\u202e", "\x00", "\x1b"):
            assert char not in html, f"raw {char!r} in the source of /games/{game}"
        assert json.loads(data)["id"] == game


def test_api_returns_hostile_text_as_json(hostile_client: TestClient, hostile: Hostile) -> None:
    response = hostile_client.get(f"/api/games/{hostile.forfeit_game}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    data = response.json()
    assert data["forfeit"]["offending_input"] == stored(OFFENDING_INPUT)
    assert data["forfeit"]["detail"] == stored(CRASH_DETAIL)
    versions = {p["bot"]: p["version"] for p in data["players"]}
    assert versions == {"mallory": "1.0.0", "eve": VERSION_IMG}
    board = hostile_client.get("/api/leaderboard").json()
    assert {r["version"] for r in board["rows"]} >= {VERSION_IMG, VERSION_SCRIPT, VERSION_ENTITY}


def test_a_number_like_bot_name_is_a_name(hostile_client: TestClient, hostile: Hostile) -> None:
    page = hostile_client.get(f"/bots/{NUMBER_NAME}")
    assert page.status_code == 200
    assert f'href="/submissions/{hostile.subs[NUMBER_NAME]}"' in page.text
    assert hostile_client.get("/bots/7").status_code == 404
    assert hostile_client.get("/bots/%30%30%37").status_code == 200  # the same name, encoded


# --- Layout with the longest text bot.toml allows -------------------------------------------


def _overflow(driver: Any) -> int:
    width: int = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth;"
    )
    return width


@pytest.mark.browser
def test_the_standings_scroll_inside_their_box(browser: Any, live: str, hostile: Hostile) -> None:
    from selenium.webdriver.common.by import By

    browser.get(live + "/")
    names = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#standings .bot-link")]
    assert LONG_NAME in names
    box = browser.find_element(By.CSS_SELECTOR, ".table-scroll")
    right = browser.execute_script("return arguments[0].getBoundingClientRect().right;", box)
    width = browser.execute_script("return document.documentElement.clientWidth;")
    assert right <= width


@pytest.mark.browser
def test_the_longest_legal_name_and_version_do_not_widen_game_lists(
    browser: Any, live: str, hostile: Hostile
) -> None:
    # Only text bot.toml accepts is on these pages (007 1e3, mallory 1.0.0, the long one).
    for page in (f"/bots/{LONG_NAME}", f"/series/{hostile.series[3]}"):
        browser.get(live + page)
        text = browser.execute_script("return document.body.textContent;")
        assert f"{LONG_NAME} {LONG_VERSION}" in text and VERSION_IMG not in text
        assert _overflow(browser) <= 0, page


@pytest.mark.browser
def test_the_longest_description_does_not_widen_the_submission_page(
    browser: Any, live: str, hostile: Hostile
) -> None:
    browser.get(f"{live}/submissions/{hostile.subs[LONG_NAME]}")
    assert LONG_DESCRIPTION in browser.execute_script("return document.body.textContent;")
    assert _overflow(browser) <= 0


@pytest.mark.browser
def test_a_long_crash_line_does_not_widen_the_game_page(
    browser: Any, live: str, hostile: Hostile
) -> None:
    browser.get(f"{live}/games/{hostile.long_detail_game}")
    text = browser.execute_script("return document.getElementById('forfeit').textContent;")
    assert LONG_DETAIL[:MAX_TEXT] in text and "more characters]" in text
    assert _overflow(browser) <= 0


# --- Standings against an independent count -------------------------------------------------


def test_standings_equal_an_independent_count(hostile_client: TestClient, hostile: Hostile) -> None:
    per, _ = expected_tallies(hostile)
    rows = tables_of(hostile_client.get("/").text)["standings"]
    by_label = {f"{r[1]} {r[2]}": r for r in rows}
    assert set(by_label) == {hostile.labels[sid] for sid in per}
    for sid, tally in per.items():
        row = by_label[hostile.labels[sid]]
        games = tally.wins + tally.draws + tally.losses
        assert row[5] == str(games), hostile.labels[sid]
        assert row[6] == f"{tally.wins} / {tally.draws} / {tally.losses}", hostile.labels[sid]
        assert row[7] == f"{100 * (tally.wins + tally.draws / 2) / games:.1f}"
        reasons = ", ".join(f"{r} {n}" for r, n in sorted(tally.forfeits.items()))
        assert row[9] == reasons, hostile.labels[sid]
    # The ranks are 1..n in order, and the JSON agrees with the page.
    assert [r[0] for r in rows] == [str(i) for i in range(1, len(rows) + 1)]
    api = hostile_client.get(f"/api/leaderboard?tournament={hostile.tournament}").json()
    for row in api["rows"]:
        tally = per[row["submission_id"]]
        assert (row["wins"], row["draws"], row["losses"]) == (
            tally.wins,
            tally.draws,
            tally.losses,
        )
    assert api["progress"]["games_done"] == sum(1 for g in hostile.played if not g.voided)
    assert api["progress"]["voided"] == sum(1 for g in hostile.played if g.voided)


def test_results_by_opponent_equal_an_independent_count(
    hostile_client: TestClient, hostile: Hostile
) -> None:
    _, pair = expected_tallies(hostile)
    label_to_id = {label: sid for sid, label in hostile.labels.items()}
    for me in hostile.subs.values():
        tables = tables_of(hostile_client.get(f"/submissions/{me}").text)
        rows = tables["opponents:default-2"]
        got = {label_to_id[r[0]]: r for r in rows}
        want = {other: t for (mine, other), t in pair.items() if mine == me}
        assert set(got) == set(want), hostile.labels[me]
        for other, tally in want.items():
            row = got[other]
            assert row[2] == f"{tally.wins} / {tally.draws} / {tally.losses}"
            assert row[4] == str(sum(tally.forfeits.values()))


# --- HTTP ------------------------------------------------------------------------------------

MALFORMED_IDS = (
    "0",
    "-1",
    "+1",
    "1.5",
    "1e3",
    "0x1",
    "abc",
    "%20",
    "%201",
    "%00",
    "%D9%A1",  # ARABIC-INDIC DIGIT ONE: isdigit(), not ASCII
    "%EF%BC%91",  # FULLWIDTH DIGIT ONE
    "2147483648",
    "99999999999999999999",
    "9" * 5000,
)


@pytest.mark.parametrize("route", ["tournaments", "submissions", "series", "games"])
def test_malformed_and_unknown_ids_are_404_pages(hostile_client: TestClient, route: str) -> None:
    for text in (*MALFORMED_IDS, "2147483647", "424242"):
        response = hostile_client.get(f"/{route}/{text}")
        assert response.status_code == 404, (route, text[:20], response.status_code)
        assert response.headers["content-type"].startswith("text/html")
        assert "Traceback" not in response.text and "<h1>Not found</h1>" in response.text


def test_malformed_and_unknown_ids_under_api_are_json_404(hostile_client: TestClient) -> None:
    for text in (*MALFORMED_IDS, "424242"):
        response = hostile_client.get(f"/api/games/{text}")
        assert response.status_code == 404, (text[:20], response.status_code)
        assert response.headers["content-type"].startswith("application/json")
        assert set(response.json()) == {"error"}
    for query in ("tournament=abc", "tournament=-3", "tournament=", "tournament=424242"):
        response = hostile_client.get(f"/api/leaderboard?{query}")
        assert response.status_code == 404, query
        assert set(response.json()) == {"error"}


def test_bad_filters_are_422_with_an_error(hostile_client: TestClient) -> None:
    for query in (
        "table_size=x",
        "table_size=-2",
        "table_size=0",
        "table_size=99999",
        "table_size=%D9%A3",
        "ruleset=%3Cscript%3E",
        "ruleset=%00",
        "ruleset=classic&table_size=9",
        "ruleset=default&table_size=3",
    ):
        response = hostile_client.get(f"/api/leaderboard?{query}")
        assert response.status_code == 422, (query, response.status_code)
        assert response.headers["content-type"].startswith("application/json")
        assert isinstance(response.json()["error"], str)


def test_bot_names_that_name_nothing_are_404(hostile_client: TestClient) -> None:
    for name in ("nobody", "MALLORY", "a" * 41, "%00", "mal%00lory", "%E2%80%AEyrollam", "%2E"):
        response = hostile_client.get(f"/bots/{name}")
        assert response.status_code == 404, (name, response.status_code)
        assert "Traceback" not in response.text


def _raw_get(base: str, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """A request whose path is sent exactly as given (no client-side normalisation)."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_static_files_cannot_be_escaped(live: str) -> None:
    secret_markers = (b"def create_app", b"[project]", b"root:x:0:0")
    for path in (
        "/static/../app.py",
        "/static/..%2fapp.py",
        "/static/%2e%2e/app.py",
        "/static/%2e%2e%2f%2e%2e%2f%2e%2e%2fpyproject.toml",
        "/static/..%5capp.py",
        "/static/....//app.py",
        "/static//etc/passwd",
        "/static/%2fetc%2fpasswd",
        "/static/../../../../../../etc/passwd",
        "/static/style.css%00.py",
        "/bots/..",
        "/bots/%2e%2e",
        "/games/../static/style.css",
    ):
        status, _, body = _raw_get(live, path)
        assert status in (400, 404), (path, status)
        assert not any(marker in body for marker in secret_markers), path
    status, headers, body = _raw_get(live, "/static/style.css")
    assert status == 200 and headers["content-type"].startswith("text/css")
    status, headers, _ = _raw_get(live, "/static/replay.js")
    assert status == 200 and "javascript" in headers["content-type"]


def test_content_types(hostile_client: TestClient, hostile: Hostile) -> None:
    for page in live_pages(hostile):
        response = hostile_client.get(page)
        assert response.status_code == 200, page
        assert response.headers["content-type"] == "text/html; charset=utf-8", page
        assert response.text.startswith("<!doctype html>")
    for api in ("/api/leaderboard", f"/api/games/{hostile.forfeit_game}", "/api/openapi.json"):
        response = hostile_client.get(api)
        assert response.status_code == 200, api
        assert response.headers["content-type"] == "application/json", api


def test_methods_other_than_get_are_refused_cleanly(
    hostile_client: TestClient, hostile: Hostile
) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        for page in ("/", f"/games/{hostile.forfeit_game}", "/api/leaderboard"):
            response = hostile_client.request(method, page)
            assert response.status_code == 405, (method, page, response.status_code)
            assert "Traceback" not in response.text


def test_head_is_answered_like_get(hostile_client: TestClient, hostile: Hostile) -> None:
    for page in ("/", f"/games/{hostile.forfeit_game}", "/api/leaderboard"):
        head = hostile_client.head(page)
        get = hostile_client.get(page)
        assert head.status_code == 200, (page, head.status_code)
        assert head.content == b""
        assert head.headers["content-type"] == get.headers["content-type"]
        assert head.headers["content-length"] == str(len(get.content))
    assert hostile_client.head("/games/999999").status_code == 404


def test_405_names_the_allowed_methods(hostile_client: TestClient) -> None:
    for page in ("/", "/api/leaderboard"):
        response = hostile_client.post(page)
        assert response.status_code == 405
        assert response.headers.get("allow") == "GET, HEAD", page


def test_api_docs_fetch_nothing_from_elsewhere(hostile_client: TestClient) -> None:
    page = hostile_client.get("/api/docs")
    assert page.status_code == 200
    # What a browser would fetch: every src and href stays on this site.
    fetched = re.findall(r'(?:src|href)\s*=\s*["\']?([^"\' >]+)', page.text)
    assert fetched and all(not re.match(r"(?:[a-z]+:)?//", url, re.I) for url in fetched), fetched
    assert "@import" not in page.text
    for operation in ("GET /api/leaderboard", "GET /api/games/{game_id}"):
        assert operation in page.text, operation
