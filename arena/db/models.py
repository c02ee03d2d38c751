"""Tables of the results database (sqlmodel). Migrations in ``migrations/`` create them.

Statuses, formats and results are stored as the string values of the enums in
:mod:`arena.db.enums`; seats are 0 and 1 in the default game, 0..3 at a classic table (whose
series and games also list every seat's submission in ``seats``). Every change to a table
here needs a new migration (see ``docs/database.md``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Index,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlmodel import Field, SQLModel, col

from arena.db.gamecodec import Table, Unpacked, count_moves, unpack
from arena.db.types import UTCDateTime, utcnow

metadata = SQLModel.metadata
# Deterministic names for constraints the models do not name, so later migrations (and
# SQLite's copy-and-move batch mode) can refer to them on both backends.
metadata.naming_convention = {
    "ix": "ix_%(table_name)s_%(column_0_name)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Bot(SQLModel, table=True):
    """A bot by name; its code lives in its submissions (versions)."""

    __tablename__ = "bots"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(sa_type=String(40), unique=True, index=True)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class Submission(SQLModel, table=True):
    """One immutable version of a bot, identified by the sha256 of its content."""

    __tablename__ = "submissions"
    __table_args__ = (UniqueConstraint("bot_id", "version", name="uq_submissions_bot_version"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int = Field(foreign_key="bots.id", index=True)
    version: str = Field(sa_type=String(64))
    sha256: str = Field(sa_type=String(64), unique=True, index=True)
    submitted_by: str = Field(sa_type=String(200))
    submitted_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    status: str = Field(sa_type=String(16))
    storage_path: str | None = Field(default=None, sa_type=Text)
    manifest: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)


class SubmissionArchive(SQLModel, table=True):
    """The archived content of a submission, kept apart so listing versions stays cheap."""

    __tablename__ = "submission_archives"

    submission_id: int = Field(foreign_key="submissions.id", primary_key=True)
    data: bytes = Field(sa_type=LargeBinary)


class Tournament(SQLModel, table=True):
    """A round robin (or any set of series) with its configuration and master seed."""

    __tablename__ = "tournaments"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(sa_type=String(200), index=True)
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    seed: int = Field(sa_type=BigInteger)
    status: str = Field(sa_type=String(16))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    started_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class TournamentLease(SQLModel, table=True):
    """Who runs a tournament right now: at most one runner per tournament.

    A runner takes the lease before it plays anything and renews ``expires_at`` with a
    heartbeat; each game is recorded only while its runner still holds the lease. A lease
    whose ``expires_at`` has passed (its runner died) can be taken by the next runner.
    ``process_token`` is the runner's :mod:`sandbox.runner` token, so a runner on the same
    host can tell at once that the holder's process is gone.
    """

    __tablename__ = "tournament_leases"

    tournament_id: int = Field(foreign_key="tournaments.id", primary_key=True)
    runner_id: str = Field(sa_type=String(64))
    host: str = Field(sa_type=String(255))
    pid: int
    process_token: str | None = Field(default=None, sa_type=String(64))
    acquired_at: datetime = Field(sa_type=UTCDateTime)
    heartbeat_at: datetime = Field(sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)


class Series(SQLModel, table=True):
    """Games between two submissions within a tournament; ``position`` orders them."""

    __tablename__ = "series"
    __table_args__ = (
        UniqueConstraint("tournament_id", "position", name="uq_series_tournament_position"),
        CheckConstraint("format IN ('standard', 'duplicate')", name="ck_series_format"),
        CheckConstraint("games_planned >= 0", name="ck_series_games_planned"),
    )

    id: int | None = Field(default=None, primary_key=True)
    tournament_id: int = Field(foreign_key="tournaments.id", index=True)
    position: int
    submission_a_id: int = Field(foreign_key="submissions.id", index=True)
    submission_b_id: int = Field(foreign_key="submissions.id", index=True)
    format: str = Field(sa_type=String(16))
    games_planned: int
    seed: int = Field(sa_type=BigInteger)
    status: str = Field(sa_type=String(16))
    started_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    ruleset: str = Field(
        default="default", sa_type=String(16), sa_column_kwargs={"server_default": "default"}
    )
    seats: list[int] | None = Field(default=None, sa_type=JSON)
    """Classic table: every seat's submission, seat 0 first (a and b are seats 0 and 1)."""

    @property
    def seat_ids(self) -> tuple[int, ...]:
        """Every seat's submission, seat 0 first, whatever the ruleset (a and b for pairs)."""
        return tuple(self.seats or (self.submission_a_id, self.submission_b_id))


class Game(SQLModel, table=True):
    """One played (or voided) game, with everything needed to replay and verify it.

    The stored form of the referee's one record (:class:`referee.record.GameRecord`):
    ``end_reason`` is a :class:`~referee.protocol.messages.GameEndReason` value, the forfeit's
    offending input and detail are separate columns, ``final_cover`` is the automatic final
    cover of a drawn game (not a move), and ``packed`` holds the deal and only what the bots
    played, a few bytes a move (:mod:`arena.db.gamecodec`; ``deck`` and ``actions`` unpack it).
    ``(series_id, number, attempt)`` is unique, and at most one attempt per
    ``(series_id, number)`` is not voided, so a resumed tournament cannot count a game twice.
    """

    __tablename__ = "games"
    __table_args__ = (
        UniqueConstraint("series_id", "number", "attempt", name="uq_games_series_number_attempt"),
        Index(
            "uq_games_counted",
            "series_id",
            "number",
            unique=True,
            sqlite_where=text("NOT voided"),
            postgresql_where=text("NOT voided"),
        ),
        CheckConstraint("dealer >= 0 AND dealer < players", name="ck_games_dealer"),
        CheckConstraint("first_mover >= 0 AND first_mover < players", name="ck_games_first_mover"),
        CheckConstraint(
            "result IS NULL OR result IN ('seat0', 'seat1', 'draw', 'table')",
            name="ck_games_result",
        ),
        CheckConstraint("voided OR result IS NOT NULL", name="ck_games_result_unless_voided"),
        CheckConstraint(
            "forfeit_seat IS NULL OR (forfeit_seat >= 0 AND forfeit_seat < players)",
            name="ck_games_forfeit_seat",
        ),
        CheckConstraint("players BETWEEN 2 AND 4", name="ck_games_players"),
        CheckConstraint("attempt >= 1", name="ck_games_attempt"),
    )

    id: int | None = Field(default=None, primary_key=True)
    series_id: int = Field(foreign_key="series.id", index=True)
    number: int
    attempt: int = 1
    dealer: int
    first_mover: int
    turn_limit: int
    packed: bytes = Field(sa_type=LargeBinary)
    """The deal and the moves in the compact form of :mod:`arena.db.gamecodec` (read them as
    :attr:`deck` and :attr:`actions`, or the whole game with ``arena.db.stored_record``)."""
    result: str | None = Field(default=None, sa_type=String(8))
    end_reason: str = Field(sa_type=String(64))
    forfeit_seat: int | None = None
    forfeit_input: str | None = Field(default=None, sa_type=Text)
    forfeit_detail: str | None = Field(default=None, sa_type=Text)
    final_cover: str | None = Field(default=None, sa_type=String(2))
    voided: bool = False
    void_reason: str | None = Field(default=None, sa_type=Text)
    referee_version: str = Field(sa_type=String(64))
    seat0_submission_id: int = Field(foreign_key="submissions.id", index=True)
    seat1_submission_id: int = Field(foreign_key="submissions.id", index=True)
    started_at: datetime = Field(sa_type=UTCDateTime)
    finished_at: datetime = Field(sa_type=UTCDateTime)
    recorded_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    ruleset: str = Field(
        default="default",
        sa_type=String(16),
        sa_column_kwargs={"server_default": "default"},
        index=True,
    )
    players: int = Field(default=2, sa_column_kwargs={"server_default": "2"}, index=True)
    """Seats at the table (2 for the default game)."""
    seats: list[int] | None = Field(default=None, sa_type=JSON)
    """Classic table: every seat's submission, seat 0 first (seat0/seat1 columns as well)."""
    loser_seat: int | None = None
    """Classic table: the seat that lost, if one did."""
    pairwise: list[list[int]] | None = Field(default=None, sa_type=JSON)
    """Classic table: the game's (winning seat, losing seat) pairs; ``result`` is ``table``
    when there are any, else ``draw``."""
    time_controls: str | None = Field(default=None, sa_type=Text)
    """Each seat's time control, compact text (see ``arena.db.games.controls_text``)."""
    """Each seat's time control, seat 0 first (``move_ms``, ``bank_ms``, ``increment_ms``,
    ``grace_ms``, ``clock``); NULL for games recorded before controls were kept per game."""

    @property
    def seat_ids(self) -> tuple[int, ...]:
        """Every seat's submission, seat 0 first, whatever the ruleset."""
        return tuple(self.seats or (self.seat0_submission_id, self.seat1_submission_id))

    def unpacked(self) -> Unpacked:
        """The deal and the moves, unpacked from ``packed``."""
        return unpack(self.packed, Table(self.dealer, self.turn_limit, self.ruleset, self.players))

    @property
    def move_count(self) -> int:
        """How many moves the bots played (read from ``packed`` without replaying them)."""
        return count_moves(self.packed)

    @property
    def deck(self) -> list[str]:
        """The deal, 36 card texts, index 0 the top of the deck (unpacked from ``packed``)."""
        return list(self.unpacked().deck)

    @property
    def actions(self) -> list[dict[str, Any]]:
        """What the bots played, as ``{"seat", "action", "seconds"}`` (and ``"cpu"`` where the
        bot's CPU time was counted), unpacked from ``packed``."""
        return [
            {"seat": m.seat, "action": m.action, "seconds": m.seconds}
            | ({} if m.cpu_seconds is None else {"cpu": m.cpu_seconds})
            for m in self.unpacked().moves
        ]


class RatingSnapshot(SQLModel, table=True):
    """One ratings fit: global (no tournament) or of one tournament."""

    __tablename__ = "rating_snapshots"

    id: int | None = Field(default=None, primary_key=True)
    tournament_id: int | None = Field(default=None, foreign_key="tournaments.id", index=True)
    model: str = Field(sa_type=String(64), index=True)
    parameters: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)


class RatingEntry(SQLModel, table=True):
    """One submission's line in a rating snapshot."""

    __tablename__ = "rating_entries"
    __table_args__ = (
        UniqueConstraint("snapshot_id", "submission_id", name="uq_rating_entries_snapshot_sub"),
    )

    id: int | None = Field(default=None, primary_key=True)
    snapshot_id: int = Field(foreign_key="rating_snapshots.id", index=True)
    submission_id: int = Field(foreign_key="submissions.id", index=True)
    rank: int
    rating: float
    error: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    games: int
    wins: int
    draws: int
    losses: int
    score: float
    extra: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)


# ---------------------------------------------------------------------------- arena service
# Tables of the arena as a service (migration 0004): authors and their API tokens, who owns
# which bot, the audit log, validation of uploaded versions, the ladder's leases on series,
# and the bots' captured output per game.


class Author(SQLModel, table=True):
    """A bot author who may submit over the network (created by the organiser)."""

    __tablename__ = "authors"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(sa_type=String(40), unique=True, index=True)
    password_hash: str | None = Field(default=None, sa_type=Text)
    disabled: bool = False
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class ApiToken(SQLModel, table=True):
    """An author's API token, stored as the sha256 of the secret (the secret is shown once)."""

    __tablename__ = "api_tokens"

    id: int | None = Field(default=None, primary_key=True)
    author_id: int = Field(foreign_key="authors.id", index=True)
    token_hash: str = Field(sa_type=String(64), unique=True, index=True)
    label: str = Field(default="", sa_type=String(100))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class BotOwner(SQLModel, table=True):
    """The author who owns a bot: only they may add versions, retire it or read its logs."""

    __tablename__ = "bot_owners"

    bot_id: int = Field(foreign_key="bots.id", primary_key=True)
    author_id: int = Field(foreign_key="authors.id", index=True)


class AuditEntry(SQLModel, table=True):
    """One audited event: a submission, a token used or refused, a login, a retirement."""

    __tablename__ = "audit_log"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)
    author_id: int | None = Field(default=None, foreign_key="authors.id", index=True)
    token_id: int | None = Field(default=None, foreign_key="api_tokens.id")
    action: str = Field(sa_type=String(40))
    outcome: str = Field(sa_type=String(16))
    target: str = Field(default="", sa_type=String(200))
    detail: str = Field(default="", sa_type=Text)
    remote: str = Field(default="", sa_type=String(64))


class SubmissionCheck(SQLModel, table=True):
    """The server's validation of an uploaded version: games against the reference bots."""

    __tablename__ = "submission_checks"

    submission_id: int = Field(foreign_key="submissions.id", primary_key=True)
    author_id: int | None = Field(default=None, foreign_key="authors.id", index=True)
    status: str = Field(sa_type=String(16), index=True)
    message: str = Field(default="", sa_type=Text)
    games: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class LadderSeries(SQLModel, table=True):
    """A series the ladder scheduled; a server playing it holds a lease it keeps renewing,
    so a series left by a killed server is taken over once the lease has run out."""

    __tablename__ = "ladder_series"

    series_id: int = Field(foreign_key="series.id", primary_key=True)
    claimed_by: str | None = Field(default=None, sa_type=String(64))
    lease_until: datetime | None = Field(default=None, sa_type=UTCDateTime, index=True)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class GameLog(SQLModel, table=True):
    """A bot's captured output (stdout and stderr tail) after one game, cut to a size limit."""

    __tablename__ = "game_logs"
    __table_args__ = (UniqueConstraint("game_id", "seat", name="uq_game_logs_game_seat"),)

    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="games.id", index=True)
    seat: int
    submission_id: int = Field(foreign_key="submissions.id", index=True)
    text: str = Field(default="", sa_type=Text)
    truncated: bool = False


class Invite(SQLModel, table=True):
    """A one-use invite code with which a person registers as an author (the organiser
    creates it); only the sha256 of the code is stored, like an API token's."""

    __tablename__ = "invites"

    id: int | None = Field(default=None, primary_key=True)
    code_hash: str = Field(sa_type=String(64), unique=True, index=True)
    label: str = Field(default="", sa_type=String(100))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    author_id: int | None = Field(default=None, foreign_key="authors.id")


# ---------------------------------------------------------------------------- live Elo state
# Live Elo kept up to date as games are recorded (migration 0006), so the leaderboard never
# replays every game. A scope is one board: all tournaments (tournament_id 0) or one
# tournament, of one ruleset and table size. See arena/db/elo.py.


class EloScope(SQLModel, table=True):
    """One board's live Elo bookkeeping: how many counted games it has applied.

    Its row is also the lock that orders concurrent updates of the board (PostgreSQL).
    """

    __tablename__ = "elo_scopes"

    tournament_id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    """The tournament, or 0 for the board of all tournaments."""
    ruleset: str = Field(sa_type=String(16), primary_key=True)
    players: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    games: int = 0
    last_game_id: int | None = None


class EloRatingRow(SQLModel, table=True):
    """A submission's live Elo on one board (see :class:`EloScope`)."""

    __tablename__ = "elo_ratings"

    tournament_id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    ruleset: str = Field(sa_type=String(16), primary_key=True)
    players: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    submission_id: int = Field(
        foreign_key="submissions.id", primary_key=True, sa_column_kwargs={"autoincrement": False}
    )
    rating: float
    games: int


class BoardPairRow(SQLModel, table=True):
    """One ordered pair's counted results on one board (see :class:`EloScope`), from the
    first's side: the first mover of the default game, the seat playing earlier at a
    classic table. Kept up to date with live Elo, so the standings read per-pair results
    without aggregating every game."""

    __tablename__ = "board_pairs"

    tournament_id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    ruleset: str = Field(sa_type=String(16), primary_key=True)
    players: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    first_submission_id: int = Field(
        foreign_key="submissions.id", primary_key=True, sa_column_kwargs={"autoincrement": False}
    )
    second_submission_id: int = Field(
        foreign_key="submissions.id", primary_key=True, sa_column_kwargs={"autoincrement": False}
    )
    wins: int
    draws: int
    losses: int


class BoardForfeitRow(SQLModel, table=True):
    """How many counted games of one board a submission forfeited, by how they ended."""

    __tablename__ = "board_forfeits"

    tournament_id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    ruleset: str = Field(sa_type=String(16), primary_key=True)
    players: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    submission_id: int = Field(
        foreign_key="submissions.id", primary_key=True, sa_column_kwargs={"autoincrement": False}
    )
    reason: str = Field(sa_type=String(64), primary_key=True)
    games: int


# The standings' aggregates (per-pair counts, forfeits, deal pairs) read only these columns
# of the counted games: a covering index lets the database scan it instead of the games'
# rows, which carry the deal and the moves (2 GB of rows against ~100 MB of index at 10^6
# games on SQLite). Declared apart from Game so the games' columns stay in one place.
Index(
    "ix_games_standings",
    col(Game.ruleset),
    col(Game.voided),
    col(Game.series_id),
    col(Game.number),
    col(Game.first_mover),
    col(Game.result),
    col(Game.seat0_submission_id),
    col(Game.seat1_submission_id),
    col(Game.forfeit_seat),
    col(Game.end_reason),
)

# The voided games alone (a few in a thousand), so counting them costs nothing however many
# games count: progress is then every game minus these. SQLite uses a partial index only
# for a query that repeats its condition, so the condition is spelled as SQLAlchemy renders
# ``col(Game.voided) == True`` there.
Index(
    "ix_games_voided",
    col(Game.series_id),
    sqlite_where=text("voided = 1"),
    postgresql_where=text("voided"),
)
