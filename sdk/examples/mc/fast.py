"""A fast greedy playout of a classic table, for the Monte Carlo bot's search.

The engine (:class:`referee.rules.ClassicGame`) lists every legal action and checks every
move, which is right for the referee and too slow for thousands of playouts a second. A
playout only needs *greedy* moves (:func:`sdk.strategy.greedy_table_action`), and those can
be found straight from the hands without listing the alternatives. This module plays them
on bit masks, with the table's rules restated in a few lines (rules-classic.md: one rank led,
at most as many cards as the defender holds; a cover sends the trick to the discard and both
draw, the leader first; a take lets only the leader draw and skips the taker; a seat with no
cards once the stock is empty is out; the last one holding cards loses).

It decides nothing the referee sees: the bot's real move is always one of the view's legal
actions. ``tests/sdk/test_mc_table.py`` checks that a fast playout ends exactly as the engine
does under greedy play.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import combinations
from typing import Final

from referee.rules import Card, ClassicAction, ClassicActionKind, ClassicGame, ClassicView
from referee.rules.cards import COVER_MASKS
from sdk.sim import sample_table_hidden

HAND_TARGET: Final = 3
"""Both players of a trick draw up to this many cards (rules-classic.md)."""

_ALL_CARDS: Final = tuple(range(36))


def _bits(mask: int) -> list[int]:
    """The card indices set in ``mask``, ascending (= the engine's suit order per rank)."""
    return [i for i in _ALL_CARDS if mask >> i & 1]


def _value(card: int, trump: int) -> int:
    """:func:`sdk.strategy.card_value` on an index: rank 0..8, plus 9 for a trump."""
    return card % 9 + (9 if card // 9 == trump else 0)


@dataclass(slots=True)
class TableState:
    """A whole table as plain integers: what a playout mutates (cheap to copy)."""

    players: int
    trump: int
    hands: list[int]
    """Bit mask per seat (bit ``i`` = card index ``i``)."""
    stock: list[int]
    """Reverse draw order: the next card drawn is the last element."""
    out: list[bool]
    leader: int
    defender: int
    led: list[int]
    """The led cards, ascending; empty between tricks."""
    loser: int | None = None
    over: bool = False

    @classmethod
    def sampled(cls, view: ClassicView, rng: random.Random) -> TableState:
        """A determinization of ``view``: the hidden cards placed at random (by the same
        sampler as :func:`sdk.sample_table_game`)."""
        if view.leader is None or view.defender is None:
            raise ValueError(f"a table that is over cannot be sampled: {view.reason!r}")
        hands, stock = sample_table_hidden(view, rng)
        return cls(
            players=view.players,
            trump=int(view.trump),
            hands=[_mask(h) for h in hands],
            stock=[c.index for c in reversed(stock)],
            out=list(view.out),
            leader=view.leader,
            defender=view.defender,
            led=sorted(c.index for c in view.led),
        )

    @classmethod
    def of_game(cls, game: ClassicGame) -> TableState:
        """The state of a running engine ``game`` (every card known)."""
        if game.leader is None or game.defender is None:
            raise ValueError(f"a table that is over has no state to play on: {game!r}")
        return cls(
            players=game.players,
            trump=int(game.trump),
            hands=[_mask(h) for h in game.hands],
            stock=[c.index for c in reversed(game.stock)],
            out=list(game.out),
            leader=game.leader,
            defender=game.defender,
            led=sorted(c.index for c in game.led),
        )

    def copy(self) -> TableState:
        """An independent copy (the lists are copied)."""
        return TableState(
            self.players,
            self.trump,
            self.hands.copy(),
            self.stock.copy(),
            self.out.copy(),
            self.leader,
            self.defender,
            self.led.copy(),
            self.loser,
            self.over,
        )

    # ---------------------------------------------------------------- moves

    def play(self, action: ClassicAction) -> None:
        """Play a legal ``action`` of the engine (a lead, a cover or a take)."""
        if action.kind is ClassicActionKind.LEAD:
            self.lead([c.index for c in action.led])
        elif action.kind is ClassicActionKind.COVER:
            self.cover([c.index for c in action.covers])
        else:
            self.take()

    def lead(self, cards: list[int]) -> None:
        """The leader puts ``cards`` (one rank) on the table."""
        self.hands[self.leader] &= ~_mask_of(cards)
        self.led = sorted(cards)

    def cover(self, covers: list[int]) -> None:
        """The defender covers each led card (``covers`` in the order of the led cards)."""
        hands, leader, defender, stock = self.hands, self.leader, self.defender, self.stock
        hands[defender] &= ~_mask_of(covers)
        self.led = []
        # One card at a time, the leader first, skipping whoever holds 3 or more.
        while stock and (
            hands[leader].bit_count() < HAND_TARGET or hands[defender].bit_count() < HAND_TARGET
        ):
            for seat in (leader, defender):
                if stock and hands[seat].bit_count() < HAND_TARGET:
                    hands[seat] |= 1 << stock.pop()
        self._next_trick(defender)

    def take(self) -> None:
        """The defender takes the led cards; only the leader draws; the taker is skipped."""
        hands, leader, stock = self.hands, self.leader, self.stock
        hands[self.defender] |= _mask_of(self.led)
        self.led = []
        while stock and hands[leader].bit_count() < HAND_TARGET:
            hands[leader] |= 1 << stock.pop()
        self._next_trick(self.defender + 1)

    def _next_trick(self, start: int) -> None:
        hands = self.hands
        if not self.stock:
            for seat in (self.leader, self.defender):
                if not hands[seat]:
                    self.out[seat] = True
            holding = [s for s in range(self.players) if hands[s]]
            if len(holding) <= 1:
                self.over = True
                self.loser = holding[0] if holding else None
                return
        self.leader = self._next_playing(start)
        self.defender = self._next_playing(self.leader + 1)

    def _next_playing(self, start: int) -> int:
        for step in range(self.players):
            seat = (start + step) % self.players
            if not self.out[seat]:
                return seat
        raise AssertionError("no seat plays, yet the game is not over")  # pragma: no cover

    # ---------------------------------------------------------------- greedy

    def greedy_step(self) -> None:
        """Play the move :func:`sdk.strategy.greedy_table_action` would choose."""
        if self.led:
            covers = self.cheapest_cover()
            if covers is None:
                self.take()
            else:
                self.cover(covers)
        else:
            self.lead(self.greedy_lead())

    def cheapest_cover(self) -> list[int] | None:
        """The cover of least total card value (the first found on ties, in the engine's
        order of listing), or None when nothing covers."""
        trump = self.trump
        masks = COVER_MASKS[trump]
        hand = self.hands[self.defender]
        options = [_bits(hand & masks[y]) for y in self.led]
        if not all(options):
            return None
        if len(options) == 1:  # one led card: the cheapest single card, the lowest index
            return [min(options[0], key=lambda x: _value(x, trump))]
        best: list[int] | None = None
        best_cost = 1 << 30
        chosen: list[int] = []

        def extend(depth: int, used: int, cost: int) -> None:
            nonlocal best, best_cost
            if cost >= best_cost:
                return
            if depth == len(options):
                best, best_cost = chosen.copy(), cost
                return
            for x in options[depth]:
                if not used >> x & 1:
                    chosen.append(x)
                    extend(depth + 1, used | 1 << x, cost + _value(x, trump))
                    chosen.pop()

        extend(0, 0, 0)
        return best

    def greedy_lead(self) -> list[int]:
        """Greedy's lead (``sdk.strategy.table_key``): holding a non-trump if it can, the
        lowest rank, as many cards of it as the defender can answer, the fewest trumps."""
        hand = self.hands[self.leader]
        most = self.hands[self.defender].bit_count()
        trump = self.trump
        best: tuple[int, int, int, int] | None = None
        lead: tuple[int, ...] = ()
        for rank in range(9):
            same = [i for i in range(rank, 36, 9) if hand >> i & 1]
            for size in range(1, min(len(same), most) + 1):
                for chosen in combinations(same, size):
                    trumps = sum(1 for i in chosen if i // 9 == trump)
                    key = (1 if trumps == size else 0, rank, -size, trumps)
                    if best is None or key < best:
                        best, lead = key, chosen
        return list(lead)

    def playout(self, seat: int, max_actions: int) -> float:
        """Finish the game with greedy play for every seat; ``seat``'s score: 1 when another
        seat lost, 0 when ``seat`` did, 1/2 for a draw or a game still running after
        ``max_actions``."""
        for _ in range(max_actions):
            if self.over:
                break
            self.greedy_step()
        if not self.over or self.loser is None:
            return 0.5
        return 0.0 if self.loser == seat else 1.0


def _mask(cards: list[Card] | tuple[Card, ...]) -> int:
    mask = 0
    for card in cards:
        mask |= 1 << card.index
    return mask


def _mask_of(indices: list[int]) -> int:
    mask = 0
    for i in indices:
        mask |= 1 << i
    return mask
