"""The game file: stored games as plain text a person can read (and CSV or JSON), and back.

One record per game, like a PGN game: a block of ``[Key "value"]`` headers, a blank line, one
line per move, and a result line (``1-0`` seat 0 won, ``0-1`` seat 1 won, ``1/2-1/2`` a
draw, ``*`` a voided game); records are separated by a blank line. Header values are JSON
strings (``\\"``, ``\\\\``, ``\\n`` escapes), so any detail a bot caused survives intact.
A move line is ``N. SEAT ACTION {SECONDS}``, e.g. ``12. 1 cover KS TD {0.0123}``. Lines
starting with ``#`` are comments. The format is specified in docs/games-format.md.

Pure: text in, values out (:class:`GameEntry`, which wraps the referee's one
:class:`~referee.record.GameRecord` with where the game belongs); the database side is
:mod:`leaderboard.games_io`.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from referee.protocol.messages import GameEndReason, TimeControl
from referee.record import Forfeit, GameRecord, Move
from referee.timecontrol import format_time_spec, parse_time_spec

FORMAT_VERSION: Final = "1"
"""Written as the ``KrytGameFile`` header of every record; readers refuse other versions."""

RESULTS: Final = {0: "1-0", 1: "0-1", None: "1/2-1/2"}
VOID_RESULT: Final = "*"
_RESULT_WINNER: Final = {"1-0": 0, "0-1": 1, "1/2-1/2": None}

_HEADER = re.compile(r'^\[([A-Za-z][A-Za-z0-9]*) (".*")\]$')
_MOVE = re.compile(r"^(\d+)\. ([01]) ([^{}]+?) \{([0-9.eE+-]+)\}$")


class GameFileError(ValueError):
    """A game file (text, JSON) that cannot be read; the message says where."""


@dataclass(frozen=True, slots=True)
class Seat:
    """Who sat in a seat: the bot's name, its version and the content hash of the version."""

    bot: str
    version: str
    sha256: str

    @property
    def label(self) -> str:
        """``name version``."""
        return f"{self.bot} {self.version}"


@dataclass(frozen=True, slots=True)
class GameEntry:
    """One stored game with its place: tournament, series, number, attempt and seats.

    Ids (``game_id``, ``tournament_id``, ``series_id``) are those of the database the game
    was exported from; an import keeps the places (tournament name and seed, series
    position) and lets the target database number its rows.
    """

    record: GameRecord
    seats: tuple[Seat, Seat]
    number: int
    attempt: int
    tournament: str
    tournament_seed: int
    tournament_status: str
    series_position: int
    series_format: str
    series_games: int
    series_seed: int
    series_status: str
    series_a_seat: int
    """The seat, in this game, of the series' first submission (``submission_a``)."""
    game_id: int | None = None
    tournament_id: int | None = None
    series_id: int | None = None


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds")


def _seconds(text: str, key: str) -> float:
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise GameFileError(f"{key}: not an ISO timestamp: {text!r}") from None
    if stamp.tzinfo is None:
        raise GameFileError(f"{key}: the timestamp needs a time zone: {text!r}")
    return stamp.timestamp()


def result_token(record: GameRecord) -> str:
    """``1-0``, ``0-1``, ``1/2-1/2`` or ``*`` (voided)."""
    return VOID_RESULT if record.voided else RESULTS[record.winner]


def time_header(control: TimeControl) -> str:
    """A seat's time control as a header value: ``1+10+0.1 grace=0.05 clock=wall``."""
    return f"{format_time_spec(control)} grace={control.grace_ms / 1000:g} clock={control.clock}"


def _time_control(text: str, where: str) -> TimeControl:
    """Inverse of :func:`time_header`; GameFileError naming ``where`` when it is not one."""
    spec, *extra = text.split() or [""]
    settings = dict(part.partition("=")[::2] for part in extra)
    if sorted(settings) != ["clock", "grace"]:
        raise GameFileError(
            f"{where}: expected 'MOVE+BANK+INCREMENT grace=G clock=C', got {text!r}"
        )
    try:
        base = TimeControl.from_seconds(1, 0, float(settings["grace"]), settings["clock"])
        return parse_time_spec(spec, base)
    except ValueError as exc:
        raise GameFileError(f"{where}: {exc}") from None


def headers(entry: GameEntry) -> dict[str, str]:
    """The header fields of ``entry`` in file order (optional ones only when they apply)."""
    record = entry.record
    fields: dict[str, str] = {"KrytGameFile": FORMAT_VERSION}
    if entry.game_id is not None:
        fields["GameId"] = str(entry.game_id)
    fields["Tournament"] = entry.tournament
    if entry.tournament_id is not None:
        fields["TournamentId"] = str(entry.tournament_id)
    fields["TournamentSeed"] = str(entry.tournament_seed)
    fields["TournamentStatus"] = entry.tournament_status
    if entry.series_id is not None:
        fields["SeriesId"] = str(entry.series_id)
    fields |= {
        "SeriesPosition": str(entry.series_position),
        "SeriesFormat": entry.series_format,
        "SeriesGames": str(entry.series_games),
        "SeriesSeed": str(entry.series_seed),
        "SeriesStatus": entry.series_status,
        "SeriesASeat": str(entry.series_a_seat),
        "Game": str(entry.number),
        "Attempt": str(entry.attempt),
    }
    for seat, who in enumerate(entry.seats):
        fields[f"Seat{seat}"] = who.bot
        fields[f"Seat{seat}Version"] = who.version
        fields[f"Seat{seat}Sha256"] = who.sha256
    for seat, control in enumerate(record.time_controls):
        fields[f"Seat{seat}Time"] = time_header(control)
    fields |= {
        "Dealer": str(record.dealer),
        "TurnLimit": str(record.turn_limit),
        "Deck": " ".join(record.deck),
        "Result": result_token(record),
        "Ending": record.ending.value,
    }
    if record.forfeit is not None:
        fields["ForfeitSeat"] = str(record.forfeit.seat)
        fields["ForfeitInput"] = record.forfeit.offending_input
        fields["ForfeitDetail"] = record.forfeit.detail
    if record.final_cover is not None:
        fields["FinalCover"] = record.final_cover
    if record.voided:
        fields["VoidReason"] = record.void_reason
    fields |= {
        "Referee": record.referee_version,
        "Started": _stamp(record.started),
        "Finished": _stamp(record.finished),
    }
    return fields


def format_game(entry: GameEntry) -> str:
    """One record: headers, a blank line, the moves, the result line (no trailing blank)."""
    lines = [
        f"[{key} {json.dumps(value, ensure_ascii=False)}]" for key, value in headers(entry).items()
    ]
    lines.append("")
    lines.extend(
        f"{n}. {move.seat} {move.action} {{{move.seconds!r}}}"
        for n, move in enumerate(entry.record.moves, start=1)
    )
    lines.append(result_token(entry.record))
    return "\n".join(lines) + "\n"


def format_games(entries: Iterable[GameEntry]) -> str:
    """Records separated by blank lines."""
    return "\n".join(format_game(entry) for entry in entries)


def _int(fields: Mapping[str, str], key: str, where: str) -> int:
    text = _field(fields, key, where)
    try:
        return int(text)
    except ValueError:
        raise GameFileError(f"{where}: {key} must be an integer, got {text!r}") from None


def _field(fields: Mapping[str, str], key: str, where: str) -> str:
    try:
        return fields[key]
    except KeyError:
        raise GameFileError(f"{where}: missing header {key}") from None


def entry_from_fields(
    fields: Mapping[str, str], moves: Iterable[Move], where: str = "record"
) -> GameEntry:
    """A :class:`GameEntry` from its headers and moves (``where`` locates errors)."""
    version = fields.get("KrytGameFile")
    if version != FORMAT_VERSION:
        raise GameFileError(f"{where}: KrytGameFile version {version!r} is not {FORMAT_VERSION!r}")
    try:
        ending = GameEndReason(_field(fields, "Ending", where))
    except ValueError:
        raise GameFileError(f"{where}: unknown Ending {fields['Ending']!r}") from None
    result = _field(fields, "Result", where)
    if result != VOID_RESULT and result not in _RESULT_WINNER:
        raise GameFileError(f"{where}: Result must be 1-0, 0-1, 1/2-1/2 or *, got {result!r}")
    forfeit = None
    if "ForfeitSeat" in fields:
        forfeit = Forfeit(
            _int(fields, "ForfeitSeat", where),
            ending,
            fields.get("ForfeitInput", ""),
            fields.get("ForfeitDetail", ""),
        )
    try:
        record = GameRecord(
            deck=tuple(_field(fields, "Deck", where).split()),
            dealer=_int(fields, "Dealer", where),
            turn_limit=_int(fields, "TurnLimit", where),
            moves=tuple(moves),
            ending=ending,
            winner=None if result == VOID_RESULT else _RESULT_WINNER[result],
            forfeit=forfeit,
            final_cover=fields.get("FinalCover"),
            void_reason=fields.get("VoidReason", ""),
            referee_version=_field(fields, "Referee", where),
            players=(
                f"{fields.get('Seat0', '')} {fields.get('Seat0Version', '')}",
                f"{fields.get('Seat1', '')} {fields.get('Seat1Version', '')}",
            ),
            started=_seconds(_field(fields, "Started", where), "Started"),
            finished=_seconds(_field(fields, "Finished", where), "Finished"),
            time_controls=tuple(
                _time_control(fields[f"Seat{s}Time"], f"Seat{s}Time")
                for s in (0, 1)
                if f"Seat{s}Time" in fields
            ),
        )
    except ValueError as exc:
        raise GameFileError(f"{where}: {exc}") from None
    seats = tuple(
        Seat(
            _field(fields, f"Seat{s}", where),
            _field(fields, f"Seat{s}Version", where),
            _field(fields, f"Seat{s}Sha256", where),
        )
        for s in (0, 1)
    )

    def optional_int(key: str) -> int | None:
        return _int(fields, key, where) if key in fields else None

    return GameEntry(
        record=record,
        seats=(seats[0], seats[1]),
        number=_int(fields, "Game", where),
        attempt=_int(fields, "Attempt", where),
        tournament=_field(fields, "Tournament", where),
        tournament_seed=_int(fields, "TournamentSeed", where),
        tournament_status=_field(fields, "TournamentStatus", where),
        series_position=_int(fields, "SeriesPosition", where),
        series_format=_field(fields, "SeriesFormat", where),
        series_games=_int(fields, "SeriesGames", where),
        series_seed=_int(fields, "SeriesSeed", where),
        series_status=_field(fields, "SeriesStatus", where),
        series_a_seat=_int(fields, "SeriesASeat", where),
        game_id=optional_int("GameId"),
        tournament_id=optional_int("TournamentId"),
        series_id=optional_int("SeriesId"),
    )


def parse_games(text: str, *, source: str = "<games>") -> list[GameEntry]:
    """Every record of a game file (the inverse of :func:`format_games`)."""
    return list(_records(text.splitlines(), source))


def _records(lines: list[str], source: str) -> Iterator[GameEntry]:
    fields: dict[str, str] = {}
    moves: list[Move] = []
    in_moves = False
    start = 0
    for index, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        where = f"{source}:{index}"
        if line.startswith("#"):
            continue
        if not in_moves:
            if not line.strip():
                if fields:
                    in_moves = True  # the blank line between headers and moves
                continue
            header = _HEADER.match(line)
            if header is None:
                raise GameFileError(f'{where}: expected a [Key "value"] header, got {line!r}')
            if not fields:
                start = index
            try:
                value = json.loads(header.group(2))
            except json.JSONDecodeError as exc:
                raise GameFileError(f"{where}: bad header value: {exc}") from None
            if not isinstance(value, str):
                raise GameFileError(f"{where}: a header value must be a string")
            fields[header.group(1)] = value
            continue
        if not line.strip():
            continue
        if line in _RESULT_WINNER or line == VOID_RESULT:
            if line != fields.get("Result"):
                raise GameFileError(
                    f"{where}: result line {line!r} differs from the Result header"
                    f" {fields.get('Result')!r}"
                )
            yield entry_from_fields(fields, moves, f"{source}:{start}")
            fields, moves, in_moves = {}, [], False
            continue
        move = _MOVE.match(line)
        if move is None:
            raise GameFileError(f"{where}: expected 'N. SEAT ACTION {{SECONDS}}', got {line!r}")
        if int(move.group(1)) != len(moves) + 1:
            raise GameFileError(f"{where}: move {move.group(1)} out of order")
        moves.append(Move(int(move.group(2)), move.group(3), float(move.group(4))))
    if fields:
        raise GameFileError(f"{source}: the record at line {start} has no result line")


def to_json(entries: Iterable[GameEntry]) -> str:
    """A JSON array with one object per game: its headers, and its moves as a list."""
    games = []
    for entry in entries:
        game: dict[str, Any] = dict(headers(entry))
        game["Moves"] = [
            {"seat": m.seat, "action": m.action, "seconds": m.seconds} for m in entry.record.moves
        ]
        games.append(game)
    return json.dumps(games, indent=1, ensure_ascii=False) + "\n"


def from_json(text: str, *, source: str = "<json>") -> list[GameEntry]:
    """The games of :func:`to_json`'s output."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GameFileError(f"{source}: not JSON: {exc}") from None
    if not isinstance(data, list):
        raise GameFileError(f"{source}: expected a JSON array of games")
    entries = []
    for index, game in enumerate(data):
        where = f"{source}[{index}]"
        if not isinstance(game, dict) or not isinstance(game.get("Moves"), list):
            raise GameFileError(f"{where}: expected an object with a Moves list")
        try:
            moves = [
                Move(int(m["seat"]), str(m["action"]), float(m["seconds"])) for m in game["Moves"]
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise GameFileError(f"{where}: bad move: {exc!r}") from None
        fields = {k: str(v) for k, v in game.items() if k != "Moves"}
        entries.append(entry_from_fields(fields, moves, where))
    return entries


CSV_COLUMNS: Final = (
    "game_id",
    "tournament",
    "tournament_id",
    "series_id",
    "game",
    "attempt",
    "seat0",
    "seat0_version",
    "seat1",
    "seat1_version",
    "dealer",
    "result",
    "ending",
    "forfeit_seat",
    "forfeit_detail",
    "moves",
    "actions",
    "started",
    "finished",
)
"""One row per game; ``actions`` is the move list as ``SEAT:ACTION`` joined by ``;``."""


def to_csv(entries: Iterable[GameEntry]) -> str:
    """A CSV table of the games (for spreadsheets; the text format is the lossless one)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for entry in entries:
        record = entry.record
        writer.writerow(
            [
                "" if entry.game_id is None else entry.game_id,
                entry.tournament,
                "" if entry.tournament_id is None else entry.tournament_id,
                "" if entry.series_id is None else entry.series_id,
                entry.number,
                entry.attempt,
                entry.seats[0].bot,
                entry.seats[0].version,
                entry.seats[1].bot,
                entry.seats[1].version,
                record.dealer,
                result_token(record),
                record.ending.value,
                "" if record.forfeit is None else record.forfeit.seat,
                "" if record.forfeit is None else record.forfeit.detail,
                len(record.moves),
                ";".join(f"{m.seat}:{m.action}" for m in record.moves),
                _stamp(record.started),
                _stamp(record.finished),
            ]
        )
    return buffer.getvalue()
