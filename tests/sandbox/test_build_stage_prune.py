"""The removal of a build stage waits its turn while the engine runs another prune.

The engine runs one image prune at a time and answers another with 409 Conflict ("a prune
operation is already running"): two builds ending together on one engine, or an operator's
``docker image prune``, left the stage (up to 20 MiB of sources) behind for good. These tests
use a stand-in engine client; tests/sandbox/test_build_failures.py checks real builds.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest
from docker.errors import APIError
from requests import Response

import sandbox.docker_backend as docker_backend
from sandbox import base_image, load_submission
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


# ---------------------------------------------------- python -m sandbox.base_image prune


class DockerCli:
    """``subprocess.run`` of the base image's ``prune``: no tagged image to remove, and each
    ``docker image prune`` answered with the next planned (status, stdout, stderr)."""

    BUSY = (1, "", "Error response from daemon: a prune operation is already running\n")

    def __init__(self, outcomes: list[tuple[int, str, str]]) -> None:
        self.outcomes = outcomes
        self.prunes = 0

    def __call__(self, cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        if cmd[1:3] == ["image", "prune"]:
            self.prunes += 1
            status, out, err = self.outcomes.pop(0)
            return subprocess.CompletedProcess(cmd, status, out, err)
        # `docker image inspect` (no such base) and anything else: nothing there.
        return subprocess.CompletedProcess(cmd, 1, b"", b"No such image")


def base_image_prune(
    outcomes: list[tuple[int, str, str]], monkeypatch: pytest.MonkeyPatch
) -> tuple[DockerCli, list[str] | base_image.BaseImageError]:
    cli = DockerCli(outcomes)
    monkeypatch.setattr(docker_backend, "PRUNE_RETRY_WAITS", (0.0, 0.01, 0.02))
    monkeypatch.setattr(base_image, "docker_cli", lambda: "docker")
    monkeypatch.setattr(base_image, "run_checked", lambda cmd, **kwargs: "")
    monkeypatch.setattr(subprocess, "run", cli)
    try:
        return cli, base_image.prune()
    except base_image.BaseImageError as exc:
        return cli, exc


def test_the_base_images_prune_waits_for_another_prune_to_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It ran `docker image prune` once without looking at its status: an engine busy with
    another prune removed no build stage and the command said nothing, as if none were
    left."""
    deleted = "Deleted Images:\ndeleted: sha256:aa\ndeleted: sha256:bb\n"
    cli, removed = base_image_prune([DockerCli.BUSY, DockerCli.BUSY, (0, deleted, "")], monkeypatch)
    assert cli.prunes == 3
    assert removed == ["2 untagged build-stage layers"]


def test_an_engine_busy_pruning_for_longer_fails_the_prune_with_its_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cli, failed = base_image_prune([DockerCli.BUSY] * 4, monkeypatch)
    assert cli.prunes == 4  # the first try and one after each of the three waits
    assert isinstance(failed, base_image.BaseImageError)
    assert "could not remove the untagged build stages" in str(failed)
    assert "a prune operation is already running" in str(failed)


def test_any_other_failure_of_the_prune_is_not_tried_again(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cli, failed = base_image_prune(
        [(1, "", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock\n")],
        monkeypatch,
    )
    assert cli.prunes == 1
    assert isinstance(failed, base_image.BaseImageError)
    assert "Cannot connect to the Docker daemon" in str(failed)
    # The command line says so and fails, instead of printing nothing and exiting 0.
    base_image_prune_cli = DockerCli(
        [(1, "", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock\n")]
    )
    monkeypatch.setattr(subprocess, "run", base_image_prune_cli)
    assert base_image.main(["prune"]) == 1
    assert "could not remove the untagged build stages" in capsys.readouterr().err
