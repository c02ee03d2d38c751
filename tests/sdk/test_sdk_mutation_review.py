"""Tests from a mutation review of the bot SDK (``sdk.driver``, ``sdk.bot``, ``sdk.server``,
``sdk.tracker``): each kills a mutant the suite let live.

The SDK is driven here as the server drives it, one protocol message at a time
(``BotDriver.handle``), so that what a bot author's hooks see can be checked against
docs/protocol.md and docs/writing-a-bot.md directly; expected results are worked out from
those pages (who won, which seat lost, how much of the move is left), never read back from
the SDK:

- ``GameResult.result`` is seen from the seat of the game's ``GameStart``: a winner or loser
  that is another seat is the opposite result; a void game is ``void``.
- At a table's turn limit a seat that is out beat every seat that is not (and vice versa).
- ``GameResult.loser`` is the seat ``GameEnd`` names.
- ``time_left()`` counts this move's own limit from when the request was received, and never
  includes the bank.
- ``act`` returning neither an action nor its text is the bot's error, told to the referee.
- ``CardTracker`` refuses a view whose opponent or stock would hide a negative number of cards.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace

import pytest

from referee.protocol.messages import (
    PROTOCOL_VERSION,
    BotError,
    Clock,
    Decision,
    DecisionRequest,
    GameEnd,
    GameEndReason,
    GameStart,
    Handshake,
    HandshakeReply,
    SeriesScore,
    TimeControl,
)
from referee.rules import Action, Card, ClassicAction, ClassicGame, ClassicView, Game, View
from sdk import CardTracker
from sdk.bot import Bot, GameResult
from sdk.driver import BotDriver
from sdk.tracker import InconsistentViewError

TC = TimeControl(move_ms=1000, bank_ms=10_000)


class Recorder(Bot):
    """Plays the first legal action; keeps every result and what ``time_left`` said."""

    name = "recorder"
    version = "1.0.0"
    rulesets = ("default", "classic")

    def __init__(self, reply: object = None) -> None:
        self.results: list[GameResult] = []
        self.time_lefts: list[float] = []
        self.reply = reply

    def act(self, view: View) -> Action | str:
        self.time_lefts.append(self.time_left())
        if self.reply is not None:
            return self.reply  # type: ignore[return-value]  # a wrong type, on purpose
        return view.legal_actions[0]

    def act_table(self, view: ClassicView) -> ClassicAction | str:
        self.time_lefts.append(self.time_left())
        return view.legal_actions[0]

    def on_game_end(self, result: GameResult) -> None:
        self.results.append(result)


def _driver(bot: Bot, ruleset: str = "default", players: int = 2, seat: int = 0) -> BotDriver:
    driver = BotDriver(bot, name="recorder", version="1.0.0")
    hello = driver.handle(
        Handshake(
            protocol_version=PROTOCOL_VERSION,
            referee_version="test",
            games=4,
            opponent_name="other",
            time_control=TC,
            ruleset=ruleset,
            players=players,
            seat_names=tuple(f"bot{s}" for s in range(players)) if ruleset == "classic" else (),
            seat=seat,
        )
    )
    assert isinstance(hello, HandshakeReply)
    return driver


def _start(seat: int, dealer: int, ruleset: str = "default", players: int = 2) -> GameStart:
    return GameStart(
        game_number=1,
        seat=seat,
        dealer=dealer,
        score=SeriesScore(),
        opponent_name="other",
        time_control=TC,
        turn_limit=1000,
        ruleset=ruleset,
        players=players,
    )


def _end(
    view: View | ClassicView | None,
    reason: GameEndReason,
    winner: int | None = None,
    loser: int | None = None,
) -> GameEnd:
    return GameEnd(
        game_number=1,
        winner=winner,
        reason=reason,
        detail="",
        view=view,
        deck=(),
        score=SeriesScore(),
        loser=loser,
    )


def _finished(seed: int) -> Game:
    rng = random.Random(seed)
    game = Game.new(seed=seed, dealer=seed % 2)
    while not game.over:
        game.play(rng.choice(game.legal_actions()))
    return game


# ---------------------------------------------------------------------------- results


@pytest.mark.parametrize("seat", [0, 1])
def test_a_two_player_result_is_seen_from_the_seat_of_the_game(seat: int) -> None:
    for seed in range(60):
        game = _finished(seed)
        view = game.view(seat)
        if view.outcome is not None:
            break
    else:
        pytest.fail("no game of the first 60 seeds had a winner")
    winner = view.outcome
    bot = Recorder()
    driver = _driver(bot)
    assert driver.handle(_start(seat=seat, dealer=1 - seat)) is None
    assert driver.handle(_end(view, GameEndReason.OUT, winner=winner)) is None
    # Forfeits: the other seat offended, then this one.
    driver.handle(_start(seat=seat, dealer=seat))
    driver.handle(_end(view, GameEndReason.TIMEOUT, winner=seat))
    driver.handle(_start(seat=seat, dealer=seat))
    driver.handle(_end(view, GameEndReason.CRASH, winner=1 - seat))
    expected = ["win" if winner == seat else "loss", "win", "loss"]
    assert [r.result for r in bot.results] == expected
    assert [r.seat for r in bot.results] == [seat] * 3


def test_a_void_game_is_void_not_a_draw() -> None:
    bot = Recorder()
    driver = _driver(bot)
    view = Game.new(seed=2, dealer=0).view(1)
    driver.handle(_start(seat=1, dealer=0))
    driver.handle(
        _end(replace(view, over=True, to_move=None, legal_actions=()), GameEndReason.VOID)
    )
    assert [r.result for r in bot.results] == ["void"]
    assert bot.results[0].reason is GameEndReason.VOID


@pytest.mark.parametrize("seat", [0, 1, 2])
def test_a_table_result_follows_the_loser_the_game_end_names(seat: int) -> None:
    view = ClassicGame.new(seed=3, dealer=0, players=3).view(seat)
    final = replace(view, over=True, to_move=None, legal_actions=())
    bot = Recorder()
    driver = _driver(bot, "classic", 3, seat)
    for loser in range(3):
        driver.handle(_start(seat=seat, dealer=0, ruleset="classic", players=3))
        driver.handle(_end(final, GameEndReason.LAST_HOLDER, loser=loser))
    # protocol.md: at a table of 3 one game is a win for every seat but the loser.
    assert [r.result for r in bot.results] == ["loss" if s == seat else "win" for s in range(3)]
    assert [r.loser for r in bot.results] == [0, 1, 2]


@pytest.mark.parametrize("seat", [0, 1, 2])
def test_at_a_tables_turn_limit_a_seat_that_is_out_beat_the_others(seat: int) -> None:
    view = ClassicGame.new(seed=5, dealer=0, players=3).view(seat)
    bot = Recorder()
    driver = _driver(bot, "classic", 3, seat)
    outs = [(True, False, False), (False, True, True), (False, False, False)]
    for out in outs:
        final = replace(view, over=True, to_move=None, legal_actions=(), out=out, loser=None)
        driver.handle(_start(seat=seat, dealer=0, ruleset="classic", players=3))
        driver.handle(_end(final, GameEndReason.TURN_LIMIT))
    # protocol.md (SeriesScore): a loss when the seat was not out while another was, a win
    # when it beat a seat and lost to none, else (nobody out) a draw.
    expected = []
    for out in outs:
        if not any(out):
            expected.append("draw")
        else:
            expected.append("win" if out[seat] else "loss")
    assert [r.result for r in bot.results] == expected


# ---------------------------------------------------------------------------- time left


def _request(move_ms: int, bank_ms: int) -> DecisionRequest:
    view = Game.new(seed=8, dealer=1).view(0)
    assert view.legal_actions
    return DecisionRequest(
        request_id=77, game_number=1, view=view, clock=Clock(move_ms=move_ms, bank_ms=bank_ms)
    )


def test_time_left_counts_the_move_from_when_the_request_was_received() -> None:
    bot = Recorder()
    driver = _driver(bot)
    driver.handle(_start(seat=0, dealer=1))
    waited = 0.5
    before = time.monotonic()
    reply = driver.handle(_request(2000, 60_000), received_at=before - waited)
    assert isinstance(reply, Decision) and reply.request_id == 77
    # At most the move's 2 s less the half second the request already waited: never the bank.
    assert 0 < bot.time_lefts[-1] <= 2.0 - waited


def test_time_left_is_the_moves_own_limit_without_the_bank() -> None:
    bot = Recorder()
    driver = _driver(bot)
    driver.handle(_start(seat=0, dealer=1))
    driver.handle(_request(300, 600_000))
    assert 0 < bot.time_lefts[-1] <= 0.3


# ---------------------------------------------------------------------------- act's reply


@pytest.mark.parametrize("reply", [1.5, 7, ["take"], b"take"])
def test_an_act_returning_neither_an_action_nor_text_is_the_bots_error(reply: object) -> None:
    bot = Recorder(reply=reply)
    driver = _driver(bot)
    driver.handle(_start(seat=0, dealer=1))
    answer = driver.handle(_request(1000, 1000))
    assert isinstance(answer, BotError), answer
    assert "act()" in answer.message


# ---------------------------------------------------------------------------- tracker


def test_a_view_whose_opponent_shows_more_known_cards_than_he_holds_is_refused() -> None:
    view = Game.new(seed=4, dealer=0).view(1)
    assert not view.opponent_known and view.face_up is not None
    unseen = [c for c in Card.all() if c not in {*view.hand, *view.pile, view.face_up}]
    # Two of his cards known, though he holds one: the total of 36 is kept by a stock one
    # card larger than the cards left to put there, so only the per-place counts are wrong.
    hidden_total = len(unseen) - 2
    bad = replace(
        view,
        opponent_known=(unseen[0], unseen[1]),
        opponent_count=1,
        stock_count=hidden_total + 1 + 1,  # +1 for the opponent's -1, +1 for the face-up card
    )
    with pytest.raises(InconsistentViewError):
        CardTracker.from_view(bad)
    # The stock's count below its face-up card (-1 face down), made up by the opponent's hand.
    no_stock = replace(view, stock_count=0, opponent_count=view.opponent_count + view.stock_count)
    with pytest.raises(InconsistentViewError):
        CardTracker.from_view(no_stock)
