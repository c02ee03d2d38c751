"""The game state of Kryt'-navalivat' and its one legality gate.

Internally cards are indices 0..35 and hands are 36-bit masks; actions are integer codes (see
:mod:`referee.rules.actions`). The public API hands out :class:`Card`, :class:`Action` and
:class:`View` objects. ``legal_actions()`` lists actions in a fixed order, and
:meth:`Game.legal_action_count` / :meth:`Game.play_random` use the same order without building
the list (the fast path for simulations).

Listing is table lookups over the interned actions (no encoding, no parsing per action), and
the list of the current state is cached until the state changes, so that :meth:`Game.play` can
trust an action found in it (the actions are interned: membership is an identity scan) and
send everything else (text, actions not listed for this state) through the legality gate.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Final, Literal, TypeVar, overload

from referee.rules.actions import BY_CODE, SWAP_BIT, Action, ActionKind, encode
from referee.rules.cards import (
    ACE_RANK,
    COVER_MASKS,
    FULL_MASK,
    N_CARDS,
    Card,
    Suit,
    cards_of,
)
from referee.rules.errors import (
    ActionTypeError,
    DeckTypeError,
    IllegalActionError,
    InvalidDeckError,
    InvalidParameterError,
    InvalidViewError,
    RulesError,
    quote,
)
from referee.rules.rulesets import CLASSIC_RULESET, DEFAULT_RULESET, check_ruleset
from referee.rules.view import EndReason, View
from referee.rules.viewcheck import check_face_up, check_progress, check_subset, view_cards

if TYPE_CHECKING:
    from referee.rules.classic.game import ClassicGame

DEFAULT_TURN_LIMIT = 1000
"""[ruling] A game still running after this many actions is adjudicated a draw."""

HAND_TARGET = 3
"""After acting, a player draws until he holds this many cards."""

_LEAD = int(ActionKind.LEAD)
_COVER_AND_LEAD = int(ActionKind.COVER_AND_LEAD)
_GO_OUT = int(ActionKind.COVER_AND_GO_OUT)
_TAKE = int(ActionKind.TAKE)
_TAKE_CODE = encode(_TAKE)
_CARDS = Card.all()
_SUITS: Final = tuple(Suit)
"""The suits by index: a tuple lookup, not an enum call, for the view asked every decision."""
_T = TypeVar("_T")


def _action(code: int) -> Action:
    action = BY_CODE[code]
    assert action is not None, code
    return action


# Lookup tables for listing legal actions, each indexed first by swap flag (0 or 1).
_TAKES: Final = tuple(_action(_TAKE_CODE | s) for s in (0, SWAP_BIT))
_TAKE_ACTION: Final = _TAKES[0]
_TAKE_ONLY: Final = (_TAKE_ACTION,)
_GO_OUTS: Final = tuple(
    tuple(_action(encode(_GO_OUT, x) | s) for x in range(N_CARDS)) for s in (0, SWAP_BIT)
)
_COVER_ROWS: Final = tuple(
    tuple(
        tuple(
            None if y == x else _action(encode(_COVER_AND_LEAD, x, y) | s) for y in range(N_CARDS)
        )
        for x in range(N_CARDS)
    )
    for s in (0, SWAP_BIT)
)
"""``_COVER_ROWS[swap][x][y]``: the action covering with x and leading y (``None`` when y == x)."""
_LEAD_ROWS: Final = tuple(
    tuple(_action(encode(_LEAD, x) | s) for x in range(N_CARDS)) for s in (0, SWAP_BIT)
)
"""``_LEAD_ROWS[swap][x]``: the action leading card x."""

# Precomputed masks: hands are 36-bit ints, past CPython's small-int fast paths, so every
# shift or complement allocates; a table lookup does not.
_BIT: Final = tuple(1 << i for i in range(N_CARDS))


def _index_table(offset: int) -> tuple[tuple[int, ...], ...]:
    """``table[bits]``: the card indices ``offset + i`` of the set bits i of a 12-bit pattern."""
    low = [tuple(offset + i for i in range(6) if bits >> i & 1) for bits in range(64)]
    high = [tuple(offset + 6 + i for i in range(6) if bits >> i & 1) for bits in range(64)]
    return tuple(lo + hi for hi in high for lo in low)


# A 36-bit mask's card indices in three lookups (masks over 30 bits are slow Python ints, so
# each shift or mask costs; three 12-bit slices beat four 9-bit ones or a loop over the bits).
_IDX_LOW: Final = _index_table(0)
_IDX_MID: Final = _index_table(12)
_IDX_HIGH: Final = _index_table(24)


def _cover_slices() -> tuple[tuple[tuple[tuple[Action, ...], ...], ...], ...]:
    """``table[x][j][bits]``: the actions "cover x, lead y" (no swap), in card-index order, for
    the cards y = 6j + i of the set bits i of a 6-bit pattern, leaving out y == x."""
    table = []
    for row in _COVER_ROWS[0]:
        slices = []
        for j in range(0, N_CARDS, 6):
            # Doubling: the patterns with bit i set are those without it plus card j + i (the
            # patterns holding x itself repeat those without it: x cannot lead after covering).
            by_bits: list[tuple[Action, ...]] = [()]
            for action in row[j : j + 6]:
                if action is None:
                    by_bits *= 2
                else:
                    one = (action,)
                    by_bits += [t + one for t in by_bits]
            slices.append(tuple(by_bits))
        table.append(tuple(slices))
    return tuple(table)


# The covers of a hand on a non-empty pile (no swap) are concatenated from these precomputed
# runs of actions, six per covering card, instead of gathered one action at a time (~300
# instructions an action through ``itemgetter``): it pays most on the long lists of several
# covering cards (~30 % of the positions, ~80 % of the listed actions). 36 x 6 x 64 tuples,
# ~0.45 MB, ~2.7 ms at import.
_COVER_SLICES: Final = _cover_slices()


def _nth_bit(mask: int, n: int) -> int:
    """Index of the ``n``-th lowest set bit of ``mask`` (0-based)."""
    for _ in range(n):
        mask &= mask - 1
    return (mask & -mask).bit_length() - 1


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class Game:
    """One game between seats 0 and 1; mutable, advanced by :meth:`play`.

    Build it with :meth:`from_deck` (an explicit deck, index 0 = top) or :meth:`new` (a seeded
    shuffle). Errors from :meth:`play` leave the state unchanged.
    """

    __slots__ = (
        "_covering",
        "_dealer",
        "_deck",
        "_final_cover",
        "_hands",
        "_history",
        "_history_actions",
        "_known",
        "_listed",
        "_outcome",
        "_over",
        "_pile",
        "_reason",
        "_six",
        "_stock",
        "_to_move",
        "_trump",
        "_turn_limit",
    )

    _deck: tuple[Card, ...] | None
    _dealer: int
    _trump: int
    _hands: list[int]
    _known: list[int]
    _pile: list[int]
    _stock: list[int]  # reverse draw order: the next card drawn is the last element
    _to_move: int
    _history: list[int]
    _history_actions: tuple[Action, ...]  # cache of history as Actions, extended on demand
    _over: bool
    _outcome: int | None
    _reason: EndReason | None
    _turn_limit: int
    _final_cover: int
    _listed: tuple[Action, ...] | None  # legal actions of the current state, once listed
    _six: int  # the bit of the trump six (derived from _trump, kept for the hot paths)
    _covering: tuple[int, ...]  # COVER_MASKS[_trump]: top card -> the cards covering it

    # ------------------------------------------------------------------ construction

    @overload
    @classmethod
    def from_deck(
        cls,
        deck: Sequence[Card | str],
        dealer: int,
        *,
        players: int = 2,
        ruleset: Literal["default"] = "default",
        turn_limit: int = DEFAULT_TURN_LIMIT,
    ) -> Game: ...

    @overload
    @classmethod
    def from_deck(
        cls,
        deck: Sequence[Card | str],
        dealer: int,
        *,
        players: int = 2,
        ruleset: Literal["classic"],
        turn_limit: int = DEFAULT_TURN_LIMIT,
    ) -> ClassicGame: ...

    @overload
    @classmethod
    def from_deck(
        cls,
        deck: Sequence[Card | str],
        dealer: int,
        *,
        players: int = 2,
        ruleset: str,
        turn_limit: int = DEFAULT_TURN_LIMIT,
    ) -> Game | ClassicGame: ...

    @classmethod
    def from_deck(
        cls,
        deck: Sequence[Card | str],
        dealer: int,
        *,
        players: int = 2,
        ruleset: str = DEFAULT_RULESET,
        turn_limit: int = DEFAULT_TURN_LIMIT,
    ) -> Game | ClassicGame:
        """Deal ``deck`` (36 distinct cards, index 0 = top) with ``dealer`` dealing.

        [ruling] Indices 0, 2, 4 go to the non-dealer and 1, 3, 5 to the dealer; index 6 is
        turned face up (its suit is trump) and lies under the stock, which is drawn from
        index 7 onward and ends with that face-up card.

        ``ruleset="classic"`` deals a :class:`referee.rules.ClassicGame` for ``players`` (2–4)
        seats instead; the default ruleset seats exactly 2.
        """
        if check_ruleset(ruleset, players) == CLASSIC_RULESET:
            # Imported here: the classic engine builds on this module.
            from referee.rules.classic.game import ClassicGame

            return ClassicGame.from_deck(deck, dealer, players=players, turn_limit=turn_limit)
        cards = parse_deck(deck)
        indices = [c.index for c in cards]
        _check_seat(dealer, "dealer")
        check_turn_limit(turn_limit)
        game = object.__new__(cls)
        game._deck = cards
        game._dealer = dealer
        non_dealer = 1 - dealer
        hands = [0, 0]
        for i in range(6):
            hands[non_dealer if i % 2 == 0 else dealer] |= 1 << indices[i]
        game._hands = hands
        game._set_trump(indices[6] // 9)
        game._stock = [indices[6], *reversed(indices[7:])]
        game._known = [0, 0]
        game._pile = []
        game._to_move = non_dealer
        game._history = []
        game._history_actions = ()
        game._over = False
        game._outcome = None
        game._reason = None
        game._turn_limit = turn_limit
        game._final_cover = -1
        game._listed = None
        return game

    @overload
    @classmethod
    def new(
        cls,
        seed: int | str | bytes | None = None,
        dealer: int = 0,
        *,
        players: int = 2,
        ruleset: Literal["default"] = "default",
        turn_limit: int = DEFAULT_TURN_LIMIT,
    ) -> Game: ...

    @overload
    @classmethod
    def new(
        cls,
        seed: int | str | bytes | None = None,
        dealer: int = 0,
        *,
        players: int = 2,
        ruleset: Literal["classic"],
        turn_limit: int = DEFAULT_TURN_LIMIT,
    ) -> ClassicGame: ...

    @overload
    @classmethod
    def new(
        cls,
        seed: int | str | bytes | None = None,
        dealer: int = 0,
        *,
        players: int = 2,
        ruleset: str,
        turn_limit: int = DEFAULT_TURN_LIMIT,
    ) -> Game | ClassicGame: ...

    @classmethod
    def new(
        cls,
        seed: int | str | bytes | None = None,
        dealer: int = 0,
        *,
        players: int = 2,
        ruleset: str = DEFAULT_RULESET,
        turn_limit: int = DEFAULT_TURN_LIMIT,
    ) -> Game | ClassicGame:
        """Deal a deck shuffled by :func:`shuffled_deck` from ``seed`` (any ruleset)."""
        return cls.from_deck(
            shuffled_deck(seed), dealer, players=players, ruleset=ruleset, turn_limit=turn_limit
        )

    @classmethod
    def replay(
        cls,
        deck: Sequence[Card | str],
        dealer: int,
        actions: Iterable[Action | str],
        *,
        turn_limit: int = DEFAULT_TURN_LIMIT,
    ) -> Game:
        """Deal ``deck`` and play ``actions`` in order; raises on the first illegal one.

        ``actions`` is a collection of actions or their texts (a single text is refused with
        :class:`ActionTypeError`: it would be read letter by letter). The error of a failing
        action is of the type :meth:`play` raised, its message prefixed with the action's number
        (counted from 0, like ``history``).
        """
        game = cls.from_deck(deck, dealer, turn_limit=turn_limit)
        replay_actions(game.play, actions)
        return game

    @classmethod
    def from_view(
        cls,
        view: View,
        opponent_hand: Iterable[Card | str],
        stock: Sequence[Card | str],
    ) -> Game:
        """The full state consistent with ``view`` once the hidden cards are fixed.

        ``opponent_hand`` must hold ``view.opponent_count`` cards including every card of
        ``view.opponent_known``; ``stock`` lists the stock in draw order and ends with
        ``view.face_up``. Together with the visible cards they must make the 36 cards exactly
        (else InvalidDeckError; DeckTypeError when ``view`` is not a :class:`View` or a hand
        or the stock is not a collection of cards, e.g. ``None``). A view no game can reach
        is refused too (InvalidViewError): a card twice, no face-up card under a stock, an
        ``own_known`` card not in the hand, a seat to move other than the history's (a
        position set up by hand, with no history, may give the move to either seat), an
        outcome, reason or final cover while the game runs.
        This is the determinization primitive: sample the hidden cards, then simulate.
        """
        if not isinstance(view, View):
            raise DeckTypeError(f"from_view needs a View of the default game, got {quote(view)}")
        _check_view(view)
        opp = [Card.parse(c).index for c in cards_argument(opponent_hand, "opponent_hand")]
        stock_idx = [Card.parse(c).index for c in cards_argument(stock, "stock")]
        opp_mask = 0
        for i in opp:
            opp_mask |= 1 << i
        own_mask = _mask(view.hand)
        pile = [c.index for c in view.pile]
        if len(opp) != view.opponent_count or opp_mask.bit_count() != len(opp):
            raise InvalidDeckError(
                f"opponent hand must be {view.opponent_count} distinct cards, got "
                f"{quote([_CARDS[i].text for i in opp])}"
            )
        if _mask(view.opponent_known) & ~opp_mask:
            raise InvalidDeckError("opponent hand must contain every publicly known card")
        if len(stock_idx) != view.stock_count:
            raise InvalidDeckError(
                f"stock must hold {view.stock_count} cards, got {len(stock_idx)}"
            )
        if view.face_up is not None and (not stock_idx or stock_idx[-1] != view.face_up.index):
            raise InvalidDeckError(f"the stock must end with the face-up card {view.face_up}")
        final = [] if view.final_cover is None else [view.final_cover.index]
        everything = [*opp, *stock_idx, *pile, *_bits(own_mask)]
        if sorted(everything) != list(range(N_CARDS)) or (final and final[0] not in pile):
            raise InvalidDeckError("hands, pile and stock must make the 36 cards exactly once")
        game = object.__new__(cls)
        game._deck = None
        game._dealer = _check_seat(view.dealer, "dealer")
        seat = _check_seat(view.seat, "seat")
        hands = [0, 0]
        hands[seat] = own_mask
        hands[1 - seat] = opp_mask
        known = [0, 0]
        known[seat] = _mask(view.own_known)
        known[1 - seat] = _mask(view.opponent_known)
        game._hands = hands
        game._known = known
        game._set_trump(int(view.trump))
        game._pile = pile
        game._stock = list(reversed(stock_idx))
        game._to_move = (
            view.to_move
            if view.to_move is not None
            else (len(view.history) + (1 - view.dealer)) % 2
        )
        game._history = [a.code for a in view.history]
        game._history_actions = tuple(view.history)
        game._over = view.over
        game._outcome = view.outcome
        game._reason = view.reason
        game._turn_limit = check_turn_limit(view.turn_limit)
        game._final_cover = final[0] if final else -1
        game._listed = None
        return game

    def copy(self) -> Game:
        """An independent copy (for search and simulation)."""
        game = object.__new__(Game)
        game._deck = self._deck
        game._dealer = self._dealer
        game._trump = self._trump
        game._six = self._six
        game._covering = self._covering
        game._hands = self._hands.copy()
        game._known = self._known.copy()
        game._pile = self._pile.copy()
        game._stock = self._stock.copy()
        game._to_move = self._to_move
        game._history = self._history.copy()
        game._history_actions = self._history_actions
        game._over = self._over
        game._outcome = self._outcome
        game._reason = self._reason
        game._turn_limit = self._turn_limit
        game._final_cover = self._final_cover
        game._listed = self._listed  # same state, same (immutable) list
        return game

    def _set_trump(self, trump: int) -> None:
        self._trump = trump
        self._six = _BIT[trump * 9]
        self._covering = COVER_MASKS[trump]

    # ------------------------------------------------------------------ public state

    @property
    def deck(self) -> tuple[Card, ...] | None:
        """The deck this game was dealt from (``None`` for a game built by :meth:`from_view`)."""
        return self._deck

    @property
    def dealer(self) -> int:
        """The dealing seat; the other seat moves first."""
        return self._dealer

    @property
    def turn_limit(self) -> int:
        """Actions after which a running game is adjudicated a draw."""
        return self._turn_limit

    @property
    def trump(self) -> Suit:
        """The trump suit (suit of the card turned face up at the deal)."""
        return _SUITS[self._trump]

    @property
    def face_up(self) -> Card | None:
        """The card lying face up under the stock (the trump card, or the six swapped for it);
        ``None`` once it has been drawn."""
        return _CARDS[self._stock[0]] if self._stock else None

    @property
    def hands(self) -> tuple[tuple[Card, ...], tuple[Card, ...]]:
        """Both hands, each in card-index order."""
        return cards_of(self._hands[0]), cards_of(self._hands[1])

    @property
    def pile(self) -> tuple[Card, ...]:
        """The pile, bottom→top."""
        return tuple(map(_CARDS.__getitem__, self._pile))

    @property
    def stock(self) -> tuple[Card, ...]:
        """The stock in draw order; the face-up card is last."""
        return tuple(_CARDS[i] for i in reversed(self._stock))

    @property
    def history(self) -> tuple[Action, ...]:
        """Every action played, in order (the automatic final answer is :attr:`final_cover`)."""
        cached = self._history_actions
        if len(cached) != len(self._history):
            from_code = Action.from_code
            cached += tuple(from_code(c) for c in self._history[len(cached) :])
            self._history_actions = cached
        return cached

    @property
    def to_move(self) -> int | None:
        """The seat to move, or ``None`` once the game is over."""
        return None if self._over else self._to_move

    @property
    def over(self) -> bool:
        """True once the game has ended."""
        return self._over

    @property
    def outcome(self) -> int | None:
        """The winning seat, or ``None`` for a draw (and while the game is running)."""
        return self._outcome

    @property
    def loser(self) -> int | None:
        """The seat that lost, or ``None`` for a draw (and while the game is running)."""
        return None if self._outcome is None else 1 - self._outcome

    @property
    def reason(self) -> EndReason | None:
        """Why the game ended, ``None`` while it runs."""
        return self._reason

    @property
    def final_cover(self) -> Card | None:
        """The card the referee played automatically as the final answer of a drawn game."""
        return _CARDS[self._final_cover] if self._final_cover >= 0 else None

    def known_cards(self, seat: int) -> tuple[Card, ...]:
        """Cards in ``seat``'s hand that are public (taken from the pile, the face-up card)."""
        return cards_of(self._known[_check_seat(seat, "seat")])

    def view(self, seat: int) -> View:
        """What ``seat`` may know: own hand, public cards, counts, and the legal actions."""
        _check_seat(seat, "seat")
        other = 1 - seat
        mine = self._to_move == seat and not self._over
        return View(
            seat=seat,
            dealer=self._dealer,
            hand=cards_of(self._hands[seat]),
            pile=self.pile,
            trump=_SUITS[self._trump],
            face_up=self.face_up,
            stock_count=len(self._stock),
            opponent_count=self._hands[other].bit_count(),
            opponent_known=cards_of(self._known[other]),
            own_known=cards_of(self._known[seat]),
            to_move=self.to_move,
            legal_actions=self._legal_tuple() if mine else (),
            history=self.history,
            turn_limit=self._turn_limit,
            over=self._over,
            outcome=self._outcome,
            reason=self._reason,
            final_cover=self.final_cover,
        )

    # ------------------------------------------------------------------ legal actions

    def _swap_hand(self, hand: int) -> int:
        """The hand after swapping the trump six, or -1 when no swap is possible."""
        six = self._trump * 9
        if self._stock and hand >> six & 1:
            # The face-up card cannot be the six here: the six is in this hand.
            return hand ^ (1 << six) | (1 << self._stock[0])
        return -1

    def _count(self, hand: int) -> int:
        """Number of legal actions (after any swap) for ``hand``."""
        n = hand.bit_count()
        if not self._pile:
            return n
        k = (hand & COVER_MASKS[self._trump][self._pile[-1]]).bit_count()
        if n >= 2:
            return 1 + k * (n - 1)
        return 1 + k if not self._stock else 1

    def _decode(self, hand: int, i: int, swap: int) -> int:
        """The code of action number ``i`` among those of ``hand`` (order of legal_actions)."""
        if not self._pile:
            return encode(_LEAD, _nth_bit(hand, i)) | swap
        if i == 0:
            return _TAKE_CODE | swap
        i -= 1
        covers = hand & COVER_MASKS[self._trump][self._pile[-1]]
        n = hand.bit_count()
        if n >= 2:
            x_i, y_i = divmod(i, n - 1)
            x = _nth_bit(covers, x_i)
            return encode(_COVER_AND_LEAD, x, _nth_bit(hand & ~(1 << x), y_i)) | swap
        return encode(_GO_OUT, _nth_bit(covers, i)) | swap

    def legal_action_count(self) -> int:
        """How many legal actions the player to move has (0 once over), without listing them."""
        if self._over:
            return 0
        hand = self._hands[self._to_move]
        swapped = self._swap_hand(hand)
        return self._count(hand) + (self._count(swapped) if swapped >= 0 else 0)

    def legal_actions(self) -> list[Action]:
        """The legal actions of the player to move, in a fixed order (empty once over).

        Order: without swap then with swap; within each, ``take`` first, then covers by
        covering card then led card (card-index order), or leads in card-index order.
        """
        listed = self._listed
        if listed is not None:
            return list(listed)
        if self._over:
            self._listed = ()
            return []
        hand = self._hands[self._to_move]
        pile = self._pile
        if self._stock and hand & self._six:
            # The trump six may be swapped first (rare): both halves by the general lister.
            swapped = hand ^ self._six | _BIT[self._stock[0]]
            actions = self._list_hand(hand, 0) + self._list_hand(swapped, 1)
        elif pile:
            # The commonest positions, listed inline (no swap): "take", then the covers.
            covers = hand & self._covering[pile[-1]]
            if not covers:
                # Nothing covers: only "take".
                self._listed = _TAKE_ONLY
                return [_TAKE_ACTION]
            if hand == covers and not hand & (hand - 1):
                # The last card covers: it may go out once the stock is empty.
                actions = (
                    [_TAKE_ACTION]
                    if self._stock
                    else [_TAKE_ACTION, _GO_OUTS[0][hand.bit_length() - 1]]
                )
                self._listed = tuple(actions)
                return actions
            # For each covering card x, "cover x, lead y" for the other cards y, concatenated
            # from the runs of six 6-bit slices of the hand (split in halves first: a 36-bit
            # int is slow to shift and mask, an 18-bit one is not).
            low = hand & 0x3FFFF
            high = hand >> 18
            h0 = low & 63
            h1 = low >> 6 & 63
            h2 = low >> 12
            h3 = high & 63
            h4 = high >> 6 & 63
            h5 = high >> 12
            if covers & (covers - 1):
                actions = [_TAKE_ACTION]
                for x in (
                    _IDX_LOW[covers & 0xFFF]
                    + _IDX_MID[covers >> 12 & 0xFFF]
                    + _IDX_HIGH[covers >> 24]
                ):
                    t0, t1, t2, t3, t4, t5 = _COVER_SLICES[x]
                    actions += t0[h0]
                    actions += t1[h1]
                    actions += t2[h2]
                    actions += t3[h3]
                    actions += t4[h4]
                    actions += t5[h5]
            else:
                # One covering card (the common case): no loop.
                t0, t1, t2, t3, t4, t5 = _COVER_SLICES[covers.bit_length() - 1]
                actions = [_TAKE_ACTION, *t0[h0], *t1[h1], *t2[h2], *t3[h3], *t4[h4], *t5[h5]]
        else:
            actions = self._list_hand(hand, 0)
        # The caller gets the fresh list; the cache is a private immutable copy (see play).
        self._listed = tuple(actions)
        return actions

    def _legal_tuple(self) -> tuple[Action, ...]:
        """The cached legal actions of the current state (listing them if need be)."""
        if self._listed is None:
            self.legal_actions()
        assert self._listed is not None
        return self._listed

    def _list_hand(self, hand: int, swap: int) -> list[Action]:
        """The actions of ``hand`` (already swapped when ``swap`` is 1), in legal_actions order,
        gathered from the tables of interned actions."""
        pile = self._pile
        cards = _IDX_LOW[hand & 0xFFF] + _IDX_MID[hand >> 12 & 0xFFF] + _IDX_HIGH[hand >> 24]
        if not pile:
            if len(cards) >= 2:
                return list(itemgetter(*cards)(_LEAD_ROWS[swap]))
            return [_LEAD_ROWS[swap][x] for x in cards]
        covers = hand & self._covering[pile[-1]]
        if not covers:
            return [_TAKES[swap]]
        if len(cards) >= 2:
            return self._list_covers(cards, covers, swap)
        if not self._stock:
            # The last card covers and the stock is empty: it may go out.
            return [_TAKES[swap], _GO_OUTS[swap][cards[0]]]
        return [_TAKES[swap]]

    @staticmethod
    def _list_covers(cards: tuple[int, ...], covers: int, swap: int) -> list[Action]:
        """The actions of a hand of two or more ``cards`` (card-index order) on a non-empty
        pile, where the cards of the mask ``covers`` (not empty) cover the top card."""
        # One C-level gather per covering card x picks "cover x, lead y" for every y in the
        # hand; the row's hole at y == x (None) is deleted right after.
        actions = [_TAKES[swap]]
        pick = itemgetter(*cards)
        rows = _COVER_ROWS[swap]
        position = cards.index
        for x in (
            _IDX_LOW[covers & 0xFFF] + _IDX_MID[covers >> 12 & 0xFFF] + _IDX_HIGH[covers >> 24]
        ):
            hole = len(actions) + position(x)
            actions += pick(rows[x])
            del actions[hole]
        return actions

    def is_legal(self, action: Action | str) -> bool:
        """True when ``action`` may be played now (malformed text raises InvalidActionError)."""
        return self._illegal_because(Action.parse(action)) is None

    def _illegal_because(self, action: Action) -> str | None:
        """Why ``action`` is illegal now, or ``None`` when it is legal."""
        if self._over:
            return "the game is over"
        hand = self._hands[self._to_move]
        if action.swap:
            six = _CARDS[self._trump * 9]
            if not self._stock:
                return "no swap: the face-up card has already been drawn"
            if not hand >> six.index & 1:
                return f"no swap: you do not hold the trump six {six}"
            hand = self._swap_hand(hand)
        kind = action.kind
        if kind == ActionKind.LEAD:
            assert action.lead is not None
            if self._pile:
                return f"cannot lead on a non-empty pile (answer {_CARDS[self._pile[-1]]})"
            return _missing(hand, action.lead)
        if not self._pile:
            return "the pile is empty: lead a card"
        if kind == ActionKind.TAKE:
            return None
        cover = action.cover
        assert cover is not None
        top = _CARDS[self._pile[-1]]
        if problem := _missing(hand, cover):
            return problem
        if not COVER_MASKS[self._trump][top.index] >> cover.index & 1:
            return f"{cover} does not cover {top} (trump {Suit(self._trump).letter})"
        if kind == ActionKind.COVER_AND_LEAD:
            assert action.lead is not None
            return _missing(hand, action.lead)
        if self._stock:
            return "cannot go out while the stock is not empty: cover and lead"
        if hand.bit_count() != 1:
            return f"cannot go out: {cover} is not your last card (lead one after covering)"
        return None

    # ------------------------------------------------------------------ playing

    def play(self, action: Action | str) -> Action:
        """Play ``action`` (an Action or its text) for the player to move; returns it parsed.

        Raises InvalidActionError (malformed text) or IllegalActionError (not allowed now);
        either way the state is unchanged and the message quotes the input (bounded).
        """
        if type(action) is Action:
            # Trusted path: the action is in this state's cached legal list (by identity, as
            # actions are interned; `is Action` keeps str subclasses with a hostile __eq__ out).
            # The cache is dropped by every state change, so a stale list cannot vouch.
            listed = self._listed
            if listed is not None and action in listed:
                self._apply(action)
                return action
        parsed = Action.parse(action)
        problem = self._illegal_because(parsed)
        if problem is not None:
            seat = "" if self._over else f" for seat {self._to_move}"
            shown = quote(action if isinstance(action, str) else parsed.text)
            raise IllegalActionError(f"illegal action {shown}{seat}: {problem}")
        self._apply(parsed)
        return parsed

    def play_random(self, rng: random.Random) -> Action:
        """Play a uniformly random legal action (fast path: nothing is listed)."""
        if self._over:
            raise IllegalActionError("illegal action 'random': the game is over")
        hand = self._hands[self._to_move]
        n_plain = self._count(hand)
        swapped = self._swap_hand(hand)
        total = n_plain + (self._count(swapped) if swapped >= 0 else 0)
        i = int(rng.random() * total)
        if i < n_plain:
            code = self._decode(hand, i, 0)
        else:
            code = self._decode(swapped, i - n_plain, SWAP_BIT)
        action = _action(code)
        self._apply(action)
        return action

    def _apply(self, action: Action) -> None:
        """Apply a legal action: the single place where the rules change the state."""
        self._listed = None
        seat = self._to_move
        hands = self._hands
        stock = self._stock
        hand = hands[seat]
        if action.swap:
            six = self._trump * 9
            face_up = stock[0]
            hand = hand ^ (1 << six) | (1 << face_up)
            stock[0] = six
            known = self._known
            known[seat] = known[seat] & ~(1 << six) | (1 << face_up)
        push = action._push  # the cards put on the pile (none for take), precomputed
        pile = self._pile
        if push:
            pile += push
            keep = action._keep
            hand &= keep
            known = self._known
            if known[seat]:
                known[seat] &= keep
        else:
            top = pile[-1]
            if top // 9 != self._trump:  # the common case: one card
                gained = _BIT[pile.pop()]
            else:
                n = len(pile) if top % 9 == ACE_RANK else 3
                gained = 0
                for c in pile[-n:]:
                    gained |= _BIT[c]
                del pile[-n:]
            hand |= gained
            self._known[seat] |= gained
        if stock:
            need = HAND_TARGET - hand.bit_count()
            if need > 0:
                if len(stock) > need:
                    # Draw from the end (the top of the stock), one to three cards.
                    hand |= _BIT[stock.pop()]
                    if need > 1:
                        hand |= _BIT[stock.pop()]
                        if need > 2:
                            hand |= _BIT[stock.pop()]
                else:
                    # The rest of the stock, ending with the face-up card, which is public.
                    for drawn in stock:
                        hand |= _BIT[drawn]
                    self._known[seat] |= _BIT[stock[0]]
                    stock.clear()
        hands[seat] = hand
        history = self._history
        history.append(action.code)
        self._to_move = 1 - seat
        if not hand and not stock:
            self._finish_out(seat, action.kind)
        elif len(history) >= self._turn_limit:
            self._over = True
            self._outcome = None
            self._reason = EndReason.TURN_LIMIT

    def _finish_out(self, seat: int, kind: int) -> None:
        """``seat`` emptied his hand with the stock empty: he wins unless the final answer draws."""
        self._over = True
        other = 1 - seat
        answer = self._hands[other]
        if (
            kind in (_LEAD, _COVER_AND_LEAD)
            and answer.bit_count() == 1
            and answer & COVER_MASKS[self._trump][self._pile[-1]]
        ):
            # [ruling] The final answer is played automatically: covering beats taking here.
            card = answer.bit_length() - 1
            self._pile.append(card)
            self._hands[other] = 0
            self._known[other] = 0
            self._final_cover = card
            self._outcome = None
            self._reason = EndReason.DRAW_BY_FINAL_ANSWER
        else:
            self._outcome = seat
            self._reason = EndReason.OUT

    def __repr__(self) -> str:
        state = f"over, outcome={self._outcome}" if self._over else f"to_move={self._to_move}"
        return (
            f"<Game trump={Suit(self._trump).letter} pile={' '.join(map(str, self.pile)) or '-'}"
            f" stock={len(self._stock)} actions={len(self._history)} {state}>"
        )


def shuffled_deck(seed: int | str | bytes | None = None) -> tuple[Card, ...]:
    """The 36 cards shuffled by ``random.Random(seed).shuffle`` from index order.

    The same seed gives the same deck on every platform and Python version (3.11+);
    ``None`` draws a fresh seed from the operating system. Any other type (a float, a bool,
    a list) is :class:`InvalidParameterError`: ``random`` would refuse some and silently
    take others (``True`` as 1).
    """
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, str, bytes))):
        raise InvalidParameterError(
            f"seed must be an integer, text, bytes or None, got {quote(seed)}"
        )
    cards = list(_CARDS)
    random.Random(seed).shuffle(cards)
    return tuple(cards)


def parse_deck(deck: Sequence[Card | str]) -> tuple[Card, ...]:
    """``deck`` as cards, if it holds each of the 36 cards once (any ruleset's deck).

    DeckTypeError when it is not a sequence (or is text); InvalidDeckError naming the
    duplicated and missing cards otherwise; InvalidCardError for a card that is not one.
    """
    if isinstance(deck, str | bytes) or not isinstance(deck, Sequence):
        raise DeckTypeError(f"a deck is a sequence of 36 cards, got {quote(deck)}")
    cards = tuple(Card.parse(c) for c in deck)
    present = {c.index for c in cards}
    if len(cards) != N_CARDS or len(present) != N_CARDS:
        # Counted in one pass: a hostile deck may be long (list.count per card is quadratic).
        counts = Counter(c.index for c in cards)
        dupes = sorted(_CARDS[i].text for i, n in counts.items() if n > 1)
        missing = [c.text for c in _CARDS if c.index not in present]
        raise InvalidDeckError(
            f"a deck must hold each of the 36 cards once; got {len(cards)} cards"
            f" (duplicated: {dupes or 'none'}, missing: {missing or 'none'})"
        )
    return cards


def _check_view(view: View) -> None:
    """InvalidViewError (DeckTypeError for a field of the wrong type) unless ``view`` is
    one a game of the default ruleset can reach, as far as the view alone tells."""
    _check_seat(view.seat, "view.seat")
    dealer = _check_seat(view.dealer, "view.dealer")
    hand = view_cards(view.hand, "view.hand")
    view_cards(view.pile, "view.pile")
    check_subset(view_cards(view.own_known, "view.own_known"), hand, "view.own_known", "view.hand")
    view_cards(view.opponent_known, "view.opponent_known")
    check_face_up(view.face_up, view.stock_count, view.trump)
    if not isinstance(view.history, tuple) or not all(
        isinstance(action, Action) for action in view.history
    ):
        raise DeckTypeError(
            f"view.history must be a tuple of Action objects, got {quote(view.history)}"
        )
    moves = len(view.history)
    if view.over is False and (type(view.to_move) is not int or view.to_move not in (0, 1)):
        # With no history any seat may move (a position set up by hand), but it is a seat.
        raise InvalidViewError(f"view.to_move must be seat 0 or 1, got {quote(view.to_move)}")
    check_progress(
        over=view.over,
        to_move=view.to_move,
        # Seats alternate: action i by seat 1 - dealer when i is even.
        expected_to_move=(moves + 1 - dealer) % 2,
        moves=moves,
        turn_limit=check_turn_limit(view.turn_limit),
        ended=(
            ("outcome", view.outcome),
            ("reason", view.reason),
            ("final_cover", view.final_cover),
        ),
    )


def _mask(cards: Iterable[Card]) -> int:
    mask = 0
    for c in cards:
        mask |= 1 << c.index
    return mask & FULL_MASK


def _missing(hand: int, card: Card) -> str | None:
    return None if hand >> card.index & 1 else f"{card} is not in your hand"


def _check_seat(seat: object, what: str) -> int:
    if type(seat) is not int or seat not in (0, 1):
        raise InvalidParameterError(f"{what} must be seat 0 or 1, got {quote(seat)}")
    return seat


def check_turn_limit(limit: object) -> int:
    """``limit`` if it is a positive ``int`` (not a bool); else InvalidParameterError."""
    if type(limit) is not int or limit < 1:
        raise InvalidParameterError(f"turn_limit must be a positive integer, got {quote(limit)}")
    return limit


def cards_argument(cards: Iterable[_T], what: str) -> Iterable[_T]:
    """``cards`` when it can be iterated as a collection of cards (the hands and stock given to
    ``from_view``); DeckTypeError for ``None``, a non-iterable, or text, which iterating would
    read letter by letter."""
    if isinstance(cards, str | bytes) or not isinstance(cards, Iterable):
        raise DeckTypeError(f"{what} must be a collection of cards, got {quote(cards)}")
    return cards


def replay_actions(play: Callable[[_T], object], actions: Iterable[_T]) -> None:
    """Call ``play`` on each of ``actions`` in order (the loop of both rulesets' ``replay``).

    A single text, ``None`` or a non-iterable is refused with ActionTypeError; a rules error
    of action ``i`` is raised again, of the same type, saying which action it was.
    """
    if isinstance(actions, str | bytes) or not isinstance(actions, Iterable):
        raise ActionTypeError(
            f"actions must be a collection of actions (each an action or its text), got "
            f"{quote(actions)}"
        )
    for number, action in enumerate(actions):
        try:
            play(action)
        except RulesError as exc:
            # Same type, so callers catching IllegalActionError etc. still do; every rules
            # error takes its message as its one argument.
            raise type(exc)(f"action {number} of the replay (counted from 0): {exc}") from None
