"""Per-step states of a recorded game, computed with the rules engine for the replay viewer.

The viewer's JavaScript only draws: every state it shows (both hands, which cards in them are
public, the pile, the stock count, the face-up card) is computed here by replaying the stored
actions through :class:`referee.rules.Game`. Step 0 is the deal; step ``i`` is the state
after the ``i``-th stored action.

The referee stores the automatic final cover of a drawn game as an extra action marked
``auto``. The engine plays that cover itself as part of the last lead, so it is not replayed;
instead the last lead's step shows the pile before the cover and the ``auto`` step shows the
engine's final state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from referee.rules import DEFAULT_TURN_LIMIT, Card, Game, RulesError
from sandbox.death import printable


@dataclass(frozen=True, slots=True)
class Step:
    """The table after one action (or the deal, for step 0)."""

    index: int
    seat: int | None
    """Who acted (None for the deal)."""
    action: str | None
    seconds: float | None
    auto: bool
    hands: tuple[tuple[str, ...], tuple[str, ...]]
    known: tuple[tuple[str, ...], tuple[str, ...]]
    """The cards of each hand that are public (taken from the pile, the face-up card)."""
    pile: tuple[str, ...]
    """Bottom to top."""
    stock: int
    face_up: str | None
    to_move: int | None
    over: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what the viewer's script reads)."""
        return {
            "index": self.index,
            "seat": self.seat,
            "action": self.action,
            "seconds": self.seconds,
            "auto": self.auto,
            "hands": [list(h) for h in self.hands],
            "known": [list(k) for k in self.known],
            "pile": list(self.pile),
            "stock": self.stock,
            "face_up": self.face_up,
            "to_move": self.to_move,
            "over": self.over,
        }


@dataclass(frozen=True, slots=True)
class Replay:
    """Every step of a game, the trump, and why the replay stopped early (if it did)."""

    trump: str
    """Suit letter: C, D, H or S."""
    dealer: int
    steps: list[Step]
    error: str | None = None
    """Set when a stored action could not be replayed; the steps stop before it."""
    rules_outcome: int | None = None
    rules_reason: str | None = None
    """The rules' end reason of the replayed game (None if it did not end by the rules, e.g.
    a forfeit or a voided game)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "trump": self.trump,
            "dealer": self.dealer,
            "error": self.error,
            "rules_outcome": self.rules_outcome,
            "rules_reason": self.rules_reason,
            "steps": [s.to_dict() for s in self.steps],
        }


_NAMES = {card: str(card) for card in Card.all()}


def _cards(cards: Sequence[Card]) -> tuple[str, ...]:
    return tuple(_NAMES[c] for c in cards)


def _snapshot(
    game: Game, index: int, seat: int | None, move: Mapping[str, Any] | None, auto: bool
) -> Step:
    hands = game.hands
    return Step(
        index=index,
        seat=seat,
        # Shown by the page's script: made printable like every bot text (an imported
        # action is canonical since imports check it, but older imports did not).
        action=None if move is None else printable(str(move.get("action"))),
        seconds=None if move is None else _seconds(move.get("seconds")),
        auto=auto,
        hands=(_cards(hands[0]), _cards(hands[1])),
        known=(_cards(game.known_cards(0)), _cards(game.known_cards(1))),
        pile=_cards(game.pile),
        stock=len(game.stock),
        face_up=None if game.face_up is None else str(game.face_up),
        to_move=game.to_move,
        over=game.over,
    )


def _seconds(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _before_final_cover(step: Step, cover: str, previous: Step) -> Step:
    """``step`` (the final lead) as it stood before the referee's automatic cover."""
    answerer = 1 - (step.seat if step.seat is not None else 0)
    hands = list(step.hands)
    hands[answerer] = (cover,)
    known = list(step.known)
    # The answerer's hand did not change with the lead, so neither did what was public of it.
    known[answerer] = tuple(c for c in previous.known[answerer] if c == cover)
    return Step(
        index=step.index,
        seat=step.seat,
        action=step.action,
        seconds=step.seconds,
        auto=False,
        hands=(hands[0], hands[1]),
        known=(known[0], known[1]),
        pile=step.pile[:-1],
        stock=step.stock,
        face_up=step.face_up,
        to_move=answerer,
        over=False,
    )


def replay_game(
    deck: Sequence[str],
    dealer: int,
    actions: Sequence[Mapping[str, Any]],
    *,
    turn_limit: int = DEFAULT_TURN_LIMIT,
    final_cover: str | None = None,
) -> Replay:
    """Replay stored ``actions`` (``{seat, action, seconds}``) from the deal; ``final_cover``
    is the stored automatic final cover of a drawn game, shown as the referee's last step.

    Never raises for bad stored data: a deck the engine refuses gives a replay with no steps
    and ``error`` set; an action it refuses ends the steps there with ``error`` set.
    """
    # The stored actions are the truth of what happened; a turn limit lower than their
    # count would end the replayed game early, so never use one below it.
    limit = max(turn_limit, len(actions), 1)
    try:
        game = Game.from_deck(list(deck), dealer, turn_limit=limit)
    except RulesError as exc:
        return Replay(trump="?", dealer=dealer, steps=[], error=f"cannot deal this deck: {exc}")
    trump = game.trump.letter
    steps = [_snapshot(game, 0, None, None, False)]
    error = None
    for i, move in enumerate(actions, start=1):
        seat = move.get("seat")
        seat = seat if seat in (0, 1) else None
        expected = game.to_move
        try:
            game.play(str(move.get("action")))
        except RulesError as exc:
            error = f"action {i} could not be replayed: {exc}"
            break
        if seat is not None and expected is not None and seat != expected:
            error = f"action {i} is stored for seat {seat} but seat {expected} was to move"
            break
        steps.append(_snapshot(game, i, expected, move, False))
    rules_cover = str(game.final_cover) if game.over and game.final_cover else None
    if error is None and rules_cover != final_cover:
        error = (
            f"the stored automatic final cover is {final_cover!r}, the rules give {rules_cover!r}"
        )
    elif error is None and rules_cover is not None and len(steps) >= 2:
        answerer = 1 - (steps[-1].seat if steps[-1].seat is not None else 0)
        steps[-1] = _before_final_cover(steps[-1], rules_cover, steps[-2])
        auto = {"action": f"cover {rules_cover}", "seconds": None}
        steps.append(_snapshot(game, len(steps), answerer, auto, True))
    return Replay(
        trump=trump,
        dealer=dealer,
        steps=steps,
        error=error,
        rules_outcome=game.outcome if game.over else None,
        rules_reason=game.reason.value if game.reason is not None else None,
    )


# The game page embeds the steps packed: a static export stores one page per game, and the
# per-step states repeat almost everything from one step to the next. Each packed step keeps
# only the fields that changed since the previous step, under one-letter keys, and writes a
# list of cards as one string of two-character codes ("6HTSAC"). ``unpack_steps`` (and the
# viewer's JavaScript) restore the full steps of ``Replay.to_dict()``.
_PACK_KEYS = {
    "seat": "s",
    "action": "a",
    "seconds": "t",
    "auto": "u",
    "pile": "p",
    "stock": "n",
    "face_up": "f",
    "to_move": "m",
    "over": "o",
}
_PER_SEAT = {"hands": "h", "known": "k"}
"""Card lists per seat, packed as ``h0``, ``h1``, ``k0``, ``k1`` (usually one changes)."""


def _split_cards(text: str) -> list[str]:
    return [text[i : i + 2] for i in range(0, len(text), 2)]


def pack_steps(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The steps of ``Replay.to_dict()["steps"]``, each with only what changed since the
    previous one (the first one whole), cards as strings of two-character codes."""
    packed: list[dict[str, Any]] = []
    previous: Mapping[str, Any] = {}
    for step in steps:
        changes: dict[str, Any] = {}
        for key, short in _PACK_KEYS.items():
            if key not in previous or previous[key] != step[key]:
                changes[short] = "".join(step[key]) if key == "pile" else step[key]
        for key, short in _PER_SEAT.items():
            for seat in (0, 1):
                if key not in previous or previous[key][seat] != step[key][seat]:
                    changes[f"{short}{seat}"] = "".join(step[key][seat])
        packed.append(changes)
        previous = step
    return packed


def unpack_steps(packed: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The full steps from :func:`pack_steps`' output."""
    steps: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for index, changes in enumerate(packed):
        current = dict(current)
        for key, short in _PACK_KEYS.items():
            if short in changes:
                current[key] = _split_cards(changes[short]) if key == "pile" else changes[short]
        for key, short in _PER_SEAT.items():
            pair = list(current.get(key, [[], []]))
            for seat in (0, 1):
                if f"{short}{seat}" in changes:
                    pair[seat] = _split_cards(changes[f"{short}{seat}"])
            current[key] = pair
        steps.append({"index": index, **current})
    return steps
