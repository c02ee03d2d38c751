"""The asynchronous referee: many series on one event loop, the blocking facades that drive
the same coroutines, a stream's one reader, and the executors that play a process's share of
series at once."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from arena.db import open_database
from arena.tournament import runner
from arena.tournament.config import load_config
from arena.tournament.executors import LocalExecutor
from arena.tournament.process_executor import ProcessExecutor
from arena.tournament.runner import SeriesOutcome, SeriesTask, create, tasks_for
from referee.client import (
    INBOX_LIMIT,
    AsyncBotClient,
    AsyncRemotePlayer,
    UnexpectedReplyError,
)
from referee.match import AsyncPlayer
from referee.protocol.messages import (
    PROTOCOL_VERSION,
    BotMessage,
    Clock,
    Decision,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    TimeControl,
)
from referee.record import GameRecord
from referee.replay import verify
from referee.rules import Game, View
from referee.series import SeriesConfig, run_series_async
from referee.synchronous import LoopNeededError, drive
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.random.bot import RandomBot
from tests.protocol.helpers import raw_server, served
from tests.referee.test_tournament import check_complete, verify_all

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"

pytestmark = pytest.mark.timeout(300)


def test_drive_runs_a_coroutine_that_never_waits() -> None:
    async def add(a: int, b: int) -> int:
        return a + b

    assert drive(add(2, 3)) == 5


@pytest.mark.parametrize("delay", [0, 0.01])
def test_drive_refuses_a_coroutine_that_waits_for_io(delay: float) -> None:
    async def nap() -> None:
        await asyncio.sleep(delay)  # 0: yields to the loop; more: asks for the loop first

    with pytest.raises(LoopNeededError, match="event loop"):
        drive(nap())


class _Seat:
    """A running bot behind an AsyncBotClient, handshaken once per series."""

    def __init__(self, client: AsyncBotClient, name: str) -> None:
        self._player = AsyncRemotePlayer(client, handshake_timeout=30)
        self.name = name
        self._ready = False

    async def player(self, handshake: Handshake) -> AsyncPlayer:
        if not self._ready:
            await self._player.handshake(handshake)
            self._ready = True
        return self._player

    async def diagnose(self) -> GameEndReason | None:
        return None


def test_many_series_on_one_event_loop_each_play_their_own_games() -> None:
    series_count = 6
    control = TimeControl(move_ms=10_000, bank_ms=60_000)
    with served(GreedyBot(), "uds") as (greedy, _), served(RandomBot(), "uds") as (rand, _):

        async def main() -> list[tuple[str, list[GameRecord]]]:
            clients = [AsyncBotClient(a) for _ in range(series_count) for a in (greedy, rand)]
            for client in clients:
                await client.wait_healthy(30)

            async def one(index: int) -> tuple[str, list[GameRecord]]:
                seats = (_Seat(clients[2 * index], "greedy"), _Seat(clients[2 * index + 1], "r"))
                config = SeriesConfig(games=3, seed=f"loop-{index}", time_control=control)
                result = await run_series_async(config, seats)
                return config.seed if isinstance(config.seed, str) else "", list(
                    result.games.values()
                )

            try:
                return list(await asyncio.gather(*(one(i) for i in range(series_count))))
            finally:
                for client in clients:
                    await client.aclose()

        results = asyncio.run(main())
    assert len(results) == series_count
    for seed, games in results:
        assert len(games) == 3, seed
        for record in games:
            assert not record.voided and not record.ending.is_forfeit, (seed, record.ending)
            check = verify(record)
            assert check.ok, (seed, check.problems)
    # Each series played its own deals (no request crossed into another series' stream).
    decks = {tuple(g.deck) for _, games in results for g in games}
    assert len(decks) == 3 * series_count


def _view() -> View:
    game = Game.new("flood", dealer=0)
    assert game.to_move is not None
    return game.view(game.to_move)


def test_a_bot_that_floods_its_stream_is_caught_and_its_inbox_stays_bounded() -> None:
    def flood(message: RefereeMessage) -> list[BotMessage | bytes]:
        if isinstance(message, Handshake):
            reply = HandshakeReply(PROTOCOL_VERSION, "flood", "1", "test")
            return [reply, *(Decision(n + 1, "take") for n in range(200))]
        return []

    async def main() -> tuple[int, str]:
        async with AsyncBotClient(address) as client:
            await client.handshake(
                Handshake(
                    protocol_version=PROTOCOL_VERSION,
                    referee_version="test",
                    games=1,
                    opponent_name="x",
                    time_control=TimeControl(1000, 10_000),
                ),
                timeout=30,
            )
            # The flood arrives (later on a busy machine) until the reader stops reading.
            waited = 0.0
            while len(client._inbox) < INBOX_LIMIT and waited < 30:
                await asyncio.sleep(0.05)
                waited += 0.05
            await asyncio.sleep(0.2)  # had the reader not stopped, more would come meanwhile
            held = len(client._inbox)
            view = _view()
            try:
                await client.decide(
                    view,
                    Clock(move_ms=1000, bank_ms=10_000),
                    game_number=1,
                    timeout=30,
                )
            except UnexpectedReplyError as exc:
                return held, str(exc)
            return held, "no fault"

    with raw_server(flood) as address:
        held, fault = asyncio.run(main())
    assert held <= INBOX_LIMIT
    assert "nobody asked for" in fault


# ---------------------------------------------------------------------------- executors


def _fake_tasks(count: int) -> list[SeriesTask]:
    return [
        SeriesTask(
            database_url="sqlite://", tournament_id=1, series_id=n, config={}, store="/nonexistent"
        )
        for n in range(1, count + 1)
    ]


def test_play_series_tasks_plays_concurrency_series_at_once_and_no_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    in_flight = 0
    peak = 0
    everyone_in = asyncio.Event()

    async def fake(task: SeriesTask, **_: object) -> SeriesOutcome:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == 3:
            everyone_in.set()
        if task.series_id <= 3:  # the first three wait for each other: all must be in at once
            await asyncio.wait_for(everyone_in.wait(), timeout=30)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return SeriesOutcome(task.series_id, "finished", 1)

    monkeypatch.setattr(runner, "play_series_task_async", fake)
    finished: list[int] = []
    outcomes = asyncio.run(
        runner.play_series_tasks(
            _fake_tasks(7),
            concurrency=3,
            stop=threading.Event(),
            on_series=lambda o: finished.append(o.series_id),
        )
    )
    assert peak == 3
    assert sorted(o.series_id for o in outcomes) == list(range(1, 8))
    assert sorted(finished) == list(range(1, 8))


def test_play_series_tasks_starts_nothing_once_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    stop = threading.Event()
    started: list[int] = []

    async def fake(task: SeriesTask, **_: object) -> SeriesOutcome:
        started.append(task.series_id)
        stop.set()  # the organiser stops the run during the first series
        return SeriesOutcome(task.series_id, "finished", 1)

    monkeypatch.setattr(runner, "play_series_task_async", fake)
    outcomes = asyncio.run(runner.play_series_tasks(_fake_tasks(4), concurrency=1, stop=stop))
    assert started == [1]
    assert [o.status for o in outcomes] == ["finished"] + ["interrupted"] * 3
    assert all("not started" in o.message for o in outcomes[1:])


def _round_robin(tmp_path: Path, bots: list[str], games: int) -> tuple[str, int]:
    url = f"sqlite:///{tmp_path / 'kryt.db'}"
    db = open_database(url)
    config = load_config(
        None,
        bots=[str(EXAMPLES / b) for b in bots],
        games_per_pair=games,
        backend="process",
        seed=11,
        move_seconds=0.05,  # mc thinks for a fraction of it: quick games
    )
    return url, create(config, db=db, store=tmp_path / "store")


def test_a_tournament_plays_all_its_series_on_one_event_loop(tmp_path: Path) -> None:
    url, tid = _round_robin(tmp_path, ["random", "greedy", "mc"], 2)
    db = open_database(url, create=False)
    tasks = tasks_for(tid, db=db, store=tmp_path / "store")
    assert len(tasks) == 3
    threads_before = threading.active_count()
    outcomes = LocalExecutor(3, processes=False).run(tasks, stop=threading.Event())
    assert sorted(o.status for o in outcomes) == ["finished"] * 3
    assert check_complete(url, tid) == 6
    verify_all(url, tid)
    # No thread per series was left behind (the series ran as tasks, not threads).
    assert threading.active_count() <= threads_before + 1


def test_a_referee_process_plays_its_batch_of_series_together(tmp_path: Path) -> None:
    url, tid = _round_robin(tmp_path, ["random", "greedy", "mc"], 2)
    db = open_database(url, create=False)
    tasks = tasks_for(tid, db=db, store=tmp_path / "store")
    games: list[tuple[int, int]] = []
    outcomes = ProcessExecutor(3, processes=1).run(
        tasks, stop=threading.Event(), on_game=lambda s, n, _r: games.append((s, n))
    )
    assert sorted(o.status for o in outcomes) == ["finished"] * 3
    assert check_complete(url, tid) == 6
    verify_all(url, tid)
    assert sorted(games) == sorted((t.series_id, n) for t in tasks for n in (1, 2))
