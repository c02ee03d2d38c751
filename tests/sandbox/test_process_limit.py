"""A bot that dies after its sandbox's process limit refused it a process is a process-limit
death (``PROCESS_LIMIT`` in the game record), not an ordinary crash: the bot's cgroup counts
every refusal (``pids.events``). Docker does not report it: there such a bot's ending is
what it does next (a crash or a timeout)."""

from __future__ import annotations

import pytest

from arena.tournament.seats import _VERDICTS
from referee.protocol.messages import GameEndReason
from sandbox.backend import Backend
from sandbox.cgroups import cgroup_layout
from sandbox.death import DeathCause, classify_exit
from sandbox.errors import BotCrashedError
from tests.sandbox.conftest import MakeBot, roomy
from tests.services import require


def test_a_refusal_makes_an_unclean_end_a_process_limit_death() -> None:
    assert classify_exit(1, process_limit_hit=True).cause is DeathCause.PROCESS_LIMIT
    assert classify_exit(-9, process_limit_hit=True).cause is DeathCause.PROCESS_LIMIT
    # A clean exit is the bot's own choice; running out of memory is the stronger verdict.
    assert classify_exit(0, process_limit_hit=True).cause is DeathCause.EXITED
    assert classify_exit(1, oom_killed=True, process_limit_hit=True).cause is DeathCause.OOM
    assert _VERDICTS[DeathCause.PROCESS_LIMIT] is GameEndReason.PROCESS_LIMIT


@pytest.mark.timeout(300)
def test_a_bwrap_bot_refused_a_process_dies_of_the_process_limit(
    bwrap_backend: Backend, make_bot: MakeBot
) -> None:
    layout = cgroup_layout()
    require(not isinstance(layout, str), "per-bot cgroups", str(layout))
    with pytest.raises(BotCrashedError) as caught:
        bwrap_backend.start(make_bot("pidsout"), roomy(pids=16), "t-pidsout")
    death = caught.value.death
    assert death is not None and death.cause is DeathCause.PROCESS_LIMIT, death
    assert "refused after" in death.log_tail
