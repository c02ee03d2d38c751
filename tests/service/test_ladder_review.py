"""An independent review of the ladder as organisers and bot authors meet it: pairings,
versions superseding each other, stored results against a recomputation, loser-deals across
a restart, bots that crash in every game, stop/restart and concurrent uploads.

The ladder runs in process (the scheduler thread and its pool, as ``kryt arena serve`` runs
them) over a SQLite database of its own, with bots in the process backend.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text, update

from arena.db import (
    Database,
    Submission,
    SubmissionStatus,
    get_series,
    latest_rating_snapshot,
    open_database,
)
from arena.db.accounts import authenticate_token, create_author, create_token
from arena.db.ladder import claim_orphan, ladder_series_ids
from arena.db.models import LadderSeries
from arena.service.ladder import Ladder, entrants
from arena.service.pairing import PairResult, choose_pair
from arena.service.play import play_ladder_series
from arena.service.server import archive_of
from arena.service.settings import LadderSettings, ServiceSettings
from arena.service.uploads import Accepted, accept_upload
from arena.tournament.config import SandboxSettings
from arena.tournament.store import register
from leaderboard.ratings import EloTracker, PairCounts, RatingsError, fit_bayeselo
from leaderboard.ratings.games import Game as RatedGame
from leaderboard.ratings.games import Outcome
from referee.series import first_dealer
from tests.procfs import process_stats
from tests.service.conftest import CRASHING_BOT, make_bot

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

GAMES_PER_SERIES = 4
BUDGET = 24
WAIT_S = 150.0


def _settings(store: Path, **ladder: Any) -> ServiceSettings:
    values: dict[str, Any] = {
        "games_per_series": GAMES_PER_SERIES,
        "poll_seconds": 0.05,
        "lease_seconds": 3.0,
        **ladder,
    }
    return ServiceSettings(
        store=store,
        writes_per_minute=1000,
        ladder=LadderSettings(**values),
        sandbox=SandboxSettings(backend="process", allow_unsafe=True),
    )


def _activate(db: Database, *ids: int) -> None:
    with db.session() as session:
        for sid in ids:
            row = session.get(Submission, sid)
            assert row is not None
            row.status = SubmissionStatus.ACTIVE.value
            session.add(row)


def _stored(db: Database, folder: Path, store: Path) -> int:
    """A bot folder stored as a version (as ``kryt submit`` does), made active."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sid = register(folder, db=db, submitted_by="organiser", store=store).submission_id
    _activate(db, sid)
    return sid


def _children() -> set[int]:
    """Living (not zombie) child processes of this process."""
    me = str(os.getpid())
    return {pid for pid, fields in process_stats() if fields[1] == me and fields[0] != "Z"}


def _wait(predicate: Any, what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _rows(db: Database, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    with db.read_session() as session:
        return [tuple(r) for r in session.execute(text(sql), params)]


@dataclass
class Played:
    """A ladder played in two runs (stopped mid-series, then restarted) over one database."""

    db: Database
    ids: dict[str, int]
    children_after_first_stop: set[int]
    children_after_second_stop: set[int]
    children_before: set[int]
    first_run_games: int
    resumed_series: list[int] = field(default_factory=list)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    tmp = tmp_path_factory.mktemp("ladder-review")
    db = open_database(f"sqlite:///{tmp / 'arena.db'}")
    store = tmp / "store"
    ids = {
        "alpha": _stored(db, make_bot(tmp / "alpha", "alpha"), store),
        "beta": _stored(db, make_bot(tmp / "beta", "beta"), store),
        "gamma": _stored(db, make_bot(tmp / "gamma", "gamma", code=CRASHING_BOT), store),
    }
    settings = _settings(store, budget_games=BUDGET)
    before = _children()
    first = Ladder(db, settings, label_prefix="krv-")
    first.start()
    # Stopped while a series has games left to play (2 of 4 counted in the first series).
    _wait(lambda: first.games_played >= 2, "two ladder games")
    first.stop()
    after_first = _children() - before
    first_run_games = _rows(db, "select count(*) from games where not voided")[0][0]
    unfinished = _rows(db, "select id from series where status in ('pending', 'running')")
    second = Ladder(db, settings, label_prefix="krv-")
    second.start()

    def done() -> bool:
        counted = _rows(db, "select count(*) from games where not voided")[0][0]
        with db.read_session() as session:
            left = ladder_series_ids(session=session, unfinished_only=True)
        return bool(counted >= BUDGET and not left and not second.running())

    _wait(done, "the ladder's budget")
    second.stop()
    after_second = _children() - before
    yield Played(
        db,
        ids,
        after_first,
        after_second,
        before,
        first_run_games,
        [int(r[0]) for r in unfinished],
    )
    db.close()


# ------------------------------------------------------------------ games: none lost or doubled


def test_every_ladder_series_has_each_game_exactly_once_across_a_restart(played: Played) -> None:
    """docs/arena.md: "Every game is committed as it ends ... The games table's unique keys
    make a game recorded twice impossible; the game in progress at the kill is replayed with
    the same deal." and "Each series plays `ladder.games_per_series` games"."""
    series = _rows(played.db, "select id, games_planned, status from series order by id")
    assert series, "the ladder played nothing"
    for sid, planned, status in series:
        assert status == "finished", (sid, status)
        numbers = [
            n
            for (n,) in _rows(
                played.db,
                "select number from games where series_id = :s and not voided order by number",
                s=sid,
            )
        ]
        assert planned == GAMES_PER_SERIES
        assert numbers == list(range(1, planned + 1)), (sid, numbers)


def test_the_series_stopped_mid_way_was_resumed_not_replaced(played: Played) -> None:
    """docs/arena.md (Upgrade): "Start the server; unfinished ladder series and pending
    validations resume." A clean stop interrupts the series; the next server finishes it."""
    assert 0 < played.first_run_games < BUDGET
    assert played.resumed_series, "the first ladder was stopped with no series under way"
    for sid in played.resumed_series:
        rows = _rows(played.db, "select status from series where id = :s", s=sid)
        assert rows == [("finished",)]
    leases = _rows(played.db, "select claimed_by, lease_until from ladder_series")
    assert all(row == (None, None) for row in leases), leases


def test_the_loser_deals_in_every_ladder_series(played: Played) -> None:
    """docs/rules.md: "The first dealer is drawn from the series seed; afterwards the loser
    deals; after a draw the same dealer deals again; a forfeit counts as a loss" (the
    resumed series included: its later games follow its stored ones)."""
    for (sid,) in _rows(played.db, "select id from series"):
        with played.db.read_session() as session:
            seed = get_series(sid, session=session).seed
        games = _rows(
            played.db,
            "select number, dealer, result from games where series_id = :s and not voided "
            "order by number",
            s=sid,
        )
        expected = first_dealer(seed)
        for number, dealer, result in games:
            assert dealer == expected, (sid, number, dealer, expected)
            if result in ("seat0", "seat1"):
                expected = 1 - int(result[-1])  # the loser deals next
            else:
                assert result == "draw"


def test_a_bot_that_crashes_in_every_game_forfeits_each_as_a_loss(played: Played) -> None:
    """docs/rules.md: "A player forfeits the game when he ... crashes ... a forfeit counts as
    a loss"; docs/arena.md: a version that passed its validation is *active* and "joins the
    ladder". Its games are counted losses with the reason kept, the series goes on."""
    gamma = played.ids["gamma"]
    games = _rows(
        played.db,
        "select result, end_reason, forfeit_seat, seat0_submission_id, seat1_submission_id "
        "from games where not voided and (seat0_submission_id = :g or seat1_submission_id = :g)",
        g=gamma,
    )
    assert games, "the crashing bot was never paired"
    for result, reason, seat, s0, _s1 in games:
        crasher = 0 if s0 == gamma else 1
        assert reason == "startup failure" and seat == crasher
        assert result == f"seat{1 - crasher}"


def test_every_entrant_gets_games(played: Played) -> None:
    """docs/arena.md: "new bots first ... and every fifth choice the pair with the fewest
    games so every pair is played eventually"."""
    pairs = {
        frozenset((a, b))
        for a, b in _rows(played.db, "select submission_a_id, submission_b_id from series")
    }
    ids = list(played.ids.values())
    assert pairs == {frozenset((a, b)) for i, a in enumerate(ids) for b in ids[i + 1 :]}


def test_the_budget_stops_scheduling(played: Played) -> None:
    """docs/configuration.md: "`--budget` ... stop scheduling after this many counted ladder
    games": no series is started once the budget is spent, so at most one series' games
    (concurrency 1) go over it."""
    counted = _rows(played.db, "select count(*) from games where not voided")[0][0]
    assert BUDGET <= counted < BUDGET + GAMES_PER_SERIES


def test_no_bot_process_outlives_a_stopped_ladder(played: Played) -> None:
    """docs/arena.md: "Bots started in bubblewrap or as plain processes die with the server";
    `Ladder.stop`: "games in progress are interrupted and replayed later"."""
    assert played.children_after_first_stop == set()
    assert played.children_after_second_stop == set()


# ------------------------------------------------------------------ ratings: a recomputation


def _recomputed(db: Database) -> tuple[PairCounts, dict[int, tuple[int, int, int]], EloTracker]:
    rows = _rows(
        db,
        "select first_mover, seat0_submission_id, seat1_submission_id, result from games "
        "where not voided order by id",
    )
    games = []
    totals: dict[int, list[int]] = {}
    for first_mover, s0, s1, result in rows:
        seats = (s0, s1)
        first, second = seats[first_mover], seats[1 - first_mover]
        if result == "draw":
            outcome = Outcome.DRAW
        else:
            outcome = Outcome.FIRST_WINS if int(result[-1]) == first_mover else Outcome.SECOND_WINS
        games.append(RatedGame(str(first), str(second), outcome))
        for sid, points in ((first, outcome.score), (second, 1 - outcome.score)):
            wdl = totals.setdefault(sid, [0, 0, 0])
            wdl[0 if points == 1 else 1 if points == 0.5 else 2] += 1
    tracker = EloTracker()
    for game in games:
        tracker.update(game)
    return (
        PairCounts.from_games(games),
        {sid: (w, d, loss) for sid, (w, d, loss) in totals.items()},
        tracker,
    )


def test_the_stored_ratings_agree_with_a_recomputation_from_the_games(played: Played) -> None:
    """docs/arena.md: "After each series the BayesElo ratings are refitted and stored as a
    snapshot"; docs/ratings.md: Elo "K is 32 for a bot's first 30 games ... Everyone starts
    at 1500", BayesElo with "prior ... (default 2)" and "`score` = (wins + draws/2) / games";
    docs/leaderboard.md: "BayesElo rating of record (centred on 0, shown +1500)".
    The newest snapshot (taken after the last series) is recomputed from the games table."""
    counts, totals, tracker = _recomputed(played.db)
    with played.db.read_session() as session:
        snapshot = latest_rating_snapshot(session=session, model="bayeselo")
        assert snapshot is not None
        entries = {line.submission_id: line for line in snapshot.entries}
        for line in entries.values():
            session.expunge(line)
    assert set(entries) == set(totals)
    try:
        fit = fit_bayeselo(counts, offset=1500.0)
    except RatingsError:  # a sweep: the board fixes advantage and drawelo (its note says why)
        fit = fit_bayeselo(counts, offset=1500.0, fit_advantage=False, fit_drawelo=False)
    rating = {int(name): float(fit.ratings[k]) for k, name in enumerate(fit.names)}
    for sid, line in entries.items():
        wins, draws, losses = totals[sid]
        assert (line.wins, line.draws, line.losses) == (wins, draws, losses)
        assert line.games == wins + draws + losses
        assert line.score == pytest.approx((wins + draws / 2) / line.games)
        assert line.rating == pytest.approx(rating[sid], abs=1e-3)
        assert line.extra["elo"] == pytest.approx(tracker.rating(str(sid)).rating, abs=1e-6)
    order = sorted(entries, key=lambda sid: entries[sid].rank)
    assert order == sorted(entries, key=lambda sid: (-round(rating[sid], 6), sid))


# ------------------------------------------------------------------ versions


def _bare_ladder(tmp: Path) -> tuple[Database, ServiceSettings]:
    db = open_database(f"sqlite:///{tmp / 'arena.db'}")
    return db, _settings(tmp / "store")


def test_a_new_active_version_supersedes_the_old_one(tmp_path: Path) -> None:
    """docs/arena.md: "The entrants are the latest active version of each bot." A pending
    newer version leaves the older one playing; once active, it alone plays; the older
    version's results stay stored."""
    db, settings = _bare_ladder(tmp_path)
    store = settings.store
    a1 = _stored(db, make_bot(tmp_path / "a1", "alpha", "1.0.0"), store)
    b1 = _stored(db, make_bot(tmp_path / "b1", "beta", "1.0.0"), store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a2 = register(
            make_bot(tmp_path / "a2", "alpha", "2.0.0", code=CRASHING_BOT),
            db=db,
            submitted_by="organiser",
            store=store,
        ).submission_id
    with db.session() as session:
        row = session.get(Submission, a2)
        assert row is not None
        row.status = SubmissionStatus.PENDING.value
        session.add(row)
        assert entrants(session=session) == [a1, b1]
    ladder = Ladder(db, settings, label_prefix="krv-sup-")
    old = ladder._next_series()
    assert old is not None
    _activate(db, a2)  # accepted while the old version's series is under way
    with db.read_session() as session:
        assert entrants(session=session) == [a2, b1]
    outcome = play_ladder_series(
        old, db=db, settings=settings, label_prefix="krv-sup-", stop=threading.Event()
    )
    assert outcome.status == "finished"
    seats = set(_rows(db, "select seat0_submission_id, seat1_submission_id from games"))
    assert seats == {(a1, b1)}, "the running series keeps the versions it started with"
    new = ladder._next_series()
    assert new is not None
    with db.read_session() as session:
        series = get_series(new, session=session)
        pair = {series.submission_a_id, series.submission_b_id}
    assert pair == {a2, b1}
    db.close()


def test_choose_pair_never_picks_a_version_that_is_not_an_entrant() -> None:
    """docs/arena.md: "The entrants are the latest active version of each bot": results of a
    superseded version (id 1) are kept but it is never paired; the new version (id 4) is
    new, so it comes first."""
    results = [PairResult(1, 2, 40, 30.0), PairResult(1, 3, 40, 10.0), PairResult(2, 3, 40, 5.0)]
    players = [2, 3, 4]
    for scheduled in range(10):
        pair = choose_pair(players, results, scheduled=scheduled)
        assert pair is not None and 1 not in pair and 4 in pair


# ------------------------------------------------------------------ concurrent uploads


def _upload(
    db: Database, settings: ServiceSettings, folder: Path, token: str
) -> Accepted | Exception:
    data, name = archive_of(folder)
    with db.read_session() as session:
        principal = authenticate_token(token, session=session)
    assert principal is not None
    try:
        return accept_upload(data, name, principal, db=db, settings=settings)
    except Exception as exc:  # reported to the test, which says what it expected
        return exc


def test_two_versions_of_a_new_bot_uploaded_at_once_are_both_stored(tmp_path: Path) -> None:
    """docs/arena.md: "The first author to submit a bot name owns it: only they can add
    versions" and a valid upload "is stored as *pending*": two versions of the author's own
    new bot sent at the same moment are both stored, under one bot."""
    db, settings = _bare_ladder(tmp_path)
    with db.session() as session:
        create_author("alice", session=session)
        token = create_token("alice", session=session, lifetime=timedelta(days=1)).secret
    folders = [make_bot(tmp_path / f"d{v}", "delta", f"{v}.0.0") for v in (1, 2)]
    results: list[Accepted | Exception] = [RuntimeError("not run")] * 2
    barrier = threading.Barrier(2)

    def run(k: int) -> None:
        barrier.wait()
        results[k] = _upload(db, settings, folders[k], token)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert all(isinstance(r, Accepted) for r in results), results
    rows = _rows(db, "select b.name, s.version, s.status from submissions s join bots b on "
                 "b.id = s.bot_id order by s.version")  # fmt: skip
    assert rows == [("delta", "1.0.0", "pending"), ("delta", "2.0.0", "pending")]
    db.close()


# ------------------------------------------------------------------ leases


def test_a_live_servers_series_is_not_taken_over_by_another_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/arena.md: "A running series holds a lease (`ladder.lease_seconds`) renewed by a
    heartbeat; after `kill -9` the lease runs out and the next server (or another one on the
    same database) resumes the series"; docs/configuration.md: `KRYT_ARENA_LADDER_LEASE_SECONDS`
    "a series of a dead server is taken over after this". Two live servers share one
    database, with settings both accept (a poll interval longer than the lease): the second
    must not resume a series the first is still playing (its leases were renewed only once
    a poll interval before)."""
    db, _ = _bare_ladder(tmp_path)
    settings = _settings(
        tmp_path / "store",
        lease_seconds=3.0,
        poll_seconds=9.0,
        games_per_series=200,
        budget_games=1,
    )
    for name in ("alpha", "beta"):
        _stored(db, make_bot(tmp_path / name, name), settings.store)
    caplog.set_level("INFO", logger="arena.service.ladder")
    first = Ladder(db, settings, label_prefix="krv-one-")
    second = Ladder(db, settings, label_prefix="krv-two-")
    first.start()
    try:
        _wait(lambda: first.games_played >= 1, "a game of the first server")
        time.sleep(settings.ladder.poll_seconds / 2)  # out of phase with the first's heartbeat
        second.start()
        _wait(lambda: bool(second.running()) or first.games_played >= 60, "60 games")
    finally:
        second.stop()
        first.stop()
    resumed = [r.getMessage() for r in caplog.records if "resuming series" in r.getMessage()]
    assert resumed == [], resumed
    db.close()


def test_a_server_that_lost_its_lease_records_no_more_games(tmp_path: Path) -> None:
    """docs/arena.md: "The games table's unique keys make a game recorded twice impossible":
    a server whose lease ran out while it played (another server holds the series now)
    stops the series instead of recording games beside the new holder's."""
    db, settings = _bare_ladder(tmp_path)
    for name in ("alpha", "beta"):
        _stored(db, make_bot(tmp_path / name, name), settings.store)
    ladder = Ladder(db, settings, label_prefix="krv-lost-")
    series_id = ladder._next_series()  # claimed by this ladder's instance
    assert series_id is not None
    outcome = play_ladder_series(
        series_id,
        db=db,
        settings=settings,
        label_prefix="krv-lost-",
        stop=threading.Event(),
        claimed_by="another-server",
    )
    assert (outcome.status, outcome.games_played) == ("interrupted", 0)
    assert outcome.message == "taken over by another server"
    assert _rows(db, "select count(*) from games") == [(0,)]
    # The holder plays it as usual, each game renewing its lease.
    held = play_ladder_series(
        series_id,
        db=db,
        settings=settings,
        label_prefix="krv-lost-",
        stop=threading.Event(),
        claimed_by=ladder.instance,
    )
    assert (held.status, held.games_played) == ("finished", settings.ladder.games_per_series)
    db.close()


def test_a_server_never_claims_its_own_series_late_to_renew(tmp_path: Path) -> None:
    """A series whose lease ran out is an orphan to every other server, but not to the
    server that is playing it (its renewal was late: it is not dead)."""
    db, settings = _bare_ladder(tmp_path)
    for name in ("alpha", "beta"):
        _stored(db, make_bot(tmp_path / name, name), settings.store)
    ladder = Ladder(db, settings, label_prefix="krv-own-")
    series_id = ladder._next_series()
    assert series_id is not None
    with db.session() as session:
        session.execute(update(LadderSeries).values(lease_until=datetime(2000, 1, 1, tzinfo=UTC)))
    lease = timedelta(seconds=30)
    with db.session() as session:
        mine = claim_orphan(
            session=session, claimed_by=ladder.instance, lease=lease, playing=[series_id]
        )
        assert mine is None
    with db.session() as session:
        assert claim_orphan(session=session, claimed_by="other", lease=lease) == series_id
    db.close()
