"""A bot author's review of the SDK: what docs/writing-a-bot.md, docs/protocol.md and
docs/rules.md promise, tried as an author who reads only the docs would try it (a helper
session's review; the defects it found are fixed and their tests kept)."""

from __future__ import annotations

import dataclasses
import os
import random
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from referee.protocol.messages import Clock, DecisionRequest, GameEndReason
from referee.protocol.wire import decode_referee_message, encode_referee_message
from referee.rules import (
    Action,
    ActionKind,
    ClassicGame,
    ClassicView,
    Game,
    InvalidDeckError,
    View,
)
from sdk import Bot, CardTracker, TableTracker, sample_game, sample_table_game
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.random.bot import RandomBot
from sdk.tools import check_bot, play_local
from sdk.tools.local import play_table_local
from sdk.tools.template import new_bot
from tests.sdk.helpers import python_bot

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "writing-a-bot.md"


def _snippets() -> list[str]:
    """The Python code blocks of docs/writing-a-bot.md, in order."""
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def _run_snippet(code: str, tmp_path: Path, name: str) -> dict[str, Any]:
    """Run ``code`` as a module (not as ``__main__``: it would serve) and return its names."""
    path = tmp_path / f"{name}.py"
    path.write_text(code, encoding="utf-8")
    return runpy.run_path(str(path), run_name=name)


def _wire_view(view: View | ClassicView) -> View | ClassicView:
    """``view`` as a bot on the SDK receives it: encoded by the referee, decoded lazily."""
    request = DecisionRequest(request_id=7, game_number=1, view=view, clock=Clock(1000, 10_000))
    decoded = decode_referee_message(encode_referee_message(request), lazy=True)
    assert isinstance(decoded, DecisionRequest)
    return decoded.view


def _a_view_in_play(seed: int = 5) -> View:
    """The mover's view after the first action of a seeded game."""
    game = Game.new(seed=seed, dealer=0)
    game.play(game.legal_actions()[0])
    seat = game.to_move
    assert seat is not None
    return game.view(seat)


# --------------------------------------------------------------------------- the guide's code


def test_the_guides_python_snippets_run_and_play(tmp_path: Path) -> None:
    snippets = _snippets()
    assert len(snippets) == 3, "the guide's Python examples changed: review this test"
    my_bot = _run_snippet(snippets[0], tmp_path, "snippet_bot")["MyBot"]
    both_bot = _run_snippet(snippets[1], tmp_path, "snippet_both")["BothBot"]
    result = play_local(my_bot(), both_bot(), games=4, seed=3)
    assert len(result.games) == 4 and not result.forfeits
    table = play_table_local([both_bot(), both_bot(), both_bot()], games=2, seed=3)
    assert len(table.games) == 2
    assert not [g for g in table.games.values() if g.forfeit is not None]
    # The hooks fragment continues the first example (its imports, and an act to be a bot).
    hooks = (
        "from referee.rules import Action, View\nfrom sdk import Bot\n\n"
        + snippets[2]
        + "\n    def act(self, view: View) -> Action:\n        return view.legal_actions[0]\n"
    )
    hooked = _run_snippet(hooks, tmp_path, "snippet_hooks")["MyBot"]()
    assert isinstance(hooked, Bot) and (hooked.name, hooked.version) == ("my-bot", "0.2.0")
    assert len(play_local(hooked, GreedyBot(), games=2, seed=1).games) == 2


# --------------------------------------------------------------------------- simulator vs referee


def test_games_sampled_from_wire_views_are_the_referees_game() -> None:
    """A view as the bot receives it over gRPC, determinized, gives the same view back and
    the same legal actions the referee offers, at every decision, swaps and takes included."""
    swaps = takes = 0
    for seed in range(40):
        game = Game.new(seed=seed, dealer=seed % 2)
        rng = random.Random(seed)
        while not game.over:
            seat = game.to_move
            assert seat is not None
            view = game.view(seat)
            received = _wire_view(view)
            assert isinstance(received, View) and received == view
            sampled = sample_game(received, rng)
            assert sampled.view(seat) == view
            assert sampled.legal_actions() == list(view.legal_actions)
            played = game.play_random(rng)
            swaps += played.swap
            takes += played.kind is ActionKind.TAKE
    assert swaps > 0 and takes > 0


def test_table_games_sampled_from_wire_views_are_the_referees_game() -> None:
    for seed in range(24):
        players = 2 + seed % 3
        game = Game.new(seed=seed, dealer=seed % players, players=players, ruleset="classic")
        assert isinstance(game, ClassicGame)
        rng = random.Random(seed)
        while not game.over:
            seat = game.to_move
            assert seat is not None
            view = game.view(seat)
            received = _wire_view(view)
            assert isinstance(received, ClassicView) and received == view
            sampled = sample_table_game(received, rng)
            assert sampled.view(seat) == view
            assert sampled.legal_actions() == list(view.legal_actions)
            game.play(rng.choice(game.legal_actions()))


def test_tracker_deductions_hold_against_the_real_hands() -> None:
    """The documented deductions: with no stock card face down the opponent surely holds
    every unseen card (exactly his hand), with none of his cards unknown he may hold only
    his known ones; takes, swaps and the end of the stock included."""
    deduced_holds = deduced_possible = 0
    for seed in range(60):
        game = Game.new(seed=seed, dealer=seed % 2)
        rng = random.Random(1000 + seed)
        while not game.over:
            for seat in (0, 1):
                tracker = CardTracker.from_view(game.view(seat))
                real = frozenset(game.hands[1 - seat])
                assert tracker.opponent_surely_holds() <= real <= tracker.possible_opponent_cards()
                if tracker.stock_hidden_count == 0:
                    deduced_holds += 1
                    assert tracker.opponent_surely_holds() == real
                if tracker.opponent_hidden_count == 0:
                    deduced_possible += 1
                    assert tracker.possible_opponent_cards() == real
            game.play_random(rng)
    assert deduced_holds > 0 and deduced_possible > 0


def test_table_tracker_deductions_hold_against_the_real_hands() -> None:
    for seed in range(30):
        players = 2 + seed % 3
        game = Game.new(seed=seed, dealer=seed % players, players=players, ruleset="classic")
        assert isinstance(game, ClassicGame)
        rng = random.Random(seed)
        while not game.over:
            for seat in range(players):
                view = game.view(seat)
                tracker = TableTracker.from_view(view)
                for other in range(players):
                    real = frozenset(game.hands[other])
                    assert tracker.surely_holds(other) <= real <= tracker.possible_cards(other)
                    if view.out[other]:
                        assert tracker.possible_cards(other) == frozenset()
            game.play(rng.choice(game.legal_actions()))


def test_game_from_view_refuses_counts_that_do_not_add_up_with_invalid_deck_error() -> None:
    view = _a_view_in_play()
    bad = dataclasses.replace(view, opponent_count=view.opponent_count + 5)
    with pytest.raises(InvalidDeckError):
        Game.from_view(bad, [], [])


def test_sample_game_refuses_an_impossible_view_with_the_documented_error() -> None:
    # docs/writing-a-bot.md, Determinization: "A view no game can reach (edited by hand ...)
    # is refused with a typed error (InvalidViewError, DeckTypeError: both InvalidDeckError)."
    view = _a_view_in_play()
    bad = dataclasses.replace(view, opponent_count=view.opponent_count + 5)
    with pytest.raises(InvalidDeckError):
        sample_game(bad, random.Random(1))


def test_sample_table_game_refuses_an_impossible_view_with_the_documented_error() -> None:
    game = Game.new(seed=5, dealer=0, players=3, ruleset="classic")
    game.play(game.legal_actions()[0])
    seat = game.to_move
    assert seat is not None
    view = game.view(seat)
    assert isinstance(view, ClassicView)
    bad = dataclasses.replace(view, hand_sizes=tuple(n + 1 for n in view.hand_sizes))
    with pytest.raises(InvalidDeckError):
        sample_table_game(bad, random.Random(1))


# --------------------------------------------------------------------------- play_local vs arena


class _HugeReplyBot(Bot):
    """Replies with a legal action padded with whitespace beyond the 64 KiB reply limit."""

    name = "huge"
    version = "1.0.0"

    def act(self, view: View) -> str:
        return str(view.legal_actions[0]) + " " * 70_000


def test_the_arena_forfeits_a_reply_over_64_kib(tmp_path: Path) -> None:
    folder = python_bot(
        tmp_path / "huge",
        "huge",
        "1.0.0",
        "from sdk import Bot, serve\n\n\nclass B(Bot):\n    def act(self, view):\n"
        "        return str(view.legal_actions[0]) + ' ' * 70000\n\n\n"
        "if __name__ == '__main__':\n    serve(B())\n",
    )
    report = check_bot(folder, games=1)
    assert not report.ok
    assert [p.kind for p in report.problems][:1] == ["malformed reply"], report.format()


def test_play_local_forfeits_a_reply_over_64_kib_as_the_arena_does() -> None:
    result = play_local(_HugeReplyBot(), GreedyBot(), games=1, seed=0)
    endings = [game.ending for game in result.games.values()]
    assert endings == [GameEndReason.MALFORMED_REPLY]


# --------------------------------------------------------------------------- faulty bots


def test_the_checker_names_a_wrong_type_and_a_malformed_reply(tmp_path: Path) -> None:
    body = (
        "from sdk import Bot, serve\n\n\nclass B(Bot):\n    def act(self, view):\n"
        "        return {reply}\n\n\nif __name__ == '__main__':\n    serve(B())\n"
    )
    wrong = python_bot(tmp_path / "wrong", "wrong", "1.0.0", body.format(reply="42"))
    report = check_bot(wrong, games=1)
    assert not report.ok
    assert any("act() returned 42" in p.detail for p in report.problems), report.format()
    fold = python_bot(tmp_path / "fold", "fold", "1.0.0", body.format(reply="'fold'"))
    report = check_bot(fold, games=1)
    assert [p.kind for p in report.problems] == ["malformed reply"], report.format()
    assert "'fold'" in report.problems[0].detail


# --------------------------------------------------------------------------- templates


def _run_generated_legality_test(folder: Path) -> subprocess.CompletedProcess[str]:
    """Run the generated ``test_plays_only_legal_actions`` and print how it failed."""
    script = (
        "import test_bot\n"
        "try:\n"
        "    test_bot.test_plays_only_legal_actions()\n"
        "except BaseException as exc:\n"
        "    print('FAILED WITH', type(exc).__name__, exc)\n"
        "else:\n"
        "    print('PASSED')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=folder,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_generated_test_passes_for_the_generated_bot(tmp_path: Path) -> None:
    done = _run_generated_legality_test(new_bot("fine", tmp_path))
    assert done.stdout.strip() == "PASSED", done.stdout + done.stderr


def test_the_generated_test_says_why_a_bot_forfeits(tmp_path: Path) -> None:
    folder = new_bot("foldbot", tmp_path)
    code = (folder / "bot.py").read_text(encoding="utf-8")
    edited = code.replace("return greedy_action(view.legal_actions, view.trump)", 'return "fold"')
    assert edited != code
    (folder / "bot.py").write_text(edited, encoding="utf-8")
    done = _run_generated_legality_test(folder)
    assert "FAILED WITH AssertionError" in done.stdout, done.stdout + done.stderr
    assert "fold" in done.stdout


def _a_position_where_only_swaps_cover() -> list[str]:
    """Legal actions (canonical text) of a real position: nothing covers without the swap
    of the trump six, a swap and a cover does."""
    game = Game.new(seed=1, dealer=0)
    history = ["lead 8C", "cover TH 9S", "cover KS AD", "take", "cover 7H 6H", "take", "take"]
    for action in history:
        game.play(action)
    legal = [str(a) for a in game.legal_actions()]
    assert legal[:2] == ["take", "swap take"]
    assert any(Action.parse(a).kind is ActionKind.COVER_AND_LEAD for a in legal)
    return legal


def test_the_node_starter_takes_only_when_nothing_else_is_legal(tmp_path: Path) -> None:
    # docs/protocol.md: "small bots that play their first legal action (taking only when
    # nothing else is legal)"; the starters' bot.toml: "taking only when it must".
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    legal = _a_position_where_only_swaps_cover()
    folder = new_bot("starter-js", tmp_path, language="node")
    source = (folder / "bot.js").read_text(encoding="utf-8")
    found = re.search(r"function choose\(view\) \{.*?\n\}", source, re.S)
    assert found is not None, "the node starter's choose() moved: review this test"
    script = f"{found.group(0)}\nprocess.stdout.write(choose({{legal_actions: {legal!r}}}));"
    chosen = subprocess.run(
        [node, "-e", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert chosen in legal
    assert Action.parse(chosen).kind is not ActionKind.TAKE, chosen


def test_the_generated_node_starter_is_valid_javascript_naming_its_bot(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    folder = new_bot("starter-js", tmp_path, language="node")
    assert '"starter-js"' in (folder / "bot.js").read_text(encoding="utf-8")
    subprocess.run([node, "--check", str(folder / "bot.js")], check=True, timeout=60)


def test_random_bot_from_the_guide_is_beaten_by_greedy() -> None:
    """The guide's claim the template's test relies on: greedy beats random."""
    result = play_local(GreedyBot(), RandomBot(seed=4), games=20, seed=4)
    assert not result.forfeits
    assert result.points(0) > 10, str(result)
