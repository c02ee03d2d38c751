"""The one record of a game, from the referee to the database and back.

A :class:`GameRecord` is complete enough to replay and verify the game: the deal, every move
with the time the bot took, how it ended (one :class:`GameEndReason`), the forfeit (offender,
what it sent, why) or the void reason as separate fields, and the automatic final cover of a
drawn game as a field of its own (it is not a move: no bot played it).

The same record holds a game of the classic table (``ruleset="classic"``, 2-4 ``seats``): its
``loser`` and its ``pairwise`` results (rules-classic.md: each winner beats the loser; at the
turn limit every seat that is out beats every seat still holding cards) are fields; ``winner``
is the other seat at a table of two and ``None`` at a larger table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from referee.protocol.messages import GameEndReason, TimeControl

REFEREE_VERSION: Final = "kryt-arena-referee 0.2.0"

MAX_TEXT: Final = 4000
"""Longest offending input or detail kept (in characters): a bot cannot fill the database
by replying with megabytes of garbage. Longer text is cut by :func:`clip` saying so."""

ON_MOVE_FORFEITS: Final = frozenset(
    {GameEndReason.TIMEOUT, GameEndReason.ILLEGAL_ACTION, GameEndReason.MALFORMED_REPLY}
)
"""Forfeits only the seat to move can commit (a reply to its own request), at any table:
``kryt replay --verify`` refuses one charged to another seat."""


_CUT_NOTE = re.compile(r"…\[[1-9][0-9]{0,18} more characters\]\Z")


def clip(text: str) -> str:
    """``text`` cut to its first :data:`MAX_TEXT` characters and a note of how many more
    there were. A clipped text is returned as it is: a record is clipped where it is made,
    again where it is stored and where it is imported, and each must keep the first note
    (a second cut changed the text and miscounted what was cut)."""
    if len(text) <= MAX_TEXT or _CUT_NOTE.fullmatch(text, MAX_TEXT):
        return text
    return text[:MAX_TEXT] + f"…[{len(text) - MAX_TEXT} more characters]"


@dataclass(frozen=True, slots=True)
class Move:
    """One action as played: by whom, its canonical text, and how long the bot took."""

    seat: int
    action: str
    seconds: float
    """Wall seconds from request to reply, as the referee measured them."""
    cpu_seconds: float | None = None
    """CPU seconds of the bot's process tree on this decision, where its sandbox counts it."""


@dataclass(frozen=True, slots=True)
class Forfeit:
    """A forfeit: the offending seat, the reason, what it sent (if anything), and why."""

    seat: int
    reason: GameEndReason
    offending_input: str = ""
    detail: str = ""

    def __post_init__(self) -> None:
        if not self.reason.is_forfeit:
            raise ValueError(f"{self.reason.value!r} is not a forfeit reason")


@dataclass(frozen=True, slots=True)
class GameRecord:
    """A finished (or voided) game, complete enough to replay and verify."""

    deck: tuple[str, ...]
    dealer: int
    turn_limit: int
    moves: tuple[Move, ...]
    ending: GameEndReason
    winner: int | None
    """The winning seat; ``None`` for a draw, a double forfeit or a voided game."""
    forfeit: Forfeit | None = None
    final_cover: str | None = None
    """The card the referee covered with for the player with a single card left, in a game
    drawn by the final answer (rules.md); not a move."""
    void_reason: str = ""
    referee_version: str = REFEREE_VERSION
    players: tuple[str, ...] = field(default=("", ""))
    """Names (or submission ids) at seats 0 and 1 (and 2, 3 at a table)."""
    started: float = 0.0
    """Wall-clock start (seconds since the epoch)."""
    finished: float = 0.0
    """Wall-clock end (seconds since the epoch)."""
    ruleset: str = "default"
    """``default`` (rules.md) or ``classic`` (rules-classic.md)."""
    seats: int = 2
    """Seats at the table (2 for the default game)."""
    loser: int | None = None
    """Classic table: the seat that lost (the last holder or the offender); ``None`` on a draw,
    at the turn limit, after a double forfeit and in a voided game. Unused (None) by the
    default game, whose loser is ``1 - winner``."""
    pairwise: tuple[tuple[int, int], ...] = ()
    """Classic table: the game as (winning seat, losing seat) pairs ([ruling] of the rules
    page); empty for the default game (see :meth:`pair_results`)."""
    time_controls: tuple[TimeControl, ...] = ()
    """Each seat's time control in this game, seat 0 first (bots may play under different
    controls); empty in records made before controls were recorded."""
    double_forfeit_detail: str = ""
    """A double forfeit: why no bot could start (each seat's failure, as the last attempt
    saw it); empty for every other ending (and in records made before it was kept)."""

    def __post_init__(self) -> None:
        if self.double_forfeit_detail and self.ending is not GameEndReason.DOUBLE_FORFEIT:
            raise ValueError(
                f"a {self.ending.value!r} game has no double-forfeit detail,"
                f" got {self.double_forfeit_detail!r}"
            )
        if self.time_controls and len(self.time_controls) != self.seats:
            raise ValueError(
                f"{self.seats} seats need {self.seats} time controls, got {self.time_controls!r}"
            )
        if self.ruleset != "default":
            self._check_table()
            return
        if self.seats != 2 or self.loser is not None or self.pairwise:
            raise ValueError(
                f"a default-ruleset game has 2 seats and no loser/pairwise fields, got seats="
                f"{self.seats!r} loser={self.loser!r} pairwise={self.pairwise!r}"
            )
        if (self.forfeit is not None) != self.ending.is_forfeit:
            raise ValueError(f"ending {self.ending.value!r} with forfeit {self.forfeit!r}")
        if self.forfeit is not None and self.forfeit.reason is not self.ending:
            raise ValueError(f"forfeit {self.forfeit.reason.value!r} but {self.ending.value!r}")
        if (self.ending is GameEndReason.VOID) != bool(self.void_reason):
            raise ValueError(f"ending {self.ending.value!r} with void reason {self.void_reason!r}")
        if self.forfeit is not None and self.winner != 1 - self.forfeit.seat:
            raise ValueError(
                f"seat {self.forfeit.seat} forfeited, so seat {1 - self.forfeit.seat} wins,"
                f" not {self.winner!r}"
            )
        if self.ending in (GameEndReason.LAST_HOLDER, GameEndReason.ALL_OUT):
            raise ValueError(f"{self.ending.value!r} is an ending of the classic table only")
        if self.ending is GameEndReason.OUT and self.winner is None:
            raise ValueError(f"a game won by going out needs a winner, got {self.winner!r}")
        if self.ending in _NO_WINNER and self.winner is not None:
            raise ValueError(f"a {self.ending.value!r} game has no winner, got {self.winner!r}")
        if (self.final_cover is not None) != (self.ending is GameEndReason.DRAW_BY_FINAL_ANSWER):
            raise ValueError(
                f"an automatic final cover ({self.final_cover!r}) belongs to a draw by the final"
                f" answer, and only to it; this game ended by {self.ending.value!r}"
            )

    def _check_table(self) -> None:
        """The invariants of a classic-table record (see the class docstring)."""
        if self.ruleset != "classic" or self.seats not in (2, 3, 4):
            raise ValueError(f"unknown table: ruleset {self.ruleset!r} with {self.seats!r} seats")
        if len(self.players) != self.seats:
            raise ValueError(f"{self.seats} seats need {self.seats} names, got {self.players!r}")
        if not 0 <= self.dealer < self.seats:
            raise ValueError(f"dealer {self.dealer!r} is not a seat of a {self.seats}-seat table")
        if self.ending in _DEFAULT_ONLY or self.final_cover is not None:
            raise ValueError(f"the classic table has no {self.ending.value!r} ending/final cover")
        if (self.forfeit is not None) != self.ending.is_forfeit:
            raise ValueError(f"ending {self.ending.value!r} with forfeit {self.forfeit!r}")
        if (self.ending is GameEndReason.VOID) != bool(self.void_reason):
            raise ValueError(f"ending {self.ending.value!r} with void reason {self.void_reason!r}")
        others = (
            ()
            if self.loser is None
            else tuple((s, self.loser) for s in range(self.seats) if s != self.loser)
        )
        if self.forfeit is not None and self.loser != self.forfeit.seat:
            raise ValueError(f"seat {self.forfeit.seat} forfeited, so it loses, not {self.loser}")
        if self.ending is GameEndReason.LAST_HOLDER and self.loser is None:
            raise ValueError("a game lost by the last holder needs its loser")
        if self.loser is not None and not 0 <= self.loser < self.seats:
            raise ValueError(f"loser {self.loser!r} is not a seat of a {self.seats}-seat table")
        if self.ending is GameEndReason.TURN_LIMIT:
            winners = {w for w, _ in self.pairwise}
            losers = {x for _, x in self.pairwise}
            if (
                self.loser is not None
                or winners & losers
                or not winners | losers <= set(range(self.seats))
            ):
                raise ValueError(f"inconsistent turn-limit results {self.pairwise!r}")
        elif tuple(sorted(self.pairwise)) != others and not self._several_did_not_start():
            raise ValueError(f"pairwise results {self.pairwise!r} must be {others!r}")
        expected = 1 - self.loser if self.seats == 2 and self.loser is not None else None
        if self.ending is GameEndReason.TURN_LIMIT and self.seats == 2 and self.pairwise:
            expected = self.pairwise[0][0]
        if self.winner != expected:
            raise ValueError(f"winner must be {expected!r} at this table, got {self.winner!r}")

    def _several_did_not_start(self) -> bool:
        """Whether this is a table game several seats could not start (no move played): then
        every seat that started beats each of them, and the loser (the forfeit's seat) is
        the first of them in the order of play (clockwise from the dealer's left)."""
        if self.forfeit is None or self.moves or self.loser is None:
            return False
        offenders = {x for _, x in self.pairwise}
        started = set(range(self.seats)) - offenders
        expected = sorted((s, x) for x in offenders for s in started)
        return (
            self.loser in offenders
            and bool(started)
            and sorted(self.pairwise) == expected
            and self.loser == min(offenders, key=lambda x: (x - self.dealer - 1) % self.seats)
        )

    def pair_results(self) -> tuple[tuple[int, int], ...]:
        """The counted game as (winning seat, losing seat) pairs: the one source of ratings.

        The default game: its winner beats the other seat (nothing on a draw). The classic
        table: :attr:`pairwise`. A voided game has none.
        """
        if self.voided:
            return ()
        if self.ruleset != "default":
            return self.pairwise
        return () if self.winner is None else ((self.winner, 1 - self.winner),)

    def outcome(self, seat: int) -> str:
        """``win``, ``loss`` or ``draw`` of ``seat`` in a counted game (:func:`seat_outcome`)."""
        return seat_outcome(self.pair_results(), seat)

    @property
    def voided(self) -> bool:
        """An infrastructure failure: the game does not count and is replayed with this deal."""
        return self.ending is GameEndReason.VOID

    def score(self, seat: int) -> float:
        """1 for a win, ½ for a draw, 0 for a loss (from ``seat``'s side)."""
        if self.ruleset != "default":
            return {"win": 1.0, "draw": 0.5, "loss": 0.0}[self.outcome(seat)]
        if self.winner is None:
            return 0.5
        return 1.0 if self.winner == seat else 0.0


_ALSO: Final = re.compile(r"; ([^;\n]*?) \(seat (\d+)\) also: ")
"""Where a further offender's part starts in the detail of a game several bots forfeited."""


def joint_forfeit_detail(first: str, others: Iterable[tuple[str, int, str]]) -> str:
    """The forfeit detail of a table game that several bots could not start: the first
    offender's own detail, then each other's ``(name, seat, detail)`` as ``; NAME (seat N)
    also: DETAIL`` (read back by :func:`offender_detail`)."""
    also = "".join(f"; {name} (seat {seat}) also: {detail}" for name, seat, detail in others)
    return clip(first + also)


def offender_detail(detail: str, seat: int, forfeit_seat: int | None) -> str:
    """The part of a game's forfeit ``detail`` about ``seat``: all of it for a single
    offender; at a table where several bots could not start, the forfeit's own part for
    ``forfeit_seat`` and the ``also:`` part of any other offender (see
    :func:`joint_forfeit_detail`)."""
    parts = list(_ALSO.finditer(detail))
    if not parts:
        return detail
    if seat == forfeit_seat:
        return detail[: parts[0].start()]
    for index, part in enumerate(parts):
        if int(part.group(2)) == seat:
            end = parts[index + 1].start() if index + 1 < len(parts) else len(detail)
            return detail[part.end() : end]
    return detail


def table_losers(loser: int, pairwise: Iterable[Sequence[int]]) -> list[int]:
    """The seats that lost a table game whose ``loser`` is set: ``loser`` first, then any
    other seat its pairwise results beat (several bots that could not start), in seat order."""
    return [loser, *sorted({x for _, x in pairwise} - {loser})]


def seat_outcome(pairwise: Iterable[Sequence[int]], seat: int) -> str:
    """``win``, ``loss`` or ``draw`` of ``seat`` in a game of these ``(winner, loser)`` seat
    pairs: a loss when it lost to anyone, a win when it beat someone and lost to nobody, else
    a draw (how a series counts a table game)."""
    pairs = list(pairwise)
    if any(x == seat for _, x in pairs):
        return "loss"
    if any(w == seat for w, _ in pairs):
        return "win"
    return "draw"


_DEFAULT_ONLY: Final = frozenset({GameEndReason.OUT, GameEndReason.DRAW_BY_FINAL_ANSWER})
"""Endings of the default game only."""

_NO_WINNER: Final = frozenset(
    {
        GameEndReason.DRAW_BY_FINAL_ANSWER,
        GameEndReason.TURN_LIMIT,
        GameEndReason.DOUBLE_FORFEIT,
        GameEndReason.VOID,
    }
)
