"""Stored games out of the database as :class:`~leaderboard.gamefile.GameEntry` values, and
entries back in: the database side of ``kryt games export`` and ``kryt games import``.

An import recreates each game's place: the bot versions (by content hash, without their
code: an imported submission has no archive and cannot be played again), the tournament
(found by name and seed, else created), its series (by position) and the game (by series,
number and attempt). Every step is idempotent, so importing a file twice adds nothing, and
importing a whole export into an empty database gives the same ids, games and standings.
An imported tournament also keeps the seed commitments the file published (``SeedCommitment``,
``RoundSeedCommitment``: checked against their seeds when the file was read), which
``kryt replay --verify`` checks its seeds against and a re-export writes again.

Statuses: an import never changes the status of a tournament this database ran itself, nor
of its series (the database's own record is the truth), and moves the status of an imported
tournament or series only forward (:data:`TOURNAMENT_FORWARD`, :data:`SERIES_FORWARD`: a
finished tournament is never un-finished); a status the file would move back is kept, and
the import says so (:attr:`ImportSummary.kept`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from sqlmodel import Session

from arena.db import (
    ConflictError,
    DatabaseError,
    GamePlace,
    InvalidRecordError,
    NewSubmission,
    SeriesFormat,
    SeriesSpec,
    SeriesStatus,
    SubmissionStatus,
    TournamentStatus,
    VersionReusedError,
    ensure_series,
    find_games,
    find_or_create_tournament,
    get_series,
    get_submission,
    get_tournament,
    record_game,
    set_series_status,
    set_tournament_status,
    store_tournament_config,
    stored_record,
    submission_labels,
    submit,
)
from arena.db.games import voided_after_recording
from arena.db.models import Game, Series, Tournament
from arena.tournament.config import is_imported
from arena.tournament.extend import seed_chain, series_origin
from arena.tournament.origin import (
    SEED_COMMITMENT_KEY,
    OriginError,
    SeriesOrigin,
    with_imported_commitment,
    with_imported_origin,
)
from arena.tournament.runner import TournamentError
from leaderboard.gamefile import GameEntry, Seat

IMPORTED_BY = "kryt games import"


@dataclass(frozen=True, slots=True)
class GameFilter:
    """Which games: a bot's, a tournament's, by result or by ending (see ``find_games``)."""

    bot: str | None = None
    tournament_id: int | None = None
    result: str | None = None
    reasons: tuple[str, ...] = ()
    limit: int | None = None
    newest_first: bool = False


def select_games(where: GameFilter, *, session: Session) -> list[Game]:
    """The stored games matching ``where``."""
    return find_games(
        session=session,
        bot=where.bot,
        tournament_id=where.tournament_id,
        result=where.result,
        reasons=where.reasons,
        limit=where.limit,
        newest_first=where.newest_first,
    )


@dataclass(frozen=True, slots=True)
class Exportable:
    """The games a game file may hold, and how many of the chosen ones were left out."""

    games: list[Game]
    tables: int
    """Classic-table games: the format has no place for 3-4 seats."""
    unfinished: int
    """Games of tournaments not finished: a game file carries the tournament's and the
    series' seeds, which stay secret until the tournament finishes (whoever knows them knows
    every deal still to come), as on the web pages."""


def exportable(games: Sequence[Game], *, session: Session) -> Exportable:
    """Split ``games`` into those a game file may hold and those left out (see
    :class:`Exportable`)."""
    status: dict[int, str] = {}
    tournament_of: dict[int, int] = {}
    kept: list[Game] = []
    tables = unfinished = 0
    for game in games:
        if game.ruleset != "default":
            tables += 1
            continue
        if game.series_id not in tournament_of:
            series = get_series(game.series_id, session=session)
            tournament_of[game.series_id] = series.tournament_id
        tournament_id = tournament_of[game.series_id]
        if tournament_id not in status:
            status[tournament_id] = get_tournament(tournament_id, session=session).status
        if status[tournament_id] != TournamentStatus.FINISHED:
            unfinished += 1
            continue
        kept.append(game)
    return Exportable(kept, tables, unfinished)


def export_entries(games: Sequence[Game], *, session: Session) -> list[GameEntry]:
    """The entries of ``games`` (in the given order), with their places and seats."""
    labels = submission_labels(session=session)
    hashes: dict[int, str] = {}
    series_rows: dict[int, Series] = {}
    tournaments: dict[int, Tournament] = {}
    origins: dict[int | None, SeriesOrigin | None] = {}
    round_marks: dict[int | None, str | None] = {}
    entries = []
    for game in games:
        if game.series_id not in series_rows:
            series_rows[game.series_id] = get_series(game.series_id, session=session)
        series = series_rows[game.series_id]
        if series.tournament_id not in tournaments:
            tournaments[series.tournament_id] = get_tournament(
                series.tournament_id, session=session
            )
        tournament = tournaments[series.tournament_id]
        if series.id not in origins:
            try:
                origins[series.id] = series_origin(tournament.config, series)
            except TournamentError:  # a damaged record of where it came from: leave it out
                origins[series.id] = None
            round_marks[series.id] = _round_commitment(tournament, series, origins[series.id])
        mark = tournament.config.get(SEED_COMMITMENT_KEY)
        seats = []
        for sid in (game.seat0_submission_id, game.seat1_submission_id):
            if sid not in hashes:
                hashes[sid] = get_submission(sid, session=session).sha256
            name, version = labels[sid]
            seats.append(Seat(name, version, hashes[sid]))
        # A game voided after it was recorded is exported as played, with its void reason.
        voided_after = voided_after_recording(game)
        record = stored_record(game, (seats[0].label, seats[1].label), as_played=voided_after)
        entries.append(
            GameEntry(
                record=record,
                seats=(seats[0], seats[1]),
                number=game.number,
                attempt=game.attempt,
                tournament=tournament.name,
                tournament_seed=tournament.seed,
                tournament_status=tournament.status,
                series_position=series.position,
                series_format=series.format,
                series_games=series.games_planned,
                series_seed=series.seed,
                series_status=series.status,
                series_a_seat=0 if game.seat0_submission_id == series.submission_a_id else 1,
                game_id=game.id,
                tournament_id=tournament.id,
                series_id=series.id,
                origin=origins[series.id],
                seed_commitment=mark if isinstance(mark, str) else None,
                round_commitment=round_marks[series.id],
                voided_after=(game.void_reason or "voided") if voided_after else None,
            )
        )
    return entries


def _round_commitment(
    tournament: Tournament, series: Series, origin: SeriesOrigin | None
) -> str | None:
    """The published commitment of the extension round ``series`` belongs to (None: not a
    round's series, or none is stored), for the file's ``RoundSeedCommitment``: what
    ``kryt replay --verify`` checks the round's seed against (:func:`seed_chain`)."""
    if origin is None or origin.round_seed is None:
        return None
    try:
        chain = seed_chain(tournament.seed, tournament.config, series)
    except TournamentError:  # a damaged record, as for the origin: leave it out
        return None
    # The chain's seed is the round's (the origin names it): its commitment is the round's.
    return chain.commitment if chain.seed == origin.round_seed else None


def _keep_commitment(
    tournament_id: int, round_seed: int | None, mark: str, *, session: Session
) -> None:
    """Store the commitment a file published for an imported tournament's seed
    (``round_seed`` None) or for one of its rounds' seeds, so that ``kryt replay --verify``
    checks the seed against it and an export writes it again; a tournament this database
    ran itself stored its own when it was created. ConflictError when another commitment is
    stored for that seed."""
    _update_imported(
        tournament_id,
        lambda config: with_imported_commitment(config, round_seed, mark),
        session=session,
    )


def _keep_commitments(
    entries: Sequence[GameEntry],
    tournament_ids: Mapping[tuple[str, int], int],
    *,
    session: Session,
) -> None:
    """Store the commitments the records publish (each was checked against its seed when
    the file was read), once per tournament and round: any record of a tournament may carry
    them (a file may join an older export, without them, to a newer one)."""
    marks: dict[tuple[int, int | None], tuple[str, GameEntry]] = {}
    for entry in entries:
        tournament_id = tournament_ids[(entry.tournament, entry.tournament_seed)]
        if entry.seed_commitment is not None:
            marks.setdefault((tournament_id, None), (entry.seed_commitment, entry))
        round_seed = None if entry.origin is None else entry.origin.round_seed
        if round_seed is not None and entry.round_commitment is not None:
            marks.setdefault((tournament_id, round_seed), (entry.round_commitment, entry))
    for (tournament_id, round_seed), (mark, entry) in marks.items():
        try:
            _keep_commitment(tournament_id, round_seed, mark, session=session)
        except ConflictError as exc:  # say which record of the file
            raise _located(exc, entry) from None


def _keep_origin(
    tournament_id: int, position: int, origin: SeriesOrigin, *, session: Session
) -> None:
    """Store where an imported series' seed came from (``replay --verify`` follows it); a
    tournament this database ran itself knows that already. ConflictError when an earlier
    import of the series said otherwise."""
    _update_imported(
        tournament_id,
        lambda config: with_imported_origin(config, position, origin),
        session=session,
    )


def _update_imported(
    tournament_id: int,
    update: Callable[[Mapping[str, Any]], dict[str, Any] | None],
    *,
    session: Session,
) -> None:
    """Store ``update(config)`` of an imported tournament (None: nothing new to store); a
    tournament this database ran itself is left as it is. An OriginError of ``update`` (the
    file contradicts what an earlier import stored) is a ConflictError naming it."""
    tournament = get_tournament(tournament_id, session=session)
    if not is_imported(tournament.config):
        return
    try:
        config = update(tournament.config)
    except OriginError as exc:
        raise ConflictError(f"tournament {tournament.name!r}: {exc}") from None
    if config is not None:
        store_tournament_config(tournament_id, config, session=session)


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What an import did: games read, games newly stored, tournaments newly created, and
    the statuses it kept although the file said otherwise (one line each)."""

    games: int
    created: int
    tournaments_created: int
    kept: tuple[str, ...] = ()


TOURNAMENT_FORWARD: Final[Mapping[str, frozenset[str]]] = {
    "pending": frozenset({"running", "finished", "cancelled", "failed"}),
    "running": frozenset({"finished", "cancelled", "failed"}),
    "cancelled": frozenset({"finished"}),  # resumed, then finished
    "failed": frozenset({"finished"}),
    "finished": frozenset(),
}
"""The statuses an import may move an imported tournament to, from each status."""
SERIES_FORWARD: Final[Mapping[str, frozenset[str]]] = {
    "pending": frozenset({"running", "finished", "aborted"}),
    "running": frozenset({"finished", "aborted"}),
    "aborted": frozenset({"finished"}),
    "finished": frozenset(),
}
"""The statuses an import may move an imported series to, from each status."""


def _kept(what: str, stored: str, said: str, where: str, own: bool) -> str:
    why = (
        "this database ran it: an import never changes its status"
        if own
        else "an import never moves a status back"
    )
    return f"{what} stays {stored} ({why}); {where or 'the file'} says {said}"


def import_entries(entries: Sequence[GameEntry], *, session: Session) -> ImportSummary:
    """Store ``entries`` with their places (one transaction: the caller's session).

    Submissions, tournaments and series are created in the order of their ids in the source
    (when the file has them), so an import into an empty database numbers them as the
    source did; games are stored in file order.
    """
    submission_ids: dict[str, int] = {}
    labels: dict[str, str] = {}
    for entry in entries:
        for seat in entry.seats:
            named = labels.setdefault(seat.sha256, seat.label)
            if named != seat.label:  # stored once: the second name would be dropped silently
                raise _located(
                    ConflictError(
                        f"content sha256 {seat.sha256} is {named} earlier in the import;"
                        f" it cannot also be {seat.label}"
                    ),
                    entry,
                )
            if seat.sha256 not in submission_ids:
                try:
                    result = submit(
                        NewSubmission(
                            bot_name=seat.bot,
                            version=seat.version,
                            sha256=seat.sha256,
                            submitted_by=IMPORTED_BY,
                            status=SubmissionStatus.ACTIVE,
                        ),
                        session=session,
                    )
                except VersionReusedError as exc:  # not a bot.toml's: say whose content
                    clash = f"{exc}; the file's is sha256 {seat.sha256}"
                    raise _located(VersionReusedError(clash), entry) from None
                except ConflictError as exc:  # stored under another name: say which record
                    raise _located(exc, entry) from None
                assert result.submission.id is not None
                submission_ids[seat.sha256] = result.submission.id
    tournament_ids: dict[tuple[str, int], int] = {}
    created_tournaments = 0
    places = sorted(
        {(e.tournament_id or 0, e.tournament, e.tournament_seed, e.series_id or 0) for e in entries}
    )
    for _, name, seed, _ in places:
        if (name, seed) not in tournament_ids:
            tournament, new = find_or_create_tournament(
                name, seed, session=session, config={"imported": True}
            )
            assert tournament.id is not None
            tournament_ids[(name, seed)] = tournament.id
            created_tournaments += int(new)
    series_ids: dict[tuple[int, int], int] = {}
    by_series = sorted(entries, key=lambda e: (e.series_id or 0, e.series_position))
    for entry in by_series:
        tournament_id = tournament_ids[(entry.tournament, entry.tournament_seed)]
        place = (tournament_id, entry.series_position)
        if place in series_ids:
            continue
        seat_ids = [submission_ids[s.sha256] for s in entry.seats]
        a, b = seat_ids[entry.series_a_seat], seat_ids[1 - entry.series_a_seat]
        spec = SeriesSpec(
            submission_a_id=a,
            submission_b_id=b,
            games_planned=entry.series_games,
            seed=entry.series_seed,
            format=SeriesFormat(entry.series_format),
        )
        try:
            row = ensure_series(tournament_id, entry.series_position, spec, session=session)
            if entry.origin is not None:
                _keep_origin(tournament_id, entry.series_position, entry.origin, session=session)
        except ConflictError as exc:  # say which record of the file
            raise _located(exc, entry) from None
        assert row.id is not None
        series_ids[place] = row.id
    _keep_commitments(entries, tournament_ids, session=session)
    created = 0
    for entry in entries:
        tournament_id = tournament_ids[(entry.tournament, entry.tournament_seed)]
        series_id = series_ids[(tournament_id, entry.series_position)]
        seats = (submission_ids[entry.seats[0].sha256], submission_ids[entry.seats[1].sha256])
        try:
            stored = record_game(
                entry.record,
                GamePlace(series_id, entry.number, entry.attempt, seats),
                session=session,
                voided_after=entry.voided_after,
            )
        except (ConflictError, InvalidRecordError) as exc:  # say which record of the file
            raise _located(exc, entry) from None
        created += int(stored.created)
    kept = _settle_statuses(entries, tournament_ids, series_ids, session=session)
    return ImportSummary(len(entries), created, created_tournaments, tuple(kept))


_Located = TypeVar("_Located", bound=DatabaseError)


def _located(exc: _Located, entry: GameEntry) -> _Located:
    """``exc`` naming the file's record it comes from, when the entry was read from one."""
    return type(exc)(f"{entry.where}: {exc}") if entry.where else exc


def _settle_statuses(
    entries: Sequence[GameEntry],
    tournament_ids: Mapping[tuple[str, int], int],
    series_ids: Mapping[tuple[int, int], int],
    *,
    session: Session,
) -> list[str]:
    """Give imported tournaments and series the file's statuses where that moves them
    forward; the lines of those kept as they were (see the module's docstring). Last:
    recording a game marks its series running."""
    kept: list[str] = []
    imported: dict[int, bool] = {}
    seen: set[tuple[int, int]] = set()
    for entry in sorted(entries, key=lambda e: (e.series_id or 0, e.series_position)):
        tournament_id = tournament_ids[(entry.tournament, entry.tournament_seed)]
        place = (tournament_id, entry.series_position)
        if place in seen:
            continue
        seen.add(place)
        if tournament_id not in imported:
            config = get_tournament(tournament_id, session=session).config
            imported[tournament_id] = is_imported(config)
        series = get_series(series_ids[place], session=session)
        if series.status == entry.series_status:
            continue
        forward = SERIES_FORWARD.get(series.status, frozenset())
        if imported[tournament_id] and entry.series_status in forward:
            set_series_status(series_ids[place], SeriesStatus(entry.series_status), session=session)
            continue
        what = f"series {entry.series_position} of tournament {entry.tournament!r}"
        own = not imported[tournament_id]
        kept.append(_kept(what, series.status, entry.series_status, entry.where, own))
    tournaments_kept: list[str] = []
    done: set[int] = set()
    for entry in entries:
        tournament_id = tournament_ids[(entry.tournament, entry.tournament_seed)]
        if tournament_id in done:
            continue
        done.add(tournament_id)
        tournament = get_tournament(tournament_id, session=session)
        if tournament.status == entry.tournament_status:
            continue
        forward = TOURNAMENT_FORWARD.get(tournament.status, frozenset())
        if imported[tournament_id] and entry.tournament_status in forward:
            status = TournamentStatus(entry.tournament_status)
            set_tournament_status(tournament_id, status, session=session)
            continue
        what = f"tournament {entry.tournament!r}"
        own = not imported[tournament_id]
        tournaments_kept.append(
            _kept(what, tournament.status, entry.tournament_status, entry.where, own)
        )
    return tournaments_kept + kept
