"""Tournament configuration: the example file, flags over file, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.tournament.config import ConfigError, TournamentConfig, load_config
from referee.series import SeriesFormat

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_file_loads_with_paths_relative_to_it() -> None:
    config = load_config(ROOT / "examples" / "tournament.toml")
    assert config.name == "example"
    assert config.bots == tuple(
        str(ROOT / "sdk" / "examples" / n) for n in ("random", "greedy", "mc")
    )
    assert config.time_control.move_seconds == 1.0 and config.sandbox.memory_mb == 256
    assert TournamentConfig.from_json(config.to_json()) == config


def test_flags_override_the_file(tmp_path: Path) -> None:
    config = load_config(
        ROOT / "examples" / "tournament.toml",
        games_per_pair=4,
        format="duplicate",
        move_seconds=0.2,
        backend="process",
        name=None,
    )
    assert config.games_per_pair == 4 and config.format is SeriesFormat.DUPLICATE
    assert config.time_control.move_seconds == 0.2 and config.time_control.bank_seconds == 10.0
    assert config.sandbox.backend == "process" and config.name == "example"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('bots = ["a", "b"]\ngames = 3', "unknown setting"),
        ('bots = ["a", "b"]\ngames_per_pair = 0', "games per pair"),
        ('bots = ["a"]', "at least two bots"),
        ('bots = ["a", "a"]', "listed twice"),
        ('bots = ["a", "b"]\nformat = "swiss"', "swiss"),
        ('bots = ["a", "b"]\nformat = "duplicate"\ngames_per_pair = 3', "even"),
        ('bots = ["a", "b"]\n[time_control]\nmove_seconds = -1', "move_seconds"),
        ('bots = ["a", "b"]\n[sandbox]\nbackend = "vm"', "backend"),
        ('bots = ["a", "b"]\n[sandbox]\nmemory = 5', "unknown setting"),
        ("bots = [1, 2]", "list of strings"),
        ("bots = [", "not valid TOML"),
    ],
)
def test_bad_settings_are_reported_clearly(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.toml")
