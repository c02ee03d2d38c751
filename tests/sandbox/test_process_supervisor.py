"""The process backend's supervisor: what a bot orphans stays in its tree and dies with it.

The process backend contains nothing (docs/sandbox.md), but a careless bot that leaves a
daemonized helper behind must not leave it running after its game: the launcher's
supervisor, a child subreaper, adopts such orphans, kills them when the bot ends on its own,
and ends with the bot's own status.
"""

from __future__ import annotations

import signal
import time
import uuid

import pytest

from sandbox.backend import Backend
from sandbox.death import DeathCause
from tests.sandbox.conftest import MakeBot, roomy
from tests.sandbox.procs import bot_processes, survivors
from tests.sandbox.test_hostile import PATIENT, marked_processes, report, wait_death

pytestmark = pytest.mark.timeout(300)


def wait_marked(marker: str) -> list[int]:
    """The grandchild's pids, once it has started (late on a busy machine)."""
    deadline = time.monotonic() + PATIENT
    while not (found := marked_processes(marker)):
        assert time.monotonic() < deadline, "the grandchild never started"
        time.sleep(0.1)
    return found


def unique_marker() -> str:
    """A marker no other test's grandchild carries (tests run at once under xdist)."""
    return f"kryt-daemonexit-{uuid.uuid4().hex}"


def test_a_daemonized_grandchild_is_stopped_with_its_bot(
    process_backend: Backend, make_bot: MakeBot
) -> None:
    marker = unique_marker()
    bot = process_backend.start(
        make_bot("daemonexit", {"marker.txt": marker}), roomy(), "test-pdaemon"
    )
    try:
        grandchild = wait_marked(marker)
        # Re-parented to the supervisor, not to init: still in the bot's tree.
        processes = bot_processes(bot)
        assert set(grandchild) <= set(processes)
    finally:
        bot.stop()
    assert survivors(processes) == []
    assert marked_processes(marker) == []
    death = bot.death()
    assert death is not None and death.cause is DeathCause.STOPPED


def test_a_bot_ending_on_its_own_takes_its_daemon_along(
    process_backend: Backend, make_bot: MakeBot
) -> None:
    marker = unique_marker()
    folder = make_bot("daemonexit", {"marker.txt": marker})
    bot = process_backend.start(folder, roomy(), "test-pdaemonexit")
    try:
        assert report(bot)["daemonized"] is True
        wait_marked(marker)
        death = wait_death(bot, PATIENT)
        # The supervisor kills and reaps the orphans before it exits: gone already.
        assert marked_processes(marker) == []
        assert death.cause is DeathCause.CRASHED
        assert death.exit_code == 3  # the bot's own status, passed on
    finally:
        bot.stop()


def test_a_bot_killed_by_a_signal_is_reported_with_that_signal(
    process_backend: Backend, make_bot: MakeBot
) -> None:
    marker = unique_marker()
    folder = make_bot("daemonexit", {"marker.txt": marker, "how.txt": "signal"})
    bot = process_backend.start(folder, roomy(), "test-pdaemonsignal")
    try:
        report(bot)
        wait_marked(marker)
        death = wait_death(bot, PATIENT)
        assert marked_processes(marker) == []
        assert death.cause is DeathCause.SIGNALED
        assert death.signal == signal.SIGTERM
    finally:
        bot.stop()
