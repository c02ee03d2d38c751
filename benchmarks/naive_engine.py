"""A plain, readable implementation of the default rules (docs/rules.md), kept as a yardstick.

Cards are strings (``"TH"``), hands and the pile are lists, actions are their canonical text.
No bit masks, no tables, no caches: this is what a straightforward first implementation looks
like, and ``benchmarks/rules_api.py`` measures the real engine's public API against it.
``tests/rules/test_naive_engine.py`` checks that it agrees with the real engine (same legal
lists in the same order, same outcomes), so the comparison is between two correct engines.

Legal actions are listed in the engine's documented order (without swap then with swap; ``take``
first, then covers by covering card then led card, or leads; cards in deck order: suits C D H S,
ranks 6 to A), so that the same random draws play the same games in both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

RANKS = "6789TJQKA"
SUITS = "CDHS"
HAND_TARGET = 3
DEFAULT_TURN_LIMIT = 1000


def deck_position(card: str) -> int:
    """Where ``card`` sorts in deck order (clubs 6..A, diamonds, hearts, spades)."""
    return SUITS.index(card[1]) * 9 + RANKS.index(card[0])


def covers(x: str, y: str, trump: str) -> bool:
    """Card ``x`` covers card ``y``: a higher card of y's suit, or any trump on a non-trump."""
    if x[1] == y[1]:
        return RANKS.index(x[0]) > RANKS.index(y[0])
    return x[1] == trump and y[1] != trump


@dataclass
class NaiveGame:
    """One two-player game; :meth:`play` takes canonical action text."""

    hands: list[list[str]]
    pile: list[str]
    stock: list[str]  # in draw order; the face-up card is last
    trump: str
    to_move: int
    turn_limit: int = DEFAULT_TURN_LIMIT
    history: list[str] = field(default_factory=list)
    over: bool = False
    winner: int | None = None  # None: a draw (or still running)
    reason: str | None = None  # "out", "draw by final answer" or "turn limit"

    @classmethod
    def deal(cls, deck: list[str], dealer: int, turn_limit: int = DEFAULT_TURN_LIMIT) -> NaiveGame:
        """Deal ``deck`` (index 0 = top): 0, 2, 4 to the non-dealer, 1, 3, 5 to the dealer,
        6 face up under the stock (its suit is trump), the stock drawn from 7 onward."""
        non_dealer = 1 - dealer
        hands: list[list[str]] = [[], []]
        for i in range(6):
            if i % 2 == 0:
                hands[non_dealer].append(deck[i])
            else:
                hands[dealer].append(deck[i])
        stock = [*deck[7:], deck[6]]
        return cls(hands, [], stock, deck[6][1], non_dealer, turn_limit)

    def legal_actions(self) -> list[str]:
        """Every legal action text of the player to move (empty once the game is over)."""
        if self.over:
            return []
        hand = sorted(self.hands[self.to_move], key=deck_position)
        actions = self.options(hand)
        six = "6" + self.trump
        if six in hand and self.stock:
            swapped = sorted([c for c in hand if c != six] + [self.stock[-1]], key=deck_position)
            actions += ["swap " + action for action in self.options(swapped)]
        return actions

    def options(self, hand: list[str]) -> list[str]:
        """The actions (without swap) of a hand sorted in deck order."""
        if not self.pile:
            return ["lead " + card for card in hand]
        actions = ["take"]
        top = self.pile[-1]
        for x in hand:
            if not covers(x, top, self.trump):
                continue
            if len(hand) >= 2:
                actions += [f"cover {x} {y}" for y in hand if y != x]
            elif not self.stock:
                actions.append(f"cover {x}")
        return actions

    def play(self, text: str) -> None:
        """Play ``text`` for the player to move; raises ValueError when it is not legal."""
        if text not in self.legal_actions():
            raise ValueError(f"illegal action {text!r}")
        me = self.to_move
        hand = self.hands[me]
        words = text.split()
        if words[0] == "swap":
            six = "6" + self.trump
            hand.remove(six)
            hand.append(self.stock[-1])
            self.stock[-1] = six
            words = words[1:]
        if words[0] == "take":
            top = self.pile[-1]
            if top[1] != self.trump:
                count = 1
            elif top[0] == "A":
                count = len(self.pile)
            else:
                count = 3
            hand += self.pile[-count:]
            del self.pile[-count:]
        else:
            for card in words[1:]:  # lead C, or cover C, or cover C then lead C
                hand.remove(card)
                self.pile.append(card)
        while len(hand) < HAND_TARGET and self.stock:
            hand.append(self.stock.pop(0))
        self.history.append(text)
        self.to_move = 1 - me
        if not hand and not self.stock:
            self.finish_out(me, went_out_leading=words[0] == "lead" or len(words) == 3)
        elif len(self.history) >= self.turn_limit:
            self.over, self.winner, self.reason = True, None, "turn limit"

    def finish_out(self, me: int, went_out_leading: bool) -> None:
        """``me`` emptied his hand with the stock empty: he wins, unless he went out with a lead
        and the other player's single card covers it (then the game is drawn)."""
        self.over = True
        other = self.hands[1 - me]
        if went_out_leading and len(other) == 1 and covers(other[0], self.pile[-1], self.trump):
            self.pile.append(other.pop())
            self.winner, self.reason = None, "draw by final answer"
        else:
            self.winner, self.reason = me, "out"
