"""A bot whose handshake reply refuses the series (a ruleset it does not list, another
protocol version) is started once per series: its later games are forfeited with the same
refusal, without starting it again. Every other start-up failure is still retried at each
game. The results (forfeits, details, dealers, winners) are those of a restart every game.

In process (``PlayerSlot`` + ``LocalPlayer``, counting starts) for the two-player series and
the classic table, then over real gRPC in the process sandbox (``SandboxSlot.starts``) on
both ways a slot is driven: blocking (the table runner) and on an event loop (the runner of
two-player series)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from arena.tournament.config import SandboxSettings
from arena.tournament.seats import SandboxSlot
from referee.client import BotFault, IncompatibleProtocolError, Reply
from referee.match import Player
from referee.protocol.messages import (
    AnyView,
    Clock,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    TimeControl,
)
from referee.record import GameRecord
from referee.rules import View
from referee.series import (
    BlockingSlot,
    BotStartError,
    SeriesConfig,
    run_series,
    run_series_async,
)
from referee.table import run_table_series, run_table_series_async
from sandbox import choose_backend, load_submission
from sdk.bot import Bot, SeriesInfo
from sdk.examples.random.bot import RandomBot
from sdk.tools.local import LocalPlayer, PlayerSlot
from tests.sdk.helpers import python_bot

FAST = TimeControl(move_ms=5000, bank_ms=5000)
EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"
BOTS = Path(__file__).parent / "bots"
STARTUP_SECONDS = 120.0
"""Starting a bot's process on a busy machine is not under test."""

REFUSES_DEFAULT = (
    "classiconly failed the handshake: bot 'classiconly' 1 plays the rulesets ['classic'],"
    " not 'default' (its Bot class must list 'default' in `rulesets`)"
)
REFUSES_CLASSIC = (
    "defonly failed the handshake: bot 'defonly' 1 plays the rulesets ['default'],"
    " not 'classic' (its Bot class must list 'classic' in `rulesets`)"
)


class ClassicOnly(Bot):
    name, version = "classiconly", "1"
    rulesets: ClassVar[tuple[str, ...]] = ("classic",)

    def act(self, view: View) -> str:
        return str(view.legal_actions[0])


class DefaultOnly(Bot):
    name, version = "defonly", "1"

    def act(self, view: View) -> str:
        return str(view.legal_actions[0])


class CrashesAtHandshake(DefaultOnly):
    """Its ``on_handshake`` raises: a start-up failure that is no refusal."""

    name = "crashy"

    def on_handshake(self, series: SeriesInfo) -> None:
        raise RuntimeError("no luck today")


class OldProtocol:
    """A player whose handshake reply speaks another protocol version."""

    name = "old"

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        from referee.client import check_handshake_reply

        reply = HandshakeReply(protocol_version=99, name="old", version="0.1", sdk="ancient")
        return check_handshake_reply(handshake, reply)

    def send(self, message: RefereeMessage) -> None:
        raise AssertionError("a refused bot is sent nothing")

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        raise AssertionError("a refused bot is asked nothing")


class Counted:
    """How many times each seat's player was started."""

    def __init__(self) -> None:
        self.starts: dict[str, int] = {}

    def slot(self, name: str, factory: Callable[[], Player]) -> PlayerSlot:
        """A slot that starts a fresh player for every (re)start, as a sandbox does."""

        def start() -> Player:
            self.starts[name] = self.starts.get(name, 0) + 1
            return factory()

        return PlayerSlot(start, name)

    def bot(self, name: str, factory: Callable[[], Bot]) -> PlayerSlot:
        return self.slot(name, lambda: LocalPlayer(factory()))


def essence(games: dict[int, GameRecord]) -> dict[int, tuple[object, ...]]:
    """A record without its times and moves' seconds."""
    return {
        n: (
            g.deck,
            g.dealer,
            tuple(m.action for m in g.moves),
            g.winner,
            g.loser,
            g.ending,
            g.forfeit,
            tuple(sorted(g.pairwise)),
            g.double_forfeit_detail,
        )
        for n, g in sorted(games.items())
    }


class _EveryTime:
    """An async slot that fails every start with ``message``, as a refusal or not; it
    counts its starts. Either way each game's forfeit is the same: the two differ only in
    how many times the bot is started."""

    def __init__(self, name: str, message: str, *, refusal: bool) -> None:
        self.name = name
        self.message = message
        self.refusal = refusal
        self.starts = 0

    async def player(self, handshake: Handshake) -> object:
        self.starts += 1
        if not self.refusal:
            raise BotStartError(self.message)
        try:  # as a slot words a refused handshake: raised while handling the refusal
            raise IncompatibleProtocolError("refused", "reply")
        except BotFault:
            raise BotStartError(self.message) from None

    async def diagnose(self) -> None:
        return None


def _random_bot(seed: int) -> Callable[[], Bot]:
    """A factory of the random example bot seeded ``seed``."""
    return lambda: RandomBot(seed)


def _random_slot(seat: int) -> PlayerSlot:
    """The random example bot at ``seat``, one object for the series (it never fails)."""
    player = LocalPlayer(RandomBot(seat))
    return PlayerSlot(lambda: player, f"random{seat}")


# ------------------------------------------------------------------ BotStartError.refused


def test_a_start_error_raised_for_an_incompatible_reply_is_a_refusal() -> None:
    try:
        try:
            raise IncompatibleProtocolError("bot speaks protocol version 9")
        except BotFault as exc:
            raise BotStartError(f"b failed the handshake: {exc}") from None
    except BotStartError as caught:
        assert caught.refused
        try:  # a wrapping slot that words it again still says it is one
            raise BotStartError(f"again: {caught}") from caught
        except BotStartError as wrapped:
            assert wrapped.refused
    assert not BotStartError("b could not start: exited").refused
    assert BotStartError("told so", refused=True).refused
    try:
        try:
            raise BotFault("the stream broke")
        except BotFault as exc:
            raise BotStartError(f"b failed the handshake: {exc}") from None
    except BotStartError as caught:
        assert not caught.refused


# --------------------------------------------------------------- two-player, in process


@pytest.mark.parametrize("seat", [0, 1])
def test_a_bot_refusing_the_ruleset_is_started_once_and_forfeits_every_game(seat: int) -> None:
    counted = Counted()
    pair = [counted.bot("classiconly", ClassicOnly), counted.bot("random", lambda: RandomBot(3))]
    if seat:
        pair.reverse()
    result = run_series(SeriesConfig(games=6, seed=4, time_control=FAST), (pair[0], pair[1]))
    assert counted.starts == {"classiconly": 1, "random": 1}
    assert len(result.games) == 6
    for record in result.games.values():
        assert record.ending is GameEndReason.STARTUP_FAILURE and record.moves == ()
        assert record.forfeit is not None and record.forfeit.seat == seat
        assert record.forfeit.reason is GameEndReason.STARTUP_FAILURE
        assert record.forfeit.detail == REFUSES_DEFAULT
        assert record.winner == 1 - seat
    # The loser deals: the refusing seat deals every game after the first.
    assert {g.dealer for n, g in result.games.items() if n > 1} == {seat}


def test_another_protocol_version_is_learnt_once_too() -> None:
    counted = Counted()
    pair = (counted.slot("old", OldProtocol), counted.bot("random", lambda: RandomBot(1)))
    result = run_series(SeriesConfig(games=4, seed=2, time_control=FAST), pair)
    assert counted.starts == {"old": 1, "random": 1}
    details = {g.forfeit.detail for g in result.games.values() if g.forfeit is not None}
    assert len(result.forfeits) == 4 and len(details) == 1
    (detail,) = details
    assert detail.startswith("old failed the handshake: bot 'old' 0.1 speaks protocol version 99")


def test_a_bot_that_fails_its_handshake_otherwise_is_started_at_every_game() -> None:
    counted = Counted()
    pair = (counted.bot("crashy", CrashesAtHandshake), counted.bot("random", lambda: RandomBot(1)))
    result = run_series(SeriesConfig(games=5, seed=2, time_control=FAST), pair)
    assert counted.starts == {"crashy": 5, "random": 1}
    for record in result.games.values():
        assert record.ending is GameEndReason.STARTUP_FAILURE and record.forfeit is not None
        assert record.forfeit.detail.startswith("crashy failed the handshake: bot reported")


def test_two_refusing_bots_are_each_started_once_for_the_series_of_double_forfeits() -> None:
    """Neither starts: every game is tried ``max_attempts`` times (the sandbox may be at
    fault), but a refusal is no sandbox's: it is not asked again."""
    counted = Counted()
    pair = (counted.bot("classiconly", ClassicOnly), counted.bot("classiconly", ClassicOnly))
    result = run_series(SeriesConfig(games=3, seed=2, time_control=FAST), pair)
    assert counted.starts == {"classiconly": 2}  # one per seat (both seats share a name)
    for record in result.games.values():
        assert record.ending is GameEndReason.DOUBLE_FORFEIT
        assert record.double_forfeit_detail == (
            f"neither bot could start: {REFUSES_DEFAULT}; {REFUSES_DEFAULT}"
        )


@pytest.mark.parametrize(
    "refusing",
    [(0,), (1,), (0, 1)],
)
def test_two_player_results_are_those_of_a_restart_at_every_game(
    refusing: tuple[int, ...],
) -> None:
    """The same series, once with seats that refuse (learnt) and once with seats that fail
    the same way without refusing (retried): the same games, only fewer starts."""

    def play(refusal: bool) -> tuple[dict[int, tuple[object, ...]], list[int]]:
        failing = {
            seat: _EveryTime(f"bot{seat}", f"bot{seat} failed the handshake", refusal=refusal)
            for seat in refusing
        }
        pair = tuple(failing.get(seat) or BlockingSlot(_random_slot(seat)) for seat in (0, 1))
        config = SeriesConfig(games=5, seed=8, time_control=FAST, max_attempts=2)
        result = asyncio.run(run_series_async(config, pair))  # type: ignore[arg-type]
        return essence(result.games), [s.starts for s in failing.values()]

    learnt, starts = play(refusal=True)
    retried, restarts = play(refusal=False)
    assert learnt == retried
    assert starts == [1] * len(refusing)
    assert restarts == [5 * (2 if len(refusing) == 2 else 1)] * len(refusing)


# ------------------------------------------------------------------ table, in process


@pytest.mark.parametrize("players", [2, 3, 4])
def test_a_table_bot_without_classic_is_started_once_and_forfeits_every_game(
    players: int,
) -> None:
    counted = Counted()
    slots = [counted.bot("defonly", DefaultOnly)] + [
        counted.bot(f"random{s}", _random_bot(s)) for s in range(1, players)
    ]
    config = SeriesConfig(games=5, seed=9, time_control=FAST, ruleset="classic", players=players)
    result = run_table_series(config, slots)
    assert counted.starts == {"defonly": 1, **{f"random{s}": 1 for s in range(1, players)}}
    for number, record in result.games.items():
        assert record.ending is GameEndReason.STARTUP_FAILURE and record.moves == ()
        assert record.forfeit is not None and record.forfeit.seat == 0
        assert record.forfeit.detail == REFUSES_CLASSIC
        assert record.loser == 0 and sorted(record.pairwise) == [(s, 0) for s in range(1, players)]
        if number > 1:
            assert record.dealer == 0  # the loser deals
    assert result.score(0).losses == 5


def test_a_table_bot_that_crashes_at_its_handshake_is_started_at_every_game() -> None:
    counted = Counted()
    slots = [
        counted.bot("crashy", CrashesAtHandshake),
        counted.bot("random1", lambda: RandomBot(1)),
        counted.bot("random2", lambda: RandomBot(2)),
    ]
    config = SeriesConfig(games=4, seed=9, time_control=FAST, ruleset="classic", players=3)
    result = run_table_series(config, slots)
    assert counted.starts == {"crashy": 4, "random1": 1, "random2": 1}
    assert all(g.forfeit is not None and g.forfeit.seat == 0 for g in result.games.values())


@pytest.mark.parametrize(("refusing", "seats"), [((0,), 3), ((0, 2), 3), ((1, 2, 3), 4)])
def test_table_results_are_those_of_a_restart_at_every_game(
    refusing: tuple[int, ...], seats: int
) -> None:
    """With several refusing seats every game is retried before they all forfeit (the
    first in the order of play is the loser and deals next): the same records either way."""

    def play(refusal: bool) -> tuple[dict[int, tuple[object, ...]], list[int]]:
        failing = {
            seat: _EveryTime(f"bot{seat}", f"bot{seat} failed the handshake", refusal=refusal)
            for seat in refusing
        }
        slots: Sequence[object] = [
            failing.get(seat) or BlockingSlot(_random_slot(seat)) for seat in range(seats)
        ]
        config = SeriesConfig(
            games=5, seed=3, time_control=FAST, ruleset="classic", players=seats, max_attempts=2
        )
        result = asyncio.run(run_table_series_async(config, slots))  # type: ignore[arg-type]
        return essence(result.games), [s.starts for s in failing.values()]

    learnt, starts = play(refusal=True)
    retried, restarts = play(refusal=False)
    assert learnt == retried
    assert starts == [1] * len(refusing)
    attempts = 1 if len(refusing) == 1 else 2
    assert restarts == [5 * attempts] * len(refusing)


# --------------------------------------------------------- over gRPC, in the process sandbox


def _sandbox_slot(folder: Path, name: str, seat: int) -> SandboxSlot:
    return SandboxSlot(
        choose_backend("process", allow_unsafe=True),
        load_submission(folder),
        name=name,
        limits=SandboxSettings(startup_seconds=STARTUP_SECONDS).limits(),
        label=f"kryt-test-refusal-{name}-{seat}",
        trusted=True,
    )


def _default_only_bot(folder: Path) -> Path:
    return python_bot(
        folder,
        "plain",
        "1.0.0",
        "from sdk import Bot, serve\nfrom sdk.strategy import greedy_action\n\n\n"
        "class B(Bot):\n    name = 'plain'\n    version = '1.0.0'\n\n"
        "    def act(self, view):\n        return greedy_action(view.legal_actions, view.trump)"
        "\n\n\nif __name__ == '__main__':\n    serve(B())\n",
    )


def test_a_sandboxed_bot_without_classic_is_started_once_at_a_table(tmp_path: Path) -> None:
    """The table runner's way: blocking ``SandboxSlot.player`` over real gRPC."""
    slots = [
        _sandbox_slot(_default_only_bot(tmp_path / "plain"), "plain", 0),
        _sandbox_slot(EXAMPLES / "random", "random", 1),
    ]
    config = SeriesConfig(games=3, seed=5, ruleset="classic", players=2)
    try:
        result = run_table_series(config, slots)
    finally:
        for slot in slots:
            slot.close()
    assert [slot.starts for slot in slots] == [1, 1]
    for record in result.games.values():
        assert record.ending is GameEndReason.STARTUP_FAILURE and record.forfeit is not None
        assert record.forfeit.seat == 0 and record.loser == 0
        assert record.forfeit.detail == (
            "plain failed the handshake: bot 'plain' 1.0.0 plays the rulesets ['default'],"
            " not 'classic' (its Bot class must list 'classic' in `rulesets`)"
        )


def _classic_only_bot(folder: Path) -> Path:
    source = _default_only_bot(folder) / "bot.py"
    text = source.read_text().replace(
        "    version = '1.0.0'\n", "    version = '1.0.0'\n    rulesets = ('classic',)\n"
    )
    source.write_text(text)
    return folder


@pytest.mark.parametrize(
    ("bot", "starts"),
    [("classic-only", 1), ("exits-at-start", 3)],
)
def test_a_sandboxed_bot_on_the_event_loop_is_restarted_unless_it_refused(
    tmp_path: Path, bot: str, starts: int
) -> None:
    """The two-player runner's way: ``SandboxSlot.start_player`` on the event loop. A bot
    refusing the ruleset is started once; one that exits at start at every game."""
    folder = _classic_only_bot(tmp_path / "plain") if bot == "classic-only" else BOTS / bot
    slots = [_sandbox_slot(folder, bot, 0), _sandbox_slot(EXAMPLES / "greedy", "greedy", 1)]
    config = SeriesConfig(games=3, seed=5)

    async def play() -> dict[int, GameRecord]:
        try:
            result = await run_series_async(config, (slots[0].aio, slots[1].aio))
        finally:
            for slot in slots:
                await slot.aclose()
        return result.games

    games = asyncio.run(play())
    assert [slot.starts for slot in slots] == [starts, 1]
    details = {g.forfeit.detail for g in games.values() if g.forfeit is not None}
    assert len(games) == 3 and all(g.forfeit and g.forfeit.seat == 0 for g in games.values())
    (detail,) = details
    if bot == "classic-only":
        assert detail == (
            "classic-only failed the handshake: bot 'plain' 1.0.0 plays the rulesets"
            " ['classic'], not 'default' (its Bot class must list 'default' in `rulesets`)"
        )
    else:
        assert detail.startswith("exits-at-start could not start: "), detail
