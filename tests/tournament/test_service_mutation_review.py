"""Tests from a mutation review of the tournament service (``arena/tournament/service.py``):
running a stored tournament to its end, what a run leaves behind, the lease that gives each
tournament one owner, and what ``status`` makes of it.

Each test pins a behaviour that a mutant of ours changed (an organiser would see it). They
run in this process on SQLite with quick bots (greedy, random and a renamed copy of random)
in the ``process`` sandbox; the executor is a :class:`LocalExecutor` on one event loop that
plays only the first N series it is given (or none), so that a run "stopped with series
left" is made without signals.
The expected values come from the docs:

- a run that ends with series left stores ``pending``, which ``status`` shows as
  ``stopped`` (configuration.md: "``stopped`` once a run started it and none plays it now");
  while it plays the stored status is ``running`` (and shown so: a live run holds the lease);
  the run's result counts the series left (the "N series not finished; resume with" line);
  ``resume`` "plays exactly the missing games", each game of a series once; the progress
  figures (games recorded / planned) count each recorded game once, README's "progress of
  every tournament" — ``test_a_run_with_series_left_*``, ``test_a_run_stopped_in_a_series_*``;
- a series that was aborted (scaling.md: "``resume`` finishes it") is a series left: the
  tournament is not finished — ``test_an_aborted_series_keeps_the_tournament_unfinished``;
- a cancelled tournament is refused in one line and stays cancelled (configuration.md,
  scaling.md) — ``test_a_cancelled_tournament_is_refused_and_stays_cancelled``;
- one run per tournament (scaling.md, "One run per tournament (the lease)"): a second run is
  refused naming the holder and plays nothing, ``--take-over`` takes it; a run that loses the
  lease stops, records nothing more, does not touch the tournament's status and says why in
  one line; a lease the caller took and that is already lost stops the run before it plays —
  ``test_a_second_run_*``, ``test_a_run_that_loses_the_lease_*``,
  ``test_a_run_given_a_lease_that_is_already_lost_*``,
  ``test_a_lease_taken_as_the_last_series_ends_is_reported``. (A lease lost before the run
  reached its first status write was found by this review to raise the database's
  ``LeaseLostError`` instead of reporting the reason: fixed);
- a stored ``bot_time`` entry naming no entered bot is refused by the run itself, with the
  ``set`` command that fixes it; one naming an entered bot (``name`` or ``name@version``, the
  last bot listed included) is taken (configuration.md) — ``test_a_stored_bot_time_*``;
- before a run, the sandboxes a dead run left are swept with the tournament's label prefix
  and the organiser is told how many (scaling.md) — ``test_a_run_sweeps_*``;
- ``clock cpu`` where the sandbox has no CPU clock falls back to the wall clock with a
  warning, stored "so every record says so" (configuration.md); a finished tournament plays
  nothing, so nothing is charged — ``test_clock_cpu_*``;
- a bot this sandbox cannot start is refused before the first game, but only a bot that
  still has games to play (configuration.md: what depends on the machine "is checked when
  it does") — ``test_a_bot_*``;
- ``status``: ``running`` only while a live run holds the lease, ``stopped`` for a
  tournament a run started or stored as ``running`` with no live holder, ``pending`` only
  for one no run started, the runner ``none (last: …, holder dead / lease expired)`` and the
  series a stopped run left ``stopped`` too (configuration.md) — ``test_status_*``;
- ``set`` is refused while a live run holds the tournament and keeps the records that are
  not settings (``extensions``: configuration.md) — ``test_set_*``;
- ``extend`` refuses N outside 1–1,000,000 and a cancelled tournament (configuration.md) —
  ``test_extend_*``;
- ``arena/tournament/store.py``: the same content stored again is "already stored" (arena.md:
  200, not a new version), which ``kryt submit`` reads from ``created`` —
  ``test_storing_the_same_content_again_changes_nothing``.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from arena.db import (
    Database,
    LeaseHolder,
    LeaseInfo,
    SeriesStatus,
    TournamentStatus,
    acquire_lease,
    get_lease,
    get_submission,
    get_tournament,
    open_database,
    series_of_tournament,
    set_series_status,
    set_tournament_status,
    update_tournament_config,
)
from arena.db import games_of_series as stored_games
from arena.tournament import service
from arena.tournament.config import MAX_GAMES_PER_PAIR, SandboxSettings, TournamentConfig
from arena.tournament.executors import LocalExecutor, SeriesCallback
from arena.tournament.lease import RunLease, TournamentBusyError, this_host
from arena.tournament.runner import (
    GameCallback,
    SeriesOutcome,
    SeriesTask,
    TournamentError,
    create,
    label_prefix,
)
from arena.tournament.service import (
    ExecutorName,
    PreparedExecutor,
    RunResult,
    StoredConfigError,
    TournamentState,
    cancel,
    change_settings,
    extend,
    progress,
    run_tournament,
    series_shown,
    tournament_state,
    tournament_states,
)
from arena.tournament.store import register
from referee.timecontrol import TimeControl
from sandbox.runner import current_runner
from tests.tournament.test_runner_mutation_review import EXAMPLES

pytestmark = pytest.mark.timeout(300)

GAMES = 2
"""Games per pair: three series of two games each."""
WAIT_S = 30.0
"""The longest a test waits for the lease's heartbeat on a busy machine."""


# ---------------------------------------------------------------------------- helpers


class Partial(LocalExecutor):
    """The local executor (one event loop, this process) playing only the first ``only`` of
    the tasks it is given: a run that ends with series left, without a signal."""

    def __init__(self, only: int) -> None:
        super().__init__(1, processes=False)
        self.only = only
        self.given: list[int] = []

    def run(
        self,
        tasks: Sequence[SeriesTask],
        *,
        stop: threading.Event,
        on_game: GameCallback | None = None,
        on_series: SeriesCallback | None = None,
    ) -> list[SeriesOutcome]:
        self.given = [t.series_id for t in tasks]
        if self.only == 0:
            return []
        return super().run(tasks[: self.only], stop=stop, on_game=on_game, on_series=on_series)


class Sweeping(PreparedExecutor):
    """A prepared local executor whose sweep reports ``removed`` sandboxes (and the prefix
    it was asked to sweep) instead of looking for containers."""

    def __init__(self, executor: LocalExecutor, removed: int) -> None:
        super().__init__(ExecutorName.local, executor, None, "here")
        self.removed = removed
        self.prefixes: list[str] = []

    def sweep(self, prefix: str) -> int:
        self.prefixes.append(prefix)
        return self.removed


def prepared(
    only: int,
    *,
    cpu_clock_problem: str | None = None,
    refused_runtime: str | None = None,
) -> PreparedExecutor:
    """A prepared local executor playing the first ``only`` series it is given; its sandbox
    has no CPU clock when ``cpu_clock_problem`` says why, and cannot start bots of
    ``refused_runtime``."""

    def runtime_problem(runtime: str) -> str | None:
        return f"no {runtime} here" if runtime == refused_runtime else None

    return PreparedExecutor(
        ExecutorName.local,
        Partial(only),
        None,
        "here",
        cpu_clock_problem=cpu_clock_problem,
        runtime_problem=runtime_problem,
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, Path]:
    """A stored round robin of three quick bots (3 series of GAMES games, ``clock cpu``),
    not played: its SQLite file, the tournament and the store (shared, read only)."""
    folder = tmp_path_factory.mktemp("template")
    db = open_database(f"sqlite:///{folder / 'kryt.db'}")
    store = folder / "store"
    # A third quick bot: the random example under another name (``mc`` thinks for long).
    third = folder / "dummy"
    shutil.copytree(EXAMPLES / "random", third, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = third / "bot.toml"
    manifest.write_text(manifest.read_text().replace('name = "random"', 'name = "dummy"'))
    config = TournamentConfig(
        bots=(str(EXAMPLES / "greedy"), str(EXAMPLES / "random"), str(third)),
        games_per_pair=GAMES,
        time_control=TimeControl(clock="cpu"),
        sandbox=SandboxSettings(backend="process", allow_unsafe=True),  # the copy is untrusted
    )
    tid = create(config, db=db, store=store)
    db.close()  # the last connection closed: everything is in the file (WAL checkpointed)
    assert not (folder / "kryt.db-wal").exists() or not (folder / "kryt.db-wal").stat().st_size
    return folder / "kryt.db", tid, store


@pytest.fixture
def three(
    template: tuple[Path, int, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Database, int, Path]:
    """A fresh copy of the template's tournament: the database, the tournament, the store."""
    monkeypatch.chdir(tmp_path)
    source, tid, store = template
    shutil.copyfile(source, tmp_path / "kryt.db")
    return open_database(f"sqlite:///{tmp_path / 'kryt.db'}", create=False), tid, store


def run(
    db: Database, tid: int, store: Path, executor: PreparedExecutor, **kwargs: object
) -> RunResult:
    return run_tournament(tid, db, store=store, prepared=executor, **kwargs)  # type: ignore[arg-type]


def series(db: Database, tid: int) -> list[tuple[int, str]]:
    """(id, stored status) of every series, in position order."""
    with db.read_session() as session:
        return [(s.id or 0, s.status) for s in series_of_tournament(tid, session=session)]


def games(db: Database, tid: int) -> dict[int, list[tuple[int, bool]]]:
    """Every stored game (number, voided) of each series, voided ones included."""
    with db.read_session() as session:
        return {
            sid: sorted(
                (g.number, g.voided)
                for g in stored_games(sid, session=session, include_voided=True)
            )
            for sid, _ in series(db, tid)
        }


def stored_config(db: Database, tid: int) -> dict[str, object]:
    with db.read_session() as session:
        return dict(get_tournament(tid, session=session).config)


def lease_of(db: Database, tid: int) -> LeaseInfo | None:
    with db.read_session() as session:
        return get_lease(tid, session=session)


def other_run(db: Database, tid: int, *, take_over: bool = False) -> LeaseInfo:
    """Another live run (this process, another runner id) takes the tournament's lease."""
    holder = LeaseHolder("other0runner", this_host(), os.getpid(), current_runner().token)
    with db.session() as session:
        return acquire_lease(
            tid, holder, ttl=timedelta(minutes=10), session=session, take_over=take_over
        )


def finish_directly(db: Database, tid: int, ids: Sequence[int]) -> None:
    """Store series ``ids`` as finished (as an earlier run would have left them)."""
    with db.session() as session:
        for sid in ids:
            set_series_status(sid, SeriesStatus.FINISHED, session=session)


# ---------------------------------------------------------------------------- run and resume


def test_a_run_with_series_left_is_pending_shown_stopped_and_resume_plays_the_rest(
    three: tuple[Database, int, Path],
) -> None:
    """A run that ends with series left stores ``pending`` (shown ``stopped``: a run started
    it), says how many series are left, counts the games recorded and planned; while it
    plays the tournament is ``running``. ``resume`` then plays exactly the missing games and
    the tournament is ``finished``."""
    db, tid, store = three
    during: list[tuple[str, str, str]] = []

    def on_game(_series: int, _number: int, _record: object) -> None:
        state = tournament_state(tid, db)
        listed = tournament_states(db)[tid]
        during.append((state.status, state.shown, listed.shown))

    first = run(db, tid, store, prepared(1), on_game=on_game)
    assert during and set(during) == {("running", "running", "running")}, during
    assert (first.finished, first.unfinished, first.problems) == (False, 2, [])
    ids = [sid for sid, _ in series(db, tid)]
    assert series(db, tid) == [(ids[0], "finished"), (ids[1], "pending"), (ids[2], "pending")]
    state = tournament_state(tid, db)
    assert (state.status, state.shown, tournament_states(db)[tid].shown) == (
        "pending",
        "stopped",
        "stopped",
    )
    assert lease_of(db, tid) is None  # released: a resume needs no --take-over
    assert progress(tid, db) == (GAMES, 3 * GAMES)

    executor = prepared(3)
    second = run(db, tid, store, executor)
    assert executor._local is not None and isinstance(executor._local, Partial)
    assert executor._local.given == ids[1:]  # only the series left
    assert (second.finished, second.unfinished, second.problems) == (True, 0, [])
    assert sum(o.games_played for o in second.outcomes) == 2 * GAMES
    assert tournament_state(tid, db).shown == "finished"
    assert progress(tid, db) == (3 * GAMES, 3 * GAMES)
    expected = [(n, False) for n in range(1, GAMES + 1)]
    assert games(db, tid) == {sid: expected for sid in ids}  # each game once, none voided


def test_a_run_stopped_in_a_series_is_resumable_and_its_series_shows_stopped(
    three: tuple[Database, int, Path],
) -> None:
    """A run stopped after its first game (Ctrl-C) leaves that series ``running`` with its
    game kept: the tournament is ``pending``, shown ``stopped`` with that series shown
    ``stopped`` too, all three series are left, and ``resume`` plays exactly the missing
    games (game 1 is not played again)."""
    db, tid, store = three
    stop = threading.Event()
    result = run(db, tid, store, prepared(3), stop=stop, on_game=lambda *_: stop.set())
    assert (result.finished, result.unfinished) == (False, 3), result
    ids = [sid for sid, _ in series(db, tid)]
    statuses = dict(series(db, tid))
    assert statuses[ids[0]] == "running"
    state = tournament_state(tid, db)
    assert (state.status, state.shown) == ("pending", "stopped")
    assert state.series_shown(statuses[ids[0]]) == "stopped"
    assert state.series_shown("pending") == "pending"
    assert progress(tid, db) == (1, 3 * GAMES)

    resumed = run(db, tid, store, prepared(3))
    assert resumed.finished and resumed.unfinished == 0
    assert sum(o.games_played for o in resumed.outcomes) == 3 * GAMES - 1
    expected = [(n, False) for n in range(1, GAMES + 1)]
    assert games(db, tid) == {sid: expected for sid in ids}
    assert progress(tid, db) == (3 * GAMES, 3 * GAMES)


def test_an_aborted_series_keeps_the_tournament_unfinished(
    three: tuple[Database, int, Path],
) -> None:
    """scaling.md: a series reported ``aborted`` is finished by ``resume``: a run that
    leaves one (with every other series finished) leaves the tournament resumable, one
    series not finished."""
    db, tid, store = three
    ids = [sid for sid, _ in series(db, tid)]
    finish_directly(db, tid, ids[:2])
    with db.session() as session:
        set_series_status(ids[2], SeriesStatus.ABORTED, session=session)
    result = run(db, tid, store, prepared(0))
    assert (result.finished, result.unfinished) == (False, 1)
    assert tournament_state(tid, db).status == "pending"


def test_a_cancelled_tournament_is_refused_and_stays_cancelled(
    three: tuple[Database, int, Path],
) -> None:
    """configuration.md / scaling.md: a cancelled tournament is not run again: one line
    saying so; it stays cancelled, nothing is played and no lease is left."""
    db, tid, store = three
    assert cancel(tid, db) == 3
    with pytest.raises(TournamentError, match=f"tournament {tid} was cancelled"):
        run(db, tid, store, prepared(3))
    assert tournament_state(tid, db).status == "cancelled"
    assert progress(tid, db) == (0, 3 * GAMES)
    assert lease_of(db, tid) is None


@pytest.mark.parametrize("entry", ["dummyy", "dummy@9.9.9"])
def test_a_stored_bot_time_for_no_entered_bot_is_refused_by_the_run_itself(
    entry: str, three: tuple[Database, int, Path]
) -> None:
    """configuration.md: a tournament stored by an older release with a ``bot_time`` entry
    that names no entered bot is refused by ``resume`` with the ``set`` command that fixes
    it — by the run itself (not only by the command in front of it): nothing is played."""
    db, tid, store = three
    with db.session() as session:
        update_tournament_config(
            tid, stored_config(db, tid) | {"bot_time": {entry: "0.5+5"}}, name="t", session=session
        )
    with pytest.raises(StoredConfigError, match=f"kryt tournament set {tid} 'bot_time="):
        run(db, tid, store, prepared(3))
    assert progress(tid, db) == (0, 3 * GAMES)
    assert lease_of(db, tid) is None


@pytest.mark.parametrize("entry", ["dummy", "dummy@1.0.0", "greedy@1.0.0"])
def test_a_stored_bot_time_for_an_entered_bot_is_taken(
    entry: str, three: tuple[Database, int, Path]
) -> None:
    """A ``bot_time`` entry naming an entered bot (``name`` or ``name@version``), the last
    one listed included, is taken by the run."""
    db, tid, store = three
    with db.session() as session:
        update_tournament_config(
            tid, stored_config(db, tid) | {"bot_time": {entry: "0.5+5"}}, name="t", session=session
        )
    result = run(db, tid, store, prepared(0))
    assert result.unfinished == 3 and result.problems == []


# ---------------------------------------------------------------------------- the lease


def test_a_second_run_is_refused_naming_the_holder_and_take_over_takes_it(
    three: tuple[Database, int, Path],
) -> None:
    """scaling.md: a second ``run``/``resume`` of a tournament a live run holds is refused
    with one line naming the holder, and plays nothing; ``--take-over`` takes it."""
    db, tid, store = three
    held = other_run(db, tid)
    with pytest.raises(TournamentBusyError, match=f"pid {os.getpid()} on host "):
        run(db, tid, store, prepared(3))
    assert progress(tid, db) == (0, 3 * GAMES)
    assert tournament_state(tid, db).status == "pending"
    after = lease_of(db, tid)
    assert after is not None and after.runner_id == held.runner_id

    result = run(db, tid, store, prepared(0), take_over=True)
    assert result.problems == []
    assert lease_of(db, tid) is None  # taken, then released as the run ended


def test_a_run_that_loses_the_lease_stops_records_nothing_more_and_says_so_once(
    three: tuple[Database, int, Path],
) -> None:
    """scaling.md: a run whose lease is taken over stops, records nothing more (its games
    and the tournament's status are refused) and ends with one line saying why."""
    db, tid, store = three
    taken = threading.Event()

    with RunLease(db, tid, heartbeat_seconds=0.2) as lease:

        def on_game(_series: int, _number: int, _record: object) -> None:
            if not taken.is_set():
                other_run(db, tid, take_over=True)
                taken.set()
                # Until the heartbeat noticed (a busy machine): no game starts meanwhile.
                deadline = time.monotonic() + WAIT_S
                while not lease.lost and time.monotonic() < deadline:
                    time.sleep(0.05)

        result = run(db, tid, store, prepared(3), lease=lease, on_game=on_game)
        reason = lease.lost_reason
    assert taken.is_set() and reason
    assert result.problems == [reason]
    # It stopped: the series after the first were not started at all.
    later = sorted(result.outcomes, key=lambda o: o.series_id)[1:]
    assert [(o.games_played, o.message) for o in later] == [
        (0, "not started (the run stopped)")
    ] * 2, later
    assert not result.finished
    # The game recorded before the take-over is kept; nothing after it.
    assert progress(tid, db) == (1, 3 * GAMES)
    # Its status is not the loser's to write: left as the run set it (and the new holder's).
    assert tournament_state(tid, db).status == "running"
    holder = lease_of(db, tid)
    assert holder is not None and holder.runner_id == "other0runner"


def test_a_run_that_took_its_own_lease_stops_when_it_is_taken_over(
    three: tuple[Database, int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for a run that takes the lease itself (``kryt tournament run``): taken over
    by another run, it stops (its heartbeat, made quick here, notices) and says why."""
    db, tid, store = three
    monkeypatch.setattr(service, "RunLease", functools.partial(RunLease, heartbeat_seconds=0.2))
    stop = threading.Event()
    taken = threading.Event()

    def on_game(_series: int, _number: int, _record: object) -> None:
        if not taken.is_set():
            other_run(db, tid, take_over=True)
            taken.set()
            stop.wait(WAIT_S)  # until the run's heartbeat noticed: no game starts meanwhile

    result = run(db, tid, store, prepared(3), stop=stop, on_game=on_game)
    assert taken.is_set() and stop.is_set()
    assert len(result.problems) == 1 and "no longer holds" in result.problems[0], result
    assert progress(tid, db) == (1, 3 * GAMES)
    holder = lease_of(db, tid)
    assert holder is not None and holder.runner_id == "other0runner"


def test_a_run_given_a_lease_that_is_already_lost_plays_nothing(
    three: tuple[Database, int, Path],
) -> None:
    """A lease the caller took (``resume`` takes it before preparing the executor, which
    may take seconds with Dask) and that was taken over before the run began stops the run
    at once (scaling.md: it "stops and records nothing more", ``stopped early: …`` and the
    resume command): nothing is played and the reason is reported, once."""
    db, tid, store = three
    with RunLease(db, tid, heartbeat_seconds=0.2) as lease:
        other_run(db, tid, take_over=True)
        lost = threading.Event()
        lease.on_lost = lambda _reason: lost.set()
        assert lost.wait(WAIT_S) or lease.lost
        executor = prepared(3)
        result = run(db, tid, store, executor, lease=lease)
    assert result.problems == [lease.lost_reason]
    assert progress(tid, db) == (0, 3 * GAMES)
    assert not result.finished


def test_a_lease_taken_as_the_last_series_ends_is_reported(
    three: tuple[Database, int, Path],
) -> None:
    """A run whose lease is taken over after its last game, before its heartbeat noticed,
    cannot mark the tournament finished (its write is refused): it must say so rather than
    end as if all were well."""
    db, tid, store = three
    ids = [sid for sid, _ in series(db, tid)]
    finish_directly(db, tid, ids[1:])

    def on_series(_outcome: SeriesOutcome) -> None:
        other_run(db, tid, take_over=True)

    result = run(db, tid, store, prepared(1), on_series=on_series)
    assert result.problems, result
    assert all("\n" not in p for p in result.problems)
    assert tournament_state(tid, db).status != "finished"


# ---------------------------------------------------------------------------- before the games


def test_a_run_sweeps_what_a_dead_run_left_and_says_how_many(
    three: tuple[Database, int, Path],
) -> None:
    """scaling.md: before a run the sandboxes left by a dead run of the tournament are
    removed (the tournament's label prefix) and the organiser told how many; nothing is
    said when there were none."""
    db, tid, store = three
    said: list[str] = []
    executor = Sweeping(Partial(0), removed=2)
    run(db, tid, store, executor, say=said.append)
    assert executor.prefixes == [label_prefix(db.url, tid)]
    assert said == ["removed 2 sandbox(es) left over by a dead run"]

    said.clear()
    run(db, tid, store, Sweeping(Partial(0), removed=0), say=said.append)
    assert said == []


def test_clock_cpu_falls_back_to_the_wall_clock_and_is_stored(
    three: tuple[Database, int, Path],
) -> None:
    """configuration.md: ``time_control.clock=cpu`` where the sandbox measures no CPU time
    falls back to the wall clock with a warning, stored so every record says so; where the
    sandbox has a CPU clock nothing changes."""
    db, tid, store = three
    said: list[str] = []
    run(db, tid, store, prepared(0), say=said.append)
    assert said == [] and stored_config(db, tid)["time_control"]["clock"] == "cpu"  # type: ignore[index]

    run(db, tid, store, prepared(0, cpu_clock_problem="no CPU clock here"), say=said.append)
    assert len(said) == 1 and said[0].startswith("warning: clock cpu: no CPU clock here")
    assert stored_config(db, tid)["time_control"]["clock"] == "wall"  # type: ignore[index]


def test_clock_cpu_of_a_finished_tournament_is_left_as_it_was(
    three: tuple[Database, int, Path],
) -> None:
    """A finished tournament plays nothing: a run of it charges no move on the wall clock,
    so neither the warning nor the stored fallback apply (its records say ``cpu``)."""
    db, tid, store = three
    finish_directly(db, tid, [sid for sid, _ in series(db, tid)])
    with db.session() as session:
        set_tournament_status(tid, TournamentStatus.FINISHED, session=session)
    said: list[str] = []
    result = run(
        db, tid, store, prepared(0, cpu_clock_problem="no CPU clock here"), say=said.append
    )
    assert result.finished
    assert said == []
    assert stored_config(db, tid)["time_control"]["clock"] == "cpu"  # type: ignore[index]


def _set_runtime(db: Database, submission_id: int, runtime: str) -> None:
    with db.session() as session:
        row = get_submission(submission_id, session=session)
        row.manifest = dict(row.manifest) | {"runtime": runtime}
        session.add(row)


def _first_bot(db: Database, tid: int) -> int:
    with db.read_session() as session:
        return series_of_tournament(tid, session=session)[0].submission_a_id


def test_a_bot_this_sandbox_cannot_start_is_refused_before_any_game(
    three: tuple[Database, int, Path],
) -> None:
    """As for a new tournament: a bot of a runtime the sandbox cannot run is refused in one
    line before the first game; nothing is played and the tournament is not marked
    ``running``."""
    db, tid, store = three
    _set_runtime(db, _first_bot(db, tid), "node")
    with pytest.raises(TournamentError, match="no node here; nothing was played"):
        run(db, tid, store, prepared(3, refused_runtime="node"))
    assert progress(tid, db) == (0, 3 * GAMES)
    assert tournament_state(tid, db).shown == "pending"


def test_a_bot_whose_series_are_all_finished_does_not_block_the_resume(
    three: tuple[Database, int, Path],
) -> None:
    """Only the bots that still have games to play are checked: a resume is not refused for
    a bot whose series are all finished (it plays no more game on this machine)."""
    db, tid, store = three
    first = _first_bot(db, tid)
    ids = [sid for sid, _ in series(db, tid)]
    finish_directly(db, tid, ids[:2])  # the first bot plays in series 1 and 2 only
    _set_runtime(db, first, "node")
    executor = prepared(0, refused_runtime="node")
    result = run(db, tid, store, executor)
    assert result.unfinished == 1
    assert isinstance(executor._local, Partial) and executor._local.given == ids[2:]


# ---------------------------------------------------------------------------- status


def _lease(*, expires_in: float, token: str | None = None) -> LeaseInfo:
    now = datetime.now(UTC)
    return LeaseInfo(
        tournament_id=1,
        runner_id="r",
        host=this_host(),
        pid=4242,
        process_token=token,
        acquired_at=now - timedelta(minutes=1),
        heartbeat_at=now,
        expires_at=now + timedelta(seconds=expires_in),
    )


def test_status_shows_running_only_while_a_live_run_holds_the_lease() -> None:
    """configuration.md: ``running`` only while a live run holds it; ``stopped`` once a run
    started it and none plays it now — stored ``running`` or ``pending`` alike, its lease
    expired; ``pending`` only for one no run started."""
    live, expired = _lease(expires_in=60), _lease(expires_in=-1)
    assert TournamentState(1, "running", live, started=True).shown == "running"
    assert TournamentState(1, "running", expired, started=True).shown == "stopped"
    assert TournamentState(1, "running", None, started=True).shown == "stopped"
    assert TournamentState(1, "pending", None, started=True).shown == "stopped"
    assert TournamentState(1, "pending", expired, started=True).shown == "stopped"
    assert TournamentState(1, "pending", None, started=False).shown == "pending"
    assert TournamentState(1, "finished", None, started=True).shown == "finished"
    assert TournamentState(1, "cancelled", None, started=True).shown == "cancelled"
    # An imported tournament: nothing ran it here.
    imported = TournamentState(1, "pending", None, imported=True, started=True)
    assert imported.shown == "pending"
    assert TournamentState(1, "running", live, ladder=True).shown == "ladder"


def test_status_says_why_a_run_is_over() -> None:
    """configuration.md: a run that is over shows ``none (last: pid N on host H since
    HH:MM, …)`` with why (``lease expired``); a live one shows its holder."""
    live, expired = _lease(expires_in=60), _lease(expires_in=-1)
    assert TournamentState(1, "running", live).runner == live.describe()
    assert TournamentState(1, "running", expired).runner == (
        f"none (last: {expired.describe()}, lease expired)"
    )
    assert TournamentState(1, "pending", None).runner == "-"


def test_status_shows_a_stopped_runs_started_series_stopped() -> None:
    """configuration.md: a stopped run's series "that the run had started and not finished
    show ``stopped`` too"; its other series keep their status, and a live run's started
    series are ``running``."""
    assert series_shown("running", stopped=True) == "stopped"
    for status in ("pending", "finished", "aborted"):
        assert series_shown(status, stopped=True) == status
    assert series_shown("running", stopped=False) == "running"
    stopped = TournamentState(1, "running", None, started=True)
    assert stopped.series_shown("running") == "stopped"
    live = TournamentState(1, "running", _lease(expires_in=60), started=True)
    assert live.series_shown("running") == "running"


# ---------------------------------------------------------------------------- set, extend


def test_set_is_refused_while_a_live_run_holds_the_tournament(
    three: tuple[Database, int, Path],
) -> None:
    """configuration.md: ``set`` is refused (exit 3) while a live run holds the tournament;
    nothing changes."""
    db, tid, _ = three
    other_run(db, tid)
    with pytest.raises(TournamentBusyError, match="change its settings after that run ends"):
        change_settings(tid, ['name="spring cup"'], db)
    assert stored_config(db, tid).get("name") != "spring cup"


def test_set_keeps_the_extensions_record(three: tuple[Database, int, Path]) -> None:
    """configuration.md: the rounds of ``extend`` are stored under ``extensions``, "a record,
    not a setting": a change of settings keeps them (``replay --verify`` needs them)."""
    db, tid, _ = three
    extend(tid, 2, db)
    before = stored_config(db, tid)["extensions"]
    config = change_settings(tid, ['name="spring cup"'], db)
    assert config.name == "spring cup"
    after = stored_config(db, tid)
    assert after["extensions"] == before and after["name"] == "spring cup"


@pytest.mark.parametrize("games", [0, -1, MAX_GAMES_PER_PAIR + 1, True])
def test_extend_refuses_a_count_outside_the_range(
    games: int, three: tuple[Database, int, Path]
) -> None:
    """configuration.md: ``extend`` is refused for N outside 1–1,000,000; nothing added."""
    db, tid, _ = three
    with pytest.raises(TournamentError, match=r"--games must be in \[1, 1000000\]"):
        extend(tid, games, db)
    assert len(series(db, tid)) == 3


def test_extend_takes_the_largest_count(three: tuple[Database, int, Path]) -> None:
    """configuration.md: N up to 1,000,000 is taken."""
    db, tid, _ = three
    added = extend(tid, MAX_GAMES_PER_PAIR, db)
    assert (added.series_added, added.games_added) == (3, 3 * MAX_GAMES_PER_PAIR)


def test_extend_refuses_a_cancelled_tournament(three: tuple[Database, int, Path]) -> None:
    """configuration.md: ``extend`` is refused with one line for a cancelled tournament."""
    db, tid, _ = three
    cancel(tid, db)
    with pytest.raises(TournamentError, match="was cancelled; it cannot be extended"):
        extend(tid, 2, db)
    assert len(series(db, tid)) == 3


@pytest.fixture(autouse=True)
def _no_leftover_threads() -> Iterator[None]:
    """Every lease heartbeat a test started has ended with it."""
    yield
    beating = [t for t in threading.enumerate() if t.name.startswith("kryt-lease-")]
    for thread in beating:
        thread.join(timeout=30)
    assert not [t for t in beating if t.is_alive()]


# ---------------------------------------------------------------------------- the store


def test_storing_the_same_content_again_changes_nothing(tmp_path: Path) -> None:
    """arena.md: the same content uploaded again is "already stored" (200, not a new
    version); ``kryt submit`` says so from :func:`register`'s ``created``: the second call
    returns the same submission, not created."""
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    first = register(EXAMPLES / "greedy", db=db, submitted_by="t", store=tmp_path / "store")
    again = register(EXAMPLES / "greedy", db=db, submitted_by="t", store=tmp_path / "store")
    assert first.created and not again.created
    assert (again.submission_id, again.sha256) == (first.submission_id, first.sha256)
