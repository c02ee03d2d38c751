"""Round-6 audit of the arena service: retiring a version pending validation was undone by
the validation, web sessions outlived the revocation of their token and sign-out, a
misspelt reference bot was accepted and turned every upload into a permanent rejection
(server-side failures were stored as the author's), deeply nested JSON was a 500, and
``/me`` showed bot output with raw control and bidi characters.

The in-process tests run on SQLite and on PostgreSQL (a database of their own on
``KRYT_TEST_POSTGRES_URL``; marker ``postgres``)."""

from __future__ import annotations

import io
import re
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

import arena.service.play as play_module
import arena.service.uploads as uploads_module
from arena.db import (
    Database,
    SubmissionStatus,
    find_bot,
    get_submission,
    open_database,
    record_game,
    set_submission_status,
)
from arena.db.accounts import (
    claim_bot,
    create_author,
    create_token,
    find_author,
    revoke_token,
    set_author_disabled,
    set_password_hash,
)
from arena.db.ladder import CheckStatus, finish_check, get_check, store_game_log
from arena.service.app import create_service_app
from arena.service.auth import SESSION_COOKIE, Signer, hash_password, token_credential
from arena.service.play import ValidationUnavailable, Verdict, validate_submission
from arena.service.settings import MIN_SECRET_BYTES, ServiceSettings, SettingsError
from arena.service.uploads import LEGACY_SERVER_SIDE, SERVER_SIDE, Validator
from kryt.cli import main
from kryt.errors import ExitCode
from referee.protocol.messages import GameEndReason
from referee.series import SeriesAborted
from sandbox import load_submission
from tests.db.conftest import _fresh_postgres_database, postgres_admin_url
from tests.db.helpers import World, build_world, forfeit_game
from tests.service.conftest import EXAMPLES
from tests.service.helpers import problem as _problem
from tests.services import require

URL = "/api/submissions"
PASSWORD = "correct horse battery"


def _manifest(name: str, version: str = "1.0") -> str:
    return f'name = "{name}"\nversion = "{version}"\nruntime = "python"\nentry = "bot.py"\n'


def _archive(name: str, version: str = "1.0", salt: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bot.toml", _manifest(name, version))
        zf.writestr("bot.py", f"x = 1  # {salt}\n")
    return buffer.getvalue()


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ]
)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'arena.db'}"
        return
    admin_url = postgres_admin_url()
    require(admin_url is not None, "PostgreSQL", "set KRYT_TEST_POSTGRES_URL")
    assert admin_url is not None
    yield from _fresh_postgres_database(admin_url)


@dataclass
class Local:
    """The service app in process (no background work; queued validations are noted)."""

    db: Database
    http: TestClient
    settings: ServiceSettings
    validator: Validator
    token: str
    token_id: int
    queued: list[int]

    @property
    def alice(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def upload(self, data: bytes) -> dict[str, Any]:
        response = self.http.post(URL, content=data, headers=self.alice)
        assert response.status_code in (200, 202), response.text
        body: dict[str, Any] = response.json()
        return body

    def sign_in(self, **form: str) -> str:
        """Sign in through the form (a fresh browser); the session cookie."""
        self.http.cookies.clear()
        page = self.http.get("/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None
        response = self.http.post(
            "/login", data={"csrf": csrf.group(1), **form}, follow_redirects=False
        )
        assert response.status_code == 303, response.text
        cookie = self.http.cookies.get(SESSION_COOKIE)
        assert cookie
        return str(cookie)

    def me(self, cookie: str) -> int:
        """The status of ``/me`` with that session cookie (200, or 303 to /login)."""
        self.http.cookies.clear()
        self.http.cookies.set(SESSION_COOKIE, cookie)
        return int(self.http.get("/me", follow_redirects=False).status_code)


@pytest.fixture
def local(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Local]:
    db = open_database(database_url)
    with db.session() as session:
        create_author("alice", session=session, password_hash=hash_password(PASSWORD))
        token = create_token("alice", session=session, lifetime=timedelta(days=1))
    settings = ServiceSettings(store=tmp_path / "store", writes_per_minute=1000)
    app = create_service_app(db, settings, run_background=True)
    validator = app.state.service.validator
    queued: list[int] = []
    monkeypatch.setattr(validator, "enqueue", queued.append)
    monkeypatch.setattr(validator, "resume", lambda: 0)
    with TestClient(app, raise_server_exceptions=False) as http:
        yield Local(db, http, settings, validator, token.secret, token.token_id, queued)
    db.close()


def _passes(*_args: object, **_kwargs: object) -> Verdict:
    return Verdict(True, "played 2 validation game(s) without a forfeit", [])


def _status(db: Database, submission_id: int) -> tuple[str, str]:
    with db.read_session() as session:
        check = get_check(submission_id, session=session)
        assert check is not None
        return get_submission(submission_id, session=session).status, check.status


# ---------------------------------------------------------------- A. retire while pending


def test_a_version_retired_while_pending_stays_retired_when_it_passes(
    local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = local.upload(_archive("phoenix"))["submission_id"]
    monkeypatch.setattr(uploads_module, "validate_submission", _passes)

    def retire_during_games(*args: object, **kwargs: object) -> Verdict:
        response = local.http.post("/api/bots/phoenix/retire", headers=local.alice)
        assert response.json()["retired"] == ["1.0"], response.text
        return _passes()

    monkeypatch.setattr(uploads_module, "validate_submission", retire_during_games)
    assert local.validator.validate(sid) is CheckStatus.PASSED
    # The check says how validation went; the version stays retired, off the ladder.
    assert _status(local.db, sid) == ("retired", "passed")
    assert local.http.get("/api/ladder").json()["entrants"] == []


def test_a_restart_rerunning_the_check_of_a_retired_version_keeps_it_retired(
    local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check stayed pending (the server stopped mid-validation) but the version was
    retired: the re-run at the next start must not make it active."""
    sid = local.upload(_archive("phoenix2"))["submission_id"]
    with local.db.session() as session:
        set_submission_status(sid, SubmissionStatus.RETIRED, session=session)
    monkeypatch.setattr(uploads_module, "validate_submission", _passes)
    assert local.validator.validate(sid) is CheckStatus.PASSED
    assert _status(local.db, sid) == ("retired", "passed")
    # A pending version still becomes active, and a failing one rejected.
    other = local.upload(_archive("phoenix3"))["submission_id"]
    assert local.validator.validate(other) is CheckStatus.PASSED
    assert _status(local.db, other) == ("active", "passed")


def test_a_retire_committed_while_the_verdict_waits_for_the_row_wins(
    local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Concurrency: the retirement holds the row (uncommitted) when the verdict is written;
    the verdict's conditional update waits for it and then leaves the version retired."""
    sid = local.upload(_archive("phoenix4"))["submission_id"]
    monkeypatch.setattr(uploads_module, "validate_submission", _passes)
    holding, release = threading.Event(), threading.Event()

    def retire() -> None:
        with local.db.session() as session:
            session.execute(
                text("UPDATE submissions SET status = 'retired' WHERE id = :id"), {"id": sid}
            )
            session.flush()
            holding.set()
            release.wait(60)

    worker = threading.Thread(target=retire)
    worker.start()
    assert holding.wait(60)
    verdict: list[CheckStatus] = []
    validating = threading.Thread(target=lambda: verdict.append(local.validator.validate(sid)))
    validating.start()
    validating.join(1.0)  # it waits for the retirement's row lock (or write lock)
    release.set()
    worker.join(60)
    validating.join(60)
    assert verdict == [CheckStatus.PASSED]
    assert _status(local.db, sid) == ("retired", "passed")


# ---------------------------------------------------------------- B. sessions


def test_a_session_ends_when_its_token_is_revoked(local: Local) -> None:
    cookie = local.sign_in(token=local.token)
    assert local.me(cookie) == 200
    with local.db.session() as session:
        revoke_token(local.token_id, session=session)
    assert local.http.get("/api/me", headers=local.alice).status_code == 401
    assert local.me(cookie) == 303
    # Nor can it retire a bot (the form's CSRF token is that of the cookie).
    response = local.http.post("/me/bots/any/retire", data={"csrf": "x"}, follow_redirects=False)
    assert response.status_code == 401


def test_a_session_ends_when_its_token_expires_or_the_author_is_disabled(local: Local) -> None:
    cookie = local.sign_in(token=local.token)
    with local.db.session() as session:
        session.execute(
            text("UPDATE api_tokens SET expires_at = :t WHERE id = :id"),
            {"t": "2000-01-01 00:00:00", "id": local.token_id},
        )
    assert local.me(cookie) == 303
    password_cookie = local.sign_in(name="alice", password=PASSWORD)
    assert local.me(password_cookie) == 200
    with local.db.session() as session:
        set_author_disabled("alice", True, session=session)
    assert local.me(password_cookie) == 303
    with local.db.session() as session:
        set_author_disabled("alice", False, session=session)
    assert local.me(password_cookie) == 200
    # A new password ends the sessions of the old one.
    with local.db.session() as session:
        set_password_hash("alice", hash_password("another password 2"), session=session)
    assert local.me(password_cookie) == 303


def test_a_copied_cookie_is_refused_after_sign_out(local: Local) -> None:
    cookie = local.sign_in(token=local.token)
    page = local.http.get("/me")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    response = local.http.post("/logout", data={"csrf": csrf.group(1)}, follow_redirects=False)
    assert response.status_code == 303
    assert local.me(cookie) == 303  # the copy taken before signing out
    # Signing in again (the same token) gives a new session that works.
    assert local.me(local.sign_in(token=local.token)) == 200


def test_a_cookie_is_bound_to_the_credential_it_was_made_from() -> None:
    signer = Signer("s" * MIN_SECRET_BYTES)
    cookie = signer.session(1, 60, token_id=7, credential=token_credential("a" * 64))
    claim = signer.claim(cookie)
    assert claim is not None and (claim.author_id, claim.token_id) == (1, 7)
    assert signer.session_valid(claim, token_credential("a" * 64))
    assert not signer.session_valid(claim, token_credential("b" * 64))
    # Another token id, or the old cookie format, does not verify.
    forged = cookie.replace("1.7.", "1.8.", 1)
    forged_claim = signer.claim(forged)
    assert forged_claim is not None
    assert not signer.session_valid(forged_claim, token_credential("a" * 64))
    assert signer.claim("1.99999999999.abc") is None
    # Two sign-ins in the same second are two sessions: ending one leaves the other.
    again = signer.session(1, 60, token_id=7, credential=token_credential("a" * 64))
    assert again != cookie
    signer.end(claim)
    assert signer.claim(cookie) is None and signer.claim(again) is not None


def test_a_short_secret_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ServiceSettings(secret="").secret == ""  # a random one per process
    assert ServiceSettings(secret="x" * MIN_SECRET_BYTES).secret
    with pytest.raises(SettingsError, match=f"at least {MIN_SECRET_BYTES} bytes, got 5"):
        ServiceSettings.from_env({"KRYT_ARENA_SECRET": "hunter"[:5]})
    monkeypatch.setenv("KRYT_ARENA_SECRET", "tiny")
    url = f"sqlite:///{tmp_path / 'a.db'}"
    args = ["--port", "0", "--port-file", str(tmp_path / "no" / "dir" / "port")]
    code = main(["arena", "serve", "--no-ladder", "-d", url, *args])
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT, err
    assert "KRYT_ARENA_SECRET" in err and "tiny" not in err and "Traceback" not in err


# ---------------------------------------------------------------- C. reference bots


def test_a_misspelt_reference_bot_is_refused_at_start(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ServiceSettings(reference_bots=("random", "greedy")).reference_bots
    with pytest.raises(SettingsError, match="'randon' is not a bundled example bot"):
        ServiceSettings.from_env({"KRYT_ARENA_REFERENCE_BOTS": "randon"})
    with pytest.raises(SettingsError, match=r"'\.\./random'"):
        ServiceSettings(reference_bots=("../random",))
    monkeypatch.setenv("KRYT_ARENA_REFERENCE_BOTS", "random,randon")
    url = f"sqlite:///{tmp_path / 'a.db'}"
    args = ["--port", "0", "--port-file", str(tmp_path / "no" / "dir" / "port")]
    code = main(["arena", "serve", "--no-ladder", "-d", url, *args])
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT, err
    assert "'randon' is not a bundled example bot" in err and "Traceback" not in err


@pytest.mark.parametrize("failure", ["setting", "aborted", "infrastructure"])
def test_a_server_side_failure_is_no_rejection_and_a_reupload_validates_again(
    local: Local, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    data = _archive("patient", salt=failure)
    sid = local.upload(data)["submission_id"]
    assert local.queued == [sid]

    def broken(*args: object, **kwargs: object) -> Verdict:
        if failure == "setting":  # what a misspelt reference bot did
            raise ValidationUnavailable("reference bot 'randon' is not a bundled example")
        if failure == "aborted":
            raise ValidationUnavailable("validation against random could not finish: boom")
        raise OSError("no space left on device")

    monkeypatch.setattr(uploads_module, "validate_submission", broken)
    assert local.validator.validate(sid) is CheckStatus.PENDING
    assert _status(local.db, sid) == ("pending", "pending")
    stored = local.http.get(f"{URL}/{sid}", headers=local.alice).json()
    assert stored["check"]["message"].startswith(SERVER_SIDE)
    # The same content again: not the stored rejection, but a validation queued again.
    again = local.upload(data)
    assert again["created"] is False and again["status"] == "pending"
    assert local.queued == [sid, sid]
    monkeypatch.setattr(uploads_module, "validate_submission", _passes)
    assert local.validator.validate(sid) is CheckStatus.PASSED
    assert _status(local.db, sid) == ("active", "passed")


def test_a_rejection_an_older_release_stored_for_a_server_failure_is_reopened(
    local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _archive("legacy")
    sid = local.upload(data)["submission_id"]
    with local.db.session() as session:
        set_submission_status(sid, SubmissionStatus.REJECTED, session=session)
        finish_check(
            sid,
            CheckStatus.FAILED,
            f"{LEGACY_SERVER_SIDE}reference bot 'randon' is not a bundled example",
            [],
            session=session,
        )
    again = local.upload(data)
    assert again["status"] == "pending" and again["check"]["status"] == "pending"
    assert local.queued == [sid, sid]
    # A rejection for the bot's own fault stays what it is.
    own = _archive("guilty")
    other = local.upload(own)["submission_id"]
    with local.db.session() as session:
        set_submission_status(other, SubmissionStatus.REJECTED, session=session)
        finish_check(other, CheckStatus.FAILED, "forfeited validation game 1", [], session=session)
    assert local.upload(own)["status"] == "rejected"
    assert local.queued == [sid, sid, other]


def test_validation_failures_on_our_side_are_unavailable_not_verdicts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    submission = load_submission(EXAMPLES / "random")
    settings = ServiceSettings(store=tmp_path)

    def aborted(*_args: object) -> Any:
        raise SeriesAborted("game 1 of validation failed 3 times on our side")

    monkeypatch.setattr(play_module, "_validation_series", aborted)
    with pytest.raises(ValidationUnavailable, match="could not finish"):
        validate_submission(submission, settings=settings, label="t", seed=1)

    world_record = forfeit_game(World(1, 2, 1, 1), 1, seat=0)[0]
    double = world_record.__class__(
        deck=world_record.deck,
        dealer=0,
        turn_limit=world_record.turn_limit,
        moves=(),
        ending=GameEndReason.DOUBLE_FORFEIT,
        winner=None,
        double_forfeit_detail="neither bot started: sandbox unavailable",
    )
    monkeypatch.setattr(play_module, "_validation_series", lambda *_a: ({1: double}, {}))
    with pytest.raises(ValidationUnavailable, match="double forfeit"):
        validate_submission(submission, settings=settings, label="t", seed=1)
    # The version's own forfeit stays a verdict.
    monkeypatch.setattr(play_module, "_validation_series", lambda *_a: ({1: world_record}, {}))
    verdict = validate_submission(submission, settings=settings, label="t", seed=1)
    assert not verdict.passed and "forfeited validation game 1" in verdict.message


# ---------------------------------------------------------------- D. deep JSON


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 8000 + b"]" * 8000,
        b'{"a":' * 2500 + b"1" + b"}" * 2500,
        b"{",
        b"\xff\xfe",
    ],
    ids=["deep-array", "deep-object", "truncated", "not-utf8"],
)
def test_malformed_or_deep_json_is_a_4xx_problem(local: Local, body: bytes) -> None:
    response = local.http.post(
        "/api/register", content=body, headers={"Content-Type": "application/json"}
    )
    problem = _problem(response, 422)
    assert "invite" in problem["detail"]


# ---------------------------------------------------------------- E. /me escapes bot text


def test_me_shows_bot_text_escaped(local: Local) -> None:
    world = build_world(local.db)
    hostile = "evil \x1b[2J\x1b]0;pwned\x07 \u202ereversed\nsecond line"
    record, where = forfeit_game(
        world, 1, seat=0, reason=GameEndReason.CRASH, detail="crash: \x1b[31m\u202e"
    )
    with local.db.session() as session:
        bot = find_bot("alpha", session=session)
        assert bot is not None
        author = find_author("alice", session=session)
        assert author is not None and author.id is not None
        claim_bot(bot, author.id, session=session)
        game_id = record_game(record, where, session=session).game.id
        assert game_id is not None
        store_game_log(game_id, 0, world.sub_a, hostile, session=session, limit=4096)
    local.me(local.sign_in(token=local.token))
    page = local.http.get("/me").text
    assert "pwned" in page and "reversed" in page
    assert "\x1b" not in page and "\u202e" not in page and "\x07" not in page
    assert "\\x1b[2J" in page and "\\u202e" in page
    assert "second line" in page  # newlines of a log are kept


# ---------------------------------------------------------------- F. submission ids are ASCII


@pytest.mark.parametrize("given", ["\u00b2", "\u0661", "\uff11", "1\u00b2"])
def test_a_submission_id_of_unicode_digits_is_not_found(local: Local, given: str) -> None:
    """``str.isdigit()`` holds for ``²`` (which ``int()`` refuses: a 500) and for ``١`` and
    ``１`` (which ``int()`` reads as 1: another spelling of submission 1)."""
    sid = local.upload(_archive("digits"))["submission_id"]
    assert sid == 1
    assert local.http.get(f"{URL}/{sid}", headers=local.alice).status_code == 200
    problem = _problem(local.http.get(f"{URL}/{given}", headers=local.alice), 404)
    assert "no submission" in problem["detail"]


# ---------------------------------------------------------------- G. numbers and forms of any size


@pytest.mark.parametrize("author_id", ["9" * 23, "9" * 12])
def test_a_forged_session_cookie_with_a_huge_id_signs_nobody_in(
    local: Local, author_id: str
) -> None:
    """A 23-digit author id overflowed the database's integers (a 500 on /me and /logout)."""
    cookie = f"{author_id}.0.9999999999.ab.cd"
    assert local.me(cookie) == 303
    response = local.http.post("/logout", data={"csrf": "x"}, follow_redirects=False)
    assert response.status_code == 403, response.text
    response = local.http.post("/me/bots/alpha/retire", data={"csrf": "x"}, follow_redirects=False)
    assert response.status_code == 401, response.text  # "sign in first"


@pytest.mark.parametrize(
    "path",
    [
        "/api/leaderboard?tournament={n}",
        "/api/games/{n}",
        "/games/{n}",
        "/series/{n}",
        "/tournaments/{n}",
        "/submissions/{n}",
    ],
)
def test_an_id_of_thousands_of_digits_is_not_found(local: Local, path: str) -> None:
    """int() refuses more than 4,300 digits: it was a 500."""
    for digits in (5000, 20):
        response = local.http.get(path.format(n="9" * digits))
        assert response.status_code == 404, (digits, response.text[:300])
        assert "positive integer up to 2147483647" in response.text


@pytest.mark.parametrize("path", ["/login", "/register", "/logout"])
def test_a_form_of_too_many_fields_is_a_400(local: Local, path: str) -> None:
    fields = {f"f{i}": "1" for i in range(21)}
    response = local.http.post(path, data=fields, follow_redirects=False)
    assert response.status_code == 400, response.text
    assert "at most 20 fields" in response.text
    fields = {f"f{i}": "1" for i in range(20)}  # 20 is allowed: no CSRF token, so 403
    response = local.http.post(path, data=fields, follow_redirects=False)
    assert response.status_code == 403, response.text


# ---------------------------------------------------------------- H. refusals are audited


def test_a_refused_retire_or_log_read_is_in_the_audit_log(local: Local) -> None:
    """The refusal was audited in the request's own transaction, which its 403/404 rolled
    back: no refused retire or log read was ever stored."""
    from arena.db.accounts import audit_entries

    local.upload(_archive("mine"))
    with local.db.session() as session:
        create_author("mallory", session=session)
        mallory = create_token("mallory", session=session, lifetime=timedelta(days=1))
    as_mallory = {"Authorization": f"Bearer {mallory.secret}"}
    asked = [
        ("post", "/api/bots/mine/retire", 403),
        ("get", "/api/bots/mine/logs", 403),
        ("post", "/api/bots/nosuch/retire", 404),
        ("get", "/api/bots/nosuch/logs", 404),
    ]
    for method, path, status in asked:
        response = getattr(local.http, method)(path, headers=as_mallory)
        assert response.status_code == status, response.text
    with local.db.read_session() as session:
        refused = [
            (e.action, e.target) for e in audit_entries(session=session) if e.outcome == "forbidden"
        ]
    assert sorted(refused) == sorted(
        [("retire", "mine"), ("logs", "mine"), ("retire", "nosuch"), ("logs", "nosuch")]
    )
    # Alice's own retire still works and is audited once, as before.
    response = local.http.post("/api/bots/mine/retire", headers=local.alice)
    assert response.json()["retired"] == ["1.0"], response.text


# ---------------------------------------------------------------- I. the database unavailable


def test_an_unavailable_database_is_a_503_to_retry(
    local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only, locked or vanished database made every authenticated call a 500 (a
    token's check records its use, so even reads write)."""
    import arena.service.app as app_module
    from arena.db import DatabaseUnavailableError

    def unavailable(*_args: object, **_kwargs: object) -> None:
        raise DatabaseUnavailableError("attempt to write a readonly database")

    monkeypatch.setattr(app_module, "authenticate_token", unavailable)
    for path in ("/api/me", "/api/submissions"):
        response = local.http.get(path, headers=local.alice)
        problem = _problem(response, 503)
        assert problem["detail"] == app_module.UNAVAILABLE_DETAIL
        assert "readonly" not in response.text  # the reason is logged, not shown
        assert response.headers["Retry-After"] == "30"
    monkeypatch.undo()
    assert local.http.get("/api/me", headers=local.alice).status_code == 200
