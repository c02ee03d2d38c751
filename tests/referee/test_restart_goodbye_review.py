"""An outside review of the goodbye before a restart (commit 86664ae, docs/protocol.md,
"Order of messages", the bullet after "After `Shutdown`"; the fault table under "Deadlines
and time control"), against hostile bots, with real bots over real gRPC.

A bot restarted after a malformed reply or a reported error (it still reads its stream) is
first sent ``Shutdown`` (reason ``restarted after a fault``) and killed as soon as its stream
ends, or 1 s after (``GOODBYE_SECONDS``), before the next game and at the end of the
series: it takes its ``GameEnd`` first. After any other fault (a timeout, a crash, a closed
stream) it is killed without ``Shutdown``. A second reply followed by a closed stream is
charged as the second reply (the first fault on the stream).

Every bot under test is one Python SDK bot (``PLANNED``) started by the arena's own seat
(:class:`arena.tournament.seats.SandboxSlot`, the plain-process backend, as
``tests/referee/test_time_control_review.py`` does) and played by the tournament's series
loops (:func:`referee.series.run_series_async`, :func:`referee.table.run_table_series_async`).
Its plan (``plan.json`` beside it) says which fault it makes (a second reply, a reply to
another request id, a Decision nobody asked for, bytes that do not parse, a hang, a reported
error) and how it then treats the goodbye: as the SDK does, by ignoring ``Shutdown`` and never
ending its stream, by flooding its stream, by sleeping in a hook, by closing its stream at
once (its process living on), or by ignoring SIGTERM (with a child of its own in a session of
its own). A reader task of the bot logs every message the referee sends as it arrives, even
while the bot's handler is stuck, so the log says whether the bot was ever sent ``Shutdown``.

Margins are for a busy two-core machine: "inside" a limit is at least five times below it,
"outside" at least five times above it, and no test depends on which of two concurrent
events comes first.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from arena.tournament.config import SandboxSettings
from arena.tournament.seats import GOODBYE_SECONDS, RESTART_REASON, SandboxSlot
from referee.protocol.messages import GameEndReason, TimeControl
from referee.record import GameRecord
from referee.series import SeriesConfig, SeriesResult, run_series, run_series_async
from referee.table import TableSeriesResult, run_table_series, run_table_series_async
from sandbox import SandboxLimits, Submission, choose_backend, load_submission
from sandbox.backend import Backend
from tests.sdk.helpers import planned_bot, read_log

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[2]
GREEDY = ROOT / "sdk" / "examples" / "greedy"
ROOMY = TimeControl(move_ms=10_000, bank_ms=60_000)
"""The clock of every seat not under test: never the forfeit a test sees instead."""
TIGHT = TimeControl(move_ms=200, bank_ms=1000, grace_ms=50)
"""The clock of a bot that hangs: 1.25 s in all, against a sleep of an hour."""
STARTUP_SECONDS = 60.0
"""Starting a bot on a busy machine is not under test."""
RESTART_BOUND = 10.0
"""Wall time allowed between the end of a game and the start of the next when one bot is
restarted: the goodbye (at most 1 s), the kill and a fresh Python process's start-up, on a
busy machine. A goodbye that waited for a hostile bot (30 s sleeps, endless streams) or for
the 10 s send timeout would be far over it."""
GOODBYE_SLACK = 5.0
"""The most the goodbye itself may take: five times its documented 1 s."""

PLANNED = '''\
"""A bot that follows the plan beside it, logs every message it is sent, and misbehaves."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from referee.protocol.messages import Decision, GameEnd, Shutdown
from referee.protocol.wire import decode_bot_message, decode_referee_message, encode_bot_message
from sdk import Bot
from sdk.server import BotServer, resolve_address

PLAN = json.loads((Path(__file__).parent / "plan.json").read_text())
LOG = Path(PLAN["log"])
FAULT = PLAN.get("fault") or {}
AFTER = PLAN.get("after", "polite")
CHILD = (
    "import signal, time\\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
    "time.sleep(3600)\\n"
)


def _previous_starts():
    try:
        lines = LOG.read_text().splitlines()
    except OSError:
        return 0
    return sum(1 for line in lines if json.loads(line)["event"] == "start")


START = _previous_starts() + 1
NOW = {"kind": ""}


def log(**event):
    event["start"] = START
    event["at"] = time.time()
    with LOG.open("a") as out:
        out.write(json.dumps(event) + "\\n")


def started_at(pid):
    """The process's start time in clock ticks (field 22 of /proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[19])


def still_running():
    """The processes of earlier starts (and their children) that still run now."""
    try:
        lines = LOG.read_text().splitlines()
    except OSError:
        return []
    left = []
    for line in lines:
        event = json.loads(line)
        if event["event"] in ("start", "child"):
            try:
                if started_at(event["pid"]) == event["started"]:
                    stat = Path(f"/proc/{event['pid']}/stat").read_text()
                    if stat.rpartition(")")[2].split()[0] not in ("Z", "X"):
                        left.append(event["pid"])
            except (OSError, ValueError, IndexError):
                pass
    return left


def at_fault(game, move):
    return (
        bool(FAULT)
        and FAULT.get("start", 1) == START
        and FAULT.get("game", 1) == game
        and FAULT.get("move", 2) == move
    )


def choose(actions):
    texts = [str(a) for a in actions]
    return next((t for t in texts if t.startswith("cover")), texts[0])


class Planned(Bot):
    rulesets = ("default", "classic")
    move = 0

    def on_game_start(self, game):
        self.move = 0

    def on_game_end(self, result):
        log(event="end_hook", game=result.game_number)
        if AFTER == "end_sleep" and START == FAULT.get("start", 1):
            time.sleep(30)  # a hook that takes its time: the bot reads nothing meanwhile
        log(event="end_hook_done", game=result.game_number)

    def _turn(self, text):
        time.sleep(PLAN.get("pace", 0))  # a slow mover
        self.move += 1
        game = self.context.game_number
        log(event="request", game=game, move=self.move)
        if at_fault(game, self.move):
            kind = FAULT["kind"]
            log(event="fault", game=game, move=self.move, kind=kind)
            if kind == "error":
                raise RuntimeError("planned error")
            if kind == "text":
                return "fold everything"  # read, not an action: the bot is kept
            NOW["kind"] = kind  # the server does the rest
        return text

    def act(self, view):
        return self._turn(str(view.legal_actions[0]))

    def act_table(self, view):
        return self._turn(choose(view.legal_actions))


class PlannedServer(BotServer):
    async def _play(self, requests, context):
        inbox = asyncio.Queue()

        async def read():
            # Every message is logged as it arrives, even while the handler is stuck.
            async for data in requests:
                message = decode_referee_message(data)
                kind = type(message).__name__
                if isinstance(message, Shutdown):
                    log(event="got", type=kind, reason=message.reason)
                    if AFTER == "sleep_shutdown":
                        time.sleep(30)  # as a hook would: the whole bot stands still
                        log(event="slept")
                    if AFTER in ("ignore", "flood", "sigterm", "close_on_shutdown"):
                        if AFTER == "close_on_shutdown":
                            await inbox.put(None)  # ends the stream; the process lives on
                        continue  # never handed on: the SDK would end the stream
                elif isinstance(message, GameEnd):
                    reason = message.reason.value if message.reason is not None else None
                    log(event="got", type=kind, game=message.game_number, reason=reason,
                        loser=message.loser)
                else:
                    log(event="got", type=kind)
                await inbox.put(data)
            log(event="requests_ended")
            if AFTER == "polite":
                await inbox.put(None)

        async def fed():
            while True:
                data = await inbox.get()
                if data is None:
                    return
                yield data

        reader = asyncio.ensure_future(read())
        try:
            async for item in super()._play(fed(), context):
                message = decode_bot_message(item)
                kind, NOW["kind"] = NOW["kind"], ""
                if not isinstance(message, Decision) or not kind:
                    yield item
                    continue
                if kind == "hang":
                    await asyncio.sleep(3600)  # the loop stays free: the reader still logs
                if kind == "huge":
                    log(event="huge")
                    yield b"\\x0a" * 70_000  # over the 64 KiB reply limit: the stream fails
                    await asyncio.sleep(3600)
                if kind == "garbage":
                    bad = b"\\x0a\\xff"  # a field whose length runs past the end
                elif kind == "wrong_id":
                    bad = encode_bot_message(
                        Decision(request_id=message.request_id ^ 2, action=message.action)
                    )
                    log(event="wrong_id", sent=message.request_id ^ 2)
                else:
                    yield item
                    if kind == "double":
                        bad = item
                    else:  # early: a Decision for a request nobody made
                        bad = encode_bot_message(
                            Decision(
                                request_id=(message.request_id + 12345) % 2**31,
                                action=message.action,
                            )
                        )
                yield bad
                if AFTER == "close_now":
                    log(event="closing")
                    return  # the stream ends at once; the process lives on
                if AFTER == "flood":
                    log(event="flooding")
                    while True:  # never reads again from here; the reader task does
                        yield bad
        finally:
            reader.cancel()
        if AFTER != "polite":
            log(event="stream_ended_by_bot")


if __name__ == "__main__":
    if AFTER == "sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    left = still_running()  # before this process is in the log itself
    log(event="start", pid=os.getpid(), started=started_at(os.getpid()), left=left)
    if AFTER == "sigterm" and START == FAULT.get("start", 1):
        child = subprocess.Popen([sys.executable, "-c", CHILD], start_new_session=True)
        log(event="child", pid=child.pid, started=started_at(child.pid))
    server = PlannedServer(Planned(), resolve_address())
    server.start()
    while not server.wait(0.5):
        pass
    if AFTER != "polite":
        while True:  # a bot that does not exit when told: only SIGKILL ends it
            time.sleep(0.5)
    server.stop(grace=0.5)
'''


# ---------------------------------------------------------------------------------- harness


class TimedSlot(SandboxSlot):
    """A :class:`SandboxSlot` that times its goodbye before each (re)start and its close."""

    def __init__(
        self,
        backend: Backend,
        submission: Submission,
        *,
        name: str,
        limits: SandboxLimits,
        label: str,
    ) -> None:
        super().__init__(backend, submission, name=name, limits=limits, label=label, trusted=True)
        self.goodbyes: list[float] = []
        self.closing: float | None = None

    async def _agoodbye_before_restart(self) -> None:
        began = time.monotonic()
        try:
            await super()._agoodbye_before_restart()
        finally:
            self.goodbyes.append(time.monotonic() - began)

    def _goodbye_before_restart(self) -> None:
        began = time.monotonic()
        try:
            super()._goodbye_before_restart()
        finally:
            self.goodbyes.append(time.monotonic() - began)

    async def aclose(self) -> None:
        began = time.monotonic()
        try:
            await super().aclose()
        finally:
            self.closing = time.monotonic() - began

    def close(self) -> None:
        began = time.monotonic()
        try:
            super().close()
        finally:
            self.closing = time.monotonic() - began


@dataclass
class Played:
    """A series played by the arena's seats, and what every planned bot logged."""

    games: dict[int, GameRecord]
    slots: list[TimedSlot]
    logs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    took: float = 0.0

    def game(self, number: int) -> GameRecord:
        return self.games[number]

    def events(self, seat: int, kind: str, **where: object) -> list[dict[str, Any]]:
        return [
            e
            for e in self.logs.get(seat, [])
            if e["event"] == kind and all(e.get(k) == v for k, v in where.items())
        ]

    def got(self, seat: int, message: str, start: int) -> list[dict[str, Any]]:
        return self.events(seat, "got", type=message, start=start)


def make_slots(
    tmp_path: Path, plans: list[dict[str, Any] | None], tag: str
) -> tuple[list[TimedSlot], dict[int, Path]]:
    backend = choose_backend("process", allow_unsafe=True)
    slots: list[TimedSlot] = []
    logs: dict[int, Path] = {}
    for seat, plan in enumerate(plans):
        if plan is None:
            name, path = "greedy", GREEDY
        else:
            name = f"planned{seat}"
            path = planned_bot(tmp_path / name, name, PLANNED, plan)
            logs[seat] = tmp_path / f"{name}.log.jsonl"
        slots.append(
            TimedSlot(
                backend,
                load_submission(path),
                name=name if plan is not None else f"greedy{seat}",
                limits=SandboxSettings(startup_seconds=STARTUP_SECONDS).limits(),
                label=f"kryt-rgr-{tag}-{seat}",
            )
        )
    return slots, logs


def play(
    tmp_path: Path,
    plan: dict[str, Any],
    *,
    games: int = 2,
    control: TimeControl = ROOMY,
    turn_limit: int = 16,
    blocking: bool = False,
    opponent: dict[str, Any] | None = None,
) -> Played:
    """A two-seat series: the planned bot at seat 0 under ``control``, greedy at seat 1,
    played by the tournament's asynchronous loop, or (``blocking``) by the blocking one the
    ladder and ``kryt play`` use (blocking seats, ``close`` instead of ``aclose``). With
    ``opponent``, seat 1 is a planned bot too, following that plan."""
    slots, paths = make_slots(tmp_path, [plan, opponent], "two")
    config = SeriesConfig(
        games=games, seed=7, seat_controls=(control, ROOMY), turn_limit=turn_limit
    )

    async def series() -> SeriesResult:
        try:
            return await run_series_async(config, (slots[0].aio, slots[1].aio))
        finally:
            for slot in slots:
                await slot.aclose()

    def blocking_series() -> SeriesResult:
        try:
            return run_series(config, (slots[0], slots[1]))
        finally:
            for slot in slots:
                slot.close()

    began = time.monotonic()
    result = blocking_series() if blocking else asyncio.run(series())
    took = time.monotonic() - began
    logs = {seat: read_log(path) for seat, path in paths.items()}
    return Played(dict(result.games), slots, logs, took)


def play_table(
    tmp_path: Path, plans: list[dict[str, Any]], *, seed: int, blocking: bool = False
) -> Played:
    """A classic table series of two games, a planned bot at every seat."""
    slots, paths = make_slots(tmp_path, list(plans), "table")
    config = SeriesConfig(
        games=2,
        seed=seed,
        ruleset="classic",
        players=len(plans),
        seat_controls=tuple([ROOMY] * len(plans)),
    )

    async def series() -> TableSeriesResult:
        try:
            return await run_table_series_async(config, [slot.aio for slot in slots])
        finally:
            for slot in slots:
                await slot.aclose()

    def blocking_series() -> TableSeriesResult:
        try:
            return run_table_series(config, slots)
        finally:
            for slot in slots:
                slot.close()

    began = time.monotonic()
    result = blocking_series() if blocking else asyncio.run(series())
    took = time.monotonic() - began
    logs = {seat: read_log(path) for seat, path in paths.items()}
    return Played(dict(result.games), slots, logs, took)


def _alive(pid: int, started: int) -> bool:
    """Whether the process ``pid`` that started at ``started`` (clock ticks) still runs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rpartition(")")[2].split()
    return int(fields[19]) == started and fields[0] not in ("Z", "X")


def assert_nothing_left(played: Played) -> None:
    """No process any planned bot logged (itself, its children) outlives the series."""
    procs = [
        (e["pid"], e["started"])
        for seat in played.logs
        for e in played.logs[seat]
        if e["event"] in ("start", "child")
    ]
    assert procs, played.logs
    deadline = time.monotonic() + 5.0
    left = [p for p in procs if _alive(*p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if _alive(*p)]
    assert left == [], f"bot processes outlived the series: {left}"


def assert_forfeited(record: GameRecord, seat: int, reason: GameEndReason) -> str:
    assert record.forfeit is not None, record
    assert (record.forfeit.seat, record.forfeit.reason) == (seat, reason), record.forfeit
    assert record.ending is reason
    return record.forfeit.detail


def assert_played_out(record: GameRecord) -> None:
    assert record.forfeit is None, record.forfeit
    assert not record.ending.is_forfeit and record.ending.counts, record.ending


def assert_restarted_fresh(played: Played, seat: int, number: int = 2) -> None:
    """Game ``number`` was played by the seat's second process, a new one."""
    assert played.slots[seat].starts == 2
    starts = played.events(seat, "start")
    assert [e["start"] for e in starts] == [1, 2]
    assert starts[0]["pid"] != starts[1]["pid"]
    # The old process (and any child of its) was killed before the new one started.
    assert starts[1]["left"] == [], starts[1]
    requests = played.events(seat, "request", game=number)
    assert requests and {e["start"] for e in requests} == {2}
    assert played.got(seat, "Handshake", 2), played.logs[seat]


def gap(played: Played, first: int = 1) -> float:
    """Wall time between the end of game ``first`` and the start of the next."""
    return played.game(first + 1).started - played.game(first).finished


# -------------------------------------------------- a malformed reply, then a hostile goodbye

DETAILS = {
    "double": ("second reply",),
    "wrong_id": ("not to the pending",),
    # Whether the unasked Decision arrives before the next request is sent or after it is a
    # race: it is named one way or the other.
    "early": ("nobody asked for", "not to the pending"),
    "garbage": ("not a kryt.v1.BotMessage",),
}

HOSTILE = [
    ("double", "polite", "async"),
    ("double", "ignore", "async"),
    ("wrong_id", "flood", "async"),
    ("early", "sleep_shutdown", "async"),
    ("garbage", "end_sleep", "async"),
    ("wrong_id", "close_now", "async"),
    ("double", "close_on_shutdown", "async"),
    ("garbage", "sigterm", "async"),
    ("double", "polite", "blocking"),
    ("wrong_id", "ignore", "blocking"),
    ("double", "flood", "blocking"),
    ("garbage", "sigterm", "blocking"),
]
QUICK = {"polite", "close_on_shutdown", "close_now"}
"""Bots that end their stream on the Shutdown (or before it): killed at once, not 1 s on."""
TOLD = {"polite", "ignore", "flood", "sleep_shutdown", "close_on_shutdown", "sigterm"}
"""Bots whose reader can log the Shutdown when it comes (the others are stuck or gone)."""


@pytest.mark.parametrize(
    ("kind", "after", "loop"), HOSTILE, ids=[f"{k}-{a}-{d}" for k, a, d in HOSTILE]
)
def test_a_malformed_reply_then_a_hostile_goodbye_costs_at_most_a_second(
    tmp_path: Path, kind: str, after: str, loop: str
) -> None:
    """protocol.md: a bot restarted after a malformed reply is sent ``Shutdown`` (reason
    ``restarted after a fault``) after its GameEnd and killed as soon as its stream ends, or
    1 s after. Whatever the bot does with the goodbye, the restart costs about that second
    at most, the forfeit names the fault, the next game is played by a fresh process, the
    runner goes on, and no process of the bot is left after the series. The same with the
    blocking series loop (the ladder, ``kryt play``)."""
    plan = {"fault": {"kind": kind}, "after": after}
    played = play(tmp_path, plan, blocking=loop == "blocking")
    detail = assert_forfeited(played.game(1), 0, GameEndReason.MALFORMED_REPLY)
    assert any(words in detail for words in DETAILS[kind]), detail
    (fault,) = played.events(0, "fault", start=1)
    assert (fault["game"], fault["move"], fault["kind"]) == (1, 2, kind)
    assert played.events(0, "fault", start=2) == []
    if kind == "wrong_id":
        (wrong,) = played.events(0, "wrong_id")
        assert f"a reply to request {wrong['sent']}" in detail, detail
    # The series went on: game 2 on a fresh process, played out.
    assert_played_out(played.game(2))
    assert_restarted_fresh(played, 0)
    assert played.slots[1].starts == 1
    # The restart cost the goodbye (at most about 1 s) and a start-up, not a hostile wait.
    goodbye = played.slots[0].goodbyes[1]
    assert goodbye < GOODBYE_SLACK, played.slots[0].goodbyes
    if after in QUICK:
        assert goodbye < GOODBYE_SECONDS, played.slots[0].goodbyes
    else:  # the bot never ended its stream: it had its whole second, not less
        assert goodbye >= GOODBYE_SECONDS - 0.05, played.slots[0].goodbyes
    assert 0 <= gap(played) < RESTART_BOUND, gap(played)
    # The bot took its GameEnd (its stream was open), then was told Shutdown, once.
    if after != "close_now":  # it left its stream: whether GameEnd still came is a race
        ends = played.got(0, "GameEnd", 1)
        assert [(e["game"], e["reason"]) for e in ends] == [(1, "malformed reply")]
    if after in TOLD:
        (bye,) = played.got(0, "Shutdown", 1)
        assert bye["reason"] == RESTART_REASON
        assert bye["at"] >= ends[0]["at"]
        # From the goodbye to the new process's first breath: a kill and a start-up.
        (second,) = played.events(0, "start", start=2)
        assert second["at"] - bye["at"] < RESTART_BOUND
    if after == "sleep_shutdown":
        assert played.events(0, "slept", start=1) == []  # killed in its 30 s sleep
    if after == "end_sleep":
        assert played.events(0, "end_hook", start=1, game=1)
        assert played.events(0, "end_hook_done", start=1) == []  # killed in its hook
    if after == "sigterm":
        assert len(played.events(0, "child", start=1)) == 1
    # The fresh process is told "series over" at the end, as any healthy bot.
    assert [e["reason"] for e in played.got(0, "Shutdown", 2)] == ["series over"]
    closing = played.slots[0].closing
    assert closing is not None and closing < GOODBYE_SLACK
    assert_nothing_left(played)


# ----------------------------------------------------------- the malformed reply ends a series

LAST = ["polite", "ignore", "flood", "sleep_shutdown", "sigterm"]


@pytest.mark.parametrize("after", LAST)
def test_a_malformed_reply_in_the_last_game_takes_its_game_end_then_the_series_ends(
    tmp_path: Path, after: str
) -> None:
    """protocol.md: the kill after a malformed reply comes "before the next game (or at the
    end of the series)", the bot still taking its GameEnd first. In a one-game series the
    bot gets its GameEnd, then one Shutdown; the series ends cleanly, within the 1 s goodbye
    (plus slack) for a bot that never ends its stream, and leaves no process behind."""
    played = play(tmp_path, {"fault": {"kind": "double"}, "after": after}, games=1)
    assert sorted(played.games) == [1]
    detail = assert_forfeited(played.game(1), 0, GameEndReason.MALFORMED_REPLY)
    assert "second reply" in detail, detail
    assert played.slots[0].starts == 1
    ends = played.got(0, "GameEnd", 1)
    assert [e["game"] for e in ends] == [1], played.logs[0]
    (bye,) = played.got(0, "Shutdown", 1)
    # Which words the end of the series uses for the goodbye is not under test here: the
    # restart's, or the end of the series' (both are goodbyes after the GameEnd).
    assert bye["reason"] in (RESTART_REASON, "series over")
    assert bye["at"] >= ends[0]["at"]
    closing = played.slots[0].closing
    assert closing is not None and closing < GOODBYE_SLACK
    if after == "polite":
        assert closing < GOODBYE_SECONDS
        assert played.events(0, "end_hook_done", start=1, game=1)
    else:
        assert closing >= GOODBYE_SECONDS - 0.05
    assert played.took < 60
    assert_nothing_left(played)


# --------------------------------------------------- other faults: killed without a goodbye


@pytest.mark.parametrize("games", [2, 1], ids=["before_the_next", "last_game"])
@pytest.mark.parametrize("kind", ["hang", "huge"])
def test_a_fault_that_is_not_malformed_is_killed_without_shutdown(
    tmp_path: Path, kind: str, games: int
) -> None:
    """protocol.md: "After any other fault (a timeout, a crash, a closed stream) it is killed
    without Shutdown." A reply over 64 KiB is a malformed reply, but its stream is gone: no
    GameEnd, no Shutdown. A bot that hangs in its move (its loop free, its reader logging every
    message) is sent its GameEnd (the stream is open; it is killed at once, so whether it
    reads it first is a race) but never Shutdown: not before the next game, not at the end of
    the series.
    Every one of these bots ignores ``Shutdown`` and never ends its stream, so a goodbye
    would have cost the whole second: the restart (or the close) taking less than that says
    none was sent, and the reader would have logged it."""
    control = TIGHT if kind == "hang" else ROOMY
    # The hang at the first move: the whole 1.25 s allowance is still there.
    fault = {"kind": kind, "move": 1 if kind == "hang" else 2}
    played = play(tmp_path, {"fault": fault, "after": "ignore"}, games=games, control=control)
    reason = {
        "hang": GameEndReason.TIMEOUT,
        "error": GameEndReason.CRASH,
        "huge": GameEndReason.MALFORMED_REPLY,
    }[kind]
    detail = assert_forfeited(played.game(1), 0, reason)
    words = {"hang": "no decision within 1.250s", "error": "planned error", "huge": "65536"}
    assert words[kind] in detail, detail
    if kind == "huge":  # a malformed reply whose stream is gone: no GameEnd either
        assert played.events(0, "huge", start=1)
        assert played.got(0, "GameEnd", 1) == [], played.logs[0]
    else:
        # Sent (its stream is open), but the kill comes at once: whether the bot read it
        # before is a race (no goodbye waits for it after these faults).
        assert [e["game"] for e in played.got(0, "GameEnd", 1)] in ([], [1]), played.logs[0]
    assert played.got(0, "Shutdown", 1) == [], played.logs[0]
    if games == 2:
        assert_played_out(played.game(2))
        assert_restarted_fresh(played, 0)
        assert played.slots[0].goodbyes[1] < GOODBYE_SECONDS  # nothing waited for
        assert 0 <= gap(played) < RESTART_BOUND
    else:
        closing = played.slots[0].closing
        assert closing is not None and closing < GOODBYE_SECONDS
    assert_nothing_left(played)


@pytest.mark.parametrize("games", [2, 1], ids=["before_the_next", "last_game"])
def test_a_bot_that_reports_an_error_takes_its_game_end_before_the_goodbye(
    tmp_path: Path, games: int
) -> None:
    """protocol.md: a bot restarted after a ``BotError`` still reads its stream, so it is
    sent ``Shutdown`` and killed once its stream ends or 1 s after: it reads its GameEnd
    first. This bot ignores ``Shutdown`` and never ends its stream, so the goodbye takes the
    whole second (and not much more), and the forfeit is the reported error's CRASH."""
    fault = {"kind": "error", "move": 2}
    played = play(tmp_path, {"fault": fault, "after": "ignore"}, games=games, control=ROOMY)
    detail = assert_forfeited(played.game(1), 0, GameEndReason.CRASH)
    assert "planned error" in detail, detail
    ends = played.got(0, "GameEnd", 1)
    assert [e["game"] for e in ends] == [1], played.logs[0]
    (bye,) = played.got(0, "Shutdown", 1)
    assert bye["at"] >= ends[0]["at"]
    if games == 2:
        assert bye["reason"] == RESTART_REASON
        assert_played_out(played.game(2))
        assert_restarted_fresh(played, 0)
        assert GOODBYE_SECONDS - 0.05 <= played.slots[0].goodbyes[1] < GOODBYE_SLACK
    else:
        assert bye["reason"] in (RESTART_REASON, "series over")
        closing = played.slots[0].closing
        assert closing is not None and GOODBYE_SECONDS - 0.05 <= closing < GOODBYE_SLACK
    assert_nothing_left(played)


# ------------------------------------------------------------------------- the classic table

TABLE = [
    (3, 1, "wrong_id", "polite", "async"),
    (4, 2, "garbage", "ignore", "async"),
    (4, 0, "wrong_id", "flood", "async"),
    (3, 2, "garbage", "sigterm", "blocking"),
]


@pytest.mark.parametrize(
    ("players", "offender", "kind", "after", "loop"),
    TABLE,
    ids=[f"{p}seats-{k}-{a}-{d}" for p, _, k, a, d in TABLE],
)
def test_a_malformed_reply_at_a_table_seat(
    tmp_path: Path, players: int, offender: int, kind: str, after: str, loop: str
) -> None:
    """At a classic table a seat's malformed reply at its first request loses it game 1
    (MALFORMED_REPLY); it takes its GameEnd, then the goodbye (reason ``restarted after a
    fault``), and plays game 2 on a fresh process. The other seats are unaffected: one
    process each, their GameEnd of game 1 naming the offender as loser, no Shutdown before
    the series' end, game 2 played."""
    plans: list[dict[str, Any]] = [{} for _ in range(players)]
    # A fault charged at once (a second reply would wait for a next request of the same game,
    # which a seat that goes out may never get).
    plans[offender] = {"fault": {"kind": kind, "move": 1}, "after": after}
    played = play_table(tmp_path, plans, seed=11, blocking=loop == "blocking")
    assert len(played.events(offender, "fault", start=1, game=1)) == 1, played.logs[offender]
    record = played.game(1)
    detail = assert_forfeited(record, offender, GameEndReason.MALFORMED_REPLY)
    assert any(words in detail for words in DETAILS[kind]), detail
    assert record.loser == offender
    second = played.game(2)
    assert not second.voided and second.forfeit is None, second
    for seat in range(players):
        ends = played.events(seat, "got", type="GameEnd", game=1)
        assert [e["start"] for e in ends] == [1], played.logs[seat]
        assert [(e["loser"], e["reason"]) for e in ends] == [(offender, "malformed reply")]
        if seat == offender:
            continue
        assert played.slots[seat].starts == 1
        assert [e["start"] for e in played.events(seat, "start")] == [1]
        assert [e["reason"] for e in played.got(seat, "Shutdown", 1)] == ["series over"]
        assert len(played.slots[seat].goodbyes) == 1  # started once, never restarted
    assert_restarted_fresh(played, offender)
    (bye,) = played.got(offender, "Shutdown", 1)
    assert bye["reason"] == RESTART_REASON
    assert bye["at"] >= played.got(offender, "GameEnd", 1)[0]["at"]
    goodbye = played.slots[offender].goodbyes[1]
    if after == "polite":
        assert goodbye < GOODBYE_SECONDS
    else:
        assert GOODBYE_SECONDS - 0.05 <= goodbye < GOODBYE_SLACK
    assert 0 <= gap(played) < RESTART_BOUND
    assert_nothing_left(played)


def test_a_malformed_text_keeps_the_bot_and_gets_no_goodbye(tmp_path: Path) -> None:
    """The fault table: text that is not an action is MALFORMED_REPLY but "keeps the bot"
    (the same stream, no restart): the goodbye before a restart is not for it. It plays
    game 2 on its one process and is told Shutdown once, at the series' end."""
    played = play(tmp_path, {"fault": {"kind": "text"}, "after": "polite"})
    detail = assert_forfeited(played.game(1), 0, GameEndReason.MALFORMED_REPLY)
    assert "fold everything" in detail, detail
    assert_played_out(played.game(2))
    assert played.slots[0].starts == 1
    assert [e["start"] for e in played.events(0, "start")] == [1]
    assert [e["reason"] for e in played.got(0, "Shutdown", 1)] == ["series over"]
    assert_nothing_left(played)


def test_a_second_reply_then_a_closed_stream_is_charged_as_the_second_reply(
    tmp_path: Path,
) -> None:
    """protocol.md: "a second reply is charged at the bot's next request of the same game"
    (MALFORMED_REPLY). A bot that answers twice and closes its stream at once: the opponent
    takes 0.5 s a move, so both the second reply and the stream's end have long arrived
    when the bot is asked again (no race: they come in that order on one stream). The
    violation that came first, the second reply, is the one the bot should be charged."""
    played = play(
        tmp_path,
        {"fault": {"kind": "double"}, "after": "close_now"},
        games=1,
        opponent={"pace": 0.5},
    )
    assert played.events(0, "closing", start=1)
    record = played.game(1)
    assert record.forfeit is not None and record.forfeit.seat == 0, record.forfeit
    detail = assert_forfeited(record, 0, GameEndReason.MALFORMED_REPLY)
    assert "second reply" in detail, detail
