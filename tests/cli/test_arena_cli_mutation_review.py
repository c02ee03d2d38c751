"""Mutation review of ``kryt arena`` (serve's options, author add/list/disable/enable,
invite create/list, token create/list/revoke) and ``kryt submissions``.

Each test pins down a visible effect that a small change to ``kryt/commands/arena.py`` (or
to the functions of ``arena/db/accounts.py`` only these commands call) would break: what is
stored (lifetimes, labels, states, the audit log), what is printed (a secret exactly once
and last, listings in their order, author text escaped), exit codes and hints, and that a
missing database is one error line that creates nothing (except for the commands that add to
the arena). Everything runs in process:
``kryt arena serve`` binds a loopback socket at most, its server function replaced by a
recorder. Faults the review found, fixed: a refused ``author add`` left a new database; ``author
list`` printed a stored name through Rich's markup, unescaped; ``kryt submissions`` (and
``kryt submit``) ended in a traceback on an answer that is not a submission document."""

from __future__ import annotations

import shutil
import socket
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import typer
from sqlalchemy import update
from sqlmodel import select

import arena.service.server as server_module
from arena.db import open_database
from arena.db.accounts import (
    audit_entries,
    authenticate_token,
    claim_bot,
    create_author,
    create_invite,
    create_token,
    find_author,
    list_authors,
    redeem_invite,
)
from arena.db.bots import get_or_create_bot
from arena.db.models import ApiToken, Invite
from arena.db.types import utcnow
from arena.service.auth import verify_password
from arena.service.server import Client, ClientError, ServeError
from arena.service.settings import ServiceSettings
from kryt.commands import arena as arena_commands
from kryt.errors import ExitCode
from tests.cli.helpers import HttpAnswer, flat, kryt

SLACK = timedelta(hours=1)
"""How far a stored expiry may be from the one expected (a busy machine)."""

HOSTILE_LABEL = "[red]x[/red] [link=http://evil]y[/link]\x1b[2J\u202etab\there"
"""A label with Rich markup, an ANSI sequence, a bidi override and a tab."""


@pytest.fixture
def url(tmp_path: Path) -> str:
    """The URL of a SQLite file under ``tmp_path`` (not created yet)."""
    return f"sqlite:///{tmp_path / 'arena.db'}"


@pytest.fixture(scope="module")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated arena database with the author bob and his first token (made once: the
    migrations are the slow part of every test that needs an arena)."""
    path = tmp_path_factory.mktemp("template") / "arena.db"
    with open_database(f"sqlite:///{path}") as db, db.session() as session:
        create_author("bob", session=session)
        create_token("bob", session=session, lifetime=timedelta(days=90), label="first")
    return path


@pytest.fixture
def arena_db(template_db: Path, tmp_path: Path) -> str:
    """The URL of a copy of :func:`template_db` of this test's own."""
    copy = tmp_path / "arena.db"
    shutil.copyfile(template_db, copy)
    return f"sqlite:///{copy}"


def _last_line(out: str) -> str:
    return out.strip().splitlines()[-1]


@dataclass(frozen=True)
class Row:
    """The columns of a stored token or invite the tests look at."""

    id: int
    label: str
    expires_at: datetime
    revoked_at: datetime | None = None
    used_at: datetime | None = None


def _tokens(url: str, author: str) -> list[Row]:
    """The author's stored tokens, oldest first."""
    with open_database(url) as db, db.read_session() as session:
        found = find_author(author, session=session)
        assert found is not None
        rows = session.exec(select(ApiToken).where(ApiToken.author_id == found.id)).all()
        return sorted(
            (Row(t.id or 0, t.label, t.expires_at, revoked_at=t.revoked_at) for t in rows),
            key=lambda r: r.id,
        )


def _authenticates(url: str, secret: str) -> str | None:
    """The name of the author whose token ``secret`` is, or None if it is refused."""
    with open_database(url) as db, db.session() as session:
        principal = authenticate_token(secret, session=session)
        return None if principal is None else principal.author_name


def _expires_in(expires_at: datetime, days: float) -> bool:
    return abs(expires_at - (utcnow() + timedelta(days=days))) < SLACK


# ------------------------------------------------------------------ a missing database


MISSING_DB_COMMANDS = [
    ["author", "list"],
    ["author", "disable", "bob"],
    ["author", "enable", "bob"],
    ["invite", "list"],
    ["token", "create", "bob"],
    ["token", "list", "bob"],
    ["token", "revoke", "1"],
]


@pytest.mark.parametrize("args", MISSING_DB_COMMANDS, ids=" ".join)
def test_a_missing_database_is_one_line_and_creates_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str]
) -> None:
    missing = tmp_path / "missing.db"
    code, out, err = kryt(capsys, "arena", *args, "-d", str(missing))
    assert code == ExitCode.UNAVAILABLE, (out, err)
    assert err.startswith("error: no database at ") and str(missing) in err
    assert len(err.strip().splitlines()) == 1 and out == ""
    assert not missing.exists()


def test_invite_create_on_a_missing_database_creates_the_arena(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Commands that add to the arena (``author add``, ``invite create``) create its database,
    as ``kryt submit`` and ``kryt tournament create`` do (docs/arena.md); the code it prints
    is one that database's server accepts: it is listed there as open."""
    missing = tmp_path / "missing.db"
    code, out, err = kryt(capsys, "arena", "invite", "create", "-d", str(missing))
    assert code == ExitCode.OK, (out, err)
    assert missing.is_file()
    code, listed, err = kryt(capsys, "arena", "invite", "list", "-d", str(missing))
    assert code == ExitCode.OK, (listed, err)
    assert "open" in listed, listed


def test_author_add_creates_the_database(capsys: pytest.CaptureFixture[str], url: str) -> None:
    """The organiser's first command makes the arena (docs/arena.md, quick start)."""
    code, out, err = kryt(capsys, "arena", "author", "add", "alice", "-d", url)
    assert code == ExitCode.OK, (out, err)
    assert Path(url.removeprefix("sqlite:///")).is_file()


# ------------------------------------------------------------------ author add


def test_author_add_prints_a_working_token_once_and_last(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    code, out, err = kryt(capsys, "arena", "author", "add", "alice", "-d", arena_db)
    assert code == ExitCode.OK and err == "", (out, err)
    lines = out.strip().splitlines()
    assert lines[0] == "author alice created; API token (shown once, keep it secret):"
    secret = lines[-1]
    assert secret.startswith("kryt_") and out.count(secret) == 1 and out.count("kryt_") == 1
    assert _authenticates(arena_db, secret) == "alice"
    (token,) = _tokens(arena_db, "alice")
    assert token.label == "first" and token.revoked_at is None
    assert _expires_in(token.expires_at, 90)  # the default lifetime
    with open_database(arena_db) as db, db.read_session() as session:
        author = find_author("alice", session=session)
        assert author is not None and author.password_hash is None and not author.disabled


def test_author_add_days_sets_the_first_tokens_lifetime(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    code, out, err = kryt(capsys, "arena", "author", "add", "alice", "-d", arena_db, "--days", "5")
    assert code == ExitCode.OK, (out, err)
    (token,) = _tokens(arena_db, "alice")
    assert _expires_in(token.expires_at, 5)
    code, out, err = kryt(capsys, "arena", "author", "add", "amy", "-d", arena_db, "--days", "1")
    assert code == ExitCode.OK, (out, err)  # the shortest lifetime is allowed
    assert _expires_in(_tokens(arena_db, "amy")[0].expires_at, 1)


def test_author_add_of_a_taken_name_adds_no_token(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    code, out, err = kryt(capsys, "arena", "author", "add", "bob", "-d", arena_db)
    assert code == ExitCode.BAD_INPUT and "kryt_" not in out + err, (out, err)
    assert "'bob' already exists" in err
    assert len(_tokens(arena_db, "bob")) == 1


@pytest.mark.parametrize("name", ["[red]x", "Bob", "a" * 41, "_x"])
def test_author_add_of_a_malformed_name_is_refused_and_named(
    capsys: pytest.CaptureFixture[str], arena_db: str, name: str
) -> None:
    code, out, err = kryt(capsys, "arena", "author", "add", name, "-d", arena_db, "--days", "3")
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert repr(name) in err and "kryt_" not in out
    with open_database(arena_db) as db, db.read_session() as session:
        assert [a.name for a in list_authors(session=session)] == ["bob"]


def test_author_add_of_a_malformed_name_leaves_no_new_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "new.db"
    code, out, err = kryt(capsys, "arena", "author", "add", "Bob", "-d", str(target))
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@dataclass
class Prompted:
    """What ``typer.prompt`` was asked."""

    text: str
    kwargs: dict[str, Any]


def _fake_prompt(monkeypatch: pytest.MonkeyPatch, answer: str) -> list[Prompted]:
    asked: list[Prompted] = []

    def prompt(text: str, **kwargs: Any) -> str:
        asked.append(Prompted(text, kwargs))
        return answer

    monkeypatch.setattr(typer, "prompt", prompt)
    return asked


def test_author_add_password_is_asked_hidden_twice_and_stored_hashed(
    capsys: pytest.CaptureFixture[str], arena_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _fake_prompt(monkeypatch, "correct horse battery")
    code, out, err = kryt(capsys, "arena", "author", "add", "carol", "--password", "-d", arena_db)
    assert code == ExitCode.OK, (out, err)
    assert len(asked) == 1
    assert asked[0].kwargs.get("hide_input") is True
    assert asked[0].kwargs.get("confirmation_prompt") is True
    assert "correct horse battery" not in out
    with open_database(arena_db) as db, db.read_session() as session:
        author = find_author("carol", session=session)
        assert author is not None and author.password_hash is not None
        assert "correct horse battery" not in author.password_hash
        assert verify_password(author.password_hash, "correct horse battery")


def test_author_add_without_password_asks_nothing(
    capsys: pytest.CaptureFixture[str], arena_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _fake_prompt(monkeypatch, "correct horse battery")
    code, out, err = kryt(capsys, "arena", "author", "add", "carol", "-d", arena_db)
    assert code == ExitCode.OK and asked == [], (out, err)


def test_author_add_with_a_short_password_is_one_line_and_creates_nothing(
    capsys: pytest.CaptureFixture[str], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_prompt(monkeypatch, "short")
    code, out, err = kryt(capsys, "arena", "author", "add", "carol", "--password", "-d", url)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert err.startswith("error: a password needs") and "Traceback" not in err
    assert "kryt_" not in out
    assert not Path(url.removeprefix("sqlite:///")).exists()  # refused before opening


# ------------------------------------------------------------------ author list


def _give_bots(url: str, author: str, *bots: str) -> None:
    with open_database(url) as db, db.session() as session:
        owner = find_author(author, session=session)
        assert owner is not None and owner.id is not None
        for name in bots:
            claim_bot(get_or_create_bot(name, session=session), owner.id, session=session)


def test_author_list_sorts_names_and_bots_and_marks_disabled(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    for name in ("zed", "amy"):
        assert kryt(capsys, "arena", "author", "add", name, "-d", arena_db)[0] == ExitCode.OK
    _give_bots(arena_db, "zed", "zulu", "alpha", "mike")
    assert kryt(capsys, "arena", "author", "disable", "zed", "-d", arena_db)[0] == ExitCode.OK
    code, out, err = kryt(capsys, "arena", "author", "list", "-d", arena_db)
    assert code == ExitCode.OK and err == "", (out, err)
    assert out.splitlines() == [
        "amy: no bots",
        "bob: no bots",
        "zed (disabled): alpha, mike, zulu",
    ]


def test_author_list_of_an_empty_arena_prints_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    open_database(url).close()
    code, out, err = kryt(capsys, "arena", "author", "list", "-d", url)
    assert (code, out, err) == (ExitCode.OK, "", "")


def test_author_list_shows_a_stored_name_literally(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    path = arena_db.removeprefix("sqlite:///")
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE authors SET name = ? WHERE name = 'bob'", ("[red]b\x1b[2J",))
    connection.close()
    code, out, err = kryt(capsys, "arena", "author", "list", "-d", arena_db)
    assert code == ExitCode.OK, (out, err)
    assert "[red]b" in out and "\x1b" not in out


# ------------------------------------------------------------------ author disable / enable


def _disabled(url: str, name: str) -> bool:
    with open_database(url) as db, db.read_session() as session:
        author = find_author(name, session=session)
        assert author is not None
        return author.disabled


def test_disable_and_enable_change_the_author_and_are_audited(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    secret = _last_line(kryt(capsys, "arena", "token", "create", "bob", "-d", arena_db)[1])
    code, out, err = kryt(capsys, "arena", "author", "disable", "bob", "-d", arena_db)
    assert (code, out, err) == (ExitCode.OK, "author bob disabled\n", "")
    assert _disabled(arena_db, "bob") and _authenticates(arena_db, secret) is None
    code, out, err = kryt(capsys, "arena", "author", "enable", "bob", "-d", arena_db)
    assert (code, out, err) == (ExitCode.OK, "author bob enabled\n", "")
    assert not _disabled(arena_db, "bob") and _authenticates(arena_db, secret) == "bob"
    with open_database(arena_db) as db, db.read_session() as session:
        bob = find_author("bob", session=session)
        assert bob is not None
        bob_id = bob.id
        entries = audit_entries(session=session)
        seen = [(e.action, e.outcome, e.target, e.author_id, e.remote) for e in reversed(entries)]
    assert seen == [
        ("author", "disabled", "bob", bob_id, "cli"),
        ("author", "enabled", "bob", bob_id, "cli"),
    ]


@pytest.mark.parametrize("verb", ["disable", "enable"])
def test_disabling_an_unknown_author_is_named_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], arena_db: str, verb: str
) -> None:
    code, out, err = kryt(capsys, "arena", "author", verb, "nobody", "-d", arena_db)
    assert code == ExitCode.BAD_INPUT and out == "", (out, err)
    assert err == "error: no author named 'nobody'\n"
    with open_database(arena_db) as db, db.read_session() as session:
        assert audit_entries(session=session) == []
    assert not _disabled(arena_db, "bob")


def test_disable_of_a_markup_name_is_refused_literally(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    code, out, err = kryt(capsys, "arena", "author", "disable", "[red]bob[/red]", "-d", arena_db)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "'[red]bob[/red]'" in err and not _disabled(arena_db, "bob")


# ------------------------------------------------------------------ invite create / list


def _invites(url: str) -> list[Row]:
    """Every stored invite, oldest first."""
    with open_database(url) as db, db.read_session() as session:
        rows = session.exec(select(Invite)).all()
        return sorted(
            (Row(i.id or 0, i.label, i.expires_at, used_at=i.used_at) for i in rows),
            key=lambda r: r.id,
        )


def test_invite_create_prints_the_code_once_and_last_and_audits_it(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    code, out, err = kryt(
        capsys, "arena", "invite", "create", "-d", arena_db, "--label", "for dana"
    )
    assert code == ExitCode.OK and err == "", (out, err)
    secret = _last_line(out)
    assert secret.startswith("kryt-invite_") and out.count("kryt-invite_") == 1
    (invite,) = _invites(arena_db)
    assert invite.label == "for dana" and invite.used_at is None
    assert _expires_in(invite.expires_at, 7)  # the default lifetime
    assert flat(out).startswith(
        f"invite {invite.id}, expires {invite.expires_at:%Y-%m-%d %H:%M} UTC (one use; shown once):"
    )
    with open_database(arena_db) as db, db.session() as session:
        (entry,) = audit_entries(session=session)
        assert (entry.action, entry.outcome) == ("invite", "created")
        assert (entry.target, entry.detail) == (str(invite.id), "for dana")
        new, _ = redeem_invite(
            secret, "dana", session=session, password_hash=None, token_lifetime=timedelta(1)
        )
        assert new.name == "dana"


@pytest.mark.parametrize("days", ["365", "0.5", "1"])
def test_invite_create_days_within_bounds(
    capsys: pytest.CaptureFixture[str], arena_db: str, days: str
) -> None:
    code, out, err = kryt(capsys, "arena", "invite", "create", "-d", arena_db, "--days", days)
    assert code == ExitCode.OK, (out, err)
    (invite,) = _invites(arena_db)
    assert _expires_in(invite.expires_at, float(days))


@pytest.mark.parametrize("days", ["0", "-1", "365.01", "366", "nan", "inf", "-inf", "1e9"])
def test_invite_create_days_out_of_bounds_is_one_line_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], arena_db: str, days: str
) -> None:
    code, out, err = kryt(capsys, "arena", "invite", "create", "-d", arena_db, "--days", days)
    assert code == ExitCode.BAD_INPUT and out == "", (out, err)
    assert err.startswith("error: --days must be in (0, 365], got ") and "Traceback" not in err
    assert _invites(arena_db) == []


def test_invite_list_states_order_and_no_codes(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    with open_database(arena_db) as db, db.session() as session:
        used = create_invite(session=session, lifetime=timedelta(days=2), label="used one")
        expired = create_invite(session=session, lifetime=timedelta(days=2), label="")
        open_ = create_invite(session=session, lifetime=timedelta(days=3), label=HOSTILE_LABEL)
        redeem_invite(
            used.code, "dana", session=session, password_hash=None, token_lifetime=timedelta(1)
        )
        session.execute(
            update(Invite)
            .where(Invite.id == expired.invite_id)  # type: ignore[arg-type]
            .values(expires_at=utcnow() - timedelta(minutes=5))
        )
    code, out, err = kryt(capsys, "arena", "invite", "list", "-d", arena_db)
    assert code == ExitCode.OK and err == "", (out, err)
    for secret in (used.code, expired.code, open_.code):
        assert secret not in out
    rows = [line.split("\t") for line in out.splitlines()]
    assert [len(r) for r in rows] == [3, 3, 3]
    assert [r[0] for r in rows] == [
        str(used.invite_id),
        str(expired.invite_id),
        str(open_.invite_id),
    ]
    assert rows[0][1] == "used one" and rows[0][2] == f"used {utcnow():%Y-%m-%d} by dana"
    assert rows[1][1:] == ["-", "expired"]
    assert rows[2][2] == f"open until {open_.expires_at:%Y-%m-%d %H:%M}"
    assert rows[2][1] == "[red]x[/red] [link=http://evil]y[/link]\\x1b[2J\\u202etab\\there"


def test_invite_list_of_no_invites_prints_nothing(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    assert kryt(capsys, "arena", "invite", "list", "-d", arena_db) == (ExitCode.OK, "", "")


# ------------------------------------------------------------------ token create / list


def test_token_create_prints_its_id_expiry_and_secret_once(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    code, out, err = kryt(
        capsys, "arena", "token", "create", "bob", "-d", arena_db, "--days", "3",
        "--label", "laptop",
    )  # fmt: skip
    assert code == ExitCode.OK and err == "", (out, err)
    secret = _last_line(out)
    assert secret.startswith("kryt_") and out.count("kryt_") == 1
    assert _authenticates(arena_db, secret) == "bob"
    _first, new = _tokens(arena_db, "bob")
    assert new.label == "laptop" and _expires_in(new.expires_at, 3)
    assert out.splitlines()[0] == f"token {new.id}, expires {new.expires_at:%Y-%m-%d}:"


def test_token_create_default_lifetime_is_90_days(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    assert kryt(capsys, "arena", "token", "create", "bob", "-d", arena_db)[0] == ExitCode.OK
    new = _tokens(arena_db, "bob")[-1]
    assert _expires_in(new.expires_at, 90) and new.label == ""


@pytest.mark.parametrize("verb", ["create", "list"])
def test_tokens_of_an_unknown_author_are_named(
    capsys: pytest.CaptureFixture[str], arena_db: str, verb: str
) -> None:
    code, out, err = kryt(capsys, "arena", "token", verb, "nobody", "-d", arena_db)
    assert (code, out, err) == (ExitCode.BAD_INPUT, "", "error: no author named 'nobody'\n")


def test_token_list_states_order_escaping_and_no_secrets(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    made = kryt(capsys, "arena", "author", "add", "alice", "-d", arena_db)
    assert made[0] == ExitCode.OK  # her token is no token of bob's
    secrets = [_last_line(made[1])]
    for label in ("second", HOSTILE_LABEL):
        made = kryt(capsys, "arena", "token", "create", "bob", "-d", arena_db, "--label", label)
        secrets.append(_last_line(made[1]))
    first, second, third = _tokens(arena_db, "bob")
    assert kryt(capsys, "arena", "token", "revoke", str(second.id), "-d", arena_db)[0] == 0
    assert _authenticates(arena_db, secrets[2]) == "bob"  # the third: used now
    code, out, err = kryt(capsys, "arena", "token", "list", "bob", "-d", arena_db)
    assert code == ExitCode.OK and err == "", (out, err)
    for secret in secrets:
        assert secret not in out and secret[5:] not in out
    rows = [line.split("\t") for line in out.splitlines()]
    assert [r[0] for r in rows] == [str(first.id), str(second.id), str(third.id)]
    assert third.id == first.id + 3  # alice's lies between them
    assert rows[0] == [str(first.id), "first", f"expires {first.expires_at:%Y-%m-%d}", "never used"]
    assert rows[1][1:3] == ["second", "revoked"]
    assert rows[2][1] == "[red]x[/red] [link=http://evil]y[/link]\\x1b[2J\\u202etab\\there"
    assert rows[2][3].startswith(f"last used {utcnow():%Y-%m-%d} ")
    assert len(rows[2]) == 4


# ------------------------------------------------------------------ token revoke


def test_token_revoke_refuses_the_token_at_once_and_is_idempotent(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    secret = _last_line(kryt(capsys, "arena", "token", "create", "bob", "-d", arena_db)[1])
    target = _tokens(arena_db, "bob")[-1]
    code, out, err = kryt(capsys, "arena", "token", "revoke", str(target.id), "-d", arena_db)
    assert (code, out, err) == (ExitCode.OK, f"token {target.id} revoked\n", "")
    assert _authenticates(arena_db, secret) is None
    first, revoked = _tokens(arena_db, "bob")
    assert first.revoked_at is None and revoked.revoked_at is not None
    again = kryt(capsys, "arena", "token", "revoke", str(target.id), "-d", arena_db)
    assert again[0] == ExitCode.OK
    assert _tokens(arena_db, "bob")[-1].revoked_at == revoked.revoked_at  # not moved


def test_token_revoke_of_an_unknown_id_is_named_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    code, out, err = kryt(capsys, "arena", "token", "revoke", "2", "-d", arena_db)
    assert (code, out, err) == (ExitCode.BAD_INPUT, "", "error: no API token with id 2\n")
    assert _tokens(arena_db, "bob")[0].revoked_at is None


def test_token_revoke_zero_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], arena_db: str
) -> None:
    code, out, err = kryt(capsys, "arena", "token", "revoke", "0", "-d", arena_db)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "hint: see kryt arena token revoke --help" in err and "no API token" not in err


# ------------------------------------------------------------------ serve's options


@dataclass
class Served:
    """What ``arena.service.server.serve`` was called with."""

    url: str
    settings: ServiceSettings
    port_file: Path | None
    sock: Any


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Served]]:
    """``kryt arena serve`` with the server replaced by a recorder (which closes the
    socket), and no ``KRYT_ARENA_*`` setting from the environment."""
    import os

    for key in list(os.environ):
        if key.startswith("KRYT_ARENA_"):
            monkeypatch.delenv(key)
    calls: list[Served] = []

    def serve(
        db: Any, settings: ServiceSettings, *, port_file: Any = None, sock: Any = None
    ) -> None:
        calls.append(Served(db.display_url, settings, port_file, sock))
        if sock is not None:
            sock.close()

    monkeypatch.setattr(server_module, "serve", serve)
    yield calls


def test_serve_passes_every_option_to_the_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, arena_db: str, served: list[Served]
) -> None:
    code, out, err = kryt(
        capsys, "arena", "serve", "-d", arena_db, "--host", "127.0.0.1", "--port", "0",
        "--store", str(tmp_path / "store"), "--no-ladder", "--games-per-series", "3",
        "--concurrency", "2", "--budget", "7", "--backend", "process", "--executor", "dask",
        "--scheduler", "tcp://127.0.0.1:8786", "--dask-workers", "5",
        "--port-file", str(tmp_path / "port"),
    )  # fmt: skip
    assert code == ExitCode.OK, (out, err)
    (call,) = served
    s = call.settings
    assert (s.host, s.port, s.store) == ("127.0.0.1", 0, tmp_path / "store")
    ladder = s.ladder
    assert ladder.enabled is False
    assert (ladder.games_per_series, ladder.concurrency, ladder.budget_games) == (3, 2, 7)
    assert (ladder.executor, ladder.scheduler, ladder.dask_workers) == (
        "dask",
        "tcp://127.0.0.1:8786",
        5,
    )
    assert s.sandbox.backend == "process"
    assert call.port_file == tmp_path / "port"
    assert isinstance(call.sock, socket.socket)
    assert "".join(out.split()) == f"database{call.url}" and arena_db in call.url


def test_serve_defaults_come_from_the_settings(
    capsys: pytest.CaptureFixture[str], arena_db: str, served: list[Served]
) -> None:
    code, out, err = kryt(capsys, "arena", "serve", "-d", arena_db, "--port", "0")
    assert code == ExitCode.OK, (out, err)
    (call,) = served
    defaults = ServiceSettings()
    assert call.settings.port == 0  # 0 is a value (any free port), not "not given"
    assert call.settings.host == defaults.host and call.settings.store == defaults.store
    assert call.settings.ladder == defaults.ladder and call.settings.ladder.enabled
    assert call.settings.sandbox.backend == defaults.sandbox.backend
    assert call.port_file is None


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--games-per-series", "0"], "games_per_series"),
        (["--concurrency", "0"], "concurrency"),
        (["--dask-workers", "0"], "dask_workers"),
        (["--scheduler", "tcp://127.0.0.1:8786"], "needs ladder.executor 'dask'"),
        (["--executor", "nowhere"], "ladder.executor"),
        (["--backend", "nowhere"], "unknown sandbox backend"),
        (["--port", "65536"], "--port"),
        (["--port", "-1"], "-1"),
    ],
)
def test_serve_refuses_bad_settings_before_opening_anything(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    served: list[Served],
    args: list[str],
    named: str,
) -> None:
    db = tmp_path / "new.db"
    code, out, err = kryt(capsys, "arena", "serve", "-d", str(db), "--port", "0", *args)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert named in err and "Traceback" not in err and err.startswith("error: ")
    assert served == [] and not db.exists()


def test_serve_on_an_unusable_host_creates_no_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, served: list[Served]
) -> None:
    db = tmp_path / "new.db"
    code, out, err = kryt(
        capsys, "arena", "serve", "-d", str(db), "--host", "256.0.0.1", "--port", "0"
    )
    assert code == ExitCode.UNAVAILABLE, (out, err)
    assert "cannot listen on 256.0.0.1:0" in err and "hint: choose another --port" in err
    assert served == [] and not db.exists()


class _Socket:
    closed = False

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("failure", ["directory", "interrupt"])
def test_serve_closes_its_socket_when_the_database_cannot_be_opened(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    served: list[Served],
    failure: str,
) -> None:
    sock = _Socket()
    monkeypatch.setattr(server_module, "listen", lambda _host, _port: sock)
    if failure == "interrupt":

        def interrupted(*_a: Any, **_k: Any) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(arena_commands, "open_db", interrupted)
        expected = ExitCode.INTERRUPTED
    else:
        expected = ExitCode.UNAVAILABLE
    code, out, err = kryt(capsys, "arena", "serve", "-d", str(tmp_path), "--port", "0")
    assert code == expected, (out, err)
    assert sock.closed and served == []


@pytest.mark.parametrize(
    ("unavailable", "hint", "code", "shown"),
    [
        (True, None, ExitCode.UNAVAILABLE, "hint: choose another --port (or --host)"),
        (True, "free the port", ExitCode.UNAVAILABLE, "hint: free the port"),
        (False, "check the port file", ExitCode.BAD_INPUT, "hint: check the port file"),
        (False, None, ExitCode.BAD_INPUT, None),
    ],
)
def test_serve_errors_become_one_line_with_their_code_and_hint(
    capsys: pytest.CaptureFixture[str],
    arena_db: str,
    monkeypatch: pytest.MonkeyPatch,
    unavailable: bool,
    hint: str | None,
    code: int,
    shown: str | None,
) -> None:
    def serve(*_a: Any, sock: Any = None, **_k: Any) -> None:
        sock.close()
        raise ServeError("cannot start here", unavailable=unavailable, hint=hint)

    monkeypatch.setattr(server_module, "serve", serve)
    got, out, err = kryt(capsys, "arena", "serve", "-d", arena_db, "--port", "0")
    assert got == code, (out, err)
    lines = err.strip().splitlines()
    assert lines[0] == "error: cannot start here"
    assert lines[1:] == ([shown] if shown else [])


# ------------------------------------------------------------------ kryt submissions


@dataclass
class FakeApi:
    """Answers of the arena's API, in order (an exception is raised), and the calls made:
    ``(base_url, token, method, path)``."""

    queue: list[Any]
    calls: list[tuple[str, str, str, str]]


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    """``kryt submissions`` with KRYT_TOKEN set and the API answered by a :class:`FakeApi`."""
    fake = FakeApi([], [])

    def request(self: Client, method: str, path: str, *_a: Any, **_k: Any) -> Any:
        fake.calls.append((self.base_url, self.token, method, path))
        answer = fake.queue.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr(Client, "request", request)
    monkeypatch.setenv("KRYT_TOKEN", "kryt_mine")
    return fake


def test_submissions_asks_for_the_authors_versions_with_the_token(
    capsys: pytest.CaptureFixture[str], api: FakeApi
) -> None:
    api.queue.append({"submissions": []})
    code, out, err = kryt(capsys, "submissions", "--server", "http://127.0.0.1:9/")
    assert (code, out, err) == (ExitCode.OK, "no submissions yet\n", "")
    ((base, token, method, path),) = api.calls
    assert base.startswith("http://127.0.0.1:9") and token == "kryt_mine"
    assert (method, path) == ("GET", "/api/submissions")


def test_submissions_prints_one_tab_separated_line_each(
    capsys: pytest.CaptureFixture[str], api: FakeApi
) -> None:
    api.queue.append(
        {
            "submissions": [
                {
                    "submission_id": 4,
                    "bot": "[red]b",
                    "version": "[link=x]1",
                    "status": "active",
                    "check": {"status": "passed", "message": "ok"},
                },
                {"submission_id": 9, "bot": "gamma", "version": "2", "status": "pending"},
                {},
            ]
        }
    )
    code, out, err = kryt(capsys, "submissions", "--server", "http://127.0.0.1:9")
    assert code == ExitCode.OK and err == "", (out, err)
    assert out.splitlines() == [
        "4\t[red]b [link=x]1\tactive\tpassed\tok",
        "9\tgamma 2\tpending\t-\t",
        "?\t? ?\t?\t-\t",
    ]


@pytest.mark.parametrize(
    ("unreachable", "message", "code"),
    [
        (True, "cannot reach http://127.0.0.1:9/api/submissions: refused", ExitCode.UNAVAILABLE),
        (False, "http://127.0.0.1:9/api/submissions: 401 invalid token", ExitCode.BAD_INPUT),
        # The server's own words are a refusal, whatever they say.
        (False, "http://127.0.0.1:9/api/submissions: 409 cannot reach a verdict", 2),
    ],
)
def test_submissions_client_errors_are_one_line_with_their_code(
    capsys: pytest.CaptureFixture[str], api: FakeApi, unreachable: bool, message: str, code: int
) -> None:
    from arena.service.server import ServerUnreachableError

    api.queue.append(ServerUnreachableError(message) if unreachable else ClientError(message))
    got, out, err = kryt(capsys, "submissions", "--server", "http://127.0.0.1:9")
    assert (got, out, err) == (code, "", f"error: {message}\n")


def test_submissions_without_a_token_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KRYT_TOKEN", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.config/kryt/token
    code, out, err = kryt(capsys, "submissions", "--server", "http://127.0.0.1:9")
    assert code == ExitCode.BAD_INPUT and out == "", (out, err)
    assert err.startswith("error: no API token: set KRYT_TOKEN")


@pytest.mark.parametrize(
    "body",
    [b"<html>not an arena</html>", b"[1, 2]", b'{"submissions": {"a": 1}}', b"[" * 100_000],
    ids=["html", "list", "rows-not-a-list", "nested-past-the-stack"],
)
def test_submissions_from_a_server_that_answers_no_json_object_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, body: bytes
) -> None:
    import urllib.request

    monkeypatch.setenv("KRYT_TOKEN", "kryt_mine")
    monkeypatch.setattr(urllib.request, "urlopen", lambda *_a, **_k: HttpAnswer(body))
    code, out, err = kryt(capsys, "submissions", "--server", "http://127.0.0.1:9")
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert err.startswith("error: ") and "Traceback" not in err


def test_submissions_shows_a_check_that_is_not_an_object_as_none(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row is shown with what it has (as a row that is not an object: above)."""
    import urllib.request

    monkeypatch.setenv("KRYT_TOKEN", "kryt_mine")
    body = b'{"submissions": [{"submission_id": 3, "bot": "b", "version": "1", "check": "x"}]}'
    monkeypatch.setattr(urllib.request, "urlopen", lambda *_a, **_k: HttpAnswer(body))
    code, out, err = kryt(capsys, "submissions", "--server", "http://127.0.0.1:9")
    assert (code, err) == (ExitCode.OK, ""), (out, err)
    assert out.splitlines() == ["3\tb 1\t?\t-\t"]
