"""The fast decision-request encoder (issue 15): the same bytes as the regular encoder, and
bytes that decode to exactly the view the engine gave, for both rulesets."""

from __future__ import annotations

import dataclasses
import importlib.util
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from itertools import zip_longest
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.protocol import fast_encode, wire
from referee.protocol.messages import AnyView, Clock, DecisionRequest
from referee.rules import (
    Action,
    Card,
    ClassicAction,
    ClassicEndReason,
    ClassicGame,
    ClassicView,
    Game,
    Suit,
    View,
)
from referee.rules.actions import BY_CODE
from tests.protocol import strategies as S

U31 = 2**31 - 1
U32 = 2**32 - 1


def regular(request_id: int, game_number: int, view: AnyView, clock: Clock) -> bytes:
    """What the referee sends today."""
    return wire.encode_referee_message(
        DecisionRequest(request_id=request_id, game_number=game_number, view=view, clock=clock)
    )


@pytest.fixture
def no_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if the fast encoder hands a request to the regular encoder: engine views must be
    encoded by the fast path itself (a fast path that always fell back would pass the byte
    comparisons)."""

    def fell_back(message: object) -> bytes:
        raise AssertionError(f"the fast encoder fell back to the regular one for {message!r}")

    monkeypatch.setattr(fast_encode, "encode_referee_message", fell_back)


# ---------------------------------------------------------------------------- positions


def default_game_views(seed: int) -> list[View]:
    """Both seats' views at every move of one random two-player game, the final ones too."""
    rng = random.Random(seed)
    game = Game.new(seed=seed, dealer=seed % 2)
    views: list[View] = []
    while True:
        views.extend(game.view(seat) for seat in (0, 1))
        if game.over:
            return views
        game.play_random(rng)


def classic_game_views(seed: int, players: int) -> list[ClassicView]:
    """Every seat's view at every move of one random game of the classic table."""
    rng = random.Random(seed)
    game = ClassicGame.new(seed=seed, dealer=seed % players, players=players)
    views: list[ClassicView] = []
    while True:
        views.extend(game.view(seat) for seat in range(players))
        if game.over:
            return views
        game.play(rng.choice(game.legal_actions()))


def interleaved(games: Sequence[Sequence[AnyView]]) -> Iterator[AnyView]:
    """The views of several games taken in turn, as one event loop serving many games sends
    their requests."""
    for round_ in zip_longest(*games):
        yield from (v for v in round_ if v is not None)


def random_request(rng: random.Random) -> tuple[int, int, Clock]:
    """A request id, a game number and a clock, zero and the largest values included."""
    edge = (0, 1, 127, 128, 16383, 16384, U31)
    request_id = rng.choice((*edge, rng.randint(0, U31), rng.randint(0, U31)))
    game_number = rng.choice((0, 1, 2, 300, U32, rng.randint(0, 10_000)))
    clock = Clock(
        move_ms=rng.choice((0, 1, 1000, U32, rng.randint(0, 100_000))),
        bank_ms=rng.choice((0, 10_000, U32, rng.randint(0, 10**7))),
    )
    return request_id, game_number, clock


def check(view: AnyView, rng: random.Random) -> None:
    """Fast bytes == regular bytes, and they decode to the request with the engine's view."""
    request_id, game_number, clock = random_request(rng)
    data = fast_encode.encode_decision_request(request_id, game_number, view, clock)
    assert data == regular(request_id, game_number, view, clock), view
    decoded = wire.decode_referee_message(data)
    assert isinstance(decoded, DecisionRequest)
    assert decoded.view == view
    assert type(decoded.view) is type(view)
    assert (decoded.request_id, decoded.game_number, decoded.clock) == (
        request_id,
        game_number,
        clock,
    )


# ---------------------------------------------------------------------------- properties


def test_the_generated_messages_match_the_fast_encoder() -> None:
    """A change of proto/ that the fast encoder does not follow turns it off (it then sends
    everything through the regular encoder, correct but slow): this test says so."""
    assert fast_encode.SCHEMA_PROBLEM is None
    assert fast_encode.ENABLED


@pytest.mark.usefixtures("no_fallback")
def test_thousands_of_default_positions_encode_identically_and_decode_to_the_view() -> None:
    rng = random.Random(15)
    games = [default_game_views(seed) for seed in range(24)]
    views = list(interleaved(games[:16]))  # game order: the incremental history at work
    for game in games[16:]:
        views.extend(rng.sample(game, len(game)))  # shuffled: every history from scratch
    assert len(views) > 3000
    for view in views:
        check(view, rng)


@pytest.mark.usefixtures("no_fallback")
@pytest.mark.parametrize("players", [2, 3, 4])
def test_thousands_of_classic_positions_encode_identically_and_decode_to_the_view(
    players: int,
) -> None:
    rng = random.Random(players)
    games = [classic_game_views(100 * players + seed, players) for seed in range(8)]
    views = list(interleaved(games[:6]))
    for game in games[6:]:
        views.extend(rng.sample(game, len(game)))
    assert len(views) > 1000
    assert any(v.over for v in views) and any(v.legal_actions for v in views)
    for view in views:
        check(view, rng)


@settings(max_examples=300, deadline=None)
@given(
    request=S.decision_requests,
)
def test_any_default_request_encodes_as_the_regular_encoder_does(
    request: DecisionRequest,
) -> None:
    """Synthetic views too (counts up to 2**32-1, request ids up to 2**64-1): what the small
    tables do not hold goes through the regular encoder, with the same bytes."""
    data = fast_encode.encode_decision_request(
        request.request_id, request.game_number, request.view, request.clock
    )
    assert data == wire.encode_referee_message(request)
    assert wire.decode_referee_message(data) == request


CARDS = st.sampled_from(Card.all())
CARD_TUPLES = st.lists(CARDS, max_size=12, unique=True).map(tuple)


@st.composite
def classic_actions(draw: st.DrawFn) -> ClassicAction:
    """Any well-formed classic action (legal or not)."""
    kind = draw(st.sampled_from(("lead", "cover", "take")))
    if kind == "take":
        return ClassicAction.take()
    rank = draw(st.integers(0, 8))
    suits = draw(st.lists(st.sampled_from(list(Suit)), min_size=1, max_size=4, unique=True))
    led = [Card.from_index(s * 9 + rank) for s in suits]
    if kind == "lead":
        return ClassicAction.lead(*led)
    others = [c for c in Card.all() if c not in led]
    covers = draw(
        st.lists(st.sampled_from(others), min_size=len(led), max_size=len(led), unique=True)
    )
    return ClassicAction.cover(*zip(led, covers, strict=True))


@st.composite
def synthetic_table_views(draw: st.DrawFn) -> ClassicView:
    """A ClassicView with arbitrary (well-typed) contents of any table size."""
    players = draw(st.sampled_from((2, 3, 4)))
    seat = st.integers(0, players - 1)
    history = draw(st.lists(classic_actions(), max_size=40).map(tuple))
    return ClassicView(
        ruleset="classic",
        seat=draw(seat),
        players=players,
        dealer=draw(seat),
        hand=draw(CARD_TUPLES),
        hand_sizes=tuple(draw(st.lists(st.integers(0, 36), min_size=players, max_size=players))),
        out=tuple(draw(st.lists(st.booleans(), min_size=players, max_size=players))),
        known=tuple(draw(st.lists(CARD_TUPLES, min_size=players, max_size=players))),
        leader=draw(st.none() | seat),
        defender=draw(st.none() | seat),
        led=draw(CARD_TUPLES),
        discard=draw(CARD_TUPLES),
        trump=draw(st.sampled_from(list(Suit))),
        face_up=draw(st.none() | CARDS),
        stock_count=draw(st.integers(0, 36) | st.integers(0, U32)),
        to_move=draw(st.none() | seat),
        legal_actions=draw(st.lists(classic_actions(), max_size=20).map(tuple)),
        history=history,
        movers=tuple(draw(st.lists(seat, min_size=len(history), max_size=len(history)))),
        turn_limit=draw(st.integers(1, 1000) | st.integers(1, U32)),
        over=draw(st.booleans()),
        loser=draw(st.none() | seat),
        reason=draw(st.none() | st.sampled_from(list(ClassicEndReason))),
    )


@settings(max_examples=300, deadline=None)
@given(
    view=synthetic_table_views(),
    request_id=st.integers(0, 2**64 - 1),
    game_number=st.integers(0, U32),
    move_ms=st.integers(0, U32),
    bank_ms=st.integers(0, U32),
)
def test_any_table_request_encodes_as_the_regular_encoder_does(
    view: ClassicView, request_id: int, game_number: int, move_ms: int, bank_ms: int
) -> None:
    clock = Clock(move_ms, bank_ms)
    data = fast_encode.encode_decision_request(request_id, game_number, view, clock)
    assert data == regular(request_id, game_number, view, clock)
    decoded = wire.decode_referee_message(data)
    assert isinstance(decoded, DecisionRequest) and decoded.view == view


# ---------------------------------------------------------------------------- edge cases


def first(views: list[View], condition: Callable[[View], bool]) -> View:
    return next(v for v in views if condition(v))


@pytest.mark.usefixtures("no_fallback")
def test_an_empty_hand_and_a_finished_game() -> None:
    views = [v for seed in range(10) for v in default_game_views(seed)]
    finished = first(views, lambda v: v.over and not v.hand)
    assert finished.to_move is None and not finished.legal_actions
    check(finished, random.Random(1))
    check(dataclasses.replace(views[0], hand=(), legal_actions=()), random.Random(2))


@pytest.mark.usefixtures("no_fallback")
def test_a_position_where_the_only_legal_action_is_take() -> None:
    take = Action.parse("take")
    views = [v for seed in range(20) for v in default_game_views(seed)]
    forced = first(views, lambda v: v.legal_actions == (take,))
    check(forced, random.Random(3))


@pytest.mark.usefixtures("no_fallback")
def test_a_four_seat_table_from_deal_to_end() -> None:
    views = classic_game_views(4, 4)
    assert {v.seat for v in views} == {0, 1, 2, 3} and views[-1].over
    assert any(len(v.known) == 4 and any(v.known) for v in views)  # SeatCards filled
    rng = random.Random(4)
    for view in views:
        check(view, rng)


@pytest.mark.usefixtures("no_fallback")
def test_histories_that_share_a_prefix_then_diverge() -> None:
    """Two games of one deal played alike, then differently: the incremental history must
    not reuse the other game's bytes (equal length, same last action, different history)."""
    rng = random.Random(5)
    a, b = Game.new(seed=7, dealer=0), Game.new(seed=7, dealer=0)
    for _ in range(6):
        action = a.legal_actions()[0]
        a.play(action)
        b.play(action)
    diverged = 0
    while not (a.over or b.over):
        for game in (a, b):
            check(game.view(game.to_move or 0), rng)
        actions_a, actions_b = a.legal_actions(), b.legal_actions()
        a.play(actions_a[0])
        b.play(actions_b[-1])
        diverged += actions_a[0] is not actions_b[-1]
    assert diverged
    # The same history in another tuple, and a history encoded twice.
    view = a.view(0)
    check(dataclasses.replace(view, history=tuple(list(view.history))), rng)
    check(view, rng)


@pytest.mark.usefixtures("no_fallback")
def test_a_long_history_with_multi_byte_lengths() -> None:
    """A view and request longer than 16 KiB (their lengths take three varint bytes), and a
    history grown from it, as the turn limit allows."""
    rng = random.Random(6)
    view = default_game_views(8)[20]
    actions = [a for a in BY_CODE if a is not None]
    history = tuple(rng.choice(actions) for _ in range(1500))
    for n in (1400, 1499, 1500):
        long_view = dataclasses.replace(view, history=history[:n])
        data = fast_encode.encode_decision_request(U31, U32, long_view, Clock(0, 0))
        assert len(data) > 2**14
        assert data == regular(U31, U32, long_view, Clock(0, 0))
        decoded = wire.decode_referee_message(data)
        assert isinstance(decoded, DecisionRequest) and decoded.view == long_view


def test_texts_are_utf8_as_the_regular_encoder_writes_them() -> None:
    """No text of a request is controlled by a bot (cards and actions come from the engine,
    the ruleset from the referee); still, any text is written as protobuf writes it."""
    table = classic_game_views(1, 3)[5]
    rng = random.Random(7)
    for ruleset in ("", "классика ♠", "x" * 300, "classic"):
        request_id, game_number, clock = random_request(rng)
        view = dataclasses.replace(table, ruleset=ruleset)
        assert fast_encode.encode_decision_request(request_id, game_number, view, clock) == regular(
            request_id, game_number, view, clock
        )


@pytest.mark.parametrize(
    "change",
    [
        {"seat": True},  # a bool where an int goes: the regular encoder decides
        {"stock_count": 2**32 - 1},  # beyond the small tables
        {"stock_count": 2**32},  # beyond uint32: both raise
        {"seat": -1},
        {"turn_limit": 10**6},
        {"over": 1},
        {"face_up": "TH"},  # text instead of a Card
        {"hand": ("TH",)},
        {"history": ("take",)},
    ],
)
def test_unusual_values_get_what_the_regular_encoder_gives(change: dict[str, object]) -> None:
    view = dataclasses.replace(default_game_views(3)[4], **change)  # type: ignore[arg-type]

    def outcome(encode: Callable[[int, int, AnyView, Clock], bytes]) -> bytes | str:
        try:
            return encode(5, 1, view, Clock(1000, 0))
        except wire.WireError as exc:
            return f"WireError: {exc}"
        except Exception as exc:  # compared, not hidden
            return f"{type(exc).__name__}: {exc}"

    assert outcome(fast_encode.encode_decision_request) == outcome(regular)


def test_varints_at_every_length_boundary() -> None:
    view = default_game_views(5)[7]
    values = sorted({v for k in range(1, 10) for v in (2 ** (7 * k) - 1, 2 ** (7 * k))})
    for value in (0, *values, 2**64 - 1):
        if value < 2**64:
            assert fast_encode.encode_decision_request(value, 1, view, Clock(0, 0)) == regular(
                value, 1, view, Clock(0, 0)
            ), value
        if value < 2**32:
            clock = Clock(value, value)
            assert fast_encode.encode_decision_request(1, value, view, clock) == regular(
                1, value, view, clock
            ), value


def test_out_of_range_request_ids_and_clocks_raise_as_the_regular_encoder_does() -> None:
    view = default_game_views(1)[0]
    for request_id, clock in ((-1, Clock(0, 0)), (2**64, Clock(0, 0)), (1, Clock(2**32, 0))):
        with pytest.raises(wire.WireError):
            regular(request_id, 1, view, clock)
        with pytest.raises(wire.WireError):
            fast_encode.encode_decision_request(request_id, 1, view, clock)


def test_a_lazily_decoded_view_takes_the_regular_path_with_the_same_bytes() -> None:
    view = default_game_views(2)[10]
    lazy = wire.decode_referee_message(regular(1, 1, view, Clock(1, 1)), lazy=True)
    assert isinstance(lazy, DecisionRequest) and type(lazy.view) is not View
    assert fast_encode.encode_decision_request(3, 4, lazy.view, Clock(5, 6)) == regular(
        3, 4, view, Clock(5, 6)
    )


def test_threads_encoding_interleaved_games_get_the_right_bytes() -> None:
    """The local executor runs series in threads sharing the fragment caches."""
    games: list[Sequence[AnyView]] = [default_game_views(seed) for seed in range(40, 48)]
    games += [classic_game_views(seed, 3) for seed in range(40, 44)]
    failures: list[str] = []

    def run(part: list[Sequence[AnyView]]) -> None:
        for view in interleaved(part):
            data = fast_encode.encode_decision_request(9, 9, view, Clock(100, 100))
            if data != regular(9, 9, view, Clock(100, 100)):
                failures.append(repr(view))

    threads = [threading.Thread(target=run, args=(games[i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    assert failures == []


def test_the_benchmark_script_runs_and_reports_every_ruleset(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """benchmarks/encode_request.py at a tiny size: it checks every position's bytes before
    timing, and prints a row per ruleset and table size."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "encode_request.py"
    spec = importlib.util.spec_from_file_location("encode_request", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.main(["--games", "2", "--interleave", "2", "--repeat", "1"])
    rows = {"default", "classic 2 seats", "classic 3 seats", "classic 4 seats", "all"}
    assert set(results) == rows
    assert all(r["regular"] > 0 and r["fast"] > 0 and r["cold"] > 0 for r in results.values())
    printed = capsys.readouterr().out
    assert all(row in printed for row in rows)
