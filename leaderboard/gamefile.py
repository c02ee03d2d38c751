"""The game file: stored games as plain text a person can read (and CSV or JSON), and back.

One record per game, like a PGN game: a block of ``[Key "value"]`` headers, a blank line, one
line per move, and a result line (``1-0`` seat 0 won, ``0-1`` seat 1 won, ``1/2-1/2`` a
draw, ``*`` a voided game); records are separated by a blank line. Header values are JSON
strings (``\\"``, ``\\\\``, ``\\n`` escapes), so any detail a bot caused survives intact.
A move line is ``N. SEAT ACTION {SECONDS}``, e.g. ``12. 1 cover KS TD {0.0123}`` (``{SECONDS
cpu=CPU}`` when the bot's CPU time was counted; an action the line cannot hold as it is, such
as one with a brace, is written as a JSON string). Lines starting with ``#`` are comments.
The format is specified in docs/games-format.md.

Pure: text in, values out (:class:`GameEntry`, which wraps the referee's one
:class:`~referee.record.GameRecord` with where the game belongs); the database side is
:mod:`leaderboard.games_io`.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from arena.db.enums import SeriesFormat, SeriesStatus, TournamentStatus
from arena.db.games import check_storable
from arena.db.records import MAX_SEED, SHA256_RE
from arena.tournament.origin import SeriesOrigin
from arena.tournament.seeds import commitment
from referee.protocol.messages import GameEndReason, TimeControl
from referee.record import Forfeit, GameRecord, Move
from referee.timecontrol import format_time_spec, parse_time_spec, seconds_text
from sandbox.death import printable
from sandbox.submission import NAME_RE, VERSION_RE

FORMAT_VERSION: Final = "1"
"""Written as the ``KrytGameFile`` header of every record; readers refuse other versions."""

RESULTS: Final = {0: "1-0", 1: "0-1", None: "1/2-1/2"}
VOID_RESULT: Final = "*"
_RESULT_WINNER: Final = {"1-0": 0, "0-1": 1, "1/2-1/2": None}

_HEADER = re.compile(r'^\[([A-Za-z][A-Za-z0-9]*) (".*")\]$')
_MOVE = re.compile(r'^(\d+)\. ([01]) ("(?:[^"\\]|\\.)*"|[^{}"][^{}]*?) \{([^{}]*)\}$')
"""``N. SEAT ACTION {TIMES}``: the action as it is, or as a JSON string (see :func:`move_line`)."""
_TIMES = re.compile(r"([0-9.eE+-]+)(?: cpu=([0-9.eE+-]+))?\Z")
_INTEGER = re.compile(r"-?[0-9]+\Z")
_HIDDEN: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories of control, format, surrogate and line/paragraph separator characters:
what :func:`sandbox.death.printable` makes visible, what a move's action may not hold, and
what a header value is written with as a JSON escape (a line separator would split the line,
a bidi override reorder it in an editor)."""

MAX_INT: Final = 2**31 - 1
"""The largest game number, attempt, series position, series length or turn limit: they are
INTEGER columns, 32 bits on PostgreSQL."""
MAX_BIGINT: Final = MAX_SEED
"""The largest seed or id (BIGINT columns)."""
MAX_TOURNAMENT_NAME: Final = 200
"""As the database's ``TournamentSpec`` allows."""
_SHOWN: Final = 80
"""At most this many characters of a bad value go into an error message."""
MAX_REFEREE: Final = 64
"""The longest ``Referee`` (the database's ``referee_version`` column)."""
_MESSAGE: Final = 400
"""At most this many characters of a record check's own message (which may quote a value)."""


class GameFileError(ValueError):
    """A game file (text, JSON) that cannot be read; the message says where."""


class GameFieldError(GameFileError):
    """A header (field) of a record whose value is malformed or out of range: the message
    names the file and line (or JSON index), the field and the value, escaped."""


def _hidden(char: str) -> bool:
    return unicodedata.category(char) in _HIDDEN


def json_text(value: str) -> str:
    """``value`` as a JSON string on one line of a game file: JSON's escapes, and every
    control, format or separator character (U+0085, U+2028, U+202E...) as ``\\uXXXX`` too,
    so that no value can split a line or reorder it on screen. ``json.loads`` reads it back."""
    text = json.dumps(value, ensure_ascii=False)
    if not any(_hidden(char) for char in text):
        return text
    out = []
    for char in text:
        if _hidden(char):
            code = ord(char)
            if code > 0xFFFF:  # a surrogate pair, as JSON writes it
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
            else:
                out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


def shown(value: str) -> str:
    """``value`` quoted for an error message: escaped by ``repr`` (control and format
    characters included), at most :data:`_SHOWN` characters of it."""
    if len(value) > _SHOWN:
        return repr(value[:_SHOWN]) + f"... ({len(value)} characters)"
    return repr(value)


def _bounded(message: str) -> str:
    """A record check's message, at most :data:`_MESSAGE` characters of it: a check that
    quotes a value whole must not echo a header of megabytes."""
    if len(message) > _MESSAGE:
        return message[:_MESSAGE] + f"... ({len(message)} characters)"
    return message


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
    origin: SeriesOrigin | None = None
    """Where the series' seed and deals come from (None: an older file, or not known)."""
    seed_commitment: str | None = None
    """The commitment to ``tournament_seed`` published when the tournament was created
    (header ``SeedCommitment``; None: an older file, or none was stored). A file's is
    checked against the seed when it is read."""
    round_commitment: str | None = None
    """The commitment to the extension round's seed (``origin.round_seed``) published when
    the round was added (header ``RoundSeedCommitment``; None: not a round's game, an older
    file, or none was stored)."""
    voided_after: str | None = None
    """The void reason of a game voided after it was recorded (``arena.db.void_game``):
    ``record`` is then the game as played (its result, ending, forfeit), which the database
    keeps, and the file writes it as a voided game with ``VoidedResult``/``VoidedEnding``."""
    where: str = field(default="", compare=False)
    """Where the record is in the file it was read from (``games.kgn:12``, ``games.json[3]``),
    for messages; empty for entries made from a database."""


def entry_result(entry: GameEntry) -> str:
    """The result token of ``entry``: ``*`` for any voided game, else ``1-0``, ``0-1`` or
    ``1/2-1/2``."""
    return VOID_RESULT if entry.voided_after is not None else result_token(entry.record)


def entry_ending(entry: GameEntry) -> str:
    """The ``Ending`` of ``entry``: ``void`` for any voided game."""
    if entry.voided_after is not None:
        return GameEndReason.VOID.value
    return entry.record.ending.value


def _origin_headers(origin: SeriesOrigin, round_commitment: str | None) -> dict[str, str]:
    fields = {"SeriesSeedIds": f"{origin.seed_ids[0]} {origin.seed_ids[1]}"}
    if origin.round_seed is not None:
        fields["RoundSeed"] = str(origin.round_seed)
        if round_commitment is not None:
            fields["RoundSeedCommitment"] = round_commitment
    if origin.book_decks is not None:
        fields["DealBook"] = str(origin.book_decks)
    return fields


def _origin(fields: Mapping[str, str], at: Callable[[str], str]) -> SeriesOrigin | None:
    """The optional ``SeriesSeedIds``, ``RoundSeed`` and ``DealBook`` headers (the last two
    need the first)."""
    if "SeriesSeedIds" not in fields:
        for key in ("RoundSeed", "DealBook"):
            if key in fields:
                raise GameFieldError(f"{at(key)}: {key} needs a SeriesSeedIds header")
        return None
    text = fields["SeriesSeedIds"]
    parts = text.split(" ")
    if len(parts) != 2 or not all(
        _INTEGER.match(p) and len(p) <= 24 and 1 <= int(p) <= MAX_BIGINT for p in parts
    ):
        raise GameFieldError(
            f"{at('SeriesSeedIds')}: SeriesSeedIds must be two ids in [1, {MAX_BIGINT}]"
            f" separated by a space, got {shown(text)}"
        )
    round_seed = (
        _int(fields, "RoundSeed", at("RoundSeed"), 0, MAX_BIGINT) if "RoundSeed" in fields else None
    )
    book = (
        _int(fields, "DealBook", at("DealBook"), 1, MAX_INT, " (decks in the book)")
        if "DealBook" in fields
        else None
    )
    return SeriesOrigin((int(parts[0]), int(parts[1])), round_seed, book)


def _commitment(
    fields: Mapping[str, str], key: str, seed_key: str, seed: int, at: Callable[[str], str]
) -> str | None:
    """The optional commitment header ``key``, which must be the commitment of ``seed``
    (header ``seed_key``), or None when the record has none (an older file).

    A commitment is published before the games and the seed revealed after them: a file
    whose seed does not give its commitment reveals a seed other than the one the deals were
    committed to (or a forged commitment), and is refused."""
    if key not in fields:
        return None
    text = fields[key]
    expected = commitment(seed)
    if text != expected:
        raise GameFieldError(
            f"{at(key)}: {key} must be the commitment of {seed_key} {seed} ({expected}),"
            f" got {shown(text)}: the seed is not the one committed to before the games"
        )
    return text


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds")


def _seconds(text: str, key: str) -> float:
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise GameFieldError(f"{key}: not an ISO timestamp: {shown(text)}") from None
    if stamp.tzinfo is None:
        raise GameFieldError(f"{key}: the timestamp needs a time zone: {shown(text)}")
    try:
        seconds = stamp.timestamp()
        datetime.fromtimestamp(seconds, UTC)  # storable: the database keeps it as a datetime
    except (ValueError, OverflowError, OSError):
        raise GameFieldError(f"{key}: the timestamp is out of range: {shown(text)}") from None
    return seconds


def result_token(record: GameRecord) -> str:
    """``1-0``, ``0-1``, ``1/2-1/2`` or ``*`` (voided)."""
    return VOID_RESULT if record.voided else RESULTS[record.winner]


def time_header(control: TimeControl) -> str:
    """A seat's time control as a header value: ``1+10+0.1 grace=0.05 clock=wall``."""
    grace = seconds_text(control.grace_ms)
    return f"{format_time_spec(control)} grace={grace} clock={control.clock}"


def _time_control(text: str, where: str) -> TimeControl:
    """Inverse of :func:`time_header`; GameFileError naming ``where`` when it is not one."""
    spec, *extra = text.split() or [""]
    settings = dict(part.partition("=")[::2] for part in extra)
    if sorted(settings) != ["clock", "grace"]:
        raise GameFieldError(
            f"{where}: expected 'MOVE+BANK+INCREMENT grace=G clock=C', got {shown(text)}"
        )
    try:
        base = TimeControl.from_seconds(1, 0, float(settings["grace"]), settings["clock"])
        return parse_time_spec(spec, base)
    except (ValueError, OverflowError) as exc:
        raise GameFieldError(f"{where}: {exc}") from None


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
    if entry.seed_commitment is not None:
        fields["SeedCommitment"] = entry.seed_commitment
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
    }
    if entry.origin is not None:
        fields |= _origin_headers(entry.origin, entry.round_commitment)
    fields |= {"Game": str(entry.number), "Attempt": str(entry.attempt)}
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
        "Result": entry_result(entry),
        "Ending": entry_ending(entry),
    }
    if entry.voided_after is not None:  # what the game had when it was voided
        fields["VoidedResult"] = result_token(record)
        fields["VoidedEnding"] = record.ending.value
    if record.forfeit is not None:
        fields["ForfeitSeat"] = str(record.forfeit.seat)
        fields["ForfeitInput"] = record.forfeit.offending_input
        fields["ForfeitDetail"] = record.forfeit.detail
    elif record.double_forfeit_detail:
        fields["ForfeitDetail"] = record.double_forfeit_detail  # no seat: why neither started
    if record.final_cover is not None:
        fields["FinalCover"] = record.final_cover
    if record.voided:
        fields["VoidReason"] = record.void_reason
    elif entry.voided_after is not None:
        fields["VoidReason"] = entry.voided_after
    fields |= {
        "Referee": record.referee_version,
        "Started": _stamp(record.started),
        "Finished": _stamp(record.finished),
    }
    return fields


def plain_action(action: str) -> bool:
    """Whether a move line can hold ``action`` as it is: no brace, no control or format
    character, no leading quote, no space at either end (else it is written as a JSON
    string)."""
    return (
        bool(action)
        and action == action.strip()
        and not action.startswith('"')
        and "{" not in action
        and "}" not in action
        and not any(_hidden(char) for char in action)
    )


def move_line(number: int, move: Move) -> str:
    """``N. SEAT ACTION {SECONDS}``, with `` cpu=CPU`` after the seconds when the move has
    a CPU time; an action that is not :func:`plain_action` is written as a JSON string
    (:func:`json_text`), so that no stored text can break the line."""
    action = move.action if plain_action(move.action) else json_text(move.action)
    cpu = "" if move.cpu_seconds is None else f" cpu={move.cpu_seconds!r}"
    return f"{number}. {move.seat} {action} {{{move.seconds!r}{cpu}}}"


def format_game(entry: GameEntry) -> str:
    """One record: headers, a blank line, the moves, the result line (no trailing blank)."""
    lines = [f"[{key} {json_text(value)}]" for key, value in headers(entry).items()]
    lines.append("")
    lines.extend(move_line(n, move) for n, move in enumerate(entry.record.moves, start=1))
    lines.append(entry_result(entry))
    return "\n".join(lines) + "\n"


def format_games(entries: Iterable[GameEntry]) -> str:
    """Records separated by blank lines."""
    return "\n".join(format_game(entry) for entry in entries)


def _field(fields: Mapping[str, str], key: str, where: str) -> str:
    try:
        return fields[key]
    except KeyError:
        raise GameFieldError(f"{where}: missing header {key}") from None


def _int(
    fields: Mapping[str, str], key: str, where: str, low: int, high: int, note: str = ""
) -> int:
    """Header ``key`` as a decimal integer in ``[low, high]`` (``note`` says why, for the
    message); GameFieldError otherwise."""
    text = _field(fields, key, where)
    if _INTEGER.match(text) is None:
        raise GameFieldError(f"{where}: {key} must be an integer, got {shown(text)}")
    value = int(text) if len(text) <= 24 else high + 1  # longer: out of range anyway
    if not low <= value <= high:
        raise GameFieldError(
            f"{where}: {key} must be an integer in [{low}, {high}]{note}, got {shown(text)}"
        )
    return value


def _choice(fields: Mapping[str, str], key: str, where: str, kind: type[StrEnum]) -> str:
    """Header ``key``, which must be one of the values of ``kind``."""
    text = _field(fields, key, where)
    allowed = [member.value for member in kind]
    if text not in allowed:
        raise GameFieldError(
            f"{where}: {key} must be one of {', '.join(allowed)}, got {shown(text)}"
        )
    return text


def _matching(
    fields: Mapping[str, str], key: str, where: str, pattern: re.Pattern[str], rule: str
) -> str:
    """Header ``key``, which must match ``pattern`` (``rule`` says how, for the message)."""
    text = _field(fields, key, where)
    if pattern.match(text) is None:
        raise GameFieldError(f"{where}: {key} must be {rule}, got {shown(text)}")
    return text


def _seat(fields: Mapping[str, str], seat: int, at: Callable[[str], str]) -> Seat:
    """Who sat in ``seat``, checked as a bot.toml (name, version) and a content hash are;
    ``at(key)`` is where header ``key`` is, for the message."""
    name, version, sha = f"Seat{seat}", f"Seat{seat}Version", f"Seat{seat}Sha256"
    return Seat(
        _matching(fields, name, at(name), NAME_RE, _NAME_RULE),
        _matching(fields, version, at(version), VERSION_RE, _VERSION_RULE),
        _matching(fields, sha, at(sha), _SHA256, "64 lowercase hex digits"),
    )


_NAME_RULE: Final = (
    "a bot name as in bot.toml (1-40 characters of [a-z0-9_-], starting with a letter or digit)"
)
_VERSION_RULE: Final = (
    "a version as in bot.toml (1-40 characters of [0-9A-Za-z.+_-], starting with a letter or digit)"
)
_SHA256: Final = re.compile(SHA256_RE.pattern + r"\Z")


def entry_from_fields(
    fields: Mapping[str, str],
    moves: Iterable[Move],
    where: str = "record",
    *,
    lines: Mapping[str, int] | None = None,
    source: str = "",
) -> GameEntry:
    """A :class:`GameEntry` from its headers and moves (``where`` locates errors).

    Every header is checked here, before anything is stored: a value the database could
    not hold, or a bot.toml would refuse, is a :class:`GameFieldError` naming the header,
    its value and (with ``lines``, the line of each header in ``source``) its line.
    """
    lines = lines or {}

    def at(key: str) -> str:
        return f"{source}:{lines[key]}" if key in lines else where

    version = fields.get("KrytGameFile")
    if version != FORMAT_VERSION:
        raise GameFieldError(
            f"{at('KrytGameFile')}: KrytGameFile version"
            f" {'None' if version is None else shown(version)} is not {FORMAT_VERSION!r}"
        )
    ending_text = _field(fields, "Ending", where)
    try:
        ending = GameEndReason(ending_text)
    except ValueError:
        raise GameFieldError(f"{at('Ending')}: unknown Ending {shown(ending_text)}") from None
    result = _field(fields, "Result", where)
    if result != VOID_RESULT and result not in _RESULT_WINNER:
        raise GameFieldError(
            f"{at('Result')}: Result must be 1-0, 0-1, 1/2-1/2 or *, got {shown(result)}"
        )
    voided_after = _voided_after(fields, at, ending, result)
    if voided_after is not None:  # the game as played; the database keeps that too
        ending = GameEndReason(fields["VoidedEnding"])
        result = fields["VoidedResult"]
    seats = (_seat(fields, 0, at), _seat(fields, 1, at))
    if seats[0].sha256 == seats[1].sha256:
        raise GameFieldError(
            f"{at('Seat1Sha256')}: Seat0Sha256 and Seat1Sha256 are the same bot version"
            f" ({seats[0].sha256[:16]}...): a game needs two"
        )
    tournament = _field(fields, "Tournament", where)
    if (
        not tournament.strip()
        or len(tournament) > MAX_TOURNAMENT_NAME
        or not tournament.isprintable()
    ):
        raise GameFieldError(
            f"{at('Tournament')}: Tournament must be a non-empty name of at most"
            f" {MAX_TOURNAMENT_NAME} printable characters, got {shown(tournament)}"
        )

    def number(key: str, low: int, high: int, note: str = "") -> int:
        return _int(fields, key, at(key), low, high, note)

    def optional_id(key: str) -> int | None:
        return number(key, 1, MAX_BIGINT) if key in fields else None

    tournament_seed = number("TournamentSeed", 0, MAX_BIGINT)
    seed_commitment = _commitment(fields, "SeedCommitment", "TournamentSeed", tournament_seed, at)

    series_format = _choice(fields, "SeriesFormat", at("SeriesFormat"), SeriesFormat)
    series_games = number("SeriesGames", 1, MAX_INT)
    if series_format == SeriesFormat.DUPLICATE.value and series_games % 2:
        raise GameFieldError(
            f"{at('SeriesGames')}: a duplicate series plays each deal twice: SeriesGames must"
            f" be even, got {shown(fields['SeriesGames'])}"
        )
    game_number = number("Game", 1, series_games, " (the series' SeriesGames)")
    dealer = number("Dealer", 0, 1)
    turn_limit = number("TurnLimit", 1, MAX_INT)
    forfeit = None
    started = _seconds(_field(fields, "Started", where), f"{at('Started')}: Started")
    finished = _seconds(_field(fields, "Finished", where), f"{at('Finished')}: Finished")
    referee = _field(fields, "Referee", where)
    if not 0 < len(referee) <= MAX_REFEREE or not referee.isprintable():
        raise GameFieldError(
            f"{at('Referee')}: Referee must be 1 to {MAX_REFEREE} printable characters,"
            f" got {shown(referee)}"
        )
    time_controls = tuple(
        _time_control(fields[f"Seat{s}Time"], f"{at(f'Seat{s}Time')}: Seat{s}Time")
        for s in (0, 1)
        if f"Seat{s}Time" in fields
    )
    try:
        if "ForfeitSeat" in fields:
            forfeit = Forfeit(
                number("ForfeitSeat", 0, 1),
                ending,
                fields.get("ForfeitInput", ""),
                fields.get("ForfeitDetail", ""),
            )
        record = GameRecord(
            deck=tuple(_field(fields, "Deck", where).split()),
            dealer=dealer,
            turn_limit=turn_limit,
            moves=tuple(moves),
            ending=ending,
            winner=None if result == VOID_RESULT else _RESULT_WINNER[result],
            forfeit=forfeit,
            final_cover=fields.get("FinalCover"),
            void_reason="" if voided_after is not None else fields.get("VoidReason", ""),
            double_forfeit_detail=(
                fields.get("ForfeitDetail", "") if ending is GameEndReason.DOUBLE_FORFEIT else ""
            ),
            referee_version=referee,
            players=(seats[0].label, seats[1].label),
            started=started,
            finished=finished,
            time_controls=time_controls,
        )
        check_storable(record)  # what the database will refuse, refused here with the line
    except GameFileError:
        raise
    except ValueError as exc:  # InvalidRecordError too
        raise GameFieldError(f"{where}: {_bounded(str(exc))}") from None

    origin = _origin(fields, at)
    round_commitment = None
    if "RoundSeedCommitment" in fields:
        if origin is None or origin.round_seed is None:
            raise GameFieldError(
                f"{at('RoundSeedCommitment')}: RoundSeedCommitment needs a RoundSeed header"
            )
        round_commitment = _commitment(
            fields, "RoundSeedCommitment", "RoundSeed", origin.round_seed, at
        )
    return GameEntry(
        record=record,
        seats=seats,
        number=game_number,
        attempt=number("Attempt", 1, MAX_INT),
        tournament=tournament,
        tournament_seed=tournament_seed,
        tournament_status=_choice(
            fields, "TournamentStatus", at("TournamentStatus"), TournamentStatus
        ),
        series_position=number("SeriesPosition", 0, MAX_INT),
        series_format=series_format,
        series_games=series_games,
        series_seed=number("SeriesSeed", 0, MAX_BIGINT),
        series_status=_choice(fields, "SeriesStatus", at("SeriesStatus"), SeriesStatus),
        series_a_seat=number("SeriesASeat", 0, 1),
        game_id=optional_id("GameId"),
        tournament_id=optional_id("TournamentId"),
        series_id=optional_id("SeriesId"),
        origin=origin,
        seed_commitment=seed_commitment,
        round_commitment=round_commitment,
        voided_after=voided_after,
        where=where,
    )


def _voided_after(
    fields: Mapping[str, str], at: Callable[[str], str], ending: GameEndReason, result: str
) -> str | None:
    """The void reason of a game voided after it was recorded (headers ``VoidedResult`` and
    ``VoidedEnding``: what it had when it was voided), or None for any other game."""
    keys = [key for key in ("VoidedResult", "VoidedEnding") if key in fields]
    if not keys:
        return None
    key = keys[0]
    if len(keys) == 1:
        other = "VoidedEnding" if key == "VoidedResult" else "VoidedResult"
        raise GameFieldError(f"{at(key)}: {key} needs a {other} header")
    if ending is not GameEndReason.VOID or result != VOID_RESULT:
        raise GameFieldError(
            f"{at(key)}: VoidedResult and VoidedEnding belong to a voided game (Result"
            f" {VOID_RESULT!r}, Ending 'void'), got Result {shown(result)}"
            f" and Ending {shown(ending.value)}"
        )
    reason = fields.get("VoidReason", "")
    if not reason.strip():
        raise GameFieldError(f"{at(key)}: a voided game needs a VoidReason header")
    if fields["VoidedResult"] not in _RESULT_WINNER:
        raise GameFieldError(
            f"{at('VoidedResult')}: VoidedResult must be 1-0, 0-1 or 1/2-1/2,"
            f" got {shown(fields['VoidedResult'])}"
        )
    text = fields["VoidedEnding"]
    if text not in {e.value for e in GameEndReason} or text == GameEndReason.VOID.value:
        raise GameFieldError(
            f"{at('VoidedEnding')}: VoidedEnding must be how a played game ended, got {shown(text)}"
        )
    return reason


def _move_seconds(text: object, where: str, what: str = "seconds") -> float:
    """A move's thinking time (``what``: its ``seconds`` or its ``cpu`` seconds) from the
    text of a move line or a JSON number (not a string, not a boolean): a finite number of
    seconds >= 0."""
    seconds = math.nan
    if isinstance(text, str) or (isinstance(text, int | float) and not isinstance(text, bool)):
        with contextlib.suppress(ValueError, OverflowError):
            seconds = float(text)
    if not math.isfinite(seconds) or seconds < 0:
        value = shown(text) if isinstance(text, str) else _json_shown(text)
        raise GameFieldError(f"{where}: a move's {what} must be a finite number >= 0, got {value}")
    return seconds


def _json_seconds(value: object, where: str, what: str = "seconds") -> float:
    """:func:`_move_seconds` of a JSON value, which must be a number (``false`` or ``"0.5"``
    is not a time)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise GameFieldError(
            f"{where}: a move's {what} must be a finite number >= 0, got {_json_shown(value)}"
        )
    return _move_seconds(value, where, what)


def _json_shown(value: object) -> str:
    """A JSON value of the wrong type, named for a message (``null``, ``true``, ``a list``)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        text = repr(value)
        return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text)} digits)"
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _action(text: str, where: str) -> str:
    """A move's action as a game file may hold it: 1 to 200 characters, none of them a
    control or format character (a stored move is the protocol's canonical text; a newline
    or an escape sequence in one can only be an attack on whoever reads the file)."""
    if not 0 < len(text) <= 200:
        raise GameFieldError(
            f"{where}: a move's action must be 1 to 200 characters, got {shown(text)}"
        )
    bad = next((char for char in text if _hidden(char)), None)
    if bad is not None:
        raise GameFieldError(
            f"{where}: a move's action may not hold control or format characters"
            f" (U+{ord(bad):04X}), got {shown(text)}"
        )
    return text


def _check_series(entries: Sequence[tuple[GameEntry, str]]) -> None:
    """The records of one series (tournament name and seed, series position) agree on it:
    its format, length, seed, status and its two bots (the import keeps the first's); a game
    (series, number, attempt) appears once, or again with the same content; at most one
    attempt of a game number counts. Errors name both records."""
    first: dict[tuple[str, int, int], tuple[tuple[object, ...], str]] = {}
    tournaments: dict[tuple[str, int], tuple[str, str]] = {}
    games: dict[tuple[str, int, int, int, int], tuple[tuple[object, ...], str]] = {}
    counted: dict[tuple[str, int, int, int], tuple[int, str]] = {}
    for entry, where in entries:
        a = entry.seats[entry.series_a_seat].sha256
        b = entry.seats[1 - entry.series_a_seat].sha256
        series = (
            entry.series_format,
            entry.series_games,
            entry.series_seed,
            entry.series_status,
            a,
            b,
            entry.origin,
        )
        place = (entry.tournament, entry.tournament_seed, entry.series_position)
        known, earlier = first.setdefault(place, (series, where))
        if known != series:
            raise GameFieldError(
                f"{where}: series {entry.series_position} of tournament"
                f" {shown(entry.tournament)} differs from an earlier record of it, at"
                f" {earlier} (its SeriesFormat, SeriesGames, SeriesSeed, SeriesStatus,"
                " SeriesSeedIds, RoundSeed, DealBook or bots)"
            )
        status, earlier = tournaments.setdefault(place[:2], (entry.tournament_status, where))
        if status != entry.tournament_status:
            raise GameFieldError(
                f"{where}: TournamentStatus {shown(entry.tournament_status)} differs from an"
                f" earlier record of tournament {shown(entry.tournament)}, at {earlier}"
                f" ({shown(status)})"
            )
        game = f"game {entry.number} of series {entry.series_position} of tournament"
        game += f" {shown(entry.tournament)}"
        content = (entry.record, entry.seats, entry.voided_after)
        known, earlier = games.setdefault((*place, entry.number, entry.attempt), (content, where))
        if known != content:
            raise GameFieldError(
                f"{where}: {game} (attempt {entry.attempt}) is also the record at {earlier},"
                " with different content: a game is recorded once"
            )
        if entry.record.voided or entry.voided_after is not None:
            continue
        attempt, earlier = counted.setdefault((*place, entry.number), (entry.attempt, where))
        if attempt != entry.attempt:
            raise GameFieldError(
                f"{where}: {game} counts twice: attempt {entry.attempt} here and attempt"
                f" {attempt} at {earlier}; only one attempt of a game counts (the others are"
                " voided)"
            )


def _check_bots(entries: Sequence[tuple[GameEntry, str]]) -> None:
    """Across the file, a content hash names one bot version and a bot version has one
    content hash, as in the database (which would refuse the second name of stored content;
    an import of both from one file used to keep the first name and drop the other).
    Errors name both records."""
    by_sha: dict[str, tuple[Seat, str]] = {}
    by_label: dict[tuple[str, str], tuple[Seat, str]] = {}
    for entry, where in entries:
        for seat in entry.seats:
            known, earlier = by_sha.setdefault(seat.sha256, (seat, where))
            if known.label != seat.label:
                raise GameFieldError(
                    f"{where}: content sha256 {seat.sha256} is {known.label} at {earlier};"
                    f" it cannot also be {seat.label}"
                )
            known, earlier = by_label.setdefault((seat.bot, seat.version), (seat, where))
            if known.sha256 != seat.sha256:
                raise GameFieldError(
                    f"{where}: {seat.label} has content sha256 {known.sha256} at {earlier};"
                    f" it cannot also have {seat.sha256} (a version's content never changes)"
                )


def parse_games(text: str, *, source: str = "<games>") -> list[GameEntry]:
    """Every record of a game file (the inverse of :func:`format_games`).

    The whole file is checked: GameFileError (a :class:`GameFieldError` for a bad header
    value) names the line of the first problem; nothing is returned for part of a file.
    """
    located = list(_records(text.splitlines(), source))
    _check_bots(located)
    _check_series(located)
    return [entry for entry, _ in located]


def _records(lines: list[str], source: str) -> Iterator[tuple[GameEntry, str]]:
    fields: dict[str, str] = {}
    header_lines: dict[str, int] = {}
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
                raise GameFileError(f'{where}: expected a [Key "value"] header, got {shown(line)}')
            if not fields:
                start = index
            try:
                value = json.loads(header.group(2))
            except (ValueError, RecursionError) as exc:  # JSONDecodeError, a 5000-digit number
                raise GameFileError(f"{where}: bad header value: {exc}") from None
            if not isinstance(value, str):
                raise GameFileError(f"{where}: a header value must be a string")
            if header.group(1) in fields:  # which one would count? neither: say so
                raise GameFileError(
                    f"{where}: header {header.group(1)} appears twice in this record (line"
                    f" {header_lines[header.group(1)]} too)"
                )
            fields[header.group(1)] = value
            header_lines[header.group(1)] = index
            continue
        if not line.strip():
            continue
        if line in _RESULT_WINNER or line == VOID_RESULT:
            if line != fields.get("Result"):
                shown_result = fields.get("Result")
                raise GameFileError(
                    f"{where}: result line {line!r} differs from the Result header"
                    f" {shown(shown_result) if shown_result is not None else None}"
                )
            place = f"{source}:{start}"
            entry = entry_from_fields(fields, moves, place, lines=header_lines, source=source)
            yield entry, place
            fields, header_lines, moves, in_moves = {}, {}, [], False
            continue
        move = _MOVE.match(line)
        if move is None:
            raise GameFileError(
                f"{where}: expected 'N. SEAT ACTION {{SECONDS}}', got {shown(line)}"
            )
        if len(move.group(1)) > 12 or int(move.group(1)) != len(moves) + 1:
            raise GameFileError(f"{where}: move {move.group(1)[:20]} out of order")
        moves.append(_move(move, f"{where}: move {len(moves) + 1}"))
    if fields:
        raise GameFileError(f"{source}: the record at line {start} has no result line")


def _move(line: re.Match[str], where: str) -> Move:
    """The move of a matched move line (``where``: its line and number, for errors)."""
    action = line.group(3)
    if action.startswith('"'):  # written as a JSON string (see move_line)
        try:
            action = json.loads(action)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, a 5000-digit number
            raise GameFieldError(f"{where}: bad quoted action: {exc}") from None
    times = _TIMES.match(line.group(4))
    if times is None:
        raise GameFieldError(
            f"{where}: expected {{SECONDS}} or {{SECONDS cpu=CPU}} after the action, got"
            f" {shown('{' + line.group(4) + '}')}"
        )
    cpu = times.group(2)
    return Move(
        int(line.group(2)),
        _action(action, where),
        _move_seconds(times.group(1), where),
        None if cpu is None else _move_seconds(cpu, where, "CPU seconds"),
    )


def to_json(entries: Iterable[GameEntry]) -> str:
    """A JSON array with one object per game: its headers, and its moves as a list."""
    games = []
    for entry in entries:
        game: dict[str, Any] = dict(headers(entry))
        game["Moves"] = [
            {"seat": m.seat, "action": m.action, "seconds": m.seconds}
            | ({} if m.cpu_seconds is None else {"cpu": m.cpu_seconds})
            for m in entry.record.moves
        ]
        games.append(game)
    return _BEYOND_ASCII.sub(_json_escape, json.dumps(games, indent=1, ensure_ascii=False)) + "\n"


_BEYOND_ASCII = re.compile(r"[^\x20-\x7e]")
"""Where ``json.dumps`` may have left a character raw (it escapes only those below U+0020)."""


def _json_escape(match: re.Match[str]) -> str:
    """A control, format or separator character as ``\\uXXXX`` (a UTF-16 surrogate pair
    beyond U+FFFF, JSON's way); any other character as it is. ``json.dumps`` leaves DEL, the
    C1 controls (U+009B starts a terminal escape), bidi overrides (U+202E) and line
    separators raw; bot text reaches the export, and a person may ``cat`` it."""
    char = match.group()
    if char == "\n" or unicodedata.category(char) not in {"Cc", "Cf", "Cs", "Zl", "Zp"}:
        return char
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def from_json(text: str, *, source: str = "<json>") -> list[GameEntry]:
    """The games of :func:`to_json`'s output (all checked, as by :func:`parse_games`)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GameFileError(f"{source}: not JSON: {exc}") from None
    except ValueError:  # Python's bound on the digits of an integer it converts
        raise GameFileError(
            f"{source}: not JSON a game file can hold: it has a number of more than"
            f" {sys.get_int_max_str_digits()} digits"
        ) from None
    except RecursionError:
        raise GameFileError(f"{source}: not JSON a game file can hold: nested too deeply") from None
    if not isinstance(data, list):
        raise GameFileError(f"{source}: expected a JSON array of games")
    located = []
    for index, game in enumerate(data):
        where = f"{source}[{index}]"
        if not isinstance(game, dict) or not isinstance(game.get("Moves"), list):
            raise GameFileError(f"{where}: expected an object with a Moves list")
        moves = []
        for number, m in enumerate(game["Moves"], start=1):
            at = f"{where}: move {number}"
            if not isinstance(m, dict) or not {"seat", "action", "seconds"} <= m.keys():
                raise GameFileError(f"{at}: expected an object with seat, action and seconds")
            if type(m["seat"]) is not int or m["seat"] not in (0, 1):
                raise GameFieldError(f"{at}: seat must be 0 or 1, got {_json_shown(m['seat'])}")
            if not isinstance(m["action"], str):
                raise GameFieldError(
                    f"{at}: action must be a string, got {_json_shown(m['action'])}"
                )
            moves.append(
                Move(
                    m["seat"],
                    _action(m["action"], at),
                    _json_seconds(m["seconds"], at),
                    None if "cpu" not in m else _json_seconds(m["cpu"], at, "CPU seconds"),
                )
            )
        fields: dict[str, str] = {}
        for key, value in game.items():
            if key == "Moves":
                continue
            if not isinstance(value, str):  # "Tournament": null is not a tournament "null"
                raise GameFieldError(
                    f"{where}: header {shown(key)} must be a string, got {_json_shown(value)}"
                )
            fields[key] = value
        located.append((entry_from_fields(fields, moves, where), where))
    _check_bots(located)
    _check_series(located)
    return [entry for entry, _ in located]


def load_games(data: bytes, *, source: str, json_name: bool = False) -> list[GameEntry]:
    """The games of a game file's bytes: JSON when ``json_name`` (a ``.json`` file) or when
    the text starts like a JSON array, else the text format. GameFileError for a file that is
    not UTF-8 text, or (see :func:`parse_games`) not a valid game file (which includes free
    text no database can store: a lone surrogate escape in a forfeit's detail, say)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise GameFileError(
            f"{source}: not a UTF-8 text file (byte {exc.start} is {data[exc.start]:#04x})"
        ) from None
    if json_name or re.match(r"\s*\[\s*[{\]]", text):
        entries = from_json(text, source=source)
    else:
        entries = parse_games(text, source=source)
    for entry in entries:
        refuse_unreplayable(entry)
    return entries


REPLAY_PROBLEMS_SHOWN: Final = 3
"""At most this many of a refused game's replay problems are named."""


def refuse_unreplayable(entry: GameEntry) -> None:
    """GameFileError naming where ``entry`` is when its moves do not replay by the rules to
    its stored ending, or its move times do not fit its recorded clock (what ``kryt replay
    --verify`` checks): the referee records only legal moves (an illegal reply is a
    forfeit), so such a game was damaged or forged and is not stored, nor counted in any
    standings."""
    from referee.replay import verify

    check = verify(entry.record)
    if check.ok:
        return
    shown_problems = "; ".join(check.problems[:REPLAY_PROBLEMS_SHOWN])
    more = len(check.problems) - REPLAY_PROBLEMS_SHOWN
    if more > 0:
        shown_problems += f"; and {more} more"
    where = f"{entry.where}: " if entry.where else ""
    raise GameFileError(
        f"{where}game {entry.number} does not replay as recorded: {printable(shown_problems)}"
    )


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

FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r")
"""A CSV cell starting with one of these is a formula to a spreadsheet (OWASP, "CSV
injection"): :func:`csv_cell` puts a ``'`` before it."""


def csv_cell(value: object) -> object:
    """A CSV cell as :func:`to_csv` writes it: text with every control and format character
    made visible (:func:`sandbox.death.printable`: a bot's escape sequence, newline or bidi
    override), and a ``'`` before text a spreadsheet would run as a formula; numbers as
    they are."""
    if not isinstance(value, str):
        return value
    text = printable(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def to_csv(entries: Iterable[GameEntry]) -> str:
    """A CSV table of the games, for spreadsheets: text is made safe to open with
    :func:`csv_cell`; the text format is the lossless one."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for entry in entries:
        record = entry.record
        writer.writerow(
            csv_cell(cell)
            for cell in [
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
                entry_result(entry),
                entry_ending(entry),
                "" if record.forfeit is None else record.forfeit.seat,
                record.double_forfeit_detail if record.forfeit is None else record.forfeit.detail,
                len(record.moves),
                ";".join(f"{m.seat}:{m.action}" for m in record.moves),
                _stamp(record.started),
                _stamp(record.finished),
            ]
        )
    return buffer.getvalue()
