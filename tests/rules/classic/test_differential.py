"""Differential test: a deliberately plain re-statement of rules-classic.md (strings and lists,
no bit tricks, written separately from the engine) must agree with the engine on every
legal-action set and every state along many random games with 2, 3 and 4 players."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from itertools import combinations, product

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import ClassicGame, Game, shuffled_deck

RANKS = "6789TJQKA"
SUITS = "CDHS"


def covers(x: str, y: str, trump: str) -> bool:
    """X covers Y: a higher card of Y's suit, or any trump on a non-trump."""
    if x[1] == y[1]:
        return RANKS.index(x[0]) > RANKS.index(y[0])
    return x[1] == trump and y[1] != trump


def suit_order(cards: list[str]) -> list[str]:
    return sorted(cards, key=lambda c: SUITS.index(c[1]))


@dataclass
class Table:
    n: int
    hands: list[list[str]]
    stock: list[str]  # draw order; the face-up card last
    trump: str
    leader: int
    defender: int
    limit: int
    table: list[str] = field(default_factory=list)  # the led cards, suit order
    discard: list[str] = field(default_factory=list)
    out: list[bool] = field(default_factory=list)
    known: list[set[str]] = field(default_factory=list)
    actions: int = 0
    over: bool = False
    loser: int | None = None
    reason: str | None = None

    @classmethod
    def deal(cls, deck: list[str], dealer: int, n: int, limit: int) -> Table:
        hands: list[list[str]] = [[] for _ in range(n)]
        for i in range(3 * n):
            hands[(dealer + 1 + i) % n].append(deck[i])
        stock = [*deck[3 * n + 1 :], deck[3 * n]]
        first = (dealer + 1) % n
        table = cls(n, hands, stock, deck[3 * n][1], first, (first + 1) % n, limit)
        table.out = [False] * n
        table.known = [set() for _ in range(n)]
        return table

    def playing_after(self, seat: int) -> int:
        """The next seat clockwise after ``seat`` that still plays."""
        for k in range(1, self.n + 1):
            if not self.out[(seat + k) % self.n]:
                return (seat + k) % self.n
        raise AssertionError("nobody plays")

    def to_move(self) -> int | None:
        if self.over:
            return None
        return self.defender if self.table else self.leader

    def legal(self) -> set[str]:
        if self.over:
            return set()
        if not self.table:
            hand = self.hands[self.leader]
            most = len(self.hands[self.defender])
            result = set()
            for rank in RANKS:
                same = suit_order([c for c in hand if c[0] == rank])
                for k in range(1, min(len(same), most) + 1):
                    result |= {"lead " + " ".join(combo) for combo in combinations(same, k)}
            return result
        hand = self.hands[self.defender]
        result = {"take"}
        choices = [[x for x in hand if covers(x, y, self.trump)] for y in self.table]
        for combo in product(*choices):
            if len(set(combo)) == len(combo):
                pairs = zip(self.table, combo, strict=True)
                result.add("cover " + " ".join(f"{y}:{x}" for y, x in pairs))
        return result

    def draw(self, seat: int) -> None:
        card = self.stock.pop(0)
        self.hands[seat].append(card)
        if not self.stock:  # the face-up card: everyone sees who draws it
            self.known[seat].add(card)

    def play(self, text: str) -> None:
        assert text in self.legal(), text
        words = text.split()
        leader, defender = self.leader, self.defender
        self.actions += 1
        if words[0] == "lead":
            for card in words[1:]:
                self.hands[leader].remove(card)
                self.known[leader].discard(card)
            self.table = words[1:]
        else:
            if words[0] == "cover":
                for pair in words[1:]:
                    led, cover = pair.split(":")
                    self.hands[defender].remove(cover)
                    self.known[defender].discard(cover)
                    self.discard += [led, cover]
                self.table = []
                turn = leader
                while self.stock and (len(self.hands[leader]) < 3 or len(self.hands[defender]) < 3):
                    if len(self.hands[turn]) < 3:
                        self.draw(turn)
                    turn = defender if turn == leader else leader
            else:
                self.hands[defender] += self.table
                self.known[defender] |= set(self.table)
                self.table = []
                while self.stock and len(self.hands[leader]) < 3:
                    self.draw(leader)
            if not self.stock:
                for seat in range(self.n):
                    if not self.hands[seat]:
                        self.out[seat] = True
            holding = [s for s in range(self.n) if self.hands[s]]
            if not self.stock and len(holding) <= 1:
                self.over = True
                self.loser = holding[0] if holding else None
                self.reason = "last holder" if holding else "all out"
                return
            if words[0] == "cover":
                self.leader = defender if not self.out[defender] else self.playing_after(defender)
            else:
                self.leader = self.playing_after(defender)
            self.defender = self.playing_after(self.leader)
        if self.actions >= self.limit:
            self.over, self.loser, self.reason = True, None, "turn limit"

    def pairwise(self) -> set[tuple[int, int]]:
        if not self.over:
            return set()
        if self.loser is not None:
            return {(s, self.loser) for s in range(self.n) if s != self.loser}
        if self.reason == "turn limit":
            return {
                (w, x)
                for w in range(self.n)
                for x in range(self.n)
                if self.out[w] and not self.out[x]
            }
        return set()


def assert_same(plain: Table, game: ClassicGame) -> None:
    assert [sorted(h) for h in plain.hands] == [sorted(map(str, h)) for h in game.hands]
    assert plain.stock == [str(c) for c in game.stock]
    assert plain.discard == [str(c) for c in game.discard]
    assert plain.table == [str(c) for c in game.led]
    assert plain.out == list(game.out)
    assert plain.known == [{str(c) for c in game.known_cards(s)} for s in range(plain.n)]
    assert (plain.over, plain.to_move()) == (game.over, game.to_move)
    if plain.over:
        assert (plain.loser, plain.reason) == (game.loser, game.reason and game.reason.value)
    else:
        assert (plain.leader, plain.defender) == (game.leader, game.defender)
    assert plain.pairwise() == set(game.pairwise_results())
    assert plain.legal() == {str(a) for a in game.legal_actions()}


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from([2, 3, 4]),
    st.integers(0, 3),
    st.sampled_from([1000, 30]),
)
def test_engine_agrees_with_a_plain_restatement_of_the_rules(
    seed: int, players: int, dealer: int, limit: int
) -> None:
    deck = [str(c) for c in shuffled_deck(seed)]
    dealer %= players
    game = Game.from_deck(deck, dealer, players=players, ruleset="classic", turn_limit=limit)
    plain = Table.deal(deck, dealer, players, limit)
    rng = random.Random(seed)
    assert_same(plain, game)
    while not game.over:
        options = sorted(plain.legal())
        # Prefer multi-card leads and covers now and then, so the rarer rules come up often.
        special = [a for a in options if a.count(" ") >= 2 or a.startswith("cover")]
        action = rng.choice(special if special and rng.random() < 0.5 else options)
        game.play(action)
        plain.play(action)
        assert_same(plain, game)
