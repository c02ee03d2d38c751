"""A version's validation is decided once: the same content uploaded twice at once queued a
second validation (the second upload saw the check still pending), which played its games
again and then replaced the first verdict's games and message, whatever the version's status
had been decided on. On SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import pytest

import arena.service.uploads as uploads_module
from arena.service.play import Verdict
from tests.service import test_service_audit_round6 as round6
from tests.service.test_service_audit_round6 import Local, _archive, _status

# The in-process service on SQLite and PostgreSQL, as the round-6 audit runs it.
database_url = round6.database_url
local = round6.local


def _verdict(passed: bool, message: str) -> Verdict:
    return Verdict(passed, message, [{"game": message}])


def test_a_decided_check_is_not_played_again(local: Local, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = local.upload(_archive("once"))["submission_id"]
    plays: list[str] = []

    def failing(*_args: object, **_kwargs: object) -> Verdict:
        plays.append("failing")
        return _verdict(False, "forfeited validation game 1")

    monkeypatch.setattr(uploads_module, "validate_submission", failing)
    assert local.validator.validate(sid).value == "failed"
    assert _status(local.db, sid) == ("rejected", "failed")
    # Queued a second time (a second upload that saw the check pending): nothing is played,
    # the verdict stands.
    monkeypatch.setattr(uploads_module, "validate_submission", lambda *a, **k: pytest.fail())
    assert local.validator.validate(sid).value == "failed"
    assert plays == ["failing"]
    check = local.http.get(f"/api/submissions/{sid}", headers=local.alice).json()["check"]
    assert check["message"] == "forfeited validation game 1", check


def test_of_two_runs_at_once_only_the_first_verdict_is_recorded(
    local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs of one pending check overlap (two servers, or one server's second queueing):
    the one that ends second finds the check decided and records nothing; the version's
    status and its check's games and message are the first verdict's."""
    sid = local.upload(_archive("twice"))["submission_id"]
    second_started = threading.Event()
    first_recorded = threading.Event()

    def verdicts(*_args: object, **kwargs: object) -> Verdict:
        if threading.current_thread().name == "second":
            second_started.set()
            assert first_recorded.wait(120)
            return _verdict(True, "second run: passed")
        assert second_started.wait(120)
        return _verdict(False, "first run: forfeited")

    monkeypatch.setattr(uploads_module, "validate_submission", verdicts)
    results: dict[str, str] = {}

    def run(name: str) -> None:
        results[name] = local.validator.validate(sid).value
        if name == "first":
            first_recorded.set()

    threads = [threading.Thread(target=run, args=(n,), name=n) for n in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    assert results == {"first": "failed", "second": "failed"}, results
    assert _status(local.db, sid) == ("rejected", "failed")
    check = local.http.get(f"/api/submissions/{sid}", headers=local.alice).json()["check"]
    assert check["message"] == "first run: forfeited", check
    assert check["games"] == [{"game": "first run: forfeited"}], check
