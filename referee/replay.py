"""Re-execute a recorded game through the rules engine and check the stored ending."""

from __future__ import annotations

from dataclasses import dataclass, field

from referee.protocol.messages import GameEndReason
from referee.record import GameRecord
from referee.rules import Game, RulesError


@dataclass(frozen=True, slots=True)
class Verification:
    """The outcome of a replay check: ``ok`` plus every discrepancy found."""

    ok: bool
    problems: list[str] = field(default_factory=list)
    game: Game | None = None


def verify(record: GameRecord) -> Verification:
    """Replay ``record``'s moves from its deal and compare with its stored ending.

    A forfeited game must replay legally up to the forfeit, still be running, and have the
    offender to move (unless the offender failed out of turn: a start-up failure or crash
    can happen any time); a finished game must end exactly as stored (winner, reason,
    automatic final cover); a double forfeit has no moves and is a draw.
    """
    if record.ruleset != "default":  # a classic table: replayed by its own engine
        from referee.table import table_problems

        problems = table_problems(record)
        return Verification(not problems, problems, None)
    problems = []
    try:
        game = Game.from_deck(list(record.deck), record.dealer, turn_limit=record.turn_limit)
    except RulesError as exc:
        return Verification(False, [f"stored deal is invalid: {exc}"])
    for number, move in enumerate(record.moves, start=1):
        if game.over:
            problems.append(f"move {number} ({move.action!r}) comes after the end of the game")
            break
        if move.seat != game.to_move:
            problems.append(f"move {number} is recorded for seat {move.seat}, not {game.to_move}")
        try:
            game.play(move.action)
        except RulesError as exc:
            problems.append(f"move {number}: {exc}")
            break
    ending = record.ending
    if ending is GameEndReason.VOID:
        return Verification(not problems, problems, game)
    if ending is GameEndReason.DOUBLE_FORFEIT:
        if record.moves:
            problems.append("moves are recorded for a game neither bot started")
        if record.winner is not None:
            problems.append(f"a double forfeit is a draw, the record names seat {record.winner}")
        return Verification(not problems, problems, game)
    if record.forfeit is not None:
        offender = record.forfeit.seat
        if record.winner != 1 - offender:
            problems.append(f"seat {offender} forfeited but the winner is {record.winner!r}")
        if game.over:
            problems.append("the game is over by the rules, yet a forfeit is recorded")
        elif game.to_move != offender and ending in _ON_MOVE:
            problems.append(f"the {ending.value} is recorded for seat {offender}, not to move")
        return Verification(not problems, problems, game)
    if not game.over:
        problems.append("the recorded moves do not finish the game")
        return Verification(False, problems, game)
    if game.outcome != record.winner:
        problems.append(f"replay gives winner {game.outcome!r}, the record {record.winner!r}")
    if game.reason is None or GameEndReason.from_rules(game.reason) is not ending:
        reason = game.reason.value if game.reason else None
        problems.append(f"replay ends by {reason!r}, the record says {ending.value!r}")
    final = str(game.final_cover) if game.final_cover else None
    if final != record.final_cover:
        problems.append(f"automatic final cover {final!r} but recorded {record.final_cover!r}")
    return Verification(not problems, problems, game)


_ON_MOVE = frozenset(
    {GameEndReason.TIMEOUT, GameEndReason.ILLEGAL_ACTION, GameEndReason.MALFORMED_REPLY}
)
"""Forfeits that only the seat to move can commit (a reply to its own request)."""
