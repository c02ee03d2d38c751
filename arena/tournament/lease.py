"""The lease of a run: taken before anything is played, renewed by a heartbeat, released.

One :class:`RunLease` per run of a tournament. While it holds the lease no other runner
starts the tournament (``run``/``resume`` are refused with one line naming the holder), and
every game the run records checks it (see :func:`arena.db.hold_lease`). When the holder
dies its heartbeat stops and the lease expires after :data:`LEASE_TTL`; a runner on the
same host sees at once that the holder's process is gone (its :mod:`sandbox.runner` token).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from types import TracebackType

from arena.db import (
    Database,
    DatabaseError,
    LeaseHeldError,
    LeaseHolder,
    LeaseInfo,
    LeaseLostError,
    acquire_lease,
    release_lease,
    renew_lease,
)
from arena.tournament.runner import TournamentError
from sandbox.runner import RunnerId, RunnerState, current_runner

log = logging.getLogger(__name__)

LEASE_TTL = timedelta(seconds=30)
"""How long a lease outlives its last heartbeat (then the run is taken for dead)."""
HEARTBEAT_SECONDS = 5.0
"""How often a run renews its lease."""


class TournamentBusyError(TournamentError):
    """Another live run holds the tournament (the message names it and what to do)."""

    def __init__(
        self,
        lease: LeaseInfo,
        advice: str = "resume after it ends, or `--take-over` if that run is dead",
    ) -> None:
        super().__init__(
            f"tournament {lease.tournament_id} is being run by {lease.describe()}; {advice}"
        )
        self.lease = lease


def this_host() -> str:
    """The host name stored in leases (and compared to tell a local holder)."""
    return socket.gethostname()


def holder_gone(lease: LeaseInfo) -> bool:
    """True when the lease's holder ran on this host, in our pid namespace, and its process
    is known dead (so its lease is free before it expires)."""
    if lease.host != this_host() or not lease.process_token:
        return False
    runner = RunnerId.parse(lease.process_token)
    return runner is not None and runner.state() is RunnerState.DEAD


def new_runner_id() -> str:
    """A fresh id for one run (short: it goes into every sandbox label of the run)."""
    return uuid.uuid4().hex[:12]


class RunLease:
    """This run's hold on a tournament (a context manager: acquire, heartbeat, release).

    ``on_lost(reason)`` is called once, from the heartbeat thread, when a renewal finds the
    lease taken over or the tournament cancelled; the run should stop then (it cannot
    record anything more anyway).
    """

    def __init__(
        self,
        db: Database,
        tournament_id: int,
        *,
        take_over: bool = False,
        on_lost: Callable[[str], None] = lambda _reason: None,
        ttl: timedelta = LEASE_TTL,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
    ) -> None:
        if heartbeat_seconds <= 0 or timedelta(seconds=heartbeat_seconds) >= ttl:
            raise ValueError(
                f"the heartbeat ({heartbeat_seconds} s) must be positive and shorter than "
                f"the lease's time-to-live ({ttl.total_seconds()} s)"
            )
        self.db = db
        self.tournament_id = tournament_id
        self.take_over = take_over
        self.on_lost = on_lost
        self.ttl = ttl
        self.heartbeat_seconds = heartbeat_seconds
        self.runner_id = new_runner_id()
        self.lost_reason = ""
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._acquiring = 0.0
        """When :meth:`acquire` began (``time.monotonic()``)."""

    def acquire(self) -> LeaseInfo:
        """Take the lease (TournamentBusyError when a live run holds it); start the heartbeat."""
        holder = LeaseHolder(
            runner_id=self.runner_id,
            host=this_host(),
            pid=os.getpid(),
            process_token=current_runner().token,
        )
        self._acquiring = time.monotonic()
        try:
            with self.db.session() as session:
                info = acquire_lease(
                    self.tournament_id,
                    holder,
                    ttl=self.ttl,
                    session=session,
                    take_over=self.take_over,
                    holder_gone=holder_gone,
                )
        except LeaseHeldError as exc:
            raise TournamentBusyError(exc.lease) from None
        self._thread = threading.Thread(
            target=self._beat, name=f"kryt-lease-t{self.tournament_id}", daemon=True
        )
        self._thread.start()
        return info

    @property
    def lost(self) -> bool:
        """True once the heartbeat found the lease gone."""
        return bool(self.lost_reason)

    def _beat(self) -> None:
        # When the last renewal (or the acquisition) that reached the database started: the
        # stored lease runs ttl from a moment after it, so it certainly lasts ttl from here.
        renewed = self._acquiring
        ttl = self.ttl.total_seconds()
        while not self._done.wait(self.heartbeat_seconds):
            started = time.monotonic()
            try:
                # A lost connection (a PostgreSQL restart) is retried at once and until the
                # lease would run out, so a short outage costs no renewal.
                self.db.retrying(
                    lambda session: renew_lease(
                        self.tournament_id, self.runner_id, ttl=self.ttl, session=session
                    ),
                    what=f"renewing the lease of tournament {self.tournament_id}",
                    window=max(0.0, renewed + ttl - started),
                    cancel=self._done,
                )
            except LeaseLostError as exc:
                self._lose(str(exc))
                return
            except DatabaseError as exc:  # keep trying: the lease lasts ttl past the last beat
                if self._done.is_set():  # the run is over (and said why)
                    return
                log.warning(
                    "could not renew the lease of tournament %s: %s", self.tournament_id, exc
                )
            else:
                renewed = started
                continue
            if self._done.is_set():
                return
            if time.monotonic() - renewed >= ttl:
                # The stored lease has expired: from now on the tournament counts as free
                # (another run may take it, its settings may change) and every record of
                # this run is refused (hold_lease); stop rather than play games for nothing.
                self._lose(
                    f"could not renew the lease of tournament {self.tournament_id} for"
                    f" {ttl:g} s (the database was unreachable or kept failing), so it"
                    f" expired and another run may take the tournament over; nothing more is"
                    f" recorded by this run: kryt tournament resume {self.tournament_id}"
                )
                return

    def _lose(self, reason: str) -> None:
        """The lease is gone: say so, once, and tell the run (``on_lost``)."""
        self.lost_reason = reason
        log.error("lease lost: %s", reason)
        self.on_lost(reason)

    def release(self) -> None:
        """Stop the heartbeat and give the lease up (if this run still holds it)."""
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self.lost:
            return
        try:
            with self.db.session() as session:
                release_lease(self.tournament_id, self.runner_id, session=session)
        except DatabaseError as exc:  # it expires by itself
            log.warning("could not release the lease of tournament %s: %s", self.tournament_id, exc)

    def __enter__(self) -> RunLease:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
