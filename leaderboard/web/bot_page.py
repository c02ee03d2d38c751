"""A bot's page: every version with its standing, the latest version's rating history, and
the recent games of all its versions."""

from __future__ import annotations

from sqlmodel import Session

from arena.db import get_bot, list_submissions, submission_labels
from leaderboard.ratings.elo import INITIAL_RATING
from leaderboard.web.pages import BOT_RECENT_GAMES, SiteCache, result_text
from leaderboard.web.plot import line_plot
from leaderboard.web.queries import recent_games
from leaderboard.web.render import Links, render


def bot_page(name: str, *, session: Session, links: Links) -> str:
    """The page of the bot called ``name`` (:class:`arena.db.NotFoundError` if none)."""
    bot = get_bot(name, session=session)
    versions = list_submissions(session=session, bot_name=bot.name)
    cache = SiteCache()
    board = cache.board(session)
    by_id = {row.submission_id: row for row in board.rows}
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
            title=f"Live Elo of {bot.name} {latest.version}",
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
        versions=[(s, by_id.get(s.id or 0)) for s in reversed(versions)],
        elo_plot=elo_plot,
        games=games[:BOT_RECENT_GAMES],
        labels=submission_labels(session=session),
        result_text=result_text,
    )
