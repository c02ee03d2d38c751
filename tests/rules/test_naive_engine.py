"""The benchmarks' naive yardstick engine agrees with the real engine, and the benchmark runs.

``benchmarks/rules_api.py`` compares the engine's public API with ``benchmarks/naive_engine.py``;
that comparison is honest only if the naive engine plays the same game: same legal actions in
the same order in every position, same outcomes.
"""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

from referee.rules import Game, shuffled_deck

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


naive_engine = load("naive_engine")


def test_naive_engine_agrees_with_the_engine_on_random_games() -> None:
    rng = random.Random(2024)
    reasons: Counter[str] = Counter()
    swaps = 0
    for seed in range(150):
        # Every fifth game gets a short turn limit so that the limit's draw is exercised too.
        limit = 1000 if seed % 5 else rng.randrange(20, 120)
        deck = shuffled_deck(seed)
        game = Game.from_deck(deck, seed % 2, turn_limit=limit)
        naive = naive_engine.NaiveGame.deal([str(c) for c in deck], seed % 2, turn_limit=limit)
        while not game.over:
            legal = [str(a) for a in game.legal_actions()]
            assert naive.legal_actions() == legal, (seed, len(game.history), repr(game))
            assert not naive.over
            action = rng.choice(legal)
            swaps += action.startswith("swap")
            game.play(action)
            naive.play(action)
            for seat in (0, 1):
                held = sorted(naive.hands[seat], key=naive_engine.deck_position)
                assert held == [str(c) for c in game.hands[seat]]
            assert naive.pile == [str(c) for c in game.pile]
            assert naive.stock == [str(c) for c in game.stock]
        assert game.reason is not None
        assert naive.over and naive.legal_actions() == []
        assert (naive.winner, naive.reason) == (game.outcome, game.reason.value), seed
        assert naive.history == [str(a) for a in game.history]
        reasons[game.reason.value] += 1
    # The games above really cover every way a game ends, and the swap of the trump six.
    assert set(reasons) == {"out", "draw by final answer", "turn limit"}, reasons
    assert swaps > 0


def test_naive_engine_rejects_what_the_engine_rejects() -> None:
    deck = [str(c) for c in shuffled_deck(8)]
    naive = naive_engine.NaiveGame.deal(deck, 0)
    game = Game.from_deck(deck, 0)
    for text in ("take", f"cover {deck[0]} {deck[2]}", f"lead {deck[1]}"):
        assert not game.is_legal(text)
        try:
            naive.play(text)
        except ValueError as exc:
            assert repr(text) in str(exc)
        else:
            raise AssertionError(f"the naive engine accepted {text!r}")
    assert naive.history == [] and naive.pile == []


def test_the_rules_api_benchmark_runs_and_reports_both_ratios() -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "rules_api.py"),
            "--games",
            "6",
            "--naive-games",
            "3",
            "--rounds",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # The script exits non-zero when the three loops did not play the same games.
    assert result.returncode == 0, result.stderr
    lines = {line.split("  ")[0]: line for line in result.stdout.splitlines()}
    assert {"public/internal", "public/naive"} <= set(lines), result.stdout
    for key in ("public/internal", "public/naive"):
        ratio = float(lines[key].split()[1])
        assert ratio > 0, lines[key]
    assert "games/s" in result.stdout


def test_the_rules_api_benchmark_loops_play_identical_games() -> None:
    rules_api = load("rules_api")
    internal = rules_api.internal(12, 5)
    assert rules_api.public(12, 5) == internal
    assert rules_api.naive(12, 5) == internal
    assert all(played > 0 for played, _, _ in internal)
