"""Deals no bot can predict: secret seeds from the CSPRNG, a published commitment, and a
verification that every deal follows from the committed seed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from arena.db import get_tournament, open_database, series_of_tournament
from arena.tournament.config import load_config
from arena.tournament.runner import create, series_seed
from arena.tournament.seeds import commitment, deal_problems, draw_seed
from kryt.cli import main
from kryt.errors import ExitCode
from referee.rules import Game
from referee.series import game_deck

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"


def _tournament(tmp_path: Path, name: str, **settings: object) -> tuple[int, int, int, int]:
    """(tournament seed, series seed, submission a, submission b) of a new tournament."""
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    config = load_config(
        None,
        name=name,
        bots=[str(EXAMPLES / "random"), str(EXAMPLES / "greedy")],
        games_per_pair=2,
        backend="process",
        **settings,
    )
    tid = create(config, db=db, store=tmp_path / "store")
    with db.read_session() as session:
        tournament = get_tournament(tid, session=session)
        (series,) = series_of_tournament(tid, session=session)
        assert tournament.config["seed_commitment"] == commitment(tournament.seed)
        return tournament.seed, series.seed, series.submission_a_id, series.submission_b_id


def _first_view_attack(first_cards: tuple[str, ...]) -> int | None:
    """What a bot could try from its first view: small tournament seeds and submission ids
    through the arena's own public functions. The series seed it found, if any."""
    for tournament_seed in range(0, 21):
        for a in range(1, 21):
            for b in range(1, 21):
                if a == b:
                    continue
                candidate = series_seed(tournament_seed, a, b)
                deck = tuple(str(c) for c in game_deck(candidate, 1))
                if deck[:3] == first_cards[:3] and deck[6] == first_cards[6]:
                    return candidate
    return None


def test_the_attack_works_on_a_fixed_small_seed_and_fails_under_the_defaults(
    tmp_path: Path,
) -> None:
    fixed_seed, fixed_series, _, _ = _tournament(tmp_path, "fixed", seed=1)
    assert fixed_seed == 1
    deck = tuple(str(c) for c in game_deck(fixed_series, 1))
    assert _first_view_attack(deck) == fixed_series  # a fixed small seed is predictable
    _, secret_series, _, _ = _tournament(tmp_path, "secret")
    deck = tuple(str(c) for c in game_deck(secret_series, 1))
    assert _first_view_attack(deck) is None


def test_default_seeds_are_drawn_fresh_and_large() -> None:
    seeds = {draw_seed() for _ in range(50)}
    assert len(seeds) == 50 and max(seeds) > 2**40 and all(0 <= s < 2**62 for s in seeds)


def test_a_deal_that_does_not_follow_from_the_committed_seed_is_found() -> None:
    seed = 123456789
    a, b = 3, 4
    good_series = series_seed(seed, a, b)
    deck = tuple(str(c) for c in game_deck(good_series, 1))

    def check(deck: tuple[str, ...], stored: str) -> list[str]:
        return deal_problems(
            tournament_seed=seed,
            stored_commitment=stored,
            series_seed=good_series,
            expected_series_seed=good_series,
            series_format="standard",
            games_planned=4,
            number=1,
            deck=deck,
        )

    assert check(deck, commitment(seed)) == []
    other = tuple(str(c) for c in Game.new(seed=99).deck or ())
    problems = check(other, commitment(seed))
    assert problems and "deal" in problems[0]
    problems = check(deck, commitment(seed + 1))
    assert problems and "commitment" in problems[0]


def test_replay_verify_checks_the_seed_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(
        ["tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
         "--games", "2", "--backend", "process", "--name", "seeded"]
    )  # fmt: skip
    assert code == 0
    capsys.readouterr()
    assert main(["replay", "1", "--verify"]) == 0
    out = capsys.readouterr().out
    assert "deal follows from the tournament's seed" in out and "commitment" in out
    with sqlite3.connect(tmp_path / "kryt.db") as conn:
        conn.execute("update tournaments set seed = seed + 1")
    assert main(["replay", "1", "--verify"]) == ExitCode.FAILED
    out = capsys.readouterr().out
    assert "commitment" in out and "series seed" in out


def test_changing_a_setting_keeps_the_seed_commitment(tmp_path: Path) -> None:
    from arena.tournament.service import change_settings

    seed, _, _, _ = _tournament(tmp_path, "kept")
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    change_settings(1, ["sandbox.memory_mb=512"], db=db)
    with db.read_session() as session:
        tournament = get_tournament(1, session=session)
        assert tournament.config["sandbox"]["memory_mb"] == 512
        assert tournament.config["seed_commitment"] == commitment(seed)
