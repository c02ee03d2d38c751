"""Every setting is checked for type, range and upper bound before anything is stored,
from a file and from flags alike; ``kryt tournament set`` changes are checked the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arena.tournament.config import (
    ConfigError,
    TournamentConfig,
    load_config,
    parse_assignment,
    with_changes,
)

BOTS = 'bots = ["a", "b"]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("turn_limit = true", "turn limit"),
        ("games_per_pair = true", "games per pair"),
        ("games_per_pair = 3000000000", "games per pair"),
        ("games_per_pair = 1000001", "games per pair"),
        ("games_per_pair = 2.5", "games per pair"),
        ("concurrency = 0", "concurrency"),
        ("concurrency = 100000", "concurrency"),
        ("seed = true", "seed"),
        ("seed = -1", "seed"),
        ("name = 123", "name"),
        ('name = "   "', "name"),
        (f'name = "{"x" * 201}"', "name"),
        ("format = 1", "format"),
        ("turn_limit = 0", "turn limit"),
        ("turn_limit = 100000000", "turn limit"),
        ("[time_control]\nmove_seconds = 1e300", "move_seconds"),
        ("[time_control]\nmove_seconds = nan", "move_seconds"),
        ("[time_control]\nmove_seconds = 0", "move_seconds"),
        ("[time_control]\nbank_seconds = true", "bank_seconds"),
        ("[time_control]\ngrace_seconds = -0.5", "grace_seconds"),
        ('[time_control]\nmove_seconds = "1"', "move_seconds"),
        ("[sandbox]\nmemory_mb = -1", "memory_mb"),
        ("[sandbox]\nmemory_mb = 0", "memory_mb"),
        ("[sandbox]\nmemory_mb = 10000000", "memory_mb"),
        ("[sandbox]\nmemory_mb = 256.5", "memory_mb"),
        ("[sandbox]\npids = 2", "pids"),
        ("[sandbox]\npids = 10000000", "pids"),
        ("[sandbox]\ncpus = 0", "cpus"),
        ("[sandbox]\ncpus = inf", "cpus"),
        ("[sandbox]\nnofile = 1", "nofile"),
        ("[sandbox]\ntmpfs_mb = 0", "tmpfs_mb"),
        ("[sandbox]\nfsize_mb = 1000000000", "fsize_mb"),
        ("[sandbox]\nstartup_seconds = 0", "startup_seconds"),
        ("[sandbox]\nstartup_seconds = 1e9", "startup_seconds"),
        ('[sandbox]\nallow_unsafe = "yes"', "allow_unsafe"),
        ("[sandbox]\nbackend = 3", "backend"),
        ("sandbox = 5", "table"),
        ("time_control = 5", "table"),
    ],
)
def test_each_bad_setting_in_a_file_is_one_clear_error(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "t.toml"
    path.write_text(BOTS + text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"memory_mb": 0}, "memory_mb"),
        ({"memory_mb": -1}, "memory_mb"),
        ({"pids": 2}, "pids"),
        ({"turn_limit": True}, "turn limit"),
        ({"games_per_pair": True}, "games per pair"),
        ({"move_seconds": 1e300}, "move_seconds"),
        ({"name": 123}, "name"),
        ({"concurrency": 0}, "concurrency"),
    ],
)
def test_each_bad_flag_is_one_clear_error(flags: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, bots=["a", "b"], **flags)


def test_the_bounds_themselves_are_accepted() -> None:
    config = load_config(
        None,
        bots=["a", "b"],
        games_per_pair=1_000_000,
        memory_mb=32,
        pids=8,
        move_seconds=3600,
        turn_limit=100_000,
    )
    assert config.games_per_pair == 1_000_000 and config.sandbox.limits().pids == 8
    assert TournamentConfig.from_json(config.to_json()) == config


def test_a_stored_config_is_checked_when_read_back() -> None:
    stored = load_config(None, bots=["a", "b"]).to_json()
    stored["sandbox"]["memory_mb"] = -1  # as an older release could store it
    with pytest.raises(ConfigError, match="memory_mb"):
        TournamentConfig.from_json(stored)


def test_set_changes_a_setting_and_checks_the_whole_result() -> None:
    stored = load_config(None, bots=["a", "b"]).to_json()
    stored["sandbox"]["memory_mb"] = -1
    fixed = with_changes(
        stored,
        [parse_assignment("sandbox.memory_mb=512"), parse_assignment("name=spring cup")],
    )
    assert fixed.sandbox.memory_mb == 512 and fixed.name == "spring cup"
    moved = with_changes(fixed.to_json(), [parse_assignment("time_control.move_seconds=0.5")])
    assert moved.time_control.move_ms == 500
    for bad, message in [
        ("sandbox.memory_mb=0", "memory_mb"),
        ("turn_limit=true", "turn limit"),
        ("games_per_pair=4", "cannot change"),
        ("seed=3", "cannot change"),
        ("bots=['x', 'y']", "cannot change"),
        ("colour=red", "unknown setting"),
        ("sandbox.memory=5", "unknown setting"),
        ("memory_mb", "KEY=VALUE"),
    ]:
        with pytest.raises(ConfigError, match=message):
            with_changes(fixed.to_json(), [parse_assignment(bad)])
