"""Views expose exactly the public information; the rules core imports nothing heavy."""

from __future__ import annotations

import ast
import random
import subprocess
import sys
from pathlib import Path

from referee.rules import Card, Game, Suit
from tests.rules.helpers import cards, hand, position

RULES = Path(__file__).resolve().parents[2] / "referee" / "rules"
ALLOWED_IMPORTS = {
    "__future__",
    "collections",
    "dataclasses",
    "enum",
    "operator",
    "random",
    "typing",
}


def test_view_shows_own_hand_counts_and_public_cards_only() -> None:
    game = position(trump="H", mover="6S 7S 8S", other="6C 7C 8C", pile="9D 8D", stock="QS JH")
    view = game.view(0)
    assert view.hand == hand("6S 7S 8S")
    assert view.opponent_count == 3 and view.opponent_known == ()
    assert view.stock_count == 2 and view.face_up == Card.parse("JH")
    assert view.pile[-2:] == tuple(cards("9D 8D"))
    assert view.my_turn and [str(a) for a in view.legal_actions] == ["take"]
    other = game.view(1)
    assert other.legal_actions == () and not other.my_turn
    assert other.hand == hand("6C 7C 8C")


def test_taken_cards_are_public_until_played() -> None:
    game = position(trump="H", mover="6S 7S 8S", other="TD 7D 8C", pile="9D 8D", stock="QS JH")
    game.play("take")
    assert game.view(1).opponent_known == hand("8D")
    assert game.view(0).own_known == hand("8D")
    game.play("cover TD 7D")  # seat 1 draws QS and the face-up JH, which becomes public
    assert game.view(0).opponent_known == hand("JH")
    game.play("cover 8D 6S")  # seat 0 plays the known card: no longer known
    assert game.view(1).opponent_known == ()
    assert game.view(1).hand == hand("8C QS JH")


def test_rules_core_imports_only_the_standard_library_it_needs() -> None:
    for source in RULES.glob("*.py"):
        tree = ast.parse(source.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top == "referee" or top in ALLOWED_IMPORTS, f"{source.name} imports {name}"


def test_importing_the_rules_core_loads_no_heavy_or_io_package() -> None:
    code = "import sys, referee.rules; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.check_output([sys.executable, "-c", code], text=True).split())
    forbidden = {"grpc", "docker", "sqlmodel", "sqlalchemy", "typer", "google", "numpy", "rich"}
    assert not forbidden & {m.split(".")[0] for m in loaded}


def _assert_views_agree_with_properties(game: Game) -> None:
    for seat in (0, 1):
        view = game.view(seat)
        assert view.seat == seat and view.dealer == game.dealer
        assert view.hand == game.hands[seat]
        assert view.pile == game.pile
        assert view.trump is game.trump and type(view.trump) is Suit
        assert view.face_up == game.face_up
        assert view.stock_count == len(game.stock)
        assert view.opponent_count == len(game.hands[1 - seat])
        assert view.opponent_known == game.known_cards(1 - seat)
        assert view.own_known == game.known_cards(seat)
        assert view.to_move == game.to_move
        mine = game.to_move == seat
        assert view.legal_actions == (tuple(game.legal_actions()) if mine else ())
        assert view.history == game.history
        assert view.turn_limit == game.turn_limit
        assert view.over == game.over
        assert view.outcome == game.outcome and view.reason == game.reason
        assert view.final_cover == game.final_cover


def test_every_view_agrees_with_the_games_properties() -> None:
    """Each field of ``Game.view`` is what the game's property of the same meaning says (the
    trump a ``Suit``, the legal actions only for the seat to move), at every step of random
    games (swaps, takes, the end of the stock, wins) and after a draw by final answer."""
    rng = random.Random(2026)
    for number in range(60):
        game = Game.new(f"view-vs-properties-{number}", dealer=number % 2)
        _assert_views_agree_with_properties(game)
        while not game.over:
            game.play(rng.choice(game.legal_actions()))
            _assert_views_agree_with_properties(game)
    drawn = position(trump="H", mover="9D 7C", other="8C", pile="8D")
    _assert_views_agree_with_properties(drawn)
    drawn.play("cover 9D 7C")
    assert drawn.final_cover is not None
    _assert_views_agree_with_properties(drawn)
