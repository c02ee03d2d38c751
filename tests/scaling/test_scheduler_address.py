"""A Dask scheduler address is checked as such before anything is opened or connected: a typo
is bad input (the command line's exit 2, a settings error, a DaskExecutorError), never a
scheduler to go and start."""

from __future__ import annotations

import pytest

from arena.service.settings import LadderSettings, ServiceSettings, SettingsError
from arena.tournament.dask_executor import DaskExecutor, DaskExecutorError
from arena.tournament.scheduler_address import scheduler_address_problem

GOOD = [
    "tcp://127.0.0.1:8786",
    "tcp://scheduler.example:1",
    "tls://10.0.0.5:65535",
    "ws://host:8786",
    "tcp://[::1]:8786",
    "inproc://10.0.0.1/12345/1",
]

BAD = {
    "127.0.0.1:8786": "tcp://HOST:8786",
    "tcp://127.0.0.1": "no port",
    "tcp://127.0.0.1:": "port ''",
    "tcp://127.0.0.1:abc": "port 'abc'",
    "tcp://127.0.0.1:99999": "port '99999'",
    "tcp://127.0.0.1:0": "port '0'",
    "tcp://127.0.0.1:８７８６": "port '８７８６'",  # fullwidth digits: isdigit() but not ASCII
    "tcp://:8786": "no host",
    "tcp://[::1]8786": "no ':PORT'",
    "tcp://[::1": "no ']'",
    "tcp://[::1]": "no port",
    "http://127.0.0.1:8786": "unknown scheme 'http'",
    "tcp://a b:8786": "no host name",
    "tcp://host/path:8786": "no host name",
    "inproc://": "nothing after",
}


@pytest.mark.parametrize("address", GOOD)
def test_well_formed_addresses_pass(address: str) -> None:
    assert scheduler_address_problem(address) is None


@pytest.mark.parametrize("address", sorted(BAD))
def test_each_typo_is_named(address: str) -> None:
    problem = scheduler_address_problem(address)
    assert problem is not None and BAD[address] in problem, problem


@pytest.mark.parametrize("address", ["tcp://127.0.0.1", "tcp://127.0.0.1:abc"])
def test_the_executor_refuses_a_typo_before_connecting(address: str) -> None:
    with pytest.raises(DaskExecutorError, match="not a Dask scheduler address") as caught:
        DaskExecutor(address)
    assert repr(address) in str(caught.value)


def test_the_ladder_settings_refuse_a_typo() -> None:
    ladder = LadderSettings(executor="dask", scheduler="tcp://127.0.0.1:99999")
    with pytest.raises(SettingsError, match=r"ladder\.scheduler 'tcp://127\.0\.0\.1:99999'.*65535"):
        ServiceSettings(ladder=ladder)
