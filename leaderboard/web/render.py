"""Jinja2 environment, filters and the link scheme shared by the server and the static export.

The server links to ``/games/7``; the export writes ``games/7.html`` and links relatively,
so the exported folder works from any web path or straight from disk. :class:`Links` hides
the difference from the templates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from functools import cache, lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from leaderboard.formatting import tenths
from referee.rules import Card, RulesError
from sandbox.death import printable
from sandbox.submission import shown_as_plain_text

_CARD_TOKEN = re.compile(r"\b(?:10|[6-9TJQKA])[CDHS]\b")
_SUIT_SYMBOL = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}
_SUIT_CLASS = {"C": "clubs", "D": "diamonds", "H": "hearts", "S": "spades"}


@dataclass(frozen=True, slots=True)
class Links:
    """URLs of every page, for the live server (``static=False``) or a static export.

    ``root`` is the path back to the site's root from the current page: ``/`` on the server,
    ``""`` or ``"../"`` in the export (pages live one folder deep).
    """

    root: str = "/"
    static: bool = False

    def _page(self, path: str) -> str:
        return f"{self.root}{path}.html" if self.static else f"{self.root}{path}"

    def home(self) -> str:
        """The overall leaderboard."""
        return f"{self.root}index.html" if self.static else self.root

    def tournament(self, tournament_id: int) -> str:
        """One tournament's leaderboard and progress."""
        return self._page(f"tournaments/{tournament_id}")

    def submission(self, submission_id: int) -> str:
        """One bot version's page."""
        return self._page(f"submissions/{submission_id}")

    def series(self, series_id: int) -> str:
        """The games of one series."""
        return self._page(f"series/{series_id}")

    def game(self, game_id: int) -> str:
        """The replay of one game."""
        return self._page(f"games/{game_id}")

    def asset(self, name: str) -> str:
        """A file of ``leaderboard/web/static``."""
        return f"{self.root}static/{name}"

    def api_leaderboard(self, tournament_id: int | None = None) -> str:
        """The leaderboard as JSON (server: the API; export: a file written beside it)."""
        if self.static:
            name = "leaderboard" if tournament_id is None else f"leaderboard-{tournament_id}"
            return f"{self.root}{name}.json"
        suffix = "" if tournament_id is None else f"?tournament={tournament_id}"
        return f"{self.root}api/leaderboard{suffix}"


@lru_cache(maxsize=256)
def card_html(text: str) -> Markup:
    """A card as a small coloured label (``TH`` → 10♥ in red)."""
    try:
        card = Card.parse(text)
    except RulesError:
        return Markup('<span class="card-text">{}</span>').format(text)
    canonical = str(card)
    rank, suit = canonical[:-1], canonical[-1]
    shown = "10" if rank == "T" else rank
    return Markup('<span class="card-text {}" title="{}">{}{}</span>').format(
        _SUIT_CLASS[suit], canonical, shown, _SUIT_SYMBOL[suit]
    )


@lru_cache(maxsize=16384)  # a few thousand distinct actions exist; pages repeat them a lot
def action_html(text: str | None) -> Markup:
    """An action's text with its cards drawn as :func:`card_html` labels."""
    if not text:
        return Markup("")
    out = Markup("")
    last = 0
    for match in _CARD_TOKEN.finditer(text):
        out += escape(text[last : match.start()]) + card_html(match.group(0))
        last = match.end()
    return out + escape(text[last:])


def fmt_rating(value: float | None, digits: int = 0) -> str:
    """A rating, or an em dash when there is none."""
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_percent(value: float | None) -> str:
    """0.8333 → ``83.3``."""
    return "—" if value is None else f"{100 * value:.1f}"


def fmt_time(value: datetime | None) -> str:
    """UTC timestamp to the second."""
    return "—" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def fmt_seconds(value: float | None) -> str:
    """Seconds to the millisecond, rounded as the viewers' ``toFixed(3)`` rounds (an exact
    tie of the binary value goes up, where ``'%.3f'`` would go to even), so a move list made
    here and the viewer's action line show one figure; empty for no time."""
    if value is None:
        return ""
    return str(Decimal(value).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))


def fmt_forfeits(forfeits: dict[str, int]) -> str:
    """``{"timeout": 2, "crash": 1}`` → ``crash 1, timeout 2``."""
    return ", ".join(f"{reason.replace('_', ' ')} {n}" for reason, n in sorted(forfeits.items()))


def plain_text(value: object, *, newlines: bool = False) -> str:
    """A manifest's ``author`` or (``newlines``) ``description`` as ``bot.toml`` lets it
    through: what it refuses made visible. Any stored value is shown as text (the database
    takes any manifest)."""
    return shown_as_plain_text(str(value), newlines=newlines)


@cache
def environment() -> Environment:
    """The Jinja2 environment of the leaderboard templates (autoescaped, strict)."""
    env = Environment(
        loader=PackageLoader("leaderboard.web", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        card=card_html,
        action=action_html,
        rating=fmt_rating,
        pct=fmt_percent,
        when=fmt_time,
        forfeits=fmt_forfeits,
        seconds=fmt_seconds,
        tenths=tenths,
        printable=printable,  # bot text: control and format characters made visible
        plain_text=plain_text,  # bot.toml's author/description: what it refuses made visible
    )
    return env


def render(template: str, **context: Any) -> str:
    """Render ``template`` (a file of ``templates/``) with ``context``."""
    return environment().get_template(template).render(**context)
