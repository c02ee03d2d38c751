"""Bot slots for series: in-process bots (trusted, for tests, `play_local` and benchmarks) and
bots behind a gRPC address (started by the sandbox layer or already running)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from referee.match import Player
from referee.outcomes import ForfeitReason
from referee.rules import View
from referee.series import BotStartError
from sdk.bot import Bot
from sdk.client import BotFault, Reply
from sdk.local import LocalPlayer
from sdk.messages import Clock, Handshake, HandshakeReply, RefereeMessage

T = TypeVar("T")


class LocalSlot:
    """An SDK bot object played in-process (no sandbox, no gRPC): trusted code only.

    ``factory`` makes a fresh bot; it is called again after the bot failed, as a restart.
    """

    def __init__(self, factory: Callable[[], Bot], name: str) -> None:
        self._factory = factory
        self._player: LocalPlayer | None = None
        self._failed = False
        self.name = name

    def player(self, handshake: Handshake) -> Player:
        """The bot, created (or re-created after a failure) and handshaken."""
        if self._player is None or self._failed:
            try:
                self._player = LocalPlayer(self._factory())
                self._player.name = self.name
                self._player.handshake(handshake)
            except BotFault as exc:
                raise BotStartError(f"{self.name}: {exc}") from None
            except Exception as exc:
                raise BotStartError(f"{self.name} failed to start: {exc!r}") from None
            self._failed = False
        return _Watched(self._player, self)

    def failed(self) -> None:
        """Mark the bot as crashed so that the next game starts a fresh one."""
        self._failed = True

    def diagnose(self) -> ForfeitReason | None:
        """In-process bots have no sandbox verdicts."""
        return None

    def close(self) -> None:
        """Nothing to release for an in-process bot."""
        self._player = None


class _Watched:
    """Forwards to a player and tells the slot when the bot failed (for a restart)."""

    def __init__(self, inner: LocalPlayer, slot: LocalSlot) -> None:
        self._inner = inner
        self._slot = slot
        self.name = inner.name

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        return self._guard(lambda: self._inner.handshake(handshake))

    def send(self, message: RefereeMessage) -> None:
        self._guard(lambda: self._inner.send(message))

    def decide(self, view: View, clock: Clock, game_number: int, timeout: float) -> Reply:
        return self._guard(lambda: self._inner.decide(view, clock, game_number, timeout))

    def _guard(self, call: Callable[[], T]) -> T:
        try:
            return call()
        except BotFault:
            self._slot.failed()
            raise
