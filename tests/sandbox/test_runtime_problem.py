"""Which runtimes a backend can run: one public check, used at every start and up front."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sandbox.backend import Backend
from sandbox.errors import InvalidSubmissionError
from sandbox.runtimes import REGISTRY
from tests.sandbox.conftest import roomy

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)


def test_the_process_backend_runs_python_only(process_backend: Backend) -> None:
    assert process_backend.runtime_problem("python") is None
    others = [name for name in REGISTRY if name != "python"]
    assert others  # node, java, cpp, go, native
    for runtime in others:
        problem = process_backend.runtime_problem(runtime)
        assert problem is not None, runtime
        assert f"a {runtime} bot" in problem and "runs Python bots only" in problem


@pytest.mark.parametrize("name", [pytest.param("docker", marks=pytest.mark.docker), "bwrap"])
def test_the_isolating_backends_run_every_runtime(
    name: str, request: pytest.FixtureRequest
) -> None:
    backend: Backend = request.getfixturevalue(f"{name}_backend")
    assert [r for r in REGISTRY if backend.runtime_problem(r) is not None] == []


def test_start_refuses_what_runtime_problem_names(process_backend: Backend, tmp_path: Path) -> None:
    """The check at start and the check up front are one: the start's error carries the
    same reason, after the bot's name and version, and nothing is launched."""
    node = tmp_path / "jsbot"
    shutil.copytree(ROOT / "sdk/tools/starters/js", node)
    with pytest.raises(InvalidSubmissionError) as caught:
        process_backend.start(node, roomy(), "test-runtime", trusted=True)
    problem = process_backend.runtime_problem("node")
    assert problem is not None
    assert str(caught.value).endswith(f": {problem}"), caught.value
