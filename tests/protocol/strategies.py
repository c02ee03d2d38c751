"""Hypothesis strategies for protocol messages: real views from played games and synthetic
views with arbitrary (well-typed) contents."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from referee.protocol.messages import (
    CLOCKS,
    MAX_TIME_MS,
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
    Shutdown,
    TimeControl,
)
from referee.rules import Action, ActionKind, Card, EndReason, Game, Suit, View

U32 = st.integers(0, 2**32 - 1)
U64 = st.integers(0, 2**64 - 1)
SEATS = st.sampled_from((0, 1))
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)  # protobuf needs UTF-8
CARDS = st.sampled_from(Card.all())
CARD_TUPLES = st.lists(CARDS, max_size=36).map(tuple)


def _pair(cover: Card, lead: Card, swap: bool) -> Action:
    return Action(ActionKind.COVER_AND_LEAD, cover=cover, lead=lead, swap=swap)


ACTIONS = st.one_of(
    st.builds(lambda c, s: Action(ActionKind.LEAD, lead=c, swap=s), CARDS, st.booleans()),
    st.builds(
        lambda c, s: Action(ActionKind.COVER_AND_GO_OUT, cover=c, swap=s), CARDS, st.booleans()
    ),
    st.builds(lambda s: Action(ActionKind.TAKE, swap=s), st.booleans()),
    st.tuples(CARDS, CARDS, st.booleans()).filter(lambda t: t[0] != t[1]).map(lambda t: _pair(*t)),
)


@st.composite
def played_views(draw: st.DrawFn) -> View:
    """The view of either seat after some random moves of a real game (possibly over)."""
    game = Game.new(seed=draw(st.integers(0, 10**6)), dealer=draw(SEATS))
    rng = random.Random(draw(st.integers(0, 10**6)))
    for _ in range(draw(st.integers(0, 400))):
        if game.over:
            break
        game.play_random(rng)
    return game.view(draw(SEATS))


synthetic_views = st.builds(
    View,
    seat=SEATS,
    dealer=SEATS,
    hand=CARD_TUPLES,
    pile=CARD_TUPLES,
    trump=st.sampled_from(list(Suit)),
    face_up=st.none() | CARDS,
    stock_count=U32,
    opponent_count=U32,
    opponent_known=CARD_TUPLES,
    own_known=CARD_TUPLES,
    to_move=st.none() | SEATS,
    legal_actions=st.lists(ACTIONS, max_size=20).map(tuple),
    history=st.lists(ACTIONS, max_size=60).map(tuple),
    turn_limit=U32,
    over=st.booleans(),
    outcome=st.none() | SEATS,
    reason=st.none() | st.sampled_from(list(EndReason)),
    final_cover=st.none() | CARDS,
)

views = st.one_of(played_views(), synthetic_views)
time_controls = st.builds(
    TimeControl,
    move_ms=st.integers(1, MAX_TIME_MS),
    bank_ms=st.integers(0, MAX_TIME_MS),
    increment_ms=st.integers(0, MAX_TIME_MS),
    grace_ms=st.integers(0, MAX_TIME_MS),
    clock=st.sampled_from(CLOCKS),
)
scores = st.builds(SeriesScore, wins=U32, draws=U32, losses=U32)

handshakes = st.builds(
    Handshake,
    protocol_version=U32,
    referee_version=TEXT,
    games=U32,
    opponent_name=TEXT,
    time_control=time_controls,
)
handshake_replies = st.builds(
    HandshakeReply, protocol_version=U32, name=TEXT, version=TEXT, sdk=TEXT
)
game_starts = st.builds(
    GameStart,
    game_number=U32,
    seat=SEATS,
    dealer=SEATS,
    score=scores,
    opponent_name=TEXT,
    time_control=time_controls,
    turn_limit=U32,
)
decision_requests = st.builds(
    DecisionRequest,
    request_id=U64,
    game_number=U32,
    view=views,
    clock=st.builds(Clock, move_ms=U32, bank_ms=U32),
)
decisions = st.builds(Decision, request_id=U64, action=TEXT)
game_ends = st.builds(
    GameEnd,
    game_number=U32,
    winner=st.none() | SEATS,
    reason=st.sampled_from(list(GameEndReason)),
    detail=TEXT,
    view=st.none() | views,
    deck=CARD_TUPLES,
    score=scores,
)
shutdowns = st.builds(Shutdown, reason=TEXT)
bot_errors = st.builds(BotError, message=TEXT)
