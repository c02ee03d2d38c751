"""What a bot author subclasses: :class:`Bot`, and the context objects its hooks receive."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Literal

from referee.protocol.messages import (
    AnyView,
    Clock,
    GameEndReason,
    GameStart,
    SeriesScore,
    TimeControl,
)
from referee.rules import Action, Card, ClassicAction, ClassicView, View


@dataclass(frozen=True, slots=True)
class SeriesInfo:
    """What the referee says about the series when it connects (see ``Bot.on_handshake``)."""

    opponent_name: str
    games: int
    time_control: TimeControl
    referee_version: str
    protocol_version: int
    ruleset: str = "default"
    """``default`` (two players: :meth:`Bot.act`) or ``classic`` (a table: ``act_table``)."""
    players: int = 2
    """Seats at the table."""
    seat_names: tuple[str, ...] = ()
    """Tables: every seat's bot name, seat 0 first."""
    seat: int = 0
    """Tables: this bot's seat for the whole series."""


GameContext = GameStart
"""The game about to be played (see ``Bot.on_game_start``): the referee's ``GameStart``, with
``game_number`` (1-based), ``seat``, ``dealer``, ``score``, ``opponent_name``,
``time_control``, ``turn_limit``, ``ruleset``, ``players`` and ``seat_names``."""


@dataclass(frozen=True, slots=True)
class GameResult:
    """How a game ended, for ``Bot.on_game_end``. ``deck`` is empty: this arena never
    reveals the deal (an older referee sent it whole, top first); ``score`` already counts
    this game. At a table,
    ``loser`` is the seat that lost (``winner`` is ``None`` when more than two sit).
    ``reason`` is ``None`` for an ending this SDK does not know (a newer referee may add
    endings: the game is over all the same, and ``winner``/``loser`` say who won)."""

    game_number: int
    seat: int
    winner: int | None
    reason: GameEndReason | None
    detail: str
    view: AnyView | None
    deck: tuple[Card, ...]
    score: SeriesScore
    loser: int | None = None

    @property
    def result(self) -> Literal["win", "loss", "draw", "void"]:
        """This bot's result (at the turn limit of a table: a win when this seat was out
        and another was not, a loss when it was not out and another was)."""
        if self.reason is GameEndReason.VOID:
            return "void"
        if isinstance(self.view, ClassicView):
            if self.loser is not None:
                return "loss" if self.loser == self.seat else "win"
            out = self.view.out
            if self.reason is GameEndReason.TURN_LIMIT and any(out) and not all(out):
                return "win" if out[self.seat] else "loss"
            return "draw"
        if self.winner is None:
            return "draw"
        return "win" if self.winner == self.seat else "loss"


class Bot(ABC):
    """Base class of a bot: implement :meth:`act`; the hooks are optional.

    While a game runs, :attr:`context` describes it; while :meth:`act` runs, :attr:`clock`
    holds the time allowed for this move and :meth:`time_left` counts it down.
    ``name`` and ``version`` default to the ``bot.toml`` next to the bot when served.
    """

    name: ClassVar[str] = ""
    version: ClassVar[str] = ""
    rulesets: ClassVar[tuple[str, ...]] = ("default",)
    """The rulesets this bot plays (told to the referee at the handshake): add ``"classic"``
    and implement :meth:`act_table` to sit at a classic table."""

    series: SeriesInfo | None = None
    context: GameContext | None = None
    clock: Clock | None = None
    _move_deadline: float = 0.0

    @abstractmethod
    def act(self, view: View) -> Action | str:
        """Choose one of ``view.legal_actions`` (an :class:`Action` or its canonical text)."""

    def act_table(self, view: ClassicView) -> ClassicAction | str:
        """At a classic table: choose one of ``view.legal_actions`` (a ClassicAction or its
        text). Only called when :attr:`rulesets` lists ``"classic"``."""
        raise NotImplementedError(
            f"{type(self).__name__} does not play the classic table (implement act_table and "
            "add 'classic' to rulesets)"
        )

    def on_handshake(self, series: SeriesInfo) -> None:  # noqa: B027 - optional hook, empty by design
        """Called once when the referee connects, before the first game."""

    def on_game_start(self, game: GameContext) -> None:  # noqa: B027 - optional hook, empty by design
        """Called before each game."""

    def on_game_end(self, result: GameResult) -> None:  # noqa: B027 - optional hook, empty by design
        """Called after each game, with the result and (usually) the full deal."""

    def time_left(self) -> float:
        """Seconds left of this move's own limit (the bank is not counted), never negative."""
        if self.clock is None:
            return float("inf")
        return max(0.0, self._move_deadline - time.monotonic())

    def start_move(self, clock: Clock | None, received_at: float | None = None) -> None:
        """Set :attr:`clock` for the coming :meth:`act` (done by the SDK's drivers)."""
        self.clock = clock
        if clock is not None:
            start = time.monotonic() if received_at is None else received_at
            self._move_deadline = start + clock.move_ms / 1000.0
