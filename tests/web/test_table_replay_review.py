"""An outside review of the replay viewer and ``/api/games/{id}`` at the classic table (3 and
4 seats), on the live site and in the static export (``kryt leaderboard --html``).

The games are played for real: small classic tournaments run through ``kryt tournament run``
(``--ruleset classic --table-size 3|4``) with the bundled example bots (``builtin:greedy``,
``builtin:random``, ``builtin:mc``) and one hostile folder bot, whose ``bot.toml`` description
is markup and which forfeits at some tables with a malformed reply made of markup, or by
crashing after printing markup. Two more table games are recorded through
``arena.db.record_game`` for submissions whose versions are markup (``arena.db.submit`` takes
any text there): one reaching the turn limit with a seat already out, one forfeited.

Every stored game is rebuilt here from its stored record (``arena.db.stored_record``) twice,
independently of ``leaderboard.web``: by a small tracker written from rules-classic.md (deal,
lead, cover, take, drawing one card at a time leader first, who is out, the next leader and
defender, the end and the result) and by the public rules API (``referee.rules.ClassicGame``
and its per-seat ``view()``); the two must agree. ``/api/games/{id}`` must serve exactly that
truth, and the viewer in headless Chromium, stepped with Next through every step of every
game, must draw it in every view it offers (every hand revealed, and each seat's view): each
hand's faces and backs, the public cards, the table, stock, discard, face-up card, trump, the
roles (leader, defender, to move, out), the action line and the result. A seat's view must
not name another seat's unseen card, a card drawn by another seat or a stock card anywhere in
the drawn board; the view with every hand revealed must not name a stock card.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from arena.db import (
    Database,
    GamePlace,
    NewSubmission,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    games_of_series,
    list_tournaments,
    open_database,
    record_game,
    series_of_tournament,
    stored_record,
    submission_labels,
    submit,
)
from leaderboard.web import create_app
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import ClassicEndReason, ClassicGame, shuffled_deck
from tests.web.test_browser import chromium_session
from tests.webserver import served

pytestmark = pytest.mark.timeout(900)

ROOT = Path(__file__).resolve().parents[2]
RANKS = "6789TJQKA"
SUITS = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}

# ------------------------------------------------------------------------------ hostile text

DESCRIPTION = (
    "<script>window.__pwned='desc'</script> <img src=x onerror=\"window.__pwned='desc-img'\">"
    " </title><b id=injected>bold</b> &amp;lt;not a tag&gt;"
)
REPLY = "<img src=x onerror=\"window.__pwned='reply'\">"
STDERR = "<script>window.__pwned='stderr'</script><b id=injected>x</b>"
VERSION_A = "</script><script>window.__pwned='v1'</script>"
VERSION_B = "\"><img src=x onerror=window.__pwned='v2'><b id=injected>"
DETAIL = "</script><script>window.__pwned='detail'</script><b id=injected>d</b>"
INPUT = "<svg onload=\"window.__pwned='input'\"></svg>"
HOSTILE_TEXTS = (DESCRIPTION, REPLY, STDERR, VERSION_A, VERSION_B, DETAIL, INPUT)

HOSTILE_TOML = f"""name = "hostile"
version = "1.0.0"
language = "python"
entry = "bot.py"
description = {json.dumps(DESCRIPTION)}
"""

# At a table of 3: game 2 of a series is forfeited by a malformed reply of markup, game 3 by
# a crash after printing markup; at a table of 4 it forfeits game 1 by the malformed reply when
# it sits at seat 1. Otherwise a seeded random legal action.
HOSTILE_BOT = f"""
import os
import random
import sys
from typing import ClassVar

from sdk import Bot, serve


class Hostile(Bot):
    rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

    def act(self, view):
        return view.legal_actions[0]

    def act_table(self, view):
        number = self.context.game_number if self.context is not None else 0
        late = len(view.history) >= 4
        if late and view.players == 3 and number == 2:
            return {REPLY!r}
        if late and view.players == 3 and number == 3:
            sys.stderr.write({STDERR!r} + "\\n")
            sys.stderr.flush()
            os._exit(3)
        if view.players == 4 and view.seat == 1 and len(view.history) >= 6:
            return {REPLY!r}
        rng = random.Random(f"{{number}}/{{len(view.history)}}/{{view.seat}}")
        return rng.choice(view.legal_actions)


if __name__ == "__main__":
    serve(Hostile())
"""


# ------------------------------------------------------------------------------ the world


@dataclass
class StoredGame:
    """One stored table game as ``arena.db`` returns it (not the web code)."""

    id: int
    tournament: str
    series_id: int
    number: int
    attempt: int
    seats: int
    labels: list[tuple[str, str]]
    deck: list[str]
    dealer: int
    turn_limit: int
    moves: list[tuple[int, str, float]]
    ending: str
    loser: int | None
    pairwise: list[tuple[int, int]]
    forfeit: tuple[int, str, str, str] | None  # seat, reason, offending input, detail
    voided: bool


@dataclass
class World:
    db_url: str
    export_dir: str
    runs: dict[str, str] = field(default_factory=dict)
    games: list[StoredGame] = field(default_factory=list)

    def of(self, tournament: str) -> list[StoredGame]:
        return [g for g in self.games if g.tournament == tournament]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONDONTWRITEBYTECODE="1", COLUMNS="250", NO_COLOR="1", PYTHONPATH=str(ROOT))
    env.pop("KRYT_DATABASE_URL", None)
    return env


def _kryt(*args: str, cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kryt", *args],
        cwd=cwd,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"kryt {' '.join(args)}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _play_classic(
    seed: int, dealer: int, players: int, *, turn_limit: int = 1000, stop_after: int | None = None
) -> tuple[list[str], list[Move], ClassicGame]:
    deck = [str(c) for c in shuffled_deck(seed)]
    game = ClassicGame.from_deck(deck, dealer, players=players, turn_limit=turn_limit)
    rng = random.Random(seed)
    moves: list[Move] = []
    while not game.over and (stop_after is None or len(moves) < stop_after):
        seat = game.to_move
        assert seat is not None
        action = game.play(rng.choice(game.legal_actions()))
        moves.append(Move(seat, str(action), round(0.0625 * (len(moves) % 7) + 0.125, 4)))
    return deck, moves, game


def _record_hostile_versions(db: Database, greedy_id: int) -> None:
    """A table of 3 of submissions with markup versions: a turn-limit game with a seat out
    and a crash forfeit with markup detail and input."""
    with db.session() as s:
        ids = []
        for name, version in (("xa", VERSION_A), ("xb", VERSION_B)):
            row = submit(
                NewSubmission(
                    bot_name=name,
                    version=version,
                    sha256=(name.encode().hex() * 32)[:64],
                    submitted_by="reviewer",
                    manifest={"name": name, "description": DESCRIPTION},
                ),
                session=s,
            ).submission
            assert row.id is not None
            ids.append(row.id)
    seats = (ids[0], ids[1], greedy_id)
    with db.session() as s:
        tournament = create_tournament(
            TournamentSpec(
                "hostile versions",
                99,
                config={"ruleset": "classic", "table_size": 3},
                series=[SeriesSpec(seats[0], seats[1], 2, 99, ruleset="classic", seats=seats)],
            ),
            session=s,
        )
        assert tournament.id is not None
        (series,) = series_of_tournament(tournament.id, session=s)
        assert series.id is not None
    # A turn-limit game cut just after a seat went out.
    for seed in range(500, 900):
        deck, moves, game = _play_classic(seed, seed % 3, 3)
        probe = ClassicGame.from_deck(deck, seed % 3, players=3)
        cut = None
        for i, move in enumerate(moves, start=1):
            probe.play(move.action)
            if any(probe.out) and not probe.over:
                cut = i
                break
        if cut is not None:
            dealer, limit = seed % 3, cut + 2
            break
    else:  # pragma: no cover
        raise AssertionError("no game with a seat out before its end")
    deck, moves, game = _play_classic(seed, dealer, 3, turn_limit=limit)
    assert game.reason is ClassicEndReason.TURN_LIMIT and any(game.out)
    records = [
        GameRecord(
            deck=tuple(deck), dealer=dealer, turn_limit=limit, moves=tuple(moves),
            ending=GameEndReason.TURN_LIMIT, winner=None, referee_version="review 1",
            players=("xa", "xb", "greedy"), started=1.78e9, finished=1.78e9 + 2,
            ruleset="classic", seats=3, loser=None, pairwise=game.pairwise_results(),
        )
    ]  # fmt: skip
    deck, moves, game = _play_classic(4321, 1, 3, stop_after=9)
    offender = game.to_move
    assert offender is not None and not game.over
    records.append(
        GameRecord(
            deck=tuple(deck), dealer=1, turn_limit=1000, moves=tuple(moves),
            ending=GameEndReason.CRASH, winner=None,
            forfeit=Forfeit(offender, GameEndReason.CRASH, INPUT, DETAIL),
            referee_version="review 1", players=("xa", "xb", "greedy"), started=1.78e9 + 10,
            finished=1.78e9 + 12, ruleset="classic", seats=3, loser=offender,
            pairwise=tuple((s, offender) for s in range(3) if s != offender),
        )
    )  # fmt: skip
    for number, record in enumerate(records, start=1):
        with db.session() as s:
            record_game(record, GamePlace(series.id, number, 1, seats), session=s)


def _read_games(db: Database, names: dict[int, str]) -> list[StoredGame]:
    found = []
    with db.read_session() as s:
        labels = submission_labels(session=s)
        for tournament in list_tournaments(session=s):
            assert tournament.id is not None
            for series in series_of_tournament(tournament.id, session=s):
                assert series.id is not None
                for game in games_of_series(series.id, session=s):
                    assert game.id is not None
                    record = stored_record(game)
                    forfeit = record.forfeit
                    found.append(
                        StoredGame(
                            id=game.id,
                            tournament=names[tournament.id],
                            series_id=series.id,
                            number=game.number,
                            attempt=game.attempt,
                            seats=record.seats,
                            labels=[labels[sid] for sid in game.seat_ids],
                            deck=list(record.deck),
                            dealer=record.dealer,
                            turn_limit=record.turn_limit,
                            moves=[(m.seat, m.action, m.seconds) for m in record.moves],
                            ending=record.ending.value,
                            loser=record.loser,
                            pairwise=[(a, b) for a, b in record.pairwise],
                            forfeit=None
                            if forfeit is None
                            else (
                                forfeit.seat,
                                forfeit.reason.value,
                                forfeit.offending_input,
                                forfeit.detail,
                            ),
                            voided=game.voided,
                        )
                    )
    return sorted(found, key=lambda g: g.id)


def _build(folder: Path) -> World:
    db_path = folder / "kryt.db"
    store = folder / "store"
    bot = folder / "hostile"
    bot.mkdir()
    (bot / "bot.toml").write_text(HOSTILE_TOML)
    (bot / "bot.py").write_text(HOSTILE_BOT)
    common = ["-d", str(db_path), "--store", str(store), "--backend", "process", "--unsafe"]
    world = World(f"sqlite:///{db_path}", str(folder / "export"))
    runs = [
        ("three", ["builtin:greedy", "builtin:random", str(bot)], ["-n", "4", "--seed", "7"]),
        (
            "four",
            ["builtin:greedy", "builtin:random", "builtin:mc", str(bot)],
            ["-n", "1", "--seed", "11", "--time", "mc=0.3+6"],
        ),
        (
            "three-limit",
            ["builtin:greedy", "builtin:random", str(bot)],
            ["-n", "1", "--seed", "3", "--turn-limit", "36"],
        ),
    ]
    for key, bots, extra in runs:
        size = "4" if key == "four" else "3"
        world.runs[key] = _kryt(
            "tournament", "run", *bots, "--ruleset", "classic", "--table-size", size,
            "--name", key, "-j", "2", *extra, *common, cwd=folder,
        )  # fmt: skip
    db = open_database(world.db_url, create=False)
    try:
        with db.read_session() as s:
            greedy = next(
                sid for sid, (name, _) in submission_labels(session=s).items() if name == "greedy"
            )
        _record_hostile_versions(db, greedy)
        with db.read_session() as s:
            names = {t.id or 0: t.name for t in list_tournaments(session=s)}
        world.games = _read_games(db, names)
    finally:
        db.close()
    world.runs["export"] = _kryt(
        "leaderboard", "--html", world.export_dir, "-d", str(db_path), cwd=folder
    )
    return world


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> World:
    """Built once, shared by the xdist workers (a lock file in their common folder)."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if worker_id != "master" else base) / "table-replay-world"
    shared.mkdir(exist_ok=True)
    done = shared / "world.json"
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not done.exists():
                built = _build(shared)
                done.write_text(json.dumps(asdict(built)))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    raw = json.loads(done.read_text())
    games = [
        StoredGame(
            **{
                **g,
                "labels": [tuple(x) for x in g["labels"]],
                "moves": [tuple(m) for m in g["moves"]],
                "pairwise": [tuple(p) for p in g["pairwise"]],
                "forfeit": None if g["forfeit"] is None else tuple(g["forfeit"]),
            }
        )
        for g in raw["games"]
    ]
    return World(raw["db_url"], raw["export_dir"], raw["runs"], games)


@pytest.fixture(scope="module")
def database(world: World) -> Iterator[Database]:
    db = open_database(world.db_url, create=False)
    try:
        yield db
    finally:
        db.close()


@pytest.fixture(scope="module")
def api(database: Database) -> Iterator[TestClient]:
    with TestClient(create_app(database)) as client:
        yield client


# ------------------------------------------------------------------------------ the truth


def _beats(cover: str, led: str, trump: str) -> bool:
    if cover[1] == led[1]:
        return RANKS.index(cover[0]) > RANKS.index(led[0])
    return cover[1] == trump and led[1] != trump


class Table:
    """rules-classic.md, restated independently of ``referee.rules``."""

    def __init__(self, deck: list[str], dealer: int, n: int, turn_limit: int) -> None:
        assert len(set(deck)) == 36
        self.n, self.turn_limit = n, turn_limit
        self.hands: list[set[str]] = [set() for _ in range(n)]
        for i in range(3 * n):
            self.hands[(dealer + 1 + i) % n].add(deck[i])
        self.face_up_card = deck[3 * n]
        self.trump = self.face_up_card[1]
        self.stock = [*deck[3 * n + 1 :], self.face_up_card]  # draw order
        self.known: list[set[str]] = [set() for _ in range(n)]
        self.out = [False] * n
        self.discard: list[str] = []
        self.led: list[str] = []
        self.covered: list[str] = []
        self.leader, self.defender = (dealer + 1) % n, (dealer + 2) % n
        self.over = False
        self.loser: int | None = None
        self.reason: str | None = None
        self.actions = 0
        self.drawn: dict[int, list[str]] = {}

    @property
    def to_move(self) -> int | None:
        if self.over:
            return None
        return self.defender if self.led else self.leader

    def _draw(self, seat: int) -> None:
        card = self.stock.pop(0)
        self.hands[seat].add(card)
        self.drawn.setdefault(seat, []).append(card)
        if not self.stock:  # the face-up card: everyone sees who draws it
            self.known[seat].add(card)

    def _next_playing(self, start: int) -> int:
        for k in range(self.n):
            if not self.out[(start + k) % self.n]:
                return (start + k) % self.n
        raise AssertionError("nobody plays")

    def play(self, seat: int, action: str) -> None:
        assert not self.over and seat == self.to_move, f"{action!r} by seat {seat}"
        self.drawn, self.covered = {}, []
        words = action.split()
        leader, defender = self.leader, self.defender
        if words[0] == "lead":
            cards = words[1:]
            assert not self.led and cards and len({c[0] for c in cards}) == 1
            assert cards == sorted(cards, key=lambda c: "CDHS".index(c[1])), action
            assert set(cards) <= self.hands[leader] and len(cards) <= len(self.hands[defender])
            self.hands[leader] -= set(cards)
            self.known[leader] -= set(cards)
            self.led = cards
        else:
            assert self.led, action
            led, self.led = self.led, []
            if words[0] == "cover":
                pairs = [tuple(p.split(":")) for p in words[1:]]
                assert [a for a, _ in pairs] == led, action
                covers = [b for _, b in pairs]
                assert len(set(covers)) == len(covers) and set(covers) <= self.hands[defender]
                assert all(_beats(b, a, self.trump) for a, b in pairs), action
                self.hands[defender] -= set(covers)
                self.known[defender] -= set(covers)
                self.covered = [c for pair in pairs for c in pair]
                self.discard += self.covered
                while self.stock and (len(self.hands[leader]) < 3 or len(self.hands[defender]) < 3):
                    for s in (leader, defender):
                        if self.stock and len(self.hands[s]) < 3:
                            self._draw(s)
                next_from = defender
            else:
                assert words == ["take"], action
                self.hands[defender] |= set(led)
                self.known[defender] |= set(led)
                while self.stock and len(self.hands[leader]) < 3:
                    self._draw(leader)
                next_from = defender + 1
            if not self.stock:
                for s in (leader, defender):
                    if not self.hands[s]:
                        self.out[s] = True
            holding = [s for s in range(self.n) if self.hands[s]]
            if not self.stock and len(holding) <= 1:
                self.actions += 1
                self.over = True
                self.loser = holding[0] if holding else None
                self.reason = "last holder" if holding else "all out"
                return
            self.leader = self._next_playing(next_from)
            self.defender = self._next_playing(self.leader + 1)
        self.actions += 1
        if self.actions >= self.turn_limit:
            self.over, self.loser, self.reason = True, None, "turn limit"

    def pairwise(self) -> list[tuple[int, int]]:
        if not self.over:
            return []
        if self.loser is not None:
            return [(s, self.loser) for s in range(self.n) if s != self.loser]
        if self.reason == "turn limit":
            return [
                (w, x)
                for w in range(self.n)
                for x in range(self.n)
                if self.out[w] and not self.out[x]
            ]
        return []

    def snap(self, seat: int | None, action: str | None, seconds: float | None) -> dict[str, Any]:
        face_up = self.stock[-1] if self.stock else None
        return {
            "seat": seat,
            "action": action,
            "seconds": seconds,
            "hands": [sorted(h) for h in self.hands],
            "known": [sorted(k) for k in self.known],
            "out": list(self.out),
            "led": list(self.led),
            "covered": list(self.covered),
            "discard": len(self.discard),
            "stock": len(self.stock),
            "face_up": face_up,
            "leader": None if self.over else self.leader,
            "defender": None if self.over else self.defender,
            "to_move": self.to_move,
            "over": self.over,
            "stock_cards": sorted(c for c in self.stock if c != face_up),
            "drawn": {s: list(c) for s, c in self.drawn.items()},
        }


def truth(g: StoredGame) -> tuple[list[dict[str, Any]], Table]:
    """Every step of a stored game by :class:`Table` (step 0 the deal)."""
    table = Table(g.deck, g.dealer, g.seats, max(g.turn_limit, len(g.moves), 1))
    states = [table.snap(None, None, None)]
    for seat, action, seconds in g.moves:
        table.play(seat, action)
        states.append(table.snap(seat, action, seconds))
    return states, table


def engine_states(g: StoredGame) -> list[dict[str, Any]]:
    """The same steps by the public rules API: ``ClassicGame.play`` and per-seat ``view``."""
    limit = max(g.turn_limit, len(g.moves), 1)
    game = ClassicGame.from_deck(g.deck, g.dealer, players=g.seats, turn_limit=limit)

    def snap(seat: int | None, action: str | None) -> dict[str, Any]:
        views = [game.view(s) for s in range(g.seats)]
        v = views[0]
        for other in views:  # public facts are the same in every seat's view
            assert (other.known, other.out, other.led, other.discard, other.stock_count) == (
                v.known, v.out, v.led, v.discard, v.stock_count,
            )  # fmt: skip
            assert other.hand_sizes == tuple(len(x.hand) for x in views)
        return {
            "seat": seat,
            "action": action,
            "hands": [sorted(str(c) for c in x.hand) for x in views],
            "known": [sorted(str(c) for c in k) for k in v.known],
            "out": list(v.out),
            "led": [str(c) for c in v.led],
            "discard": len(v.discard),
            "stock": v.stock_count,
            "face_up": None if v.face_up is None else str(v.face_up),
            "leader": v.leader,
            "defender": v.defender,
            "to_move": v.to_move,
            "over": v.over,
        }

    states = [snap(None, None)]
    for seat, action, _ in g.moves:
        assert game.to_move == seat
        game.play(action)
        states.append(snap(seat, action))
    return states


def _label(g: StoredGame, seat: int) -> str:
    return f"{g.labels[seat][0]} {g.labels[seat][1]}"


def result_text(g: StoredGame, table: Table) -> str:
    """What rules-classic.md makes of the game, in the words of the game page."""
    if g.voided:
        return "voided"
    if g.forfeit is not None:
        return f"{_label(g, g.forfeit[0])} lost"
    assert table.over and table.reason == g.ending, f"game {g.id}: {table.reason} != {g.ending}"
    if table.loser is not None:
        return f"{_label(g, table.loser)} lost"
    losers = sorted({x for _, x in table.pairwise()})
    if losers:
        return "turn limit: " + ", ".join(f"{_label(g, x)} lost" for x in losers)
    return "draw"


def final_text(g: StoredGame, table: Table) -> str:
    text = f"Result: {result_text(g, table)} ({g.ending})"
    if g.forfeit is not None:
        text += f" — seat {g.forfeit[0]} forfeited"
    return text


def _pretty(code: str) -> str:
    return ("10" if code[0] == "T" else code[0]) + SUITS[code[1]]


def _seconds(value: float) -> str:
    """JavaScript's ``toFixed(3)`` of a positive number (exact value, ties up)."""
    return str(Decimal(value).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))


def player_name(g: StoredGame, seat: int) -> str:
    return f"seat {seat} · {_label(g, seat)}" + (" (dealer)" if seat == g.dealer else "")


def action_line(g: StoredGame, state: dict[str, Any], first: dict[str, Any]) -> str:
    if state["action"] is None:
        return f"The deal: seat {first['leader']} leads to seat {first['defender']}."
    pretty = re.sub(r"\b[6-9TJQKA][CDHS]\b", lambda m: _pretty(m.group()), state["action"])
    return f"{player_name(g, state['seat'])}: {pretty} — {_seconds(state['seconds'])} s"


def visible(state: dict[str, Any], seat: int, view: str) -> tuple[list[str], int]:
    """The faces a view may show of ``seat``'s hand, and how many backs."""
    hand = state["hands"][seat]
    if view in ("all", str(seat)):
        return sorted(hand), 0
    faces = sorted(c for c in hand if c in state["known"][seat])
    return faces, len(hand) - len(faces)


def hidden_from(state: dict[str, Any], view: str, seats: int) -> set[str]:
    """Cards the view may not name: the stock (face-up card apart) and, in a seat's view,
    the others' cards nobody saw go to their hands (among them what they just drew)."""
    hidden = set(state["stock_cards"])
    if view != "all":
        for s in range(seats):
            if str(s) != view:
                hidden |= set(state["hands"][s]) - set(state["known"][s])
    return hidden


# ------------------------------------------------------------------------------ the games


def test_world_holds_the_table_games_played(world: World) -> None:
    """The tournaments ran and stored what they should, and each game's record is consistent
    with rules-classic.md as the tracker reads it."""
    three, four, limit, hostile = (
        world.of(k) for k in ("three", "four", "three-limit", "hostile versions")
    )
    # 3 entrants at tables of 3: one set, 2 seating orders; 4 at tables of 4: 6 orders.
    assert {g.seats for g in three + limit + hostile} == {3} and {g.seats for g in four} == {4}
    assert len([g for g in three if not g.voided]) == 2 * 4
    assert len([g for g in four if not g.voided]) == 6
    assert len([g for g in limit if not g.voided]) == 2 and len(hostile) == 2
    endings = {g.ending for g in world.games}
    assert {"last holder", "malformed reply", "crash", "turn limit"} <= endings, endings
    assert any(g.forfeit is not None for g in four), "no forfeit at a table of 4"
    for g in world.games:
        states, table = truth(g)
        if g.voided:
            continue
        if g.forfeit is None:
            assert table.over and table.reason == g.ending, f"game {g.id}"
            assert g.loser == table.loser, f"game {g.id}: loser {g.loser} != {table.loser}"
            assert sorted(g.pairwise) == sorted(table.pairwise()), f"game {g.id}"
        else:
            assert not table.over and g.forfeit[0] == table.to_move == g.loser, f"game {g.id}"
            assert sorted(g.pairwise) == [(s, g.loser) for s in range(g.seats) if s != g.loser]
        assert len(states) == len(g.moves) + 1


def test_rules_engine_agrees_with_the_rules_page(world: World) -> None:
    """The public rules API and the tracker written from rules-classic.md give the same state
    after every step of every stored game (so either is the truth below)."""
    problems = []
    for g in world.games:
        mine, _ = truth(g)
        theirs = engine_states(g)
        for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            for name, value in b.items():
                if a[name] != value:
                    problems.append(f"game {g.id} step {k}: {name} {a[name]!r} != {value!r}")
    assert not problems, problems[:10]


def test_dealer_follows_the_loser(world: World) -> None:
    """[ruling] After the first game of a series the loser deals; after a draw the same dealer
    deals again; a forfeit makes the offender the loser. The page's ``(dealer)`` shows it."""
    by_series: dict[int, list[StoredGame]] = {}
    for g in world.games:
        if not g.voided and g.tournament != "hostile versions":
            by_series.setdefault(g.series_id, []).append(g)
    assert by_series
    for games in by_series.values():
        games.sort(key=lambda x: x.number)
        for before, after in pairwise(games):
            want = before.dealer if before.loser is None else before.loser
            assert after.dealer == want, f"game {after.id}: dealer {after.dealer}, want {want}"


# ------------------------------------------------------------------------------ the API

STEP_FIELDS = (
    "seat",
    "action",
    "out",
    "led",
    "covered",
    "discard",
    "stock",
    "face_up",
    "leader",
    "defender",
    "to_move",
    "over",
)


def test_api_games_serve_the_rebuilt_truth(world: World, api: TestClient) -> None:
    problems: list[str] = []
    for g in world.games:
        states, table = truth(g)
        response = api.get(f"/api/games/{g.id}")
        assert response.status_code == 200, f"game {g.id}: {response.status_code}"
        data = response.json()
        where = f"game {g.id} ({g.tournament})"
        top = {
            "ruleset": "classic",
            "seats": g.seats,
            "dealer": g.dealer,
            "first_mover": (g.dealer + 1) % g.seats,
            "deck": g.deck,
            "end_reason": g.ending,
            "result_text": result_text(g, table),
            "voided": g.voided,
            "loser_seat": g.loser,
            "final_cover": None,
        }
        for name, want in top.items():
            if data[name] != want:
                problems.append(f"{where}: {name} {data[name]!r} != {want!r}")
        if sorted(map(tuple, data["pairwise"] or [])) != sorted(g.pairwise):
            problems.append(f"{where}: pairwise {data['pairwise']} != {g.pairwise}")
        players = [(p["seat"], p["bot"], p["version"]) for p in data["players"]]
        if players != [(s, *g.labels[s]) for s in range(g.seats)]:
            problems.append(f"{where}: players {players}")
        if g.forfeit is None:
            if data["forfeit"] is not None:
                problems.append(f"{where}: forfeit {data['forfeit']}")
        else:
            f = data["forfeit"]
            got = (f["seat"], f["reason"], f["offending_input"] or "", f["detail"] or "")
            if got != g.forfeit:
                problems.append(f"{where}: forfeit {got!r} != {g.forfeit!r}")
        if [(a["seat"], a["action"]) for a in data["actions"]] != [(s, a) for s, a, _ in g.moves]:
            problems.append(f"{where}: actions")
        replay = data["replay"]
        want_replay = {
            "table": True,
            "players": g.seats,
            "dealer": g.dealer,
            "trump": table.trump,
            "error": None,
            "rules_loser": table.loser if table.over else None,
            "rules_reason": table.reason if table.over else None,
        }
        for name, want in want_replay.items():
            if replay.get(name) != want:
                problems.append(f"{where}: replay.{name} {replay.get(name)!r} != {want!r}")
        steps = replay["steps"]
        if len(steps) != len(states):
            problems.append(f"{where}: {len(steps)} steps, expected {len(states)}")
            continue
        for k, (got_step, want_step) in enumerate(zip(steps, states, strict=True)):
            if got_step["index"] != k:
                problems.append(f"{where} step {k}: index {got_step['index']}")
            for name in STEP_FIELDS:
                if got_step[name] != want_step[name]:
                    problems.append(
                        f"{where} step {k}: {name} {got_step[name]!r} != {want_step[name]!r}"
                    )
            if got_step["seconds"] != want_step["seconds"]:
                problems.append(f"{where} step {k}: seconds {got_step['seconds']!r}")
            for name in ("hands", "known"):
                if [sorted(x) for x in got_step[name]] != want_step[name]:
                    problems.append(f"{where} step {k}: {name} {got_step[name]}")
            # A card is public only if everyone saw it go to that hand.
            for s in range(g.seats):
                if not set(got_step["known"][s]) <= set(got_step["hands"][s]):
                    problems.append(f"{where} step {k}: seat {s} known outside the hand")
    assert not problems, f"{len(problems)} problems: {problems[:12]}"


def test_game_page_embeds_the_api_document(world: World, api: TestClient) -> None:
    """The live page's embedded data is the API's document (so the checks above hold for
    what the viewer reads), and the move list lists the stored actions."""
    for g in world.games:
        page = api.get(f"/games/{g.id}").text
        embedded = json.loads(page.split('id="replay-data">', 1)[1].split("</script>", 1)[0])
        assert embedded == api.get(f"/api/games/{g.id}").json(), f"game {g.id}"


class _Rows(HTMLParser):
    """The cells' texts of ``table.games``'s body rows."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.depth = 0
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tbody":
            self.depth += 1
        elif tag == "tr" and self.depth:
            self.rows.append([])
        elif tag == "td" and self.depth:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self.depth -= 1
        elif tag == "td" and self.cell is not None:
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def test_series_pages_list_the_table_games(world: World, api: TestClient) -> None:
    """Each series page lists its table games with every seat, the dealer, the result as the
    rules make it, the reason and the number of moves."""
    for series_id in sorted({g.series_id for g in world.games}):
        games = sorted((g for g in world.games if g.series_id == series_id), key=lambda g: g.id)
        parser = _Rows()
        parser.feed(api.get(f"/series/{series_id}").text)
        got = [row[:-1] for row in parser.rows]  # the finish time apart
        want = []
        for g in games:
            _, table = truth(g)
            reason = g.ending + ("" if g.forfeit is None else f" (seat {g.forfeit[0]})")
            want.append(
                [f"#{g.id}", str(series_id), str(g.number), *(_label(g, s) for s in range(g.seats)),
                 str(g.dealer), result_text(g, table), reason, str(len(g.moves))]
            )  # fmt: skip
        assert got == want, f"series {series_id}: {got} != {want}"


# ------------------------------------------------------------------------------ the browser


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with chromium_session(page_load_timeout=120) as browser:
        yield browser


@pytest.fixture(scope="module")
def server(database: Database) -> Iterator[str]:
    with served(create_app(database)) as url:
        yield url


def _wait(driver: Any, condition: Any, timeout: float = 60) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


# Reads the drawn board in every view the page offers (through the choice's own change event)
# and puts the view back. Everything comes from the DOM: data-card attributes and texts.
SNAPSHOT_JS = """
var sel = document.getElementById('view-select');
var original = sel.value;
var board = document.getElementById('replay');
function cards(el) {
  return Array.prototype.map.call(el.querySelectorAll('.card'),
    function (c) { return c.getAttribute('data-card'); });
}
function text(id) { var el = document.getElementById(id); return el ? el.textContent : null; }
function drawn() {
  var seats = [];
  board.querySelectorAll('.seat-row').forEach(function (row) {
    var s = row.getAttribute('data-seat');
    var hand = document.getElementById('seat-' + s + '-hand');
    seats.push({seat: Number(s), name: text('seat-' + s + '-name'), hand: cards(hand),
                count: hand.getAttribute('data-count'),
                current: row.classList.contains('current')});
  });
  var words = [];
  board.querySelectorAll('*').forEach(function (el) {
    for (var i = 0; i < el.attributes.length; i++) words.push(el.attributes[i].value);
  });
  words.push(board.textContent, document.title);
  for (var i = 0; i < document.body.attributes.length; i++) {
    var a = document.body.attributes[i];
    if (a.name !== 'data-step') words.push(a.name + '=' + a.value);
  }
  var err = document.getElementById('replay-error');
  if (err) words.push(err.textContent);
  var marked = function (cls) {
    return Array.prototype.map.call(board.querySelectorAll('.card.' + cls),
      function (c) { return c.getAttribute('data-card'); });
  };
  var led = document.getElementById('led');
  var face = document.querySelector('#face-up .card');
  var fin = document.getElementById('final');
  return {
    seats: seats, table: cards(led), table_attr: led.getAttribute('data-cards'),
    table_text: led.textContent,
    stock: text('stock-count'), discard: text('discard-count'),
    face_up: face ? face.getAttribute('data-card') : text('face-up'),
    trump: text('trump'), label: text('step-label'), action: text('action-line'),
    final_hidden: fin.hidden, final: fin.textContent,
    known: marked('known'), trumps: marked('trump'), words: words.join('\\n'),
    body_step: document.body.getAttribute('data-step'),
    next_disabled: document.getElementById('btn-next').disabled,
    prev_disabled: document.getElementById('btn-prev').disabled
  };
}
var out = {};
Array.prototype.forEach.call(sel.options, function (o) {
  sel.value = o.value;
  sel.dispatchEvent(new Event('change'));
  out[o.value] = drawn();
});
sel.value = original;
sel.dispatchEvent(new Event('change'));
return out;
"""

MOVES_JS = (
    "return Array.prototype.map.call(document.querySelectorAll('#moves tbody tr'),"
    " function (r) { return Array.prototype.map.call(r.cells,"
    " function (c) { return c.textContent.trim(); }); });"
)


def _names_card(words: str, code: str) -> bool:
    return bool(re.search(rf"(?<![0-9A-Za-z]){code}(?![0-9A-Za-z])", words)) or (
        _pretty(code) in words
    )


def check_drawn(
    g: StoredGame,
    k: int,
    states: list[dict[str, Any]],
    table: Table,
    got: dict[str, Any],
) -> tuple[list[str], list[str]]:
    """Mismatches with the truth, and hidden cards named, in every view of step ``k``."""
    state, last = states[k], len(states) - 1
    problems: list[str] = []
    leaks: list[str] = []
    views = ["all", *(str(s) for s in range(g.seats))]
    if sorted(got) != sorted(views):
        return [f"game {g.id}: views {sorted(got)} != {views}"], []
    public = sorted({c for s in range(g.seats) for c in state["known"][s]})
    table_cards = state["led"] or state["covered"]
    line = action_line(g, state, states[0])

    def expect(cond: bool, what: str) -> None:
        if not cond:
            problems.append(f"game {g.id} step {k}, view {view}: {what}")

    for view in views:
        d = got[view]
        expect(d["label"] == f"Step {k} / {last}", f"label {d['label']!r}")
        expect(d["body_step"] == str(k), f"body data-step {d['body_step']!r}")
        expect([x["seat"] for x in d["seats"]] == list(range(g.seats)), "seat rows")
        for row in d["seats"]:
            s = row["seat"]
            faces, backs = visible(state, s, view)
            shown = row["hand"]
            expect(
                sorted(c for c in shown if c != "?") == faces and shown.count("?") == backs,
                f"seat {s} hand {shown}, expected faces {faces} and {backs} backs",
            )
            expect(row["count"] == str(len(state["hands"][s])), f"seat {s} count {row['count']}")
            roles = [
                role
                for role, on in (
                    ("out", state["out"][s]),
                    ("leader", state["leader"] == s),
                    ("defender", state["defender"] == s),
                    ("to move", state["to_move"] == s),
                )
                if on
            ]
            name = player_name(g, s) + (" — " + ", ".join(roles) if roles else "")
            expect(row["name"] == name, f"seat {s} name {row['name']!r} != {name!r}")
            expect(row["current"] is (state["to_move"] == s), f"seat {s} highlighted")
        expect(d["table"] == table_cards, f"table {d['table']} != {table_cards}")
        expect(d["table_attr"] == " ".join(table_cards), f"table attr {d['table_attr']!r}")
        if not table_cards:
            expect(d["table_text"] == "empty", f"empty table says {d['table_text']!r}")
        expect(d["stock"] == str(state["stock"]), f"stock {d['stock']} != {state['stock']}")
        expect(d["discard"] == str(state["discard"]), f"discard {d['discard']}")
        want_face = state["face_up"] if state["face_up"] is not None else "drawn"
        expect(d["face_up"] == want_face, f"face up {d['face_up']!r} != {want_face!r}")
        expect(d["trump"] == f"{SUITS[table.trump]} {table.trump}", f"trump {d['trump']!r}")
        expect(d["action"] == line, f"action line {d['action']!r} != {line!r}")
        expect(sorted(d["known"]) == public, f"marked public {d['known']} != {public}")
        faces_drawn = [c for s in range(g.seats) for c in visible(state, s, view)[0]]
        faces_drawn += table_cards + ([state["face_up"]] if state["face_up"] else [])
        trumps = sorted(c for c in faces_drawn if c[1] == table.trump)
        expect(sorted(d["trumps"]) == trumps, f"trump edges {d['trumps']} != {trumps}")
        expect(d["final_hidden"] is (k != last), "final line shown/hidden")
        if k == last:
            want = final_text(g, table)
            expect(d["final"] == want, f"final {d['final']!r} != {want!r}")
        expect(d["next_disabled"] is (k == last), "Next enabled/disabled")
        expect(d["prev_disabled"] is (k == 0), "Prev enabled/disabled")
        if view == "all":  # the scan below sees a card where one is drawn
            for code in (c for hand in state["hands"] for c in hand):
                expect(_names_card(d["words"], code), f"the scan misses {code}")
        for code in sorted(hidden_from(state, view, g.seats)):
            if _names_card(d["words"], code):
                drawn_by = [s for s, cs in state["drawn"].items() if code in cs]
                how = f" (just drawn by seat {drawn_by[0]})" if drawn_by else ""
                leaks.append(f"game {g.id} step {k}, view {view}: {code}{how}")
    return problems, leaks


def _open(driver: Any, url: str) -> int:
    from selenium.webdriver.common.by import By

    driver.get("about:blank")
    driver.get(url)
    _wait(driver, lambda d: d.find_element(By.ID, "step-label").text.startswith("Step "))
    rows: int = driver.execute_script("return document.querySelectorAll('#moves tbody tr').length")
    return rows - 1


def walk(driver: Any, url: str, g: StoredGame) -> tuple[list[str], list[str]]:
    """Open a game page and step it with Next through every step, checking every view."""
    from selenium.webdriver.common.by import By

    states, table = truth(g)
    last = _open(driver, url)
    problems: list[str] = []
    if last != len(states) - 1:
        return [f"game {g.id}: the move list has {last + 1} rows, expected {len(states)}"], []
    rows = driver.execute_script(MOVES_JS)
    want_rows = [["0", "", "", "deal", ""]] + [
        # The move list and the action line both round as JS toFixed(3) does (ties up).
        [str(i), str(seat), g.labels[seat][0], action, _seconds(seconds)]
        for i, (seat, action, seconds) in enumerate(g.moves, start=1)
    ]
    if rows != want_rows:
        problems.append(f"game {g.id}: move list {rows[:3]}... != {want_rows[:3]}...")
    leaks: list[str] = []
    for k in range(len(states)):
        if k:
            driver.find_element(By.ID, "btn-next").click()
            _wait(
                driver,
                lambda d, k=k: d.find_element(By.ID, "step-label").text.startswith(f"Step {k} /"),
            )
        found, named = check_drawn(g, k, states, table, driver.execute_script(SNAPSHOT_JS))
        problems += found
        leaks += named
    severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    problems += [f"game {g.id}: console error {e}" for e in severe]
    return problems, leaks


TOURNAMENTS = ["three", "four", "three-limit", "hostile versions"]


@pytest.mark.browser
@pytest.mark.parametrize("tournament", TOURNAMENTS)
def test_viewer_draws_every_step_in_every_view(
    tournament: str, world: World, driver: Any, server: str
) -> None:
    """Every step of every game of the tournament, in every view, drawn as the truth says;
    and no view names a card it may not know."""
    problems: list[str] = []
    leaks: list[str] = []
    games = world.of(tournament)
    assert games
    for g in games:
        found, named = walk(driver, f"{server}/games/{g.id}", g)
        problems += found
        leaks += named
    assert not problems, f"{len(problems)} mismatches: {problems[:10]}"
    assert not leaks, f"{len(leaks)} hidden cards named: {leaks[:10]}"


@pytest.mark.browser
def test_viewer_navigation_and_step_links(world: World, driver: Any, server: str) -> None:
    """Last, Prev, First, the keys, a row of the move list and ``#step=N`` land on the right
    states of a table of 4."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    g = max((x for x in world.of("four") if x.forfeit is None), key=lambda x: len(x.moves))
    states, table = truth(g)
    last = _open(driver, f"{server}/games/{g.id}")
    assert last == len(states) - 1

    def at(k: int) -> None:
        _wait(driver, lambda d: d.find_element(By.ID, "step-label").text == f"Step {k} / {last}")
        problems, leaks = check_drawn(g, k, states, table, driver.execute_script(SNAPSHOT_JS))
        assert not problems and not leaks, (problems[:5], leaks[:5])

    driver.find_element(By.ID, "btn-last").click()
    at(last)
    assert driver.current_url.endswith(f"#step={last}")
    driver.find_element(By.ID, "btn-prev").click()
    at(last - 1)
    driver.find_element(By.ID, "btn-first").click()
    at(0)
    body = driver.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.END)
    at(last)
    body.send_keys(Keys.HOME)
    at(0)
    body.send_keys(Keys.ARROW_RIGHT)
    at(1)
    middle = last // 2
    driver.find_element(By.CSS_SELECTOR, f'#moves tbody tr[data-step="{middle}"]').click()
    at(middle)
    # A real choice of seat 2's view: seat 0's hand shows only its public cards.
    Select(driver.find_element(By.ID, "view-select")).select_by_value("2")
    shown = [
        e.get_attribute("data-card")
        for e in driver.find_elements(By.CSS_SELECTOR, "#seat-0-hand .card")
    ]
    faces, backs = visible(states[middle], 0, "2")
    assert sorted(c for c in shown if c != "?") == faces and shown.count("?") == backs
    _open(driver, f"{server}/games/{g.id}#step=3")
    at(3)


# ------------------------------------------------------------------------------ escaping


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.ids: list[str] = []
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "script":
            self.scripts.append(found)
        if found.get("id"):
            self.ids.append(str(found["id"]))
        self.handlers += [f"{tag} {name}" for name, _ in attrs if name.startswith("on")]


def _static_problems(html: str, where: str) -> list[str]:
    tags = _Tags()
    tags.feed(html)
    problems = []
    for script in tags.scripts:
        ok = script.get("type") == "application/json" and script.get("id") == "replay-data"
        src = script.get("src") or ""
        ok = ok or src.endswith(("static/table_replay.js", "static/replay.js", "static/live.js"))
        if not ok:
            problems.append(f"{where}: a script {script}")
    if "injected" in tags.ids:
        problems.append(f"{where}: an element with id=injected")
    if tags.handlers:
        problems.append(f"{where}: event handlers {tags.handlers}")
    return problems


def _hostile_pages(world: World, database: Database) -> list[str]:
    """Paths (without extension) of every page that shows hostile text."""
    pages = ["", *(f"games/{g.id}" for g in world.games)]
    pages += [f"series/{sid}" for sid in sorted({g.series_id for g in world.games})]
    with database.read_session() as s:
        tournaments = [t.id for t in list_tournaments(session=s)]
        subs = sorted(submission_labels(session=s))
    pages += [f"tournaments/{t}" for t in tournaments] + [f"submissions/{x}" for x in subs]
    return pages


def test_pages_escape_bot_text_at_tables(world: World, api: TestClient, database: Database) -> None:
    """No hostile text becomes markup on the live site or in the export; the table pages show
    the markup versions, the forfeits' replies and details, and the descriptions as text."""
    export = Path(world.export_dir)
    problems: list[str] = []
    pages = _hostile_pages(world, database)
    for page in pages:
        live = api.get(f"/{page}").text
        problems += _static_problems(live, f"/{page}")
        name = "index" if page == "" else page
        problems += _static_problems((export / f"{name}.html").read_text(), f"{name}.html")
    for page in ("/bots/hostile", "/bots/xa", "/bots/xb"):
        problems += _static_problems(api.get(page).text, page)
    assert not problems, problems[:10]
    # The hostile texts are on the pages, escaped.
    hostile = next(g for g in world.of("hostile versions") if g.forfeit is not None)
    page = api.get(f"/games/{hostile.id}").text
    for text in (VERSION_B, DETAIL, INPUT):
        assert text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in (
            page.replace("&#34;", '"').replace("&#39;", "'")
        ), text


@pytest.mark.browser
def test_browser_runs_no_bot_text(
    world: World, driver: Any, server: str, database: Database
) -> None:
    """Chromium opens every page showing hostile text (live and exported): nothing runs,
    nothing is injected, and the seat names show the versions as stored."""
    from selenium.webdriver.common.by import By

    export = Path(world.export_dir)
    problems = []
    for page in _hostile_pages(world, database):
        name = "index" if page == "" else page
        for url in (f"{server}/{page}", (export / f"{name}.html").as_uri()):
            driver.get("about:blank")
            driver.get(url)
            _wait(driver, lambda d: d.execute_script("return document.readyState") == "complete")
            pwned, injected, title = driver.execute_script(
                "return [window.__pwned === undefined ? null : String(window.__pwned),"
                " document.querySelectorAll('#injected').length, document.title];"
            )
            if pwned is not None or injected or "Kryt Arena" not in title:
                problems.append(f"{url}: pwned={pwned} injected={injected} title={title!r}")
    assert not problems, problems[:10]
    g = world.of("hostile versions")[0]
    for url in (f"{server}/games/{g.id}", (export / f"games/{g.id}.html").as_uri()):
        _open(driver, url)
        names = [driver.find_element(By.ID, f"seat-{s}-name").text for s in range(3)]
        assert names[0].startswith(f"seat 0 · xa {VERSION_A}"), names[0]
        assert names[1].startswith(f"seat 1 · xb {VERSION_B}"), names[1]
        shown = driver.find_element(By.CSS_SELECTOR, "dl.facts").text
        assert f"xa {VERSION_A}" in shown and f"xb {VERSION_B}" in shown
    forfeited = next(x for x in world.of("three") if x.ending == "crash")
    driver.get(f"{server}/games/{forfeited.id}")
    shown = driver.find_element(By.ID, "forfeit").text
    assert STDERR in shown, shown


# ------------------------------------------------------------------------------ the export


def test_export_writes_every_table_game_with_the_api_data(world: World, api: TestClient) -> None:
    """Each exported table game page embeds the document ``/api/games`` serves (the truth,
    checked above), links its assets relatively, and lists the stored actions."""
    export = Path(world.export_dir)
    assert "wrote" in world.runs["export"], world.runs["export"]
    assert (export / "static" / "table_replay.js").is_file()
    for g in world.games:
        html = (export / "games" / f"{g.id}.html").read_text()
        data = json.loads(html.split('id="replay-data">', 1)[1].split("</script>", 1)[0])
        assert data == api.get(f"/api/games/{g.id}").json(), f"exported game {g.id}"
        assert '<script src="../static/table_replay.js">' in html
        assert html.count('<tr data-step="') == len(g.moves) + 1


@pytest.mark.browser
@pytest.mark.parametrize("tournament", ["three", "four"])
def test_exported_viewer_draws_every_step_in_every_view(
    tournament: str, world: World, driver: Any
) -> None:
    """The static export opened from disk: the same checks on the longest game of the
    tournament and on one game of each other ending. Every exported page embeds exactly the
    document the API serves (``test_export_writes_every_table_game_with_the_api_data``) and
    the served viewer is walked on every game above, so walking every exported game again
    would check the same drawing twice (and took minutes)."""
    export = Path(world.export_dir)
    problems: list[str] = []
    leaks: list[str] = []
    games = world.of(tournament)
    longest = max(games, key=lambda g: len(g.moves))
    chosen = {longest.ending: longest}
    for g in games:
        chosen.setdefault(g.ending, g)
    for g in chosen.values():
        found, named = walk(driver, (export / "games" / f"{g.id}.html").as_uri(), g)
        problems += found
        leaks += named
    assert not problems, f"{len(problems)} mismatches: {problems[:10]}"
    assert not leaks, f"{len(leaks)} hidden cards named: {leaks[:10]}"


@pytest.mark.browser
def test_move_list_and_action_line_show_the_same_seconds(
    world: World, driver: Any, server: str
) -> None:
    from selenium.webdriver.common.by import By

    g = next(x for x in world.of("hostile versions") if x.ending == "turn limit")
    ties = [i for i, (_, _, sec) in enumerate(g.moves, start=1) if f"{sec:.3f}" != _seconds(sec)]
    assert ties, "the recorded times hold no halfway value"
    step = ties[0]
    _open(driver, f"{server}/games/{g.id}#step={step}")
    line = driver.find_element(By.ID, "action-line").text
    cell = driver.find_element(By.CSS_SELECTOR, f"#move-{step} td:last-child").text
    assert line.endswith(f" — {cell} s"), f"move list {cell!r}, action line {line!r}"
