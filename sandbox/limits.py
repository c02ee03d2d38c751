"""Resource limits applied to one sandboxed bot, configurable per tournament."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["MiB", "SandboxLimits"]

MiB = 1024 * 1024


@dataclass(frozen=True)
class SandboxLimits:
    """What one bot may use. Every backend applies what it can (see ``docs/sandbox.md``).

    - ``memory_bytes``: RAM (Docker: ``mem_limit`` = ``memswap_limit``, tmpfs counts
      against it; bwrap/process: the address-space rlimit, which is ``memory_bytes`` plus
      ``address_space_slack_bytes`` because gRPC reserves far more virtual memory than it uses).
    - ``pids``: processes and threads (Docker: ``pids_limit``; bwrap: ``RLIMIT_NPROC`` of the
      dedicated uid, shared by all bots running at once under that uid).
    - ``cpus``: CPU share (Docker ``nano_cpus``; not enforced by the local backends).
    - ``nofile``: open file descriptors. ``tmpfs_bytes``: size of the writable ``/tmp``.
    - ``fsize_bytes``: largest file the bot may write (``RLIMIT_FSIZE``; exceeding it kills
      the bot with SIGXFSZ, reported as :attr:`DeathCause.FILE_SIZE`).
    - ``log_bytes``: bound on the bot's captured stdout/stderr.
    - ``startup_timeout``: seconds from launch until the health service must answer SERVING.
    - ``max_message_bytes``: largest gRPC message the referee accepts from the bot.
    """

    memory_bytes: int = 256 * MiB
    pids: int = 64
    cpus: float = 1.0
    nofile: int = 256
    tmpfs_bytes: int = 16 * MiB
    fsize_bytes: int = 8 * MiB
    log_bytes: int = 1 * MiB
    startup_timeout: float = 15.0
    max_message_bytes: int = 4 * MiB
    address_space_slack_bytes: int = 1024 * MiB

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"SandboxLimits.{spec.name} must be a positive number: {value!r}")
        if self.pids < 4:
            raise ValueError(
                f"SandboxLimits.pids must be at least 4 (Python needs threads): {self.pids}"
            )
