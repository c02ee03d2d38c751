"""Games and series at a classic table of 2-4 seats (rules-classic.md), under the referee.

A game at the table is played by the referee's one game loop (:func:`referee.match.play_game`
with ``ruleset="classic"``): only the mover gets a view, every decision runs under the one
time control, the engine's legality gate checks each reply, every misbehaviour is a forfeit
and a failure on our side voids the game (it is replayed with the same deal). This module
holds what only a table series needs: its dealers, its handshake, its start failures.

[ruling] A forfeit makes the offender the loser: he deals the next game, the game ends at
once and every other seat beats him. A series is a fixed number of games at one table with
fixed seats; the first dealer comes from the series seed, then the loser deals, and after a
game without a single loser (a draw, the turn limit) the same dealer deals again.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from referee.match import (
    AsyncDiagnose,
    AsyncPlayer,
    Diagnose,
    Player,
    forfeit_results,
    play_game,
    play_game_async,
)
from referee.protocol.messages import (
    PROTOCOL_VERSION,
    GameEndReason,
    Handshake,
    SeriesScore,
    TimeControl,
)
from referee.record import (
    ON_MOVE_FORFEITS,
    REFEREE_VERSION,
    Forfeit,
    GameRecord,
    clip,
    joint_forfeit_detail,
)
from referee.rules import (
    CLASSIC_RULESET,
    Card,
    ClassicGame,
    RulesError,
)
from referee.series import (
    AsyncBotSlot,
    BlockingSlot,
    BotSlot,
    BotStartError,
    InfrastructureError,
    Recorder,
    Refusals,
    SeriesConfig,
    SeriesConfigError,
    SeriesInterrupted,
    forget_seen_deal,
    game_deck,
    play_with_retries,
)
from referee.synchronous import drive

log = logging.getLogger(__name__)


def play_table_game(
    players: Sequence[Player],
    *,
    number: int,
    deck: Sequence[Card | str],
    dealer: int,
    scores: Sequence[SeriesScore],
    time_control: TimeControl | Sequence[TimeControl],
    turn_limit: int,
    diagnose: Diagnose | None = None,
) -> GameRecord:
    """Play game ``number`` at a classic table; ``players[s]`` sits at seat ``s``.

    The referee's one game loop (:func:`referee.match.play_game`) with the classic ruleset.
    """
    return play_game(
        players,
        number=number,
        deck=deck,
        dealer=dealer,
        scores=scores,
        time_control=time_control,
        turn_limit=turn_limit,
        diagnose=diagnose,
        ruleset=CLASSIC_RULESET,
    )


# ---------------------------------------------------------------------------- series


def first_table_dealer(seed: int | str, seats: int) -> int:
    """[ruling] Dealer of the first game of a table series, drawn from the series seed."""
    if seats == 2:  # the same draw as the two-player series
        return random.Random(f"kryt:{seed}:first-dealer").randrange(2)
    return random.Random(f"kryt:{seed}:first-dealer:{seats}").randrange(seats)


def next_table_dealer(dealer: int, record: GameRecord) -> int:
    """The loser deals next (the offender after a forfeit); otherwise the same dealer."""
    return dealer if record.loser is None else record.loser


def planned_table_dealer(
    config: SeriesConfig, number: int, previous: Mapping[int, GameRecord]
) -> int:
    """Dealer of game ``number`` given the counted games before it."""
    dealer = first_table_dealer(config.seed, config.players)
    for n in range(1, number):
        dealer = next_table_dealer(dealer, previous[n])
    return dealer


def table_handshake(config: SeriesConfig, names: Sequence[str], seat: int) -> Handshake:
    """The handshake that opens seat ``seat``'s stream for a table series."""
    return Handshake(
        protocol_version=PROTOCOL_VERSION,
        referee_version=REFEREE_VERSION,
        games=config.games,
        opponent_name=", ".join(n for s, n in enumerate(names) if s != seat),
        time_control=config.control(seat),
        ruleset=config.ruleset,
        players=config.players,
        seat_names=tuple(names),
        seat=seat,
    )


@dataclass(slots=True)
class TableSeriesResult:
    """The counted games of a table series, in order."""

    config: SeriesConfig
    names: tuple[str, ...]
    games: dict[int, GameRecord] = field(default_factory=dict)

    def score(self, seat: int) -> SeriesScore:
        """Wins, draws, losses of ``seat`` over the counted games (see GameRecord.outcome)."""
        outcomes = [g.outcome(seat) for g in self.games.values()]
        return SeriesScore(
            wins=outcomes.count("win"), draws=outcomes.count("draw"), losses=outcomes.count("loss")
        )

    @property
    def forfeits(self) -> list[GameRecord]:
        """Counted games lost by a forfeit."""
        return [g for g in self.games.values() if g.ending.is_forfeit]

    def __str__(self) -> str:
        parts = []
        for seat, name in enumerate(self.names):
            s = self.score(seat)
            parts.append(f"{name} +{s.wins} ={s.draws} -{s.losses}")
        return f"table of {len(self.names)}: {', '.join(parts)} over {len(self.games)} games"


class _StartFailures(InfrastructureError):
    """Some bots of the table could not start: retried, since the sandbox may be at fault."""

    def __init__(self, failures: list[Forfeit], seats: int) -> None:
        super().__init__("; ".join(f.detail for f in failures))
        self.failures = failures
        self.everyone = len(failures) == seats


def run_table_series(
    config: SeriesConfig,
    slots: Sequence[BotSlot],
    *,
    recorder: Recorder | None = None,
    done: Mapping[int, GameRecord] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> TableSeriesResult:
    """:func:`run_table_series_async` for blocking slots (runs without an event loop)."""
    return drive(
        run_table_series_async(
            config,
            [BlockingSlot(slot) for slot in slots],
            recorder=recorder,
            done=done,
            should_stop=should_stop,
        )
    )


async def run_table_series_async(
    config: SeriesConfig,
    slots: Sequence[AsyncBotSlot],
    *,
    recorder: Recorder | None = None,
    done: Mapping[int, GameRecord] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> TableSeriesResult:
    """Play every game of a table series not already in ``done`` (resumption), in order.

    ``slots[s]`` sits at seat ``s`` for the whole series. A crashed bot is restarted for the
    next game; one that cannot be started forfeits the game and is tried again at the next.
    One whose handshake reply refused the series (protocol version, a ruleset it does not
    list) is not started again: each of its remaining games it forfeits with the same
    refusal, the forfeit it would get if started again (:class:`referee.series.Refusals`),
    so dealers and results are those of a restart at every game. A voided game is replayed with
    the same deal up to ``config.max_attempts`` times, then SeriesAborted is raised.
    """
    if config.ruleset != CLASSIC_RULESET or len(slots) != config.players:
        raise SeriesConfigError(
            f"a table series needs the classic ruleset and {config.players} bots, got "
            f"{config.ruleset!r} with {len(slots)}"
        )
    stopping = should_stop or (lambda: False)
    result = TableSeriesResult(config, tuple(s.name for s in slots), dict(done or {}))
    refusals = Refusals()
    for number in range(1, config.games + 1):
        if number in result.games:
            continue
        if stopping():
            raise SeriesInterrupted(f"stopped before game {number}")
        dealer = planned_table_dealer(config, number, result.games)
        deck = game_deck(config.seed, number)
        record = await play_with_retries(
            config,
            number,
            kind="table game",
            described=f"the table {', '.join(result.names)}",
            play_once=partial(_play_once, config, slots, number, deck, dealer, result, refusals),
            start_failure=_StartFailures,
            give_up=partial(_unplayed, config, deck, dealer, result.names),
            recorder=recorder,
            stopping=stopping,
            forget=partial(forget_seen_deal, slots),
        )
        result.games[number] = record
    return result


async def _play_once(
    config: SeriesConfig,
    slots: Sequence[AsyncBotSlot],
    number: int,
    deck: tuple[Card, ...],
    dealer: int,
    result: TableSeriesResult,
    refusals: Refusals,
) -> GameRecord:
    players: list[AsyncPlayer] = []
    failures: list[Forfeit] = []
    for seat, slot in enumerate(slots):
        handshake = table_handshake(config, result.names, seat)
        try:
            players.append(await refusals.player(seat, slot, handshake))
        except BotStartError as exc:
            failures.append(Forfeit(seat, exc.reason, "", clip(str(exc))))
    if len(failures) == 1:
        # %r: the detail quotes what the bot sent (escape sequences included).
        log.warning("%s forfeits: %r", result.names[failures[0].seat], failures[0].detail)
        return _forfeited(config, deck, dealer, result.names, failures[0])
    if failures:
        # Healthy bots start; when several do not, the sandbox may be the culprit: retry.
        raise _StartFailures(failures, len(slots))

    async def diagnose(seat: int) -> GameEndReason | None:
        return await slots[seat].diagnose()

    diag: AsyncDiagnose = diagnose
    return await play_game_async(
        players,
        number=number,
        deck=deck,
        dealer=dealer,
        scores=[result.score(s) for s in range(len(slots))],
        time_control=config.controls(),
        turn_limit=config.turn_limit,
        diagnose=diag,
        ruleset=CLASSIC_RULESET,
    )


def _forfeited(
    config: SeriesConfig,
    deck: tuple[Card, ...],
    dealer: int,
    names: tuple[str, ...],
    forfeit: Forfeit,
    others: Sequence[int] = (),
) -> GameRecord:
    """A game one seat could not start: it forfeits, everyone else beats it. With
    ``others`` (more seats that could not start), every seat that did beats each of them."""
    now = time.time()
    seats = len(names)
    pairwise = forfeit_results(seats, forfeit.seat, *others)
    return GameRecord(
        deck=tuple(str(c) for c in deck),
        dealer=dealer,
        turn_limit=config.turn_limit,
        moves=(),
        ending=forfeit.reason,
        winner=pairwise[0][0] if seats == 2 else None,
        forfeit=forfeit,
        players=names,
        started=now,
        finished=now,
        ruleset=CLASSIC_RULESET,
        seats=seats,
        loser=forfeit.seat,
        pairwise=pairwise,
    )


def _unplayed(
    config: SeriesConfig,
    deck: tuple[Card, ...],
    dealer: int,
    names: tuple[str, ...],
    failures: _StartFailures,
) -> GameRecord:
    """Still several bots fail to start after every attempt. Nobody can play: when all of
    them fail, a double forfeit (a draw); when only some do, every one of them forfeits:
    each seat that started beats each of them (they draw among themselves). The first of
    them (clockwise from the dealer's left, the order of play) is the game's loser and
    deals next; the record's forfeit is its, the others' reasons are in its detail."""
    if not failures.everyone:
        seats = len(names)
        ordered = sorted(failures.failures, key=lambda f: (f.seat - dealer - 1) % seats)
        first, rest = ordered[0], ordered[1:]
        detail = joint_forfeit_detail(
            first.detail, ((names[f.seat], f.seat, f.detail) for f in rest)
        )
        forfeit = dataclasses.replace(first, detail=detail)
        return _forfeited(config, deck, dealer, names, forfeit, [f.seat for f in rest])
    now = time.time()
    return GameRecord(
        deck=tuple(str(c) for c in deck),
        dealer=dealer,
        turn_limit=config.turn_limit,
        moves=(),
        ending=GameEndReason.DOUBLE_FORFEIT,
        winner=None,
        players=names,
        started=now,
        finished=now,
        ruleset=CLASSIC_RULESET,
        seats=len(names),
        double_forfeit_detail=clip(f"no bot could start: {failures}"),
    )


def table_problems(record: GameRecord) -> list[str]:
    """Replay a classic-table record from its deal and list every way it disagrees with the
    rules: moves by the wrong seat or illegal, a forfeit recorded after the end, or an
    ending, loser or pairwise result the rules do not give."""
    problems: list[str] = []
    try:
        game = ClassicGame.from_deck(
            list(record.deck), record.dealer, players=record.seats, turn_limit=record.turn_limit
        )
    except RulesError as exc:
        return [f"stored deal is invalid: {exc}"]
    for number, move in enumerate(record.moves, start=1):
        if game.over:
            problems.append(f"move {number} ({move.action!r}) comes after the end of the game")
            break
        if move.seat != game.to_move:
            problems.append(f"move {number} is recorded for seat {move.seat}, not {game.to_move}")
        try:
            game.play(move.action)
        except RulesError as exc:
            problems.append(f"move {number}: {exc}")
            break
    ending = record.ending
    if ending in (GameEndReason.VOID, GameEndReason.DOUBLE_FORFEIT):
        if ending is GameEndReason.DOUBLE_FORFEIT and record.moves:
            problems.append("moves are recorded for a game nobody started")
        return problems
    if record.forfeit is not None:
        offender = record.forfeit.seat
        if game.over:
            problems.append("the game is over by the rules, yet a forfeit is recorded")
        elif game.to_move != offender and ending in ON_MOVE_FORFEITS:
            problems.append(f"the {ending.value} is recorded for seat {offender}, not to move")
        return problems
    if not game.over:
        return [*problems, "the recorded moves do not finish the game"]
    if game.reason is None or GameEndReason.from_rules(game.reason) is not ending:
        problems.append(f"replay ends by {game.reason!r}, the record says {ending.value!r}")
    if game.loser != record.loser:
        problems.append(f"replay gives loser {game.loser!r}, the record {record.loser!r}")
    if sorted(game.pairwise_results()) != sorted(record.pairwise):
        problems.append(
            f"replay gives pairwise {game.pairwise_results()!r}, the record {record.pairwise!r}"
        )
    return problems
