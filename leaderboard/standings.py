"""The leaderboard's numbers, from the database: the BayesElo rating of record, live Elo,
W/D/L, score, LOS over the next bot and forfeits by reason, per submission.

They come from aggregates (per-pair counts, forfeits and duplicate deal pairs grouped by the
database) and from the live Elo the database keeps as games are recorded, so a board of
10^6 games costs a few grouped scans and one fit, not a pass over the games in Python.

Everything the table, the JSON output and the web page show comes from :func:`standings`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlmodel import Session, col, select

from arena.db import (
    Database,
    NewRatingSnapshot,
    RatingEntry,
    RatingLine,
    RatingSnapshot,
    StoredSnapshot,
    get_tournament,
    save_rating_snapshot,
    submission_labels,
    table_forfeit_counts,
    table_games,
    table_pair_counts,
)
from arena.db.elo import board_tallies, elo_board, replayed_elo
from arena.db.results import (
    DealPairKind,
    aggregated_forfeit_counts,
    aggregated_pair_counts,
    deal_pair_counts,
)
from referee.rules.errors import InvalidDeckError
from referee.rules.rulesets import DEFAULT_RULESET, check_ruleset

if TYPE_CHECKING:
    from leaderboard.ratings import BayesEloFit, DealPair

# The ratings package (NumPy, and SciPy for a fit) is imported only where a board needs it:
# a board read from a fresh snapshot of two-player standard games needs neither.

DEFAULT_OFFSET = 1500.0
"""Added to the centred BayesElo ratings for display, so that numbers look like Elo."""

FIT_VERSION = 1
"""Part of every fit's inputs key: bump it whenever the fit gives other numbers for the same
counts (the algorithm, its defaults, the intervals), so that older snapshots stop counting
as fresh."""

SNAPSHOTS_CHECKED = 8
"""How many of the newest snapshots (of any scope) a board compares its inputs with, besides
the newest of its own scope; a game recorded since changes the inputs, so only recent ones
can match."""


@dataclass(frozen=True, slots=True)
class FitModel:
    """The parameters of the BayesElo fit a board comes from (display units for ``scale``
    and ``offset``, internal Elo units for ``advantage`` and ``drawelo``)."""

    prior: float
    advantage: float
    drawelo: float
    scale: float
    offset: float
    confidence: float

    @classmethod
    def of(cls, fit: BayesEloFit) -> FitModel:
        """The parameters of ``fit``."""
        return cls(fit.prior, fit.advantage, fit.drawelo, fit.scale, fit.offset, fit.confidence)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as stored in a snapshot's parameters."""
        return {
            "name": "bayeselo",
            "prior": self.prior,
            "advantage": self.advantage,
            "drawelo": self.drawelo,
            "scale": self.scale,
            "offset": self.offset,
            "confidence": self.confidence,
        }


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
    """The standings and the parameters of the fit they come from (``fit`` is None when
    nothing is ratable).

    When every counted game belongs to a complete duplicate deal pair, ``intervals`` of the
    rows are computed per deal pair (sandwich estimate: paired games are correlated) and
    ``pentanomials`` gives the deal-pair counts of each pairing.
    """

    rows: list[Standing]
    fit: FitModel | None
    note: str = ""
    pentanomials: list[PairingPentanomial] = field(default_factory=list)
    paired: bool = False
    inputs: str = ""  # fit_inputs_key of the board ("" when built by hand)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: rows plus the fitted model parameters."""
        model = None if self.fit is None else self.fit.to_dict()
        return {
            "model": model,
            "note": self.note,
            "intervals": "per deal pair" if self.paired else "per game",
            "rows": [r.to_dict() for r in self.rows],
            "pentanomials": [p.to_dict() for p in self.pentanomials],
        }


class InvalidFilterError(ValueError):
    """A leaderboard filter no game can match: a ruleset the rules core does not know, or a
    table size the board's ruleset does not seat. The message quotes the value."""


def resolve_board_kind(
    ruleset: str | None,
    table_size: int | None,
    tournament_config: Mapping[str, Any] | None = None,
) -> tuple[str, int]:
    """(ruleset, table size) of a leaderboard: as asked, else the tournament's (given its
    config), else the default two-player game; InvalidFilterError if no game can match.

    The one check of a board's filters, for every caller (the CLI, the web API)."""
    if ruleset is None and tournament_config is not None:
        ruleset = str(tournament_config.get("ruleset", DEFAULT_RULESET))
        if table_size is None:
            table_size = int(tournament_config.get("table_size", 2))
    kind = DEFAULT_RULESET if ruleset is None else ruleset
    size = 2 if table_size is None else table_size
    try:
        return check_ruleset(kind, size), size
    except InvalidDeckError as exc:
        raise InvalidFilterError(str(exc)) from None


def board_kind(
    *, session: Session, tournament_id: int | None, ruleset: str | None, table_size: int | None
) -> tuple[str, int]:
    """(ruleset, table size) of a leaderboard: as asked, else the tournament's, else the
    default two-player game (:func:`resolve_board_kind`, which may raise InvalidFilterError)."""
    config = None
    if ruleset is None and tournament_id is not None:
        config = get_tournament(tournament_id, session=session).config
    return resolve_board_kind(ruleset, table_size, config)


def standings(
    *,
    session: Session,
    tournament_id: int | None = None,
    offset: float = DEFAULT_OFFSET,
    ruleset: str | None = None,
    table_size: int | None = None,
    reuse: bool = True,
) -> Leaderboard:
    """The leaderboard of one tournament, or of every counted game when ``tournament_id`` is
    None. Ratings of record come from a batch BayesElo fit (order-independent) of per-pair
    counts the database aggregates; Elo is the live Elo the database keeps up to date as
    games are recorded (applied in the order they were recorded).

    One leaderboard per ruleset and table size (``ruleset``/``table_size``; by default the
    tournament's, or the default game). A classic table's games enter as their pairwise
    record (rules-classic.md): each pair of seats with a result is one game of the fit (two
    winners have no result between themselves; seats still holding cards at the turn limit,
    and every pair in a drawn game, draw); W/D/L count those pairwise results.

    The cost does not grow with the number of games beyond the database's aggregates: no
    game is loaded (except a classic table's light columns) and nothing is queried per
    series or per submission.

    With ``reuse`` (the default) a stored rating snapshot whose fit had exactly these inputs
    (:func:`fit_inputs_key`) gives the ratings, intervals, LOS and model parameters instead
    of a new fit: the fit is a pure function of its inputs, so the board is the same, and
    SciPy is not even imported. ``reuse=False`` always fits.
    """
    kind = board_kind(
        session=session, tournament_id=tournament_id, ruleset=ruleset, table_size=table_size
    )
    kinds: list[DealPairKind] | None = None
    if kind == ("default", 2):
        tallies = board_tallies(
            session=session, tournament_id=tournament_id, ruleset=kind[0], players=kind[1]
        )
        if tallies is not None:  # the usual case: recorded through arena.db
            counts, forfeits, counted = tallies.pairs, tallies.forfeits, tallies.games
        else:
            counts = aggregated_pair_counts(session=session, tournament_id=tournament_id)
            forfeits = aggregated_forfeit_counts(session=session, tournament_id=tournament_id)
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
    names = sorted({name for pair in mapping for name in pair})  # as PairCounts orders them
    pairs = _deal_pairs(kinds) if kinds is not None else None
    weights = [k.count for k in kinds] if kinds is not None else None
    inputs = fit_inputs_key(kind, mapping, kinds, offset)
    ranked = _stored_ranking(session, inputs, tournament_id, names) if reuse else None
    if ranked is None:
        ranked = _fitted_ranking(mapping, pairs, weights, offset)
    fit, note = ranked.model, ranked.note
    totals = _player_totals(mapping)
    order = ranked.order if fit is not None else sorted(names, key=lambda n: -elo[n].rating)
    labels = submission_labels(session=session)
    rows = []
    for rank, key in enumerate(order, start=1):
        wins, draws, losses = totals[key]
        games = wins + draws + losses
        bot, version = labels[int(key)]
        rows.append(
            Standing(
                rank=rank,
                submission_id=int(key),
                bot=bot,
                version=version,
                rating=ranked.ratings.get(key),
                interval=ranked.intervals.get(key),
                elo=elo[key].rating,
                elo_provisional=elo[key].provisional,
                games=games,
                wins=wins,
                draws=draws,
                losses=losses,
                score=(wins + draws / 2) / games if games else 0.0,
                los_next=ranked.los.get(key),
                forfeits=dict(forfeits.get(int(key), {})),
            )
        )
    pentanomials = _pentanomials(pairs, weights, rows) if pairs else []
    return Leaderboard(rows, fit, note, pentanomials, paired=ranked.paired, inputs=inputs)


def fit_inputs_key(
    kind: tuple[str, int],
    mapping: dict[tuple[str, str], tuple[int, int, int]],
    kinds: Sequence[DealPairKind] | None,
    offset: float,
) -> str:
    """A digest of everything a board's fit depends on: the ruleset and table size, the
    per-pair counts, the deal pairs (in the database's order, which is sorted), the display
    offset and :data:`FIT_VERSION`. Equal keys mean equal fits."""
    pairs = (
        None
        if kinds is None
        else [
            [
                k.first_submission_id,
                k.second_submission_id,
                k.first_score,
                k.second_first_submission_id,
                k.second_second_submission_id,
                k.second_score,
                k.count,
            ]
            for k in kinds
        ]
    )
    counts = sorted((a, b, int(w), int(d), int(lo)) for (a, b), (w, d, lo) in mapping.items())
    inputs = [FIT_VERSION, list(kind), float(offset), counts, pairs]
    return hashlib.sha256(json.dumps(inputs).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class _Ranking:
    """What a board takes from its fit: the order and each bot's numbers (by name)."""

    model: FitModel | None
    order: list[str]
    ratings: dict[str, float]
    intervals: dict[str, float]
    los: dict[str, float | None]
    note: str
    paired: bool


def _player_totals(
    mapping: dict[tuple[str, str], tuple[int, int, int]],
) -> dict[str, tuple[int, int, int]]:
    """Per bot: wins, draws and losses over both colours (``PairCounts.player_totals``
    without NumPy)."""
    totals: dict[str, list[int]] = {}
    for (first, second), (w, d, lo) in mapping.items():
        a = totals.setdefault(first, [0, 0, 0])
        b = totals.setdefault(second, [0, 0, 0])
        a[0], a[1], a[2] = a[0] + w, a[1] + d, a[2] + lo
        b[0], b[1], b[2] = b[0] + lo, b[1] + d, b[2] + w
    return {name: (w, d, lo) for name, (w, d, lo) in totals.items()}


def _pentanomials(
    pairs: list[DealPair], weights: list[int] | None, rows: list[Standing]
) -> list[PairingPentanomial]:
    from leaderboard.ratings import pentanomial_counts

    names = {str(r.submission_id): f"{r.bot} {r.version}" for r in rows}
    return [
        PairingPentanomial(
            names.get(p.player, p.player), names.get(p.opponent, p.opponent), p.counts
        )
        for p in pentanomial_counts(pairs, weights)
    ]


def _fitted_ranking(
    mapping: dict[tuple[str, str], tuple[int, int, int]],
    pairs: list[DealPair] | None,
    weights: list[int] | None,
    offset: float,
) -> _Ranking:
    from leaderboard.ratings import PairCounts, RatingsError, fit_bayeselo, paired_intervals

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
    if fit is None:
        return _Ranking(None, [], {}, {}, {}, note, paired=False)
    paired: dict[str, float] = {}
    if pairs:
        try:
            by_name = paired_intervals(pairs, weights=weights, offset=offset).by_name()
            paired = {name: both[1] for name, both in by_name.items()}
        except RatingsError as exc:
            note = f"{note}; no paired intervals: {exc}".strip("; ")
    rows = fit.table()
    return _Ranking(
        model=FitModel.of(fit),
        order=[row.name for row in rows],
        ratings={row.name: fit.rating(row.name) for row in rows},
        intervals={
            row.name: paired.get(row.name, float(fit.intervals[fit.index(row.name)]))
            for row in rows
        },
        los={row.name: row.los_next for row in rows},
        note=note,
        paired=bool(paired),
    )


def _stored_ranking(
    session: Session, inputs: str, tournament_id: int | None, names: Sequence[str]
) -> _Ranking | None:
    """The ranking of a stored snapshot fitted from exactly ``inputs``, or None.

    The newest snapshot of the board's own scope is checked, and the newest few of any
    scope: a tournament's snapshot serves the global board too when that tournament holds
    every counted game (the inputs, not the scope, decide)."""
    newest = (
        select(RatingSnapshot)
        .where(RatingSnapshot.model == "bayeselo")
        .order_by(col(RatingSnapshot.created_at).desc(), col(RatingSnapshot.id).desc())
    )
    scope = col(RatingSnapshot.tournament_id)
    own = newest.where(scope.is_(None) if tournament_id is None else scope == tournament_id)
    candidates = [*session.exec(own.limit(1)), *session.exec(newest.limit(SNAPSHOTS_CHECKED))]
    snapshot = next((s for s in candidates if s.parameters.get("inputs") == inputs), None)
    if snapshot is None:
        return None
    entries = list(
        session.exec(
            select(RatingEntry)
            .where(RatingEntry.snapshot_id == snapshot.id)
            .order_by(col(RatingEntry.rank), col(RatingEntry.submission_id))
        )
    )
    by_name = {str(e.submission_id): e for e in entries}
    if sorted(by_name) != sorted(names) or any(e.error is None for e in entries):
        return None  # not a snapshot this code wrote for these inputs: fit instead
    params = snapshot.parameters
    model = FitModel(
        prior=float(params["prior"]),
        advantage=float(params["advantage"]),
        drawelo=float(params["drawelo"]),
        scale=float(params["scale"]),
        offset=float(params["offset"]),
        confidence=float(params["confidence"]),
    )
    return _Ranking(
        model=model,
        order=[str(e.submission_id) for e in entries],
        ratings={name: e.rating for name, e in by_name.items()},
        intervals={name: float(e.error) for name, e in by_name.items() if e.error is not None},
        los={name: e.extra.get("los_next") for name, e in by_name.items()},
        note=str(params.get("note", "")),
        paired=bool(params.get("paired", False)),
    )


def _deal_pairs(kinds: list[DealPairKind]) -> list[DealPair]:
    """The database's deal-pair kinds as the ratings' deal pairs (one per kind)."""
    from leaderboard.ratings import DealPair, Game, Outcome

    return [
        DealPair(
            Game(
                str(kind.first_submission_id),
                str(kind.second_submission_id),
                Outcome.from_score(kind.first_score),
            ),
            Game(
                str(kind.second_first_submission_id),
                str(kind.second_second_submission_id),
                Outcome.from_score(kind.second_score),
            ),
        )
        for kind in kinds
    ]


def refit_and_store(db: Database, *, tournament_id: int | None = None) -> StoredSnapshot | None:
    """Fit from the database and store a rating snapshot; None when nothing is ratable.

    The fit is computed in a read session (it takes no write lock, so game writers never
    wait for it, however many games there are); only the finished snapshot is written, in
    one short transaction. A game recorded meanwhile is simply in the next fit.
    """
    with db.read_session() as session:
        board = standings(session=session, tournament_id=tournament_id, reuse=False)
    if board.fit is None:
        return None
    snapshot = NewRatingSnapshot(
        model="bayeselo",
        tournament_id=tournament_id,
        # The inputs key lets a later board with the same inputs reuse this fit (standings);
        # the note and the paired flag are part of what that board shows.
        parameters={
            **board.fit.to_dict(),
            "inputs": board.inputs,
            "note": board.note,
            "paired": board.paired,
        },
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
