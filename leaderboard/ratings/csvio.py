"""Reader for result sets stored as CSV with the columns ``first,second,result``.

``first`` moved first and ``result`` is from his side: ``1-0``, ``0-1`` or ``1/2-1/2``. Any
malformed row stops the read with a :class:`CsvFormatError` naming the line, so a typo can
never silently drop a game from a rating; so does a name holding a control or format
character (ESC, a bidi override), which the ratings table would print as it is.
"""

from __future__ import annotations

import csv
import unicodedata
from pathlib import Path

from leaderboard.ratings.errors import (
    CsvFormatError,
    EmptyResultsError,
    InvalidGameError,
    NotAResultsFileError,
)
from leaderboard.ratings.games import Game, Outcome
from referee.files import NotARegularFileError, read_regular_file

HEADER = ("first", "second", "result")
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _hidden(char: str) -> bool:
    """A control, format or separator character (an escape sequence, a bidi override, a
    tab): never part of a bot's name, and printed as it is it rewrites the terminal."""
    return unicodedata.category(char) in _HIDDEN


def parse_games_csv(text: str, *, source: str = "<csv>") -> list[Game]:
    """Parse CSV text (header line required, blank lines ignored) into games in file order."""
    games: list[Game] = []
    header_seen = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            # skipinitialspace: `alpha, "bravo"` is bravo; without it the space made the quotes
            # part of a second name, '"bravo"', another player with half of bravo's games.
            fields = next(csv.reader([line], strict=True, skipinitialspace=True))
        except csv.Error as exc:
            raise CsvFormatError(source, number, line, f"not valid CSV ({exc})") from None
        cells = tuple(cell.strip() for cell in fields)
        if not header_seen:
            if tuple(c.lower() for c in cells) != HEADER:
                raise CsvFormatError(
                    source, number, line, "expected the header first,second,result"
                )
            header_seen = True
            continue
        if len(cells) != 3:
            raise CsvFormatError(source, number, line, f"expected 3 fields, found {len(cells)}")
        hidden = next((char for name in cells[:2] for char in name if _hidden(char)), None)
        if hidden is not None:
            raise CsvFormatError(
                source,
                number,
                line,
                f"a name may not hold control or format characters (U+{ord(hidden):04X})",
            )
        try:
            games.append(Game(cells[0], cells[1], Outcome.parse(cells[2])))
        except InvalidGameError as exc:
            raise CsvFormatError(source, number, line, str(exc)) from None
    if not header_seen:
        raise EmptyResultsError(f"{source}: empty file; expected the header first,second,result")
    return games


def read_games_csv(path: str | Path) -> list[Game]:
    """Read a results CSV file; raises ``OSError`` if unreadable, :class:`CsvFormatError` if bad,
    :class:`NotAResultsFileError` for a directory or a device (``/dev/zero`` would be read
    without end); a pipe is read to its end, ``/dev/null`` is empty."""
    file = Path(path)
    try:
        data = read_regular_file(file)
    except NotARegularFileError as exc:
        raise NotAResultsFileError(f"{file} is {exc.kind}, not a CSV file") from None
    try:
        text = data.decode("utf-8-sig")  # tolerate a spreadsheet's byte-order mark
    except UnicodeDecodeError as exc:
        number = data[: exc.start].count(b"\n") + 1
        line = data.splitlines()[number - 1].decode("utf-8", errors="replace")
        raise CsvFormatError(str(file), number, line, "not UTF-8 text") from None
    return parse_games_csv(text, source=str(file))
