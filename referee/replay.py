"""Re-execute a recorded game through the rules engine and check the stored ending, and
run its recorded move times through the recorded clock."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

from referee.protocol.messages import GameEndReason
from referee.record import ON_MOVE_FORFEITS, GameRecord, Move
from referee.rules import Game, RulesError
from referee.timecontrol import GameClock, format_time_spec


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
    automatic final cover); a double forfeit has no moves and is a draw. Every table (the
    classic one too) must also pass :func:`clock_problems`.
    """
    if record.ruleset != "default":  # a classic table: replayed by its own engine
        from referee.table import table_problems

        problems = [*table_problems(record), *clock_problems(record)]
        return Verification(not problems, problems, None)
    problems, game = _default_problems(record)
    problems += clock_problems(record)
    return Verification(not problems, problems, game)


def _default_problems(record: GameRecord) -> tuple[list[str], Game | None]:
    """What the rules replay of a default-game record finds wrong (see :func:`verify`), and
    the replayed game (None when the deal itself is invalid)."""
    problems: list[str] = []
    try:
        game = Game.from_deck(list(record.deck), record.dealer, turn_limit=record.turn_limit)
    except RulesError as exc:
        return [f"stored deal is invalid: {exc}"], None
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
        return problems, game
    if ending is GameEndReason.DOUBLE_FORFEIT:
        if record.moves:
            problems.append("moves are recorded for a game neither bot started")
        if record.winner is not None:
            problems.append(f"a double forfeit is a draw, the record names seat {record.winner}")
        return problems, game
    if record.forfeit is not None:
        offender = record.forfeit.seat
        if record.winner != 1 - offender:
            problems.append(f"seat {offender} forfeited but the winner is {record.winner!r}")
        if game.over:
            problems.append("the game is over by the rules, yet a forfeit is recorded")
        elif game.to_move != offender and ending in ON_MOVE_FORFEITS:
            problems.append(f"the {ending.value} is recorded for seat {offender}, not to move")
        return problems, game
    if not game.over:
        problems.append("the recorded moves do not finish the game")
        return problems, game
    if game.outcome != record.winner:
        problems.append(f"replay gives winner {game.outcome!r}, the record {record.winner!r}")
    if game.reason is None or GameEndReason.from_rules(game.reason) is not ending:
        reason = game.reason.value if game.reason else None
        problems.append(f"replay ends by {reason!r}, the record says {ending.value!r}")
    final = str(game.final_cover) if game.final_cover else None
    if final != record.final_cover:
        problems.append(f"automatic final cover {final!r} but recorded {record.final_cover!r}")
    return problems, game


TIME_SLACK: Final = 1e-6
"""Seconds a recorded move time may exceed what the referee charged: it rounds each
measurement to the microsecond (``referee.match.played``, up to 0.5 µs off); the rest covers
the float arithmetic of the bank. The clock check takes each move as this much faster, so
that it flags only moves that were certainly too slow."""


def clock_problems(record: GameRecord) -> list[str]:
    """Move times the record's own clock could not have allowed.

    Every recorded time (wall and CPU) must be a finite number >= 0. Where the record keeps
    each seat's time control, its moves are charged again as the referee charged them
    (:meth:`GameClock.charge`: the move limit, then the bank, then the per-game grace; the
    increment after each move), each taken :data:`TIME_SLACK` faster. The referee ends the
    game by timeout at the first move its clock cannot cover and records no such move, so a
    recorded one is a problem (named with the time the seat had left), whatever the stored
    ending; later moves are not charged. A record without time controls (made before they
    were recorded, or imported without them) has no clock to check against.
    """
    problems = [
        f"move {number}: recorded {what} {value!r} is not a finite number of seconds >= 0"
        for number, move in enumerate(record.moves, start=1)
        for what, value in (("time", move.seconds), ("CPU time", move.cpu_seconds))
        if value is not None and not (math.isfinite(value) and value >= 0)
    ]
    if problems or not record.time_controls:
        return problems
    clock = GameClock(record.time_controls, seats=record.seats)
    for number, move in enumerate(record.moves, start=1):
        if not 0 <= move.seat < record.seats:
            continue  # not a seat of this table: the rules replay names it
        left = clock.allowance(move.seat)
        fastest = max(0.0, move.seconds - TIME_SLACK)
        if not clock.charge(move.seat, fastest, _faster(move.cpu_seconds)):
            return [_overrun(number, move, clock, left)]
    return []


def _faster(seconds: float | None) -> float | None:
    """A recorded time less :data:`TIME_SLACK` (the least the referee can have measured)."""
    return None if seconds is None else max(0.0, seconds - TIME_SLACK)


def _overrun(number: int, move: Move, clock: GameClock, left: float) -> str:
    """The problem of move ``number``, charged more than the ``left`` seconds its seat had."""
    seat = move.seat
    cpu = clock.uses_cpu(seat) and move.cpu_seconds is not None
    charged = move.cpu_seconds if cpu else move.seconds
    control = clock.controls[seat]
    return (
        f"move {number}: seat {seat} took {charged!r} s{' of CPU' if cpu else ''}, but its clock"
        f" had at most {left:.6f} s left (control {format_time_spec(control)},"
        f" grace {control.grace_seconds:g} s, clock {control.clock}): the referee would have"
        " ended the game there by timeout"
    )
