"""A seat's bot in a sandbox, across a series: started on demand, restarted after a crash."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import NoReturn

from referee.client import (
    AsyncBotClient,
    BotClient,
    BotFault,
    BotReportedError,
    IncompatibleProtocolError,
    MalformedReplyError,
    Reply,
)
from referee.client import BotCrashedError as ClientCrashedError
from referee.match import AsyncPlayer, Player
from referee.protocol.messages import (
    HANDSHAKE_SECONDS,
    AnyView,
    Clock,
    GameEnd,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
)
from referee.series import BotStartError, InfrastructureError
from sandbox import (
    BotStartupError,
    DeathCause,
    SandboxInfrastructureError,
    SandboxLimits,
    Submission,
)
from sandbox.backend import Backend, RunningBot
from sandbox.errors import CleanupError

log = logging.getLogger(__name__)

DEATH_REPORT_WAIT = 3.0
"""Seconds to wait for the sandbox's death report after a bot's connection failed (a busy
engine may take over a second to say the kernel's OOM killer ended the bot)."""

GOODBYE_SECONDS = 1.0
"""Seconds a bot that still reads its stream has to take a ``Shutdown`` before it is stopped
(restarted after a fault, or at the series' end), so it has taken everything sent before, its
``GameEnd`` too."""

RESTART_REASON = "restarted after a fault"
FORGET_REASON = "restarted: the next game is dealt from a deck you were dealt"
SERIES_OVER_REASON = "series over"

_VERDICTS = {
    DeathCause.OOM: GameEndReason.MEMORY_LIMIT,
    DeathCause.FILE_SIZE: GameEndReason.DISK_LIMIT,
    DeathCause.PROCESS_LIMIT: GameEndReason.PROCESS_LIMIT,
}
_STOPPED_BY_US = {DeathCause.STOPPED, DeathCause.VANISHED}
"""Deaths we caused (our stop, a sweep or an engine removing the container): never the
bot's fault, so the game they break is voided (replayed), never forfeited."""


OutputMark = tuple[int, int]
"""Where a slot's output was last read: (which start of its bot, position in its output)."""

NO_OUTPUT_YET: OutputMark = (0, 0)
"""The mark before anything was read."""


class SandboxSlot:
    """Runs ``submission`` in ``backend`` for one seat of a series.

    The bot keeps one process / container for the whole series; after any failure it is
    stopped and a fresh one is started for the next game.
    """

    def __init__(
        self,
        backend: Backend,
        submission: Submission,
        *,
        name: str,
        limits: SandboxLimits,
        label: str,
        trusted: bool = False,
    ) -> None:
        self.name = name
        self._backend = backend
        self._submission = submission
        self._limits = limits
        self._label = label
        self._trusted = trusted
        self._running: RunningBot | None = None
        self._client: BotClient | None = None
        self._async_client: AsyncBotClient | None = None
        self._failed = False
        self._listening = False
        self._restart_reason = RESTART_REASON
        self._gone_at_game_end = False
        self._closing = False
        self._lock = threading.Lock()
        self.starts = 0

    def player(self, handshake: Handshake) -> Player:
        """The running, handshaken bot; (re)started when it is not running or has failed."""
        if self._client is not None and not self._failed:
            if self._alive() and not self._gone_at_game_end:
                return _Watched(self._client, self)
            self._died_between_games()
        self._goodbye_before_restart()
        self._prepare_start()
        running = self._start(connect=True)
        client = running.client
        try:
            reply = client.handshake(handshake, timeout=HANDSHAKE_SECONDS)
        except BotFault as exc:
            client.close()
            failure = self._handshake_failure(running, exc)
            self._stop()
            raise failure from None
        self._check_identity(reply, client.close)
        self._client = client
        self._failed = self._gone_at_game_end = False
        return _Watched(client, self)

    async def start_player(self, handshake: Handshake) -> AsyncPlayer:
        """:meth:`player` for a referee on an event loop: the sandbox's blocking work runs
        in worker threads, and the connection is an AsyncBotClient of the running loop."""
        client = self._async_client
        if client is not None and not self._failed:
            if not self._gone_at_game_end and await asyncio.to_thread(self._alive):
                return _AsyncWatched(client, self)
            await asyncio.to_thread(self._died_between_games)
        await self._agoodbye_before_restart()
        await asyncio.to_thread(self._prepare_start)
        running = await asyncio.to_thread(self._start, connect=False)
        with self._start_errors():
            client = await running.aconnect()
        try:
            reply = await client.handshake(handshake, timeout=HANDSHAKE_SECONDS)
        except BotFault as exc:
            client.close()
            failure = await asyncio.to_thread(self._handshake_failure, running, exc)
            await asyncio.to_thread(self._stop)
            raise failure from None
        self._check_identity(reply, client.close)
        self._async_client = client
        self._failed = self._gone_at_game_end = False
        return _AsyncWatched(client, self)

    def _handshake_failure(self, running: RunningBot, exc: BotFault) -> BotStartError:
        """The forfeit of a bot that failed its handshake, with how its process stands and
        its last output when they may say why (it hung, it crashed, it answered something
        else): not for a refusal of a reply it sent (protocol version, ruleset), which says
        it all. Blocks (it may ask the engine, and waits for a crash's death report)."""
        note = ""
        if not isinstance(exc, IncompatibleProtocolError):
            if isinstance(exc, ClientCrashedError) and not isinstance(exc, BotReportedError):
                # The connection breaks a moment before the sandbox reports the death.
                deadline = time.monotonic() + DEATH_REPORT_WAIT
                while running.death() is None and time.monotonic() < deadline:
                    time.sleep(0.05)
            # A death is worth saying even when the bot printed nothing.
            note = running.output_note(always=running.death() is not None)
        return BotStartError(f"{self.name} failed the handshake: {exc}{note}")

    def _died_between_games(self) -> NoReturn:
        """The bot ended after its last game and before this one: it forfeits this game.

        Dying between games is a crash like any other (or the sandbox limit it hit), not a
        free restart; closing the stream there forfeits the next game too. It is restarted
        for the game after. Raises InfrastructureError instead when the sandbox was stopped
        from outside the bot (see :meth:`diagnose`): then the game is ours to replay.
        """
        self._failed = True  # whatever is raised below, the next game starts a new bot
        self._gone_at_game_end = False
        running = self._running
        if running is not None and running.alive():  # its connection went, not its process
            raise BotStartError(
                f"{self.name} closed its connection between games; it forfeits this game and"
                " is restarted for the next",
                reason=GameEndReason.CRASH,
            )
        report = running.death() if running is not None else None
        verdict = self.diagnose()
        how = f" ({report.describe()})" if report is not None else ""
        raise BotStartError(
            f"{self.name} exited between games{how}; it forfeits this game and is restarted"
            " for the next",
            reason=verdict or GameEndReason.CRASH,
        )

    def _goodbye_before_restart(self) -> None:
        """A bot restarted after a fault that left it reading its stream (a malformed
        reply, a reported error) is told ``Shutdown`` first and stopped once it ends the
        stream (at most GOODBYE_SECONDS): stopped at once, it might not have taken its
        GameEnd."""
        client, listening, self._listening = self._client, self._listening, False
        reason, self._restart_reason = self._restart_reason, RESTART_REASON
        if client is not None and self._may_say_goodbye(client.closed, listening=listening):
            self._say_goodbye(client, reason)

    async def _agoodbye_before_restart(self) -> None:
        """:meth:`_goodbye_before_restart` on the connection's event loop."""
        client, listening, self._listening = self._async_client, self._listening, False
        reason, self._restart_reason = self._restart_reason, RESTART_REASON
        if client is not None and self._may_say_goodbye(client.closed, listening=listening):
            await self._asay_goodbye(client, reason)

    def _may_say_goodbye(self, closed: bool, *, listening: bool, at_close: bool = False) -> bool:
        """Whether the bot is told ``Shutdown``: never on a stream that is closed; at the
        series' end when it did not fail or its fault left it reading its stream; before a
        restart only after such a fault, and not while the slot is closing."""
        if closed:
            return False
        if at_close:
            return not self._failed or listening
        return listening and not self._closing

    def _say_goodbye(self, client: BotClient, reason: str) -> None:
        """Send ``Shutdown`` and wait at most GOODBYE_SECONDS for the bot to end its stream;
        a bot that does not is stopped all the same."""
        try:
            client.shutdown(reason, timeout=GOODBYE_SECONDS)
        except BotFault:
            log.debug("bot %s did not take the shutdown (%s)", self.name, reason)

    async def _asay_goodbye(self, client: AsyncBotClient, reason: str) -> None:
        """:meth:`_say_goodbye` on the connection's event loop."""
        try:
            await client.shutdown(reason, timeout=GOODBYE_SECONDS)
        except BotFault:
            log.debug("bot %s did not take the shutdown (%s)", self.name, reason)

    def _prepare_start(self) -> None:
        """Refuse while closing; stop the bot that ran before (ours if that fails)."""
        if self._closing:
            raise InfrastructureError(f"{self.name} is being stopped by the runner")
        try:
            self._stop()
        except CleanupError as exc:  # removing the old sandbox failed: ours, not the bot's
            raise InfrastructureError(f"cleanup of {self.name} failed: {exc}") from None

    def _start(self, *, connect: bool) -> RunningBot:
        self.starts += 1
        with self._start_errors():
            running = self._backend.start(
                self._submission, self._limits, self._label, trusted=self._trusted, connect=False
            )
            # A backend that does not say the runtime (Docker) gets it from the submission,
            # before connecting: its start-up messages are in the words of the bot's author.
            if running.runtime is None:
                running.runtime = self._submission.manifest.runtime
            if connect:
                running.connect()
        self._running = running
        return running

    @contextlib.contextmanager
    def _start_errors(self) -> Iterator[None]:
        """A start-up failure as the series sees it: the bot's fault, or ours."""
        try:
            yield
        except BotStartupError as exc:
            raise BotStartError(f"{self.name} could not start: {exc}") from None
        except SandboxInfrastructureError as exc:
            raise InfrastructureError(f"sandbox failed to start {self.name}: {exc}") from None

    def _check_identity(self, reply: HandshakeReply, close: Callable[[], None]) -> None:
        """A bot must say it is the bot of its ``bot.toml`` (name and version)."""
        manifest = self._submission.manifest
        if (reply.name, reply.version) != (manifest.name, manifest.version):
            close()
            self._stop()
            # repr() escapes the bot's control characters itself (printable() first would
            # escape them twice).
            raise BotStartError(
                f"{self.name}: the handshake says it is {reply.name!r} version"
                f" {reply.version!r}, but its bot.toml says {manifest.name!r}"
                f" version {manifest.version!r}; send the name and version of bot.toml"
            )

    def _alive(self) -> bool:
        running = self._running
        return running is not None and running.alive()

    def failed(self, *, listening: bool = False) -> None:
        """The bot misbehaved at the protocol level: restart it before the next game.

        ``listening``: it still reads its stream (a malformed reply or a reported error,
        not a hang or a crash), so it is told ``Shutdown`` before the restart."""
        self._failed = True
        self._listening = listening

    def forget(self) -> None:
        """The next game is dealt from a deck this bot was dealt (a duplicate pair's second
        game, a void's replay): it is told ``Shutdown`` and started afresh, so it plays with
        no memory of the deal (:class:`referee.series.ForgettingSlot`)."""
        if self._client is None and self._async_client is None:
            return  # not started: it has seen nothing
        if not self._failed:
            self._restart_reason = FORGET_REASON
            self.failed(listening=True)

    def gone_at_game_end(self) -> None:
        """The bot could not take its GameEnd: it exited or closed its stream as the game
        ended (at a table, perhaps long after it went out and was last asked). That is
        leaving between games: it forfeits the next game, then is restarted."""
        self._gone_at_game_end = True

    def diagnose(self) -> GameEndReason | None:
        """The sandbox's verdict on a bot that died: memory or disk limit, if that is why.

        Raises InfrastructureError (the game is voided, not forfeited) when the bot's
        sandbox was stopped or removed from outside the bot (a sweep, the engine). When this
        runner closes the slot itself (Ctrl-C, a lost lease, shutdown), its stop flag is
        already set, so the broken game is discarded, never recorded: nothing to say then.
        """
        running = self._running  # Ctrl-C may close the slot from another thread meanwhile
        if running is None or self._closing:
            return None
        # The connection usually breaks a moment before the engine reports the death.
        deadline = time.monotonic() + DEATH_REPORT_WAIT
        report = running.death()
        while report is None and time.monotonic() < deadline:
            time.sleep(0.05)
            report = running.death()
        if report is None:
            return None
        if self._closing:
            return None
        if report.cause in _STOPPED_BY_US:
            raise InfrastructureError(f"{self.name} was stopped by us: {report.describe()}")
        return _VERDICTS.get(report.cause)

    async def diagnosis(self) -> GameEndReason | None:
        """:meth:`diagnose` without holding up the event loop (it may wait for the sandbox)."""
        return await asyncio.to_thread(self.diagnose)

    def death_description(self) -> str:
        """How the bot's process ended (exit status, signal, the sandbox's verdict), or ''
        while it runs (or after this slot stopped it)."""
        running = self._running
        report = running.death() if running is not None else None
        return report.describe() if report is not None else ""

    def logs(self) -> str:
        """The tail of the bot's output (for reports)."""
        running = self._running
        return running.logs() if running is not None else ""

    def output_since(self, mark: OutputMark) -> tuple[str, bool, OutputMark]:
        """What the bot wrote after ``mark`` (``NO_OUTPUT_YET``, or a mark this slot
        returned), whether the sandbox's bounded tail no longer holds part of it, and the
        mark to pass next time. After a restart it is the new bot's output since it started
        (what the old one wrote after ``mark`` went with its sandbox)."""
        running, starts = self._running, self.starts
        if running is None:
            return "", False, mark
        position = mark[1] if mark[0] == starts else 0
        output = running.output_since(position)
        return output.text, output.cut, (starts, output.position)

    def _stop(self) -> None:
        with self._lock:  # Ctrl-C closes every slot from the main thread
            client, async_client, running = self._client, self._async_client, self._running
            self._client = self._async_client = self._running = None
        if client is not None:
            client.close()
        if async_client is not None:
            async_client.close()  # any thread: handed to its loop
        if running is not None:
            running.stop()

    def close(self) -> None:
        """Say goodbye (when it still listens, after a malformed reply too), then stop the
        bot and remove its sandbox.

        A game broken by this close is voided (see :meth:`diagnose`); cleanup failures are
        ours and raise CleanupError after every step ran.
        """
        self._closing = True
        client = self._client
        try:
            if client is not None and self._may_say_goodbye(
                client.closed, listening=self._listening, at_close=True
            ):
                self._say_goodbye(client, SERIES_OVER_REASON)
        finally:  # whatever the goodbye raised, the bot does not outlive its series
            self._stop()

    async def aclose(self) -> None:
        """:meth:`close` for a slot used on an event loop (its connection is of that loop)."""
        self._closing = True
        client = self._async_client
        try:
            if client is not None and self._may_say_goodbye(
                client.closed, listening=self._listening, at_close=True
            ):
                await self._asay_goodbye(client, SERIES_OVER_REASON)
        finally:  # whatever the goodbye raised, the bot does not outlive its series
            try:
                await asyncio.to_thread(self._stop)
            except RuntimeError:  # the loop's threads are shut down (the run is ending)
                self._stop()

    @property
    def aio(self) -> AsyncSandboxSeat:
        """This slot as the asynchronous series loop takes it (``AsyncBotSlot``)."""
        return AsyncSandboxSeat(self)


class AsyncSandboxSeat:
    """A :class:`SandboxSlot` as an ``AsyncBotSlot`` (for ``run_series_async``)."""

    def __init__(self, slot: SandboxSlot) -> None:
        self.slot = slot
        self.name = slot.name

    async def player(self, handshake: Handshake) -> AsyncPlayer:
        """The running, handshaken bot (see :meth:`SandboxSlot.start_player`)."""
        return await self.slot.start_player(handshake)

    async def diagnose(self) -> GameEndReason | None:
        """The sandbox's verdict after a failure (see :meth:`SandboxSlot.diagnose`)."""
        return await self.slot.diagnosis()

    def forget(self) -> None:
        """The bot starts afresh for the next game (see :meth:`SandboxSlot.forget`)."""
        self.slot.forget()


def _send_failed(slot: SandboxSlot, message: RefereeMessage) -> None:
    """A message the bot could not take: a GameEnd means it left as the game ended (the
    next game is its forfeit); anything else is a fault of the game under way."""
    if isinstance(message, GameEnd):
        slot.gone_at_game_end()
    else:
        slot.failed()


class _Watched:
    """The slot's client as a referee Player; any fault marks the slot for a restart."""

    def __init__(self, client: BotClient, slot: SandboxSlot) -> None:
        self._client = client
        self._slot = slot
        self.name = slot.name

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        try:
            return self._client.handshake(handshake, timeout=HANDSHAKE_SECONDS)
        except BotFault:
            self._slot.failed()
            raise

    def send(self, message: RefereeMessage) -> None:
        try:
            self._client.send(message)
        except BotFault:
            _send_failed(self._slot, message)
            raise

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        running = self._slot._running
        before = running.cpu_seconds() if running is not None else None
        try:
            reply = self._client.decide(view, clock, game_number=game_number, timeout=timeout)
        except BotFault as fault:
            self._slot.failed(listening=_still_listening(fault, self._client.closed))
            raise
        return _with_cpu(reply, running, before)


def _still_listening(fault: BotFault, closed: bool) -> bool:
    """Whether a bot that failed a decision with ``fault`` still reads its open stream: it
    sent something malformed, or reported an error (the SDK does when ``act`` raises), as
    opposed to hanging or leaving."""
    return isinstance(fault, MalformedReplyError | BotReportedError) and not closed


def _with_cpu(reply: Reply, running: RunningBot | None, before: float | None) -> Reply:
    """The reply with the bot's CPU time over the decision (its whole process tree, by its
    cgroup), where the sandbox counts it."""
    after = running.cpu_seconds() if running is not None else None
    if before is None or after is None:
        return reply
    return replace(reply, cpu=max(0.0, after - before))


class _AsyncWatched:
    """:class:`_Watched` for the asynchronous game loop."""

    def __init__(self, client: AsyncBotClient, slot: SandboxSlot) -> None:
        self._client = client
        self._slot = slot
        self.name = slot.name

    async def handshake(self, handshake: Handshake) -> HandshakeReply:
        try:
            return await self._client.handshake(handshake, timeout=HANDSHAKE_SECONDS)
        except BotFault:
            self._slot.failed()
            raise

    async def send(self, message: RefereeMessage) -> None:
        try:
            await self._client.send(message)
        except BotFault:
            _send_failed(self._slot, message)
            raise

    async def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        running = self._slot._running
        before = running.cpu_seconds() if running is not None else None
        try:
            reply = await self._client.decide(view, clock, game_number=game_number, timeout=timeout)
        except BotFault as fault:
            self._slot.failed(listening=_still_listening(fault, self._client.closed))
            raise
        return _with_cpu(reply, running, before)
