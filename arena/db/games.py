"""Recording games (atomically, idempotently) and reading them back for replay."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import case
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from arena.db._util import get_or_raise, is_utf8, storable
from arena.db.elo import Scope, game_boards, lock_boards, rebuild_elo_of, record_elo
from arena.db.enums import GameResult, SeriesStatus, TournamentStatus
from arena.db.errors import ConflictError, InvalidRecordError
from arena.db.gamecodec import PackError, Table, pack, unpack
from arena.db.models import Bot, Game, Series, Submission, Tournament
from arena.db.records import CARD_RE, DECK_SIZE
from arena.db.types import utcnow
from referee.protocol.messages import GameEndReason, TimeControl
from referee.record import Forfeit, GameRecord, clip, seat_outcome


@dataclass(frozen=True)
class RecordResult:
    """The stored game and whether this call wrote it (False: identical game already there)."""

    game: Game
    created: bool


@dataclass(frozen=True)
class GamePlace:
    """Where a game belongs: its series, number and attempt, and who sat where.

    ``number`` is the game's index in its series; ``attempt`` starts at 1 and grows each
    time a voided game is replayed; ``seats[s]`` is the submission that played seat ``s``
    (two seats, or 2-4 at a classic table).
    """

    series_id: int
    number: int
    attempt: int
    seats: tuple[int, ...]


def record_game(
    record: GameRecord, place: GamePlace, *, session: Session, voided_after: str | None = None
) -> RecordResult:
    """Store one game whole, or raise and store nothing of it.

    Recording the same game again (same series, number and attempt, same content) returns
    the stored row with ``created=False``, so a resumed tournament cannot duplicate games.
    Different content under the same key raises :class:`ConflictError`, as does a second
    counted (not voided) attempt of a game number: void the first with :func:`void_game`.
    The series is marked running if it was pending, in the same transaction.

    ``voided_after`` (a void reason) stores a game that was played to ``record``'s end and
    voided after it was recorded (:func:`void_game`), as an import of such a game does: its
    result, ending and forfeit are kept and it does not count.
    """
    values = _game_values(record, place)
    if voided_after is not None:
        if record.voided or not voided_after.strip():
            raise InvalidRecordError(
                f"a game voided after it was recorded needs a played record and a void reason,"
                f" got ending {record.ending.value!r} and reason {voided_after!r}"
            )
        values |= {"voided": True, "void_reason": storable(clip(voided_after))}
    series = get_or_raise(session, Series, place.series_id, "series")
    pair = {series.submission_a_id, series.submission_b_id}
    if series.seats is not None:
        if list(place.seats) != list(series.seats):
            raise InvalidRecordError(
                f"seat submissions {place.seats} do not match series {series.id}, whose "
                f"table seats submissions {series.seats} in that order"
            )
    elif set(place.seats) != pair:
        raise InvalidRecordError(
            f"seat submissions {place.seats} do not match series "
            f"{series.id}, which is between submissions {sorted(pair)}"
        )
    # One query for every attempt of this game number, so the checks below see one
    # consistent state even while other writers commit (PostgreSQL: READ COMMITTED).
    attempts = _attempts(place.series_id, place.number, session=session)
    same = [g for g in attempts if g.attempt == place.attempt]
    if same:
        return RecordResult(_same_or_conflict(same[0], values), created=False)
    counted = [g for g in attempts if not g.voided]
    if counted and not values["voided"]:
        raise ConflictError(
            f"game {place.number} of series {place.series_id} is already recorded as "
            f"attempt {counted[0].attempt} (game id {counted[0].id}); void that one before "
            f"recording attempt {place.attempt}"
        )
    locked: dict[Scope, int] = {}
    if not values["voided"]:
        # Its boards before its id: live Elo applies a board's games in id order (elo.py).
        locked = lock_boards(
            session.connection(),
            game_boards(series.tournament_id, values["ruleset"], values["players"]),
        )
    game = Game(**values)
    try:
        # A savepoint: losing a race to an identical write leaves the transaction usable.
        with session.begin_nested():
            session.add(game)
            session.flush()
    except IntegrityError:
        # Another writer got there first: the same game (fine) or a different one (conflict).
        existing = _find(place, session=session)
        if existing is None:
            raise ConflictError(
                f"game {place.number} of series {place.series_id} (attempt "
                f"{place.attempt}) collides with a game recorded concurrently; another "
                "attempt of this number already counts"
            ) from None
        return RecordResult(_same_or_conflict(existing, values), created=False)
    _mark_series_running(series, session=session)
    # Live Elo, in this transaction (arena/db/elo.py), on the boards locked above.
    record_elo(game.id, session=session, locked=locked)
    return RecordResult(game, created=True)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise InvalidRecordError(message)


def _stamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def _validate(record: GameRecord, place: GamePlace) -> None:
    """Everything the database needs to hold of a record, checked before any write."""
    for name in ("series_id", "number", "attempt"):
        value = getattr(place, name)
        _check(
            type(value) is int and value >= (1 if name == "attempt" else 0),
            f"{name} must be a non-negative integer (attempt >= 1), got {value!r}",
        )
    ids = place.seats
    n = record.seats
    _check(
        isinstance(ids, tuple) and len(ids) == n and len(set(ids)) == n,
        f"seats must be {'two' if n == 2 else n} different submission ids, got {ids!r}",
    )
    check_storable(record)


def check_storable(record: GameRecord) -> None:
    """What the database needs of a record itself (its place aside): a full deck of canonical
    cards, moves, times, winner... InvalidRecordError names the first problem. A game file
    checks every record with it before the database is opened (``kryt games import``)."""
    n = record.seats
    seats = "0 or 1" if n == 2 else f"a seat 0..{n - 1}"
    _check(
        type(record.dealer) is int and 0 <= record.dealer < n,
        f"dealer must be {seats}, got {record.dealer!r}",
    )
    deck = list(record.deck)
    _check(len(deck) == DECK_SIZE, f"deck must have {DECK_SIZE} cards, got {len(deck)}")
    bad = [c for c in deck if not isinstance(c, str) or CARD_RE.fullmatch(c) is None]
    _check(not bad, f"deck cards must be canonical like 'TH' or '6C', got {bad[:5]!r}")
    _check(len(set(deck)) == DECK_SIZE, "deck has duplicate cards")
    _check(
        type(record.turn_limit) is int and record.turn_limit >= 1,
        f"turn_limit must be a positive integer, got {record.turn_limit!r}",
    )
    for move in record.moves:
        _check(
            type(move.seat) is int and 0 <= move.seat < n,
            f"move seat must be {seats}, got {move.seat!r}",
        )
        _check(
            isinstance(move.action, str) and 0 < len(move.action) <= 200,
            f"move action must be text of 1 to 200 characters, got {move.action!r}",
        )
        _check(
            isinstance(move.seconds, int | float)
            and math.isfinite(move.seconds)
            and move.seconds >= 0,
            f"move seconds must be a finite number >= 0, got {move.seconds!r}",
        )
        _check(
            move.cpu_seconds is None
            or (
                isinstance(move.cpu_seconds, int | float)
                and not isinstance(move.cpu_seconds, bool)
                and math.isfinite(move.cpu_seconds)
                and move.cpu_seconds >= 0
            ),
            f"move CPU seconds must be a finite number >= 0 or None, got {move.cpu_seconds!r}",
        )
    _check(
        record.final_cover is None or CARD_RE.fullmatch(record.final_cover) is not None,
        f"final_cover must be a card like '6C' or None, got {record.final_cover!r}",
    )
    _check(
        record.winner in (None, 0, 1) and not isinstance(record.winner, bool),
        f"winner must be 0, 1 or None, got {record.winner!r}",
    )
    _check(
        0 < len(record.referee_version) <= 64 and record.referee_version.isprintable(),
        f"referee_version must be 1 to 64 printable characters, got {record.referee_version!r}",
    )
    _check(
        math.isfinite(record.started) and math.isfinite(record.finished),
        f"started/finished must be finite timestamps, got {record.started!r}",
    )
    forfeit = record.forfeit
    texts = {
        "forfeit offending_input": "" if forfeit is None else forfeit.offending_input,
        "forfeit detail": "" if forfeit is None else forfeit.detail,
        "void_reason": record.void_reason,
        "double_forfeit_detail": record.double_forfeit_detail,
    }
    for name, value in texts.items():
        _check(
            isinstance(value, str) and is_utf8(value),
            f"{name} must be text UTF-8 can hold (no lone surrogate), got {value!r}",
        )


def controls_text(controls: Sequence[TimeControl]) -> str | None:
    """Each seat's time control as compact text (``MOVE/BANK/INCREMENT/GRACE/CLOCK`` in ms,
    seats separated by spaces, one entry when every seat has the same control): a few bytes a
    game where a JSON list of objects cost ~170 (issue 15: <= 1 KiB a stored game)."""
    if not controls:
        return None
    texts = [f"{c.move_ms}/{c.bank_ms}/{c.increment_ms}/{c.grace_ms}/{c.clock}" for c in controls]
    return texts[0] if len(set(texts)) == 1 else " ".join(texts)


def controls_from_text(text: str | None, seats: int) -> tuple[TimeControl, ...]:
    """The controls of :func:`controls_text` (``()`` for games stored without them)."""
    if not text:
        return ()
    controls = []
    for item in text.split():
        move, bank, increment, grace, clock = item.split("/")
        controls.append(
            TimeControl(
                move_ms=int(move),
                bank_ms=int(bank),
                increment_ms=int(increment),
                grace_ms=int(grace),
                clock=clock,
            )
        )
    return tuple(controls) * seats if len(controls) == 1 else tuple(controls)


def _game_values(record: GameRecord, place: GamePlace) -> dict[str, Any]:
    _validate(record, place)
    try:
        at = Table(record.dealer, record.turn_limit, record.ruleset, record.seats)
        packed = pack(record.deck, record.moves, at)
    except PackError as exc:
        raise InvalidRecordError(f"cannot store the game's deal and moves: {exc}") from None
    forfeit = record.forfeit
    started = record.started or record.finished
    table = record.ruleset != "default"
    if record.voided:
        result = None
    elif record.winner is not None:
        result = GameResult.win_for(record.winner).value
    elif table and record.pairwise:
        result = TABLE_RESULT
    else:
        result = GameResult.DRAW.value
    return {
        "series_id": place.series_id,
        "number": place.number,
        "attempt": place.attempt,
        "dealer": record.dealer,
        "first_mover": (record.dealer + 1) % record.seats,
        "turn_limit": record.turn_limit,
        "packed": packed,
        "result": result,
        "end_reason": record.ending.value,
        "forfeit_seat": None if forfeit is None else forfeit.seat,
        "forfeit_input": (storable(clip(forfeit.offending_input)) or None) if forfeit else None,
        # A double forfeit has no offender; the column keeps why no bot could start.
        "forfeit_detail": storable(
            clip(forfeit.detail if forfeit else record.double_forfeit_detail)
        )
        or None,
        "final_cover": record.final_cover,
        "voided": record.voided,
        "void_reason": storable(clip(record.void_reason)) if record.voided else None,
        "referee_version": record.referee_version,
        "seat0_submission_id": place.seats[0],
        "seat1_submission_id": place.seats[1],
        "started_at": _stamp(started),
        "finished_at": _stamp(max(record.finished, started)),
        "ruleset": record.ruleset,
        "players": record.seats,
        "seats": list(place.seats) if table else None,
        "loser_seat": record.loser,
        "pairwise": [list(p) for p in record.pairwise] if table else None,
        "time_controls": controls_text(record.time_controls),
    }


TABLE_RESULT = "table"
"""``games.result`` of a table game with pairwise results (see ``games.pairwise``)."""


def stored_record(
    game: Game, players: tuple[str, ...] | None = None, *, as_played: bool = False
) -> GameRecord:
    """A stored game as the referee's one record (for replay, verification and resumption).

    A game voided after it was recorded (:func:`void_game`) comes back with the ``VOID``
    ending and its void reason; its moves and deal are kept. With ``as_played`` it comes back
    as it was played instead (its result, ending, forfeit and final cover, which the row
    keeps; see :func:`voided_after_recording`), as an export writes it. Stored data that no
    longer makes a consistent record (edited by hand, say) raises
    :class:`InvalidRecordError`.
    """
    try:
        return _stored_record(game, players, as_played=as_played)
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidRecordError(f"game {game.id} is stored inconsistently: {exc}") from None


def voided_after_recording(game: Game) -> bool:
    """Whether ``game`` was voided after it was recorded (:func:`void_game`): its row keeps
    the result and ending it had, unlike a game the referee recorded as void."""
    return game.voided and game.end_reason != GameEndReason.VOID.value


def _stored_record(game: Game, players: tuple[str, ...] | None, *, as_played: bool) -> GameRecord:
    ending = GameEndReason(game.end_reason)
    forfeit = None
    voided = game.voided and not (as_played and voided_after_recording(game))
    if voided:
        ending = GameEndReason.VOID
    elif game.forfeit_seat is not None and ending.is_forfeit:
        forfeit = Forfeit(
            game.forfeit_seat, ending, game.forfeit_input or "", game.forfeit_detail or ""
        )
    winners = {GameResult.SEAT0.value: 0, GameResult.SEAT1.value: 1}
    table = game.ruleset != "default"
    names = players if players is not None else ("",) * game.players
    played = game.unpacked()
    return GameRecord(
        deck=played.deck,
        dealer=game.dealer,
        turn_limit=game.turn_limit,
        moves=played.moves,
        ending=ending,
        winner=None if voided else winners.get(game.result or ""),
        forfeit=forfeit,
        # A drawn game voided after it was recorded keeps its final cover in the row; the
        # voided record has none (it belongs to a draw by the final answer only).
        final_cover=None if voided else game.final_cover,
        void_reason=(game.void_reason or "voided") if voided else "",
        double_forfeit_detail=(
            (game.forfeit_detail or "") if ending is GameEndReason.DOUBLE_FORFEIT else ""
        ),
        referee_version=game.referee_version,
        players=names,
        started=game.started_at.timestamp(),
        finished=game.finished_at.timestamp(),
        ruleset=game.ruleset,
        seats=game.players,
        loser=None if voided else game.loser_seat,
        pairwise=()
        if voided or not table
        else tuple((int(w), int(x)) for w, x in game.pairwise or ()),
        time_controls=controls_from_text(game.time_controls, game.players or 2),
    )


def _same_or_conflict(existing: Game, values: dict[str, Any]) -> Game:
    differing = {k for k, v in values.items() if getattr(existing, k) != v}
    if "packed" in differing:
        # Name what differs in the record's terms, not the storage column's.
        differing.remove("packed")
        table = Table(values["dealer"], values["turn_limit"], values["ruleset"], values["players"])
        stored, new = existing.unpacked(), unpack(values["packed"], table)
        differing |= {"deck"} if stored.deck != new.deck else set()
        if stored.moves != new.moves:
            played = [(m.seat, m.action) for m in stored.moves]
            same_play = played == [(m.seat, m.action) for m in new.moves]
            differing.add("move times" if same_play else "actions")
    if differing:
        raise ConflictError(
            f"game {existing.number} of series {existing.series_id} (attempt "
            f"{existing.attempt}, game id {existing.id}) is already recorded with different "
            f"{', '.join(sorted(differing))}; recorded games are never overwritten"
        )
    return existing


def _find(place: GamePlace, *, session: Session) -> Game | None:
    return session.exec(
        select(Game).where(
            Game.series_id == place.series_id,
            Game.number == place.number,
            Game.attempt == place.attempt,
        )
    ).first()


def _attempts(series_id: int, number: int, *, session: Session) -> list[Game]:
    query = select(Game).where(Game.series_id == series_id, Game.number == number)
    return list(session.exec(query.order_by(col(Game.attempt))))


def _mark_series_running(series: Series, *, session: Session) -> None:
    if series.status == SeriesStatus.PENDING.value:
        series.status = SeriesStatus.RUNNING.value
        series.started_at = series.started_at or utcnow()
        session.add(series)
        session.flush()


def void_game(game_id: int, reason: str, *, session: Session) -> Game:
    """Mark a recorded game void (it stays stored; it no longer counts).

    Its replay is recorded as a new attempt (:func:`next_attempt`): a finished series of a
    tournament that can be resumed is open again (running, and its tournament too, when it
    had finished), so ``kryt tournament resume`` plays it with the same deal and dealer. The
    series of an imported tournament or of the arena's ladder stay as they are (nothing
    replays their games): one game short. Voiding a game twice raises
    :class:`ConflictError` rather than replacing the first reason.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidRecordError(f"a void reason is required, got {reason!r}")
    game = get_game(game_id, session=session)
    if game.voided:
        raise ConflictError(f"game {game_id} is already void ({game.void_reason!r})")
    game.voided = True
    game.void_reason = storable(clip(reason))  # as record_game keeps it
    session.add(game)
    session.flush()
    rebuild_elo_of(game_id, session=session)  # it no longer counts in live Elo
    _reopen_for_replay(game.series_id, session=session)
    return game


def _reopen_for_replay(series_id: int, *, session: Session) -> None:
    """Open a finished series again (and its finished tournament) for its voided game's
    replay, unless nothing can replay it (an imported tournament's, the ladder's)."""
    from arena.tournament.config import is_imported
    from arena.tournament.ladder import is_ladder

    series = session.get(Series, series_id)
    assert series is not None  # a recorded game's series exists (foreign key)
    tournament = session.get(Tournament, series.tournament_id)
    assert tournament is not None
    stored = tournament.config or {}
    if is_imported(stored) or is_ladder(stored) or series.status != SeriesStatus.FINISHED:
        return
    series.status = SeriesStatus.RUNNING.value
    series.finished_at = None
    session.add(series)
    if tournament.status == TournamentStatus.FINISHED:
        tournament.status = TournamentStatus.RUNNING.value
        tournament.finished_at = None
        session.add(tournament)
    session.flush()


def get_game(game_id: int, *, session: Session) -> Game:
    """The game with this id (for replay), or :class:`NotFoundError`."""
    return get_or_raise(session, Game, game_id, "game")


def games_of_series(
    series_id: int, *, session: Session, include_voided: bool = False
) -> list[Game]:
    """The series' games ordered by number then attempt (voided ones only if asked)."""
    get_or_raise(session, Series, series_id, "series")
    query = select(Game).where(Game.series_id == series_id)
    if not include_voided:
        query = query.where(col(Game.voided).is_(False))
    return list(session.exec(query.order_by(col(Game.number), col(Game.attempt))))


def completed_game_numbers(series_id: int, *, session: Session) -> set[int]:
    """Numbers of the series' games that are recorded and count (not voided)."""
    get_or_raise(session, Series, series_id, "series")
    rows = session.exec(
        select(Game.number).where(Game.series_id == series_id, col(Game.voided).is_(False))
    )
    return set(rows)


def next_attempt(series_id: int, number: int, *, session: Session) -> int:
    """The attempt number to use for (re)playing game ``number`` of the series."""
    attempts = session.exec(
        select(Game.attempt).where(Game.series_id == series_id, Game.number == number)
    )
    return max(attempts, default=0) + 1


IN_CHUNK = 500
"""Ids per ``IN (...)`` list: far below every backend's limit on bound parameters."""


def counted_numbers(series_ids: Iterable[int], *, session: Session) -> dict[int, set[int]]:
    """For each of ``series_ids`` that has any: the numbers of its counted games."""
    found: dict[int, set[int]] = defaultdict(set)
    ordered = sorted(series_ids)
    for start in range(0, len(ordered), IN_CHUNK):
        chunk = ordered[start : start + IN_CHUNK]
        query = select(Game.series_id, Game.number).where(
            col(Game.series_id).in_(chunk), col(Game.voided).is_(False)
        )
        for series_id, number in session.exec(query):
            found[series_id].add(number)
    return found


def running_counted_numbers(
    tournament_ids: Sequence[int], *, session: Session
) -> dict[int, set[int]]:
    """Numbers of counted games of the running series of these tournaments, per series."""
    found: dict[int, set[int]] = defaultdict(set)
    query = (
        select(Game.series_id, Game.number)
        .join(Series, col(Series.id) == col(Game.series_id))
        .where(
            col(Series.tournament_id).in_(list(tournament_ids)),
            col(Series.status) == SeriesStatus.RUNNING.value,
            col(Game.voided).is_(False),
        )
    )
    for series_id, number in session.exec(query):
        found[series_id].add(number)
    return found


def counted_games(series_id: int, numbers: Sequence[int], *, session: Session) -> list[Game]:
    """The counted games of a series with these numbers, in number order."""
    return list(
        session.exec(
            select(Game)
            .where(
                Game.series_id == series_id,
                col(Game.number).in_(list(numbers)),
                col(Game.voided).is_(False),
            )
            .order_by(col(Game.number))
        )
    )


def find_games(
    *,
    session: Session,
    bot: str | None = None,
    tournament_id: int | None = None,
    result: str | None = None,
    reasons: Sequence[str] = (),
    include_voided: bool = True,
    limit: int | None = None,
    newest_first: bool = False,
) -> list[Game]:
    """Stored games matching every given filter, by id (oldest first unless ``newest_first``).

    ``bot`` keeps games in which a version of that bot sat (at any seat of a table);
    ``result`` is ``seat0``, ``seat1``, ``draw`` or ``void``, or, with ``bot``, ``win`` or
    ``loss`` from that bot's side (at a table: a loss when it lost to any seat, a win when
    it beat one and lost to none); ``reasons`` keeps games that ended by one of these
    :class:`GameEndReason` values, as the game's record says (every voided game's is
    ``void``).
    """
    query = select(Game)
    bot_submissions: list[int] = []
    if bot is not None:
        found = session.exec(
            select(Submission.id)
            .join(Bot, col(Bot.id) == col(Submission.bot_id))
            .where(Bot.name == bot)
        )
        bot_submissions = [sid for sid in found if sid is not None]
        # A table's other seats are in its JSON list of seats: checked in Python below.
        query = query.where(
            col(Game.seat0_submission_id).in_(bot_submissions)
            | col(Game.seat1_submission_id).in_(bot_submissions)
            | (col(Game.ruleset) != "default")
        )
    if tournament_id is not None:
        query = query.join(Series, col(Series.id) == col(Game.series_id)).where(
            Series.tournament_id == tournament_id
        )
    if result is not None:
        seat0_won = col(Game.result) == GameResult.SEAT0.value
        seat1_won = col(Game.result) == GameResult.SEAT1.value
        in_seat0 = col(Game.seat0_submission_id).in_(bot_submissions)
        in_seat1 = col(Game.seat1_submission_id).in_(bot_submissions)
        if result in ("win", "loss") and bot is None:
            raise InvalidRecordError(f"result {result!r} needs a bot to be seen from")
        table = col(Game.ruleset) != "default"  # a table's win or loss: decided below
        conditions = {
            "seat0": seat0_won & (col(Game.voided).is_(False)),
            "seat1": seat1_won & (col(Game.voided).is_(False)),
            "draw": (col(Game.result) == GameResult.DRAW.value) & (col(Game.voided).is_(False)),
            "void": col(Game.voided).is_(True),
            "win": ((in_seat0 & seat0_won) | (in_seat1 & seat1_won) | table)
            & (col(Game.voided).is_(False)),
            "loss": ((in_seat0 & seat1_won) | (in_seat1 & seat0_won) | table)
            & (col(Game.voided).is_(False)),
        }
        if result not in conditions:
            raise InvalidRecordError(
                f"result must be one of {', '.join(conditions)}; got {result!r}"
            )
        query = query.where(conditions[result])
    if reasons:
        known = {reason.value for reason in GameEndReason}
        unknown = sorted(set(reasons) - known)
        if unknown:
            raise InvalidRecordError(
                f"unknown ending {', '.join(map(repr, unknown))};"
                f" endings: {', '.join(sorted(known))}"
            )
        # A game voided after it was recorded keeps the ending it was played to, but its
        # record (and so this filter) says ``void``, as for every voided game.
        ending = case((col(Game.voided), GameEndReason.VOID.value), else_=col(Game.end_reason))
        query = query.where(ending.in_(list(reasons)))
    if not include_voided:
        query = query.where(col(Game.voided).is_(False))
    order = col(Game.id).desc() if newest_first else col(Game.id)
    query = query.order_by(order)
    if bot is None:
        if limit is not None:
            query = query.limit(limit)
        return list(session.exec(query))
    mine = set(bot_submissions)
    kept: list[Game] = []
    for game in session.exec(query):
        if game.ruleset == "default" or _table_match(game, mine, result):
            kept.append(game)
            if limit is not None and len(kept) >= limit:
                break
    return kept


def _table_match(game: Game, submissions: set[int], result: str | None) -> bool:
    """Whether one of ``submissions`` sat at table game ``game`` and, for ``result`` ``win``
    or ``loss``, had that result as the series score counts it (:func:`seat_outcome`)."""
    seats = [i for i, sid in enumerate(game.seats or ()) if sid in submissions]
    if not seats:
        return False
    if result not in ("win", "loss"):
        return True
    outcomes = {seat_outcome(game.pairwise or (), seat) for seat in seats}
    return result in outcomes and (result == "loss" or "loss" not in outcomes)
