"""Game-level parallelism for one pair of bots: several independent series at once.

A series must stay in order (the loser deals the next game), so games of one series cannot
run side by side. Instead a run of ``games`` games with ``jobs`` at once is split into
``jobs`` independent series of the same pair, each with its own seed derived from the run's
seed, each keeping the loser-deals order (and, in the duplicate format, its deal pairs);
they run in threads and report every counted game as it ends.

With ``jobs == 1`` the single series uses the run's seed itself, so a run is the same series
as before parallelism existed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from referee.record import GameRecord
from referee.series import (
    BotSlot,
    SeriesAborted,
    SeriesConfig,
    SeriesConfigError,
    SeriesFormat,
    SeriesInterrupted,
    run_series,
)

SlotFactory = Callable[[int], tuple[BotSlot, BotSlot]]
"""``make_slots(series_index)``: the two seats of one series (closed by :func:`run_pairing`)."""

GameCallback = Callable[[int, int, GameRecord], None]
"""``on_game(series_index, game_number, record)`` for each counted (not voided) game."""


def series_seed(seed: int | str, index: int, jobs: int) -> int | str:
    """The seed of series ``index`` (0-based) of a run split ``jobs`` ways."""
    return seed if jobs == 1 else f"{seed}/{index + 1}"


def split_games(games: int, jobs: int, series_format: SeriesFormat) -> list[int]:
    """How many games each of at most ``jobs`` series plays (none gets zero games; deal
    pairs stay whole in the duplicate format)."""
    if games < 1 or jobs < 1:
        raise SeriesConfigError(f"games and jobs must be positive, got {games} and {jobs}")
    unit = 2 if series_format is SeriesFormat.DUPLICATE else 1
    if games % unit:
        raise SeriesConfigError(
            f"the duplicate format plays deals in pairs: games must be even, got {games}"
        )
    units = games // unit
    parts = min(jobs, units)
    return [unit * (units // parts + (1 if i < units % parts else 0)) for i in range(parts)]


@dataclass(frozen=True, slots=True)
class PairingOutcome:
    """How a parallel run ended: ``stopped`` when ``should_stop`` ended it early;
    ``errors`` holds one line per series that could not finish (infrastructure)."""

    stopped: bool
    errors: tuple[str, ...] = ()


def pairing_configs(base: SeriesConfig, jobs: int) -> list[SeriesConfig]:
    """The series of a run of ``base.games`` games split ``jobs`` ways (with a deal book,
    each series continues the book where the one before it stops: no deck twice too soon)."""
    sizes = split_games(base.games, jobs, base.format)
    starts = [base.book_start + sum(sizes[:i]) // 2 for i in range(len(sizes))]
    return [
        replace(
            base,
            games=n,
            seed=series_seed(base.seed, i, len(sizes)),
            book_start=starts[i] if base.book else base.book_start,
        )
        for i, n in enumerate(sizes)
    ]


def run_pairing(
    configs: list[SeriesConfig],
    make_slots: SlotFactory,
    on_game: GameCallback,
    *,
    should_stop: Callable[[], bool] | None = None,
) -> PairingOutcome:
    """Run the series ``configs`` in parallel (one thread each), calling ``on_game`` from the
    series' thread as each counted game ends (the callback must be thread-safe).

    When ``should_stop()`` turns true every series stops before its next game (a game in
    progress is dropped, as after Ctrl-C). A KeyboardInterrupt in the caller's thread stops
    the series the same way and is raised again once they have stopped.
    """
    stop = threading.Event()

    def stopping() -> bool:
        if not stop.is_set() and should_stop is not None and should_stop():
            stop.set()
        return stop.is_set()

    def one(index: int) -> str:
        slots = make_slots(index)

        def recorder(number: int, attempt: int, record: GameRecord) -> None:
            if not record.voided:
                on_game(index, number, record)

        try:
            run_series(configs[index], slots, recorder=recorder, should_stop=stopping)
        except SeriesInterrupted:
            return ""
        except SeriesAborted as exc:
            return f"series {index + 1}: {exc}"
        finally:
            for slot in slots:
                slot.close()
        return ""

    pool = ThreadPoolExecutor(len(configs), thread_name_prefix="kryt-pairing")
    futures = [pool.submit(one, i) for i in range(len(configs))]
    try:
        errors = tuple(e for e in (f.result() for f in futures) if e)
    except KeyboardInterrupt:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return PairingOutcome(stopped=stop.is_set(), errors=errors)
