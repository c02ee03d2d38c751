"""Every page and JSON document of the leaderboard site, built from one read session.

The live server (:mod:`leaderboard.web.app`) and the static export (:mod:`leaderboard.export`)
both call these functions; only the :class:`~leaderboard.web.render.Links` differ. All numbers
of the standings come from :func:`leaderboard.standings.standings`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup
from sqlmodel import Session

from arena.db import (
    MAX_ID as MAX_ID,  # re-exported: the web routes' bound on ids
)
from arena.db import (
    Game,
    GameResult,
    InvalidRecordError,
    Series,
    Tournament,
    TournamentStatus,
    bot_of,
    game_outcomes,
    get_game,
    get_series,
    get_submission,
    get_tournament,
    list_tournaments,
    series_of_tournament,
    stored_record,
    submission_labels,
)
from arena.tournament.service import TournamentState, states_in
from leaderboard.formatting import board_name
from leaderboard.ratings import Game as RatedGame
from leaderboard.ratings import Outcome
from leaderboard.ratings.elo import INITIAL_RATING, EloTracker
from leaderboard.standings import Leaderboard, Standing, standings
from leaderboard.web.plot import Point, line_plot
from leaderboard.web.queries import (
    BoardResults,
    GameRow,
    Progress,
    RatingPoint,
    games_of,
    played_in_series,
    progress,
    rating_points,
    recent_games,
    results_by_opponent,
    series_of_submission,
)
from leaderboard.web.render import Links, render
from leaderboard.web.replay import Replay, pack_steps, replay_game
from leaderboard.web.table_replay import replay_table_game
from referee.record import table_losers
from sandbox.death import printable

RECENT_GAMES = 20
SERIES_ON_PAGE = 500
RUNNING_REFRESH_S = 30
"""Seconds between reloads of a live leaderboard page while a tournament runs."""
BOT_RECENT_GAMES = 50


class PageNotFoundError(LookupError):
    """The requested page does not exist (bad or unknown id)."""


class DamagedGameError(InvalidRecordError):
    """A game's stored row no longer makes a consistent record (its packed deal and moves do
    not unpack, say, after an edit by hand): its page and JSON cannot be built. The message is
    :func:`arena.db.stored_record`'s, as ``kryt replay`` prints it: ``game N is stored
    inconsistently: ...``."""

    def __init__(self, game_id: int, message: str) -> None:
        super().__init__(message)
        self.game_id = game_id


DAMAGED_GAME_HEADING = "Game stored inconsistently"


def damaged_game_page(error: DamagedGameError, *, links: Links) -> str:
    """The page shown (and exported) in place of a damaged game's replay page."""
    return render(
        "error.html",
        links=links,
        title=f"Game {error.game_id}: {DAMAGED_GAME_HEADING.lower()}",
        heading=DAMAGED_GAME_HEADING,
        message=str(error),
    )


def parse_id(text: str, what: str) -> int:
    """A positive database id from a URL segment, or :class:`PageNotFoundError`."""
    # The length first: int() refuses more than 4,300 digits (a ValueError, not a 404).
    if not (text.isascii() and text.isdigit()) or len(text) > 10 or not 0 < int(text) <= MAX_ID:
        raise PageNotFoundError(
            f"{what} id must be a positive integer up to {MAX_ID}, got {text[:40]!r}"
            + ("..." if len(text) > 40 else "")
        )
    return int(text)


@dataclass(frozen=True, slots=True)
class TournamentSummary:
    """A tournament with its progress, for lists."""

    tournament: Tournament
    progress: Progress


def tournaments_with_progress(*, session: Session) -> list[TournamentSummary]:
    """Every tournament, newest first, with games done/planned."""
    return [
        TournamentSummary(t, progress(session=session, tournament_id=t.id))
        for t in list_tournaments(session=session)
    ]


def shown_labels(*, session: Session) -> dict[int, tuple[str, str]]:
    """Every submission's (bot, version) as pages show them: a version is free text to the
    database (only ``bot.toml`` restricts it), so its control and format characters are made
    visible, as everywhere bot text is shown."""
    return {
        sid: (printable(name), printable(version))
        for sid, (name, version) in submission_labels(session=session).items()
    }


def _label(labels: dict[int, tuple[str, str]], submission_id: int) -> str:
    name, version = labels.get(submission_id, ("?", "?"))
    return f"{name} {version}"


def result_text(row: GameRow | Game, labels: dict[int, tuple[str, str]]) -> str:
    """``greedy 1.0.0 won`` / ``draw`` / ``voided``, for game lists and the game page
    (a table game: ``mc 1.0.0 lost``, every bot that could not start when several did not,
    or the turn limit's pairwise results)."""
    seats = row.seats if isinstance(row, GameRow) else row.seat_ids
    if row.ruleset != "default" and not row.voided:
        if row.loser_seat is not None:
            losers = table_losers(row.loser_seat, row.pairwise or ())
            return ", ".join(f"{_label(labels, seats[x])} lost" for x in losers)
        if row.pairwise:
            beaten = sorted({x for _, x in row.pairwise})
            return "turn limit: " + ", ".join(f"{_label(labels, seats[x])} lost" for x in beaten)
    if row.voided:
        return "voided"
    if row.result == GameResult.DRAW.value:
        return "draw"
    if row.result in (GameResult.SEAT0.value, GameResult.SEAT1.value):
        winner = 0 if row.result == GameResult.SEAT0.value else 1
        return f"{_label(labels, seats[winner])} won"
    return "no result"


@dataclass(frozen=True, slots=True)
class Statuses:
    """Tournaments' and series' statuses as ``kryt tournament status`` shows them: a
    tournament that a run started and none plays now (its runner died or was stopped) is
    ``stopped``, with its series stored as running, not ``running`` forever. The arena's
    ladder, which the CLI calls ``ladder``, keeps its stored status (``running``): a live
    page follows it as its servers play it."""

    states: dict[int, TournamentState]

    @classmethod
    def read(cls, *, session: Session) -> Statuses:
        """Every tournament's state, with its lease, read in ``session``."""
        return cls(states_in(session=session))

    def tournament(self, tournament: Tournament) -> str:
        """The tournament's status as shown."""
        state = self.states.get(tournament.id or 0)
        return tournament.status if state is None or state.ladder else state.shown

    def series(self, series: Series) -> str:
        """The series' status as shown."""
        state = self.states.get(series.tournament_id)
        return series.status if state is None else state.series_shown(series.status)


def _leaderboard_json(
    board: Leaderboard, done: Progress, tournament: Tournament | None, statuses: Statuses
) -> dict[str, Any]:
    data = board.to_dict()
    data["tournament"] = (
        None
        if tournament is None
        else {
            "id": tournament.id,
            "name": tournament.name,
            "status": statuses.tournament(tournament),
        }
    )
    data["progress"] = {
        "games_done": done.games_done,
        "games_planned": done.games_planned,
        "series_done": done.series_done,
        "series_total": done.series_total,
        "voided": done.voided,
    }
    return data


def leaderboard_json(
    *,
    session: Session,
    tournament_id: int | None = None,
    ruleset: str | None = None,
    table_size: int | None = None,
) -> dict[str, Any]:
    """The standings (overall or of one tournament; per ruleset and table size) with model
    parameters and progress."""
    tournament = None if tournament_id is None else get_tournament(tournament_id, session=session)
    board = standings(
        session=session, tournament_id=tournament_id, ruleset=ruleset, table_size=table_size
    )
    return _leaderboard_json(
        board,
        progress(session=session, tournament_id=tournament_id),
        tournament,
        Statuses.read(session=session),
    )


def leaderboard_page(*, session: Session, links: Links, tournament_id: int | None = None) -> str:
    """The overall leaderboard (with the list of tournaments) or one tournament's page."""
    tournament = None if tournament_id is None else get_tournament(tournament_id, session=session)
    board = standings(session=session, tournament_id=tournament_id)
    labels = shown_labels(session=session)
    summaries = tournaments_with_progress(session=session) if tournament is None else []
    listed = [t.tournament for t in summaries] if tournament is None else [tournament]
    statuses = Statuses.read(session=session)
    # A live page follows a running tournament by itself; an exported page never changes.
    refresh = (
        RUNNING_REFRESH_S
        if not links.static
        and any(statuses.tournament(t) == TournamentStatus.RUNNING.value for t in listed)
        else 0
    )
    series_rows: list[tuple[Series, int]] = []
    series_total = 0
    if tournament_id is not None:
        all_series = series_of_tournament(tournament_id, session=session)
        series_total = len(all_series)
        # A round robin of 1,000 bots has ~500,000 series: list the first ones only (every
        # bot's page lists all of its own series).
        shown = all_series[:SERIES_ON_PAGE]
        played = played_in_series([s.id for s in shown if s.id is not None], session=session)
        series_rows = [(s, played.get(s.id or 0, 0)) for s in shown]
    return render(
        "leaderboard.html",
        links=links,
        title=f"{tournament.name} (#{tournament.id})" if tournament else "Leaderboard",
        tournament=tournament,
        board=board,
        progress=progress(session=session, tournament_id=tournament_id),
        tournaments=summaries,
        refresh=refresh,
        series_rows=series_rows,
        series_total=series_total,
        statuses=statuses,
        games=recent_games(session=session, tournament_id=tournament_id, limit=RECENT_GAMES),
        labels=labels,
        result_text=result_text,
    )


def elo_histories(*, session: Session) -> dict[int, list[Point]]:
    """Live Elo of every submission after each of its counted games (all tournaments, in
    the order the games finished), starting from the initial rating at x = 0."""
    tracker = EloTracker()
    histories: dict[int, list[Point]] = {}
    for o in game_outcomes(session=session):
        first, second = o.first_submission_id, o.second_submission_id
        outcome = Outcome.from_score(o.first_score)
        ratings = tracker.update(RatedGame(str(first), str(second), outcome))
        for sid, rating in zip((first, second), ratings, strict=True):
            points = histories.setdefault(sid, [Point(0, INITIAL_RATING, label="start")])
            points.append(
                Point(rating.games, rating.rating, label=f"game {o.game_id}: {rating.rating:.0f}")
            )
    return histories


@dataclass
class SiteCache:
    """Figures shared by many pages, computed once per export instead of once per page.

    The live server builds a fresh one per request (so pages are never stale)."""

    _board: Leaderboard | None = None
    _elo: dict[int, list[Point]] | None = None
    _boards: dict[tuple[str, int], Leaderboard] = field(default_factory=dict)

    def board(self, session: Session) -> Leaderboard:
        """The overall standings."""
        if self._board is None:
            self._board = standings(session=session)
        return self._board

    def board_of(self, session: Session, ruleset: str, table_size: int) -> Leaderboard:
        """The standings of every tournament on one board (ruleset and table size)."""
        kind = (ruleset, table_size)
        if self._board is not None and (self._board.ruleset, self._board.table_size) == kind:
            return self._board
        if kind not in self._boards:
            self._boards[kind] = standings(session=session, ruleset=ruleset, table_size=table_size)
        return self._boards[kind]

    def elo(self, session: Session, submission_id: int) -> list[Point]:
        """The submission's live Elo history (empty when it has no counted game)."""
        if self._elo is None:
            self._elo = elo_histories(session=session)
        return self._elo.get(submission_id, [])


def _standing_of(board: Leaderboard, submission_id: int) -> Standing | None:
    return next((r for r in board.rows if r.submission_id == submission_id), None)


def _scope(tournament_id: int | None) -> str:
    return "overall" if tournament_id is None else f"tournament {tournament_id}"


def _default_board_first(item: tuple[tuple[str, int], object]) -> tuple[bool, str, int]:
    (ruleset, size), _ = item
    return (ruleset, size) != ("default", 2), ruleset, size


def submission_page(
    submission_id: int, *, session: Session, links: Links, cache: SiteCache | None = None
) -> str:
    """One bot version: its standing, results against each opponent, its series, recent
    games, and its rating history (live Elo per game, stored BayesElo snapshots)."""
    submission = get_submission(submission_id, session=session)
    bot = bot_of(submission, session=session)
    labels = shown_labels(session=session)
    cache = cache or SiteCache()
    elo_points = cache.elo(session, submission_id)
    elo_plot = (
        line_plot(
            elo_points,
            title=f"Live Elo of {bot.name} {printable(submission.version)}",
            x_label="games played",
            y_label="Elo",
            reference=INITIAL_RATING,
        )
        if len(elo_points) > 1
        else None
    )
    snapshots = rating_points(submission_id, session=session, model="bayeselo")
    # One line per board: a table's rating and the default game's are different scales.
    by_board: dict[tuple[str, int], list[RatingPoint]] = {}
    for point in snapshots:
        by_board.setdefault((point.ruleset, point.table_size), []).append(point)
    snapshot_plots = [
        (
            board_name(*board),
            line_plot(
                [
                    Point(
                        i,
                        p.rating,
                        p.ci_low,
                        p.ci_high,
                        label=f"{p.created_at:%Y-%m-%d %H:%M} "
                        + (
                            "overall"
                            if p.tournament_id is None
                            else f"tournament {p.tournament_id}"
                        )
                        + f": {p.rating:.0f}",
                    )
                    for i, p in enumerate(points, start=1)
                ],
                title=f"BayesElo snapshots of {bot.name} {printable(submission.version)}"
                + (f" ({board_name(*board)})" if len(by_board) > 1 else ""),
                x_label="snapshot",
                y_label="rating (95% interval)",
            ),
        )
        for board, points in sorted(
            by_board.items(), key=lambda kv: (kv[0] != ("default", 2), kv[0])
        )
    ]
    all_series = series_of_submission(submission_id, session=session)
    played = played_in_series([s.id for s in all_series if s.id is not None], session=session)
    # One board per ruleset and table size, as the standings keep them: a classic table's
    # pairwise results are never added to the default game's.
    results = results_by_opponent(submission_id, session=session)
    boards: list[tuple[BoardResults, Standing | None]] = [
        (r, _standing_of(cache.board_of(session, r.ruleset, r.table_size), submission_id))
        for r in results
    ]
    return render(
        "submission.html",
        links=links,
        title=f"{bot.name} {printable(submission.version)}",
        bot=bot,
        submission=submission,
        boards=boards,
        # Board names are shown as soon as there is anything but the default game.
        named_boards=any(r.table for r, _ in boards) or len(boards) > 1,
        series_rows=[(s, played.get(s.id or 0, 0), s.seat_ids) for s in all_series],
        statuses=Statuses.read(session=session),
        games=recent_games(session=session, submission_id=submission_id, limit=BOT_RECENT_GAMES),
        elo_plot=elo_plot,
        snapshot_plots=snapshot_plots,
        snapshots=snapshots,
        labels=labels,
        result_text=result_text,
        board_name=board_name,
    )


def series_page(series_id: int, *, session: Session, links: Links) -> str:
    """The games of one series, voided attempts included."""
    series = get_series(series_id, session=session)
    return render(
        "series.html",
        links=links,
        title=f"Series {series_id}",
        series=series,
        tournament=get_tournament(series.tournament_id, session=session),
        statuses=Statuses.read(session=session),
        games=games_of(series_id, session=session),
        labels=shown_labels(session=session),
        result_text=result_text,
    )


def game_replay(game: Game, tournament: Tournament) -> Replay:
    """The per-step states of a stored game (see :mod:`leaderboard.web.replay`)."""
    return replay_game(
        game.deck,
        game.dealer,
        game.actions,
        turn_limit=game.turn_limit,
        final_cover=game.final_cover,
    )


def game_json(game_id: int, *, session: Session) -> dict[str, Any]:
    """A game's record and its replay steps: what ``/api/games/{id}`` returns and what the
    game page embeds for its viewer (:class:`DamagedGameError` for a damaged row)."""
    game = get_game(game_id, session=session)
    series = get_series(game.series_id, session=session)
    tournament = get_tournament(series.tournament_id, session=session)
    return _game_data(game, series, tournament, shown_labels(session=session))


def _game_data(
    game: Game, series: Series, tournament: Tournament, labels: dict[int, tuple[str, str]]
) -> dict[str, Any]:
    assert game.id is not None  # stored rows have ids
    try:  # the check `kryt replay` and `kryt games export` make, with their wording
        stored_record(game)
    except InvalidRecordError as exc:
        raise DamagedGameError(game.id, str(exc)) from None
    table = game.ruleset != "default"
    seats = game.seat_ids
    replay = (
        replay_table_game(
            game.deck, game.dealer, game.players, game.actions, turn_limit=game.turn_limit
        )
        if table
        else game_replay(game, tournament).to_dict()
    )
    return {
        "ruleset": game.ruleset,
        "seats": game.players,
        "loser_seat": game.loser_seat,
        "pairwise": game.pairwise,
        "id": game.id,
        "tournament_id": tournament.id,
        "series_id": series.id,
        "number": game.number,
        "attempt": game.attempt,
        "dealer": game.dealer,
        "first_mover": game.first_mover,
        "players": [
            {"seat": seat, "submission_id": sid, "bot": labels[sid][0], "version": labels[sid][1]}
            for seat, sid in enumerate(seats)
        ],
        "deck": list(game.deck),
        "result": game.result,
        "result_text": result_text(game, labels),
        "end_reason": game.end_reason,
        "forfeit": None
        if game.forfeit_seat is None
        else {
            "seat": game.forfeit_seat,
            "reason": game.end_reason,
            "offending_input": game.forfeit_input,
            "detail": game.forfeit_detail,
        },
        "voided": game.voided,
        "void_reason": game.void_reason,
        "referee_version": game.referee_version,
        "started_at": game.started_at.isoformat(),
        "finished_at": game.finished_at.isoformat(),
        "actions": list(game.actions),
        "final_cover": game.final_cover,
        "replay": replay,
    }


def game_page(game_id: int, *, session: Session, links: Links) -> str:
    """A game's record with the step-by-step replay viewer (:class:`DamagedGameError` for a
    damaged row: see :func:`damaged_game_page`)."""
    game = get_game(game_id, session=session)
    series = get_series(game.series_id, session=session)
    tournament = get_tournament(series.tournament_id, session=session)
    labels = shown_labels(session=session)
    data = _game_data(game, series, tournament, labels)
    table = game.ruleset != "default"
    return render(
        "table_game.html" if table else "game.html",
        links=links,
        title=f"Game {game_id}",
        game=game,
        series=series,
        tournament=tournament,
        data=data,
        # The two-player viewer reads packed steps; the table viewer its own steps as they are.
        data_json=None if table else page_json(data),
    )


def page_json(data: dict[str, Any]) -> Markup:
    """The game data as the page embeds it, compact: the steps packed
    (:func:`~leaderboard.web.replay.pack_steps`, unpacked by the viewer), the actions only
    once (in the steps), no spaces; escaped for a ``<script>`` element."""
    replay = dict(data["replay"])
    replay["packed"] = pack_steps(replay.pop("steps"))
    compact = {k: v for k, v in data.items() if k != "actions"} | {"replay": replay}
    text = json.dumps(compact, separators=(",", ":"), ensure_ascii=False)
    for raw, safe in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        text = text.replace(raw, safe)
    # Bot text may carry bidi overrides and other invisible characters: the page's source
    # holds them as escapes only (JSON.parse gives the same strings back).
    return Markup(_NON_ASCII.sub(_escape_invisible, text))


_NON_ASCII = re.compile(r"[^\x00-\x7e]")


def _escape_invisible(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) in {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}:
        return json.dumps(char)[1:-1]  # \uXXXX, or a surrogate pair beyond the BMP
    return char
