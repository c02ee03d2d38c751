"""Run untrusted bots: validated submissions, sandbox backends, limits and death reports.

Importing this package needs only the base install (no ``docker``): the Docker backend is
imported lazily by :func:`choose_backend`.

    backend = choose_backend("auto", allow_unsafe=False)
    print(backend.describe())
    with backend.start("path/to/bot", SandboxLimits(), label="match-7") as bot:
        stub = SomeStub(bot.channel)
        ...
        if not bot.alive():
            print(bot.death())
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# First: gRPC's settings (referee.GRPC_DEFAULTS) must be in place before sandbox.backend
# imports grpc, which it does before the referee's modules (third-party imports come first).
import referee  # noqa: F401
from sandbox.death import DeathCause, DeathReport
from sandbox.errors import (
    BackendUnavailableError,
    BotCrashedError,
    BotNotHealthyError,
    BotStartupError,
    EngineUnavailableError,
    ImageBuildError,
    InvalidSubmissionError,
    SandboxError,
    SandboxInfrastructureError,
    UnsafeBackendError,
    UnsafeSocketError,
)
from sandbox.limits import SandboxLimits
from sandbox.submission import (
    Manifest,
    Submission,
    SubmissionError,
    SubmissionLimits,
    SubmissionStoreError,
    load_submission,
    parse_manifest,
    store_submission,
)

if TYPE_CHECKING:
    from sandbox.backend import Backend, RunningBot

__all__ = [
    "Backend",
    "BackendUnavailableError",
    "BotCrashedError",
    "BotNotHealthyError",
    "BotStartupError",
    "DeathCause",
    "DeathReport",
    "EngineUnavailableError",
    "ImageBuildError",
    "InvalidSubmissionError",
    "Manifest",
    "RunningBot",
    "SandboxError",
    "SandboxInfrastructureError",
    "SandboxLimits",
    "Submission",
    "SubmissionError",
    "SubmissionLimits",
    "SubmissionStoreError",
    "UnsafeBackendError",
    "UnsafeSocketError",
    "choose_backend",
    "load_submission",
    "parse_manifest",
    "store_submission",
    "sweep_leftovers",
]


def choose_backend(
    preference: str = "auto", allow_unsafe: bool = False, *, base_image: str | None = None
) -> Backend:
    """See :func:`sandbox.chooser.choose_backend`."""
    from sandbox.chooser import choose_backend as choose

    return choose(preference, allow_unsafe, base_image=base_image)


def sweep_leftovers(label_prefix: str = "") -> int:
    """See :func:`sandbox.chooser.sweep_leftovers`."""
    from sandbox.chooser import sweep_leftovers as sweep

    return sweep(label_prefix)


def __getattr__(name: str) -> Any:
    # Backend / RunningBot pull in grpc; keep them lazy so importing sandbox stays light.
    if name in {"Backend", "RunningBot"}:
        from sandbox import backend

        return getattr(backend, name)
    raise AttributeError(f"module 'sandbox' has no attribute {name!r}")
