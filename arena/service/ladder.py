"""The ladder: a background scheduler that keeps playing series among the active versions.

The entrants are the latest active version of each bot. Each free worker first takes over a
ladder series whose lease ran out (left by a server that was killed), else asks
:func:`arena.service.pairing.choose_pair` for the most instructive pair and creates a
series for it, claimed in the same transaction. While a series plays, a heartbeat renews its
lease; when it ends, the ratings are refitted and stored as a snapshot. All state is in the
database, so a server killed at any moment loses at most the games in progress.
"""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from datetime import timedelta
from typing import TYPE_CHECKING

from sqlmodel import Session, col, func, or_, select

from arena.db import (
    Database,
    SeriesFormat,
    SeriesSpec,
    Submission,
    SubmissionStatus,
    Tournament,
    TournamentSpec,
    TournamentStatus,
    add_series,
    create_tournament,
    get_series,
    pair_counts,
)
from arena.db.ladder import (
    add_ladder_series,
    claim_orphan,
    ladder_games_counted,
    ladder_series_ids,
    release,
    renew_leases,
)
from arena.db.models import Author, BotOwner, Series
from arena.service.pairing import PairResult, choose_pair
from arena.service.play import LadderOutcome, play_ladder_series
from arena.service.settings import ServiceSettings
from arena.tournament.ladder import (
    EARLIER_MASTERS_KEY,
    LADDER_KEY,
    LADDER_NAME,
    EarlierMaster,
    earlier_masters,
    is_ladder,
    ladder_series_seed,
)
from arena.tournament.seeds import commitment, draw_seed
from leaderboard.standings import refit_and_store

if TYPE_CHECKING:
    from arena.service.dask_ladder import DaskLadder

log = logging.getLogger(__name__)

__all__ = ["LADDER_NAME", "Ladder", "entrants", "is_ladder", "ladder_tournament"]


def entrants(*, session: Session) -> list[int]:
    """The latest active version of each bot (submission ids, by bot id); bots of a
    disabled author are left out (bots stored by the organiser have no owner and stay)."""
    rows = session.exec(
        select(Submission)
        .outerjoin(BotOwner, col(BotOwner.bot_id) == col(Submission.bot_id))
        .outerjoin(Author, col(Author.id) == col(BotOwner.author_id))
        .where(
            Submission.status == SubmissionStatus.ACTIVE.value,
            or_(col(Author.id).is_(None), col(Author.disabled).is_(False)),
        )
        .order_by(col(Submission.bot_id), col(Submission.submitted_at), col(Submission.id))
    ).all()
    latest: dict[int, int] = {}
    for row in rows:
        assert row.id is not None
        latest[row.bot_id] = row.id
    return [latest[bot] for bot in sorted(latest)]


def ladder_tournament(settings: ServiceSettings, *, session: Session) -> Tournament:
    """The ladder's tournament (created running on first use).

    Only a tournament the ladder created itself is the ladder's: it is marked in its stored
    configuration (:func:`arena.tournament.ladder.is_ladder`, also true of one an older
    server created). Any other tournament named ``ladder`` (``kryt tournament run --name
    ladder``, whose seed is public once it finished) is never taken over.

    Its seed is the master of every ladder deal: secret (drawn here, with its commitment
    stored in the config, as every tournament's) unless the settings fix one. A ladder
    stored without a commitment (made when the default seed was a public 1) gets a secret
    seed now; the series already scheduled keep their own stored seeds."""
    candidates = session.exec(
        select(Tournament).where(Tournament.name == LADDER_NAME).order_by(col(Tournament.id))
    ).all()
    found = next((t for t in candidates if t.id is not None and is_ladder(t.config)), None)
    if found is not None:
        changed = False
        if settings.ladder.seed == 0 and "seed_commitment" not in found.config:
            # The series already scheduled derive from the old (public) seed: it is kept as
            # a record, so `kryt replay --verify` still checks them.
            before = session.exec(
                select(func.max(Series.position)).where(Series.tournament_id == found.id)
            ).one()
            earlier = earlier_masters(found.config)
            if before is not None:
                earlier.append(EarlierMaster(found.seed, before + 1))
            found.seed = draw_seed()
            found.config = {
                **found.config,
                "seed_commitment": commitment(found.seed),
                EARLIER_MASTERS_KEY: [e.to_json() for e in earlier],
            }
            changed = True
        if found.status != TournamentStatus.RUNNING.value:
            # An older `kryt tournament cancel` marked it so while servers went on playing it.
            found.status = TournamentStatus.RUNNING.value
            changed = True
        if changed:
            session.add(found)
            session.flush()
        return found
    seed = settings.ladder.seed or draw_seed()
    # Not a TournamentConfig (its entrants change as versions come and go): what the pages
    # and `kryt tournament` need to know about how its series are played, and the mark that
    # makes it the ladder's.
    config = {
        "name": LADDER_NAME,
        LADDER_KEY: True,
        "games_per_series": settings.ladder.games_per_series,
        "turn_limit": settings.turn_limit,
        "time_control": asdict(settings.time_control),
        "sandbox": {"backend": settings.sandbox.backend},
        "seed_commitment": commitment(seed),
    }
    tournament = create_tournament(
        TournamentSpec(name=LADDER_NAME, seed=seed, config=config, series=[]),
        session=session,
        status=TournamentStatus.RUNNING,
    )
    assert tournament.id is not None
    return tournament


class Ladder:
    """The scheduler thread and its pool of series workers."""

    def __init__(self, db: Database, settings: ServiceSettings, *, label_prefix: str) -> None:
        self._db = db
        self._settings = settings
        self._label = label_prefix
        self.instance = f"{uuid.uuid4().hex[:12]}"
        self._lease = timedelta(seconds=settings.ladder.lease_seconds)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._running: dict[int, Future[None] | None] = {}
        """Series this server plays: a local future, or None when a Dask task plays it."""
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(
            max_workers=settings.ladder.concurrency, thread_name_prefix="kryt-ladder"
        )
        self._thread = threading.Thread(target=self._loop, name="kryt-ladder", daemon=True)
        self._renewer = threading.Thread(
            target=self._keep_leases, name="kryt-ladder-leases", daemon=True
        )
        self.scheduled = 0
        self.games_played = 0
        self._dask: DaskLadder | None = None
        if settings.ladder.executor == "dask":
            # Imported here: distributed is slow to import and only this executor needs it.
            from arena.service.dask_ladder import DaskLadder

            self._dask = DaskLadder(
                settings, database_url=db.url, label_prefix=label_prefix, claimed_by=self.instance
            )

    def start(self) -> None:
        """Start scheduling in the background (on Dask: connect and check the workers, and
        sweep what dead servers left on them, first; raises when the cluster is unusable)."""
        if self._dask is not None:
            swept = self._dask.prepare()
            if swept:
                log.warning("removed %d sandbox(es) left on the Dask workers", swept)
        self._renewer.start()
        self._thread.start()

    def wake(self) -> None:
        """Look for work now (a new version was accepted)."""
        self._wake.set()

    def running(self) -> list[int]:
        """Ids of the series this server is playing."""
        with self._lock:
            return sorted(self._running)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop cleanly: no new series, games in progress are interrupted and replayed later."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._renewer.join(timeout)
        if self._dask is not None:
            self._dask.stop(timeout)
        with self._db.session() as session:
            for sid in ladder_series_ids(session=session, unfinished_only=True):
                release(sid, session=session, claimed_by=self.instance)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._heartbeat()
                while self._free() and not self._stop.is_set():
                    if self._dask is not None:
                        # No series is claimed (or made) while the cluster is unreachable.
                        self._dask.reach()
                    series_id = self._next_series()
                    if series_id is None:
                        break
                    self._launch(series_id)
            except Exception:  # keep the ladder alive through a database hiccup
                log.exception("ladder scheduling failed; retrying")
            self._wake.wait(self._settings.ladder.poll_seconds)
            self._wake.clear()

    def _keep_leases(self) -> None:
        """Renew the leases of the series this server plays three times a lease, whatever
        the scheduler is doing (waiting out its poll interval, or a slow database): a live
        server's series must never look abandoned to another server. Each game recorded
        renews its series' lease too."""
        period = self._settings.ladder.lease_seconds / 3
        while not self._stop.wait(period):
            try:
                self._heartbeat()
            except Exception:  # a database hiccup: the next renewal may get through
                log.exception("ladder: renewing the leases failed; retrying")

    def _free(self) -> bool:
        with self._lock:
            return len(self._running) < self._settings.ladder.concurrency

    def _heartbeat(self) -> None:
        held = self.running()
        if held:
            with self._db.session() as session:
                renew_leases(held, session=session, claimed_by=self.instance, lease=self._lease)

    def _next_series(self) -> int | None:
        """An orphaned series to resume, else a new one for the most instructive pair."""
        budget = self._settings.ladder.budget_games
        with self._db.session() as session:
            orphan = claim_orphan(
                session=session,
                claimed_by=self.instance,
                lease=self._lease,
                playing=self.running(),
            )
            if orphan is not None:
                log.info("ladder: resuming series %s", orphan)
                return orphan
            if budget and ladder_games_counted(session=session) >= budget:
                return None
            players = entrants(session=session)
            busy = []
            for sid in ladder_series_ids(session=session, unfinished_only=True):
                series = get_series(sid, session=session)
                busy.append((series.submission_a_id, series.submission_b_id))
            counts = pair_counts(session=session)
            results = [
                PairResult(
                    c.first_submission_id,
                    c.second_submission_id,
                    c.games,
                    c.wins + 0.5 * c.draws,
                )
                for c in counts
                if c.games > 0
            ]
            pair = choose_pair(players, results, busy=busy, scheduled=self.scheduled)
            if pair is None:
                return None
            tournament = ladder_tournament(self._settings, session=session)
            assert tournament.id is not None
            a, b = pair
            games = self._settings.ladder.games_per_series
            spec = SeriesSpec(
                submission_a_id=a,
                submission_b_id=b,
                games_planned=games,
                seed=ladder_series_seed(tournament.seed, self.scheduled, a, b),
                format=SeriesFormat.STANDARD,
            )
            row = add_series(tournament.id, spec, session=session)
            # The seed follows the series' position, so no two ladder series share deals.
            row.seed = ladder_series_seed(tournament.seed, row.position, a, b)
            session.add(row)
            session.flush()
            assert row.id is not None
            add_ladder_series(row.id, session=session, claimed_by=self.instance, lease=self._lease)
            self.scheduled += 1
            log.info("ladder: series %s between submissions %s and %s", row.id, a, b)
            return row.id

    def _launch(self, series_id: int) -> None:
        if self._dask is not None:
            with self._lock:
                self._running[series_id] = None
            try:
                self._dask.submit(series_id, self._remote_done)
            except BaseException:
                # Not sent (the cluster is unreachable): give the series up at once, so that
                # this server (once the cluster is back) or another one plays it, instead of
                # renewing the lease of a series nobody plays.
                with self._lock:
                    self._running.pop(series_id, None)
                with self._db.session() as session:
                    release(series_id, session=session, claimed_by=self.instance)
                raise
            return
        with self._lock:
            self._running[series_id] = self._pool.submit(self._play, series_id)

    def _remote_done(self, series_id: int, outcome: LadderOutcome | None) -> None:
        """A series played on Dask ended (``None``: it failed; its lease runs out and it is
        retried, as in :meth:`_play`)."""
        try:
            if outcome is None:
                log.error("ladder series %s failed on the Dask cluster", series_id)
                return
            self.games_played += outcome.games_played
            self._after(series_id, outcome)
        except Exception:
            log.exception("ladder series %s: recording its end failed", series_id)
        finally:
            with self._lock:
                self._running.pop(series_id, None)
            self._wake.set()

    def _after(self, series_id: int, outcome: LadderOutcome) -> None:
        if outcome.status in ("finished", "aborted"):
            refit_and_store(self._db)
        if outcome.status != "interrupted":
            with self._db.session() as session:
                release(series_id, session=session, claimed_by=self.instance)

    def _play(self, series_id: int) -> None:
        try:
            outcome = play_ladder_series(
                series_id,
                db=self._db,
                settings=self._settings,
                label_prefix=self._label,
                stop=self._stop,
                on_game=self._counted,
                claimed_by=self.instance,
            )
            self._after(series_id, outcome)
        except Exception:
            # The lease is kept and runs out, so the series is retried later (here or by
            # another server) instead of being lost.
            log.exception("ladder series %s failed", series_id)
        finally:
            with self._lock:
                self._running.pop(series_id, None)
            self._wake.set()

    def _counted(self, _series_id: int) -> None:
        self.games_played += 1
