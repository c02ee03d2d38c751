"""Tests from a mutation review of the arena service: whom the ladder pairs next, and what
the HTTP API answers. Each pins a behaviour a mutant of ours changed without any other test
noticing; the expected values come from docs/arena.md (and the pairing module's own
contract where the docs say only "the pair that teaches the most").
"""

from __future__ import annotations

import io
import re
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from arena.db import Database, Submission, SubmissionStatus, open_database
from arena.db.accounts import create_author, create_token
from arena.db.ladder import claim_orphan, release, renew_leases
from arena.service.app import create_service_app
from arena.service.ladder import Ladder
from arena.service.pairing import PairResult, choose_pair
from arena.service.settings import LadderSettings, ServiceSettings
from arena.tournament.config import SandboxSettings
from arena.tournament.store import register
from tests.service.conftest import make_bot
from tests.service.helpers import problem

# Three bots: 1 and 2 are even after many games (their order is a coin toss), 3 beat both
# in every game, with fewer games against 1 than against 2.
EVEN_PAIR = [PairResult(1, 2, 40, 20.0), PairResult(1, 3, 10, 0.0), PairResult(2, 3, 12, 0.0)]


def test_every_fifth_choice_is_the_pair_with_the_fewest_games() -> None:
    """docs/arena.md: the ladder chooses "the pair whose order is least certain, and every
    fifth choice the pair with the fewest games (every fifth series this server has
    scheduled since it started)": choices 5, 10, 15 (``scheduled`` 4, 9, 14) explore, the
    others do not."""
    chosen = {n: choose_pair([1, 2, 3], EVEN_PAIR, scheduled=n) for n in range(15)}
    fewest = {n for n, pair in chosen.items() if pair is not None and set(pair) == {1, 3}}
    uncertain = {n for n, pair in chosen.items() if pair is not None and set(pair) == {1, 2}}
    assert fewest == {4, 9, 14}
    assert uncertain == set(range(15)) - fewest


def test_a_new_bot_meets_the_opponent_whose_order_against_it_is_least_certain() -> None:
    """docs/arena.md: "new bots first" (arena/service/pairing.py: against its most uncertain
    opponent): a newcomer, rated at the field's middle, meets the middle bot first, not the
    strongest or the weakest, whatever the order of the list."""
    results = [
        PairResult(10, 20, 30, 27.0),  # 10 strong, 20 weak, 30 in between
        PairResult(10, 30, 30, 22.0),
        PairResult(30, 20, 30, 22.0),
    ]
    for players in ([10, 20, 30, 40], [40, 30, 20, 10], [20, 40, 10, 30]):
        pair = choose_pair(players, results)
        assert pair is not None and set(pair) == {30, 40}, players


# 1 and 2 even, 3 beat both in every game: the order of 1 and 2 is the least certain there is.
EVEN_TWINS = [PairResult(1, 2, 40, 20.0), PairResult(1, 3, 10, 0.0), PairResult(2, 3, 10, 0.0)]


def test_a_new_bot_is_paired_before_the_least_certain_pair_of_the_others() -> None:
    """docs/arena.md: "new bots first, then the pair whose order is least certain": bot 4,
    with no games, plays before the coin-toss pair 1-2 (even on an exploration turn)."""
    for n in range(5):
        pair = choose_pair([1, 2, 3, 4], EVEN_TWINS, scheduled=n)
        assert pair is not None and 4 in pair, n
    assert choose_pair([1, 2, 3], EVEN_TWINS) in ((1, 2), (2, 1))


def test_a_new_bot_whose_first_series_is_running_is_no_longer_new() -> None:
    """arena/service/pairing.py: a bot whose first series is under way is not new any more,
    so a second free slot goes to the least certain pair, not to the newcomer again (with
    ``ladder.concurrency`` slots the newcomer would otherwise take them all before any of its
    games is known)."""
    pair = choose_pair([1, 2, 3, 4], EVEN_TWINS, busy=[(4, 3)])
    assert pair in ((1, 2), (2, 1))


# ---------------------------------------------------------------------------- ladder leases


def test_a_server_giving_up_its_series_leaves_another_servers_series_held(
    tmp_path: Path,
) -> None:
    """docs/arena.md: a series is taken over only once its lease ran out (a server was
    killed). A server that stops cleanly gives up the leases of the unfinished ladder series
    it holds (arena/service/ladder.py ``Ladder.stop`` releases each with its own id): a
    series another live server holds keeps its lease, and a third server cannot claim it."""
    db = open_database(f"sqlite:///{tmp_path / 'arena.db'}")
    settings = ServiceSettings(
        store=tmp_path / "store",
        ladder=LadderSettings(lease_seconds=30.0),
        sandbox=SandboxSettings(backend="process", allow_unsafe=True),
    )
    for name in ("alpha", "beta"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sid = register(
                make_bot(tmp_path / name, name),
                db=db,
                submitted_by="organiser",
                store=settings.store,
            ).submission_id
        with db.session() as session:
            row = session.get(Submission, sid)
            assert row is not None
            row.status = SubmissionStatus.ACTIVE.value
            session.add(row)
    playing = Ladder(db, settings, label_prefix="kmr-one-")
    series_id = playing._next_series()  # claimed by this server, with a 30 s lease
    assert series_id is not None
    lease = timedelta(seconds=30)
    with db.session() as session:  # another server stops cleanly
        release(series_id, session=session, claimed_by="a-server-that-stops")
    with db.session() as session:
        assert claim_orphan(session=session, claimed_by="a-third-server", lease=lease) is None
    with db.session() as session:
        held = renew_leases([series_id], session=session, claimed_by=playing.instance, lease=lease)
    assert held == 1
    db.close()


# ---------------------------------------------------------------------------- the HTTP API

FAILURES_PER_MINUTE = 5


@dataclass
class Api:
    """The service app in process (no background work: uploads stay pending) with two
    authors, alice and bob, and their tokens."""

    db: Database
    http: TestClient
    tokens: dict[str, str]

    def auth(self, author: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[author]}"}

    def upload(self, author: str, name: str, version: str = "1.0.0") -> int:
        """A version of bot ``name`` uploaded by ``author``: its submission id."""
        source = make_bot(Path(self.db.url.removeprefix("sqlite:///")).parent / name, name, version)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for path in sorted(source.rglob("*")):
                archive.write(path, path.relative_to(source).as_posix())
        done = self.http.post(
            "/api/submissions", content=buffer.getvalue(), headers=self.auth(author)
        )
        assert done.status_code == 202, done.text
        submission_id: int = done.json()["submission_id"]
        return submission_id


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    db = open_database(f"sqlite:///{tmp_path / 'arena.db'}")
    tokens = {}
    with db.session() as session:
        for name in ("alice", "bob"):
            create_author(name, session=session)
            tokens[name] = create_token(name, session=session, lifetime=timedelta(days=1)).secret
    settings = ServiceSettings(
        store=tmp_path / "store",
        writes_per_minute=1000,
        auth_failures_per_minute=FAILURES_PER_MINUTE,
    )
    app = create_service_app(db, settings, run_background=False)
    with TestClient(app, raise_server_exceptions=False) as http:
        yield Api(db, http, tokens)
    db.close()


def test_another_authors_bot_and_version_are_403_and_never_shown(api: Api) -> None:
    """docs/arena.md: "403 another author's bot"; only the owner can "retire it or read its
    logs"; ``GET /api/submissions`` lists *your* versions. A bot nobody has is a 404."""
    bobs = api.upload("bob", "bobbot")
    alices = api.upload("alice", "alicebot")
    problem(api.http.get(f"/api/submissions/{bobs}", headers=api.auth("alice")), 403)
    problem(api.http.get("/api/bots/bobbot/logs", headers=api.auth("alice")), 403)
    problem(api.http.post("/api/bots/bobbot/retire", headers=api.auth("alice")), 403)
    problem(api.http.get("/api/bots/nobodysbot/logs", headers=api.auth("alice")), 404)
    problem(api.http.post("/api/bots/nobodysbot/retire", headers=api.auth("alice")), 404)
    mine = api.http.get("/api/submissions", headers=api.auth("alice"))
    assert mine.status_code == 200
    assert [s["submission_id"] for s in mine.json()["submissions"]] == [alices]
    own = api.http.get(f"/api/submissions/{alices}", headers=api.auth("alice"))
    assert own.status_code == 200 and own.json()["bot"] == "alicebot"
    with api.db.read_session() as session:  # bob's version was not retired by alice
        row = session.get(Submission, bobs)
        assert row is not None and row.status == SubmissionStatus.PENDING.value


def test_retiring_a_bot_retires_its_version_still_being_validated(api: Api) -> None:
    """docs/arena.md: "one retired while its validation ran stays retired": retiring a bot
    retires its pending version too (it must not join the ladder once its check passes)."""
    sid = api.upload("alice", "alicebot")
    done = api.http.post("/api/bots/alicebot/retire", headers=api.auth("alice"))
    assert done.status_code == 200, done.text
    assert done.json() == {"bot": "alicebot", "retired": ["1.0.0"]}
    shown = api.http.get(f"/api/submissions/{sid}", headers=api.auth("alice"))
    assert shown.json()["status"] == SubmissionStatus.RETIRED.value


def test_a_token_is_accepted_only_whole_and_only_as_a_bearer_token(api: Api) -> None:
    """docs/arena.md: the API "needs ``Authorization: Bearer TOKEN``"; 401 for a missing or
    invalid token."""
    token = api.tokens["alice"]
    assert api.http.get("/api/me", headers=api.auth("alice")).json()["author"] == "alice"
    for header in (f"Basic {token}", f"Token {token}", token, f"Bearer {token[:-1]}"):
        problem(api.http.get("/api/me", headers={"Authorization": header}), 401)


def test_refused_invite_codes_count_as_refused_credentials(api: Api) -> None:
    """docs/arena.md: an unknown code is "refused (403) and count[s] as refused credentials
    of that address (429 after ``auth_failures_per_minute``)"."""
    body = {"invite": "kryt-invite_nothing", "name": "mallory", "password": "a long password"}
    for _ in range(FAILURES_PER_MINUTE):
        problem(api.http.post("/api/register", json=body), 403)
    limited = api.http.post("/api/register", json=body)
    problem(limited, 429)
    assert float(limited.headers["retry-after"]) > 0


def test_a_form_with_a_prefix_of_its_csrf_token_is_refused(api: Api) -> None:
    """docs/arena.md: 403 for "a form without its CSRF token": a part of the right token is
    not the token."""
    page = api.http.get("/login")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None
    csrf = found.group(1)
    for presented in (csrf[:8], csrf[:-1], ""):
        refused = api.http.post(
            "/login",
            data={"csrf": presented, "token": api.tokens["alice"]},
            follow_redirects=False,
        )
        assert refused.status_code == 403, presented
    signed_in = api.http.post(
        "/login", data={"csrf": csrf, "token": api.tokens["alice"]}, follow_redirects=False
    )
    assert signed_in.status_code == 303
