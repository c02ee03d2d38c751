"""Typed sandbox errors: the bot's fault versus the infrastructure's fault."""

from __future__ import annotations

from sandbox.death import DeathReport

__all__ = [
    "BackendUnavailableError",
    "BotCrashedError",
    "BotNotHealthyError",
    "BotStartupError",
    "CleanupError",
    "EngineUnavailableError",
    "ImageBuildError",
    "InvalidSubmissionError",
    "LimitsUnavailableError",
    "SandboxError",
    "SandboxInfrastructureError",
    "UnsafeBackendError",
    "UnsafeSocketError",
]


class SandboxError(Exception):
    """Base class of every sandbox error."""


class BotStartupError(SandboxError):
    """The bot failed to start and it is the bot's fault (the referee forfeits it)."""

    def __init__(self, message: str, *, label: str = "", death: DeathReport | None = None) -> None:
        super().__init__(message)
        self.label = label
        self.death = death


class InvalidSubmissionError(BotStartupError, ValueError):
    """The submission is malformed (bad manifest, missing entry, unsafe paths)."""


class BotCrashedError(BotStartupError):
    """The bot exited before its health service answered SERVING."""


class BotNotHealthyError(BotStartupError):
    """The bot kept running but did not answer SERVING before the startup deadline."""


class UnsafeSocketError(BotStartupError):
    """The bot's socket is not a socket owned by the bot (e.g. a symlink to docker.sock)."""


class SandboxInfrastructureError(SandboxError, RuntimeError):
    """The sandbox itself failed; not the bot's fault (the match should be retried)."""


class BackendUnavailableError(SandboxInfrastructureError):
    """The requested backend cannot run on this machine (tool missing, user missing)."""


class LimitsUnavailableError(BackendUnavailableError):
    """The backend runs, but cannot enforce the per-bot limits an untrusted bot needs.

    Raised by ``start()`` for untrusted bots only (trusted, bundled bots still run); the
    message says which setting or privilege is missing (see ``docs/sandbox.md``).
    """


class CleanupError(SandboxInfrastructureError):
    """Removing what a bot left (processes, container, socket dir, cgroup) failed: ours.

    Every step of a cleanup is attempted even when an earlier one fails; the message lists
    every failure, each naming the path or object concerned.
    """


class EngineUnavailableError(BackendUnavailableError):
    """The Docker engine cannot be reached (or the docker package is missing)."""


class ImageBuildError(SandboxInfrastructureError):
    """The base image is missing or an image could not be built for reasons outside the bot."""


class UnsafeBackendError(SandboxError, PermissionError):
    """An untrusted bot would run without isolation and ``allow_unsafe`` was not given."""
