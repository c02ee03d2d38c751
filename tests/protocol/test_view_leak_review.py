"""Information-leak review of what a bot receives, from the outside.

The model of what a seat may know is written here from /work/shared/rules.md and
rules-classic.md alone (not from ``referee.rules``): :class:`Duel` and :class:`Table`
replay a stored game and give, after every action, exactly the public state plus the
seat's own hand:

* two-player game: own hand; the pile (all of it, [ruling]); the trump suit; the face-up
  card while it is in the stock; the stock's size; the opponent's card count; the cards
  known to be in each hand (taken from the pile, the face-up card drawn last or swapped
  for) until they are played; the history; the legal actions of the seat to move;
* classic table: own hand; every seat's hand size and whether it is out; the cards seen
  going into each hand (taken tricks, the face-up card drawn last); leader, defender, the
  led cards, the discard ([ruling]: public); trump, face-up card, stock size; history and
  movers; legal actions of the seat to move.

Spying bots (``view_leak_review/spy.py``: raw gRPC, no SDK) play real tournaments through
``kryt tournament run --backend process`` and log every byte they receive; each message is
compared with the model computed from the game record stored afterwards (``kryt games
export`` for the two-player game, the database's packed game for tables, which the export
leaves out). Deal secrecy (seeds, GameEnd's deck) is checked against the stored seeds.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.unknown_fields import UnknownFieldSet

from arena.db.gamecodec import Table as PackedTable
from arena.db.gamecodec import unpack
from arena.tournament.runner import series_seed
from arena.tournament.table_runner import table_series_seed
from kryt_proto.v1 import bot_pb2 as pb
from referee.client import Reply
from referee.protocol.messages import (
    AnyView,
    Clock,
    GameEnd,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    TimeControl,
)
from referee.record import GameRecord
from referee.rules import shuffled_deck
from referee.series import SeriesConfig, SeriesFormat, game_seed, run_series
from referee.table import run_table_series
from sdk.tools.local import PlayerSlot

ROOT = Path(__file__).resolve().parents[2]
SPY = Path(__file__).resolve().parent / "view_leak_review" / "spy.py"
KRYT = ROOT / ".venv" / "bin" / "kryt"
RANKS = "6789TJQKA"
SUITS = "CDHS"
CARD = re.compile(r"(?<![0-9A-Za-z])(?:10|[6-9TJQKA])[CDHS](?![0-9A-Za-z])")
ROOMY = ("--move-seconds", "10", "--bank-seconds", "60")

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

# EndReason wire values (bot.proto)
OUT, FINAL_ANSWER, TURN_LIMIT, LAST_HOLDER, ALL_OUT = 1, 2, 3, 4, 5
RULE_ENDINGS = {"out", "draw by final answer", "turn limit", "last holder", "all out"}


# --- the independent model ---------------------------------------------------------------


def key(card: str) -> tuple[int, int]:
    return SUITS.index(card[1]), RANKS.index(card[0])


def canonical(cards: Any) -> list[str]:
    return sorted(cards, key=key)


def covers(x: str, y: str, trump: str) -> bool:
    """rules.md: X covers Y."""
    if y[1] != trump:
        return (x[1] == y[1] and RANKS.index(x[0]) > RANKS.index(y[0])) or x[1] == trump
    return x[1] == trump and RANKS.index(x[0]) > RANKS.index(y[0])


class Duel:
    """The two-player game of rules.md, replayed from a deal: public state + hands."""

    def __init__(self, deck: Sequence[str], dealer: int, limit: int) -> None:
        first = 1 - dealer
        self.dealer, self.limit = dealer, limit
        self.hands = {first: set(deck[0:6:2]), dealer: set(deck[1:6:2])}
        self.trump = deck[6][1]
        self.stock = [*deck[7:], deck[6]]  # drawn from the front; face-up card last
        self.pile: list[str] = []
        self.known: dict[int, set[str]] = {0: set(), 1: set()}
        self.history: list[str] = []
        self.to_move: int | None = first
        self.winner: int | None = None
        self.reason = 0
        self.final_cover = ""

    def _options(self, hand: set[str]) -> set[str]:
        if not self.pile:
            return {f"lead {c}" for c in hand}
        top, out = self.pile[-1], {"take"}
        for c in hand:
            if covers(c, top, self.trump):
                if len(hand) >= 2:
                    out |= {f"cover {c} {lead}" for lead in hand - {c}}
                elif not self.stock:
                    out.add(f"cover {c}")
        return out

    def legal(self) -> set[str]:
        assert self.to_move is not None
        hand = self.hands[self.to_move]
        out = self._options(hand)
        six = "6" + self.trump
        if six in hand and self.stock:
            swapped = hand - {six} | {self.stock[-1]}
            out |= {"swap " + a for a in self._options(swapped)}
        return out

    def play(self, text: str) -> None:
        assert text in self.legal(), (text, self.history)
        seat = self.to_move
        assert seat is not None
        hand, known, words = self.hands[seat], self.known[seat], text.split()
        if words[0] == "swap":
            six, face = "6" + self.trump, self.stock[-1]
            hand.discard(six)
            known.discard(six)
            hand.add(face)
            known.add(face)  # everyone saw him take the face-up card
            self.stock[-1] = six
            words = words[1:]
        if words[0] == "take":
            top = self.pile[-1]
            n = 1 if top[1] != self.trump else len(self.pile) if top[0] == "A" else 3
            taken = self.pile[-n:]
            del self.pile[-n:]
            hand.update(taken)
            known.update(taken)
        else:
            for card in words[1:]:
                hand.remove(card)
                known.discard(card)
                self.pile.append(card)
        if self.stock and len(hand) < 3:
            drawn = self.stock[: 3 - len(hand)]
            del self.stock[: len(drawn)]
            hand.update(drawn)
            if not self.stock:
                known.add(drawn[-1])  # the face-up card, drawn last, is public
        self.history.append(text)
        self.to_move = 1 - seat
        if not hand and not self.stock:
            self.to_move = None
            other = self.hands[1 - seat]
            led = words[0] == "lead" or len(words) == 3
            if led and len(other) == 1 and covers(next(iter(other)), self.pile[-1], self.trump):
                self.final_cover = other.pop()
                self.known[1 - seat].clear()
                self.pile.append(self.final_cover)
                self.reason = FINAL_ANSWER
            else:
                self.winner, self.reason = seat, OUT
        elif len(self.history) >= self.limit:
            self.to_move, self.reason = None, TURN_LIMIT

    def view(self, seat: int) -> dict[str, Any]:
        other = 1 - seat
        return {
            "seat": seat,
            "dealer": self.dealer,
            "hand": set(self.hands[seat]),
            "pile": list(self.pile),
            "trump": self.trump,
            "face_up": self.stock[-1] if self.stock else "",
            "stock_count": len(self.stock),
            "opponent_count": len(self.hands[other]),
            "opponent_known": set(self.known[other]),
            "own_known": set(self.known[seat]),
            "to_move": self.to_move,
            "legal_actions": self.legal() if self.to_move == seat else set(),
            "history": list(self.history),
            "over": self.to_move is None,
            "winner": self.winner,
            "reason": self.reason,
            "turn_limit": self.limit,
            "final_cover": self.final_cover,
        }


class Table:
    """The classic table of rules-classic.md, replayed from a deal."""

    def __init__(self, deck: Sequence[str], dealer: int, players: int, limit: int) -> None:
        n = players
        self.n, self.dealer, self.limit = n, dealer, limit
        self.hands: list[set[str]] = [set() for _ in range(n)]
        for i in range(3 * n):
            self.hands[(dealer + 1 + i) % n].add(deck[i])
        self.trump = deck[3 * n][1]
        self.stock = [*deck[3 * n + 1 :], deck[3 * n]]
        self.known: list[set[str]] = [set() for _ in range(n)]
        self.out = [False] * n
        self.led: list[str] = []
        self.discard: list[str] = []
        self.history: list[str] = []
        self.movers: list[int] = []
        self.over = False
        self.loser: int | None = None
        self.reason = 0
        self.leader = (dealer + 1) % n
        self.defender = self._next(self.leader + 1)

    def _next(self, start: int) -> int:
        return next(s % self.n for s in range(start, start + self.n) if not self.out[s % self.n])

    @property
    def to_move(self) -> int | None:
        return None if self.over else self.defender if self.led else self.leader

    def legal(self) -> set[str]:
        if not self.led:
            hand, most, out = self.hands[self.leader], len(self.hands[self.defender]), set()
            for rank in RANKS:
                same = canonical(c for c in hand if c[0] == rank)
                for k in range(1, min(len(same), most) + 1):
                    out |= {"lead " + " ".join(combo) for combo in itertools.combinations(same, k)}
            return out
        out = {"take"}
        hand = self.hands[self.defender]

        def assign(i: int, used: tuple[str, ...]) -> None:
            if i == len(self.led):
                out.add(
                    "cover " + " ".join(f"{y}:{x}" for y, x in zip(self.led, used, strict=True))
                )
                return
            for x in canonical(hand):
                if x not in used and covers(x, self.led[i], self.trump):
                    assign(i + 1, (*used, x))

        assign(0, ())
        return out

    def _draw(self, seat: int) -> None:
        card = self.stock.pop(0)
        self.hands[seat].add(card)
        if not self.stock:
            self.known[seat].add(card)  # the face-up card: everyone sees who draws it

    def play(self, text: str, mover: int) -> None:
        assert mover == self.to_move and text in self.legal(), (text, mover, self.history)
        self.history.append(text)
        self.movers.append(mover)
        leader, defender, words = self.leader, self.defender, text.split()
        if words[0] == "lead":
            self.led = words[1:]
            self.hands[leader] -= set(self.led)
            self.known[leader] -= set(self.led)
        else:
            led, self.led = self.led, []
            if words[0] == "cover":
                pairs = [w.split(":") for w in words[1:]]
                put = {x for _, x in pairs}
                self.hands[defender] -= put
                self.known[defender] -= put
                self.discard += [c for pair in pairs for c in pair]
                while self.stock and (len(self.hands[leader]) < 3 or len(self.hands[defender]) < 3):
                    for seat in (leader, defender):
                        if self.stock and len(self.hands[seat]) < 3:
                            self._draw(seat)
                start = defender
            else:
                self.hands[defender] |= set(led)
                self.known[defender] |= set(led)
                while self.stock and len(self.hands[leader]) < 3:
                    self._draw(leader)
                start = defender + 1
            if not self.stock:
                for seat in (leader, defender):
                    self.out[seat] = self.out[seat] or not self.hands[seat]
            holding = [s for s in range(self.n) if self.hands[s]]
            if not self.stock and len(holding) <= 1:
                self.over = True
                self.loser = holding[0] if holding else None
                self.reason = LAST_HOLDER if holding else ALL_OUT
                return
            self.leader = self._next(start)
            self.defender = self._next(self.leader + 1)
        if len(self.history) >= self.limit:
            self.over, self.loser, self.reason = True, None, TURN_LIMIT

    def view(self, seat: int) -> dict[str, Any]:
        return {
            "ruleset": "classic",
            "seat": seat,
            "players": self.n,
            "dealer": self.dealer,
            "hand": set(self.hands[seat]),
            "hand_sizes": [len(h) for h in self.hands],
            "out": list(self.out),
            "known": [set(k) for k in self.known],
            "leader": None if self.over else self.leader,
            "defender": None if self.over else self.defender,
            "led": list(self.led),
            "discard": list(self.discard),
            "trump": self.trump,
            "face_up": self.stock[-1] if self.stock else "",
            "stock_count": len(self.stock),
            "to_move": self.to_move,
            "legal_actions": self.legal() if self.to_move == seat else set(),
            "history": list(self.history),
            "movers": list(self.movers),
            "turn_limit": self.limit,
            "over": self.over,
            "loser": self.loser,
            "reason": self.reason,
        }


def _opt(msg: Any, name: str) -> int | None:
    return int(getattr(msg, name)) if msg.HasField(name) else None


def wire_view(msg: pb.View) -> dict[str, Any]:
    """A received default-game view in the model's shape (sets where order is not news)."""
    return {
        "seat": msg.seat,
        "dealer": msg.dealer,
        "hand": set(msg.hand),
        "pile": list(msg.pile),
        "trump": msg.trump,
        "face_up": msg.face_up,
        "stock_count": msg.stock_count,
        "opponent_count": msg.opponent_count,
        "opponent_known": set(msg.opponent_known),
        "own_known": set(msg.own_known),
        "to_move": _opt(msg, "to_move"),
        "legal_actions": set(msg.legal_actions),
        "history": list(msg.history),
        "over": msg.over,
        "winner": _opt(msg, "winner"),
        "reason": int(msg.reason),
        "turn_limit": msg.turn_limit,
        "final_cover": msg.final_cover,
    }


def wire_table_view(msg: pb.TableView) -> dict[str, Any]:
    return {
        "ruleset": msg.ruleset,
        "seat": msg.seat,
        "players": msg.players,
        "dealer": msg.dealer,
        "hand": set(msg.hand),
        "hand_sizes": list(msg.hand_sizes),
        "out": list(msg.out),
        "known": [set(k.cards) for k in msg.known],
        "leader": _opt(msg, "leader"),
        "defender": _opt(msg, "defender"),
        "led": list(msg.led),
        "discard": list(msg.discard),
        "trump": msg.trump,
        "face_up": msg.face_up,
        "stock_count": msg.stock_count,
        "to_move": _opt(msg, "to_move"),
        "legal_actions": set(msg.legal_actions),
        "history": list(msg.history),
        "movers": list(msg.movers),
        "turn_limit": msg.turn_limit,
        "over": msg.over,
        "loser": _opt(msg, "loser"),
        "reason": int(msg.reason),
    }


# --- running tournaments of spies ----------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    kind: str
    pid: int
    raw: bytes

    @property
    def msg(self) -> pb.RefereeMessage:
        return pb.RefereeMessage.FromString(self.raw)


@dataclass
class Game:
    """One game as a spy saw it, and as the database stored it."""

    bot: str
    start: pb.GameStart
    pid: int
    requests: list[pb.DecisionRequest] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    end: pb.GameEnd | None = None


@dataclass(frozen=True)
class Run:
    tmp: Path
    output: str
    logs: dict[str, list[Entry]]
    db: Path

    def rows(self, sql: str) -> list[dict[str, Any]]:
        with sqlite3.connect(self.db) as con:
            con.row_factory = sqlite3.Row
            return [dict(r) for r in con.execute(sql)]

    def games(self) -> list[Game]:
        out: list[Game] = []
        for bot, entries in self.logs.items():
            current: Game | None = None
            for entry in entries:
                if entry.kind == "game_start":
                    current = Game(bot, entry.msg.game_start, entry.pid)
                    out.append(current)
                elif entry.kind == "decision_request" and current is not None:
                    current.requests.append(entry.msg.decision_request)
                elif entry.kind == "sent" and current is not None:
                    current.sent.append(entry.raw.decode())
                elif entry.kind == "game_end" and current is not None:
                    current.end = entry.msg.game_end
                    current = None
        return out

    def received(self) -> Iterator[tuple[str, Entry]]:
        for bot, entries in self.logs.items():
            for entry in entries:
                if entry.kind not in ("started", "sent"):
                    yield bot, entry


def tournament(tmp: Path, bots: dict[str, dict[str, Any]], *args: str) -> Run:
    folders = []
    for name, config in bots.items():
        folder = tmp / name
        folder.mkdir()
        shutil.copy(SPY, folder / "bot.py")
        (folder / "bot.toml").write_text(
            f'name = "{name}"\nversion = "1.0.0"\nruntime = "python"\nentry = "bot.py"\n'
        )
        settings = {"name": name, "log": str(tmp / f"{name}.log"), **config}
        (folder / "spy.json").write_text(json.dumps(settings))
        folders.append(str(folder))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("KRYT_DATABASE_URL", None)
    db = tmp / "db.sqlite"
    command = [
        str(KRYT), "tournament", "run", *folders, "--backend", "process", "--unsafe",
        "-d", str(db), "--store", str(tmp / "store"), "-j", "1", "-v", *ROOMY, *args,
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, cwd=tmp)
    assert proc.returncode == 0 and db.exists(), proc.stdout + proc.stderr
    logs: dict[str, list[Entry]] = {}
    for name in bots:
        logs[name] = []
        for line in (tmp / f"{name}.log").read_text().splitlines():
            item = json.loads(line)
            logs[name].append(Entry(item["kind"], item["pid"], base64.b64decode(item["raw"])))
    return Run(tmp, proc.stdout + proc.stderr, logs, db)


def exported(run: Run) -> list[dict[str, Any]]:
    """The two-player games as ``kryt games export`` writes them (JSON)."""
    target = run.tmp / "games.json"
    proc = subprocess.run(
        [str(KRYT), "games", "export", str(target), "-d", str(run.db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    games: list[dict[str, Any]] = json.loads(target.read_text())
    return games


@pytest.fixture(scope="module")
def duel(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Two spies, four games of the default game with a secret seed; spy ``b`` answers its
    first request of game 3 with an illegal action."""
    tmp = tmp_path_factory.mktemp("duel")
    return tournament(tmp, {"a": {}, "b": {"illegal_game": 3}}, "--games", "4")


@pytest.fixture(scope="module", params=[3, 4])
def table(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Spies at classic tables of 3 (2 seatings x 2 games) and 4 (6 seatings x 1 game);
    at the table of 3 spy ``c`` plays an illegal action in game 2 of each seating."""
    size = int(request.param)
    tmp = tmp_path_factory.mktemp(f"table{size}")
    names = "abcd"[:size]
    bots: dict[str, dict[str, Any]] = {n: {} for n in names}
    if size == 3:
        bots["c"] = {"illegal_game": 2}
    games = "2" if size == 3 else "1"
    return tournament(
        tmp, bots, "--ruleset", "classic", "--table-size", str(size), "--games", games
    )


def _duel_records(run: Run) -> dict[int, dict[str, Any]]:
    return {int(g["Game"]): g for g in exported(run) if int(g["Attempt"]) == 1}


def _replay_duel(record: dict[str, Any], upto: int) -> Duel:
    model = Duel(record["Deck"].split(), int(record["Dealer"]), int(record["TurnLimit"]))
    for move in record["Moves"][:upto]:
        assert model.to_move == move["seat"]
        model.play(move["action"])
    return model


def test_every_two_player_view_is_exactly_the_seats_share_of_the_stored_game(duel: Run) -> None:
    records = _duel_records(duel)
    assert len(records) == 4
    checked = 0
    for game in duel.games():
        record = records[game.start.game_number]
        seat = game.start.seat
        assert game.start.dealer == int(record["Dealer"])
        moves = record["Moves"]
        for request in game.requests:
            view = request.view
            assert not request.HasField("table_view")
            k = len(view.history)
            assert list(view.history) == [m["action"] for m in moves[:k]]
            model = _replay_duel(record, k)
            assert model.to_move == seat  # asked only on its turn
            assert wire_view(view) == model.view(seat), (game.bot, record["Game"], k)
            assert len(view.legal_actions) == len(set(view.legal_actions))
            checked += 1
        # GameEnd: the final position; after a forfeit over, nobody to move, reason unset.
        assert game.end is not None
        final = _replay_duel(record, len(moves))
        expected = final.view(seat)
        if record["Ending"] not in RULE_ENDINGS:
            winner = {"1-0": 0, "0-1": 1}.get(record["Result"])
            expected |= {"to_move": None, "legal_actions": set(), "over": True}
            expected |= {"winner": winner, "reason": 0}
        assert wire_view(game.end.view) == expected
        assert list(game.end.deck) == []  # the deal is never revealed
    assert checked > 20


def _table_records(run: Run) -> dict[tuple[tuple[str, ...], int], dict[str, Any]]:
    names = {
        r["id"]: r["name"]
        for r in run.rows("select s.id, b.name from submissions s join bots b on s.bot_id = b.id")
    }
    out = {}
    for row in run.rows("select * from games where attempt = 1"):
        seating = tuple(f"{names[i]}@1.0.0" for i in json.loads(row["seats"]))
        out[seating, row["number"]] = row
    return out


def _replay_table(row: dict[str, Any], upto: int) -> tuple[Table, list[str]]:
    layout = PackedTable(row["dealer"], row["turn_limit"], "classic", row["players"])
    unpacked = unpack(row["packed"], layout)
    model = Table(unpacked.deck, row["dealer"], row["players"], row["turn_limit"])
    for move in unpacked.moves[:upto]:
        model.play(move.action, move.seat)
    return model, [m.action for m in unpacked.moves]


def test_every_table_view_is_exactly_the_seats_share_of_the_stored_game(table: Run) -> None:
    records = _table_records(table)
    checked = 0
    for game in table.games():
        row = records[tuple(game.start.seat_names), game.start.game_number]
        seat = game.start.seat
        assert game.start.dealer == row["dealer"] and game.start.players == row["players"]
        for request in game.requests:
            assert not request.HasField("view") and request.HasField("table_view")
            view = request.table_view
            model, actions = _replay_table(row, len(view.history))
            assert list(view.history) == actions[: len(view.history)]
            assert model.to_move == seat
            assert wire_table_view(view) == model.view(seat), (game.bot, row["id"])
            assert len(view.legal_actions) == len(set(view.legal_actions))
            checked += 1
        assert game.end is not None and game.end.HasField("table_view")
        model, actions = _replay_table(row, 10**9)
        expected = model.view(seat)
        if row["end_reason"] not in RULE_ENDINGS:
            expected |= {"to_move": None, "legal_actions": set(), "over": True, "reason": 0}
            expected |= {"leader": None, "defender": None, "loser": row["loser_seat"]}
        assert wire_table_view(game.end.table_view) == expected
        assert list(game.end.deck) == []  # the deal is never revealed
    assert checked > 20


def _every_message(run: Run) -> Iterator[tuple[str, pb.RefereeMessage]]:
    for bot, entry in run.received():
        yield bot, entry.msg


def _unknown(message: Any) -> list[str]:
    """Fields of ``message`` (recursively) that bot.proto does not declare."""
    unknown = UnknownFieldSet(message)
    name = message.DESCRIPTOR.full_name
    found = [f"{name}:{unknown[i].field_number}" for i in range(len(unknown))]
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        children = value if descriptor.is_repeated else [value]
        for child in children:
            found += _unknown(child)
    return found


def test_nothing_undeclared_travels_and_no_card_outside_views(duel: Run, table: Run) -> None:
    """No field outside bot.proto (an unknown field is data a raw bot can still read); no card
    in the handshake, GameStart or Shutdown."""
    for run in (duel, table):
        for bot, message in _every_message(run):
            assert _unknown(message) == [], (bot, message)
            body = message.WhichOneof("body")
            if body in ("handshake", "game_start", "shutdown"):
                assert not CARD.findall(str(message)), (bot, message)


def test_lists_of_public_cards_do_not_betray_the_deal_order(duel: Run, table: Run) -> None:
    """Card lists whose order the rules do not fix are in one canonical order (a function of
    the set), so their order cannot tell when or from where a hidden card came."""
    views: list[Any] = []
    for game in duel.games() + table.games():
        views += [r.table_view if r.HasField("table_view") else r.view for r in game.requests]
    assert views
    for view in views:
        assert list(view.hand) == canonical(view.hand)
        if isinstance(view, pb.View):
            assert list(view.opponent_known) == canonical(view.opponent_known)
            assert list(view.own_known) == canonical(view.own_known)
        else:
            for seat_cards in view.known:
                assert list(seat_cards.cards) == canonical(seat_cards.cards)


def _numbers(message: Any) -> set[int]:
    out: set[int] = set()
    for descriptor, value in message.ListFields():
        values = value if descriptor.is_repeated else [value]
        for item in values:
            if descriptor.message_type is not None:
                out |= _numbers(item)
            elif isinstance(item, int) and not isinstance(item, bool):
                out.add(item)
    return out


def test_no_seed_reaches_a_bot_and_nothing_it_gets_seeds_the_deal(duel: Run, table: Run) -> None:
    """The tournament seed is secret (drawn, 62 bits); neither it, the series seeds nor a
    game's shuffle seed is in any message, the bot's environment or its command line; no
    number a bot receives (request ids, counts, game numbers) reproduces a deal as a seed."""
    for run in (duel, table):
        (tour,) = run.rows("select seed from tournaments")
        assert tour["seed"] >= 2**32  # drawn from 62 bits: not a guessable small number
        series = run.rows("select id, seed from series")
        secrets = {str(tour["seed"])} | {str(s["seed"]) for s in series}
        decks = {}
        for row in run.rows("select * from games"):
            layout = PackedTable(row["dealer"], row["turn_limit"], row["ruleset"], row["players"])
            decks[row["series_id"], row["number"]] = unpack(row["packed"], layout).deck
        seed_of = {s["id"]: s["seed"] for s in series}
        for (series_id, number), deck in decks.items():
            assert (
                tuple(str(c) for c in shuffled_deck(game_seed(seed_of[series_id], number))) == deck
            )
            secrets.add(game_seed(seed_of[series_id], number))
        received: set[int] = set()
        for bot, entries in run.logs.items():
            for entry in entries:
                if entry.kind == "sent":
                    continue
                blob = entry.raw.decode("latin-1")
                assert not any(s in blob for s in secrets), (bot, entry.kind)
                if entry.kind != "started":
                    received |= _numbers(entry.msg)
        all_decks = set(decks.values())
        for x in received:
            for n in range(1, 5):
                dealt = tuple(str(c) for c in shuffled_deck(f"kryt:{x}:deal:{n}"))
                assert dealt not in all_decks, x
        # the chain: series seeds follow from the secret tournament seed, not from ids a bot
        # could see (submission ids are not sent; names are).
        ids = run.rows("select id, submission_a_id, submission_b_id, seats from series")
        for s in ids:
            seats = json.loads(s["seats"]) if s["seats"] else None
            if seats:
                assert seed_of[s["id"]] == table_series_seed(tour["seed"], seats)
            else:
                assert seed_of[s["id"]] == series_seed(
                    tour["seed"], s["submission_a_id"], s["submission_b_id"]
                )


def _forfeit_details(run: Run) -> Iterator[tuple[str, set[str], set[str], set[str]]]:
    """Each GameEnd of a game lost by a spy's illegal action, at every seat: the detail, the
    offender's input cards, the offender's hand when it sent it, what the receiver may know."""
    games = run.games()
    offending: dict[tuple[tuple[str, ...], int], tuple[str, set[str]]] = {}
    for g in games:
        config = json.loads((run.tmp / g.bot / "spy.json").read_text())
        if g.sent and config.get("illegal_game") == g.start.game_number:
            last = g.requests[-1]
            view = last.table_view if last.HasField("table_view") else last.view
            offending[tuple(g.start.seat_names), g.start.game_number] = (g.sent[0], set(view.hand))
    for game in games:
        where = (tuple(game.start.seat_names), game.start.game_number)
        if where not in offending or game.end is None:
            continue
        assert game.end.reason == pb.END_REASON_ILLEGAL_ACTION
        text, hand = offending[where]
        assert text in game.end.detail
        final = game.end.table_view if game.end.HasField("table_view") else game.end.view
        public = {final.face_up} | set(final.hand) | set(final.history)
        public |= {c for h in final.history for c in CARD.findall(h)}
        if isinstance(final, pb.View):
            public |= set(final.pile) | set(final.opponent_known) | set(final.own_known)
        else:
            public |= (
                set(final.led) | set(final.discard) | {c for k in final.known for c in k.cards}
            )
        yield game.end.detail, set(CARD.findall(text)), hand, public


@pytest.mark.parametrize("table", [3], indirect=True)
def test_a_forfeit_detail_quotes_nothing_of_the_stock_or_a_third_hand(
    duel: Run, table: Run
) -> None:
    """GameEnd.detail of an illegal action goes to every seat: whatever cards it quotes are
    the offender's input, the offender's own hand, or public."""
    seen = 0
    for run in (duel, table):
        for detail, sent, hand, public in _forfeit_details(run):
            assert set(CARD.findall(detail)) <= sent | hand | public, detail
            seen += 1
    assert seen >= 2 + 3 * 2


@pytest.mark.parametrize("ruleset", ["default", "classic"])
@pytest.mark.parametrize("table", [3], indirect=True)
def test_a_forfeit_detail_quotes_no_hidden_card_of_the_offender(
    duel: Run, table: Run, ruleset: str
) -> None:
    """protocol.md: "Nothing of the opponent's hand or the stock is ever sent to a bot, except
    as the rules make it public and in GameEnd.deck after the game"; the detail is no deck."""
    run = duel if ruleset == "default" else table
    seen = 0
    for detail, sent, _hand, public in _forfeit_details(run):
        assert set(CARD.findall(detail)) <= sent | public, detail
        seen += 1
    assert seen >= 2


def test_game_end_reveals_no_card_the_rules_keep_hidden(duel: Run) -> None:
    """rules.md (Forfeits [ruling]): "Nothing of the other player's hand or the stock is
    revealed to either bot at any time except as the rules make it public"; rules-classic.md:
    "Never another player's unseen cards or the stock order". The rules make public what the
    final view holds; GameEnd.deck (docs/protocol.md: "revealed after the game") adds the rest."""
    for game in duel.games():
        assert game.end is not None
        final = game.end.view
        public = set(final.hand) | set(final.pile) | set(final.opponent_known)
        public |= set(CARD.findall(" ".join(final.history))) | {final.face_up, final.final_cover}
        assert set(game.end.deck) <= public, (game.bot, game.start.game_number)


@pytest.fixture(scope="module")
def duplicate(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("duplicate")
    return tournament(tmp, {"a": {}, "b": {}}, "--games", "2", "--format", "duplicate")


def _initial_hand(deck: Sequence[str], dealer: int, seat: int) -> set[str]:
    return set(deck[0:6:2] if seat != dealer else deck[1:6:2])


def test_no_game_is_dealt_from_a_deck_a_bot_was_already_sent(duplicate: Run) -> None:
    """Game 2 of a duplicate pair is game 1's deal with the dealer swapped: each bot held
    the other's game-2 hand in game 1. It is played by fresh processes (nothing is carried
    over: the sandbox keeps nothing between starts), and no GameEnd reveals the deal."""
    games = sorted(duplicate.games(), key=lambda g: g.start.game_number)
    assert {g.start.game_number for g in games} == {1, 2}
    for game in games:
        assert game.end is not None and game.requests
        assert list(game.end.deck) == []
    for bot in {g.bot for g in games}:
        first, second = (g for g in games if g.bot == bot)
        assert first.pid != second.pid, f"{bot} played both games of the pair in one process"


# --- a void is replayed with the same deal ----------------------------------------------------


class Spy:
    """An in-process player (the referee's own player interface) that keeps every message."""

    def __init__(self, name: str, log: list[tuple[str, object]]) -> None:
        self.name = name
        self.log = log

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        self.log.append((self.name, handshake))
        return HandshakeReply(1, self.name, "1", "spy", ("default", "classic"))

    def send(self, message: RefereeMessage) -> None:
        self.log.append((self.name, message))

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        self.log.append((self.name, view))
        return Reply(action=view.legal_actions[-1], elapsed=0.001, request_id=1)

    def close(self) -> None:
        pass


@pytest.mark.parametrize("players", [2, 3])
def test_a_void_replay_is_played_by_bots_that_never_saw_its_deal(players: int) -> None:
    """rules.md/docs: a void "is replayed with the same deal and the same dealer". A failure
    to record the game (ours) voids it after the bots played it and took its GameEnd: the
    replay is played by fresh players (every slot that can forget does), and no GameEnd
    revealed the deal."""
    names = [f"s{i}" for i in range(players)]
    spies: dict[str, list[tuple[Spy, list[tuple[str, object]]]]] = {n: [] for n in names}

    def make(name: str) -> Spy:
        own: list[tuple[str, object]] = []
        spy = Spy(name, own)
        spies[name].append((spy, own))
        return spy

    slots = [ForgetfulSlot(partial(make, n), n) for n in names]
    config = SeriesConfig(
        games=1,
        seed="void-review",
        format=SeriesFormat.STANDARD,
        time_control=TimeControl(move_ms=5000, bank_ms=5000),
        ruleset="classic" if players > 2 else "default",
        players=players,
    )
    attempts: list[int] = []

    def flaky(number: int, attempt: int, record: GameRecord) -> None:
        attempts.append(attempt)
        if attempt == 1:
            raise OSError("disk full")

    if players == 2:
        run_series(config, (slots[0], slots[1]), recorder=flaky)
    else:
        run_table_series(config, slots, recorder=flaky)
    assert attempts == [1, 2]
    for name in names:
        assert len(spies[name]) == 2, name  # the replay's player is a fresh one
        for _spy, own in spies[name]:
            ends = [m for _, m in own if isinstance(m, GameEnd)]
            assert len(ends) == 1 and ends[0].deck == (), name
            assert isinstance(own[0][1], Handshake)  # each handshaken anew


class ForgetfulSlot(PlayerSlot):
    """An in-process seat that forgets as the arena's sandbox seats do: the next game on a
    fresh player."""

    def forget(self) -> None:
        self.failed()
