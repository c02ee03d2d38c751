"""Differential test: a deliberately plain re-statement of rules.md (strings and lists, no bit
tricks, written separately from the engine) must agree with the engine on every legal-action
set and every state along many random games."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import Game, shuffled_deck

RANKS = "6789TJQKA"


def covers(x: str, y: str, trump: str) -> bool:
    """rules.md: X covers Y (higher of Y's suit, or any trump on a non-trump)."""
    if y[1] == trump:
        return x[1] == trump and RANKS.index(x[0]) > RANKS.index(y[0])
    if x[1] == y[1]:
        return RANKS.index(x[0]) > RANKS.index(y[0])
    return x[1] == trump


@dataclass
class Plain:
    hands: list[list[str]]
    pile: list[str]
    stock: list[str]  # draw order; the face-up card last
    trump: str
    to_move: int
    over: bool = False
    outcome: int | None = None
    reason: str | None = None
    actions: int = 0
    limit: int = 1000
    known: list[set[str]] = field(default_factory=lambda: [set(), set()])

    @classmethod
    def deal(cls, deck: list[str], dealer: int) -> Plain:
        other = 1 - dealer
        hands: list[list[str]] = [[], []]
        for i in range(6):
            hands[other if i % 2 == 0 else dealer].append(deck[i])
        return cls(hands, [], [*deck[7:], deck[6]], deck[6][1], other)

    def options(self, hand: list[str]) -> list[str]:
        if not self.pile:
            return [f"lead {c}" for c in hand]
        out = ["take"]
        top = self.pile[-1]
        for x in hand:
            if not covers(x, top, self.trump):
                continue
            if len(hand) == 1 and not self.stock:
                out.append(f"cover {x}")
            out += [f"cover {x} {y}" for y in hand if y != x]
        return out

    def legal(self) -> set[str]:
        if self.over:
            return set()
        hand = self.hands[self.to_move]
        result = set(self.options(hand))
        six = "6" + self.trump
        if six in hand and self.stock:
            swapped = [c for c in hand if c != six] + [self.stock[-1]]
            result |= {f"swap {a}" for a in self.options(swapped)}
        return result

    def play(self, text: str) -> None:
        assert text in self.legal(), text
        me = self.to_move
        hand = self.hands[me]
        words = text.split()
        if words[0] == "swap":
            six = "6" + self.trump
            hand.remove(six)
            hand.append(self.stock[-1])
            self.known[me].discard(six)
            self.known[me].add(self.stock[-1])
            self.stock[-1] = six
            words = words[1:]
        if words[0] == "take":
            top = self.pile[-1]
            if top[1] != self.trump:
                n = 1
            elif top[0] == "A":
                n = len(self.pile)
            else:
                n = min(3, len(self.pile))
            taken = self.pile[-n:]
            del self.pile[-n:]
            hand += taken
            self.known[me] |= set(taken)
        else:
            for card in words[1:]:
                hand.remove(card)
                self.pile.append(card)
                self.known[me].discard(card)
        while len(hand) < 3 and self.stock:
            card = self.stock.pop(0)
            hand.append(card)
            if not self.stock:
                self.known[me].add(card)
        self.actions += 1
        self.to_move = 1 - me
        if not hand and not self.stock:
            self.over = True
            other = self.hands[1 - me]
            led = words[0] == "lead" or len(words) == 3
            if led and len(other) == 1 and covers(other[0], self.pile[-1], self.trump):
                self.pile.append(other.pop())
                self.known[1 - me].clear()
                self.outcome, self.reason = None, "draw by final answer"
            else:
                self.outcome, self.reason = me, "out"
        elif self.actions >= self.limit:
            self.over, self.outcome, self.reason = True, None, "turn limit"


def assert_same(plain: Plain, game: Game) -> None:
    assert [sorted(h) for h in plain.hands] == [sorted(map(str, h)) for h in game.hands]
    assert plain.pile == [str(c) for c in game.pile]
    assert plain.stock == [str(c) for c in game.stock]
    assert plain.over == game.over
    assert plain.known == [{str(c) for c in game.known_cards(s)} for s in (0, 1)]
    if plain.over:
        assert (plain.outcome, plain.reason) == (game.outcome, game.reason and game.reason.value)
    else:
        assert plain.to_move == game.to_move
    assert plain.legal() == {str(a) for a in game.legal_actions()}


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 1), st.sampled_from([1000, 40]))
def test_engine_agrees_with_a_plain_restatement_of_the_rules(
    seed: int, dealer: int, limit: int
) -> None:
    deck = [str(c) for c in shuffled_deck(seed)]
    game = Game.from_deck(deck, dealer, turn_limit=limit)
    plain = Plain.deal(deck, dealer)
    plain.limit = limit
    rng = random.Random(seed)
    assert_same(plain, game)
    while not game.over:
        # Prefer swaps and covers now and then, so the rare rules are exercised often.
        options = sorted(plain.legal())
        special = [a for a in options if a.startswith("swap") or a.count(" ") == 1]
        action = rng.choice(special if special and rng.random() < 0.3 else options)
        game.play(action)
        plain.play(action)
        assert_same(plain, game)
