"""Resource limits applied to one sandboxed bot, configurable per tournament."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["DEFAULT_STARTUP_SECONDS", "MiB", "SandboxLimits"]

MiB = 1024 * 1024

DEFAULT_STARTUP_SECONDS = 15.0
"""How long a bot may take from its start until its health service answers SERVING: the
one start-up deadline (sandboxes, tournaments, ``kryt bot check``), stated once."""


@dataclass(frozen=True)
class SandboxLimits:
    """What one bot may use. Every backend applies what it can (see ``docs/sandbox.md``).

    - ``memory_bytes``: RAM of the whole process tree, no swap (Docker: ``mem_limit`` =
      ``memswap_limit``; bwrap: the bot's memory cgroup; tmpfs pages count against it). The
      local backends also set the per-process address-space rlimit to ``memory_bytes`` plus
      ``address_space_slack_bytes`` (gRPC reserves far more virtual memory than it uses).
    - ``pids``: processes and threads of the whole tree (Docker: ``pids_limit``; bwrap: the
      bot's pids cgroup; a trusted bot without cgroups: ``RLIMIT_NPROC`` of the uid).
    - ``cpus``: CPU share (Docker ``nano_cpus``; not enforced by the local backends).
    - ``nofile``: open file descriptors. ``tmpfs_bytes``: size of the writable ``/tmp``.
    - ``fsize_bytes``: largest file the bot may write (``RLIMIT_FSIZE``; exceeding it kills
      the bot with SIGXFSZ, reported as :attr:`DeathCause.FILE_SIZE`).
    - ``log_bytes``: bound on the bot's captured stdout/stderr.
    - ``startup_timeout``: seconds from launch until the health service must answer SERVING.
    - ``socket_dir_bytes`` / ``socket_dir_inodes``: size and entry caps of the bot's own
      tmpfs at ``/run/kryt`` (where its socket lives; nothing there reaches the disk).
    - ``shm_bytes``: size of ``/dev/shm`` (bwrap: a sized tmpfs; Docker: ``shm_size``, its
      pages counted against the memory cgroup).
    """

    memory_bytes: int = 256 * MiB
    pids: int = 64
    cpus: float = 1.0
    nofile: int = 256
    tmpfs_bytes: int = 16 * MiB
    fsize_bytes: int = 8 * MiB
    log_bytes: int = 1 * MiB
    startup_timeout: float = DEFAULT_STARTUP_SECONDS
    address_space_slack_bytes: int = 1024 * MiB
    socket_dir_bytes: int = 64 * 1024
    socket_dir_inodes: int = 16
    shm_bytes: int = 1 * MiB

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"SandboxLimits.{spec.name} must be a positive number: {value!r}")
        if self.pids < 4:
            raise ValueError(
                f"SandboxLimits.pids must be at least 4 (Python needs threads): {self.pids}"
            )
