"""Static HTML export of the leaderboard site, to publish results without a server.

Writes the same pages as ``kryt leaderboard serve`` into a folder, with relative links, so it
works from any web path or opened straight from disk::

    index.html                  overall leaderboard and the list of tournaments
    tournaments/<id>.html       one tournament: standings, progress, series, recent games
    submissions/<id>.html       one bot version: results per opponent, rating history
    series/<id>.html            the games of one series
    games/<id>.html             replay viewer of one game
    leaderboard.json            the overall standings (and leaderboard-<id>.json per tournament)
    static/                     style.css, replay.js

Files of the folder that the export does not write are left alone. A game whose stored row is
damaged (its deal and moves do not unpack) does not stop the export: its page says so instead
of showing the replay, and :attr:`ExportSummary.damaged` names it, so the caller can warn.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from arena.db import Database, games_of_series, list_submissions, list_tournaments
from arena.db import series_of_tournament as _series_of_tournament
from leaderboard.web.app import static_dir
from leaderboard.web.pages import (
    DamagedGameError,
    SiteCache,
    damaged_game_page,
    game_page,
    leaderboard_json,
    leaderboard_page,
    series_page,
    submission_page,
)
from leaderboard.web.render import Links


class ExportError(ValueError):
    """The export folder cannot be used (the message names it and says why)."""


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What an export wrote."""

    directory: Path
    tournaments: int
    submissions: int
    series: int
    games: int
    """Game pages written with their replay (the damaged games' pages not counted)."""
    damaged: tuple[str, ...] = ()
    """One message per damaged game, ``game N is stored inconsistently: ...``: its page was
    written saying so, without a replay."""

    @property
    def pages(self) -> int:
        """HTML pages written (the index and the damaged games' pages included)."""
        return (
            1 + self.tournaments + self.submissions + self.series + self.games + len(self.damaged)
        )


def prepare_folder(directory: Path) -> None:
    """Create the site's folders under ``directory`` (ExportError, one line, when it is a
    file or cannot be made): checked before anything is written or, in ``kryt demo``,
    played."""
    if directory.exists() and not directory.is_dir():
        raise ExportError(f"cannot export to {directory}: it exists and is not a folder")
    try:
        for sub in ("tournaments", "submissions", "series", "games", "static"):
            (directory / sub).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"cannot create export folder {directory}: {exc.strerror}") from exc


def _write(path: Path, text: str) -> None:
    """Write a page whole or not at all: through a temporary file beside it, renamed over
    it, so a full disk leaves the page of an earlier export as it was, never cut short."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise ExportError(f"cannot write {path}: {exc.strerror}") from exc


def export_html(
    db: Database,
    directory: str | Path,
    *,
    include_games: bool = True,
    progress: Callable[[str], None] | None = None,
) -> ExportSummary:
    """Write the whole site for ``db`` into ``directory`` (created if missing).

    Everything is read in one read-only session, so the pages agree with each other even
    while a tournament keeps recording games. With ``include_games=False`` the per-game
    replay pages are skipped (links to them then dangle), for very large databases.
    ``progress`` is called with a short message per section.
    """
    out = Path(directory)
    prepare_folder(out)
    say = progress or (lambda _message: None)
    top = Links("", static=True)
    deep = Links("../", static=True)
    cache = SiteCache()
    counts = {"series": 0, "games": 0}
    damaged: list[str] = []
    with db.read_session() as session:
        say("leaderboard")
        _write(out / "index.html", leaderboard_page(session=session, links=top))
        _write(
            out / "leaderboard.json",
            json.dumps(leaderboard_json(session=session), indent=2),
        )
        tournaments = list_tournaments(session=session)
        say(f"{len(tournaments)} tournaments")
        for tournament in tournaments:
            assert tournament.id is not None  # stored rows have ids
            tid = tournament.id
            _write(
                out / "tournaments" / f"{tid}.html",
                leaderboard_page(session=session, links=deep, tournament_id=tid),
            )
            _write(
                out / f"leaderboard-{tid}.json",
                json.dumps(leaderboard_json(session=session, tournament_id=tid), indent=2),
            )
            for series in _series_of_tournament(tid, session=session):
                assert series.id is not None
                _write(
                    out / "series" / f"{series.id}.html",
                    series_page(series.id, session=session, links=deep),
                )
                counts["series"] += 1
                if not include_games:
                    continue
                for game in games_of_series(series.id, session=session, include_voided=True):
                    assert game.id is not None
                    try:
                        page = game_page(game.id, session=session, links=deep)
                    except DamagedGameError as exc:  # one bad row: the rest is still written
                        damaged.append(str(exc))
                        page = damaged_game_page(exc, links=deep)
                    else:
                        counts["games"] += 1
                    _write(out / "games" / f"{game.id}.html", page)
        submissions = list_submissions(session=session)
        say(f"{len(submissions)} submissions")
        for submission in submissions:
            assert submission.id is not None
            _write(
                out / "submissions" / f"{submission.id}.html",
                submission_page(submission.id, session=session, links=deep, cache=cache),
            )
    for asset in static_dir().iterdir():
        if asset.is_file():
            try:
                shutil.copyfile(asset, out / "static" / asset.name)
            except OSError as exc:
                raise ExportError(f"cannot write {out / 'static' / asset.name}: {exc}") from exc
    return ExportSummary(
        directory=out,
        tournaments=len(tournaments),
        submissions=len(submissions),
        series=counts["series"],
        games=counts["games"],
        damaged=tuple(damaged),
    )
