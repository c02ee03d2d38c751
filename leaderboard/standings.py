"""The leaderboard's numbers, from the database: the BayesElo rating of record, live Elo,
W/D/L, score, LOS over the next bot and forfeits by reason, per submission.

Everything the table, the JSON output and the web page show comes from :func:`standings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from arena.db import (
    Database,
    GameOutcome,
    NewRatingSnapshot,
    RatingLine,
    StoredSnapshot,
    forfeit_counts,
    game_outcomes,
    get_series,
    get_submission,
    get_tournament,
    pair_counts,
    save_rating_snapshot,
    table_forfeit_counts,
    table_games,
    table_outcomes,
    table_pair_counts,
)
from arena.db import bot_of as _bot_of
from leaderboard.ratings import (
    BayesEloFit,
    DealPair,
    Game,
    Outcome,
    PairCounts,
    RatingsError,
    elo_ratings,
    fit_bayeselo,
    paired_intervals,
    pentanomial_counts,
)

DEFAULT_OFFSET = 1500.0
"""Added to the centred BayesElo ratings for display, so that numbers look like Elo."""


@dataclass(frozen=True, slots=True)
class Standing:
    """One row of the leaderboard."""

    rank: int
    submission_id: int
    bot: str
    version: str
    rating: float | None
    interval: float | None
    elo: float
    elo_provisional: bool
    games: int
    wins: int
    draws: int
    losses: int
    score: float
    los_next: float | None
    forfeits: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "rank": self.rank,
            "submission_id": self.submission_id,
            "bot": self.bot,
            "version": self.version,
            "rating": self.rating,
            "interval": self.interval,
            "elo": self.elo,
            "elo_provisional": self.elo_provisional,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "score": self.score,
            "los_next": self.los_next,
            "forfeits": dict(self.forfeits),
        }


@dataclass(frozen=True, slots=True)
class PairingPentanomial:
    """Duplicate format: deal pairs of ``bot`` against ``opponent`` by points scored (0..2)."""

    bot: str
    opponent: str
    counts: tuple[int, int, int, int, int]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"bot": self.bot, "opponent": self.opponent, "counts": list(self.counts)}


@dataclass(frozen=True, slots=True)
class Leaderboard:
    """The standings and the fit they come from (``fit`` is None when nothing is ratable).

    When every counted game belongs to a complete duplicate deal pair, ``intervals`` of the
    rows are computed per deal pair (sandwich estimate: paired games are correlated) and
    ``pentanomials`` gives the deal-pair counts of each pairing.
    """

    rows: list[Standing]
    fit: BayesEloFit | None
    note: str = ""
    pentanomials: list[PairingPentanomial] = field(default_factory=list)
    paired: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: rows plus the fitted model parameters."""
        model = None
        if self.fit is not None:
            model = {
                "name": "bayeselo",
                "prior": self.fit.prior,
                "advantage": self.fit.advantage,
                "drawelo": self.fit.drawelo,
                "scale": self.fit.scale,
                "offset": self.fit.offset,
                "confidence": self.fit.confidence,
            }
        return {
            "model": model,
            "note": self.note,
            "intervals": "per deal pair" if self.paired else "per game",
            "rows": [r.to_dict() for r in self.rows],
            "pentanomials": [p.to_dict() for p in self.pentanomials],
        }


def board_kind(
    *, session: Session, tournament_id: int | None, ruleset: str | None, table_size: int | None
) -> tuple[str, int]:
    """(ruleset, table size) of a leaderboard: as asked, else the tournament's, else the
    default two-player game."""
    if ruleset is None and tournament_id is not None:
        config = get_tournament(tournament_id, session=session).config
        ruleset = str(config.get("ruleset", "default"))
        table_size = table_size or int(config.get("table_size", 2))
    ruleset = ruleset or "default"
    return ruleset, table_size or 2


def standings(
    *,
    session: Session,
    tournament_id: int | None = None,
    offset: float = DEFAULT_OFFSET,
    ruleset: str | None = None,
    table_size: int | None = None,
) -> Leaderboard:
    """The leaderboard of one tournament, or of every counted game when ``tournament_id`` is
    None. Ratings of record come from a batch BayesElo fit (order-independent); Elo replays
    the games in the order they finished.

    One leaderboard per ruleset and table size (``ruleset``/``table_size``; by default the
    tournament's, or the default game). A classic table's games enter as their pairwise
    record (rules-classic.md): each pair of seats with a result is one game of the fit, every
    other pair of a game a draw; W/D/L count those pairwise results.
    """
    kind = board_kind(
        session=session, tournament_id=tournament_id, ruleset=ruleset, table_size=table_size
    )
    if kind == ("default", 2):
        counts = pair_counts(session=session, tournament_id=tournament_id)
        outcomes = game_outcomes(session=session, tournament_id=tournament_id)
        forfeits = forfeit_counts(session=session, tournament_id=tournament_id)
    else:
        played = table_games(
            session=session, ruleset=kind[0], players=kind[1], tournament_id=tournament_id
        )
        counts = table_pair_counts(played)
        outcomes = table_outcomes(played)
        forfeits = table_forfeit_counts(played)
    mapping = {
        (str(c.first_submission_id), str(c.second_submission_id)): (c.wins, c.draws, c.losses)
        for c in counts
        if c.games
    }
    if not mapping:
        return Leaderboard([], None, "no games recorded yet")
    table = PairCounts.from_mapping(mapping)
    fit: BayesEloFit | None = None
    note = ""
    try:
        fit = fit_bayeselo(table, offset=offset)
    except RatingsError:
        # Few or lopsided results (e.g. one bot swept every game) leave the draw and
        # first-mover parameters without a finite maximum: fix them at BayesElo's defaults.
        try:
            fit = fit_bayeselo(table, offset=offset, fit_advantage=False, fit_drawelo=False)
            note = "too few results to fit draw and first-mover parameters: defaults used"
        except RatingsError as exc:
            note = f"no rating fit: {exc}"
    wins, draws, losses = table.player_totals()
    elo = {r.name: r for r in elo_ratings(_rated(o) for o in outcomes)}
    pairs = _deal_pairs(outcomes, session=session) if kind == ("default", 2) else None
    paired: dict[str, float] = {}
    if pairs is not None and fit is not None:
        try:
            by_name = paired_intervals(pairs, offset=offset).by_name()
            paired = {name: both[1] for name, both in by_name.items()}
        except RatingsError as exc:
            note = f"{note}; no paired intervals: {exc}".strip("; ")
    order = (
        [row.name for row in fit.table()]
        if fit is not None
        else sorted(table.names, key=lambda n: -elo[n].rating)
    )
    los = {row.name: row.los_next for row in fit.table()} if fit is not None else {}
    rows = []
    for rank, key in enumerate(order, start=1):
        k = table.names.index(key)
        submission = get_submission(int(key), session=session)
        games = int(wins[k] + draws[k] + losses[k])
        rows.append(
            Standing(
                rank=rank,
                submission_id=int(key),
                bot=_bot_of(submission, session=session).name,
                version=submission.version,
                rating=None if fit is None else fit.rating(key),
                interval=(
                    paired.get(key, float(fit.intervals[fit.index(key)]))
                    if fit is not None
                    else None
                ),
                elo=elo[key].rating,
                elo_provisional=elo[key].provisional,
                games=games,
                wins=int(wins[k]),
                draws=int(draws[k]),
                losses=int(losses[k]),
                score=(int(wins[k]) + int(draws[k]) / 2) / games if games else 0.0,
                los_next=los.get(key),
                forfeits=dict(forfeits.get(int(key), {})),
            )
        )
    labels = {str(r.submission_id): f"{r.bot} {r.version}" for r in rows}
    pentanomials = [
        PairingPentanomial(
            labels.get(p.player, p.player), labels.get(p.opponent, p.opponent), p.counts
        )
        for p in pentanomial_counts(pairs or [])
    ]
    return Leaderboard(rows, fit, note, pentanomials, paired=bool(paired))


def _deal_pairs(outcomes: list[GameOutcome], *, session: Session) -> list[DealPair] | None:
    """The deal pairs of the counted games when all are complete duplicate pairs, else None."""
    formats: dict[int, str] = {}
    by_game: dict[tuple[int, int], GameOutcome] = {}
    for o in outcomes:
        if o.series_id not in formats:
            formats[o.series_id] = get_series(o.series_id, session=session).format
        by_game[(o.series_id, o.number)] = o
    if not outcomes or set(formats.values()) != {"duplicate"}:
        return None
    pairs = []
    for (series_id, number), first in sorted(by_game.items()):
        if number % 2 == 0:
            continue
        second = by_game.get((series_id, number + 1))
        if second is None:
            return None  # an incomplete pair: intervals per game until it is played
        pairs.append(DealPair(_rated(first), _rated(second)))
    return pairs


def _rated(o: GameOutcome) -> Game:
    outcome = Outcome.from_score(o.first_score)
    return Game(str(o.first_submission_id), str(o.second_submission_id), outcome)


def refit_and_store(db: Database, *, tournament_id: int | None = None) -> StoredSnapshot | None:
    """Fit from the database and store a rating snapshot; None when nothing is ratable.

    The fit is computed in a read session (it takes no write lock, so game writers never
    wait for it, however many games there are); only the finished snapshot is written, in
    one short transaction. A game recorded meanwhile is simply in the next fit.
    """
    with db.read_session() as session:
        board = standings(session=session, tournament_id=tournament_id)
    if board.fit is None:
        return None
    snapshot = NewRatingSnapshot(
        model="bayeselo",
        tournament_id=tournament_id,
        parameters=board.to_dict()["model"],
        entries=[
            RatingLine(
                submission_id=row.submission_id,
                rank=row.rank,
                rating=row.rating if row.rating is not None else 0.0,
                games=row.games,
                wins=row.wins,
                draws=row.draws,
                losses=row.losses,
                score=row.score,
                error=row.interval,
                ci_low=None if row.interval is None else (row.rating or 0) - row.interval,
                ci_high=None if row.interval is None else (row.rating or 0) + row.interval,
                extra={"elo": row.elo, "los_next": row.los_next},
            )
            for row in board.rows
        ],
    )
    with db.session() as session:
        return save_rating_snapshot(snapshot, session=session)
