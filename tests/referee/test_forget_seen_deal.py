"""Bots forget a deal before it is played again, and only then: the series asks every seat
that can forget (``ForgettingSlot``) before the second game of a duplicate pair and before a
void's replay, never before a fresh deal (a restart costs a bot start)."""

from __future__ import annotations

from referee.client import Reply
from referee.protocol.messages import (
    AnyView,
    Clock,
    GameStart,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    TimeControl,
)
from referee.record import GameRecord
from referee.series import SeriesConfig, SeriesFormat, run_series
from referee.table import run_table_series
from sdk.tools.local import PlayerSlot

CONTROL = TimeControl(move_ms=5000, bank_ms=5000)


class Plain:
    """An in-process player that plays its first legal action and logs what it is sent."""

    def __init__(self, log: list[str]) -> None:
        self.name = "plain"
        self.log = log

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        return HandshakeReply(1, "plain", "1", "test", ("default", "classic"))

    def send(self, message: RefereeMessage) -> None:
        if isinstance(message, GameStart):
            self.log.append(f"start {message.game_number}")

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        return Reply(action=view.legal_actions[0], elapsed=0.001, request_id=1)

    def close(self) -> None:
        pass


class Forgetful(PlayerSlot):
    """A seat that logs when it is asked to forget, then starts a fresh player."""

    def __init__(self, log: list[str], name: str) -> None:
        super().__init__(lambda: Plain(log), name)
        self.events = log

    def forget(self) -> None:
        self.events.append("forget")
        self.failed()


def _played(config: SeriesConfig, seats: int = 2, recorder: object = None) -> list[str]:
    """What seat 0 saw, in order: the games it started and the times it forgot."""
    logs: list[list[str]] = [[] for _ in range(seats)]
    slots = [Forgetful(logs[s], f"p{s}") for s in range(seats)]
    if seats == 2:
        run_series(config, (slots[0], slots[1]), recorder=recorder)  # type: ignore[arg-type]
    else:
        run_table_series(config, slots, recorder=recorder)  # type: ignore[arg-type]
    assert all(log == logs[0] for log in logs)  # every seat forgets alike
    return logs[0]


def test_a_standard_series_never_forgets() -> None:
    config = SeriesConfig(games=4, seed="s", format=SeriesFormat.STANDARD, time_control=CONTROL)
    assert _played(config) == [f"start {n}" for n in (1, 2, 3, 4)]


def test_a_duplicate_series_forgets_before_each_pairs_second_game() -> None:
    config = SeriesConfig(games=6, seed="d", format=SeriesFormat.DUPLICATE, time_control=CONTROL)
    assert _played(config) == [
        "start 1", "forget", "start 2", "start 3", "forget", "start 4", "start 5", "forget",
        "start 6",
    ]  # fmt: skip


def test_a_void_is_replayed_after_forgetting_at_the_table_too() -> None:
    failed: list[int] = []

    def flaky(number: int, attempt: int, record: GameRecord) -> None:
        if number == 2 and attempt == 1:
            failed.append(number)
            raise OSError("disk full")  # ours: game 2 is replayed with the same deal

    standard = SeriesConfig(games=3, seed="v", format=SeriesFormat.STANDARD, time_control=CONTROL)
    assert _played(standard, recorder=flaky) == [
        "start 1", "start 2", "forget", "start 2", "start 3",
    ]  # fmt: skip
    table = SeriesConfig(
        games=3, seed="t", format=SeriesFormat.STANDARD, time_control=CONTROL,
        ruleset="classic", players=3,
    )  # fmt: skip
    assert _played(table, seats=3, recorder=flaky) == [
        "start 1", "start 2", "forget", "start 2", "start 3",
    ]  # fmt: skip
    assert failed == [2, 2]
