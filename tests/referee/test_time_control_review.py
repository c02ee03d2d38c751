"""A review of the referee's time control against docs/protocol.md ("Deadlines and time
control") and docs/configuration.md ("Time controls"), with real bots over real gRPC.

Every bot here is one Python bot (``PLANNED``) started by the arena's own seat
(:class:`arena.tournament.seats.SandboxSlot`, the plain-process backend, as
``tests/referee/test_misbehaving.py`` starts its bots) and played by the tournament's
asynchronous series loop (:func:`referee.series.run_series_async`). What it does is read from
a plan written next to it: sleep before some moves, hang, stop itself, close its stream,
answer twice or with another request id, sleep in its handshake or before it serves. It logs
what the referee shows it (its control in the handshake and in every ``GameStart``, the
``Clock`` of every request) to a file the test reads back, so what a bot is *told* is
compared with what the referee *charged* (the move times of the game record).

Margins are for a busy two-core machine: "inside" a limit is at least five times below it,
"outside" at least five times above it, and no test depends on which of two concurrent
events comes first.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from arena.db.gamecodec import Table, pack, unpack
from arena.db.games import check_storable, controls_from_text, controls_text
from arena.tournament.config import SandboxSettings
from arena.tournament.seats import SandboxSlot
from referee.protocol.messages import (
    CPU_CLOCK_WALL_FACTOR,
    HANDSHAKE_SECONDS,
    GameEndReason,
    TimeControl,
)
from referee.record import GameRecord, Move
from referee.series import SeriesConfig, SeriesResult, first_dealer, run_series_async
from referee.timecontrol import GameClock
from sandbox import choose_backend, load_submission
from sandbox.backend import Backend
from tests.sdk.helpers import python_bot

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
GREEDY = ROOT / "sdk" / "examples" / "greedy"
ROOMY = TimeControl(move_ms=10_000, bank_ms=60_000)
"""The clock of every seat that is not under test: never the forfeit a test sees instead."""
STARTUP_SECONDS = 60.0
"""Starting a bot on a busy machine is not under test (except where it is)."""

PLANNED = '''\
"""A bot that follows the plan beside it and logs what the referee shows it."""

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

from referee.protocol.messages import Decision
from referee.protocol.wire import decode_bot_message, encode_bot_message
from sdk import Bot
from sdk.server import BotServer, resolve_address

PLAN = json.loads((Path(__file__).parent / "plan.json").read_text())
LOG = Path(PLAN["log"]) if PLAN.get("log") else None


def _previous_starts():
    try:
        lines = LOG.read_text().splitlines() if LOG is not None else []
    except OSError:
        return 0
    return sum(1 for line in lines if json.loads(line)["event"] == "start")


START = _previous_starts() + 1
NOW = {"key": "", "copies": 1, "game": 0}


def log(**event):
    event["start"] = START
    event["at"] = time.time()
    if PLAN.get("stderr"):  # a sandbox that hides the log file still shows the output
        print("KRYTLOG " + json.dumps(event), file=sys.stderr, flush=True)
    if LOG is None:
        return
    try:
        with LOG.open("a") as out:
            out.write(json.dumps(event) + "\\n")
    except OSError:
        pass


def control(tc):
    return [tc.move_ms, tc.bank_ms, tc.increment_ms, tc.grace_ms, tc.clock]


def planned(name):
    return NOW["key"] in PLAN.get(name, [])


class Planned(Bot):
    move = 0

    def on_handshake(self, series):
        log(event="handshake", control=control(series.time_control))
        time.sleep(PLAN.get("handshake_sleep", {}).get(str(START), 0))

    def on_game_start(self, game):
        self.move = 0
        log(event="game_start", game=game.game_number, control=control(game.time_control))

    def on_game_end(self, result):
        time.sleep(PLAN.get("end_sleep", 0))  # a bot that takes its time over a result
        log(event="game_end", game=result.game_number, reason=result.reason.value)

    def act(self, view):
        self.move += 1
        game = self.context.game_number
        NOW["key"] = key = f"{START}:{game}:{self.move}"
        clock = self.clock
        log(event="request", game=game, move=self.move, clock=[clock.move_ms, clock.bank_ms])
        last = len(view.history) + 1 == self.context.turn_limit
        NOW["copies"] = PLAN.get("last_copies", 1) if last else 1
        NOW["game"] = game
        if planned("hang"):
            time.sleep(3600)
        pattern = PLAN.get("pattern") or [0]
        time.sleep(PLAN.get("sleep", {}).get(key, pattern[(self.move - 1) % len(pattern)]))
        return view.legal_actions[0]


class PlannedServer(BotServer):
    async def _play(self, requests, context):
        async for item in super()._play(requests, context):
            message = decode_bot_message(item)
            if not isinstance(message, Decision):
                yield item
                continue
            if planned("close"):
                log(event="closing")
                return
            if planned("wrong_id"):
                wrong = Decision(request_id=message.request_id ^ 2, action=message.action)
                log(event="wrong_id", sent=wrong.request_id, asked=message.request_id)
                yield encode_bot_message(wrong)
                continue
            yield item
            if planned("double"):
                yield item
            for _ in range(NOW["copies"] - 1):  # the last answer of a game, sent again
                log(event="copy", game=NOW["game"])
                yield item
            if planned("sigstop"):
                await asyncio.sleep(0.3)  # the answer leaves; the next request waits
                log(event="stopping")
                os.kill(os.getpid(), signal.SIGSTOP)


if __name__ == "__main__":
    log(event="start")
    time.sleep(PLAN.get("startup_sleep", {}).get(str(START), 0))
    server = PlannedServer(Planned(), resolve_address())
    server.start()
    while not server.wait(0.5):
        pass
    server.stop(grace=0.5)
'''


@dataclass
class Played:
    """A series played by the arena's seats, and what the planned bot(s) logged."""

    result: SeriesResult
    slots: list[SandboxSlot]
    logs: dict[int, list[dict[str, Any]]]
    """Per seat: the events the planned bot at that seat logged (empty for greedy)."""

    def game(self, number: int) -> GameRecord:
        return self.result.games[number]

    def events(self, seat: int, kind: str, **where: object) -> list[dict[str, Any]]:
        return [
            e
            for e in self.logs[seat]
            if e["event"] == kind and all(e.get(k) == v for k, v in where.items())
        ]


def planned_bot(folder: Path, name: str, plan: dict[str, Any]) -> Path:
    """A bot folder for ``PLANNED`` under ``name``, following ``plan`` (its log: ``log.jsonl``
    beside the folder, outside what the bot is given)."""
    python_bot(folder, name, "1.0.0", PLANNED)
    plan = {"log": str(folder.parent / f"{name}.log.jsonl"), **plan}
    (folder / "plan.json").write_text(json.dumps(plan))
    return folder


def read_log(folder: Path, name: str) -> list[dict[str, Any]]:
    path = folder.parent / f"{name}.log.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def play(
    tmp_path: Path,
    plans: tuple[dict[str, Any] | None, dict[str, Any] | None],
    controls: tuple[TimeControl, TimeControl],
    *,
    games: int = 1,
    turn_limit: int = 16,
    startup_seconds: tuple[float, float] = (STARTUP_SECONDS, STARTUP_SECONDS),
    backend: Backend | None = None,
    seed: int = 7,
) -> Played:
    """A series of ``games`` between the planned bot (``plans[s]``; None: greedy) at each
    seat, under ``controls``, played as a tournament plays it (async loop, sandbox seats)."""
    backend = backend or choose_backend("process", allow_unsafe=True)
    folders: list[tuple[str, Path]] = []
    for seat, plan in enumerate(plans):
        if plan is None:
            folders.append(("greedy", GREEDY))
        else:
            name = f"planned{seat}"
            folders.append((name, planned_bot(tmp_path / name, name, plan)))
    slots = [
        SandboxSlot(
            backend,
            load_submission(path),
            name=name,
            limits=SandboxSettings(startup_seconds=startup_seconds[seat]).limits(),
            label=f"kryt-tcr-{seat}",
            trusted=True,
        )
        for seat, (name, path) in enumerate(folders)
    ]
    config = SeriesConfig(games=games, seed=seed, seat_controls=controls, turn_limit=turn_limit)

    output: dict[int, str] = {}

    async def series() -> SeriesResult:
        try:
            return await run_series_async(config, (slots[0].aio, slots[1].aio))
        finally:
            for seat, slot in enumerate(slots):
                output[seat] = slot.logs()  # what the last process wrote
                await slot.aclose()

    result = asyncio.run(series())
    logs: dict[int, list[dict[str, Any]]] = {}
    for seat, (name, path) in enumerate(folders):
        plan = plans[seat]
        if plan is None:
            logs[seat] = []
        elif plan.get("stderr"):
            lines = output[seat].splitlines()
            logs[seat] = [json.loads(x[8:]) for x in lines if x.startswith("KRYTLOG ")]
        else:
            logs[seat] = read_log(path, name)
    return Played(result, slots, logs)


def own_moves(record: GameRecord, seat: int) -> list[Move]:
    return [m for m in record.moves if m.seat == seat]


def expected_banks(control: TimeControl, moves: list[Move]) -> list[float]:
    """The bank (seconds) before each of ``moves`` and after the last, as documented: time
    over the move limit comes out of the bank (then the grace), and every move in time earns
    the increment."""
    bank = control.bank_seconds
    banks = [bank]
    for move in moves:
        over = move.seconds - control.move_seconds
        bank -= min(max(over, 0.0), bank)
        bank += control.increment_seconds
        banks.append(bank)
    return banks


def assert_told_what_was_charged(
    played: Played, seat: int, number: int, control: TimeControl, start: int = 1
) -> list[int]:
    """Every request of game ``number`` showed the bot at ``seat`` its move limit and the
    bank left after the charges of its recorded moves (to the millisecond). Returns the
    banks told, in ms."""
    record = played.game(number)
    moves = own_moves(record, seat)
    requests = played.events(seat, "request", game=number, start=start)
    told = [r["clock"][1] for r in requests]
    # One request per recorded move, plus the one a forfeit may have ended unanswered.
    assert len(moves) <= len(told) <= len(moves) + 1, (moves, told)
    assert all(r["clock"][0] == control.move_ms for r in requests), requests
    banks = expected_banks(control, moves)
    for k, bank_ms in enumerate(told):
        assert abs(bank_ms - round(banks[k] * 1000)) <= 1, (k, told, banks, moves)
    return told


def limit_in(detail: str) -> float:
    """The allowance a TIMEOUT's detail names (a reply that never came, or came late)."""
    found = re.search(r"no decision within (\d+\.\d+)s|the limit was (\d+\.\d+)s", detail)
    assert found, detail
    return float(found.group(1) or found.group(2))


def assert_forfeited(record: GameRecord, seat: int, reason: GameEndReason) -> str:
    assert record.forfeit is not None, record
    assert (record.forfeit.seat, record.forfeit.reason) == (seat, reason), record.forfeit
    assert record.ending is reason and record.winner == 1 - seat
    return record.forfeit.detail


def assert_played_out(record: GameRecord) -> None:
    assert record.forfeit is None, record.forfeit
    assert not record.ending.is_forfeit and record.ending.counts, record.ending


# --------------------------------------------------------------- the bank: inside, outside


BANKED = TimeControl(move_ms=100, bank_ms=2000, grace_ms=50)


def test_an_overrun_inside_the_bank_is_charged_to_it_and_the_bot_plays_on(
    tmp_path: Path,
) -> None:
    """0.3 s on a 0.1 s move with a 2 s bank: 0.2 s (and transport) come out of the bank,
    the next request says so, and the game goes on to its end."""
    played = play(tmp_path, ({"sleep": {"1:1:2": 0.3}}, None), (BANKED, ROOMY))
    record = played.game(1)
    assert_played_out(record)
    moves = own_moves(record, 0)
    assert len(moves) >= 3
    assert moves[1].seconds >= 0.3  # the referee measured at least the sleep
    told = assert_told_what_was_charged(played, 0, 1, BANKED)
    assert told[0] == BANKED.bank_ms  # nothing is charged before the first move
    assert told[2] <= BANKED.bank_ms - 200  # the overrun came out of the bank
    assert told[2] >= BANKED.bank_ms - 1500  # and not much more (room for a busy machine)
    # Every seat is told its own control in the handshake and in every GameStart.
    shown = [BANKED.move_ms, BANKED.bank_ms, 0, BANKED.grace_ms, "wall"]
    assert [e["control"] for e in played.events(0, "handshake")] == [shown]
    assert [e["control"] for e in played.events(0, "game_start")] == [shown]
    assert record.time_controls == (BANKED, ROOMY)


def test_an_overrun_past_bank_and_grace_is_a_timeout_the_referee_does_not_wait_out(
    tmp_path: Path,
) -> None:
    """4 s on a 0.1 s move with a 2 s bank and a 50 ms grace: TIMEOUT at the hard deadline
    (move + bank + grace), not when the reply would have come; the opponent wins and the
    series goes on with a fresh bot."""
    plan = {"sleep": {"1:1:2": 4.0}}
    played = play(tmp_path, (plan, None), (BANKED, ROOMY), games=2)
    record = played.game(1)
    detail = assert_forfeited(record, 0, GameEndReason.TIMEOUT)
    moves = own_moves(record, 0)
    assert len(moves) == 1  # the first move; the second never counted
    told = assert_told_what_was_charged(played, 0, 1, BANKED)
    # The limit named is the documented hard deadline: the move, the bank left, the grace.
    assert limit_in(detail) == pytest.approx(0.1 + told[1] / 1000 + 0.05, abs=0.0015)
    # The game ended at the deadline, long before the 4 s reply.
    (asked,) = played.events(0, "request", game=1, move=2)
    waited = record.finished - asked["at"]
    assert limit_in(detail) - 0.1 <= waited < 3.9, waited
    # The series went on: game 2 on a restarted bot, played out.
    assert_played_out(played.game(2))
    assert played.slots[0].starts == 2


# --------------------------------------------------------------- grace: once per game


def test_the_grace_is_spent_like_the_bank_once_per_game_not_per_move(tmp_path: Path) -> None:
    """No bank, a 0.2 s move and a 1 s grace; every move overruns by about 0.3 s. A grace
    given again on every move would absorb each overrun for ever; spent like the bank, it
    is gone after a few moves: TIMEOUT, with the limit named that of the grace left."""
    control = TimeControl(move_ms=200, bank_ms=0, grace_ms=1000)
    played = play(tmp_path, ({"pattern": [0.5]}, None), (control, ROOMY), turn_limit=60)
    record = played.game(1)
    detail = assert_forfeited(record, 0, GameEndReason.TIMEOUT)
    moves = own_moves(record, 0)
    overs = [m.seconds - 0.2 for m in moves]
    assert all(over >= 0.3 for over in overs)
    assert 1 <= len(moves) <= 3 and sum(overs) <= 1.0, overs
    # The last request was allowed the move plus what was left of the grace.
    assert limit_in(detail) == pytest.approx(0.2 + 1.0 - sum(overs), abs=0.0015)
    # The grace is never shown as bank: every request says bank 0.
    requests = played.events(0, "request", game=1)
    assert [r["clock"] for r in requests] == [[200, 0]] * (len(moves) + 1)


# --------------------------------------------------------------- increments


def test_the_increment_is_added_after_each_move_in_time_and_shown_in_the_next_request(
    tmp_path: Path,
) -> None:
    """1 s bank, 0.2 s moves, 0.15 s increment; the bot alternates a prompt move and a
    0.35 s one. Each request shows the bank the charges left: +0.15 s after a prompt move,
    +0.15 s minus the overrun after a slow one; never more than the bank plus the
    increments earned."""
    control = TimeControl(move_ms=200, bank_ms=1000, grace_ms=50, increment_ms=150)
    played = play(tmp_path, ({"pattern": [0, 0.35]}, None), (control, ROOMY), turn_limit=24)
    record = played.game(1)
    assert_played_out(record)
    assert record.ending is GameEndReason.TURN_LIMIT
    moves = own_moves(record, 0)
    assert len(moves) == 12
    told = assert_told_what_was_charged(played, 0, 1, control)
    assert len(told) == 12
    for k, bank_ms in enumerate(told):
        assert bank_ms <= control.bank_ms + k * control.increment_ms  # no more than earned
    for k in range(0, 12, 2):  # prompt moves (under 0.2 s: nothing over): exactly +150
        if moves[k].seconds < 0.2 and k + 1 < len(told):
            assert told[k + 1] - told[k] == 150, (k, told, moves[k])
    for k in range(1, 11, 2):  # slow moves: no more than the increment comes back
        assert told[k + 1] - told[k] <= 0, (k, told, moves[k])
    assert played.events(0, "game_start")[0]["control"][2] == 150  # told in GameStart


def test_the_bank_told_is_the_whole_bank_at_the_largest_settings(tmp_path: Path) -> None:
    """configuration.md allows a bank up to 86,400 s and an increment up to 3,600 s;
    protocol.md: the next request's bank includes the increment, and the bank stops growing
    at 24 h, the most a Clock carries. What the bot is told is what the referee waits for
    (it once grew the bank it waited for past 24 h and told the bot 24 h)."""
    control = TimeControl(move_ms=1000, bank_ms=86_400_000, grace_ms=50, increment_ms=3_600_000)
    played = play(tmp_path, ({}, None), (control, ROOMY), turn_limit=6)
    assert_played_out(played.game(1))
    told = [r["clock"][1] for r in played.events(0, "request", game=1)]
    moves = own_moves(played.game(1), 0)
    assert all(m.seconds < 1.0 for m in moves)  # every move in its move time
    assert len(told) >= 2 and told == [86_400_000] * len(told)
    # Below the cap the increment still counts in full, and the cap is the bank waited for.
    clock = GameClock(TimeControl(move_ms=1000, bank_ms=84_000_000, increment_ms=1_500_000))
    waits = []
    for _ in range(3):
        assert clock.charge(0, 0.01)
        waits.append((clock.wire_clock(0).bank_ms, clock.allowance(0)))
    assert waits == [
        (85_500_000, 1 + 85_500 + 0.05),
        (86_400_000, 1 + 86_400 + 0.05),
        (86_400_000, 1 + 86_400 + 0.05),
    ]


# --------------------------------------------------------------- per-bot controls


def test_each_bot_is_told_and_charged_its_own_control(tmp_path: Path) -> None:
    """Two planned bots under different controls (configuration.md, ``[bot_time]``): each
    is told its own in the handshake and every GameStart, each request shows its own move
    limit and bank, and one bot's overruns never touch the other's bank."""
    first = TimeControl(move_ms=200, bank_ms=1500, grace_ms=50, increment_ms=100)
    second = TimeControl(move_ms=300, bank_ms=2500, grace_ms=80)
    plans = ({"pattern": [0.4, 0]}, {"pattern": [0, 0, 0.5]})
    played = play(tmp_path, plans, (first, second), games=2, turn_limit=16)
    for number in (1, 2):
        record = played.game(number)
        assert_played_out(record)
        assert record.time_controls == (first, second)
        for seat, control in enumerate((first, second)):
            assert_told_what_was_charged(played, seat, number, control)
    for seat, control in enumerate((first, second)):
        shown = [control.move_ms, control.bank_ms, control.increment_ms, control.grace_ms, "wall"]
        assert [e["control"] for e in played.events(seat, "handshake")] == [shown]
        assert [e["control"] for e in played.events(seat, "game_start")] == [shown, shown]
    # Seat 1 answers its first two moves at once: its bank is untouched by seat 0's overruns.
    for number in (1, 2):
        told = [r["clock"][1] for r in played.events(1, "request", game=number)]
        moves = own_moves(played.game(number), 1)
        prompt = 0
        while prompt < 2 and moves[prompt].seconds < 0.3:
            prompt += 1
        assert told[: prompt + 1] == [2500] * (prompt + 1), (told, moves)


# --------------------------------------------------------------- hostile bots


def test_a_bot_that_never_answers_times_out_at_the_deadline(tmp_path: Path) -> None:
    control = TimeControl(move_ms=200, bank_ms=1000, grace_ms=50)
    played = play(tmp_path, ({"hang": ["1:1:1"]}, None), (control, ROOMY), games=2)
    record = played.game(1)
    detail = assert_forfeited(record, 0, GameEndReason.TIMEOUT)
    assert own_moves(record, 0) == []
    assert limit_in(detail) == pytest.approx(1.25, abs=0.0015)
    (asked,) = played.events(0, "request", game=1)
    assert 1.25 - 0.1 <= record.finished - asked["at"] < 6.25
    assert_played_out(played.game(2))
    assert played.slots[0].starts == 2
    # The restarted bot is handshaken again and told its control again.
    assert [e["start"] for e in played.events(0, "handshake")] == [1, 2]


def test_a_bot_that_answers_then_freezes_times_out_and_is_replaced(tmp_path: Path) -> None:
    """The bot answers its second move, then stops itself (SIGSTOP): its process is alive
    but will never read or answer again. Its next request times out (or the stopped answer
    never left it); GameEnd to a frozen bot does not hang the series; game 2 is played by a
    new process."""
    control = TimeControl(move_ms=200, bank_ms=1000, grace_ms=50)
    played = play(tmp_path, ({"sigstop": ["1:1:2"]}, None), (control, ROOMY), games=2)
    record = played.game(1)
    detail = assert_forfeited(record, 0, GameEndReason.TIMEOUT)
    # By its plan the bot stops itself 0.3 s after its second answer. Full runs under -n 2
    # have twice recorded a third move, answered 0.3 s after its request, as if the stop took
    # effect late (not reproduced alone). What must hold either way: the referee records no
    # move the bot did not make (each act is logged), and the bot made at least one.
    requests = played.events(0, "request", start=1, game=1)
    assert 1 <= len(own_moves(record, 0)) <= len(requests), (
        own_moves(record, 0),
        played.logs[0],
    )
    assert played.events(0, "stopping", start=1)
    assert limit_in(detail) <= 1.25 + 1e-9
    assert_told_what_was_charged(played, 0, 1, control)
    assert_played_out(played.game(2))
    assert played.slots[0].starts == 2


def test_a_bot_that_closes_its_stream_crashes_and_gets_no_game_end(tmp_path: Path) -> None:
    control = TimeControl(move_ms=1000, bank_ms=5000)
    played = play(tmp_path, ({"close": ["1:1:2"]}, None), (control, ROOMY), games=2)
    record = played.game(1)
    detail = assert_forfeited(record, 0, GameEndReason.CRASH)
    assert "closed the stream" in detail, detail
    assert len(own_moves(record, 0)) == 1
    assert played.events(0, "closing", start=1)
    # protocol.md: GameEnd is not sent to a bot whose stream is gone.
    assert played.events(0, "game_end", start=1) == []
    assert_played_out(played.game(2))
    assert played.slots[0].starts == 2
    assert [e["game"] for e in played.events(0, "game_end", start=2)] == [2]


def test_a_second_answer_to_one_request_forfeits_at_the_next_request(tmp_path: Path) -> None:
    """protocol.md: a second reply is a violation charged at the bot's next request of the
    same game (MALFORMED_REPLY); the bot still gets its GameEnd (its stream is open) and is
    restarted for the next game."""
    control = TimeControl(move_ms=1000, bank_ms=5000)
    played = play(tmp_path, ({"double": ["1:1:2"]}, None), (control, ROOMY), games=2)
    record = played.game(1)
    detail = assert_forfeited(record, 0, GameEndReason.MALFORMED_REPLY)
    assert "second reply" in detail, detail
    assert len(own_moves(record, 0)) == 2  # both answers in time; the forfeit at the third
    assert_told_what_was_charged(played, 0, 1, control)
    ends = played.events(0, "game_end", start=1)
    assert [(e["game"], e["reason"]) for e in ends] == [(1, "malformed reply")]
    assert_played_out(played.game(2))
    assert played.slots[0].starts == 2


@pytest.mark.parametrize("games", [1, 2], ids=["last_game", "before_the_next"])
def test_a_bot_restarted_after_a_malformed_reply_takes_its_game_end_first(
    tmp_path: Path, games: int
) -> None:
    """A bot restarted after a malformed reply (it still reads its stream) is told
    ``Shutdown`` and stopped once it ends the stream, so a bot slow over its GameEnd
    (0.2 s here) still takes it: before the next game, and at the end of the series."""
    control = TimeControl(move_ms=1000, bank_ms=5000)
    plan = {"double": ["1:1:2"], "end_sleep": 0.2}
    played = play(tmp_path, (plan, None), (control, ROOMY), games=games)
    assert_forfeited(played.game(1), 0, GameEndReason.MALFORMED_REPLY)
    ends = played.events(0, "game_end", start=1)
    assert [(e["game"], e["reason"]) for e in ends] == [(1, "malformed reply")]
    if games == 2:
        assert_played_out(played.game(2))
        assert played.slots[0].starts == 2


def test_an_answer_to_another_request_id_forfeits_at_once(tmp_path: Path) -> None:
    """A Decision for a request id it was not asked: MALFORMED_REPLY as soon as it comes,
    not after the deadline (25 s here); the opponent wins; the next game is played by a
    restarted bot."""
    control = TimeControl(move_ms=5000, bank_ms=20_000)
    played = play(tmp_path, ({"wrong_id": ["1:1:2"]}, None), (control, ROOMY), games=2)
    record = played.game(1)
    detail = assert_forfeited(record, 0, GameEndReason.MALFORMED_REPLY)
    (wrong,) = played.events(0, "wrong_id")
    assert f"a reply to request {wrong['sent']}, not to the pending {wrong['asked']}" in detail
    assert record.forfeit is not None and str(wrong["sent"]) in record.forfeit.offending_input
    assert len(own_moves(record, 0)) == 1
    (asked,) = played.events(0, "request", game=1, move=2)
    assert record.finished - asked["at"] < 5.0  # the referee did not wait out 25 s
    assert_played_out(played.game(2))
    assert played.slots[0].starts == 2


@pytest.mark.parametrize("sleep", [1.0, 60.0], ids=["inside", "outside"])
def test_a_bot_that_sleeps_in_its_handshake(tmp_path: Path, sleep: float) -> None:
    """The handshake has 10 s (protocol.md). 1 s is inside: both games are played. 60 s (on
    the first start only) is outside: the first game is a STARTUP_FAILURE after about 10 s
    with no GameStart, the opponent wins it, and the bot is tried again for the second."""
    plan = {"handshake_sleep": {"1": sleep}}
    started = time.monotonic()
    played = play(tmp_path, (plan, None), (ROOMY, ROOMY), games=2, turn_limit=8)
    took = time.monotonic() - started
    if sleep < HANDSHAKE_SECONDS:
        assert_played_out(played.game(1))
        assert_played_out(played.game(2))
        assert played.slots[0].starts == 1
        return
    record = played.game(1)
    detail = assert_forfeited(record, 0, GameEndReason.STARTUP_FAILURE)
    assert "handshake" in detail and "10.0s" in detail, detail
    assert record.moves == ()
    assert HANDSHAKE_SECONDS - 0.5 <= took < 45
    assert_played_out(played.game(2))
    assert played.slots[0].starts == 2
    # No GameStart for the unplayed game: the restarted bot's first is game 2.
    assert [e["game"] for e in played.events(0, "game_start")] == [2]


@pytest.mark.parametrize("sleep", [0.5, 60.0], ids=["inside", "outside"])
def test_a_bot_that_sleeps_before_it_serves(tmp_path: Path, sleep: float) -> None:
    """A 6 s start-up deadline (``[sandbox] startup_seconds``): a bot that serves after
    0.5 s plays; one that sleeps 60 s first (on its first start only) forfeits the first
    game as a STARTUP_FAILURE and plays the second."""
    plan = {"startup_sleep": {"1": sleep}}
    played = play(
        tmp_path, (plan, None), (ROOMY, ROOMY), games=2, turn_limit=8, startup_seconds=(6.0, 60)
    )
    if sleep < 6.0:
        assert_played_out(played.game(1))
        assert_played_out(played.game(2))
        assert played.slots[0].starts == 1
        return
    record = played.game(1)
    detail = assert_forfeited(record, 0, GameEndReason.STARTUP_FAILURE)
    assert "within 6 s" in detail, detail
    assert_played_out(played.game(2))
    assert played.slots[0].starts == 2


@pytest.mark.parametrize("copies", [2, 3], ids=["second", "third"])
def test_a_late_copy_of_a_games_last_answer(tmp_path: Path, copies: int) -> None:
    """protocol.md: a second reply to the bot's last request of a game is read with its
    next game's first request, dropped, and not charged to the next game (the bot plays on,
    unrestarted); another copy of it is a third reply, a violation charged to the game at
    hand (MALFORMED_REPLY at that first request)."""
    seed = 7
    # Action i is played by seat 1 - dealer when i is even: seat 0 plays the last action.
    turn_limit = 16 if first_dealer(seed) == 0 else 15
    control = TimeControl(move_ms=1000, bank_ms=5000)
    played = play(
        tmp_path,
        ({"last_copies": copies}, None),
        (control, ROOMY),
        games=2,
        turn_limit=turn_limit,
        seed=seed,
    )
    first = played.game(1)
    assert_played_out(first)
    assert first.ending is GameEndReason.TURN_LIMIT and first.moves[-1].seat == 0
    assert len(played.events(0, "copy", start=1, game=1)) == copies - 1
    second = played.game(2)
    if copies == 2:
        assert_played_out(second)
        assert played.slots[0].starts == 1
        return
    detail = assert_forfeited(second, 0, GameEndReason.MALFORMED_REPLY)
    assert "third reply" in detail, detail
    assert own_moves(second, 0) == []


# --------------------------------------------------------------- the record


def test_the_stored_game_keeps_the_move_times_that_were_charged(tmp_path: Path) -> None:
    """What the database stores of a game (its packed moves and its controls' text) gives
    back the very move times the clock charged, and the controls of both seats."""
    first = TimeControl(move_ms=200, bank_ms=1500, grace_ms=50, increment_ms=100)
    plans: tuple[dict[str, Any], None] = ({"pattern": [0.3, 0]}, None)
    played = play(tmp_path, plans, (first, ROOMY), turn_limit=12)
    record = played.game(1)
    assert_played_out(record)
    check_storable(record)
    table = Table(record.dealer, record.turn_limit, record.ruleset, record.seats)
    stored = unpack(pack(record.deck, record.moves, table), table)
    assert stored.moves == record.moves
    assert controls_from_text(controls_text(record.time_controls), 2) == (first, ROOMY)
    # The stored times are the charged ones: from them the banks the bot was told follow.
    banks = expected_banks(first, [m for m in stored.moves if m.seat == 0])
    told = [r["clock"][1] for r in played.events(0, "request", game=1)]
    assert [round(b * 1000) for b in banks[: len(told)]] == pytest.approx(told, abs=1)


# --------------------------------------------------------------- the CPU clock


def test_on_the_cpu_clock_sleeping_is_free_but_cut_at_four_times_the_allowance(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """protocol.md: on the CPU clock a move is charged the CPU time of the bot's process
    tree, and still has a hard wall limit of 4x its allowance. Under bwrap (which accounts
    CPU time), on a 0.3 + 0.6 + 0.05 s control, a bot that sleeps 0.6 s a move (twice its
    move time on the wall clock, a fifth of its hard limit) is charged nothing: every request
    still shows the whole bank. Sleeping 30 s is a TIMEOUT at 4 x 0.95 s = 3.8 s."""
    backend: Backend = request.getfixturevalue("bwrap_backend")
    control = TimeControl(move_ms=300, bank_ms=600, grace_ms=50, clock="cpu")
    plan = {"stderr": True, "pattern": [0.6], "sleep": {"1:1:3": 30.0}}
    played = play(tmp_path, (plan, None), (control, ROOMY), backend=backend, turn_limit=16)
    record = played.game(1)
    detail = assert_forfeited(record, 0, GameEndReason.TIMEOUT)
    moves = own_moves(record, 0)
    assert len(moves) == 2
    assert all(m.seconds >= 0.6 for m in moves), moves  # over the move time on the wall
    assert all(m.cpu_seconds is not None and m.cpu_seconds < 0.3 for m in moves), moves
    told = [r["clock"] for r in played.events(0, "request", game=1)]
    assert told == [[300, 600]] * 3  # nothing charged to the bank: the CPU was under 0.3 s
    allowance = 0.3 + 0.6 + 0.05
    assert limit_in(detail) == pytest.approx(CPU_CLOCK_WALL_FACTOR * allowance, abs=0.0015)
    assert record.finished - record.started < 25  # not the 30 s sleep
