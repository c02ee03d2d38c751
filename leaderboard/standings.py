"""The leaderboard's numbers, from the database: the BayesElo rating of record, live Elo,
W/D/L, score, LOS over the next bot and forfeits by reason, per submission.

They come from aggregates (per-pair counts, forfeits and duplicate deal pairs grouped by the
database) and from the live Elo the database keeps as games are recorded, so a board of
10^6 games costs a few grouped scans and one fit, not a pass over the games in Python.

Everything the table, the JSON output and the web page show comes from :func:`standings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from arena.db import (
    Database,
    NewRatingSnapshot,
    RatingLine,
    StoredSnapshot,
    forfeit_counts,
    get_tournament,
    pair_counts,
    save_rating_snapshot,
    submission_labels,
    table_forfeit_counts,
    table_games,
    table_pair_counts,
)
from arena.db.elo import elo_board, replayed_elo
from arena.db.results import DealPairKind, deal_pair_counts
from leaderboard.ratings import (
    BayesEloFit,
    DealPair,
    Game,
    Outcome,
    PairCounts,
    RatingsError,
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
    None. Ratings of record come from a batch BayesElo fit (order-independent) of per-pair
    counts the database aggregates; Elo is the live Elo the database keeps up to date as
    games are recorded (applied in the order they were recorded).

    One leaderboard per ruleset and table size (``ruleset``/``table_size``; by default the
    tournament's, or the default game). A classic table's games enter as their pairwise
    record (rules-classic.md): each pair of seats with a result is one game of the fit, every
    other pair of a game a draw; W/D/L count those pairwise results.

    The cost does not grow with the number of games beyond the database's aggregates: no
    game is loaded (except a classic table's light columns) and nothing is queried per
    series or per submission.
    """
    kind = board_kind(
        session=session, tournament_id=tournament_id, ruleset=ruleset, table_size=table_size
    )
    kinds: list[DealPairKind] | None = None
    if kind == ("default", 2):
        counts = pair_counts(session=session, tournament_id=tournament_id)
        forfeits = forfeit_counts(session=session, tournament_id=tournament_id)
        counted = sum(c.games for c in counts)
        kinds = deal_pair_counts(session=session, tournament_id=tournament_id)
    else:
        played = table_games(
            session=session, ruleset=kind[0], players=kind[1], tournament_id=tournament_id
        )
        counts = table_pair_counts(played)
        forfeits = table_forfeit_counts(played)
        counted = len(played)
    mapping = {
        (str(c.first_submission_id), str(c.second_submission_id)): (c.wins, c.draws, c.losses)
        for c in counts
        if c.games
    }
    if not mapping:
        return Leaderboard([], None, "no games recorded yet")
    live = elo_board(session=session, tournament_id=tournament_id, ruleset=kind[0], players=kind[1])
    if live.games != counted:
        # The stored state does not account for every counted game (rows written around
        # record_game): replay them, which is slow but right.
        live = replayed_elo(
            session=session, tournament_id=tournament_id, ruleset=kind[0], players=kind[1]
        )
    elo = {str(sid): entry for sid, entry in live.entries.items()}
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
    pairs = [_deal_pair(k) for k in kinds] if kinds is not None else None
    weights = [k.count for k in kinds] if kinds is not None else None
    paired: dict[str, float] = {}
    if pairs and fit is not None:
        try:
            by_name = paired_intervals(pairs, weights=weights, offset=offset).by_name()
            paired = {name: both[1] for name, both in by_name.items()}
        except RatingsError as exc:
            note = f"{note}; no paired intervals: {exc}".strip("; ")
    order = (
        [row.name for row in fit.table()]
        if fit is not None
        else sorted(table.names, key=lambda n: -elo[n].rating)
    )
    los = {row.name: row.los_next for row in fit.table()} if fit is not None else {}
    labels = submission_labels(session=session)
    rows = []
    for rank, key in enumerate(order, start=1):
        k = table.names.index(key)
        games = int(wins[k] + draws[k] + losses[k])
        bot, version = labels[int(key)]
        rows.append(
            Standing(
                rank=rank,
                submission_id=int(key),
                bot=bot,
                version=version,
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
    names = {str(r.submission_id): f"{r.bot} {r.version}" for r in rows}
    pentanomials = [
        PairingPentanomial(
            names.get(p.player, p.player), names.get(p.opponent, p.opponent), p.counts
        )
        for p in pentanomial_counts(pairs or [], weights)
    ]
    return Leaderboard(rows, fit, note, pentanomials, paired=bool(paired))


def _deal_pair(kind: DealPairKind) -> DealPair:
    first = Game(
        str(kind.first_submission_id),
        str(kind.second_submission_id),
        Outcome.from_score(kind.first_score),
    )
    second = Game(
        str(kind.second_first_submission_id),
        str(kind.second_second_submission_id),
        Outcome.from_score(kind.second_score),
    )
    return DealPair(first, second)


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
