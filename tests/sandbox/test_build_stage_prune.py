"""The removal of a build stage waits its turn while the engine runs another prune.

The engine runs one image prune at a time and answers another with 409 Conflict ("a prune
operation is already running"): two builds ending together on one engine, or an operator's
``docker image prune``, left the stage (up to 20 MiB of sources) behind for good. These tests
use a stand-in engine client; tests/sandbox/test_build_failures.py checks real builds.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from docker.errors import APIError
from requests import Response

import sandbox.docker_backend as docker_backend
from sandbox import load_submission
from sandbox.docker_backend import DockerBackend, build_stage_labels

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "sdk" / "examples" / "random"


def api_error(status: int, explanation: str) -> APIError:
    response = Response()
    response.status_code = status
    return APIError(f"{status} Client Error", response=response, explanation=explanation)


class Images:
    """``client.images`` answering each prune with the next planned outcome."""

    def __init__(self, outcomes: list[APIError | None]) -> None:
        self.outcomes = outcomes
        self.calls: list[dict[str, Any]] = []

    def prune(self, filters: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(filters)
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome
        return {"ImagesDeleted": [], "SpaceReclaimed": 0}


class Client:
    def __init__(self, images: Images) -> None:
        self.images = images


def remove_stage(outcomes: list[APIError | None], monkeypatch: pytest.MonkeyPatch) -> Images:
    monkeypatch.setattr(docker_backend, "PRUNE_RETRY_WAITS", (0.0, 0.01, 0.02))
    images = Images(outcomes)
    backend = DockerBackend(client=Client(images), base_image="kryt-bot-base:test")
    backend._remove_build_stage(load_submission(EXAMPLE))
    return images


BUSY = "a prune operation is already running"


def test_a_prune_refused_while_another_runs_is_tried_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    submission = load_submission(EXAMPLE)
    labels = sorted(f"{k}={v}" for k, v in build_stage_labels(submission).items())
    with caplog.at_level(logging.WARNING, logger=docker_backend.__name__):
        images = remove_stage([api_error(409, BUSY), api_error(409, BUSY), None], monkeypatch)
    assert len(images.calls) == 3
    for filters in images.calls:  # each try removes only this submission's dangling stage
        assert filters["dangling"] is True and sorted(filters["label"]) == labels
    assert caplog.records == []


def test_an_engine_busy_pruning_for_longer_leaves_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=docker_backend.__name__):
        images = remove_stage([api_error(409, BUSY)] * 10, monkeypatch)
    assert len(images.calls) == 4  # the first try and one per wait
    (warning,) = caplog.records
    assert "could not remove the build stage" in warning.getMessage()
    assert BUSY in warning.getMessage()


def test_any_other_engine_error_is_not_tried_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=docker_backend.__name__):
        images = remove_stage([api_error(500, "engine broke"), None], monkeypatch)
    assert len(images.calls) == 1
    (warning,) = caplog.records
    assert "engine broke" in warning.getMessage()
