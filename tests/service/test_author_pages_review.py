"""Review of the author pages of the arena server (``/register``, ``/login``, ``/logout``,
``/me``, ``/me/bots/{name}/retire``, ``/api/bots/{name}/logs``) from outside, as a hostile
author or a hostile web page would attack them.

- Text an author controls (the bots' output in game logs, forfeit details and check messages,
  a bot's manifest, the name chosen at registration) is shown as inert text: no markup, no
  control or bidi characters, and in headless Chromium no injected script runs and a very
  long line does not widen the page.
- One author never sees another's logs, checks or forfeits, by page or API, guessing ids or
  names; retiring someone else's bot is refused.
- Forms refuse a missing, wrong or foreign CSRF token and posts from other origins; signing
  out ends the session (a copy of the cookie and a form of the old page are refused); the
  cookies carry the documented flags.
- Sign-in and registration: one answer for every refused sign-in, the documented rate limit,
  invite codes that work once and not after expiry.
- HTTP: HEAD answered like GET, 405 with ``Allow``, hardening headers on every answer.

The service runs in this process (uvicorn in a thread for Chromium and real HTTP, or
Starlette's TestClient) with no background work; games and logs are recorded with the
arena's own functions (``record_game``, ``store_game_log``, ``finish_check``)."""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

import arena.db.accounts as accounts_module
from arena.db import (
    Database,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    find_bot,
    get_submission,
    open_database,
    record_game,
    series_of_tournament,
    submit,
)
from arena.db.accounts import claim_bot, create_author, create_invite, create_token
from arena.db.ladder import CheckStatus, finish_check, start_check, store_game_log
from arena.db.types import utcnow
from arena.service.app import create_service_app
from arena.service.auth import CSRF_COOKIE, SESSION_COOKIE, hash_password
from arena.service.settings import ServiceSettings
from referee.protocol.messages import GameEndReason
from tests.db.helpers import World, forfeit_game, new_submission
from tests.web.test_browser import chromium_session
from tests.webserver import served

PASSWORD = "correct horse battery"
SECRET = "s3cret-for-the-author-pages-review-0123456789"
HARDENING = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}
WAIT_S = 20.0

# Text a bot writes: markup that closes every element a page could put it in, attribute
# breakouts, javascript: links, terminal escapes, a bidi override, NUL, CR, BEL, U+2028.
INJECTION = (
    "</pre></textarea></h3></td></table><script>window.__krytPwned = 1;"
    ' document.title = "PWNED"</script>'
    '<img src="/x-injected" onerror="window.__krytPwned = 2">'
    '"><svg onload="window.__krytPwned = 3"></svg>'
    "' onmouseover='window.__krytPwned = 4' "
    '<a id="injected-link" href="javascript:window.__krytPwned = 5">click me</a>'
    " javascript:alert(1) <style>body { display: none }</style>"
    '<meta http-equiv="refresh" content="0; url=http://example.invalid/">'
)
CONTROLS = "\x1b[2J\x1b]0;retitled\x07 \u202eesrever\u202c NUL[\x00] CR[\r] LS[\u2028] BS[\x08]"
ALICE_LOG = f"ALICE-LOG-MARK\n{INJECTION}\n{CONTROLS}\nlast line of alice"
ALICE_FORFEIT = f"ALICE-FORFEIT-MARK {INJECTION} {CONTROLS}"
ALICE_CHECK = f"ALICE-CHECK-MARK {INJECTION} {CONTROLS}"
ALICE_MARKS = ("ALICE-LOG-MARK", "ALICE-FORFEIT-MARK", "ALICE-CHECK-MARK", "last line of alice")
BOB_LOG = "BOB-LOG-MARK: bob's private thoughts"
BOB_CHECK = "BOB-CHECK-MARK: bob's validation"
BOB_MARKS = ("BOB-LOG-MARK", "BOB-CHECK-MARK")
LONG_WORD = "W" * 6000
LOG_LIMIT = 16 * 1024


# ---------------------------------------------------------------------------- the world


@dataclass
class Site:
    """A served service over a filled database."""

    url: str
    db: Database
    tokens: dict[str, str]
    subs: dict[str, int]
    games: dict[str, int] = field(default_factory=dict)

    def status(self, bot: str) -> str:
        with self.db.read_session() as session:
            return get_submission(self.subs[bot], session=session).status

    def bearer(self, author: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[author]}"}


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]*)"', html)
    assert found is not None, html[:2000]
    return found.group(1)


def _sign_in(client: httpx.Client | TestClient, **form: str) -> str:
    """Sign ``client`` in through the form; the session cookie."""
    page = client.get("/login")
    assert page.status_code == 200, page.text
    done = client.post("/login", data={"csrf": _csrf(page.text), **form}, follow_redirects=False)
    assert done.status_code == 303, done.text
    assert done.headers["location"] == "/me"
    cookie = client.cookies.get(SESSION_COOKIE)
    assert cookie
    return str(cookie)


@contextmanager
def _client(site: Site, author: str | None = None) -> Iterator[httpx.Client]:
    """A client of the site (a browser of its own), signed in as ``author`` if given."""
    with httpx.Client(base_url=site.url, timeout=60) as client:
        if author is not None:
            _sign_in(client, token=site.tokens[author])
        yield client


def _pair(db: Database, name: str, a: str, b: str, owners: tuple[int, int]) -> World:
    """Bots ``a`` and ``b`` (one version each, owned by ``owners``) and a tournament
    ``name`` with one series between them."""
    with db.session() as session:
        sa = submit(new_submission(a), session=session).submission
        sb = submit(new_submission(b), session=session).submission
        assert sa.id is not None and sb.id is not None
        for bot_name, owner in zip((a, b), owners, strict=True):
            bot = find_bot(bot_name, session=session)
            assert bot is not None
            claim_bot(bot, owner, session=session)
        tournament = create_tournament(
            TournamentSpec(name=name, seed=7, series=[SeriesSpec(sa.id, sb.id, 4, 99)]),
            session=session,
        )
        assert tournament.id is not None
        (series,) = series_of_tournament(tournament.id, session=session)
        assert series.id is not None
        return World(sa.id, sb.id, tournament.id, series.id)


def _game(
    db: Database, world: World, number: int, seat: int, detail: str, logs: tuple[str, str]
) -> int:
    """Game ``number`` of the world, forfeited (a crash) by ``seat`` with ``detail``, and
    both seats' captured output."""
    record, where = forfeit_game(world, number, seat, GameEndReason.CRASH, detail=detail)
    with db.session() as session:
        game_id = record_game(record, where, session=session).game.id
        assert game_id is not None
        for s, (sub, text) in enumerate(zip((world.sub_a, world.sub_b), logs, strict=True)):
            store_game_log(game_id, s, sub, text, session=session, limit=LOG_LIMIT)
        return game_id


def _check(db: Database, submission_id: int, author_id: int, message: str) -> None:
    with db.session() as session:
        start_check(submission_id, author_id, session=session)
        finish_check(submission_id, CheckStatus.FAILED, message, [], session=session)


def _fill(db: Database) -> tuple[dict[str, str], dict[str, int], dict[str, int]]:
    """Authors, bots, games, logs and checks; (tokens, submission ids, game ids)."""
    tokens: dict[str, str] = {}
    ids: dict[str, int] = {}
    with db.session() as session:
        for name in ("alice", "bob", "nopass", "wlog", "wforfeit", "wcheck"):
            password = hash_password(PASSWORD) if name == "alice" else None
            author = create_author(name, session=session, password_hash=password)
            assert author.id is not None
            ids[name] = author.id
            lifetime = timedelta(days=1)
            tokens[name] = create_token(name, session=session, lifetime=lifetime).secret
    cup = _pair(db, "cup", "alice-bot", "bob-bot", (ids["alice"], ids["bob"]))
    games = {
        "alice-forfeits": _game(db, cup, 1, 0, ALICE_FORFEIT, (ALICE_LOG, BOB_LOG)),
        "bob-forfeits": _game(db, cup, 2, 1, "BOB-FORFEIT-MARK", ("alice 2", BOB_LOG)),
    }
    spare = _pair(db, "spare", "alice-keep", "alice-spare", (ids["alice"], ids["alice"]))
    wide = _pair(db, "wide", "wide-log", "wide-forfeit", (ids["wlog"], ids["wforfeit"]))
    games["wide"] = _game(
        db,
        wide,
        1,
        1,
        f"crash: {LONG_WORD}",
        (f"start\n{LONG_WORD}\nend", "short output of wide-forfeit"),
    )
    checked = _pair(db, "checked", "wide-check", "bob-extra", (ids["wcheck"], ids["bob"]))
    _check(db, cup.sub_a, ids["alice"], ALICE_CHECK)
    _check(db, cup.sub_b, ids["bob"], BOB_CHECK)
    _check(db, checked.sub_a, ids["wcheck"], f"rejected: {LONG_WORD}")
    subs = {
        "alice-bot": cup.sub_a,
        "bob-bot": cup.sub_b,
        "alice-keep": spare.sub_a,
        "alice-spare": spare.sub_b,
        "wide-log": wide.sub_a,
        "wide-forfeit": wide.sub_b,
        "wide-check": checked.sub_a,
        "bob-extra": checked.sub_b,
    }
    return tokens, subs, games


def _settings(tmp: Path, **kw: Any) -> ServiceSettings:
    base: dict[str, Any] = {
        "store": tmp / "store",
        "writes_per_minute": 1000,
        "auth_failures_per_minute": 1000,
        "secret": SECRET,
    }
    return ServiceSettings(**(base | kw))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The service over a filled SQLite database, served by uvicorn on a free port."""
    tmp = tmp_path_factory.mktemp("authors")
    db = open_database(f"sqlite:///{tmp / 'arena.db'}")
    tokens, subs, games = _fill(db)
    app = create_service_app(db, _settings(tmp), run_background=False)
    try:
        with served(app) as url:
            yield Site(url, db, tokens, subs, games)
    finally:
        db.close()


@dataclass
class Local:
    """The service in process (TestClient) over a database of its own."""

    db: Database
    http: TestClient
    token: str


@pytest.fixture
def local_factory(tmp_path: Path) -> Iterator[Callable[..., Local]]:
    """Make an in-process service with these settings (alice: a password and a token)."""
    made: list[tuple[Database, TestClient]] = []

    def make(base_url: str = "http://testserver", **kw: Any) -> Local:
        folder = tmp_path / f"local{len(made)}"
        folder.mkdir()
        db = open_database(f"sqlite:///{folder / 'arena.db'}")
        with db.session() as session:
            create_author("alice", session=session, password_hash=hash_password(PASSWORD))
            token = create_token("alice", session=session, lifetime=timedelta(days=1)).secret
        app = create_service_app(db, _settings(folder, **kw), run_background=False)
        client = TestClient(app, base_url=base_url, raise_server_exceptions=False)
        client.__enter__()
        made.append((db, client))
        return Local(db, client, token)

    yield make
    for db, client in made:
        client.__exit__(None, None, None)
        db.close()


# ---------------------------------------------------------------------------- bot text


def test_me_shows_the_bots_hostile_text_as_inert_text(site: Site) -> None:
    with _client(site, "alice") as alice:
        page = alice.get("/me")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    html = page.text
    for mark in ALICE_MARKS:
        assert mark in html, mark
    # No markup of the bot's: only its text, escaped.
    for raw in (
        "<script>window",
        '<img src="/x-injected"',
        "<svg onload",
        "<style>body",
        '<meta http-equiv="refresh"',
        'href="javascript:',
        "</textarea>",
        "' onmouseover='",
    ):
        assert raw not in html, raw
    assert "&lt;script&gt;window.__krytPwned" in html
    assert html.count("<pre") == html.count("</pre>")
    assert "<script" not in html  # the page itself has no script at all
    # No control, bidi or line-separator character reaches the page; each is shown escaped.
    for char in ("\x1b", "\x07", "\x08", "\x00", "\r", "\u202e", "\u202c", "\u2028"):
        assert char not in html, repr(char)
    for shown in ("\\x1b[2J", "\\x07", "\\u202e", "\\x0d", "\\x08", "\\u2028"):
        assert shown in html, shown


def test_the_logs_api_returns_bot_text_as_json_data(site: Site) -> None:
    response = httpx.get(
        f"{site.url}/api/bots/alice-bot/logs", headers=site.bearer("alice"), timeout=60
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-content-type-options"] == "nosniff"
    body = response.json()
    assert body["bot"] == "alice-bot"
    by_game = {entry["game_id"]: entry for entry in body["logs"]}
    forfeited = by_game[site.games["alice-forfeits"]]
    assert forfeited["forfeit"] is True and forfeited["seat"] == 0
    assert forfeited["text"] == ALICE_LOG.replace("\x00", "\ufffd")  # NUL kept as U+FFFD
    assert forfeited["forfeit_detail"] == ALICE_FORFEIT.replace("\x00", "\ufffd")
    # The game bob forfeited: alice's output, none of bob's forfeit or output.
    other = by_game[site.games["bob-forfeits"]]
    assert other["forfeit"] is False and other["forfeit_detail"] is None
    assert all(entry["submission_id"] == site.subs["alice-bot"] for entry in body["logs"])
    for mark in (*BOB_MARKS, "BOB-FORFEIT-MARK"):
        assert mark not in response.text, mark


def test_a_hostile_manifest_is_inert_on_me(site: Site, tmp_path: Path) -> None:
    """A bot uploaded through the API with markup in its manifest's text fields."""
    import io
    import zipfile

    manifest = (
        'name = "alice-manifest"\nversion = "1.0+x-y_z"\nruntime = "python"\n'
        'entry = "bot.py"\n'
        "description = '<script>window.__krytPwned = 9</script><img src=x onerror=alert(9)>'\n"
        "author = '<b onmouseover=alert(8)>me</b>'\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("bot.toml", manifest)
        zf.writestr("bot.py", "x = 1\n")
    stored = httpx.post(
        f"{site.url}/api/submissions",
        content=buffer.getvalue(),
        headers=site.bearer("alice"),
        timeout=120,
    )
    assert stored.status_code in (200, 202), stored.text
    with _client(site, "alice") as alice:
        html = alice.get("/me").text
    assert "alice-manifest" in html and "1.0+x-y_z" in html
    assert "<script>window" not in html and "<img src=x" not in html
    assert "<b onmouseover" not in html


# ---------------------------------------------------------------------------- other authors


def test_another_author_sees_none_of_my_logs_checks_or_forfeits(site: Site) -> None:
    with _client(site, "bob") as bob:
        page = bob.get("/me")
        assert page.status_code == 200
        # bob's own output of the same games is there...
        assert "BOB-LOG-MARK" in page.text and "BOB-CHECK-MARK" in page.text
        assert "BOB-FORFEIT-MARK" in page.text
        # ...and nothing of alice's, though her bot sat at the same games.
        for mark in ALICE_MARKS:
            assert mark not in page.text, mark
        assert "alice-keep" not in page.text
        api = bob.get("/api/submissions", headers=site.bearer("bob"))
        assert api.status_code == 200
        assert {s["bot"] for s in api.json()["submissions"]} == {"bob-bot", "bob-extra"}
        for mark in ALICE_MARKS:
            assert mark not in api.text, mark
    with _client(site, "alice") as alice:
        mine = alice.get("/me").text
    for mark in (*BOB_MARKS, "BOB-FORFEIT-MARK", "short output of wide-forfeit"):
        assert mark not in mine, mark


def test_guessing_ids_and_names_reveals_nothing(site: Site) -> None:
    others = {"alice-bot", "alice-keep", "alice-spare", "wide-log", "wide-forfeit", "wide-check"}
    with httpx.Client(base_url=site.url, headers=site.bearer("bob"), timeout=60) as bob:
        for sid in range(1, max(site.subs.values()) + 4):
            response = bob.get(f"/api/submissions/{sid}")
            assert response.status_code in (200, 403, 404), (sid, response.text)
            if response.status_code == 200:
                assert response.json()["bot"] in {"bob-bot", "bob-extra"}, sid
            for mark in ALICE_MARKS:
                assert mark not in response.text, (sid, mark)
        names = [*sorted(others), "ALICE-BOT", "alice-bot ", "no-such-bot", "a%00b", "..", "%2e"]
        for name in names:
            response = bob.get(f"/api/bots/{name}/logs")
            assert response.status_code in (403, 404), (name, response.text)
            assert response.headers["content-type"].startswith("application/problem+json")
            for mark in (*ALICE_MARKS, "W" * 100):
                assert mark not in response.text, (name, mark)


def test_retiring_another_authors_bot_through_the_form_is_refused(site: Site) -> None:
    with _client(site, "bob") as bob:
        csrf = _csrf(bob.get("/me").text)
        for name, status in (("alice-keep", 403), ("no-such-bot", 404), ("a%00b", 404)):
            response = bob.post(
                f"/me/bots/{name}/retire", data={"csrf": csrf}, follow_redirects=False
            )
            assert response.status_code == status, (name, response.text)
            assert response.headers["content-type"].startswith("text/html")
    assert site.status("alice-keep") == "active"


# ---------------------------------------------------------------------------- CSRF, sessions


def test_forms_refuse_a_missing_wrong_or_foreign_csrf_token(site: Site) -> None:
    with _client(site, "bob") as bob:
        bobs = _csrf(bob.get("/me").text)
    with httpx.Client(base_url=site.url, timeout=60) as anonymous:
        login_page_token = _csrf(anonymous.get("/login").text)
    with _client(site, "alice") as alice:
        mine = _csrf(alice.get("/me").text)
        for form in ({}, {"csrf": ""}, {"csrf": bobs}, {"csrf": login_page_token}, {"csrf": "x"}):
            for path in ("/me/bots/alice-keep/retire", "/logout"):
                response = alice.post(path, data=form, follow_redirects=False)
                assert response.status_code == 403, (path, form, response.text)
                assert "CSRF" in response.text
        # The session lived through all that, and its own token works (a control).
        assert alice.get("/me", follow_redirects=False).status_code == 200
        done = alice.post(
            "/me/bots/alice-spare/retire", data={"csrf": mine}, follow_redirects=False
        )
        assert done.status_code == 303 and done.headers["location"] == "/me"
    assert site.status("alice-keep") == "active"
    assert site.status("alice-spare") == "retired"


def test_sign_out_ends_the_session_and_a_replayed_form_is_refused(site: Site) -> None:
    with _client(site, "alice") as alice:
        cookie = alice.cookies[SESSION_COOKIE]
        csrf = _csrf(alice.get("/me").text)
        out = alice.post("/logout", data={"csrf": csrf}, follow_redirects=False)
        assert out.status_code == 303 and out.headers["location"] == "/"
        assert SESSION_COOKIE in out.headers.get("set-cookie", "")
        assert alice.cookies.get(SESSION_COOKIE) is None  # the browser's cookie is gone
        assert alice.get("/me", follow_redirects=False).headers["location"] == "/login"
    # A copy of the cookie and the old page's form, replayed after signing out.
    with httpx.Client(base_url=site.url, timeout=60) as replay:
        replay.cookies.set(SESSION_COOKIE, cookie)
        me = replay.get("/me", follow_redirects=False)
        assert me.status_code == 303 and me.headers["location"] == "/login"
        retire = replay.post(
            "/me/bots/alice-keep/retire", data={"csrf": csrf}, follow_redirects=False
        )
        assert retire.status_code == 401, retire.text
    assert site.status("alice-keep") == "active"


@pytest.mark.parametrize("secure", [False, True], ids=["http", "secure-cookies"])
def test_the_cookies_carry_the_documented_flags(
    local_factory: Callable[..., Local], secure: bool
) -> None:
    scheme = "https" if secure else "http"
    local = local_factory(base_url=f"{scheme}://testserver", secure_cookies=secure)

    def flags(response: Any, name: str) -> dict[str, str]:
        for header in response.headers.get_list("set-cookie"):
            if header.startswith(f"{name}="):
                parts = [p.strip() for p in header.split(";")[1:]]
                return {p.split("=")[0].lower(): p.partition("=")[2] for p in parts}
        raise AssertionError(f"no {name} cookie in {response.headers}")

    page = local.http.get("/login")
    csrf_flags = flags(page, CSRF_COOKIE)
    for cookie_flags in (csrf_flags,):
        assert "httponly" in cookie_flags and cookie_flags["samesite"].lower() == "strict"
        assert ("secure" in cookie_flags) is secure
    done = local.http.post(
        "/login",
        data={"csrf": _csrf(page.text), "name": "alice", "password": PASSWORD},
        follow_redirects=False,
    )
    assert done.status_code == 303, done.text
    session_flags = flags(done, SESSION_COOKIE)
    assert "httponly" in session_flags and session_flags["samesite"].lower() == "strict"
    assert ("secure" in session_flags) is secure
    assert session_flags["path"] == "/"
    assert int(session_flags["max-age"]) == 12 * 3600  # session_hours
    # Registration signs in with the same kind of cookie.
    with local.db.session() as session:
        code = create_invite(session=session, lifetime=timedelta(days=1)).code
    local.http.cookies.clear()
    form = local.http.get("/register")
    registered = local.http.post(
        "/register",
        data={"csrf": _csrf(form.text), "invite": code, "name": "dana", "password": PASSWORD},
    )
    assert registered.status_code == 201, registered.text
    registered_flags = flags(registered, SESSION_COOKIE)
    assert "httponly" in registered_flags and registered_flags["samesite"].lower() == "strict"
    assert ("secure" in registered_flags) is secure
    assert registered.headers["cache-control"] == "no-store"  # the page shows the token


# ---------------------------------------------------------------------------- sign-in


def test_every_refused_sign_in_gets_the_same_answer(site: Site) -> None:
    """A wrong password, an unknown name, an author with no password, a wrong token: one
    answer, which tells nothing about who exists."""
    attempts = [
        {"name": "alice", "password": "wrong password 123"},
        {"name": "nobody-here", "password": "wrong password 123"},
        {"name": "nopass", "password": "wrong password 123"},
        {"name": "alice", "password": ""},
        {"name": "<script>", "password": "x" * 2000},
        {"token": "kryt_" + "x" * 40},
        {"token": site.tokens["alice"] + "x"},
    ]
    bodies = set()
    with httpx.Client(base_url=site.url, timeout=60) as client:
        csrf = _csrf(client.get("/login").text)
        for form in attempts:
            response = client.post("/login", data={"csrf": csrf, **form}, follow_redirects=False)
            assert response.status_code == 401, (form, response.text)
            assert SESSION_COOKIE not in response.headers.get("set-cookie", "")
            assert "Wrong name, password or token." in response.text
            bodies.add(response.text)
    assert len(bodies) == 1, "the refusals differ"


def test_failed_sign_ins_reach_the_documented_rate_limit(
    local_factory: Callable[..., Local],
) -> None:
    local = local_factory(auth_failures_per_minute=3)
    csrf = _csrf(local.http.get("/login").text)
    wrong = {"csrf": csrf, "name": "alice", "password": "wrong password 123"}
    for _ in range(3):
        assert local.http.post("/login", data=wrong).status_code == 401
    for form in (wrong, {"csrf": csrf, "name": "alice", "password": PASSWORD}):
        blocked = local.http.post("/login", data=form, follow_redirects=False)
        assert blocked.status_code == 429, blocked.text
        assert int(blocked.headers["retry-after"]) >= 1
        assert blocked.headers["content-type"].startswith("text/html")
        for name, value in HARDENING.items():
            assert blocked.headers[name] == value
        assert SESSION_COOKIE not in blocked.headers.get("set-cookie", "")


def test_refused_invite_codes_reach_the_documented_rate_limit(
    local_factory: Callable[..., Local],
) -> None:
    local = local_factory(auth_failures_per_minute=3)
    csrf = _csrf(local.http.get("/register").text)
    form = {"csrf": csrf, "invite": "kryt_inv_nonsense", "name": "mallory", "password": PASSWORD}
    for _ in range(3):
        refused = local.http.post("/register", data=form)
        assert refused.status_code == 403, refused.text
        assert "invalid invite code" in refused.text
    with local.db.session() as session:
        code = create_invite(session=session, lifetime=timedelta(days=1)).code
    blocked = local.http.post("/register", data={**form, "invite": code})
    assert blocked.status_code == 429, blocked.text
    assert int(blocked.headers["retry-after"]) >= 1
    with local.db.session() as session:
        assert accounts_module.find_author("mallory", session=session) is None


def test_an_invite_code_works_once_and_not_after_it_expires(
    local_factory: Callable[..., Local], monkeypatch: pytest.MonkeyPatch
) -> None:
    local = local_factory()
    with local.db.session() as session:
        code = create_invite(session=session, lifetime=timedelta(days=1)).code
        late = create_invite(session=session, lifetime=timedelta(days=1)).code
    csrf = _csrf(local.http.get("/register").text)

    def register(invite: str, name: str) -> Any:
        data = {"csrf": csrf, "invite": invite, "name": name, "password": PASSWORD}
        return local.http.post("/register", data=data)

    # A hostile name is refused, escaped, and leaves the code unused.
    for name in ('<script>window.x=1</script>"><img src=x>', "ev\x1b[31mil\u202e", "alice"):
        refused = register(code, name)
        assert refused.status_code in (409, 422), (name, refused.text)
        assert "<script>window" not in refused.text and "<img src=x" not in refused.text
        assert "\x1b" not in refused.text and "\u202e" not in refused.text
        assert SESSION_COOKIE not in refused.headers.get("set-cookie", "")
    done = register(code, "dana")
    assert done.status_code == 201, done.text
    assert 'id="new-token">kryt_' in done.text
    again = register(code, "erin")
    assert again.status_code == 403 and "invalid invite code" in again.text
    # The code `late` expires: a day and a minute later it is refused.
    later = utcnow() + timedelta(days=1, minutes=1)
    monkeypatch.setattr(accounts_module, "utcnow", lambda: later)
    expired = register(late, "frank")
    assert expired.status_code == 403 and "invalid invite code" in expired.text
    with local.db.session() as session:
        assert accounts_module.find_author("erin", session=session) is None
        assert accounts_module.find_author("frank", session=session) is None


# ---------------------------------------------------------------------------- HTTP


def _answers(site: Site) -> list[tuple[str, httpx.Response]]:
    """One answer of each kind the author pages give."""
    out: list[tuple[str, httpx.Response]] = []
    with httpx.Client(base_url=site.url, timeout=60) as anonymous:
        csrf = _csrf(anonymous.get("/login").text)
        out += [
            ("GET /login", anonymous.get("/login")),
            ("GET /register", anonymous.get("/register")),
            ("GET /me anonymous", anonymous.get("/me", follow_redirects=False)),
            ("POST /login refused", anonymous.post("/login", data={"csrf": csrf, "name": "x"})),
            ("POST /login no csrf", anonymous.post("/login", data={"name": "x"})),
            ("POST /logout no csrf", anonymous.post("/logout", data={})),
            ("POST retire anonymous", anonymous.post("/me/bots/alice-keep/retire", data={})),
            (
                "POST /register bad code",
                anonymous.post("/register", data={"csrf": csrf, "invite": "x", "name": "y"}),
            ),
            ("PUT /me", anonymous.put("/me")),
            ("GET /logout", anonymous.get("/logout")),
        ]
    with _client(site, "bob") as bob:
        token = _csrf(bob.get("/me").text)
        out += [
            ("GET /me", bob.get("/me")),
            ("HEAD /me", bob.head("/me")),
            ("POST retire other", bob.post("/me/bots/alice-keep/retire", data={"csrf": token})),
            ("POST retire unknown", bob.post("/me/bots/nothing/retire", data={"csrf": token})),
        ]
    return out


def test_every_author_answer_carries_the_hardening_headers(site: Site) -> None:
    answers = _answers(site)
    statuses = {what: r.status_code for what, r in answers}
    assert statuses["POST /login refused"] == 401 and statuses["POST retire other"] == 403
    assert statuses["PUT /me"] == 405 and statuses["GET /me anonymous"] == 303
    for what, response in answers:
        for name, value in HARDENING.items():
            assert response.headers.get(name) == value, (what, name, response.headers)


@pytest.mark.parametrize("path", ["/login", "/register", "/me", "/me-anonymous"])
def test_head_is_answered_like_get(site: Site, path: str) -> None:
    with _client(site, None if path.endswith("anonymous") else "bob") as client:
        target = path.removesuffix("-anonymous")
        got = client.get(target, follow_redirects=False)
        head = client.head(target, follow_redirects=False)
    assert head.status_code == got.status_code
    assert head.content == b""
    skip = {"date", "set-cookie"}
    assert {k: v for k, v in head.headers.items() if k not in skip} == {
        k: v for k, v in got.headers.items() if k not in skip
    }


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/logout", "POST"),
        ("PUT", "/logout", "POST"),
        ("DELETE", "/me", "GET, HEAD"),
        ("POST", "/me", "GET, HEAD"),
        ("GET", "/me/bots/alice-keep/retire", "POST"),
        ("PATCH", "/login", "GET, HEAD, POST"),
        ("TRACE", "/register", "GET, HEAD, POST"),
        ("OPTIONS", "/me/bots/alice-keep/retire", "POST"),
    ],
)
def test_a_method_an_author_page_does_not_take_is_a_405_with_allow(
    site: Site, method: str, path: str, allow: str
) -> None:
    with _client(site, "alice") as alice:
        response = alice.request(method, path, follow_redirects=False)
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allow
    assert response.headers["content-type"].startswith("text/html")
    assert site.status("alice-keep") == "active"


# ---------------------------------------------------------------------------- Chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium session (skipped locally, failed under CI, when missing)."""
    with chromium_session(page_load_timeout=60) as driver:
        yield driver


def _wait(driver: Any, condition: Callable[[Any], Any], timeout: float = WAIT_S) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.25).until(condition)


def _browser_sign_in(driver: Any, site: Site, author: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(site.url + "/login")
    driver.delete_all_cookies()
    driver.get(site.url + "/login")
    driver.find_element(By.NAME, "token").send_keys(site.tokens[author])
    driver.find_element(By.CSS_SELECTOR, "#login-form button[type=submit]").click()
    _wait(driver, lambda d: d.current_url == site.url + "/me")


def _severe(driver: Any) -> list[Any]:
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


@pytest.mark.browser
def test_no_injected_script_runs_on_me_in_chromium(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    _browser_sign_in(browser, site, "alice")
    _severe(browser)  # drop what came before
    browser.get(site.url + "/me")
    _wait(browser, lambda d: "ALICE-LOG-MARK" in d.find_element(By.TAG_NAME, "body").text)
    state = browser.execute_script(
        "return {pwned: window.__krytPwned === undefined ? null : window.__krytPwned,"
        " title: document.title,"
        " injected: document.querySelectorAll('main script, main img, main svg, main style,"
        ' main meta, main iframe, #injected-link, a[href^="javascript:"]\').length,'
        " shown: getComputedStyle(document.body).display,"
        " logs: Array.from(document.querySelectorAll('pre.log')).map(p => p.textContent)};"
    )
    assert state["pwned"] is None, state
    assert state["title"] == "alice: my bots · Kryt Arena", state["title"]
    assert state["injected"] == 0, state
    assert state["shown"] != "none"
    assert any("<script>window.__krytPwned = 1;" in text for text in state["logs"]), state
    assert browser.current_url == site.url + "/me"  # no injected refresh took the page away
    # Pointing at or focusing any of the shown text does not run anything either.
    browser.execute_script(
        "for (const e of document.querySelectorAll('main *')) {"
        " for (const t of ['mouseover', 'mouseenter', 'focus'])"
        " e.dispatchEvent(new Event(t, {bubbles: true})); }"
    )
    assert browser.execute_script("return window.__krytPwned === undefined")
    assert browser.current_url == site.url + "/me"
    assert not _severe(browser)  # no injected image was even requested


@pytest.mark.browser
@pytest.mark.parametrize(
    "author",
    [
        pytest.param("wlog", id="log"),
        pytest.param("wforfeit", id="forfeit-detail"),
        pytest.param("wcheck", id="check-message"),
    ],
)
def test_a_very_long_line_of_bot_text_does_not_widen_me(
    browser: Any, site: Site, author: str
) -> None:
    from selenium.webdriver.common.by import By

    _browser_sign_in(browser, site, author)
    browser.get(site.url + "/me")
    _wait(browser, lambda d: "W" * 200 in d.find_element(By.TAG_NAME, "body").text)
    widths = browser.execute_script(
        "const e = document.documentElement;"
        " return [e.scrollWidth, e.clientWidth, window.innerWidth];"
    )
    assert widths[0] <= widths[1], f"page {widths[0]} px wide in a {widths[1]} px viewport"


class _Evil(http.server.BaseHTTPRequestHandler):
    """A hostile site: its pages are given by the server's ``pages`` attribute."""

    def do_GET(self) -> None:
        pages: dict[str, str] = getattr(self.server, "pages", {})
        body = pages.get(self.path, "<p>nothing</p>").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def evil() -> Iterator[tuple[int, dict[str, str]]]:
    """A hostile web site on another port of loopback: (its port, its pages)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Evil)
    pages: dict[str, str] = {}
    server.pages = pages  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], pages
    finally:
        server.shutdown()
        server.server_close()
        thread.join(30)


@pytest.mark.browser
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"], ids=["same-site", "cross-site"])
def test_a_hostile_page_cannot_post_the_author_forms(
    browser: Any, site: Site, evil: tuple[int, dict[str, str]], host: str
) -> None:
    """A page elsewhere (another port of the same host, or another site) submits the retire,
    sign-out and sign-in forms on its own: without the right CSRF token all are refused."""
    from selenium.webdriver.common.by import By

    port, pages = evil
    guess = "0" * 64
    for name, action, fields in (
        ("retire", "/me/bots/alice-keep/retire", f'<input name="csrf" value="{guess}">'),
        ("logout", "/logout", ""),
        # Login CSRF: signing the victim in as someone else (bob) with a guessed token.
        (
            "login",
            "/login",
            f'<input name="token" value="{site.tokens["bob"]}"><input name="csrf" value="{guess}">',
        ),
    ):
        pages[f"/{name}"] = (
            f'<form method="post" action="{site.url}{action}">{fields}</form>'
            "<script>document.forms[0].submit()</script>"
        )
    _browser_sign_in(browser, site, "alice")
    for name in ("retire", "logout", "login"):
        browser.get(f"http://{host}:{port}/{name}")
        _wait(browser, lambda d: d.current_url.startswith(site.url))
        heading = browser.find_element(By.TAG_NAME, "h1").text
        assert heading in ("Forbidden", "Unauthorized"), (name, heading)
    assert site.status("alice-keep") == "active"
    browser.get(site.url + "/me")  # still alice: the sign-out and the sign-in were refused
    assert browser.current_url == site.url + "/me"
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("alice")


@pytest.mark.browser
def test_a_hostile_page_cannot_read_me(
    browser: Any, site: Site, evil: tuple[int, dict[str, str]]
) -> None:
    port, pages = evil
    pages["/read"] = "<p>reader</p>"
    _browser_sign_in(browser, site, "alice")
    browser.get(f"http://127.0.0.1:{port}/read")
    browser.set_script_timeout(WAIT_S)
    outcome = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f" fetch('{site.url}/me', {{credentials: 'include'}})"
        " .then(r => r.text()).then(t => done('read: ' + t.slice(0, 4000)),"
        " e => done('refused: ' + e));"
    )
    assert outcome.startswith("refused: "), outcome[:300]
    assert "ALICE-LOG-MARK" not in outcome
