"""The one place that converts between protobuf (``kryt_proto``) and Python values.

Messages travel as bytes: gRPC is set up with identity (de)serializers and this module turns
bytes into :mod:`referee.protocol.messages` values and back. Decoding never trusts its
input: anything a peer could send that does not make sense raises
:class:`MalformedMessageError`, quoting it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from google.protobuf.message import DecodeError
from google.protobuf.message import Message as PbMessage

from kryt_proto.v1 import bot_pb2 as pb
from referee.protocol.messages import (
    DEFAULT_GRACE_MS,
    BotError,
    BotMessage,
    Clock,
    Decision,
    DecisionRequest,
    GameEnd,
    GameEndReason,
    GameStart,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    SeriesScore,
    Shutdown,
    TimeControl,
)
from referee.rules import (
    RULESETS,
    Action,
    ActionKind,
    Card,
    ClassicAction,
    ClassicEndReason,
    ClassicView,
    EndReason,
    InvalidActionError,
    InvalidCardError,
    Suit,
    View,
)
from referee.rules.actions import BY_CODE
from referee.rules.errors import quote

SERVICE: Final = "kryt.v1.Bot"
"""Fully qualified gRPC service name."""
PLAY_METHOD: Final = "Play"
PLAY_PATH: Final = f"/{SERVICE}/{PLAY_METHOD}"

MAX_ERROR_CHARS: Final = 4000
"""Longest ``BotError`` text sent (the rest is cut, saying how much): an error quoting a
huge input must still fit the reply limit the bot's server sets, or the stream dies with it
and the bot is never heard again."""
"""The bidirectional streaming method carrying a whole series."""


class WireError(ValueError):
    """A message could not be converted (to or from the wire)."""


class MalformedMessageError(WireError):
    """Bytes from a peer are not a valid protocol message; the text quotes what was wrong."""


# ---------------------------------------------------------------------------- enums

_REASON_TO_PB: Final[dict[GameEndReason, pb.EndReason.ValueType]] = {
    GameEndReason.OUT: pb.END_REASON_OUT,
    GameEndReason.DRAW_BY_FINAL_ANSWER: pb.END_REASON_DRAW_BY_FINAL_ANSWER,
    GameEndReason.TURN_LIMIT: pb.END_REASON_TURN_LIMIT,
    GameEndReason.LAST_HOLDER: pb.END_REASON_LAST_HOLDER,
    GameEndReason.ALL_OUT: pb.END_REASON_ALL_OUT,
    GameEndReason.TIMEOUT: pb.END_REASON_TIMEOUT,
    GameEndReason.ILLEGAL_ACTION: pb.END_REASON_ILLEGAL_ACTION,
    GameEndReason.MALFORMED_REPLY: pb.END_REASON_MALFORMED_REPLY,
    GameEndReason.CRASH: pb.END_REASON_CRASH,
    GameEndReason.STARTUP_FAILURE: pb.END_REASON_STARTUP_FAILURE,
    GameEndReason.MEMORY_LIMIT: pb.END_REASON_MEMORY_LIMIT,
    GameEndReason.PROCESS_LIMIT: pb.END_REASON_PROCESS_LIMIT,
    GameEndReason.DISK_LIMIT: pb.END_REASON_DISK_LIMIT,
    GameEndReason.DOUBLE_FORFEIT: pb.END_REASON_DOUBLE_FORFEIT,
    GameEndReason.VOID: pb.END_REASON_VOID,
}
_REASON_FROM_PB: Final = {v: k for k, v in _REASON_TO_PB.items()}
_RULES_REASON_TO_PB: Final = {r: _REASON_TO_PB[GameEndReason.from_rules(r)] for r in EndReason}
_RULES_REASON_FROM_PB: Final = {v: k for k, v in _RULES_REASON_TO_PB.items()}
_RULES_REASON_FROM_PB_OR_NONE: Final[dict[pb.EndReason.ValueType, EndReason | None]] = {
    pb.END_REASON_UNSPECIFIED: None,
    **_RULES_REASON_FROM_PB,
}

_CLASSIC_REASON_TO_PB: Final = {
    r: _REASON_TO_PB[GameEndReason.from_rules(r)] for r in ClassicEndReason
}
_CLASSIC_REASON_FROM_PB: Final = {v: k for k, v in _CLASSIC_REASON_TO_PB.items()}

_CLOCK_TO_PB: Final[dict[str, pb.ClockKind.ValueType]] = {
    "wall": pb.CLOCK_KIND_WALL,
    "cpu": pb.CLOCK_KIND_CPU,
}
_CLOCK_FROM_PB: Final[dict[pb.ClockKind.ValueType, str]] = {
    pb.CLOCK_KIND_UNSPECIFIED: "wall",  # a referee from before the field: the wall clock
    **{v: k for k, v in _CLOCK_TO_PB.items()},
}

_KIND_FROM_PB: Final[dict[pb.ActionKind.ValueType, ActionKind]] = {
    pb.ACTION_KIND_LEAD: ActionKind.LEAD,
    pb.ACTION_KIND_COVER_AND_LEAD: ActionKind.COVER_AND_LEAD,
    pb.ACTION_KIND_COVER_AND_GO_OUT: ActionKind.COVER_AND_GO_OUT,
    pb.ACTION_KIND_TAKE: ActionKind.TAKE,
}

# ---------------------------------------------------------------------------- cards, actions

# Every canonical action text (2,666 exist, interned by the rules core at import), so that
# decoding a long history is one dict lookup per action instead of a parse from the first
# request on: this is on the per-decision hot path.
_ACTIONS: Final[dict[str, Action]] = {a.text: a for a in BY_CODE if a is not None}
_CARD_BY_TEXT: Final[dict[str, Card]] = {str(c): c for c in Card.all()}


def _card(text: str, what: str) -> Card:
    try:
        return Card.parse(text)
    except InvalidCardError as exc:
        raise MalformedMessageError(f"{what}: {exc}") from None


def _cards(texts: Sequence[str], what: str) -> tuple[Card, ...]:
    try:  # fast path: canonical text, one dict lookup per card
        return tuple(map(_CARD_BY_TEXT.__getitem__, texts))
    except KeyError:
        return tuple(_card(t, what) for t in texts)


def _optional_card(text: str, what: str) -> Card | None:
    return _card(text, what) if text else None


def _action(text: str, what: str) -> Action:
    action = _ACTIONS.get(text)
    if action is not None:
        return action
    try:
        return Action.parse(text)
    except InvalidActionError as exc:
        raise MalformedMessageError(f"{what}: {exc}") from None


def _actions(texts: Sequence[str], what: str) -> tuple[Action, ...]:
    try:  # fast path: every text seen before
        return tuple(map(_ACTIONS.__getitem__, texts))
    except KeyError:
        return tuple(_action(t, what) for t in texts)


def _suit(text: str) -> Suit:
    if len(text) != 1:
        raise MalformedMessageError(f"view.trump: expected one of C D H S, got {quote(text)}")
    try:
        return Suit.parse(text)
    except InvalidCardError as exc:
        raise MalformedMessageError(f"view.trump: {exc}") from None


def _seat(value: int, what: str, players: int = 2) -> int:
    if not 0 <= value < players:
        if players == 2:
            raise MalformedMessageError(f"{what}: a seat is 0 or 1, got {value!r}")
        raise MalformedMessageError(
            f"{what}: a seat of a {players}-seat table is 0..{players - 1}, got {value!r}"
        )
    return value


def _ruleset(name: str, players: int, what: str) -> tuple[str, int]:
    """(ruleset, players) of a handshake or game start; "" and 0 mean the default game."""
    ruleset = name or "default"
    count = players or 2
    if ruleset not in RULESETS or count not in RULESETS[ruleset]:
        raise MalformedMessageError(
            f"{what}: unknown ruleset {quote(ruleset)} or table size {count} "
            f"(known: {', '.join(f'{r} {list(n)}' for r, n in RULESETS.items())})"
        )
    return ruleset, count


def _classic_action(text: str, what: str) -> ClassicAction:
    try:
        return ClassicAction.parse(text)
    except InvalidActionError as exc:
        raise MalformedMessageError(f"{what}: {exc}") from None


# ---------------------------------------------------------------------------- view


def view_to_pb(view: View) -> pb.View:
    """The protobuf form of an engine :class:`~referee.rules.View`."""
    msg = pb.View()
    _fill_view(msg, view)
    return msg


_TEXT: Final = operator.attrgetter("text")
"""Canonical text of a Card or an Action without a Python-level ``__str__`` call (hot path)."""


def _fill_view(msg: pb.View, view: View) -> None:
    # Filled in place: building a sub-message and assigning it would copy it (hot path).
    msg.seat = view.seat
    msg.dealer = view.dealer
    msg.hand.extend(map(_TEXT, view.hand))
    msg.pile.extend(map(_TEXT, view.pile))
    msg.trump = view.trump.letter
    if view.face_up is not None:
        msg.face_up = str(view.face_up)
    msg.stock_count = view.stock_count
    msg.opponent_count = view.opponent_count
    msg.opponent_known.extend(map(_TEXT, view.opponent_known))
    msg.own_known.extend(map(_TEXT, view.own_known))
    msg.legal_actions.extend(map(_TEXT, view.legal_actions))
    msg.history.extend(map(_TEXT, view.history))
    msg.over = view.over
    if view.reason is not None:
        msg.reason = _RULES_REASON_TO_PB[view.reason]
    msg.turn_limit = view.turn_limit
    if view.final_cover is not None:
        msg.final_cover = str(view.final_cover)
    if view.to_move is not None:
        msg.to_move = view.to_move
    if view.outcome is not None:
        msg.winner = view.outcome


_SEATS: Final = {0: 0, 1: 1}
_TRUMPS: Final = {s.letter: s for s in Suit}
_CARD_OR_NONE: Final[dict[str, Card | None]] = {"": None, **_CARD_BY_TEXT}


def view_from_pb(msg: pb.View) -> View:
    """The engine :class:`~referee.rules.View` of a protobuf view (structure checked only)."""
    try:  # fast path (per-decision hot path): canonical input, C-level dict lookups only
        card = _CARD_BY_TEXT.__getitem__
        action = _ACTIONS.__getitem__
        return View(
            seat=_SEATS[msg.seat],
            dealer=_SEATS[msg.dealer],
            hand=tuple(map(card, msg.hand)),
            pile=tuple(map(card, msg.pile)),
            trump=_TRUMPS[msg.trump],
            face_up=_CARD_OR_NONE[msg.face_up],
            stock_count=msg.stock_count,
            opponent_count=msg.opponent_count,
            opponent_known=tuple(map(card, msg.opponent_known)),
            own_known=tuple(map(card, msg.own_known)),
            to_move=_SEATS[msg.to_move] if msg.HasField("to_move") else None,
            legal_actions=tuple(map(action, msg.legal_actions)),
            history=tuple(map(action, msg.history)),
            turn_limit=msg.turn_limit,
            over=msg.over,
            outcome=_SEATS[msg.winner] if msg.HasField("winner") else None,
            reason=_RULES_REASON_FROM_PB_OR_NONE[msg.reason],
            final_cover=_CARD_OR_NONE[msg.final_cover],
        )
    except KeyError:
        return _view_from_pb_checked(msg)


class _LazyView(View):
    """A :class:`~referee.rules.View` decoded from its protobuf view as it is read (see
    :func:`lazy_view_from_pb`).

    The fields not yet decoded are the view's slots left unset: reading one raises
    ``AttributeError``, which Python turns into a call of :meth:`__getattr__`, which decodes
    and fills the slot (a list alone; the small fields all at once), so every later read is
    a plain slot read."""

    __slots__ = ("_source",)
    _source: pb.View

    def __getattr__(self, name: str) -> Any:
        what = _LAZY_FIELDS.get(name)
        if what is not None:
            texts = getattr(self._source, name)
            value = _actions(texts, what) if name == "history" else _cards(texts, what)
            object.__setattr__(self, name, value)
            return value
        if name in _SCALAR_FIELDS:
            _decode_scalars(self, self._source)
            return object.__getattribute__(self, name)
        raise AttributeError(name)

    def __eq__(self, other: object) -> bool:
        # The dataclass's __eq__ wants the same class; a lazy view equals the eager one.
        if not isinstance(other, View):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _VIEW_FIELDS)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, f) for f in _VIEW_FIELDS))

    def __repr__(self) -> str:
        return "View" + View.__repr__(self).removeprefix(type(self).__qualname__)

    def __reduce__(self) -> tuple[Any, ...]:
        # Copies and pickles are plain (eager) views.
        return (View, tuple(getattr(self, f) for f in _VIEW_FIELDS))


_LAZY_FIELDS: Final = {
    "hand": "view.hand",
    "pile": "view.pile",
    "opponent_known": "view.opponent_known",
    "own_known": "view.own_known",
    "history": "view.history",
}
_VIEW_FIELDS: Final = tuple(View.__dataclass_fields__)
_SCALAR_FIELDS: Final = frozenset(_VIEW_FIELDS) - set(_LAZY_FIELDS) - {"legal_actions"}


def _decode_scalars(view: _LazyView, msg: pb.View) -> None:
    """Fill every field of ``view`` that is not a list (raises :class:`MalformedMessageError`
    naming the first one that is wrong)."""
    put = object.__setattr__
    values: tuple[tuple[str, object], ...]
    try:
        values = (
            ("seat", _SEATS[msg.seat]),
            ("dealer", _SEATS[msg.dealer]),
            ("trump", _TRUMPS[msg.trump]),
            ("face_up", _CARD_OR_NONE[msg.face_up]),
            ("to_move", _SEATS[msg.to_move] if msg.HasField("to_move") else None),
            ("outcome", _SEATS[msg.winner] if msg.HasField("winner") else None),
            ("reason", _RULES_REASON_FROM_PB_OR_NONE[msg.reason]),
            ("final_cover", _CARD_OR_NONE[msg.final_cover]),
        )
    except KeyError:
        checked = _view_from_pb_checked(msg)
        values = tuple((name, getattr(checked, name)) for name in _SCALAR_FIELDS)
    for name, value in values:
        put(view, name, value)
    put(view, "stock_count", msg.stock_count)
    put(view, "opponent_count", msg.opponent_count)
    put(view, "turn_limit", msg.turn_limit)
    put(view, "over", msg.over)


def lazy_view_from_pb(msg: pb.View) -> View:
    """Like :func:`view_from_pb`, but only the legal actions are decoded at once: the other
    fields are decoded when the bot first reads them (the lists one by one, the rest
    together), so a bot that looks at ``legal_actions`` alone pays for that.

    Used by the SDK on the bot's side (a malformed field other than the legal actions is
    then reported when first read); the result is a ``View`` in every respect (equality,
    hashing, copying, pickling)."""
    try:
        legal_actions = tuple(map(_ACTIONS.__getitem__, msg.legal_actions))
    except KeyError:
        return _view_from_pb_checked(msg)
    view = object.__new__(_LazyView)
    object.__setattr__(view, "_source", msg)
    object.__setattr__(view, "legal_actions", legal_actions)
    return view


def _view_from_pb_checked(msg: pb.View) -> View:
    """Slow path of :func:`view_from_pb`: accepts any spelling the engine does, and names
    the field and value that is wrong."""
    reason: EndReason | None = None
    if msg.reason:
        found = _RULES_REASON_FROM_PB.get(msg.reason)
        if found is None:
            raise MalformedMessageError(f"view.reason: not an ending under the rules: {msg.reason}")
        reason = found
    return View(
        seat=_seat(msg.seat, "view.seat"),
        dealer=_seat(msg.dealer, "view.dealer"),
        hand=_cards(msg.hand, "view.hand"),
        pile=_cards(msg.pile, "view.pile"),
        trump=_suit(msg.trump),
        face_up=_optional_card(msg.face_up, "view.face_up"),
        stock_count=msg.stock_count,
        opponent_count=msg.opponent_count,
        opponent_known=_cards(msg.opponent_known, "view.opponent_known"),
        own_known=_cards(msg.own_known, "view.own_known"),
        to_move=_seat(msg.to_move, "view.to_move") if msg.HasField("to_move") else None,
        legal_actions=_actions(msg.legal_actions, "view.legal_actions"),
        history=_actions(msg.history, "view.history"),
        turn_limit=msg.turn_limit,
        over=msg.over,
        outcome=_seat(msg.winner, "view.winner") if msg.HasField("winner") else None,
        reason=reason,
        final_cover=_optional_card(msg.final_cover, "view.final_cover"),
    )


# ---------------------------------------------------------------------------- table view


def _fill_table_view(msg: pb.TableView, view: ClassicView) -> None:
    msg.ruleset = view.ruleset
    msg.seat = view.seat
    msg.players = view.players
    msg.dealer = view.dealer
    msg.hand.extend(map(_TEXT, view.hand))
    msg.hand_sizes.extend(view.hand_sizes)
    msg.out.extend(view.out)
    for cards in view.known:
        msg.known.add().cards.extend(map(_TEXT, cards))
    if view.leader is not None:
        msg.leader = view.leader
    if view.defender is not None:
        msg.defender = view.defender
    msg.led.extend(map(_TEXT, view.led))
    msg.discard.extend(map(_TEXT, view.discard))
    msg.trump = view.trump.letter
    if view.face_up is not None:
        msg.face_up = view.face_up.text
    msg.stock_count = view.stock_count
    if view.to_move is not None:
        msg.to_move = view.to_move
    msg.legal_actions.extend(map(_TEXT, view.legal_actions))
    msg.history.extend(map(_TEXT, view.history))
    msg.movers.extend(view.movers)
    msg.turn_limit = view.turn_limit
    msg.over = view.over
    if view.loser is not None:
        msg.loser = view.loser
    if view.reason is not None:
        msg.reason = _CLASSIC_REASON_TO_PB[view.reason]


def table_view_to_pb(view: ClassicView) -> pb.TableView:
    """The protobuf form of a classic table's :class:`~referee.rules.ClassicView`."""
    msg = pb.TableView()
    _fill_table_view(msg, view)
    return msg


def table_view_from_pb(msg: pb.TableView) -> ClassicView:
    """The engine's ClassicView of a protobuf table view (structure checked, not the game)."""
    ruleset, players = _ruleset(msg.ruleset, msg.players, "table_view")
    if ruleset != "classic":
        raise MalformedMessageError(f"table_view.ruleset: expected 'classic', got {quote(ruleset)}")

    def seat(value: int, what: str) -> int:
        return _seat(value, f"table_view.{what}", players)

    def optional_seat(present: bool, value: int, what: str) -> int | None:
        return seat(value, what) if present else None

    for name in ("hand_sizes", "out", "known"):
        if len(getattr(msg, name)) != players:
            raise MalformedMessageError(
                f"table_view.{name}: one entry per seat ({players}), got {len(getattr(msg, name))}"
            )
    reason: ClassicEndReason | None = None
    if msg.reason:
        found = _CLASSIC_REASON_FROM_PB.get(msg.reason)
        if found is None:
            raise MalformedMessageError(
                f"table_view.reason: not an ending of the classic table: {msg.reason}"
            )
        reason = found
    movers = tuple(seat(m, "movers") for m in msg.movers)
    if len(movers) != len(msg.history):
        raise MalformedMessageError(
            f"table_view.movers: one per action ({len(msg.history)}), got {len(movers)}"
        )
    return ClassicView(
        ruleset=ruleset,
        seat=seat(msg.seat, "seat"),
        players=players,
        dealer=seat(msg.dealer, "dealer"),
        hand=_cards(msg.hand, "table_view.hand"),
        hand_sizes=tuple(msg.hand_sizes),
        out=tuple(msg.out),
        known=tuple(_cards(k.cards, "table_view.known") for k in msg.known),
        leader=optional_seat(msg.HasField("leader"), msg.leader, "leader"),
        defender=optional_seat(msg.HasField("defender"), msg.defender, "defender"),
        led=_cards(msg.led, "table_view.led"),
        discard=_cards(msg.discard, "table_view.discard"),
        trump=_suit(msg.trump),
        face_up=_optional_card(msg.face_up, "table_view.face_up"),
        stock_count=msg.stock_count,
        to_move=optional_seat(msg.HasField("to_move"), msg.to_move, "to_move"),
        legal_actions=tuple(
            _classic_action(t, "table_view.legal_actions") for t in msg.legal_actions
        ),
        history=tuple(_classic_action(t, "table_view.history") for t in msg.history),
        movers=movers,
        turn_limit=msg.turn_limit,
        over=msg.over,
        loser=optional_seat(msg.HasField("loser"), msg.loser, "loser"),
        reason=reason,
    )


# ---------------------------------------------------------------------------- small parts


def _time_control_to_pb(tc: TimeControl) -> pb.TimeControl:
    # Every part is sent, the grace even when 0 (it has presence: absent means the default).
    return pb.TimeControl(
        move_ms=tc.move_ms,
        bank_ms=tc.bank_ms,
        increment_ms=tc.increment_ms,
        grace_ms=tc.grace_ms,
        clock=_CLOCK_TO_PB[tc.clock],
    )


def _time_control_from_pb(msg: pb.TimeControl) -> TimeControl:
    # A referee that predates a field leaves it unset: no increment, the default grace
    # (DEFAULT_GRACE_MS) and the wall clock, which is what that referee applied.
    clock = _CLOCK_FROM_PB.get(msg.clock)
    if clock is None:
        raise MalformedMessageError(f"time_control.clock: unknown clock kind {msg.clock}")
    grace_ms = msg.grace_ms if msg.HasField("grace_ms") else DEFAULT_GRACE_MS
    try:
        return TimeControl(
            move_ms=msg.move_ms,
            bank_ms=msg.bank_ms,
            increment_ms=msg.increment_ms,
            grace_ms=grace_ms,
            clock=clock,
        )
    except ValueError as exc:
        raise MalformedMessageError(f"time_control: {exc}") from None


def _score_to_pb(score: SeriesScore) -> pb.SeriesScore:
    return pb.SeriesScore(wins=score.wins, draws=score.draws, losses=score.losses)


def _score_from_pb(msg: pb.SeriesScore) -> SeriesScore:
    return SeriesScore(wins=msg.wins, draws=msg.draws, losses=msg.losses)


def structured_action(msg: pb.Action) -> Action:
    """The action a structured message names; raises :class:`MalformedMessageError`."""
    kind = _KIND_FROM_PB.get(msg.kind)
    if kind is None:
        raise MalformedMessageError(f"decision.structured.kind: unknown action kind {msg.kind}")
    try:
        action = Action(
            kind,
            cover=msg.cover or None,
            lead=msg.lead or None,
            swap=msg.swap,
        )
    except (InvalidActionError, InvalidCardError) as exc:
        raise MalformedMessageError(f"decision.structured: {exc}") from None
    return action


# ---------------------------------------------------------------------------- referee → bot


def referee_message_to_pb(message: RefereeMessage) -> pb.RefereeMessage:
    """Protobuf form of anything the referee sends."""
    match message:
        case Handshake():
            return pb.RefereeMessage(
                handshake=pb.Handshake(
                    protocol_version=message.protocol_version,
                    referee_version=message.referee_version,
                    games=message.games,
                    opponent_name=message.opponent_name,
                    time_control=_time_control_to_pb(message.time_control),
                    ruleset=message.ruleset,
                    players=message.players,
                    seat_names=message.seat_names,
                    seat=message.seat,
                )
            )
        case GameStart():
            return pb.RefereeMessage(
                game_start=pb.GameStart(
                    game_number=message.game_number,
                    seat=message.seat,
                    dealer=message.dealer,
                    score=_score_to_pb(message.score),
                    opponent_name=message.opponent_name,
                    time_control=_time_control_to_pb(message.time_control),
                    turn_limit=message.turn_limit,
                    ruleset=message.ruleset,
                    players=message.players,
                    seat_names=message.seat_names,
                )
            )
        case DecisionRequest():
            msg = pb.RefereeMessage()
            request = msg.decision_request
            request.request_id = message.request_id
            request.game_number = message.game_number
            if isinstance(message.view, ClassicView):
                _fill_table_view(request.table_view, message.view)
            else:
                _fill_view(request.view, message.view)
            request.clock.move_ms = message.clock.move_ms
            request.clock.bank_ms = message.clock.bank_ms
            return msg
        case GameEnd():
            if message.reason is None:  # only a decoded GameEnd of a newer referee has none
                raise ValueError(f"a GameEnd to send must say how the game ended: {quote(message)}")
            end = pb.GameEnd(
                game_number=message.game_number,
                reason=_REASON_TO_PB[message.reason],
                detail=message.detail,
                deck=[str(c) for c in message.deck],
                score=_score_to_pb(message.score),
            )
            if message.winner is not None:
                end.winner = message.winner
            if message.loser is not None:
                end.loser = message.loser
            if isinstance(message.view, ClassicView):
                _fill_table_view(end.table_view, message.view)
            elif message.view is not None:
                _fill_view(end.view, message.view)
            return pb.RefereeMessage(game_end=end)
        case Shutdown():
            return pb.RefereeMessage(shutdown=pb.Shutdown(reason=message.reason))
    raise WireError(f"not a referee message: {quote(message)}")


def referee_message_from_pb(msg: pb.RefereeMessage, *, lazy: bool = False) -> RefereeMessage:
    """Python value of a protobuf referee message (with ``lazy``, a two-player view's lists
    are decoded when first read: :func:`lazy_view_from_pb`)."""
    which = msg.WhichOneof("body")
    if which == "handshake":
        h = msg.handshake
        ruleset, players = _ruleset(h.ruleset, h.players, "handshake")
        return Handshake(
            protocol_version=h.protocol_version,
            referee_version=h.referee_version,
            games=h.games,
            opponent_name=h.opponent_name,
            time_control=_time_control_from_pb(h.time_control),
            ruleset=ruleset,
            players=players,
            seat_names=tuple(h.seat_names),
            seat=_seat(h.seat, "handshake.seat", players),
        )
    if which == "game_start":
        g = msg.game_start
        ruleset, players = _ruleset(g.ruleset, g.players, "game_start")
        return GameStart(
            game_number=g.game_number,
            seat=_seat(g.seat, "game_start.seat", players),
            dealer=_seat(g.dealer, "game_start.dealer", players),
            score=_score_from_pb(g.score),
            opponent_name=g.opponent_name,
            time_control=_time_control_from_pb(g.time_control),
            turn_limit=g.turn_limit,
            ruleset=ruleset,
            players=players,
            seat_names=tuple(g.seat_names),
        )
    if which == "decision_request":
        d = msg.decision_request
        view: View | ClassicView
        if d.HasField("table_view"):
            view = table_view_from_pb(d.table_view)
        elif d.HasField("view"):
            view = lazy_view_from_pb(d.view) if lazy else view_from_pb(d.view)
        else:
            raise MalformedMessageError("decision_request carries no view")
        clock = d.clock
        return DecisionRequest(
            request_id=d.request_id,
            game_number=d.game_number,
            view=view,
            clock=Clock(move_ms=clock.move_ms, bank_ms=clock.bank_ms),
        )
    if which == "game_end":
        e = msg.game_end
        # An ending this side does not know is still the end of the game (protocol.md: new
        # endings may be added): None, as is the final view's reason in that case.
        reason = _REASON_FROM_PB.get(e.reason)
        final: View | ClassicView | None = None
        if e.HasField("table_view"):
            final = table_view_from_pb(_known_reason_only(e.table_view, _CLASSIC_REASON_FROM_PB))
        elif e.HasField("view"):
            final = view_from_pb(_known_reason_only(e.view, _RULES_REASON_FROM_PB))
        seats = final.players if isinstance(final, ClassicView) else 4
        return GameEnd(
            game_number=e.game_number,
            winner=_seat(e.winner, "game_end.winner") if e.HasField("winner") else None,
            reason=reason,
            detail=e.detail,
            view=final,
            deck=_cards(e.deck, "game_end.deck"),
            score=_score_from_pb(e.score),
            loser=_seat(e.loser, "game_end.loser", seats) if e.HasField("loser") else None,
        )
    if which == "shutdown":
        return Shutdown(reason=msg.shutdown.reason)
    raise MalformedMessageError("referee message carries no body")


_ViewPb = TypeVar("_ViewPb", pb.View, pb.TableView)


def _known_reason_only(view: _ViewPb, known: Mapping[Any, object]) -> _ViewPb:
    """``view`` as it is, or a copy without its ``reason`` when that is an ending this side
    does not know (a final view's: the game is over all the same)."""
    if not view.reason or view.reason in known:
        return view
    copy = type(view)()
    copy.CopyFrom(view)
    copy.ClearField("reason")
    return copy


# ---------------------------------------------------------------------------- bot → referee


def bot_message_to_pb(message: BotMessage) -> pb.BotMessage:
    """Protobuf form of anything the bot sends (decisions go as canonical text)."""
    match message:
        case HandshakeReply():
            return pb.BotMessage(
                handshake_reply=pb.HandshakeReply(
                    protocol_version=message.protocol_version,
                    name=message.name,
                    version=message.version,
                    sdk=message.sdk,
                    rulesets=message.rulesets,
                )
            )
        case Decision():
            return pb.BotMessage(
                decision=pb.Decision(request_id=message.request_id, text=str(message.action))
            )
        case BotError():
            return pb.BotMessage(error=pb.BotError(message=_bounded(message.message)))
    raise WireError(f"not a bot message: {quote(message)}")


def _bounded(text: str) -> str:
    """``text`` cut to MAX_ERROR_CHARS characters, saying how many more there were."""
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}…[{len(text) - MAX_ERROR_CHARS} more characters]"


def bot_message_from_pb(msg: pb.BotMessage) -> BotMessage:
    """Python value of a protobuf bot message; a structured action becomes canonical text."""
    which = msg.WhichOneof("body")
    if which == "handshake_reply":
        h = msg.handshake_reply
        return HandshakeReply(
            protocol_version=h.protocol_version,
            name=h.name,
            version=h.version,
            sdk=h.sdk,
            rulesets=tuple(h.rulesets),
        )
    if which == "decision":
        d = msg.decision
        choice = d.WhichOneof("action")
        if choice == "text":
            return Decision(request_id=d.request_id, action=d.text)
        if choice == "structured":
            return Decision(request_id=d.request_id, action=structured_action(d.structured))
        raise MalformedMessageError(f"decision {d.request_id} carries no action")
    if which == "error":
        return BotError(message=msg.error.message)
    raise MalformedMessageError("bot message carries no body")


# ---------------------------------------------------------------------------- bytes


ParsedT = TypeVar("ParsedT", pb.RefereeMessage, pb.BotMessage)


def _parse(cls: type[ParsedT], data: bytes) -> ParsedT:
    try:
        return cls.FromString(data)
    except DecodeError as exc:
        raise MalformedMessageError(
            f"not a {cls.DESCRIPTOR.full_name} ({len(data)} bytes: {data[:40]!r}...): {exc}"
        ) from None


def _serialize(message: RefereeMessage | BotMessage, build: Callable[[Any], PbMessage]) -> bytes:
    try:
        return build(message).SerializeToString()
    except (TypeError, ValueError) as exc:
        raise WireError(f"cannot encode {type(message).__name__}: {exc}") from exc


def encode_referee_message(message: RefereeMessage) -> bytes:
    """Serialized referee message."""
    return _serialize(message, referee_message_to_pb)


def decode_referee_message(data: bytes, *, lazy: bool = False) -> RefereeMessage:
    """Parse bytes from the referee; raises :class:`MalformedMessageError` (with ``lazy``,
    see :func:`referee_message_from_pb`)."""
    return referee_message_from_pb(_parse(pb.RefereeMessage, data), lazy=lazy)


def encode_bot_message(message: BotMessage) -> bytes:
    """Serialized bot message."""
    return _serialize(message, bot_message_to_pb)


def decode_bot_message(data: bytes) -> BotMessage:
    """Parse bytes from a bot; raises :class:`MalformedMessageError` quoting the problem."""
    return bot_message_from_pb(_parse(pb.BotMessage, data))
