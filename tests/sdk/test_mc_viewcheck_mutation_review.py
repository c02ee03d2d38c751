"""Mutation review of ``referee/rules/viewcheck.py``, ``sandbox/bot_runtime.py`` and the
Monte-Carlo example bot (``sdk/examples/mc/bot.py`` and its table simulator ``fast.py``).

Expected values are derived from the documents, not from the code under review:

- the fast simulator is checked move by move, over seeded random positions of 2-4 seats,
  against a small reference stepper written here from ``rules-classic.md`` (drawing one card
  at a time leader first up to 3 after a cover, only the leader after a take, the next trick
  led by the defender / the seat after the taker, out only once the stock is empty, the last
  holder loses) and against the engine's public state (read through its properties, not
  through ``TableState.of_game``); its greedy choices are checked to be legal actions of the
  engine of least cost (cost restated from ``sdk.strategy``'s documented rule);
- the bot is checked on documented behaviour: it returns one of ``view.legal_actions``,
  every determinization it plays on shows exactly what the view shows (own hand, known cards,
  counts, face-up card drawn last, the table's state), one sample per decision when its time
  is gone, the budget of ``MonteCarloBot``'s docstring, playout scores 1 / 1/2 / 0, and the
  paired significance rule (a one-sided mean / standard-error test computed here with
  :mod:`statistics`);
- ``viewcheck`` must accept every view a seeded game shows (both rulesets, every seat,
  running and finished games, a game ended by the turn limit) and refuse each inconsistency
  its docstrings list, with the documented error type;
- ``runtime_files`` is run on a scratch tree under ``tmp_path`` (it only reads), and on the
  project, which must stage everything the mc bot imports and none of the author tools.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import sdk.examples.mc.bot as mc_bot
from referee.protocol.messages import Clock
from referee.rules import (
    Card,
    ClassicAction,
    ClassicActionKind,
    ClassicEndReason,
    ClassicGame,
    ClassicView,
    DeckTypeError,
    EndReason,
    Game,
    InvalidViewError,
    Suit,
    View,
)
from referee.rules.viewcheck import check_face_up, check_progress, check_subset, view_cards
from sandbox.bot_runtime import runtime_files
from sdk import sample_game as real_game
from sdk.examples.mc.bot import MonteCarloBot, _significant, playout
from sdk.examples.mc.fast import TableState
from sdk.strategy import greedy_action, greedy_table_action
from tests.rules.helpers import position

ROOT = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------------ seeded positions


def table_positions(count: int, salt: int = 0) -> Iterator[ClassicGame]:
    """Running tables of 2, 3 and 4 seats after a random number of random legal moves."""
    for seed in range(count):
        players = 2 + seed % 3
        game = ClassicGame.new(seed=f"mcv-{salt}-{seed}", dealer=seed % players, players=players)
        rng = random.Random(seed * 7 + salt)
        for _ in range(rng.randrange(60)):
            if game.over:
                break
            game.play(rng.choice(game.legal_actions()))
        if not game.over:
            yield game


def default_positions(count: int, salt: int = 0) -> Iterator[Game]:
    for seed in range(count):
        game = Game.new(seed=f"mcv-d-{salt}-{seed}", dealer=seed % 2)
        rng = random.Random(seed * 11 + salt)
        for _ in range(rng.randrange(50)):
            if game.over:
                break
            game.play(rng.choice(game.legal_actions()))
        if not game.over:
            yield game


def _mover_view(game: Game) -> View:
    assert game.to_move is not None
    return game.view(game.to_move)


def _mover_table_view(table: ClassicGame) -> ClassicView:
    assert table.to_move is not None
    return table.view(table.to_move)


# ------------------------------------------------------------------ a reference table stepper


def _set(mask: int) -> set[int]:
    """Card indices of a bit mask, decoded here (not with fast.py's helpers)."""
    return {i for i in range(36) if mask >> i & 1}


class Ref:
    """The classic table restated from rules-classic.md on plain sets (an independent model)."""

    def __init__(self, game: ClassicGame) -> None:
        self.players = game.players
        self.trump = int(game.trump)
        self.hands = [{c.index for c in h} for h in game.hands]
        self.stock = [c.index for c in game.stock]  # draw order: the next card first
        self.out = list(game.out)
        assert game.leader is not None and game.defender is not None
        self.leader: int = game.leader
        self.defender: int = game.defender
        self.led = [c.index for c in game.led]
        self.over = False
        self.loser: int | None = None

    def _next(self, start: int) -> int:
        return next(
            (start + k) % self.players
            for k in range(self.players)
            if not self.out[(start + k) % self.players]
        )

    def play(self, action: ClassicAction) -> None:
        if action.kind is ClassicActionKind.LEAD:
            for c in action.led:
                self.hands[self.leader].remove(c.index)
            self.led = sorted(c.index for c in action.led)
            return
        leader, defender = self.leader, self.defender
        if action.kind is ClassicActionKind.COVER:
            for c in action.covers:
                self.hands[defender].remove(c.index)
            self.led = []
            # one card at a time, alternately, the leader first, skipping a holder of 3+
            while self.stock and (len(self.hands[leader]) < 3 or len(self.hands[defender]) < 3):
                for seat in (leader, defender):
                    if self.stock and len(self.hands[seat]) < 3:
                        self.hands[seat].add(self.stock.pop(0))
            start = defender
        else:
            self.hands[defender] |= set(self.led)
            self.led = []
            while self.stock and len(self.hands[leader]) < 3:
                self.hands[leader].add(self.stock.pop(0))
            start = defender + 1
        if not self.stock:
            for seat in (leader, defender):
                if not self.hands[seat]:
                    self.out[seat] = True
            holding = [s for s in range(self.players) if self.hands[s]]
            if len(holding) <= 1:
                self.over = True
                self.loser = holding[0] if holding else None
                return
        self.leader = self._next(start)
        self.defender = self._next(self.leader + 1)


def _fast_matches(state: TableState, ref: Ref) -> str | None:
    """Why ``state`` differs from the reference, or None."""
    if state.over != ref.over:
        return f"over {state.over} != {ref.over}"
    if ref.over:
        if state.loser != ref.loser:
            return f"loser {state.loser} != {ref.loser}"
        if state.out != ref.out:
            return f"out {state.out} != {ref.out}"
        return None
    got = {
        "hands": [_set(m) for m in state.hands],
        "stock": list(reversed(state.stock)),
        "out": state.out,
        "leader": state.leader,
        "defender": state.defender,
        "led": state.led,
        "trump": state.trump,
        "players": state.players,
    }
    want = {
        "hands": ref.hands,
        "stock": ref.stock,
        "out": ref.out,
        "leader": ref.leader,
        "defender": ref.defender,
        "led": ref.led,
        "trump": ref.trump,
        "players": ref.players,
    }
    for key, value in want.items():
        if got[key] != value:
            return f"{key}: fast {got[key]} != reference {value}"
    return None


def _engine_matches(game: ClassicGame, ref: Ref) -> str | None:
    if game.over:
        if not ref.over or game.loser != ref.loser or list(game.out) != ref.out:
            return f"engine over (loser {game.loser}), reference over={ref.over}"
        return None
    if ref.over:
        return "reference over, engine runs"
    if [{c.index for c in h} for h in game.hands] != ref.hands:
        return "hands"
    if [c.index for c in game.stock] != ref.stock or [c.index for c in game.led] != ref.led:
        return "stock or led"
    if (game.leader, game.defender, list(game.out)) != (ref.leader, ref.defender, ref.out):
        return "leader/defender/out"
    return None


def test_fast_simulator_plays_random_games_move_by_move_as_the_rules_say() -> None:
    """Every engine move of random games, played on the fast state, on the reference and on
    the engine: all three agree after every move (2, 3 and 4 seats)."""
    moves = finished = 0
    for game in table_positions(90, salt=1):
        state = TableState.of_game(game)
        ref = Ref(game)
        assert _fast_matches(state, ref) is None, (game, _fast_matches(state, ref))
        rng = random.Random(len(game.history))
        while not game.over:
            action = rng.choice(game.legal_actions())
            game.play(action)
            state.play(action)
            ref.play(action)
            assert _engine_matches(game, ref) is None, (game, action, _engine_matches(game, ref))
            assert _fast_matches(state, ref) is None, (game, action, _fast_matches(state, ref))
            moves += 1
        finished += 1
    assert moves > 2000 and finished > 50


def _cost(covers: tuple[Card, ...], trump: Suit) -> int:
    """sdk.strategy's documented card value: rank 0..8, plus 9 for a trump."""
    return sum(int(c.rank) + (9 if c.suit == trump else 0) for c in covers)


def _lead_key(action: ClassicAction, trump: Suit) -> tuple[int, int, int, int]:
    """greedy_table_action's documented lead order: holding a non-trump first, the lowest
    rank, as many cards as possible, the fewest trumps."""
    trumps = sum(c.suit == trump for c in action.led)
    return (
        1 if trumps == len(action.led) else 0,
        int(action.led[0].rank),
        -len(action.led),
        trumps,
    )


def test_fast_greedy_choices_are_legal_engine_actions_of_least_cost() -> None:
    """cheapest_cover / greedy_lead name one of the engine's legal actions, the first of
    least cost in the engine's listing order (what greedy_table_action picks)."""
    covers_seen = leads_seen = takes_seen = 0
    for game in table_positions(150, salt=2):
        state = TableState.of_game(game)
        legal = game.legal_actions()
        trump = game.trump
        if game.led:
            covers = [a for a in legal if a.kind is ClassicActionKind.COVER]
            got = state.cheapest_cover()
            if not covers:
                assert got is None, (game, got)
                takes_seen += 1
                continue
            assert got is not None, (game, covers)
            chosen = ClassicAction.cover(
                *((led, Card.from_index(x)) for led, x in zip(game.led, got, strict=True))
            )
            assert chosen in covers, (game, chosen)
            best = min(_cost(a.covers, trump) for a in covers)
            first = next(a for a in covers if _cost(a.covers, trump) == best)
            assert chosen == first, (game, chosen, first)
            covers_seen += 1
        else:
            lead = ClassicAction.lead(*(Card.from_index(i) for i in state.greedy_lead()))
            assert lead in legal, (game, lead)
            best_key = min(_lead_key(a, trump) for a in legal)
            first = next(a for a in legal if _lead_key(a, trump) == best_key)
            assert lead == first, (game, lead, first)
            leads_seen += 1
    assert covers_seen > 20 and leads_seen > 20 and takes_seen > 3


def _engine_greedy_score(game: ClassicGame, seat: int) -> float:
    engine = game.copy()
    while not engine.over:
        engine.play(greedy_table_action(engine.legal_actions(), engine.trump))
    if engine.loser is None:
        return 0.5
    return 0.0 if engine.loser == seat else 1.0


def test_fast_playout_scores_each_seat_as_the_engine_game_under_greedy_play_ends() -> None:
    scores: set[float] = set()
    for game in table_positions(120, salt=3):
        for seat in range(game.players):
            want = _engine_greedy_score(game, seat)
            got = TableState.of_game(game).playout(seat, 10_000)
            assert got == want, (game, seat, got, want)
            scores.add(want)
    assert scores == {0.0, 1.0} or scores == {0.0, 0.5, 1.0}


def test_a_tie_for_the_cheapest_cover_goes_to_the_first_in_the_engines_listing() -> None:
    """Hearts trump; 6C and 6D led; the defender holds only 6H and 7H: both covers cost the
    same, and the engine lists 6C:6H 6D:7H first (covers of the first led card by index)."""
    idx = {t: Card.parse(t).index for t in ("6C", "6D", "6H", "7H", "9S", "TS")}
    state = TableState(
        players=2,
        trump=int(Suit.HEARTS),
        hands=[1 << idx["9S"] | 1 << idx["TS"], 1 << idx["6H"] | 1 << idx["7H"]],
        stock=[],
        out=[False, False],
        leader=0,
        defender=1,
        led=[idx["6C"], idx["6D"]],
    )
    assert state.cheapest_cover() == [idx["6H"], idx["7H"]]


def test_a_copy_of_a_finished_state_is_still_finished() -> None:
    game = next(table_positions(4, salt=18))
    state = TableState.of_game(game)
    while not state.over:
        state.greedy_step()
    copy = state.copy()
    assert (copy.over, copy.loser, copy.out) == (state.over, state.loser, state.out)
    copy.hands[0] = 0
    copy.out[0] = not copy.out[0]
    assert copy.out != state.out  # independent lists


def test_fast_playout_cut_short_is_a_half() -> None:
    game = next(table_positions(5, salt=4))
    state = TableState.of_game(game)
    assert state.playout(0, 0) == 0.5 and not state.over


# ------------------------------------------------------------------ determinizations


def _check_table_sample(state: TableState, view: ClassicView) -> None:
    """What a determinization of ``view`` must show: exactly the view's public facts."""
    hands = [_set(m) for m in state.hands]
    assert hands[view.seat] == {c.index for c in view.hand}
    for seat in range(view.players):
        assert len(hands[seat]) == view.hand_sizes[seat], seat
        assert {c.index for c in view.known[seat]} <= hands[seat], seat
    draw = list(reversed(state.stock))
    assert len(draw) == view.stock_count
    if view.face_up is not None:
        assert draw[-1] == view.face_up.index  # the face-up card is drawn last
    led = [c.index for c in view.led]
    discard = [c.index for c in view.discard]
    everything = [*draw, *led, *discard, *(i for h in hands for i in h)]
    assert sorted(everything) == list(range(36))
    assert state.led == sorted(led)
    assert state.out == list(view.out)
    assert (state.leader, state.defender) == (view.leader, view.defender)
    assert (state.players, state.trump, state.over, state.loser) == (
        view.players,
        int(view.trump),
        False,
        None,
    )


def test_table_determinizations_show_exactly_what_the_view_shows() -> None:
    rng = random.Random(5)
    differs = 0
    for game in table_positions(60, salt=5):
        for seat in range(game.players):
            view = game.view(seat)
            truth = [_set(m) for m in TableState.of_game(game).hands]
            for _ in range(3):
                state = TableState.sampled(view, rng)
                _check_table_sample(state, view)
                differs += [_set(m) for m in state.hands] != truth
    assert differs > 50  # the hidden cards are sampled, not the true ones


def test_a_finished_table_cannot_be_sampled() -> None:
    game = next(table_positions(3, salt=6))
    while not game.over:
        game.play(greedy_table_action(game.legal_actions(), game.trump))
    with pytest.raises(ValueError, match="over"):
        TableState.sampled(game.view(0), random.Random(0))
    with pytest.raises(ValueError, match="over"):
        TableState.of_game(game)


def _recording_samples(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Game], list[TableState]]:
    """Wrap the bot's two samplers to keep every determinization it plays on."""
    games: list[Game] = []
    tables: list[TableState] = []
    real_table = TableState.sampled.__func__  # type: ignore[attr-defined]

    def sample_game(view: View, rng: random.Random) -> Game:
        game = real_game(view, rng)
        games.append(game.copy())
        return game

    def sampled(cls: type[TableState], view: ClassicView, rng: random.Random) -> TableState:
        state: TableState = real_table(cls, view, rng)
        tables.append(state.copy())
        return state

    monkeypatch.setattr(mc_bot, "sample_game", sample_game)
    monkeypatch.setattr(TableState, "sampled", classmethod(sampled))
    return games, tables


def test_the_bot_plays_only_on_determinizations_of_its_view_and_answers_legally(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    games, tables = _recording_samples(monkeypatch)
    decisions = varied = 0
    for game in default_positions(25, salt=7):
        seat = game.to_move
        assert seat is not None
        view = game.view(seat)
        games.clear()
        action = MonteCarloBot(playouts=2, seed=decisions).act(view)
        assert action in view.legal_actions, (view, action)
        assert len(games) == (2 if len(view.legal_actions) > 1 else 0)
        varied += len({(s.hands, s.stock) for s in games}) > 1  # fresh samples each round
        for sampled in games:
            assert sampled.view(seat) == view  # nothing more, nothing less than the view
            assert set(view.opponent_known) <= set(sampled.hands[1 - seat])
            if view.face_up is not None:
                assert sampled.stock[-1] == view.face_up
        decisions += 1
    for table in table_positions(25, salt=8):
        tview = _mover_table_view(table)
        tables.clear()
        chosen = MonteCarloBot(playouts=1, seed=decisions).act_table(tview)
        assert chosen in tview.legal_actions, (tview, chosen)
        for state in tables:
            _check_table_sample(state, tview)
        decisions += 1
    assert decisions > 35
    assert varied > 15


def test_fixed_playouts_mean_that_many_samples_and_six_times_in_the_table_endgame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``playouts`` samples per decision; a table's endgame (a stock of 3 or fewer) six times
    as many (the module docstring)."""
    _, tables = _recording_samples(monkeypatch)
    seen: dict[int, int] = {}
    for table in table_positions(200, salt=9):
        tview = _mover_table_view(table)
        if len(tview.legal_actions) < 2 or tview.stock_count not in (3, 4, 10):
            continue
        tables.clear()
        MonteCarloBot(playouts=2, seed=1).act_table(tview)
        want = 12 if tview.stock_count <= 3 else 2
        assert len(tables) == want, (tview.stock_count, len(tables))
        seen[tview.stock_count] = seen.get(tview.stock_count, 0) + 1
    assert set(seen) >= {3, 4}, seen


# ------------------------------------------------------------------ time


def _out_of_time(bot: MonteCarloBot) -> None:
    """A clock whose move limit ran out before the move started: no time left at all."""
    bot.start_move(Clock(move_ms=1, bank_ms=10_000), received_at=0.0)
    assert bot.time_left() == 0.0


def test_with_no_time_left_the_bot_still_samples_once_and_answers_legally(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    games, tables = _recording_samples(monkeypatch)
    bot = MonteCarloBot(seed=3)  # time mode
    _out_of_time(bot)
    assert bot._budget() == 0.0 and bot._budget(6) == 0.0
    for game in default_positions(20, salt=10):
        view = _mover_view(game)
        games.clear()
        assert bot.act(view) in view.legal_actions
        assert len(games) == (1 if len(view.legal_actions) > 1 else 0)
    for table in table_positions(20, salt=11):
        tview = _mover_table_view(table)
        tables.clear()
        assert bot.act_table(tview) in tview.legal_actions
        assert len(tables) == (1 if len(tview.legal_actions) > 1 else 0)


def test_the_budget_is_a_share_of_the_move_capped_and_never_beyond_60_percent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """time_fraction of the move's limit, at most max_seconds, both scaled in the endgame,
    never beyond 60% of what is left; 0.1 s (times the scale) without a clock. (The time
    left is pinned, so that a busy machine cannot move the figures.)"""
    bot = MonteCarloBot(time_fraction=0.3, max_seconds=0.5)
    assert bot._budget() == pytest.approx(0.1)
    assert bot._budget(6) == pytest.approx(0.6)
    left = [1.0]
    monkeypatch.setattr(bot, "time_left", lambda: left[0])
    assert bot._budget() == pytest.approx(0.3)  # 0.3 x 1 s < 0.5 s
    assert bot._budget(6) == pytest.approx(0.6)  # 6 x 0.3 capped at 60% of 1 s
    assert bot._budget(2) == pytest.approx(0.6)
    left[0] = 10.0
    assert bot._budget() == pytest.approx(0.5)  # max_seconds
    assert bot._budget(6) == pytest.approx(3.0)  # 6 x 0.5 < 6 s
    left[0] = 0.0
    assert bot._budget() == 0.0 and bot._budget(6) == 0.0
    # the real clock: a fresh 10 s move gives max_seconds (wide tolerance: not a timing test)
    monkeypatch.undo()
    bot.start_move(Clock(move_ms=10_000, bank_ms=0))
    assert 0.4 <= bot._budget() <= 0.5


def test_a_small_time_budget_still_ends_the_move_in_reasonable_time() -> None:
    """A tiny move limit (20 ms): the bot answers legally; the generous bound here is only
    against a search that ignores its deadline (not a timing test)."""
    bot = MonteCarloBot(seed=4)
    for game in list(default_positions(6, salt=12)):
        view = _mover_view(game)
        bot.start_move(Clock(move_ms=20, bank_ms=0))
        started = time.monotonic()
        assert bot.act(view) in view.legal_actions
        assert time.monotonic() - started < 5.0


# ------------------------------------------------------------------ scores and the search


def test_default_playout_scores_win_draw_and_loss_for_the_seat() -> None:
    results: set[tuple[int | None, float, float]] = set()
    for seed in range(80):
        # every fourth game is cut by a short turn limit: a draw (outcome None)
        limit = 9 if seed % 4 == 0 else 1000
        game = Game.new(seed=f"mcv-end-{seed}", dealer=seed % 2, turn_limit=limit)
        rng = random.Random(seed)
        while not game.over:
            game.play(rng.choice(game.legal_actions()))
        want = (
            (0.5, 0.5)
            if game.outcome is None
            else (float(game.outcome == 0), float(game.outcome == 1))
        )
        got = (playout(game, 0, rng, 0.1), playout(game, 1, rng, 0.1))
        assert got == want, (game.outcome, got)
        results.add((game.outcome, *got))
    assert {o for o, _, _ in results} >= {0, 1, None}


def test_a_playout_without_exploration_is_greedy_play() -> None:
    """epsilon 0: every move is greedy's (the module docstring: epsilon-greedy playouts)."""
    for game in list(default_positions(30, salt=17)):
        engine = game.copy()
        while not engine.over:
            engine.play(greedy_action(engine.legal_actions(), engine.trump))
        for seat in (0, 1):
            want = 0.5 if engine.outcome is None else float(engine.outcome == seat)
            assert playout(game.copy(), seat, random.Random(seat), 0.0) == want


def test_a_default_playout_finishes_the_game_for_the_seat() -> None:
    for game in list(default_positions(10, salt=13)):
        copy = game.copy()
        score = playout(copy, 0, random.Random(1), 0.15)
        assert copy.over
        want = 0.5 if copy.outcome is None else float(copy.outcome == 0)
        assert score == want


def test_the_bot_goes_out_when_going_out_wins() -> None:
    """Two-player game, stock empty: covering 8C with the last card 9C goes out and wins;
    every sample scores it 1 for the bot's own seat."""
    game = position(trump="H", mover="9C", other="7S 6S", pile="8C", stock="", to_move=0)
    view = game.view(0)
    assert len(view.legal_actions) > 1
    assert str(MonteCarloBot(playouts=3, seed=1).act(view)) == "cover 9C"


def _table_endgame() -> ClassicView:
    """Two seats, hearts trump, stock empty; seat 0 led 8C and holds 6S 7S; seat 1 (to move)
    holds 9C: covering goes out (seat 0 is left holding cards and loses); taking loses."""
    shown = {Card.parse(t) for t in ("8C", "6S", "7S", "9C")}
    discard = tuple(c for c in Card.all() if c not in shown)
    assert len(discard) % 2 == 0
    view = ClassicView(
        ruleset="classic",
        seat=1,
        players=2,
        dealer=1,
        hand=(Card.parse("9C"),),
        hand_sizes=(2, 1),
        out=(False, False),
        known=((), ()),
        leader=0,
        defender=1,
        led=(Card.parse("8C"),),
        discard=discard,
        trump=Suit.HEARTS,
        face_up=None,
        stock_count=0,
        to_move=1,
        legal_actions=(),
        history=(),
        movers=(),
        turn_limit=1000,
        over=False,
        loser=None,
        reason=None,
    )
    game = ClassicGame.from_view(
        view, [[Card.parse("6S"), Card.parse("7S")], [Card.parse("9C")]], []
    )
    return game.view(1)


def test_the_bot_weighs_taking_and_asks_for_confidence_only_at_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Taking is weighed whatever max_candidates says; table_confidence is the bar to leave
    greedy's choice at a table, and only there (the class docstring)."""
    played: list[str] = []
    real_play = TableState.play
    view = _table_endgame()

    def play(self: TableState, action: ClassicAction) -> None:
        # every candidate is tried on the sampled deal itself, never on a played-out one
        _check_table_sample(self, view)
        played.append(str(action))
        real_play(self, action)

    monkeypatch.setattr(TableState, "play", play)
    calls: list[dict[str, Any]] = []
    real_search = MonteCarloBot._search

    def search(self: MonteCarloBot, *args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real_search(self, *args, **kwargs)

    monkeypatch.setattr(MonteCarloBot, "_search", search)
    bot = MonteCarloBot(playouts=1, seed=2, max_candidates=1, table_confidence=1.5)
    assert str(bot.act_table(view)) == "cover 8C:9C"
    # the endgame: 6 samples of the two candidates (greedy's cover, and take)
    assert sorted(played) == ["cover 8C:9C"] * 6 + ["take"] * 6
    assert calls[-1].get("confidence") == 1.5
    game = position(trump="H", mover="9C 7D", other="7S 6S", pile="8C", stock="", to_move=0)
    bot.act(game.view(0))
    assert not calls[-1].get("confidence")


def test_at_the_table_the_bot_covers_when_covering_wins_and_taking_loses() -> None:
    view = _table_endgame()
    assert {str(a) for a in view.legal_actions} == {"take", "cover 8C:9C"}
    assert str(MonteCarloBot(playouts=2, seed=1).act_table(view)) == "cover 8C:9C"
    assert str(MonteCarloBot(playouts=2, seed=1, max_candidates=1).act_table(view)) == (
        "cover 8C:9C"
    )


def test_with_one_candidate_the_bot_plays_greedys_choice() -> None:
    """max_candidates: greedy's order picks the candidates (the class docstring), so with
    one candidate the two-player bot plays greedy's action."""
    checked = 0
    for game in default_positions(40, salt=19):
        view = _mover_view(game)
        if len(view.legal_actions) < 2:
            continue
        bot = MonteCarloBot(playouts=1, seed=checked, max_candidates=1)
        assert bot.act(view) == greedy_action(view.legal_actions, view.trump), view
        checked += 1
    assert checked > 20


def _search(
    values: Mapping[str, Sequence[float]],
    *,
    confidence: float = 0.0,
    max_candidates: int = 12,
    always: tuple[str, ...] = (),
    rounds: int = 4,
) -> tuple[str, list[str]]:
    """Run the bot's search on named actions (greedy order = alphabetical) whose score in
    sample ``r`` is ``values[name][r]``; also return the actions scored."""
    bot = MonteCarloBot(playouts=rounds, max_candidates=max_candidates)
    scored: list[str] = []
    counter = iter(range(10_000))

    def score(sample: int, action: str) -> float:
        scored.append(action)
        return values[action][sample]

    chosen = bot._search(
        sorted(values, reverse=True),
        lambda a: tuple(ord(ch) for ch in a),
        lambda: next(counter),
        score,
        always=always,
        confidence=confidence,
    )
    return chosen, scored


def test_search_keeps_the_best_mean_and_greedys_order_on_ties() -> None:
    assert _search({"a": [0, 0, 1, 0], "b": [1, 1, 0, 1], "c": [0, 1, 0, 0]})[0] == "b"
    assert _search({"a": [1, 0, 1, 0], "b": [0, 1, 0, 1], "c": [0, 0, 0, 0]})[0] == "a"
    assert _search({"a": [0, 0, 0, 0], "b": [0, 1, 0, 1], "c": [1, 0, 1, 0]})[0] == "b"


def test_search_weighs_only_greedys_first_candidates_plus_the_always_ones() -> None:
    values = {"a": [0.0] * 4, "b": [0.0] * 4, "c": [1.0] * 4}
    chosen, scored = _search(values, max_candidates=2)
    assert chosen == "a" and set(scored) == {"a", "b"}
    chosen, scored = _search(values, max_candidates=1, always=("c",))
    assert chosen == "c" and set(scored) == {"a", "c"}
    chosen, scored = _search({"only": [0.0]}, rounds=3)
    assert chosen == "only" and scored == []  # one legal action: nothing to search


def test_search_leaves_greedy_only_for_a_significant_lead() -> None:
    # b beats a in every sample by 1: zero variance, a sure lead
    assert _search({"a": [0, 0, 0, 0], "b": [1, 1, 1, 1]}, confidence=2.0)[0] == "b"
    # b leads by 2 of 4 samples, once behind: mean 0.25, sd of the mean 0.479: not 2 SE
    noisy = {"a": [0, 0, 1, 0], "b": [1, 1, 0, 0]}
    assert _search(noisy, confidence=2.0)[0] == "a"
    assert _search(noisy, confidence=0.0)[0] == "b"


def _reference_significant(diffs: list[float], confidence: float) -> bool:
    if len(diffs) < 2 or sum(diffs) <= 0:
        return False
    mean = statistics.fmean(diffs)
    sd = statistics.stdev(diffs)
    return sd == 0 or mean >= confidence * sd / math.sqrt(len(diffs))


@pytest.mark.parametrize(
    "diffs",
    [
        [1.0],
        [1.0, 1.0],
        [0.0, 0.0, 0.0],
        [1.0, -1.0],
        [1.0, 1.0, 0.0, 1.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.5, 0.5, 1.0, 0.0, 0.5, 1.0, 0.5, 0.5, 1.0, 0.5],
        [-1.0, -1.0, 0.0],
        [1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5],
    ],
)
def test_significance_is_a_one_sided_paired_test(diffs: list[float]) -> None:
    squares = sum(d * d for d in diffs)
    for confidence in (1.0, 2.0, 3.0):
        assert _significant(sum(diffs), squares, len(diffs), confidence) == (
            _reference_significant(diffs, confidence)
        ), (diffs, confidence)


def test_significance_at_the_threshold_counts() -> None:
    """Mean exactly ``confidence`` standard errors above zero is significant ("at least")."""
    diffs = [1.0, 0.0]  # mean 0.5, sd 0.7071, SE 0.5: exactly 1 SE
    assert _significant(1.0, 1.0, 2, 1.0)
    assert _reference_significant(diffs, 1.0)
    assert not _significant(1.0, 1.0, 2, 1.01)


# ------------------------------------------------------------------ viewcheck: true views


def _finished_default(seed: int, turn_limit: int = 1000) -> Game:
    game = Game.new(seed=f"mcv-vc-{seed}", dealer=seed % 2, turn_limit=turn_limit)
    rng = random.Random(seed)
    while not game.over:
        game.play(rng.choice(game.legal_actions()))
    return game


def test_viewcheck_accepts_every_true_view_of_both_rulesets() -> None:
    """Every seat's view of running and finished games (and one ended by a turn limit) is
    rebuilt by from_view from the true hidden cards, and gives the same view back."""
    checked = 0
    games: list[Game] = [*default_positions(40, salt=14)]
    games += [_finished_default(s) for s in range(15)]
    limited = _finished_default(99, turn_limit=7)
    assert limited.reason is EndReason.TURN_LIMIT
    games.append(limited)
    games.append(Game.new(seed="fresh", dealer=1))
    for game in games:
        for seat in (0, 1):
            view = game.view(seat)
            rebuilt = Game.from_view(view, list(game.hands[1 - seat]), list(game.stock))
            assert rebuilt.view(seat) == view
            checked += 1
    tables: list[ClassicGame] = [*table_positions(30, salt=15)]
    for seed in range(9):
        table = ClassicGame.new(seed=f"mcv-t-{seed}", dealer=0, players=2 + seed % 3)
        while not table.over:
            table.play(greedy_table_action(table.legal_actions(), table.trump))
        tables.append(table)
    cut = ClassicGame.new(seed="cut", dealer=0, players=3, turn_limit=5)
    while not cut.over:
        cut.play(cut.legal_actions()[0])
    assert cut.reason is ClassicEndReason.TURN_LIMIT
    tables.append(cut)
    for table in tables:
        for seat in range(table.players):
            tview = table.view(seat)
            hands = [list(h) for h in table.hands]
            assert ClassicGame.from_view(tview, hands, list(table.stock)).view(seat) == tview
            checked += 1
    assert checked > 150


# ------------------------------------------------------------------ viewcheck: each refusal

C = Card.parse


def test_view_cards_takes_tuples_and_lists_of_distinct_cards() -> None:
    assert view_cards((C("TH"), C("7C")), "view.hand") == (C("TH"), C("7C"))  # order kept
    assert view_cards([C("7C")], "view.hand") == (C("7C"),)
    assert view_cards((), "view.pile") == ()
    with pytest.raises(InvalidViewError, match=r"view\.hand holds 7C twice"):
        view_cards((C("7C"), C("TH"), C("7C")), "view.hand")
    for bad in (None, "7C TH", {C("7C")}, C("7C")):
        with pytest.raises(DeckTypeError, match=r"view\.pile must be a tuple"):
            view_cards(bad, "view.pile")
    with pytest.raises(DeckTypeError, match=r"must hold Card objects.*Card\.parse"):
        view_cards((C("7C"), "TH"), "view.hand")
    with pytest.raises(DeckTypeError):
        view_cards((C("7C"), None), "view.hand")


def test_check_subset_names_the_first_missing_card() -> None:
    check_subset([], [], "view.own_known", "view.hand")
    check_subset([C("7C")], [C("TH"), C("7C")], "view.own_known", "view.hand")
    with pytest.raises(
        InvalidViewError, match=r"view\.own_known names 8D, which is not in view\.hand"
    ):
        check_subset([C("7C"), C("8D"), C("9S")], [C("7C")], "view.own_known", "view.hand")


def test_check_face_up_needs_a_face_up_card_exactly_while_the_stock_lasts() -> None:
    check_face_up(C("6H"), 1, Suit.HEARTS)
    check_face_up(C("6H"), 36, Suit.HEARTS)
    check_face_up(C("6H"), 24, Suit.CLUBS)  # hand-made positions may set them apart
    check_face_up(None, 0, Suit.SPADES)
    with pytest.raises(InvalidViewError, match="no face-up card under a stock of 1"):
        check_face_up(None, 1, Suit.HEARTS)
    with pytest.raises(InvalidViewError, match="no face-up card under a stock of 5"):
        check_face_up(None, 5, Suit.HEARTS)
    with pytest.raises(InvalidViewError, match="face-up card 6H under an empty stock"):
        check_face_up(C("6H"), 0, Suit.HEARTS)
    for count in (-1, 37, True, 1.0, "3", None):
        with pytest.raises(InvalidViewError, match=r"stock_count must be 0\.\.36"):
            check_face_up(C("6H"), count, Suit.HEARTS)
    with pytest.raises(DeckTypeError, match=r"view\.trump must be a Suit"):
        check_face_up(C("6H"), 3, "H")
    with pytest.raises(DeckTypeError, match=r"view\.face_up must be a Card or None"):
        check_face_up("6H", 3, Suit.HEARTS)


def _progress(**changes: Any) -> None:
    args: dict[str, Any] = {
        "over": False,
        "to_move": 1,
        "expected_to_move": 1,
        "moves": 4,
        "turn_limit": 10,
        "ended": (("outcome", None), ("reason", None)),
    }
    args.update(changes)
    check_progress(**args)


def test_check_progress_accepts_running_and_finished_games() -> None:
    _progress()
    _progress(moves=9)  # one move below the limit
    _progress(moves=0, to_move=0)  # set up by hand: either seat may move
    _progress(expected_to_move=None, to_move=0)  # the table checks its own
    _progress(over=True, to_move=None, ended=(("outcome", None), ("reason", "draw")))
    _progress(over=True, to_move=None, moves=10, ended=(("outcome", 1), ("reason", "out")))
    _progress(over=True, to_move=None, moves=12, ended=(("reason", "limit"),))


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"over": 0}, DeckTypeError, "view.over must be True or False"),
        ({"over": None}, DeckTypeError, "view.over must be True or False"),
        ({"over": True}, InvalidViewError, r"view.to_move is 1 in a finished game"),
        (
            {"over": True, "to_move": None, "ended": (("outcome", 0), ("reason", None))},
            InvalidViewError,
            "needs its end reason",
        ),
        ({"over": True, "to_move": None, "ended": ()}, InvalidViewError, "needs its end reason"),
        ({"ended": (("outcome", 0), ("reason", None))}, InvalidViewError, "outcome is 0 while"),
        ({"ended": (("outcome", None), ("reason", "x"))}, InvalidViewError, "reason is 'x'"),
        ({"ended": (("final_cover", C("7C")),)}, InvalidViewError, "final_cover"),
        ({"moves": 10}, InvalidViewError, "10 moves played under a turn limit of 10"),
        ({"moves": 11}, InvalidViewError, "turn limit"),
        ({"to_move": 0}, InvalidViewError, "after 4 moves seat 1 moves"),
        ({"to_move": None}, InvalidViewError, "view.to_move is None"),
    ],
)
def test_check_progress_refuses_each_inconsistency(
    changes: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        _progress(**changes)


def test_a_running_view_must_not_claim_an_outcome_through_from_view() -> None:
    """The same checks reached through the engine: a view edited in each listed way."""
    game = next(default_positions(5, salt=16))
    seat = game.to_move
    assert seat is not None
    view = game.view(seat)
    opp, stock = list(game.hands[1 - seat]), list(game.stock)
    assert view.history and view.stock_count > 0
    broken: list[View] = [
        replace(view, stock_count=-1),
        replace(view, face_up=None),
        replace(view, outcome=seat),
        replace(view, over=True),
        replace(view, to_move=1 - seat),
        replace(view, turn_limit=len(view.history)),
        replace(view, own_known=(next(c for c in Card.all() if c not in view.hand),)),
        replace(view, pile=(*view.pile, *view.pile[:1]))
        if view.pile
        else replace(view, hand=(*view.hand, *view.hand[:1])),
    ]
    for bad in broken:
        with pytest.raises(InvalidViewError):
            Game.from_view(bad, opp, stock)


# ------------------------------------------------------------------ bot_runtime


def _tree(root: Path, files: list[str]) -> None:
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def _listing(root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in runtime_files(root)]


def test_runtime_files_of_a_scratch_tree(tmp_path: Path) -> None:
    root = tmp_path / "project"
    _tree(
        root,
        [
            "referee/__init__.py",
            "referee/match.py",
            "referee/series.py",
            "referee/rules/game.py",
            "referee/rules/b.py",
            "referee/rules/classic/a.py",
            "referee/rules/__pycache__/game.cpython-311.pyc",
            "referee/rules/stale.pyc",
            "referee/rules/__pycache__/notes.txt",
            "referee/protocol/wire.py",
            "kryt_proto/v1/bot_pb2.py",
            "sdk/__init__.py",
            "sdk/tools/__init__.py",
            "sdk/tools/local.py",
            "sdk/tools_notes.py",
            "sdk/examples/mc/fast.py",
            "sdk/examples/mc/bot.toml",
            "sandbox/local.py",
            "arena/db.py",
        ],
    )
    (root / "sdk" / "emptydir").mkdir()
    got = _listing(root)
    assert got == [
        "referee/__init__.py",
        "referee/rules/b.py",
        "referee/rules/classic/a.py",
        "referee/rules/game.py",
        "referee/protocol/wire.py",
        "kryt_proto/v1/bot_pb2.py",
        "sdk/__init__.py",
        "sdk/examples/mc/bot.toml",
        "sdk/examples/mc/fast.py",
        "sdk/tools_notes.py",
    ]


def test_runtime_files_skips_what_is_missing(tmp_path: Path) -> None:
    assert _listing(tmp_path) == []
    _tree(tmp_path, ["sdk/bot.py"])
    assert _listing(tmp_path) == ["sdk/bot.py"]


def test_the_project_runtime_stages_everything_the_mc_bot_needs() -> None:
    got = set(_listing(ROOT))
    for needed in (
        "referee/rules/viewcheck.py",
        "referee/rules/classic/game.py",
        "sdk/examples/mc/bot.py",
        "sdk/examples/mc/fast.py",
        "sdk/examples/mc/bot.toml",
        "sdk/sim.py",
        "sdk/strategy.py",
        "sdk/tracker.py",
    ):
        assert needed in got, needed
    assert not [f for f in got if f.startswith("sdk/tools/") or f.endswith(".pyc")]
    assert not [f for f in got if "__pycache__" in f]


@pytest.mark.parametrize("to_move", [5, -1, "x"])
def test_a_hand_made_view_must_give_the_move_to_a_seat(to_move: Any) -> None:
    """from_view: "a position set up by hand, with no history, may give the move to either
    seat" -- either of the two seats, not any value."""
    game = Game.new(seed=5, dealer=0)
    view = replace(game.view(0), to_move=to_move)
    with pytest.raises(InvalidViewError, match=r"view\.to_move must be seat 0 or 1"):
        Game.from_view(view, list(game.hands[1]), list(game.stock))
