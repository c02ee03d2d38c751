"""Misbehaving bots over real gRPC, each started as a process: every kind of misbehaviour is
the right forfeit, the other bot wins, and the series goes on."""

from __future__ import annotations

import dataclasses
import re
import shutil
import time
from pathlib import Path

import pytest

from arena.tournament.config import SandboxSettings
from arena.tournament.seats import SandboxSlot
from arena.tournament.tracebacks import with_traceback
from referee.protocol.messages import GameEnd, GameEndReason, SeriesScore, TimeControl
from referee.record import GameRecord
from referee.series import (
    BotStartError,
    SeriesConfig,
    SeriesResult,
    run_series,
    series_handshake,
)
from sandbox import choose_backend, load_submission
from tests.sdk.helpers import liar_bot, python_bot

BOTS = Path(__file__).parent / "bots"
EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"
ROOMY = TimeControl(move_ms=10_000, bank_ms=60_000)
"""For every seat whose clock is not under test: on CI's busy machine a well-behaved move
must never be the forfeit that a test of another misbehaviour sees instead."""
STARTUP_SECONDS = 120.0
"""Starting a bot's process on a busy machine is not under test either."""


def series_against_greedy(
    fixture: str,
    games: int = 2,
    control: TimeControl = ROOMY,
    folder: Path | None = None,
    startup_seconds: float = STARTUP_SECONDS,
) -> tuple[SeriesResult, list[SandboxSlot]]:
    """``fixture`` in seat 0 under ``control`` with ``startup_seconds`` to start; the greedy
    bot in seat 1 under ROOMY with STARTUP_SECONDS."""
    backend = choose_backend("process", allow_unsafe=True)
    seat_limits = [
        SandboxSettings(startup_seconds=seconds).limits()
        for seconds in (startup_seconds, STARTUP_SECONDS)
    ]
    slots = [
        SandboxSlot(
            backend,
            load_submission(path),
            name=name,
            limits=seat_limits[seat],
            label=f"kryt-test-{fixture}-{seat}",
            trusted=True,
        )
        for seat, (name, path) in enumerate(
            [(fixture, folder or BOTS / fixture), ("greedy", EXAMPLES / "greedy")]
        )
    ]
    try:
        config = SeriesConfig(games=games, seed=7, seat_controls=(control, ROOMY))
        result = run_series(config, (slots[0], slots[1]))
    finally:
        for slot in slots:
            slot.close()
    return result, slots


def forfeits(result: SeriesResult) -> list[GameRecord]:
    return [g for g in result.games.values() if g.forfeit is not None]


def assert_every_game_forfeited(result: SeriesResult, reason: GameEndReason) -> None:
    assert len(result.games) == result.config.games  # the series went on
    for record in result.games.values():
        assert record.forfeit is not None, record
        assert record.forfeit.seat == 0 and record.forfeit.reason is reason, record.forfeit
        assert record.winner == 1


def test_sleeping_past_the_deadline_is_a_timeout() -> None:
    # Its 30 s nap overruns by far; its two good moves have room on a busy machine.
    control = TimeControl(move_ms=1000, bank_ms=3000, grace_ms=250)
    result, _ = series_against_greedy("sleeper", control=control)
    assert_every_game_forfeited(result, GameEndReason.TIMEOUT)
    for record in result.games.values():
        own = [m for m in record.moves if m.seat == 0]
        assert len(own) == 2  # two good moves, then the sleep


def test_the_bank_absorbs_overruns_until_it_is_gone() -> None:
    # Each move overruns by 0.4 s plus transport time (which a busy machine stretches).
    control = TimeControl(move_ms=300, bank_ms=2000, grace_ms=250)
    result, _ = series_against_greedy("bank-eater", games=1, control=control)
    assert_every_game_forfeited(result, GameEndReason.TIMEOUT)
    record = result.games[1]
    own = [m.seconds for m in record.moves if m.seat == 0]
    # The bank absorbs more than one overrun even if transport adds up to 0.7 s a move;
    # it is gone after at most (bank + grace) / 0.4 of them, however fast the transport.
    most = int((control.bank_ms + control.grace_ms) / 400)
    assert 2 <= len(own) <= most, own
    assert all(seconds > control.move_seconds + 0.3 for seconds in own)


def test_an_illegal_reply_forfeits_with_the_offending_input() -> None:
    result, _ = series_against_greedy("illegal")
    assert_every_game_forfeited(result, GameEndReason.ILLEGAL_ACTION)
    for record in result.games.values():
        assert record.forfeit is not None
        assert record.forfeit.offending_input in {
            "take"
        } or record.forfeit.offending_input.startswith("lead ")
        assert (
            record.forfeit.detail.startswith("illegal action")
            and "legal: " in record.forfeit.detail
        )


def test_a_malformed_reply_forfeits() -> None:
    result, _ = series_against_greedy("malformed")
    assert_every_game_forfeited(result, GameEndReason.MALFORMED_REPLY)
    record = result.games[1]
    assert record.forfeit is not None
    assert record.forfeit.offending_input == "dance the kazachok"


def test_a_crash_mid_game_forfeits_and_the_bot_is_restarted() -> None:
    result, slots = series_against_greedy("crasher", games=3)
    assert len(result.games) == 3
    crashed = forfeits(result)
    assert len(crashed) == 1 and crashed[0] is result.games[1]
    assert crashed[0].forfeit is not None
    assert crashed[0].forfeit.reason is GameEndReason.CRASH
    assert len(crashed[0].moves) > 6
    assert slots[0].starts == 2  # restarted once, for game 2
    assert all(result.games[n].forfeit is None for n in (2, 3))


def test_a_bot_that_exits_at_start_forfeits_the_rest_of_the_series() -> None:
    result, _ = series_against_greedy("exits-at-start", games=2)
    assert_every_game_forfeited(result, GameEndReason.STARTUP_FAILURE)
    for record in result.games.values():
        assert record.moves == ()
        assert record.forfeit is not None
        # How its process ended and what it printed follow on lines of their own.
        assert record.forfeit.detail == (
            "exits-at-start could not start: the bot exited before creating its socket"
            "\nits process: crashed, exit code 1\nlast output:\nthis bot refuses to start"
        ), record.forfeit.detail
        # Both bots read the detail: the sandbox's internal label is not in it.
        assert "kryt-test-" not in record.forfeit.detail


def test_a_bot_that_never_creates_its_socket_is_named_without_the_sandbox_label(
    tmp_path: Path,
) -> None:
    folder = python_bot(tmp_path / "mute", "mute", "1.0.0", "import time\ntime.sleep(120)\n")
    result, _ = series_against_greedy("mute", games=1, folder=folder, startup_seconds=1.0)
    assert_every_game_forfeited(result, GameEndReason.STARTUP_FAILURE)
    record = result.games[1]
    assert record.forfeit is not None
    assert record.forfeit.detail == (
        "mute could not start: the bot did not create its socket within 1 s"
    ), record.forfeit.detail


@pytest.mark.parametrize("mode", ["double", "early"])
def test_replying_twice_or_unasked_is_a_malformed_reply(mode: str, tmp_path: Path) -> None:
    folder = tmp_path / f"{mode}-reply"
    shutil.copytree(BOTS / "rude-replies", folder)
    manifest = folder / "bot.toml"
    manifest.write_text(manifest.read_text().replace('"double-reply"', f'"{mode}-reply"'))
    result, _ = series_against_greedy(folder.name, folder=folder)
    assert_every_game_forfeited(result, GameEndReason.MALFORMED_REPLY)
    for record in result.games.values():
        assert record.forfeit is not None
        # Caught before the next request is sent, or while waiting for its reply.
        assert re.search(
            r"nobody asked|second reply|instead of the reply|not to the pending",
            record.forfeit.detail,
        ), record.forfeit.detail


def test_well_behaved_bots_play_whole_games_over_grpc() -> None:
    backend = choose_backend("process", allow_unsafe=True)
    limits = SandboxSettings(startup_seconds=STARTUP_SECONDS).limits()
    slots = [
        SandboxSlot(
            backend,
            load_submission(EXAMPLES / name),
            name=name,
            limits=limits,
            label=f"kryt-test-ok-{name}",
            trusted=True,
        )
        for name in ("random", "greedy")
    ]
    try:
        config = SeriesConfig(games=4, seed=3, time_control=ROOMY)
        result = run_series(config, (slots[0], slots[1]))
    finally:
        for slot in slots:
            slot.close()
    assert not forfeits(result)
    assert all(not g.ending.is_forfeit and g.ending.counts for g in result.games.values())
    assert slots[0].starts == slots[1].starts == 1  # one process for the whole series


def test_a_reply_over_the_size_limit_is_a_malformed_reply() -> None:
    # Making 100 MB takes a while on a loaded machine: the deadline is not under test here.
    generous = TimeControl(move_ms=30_000, bank_ms=0)
    result, _ = series_against_greedy("huge-reply", games=1, control=generous)
    assert_every_game_forfeited(result, GameEndReason.MALFORMED_REPLY)
    record = result.games[1]
    assert record.forfeit is not None and "limit" in record.forfeit.detail
    assert len(record.forfeit.offending_input) < 200  # the 100 MB are not kept


def test_a_bot_that_dies_between_games_forfeits_the_next_one() -> None:
    """Dying after a game and before the next is a crash like any other, not a free restart
    (closing the stream there forfeits the next game too); the game after is played on a
    restarted bot. Whether the death is seen before GameStart or while sending it is a race:
    both ways the next game is a crash."""
    result, slots = series_against_greedy("exits-after-game", games=3)
    assert len(result.games) == 3
    crashed = forfeits(result)
    assert [g.forfeit.seat for g in crashed if g.forfeit] == [0], crashed
    assert crashed[0] is result.games[2]
    assert crashed[0].forfeit is not None
    assert crashed[0].forfeit.reason is GameEndReason.CRASH
    assert result.games[1].moves and result.games[3].moves
    assert slots[0].starts == 2  # game 1's bot, then game 3's


def test_a_bot_found_dead_before_a_game_forfeits_it_as_a_crash() -> None:
    """The slot itself: a bot that is no longer running when its next game begins forfeits
    that game (CRASH, saying so), and the slot starts a new bot for the game after."""
    backend = choose_backend("process", allow_unsafe=True)
    limits = SandboxSettings(startup_seconds=STARTUP_SECONDS).limits()
    slot = SandboxSlot(
        backend,
        load_submission(BOTS / "exits-after-game"),
        name="exits-after-game",
        limits=limits,
        label="kryt-test-dead-between-games",
        trusted=True,
    )
    handshake = series_handshake(SeriesConfig(games=3, seed=7), "nobody")
    try:
        player = slot.player(handshake)
        player.send(GameEnd(1, None, GameEndReason.TURN_LIMIT, "", None, (), SeriesScore(draws=1)))
        deadline = time.monotonic() + 60
        while slot._alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not slot._alive()
        with pytest.raises(BotStartError, match="exited between games") as caught:
            slot.player(handshake)
        assert caught.value.reason is GameEndReason.CRASH
        assert slot.starts == 1
        slot.player(handshake)  # restarted for the next game
        assert slot.starts == 2 and slot._alive()
    finally:
        slot.close()


def test_a_handshake_that_names_another_bot_is_quoted_with_its_escapes_once(
    tmp_path: Path,
) -> None:
    folder = liar_bot(tmp_path / "liar", "1.0.0")
    result, _ = series_against_greedy("liar", games=1, folder=folder)
    assert_every_game_forfeited(result, GameEndReason.STARTUP_FAILURE)
    record = result.games[1]
    assert record.forfeit is not None
    assert "the handshake says it is 'evil\\x1b]0;x\\x07' version '1.0.0'" in (
        record.forfeit.detail
    ), record.forfeit.detail


BANNER = "about to serve \x1b[2J\x1b]0;PWNED\x07"
"""What the bots below print first (at import, long before any deadline): a line they
control, with escape sequences that must reach nobody's terminal."""
SHOWN_BANNER = "about to serve \\x1b[2J\\x1b]0;PWNED\\x07"


def _printing_bot(folder: Path, name: str, hooks: str) -> Path:
    """A greedy Python bot that prints BANNER at import, with ``hooks`` in its class."""
    return python_bot(
        folder,
        name,
        "1.0.0",
        "import os, sys, time\nfrom sdk import Bot, serve\nfrom sdk.strategy import greedy_action"
        f"\n\nprint({BANNER!r}, file=sys.stderr, flush=True)\n\n\n"
        f"class B(Bot):\n    name = {name!r}\n    version = '1.0.0'\n\n{hooks}\n"
        "    def act(self, view):\n        return greedy_action(view.legal_actions, view.trump)"
        "\n\n\nif __name__ == '__main__':\n    serve(B())\n",
    )


def test_a_handshake_timeout_shows_the_bots_last_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The handshake's deadline is what is tested: 3 s instead of 10 keeps the test short.
    monkeypatch.setattr("arena.tournament.seats.HANDSHAKE_SECONDS", 3.0)
    hooks = (
        "    def on_handshake(self, series):\n"
        "        print('stuck in on_handshake', file=sys.stderr, flush=True)\n"
        "        time.sleep(120)\n"
    )
    folder = _printing_bot(tmp_path / "stuck", "stuck", hooks)
    result, _ = series_against_greedy("stuck", games=1, folder=folder)
    assert_every_game_forfeited(result, GameEndReason.STARTUP_FAILURE)
    detail = result.games[1].forfeit.detail  # type: ignore[union-attr]
    assert detail.startswith(
        "stuck failed the handshake: no handshake reply within 3.0s"
        "\nits process: still running\nlast output:\n"
    ), detail
    assert SHOWN_BANNER in detail.splitlines(), detail
    assert "\x1b" not in detail


def test_a_bot_that_dies_in_its_handshake_shows_how_and_its_last_output(tmp_path: Path) -> None:
    hooks = (
        "    def on_handshake(self, series):\n"
        "        print('giving up in on_handshake', file=sys.stderr, flush=True)\n"
        "        os._exit(3)\n"
    )
    folder = _printing_bot(tmp_path / "quitter", "quitter", hooks)
    result, _ = series_against_greedy("quitter", games=1, folder=folder)
    assert_every_game_forfeited(result, GameEndReason.STARTUP_FAILURE)
    detail = result.games[1].forfeit.detail  # type: ignore[union-attr]
    first, _, rest = detail.partition("\n")
    assert first.startswith("quitter failed the handshake: "), detail
    assert rest.startswith("its process: crashed, exit code 3\nlast output:\n"), detail
    assert SHOWN_BANNER in rest.splitlines() and "giving up in on_handshake" in rest, detail


def test_a_ruleset_refusal_adds_no_output(tmp_path: Path) -> None:
    """The bot answered: the refusal says it all (and names the Bot class: it uses the SDK)."""
    folder = _printing_bot(tmp_path / "plain", "plain", "")
    backend = choose_backend("process", allow_unsafe=True)
    slot = SandboxSlot(
        backend,
        load_submission(folder),
        name="plain",
        limits=SandboxSettings(startup_seconds=STARTUP_SECONDS).limits(),
        label="kryt-test-plain",
        trusted=True,
    )
    handshake = series_handshake(SeriesConfig(games=1, seed=7), "other")
    try:
        with pytest.raises(BotStartError) as caught:
            slot.player(dataclasses.replace(handshake, ruleset="classic"))
    finally:
        slot.close()
    assert str(caught.value) == (
        "plain failed the handshake: bot 'plain' 1.0.0 plays the rulesets ['default'],"
        " not 'classic' (its Bot class must list 'classic' in `rulesets`)"
    )


def test_a_move_timeout_keeps_the_bots_last_output_in_the_record(tmp_path: Path) -> None:
    """As the tournament runner records a game: the output is read once the game ended in a
    timeout, while the bot (hung, still running) has not been replaced yet."""
    hooks = (
        "    def on_game_start(self, game):\n"
        "        print('thinking very hard \\x1b[31m', file=sys.stderr, flush=True)\n"
        "        time.sleep(120)\n"
    )
    folder = _printing_bot(tmp_path / "hanger", "hanger", hooks)
    backend = choose_backend("process", allow_unsafe=True)
    limits = SandboxSettings(startup_seconds=STARTUP_SECONDS).limits()
    slots = [
        SandboxSlot(
            backend, load_submission(path), name=name, limits=limits, label=label, trusted=True
        )
        for name, path, label in [
            ("hanger", folder, "kryt-test-hanger-0"),
            ("greedy", EXAMPLES / "greedy", "kryt-test-hanger-1"),
        ]
    ]
    recorded: list[GameRecord] = []

    def recorder(_number: int, _attempt: int, record: GameRecord) -> None:
        recorded.append(
            with_traceback(
                record,
                lambda seat: slots[seat].logs(),
                death_of=lambda seat: slots[seat].death_description(),
            )
        )

    # The hung seat's clock is what is tested; the other seat's is roomy.
    control = TimeControl(move_ms=500, bank_ms=500, grace_ms=250)
    try:
        config = SeriesConfig(games=1, seed=7, seat_controls=(control, ROOMY))
        run_series(config, (slots[0], slots[1]), recorder=recorder)
    finally:
        for slot in slots:
            slot.close()
    (record,) = recorded
    assert record.forfeit is not None and record.forfeit.reason is GameEndReason.TIMEOUT
    first, _, rest = record.forfeit.detail.partition("\n")
    assert "its process" not in first and "output" not in first, first
    assert rest.startswith("its process: still running\nlast output:\n"), rest
    lines = rest.splitlines()
    assert SHOWN_BANNER in lines and "thinking very hard \\x1b[31m" in lines, rest
