"""``kryt play A B``: a quick run between two bots, printed as it goes, with the statistics
engine testers expect (Elo difference with the bounds of its 95% interval, LOS, draw ratio,
pentanomial for duplicate deals) and an optional SPRT that stops the run once the answer is
clear.

``-j N`` plays N games at once: the run is split into N independent series of the pair with
seeds derived from ``--seed``, each keeping the loser-deals order (see
:mod:`referee.pairing`). Heavy modules are imported inside the command, so ``kryt play
--help`` stays fast.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kryt.errors import ExitCode, Interrupted, UserError
from kryt.options import (
    MAX_GAMES,
    BackendAliasOption,
    BackendOption,
    backend_choice,
    refuse_contradictory_time,
    refuse_two_time_controls,
)
from kryt.texts import detail_lines, result_by

if TYPE_CHECKING:
    from rich.console import Console

    from arena.tournament.seats import SandboxSlot
    from leaderboard.ratings.match_stats import ScoreSample, Sprt
    from referee.match import Player
    from referee.protocol.messages import GameEndReason, Handshake
    from referee.protocol.messages import TimeControl as Control
    from referee.record import GameRecord
    from sandbox import Backend, Submission

SPRT_KEYS = ("elo0", "elo1", "alpha", "beta")


@dataclass(slots=True)
class _Tally:
    """Results of a run from bot A's side (seat 0 of every series), updated by the series'
    threads as games end."""

    games: int
    duplicate: bool
    sprt: Sprt | None
    verbose: bool
    report_every: int
    names: tuple[str, str]
    out: Console
    lock: threading.Lock = field(default_factory=threading.Lock)
    wins: int = 0
    draws: int = 0
    losses: int = 0
    scores: dict[tuple[int, int], float] = field(default_factory=dict)
    records: dict[tuple[int, int], GameRecord] = field(default_factory=dict)
    decided: bool = False
    last_line: str | None = None
    """The last line printed, when it was the standings (the final one is not repeated)."""

    def pentanomial(self) -> list[int]:
        """Deal pairs (games 2k-1, 2k of a series) scoring 0, ½, 1, 1½, 2 for A."""
        counts = [0] * 5
        for (series, number), score in self.scores.items():
            if number % 2 == 0 and (series, number - 1) in self.scores:
                counts[round(2 * (score + self.scores[(series, number - 1)]))] += 1
        return counts

    def sample(self) -> ScoreSample:
        """What the SPRT and the interval are computed from."""
        from leaderboard.ratings.match_stats import pentanomial_sample, trinomial_sample

        if self.duplicate:
            return pentanomial_sample(self.pentanomial())
        return trinomial_sample(self.wins, self.draws, self.losses)

    def add(self, series: int, number: int, record: GameRecord) -> None:
        """Count one game and print its line or the running standings (thread-safe)."""
        from rich.text import Text

        from sandbox.death import printable as visible

        with self.lock:
            if self.decided:
                # A game another series ended while the deciding one was being counted: the
                # SPRT has stopped the run, and games in progress are dropped (docs/ratings.md).
                return
            score = 0.5 if record.winner is None else 1.0 - record.winner
            self.scores[(series, number)] = score
            self.records[(series, number)] = record
            self.wins += score == 1.0
            self.losses += score == 0.0
            self.draws += score == 0.5
            done = self.wins + self.draws + self.losses
            self.last_line = None
            if self.verbose:
                winner = "draw" if record.winner is None else f"{self.names[record.winner]} wins"
                said = result_by(winner, record.ending.value)
                said_detail = record.double_forfeit_detail
                if record.forfeit is not None:
                    said_detail = f"seat {record.forfeit.seat} {record.forfeit.detail}"
                first, below = detail_lines(said_detail, width=120)
                self.out.print(
                    Text(
                        f"game {done}/{self.games} (series {series + 1} game {number},"
                        f" dealer seat {record.dealer}): {visible(said)},"
                        f" {len(record.moves)} actions{': ' * bool(first)}{first}"
                    )
                )
                for line in below:  # the forfeited bot's process and last output
                    self.out.print(Text(line), soft_wrap=True)
            llr_text = ""
            if self.sprt is not None:
                llr = self.sprt.llr(self.sample())
                llr_text = f"  LLR {llr:.2f} ({self.sprt.lower:.2f}, {self.sprt.upper:.2f})"
                if self.sprt.decide(llr).value != "continue":
                    self.decided = True
            if not self.verbose and (done % self.report_every == 0 or done == self.games):
                self.last_line = self.standings() + llr_text
                self.out.print(Text(self.last_line))
            elif self.verbose and llr_text:
                self.out.print(Text(llr_text.strip()))

    def standings(self) -> str:
        """``Score of A vs B: +W =D -L [0.550] 20/100``."""
        done = self.wins + self.draws + self.losses
        score = (self.wins + self.draws / 2) / done if done else 0.5
        return (
            f"Score of {self.names[0]} vs {self.names[1]}: +{self.wins} ={self.draws}"
            f" -{self.losses} [{score:.3f}] {done}/{self.games}"
        )


def _split_refs(refs: list[str], sprt_words: list[str]) -> tuple[list[str], list[str]]:
    """Bot references and SPRT settings: words like ``elo1=5`` after ``--sprt`` land among
    the positional arguments (``--sprt elo0=0 elo1=5 alpha=0.05 beta=0.05``)."""
    bots, settings = [], list(sprt_words)
    for ref in refs:
        key = ref.partition("=")[0]
        if "=" in ref and key in SPRT_KEYS:
            if not sprt_words:
                raise UserError(f"{ref!r} is an SPRT setting: give it after --sprt")
            settings.append(ref)
        else:
            bots.append(ref)
    if len(bots) != 2:
        raise UserError(f"kryt play needs exactly two bots, got {len(bots)}: {bots}")
    return bots, settings


def play(
    bots: Annotated[
        list[str],
        typer.Argument(
            help="Two bots (seat 0, seat 1): folders, archives or bundled bots as"
            " builtin:NAME (builtin:greedy, builtin:random, builtin:mc).",
            show_default=False,
        ),
    ],
    games: Annotated[
        int, typer.Option("--games", "-n", min=1, max=MAX_GAMES, help="Games to play.")
    ] = 10,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            help="Games at once: the run is split into this many independent series.",
        ),
    ] = 1,
    seed: Annotated[
        str | None,
        typer.Option(help="Run seed (deals, first dealers); default: a secret random one."),
    ] = None,
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="standard (the default), or duplicate (each deal twice); a --book plays"
            " duplicate.",
            show_default=False,
        ),
    ] = None,
    move_seconds: Annotated[
        float | None, typer.Option(help="Time per move (default 1).", show_default=False)
    ] = None,
    bank_seconds: Annotated[
        float | None, typer.Option(help="Time bank per game (default 10).", show_default=False)
    ] = None,
    increment_seconds: Annotated[
        float | None,
        typer.Option(
            help="Added to a bot's bank after each of its moves (default 0).", show_default=False
        ),
    ] = None,
    time: Annotated[
        list[str] | None,
        typer.Option(
            "--time",
            help="A time control MOVE+BANK[+INCREMENT] in seconds (1+10+0.1: 1 s a move, a"
            " 10 s bank, 0.1 s added after each move) for both bots, or BOT=MOVE+BANK[+INC]"
            " for one bot (BOT: 1 or 2, the bot as given, or its name). Repeatable.",
            show_default=False,
        ),
    ] = None,
    book: Annotated[
        Path | None,
        typer.Option(
            "--book",
            help="A deal book (one deck of 36 cards per line, docs/games-format.md): its"
            " decks in order, each played twice with the hands swapped (duplicate format).",
            show_default=False,
        ),
    ] = None,
    clock: Annotated[
        str, typer.Option(help="What moves are charged: wall or cpu (the bot's CPU time).")
    ] = "wall",
    sprt: Annotated[
        list[str] | None,
        typer.Option(
            "--sprt",
            help="Stop early by SPRT: --sprt elo0=0 elo1=5 alpha=0.05 beta=0.05"
            " (trinomial model; pentanomial with --format duplicate).",
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="One line per game as it ends.")
    ] = False,
    report_every: Annotated[
        int, typer.Option(min=1, help="Print the running score every N games.")
    ] = 10,
    backend: BackendOption = "auto",
    sandbox_alias: BackendAliasOption = None,
) -> None:
    """Play a run between your own bots (trusted: they may run without isolation).

    Prints the running score (each game with --verbose), then the Elo difference with the
    bounds of its 95% interval, LOS and draw ratio (and the pentanomial for duplicate
    deals)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from arena.tournament.config import SandboxSettings
    from arena.tournament.seats import SandboxSlot
    from arena.tournament.tracebacks import with_traceback
    from leaderboard.ratings.match_stats import Sprt, match_stats
    from referee.book import BookError, load_book
    from referee.pairing import pairing_configs, run_pairing
    from referee.series import SeriesConfig, SeriesFormat
    from referee.timecontrol import format_time_spec
    from sandbox import choose_backend, load_submission
    from sandbox.death import printable as visible
    from sandbox.submission import SubmissionError
    from sdk.examples import resolve_bot_ref

    out = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True)
    refs, sprt_words = _split_refs(bots, sprt or [])
    test = Sprt.parse(sprt_words) if sprt is not None else None
    try:
        series_format = SeriesFormat(format or SeriesFormat.STANDARD.value)
    except ValueError:
        raise UserError(f"--format must be standard or duplicate, got {format!r}") from None
    decks: tuple[tuple[str, ...], ...] = ()
    if book is not None:
        if series_format is not SeriesFormat.DUPLICATE and format is not None:
            raise UserError(
                f"--book plays each deck twice with the hands swapped (the duplicate format),"
                f" not --format {format}: leave --format out (or give duplicate)"
            )
        try:
            decks = load_book(book)
        except BookError as exc:
            raise UserError(str(exc)) from None
        series_format = SeriesFormat.DUPLICATE  # a book plays each deck with hands swapped
    # Time controls are checked before the sandbox is: a bad one is the only line printed.
    refuse_contradictory_time(
        [spec for spec in time or [] if "=" not in spec],
        move_seconds,
        bank_seconds,
        increment_seconds,
    )
    control = _time_control(
        1.0 if move_seconds is None else move_seconds,
        10.0 if bank_seconds is None else bank_seconds,
        clock,
        0.0 if increment_seconds is None else increment_seconds,
    )
    shared, per_bot = _time_options(time or [], control)
    if seed is None:
        from arena.tournament.seeds import draw_seed

        seed = str(draw_seed())
    # Archives are unpacked into a temporary folder that lives as long as the run.
    with tempfile.TemporaryDirectory(prefix="kryt-play-") as tmp:
        submissions = []
        names: list[str] = []
        for seat, ref in enumerate(refs):
            path = Path(resolve_bot_ref(ref))
            unpack = None if path.is_dir() else Path(tmp) / f"bot{seat}"
            try:
                submission = load_submission(path, unpack_dir=unpack)
            except SubmissionError as exc:
                raise exc.located(ref) from None  # which of the two bots is refused
            name = f"{submission.manifest.name} {submission.manifest.version}"
            if seat == 1 and names and names[0] == name:
                name += " (2)"
            submissions.append(submission)
            names.append(name)
        # The bots are found first, and what --time BOT=... names among them: a missing bot
        # or a control naming none is the only line printed.
        seat_controls = _seat_controls(per_bot, shared, refs, submissions, names)
        try:
            sandbox = choose_backend(backend_choice(backend, sandbox_alias), allow_unsafe=False)
        except ValueError as exc:  # an unknown backend name (an unusable one is a SandboxError)
            raise UserError(f"--backend: {exc}") from None
        # A bot the backend cannot run would forfeit every game (each tried three times):
        # refused before the first, as `kryt bot check --backend none` refuses it.
        _refuse_unrunnable(sandbox, refs, submissions, backend_choice(backend, sandbox_alias))
        err.print(f"sandbox: [bold]{sandbox.describe()}[/bold]")
        problem = sandbox.cpu_clock_problem() if clock == "cpu" else None
        if problem:
            err.print(Text(f"warning: --clock cpu: {problem}; moves are charged wall time"))
            shared = replace(shared, clock="wall")
            seat_controls = tuple(replace(c, clock="wall") for c in seat_controls)
        base = SeriesConfig(
            games=games,
            # Only ASCII digits make a number: str.isdigit() also holds for "²" and "١".
            seed=int(seed) if re.fullmatch(r"-?[0-9]+", seed) else seed,
            format=series_format,
            time_control=shared,
            book=decks,
        )
        configs = pairing_configs(base, jobs)
        limits = SandboxSettings().limits()
        if seat_controls:
            configs = [replace(c, seat_controls=seat_controls) for c in configs]
            shown = ", ".join(
                f"{visible(names[s])} {format_time_spec(seat_controls[s])}" for s in (0, 1)
            )
            err.print(Text(f"time controls (move+bank+increment): {shown}"), soft_wrap=True)
        if decks:
            shown = f"deal book: {len(decks)} decks from {visible(str(book))}"
            err.print(Text(shown), soft_wrap=True)

        start_failures: dict[int, str] = {}
        made: dict[int, tuple[_RememberedSlot, _RememberedSlot]] = {}

        def make_slots(index: int) -> tuple[_RememberedSlot, _RememberedSlot]:
            slots = tuple(
                _RememberedSlot(
                    SandboxSlot(
                        sandbox,
                        submissions[seat],
                        name=names[seat],
                        limits=limits,
                        label=f"kryt-play-{os.getpid()}-{index}-{seat}",
                        trusted=True,
                    ),
                    seat,
                    start_failures,
                )
                for seat in (0, 1)
            )
            made[index] = slots[0], slots[1]
            return slots[0], slots[1]

        def on_game(series: int, number: int, record: GameRecord) -> None:
            # As a tournament records it: a crash keeps its traceback, a timeout or a
            # crash the bot did not report its process's state and last output.
            slots = made[series]
            record = with_traceback(
                record,
                lambda seat: slots[seat].slot.logs(),
                death_of=lambda seat: slots[seat].slot.death_description(),
            )
            tally.add(series, number, record)

        tally = _Tally(
            games=games,
            duplicate=series_format is SeriesFormat.DUPLICATE,
            sprt=test,
            verbose=verbose,
            report_every=report_every,
            names=(names[0], names[1]),
            out=out,
        )
        if len(configs) > 1:
            sizes = ", ".join(str(c.games) for c in configs)
            err.print(f"{len(configs)} series in parallel ({sizes} games)")
        try:
            outcome = run_pairing(configs, make_slots, on_game, should_stop=lambda: tally.decided)
        except KeyboardInterrupt:  # the bots are stopped: sum up the games played so far
            outcome = None
    if not verbose and tally.records and len(tally.records) <= 20:
        # The seed is the user's text: shown as it is (no markup), control characters visible.
        title = f"{names[0]} (seat 0) vs {names[1]} (seat 1), seed {seed}"
        table = Table(title=Text(visible(title)))
        for column in ("series", "game", "dealer", "winner", "ending", "actions", "details"):
            table.add_column(column)
        for (series, number), record in sorted(tally.records.items()):
            winner = "draw" if record.winner is None else names[record.winner]
            detail, _below = detail_lines(_detail(record), width=80)
            table.add_row(
                str(series + 1),
                str(number),
                str(record.dealer),
                Text(winner),
                record.ending.value,
                str(len(record.moves)),
                Text(detail),
            )
        out.print(table)
        tally.last_line = None  # the score again, under the table
    for error in outcome.errors if outcome is not None else ():
        err.print(Text(f"error: {error}"))
    idle = _never_played(list(tally.records.values()), start_failures)
    if len(idle) == 2:
        # No game was played: a score of draws and an Elo estimate of 0 would be made up.
        err.print(Text("neither bot played: every game was lost to start-up failures", style="red"))
        for seat, reason in sorted(idle.items()):
            _say_never_played(err, names[seat], reason)
        raise _unfinished(err, outcome is None, len(tally.records), games)
    if tally.last_line != tally.standings():  # the last progress line, unless it said this
        out.print(Text(tally.standings()))
    pentanomial = tally.pentanomial() if tally.duplicate else None
    stats = match_stats(tally.wins, tally.draws, tally.losses, pentanomial=pentanomial)
    out.print(Text(f"{names[0]} vs {names[1]}: {stats.format()}"))
    if pentanomial is not None:
        out.print(f"pentanomial (0, ½, 1, 1½, 2 points per deal pair): {pentanomial}")
        if note := unpaired_note(pentanomial, len(tally.records)):
            out.print(note)
    if test is not None:
        out.print(Text(test.format(tally.sample())))
        if outcome is not None and outcome.stopped:
            out.print(f"stopped early by the SPRT after {len(tally.records)} of {games} games")
    if not verbose:  # (verbose: below each game's line already)
        for seat, (place, record) in _last_said_forfeits(tally.records).items():
            if seat not in idle:
                _say_last_forfeit(err, names[seat], place, record)
    if idle:  # one bot never started (both: said above)
        [(seat, reason)] = idle.items()
        _say_never_played(err, names[seat], reason)
        raise _unfinished(err, outcome is None, len(tally.records), games)
    if outcome is None:
        raise _unfinished(err, True, len(tally.records), games)


def _unfinished(err: Console, interrupted: bool, played: int, games: int) -> Exception:
    """How a run that did not end well ends: a Ctrl-C is an interrupted run (exit 130),
    even with a bot that had not started yet (it might have in a later game); otherwise a
    bot that never played fails it (exit 1)."""
    if not interrupted:
        return typer.Exit(ExitCode.FAILED)
    err.print(
        f"interrupted after {played} of {games} games: these figures are all there is"
        " (kryt play stores nothing)",
        soft_wrap=True,
    )
    return Interrupted()


def unpaired_note(pentanomial: list[int], games: int) -> str | None:
    """The line saying games were left out of the pentanomial (a run stopped by the SPRT
    between the two games of a deal pair), or None when every game is in a pair: the score
    line counts every game, the Elo, its interval and LOS only complete pairs."""
    pairs = sum(pentanomial)
    left = games - 2 * pairs
    if left <= 0:
        return None
    games_left = f"{left} game{'s' if left != 1 else ''} without {'its' if left == 1 else 'their'}"
    if pairs == 0:
        # The figures above are then those of no sample at all (match_stats): say so rather
        # than "from the 0 complete deal pairs", which reads as if something was measured.
        said = "no deal pair is complete, so Elo, interval and LOS say nothing"
    elif pairs == 1:
        said = "Elo, interval and LOS from the 1 complete deal pair"
    else:
        said = f"Elo, interval and LOS from the {pairs} complete deal pairs"
    return f"{said}: {games_left} pair left out"


def _refuse_unrunnable(
    sandbox: Backend, refs: list[str], submissions: list[Submission], chosen: str
) -> None:
    """A ``UserError`` naming the first bot (as given) whose runtime ``sandbox`` cannot run
    (:meth:`~sandbox.backend.Backend.runtime_problem`, what it checks at each start): a bot
    of another runtime than Python on the process backend, or a bot whose runtime's image
    Docker does not have (exit 3, with the command that builds it)."""
    for ref, submission in zip(refs, submissions, strict=True):
        runtime = submission.manifest.runtime
        problem = sandbox.runtime_problem(runtime)
        if problem is None:
            continue
        if sandbox.name != "process":
            raise UserError(f"{ref!r}: {problem}", code=ExitCode.UNAVAILABLE)
        # Said as `kryt bot check --backend none` says it (sdk.tools.check).
        raise UserError(
            f"{ref!r}: a {runtime} bot is built and run by a sandbox: play it with"
            f" --backend bwrap or --backend docker (the {sandbox.name} backend runs Python"
            " bots only)",
            # Asked for none: say why auto fell back to plain processes.
            hint=f"--backend auto chose {sandbox.describe()}" if chosen == "auto" else "",
        )


class _RememberedSlot:
    """A seat's :class:`SandboxSlot` that keeps why its bot last failed to start.

    A double forfeit's record keeps both bots' failures in one clipped text; the summary of
    a run in which neither bot played names each bot's own reason from here."""

    def __init__(self, slot: SandboxSlot, seat: int, failures: dict[int, str]) -> None:
        self.slot = slot
        self.name = slot.name
        self._seat = seat
        self._failures = failures

    def player(self, handshake: Handshake) -> Player:
        """The slot's player; a start-up failure is remembered, then raised again."""
        from referee.series import BotStartError

        try:
            return self.slot.player(handshake)
        except BotStartError as exc:
            self._failures[self._seat] = str(exc)  # one key per seat: the last one wins
            raise

    def diagnose(self) -> GameEndReason | None:
        """The slot's diagnosis."""
        return self.slot.diagnose()

    def forget(self) -> None:
        """The slot's bot starts afresh for the next game (a deal it has seen)."""
        self.slot.forget()

    def close(self) -> None:
        """Stop the slot's bot."""
        self.slot.close()


def _say_never_played(err: Console, name: str, reason: str) -> None:
    """The "never played" line of bot ``name``: the reason's first line on it, how its
    process stood and its last output below it (as ``kryt tournament run`` says it)."""
    from rich.text import Text

    from sandbox.death import printable

    first, below = detail_lines(reason)
    line = f"{printable(name)} never played: every game was its start-up failure ({first})"
    err.print(Text(line, style="red"), soft_wrap=True)
    for shown in below:
        err.print(Text(shown), soft_wrap=True)


def _last_said_forfeits(
    records: dict[tuple[int, int], GameRecord],
) -> dict[int, tuple[tuple[int, int], GameRecord]]:
    """Each seat's last forfeit (by series and game) whose detail says more than its first
    line (the bot's process and last output, a traceback): what a run without ``--verbose``
    shows once per bot, since it stores nothing to replay."""
    said: dict[int, tuple[tuple[int, int], GameRecord]] = {}
    for place, record in sorted(records.items()):
        if record.forfeit is not None and "\n" in record.forfeit.detail:
            said[record.forfeit.seat] = place, record
    return said


def _say_last_forfeit(err: Console, name: str, place: tuple[int, int], record: GameRecord) -> None:
    """``name``'s forfeit in ``record``, its reason on one line and the rest below it."""
    from rich.text import Text

    from sandbox.death import printable

    assert record.forfeit is not None
    first, below = detail_lines(record.forfeit.detail)
    series, number = place
    line = (
        f"{printable(name)} forfeited series {series + 1} game {number}"
        f" ({record.ending.value}): {first}"
    )
    err.print(Text(line, style="red"), soft_wrap=True)
    for shown in below:
        err.print(Text(shown), soft_wrap=True)


def _never_played(records: list[GameRecord], failures: dict[int, str]) -> dict[int, str]:
    """The seats whose bot never started, each with why (``{seat: reason}``, the whole
    detail: its first line says why, the others show the bot's output): every game was
    that bot's own start-up failure or a double forfeit (neither started). ``failures``
    has each seat's last start-up failure, for the double forfeits."""
    from referee.protocol.messages import GameEndReason

    if not records:
        return {}
    idle: dict[int, str] = {}
    for seat in (0, 1):
        own = [r.forfeit.detail for r in records if r.forfeit and r.forfeit.seat == seat]
        if all(
            r.ending is GameEndReason.DOUBLE_FORFEIT
            or (r.ending is GameEndReason.STARTUP_FAILURE and r.forfeit and r.forfeit.seat == seat)
            for r in records
        ):
            doubles = [r.double_forfeit_detail for r in records if r.double_forfeit_detail]
            reason = next(iter(own), None) or failures.get(seat) or next(iter(doubles), "")
            idle[seat] = reason
    return idle


def _detail(record: GameRecord) -> str:
    """What went wrong in ``record`` (a forfeit, or why neither bot started), or ``""``."""
    if record.forfeit is not None:
        return f"seat {record.forfeit.seat}: {record.forfeit.detail}"
    return record.double_forfeit_detail


def _time_control(move: float, bank: float, clock: str, increment: float = 0.0) -> Control:
    """The control of ``--move-seconds``, ``--bank-seconds``, ``--increment-seconds`` and
    ``--clock``, each held to the bounds of a tournament's (docs/configuration.md)."""
    from referee.protocol.messages import TimeControl as Control
    from referee.timecontrol import (
        BANK_SECONDS,
        INCREMENT_SECONDS,
        MOVE_SECONDS,
        check_seconds,
    )

    try:
        check_seconds("--move-seconds", move, MOVE_SECONDS)
        check_seconds("--bank-seconds", bank, BANK_SECONDS)
        check_seconds("--increment-seconds", increment, INCREMENT_SECONDS)
        return Control.from_seconds(move, bank, clock=clock, increment=increment)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _time_options(specs: list[str], base: Control) -> tuple[Control, dict[str, Control]]:
    """The ``--time`` options: the control of both bots (the last ``SPEC`` without a bot,
    else ``base``) and the per-bot ones by the key they were given under."""
    from referee.timecontrol import parse_time_assignment, parse_time_spec

    shared = base
    per_bot: dict[str, Control] = {}
    try:
        for spec in specs:
            if "=" in spec:
                key, control = parse_time_assignment(spec, base, setting=True)
                if key in per_bot:
                    raise UserError(f"--time gives bot {key!r} two time controls")
                per_bot[key] = control
            else:
                shared = parse_time_spec(spec, base, setting=True)
    except ValueError as exc:
        raise UserError(f"--time: {exc}") from None
    return shared, per_bot


def _seat_controls(
    per_bot: dict[str, Control],
    shared: Control,
    refs: list[str],
    submissions: list[Any],
    names: list[str],
) -> tuple[Control, ...]:
    """Each seat's control when ``--time BOT=...`` named a bot (empty: none did). A bot is
    named by its position (1, 2), its reference as given, its name or its name and version."""
    if not per_bot:
        return ()
    keys = [
        {str(seat + 1), refs[seat], submissions[seat].manifest.name, names[seat]} for seat in (0, 1)
    ]
    controls = [shared, shared]
    named: dict[int, str] = {}
    for key, control in per_bot.items():
        seats = [seat for seat in (0, 1) if key in keys[seat]]
        if not seats:
            raise UserError(
                f"--time {key}=...: no bot is called {key!r} (use 1 or 2, the bot as given,"
                f" or its name: {', '.join(sorted(keys[0] | keys[1]))})"
            )
        if len(seats) > 1:
            raise UserError(f"--time {key}=...: both bots answer to {key!r}; use 1 or 2")
        refuse_two_time_controls(names[seats[0]], named.get(seats[0]), key)
        named[seats[0]] = key
        controls[seats[0]] = control
    return (controls[0], controls[1])
