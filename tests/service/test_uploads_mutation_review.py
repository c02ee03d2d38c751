"""Tests from a mutation review of the arena's upload handling (``arena/service/uploads.py``
behind ``POST /api/submissions``): each pins a behaviour a small mutant of the code changed
without any other test noticing.

The expected behaviour comes from docs/arena.md: the body is the archive itself (``.zip``,
``.tar``, ``.tar.gz``), not a multipart form (a 422 that says so); the upload is checked
exactly like a local ``kryt submit`` (a 422 for an invalid archive, naming what is wrong);
only a *valid* upload is stored, as *pending* (202; 200 when the same content was already
stored); a version whose validation failed on the server's side is validated again when
the same content is uploaded again, and so is a rejection an older release stored for such
a failure (``could not be validated: ...``): a real rejection stays a rejection.

Everything runs on the service app in process over SQLite, nothing in the background.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Literal

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from arena.db import Database
from arena.db.accounts import create_author, create_token
from arena.db.ladder import CheckStatus, finish_check, get_check
from arena.service import uploads
from arena.service.play import ValidationUnavailable, Verdict
from arena.service.settings import ServiceSettings
from arena.service.uploads import Validator
from arena.tournament.store import register
from tests.service.helpers import alice_service, problem

URL = "/api/submissions"


def _manifest(name: str, version: str = "1.0.0") -> str:
    return f'name = "{name}"\nversion = "{version}"\nruntime = "python"\nentry = "bot.py"\n'


def _files(name: str, version: str = "1.0.0", code: str = "x = 1\n") -> dict[str, str]:
    return {"bot.toml": _manifest(name, version), "bot.py": code}


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def _tar(files: dict[str, str], mode: Literal["w", "w:gz"] = "w") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class Api:
    """The service app in process; alice and bob have a token each."""

    db: Database
    http: TestClient
    store: Path
    tokens: dict[str, str]

    def post(self, body: bytes, author: str = "alice", **headers: str) -> httpx.Response:
        auth = {"Authorization": f"Bearer {self.tokens[author]}"}
        answer: httpx.Response = self.http.post(URL, content=body, headers={**auth, **headers})
        return answer

    def stored(self) -> list[str]:
        """The submission folders in the store (not a temporary one being written)."""
        if not self.store.is_dir():
            return []
        return sorted(p.name for p in self.store.iterdir() if not p.name.startswith("."))


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    db, app, alice = alice_service(tmp_path)
    with db.session() as session:
        create_author("bob", session=session)
        bob = create_token("bob", session=session, lifetime=timedelta(days=1)).secret
    with TestClient(app, raise_server_exceptions=False) as http:
        yield Api(db, http, tmp_path / "store", {"alice": alice, "bob": bob})
    db.close()


def test_a_plain_tar_is_taken_like_a_zip(api: Api) -> None:
    """arena.md: the body is the archive itself, ``.zip``, ``.tar`` or ``.tar.gz``: an
    uncompressed tarball is a valid upload (202, stored as pending)."""
    answer = api.post(_tar(_files("tarbot")))
    assert answer.status_code == 202, answer.text
    assert answer.json()["bot"] == "tarbot" and answer.json()["status"] == "pending"
    assert len(api.stored()) == 1


@pytest.mark.parametrize(
    ("kind", "named"), [("zip", "bot.tar.gz"), ("tar.gz", "bot.zip"), ("tar.gz", "bot.tar")]
)
def test_the_optional_file_name_does_not_decide_what_the_archive_is(
    api: Api, kind: str, named: str
) -> None:
    """arena.md: the body is the archive; ``X-Kryt-Filename`` is optional, so an archive
    sent under another kind's name is still read as what it is."""
    files = _files("namedbot")
    body = _zip(files) if kind == "zip" else _tar(files, "w:gz")
    answer = api.post(body, **{"X-Kryt-Filename": named})
    assert answer.status_code == 202, answer.text
    assert answer.json()["bot"] == "namedbot"


def test_a_multipart_form_without_its_content_type_is_said_to_be_one(api: Api) -> None:
    """arena.md: not a multipart form (``curl -F``: a 422 that says so), also when a client
    sends the form's body without its ``multipart/form-data`` content type."""
    archive = _zip(_files("formbot"))
    form = (
        b'--xYzZY\r\nContent-Disposition: form-data; name="file"; filename="bot.zip"\r\n'
        b"Content-Type: application/zip\r\n\r\n" + archive + b"\r\n--xYzZY--\r\n"
    )
    detail = problem(api.post(form, **{"Content-Type": "application/octet-stream"}), 422)
    assert "multipart" in detail["detail"], detail
    assert api.stored() == []


def test_an_upload_refused_for_its_python_leaves_nothing_in_the_store(api: Api) -> None:
    """arena.md: the upload is checked like a local ``kryt submit`` (Python sources that
    compile: a 422 naming ``file:line``) and only a valid upload is stored: a refused one
    leaves no folder in the submission store."""
    broken = _zip(_files("brokenbot", code="def act(:\n    pass\n"))
    detail = problem(api.post(broken), 422)["detail"]
    assert "bot.py:1" in detail, detail
    assert api.stored() == []


def test_a_bot_the_organiser_stored_first_cannot_be_taken_over_by_an_author(
    api: Api, tmp_path: Path
) -> None:
    """arena.md: "The first author to submit a bot name owns it: only they can add
    versions". A bot the organiser stored first (``kryt submit`` into the arena's database,
    no author) is not free for the first author who uploads under its name: a 403, and no
    version of the author's is stored."""
    folder = tmp_path / "house"
    folder.mkdir()
    for name, content in _files("housebot", "1.0.0").items():
        (folder / name).write_text(content)
    register(folder, db=api.db, submitted_by="organiser", store=api.store)
    before = api.stored()
    problem(api.post(_zip(_files("housebot", "2.0.0"))), 403)
    assert api.stored() == before
    mine = api.http.get(URL, headers={"Authorization": f"Bearer {api.tokens['alice']}"})
    assert mine.status_code == 200 and mine.json()["submissions"] == []


def test_an_empty_tarball_is_said_to_be_an_archive_with_no_files(api: Api) -> None:
    """arena.md: "an archive with no files" is a 422 of its own: an empty tarball (its end
    blocks only) is named for what it is, not as something that is no archive."""
    empty = _tar({})
    assert empty and not empty.strip(b"\0")
    detail = problem(api.post(empty), 422)["detail"]
    assert "no files" in detail and "not a .zip" not in detail, detail
    assert api.stored() == []


def test_a_validation_failing_on_our_side_after_another_run_decided_leaves_its_verdict(
    api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """arena.md: "A check is decided once: ... when two runs of one check overlap (the same
    content uploaded twice at once, to one server or two) the verdict recorded first stands
    and the other run records nothing": a run that fails on the server's side after the
    other run decided does not note its failure on the decided check."""
    answer = api.post(_zip(_files("twicebot")))
    assert answer.status_code == 202, answer.text
    sid = int(answer.json()["submission_id"])
    verdict = "played 2 validation game(s) without a forfeit"

    def decided_meanwhile(*args: object, **kwargs: object) -> Verdict:
        with api.db.session() as session:  # the other run records its verdict first
            finish_check(sid, CheckStatus.PASSED, verdict, [], session=session)
            session.execute(
                text("UPDATE submissions SET status = 'active' WHERE id = :id"), {"id": sid}
            )
        raise ValidationUnavailable("the sandbox is gone")

    monkeypatch.setattr(uploads, "validate_submission", decided_meanwhile)
    settings = ServiceSettings(store=api.store)
    Validator(api.db, settings, label_prefix="review-").validate(sid)
    with api.db.read_session() as session:
        check = get_check(sid, session=session)
        assert check is not None
        assert (check.status, check.message) == (CheckStatus.PASSED.value, verdict)
