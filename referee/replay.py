"""Re-execute a recorded game through the rules engine and check the stored result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from referee.outcomes import DOUBLE_FORFEIT
from referee.rules import Action, Game, RulesError


@dataclass(frozen=True, slots=True)
class StoredMove:
    """A move as stored: seat, canonical text, and whether the referee played it itself."""

    seat: int
    action: str
    auto: bool = False


@dataclass(frozen=True, slots=True)
class Verification:
    """The outcome of a replay check: ``ok`` plus every discrepancy found."""

    ok: bool
    problems: list[str] = field(default_factory=list)
    game: Game | None = None


def verify(
    *,
    deck: Sequence[str],
    dealer: int,
    moves: Sequence[StoredMove],
    result: str | None,
    end_reason: str,
    turn_limit: int,
    forfeit_seat: int | None = None,
    voided: bool = False,
) -> Verification:
    """Replay ``moves`` from ``deck`` and ``dealer`` and compare with the stored ending.

    ``result`` is ``seat0``, ``seat1``, ``draw`` or None (voided). A forfeited game must
    replay legally up to the forfeit and still be running; a finished game must end exactly
    as stored (winner, reason, automatic final cover).
    """
    problems: list[str] = []
    try:
        game = Game.from_deck(list(deck), dealer, turn_limit=turn_limit)
    except RulesError as exc:
        return Verification(False, [f"stored deal is invalid: {exc}"])
    played = [m for m in moves if not m.auto]
    autos = [m for m in moves if m.auto]
    for number, move in enumerate(played, start=1):
        if game.over:
            problems.append(f"move {number} ({move.action!r}) comes after the end of the game")
            break
        if move.seat != game.to_move:
            problems.append(f"move {number} is recorded for seat {move.seat}, not {game.to_move}")
        try:
            game.play(Action.parse(move.action))
        except RulesError as exc:
            problems.append(f"move {number}: {exc}")
            break
    if voided:
        return Verification(not problems, problems, game)
    if end_reason == DOUBLE_FORFEIT:  # neither bot started: nothing was played
        if played:
            problems.append("moves are recorded for a game neither bot started")
        if result != "draw":
            problems.append(f"a double forfeit is scored as a draw, the record says {result!r}")
        return Verification(not problems, problems, game)
    if forfeit_seat is not None:
        expected = "seat1" if forfeit_seat == 0 else "seat0"
        if result != expected:
            problems.append(f"seat {forfeit_seat} forfeited but the result is {result!r}")
        if game.over:
            problems.append("the game is over by the rules, yet a forfeit is recorded")
        elif game.to_move != forfeit_seat and end_reason != "forfeit":
            problems.append(f"the forfeit is recorded for seat {forfeit_seat}, not to move")
        return Verification(not problems, problems, game)
    if not game.over:
        problems.append("the recorded moves do not finish the game")
        return Verification(False, problems, game)
    replayed = "draw" if game.outcome is None else f"seat{game.outcome}"
    if replayed != result:
        problems.append(f"replay gives {replayed}, the record says {result!r}")
    if game.reason is None or game.reason.value != end_reason:
        reason = game.reason.value if game.reason else None
        problems.append(f"replay ends by {reason!r}, the record says {end_reason!r}")
    final = [f"cover {game.final_cover}"] if game.final_cover else []
    if [m.action for m in autos] != final:
        problems.append(f"automatic final cover {final} but recorded {[m.action for m in autos]}")
    return Verification(not problems, problems, game)
