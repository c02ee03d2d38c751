"""Invite codes and disabled authors: in the database functions (SQLite and PostgreSQL) and
end to end over a real server (the CLI creates codes and disables authors, people register
over the API and the web)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.db import ConflictError, Database, open_database
from arena.db.accounts import (
    InviteError,
    authenticate_token,
    create_invite,
    get_author,
    redeem_invite,
    set_author_disabled,
)
from arena.service.ladder import entrants
from tests.db.conftest import _fresh_postgres_database, postgres_admin_url
from tests.service.conftest import Arena, kryt, make_bot, submit
from tests.service.helpers import problem
from tests.services import require

DAY = timedelta(days=1)


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ]
)
def fresh_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """An empty, migrated database of this test's own, on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        urls: Iterator[str] = iter([f"sqlite:///{tmp_path / 'kryt.db'}"])
    else:
        admin_url = postgres_admin_url()
        require(admin_url is not None, "PostgreSQL", "set KRYT_TEST_POSTGRES_URL")
        assert admin_url is not None
        urls = _fresh_postgres_database(admin_url)
    for url in urls:
        database = open_database(url)
        try:
            yield database
        finally:
            database.close()


def _redeem(db: Database, code: str, name: str) -> str:
    with db.session() as session:
        _author, token = redeem_invite(
            code, name, session=session, password_hash=None, token_lifetime=DAY
        )
    return token.secret


# ---------------------------------------------------------------------------- the database


def test_an_invite_registers_one_author_once(fresh_db: Database) -> None:
    db = fresh_db
    with db.session() as session:
        invite = create_invite(session=session, lifetime=DAY, label="for ann")
    secret = _redeem(db, invite.code, "ann")
    with db.session() as session:
        principal = authenticate_token(secret, session=session)
    assert principal is not None and principal.author_name == "ann"
    with pytest.raises(InviteError, match="invalid invite code"):
        _redeem(db, invite.code, "ann2")
    with db.read_session() as session:
        from arena.db.accounts import find_author, list_invites

        assert find_author("ann2", session=session) is None
        (row,) = list_invites(session=session)
        assert row.used_at is not None and row.author_id == get_author("ann", session=session).id


def test_expired_and_unknown_invites_fail_closed(fresh_db: Database) -> None:
    db = fresh_db
    with db.session() as session:
        invite = create_invite(session=session, lifetime=timedelta(seconds=1))
    time.sleep(1.2)
    for code in (invite.code, "kryt-invite_made-up", "", "x" * 10_000):
        with pytest.raises(InviteError):
            _redeem(db, code, "bea")
    with db.read_session() as session:
        from arena.db.accounts import find_author

        assert find_author("bea", session=session) is None


def test_a_taken_name_leaves_the_invite_unused(fresh_db: Database) -> None:
    db = fresh_db
    with db.session() as session:
        invite = create_invite(session=session, lifetime=DAY)
    _redeem(db, invite.code, "cid")
    with db.session() as session:
        second = create_invite(session=session, lifetime=DAY)
    with pytest.raises(ConflictError, match="cid"):
        _redeem(db, second.code, "cid")
    # The failed registration rolled back: the second code still works, once.
    _redeem(db, second.code, "cid2")
    with pytest.raises(InviteError):
        _redeem(db, second.code, "cid3")


def test_disabling_an_author_stops_tokens_and_leaves_data(fresh_db: Database) -> None:
    db = fresh_db
    from tests.db.helpers import build_world

    world = build_world(db)
    with db.session() as session:
        invite = create_invite(session=session, lifetime=DAY)
    secret = _redeem(db, invite.code, "dan")
    with db.session() as session:
        from arena.db import Bot, Submission, SubmissionStatus
        from arena.db.accounts import claim_bot

        first = session.get(Submission, world.sub_a)
        assert first is not None
        bot = session.get(Bot, first.bot_id)
        assert bot is not None
        claim_bot(bot, get_author("dan", session=session).id or 0, session=session)
        for sid in (world.sub_a, world.sub_b):
            row = session.get(Submission, sid)
            assert row is not None
            row.status = SubmissionStatus.ACTIVE.value
            session.add(row)
    with db.read_session() as session:
        assert set(entrants(session=session)) == {world.sub_a, world.sub_b}
    with db.session() as session:
        set_author_disabled("dan", True, session=session)
    with db.session() as session:
        assert authenticate_token(secret, session=session) is None
        assert entrants(session=session) == [world.sub_b]
        kept = session.get(Submission, world.sub_a)
        assert kept is not None and kept.status == SubmissionStatus.ACTIVE.value
    with db.session() as session:
        set_author_disabled("dan", False, session=session)
    with db.session() as session:
        assert authenticate_token(secret, session=session) is not None
        assert set(entrants(session=session)) == {world.sub_a, world.sub_b}


# ---------------------------------------------------------------------------- end to end

PASSWORD = "correct horse battery"


def _invite(arena: Arena, *extra: str) -> str:
    made = kryt("arena", "invite", "create", "--database", arena.database, *extra)
    assert made.returncode == 0, made.stdout + made.stderr
    code = made.stdout.strip().splitlines()[-1]
    assert code.startswith("kryt-invite_"), made.stdout
    return code


def _register(arena: Arena, body: Any) -> httpx.Response:
    return httpx.post(arena.url + "/api/register", json=body, timeout=60)


def _problem(response: Any, status: int) -> str:
    detail: str = problem(response, status)["detail"]
    return detail


@pytest.mark.slow
def test_register_over_the_api_with_a_one_use_code(arena: Arena) -> None:
    code = _invite(arena, "--label", "for erik")
    # A bad password or a malformed name does not spend the code.
    assert "10 to 1000" in _problem(
        _register(arena, {"invite": code, "name": "erik", "password": "short"}), 422
    )
    assert "author name" in _problem(
        _register(arena, {"invite": code, "name": "Erik!", "password": PASSWORD}), 422
    )
    _problem(_register(arena, {"invite": code, "name": "alice", "password": PASSWORD}), 409)
    _problem(_register(arena, ["not", "an", "object"]), 422)
    done = _register(arena, {"invite": code, "name": "erik", "password": PASSWORD})
    assert done.status_code == 201, done.text
    assert done.headers["cache-control"] == "no-store"
    token = done.json()["token"]
    me = httpx.get(arena.url + "/api/me", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert me.status_code == 200 and me.json()["author"] == "erik"
    # Used once: never again, whatever the name.
    assert "invalid invite code" in _problem(
        _register(arena, {"invite": code, "name": "erik2", "password": PASSWORD}), 403
    )
    _problem(
        _register(arena, {"invite": "kryt-invite_guess", "name": "x1", "password": PASSWORD}), 403
    )
    # An expired code fails closed too.
    with open_database(arena.database) as server_db, server_db.session() as session:
        expiring = create_invite(session=session, lifetime=timedelta(seconds=1))
    time.sleep(1.5)
    _problem(_register(arena, {"invite": expiring.code, "name": "late", "password": PASSWORD}), 403)
    listed = kryt("arena", "invite", "list", "--database", arena.database)
    assert "for erik\tused" in listed.stdout and "by erik" in listed.stdout
    actions = set(arena.query("select action, outcome from audit_log"))
    assert {("invite", "created"), ("register", "ok"), ("register", "refused")} <= actions
    assert ("register", "conflict") in actions and ("register", "invalid") in actions
    # The new author can sign in on the web with the password chosen.
    with httpx.Client(base_url=arena.url, timeout=30) as browser:
        csrf = re.search(r'name="csrf" value="([^"]+)"', browser.get("/login").text)
        assert csrf is not None
        signed_in = browser.post(
            "/login", data={"csrf": csrf.group(1), "name": "erik", "password": PASSWORD}
        )
        assert signed_in.status_code == 303
        assert "erik" in browser.get("/me").text


@pytest.mark.slow
def test_register_on_the_web_form(arena: Arena) -> None:
    code = _invite(arena)
    with httpx.Client(base_url=arena.url, timeout=60) as browser:
        form = browser.get("/register")
        assert form.status_code == 200 and 'id="register-form"' in form.text
        # A forged post (no CSRF token) spends nothing.
        forged = browser.post(
            "/register", data={"invite": code, "name": "fay", "password": PASSWORD}
        )
        assert forged.status_code == 403
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf is not None
        fields = {"csrf": csrf.group(1), "invite": code, "name": "fay", "password": PASSWORD}
        done = browser.post("/register", data=fields)
        assert done.status_code == 201, done.text
        shown = re.search(r'<pre class="token" id="new-token">(kryt_[^<]+)</pre>', done.text)
        assert shown is not None
        assert "fay" in browser.get("/me").text  # signed in by registering
        again = browser.post("/register", data={**fields, "name": "fay2"})
        assert again.status_code == 403 and "invalid invite code" in again.text
    headers = {"Authorization": f"Bearer {shown.group(1)}"}
    assert httpx.get(arena.url + "/api/me", headers=headers, timeout=30).json()["author"] == "fay"


@pytest.mark.slow
def test_a_disabled_author_is_locked_out_and_leaves_the_ladder(
    arena: Arena, tmp_path: Path
) -> None:
    checked = submit(arena, "carol", make_bot(tmp_path / "gamma", "gamma"))
    assert checked["status"] == "active", checked
    gamma = checked["submission_id"]

    def ladder() -> list[int]:
        data: dict[str, Any] = httpx.get(arena.url + "/api/ladder", timeout=30).json()
        return list(data["entrants"])

    assert gamma in ladder()
    done = kryt("arena", "author", "disable", "carol", "--database", arena.database)
    assert done.returncode == 0, done.stderr
    # At once: the next request with carol's token is refused, and gamma is off the ladder.
    me = httpx.get(arena.url + "/api/me", headers=arena.auth("carol"), timeout=30)
    _problem(me, 401)
    assert gamma not in ladder()
    with httpx.Client(base_url=arena.url, timeout=30) as browser:
        csrf = re.search(r'name="csrf" value="([^"]+)"', browser.get("/login").text)
        assert csrf is not None
        login = browser.post("/login", data={"csrf": csrf.group(1), "token": arena.tokens["carol"]})
        assert login.status_code == 401
    # Nothing of hers is deleted.
    assert arena.query(
        "select s.status from submissions s join bots b on b.id = s.bot_id where b.name = 'gamma'"
    ) == [("active",)]
    listed = kryt("arena", "author", "list", "--database", arena.database)
    assert "carol (disabled): gamma" in listed.stdout
    assert kryt("arena", "author", "enable", "carol", "--database", arena.database).returncode == 0
    me = httpx.get(arena.url + "/api/me", headers=arena.auth("carol"), timeout=30)
    assert me.status_code == 200 and me.json()["bots"] == ["gamma"]
    assert gamma in ladder()
    actions = set(arena.query("select action, outcome, target from audit_log"))
    assert {("author", "disabled", "carol"), ("author", "enabled", "carol")} <= actions
    unknown = kryt("arena", "author", "disable", "nobody", "--database", arena.database)
    assert unknown.returncode != 0 and "nobody" in (unknown.stdout + unknown.stderr)
