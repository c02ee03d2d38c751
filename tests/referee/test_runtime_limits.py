"""Limits per runtime, set by the organiser (``[sandbox.runtimes.NAME]``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.tournament.config import ConfigError, TournamentConfig, load_config

MiB = 1024 * 1024


def _config(tmp_path: Path, runtimes: str) -> TournamentConfig:
    path = tmp_path / "t.toml"
    path.write_text(f'bots = ["a", "b"]\n[sandbox]\nmemory_mb = 256\n{runtimes}', "utf-8")
    return load_config(path)


def test_a_runtime_gets_its_own_limits_and_the_others_keep_theirs(tmp_path: Path) -> None:
    config = _config(tmp_path, "[sandbox.runtimes.java]\nmemory_mb = 1024\npids = 200\n")
    assert config.sandbox.limits("java").memory_bytes == 1024 * MiB
    assert config.sandbox.limits("java").pids == 200
    assert config.sandbox.limits("python").memory_bytes == 256 * MiB
    assert config.sandbox.limits().memory_bytes == 256 * MiB
    again = TournamentConfig.from_json(config.to_json())
    assert again.sandbox.limits("java").memory_bytes == 1024 * MiB


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ("[sandbox.runtimes.cobol]\nmemory_mb = 512\n", "cobol"),
        ("[sandbox.runtimes.java]\nbackend = 'docker'\n", "unknown setting"),
        ("[sandbox.runtimes.java]\nmemory_mb = -1\n", "memory_mb"),
        ("[sandbox.runtimes.java]\nmemory_mb = true\n", "memory_mb"),
    ],
)
def test_bad_runtime_limits_are_one_clear_error(tmp_path: Path, table: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        _config(tmp_path, table)
