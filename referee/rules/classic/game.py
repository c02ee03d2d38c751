"""The classic table (2–4 players, rules-classic.md): game state and its one legality gate.

Internally cards are indices 0..35 and hands are 36-bit masks, as in the default engine; the
public API hands out :class:`Card`, :class:`ClassicAction` and :class:`ClassicView` objects.
A trick is two actions: the leader's ``lead``, then the defender's ``cover`` or ``take``, which
also does everything that follows it (discard or pick-up, drawing, who is out, the end, the
next leader). :meth:`ClassicGame._illegal_because` is the only legality gate and
:meth:`ClassicGame._apply` the only transition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Final

from referee.rules.cards import COVER_MASKS, N_CARDS, Card, Suit, cards_of
from referee.rules.classic.actions import ClassicAction, ClassicActionKind
from referee.rules.classic.view import ClassicEndReason, ClassicView
from referee.rules.errors import (
    DeckTypeError,
    IllegalActionError,
    InvalidDeckError,
    InvalidParameterError,
    InvalidViewError,
    quote,
)
from referee.rules.game import (
    cards_argument,
    check_turn_limit,
    parse_deck,
    replay_actions,
    shuffled_deck,
)
from referee.rules.viewcheck import check_face_up, check_progress, check_subset, view_cards

RULESET: Final = "classic"
"""The name of this ruleset in the project."""

PLAYERS: Final = (2, 3, 4)
"""Table sizes of the classic table."""

CLASSIC_TURN_LIMIT: Final = 1000
"""[ruling] A game still running after this many actions ends (see ClassicEndReason)."""

HAND_TARGET: Final = 3
"""Players of a trick draw until they hold this many cards."""

_CARDS: Final = Card.all()
_LEAD: Final = ClassicActionKind.LEAD
_COVER: Final = ClassicActionKind.COVER
_TAKE: Final = ClassicActionKind.TAKE
_TAKE_ACTION: Final = ClassicAction.take()


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _mask(indices: Iterable[int]) -> int:
    mask = 0
    for i in indices:
        mask |= 1 << i
    return mask


class ClassicGame:
    """One game at a classic table of 2, 3 or 4 seats; mutable, advanced by :meth:`play`.

    Build it with :meth:`from_deck` (an explicit deck, index 0 = top) or :meth:`new` (a seeded
    shuffle), or through ``referee.rules.Game.from_deck/new(..., ruleset="classic")``. Errors
    from :meth:`play` leave the state unchanged.
    """

    __slots__ = (
        "_dealer",
        "_deck",
        "_defender",
        "_discard",
        "_hands",
        "_history",
        "_known",
        "_leader",
        "_led",
        "_loser",
        "_movers",
        "_out",
        "_over",
        "_players",
        "_reason",
        "_stock",
        "_trump",
        "_turn_limit",
    )

    _deck: tuple[Card, ...] | None
    _players: int
    _dealer: int
    _trump: int
    _hands: list[int]
    _known: list[int]
    _out: list[bool]
    _stock: list[int]  # reverse draw order: the next card drawn is the last element
    _discard: list[int]
    _led: list[int]  # the current trick's led cards, ascending (= suit order); [] between tricks
    _leader: int
    _defender: int
    _history: list[ClassicAction]
    _movers: list[int]
    _over: bool
    _loser: int | None
    _reason: ClassicEndReason | None
    _turn_limit: int

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_deck(
        cls,
        deck: Sequence[Card | str],
        dealer: int,
        *,
        players: int = 2,
        turn_limit: int = CLASSIC_TURN_LIMIT,
    ) -> ClassicGame:
        """Deal ``deck`` (36 distinct cards, index 0 = top) to ``players`` seats.

        [ruling] Deck card ``i < 3n`` goes to seat ``(dealer + 1 + i) mod n`` (three rounds of
        one card, clockwise from the dealer's left); card ``3n`` is turned face up (its suit is
        trump) and is the last card of the stock, which is drawn from index ``3n + 1`` onward.
        The seat after the dealer leads first.
        """
        if type(players) is not int or players not in PLAYERS:
            raise InvalidParameterError(
                f"the classic table seats 2, 3 or 4 players, got {quote(players)}"
            )
        if type(dealer) is not int or not 0 <= dealer < players:
            raise InvalidParameterError(
                f"dealer must be a seat 0..{players - 1} of the {players}-seat table, "
                f"got {quote(dealer)}"
            )
        check_turn_limit(turn_limit)
        cards = parse_deck(deck)
        indices = [c.index for c in cards]
        game = object.__new__(cls)
        game._deck = cards
        game._players = players
        game._dealer = dealer
        hands = [0] * players
        for i in range(3 * players):
            hands[(dealer + 1 + i) % players] |= 1 << indices[i]
        face_up = indices[3 * players]
        game._hands = hands
        game._trump = face_up // 9
        game._stock = [face_up, *reversed(indices[3 * players + 1 :])]
        game._known = [0] * players
        game._out = [False] * players
        game._discard = []
        game._led = []
        game._leader = (dealer + 1) % players
        game._defender = (dealer + 2) % players
        game._history = []
        game._movers = []
        game._over = False
        game._loser = None
        game._reason = None
        game._turn_limit = turn_limit
        return game

    @classmethod
    def new(
        cls,
        seed: int | str | bytes | None = None,
        dealer: int = 0,
        *,
        players: int = 2,
        turn_limit: int = CLASSIC_TURN_LIMIT,
    ) -> ClassicGame:
        """Deal a deck shuffled by :func:`referee.rules.shuffled_deck` from ``seed``."""
        return cls.from_deck(shuffled_deck(seed), dealer, players=players, turn_limit=turn_limit)

    @classmethod
    def replay(
        cls,
        deck: Sequence[Card | str],
        dealer: int,
        actions: Iterable[ClassicAction | str],
        *,
        players: int = 2,
        turn_limit: int = CLASSIC_TURN_LIMIT,
    ) -> ClassicGame:
        """Deal ``deck`` and play ``actions`` in order; raises on the first illegal one.

        As :meth:`referee.rules.Game.replay`: a single text is refused with
        :class:`~referee.rules.errors.ActionTypeError`, and the error of a failing action says
        its number (counted from 0, like ``history``).
        """
        game = cls.from_deck(deck, dealer, players=players, turn_limit=turn_limit)
        replay_actions(game.play, actions)
        return game

    @classmethod
    def from_view(
        cls,
        view: ClassicView,
        hands: Sequence[Iterable[Card | str]],
        stock: Sequence[Card | str],
    ) -> ClassicGame:
        """The full state consistent with ``view`` once the hidden cards are fixed.

        ``hands[s]`` is seat ``s``'s hand for every seat (``hands[view.seat]`` must be
        ``view.hand``), holding ``view.hand_sizes[s]`` cards including ``view.known[s]``;
        ``stock`` lists the stock in draw order and ends with ``view.face_up``. With the led
        cards and the discard they must make the 36 cards exactly once (else InvalidDeckError;
        DeckTypeError when ``view`` is not a :class:`ClassicView` or the hands, a hand or the
        stock is not a collection of cards, e.g. ``None``). A view no game can reach is
        refused too (InvalidViewError): ``hand_sizes``, ``known`` or ``out`` not one entry
        per seat, a card twice, a seat out that holds cards, a known card not in the hand, no
        face-up card under a stock, a loser or reason while the game runs. This is the
        determinization primitive (sample the hidden cards, then simulate); tests use it to
        set up exact positions.
        """
        if not isinstance(view, ClassicView):
            raise DeckTypeError(
                f"from_view needs a ClassicView of the classic table, got {quote(view)}"
            )
        if isinstance(hands, str | bytes) or not isinstance(hands, Sequence):
            raise DeckTypeError(
                f"hands must be a sequence of one hand per seat, got {quote(hands)}"
            )
        players = view.players
        if type(players) is not int or players not in PLAYERS or len(hands) != players:
            raise InvalidDeckError(
                f"need one hand per seat of a 2-4 seat table: players={quote(players)}, "
                f"{len(hands)} hands given"
            )
        for what, seat in (("seat", view.seat), ("dealer", view.dealer)):
            if type(seat) is not int or not 0 <= seat < players:
                raise InvalidParameterError(
                    f"view.{what} must be a seat 0..{players - 1}, got {quote(seat)}"
                )
        _check_table_view(view, players)
        masks = []
        for seat, hand in enumerate(hands):
            cards = [Card.parse(c).index for c in cards_argument(hand, f"hands[{seat}]")]
            mask = _mask(cards)
            if len(cards) != view.hand_sizes[seat] or mask.bit_count() != len(cards):
                raise InvalidDeckError(
                    f"seat {seat} must hold {view.hand_sizes[seat]} distinct cards, got "
                    f"{quote([_CARDS[i].text for i in cards])}"
                )
            if _mask(c.index for c in view.known[seat]) & ~mask:
                raise InvalidDeckError(f"seat {seat}'s hand must contain its known cards")
            masks.append(mask)
        if masks[view.seat] != _mask(c.index for c in view.hand):
            raise InvalidDeckError(f"hands[{view.seat}] must be the viewing seat's own hand")
        stock_idx = [Card.parse(c).index for c in cards_argument(stock, "stock")]
        if len(stock_idx) != view.stock_count:
            raise InvalidDeckError(
                f"stock must hold {view.stock_count} cards, got {len(stock_idx)}"
            )
        face_up = view.face_up.index if view.face_up is not None else None
        if (stock_idx[-1] if stock_idx else None) != face_up:
            raise InvalidDeckError(f"the stock must end with the face-up card {view.face_up}")
        led = [c.index for c in view.led]
        discard = [c.index for c in view.discard]
        everything = [*stock_idx, *led, *discard, *(i for m in masks for i in _bits(m))]
        if sorted(everything) != list(range(N_CARDS)):
            raise InvalidDeckError("hands, led cards, discard and stock must make the 36 cards")
        if led != sorted(led) or len(led) > 4 or len({i % 9 for i in led}) > 1:
            raise InvalidDeckError(f"led cards must be of one rank: {view.led}")
        game = object.__new__(cls)
        game._deck = None
        game._players = players
        game._dealer = view.dealer
        game._trump = int(view.trump)
        game._hands = masks
        game._known = [_mask(c.index for c in k) for k in view.known]
        game._out = list(view.out)
        game._stock = list(reversed(stock_idx))
        game._discard = discard
        game._led = led
        game._leader = view.leader if view.leader is not None else 0
        game._defender = view.defender if view.defender is not None else 0
        game._history = list(view.history)
        game._movers = list(view.movers)
        game._over = view.over
        game._loser = view.loser
        game._reason = view.reason
        game._turn_limit = check_turn_limit(view.turn_limit)
        if game.to_move != view.to_move:
            raise InvalidDeckError(f"to_move {view.to_move} contradicts leader/defender/led")
        return game

    def copy(self) -> ClassicGame:
        """An independent copy (for search and simulation)."""
        game = object.__new__(ClassicGame)
        for name in ClassicGame.__slots__:
            value = getattr(self, name)
            setattr(game, name, value.copy() if isinstance(value, list) else value)
        return game

    # ------------------------------------------------------------------ public state

    @property
    def ruleset(self) -> str:
        """``"classic"``."""
        return RULESET

    @property
    def players(self) -> int:
        """Number of seats at the table (2, 3 or 4)."""
        return self._players

    @property
    def deck(self) -> tuple[Card, ...] | None:
        """The deck this game was dealt from (``None`` for one built by :meth:`from_view`)."""
        return self._deck

    @property
    def dealer(self) -> int:
        """The dealing seat; the seat after it leads first."""
        return self._dealer

    @property
    def turn_limit(self) -> int:
        """Actions after which a running game ends ([ruling], see ClassicEndReason)."""
        return self._turn_limit

    @property
    def trump(self) -> Suit:
        """The trump suit (suit of the card turned face up at the deal)."""
        return Suit(self._trump)

    @property
    def face_up(self) -> Card | None:
        """The face-up trump card under the stock; ``None`` once it has been drawn."""
        return _CARDS[self._stock[0]] if self._stock else None

    @property
    def hands(self) -> tuple[tuple[Card, ...], ...]:
        """Every seat's hand, each in card-index order."""
        return tuple(cards_of(h) for h in self._hands)

    @property
    def stock(self) -> tuple[Card, ...]:
        """The stock in draw order; the face-up card is last."""
        return tuple(_CARDS[i] for i in reversed(self._stock))

    @property
    def discard(self) -> tuple[Card, ...]:
        """Covered tricks in the order played: led card, its cover, led card, its cover ..."""
        return tuple(_CARDS[i] for i in self._discard)

    @property
    def led(self) -> tuple[Card, ...]:
        """The cards led in the current trick (suit order); empty when a lead is due."""
        return tuple(_CARDS[i] for i in self._led)

    @property
    def out(self) -> tuple[bool, ...]:
        """Per seat: True when it has finished safely (no cards once the stock was empty)."""
        return tuple(self._out)

    @property
    def leader(self) -> int | None:
        """The seat leading the current trick (``None`` once the game is over)."""
        return None if self._over else self._leader

    @property
    def defender(self) -> int | None:
        """The seat the current trick is led to (``None`` once the game is over)."""
        return None if self._over else self._defender

    @property
    def history(self) -> tuple[ClassicAction, ...]:
        """Every action played, in order (see :attr:`movers` for who played each)."""
        return tuple(self._history)

    @property
    def movers(self) -> tuple[int, ...]:
        """``movers[i]`` is the seat that played ``history[i]``."""
        return tuple(self._movers)

    @property
    def to_move(self) -> int | None:
        """The seat to move (the leader, then the defender), or ``None`` once over."""
        if self._over:
            return None
        return self._defender if self._led else self._leader

    @property
    def over(self) -> bool:
        """True once the game has ended."""
        return self._over

    @property
    def loser(self) -> int | None:
        """The seat that lost, or ``None`` for a draw (and while the game is running)."""
        return self._loser

    @property
    def reason(self) -> ClassicEndReason | None:
        """Why the game ended, ``None`` while it runs."""
        return self._reason

    def known_cards(self, seat: int) -> tuple[Card, ...]:
        """Cards in ``seat``'s hand that everyone saw go there (taken, or the face-up card)."""
        return cards_of(self._known[self._check_seat(seat)])

    def pairwise_results(self) -> tuple[tuple[int, int], ...]:
        """[ruling] The game as pairwise results ``(winner, loser)``; empty while running.

        One loser: every other seat beats him. Nobody holding cards: no results (a draw). At
        the turn limit: every seat that is out beats every seat that is not; seats not out
        draw with each other (no pair). With two players this is the ordinary win/loss/draw.
        """
        if not self._over:
            return ()
        if self._loser is not None:
            return tuple((s, self._loser) for s in range(self._players) if s != self._loser)
        if self._reason is ClassicEndReason.TURN_LIMIT:
            done = [s for s in range(self._players) if self._out[s]]
            playing = [s for s in range(self._players) if not self._out[s]]
            return tuple((w, x) for w in done for x in playing)
        return ()

    def view(self, seat: int) -> ClassicView:
        """What ``seat`` may know: own hand, public cards, counts, and the legal actions."""
        self._check_seat(seat)
        mine = self.to_move == seat
        return ClassicView(
            ruleset=RULESET,
            seat=seat,
            players=self._players,
            dealer=self._dealer,
            hand=cards_of(self._hands[seat]),
            hand_sizes=tuple(h.bit_count() for h in self._hands),
            out=tuple(self._out),
            known=tuple(cards_of(k) for k in self._known),
            leader=self.leader,
            defender=self.defender,
            led=self.led,
            discard=self.discard,
            trump=Suit(self._trump),
            face_up=self.face_up,
            stock_count=len(self._stock),
            to_move=self.to_move,
            legal_actions=tuple(self.legal_actions()) if mine else (),
            history=self.history,
            movers=self.movers,
            turn_limit=self._turn_limit,
            over=self._over,
            loser=self._loser,
            reason=self._reason,
        )

    def _check_seat(self, seat: object) -> int:
        if type(seat) is not int or not 0 <= seat < self._players:
            raise InvalidParameterError(
                f"seat must be 0..{self._players - 1} at this table, got {quote(seat)}"
            )
        return seat

    # ------------------------------------------------------------------ legal actions

    def legal_actions(self) -> list[ClassicAction]:
        """The legal actions of the seat to move, in a fixed order (empty once over).

        Leads: by rank (low to high), then by number of cards, then by suits in order.
        Answers: ``take`` first, then covers in order of the covering cards (card index) for the
        first led card, then the second, and so on.
        """
        if self._over:
            return []
        if not self._led:
            return self._leads()
        return [_TAKE_ACTION, *self._covers()]

    def _leads(self) -> list[ClassicAction]:
        hand = self._hands[self._leader]
        most = self._hands[self._defender].bit_count()
        actions = []
        for rank in range(9):
            same = [_CARDS[i] for i in range(rank, N_CARDS, 9) if hand >> i & 1]
            for size in range(1, min(len(same), most) + 1):
                for chosen in combinations(same, size):
                    actions.append(ClassicAction._trusted(_LEAD, chosen, ()))
        return actions

    def _covers(self) -> list[ClassicAction]:
        hand = self._hands[self._defender]
        masks = COVER_MASKS[self._trump]
        options = [_bits(hand & masks[y]) for y in self._led]
        led = tuple(_CARDS[i] for i in self._led)
        actions: list[ClassicAction] = []
        chosen: list[int] = []

        def extend(depth: int, used: int) -> None:
            if depth == len(options):
                covers = tuple(_CARDS[i] for i in chosen)
                actions.append(ClassicAction._trusted(_COVER, led, covers))
                return
            for x in options[depth]:
                if not used >> x & 1:
                    chosen.append(x)
                    extend(depth + 1, used | 1 << x)
                    chosen.pop()

        extend(0, 0)
        return actions

    def is_legal(self, action: ClassicAction | str) -> bool:
        """True when ``action`` may be played now (malformed text raises InvalidActionError)."""
        return self._illegal_because(ClassicAction.parse(action)) is None

    def _illegal_because(self, action: ClassicAction) -> str | None:
        """Why ``action`` is illegal now, or ``None`` when it is legal: the one legality gate."""
        if self._over:
            return "the game is over"
        if not self._led:
            if action.kind is not _LEAD:
                return f"seat {self._leader} must lead a card (or several of one rank) first"
            hand = self._hands[self._leader]
            missing = [c.text for c in action.led if not hand >> c.index & 1]
            if missing:
                return f"not in your hand: {' '.join(missing)}"
            most = self._hands[self._defender].bit_count()
            if len(action.led) > most:
                return (
                    f"cannot lead {len(action.led)} cards: the defender, seat "
                    f"{self._defender}, holds only {most}"
                )
            return None
        if action.kind is _LEAD:
            table = " ".join(c.text for c in self.led)
            return f"cards are already led ({table}): cover them all or take"
        if action.kind is _TAKE:
            return None
        if [c.index for c in action.led] != self._led:
            table = " ".join(c.text for c in self.led)
            return f"a cover must put one card on each led card: {table}"
        hand = self._hands[self._defender]
        missing = [c.text for c in action.covers if not hand >> c.index & 1]
        if missing:
            return f"not in your hand: {' '.join(missing)}"
        masks = COVER_MASKS[self._trump]
        for y, x in zip(action.led, action.covers, strict=True):
            if not masks[y.index] >> x.index & 1:
                return f"{x} does not cover {y} (trump {Suit(self._trump).letter})"
        return None

    # ------------------------------------------------------------------ playing

    def play(self, action: ClassicAction | str) -> ClassicAction:
        """Play ``action`` (a ClassicAction or its text) for the seat to move; returns it parsed.

        Raises InvalidActionError (malformed) or IllegalActionError (not allowed now); either
        way the state is unchanged and the message quotes the input.
        """
        parsed = ClassicAction.parse(action)
        problem = self._illegal_because(parsed)
        if problem is not None:
            seat = "" if self._over else f" for seat {self.to_move}"
            shown = quote(action if isinstance(action, str) else parsed.text)
            raise IllegalActionError(f"illegal action {shown}{seat}: {problem}")
        self._apply(parsed)
        return parsed

    def _apply(self, action: ClassicAction) -> None:
        """Apply a legal action: the single place where the rules change the state."""
        self._movers.append(self._defender if self._led else self._leader)
        self._history.append(action)
        hands = self._hands
        known = self._known
        leader = self._leader
        defender = self._defender
        if action.kind is _LEAD:
            played = _mask(c.index for c in action.led)
            hands[leader] &= ~played
            known[leader] &= ~played
            self._led = [c.index for c in action.led]
        else:
            led = self._led
            self._led = []
            if action.kind is _COVER:
                played = _mask(c.index for c in action.covers)
                hands[defender] &= ~played
                known[defender] &= ~played
                for y, x in zip(led, action.covers, strict=True):
                    self._discard += (y, x.index)
                # One card at a time, the leader first, skipping whoever holds 3 or more.
                while self._stock and (
                    hands[leader].bit_count() < HAND_TARGET
                    or hands[defender].bit_count() < HAND_TARGET
                ):
                    for seat in (leader, defender):
                        if self._stock and hands[seat].bit_count() < HAND_TARGET:
                            self._draw(seat)
                next_from = defender  # the defender leads next
            else:
                taken = _mask(led)
                hands[defender] |= taken
                known[defender] |= taken  # everyone saw him take them
                while self._stock and hands[leader].bit_count() < HAND_TARGET:
                    self._draw(leader)
                next_from = defender + 1  # the taker is skipped
            if not self._stock:
                for seat in (leader, defender):
                    if not hands[seat]:
                        self._out[seat] = True
            holding = [s for s in range(self._players) if hands[s]]
            if not self._stock and len(holding) <= 1:
                self._over = True
                self._loser = holding[0] if holding else None
                self._reason = ClassicEndReason.LAST_HOLDER if holding else ClassicEndReason.ALL_OUT
                return
            self._leader = self._next_playing(next_from)
            self._defender = self._next_playing(self._leader + 1)
        if len(self._history) >= self._turn_limit:
            self._over = True
            self._loser = None
            self._reason = ClassicEndReason.TURN_LIMIT

    def _draw(self, seat: int) -> None:
        card = self._stock.pop()
        self._hands[seat] |= 1 << card
        if not self._stock:  # the face-up card, drawn last: everyone sees who gets it
            self._known[seat] |= 1 << card

    def _next_playing(self, start: int) -> int:
        """The first seat clockwise from ``start`` (inclusive) that is not out."""
        for step in range(self._players):
            seat = (start + step) % self._players
            if not self._out[seat]:
                return seat
        raise AssertionError("no seat plays, yet the game is not over")  # pragma: no cover

    def __repr__(self) -> str:
        state = f"over, loser={self._loser}" if self._over else f"to_move={self.to_move}"
        led = " ".join(c.text for c in self.led) or "-"
        return (
            f"<ClassicGame players={self._players} trump={Suit(self._trump).letter} led={led}"
            f" stock={len(self._stock)} actions={len(self._history)} {state}>"
        )


def _check_table_view(view: ClassicView, players: int) -> None:
    """InvalidViewError (DeckTypeError for a field of the wrong type) unless ``view`` is one
    a table of ``players`` seats can reach, as far as the view alone tells."""
    for name in ("hand_sizes", "known", "out"):
        value = getattr(view, name)
        if not isinstance(value, tuple | list) or len(value) != players:
            raise InvalidViewError(
                f"view.{name} must have one entry per seat ({players}), got {quote(value)}"
            )
    hand = view_cards(view.hand, "view.hand")
    if view.hand_sizes[view.seat] != len(hand):
        raise InvalidViewError(
            f"view.hand_sizes[{view.seat}] is {quote(view.hand_sizes[view.seat])}, but the"
            f" seat's own hand holds {len(hand)} cards"
        )
    for seat in range(players):
        size, out = view.hand_sizes[seat], view.out[seat]
        if type(size) is not int or not 0 <= size <= N_CARDS:
            raise InvalidViewError(f"view.hand_sizes[{seat}] must be 0..36, got {quote(size)}")
        if type(out) is not bool:
            raise DeckTypeError(f"view.out[{seat}] must be True or False, got {quote(out)}")
        if out and size:
            raise InvalidViewError(f"seat {seat} is out but holds {size} cards")
        known = view_cards(view.known[seat], f"view.known[{seat}]")
        if len(known) > size:
            raise InvalidViewError(
                f"view.known[{seat}] names {len(known)} cards of a hand of {size}"
            )
    check_subset(view.known[view.seat], hand, f"view.known[{view.seat}]", "view.hand")
    view_cards(view.led, "view.led")
    view_cards(view.discard, "view.discard")
    check_face_up(view.face_up, view.stock_count, view.trump)
    if not isinstance(view.history, tuple) or not isinstance(view.movers, tuple):
        raise DeckTypeError("view.history and view.movers must be tuples")
    if len(view.movers) != len(view.history):
        raise InvalidViewError(
            f"view.movers names {len(view.movers)} seats for {len(view.history)} actions"
        )
    check_progress(
        over=view.over,
        to_move=view.to_move,
        expected_to_move=None,  # from_view checks it against the leader and defender
        moves=len(view.history),
        turn_limit=check_turn_limit(view.turn_limit),
        ended=(("loser", view.loser), ("reason", view.reason)),
    )
