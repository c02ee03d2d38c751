"""``verify`` runs a record's move times through the record's own clock: a time the seat's
control could not have allowed (one absurd move, or a bank that had run out) is a problem,
and no game the referee itself played, however tight its clock, is ever flagged."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from referee.client import Reply
from referee.match import play_game
from referee.protocol.messages import (
    AnyView,
    Clock,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    SeriesScore,
    TimeControl,
)
from referee.record import GameRecord, Move
from referee.replay import clock_problems, verify
from referee.rules import shuffled_deck

AUDIT = TimeControl(move_ms=1000, bank_ms=10_000, grace_ms=50)
"""The control of the audit's game: 1+10+0 with the default grace."""


class Paced:
    """An in-process player with a random legal move and a chosen time for every reply: the
    referee's clock is under test, not the machine's speed, so nothing sleeps.

    ``pace`` picks the time of a reply from the referee's deadline: under the CPU clock the
    CPU time (the deadline being a multiple of the allowance), else the wall time."""

    def __init__(self, name: str, seed: int, pace: str, cpu_clock: bool = False) -> None:
        self.name = name
        self.rng = random.Random(seed)
        self.pace = pace
        self.cpu_clock = cpu_clock
        self.requests = 0

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        raise AssertionError("a game does not handshake")  # pragma: no cover

    def send(self, message: RefereeMessage) -> None:
        pass

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        self.requests += 1
        action = str(self.rng.choice(view.legal_actions))  # the canonical text
        if not self.cpu_clock:
            return Reply(action, self._time(timeout), self.requests)
        # The CPU time is charged; sometimes the sandbox could not count it (None): then
        # the wall time is charged instead.
        allowance = timeout / 4
        if self.rng.random() < 0.2:
            return Reply(action, self._time(allowance), self.requests)
        return Reply(action, self.rng.uniform(0, timeout), self.requests, self._time(allowance))

    def _time(self, limit: float) -> float:
        """A time for a move that may take ``limit`` seconds at most."""
        rng = self.rng
        if self.pace == "fast":
            return rng.uniform(0, 0.001)
        choice = rng.random()
        if choice < 0.25:
            return limit  # every last bit of it: the bank and grace are spent to the end
        if choice < 0.4:
            return max(0.0, limit - 4e-7)  # recorded rounded up to the microsecond
        if choice < 0.45 and self.pace == "forfeits":
            return limit * rng.uniform(1.0, 1.2)  # too late (or just in time): the referee says
        return rng.uniform(0, limit)


CONTROLS = [
    AUDIT,
    TimeControl(move_ms=1, bank_ms=0, grace_ms=0),
    TimeControl(move_ms=5, bank_ms=20, grace_ms=3),
    TimeControl(move_ms=10, bank_ms=30, grace_ms=5, increment_ms=2),
    TimeControl(move_ms=3, bank_ms=0, grace_ms=0, increment_ms=1),
    TimeControl(move_ms=7, bank_ms=11, grace_ms=13, clock="cpu", increment_ms=3),
    TimeControl(move_ms=1000, bank_ms=86_400_000, grace_ms=50, increment_ms=3_600_000),
]


def played(seed: int, pace: str, seats: int = 2, ruleset: str = "default") -> GameRecord:
    """A game the referee plays between ``seats`` paced players, each under a control of
    :data:`CONTROLS` (picked by ``seed``)."""
    rng = random.Random(seed)
    controls = [rng.choice(CONTROLS) for _ in range(seats)]
    players = [
        Paced("abcd"[s], seed * 10 + s, pace, cpu_clock=controls[s].clock == "cpu")
        for s in range(seats)
    ]
    return play_game(
        players,
        number=1,
        deck=shuffled_deck(seed),
        dealer=rng.randrange(seats),
        scores=[SeriesScore()] * seats,
        time_control=controls,
        turn_limit=1000,
        ruleset=ruleset,
    )


def honest_games() -> list[GameRecord]:
    """Games the referee played under tight controls: many end on time, many use up banks
    and graces to the last microsecond; two-player and classic tables."""
    return [
        *(played(seed, "tight") for seed in range(60)),
        *(played(seed, "forfeits") for seed in range(60, 120)),
        *(played(seed, "tight", 3, "classic") for seed in range(120, 140)),
        *(played(seed, "forfeits", 4, "classic") for seed in range(140, 160)),
        *(played(seed, "tight", 2, "classic") for seed in range(160, 170)),
    ]


@pytest.fixture(scope="module")
def honest() -> list[GameRecord]:
    return honest_games()


def test_no_game_the_referee_played_is_flagged(honest: list[GameRecord]) -> None:
    for record in honest:
        check = verify(record)
        assert check.ok, (record, check.problems)
    endings = [r.ending for r in honest]
    # The clock was really tested: timeouts on both tables, finished games, and moves that
    # took more than the move limit (out of the bank or the grace).
    assert GameEndReason.TIMEOUT in endings
    assert any(r.ending is GameEndReason.TIMEOUT and r.ruleset == "classic" for r in honest)
    assert sum(not r.ending.is_forfeit for r in honest) >= 10
    assert any(
        m.seconds > r.time_controls[m.seat].move_seconds and r.time_controls[m.seat].bank_ms
        for r in honest
        for m in r.moves
    )


def charged(record: GameRecord, move: Move) -> float:
    """The time the referee charged ``move``: its CPU time under the CPU clock, if counted."""
    cpu = record.time_controls[move.seat].clock == "cpu" and move.cpu_seconds is not None
    return move.cpu_seconds if cpu and move.cpu_seconds is not None else move.seconds


def with_time(record: GameRecord, index: int, seconds: float) -> GameRecord:
    """``record`` with the charged time of move ``index`` (from 0) set to ``seconds``."""
    moves = list(record.moves)
    move = moves[index]
    if record.time_controls[move.seat].clock == "cpu" and move.cpu_seconds is not None:
        moves[index] = dataclasses.replace(move, cpu_seconds=seconds)
    else:
        moves[index] = dataclasses.replace(move, seconds=seconds)
    return dataclasses.replace(record, moves=tuple(moves))


def test_one_move_over_all_a_seat_could_ever_have_is_flagged(honest: list[GameRecord]) -> None:
    rng = random.Random(4)
    tried = 0
    for record in honest:
        if not record.moves:
            continue
        index = rng.randrange(len(record.moves))
        seat = record.moves[index].seat
        control = record.time_controls[seat]
        # Every move limit, the bank, every increment the seat could have earned, one grace.
        ever = (
            control.bank_seconds
            + control.grace_seconds
            + (index + 1) * (control.move_seconds + control.increment_seconds)
        )
        check = verify(with_time(record, index, ever + 0.001))
        assert not check.ok and len(check.problems) == 1, check.problems
        assert check.problems[0].startswith(f"move {index + 1}: seat {seat} took")
        assert "timeout" in check.problems[0]
        tried += 1
    assert tried > 100


def audit_game() -> GameRecord:
    """A 1+10+0 game both bots play fast, ending normally."""
    record = play_game(
        [Paced("a", 1, "fast"), Paced("b", 2, "fast")],
        number=1,
        deck=shuffled_deck(11),
        dealer=0,
        scores=[SeriesScore()] * 2,
        time_control=AUDIT,
        turn_limit=1000,
    )
    assert record.ending in (GameEndReason.OUT, GameEndReason.DRAW_BY_FINAL_ANSWER)
    assert record.time_controls == (AUDIT, AUDIT) and verify(record).ok
    return record


def test_the_audits_1e308_seconds_is_a_timeout_not_a_win() -> None:
    record = with_time(audit_game(), 0, 1e308)
    check = verify(record)
    assert not check.ok
    assert check.problems == [
        "move 1: seat 1 took 1e+308 s, but its clock had at most 11.050000 s left (control"
        " 1+10+0, grace 0.05 s, clock wall): the referee would have ended the game there by"
        " timeout"
    ]


@pytest.mark.parametrize("bad", [-0.001, math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("field", ["seconds", "cpu_seconds"])
def test_a_time_that_is_no_number_of_seconds_is_flagged(bad: float, field: str) -> None:
    record = audit_game()
    moves = list(record.moves)
    if field == "seconds":
        moves[2] = dataclasses.replace(moves[2], seconds=bad)
    else:
        moves[2] = dataclasses.replace(moves[2], cpu_seconds=bad)
    for controls in (record.time_controls, ()):  # no clock is needed to see it
        check = verify(dataclasses.replace(record, moves=tuple(moves), time_controls=controls))
        what = "CPU time" if field == "cpu_seconds" else "time"
        assert check.problems == [
            f"move 3: recorded {what} {bad!r} is not a finite number of seconds >= 0"
        ]


def test_a_record_without_time_controls_is_not_clocked() -> None:
    record = dataclasses.replace(with_time(audit_game(), 0, 1e308), time_controls=())
    assert verify(record).ok and clock_problems(record) == []


def bank_game(control: TimeControl) -> GameRecord:
    """A finished game where seat 0 plays under ``control`` and takes its whole move limit
    each time (never touching its bank), and seat 1 plays fast under the audit's control."""

    class AtTheLimit(Paced):
        def _time(self, limit: float) -> float:
            return control.move_seconds

    record = play_game(
        [AtTheLimit("a", 3, "tight"), Paced("b", 4, "fast")],
        number=1,
        deck=shuffled_deck(12),
        dealer=1,
        scores=[SeriesScore()] * 2,
        time_control=(control, AUDIT),
        turn_limit=1000,
    )
    assert not record.ending.is_forfeit and verify(record).ok
    return record


def seat_moves(record: GameRecord, seat: int) -> list[int]:
    return [i for i, m in enumerate(record.moves) if m.seat == seat]


def test_a_game_that_ends_normally_after_the_bank_ran_out_is_flagged() -> None:
    # 0.1 s a move, a 0.1 s bank, no grace: 50 ms over twice empties the bank, so a third
    # move over the limit is a timeout, although each alone fits the fresh allowance.
    control = TimeControl(move_ms=100, bank_ms=100, grace_ms=0)
    record = bank_game(control)
    first, second, third, *_ = seat_moves(record, 0)
    slow = with_time(with_time(record, first, 0.15), second, 0.15)
    assert verify(slow).ok  # the bank covers both
    check = verify(with_time(slow, third, 0.12))
    assert not check.ok and len(check.problems) == 1
    problem = check.problems[0]
    assert problem.startswith(f"move {third + 1}: seat 0 took 0.12 s, but its clock had at most")
    assert "0.1+0.1+0, grace 0 s, clock wall" in problem


def test_the_grace_is_granted_once_a_game_and_the_increment_after_each_move() -> None:
    control = TimeControl(move_ms=100, bank_ms=0, grace_ms=30, increment_ms=10)
    record = bank_game(control)
    first, second, third, *_ = seat_moves(record, 0)
    # 10 ms over on an empty bank: the grace pays (20 ms of it left), then the increment
    # puts 10 ms in the bank; 20 ms over: the bank pays 10 ms, the grace 10 ms, and the
    # increment refills the bank. So 20 ms over the limit is left: 10 of bank, 10 of grace.
    slow = with_time(with_time(record, first, 0.11), second, 0.12)
    assert verify(slow).ok
    assert verify(with_time(slow, third, 0.119)).ok
    assert not verify(with_time(slow, third, 0.121)).ok


def test_only_what_the_record_settles_is_flagged() -> None:
    # The referee rounds each time to the microsecond, so a move a microsecond past its
    # allowance may have been in time; ten microseconds past it cannot have been.
    control = TimeControl(move_ms=100, bank_ms=100, grace_ms=0)
    record = bank_game(control)
    first, second, third, *_ = seat_moves(record, 0)
    slow = with_time(with_time(record, first, 0.15), second, 0.15)
    assert verify(with_time(slow, third, 0.100001)).ok
    assert not verify(with_time(slow, third, 0.10001)).ok


def test_under_the_cpu_clock_the_cpu_time_is_what_counts() -> None:
    control = TimeControl(move_ms=100, bank_ms=0, grace_ms=0, clock="cpu")
    record = bank_game(control)
    index = seat_moves(record, 0)[0]
    moves = list(record.moves)
    # A slow wall time is no timeout under the CPU clock; a slow CPU time is.
    moves[index] = dataclasses.replace(moves[index], seconds=0.35, cpu_seconds=0.05)
    assert verify(dataclasses.replace(record, moves=tuple(moves))).ok
    moves[index] = dataclasses.replace(moves[index], seconds=0.05, cpu_seconds=0.35)
    check = verify(dataclasses.replace(record, moves=tuple(moves)))
    assert check.problems[0].startswith(f"move {index + 1}: seat 0 took 0.35 s of CPU")
    # Where the sandbox could not count it, the wall time was charged.
    moves[index] = dataclasses.replace(moves[index], seconds=0.35, cpu_seconds=None)
    assert not verify(dataclasses.replace(record, moves=tuple(moves))).ok


def test_a_classic_table_is_clocked_too() -> None:
    record = played(7, "fast", 3, "classic")
    assert verify(record).ok and not record.ending.is_forfeit
    check = verify(with_time(record, 4, 1e9))
    assert not check.ok and check.problems[0].startswith("move 5: seat")
