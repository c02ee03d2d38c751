"""Validated, immutable inputs and outputs of the CRUD functions.

Inputs are checked when constructed, so a malformed record raises
:class:`InvalidRecordError` naming the offending value before any database work starts.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from arena.db.enums import SeriesFormat, SubmissionStatus
from arena.db.errors import InvalidRecordError

BOT_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
CARD_RE = re.compile(r"[6789TJQKA][CDHS]")
SHA256_RE = re.compile(r"[0-9a-f]{64}")
MAX_SEED = 2**63 - 1  # BIGINT on both backends
DECK_SIZE = 36


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise InvalidRecordError(message)


def _check_text(value: object, what: str, max_len: int) -> None:
    _check(
        isinstance(value, str) and len(value.strip()) > 0 and len(value) <= max_len,
        f"{what} must be a non-empty string of at most {max_len} characters, got {value!r}",
    )


def _check_seat(value: object, what: str) -> None:
    _check(value in (0, 1) and not isinstance(value, bool), f"{what} must be 0 or 1, got {value!r}")


def _check_seed(value: object, what: str) -> None:
    _check(
        isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SEED,
        f"{what} must be an integer in [0, 2**63 - 1], got {value!r}",
    )


def _check_aware(value: datetime | None, what: str, *, required: bool = False) -> None:
    _check(
        (value is None and not required)
        or (isinstance(value, datetime) and value.tzinfo is not None),
        f"{what} must be a timezone-aware datetime, got {value!r}",
    )


def _check_json(value: object, what: str) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidRecordError(f"{what} must be JSON-serialisable: {exc}") from exc


@dataclass(frozen=True)
class NewSubmission:
    """A bot version to store. ``sha256`` identifies its content; submitting it twice is a no-op."""

    bot_name: str
    version: str
    sha256: str
    submitted_by: str
    manifest: Mapping[str, Any] = field(default_factory=dict)
    storage_path: str | None = None
    archive: bytes | None = None
    status: SubmissionStatus = SubmissionStatus.ACTIVE
    submitted_at: datetime | None = None  # default: now

    def __post_init__(self) -> None:
        _check(
            isinstance(self.bot_name, str) and BOT_NAME_RE.fullmatch(self.bot_name) is not None,
            f"bot name must match [a-z0-9][a-z0-9_-]{{0,39}}, got {self.bot_name!r}",
        )
        _check_text(self.version, "version", 64)
        _check(
            isinstance(self.sha256, str) and SHA256_RE.fullmatch(self.sha256) is not None,
            f"sha256 must be 64 lowercase hex digits, got {self.sha256!r}",
        )
        _check_text(self.submitted_by, "submitted_by", 200)
        _check(isinstance(self.manifest, Mapping), f"manifest must be a mapping: {self.manifest!r}")
        _check_json(dict(self.manifest), "manifest")
        _check(
            self.archive is None or isinstance(self.archive, bytes),
            f"archive must be bytes or None, got {type(self.archive).__name__}",
        )
        _check(
            self.storage_path is None or isinstance(self.storage_path, str),
            f"storage_path must be a string or None, got {self.storage_path!r}",
        )
        _check(
            isinstance(self.status, SubmissionStatus),
            f"status must be a SubmissionStatus, got {self.status!r}",
        )
        _check_aware(self.submitted_at, "submitted_at")


@dataclass(frozen=True)
class SeriesSpec:
    """One series to create: two submissions, how many games, its seed and format.

    A series at a classic table names the ruleset and every seat's submission in ``seats``
    (seat 0 first); its ``submission_a_id`` and ``submission_b_id`` are seats 0 and 1.
    """

    submission_a_id: int
    submission_b_id: int
    games_planned: int
    seed: int
    format: SeriesFormat = SeriesFormat.STANDARD
    ruleset: str = "default"
    seats: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check(
            self.ruleset in ("default", "classic"),
            f"ruleset must be 'default' or 'classic', got {self.ruleset!r}",
        )
        if self.ruleset == "default":
            _check(not self.seats, f"a default-ruleset series has no seats list: {self.seats!r}")
        else:
            _check(
                2 <= len(self.seats) <= 4
                and len(set(self.seats)) == len(self.seats)
                and tuple(self.seats[:2]) == (self.submission_a_id, self.submission_b_id),
                f"a table series seats 2-4 different submissions, seats 0 and 1 being a and b;"
                f" got seats={self.seats!r}, a={self.submission_a_id}, b={self.submission_b_id}",
            )
        _check(
            self.submission_a_id != self.submission_b_id,
            f"a series needs two different submissions, got {self.submission_a_id} twice",
        )
        _check(
            isinstance(self.games_planned, int) and self.games_planned >= 0,
            f"games_planned must be a non-negative integer, got {self.games_planned!r}",
        )
        if self.format is SeriesFormat.DUPLICATE:
            _check(
                self.games_planned % 2 == 0,
                f"a duplicate series plays each deal twice: games_planned must be even, "
                f"got {self.games_planned}",
            )
        _check_seed(self.seed, "series seed")
        _check(
            isinstance(self.format, SeriesFormat),
            f"format must be a SeriesFormat, got {self.format!r}",
        )


@dataclass(frozen=True)
class TournamentSpec:
    """A tournament to create together with all of its series, in one transaction."""

    name: str
    seed: int
    config: Mapping[str, Any] = field(default_factory=dict)
    series: Sequence[SeriesSpec] = ()

    def __post_init__(self) -> None:
        _check_text(self.name, "tournament name", 200)
        _check_seed(self.seed, "tournament seed")
        _check(isinstance(self.config, Mapping), f"config must be a mapping: {self.config!r}")
        _check_json(dict(self.config), "tournament config")


@dataclass(frozen=True)
class RatingLine:
    """One submission's figures in a rating snapshot."""

    submission_id: int
    rank: int
    rating: float
    games: int
    wins: int
    draws: int
    losses: int
    score: float
    error: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check(
            self.games == self.wins + self.draws + self.losses,
            f"games ({self.games}) must equal wins + draws + losses "
            f"({self.wins} + {self.draws} + {self.losses})",
        )
        for name in ("rating", "score"):
            value = getattr(self, name)
            _check(math.isfinite(value), f"{name} must be finite, got {value!r}")
        _check_json(dict(self.extra), "rating extra")


@dataclass(frozen=True)
class NewRatingSnapshot:
    """A ratings fit to store: global when ``tournament_id`` is None."""

    model: str
    entries: Sequence[RatingLine]
    parameters: Mapping[str, Any] = field(default_factory=dict)
    tournament_id: int | None = None

    def __post_init__(self) -> None:
        _check_text(self.model, "rating model", 64)
        _check_json(dict(self.parameters), "rating parameters")
        ids = [e.submission_id for e in self.entries]
        _check(len(ids) == len(set(ids)), f"a submission appears twice in the snapshot: {ids}")


@dataclass(frozen=True)
class PairCounts:
    """Results of ``first`` (moved first) against ``second``: first's wins, draws, losses."""

    first_submission_id: int
    second_submission_id: int
    wins: int
    draws: int
    losses: int

    @property
    def games(self) -> int:
        """Games counted."""
        return self.wins + self.draws + self.losses


@dataclass(frozen=True)
class GameOutcome:
    """A counted game in compact form, for order-dependent ratings (Elo) and pairings."""

    game_id: int
    series_id: int
    number: int
    first_submission_id: int
    second_submission_id: int
    first_score: float  # 1, 0.5 or 0 for the first mover
    finished_at: datetime
