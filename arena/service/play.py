"""Playing series inside the server: ladder series (recorded, with the bots' logs) and
validation series against the reference bots (not recorded as games: they would enter the
standings). Both use the referee's one series loop and the sandbox slots directly."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from arena.db import (
    Database,
    GamePlace,
    SeriesStatus,
    games_of_series,
    get_series,
    get_submission,
    next_attempt,
    record_game,
    set_series_status,
    stored_record,
)
from arena.db.ladder import renew_leases, store_game_log
from arena.service.settings import ServiceSettings
from arena.tournament.seats import NO_OUTPUT_YET, OutputMark, SandboxSlot
from arena.tournament.store import EXAMPLES, bundled_hashes, materialize
from referee.protocol.messages import GameEndReason
from referee.record import GameRecord
from referee.series import (
    SeriesAborted,
    SeriesConfig,
    SeriesFormat,
    SeriesInterrupted,
    run_series,
)
from sandbox import Submission, choose_backend, load_submission
from sandbox.backend import Backend
from sandbox.death import printable

log = logging.getLogger(__name__)


def last_bytes(text: str, limit: int) -> tuple[str, bool]:
    """The end of ``text`` that fits in ``limit`` UTF-8 bytes, and whether any was cut."""
    data = text.encode(errors="replace")
    if len(data) <= limit:
        return text, False
    return data[-limit:].decode(errors="ignore"), True


class LogTail:
    """What a slot's bot wrote since the previous game, read from its sandbox's bounded
    output tail by position (never by comparing text: a bot that repeats itself is told
    apart exactly). ``cut`` when the tail no longer holds all of it."""

    def __init__(self, slot: SandboxSlot) -> None:
        self._slot = slot
        self._mark: OutputMark = NO_OUTPUT_YET

    def new_output(self) -> tuple[str, bool]:
        """The output written since the last call (the new bot's, after a restart) and
        whether part of it was cut."""
        text, cut, self._mark = self._slot.output_since(self._mark)
        return text, cut


_backends: dict[tuple[str, bool], Backend] = {}
_backends_lock = threading.Lock()


def backend_for(settings: ServiceSettings) -> Backend:
    """The sandbox backend of the settings (chosen once per process)."""
    key = (settings.sandbox.backend, settings.sandbox.allow_unsafe)
    with _backends_lock:
        if key not in _backends:
            _backends[key] = choose_backend(*key)
        return _backends[key]


def _slot(
    settings: ServiceSettings, submission: Submission, *, name: str, label: str
) -> SandboxSlot:
    return SandboxSlot(
        backend_for(settings),
        submission,
        name=name,
        limits=settings.sandbox.limits(),
        label=label,
        trusted=submission.sha256 in bundled_hashes(),
    )


class LeaseLostError(Exception):
    """The server no longer holds the lease of the ladder series it plays."""


@dataclass(frozen=True, slots=True)
class LadderOutcome:
    """How a ladder series run ended: ``finished``, ``interrupted`` or ``aborted``."""

    series_id: int
    status: str
    games_played: int
    message: str = ""


def play_ladder_series(
    series_id: int,
    *,
    db: Database,
    settings: ServiceSettings,
    label_prefix: str,
    stop: threading.Event,
    on_game: Callable[[int], None] = lambda _n: None,
    claimed_by: str | None = None,
) -> LadderOutcome:
    """Play what is missing of a ladder series, committing each game with both bots' logs.

    With ``claimed_by`` (the server holding the series' lease), each game is committed in
    the same transaction as a renewal of that lease, and only while the server still holds
    it: a server whose lease ran out (another server took the series over) records nothing
    more and stops the series as ``interrupted``."""
    with db.read_session() as session:
        series = get_series(series_id, session=session)
        if series.status == SeriesStatus.FINISHED.value:
            return LadderOutcome(series_id, "finished", 0, "already finished")
        seats = (series.submission_a_id, series.submission_b_id)
        names = []
        for sid in seats:
            row = get_submission(sid, session=session)
            names.append(f"{row.manifest.get('name', sid)}@{row.version}")
        config = SeriesConfig(
            games=series.games_planned,
            seed=series.seed,
            format=SeriesFormat(series.format),
            time_control=settings.time_control,
            turn_limit=settings.turn_limit,
        )
        done = {g.number: stored_record(g) for g in games_of_series(series_id, session=session)}
    slots = [
        _slot(
            settings,
            materialize(sid, db=db, store=settings.store),
            name=names[seat],
            label=f"{label_prefix}s{series_id}-{'ab'[seat]}",
        )
        for seat, sid in enumerate(seats)
    ]
    tails = [LogTail(slot) for slot in slots]
    played = 0
    lease_lost = threading.Event()
    lease = timedelta(seconds=settings.ladder.lease_seconds)

    def recorder(number: int, _attempt: int, record: GameRecord) -> None:
        nonlocal played
        outputs = [tail.new_output() for tail in tails]
        with db.session() as session:
            # First in the transaction: on PostgreSQL the update locks the lease's row, so a
            # server claiming the series waits for this commit and then finds it renewed.
            if claimed_by is not None and not renew_leases(
                [series_id], session=session, claimed_by=claimed_by, lease=lease
            ):
                lease_lost.set()
                raise LeaseLostError(f"ladder series {series_id}: another server holds it now")
            attempt = next_attempt(series_id, number, session=session)
            stored = record_game(
                record, GamePlace(series_id, number, attempt, seats), session=session
            ).game
            assert stored.id is not None
            for seat, (output, cut) in enumerate(outputs):
                text, shortened = last_bytes(output, settings.log_limit_bytes)
                row = store_game_log(
                    stored.id,
                    seat,
                    seats[seat],
                    text,
                    session=session,
                    limit=settings.log_limit_bytes,
                )
                if (cut or shortened) and not row.truncated:
                    row.truncated = True
                    session.add(row)
        if not record.voided:
            played += 1
            on_game(series_id)

    try:
        with db.session() as session:
            set_series_status(series_id, SeriesStatus.RUNNING, session=session)
        run_series(
            config,
            (slots[0], slots[1]),
            recorder=recorder,
            done=done,
            should_stop=lambda: stop.is_set() or lease_lost.is_set(),
        )
    except SeriesInterrupted as exc:
        if lease_lost.is_set():
            log.warning(
                "ladder series %s: its lease ran out and another server took it over;"
                " this server stopped playing it (the game in progress was not recorded)",
                series_id,
            )
            return LadderOutcome(series_id, "interrupted", played, "taken over by another server")
        return LadderOutcome(series_id, "interrupted", played, str(exc))
    except SeriesAborted as exc:
        log.error("ladder series %s aborted: %s", series_id, exc)
        with db.session() as session:
            set_series_status(series_id, SeriesStatus.ABORTED, session=session)
        return LadderOutcome(series_id, "aborted", played, str(exc))
    finally:
        for slot in slots:
            slot.close()
    with db.session() as session:
        set_series_status(series_id, SeriesStatus.FINISHED, session=session)
    return LadderOutcome(series_id, "finished", played)


class ValidationUnavailable(Exception):
    """The validation could not run for a reason on the server's side (a reference bot that
    is not bundled, a series aborted by infrastructure failures, a reference bot that did not
    start either): not the version's fault, so it must not be rejected for it."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of a validation: passed or not, why, and one line per game."""

    passed: bool
    message: str
    games: list[dict[str, object]]


def validate_submission(
    submission: Submission, *, settings: ServiceSettings, label: str, seed: int
) -> Verdict:
    """Play ``validation_games`` against each reference bot (the submission in seat 0);
    the version passes when it starts and never forfeits. Nothing is recorded as a game.

    :class:`ValidationUnavailable` when the server, not the version, kept it from being
    judged: a reference bot that is not bundled, a series aborted by failures on our side,
    or a double forfeit (the reference bot did not start either)."""
    games: list[dict[str, object]] = []
    for reference in settings.reference_bots:
        folder = EXAMPLES / reference
        if not (folder / "bot.toml").is_file():
            raise ValidationUnavailable(
                f"reference bot {reference!r} is not a bundled example in {EXAMPLES}"
            )
        opponent = load_submission(folder)
        slots = (
            _slot(settings, submission, name=submission.manifest.name, label=f"{label}-a"),
            _slot(settings, opponent, name=f"reference:{reference}", label=f"{label}-b"),
        )
        try:
            records, outputs = _validation_series(
                submission, opponent, reference, settings, slots, seed
            )
        except SeriesAborted as exc:
            why = printable(str(exc))
            raise ValidationUnavailable(
                f"validation against {reference} could not finish: {why}"
            ) from None
        for number, record in sorted(records.items()):
            forfeit = record.forfeit
            line: dict[str, object] = {
                "opponent": reference,
                "game": number,
                "ending": record.ending.value,
                "winner": record.winner,
                "log": last_bytes(outputs.get(number, ""), settings.log_limit_bytes)[0],
            }
            games.append(line)
            if forfeit is not None and forfeit.seat == 0:
                # Bot output (a crash's stderr) is stored escaped, like a malformed action.
                detail = f": {printable(forfeit.detail)}" if forfeit.detail else ""
                return Verdict(
                    False,
                    f"forfeited validation game {number} against {reference} "
                    f"({forfeit.reason.value}{detail})",
                    games,
                )
            if record.ending is GameEndReason.DOUBLE_FORFEIT:
                # The reference bot did not start either: the sandbox, not the version.
                detail = printable(record.double_forfeit_detail)
                raise ValidationUnavailable(
                    f"double forfeit in validation game {number} against {reference}"
                    + (f": {detail}" if detail else "")
                )
    return Verdict(True, f"played {len(games)} validation game(s) without a forfeit", games)


def _validation_series(
    submission: Submission,
    opponent: Submission,
    reference: str,
    settings: ServiceSettings,
    slots: tuple[SandboxSlot, SandboxSlot],
    seed: int,
) -> tuple[dict[int, GameRecord], dict[int, str]]:
    """Play one validation series; its counted records and the submission's output per game."""
    records: dict[int, GameRecord] = {}
    outputs: dict[int, str] = {}
    tail = LogTail(slots[0])

    def recorder(number: int, _attempt: int, record: GameRecord) -> None:
        outputs[number] = tail.new_output()[0]
        if not record.voided:
            records[number] = record

    config = SeriesConfig(
        games=settings.validation_games,
        seed=f"validation:{seed}:{reference}",
        time_control=settings.time_control,
        turn_limit=settings.turn_limit,
    )
    try:
        run_series(config, slots, recorder=recorder)
    finally:
        for slot in slots:
            slot.close()
    return records, outputs


def stored_path(settings: ServiceSettings, sha256: str) -> Path:
    """Where the server keeps a submission's unpacked files."""
    return settings.store / sha256
