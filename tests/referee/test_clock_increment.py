"""Per-seat time controls with a Fischer increment: the clock, its text form, the wire, and
the game loop (each bot is told its own control; the record keeps every seat's)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kryt_proto.v1 import bot_pb2 as pb
from referee.client import Reply
from referee.match import play_game
from referee.protocol import wire
from referee.protocol.messages import (
    PROTOCOL_VERSION,
    AnyView,
    Clock,
    GameEndReason,
    GameStart,
    Handshake,
    SeriesScore,
    TimeControl,
    TimeControlError,
)
from referee.series import game_deck
from referee.timecontrol import (
    GameClock,
    format_time_spec,
    parse_time_assignment,
    parse_time_spec,
)
from sdk import Bot, GameContext
from sdk.bot import SeriesInfo
from sdk.examples.greedy.bot import GreedyBot
from sdk.tools import play_local
from sdk.tools.local import LocalPlayer


def test_the_increment_is_added_to_the_bank_after_each_move_in_time() -> None:
    clock = GameClock(TimeControl(move_ms=100, bank_ms=100, grace_ms=0, increment_ms=60))
    # 50 ms over each time, 60 ms back each time: the bank grows by 10 ms a move.
    for moves in range(1, 21):
        assert clock.charge(0, 0.150)
        assert clock.banks[0] == pytest.approx(0.100 + 0.010 * moves)
    assert clock.allowance(0) == pytest.approx(0.1 + 0.3)
    assert clock.wire_clock(0) == Clock(move_ms=100, bank_ms=300)


def test_the_wire_clock_follows_each_seats_bank_move_by_move() -> None:
    """What a seat is told is its own bank after its last charge, whatever was told before
    (the clock object is reused only while the bank is unchanged)."""
    clock = GameClock(
        (
            TimeControl(move_ms=100, bank_ms=1000, grace_ms=0),
            TimeControl(move_ms=200, bank_ms=500, grace_ms=0, increment_ms=5),
        )
    )
    assert clock.wire_clock(0) == Clock(move_ms=100, bank_ms=1000)
    assert clock.wire_clock(1) == Clock(move_ms=200, bank_ms=500)
    assert clock.charge(0, 0.05)  # in time, no increment: the bank stays
    assert clock.wire_clock(0) == Clock(move_ms=100, bank_ms=1000)
    assert clock.charge(0, 0.35)  # 250 ms over
    assert clock.wire_clock(0) == Clock(move_ms=100, bank_ms=750)
    assert clock.charge(1, 0.1)  # in time: +5 ms
    assert clock.wire_clock(1) == Clock(move_ms=200, bank_ms=505)
    assert clock.wire_clock(0) == Clock(move_ms=100, bank_ms=750)


def test_a_move_too_late_earns_no_increment_and_time_still_adds_up() -> None:
    control = TimeControl(move_ms=100, bank_ms=50, grace_ms=20, increment_ms=10)
    clock = GameClock(control)
    spent = []
    while clock.charge(0, 0.135):  # 35 ms over each time
        spent.append(0.135)
    # Never more than the move allowances, the bank, the increments earned and one grace.
    bound = len(spent) * (0.100 + 0.010) + 0.050 + 0.020
    assert sum(spent) + 0.135 > bound >= sum(spent)
    bank = clock.banks[0]
    assert not clock.charge(0, 0.135) and clock.banks[0] == bank


def test_without_an_increment_the_same_overruns_lose_on_time() -> None:
    plain = GameClock(TimeControl(move_ms=100, bank_ms=100, grace_ms=0))
    assert plain.charge(0, 0.150) and plain.charge(0, 0.150)
    assert not plain.charge(0, 0.150)


def test_each_seat_plays_under_its_own_control() -> None:
    fast = TimeControl(move_ms=100, bank_ms=0, grace_ms=0)
    slow = TimeControl(move_ms=2000, bank_ms=5000, grace_ms=0, increment_ms=500)
    clock = GameClock((fast, slow))
    assert clock.controls == (fast, slow)
    assert not clock.charge(0, 0.5)
    assert clock.charge(1, 0.5) and clock.banks[1] == pytest.approx(5.5)
    assert clock.deadline(0) == pytest.approx(0.1) and clock.deadline(1) == pytest.approx(7.5)
    with pytest.raises(TimeControlError, match="3 seats needs one time control per seat"):
        GameClock((fast, slow), seats=3)


def test_the_increment_is_a_checked_setting() -> None:
    assert TimeControl.from_seconds(1, 10, increment=0.1).increment_ms == 100
    with pytest.raises(TimeControlError, match=r"increment_ms .* got -1"):
        TimeControl(increment_ms=-1)
    with pytest.raises(TimeControlError, match=r"increment_seconds .* got 'x'"):
        TimeControl.from_seconds(1, 10, increment="x")  # type: ignore[arg-type]


def test_the_text_form_is_move_plus_bank_plus_increment_in_seconds() -> None:
    base = TimeControl(grace_ms=30, clock="cpu")
    control = parse_time_spec("1+10+0.1", base)
    assert control == TimeControl(
        move_ms=1000, bank_ms=10_000, grace_ms=30, clock="cpu", increment_ms=100
    )
    assert parse_time_spec(" 0.5 + 3 ").increment_ms == 0
    assert format_time_spec(control) == "1+10+0.1"
    assert parse_time_spec(format_time_spec(control), base) == control
    assert parse_time_assignment("builtin:greedy=2+0+1") == (
        "builtin:greedy",
        TimeControl(move_ms=2000, bank_ms=0, increment_ms=1000),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1", "is not MOVE\\+BANK or MOVE\\+BANK\\+INCREMENT"),
        ("1+2+3+4", "is not MOVE\\+BANK"),
        ("1++2", "is not MOVE\\+BANK"),
        ("1+ten", "the bank 'ten' is not a number"),
        ("1+2+nan", "the increment 'nan' is not finite"),
        ("0+10", "the move '0' must be from 0.001 to 86400 seconds"),
        ("1+-2", "the bank '-2' must be from 0 to 86400 seconds"),
    ],
)
def test_a_bad_time_text_is_named_in_the_error(text: str, message: str) -> None:
    with pytest.raises(TimeControlError, match=message) as caught:
        parse_time_spec(text)
    assert repr(text) in str(caught.value)


def test_an_assignment_needs_a_bot() -> None:
    with pytest.raises(TimeControlError, match="expected BOT=MOVE"):
        parse_time_assignment("=1+2")


@pytest.mark.parametrize("text", ["X=", "X= ", "X=1", "X=1+a"])
def test_a_bad_assignment_names_the_whole_of_it_and_the_bot(text: str) -> None:
    """Naming only the control's part (``''``) leaves the user to guess which --time."""
    with pytest.raises(TimeControlError) as caught:
        parse_time_assignment(text, setting=True)
    assert str(caught.value).startswith(f"{text!r} (the control of bot 'X'): time control")


def test_the_wire_carries_the_increment_and_reads_an_old_referee_as_none() -> None:
    control = TimeControl(move_ms=700, bank_ms=3000, increment_ms=250)
    handshake = Handshake(PROTOCOL_VERSION, "ref", 4, "them", control)
    decoded = wire.decode_referee_message(wire.encode_referee_message(handshake))
    assert isinstance(decoded, Handshake) and decoded.time_control.increment_ms == 250
    # A version-1 referee from before increments sends no increment_ms at all.
    old = pb.RefereeMessage(
        handshake=pb.Handshake(
            protocol_version=PROTOCOL_VERSION,
            games=4,
            opponent_name="them",
            time_control=pb.TimeControl(move_ms=700, bank_ms=3000),
        )
    )
    decoded = wire.decode_referee_message(old.SerializeToString())
    assert isinstance(decoded, Handshake)
    assert decoded.time_control == TimeControl(move_ms=700, bank_ms=3000, increment_ms=0)


class _Timed:
    """A local player whose every reply is reported as taking ``seconds`` (the clock is
    under test, not the machine's speed: no sleeping)."""

    def __init__(self, bot: Bot, seconds: float) -> None:
        self._inner = LocalPlayer(bot)
        self.name = self._inner.name
        self.seconds = seconds
        self.handshake = self._inner.handshake
        self.send = self._inner.send

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        reply = self._inner.decide(view, clock, game_number, timeout)
        return replace(reply, elapsed=self.seconds)


def _play(controls: tuple[TimeControl, TimeControl], seconds: float) -> GameEndReason:
    record = play_game(
        (_Timed(GreedyBot(), seconds), _Timed(GreedyBot(), 0.0)),
        number=1,
        deck=game_deck("increment", 1),
        dealer=1,  # seat 0 moves first
        scores=(SeriesScore(), SeriesScore()),
        time_control=controls,
        turn_limit=1000,
    )
    assert record.time_controls == controls
    return record.ending


def test_in_a_game_the_increment_keeps_a_slightly_slow_bot_in_time() -> None:
    relaxed = TimeControl(move_ms=10_000, bank_ms=0)
    without = TimeControl(move_ms=100, bank_ms=100, grace_ms=0)
    with_increment = replace(without, increment_ms=60)
    # 50 ms over on every move: the bank lasts two moves without an increment.
    assert _play((without, relaxed), 0.150) is GameEndReason.TIMEOUT
    assert _play((with_increment, relaxed), 0.150) is not GameEndReason.TIMEOUT


class _Recording(GreedyBot):
    def __init__(self) -> None:
        super().__init__()
        self.told: list[TimeControl] = []
        self.games: list[TimeControl] = []

    def on_handshake(self, series: SeriesInfo) -> None:
        self.told.append(series.time_control)

    def on_game_start(self, game: GameContext) -> None:
        self.games.append(game.time_control)


def test_each_bot_is_told_its_own_control_and_the_record_keeps_both() -> None:
    a, b = _Recording(), _Recording()
    mine = TimeControl(move_ms=5000, bank_ms=20_000, increment_ms=100)
    theirs = TimeControl(move_ms=8000, bank_ms=1000)
    result = play_local(a, b, games=2, seed="tc", seat_controls=(mine, theirs))
    assert a.told == [mine] and a.games == [mine, mine]
    assert b.told == [theirs] and b.games == [theirs, theirs]
    assert all(g.time_controls == (mine, theirs) for g in result.games.values())


def test_the_start_message_of_each_seat_carries_its_control() -> None:
    mine = TimeControl(move_ms=5000, bank_ms=20_000, increment_ms=100)
    message = GameStart(1, 0, 0, SeriesScore(), "x", mine, 100)
    decoded = wire.decode_referee_message(wire.encode_referee_message(message))
    assert isinstance(decoded, GameStart) and decoded.time_control == mine


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0+10", "the move '0' must be from 0.001 to 3600 seconds"),
        ("0.0004+10", "the move '0.0004' must be from 0.001 to 3600 seconds"),
        ("3601+10", "the move '3601' must be from 0.001 to 3600 seconds"),
        ("1+86401", "the bank '86401' must be from 0 to 86400 seconds"),
        ("1+10+3601", "the increment '3601' must be from 0 to 3600 seconds"),
    ],
)
def test_a_setting_is_held_to_the_documented_bounds(text: str, message: str) -> None:
    with pytest.raises(TimeControlError, match=message):
        parse_time_spec(text, setting=True)
    with pytest.raises(TimeControlError, match=message):
        parse_time_assignment(f"mybot={text}", setting=True)


def test_a_recorded_control_is_read_within_what_the_wire_carries() -> None:
    assert parse_time_spec("3601+10+3601").move_ms == 3_601_000
    assert parse_time_spec("0.001+0", setting=True).move_ms == 1
