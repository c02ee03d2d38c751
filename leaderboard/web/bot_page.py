"""A bot's page: every version with its standing on each board it played on, the latest
version's rating history, and the recent games of all its versions."""

from __future__ import annotations

from sqlmodel import Session

from arena.db import Submission, get_bot, list_submissions
from leaderboard.formatting import board_name
from leaderboard.ratings.elo import INITIAL_RATING
from leaderboard.standings import Standing
from leaderboard.web.pages import BOT_RECENT_GAMES, SiteCache, result_text, shown_labels
from leaderboard.web.plot import line_plot
from leaderboard.web.queries import recent_games, results_by_opponent
from leaderboard.web.render import Links, render
from sandbox.death import printable


def bot_page(name: str, *, session: Session, links: Links) -> str:
    """The page of the bot called ``name`` (:class:`arena.db.NotFoundError` if none)."""
    bot = get_bot(name, session=session)
    versions = list_submissions(session=session, bot_name=bot.name)
    cache = SiteCache()
    # A version's standing on each board it played on (a table's rating and the default
    # game's are different scales), the default game first; a version that never played
    # has one row with none.
    rows: list[tuple[Submission, str | None, Standing | None]] = []
    for s in reversed(versions):
        boards = results_by_opponent(s.id, session=session) if s.id is not None else []
        boards.sort(key=lambda r: ((r.ruleset, r.table_size) != ("default", 2), r.name))
        if not boards:
            rows.append((s, None, None))
        for r in boards:
            board = cache.board_of(session, r.ruleset, r.table_size)
            standing = next((row for row in board.rows if row.submission_id == s.id), None)
            rows.append((s, board_name(r.ruleset, r.table_size), standing))
    # Two versions of the bot may have met: each game once.
    unique = {
        game.game_id: game
        for s in versions
        if s.id is not None
        for game in recent_games(session=session, submission_id=s.id, limit=BOT_RECENT_GAMES)
    }
    games = list(unique.values())
    games.sort(key=lambda g: (g.finished_at, g.game_id), reverse=True)
    latest = versions[-1] if versions else None
    points = cache.elo(session, latest.id) if latest is not None and latest.id else []
    elo_plot = (
        line_plot(
            points,
            title=f"Live Elo of {bot.name} {printable(latest.version)}",
            x_label="games played",
            y_label="Elo",
            reference=INITIAL_RATING,
        )
        if latest is not None and len(points) > 1
        else None
    )
    return render(
        "bot.html",
        links=links,
        title=bot.name,
        bot=bot,
        versions=rows,
        # Board names are shown as soon as any version played anything but the default game.
        named_boards=any(name not in (None, "default game") for _, name, _ in rows),
        elo_plot=elo_plot,
        games=games[:BOT_RECENT_GAMES],
        labels=shown_labels(session=session),
        result_text=result_text,
    )
