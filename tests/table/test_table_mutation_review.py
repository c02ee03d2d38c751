"""Tests from a mutation review of the classic table's runner (``referee/table.py``,
``arena/tournament/table_runner.py``, ``arena/tournament/seats.py``): each kills a mutant the
suite let live, where the mutant's effect is one a bot author or an organiser could see.

Every expectation comes from the documented law, not from the code under test:
rules-classic.md and docs/rules.md ("Series and tables": the first dealer comes from the
series seed, the loser deals, a void is replayed with the same deal), docs/protocol.md (what
``Handshake`` and ``GameStart`` carry for each seat, how a table counts ``SeriesScore``, the
identity check), docs/configuration.md (one series per clockwise seating, each with a seed of
its own), docs/database.md (voided attempts stay stored), docs/sandbox.md (which sandbox
verdict names which forfeit) and docs/games-format.md ("``kryt replay ID --verify`` replays
table games too": a record that does not replay as stored is reported).

Most series are played in-process by the referee's own table loop
(:func:`referee.table.run_table_series`) with the SDK's example bots; the series tasks run
the bundled bots in the process sandbox, and a seat's sandbox verdicts are read from a stand-
in for its running bot. No deadline is close: they hold on a busy machine.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

import referee.table
from arena.db import Database, games_of_series, get_series, stored_record
from arena.tournament.config import TournamentConfig
from arena.tournament.runner import SeriesTask, play_series_task, tasks_for
from arena.tournament.seats import SandboxSlot
from arena.tournament.table_runner import table_specs, table_tallies
from referee.client import BotClient, Reply
from referee.match import Player, play_game_async
from referee.protocol.messages import (
    AnyView,
    Clock,
    GameEndReason,
    GameStart,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    TimeControl,
)
from referee.record import Forfeit, GameRecord
from referee.replay import verify
from referee.rules import ClassicGame
from referee.series import BotStartError, SeriesConfig, SeriesConfigError, game_deck
from referee.table import first_table_dealer, run_table_series, table_handshake
from sandbox import Submission
from sandbox.backend import Backend, RunningBot
from sandbox.death import DeathCause, DeathReport
from sandbox.limits import SandboxLimits
from sdk.examples.random.bot import RandomBot
from sdk.tools.local import LocalPlayer, PlayerSlot, play_table_local
from tests.tournament.outage import greedy_vs_random

ROOMY = TimeControl(move_ms=30_000, bank_ms=120_000)
"""No in-process bot comes near it, however busy the machine."""


class Recording:
    """An in-process bot (the SDK's random bot) that keeps every message the referee sent it:
    its Handshake and every GameStart."""

    def __init__(self, seed: int, handshakes: list[Handshake], starts: list[GameStart]) -> None:
        self._inner = LocalPlayer(RandomBot(seed))
        self.name = self._inner.name
        self._handshakes = handshakes
        self._starts = starts

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        self._handshakes.append(handshake)
        return self._inner.handshake(handshake)

    def send(self, message: RefereeMessage) -> None:
        if isinstance(message, GameStart):
            self._starts.append(message)
        self._inner.send(message)

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        return self._inner.decide(view, clock, game_number, timeout)


def recording_slot(
    seed: int, name: str, handshakes: list[Handshake], starts: list[GameStart]
) -> PlayerSlot:
    def start() -> Player:
        return Recording(seed, handshakes, starts)

    return PlayerSlot(start, name)


# ------------------------------------------------------------------------------ handshake


@pytest.mark.parametrize("players", [3, 4])
def test_each_seat_is_told_its_series_in_its_handshake(players: int) -> None:
    """protocol.md: ``Handshake.games`` is "games in the series"; at a table
    ``Handshake.players`` is the number of seats, ``seat_names`` "every seat's bot name (seat
    0 first)", ``seat`` "the recipient's seat", ``time_control`` "**your** control", and the
    opponent names list the others (never the recipient); each GameStart's ``score`` is the
    seat's own record of the games before it."""
    names = [f"bot-{chr(ord('a') + s)}" for s in range(players)]
    controls = tuple(
        TimeControl(move_ms=20_000 + 1000 * s, bank_ms=100_000 + 1000 * s) for s in range(players)
    )
    handshakes: list[list[Handshake]] = [[] for _ in range(players)]
    starts: list[list[GameStart]] = [[] for _ in range(players)]
    slots = [recording_slot(s + 1, names[s], handshakes[s], starts[s]) for s in range(players)]
    config = SeriesConfig(
        games=3, seed="handshake-review", ruleset="classic", players=players,
        seat_controls=controls,
    )  # fmt: skip
    result = run_table_series(config, slots)
    assert sorted(result.games) == [1, 2, 3]
    assert all(tuple(g.time_controls) == controls for g in result.games.values())
    for seat in range(players):
        assert handshakes[seat], seat
        for hello in handshakes[seat]:
            assert hello.games == 3
            assert hello.ruleset == "classic" and hello.players == players
            assert hello.seat == seat
            assert tuple(hello.seat_names) == tuple(names)
            assert hello.time_control == controls[seat]
            others = sorted(names[s] for s in range(players) if s != seat)
            assert sorted(hello.opponent_name.split(", ")) == others
            assert names[seat] not in hello.opponent_name.split(", ")
        # protocol.md, SeriesScore: "counts each game from your seat: a loss when your seat
        # lost to any seat ..., a win when it beat a seat and lost to none, else a draw".
        assert [s.game_number for s in starts[seat]] == [1, 2, 3]
        # protocol.md, TimeControl: "The control of the recipient, in ``Handshake`` and
        # again in every ``GameStart``"; every game records each seat's.
        assert all(start.time_control == controls[seat] for start in starts[seat])
        for start in starts[seat]:
            before = [result.games[n].pairwise for n in range(1, start.game_number)]
            lost = sum(1 for pairs in before if any(x == seat for _, x in pairs))
            won = sum(
                1
                for pairs in before
                if any(w == seat for w, _ in pairs) and not any(x == seat for _, x in pairs)
            )
            score = start.score
            assert (score.wins, score.draws, score.losses) == (won, len(before) - won - lost, lost)


def test_a_table_series_result_reads_each_seats_own_score() -> None:
    """writing-a-bot.md: ``play_table_local`` (the referee's table loop) plays a table series
    in-process and returns its result; protocol.md, SeriesScore: a game is "a loss when your
    seat lost to any seat ..., a win when it beat a seat and lost to none, else a draw". The
    result's score and its one-line summary give each seat its own wins, draws and losses."""
    names = ["north", "east", "south"]
    for attempt in range(20):  # a series whose seats lost different numbers of games
        slots = [recording_slot(s + 7, names[s], [], []) for s in range(3)]
        config = SeriesConfig(games=6, seed=f"summary-review-{attempt}", ruleset="classic",
                              players=3, time_control=ROOMY)  # fmt: skip
        result = run_table_series(config, slots)
        records = list(result.games.values())
        assert len(records) == 6
        losses = [sum(1 for g in records if any(x == s for _, x in g.pairwise)) for s in range(3)]
        if len(set(losses)) > 1:  # the seats' records differ, so a mix-up shows
            break
    else:
        raise AssertionError("every series gave each seat as many losses")
    summary = str(result)
    for seat, name in enumerate(names):
        lost = losses[seat]
        won = sum(
            1
            for g in records
            if any(w == seat for w, _ in g.pairwise) and not any(x == seat for _, x in g.pairwise)
        )
        drawn = len(records) - won - lost
        score = result.score(seat)
        assert (score.wins, score.draws, score.losses) == (won, drawn, lost)
        assert f"{name} +{won} ={drawn} -{lost}" in summary, summary


# -------------------------------------------------------------------------------- dealers


@pytest.mark.parametrize("players", [2, 3, 4])
def test_every_seat_can_be_the_first_dealer(players: int) -> None:
    """rules-classic.md: "The first dealer comes from the series seed": a draw among the
    seats of the table, so over many seeds each seat deals a series' first game (a draw that
    never picks the last seat would give it, and the seat after it, a fixed place in every
    series' first deal). 300 seeds: a seat missed by a fair draw has odds below 1e-37."""
    dealers = {first_table_dealer(f"dealer-review-{k}", players) for k in range(300)}
    assert dealers == set(range(players))


# ----------------------------------------------------------------------------- validation


def test_a_table_series_refuses_a_number_of_bots_other_than_its_seats() -> None:
    """rules-classic.md: "A series is a fixed number of games at one table with fixed seats":
    four bots for a table of three is refused before anything is played."""
    slots = [recording_slot(s, f"b{s}", [], []) for s in range(4)]
    config = SeriesConfig(games=1, seed=1, ruleset="classic", players=3, time_control=ROOMY)
    with pytest.raises(SeriesConfigError):
        run_table_series(config, slots)


def test_a_table_series_refuses_the_two_player_ruleset() -> None:
    """docs/rules.md: the classic table is its own ruleset (``classic``); the two-player game
    (``default``) is not played by the table's loop."""
    slots = [recording_slot(s, f"b{s}", [], []) for s in range(2)]
    config = SeriesConfig(games=1, seed=1, ruleset="default", players=2, time_control=ROOMY)
    with pytest.raises(SeriesConfigError):
        run_table_series(config, slots)


# ------------------------------------------------------------------ replay --verify (table)


def finished_game(players: int = 3) -> GameRecord:
    """A counted table game that ended by the rules with a last holder (no forfeit)."""
    for seed in range(1, 200):
        bots = [RandomBot(seed * 10 + s) for s in range(players)]
        result = play_table_local(bots, 1, seed=f"verify-review-{seed}", time_control=ROOMY)
        record = result.games[1]
        if record.ending is GameEndReason.LAST_HOLDER and record.forfeit is None:
            assert verify(record).ok, verify(record).problems
            return record
    raise AssertionError("no game ended by a last holder")


def test_verify_reports_a_move_recorded_for_a_seat_not_to_move() -> None:
    """games-format.md: ``--verify`` replays a table game's moves "by the rules" (rules-
    classic.md: the seat after the dealer leads first): a first move recorded for any other
    seat did not happen as stored."""
    record = finished_game()
    first_leader = (record.dealer + 1) % record.seats
    assert record.moves[0].seat == first_leader
    wrong = (first_leader + 1) % record.seats
    moves = (dataclasses.replace(record.moves[0], seat=wrong), *record.moves[1:])
    assert not verify(dataclasses.replace(record, moves=moves)).ok


def test_verify_reports_a_turn_limit_result_the_law_does_not_give() -> None:
    """rules-classic.md, turn limit: "Players already out count as winners against those
    still holding cards; those still holding cards draw with each other." Six actions into a
    game of three nobody is out (the stock still holds 26 cards), so every pair draws: a
    record that says seat 0 beat seat 1 is not the game."""
    bots = [RandomBot(s) for s in range(3)]
    result = play_table_local(bots, 1, seed="turn-limit-review", time_control=ROOMY, turn_limit=6)
    record = result.games[1]
    assert record.ending is GameEndReason.TURN_LIMIT and len(record.moves) == 6
    assert record.pairwise == ()  # the law: nobody is out yet, all draw
    assert verify(record).ok
    assert not verify(dataclasses.replace(record, pairwise=((0, 1),))).ok


def test_verify_reports_a_forfeit_recorded_after_the_game_ended() -> None:
    """rules-classic.md: a forfeit "ends that game at once"; a game whose recorded moves
    already finish it by the rules cannot also have been forfeited."""
    record = finished_game()
    loser = record.loser
    assert loser is not None
    forged = dataclasses.replace(
        record,
        ending=GameEndReason.ILLEGAL_ACTION,
        forfeit=Forfeit(loser, GameEndReason.ILLEGAL_ACTION, "take", "forged"),
    )
    assert not verify(forged).ok


def test_verify_reports_moves_in_a_game_nobody_could_start() -> None:
    """docs/rules.md: "When no seat can start, the game is a draw by *double forfeit*": such
    a game has no moves, so one recorded with moves is not what happened."""
    record = finished_game()
    forged = dataclasses.replace(
        record, ending=GameEndReason.DOUBLE_FORFEIT, loser=None, pairwise=()
    )
    assert forged.moves
    assert not verify(forged).ok


def test_verify_reports_an_ending_the_replay_does_not_reach() -> None:
    """rules-classic.md: "Exactly one player holds cards: **he loses**" (a last holder);
    "Nobody holds cards ...: the game is a draw" (all out). A game that ended with a last
    holder, recorded as all out, is not the game (its loser and results left as they were)."""
    record = finished_game()
    forged = dataclasses.replace(record, ending=GameEndReason.ALL_OUT)
    assert forged.loser is not None
    assert not verify(forged).ok


# ---------------------------------------------------------------------- a game not played


@pytest.mark.parametrize(("players", "failing"), [(2, (1,)), (3, (2,)), (4, (1, 3))])
def test_a_game_seats_could_not_start_keeps_its_deal_and_dealer(
    players: int, failing: tuple[int, ...]
) -> None:
    """configuration.md: every deal of a series comes from its seed (game ``n`` is dealt
    ``game_deck(seed, n)``); rules-classic.md: the first dealer comes from the series seed.
    Game 1, which some seats cannot start (one, or several: after every attempt), is
    recorded with that deal and that dealer, and its loser is one of those seats."""
    seed = f"unplayed-review-{players}"

    def never() -> Player:
        raise OSError("cannot start")

    slots = [
        PlayerSlot(never, f"s{s}") if s in failing else recording_slot(s + 1, f"s{s}", [], [])
        for s in range(players)
    ]
    config = SeriesConfig(
        games=1, seed=seed, ruleset="classic", players=players, time_control=ROOMY
    )
    record = run_table_series(config, slots).games[1]
    assert record.ending is GameEndReason.STARTUP_FAILURE and record.loser in failing
    assert record.moves == ()
    assert record.dealer == first_table_dealer(seed, players)
    assert record.deck == tuple(str(c) for c in game_deck(seed, 1))


# -------------------------------------------------------------------- the tournament's plan


def test_every_clockwise_order_of_a_table_is_a_series_with_a_seed_of_its_own() -> None:
    """configuration.md: "a round robin of seatings: every set of ``table_size`` bots plays
    one series of ``games_per_pair`` games per distinct clockwise seating order"; "at a
    table, another seat order is another seating with a seed of its own"; database.md:
    "submission_a/b are seats 0 and 1". Three entrants at a table of three: the two
    clockwise orders of the set, each once, 4 games each, two different seeds."""
    config = TournamentConfig(
        bots=("a", "b", "c"), ruleset="classic", table_size=3, games_per_pair=4
    )
    specs = table_specs(config, [11, 12, 13], 7)
    assert len(specs) == 2

    def cycle(seats: Sequence[int]) -> tuple[int, ...]:
        turned = [tuple(seats[i:]) + tuple(seats[:i]) for i in range(len(seats))]
        return min(turned)

    assert {cycle(s.seats) for s in specs} == {(11, 12, 13), (11, 13, 12)}
    for spec in specs:
        assert spec.games_planned == 4 and spec.ruleset == "classic"
        assert (spec.submission_a_id, spec.submission_b_id) == (spec.seats[0], spec.seats[1])
    assert len({s.seed for s in specs}) == 2


def test_a_gauntlet_plays_exactly_its_own_seatings() -> None:
    """configuration.md, ``gauntlet``: "At a classic table every table includes it ... the
    gauntlet bot at seat 0" and "the others never meet": the series are the seatings the
    gauntlet gives, none of the round robin's others."""
    config = TournamentConfig(
        bots=("a", "b", "c", "d"), ruleset="classic", table_size=3, games_per_pair=2
    )
    given = [(1, 2, 3), (1, 3, 2)]
    specs = table_specs(config, [1, 2, 3, 4], 5, seatings=given)
    assert [s.seats for s in specs] == given


# ------------------------------------------------------- a series task: resume, voids, tally


def voiding(numbers: dict[int, int]) -> Any:
    """A stand-in for the referee's game loop that voids the first ``numbers[n]`` attempts
    of game ``n`` after playing them (a failure on our side, as a sandbox stopped from
    outside makes one), and passes every other attempt through."""
    real = play_game_async
    attempts: Counter[int] = Counter()

    async def play(players: Sequence[Any], *, number: int, **kwargs: Any) -> GameRecord:
        record = await real(players, number=number, **kwargs)
        attempts[number] += 1
        if attempts[number] > numbers.get(number, 0):
            return record
        return dataclasses.replace(
            record,
            ending=GameEndReason.VOID,
            void_reason="injected: the sandbox was stopped from outside",
            winner=None,
            forfeit=None,
            loser=None,
            pairwise=(),
        )

    return play


def table_task(tmp_path: Path, games: int) -> tuple[Database, int, SeriesTask]:
    """A classic table of two (the greedy and random example bots, process sandbox)."""
    db, tid = greedy_vs_random(tmp_path, games, ruleset="classic")
    [task] = tasks_for(tid, db=db, store=tmp_path / "store")
    return db, tid, task


def test_a_table_series_resumes_with_its_missing_games_and_keeps_its_voids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README: "an interrupted run loses nothing and ``resume`` plays exactly the missing
    games"; database.md: "A game voided by an infrastructure failure is recorded with
    ``voided=True`` ... It stays in the database, but does not" count; rules.md: a void is
    "replayed with the same deal"; rules-classic.md: the first dealer comes from the series
    seed, then the loser deals. Game 1 is played, the run stops (the series stays
    ``running``, as a killed run leaves it), and the resumed run voids game 2's first
    attempt: it plays games 2 and 3, each counted once, and announces only those."""
    db, tid, task = table_task(tmp_path, 3)
    stop = threading.Event()
    first: list[int] = []

    def stop_after_one(series_id: int, number: int, record: GameRecord) -> None:
        first.append(number)
        stop.set()

    outcome = play_series_task(task, stop=stop, on_game=stop_after_one)
    assert (outcome.status, outcome.games_played, first) == ("interrupted", 1, [1])

    monkeypatch.setattr(referee.table, "play_game_async", voiding({2: 1}))
    announced: list[GameRecord] = []
    numbers: list[int] = []

    def on_game(series_id: int, number: int, record: GameRecord) -> None:
        numbers.append(number)
        announced.append(record)

    outcome = play_series_task(task, stop=threading.Event(), on_game=on_game)
    assert (outcome.status, outcome.games_played) == ("finished", 2), outcome
    assert numbers == [2, 3]
    assert not any(r.voided for r in announced)

    with db.read_session() as session:
        series = get_series(task.series_id, session=session)
        assert series.status == "finished"
        seats = series.seat_ids
        seed = int(series.seed)
        rows = games_of_series(task.series_id, session=session, include_voided=True)
        stored = [(g.number, g.attempt, bool(g.voided)) for g in rows]
        records = {g.number: stored_record(g) for g in rows if not g.voided}
        voided = [stored_record(g) for g in rows if g.voided]
    assert stored == [(1, 1, False), (2, 1, True), (2, 2, False), (3, 1, False)]
    assert sorted(records) == [1, 2, 3]
    dealer = first_table_dealer(seed, 2)
    for number in (1, 2, 3):
        record = records[number]
        assert record.deck == tuple(str(c) for c in game_deck(seed, number))
        assert record.dealer == dealer, number
        dealer = dealer if record.loser is None else record.loser
    assert voided[0].deck == records[2].deck and voided[0].dealer == records[2].dealer
    # Each seat's record names that seat's own bot (the bots are distinct submissions).
    names = announced[0].players
    assert len(set(names)) == 2 and all(r.players == names for r in announced)

    # The run's series table (``kryt tournament status``): counted games only, losses by
    # seat from each game's pairwise result (a seat lost when any seat beat it).
    [tally] = table_tallies(tid, db)
    assert tally.seats == tuple(seats) and tally.played == 3 and tally.status == "finished"
    lost = [sum(1 for r in records.values() if any(x == s for _, x in r.pairwise)) for s in (0, 1)]
    assert list(tally.losses) == lost
    assert tally.draws == sum(1 for r in records.values() if not r.pairwise)
    assert tally.forfeits == sum(1 for r in records.values() if r.forfeit is not None)


def test_a_table_game_voided_at_every_attempt_aborts_its_series(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/rules.md: a failure on our side voids the game, "which is replayed with the same
    deal" (``SeriesConfig.max_attempts``, 3, times), after which the series is aborted
    (database.md: a series ends ``finished`` or ``aborted``). A game voided at each of its
    three attempts is never counted: the series' task ends ``aborted`` (not finished, not
    merely interrupted), with every attempt kept as voided and nothing counted."""
    db, _, task = table_task(tmp_path, 2)
    monkeypatch.setattr(referee.table, "play_game_async", voiding({1: 99}))
    outcome = play_series_task(task, stop=threading.Event())
    assert (outcome.status, outcome.games_played) == ("aborted", 0), outcome
    with db.read_session() as session:
        rows = games_of_series(task.series_id, session=session, include_voided=True)
        assert [(g.number, g.attempt, bool(g.voided)) for g in rows] == [
            (1, 1, True),
            (1, 2, True),
            (1, 3, True),
        ]


# --------------------------------------------------------- a seat's sandbox verdicts


class DeadBot:
    """A seat's bot whose process is over, and the sandbox's report of why."""

    def __init__(self, cause: DeathCause) -> None:
        self.report = DeathReport(cause=cause, exit_code=None if cause is DeathCause.OOM else 1)

    def alive(self) -> bool:
        return False

    def death(self) -> DeathReport:
        return self.report

    def stop(self) -> None:
        """Nothing left to stop."""


def dead_seat(cause: DeathCause) -> SandboxSlot:
    """A seat (:class:`SandboxSlot`) whose bot played a game and then died of ``cause``
    before the next one (set on the slot's running bot, as its sandbox would report it)."""
    slot = SandboxSlot(
        cast(Backend, None),
        cast(Submission, None),
        name="seat-bot",
        limits=SandboxLimits(),
        label="kryt-mutation-review",
    )
    slot._running = cast(RunningBot, DeadBot(cause))
    slot._client = cast(BotClient, object())  # handshaken for an earlier game
    return slot


VERDICTS = [
    (DeathCause.OOM, GameEndReason.MEMORY_LIMIT),
    (DeathCause.FILE_SIZE, GameEndReason.DISK_LIMIT),
    (DeathCause.PROCESS_LIMIT, GameEndReason.PROCESS_LIMIT),
    (DeathCause.CRASHED, GameEndReason.CRASH),
    (DeathCause.SIGNALED, GameEndReason.CRASH),
]


@pytest.mark.parametrize(("cause", "reason"), VERDICTS)
def test_a_seat_that_died_between_games_forfeits_with_the_sandboxs_verdict(
    cause: DeathCause, reason: GameEndReason
) -> None:
    """sandbox.md: "The referee maps ``OOM``, ``FILE_SIZE`` and ``PROCESS_LIMIT`` to the
    forfeits ``MEMORY_LIMIT``, ``DISK_LIMIT`` and ``PROCESS_LIMIT``, any other death of a bot
    to ``CRASH``"; protocol.md: a bot that dies between games loses the next game, "a sandbox
    limit it hit names that limit instead" (of ``CRASH``)."""
    slot = dead_seat(cause)
    assert slot.diagnose() is (None if reason is GameEndReason.CRASH else reason)
    hello = table_handshake(
        SeriesConfig(games=2, seed=1, ruleset="classic", players=3, time_control=ROOMY),
        ["a", "seat-bot", "c"],
        1,
    )
    with pytest.raises(BotStartError) as raised:
        slot.player(hello)
    assert raised.value.reason is reason


@pytest.mark.parametrize(
    ("name", "version", "refused"),
    [("seat-bot", "1.0.0", False), ("seat-bot", "2.0.0", True), ("other", "1.0.0", True)],
)
def test_a_seat_refuses_a_handshake_reply_of_another_version(
    name: str, version: str, refused: bool
) -> None:
    """protocol.md, HandshakeReply: ``name``, ``version`` are "exactly ``name`` and
    ``version`` of the bot's ``bot.toml``"; "The arena ... refuses a reply whose ``name`` or
    ``version`` differs from ``bot.toml``: the handshake fails and the bot forfeits the game
    as a ``STARTUP_FAILURE``". The seat's check of each reply (run by every start of its bot)
    against a ``bot.toml`` of ``seat-bot`` 1.0.0."""
    manifest = SimpleNamespace(name="seat-bot", version="1.0.0")
    slot = SandboxSlot(
        cast(Backend, None),
        cast(Submission, SimpleNamespace(manifest=manifest)),
        name="seat-bot",
        limits=SandboxLimits(),
        label="kryt-mutation-review",
    )
    closed: list[bool] = []
    reply = HandshakeReply(1, name, version, "test", ("classic",))
    if not refused:
        slot._check_identity(reply, lambda: closed.append(True))
        assert closed == []
        return
    with pytest.raises(BotStartError) as raised:
        slot._check_identity(reply, lambda: closed.append(True))
    assert raised.value.reason is GameEndReason.STARTUP_FAILURE
    assert closed == [True]


class Burning:
    """A seat's running bot whose process tree has spent 2.0 s of CPU, then 2.75 s."""

    def __init__(self) -> None:
        self.readings = [2.0, 2.75]

    def alive(self) -> bool:
        return True

    def cpu_seconds(self) -> float:
        return self.readings.pop(0)


class Answering:
    """A seat's connection that answers each request with ``take`` after 0.9 s."""

    closed = False

    def decide(self, view: AnyView, clock: Clock, *, game_number: int, timeout: float) -> Reply:
        return Reply(action="take", elapsed=0.9, request_id=1)


def test_a_seats_decision_carries_the_cpu_time_its_bot_spent_on_it() -> None:
    """database.md: each move stores its "CPU seconds"; record.py: "CPU seconds of the bot's
    process tree on this decision, where its sandbox counts it"; configuration.md: under
    ``clock=cpu`` a move is charged "the CPU time of your process tree". The tree spent 0.75 s
    between the request and the reply: the reply says 0.75, not nothing."""
    slot = SandboxSlot(
        cast(Backend, None),
        cast(Submission, None),
        name="seat-bot",
        limits=SandboxLimits(),
        label="kryt-mutation-review",
    )
    slot._running = cast(RunningBot, Burning())
    slot._client = cast(BotClient, Answering())  # handshaken for an earlier game
    hello = table_handshake(
        SeriesConfig(games=2, seed=1, ruleset="classic", players=3, time_control=ROOMY),
        ["a", "seat-bot", "c"],
        1,
    )
    view = ClassicGame.new(seed=3, dealer=0, players=3).view(1)
    reply = slot.player(hello).decide(view, Clock(1000, 10_000), 2, 5.0)
    assert reply.action == "take" and reply.elapsed == 0.9
    assert reply.cpu == pytest.approx(0.75)


# ------------------------------------------------------------------------ a fault found (fixed)


@pytest.mark.parametrize(
    "reason",
    [GameEndReason.TIMEOUT, GameEndReason.ILLEGAL_ACTION, GameEndReason.MALFORMED_REPLY],
)
def test_verify_reports_an_on_move_forfeit_charged_to_a_seat_not_to_move(
    reason: GameEndReason,
) -> None:
    """docs/protocol.md: the referee asks only the seat to move, and a timeout, an illegal
    action or a malformed reply is that seat's answer to its own request; games-format.md:
    ``--verify`` replays a game "to its stored ending (... the forfeit's seat to move)" and
    "replays table games too" (referee/replay.py: "have the offender to move (unless the
    offender failed out of turn: a start-up failure or crash can happen any time)"). A table
    game cut after its first move and charged to a seat that was not to move is not what
    happened."""
    record = finished_game()
    seats = record.seats
    mover = record.moves[1].seat  # the seat asked after the first move
    offender = next(s for s in range(seats) if s != mover)
    forged = dataclasses.replace(
        record,
        moves=record.moves[:1],
        ending=reason,
        forfeit=Forfeit(offender, reason, "take", "forged"),
        loser=offender,
        pairwise=tuple((s, offender) for s in range(seats) if s != offender),
    )
    honest = dataclasses.replace(
        forged,
        forfeit=Forfeit(mover, reason, "take", "as it happened"),
        loser=mover,
        pairwise=tuple((s, mover) for s in range(seats) if s != mover),
    )
    assert verify(honest).ok, verify(honest).problems
    assert not verify(forged).ok
