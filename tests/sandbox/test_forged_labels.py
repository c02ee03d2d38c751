"""A bot cannot choose the label of its forfeit: ``memory limit`` and ``disk limit`` rest on
the kernel's word (a cgroup's OOM kill or limit hits, Docker's ``OOMKilled``, SIGXFSZ in a
wait status as the supervisor saw it, with a file of the bot's at its file-size limit), never
on what the bot prints, returns or sends itself."""

from __future__ import annotations

import pytest

from sandbox.backend import Backend
from sandbox.death import SIGXFSZ_EXIT, DeathCause, DeathReport
from sandbox.errors import BotCrashedError
from sandbox.limits import MiB
from tests.sandbox.conftest import MakeBot, roomy

pytestmark = pytest.mark.timeout(300)


def _death_at_start(backend: Backend, make_bot: MakeBot, how: str, **limits: int) -> DeathReport:
    """Start the ``liar`` fixture told to end as ``how``; the report of its death."""
    folder = make_bot("liar", {"how.txt": how})
    with pytest.raises(BotCrashedError) as caught:
        backend.start(folder, roomy(**limits), f"test-liar-{how}")
    death = caught.value.death
    assert death is not None
    return death


def test_printing_memory_error_is_a_crash(any_backend: Backend, make_bot: MakeBot) -> None:
    death = _death_at_start(any_backend, make_bot, "memoryerror")
    assert death.cause is DeathCause.CRASHED, death
    assert death.exit_code == 1 and death.signal is None
    assert "reported MemoryError" in death.describe()


def test_exit_status_153_is_a_crash_not_a_disk_limit(
    any_backend: Backend, make_bot: MakeBot
) -> None:
    death = _death_at_start(any_backend, make_bot, "exit153")
    assert death.cause is DeathCause.CRASHED, death
    assert death.exit_code == SIGXFSZ_EXIT and death.signal is None
    assert "SIGXFSZ" not in death.describe()


def test_a_real_file_size_breach_is_a_disk_limit(any_backend: Backend, make_bot: MakeBot) -> None:
    death = _death_at_start(any_backend, make_bot, "fsize", fsize_bytes=2 * MiB)
    assert death.cause is DeathCause.FILE_SIZE, death
    assert death.signal == 25  # SIGXFSZ
    assert "no evidence" not in death.describe()


def test_raising_sigxfsz_on_itself_is_a_crash_not_a_disk_limit(
    any_backend: Backend, make_bot: MakeBot
) -> None:
    """Its wait status says SIGXFSZ, as a real breach's does; but no file of its reached the
    file-size limit: a crash, the signal named in the detail."""
    death = _death_at_start(any_backend, make_bot, "raisexfsz")
    assert death.cause is DeathCause.CRASHED, death
    assert death.exit_code == SIGXFSZ_EXIT and death.signal is None
    assert "killed by SIGXFSZ" in death.describe()
    assert "file-size limit of 8388608 bytes" in death.describe()
    assert "kryt-sandbox-status" not in death.log_tail


@pytest.mark.parametrize(
    "how",
    [
        "sparse",  # a file truncated to the limit holds none of its data
        "lowered",  # the kernel's SIGXFSZ, at a limit the bot lowered itself
    ],
)
def test_a_sigxfsz_without_a_file_filled_to_the_limit_is_a_crash(
    any_backend: Backend, make_bot: MakeBot, how: str
) -> None:
    death = _death_at_start(any_backend, make_bot, how, fsize_bytes=2 * MiB)
    assert death.cause is DeathCause.CRASHED, death
    assert death.exit_code == SIGXFSZ_EXIT and death.signal is None
    assert "killed by SIGXFSZ" in death.describe()


def test_the_supervisors_report_is_not_in_the_bots_output(
    any_backend: Backend, make_bot: MakeBot
) -> None:
    """Docker's supervisor reports a signal death on standard error with a secret: the line
    is taken out of what the bot's output shows."""
    death = _death_at_start(any_backend, make_bot, "fsize", fsize_bytes=2 * MiB)
    assert "kryt-sandbox-status" not in death.log_tail
    assert "kryt-sandbox-status" not in death.describe()


def test_address_space_exhaustion_without_the_kernels_word_is_a_crash(
    bwrap_backend: Backend, make_bot: MakeBot
) -> None:
    """Under bwrap a small address-space slack stops the memory hog with a MemoryError long
    before its memory cgroup is full (grpc's threads reserve hundreds of MiB of address
    space): the kernel records no OOM kill and no limit hit, so it is a crash that says
    what the bot reported, not a memory-limit forfeit."""
    from tests.sandbox.test_hostile import stop_and_check_clean, wait_death

    limits = roomy(memory_bytes=128 * MiB, address_space_slack_bytes=512 * MiB)
    try:
        bot = bwrap_backend.start(make_bot("memhog"), limits, "test-as-hog")
    except BotCrashedError as exc:
        death = exc.death
    else:
        try:
            death = wait_death(bot, 240)
        finally:
            stop_and_check_clean(bot)
    assert death is not None
    if death.oom_killed:
        pytest.skip("this host's memory cgroup filled before the address space ran out")
    assert death.cause is DeathCause.CRASHED, death
    assert "reported MemoryError" in death.describe()
