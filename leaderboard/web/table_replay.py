"""Per-step states of a recorded classic-table game (2-4 seats), for the replay viewer.

As for the default game (:mod:`leaderboard.web.replay`), every state is computed here by
replaying the stored actions through the rules engine (:class:`referee.rules.ClassicGame`);
the page's script only draws. Step 0 is the deal; step ``i`` the state after action ``i``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from referee.rules import CLASSIC_TURN_LIMIT, Card, ClassicGame, RulesError
from sandbox.death import printable


def _cards(cards: Sequence[Card]) -> list[str]:
    return [c.text for c in cards]


def _snapshot(
    game: ClassicGame, index: int, seat: int | None, move: Mapping[str, Any] | None
) -> dict[str, Any]:
    seconds = None if move is None else move.get("seconds")
    discard = game.discard
    last_trick = []
    if move is not None and str(move.get("action", "")).startswith("cover"):
        # The trick just covered: its led and covering cards are the discard's last ones.
        last_trick = _cards(discard[-2 * (str(move["action"]).count(":")) :])
    return {
        "index": index,
        "seat": seat,
        "action": None if move is None else printable(str(move.get("action"))),
        "seconds": float(seconds) if isinstance(seconds, int | float) else None,
        "hands": [_cards(h) for h in game.hands],
        "known": [_cards(game.known_cards(s)) for s in range(game.players)],
        "out": list(game.out),
        "led": _cards(game.led),
        "covered": last_trick,
        "discard": len(discard),
        "stock": len(game.stock),
        "face_up": None if game.face_up is None else game.face_up.text,
        "leader": game.leader,
        "defender": game.defender,
        "to_move": game.to_move,
        "over": game.over,
    }


def replay_table_game(
    deck: Sequence[str],
    dealer: int,
    players: int,
    actions: Sequence[Mapping[str, Any]],
    *,
    turn_limit: int = CLASSIC_TURN_LIMIT,
) -> dict[str, Any]:
    """The JSON-ready replay of a table game: trump, dealer, seats, steps, and ``error`` when
    a stored action could not be replayed (the steps stop before it). Never raises."""
    limit = max(turn_limit, len(actions), 1)
    try:
        game = ClassicGame.from_deck(list(deck), dealer, players=players, turn_limit=limit)
    except RulesError as exc:
        return {
            "table": True,
            "trump": "?",
            "dealer": dealer,
            "players": players,
            "steps": [],
            "error": f"cannot deal this deck: {exc}",
        }
    steps = [_snapshot(game, 0, None, None)]
    error = None
    for i, move in enumerate(actions, start=1):
        expected = game.to_move
        try:
            game.play(str(move.get("action")))
        except RulesError as exc:
            error = f"action {i} could not be replayed: {exc}"
            break
        if move.get("seat") != expected:
            error = f"action {i} is stored for seat {move.get('seat')} but {expected} was to move"
            break
        steps.append(_snapshot(game, i, expected, move))
    return {
        "table": True,
        "trump": game.trump.letter,
        "dealer": dealer,
        "players": players,
        "steps": steps,
        "error": error,
        "rules_loser": game.loser if game.over else None,
        "rules_reason": game.reason.value if game.reason is not None else None,
    }
