"""Pick the sandbox backend: Docker, then bubblewrap, then a plain process (trusted only)."""

from __future__ import annotations

import logging
import os
from typing import Literal

from sandbox.backend import Backend
from sandbox.errors import BackendUnavailableError, EngineUnavailableError, ImageBuildError

__all__ = ["BackendPreference", "choose_backend", "sweep_leftovers"]

BackendPreference = Literal["auto", "docker", "bwrap", "process"]
PREFERENCES: tuple[str, ...] = ("auto", "docker", "bwrap", "process")
log = logging.getLogger("sandbox")


def _docker(base_image: str | None, check_image: bool) -> Backend:
    from sandbox.docker_backend import DockerBackend

    backend = DockerBackend(base_image=base_image)
    if check_image:
        backend.image_base_id()
    backend.reason = (
        f"Docker engine reachable; bots run in containers: Python bots on {backend.base_image},"
        " other runtimes on their kryt-runtime-<name> image"
    )
    return _note_refusal(backend)


def _bwrap() -> Backend:
    from sandbox.local import BwrapBackend

    backend = BwrapBackend()
    if os.geteuid() == 0:
        from sandbox.uids import default_pool

        backend.reason = (
            f"bubblewrap sandbox: each bot as a uid of its own ({default_pool().describe()}),"
            f" builds as uid {backend.uid}"
        )
    else:
        backend.reason = f"bubblewrap sandbox as uid {backend.uid}"
    return _note_refusal(backend)


def _note_refusal(backend: Backend) -> Backend:
    """Say in the reason when the backend will refuse untrusted bots (never silently)."""
    problem = backend.untrusted_problem()
    if problem:
        backend.reason += f"; UNTRUSTED BOTS REFUSED: {problem}"
    return backend


def _process(allow_unsafe: bool) -> Backend:
    from sandbox.local import ProcessBackend

    backend = ProcessBackend(allow_unsafe=allow_unsafe)
    backend.reason = "plain processes, NO isolation: " + (
        "untrusted bots allowed (--unsafe)" if allow_unsafe else "trusted bots only"
    )
    return backend


def check_preference(preference: str) -> None:
    """ValueError naming ``preference`` and the choices unless it is one of
    :data:`PREFERENCES` (checked without probing any backend)."""
    if preference not in PREFERENCES:
        raise ValueError(f"unknown sandbox backend {preference!r}; choose one of {PREFERENCES}")


def choose_backend(
    preference: str = "auto", allow_unsafe: bool = False, *, base_image: str | None = None
) -> Backend:
    """Return a ready backend; ``backend.name`` and ``backend.reason`` say which and why.

    ``"auto"`` tries Docker (engine reachable and the bot base image present), then
    bubblewrap (``bwrap`` installed and, as root, the dedicated sandbox user existing), then
    the plain process backend, which refuses untrusted bots unless ``allow_unsafe``. An
    explicit preference that cannot run raises
    :class:`~sandbox.errors.BackendUnavailableError` (or a subclass) saying why; explicit
    ``"docker"`` needs only the engine: whether the image of each runtime a run uses is
    there is :meth:`~sandbox.backend.Backend.runtime_problem`'s answer.
    """
    check_preference(preference)
    if preference == "docker":
        # The images a run needs depend on its bots' runtimes: each command asks
        # runtime_problem() for them before the first game (a run of Java bots needs no
        # Python image).
        return _docker(base_image, check_image=False)
    if preference == "bwrap":
        return _bwrap()
    if preference == "process":
        return _process(allow_unsafe)
    skipped: list[str] = []
    try:
        backend = _docker(base_image, check_image=True)
    except (BackendUnavailableError, ImageBuildError) as exc:
        skipped.append(f"docker: {exc}")
    else:
        log.info("sandbox backend %s", backend.describe())
        return backend
    try:
        backend = _bwrap()
    except BackendUnavailableError as exc:
        skipped.append(f"bwrap: {exc}")
    else:
        backend.reason += f" (skipped {'; '.join(skipped)})"
        log.info("sandbox backend %s", backend.describe())
        return backend
    backend = _process(allow_unsafe)
    backend.reason += f" (skipped {'; '.join(skipped)})"
    log.warning("sandbox backend %s", backend.describe())
    return backend


def sweep_leftovers(label_prefix: str = "") -> int:
    """Remove containers and socket dirs left behind by an earlier, crashed run.

    Call at start-up with the prefix your labels use. Sweeps Docker when an engine answers
    (a missing engine is not an error here) and the local socket directories.
    """
    from sandbox.backend import sweep_socket_dirs

    removed = 0
    try:
        from sandbox.docker_backend import DockerBackend, docker_client

        backend = DockerBackend(client=docker_client(timeout=10), base_image="unused")
    except EngineUnavailableError:
        pass
    else:
        removed += backend.sweep_leftovers(label_prefix)
    return removed + sweep_socket_dirs(label_prefix)
