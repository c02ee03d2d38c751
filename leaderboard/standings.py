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
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from arena.db import (
    Database,
    Game,
    NewRatingSnapshot,
    RatingEntry,
    RatingLine,
    RatingSnapshot,
    Series,
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
    DealUnits,
    SingleGameKind,
    aggregated_forfeit_counts,
    aggregated_pair_counts,
    deal_units,
)
from leaderboard.formatting import board_flags, board_name, confidence_percent
from referee.rules.errors import InvalidDeckError
from referee.rules.rulesets import DEFAULT_RULESET, check_ruleset

if TYPE_CHECKING:
    from leaderboard.ratings import BayesEloFit, DealPair
    from leaderboard.ratings import Game as RatedGame

# The ratings package (NumPy, and SciPy for a fit) is imported only where a board needs it:
# a board read from a fresh snapshot of two-player standard games needs neither.

DEFAULT_OFFSET = 1500.0
"""Added to the centred BayesElo ratings for display, so that numbers look like Elo."""

FIT_VERSION = 3
"""Part of every fit's inputs key: bump it whenever the fit gives other numbers for the same
counts (the algorithm, its defaults, the intervals), so that older snapshots stop counting
as fresh. 2: LOS from the paired covariance on duplicate boards, single games of unfinished
deals, ties ordered by submission id, the fallback's note. 3: a paired LOS between bots
whose difference has no spread is 0.5 for a tie, not a quotient of rounding noise."""

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

    @property
    def confidence_text(self) -> str:
        """The intervals' level as a percentage with every digit it has (``95%``,
        ``99.95%``): rounded to whole percents 0.9995 would read "100%"."""
        return confidence_percent(self.confidence)

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
class BoardGames:
    """A board (ruleset and table size) and how many counted games it holds."""

    ruleset: str
    table_size: int
    games: int

    @property
    def name(self) -> str:
        """``default game`` or ``classic, table of 3``."""
        return board_name(self.ruleset, self.table_size)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"ruleset": self.ruleset, "table_size": self.table_size, "games": self.games}


@dataclass(frozen=True, slots=True)
class Leaderboard:
    """The standings and the parameters of the fit they come from (``fit`` is None when
    nothing is ratable).

    ``ruleset`` and ``table_size`` name the board shown and ``games`` counts its counted
    games (a classic table's game once, however many pairwise results it gave). When the
    board has no game, ``other_boards`` lists the boards (within the same tournament, or
    all) that have some.

    On a duplicate board (every counted game in a duplicate series) ``paired`` is true: the
    rows' intervals and LOS treat the deal pair as the unit (sandwich estimate: paired games
    are correlated), ``single_games`` games whose deal is not complete yet count as units
    of their own, and ``pentanomials`` gives the complete deal pairs of each pairing.
    """

    rows: list[Standing]
    fit: FitModel | None
    note: str = ""
    pentanomials: list[PairingPentanomial] = field(default_factory=list)
    paired: bool = False
    inputs: str = ""  # fit_inputs_key of the board ("" when built by hand)
    ruleset: str = DEFAULT_RULESET
    table_size: int = 2
    games: int = 0
    single_games: int = 0
    other_boards: list[BoardGames] = field(default_factory=list)

    @property
    def intervals(self) -> str:
        """What the intervals (and the LOS) treat as independent: ``per deal pair`` or
        ``per game``."""
        return "per deal pair" if self.paired else "per game"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: rows plus the fitted model parameters."""
        model = None if self.fit is None else self.fit.to_dict()
        return {
            "model": model,
            "note": self.note,
            "board": {"ruleset": self.ruleset, "table_size": self.table_size, "games": self.games},
            "intervals": self.intervals,
            "single_games": self.single_games,
            "rows": [r.to_dict() for r in self.rows],
            "pentanomials": [p.to_dict() for p in self.pentanomials],
            "other_boards": [b.to_dict() for b in self.other_boards],
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

    When that board has no game but others do: if the caller left the board open (no
    ``ruleset`` or no ``table_size``, and no tournament whose settings decide it) and
    exactly one board matching what was given has games, that board is shown; otherwise
    the empty board comes with a note naming the boards that have games and the options
    that show them (and ``other_boards`` lists them).

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
    board = _board(session, tournament_id, kind, offset, reuse)
    if board.games:
        return board
    found = boards_with_games(session=session, tournament_id=tournament_id)
    others = [b for b in found if (b.ruleset, b.table_size) != kind]
    if not others:
        return board
    # A tournament's settings pick its board as surely as the options do.
    open_choice = (ruleset is None and tournament_id is None) or (
        ruleset is not None and table_size is None
    )
    matching = [
        b
        for b in others
        if (ruleset is None or b.ruleset == ruleset)
        and (table_size is None or b.table_size == table_size)
    ]
    if open_choice and len(matching) == 1:
        # The only board with games among those the caller left open: show it rather than
        # an empty table (the title and JSON say which board it is).
        only = (matching[0].ruleset, matching[0].table_size)
        return _board(session, tournament_id, only, offset, reuse)
    where = "; ".join(
        f"{b.name}: {b.games} games ({board_flags(b.ruleset, b.table_size)})" for b in others
    )
    note = f"no games on this board ({board_name(*kind)}); games were recorded on: {where}"
    return Leaderboard(
        [], None, note, ruleset=kind[0], table_size=kind[1], games=0, other_boards=others
    )


def boards_with_games(*, session: Session, tournament_id: int | None = None) -> list[BoardGames]:
    """Every board (ruleset, table size) with counted games in the tournament (or in all),
    default game first, then by ruleset and size: one grouped count over the games."""
    query = (
        select(col(Game.ruleset), col(Game.players), func.count())
        .select_from(Game)
        .where(col(Game.voided).is_(False))
        .group_by(col(Game.ruleset), col(Game.players))
    )
    if tournament_id is not None:
        query = query.join(Series, col(Series.id) == col(Game.series_id)).where(
            col(Series.tournament_id) == tournament_id
        )
    found = [
        BoardGames(str(r), int(p), int(n))
        for r, p, n in session.connection().execute(query)
        if int(n) > 0
    ]
    return sorted(found, key=lambda b: (b.ruleset != DEFAULT_RULESET, b.ruleset, b.table_size))


def voided_games(*, session: Session, tournament_id: int | None, kind: tuple[str, int]) -> int:
    """How many voided games the board ``kind`` (ruleset, table size) holds in the
    tournament (or in all): one count over the games."""
    query = (
        select(func.count())
        .select_from(Game)
        .where(
            col(Game.voided).is_(True),
            col(Game.ruleset) == kind[0],
            col(Game.players) == kind[1],
        )
    )
    if tournament_id is not None:
        query = query.join(Series, col(Series.id) == col(Game.series_id)).where(
            col(Series.tournament_id) == tournament_id
        )
    return int(session.connection().execute(query).scalar_one())


def _board(
    session: Session,
    tournament_id: int | None,
    kind: tuple[str, int],
    offset: float,
    reuse: bool,
) -> Leaderboard:
    """The standings of one board (see :func:`standings`)."""
    units: DealUnits | None = None
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
        units = deal_units(session=session, tournament_id=tournament_id, counted=counted)
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
        voided = voided_games(session=session, tournament_id=tournament_id, kind=kind)
        # Voided games are recorded: "none recorded yet" would hide that all of them were.
        note = (
            f"no counted games: the {voided} game{'s' if voided != 1 else ''} recorded on this"
            f" board {'were' if voided != 1 else 'was'} voided"
            if voided
            else "no games recorded yet"
        )
        return Leaderboard([], None, note, ruleset=kind[0], table_size=kind[1], games=0)
    live = elo_board(session=session, tournament_id=tournament_id, ruleset=kind[0], players=kind[1])
    if live.games != counted:
        # The stored state does not account for every counted game (rows written around
        # record_game): replay them, which is slow but right.
        live = replayed_elo(
            session=session, tournament_id=tournament_id, ruleset=kind[0], players=kind[1]
        )
    elo = {str(sid): entry for sid, entry in live.entries.items()}
    labels = submission_labels(session=session)
    sids = sorted({int(name) for pair in mapping for name in pair})
    # The fit names every bot "name version", so that its messages (disconnected groups, a
    # parameter that cannot be fitted) name bots as the table does; the repr() quoting of
    # those messages escapes any control character a version may hold.
    label = {sid: f"{labels[sid][0]} {labels[sid][1]}" for sid in sids}
    inputs = fit_inputs_key(kind, mapping, units, offset)
    ranked = _stored_ranking(session, inputs, tournament_id, sids) if reuse else None
    if ranked is None:
        ranked = _fitted_ranking(mapping, units, offset, label)
    fit, note = ranked.model, ranked.note
    totals = _player_totals(mapping)
    if fit is not None:
        order = ranked.order
    else:
        order = sorted(sids, key=lambda sid: (-elo[str(sid)].rating, sid))
    rows = []
    for rank, sid in enumerate(order, start=1):
        key = str(sid)
        wins, draws, losses = totals[key]
        games = wins + draws + losses
        bot, version = labels[sid]
        rows.append(
            Standing(
                rank=rank,
                submission_id=sid,
                bot=bot,
                version=version,
                rating=ranked.ratings.get(sid),
                interval=ranked.intervals.get(sid),
                elo=elo[key].rating,
                elo_provisional=elo[key].provisional,
                games=games,
                wins=wins,
                draws=draws,
                losses=losses,
                score=(wins + draws / 2) / games if games else 0.0,
                los_next=ranked.los.get(sid),
                forfeits=dict(forfeits.get(sid, {})),
            )
        )
    pentanomials = _pentanomials(units, label) if units is not None and units.pairs else []
    return Leaderboard(
        rows,
        fit,
        note,
        pentanomials,
        paired=ranked.paired,
        inputs=inputs,
        ruleset=kind[0],
        table_size=kind[1],
        games=counted,
        single_games=ranked.single_games,
    )


def fit_inputs_key(
    kind: tuple[str, int],
    mapping: dict[tuple[str, str], tuple[int, int, int]],
    units: DealUnits | None,
    offset: float,
) -> str:
    """A digest of everything a board's fit depends on: the ruleset and table size, the
    per-pair counts, the duplicate units (deal pairs and single games, in the database's
    order, which is sorted), the display offset and :data:`FIT_VERSION`. Equal keys mean
    equal fits."""
    pairs = (
        None
        if units is None
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
            for k in units.pairs
        ]
        + [
            [k.first_submission_id, k.second_submission_id, k.first_score, k.count]
            for k in units.singles
        ]
    )
    counts = sorted((a, b, int(w), int(d), int(lo)) for (a, b), (w, d, lo) in mapping.items())
    inputs = [FIT_VERSION, list(kind), float(offset), counts, pairs]
    return hashlib.sha256(json.dumps(inputs).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class _Ranking:
    """What a board takes from its fit: the order and each bot's numbers, by submission."""

    model: FitModel | None
    order: list[int]
    ratings: dict[int, float]
    intervals: dict[int, float]
    los: dict[int, float | None]
    note: str
    paired: bool
    single_games: int = 0


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


def _pentanomials(units: DealUnits, label: Mapping[int, str]) -> list[PairingPentanomial]:
    from leaderboard.ratings import pentanomial_counts

    return [
        PairingPentanomial(p.player, p.opponent, p.counts)
        for p in pentanomial_counts(_deal_pairs(units.pairs, label), [k.count for k in units.pairs])
    ]


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _fitted_ranking(
    mapping: dict[tuple[str, str], tuple[int, int, int]],
    units: DealUnits | None,
    offset: float,
    label: Mapping[int, str],
) -> _Ranking:
    """Fit the board (``mapping`` keyed by submission ids as text; the fit itself names
    the bots by ``label``), order it and take each bot's numbers.

    When the draw and first-mover parameters have no finite maximum (a clean sweep, only
    draws, every decisive game won by bots that never lost one, ...) they are fixed at
    BayesElo's defaults (advantage 0, drawelo 97.3) and the note says why. On a duplicate
    board the intervals and the LOS both come from the paired (sandwich) covariance."""
    from leaderboard.ratings import PairCounts, RatingsError, fit_bayeselo, paired_intervals
    from leaderboard.ratings.bayeselo import DEFAULT_DRAWELO, TIE_DECIMALS

    sid_of = {name: sid for sid, name in label.items()}
    named = {(label[int(a)], label[int(b)]): wdl for (a, b), wdl in mapping.items()}
    table = PairCounts.from_mapping(named)
    note = ""
    free = True  # advantage and drawelo fitted
    try:
        fit = fit_bayeselo(table, offset=offset)
    except RatingsError as exc:
        try:
            fit = fit_bayeselo(table, offset=offset, fit_advantage=False, fit_drawelo=False)
        except RatingsError as failed:
            return _Ranking(None, [], {}, {}, {}, f"no rating fit: {failed}", paired=False)
        free = False
        # The reason without the error's advice: fixing the parameters is what was done.
        note = (
            f"first-mover advantage 0 and drawelo {DEFAULT_DRAWELO:g} fixed at BayesElo's "
            f"defaults, not fitted: {exc.reason}"
        )
    position = {name: k for k, name in enumerate(fit.names)}
    intervals = {name: float(fit.intervals[k]) for name, k in position.items()}
    los_of = fit.los
    paired = False
    single_games = 0
    if units is not None:
        try:
            result = paired_intervals(
                _deal_pairs(units.pairs, label),
                weights=[k.count for k in units.pairs],
                singles=_single_games(units.singles, label),
                single_weights=[k.count for k in units.singles],
                offset=offset,
                fit_advantage=free,
                fit_drawelo=free,
            )
        except RatingsError as exc:
            note = _join(note, f"no paired intervals: {exc}")
        else:
            intervals = {name: both[1] for name, both in result.by_name().items()}
            los_of = result.los  # the covariance of the intervals shown, not the naive one
            paired = True
            single_games = units.single_games
            if single_games:
                note = _join(
                    note,
                    f"{single_games} game{'s' if single_games != 1 else ''} of unfinished "
                    "deals counted as units of their own",
                )
    # Best first; equal ratings (to TIE_DECIMALS) by submission id, as numbers.
    order = sorted(
        fit.names,
        key=lambda name: (-round(float(fit.internal[position[name]]), TIE_DECIMALS), sid_of[name]),
    )
    los: dict[int, float | None] = {sid_of[name]: None for name in order}
    for better, worse in pairwise(order):
        los[sid_of[better]] = los_of(better, worse)
    return _Ranking(
        model=FitModel.of(fit),
        order=[sid_of[name] for name in order],
        ratings={sid_of[name]: float(fit.ratings[k]) for name, k in position.items()},
        intervals={sid_of[name]: value for name, value in intervals.items()},
        los=los,
        note=note,
        paired=paired,
        single_games=single_games,
    )


def _stored_ranking(
    session: Session, inputs: str, tournament_id: int | None, sids: Sequence[int]
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
    by_sid = {e.submission_id: e for e in entries}
    if sorted(by_sid) != sorted(sids) or any(e.error is None for e in entries):
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
        order=[e.submission_id for e in entries],
        ratings={sid: e.rating for sid, e in by_sid.items()},
        intervals={sid: float(e.error) for sid, e in by_sid.items() if e.error is not None},
        los={sid: e.extra.get("los_next") for sid, e in by_sid.items()},
        note=str(params.get("note", "")),
        paired=bool(params.get("paired", False)),
        single_games=int(params.get("single_games", 0)),
    )


def _deal_pairs(kinds: Sequence[DealPairKind], label: Mapping[int, str]) -> list[DealPair]:
    """The database's deal-pair kinds as the ratings' deal pairs (one per kind)."""
    from leaderboard.ratings import DealPair, Game, Outcome

    return [
        DealPair(
            Game(
                label[kind.first_submission_id],
                label[kind.second_submission_id],
                Outcome.from_score(kind.first_score),
            ),
            Game(
                label[kind.second_first_submission_id],
                label[kind.second_second_submission_id],
                Outcome.from_score(kind.second_score),
            ),
        )
        for kind in kinds
    ]


def _single_games(kinds: Sequence[SingleGameKind], label: Mapping[int, str]) -> list[RatedGame]:
    """The database's single-game kinds as the ratings' games (one per kind)."""
    from leaderboard.ratings import Game, Outcome

    return [
        Game(
            label[kind.first_submission_id],
            label[kind.second_submission_id],
            Outcome.from_score(kind.first_score),
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
            "single_games": board.single_games,
            "ruleset": board.ruleset,
            "table_size": board.table_size,
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
