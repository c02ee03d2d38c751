"""Fixtures for the sandbox tests: bot folders built from the hostile fixtures, backends.

Docker and bubblewrap are required under CI (``tests.services.require``) and skipped with a
reason elsewhere. The bot base image is built (or found in the cache) once per session.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sandbox.backend import Backend
from sandbox.limits import SandboxLimits
from tests.services import require

HOSTILE = Path(__file__).parent / "hostile"
MakeBot = Callable[..., Path]

STARTUP_SECONDS = 120.0
"""A start-up deadline for tests that do not test it: starting a sandbox on CI's busy, shared
machine (under memory pressure, beside other sandboxes) can take far longer than the default."""


def roomy(**fields: Any) -> SandboxLimits:
    """``SandboxLimits(**fields)`` with a generous start-up deadline unless one is given."""
    fields.setdefault("startup_timeout", STARTUP_SECONDS)
    return SandboxLimits(**fields)


def stage_hostile_bot(source: Path, dest: Path, extra: dict[str, str] | None = None) -> Path:
    """The hostile bot folder ``source`` copied to ``dest`` with the shared ``_serve.py`` and
    the ``extra`` files, readable by the bwrap sandbox uid and the container's uid."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(HOSTILE / "_serve.py", dest / "_serve.py")
    for rel, text in (extra or {}).items():
        (dest / rel).write_text(text)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


@pytest.fixture
def make_bot(tmp_path: Path) -> MakeBot:
    """``make_bot("forkbomb", extra={"file": "text"})`` -> a bot folder ready to start."""

    def make(name: str, extra: dict[str, str] | None = None) -> Path:
        return stage_hostile_bot(HOSTILE / name, tmp_path / name, extra)

    return make


def _docker_problem() -> str | None:
    try:
        from sandbox.docker_backend import docker_client

        docker_client(timeout=10)
    except Exception as exc:
        return str(exc)
    return None


@pytest.fixture(scope="session")
def docker_backend() -> Backend:
    """The Docker backend on the locally built base image (built once, cached by hash)."""
    problem = _docker_problem()
    require(problem is None, "Docker", problem or "")
    from sandbox import base_image
    from sandbox.docker_backend import DockerBackend

    tag = os.environ.get("KRYT_SANDBOX_BASE_IMAGE")
    if not tag or not base_image.image_exists(tag):
        try:
            tag = base_image.build()
        except base_image.BaseImageError as exc:
            require(False, "the sandbox base image", str(exc))
    # No sweep at teardown: under pytest-xdist another worker's bots may still be running;
    # every test asserts its own clean-up instead.
    return DockerBackend(base_image=tag)


@pytest.fixture(scope="session")
def bwrap_backend() -> Backend:
    """The bubblewrap backend (as the dedicated sandbox user when running as root)."""
    from sandbox.errors import BackendUnavailableError
    from sandbox.local import BwrapBackend

    try:
        return BwrapBackend()
    except BackendUnavailableError as exc:
        require(False, "bubblewrap", str(exc))
        raise


@pytest.fixture
def process_backend(tmp_path: Path) -> Backend:
    """The plain-process backend, trusting the bots ``make_bot`` puts in ``tmp_path``."""
    from sandbox.local import ProcessBackend

    return ProcessBackend(allow_unsafe=False, trusted_roots=[tmp_path])


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker), "bwrap"])
def sandbox_backend(request: pytest.FixtureRequest) -> Backend:
    """Each isolating backend in turn."""
    name: str = request.param
    backend: Any = request.getfixturevalue(f"{name}_backend")
    return backend  # type: ignore[no-any-return]


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker), "bwrap", "process"])
def any_backend(request: pytest.FixtureRequest) -> Backend:
    """Each backend in turn, the process backend included."""
    name: str = request.param
    backend: Any = request.getfixturevalue(f"{name}_backend")
    return backend  # type: ignore[no-any-return]
