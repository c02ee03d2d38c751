"""An outside review of the game replay viewer (``/games/{id}``) and ``/api/games/{id}``.

A database is filled through ``arena.db.record_game`` with games of the default game and of
the classic table at 2, 3 and 4 seats, played with the public rules API (seeded random legal
moves), ending by every reason a record can hold: going out / the last holder, a draw by the
final answer, all out, the turn limit (with seats already out at a table), forfeits (timeout,
crash before any move, malformed reply, illegal action) and a voided game.

Every game is replayed here, independently of ``leaderboard.web``, with ``referee.rules``
(``Game`` / ``ClassicGame``, their ``play()`` and per-seat ``view()``), giving after every
step each seat's hand, the cards public in it, the pile or the table, the stock, the face-up
card, the discard count, who moves and the result. ``/api/games/{id}`` must serve exactly
those states, and the viewer in headless Chromium, stepped through every step of one game of
each kind in every view it offers, must draw them (read from the DOM's ``data-card``
attributes and texts); a seat's view must not name another seat's hidden card or a stock card
anywhere in the drawn page (outside the embedded game data, which docs/leaderboard.md says
holds every state).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
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
    open_database,
    record_game,
    series_of_tournament,
    submit,
)
from leaderboard.web import create_app
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import (
    ClassicEndReason,
    ClassicGame,
    EndReason,
    Game,
    shuffled_deck,
)
from tests.web.test_browser import chromium_session
from tests.webserver import served

BOTS = ("alpha", "bravo", "charlie", "delta")
VERSION = "1.0.0"
T0 = datetime(2026, 5, 1, 9, 0, 0, tzinfo=UTC)
SUITS = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}


# --------------------------------------------------------------------------- the games


@dataclass
class Played:
    """A game as recorded, plus how it should read."""

    key: str
    ruleset: str
    seats: int
    deck: tuple[str, ...]
    dealer: int
    turn_limit: int
    moves: list[Move]
    ending: GameEndReason
    winner: int | None = None
    loser: int | None = None
    pairwise: tuple[tuple[int, int], ...] = ()
    forfeit: Forfeit | None = None
    final_cover: str | None = None
    void_reason: str = ""
    game_id: int = 0


def _seconds(i: int) -> float:
    return round(0.125 * (i % 9) + 0.25, 3)


def _play_default(
    seed: int, dealer: int, *, turn_limit: int = 1000, stop_after: int | None = None
) -> tuple[tuple[str, ...], list[Move], Game]:
    deck = tuple(str(c) for c in shuffled_deck(seed))
    game = Game.from_deck(list(deck), dealer, turn_limit=turn_limit)
    rng = random.Random(seed * 7 + 1)
    moves: list[Move] = []
    while not game.over and (stop_after is None or len(moves) < stop_after):
        seat = game.to_move
        assert seat is not None
        action = game.play(rng.choice(game.legal_actions()))
        moves.append(Move(seat, str(action), _seconds(len(moves))))
    return deck, moves, game


def _play_classic(
    seed: int, dealer: int, players: int, *, turn_limit: int = 1000, stop_after: int | None = None
) -> tuple[tuple[str, ...], list[Move], ClassicGame]:
    deck = tuple(str(c) for c in shuffled_deck(seed))
    game = ClassicGame.from_deck(list(deck), dealer, players=players, turn_limit=turn_limit)
    rng = random.Random(seed * 11 + 3)
    moves: list[Move] = []
    while not game.over and (stop_after is None or len(moves) < stop_after):
        seat = game.to_move
        assert seat is not None
        action = game.play(rng.choice(game.legal_actions()))
        moves.append(Move(seat, str(action), _seconds(len(moves))))
    return deck, moves, game


def _default_games() -> list[Played]:
    games: list[Played] = []
    # A normal end (out), preferably one with a trump-six swap in it.
    best: tuple[int, int] | None = None
    for seed in range(400):
        _, moves, game = _play_default(seed, seed % 2)
        if game.reason is EndReason.OUT:
            if any(m.action.startswith("swap") for m in moves):
                best = (seed, seed % 2)
                break
            best = best or (seed, seed % 2)
    assert best is not None
    deck, moves, game = _play_default(*best)
    games.append(
        Played("default-out", "default", 2, deck, best[1], 1000, moves, GameEndReason.OUT,
               winner=game.outcome)
    )  # fmt: skip
    # A draw by the final answer (the referee's automatic cover).
    for seed in range(3000):
        deck, moves, game = _play_default(seed, 1 - seed % 2)
        if game.reason is EndReason.DRAW_BY_FINAL_ANSWER:
            assert game.final_cover is not None
            games.append(
                Played("default-draw", "default", 2, deck, 1 - seed % 2, 1000, moves,
                       GameEndReason.DRAW_BY_FINAL_ANSWER, final_cover=str(game.final_cover))
            )  # fmt: skip
            break
    else:  # pragma: no cover - the engine's random games draw often enough
        raise AssertionError("no draw by the final answer in 3000 seeds")
    # The turn limit.
    deck, moves, game = _play_default(4242, 0, turn_limit=23)
    assert game.reason is EndReason.TURN_LIMIT
    games.append(
        Played("default-turn-limit", "default", 2, deck, 0, 23, moves, GameEndReason.TURN_LIMIT)
    )
    # Forfeits: the seat to move after the stored moves is the offender.
    cut: list[tuple[str, int, GameEndReason, str, str]] = [
        ("default-timeout", 9, GameEndReason.TIMEOUT, "", "no reply within 2.0 s"),
        ("default-crash", 0, GameEndReason.CRASH, "", "exit status 1"),
        ("default-malformed", 14, GameEndReason.MALFORMED_REPLY, "<b>bogus</b>", "not an action"),
        ("default-illegal", 5, GameEndReason.ILLEGAL_ACTION, "lead 6X", "not legal"),
    ]
    for n, (key, stop, reason, sent, detail) in enumerate(cut):
        deck, moves, game = _play_default(900 + n, n % 2, stop_after=stop)
        assert not game.over and game.to_move is not None
        offender = game.to_move
        games.append(
            Played(key, "default", 2, deck, n % 2, 1000, moves, reason, winner=1 - offender,
                   forfeit=Forfeit(offender, reason, sent, detail))
        )  # fmt: skip
    deck, moves, game = _play_default(777, 1, stop_after=6)
    games.append(
        Played("default-void", "default", 2, deck, 1, 1000, moves, GameEndReason.VOID,
               void_reason="the sandbox host went away")
    )  # fmt: skip
    return games


def _classic_games(players: int) -> list[Played]:
    games: list[Played] = []
    found: dict[ClassicEndReason, tuple[int, int]] = {}
    for seed in range(600):
        dealer = seed % players
        _, _, game = _play_classic(seed + 50 * players, dealer, players)
        assert game.reason is not None
        found.setdefault(game.reason, (seed + 50 * players, dealer))
        if len(found) == 2:
            break
    seed, dealer = found[ClassicEndReason.LAST_HOLDER]
    deck, moves, game = _play_classic(seed, dealer, players)
    games.append(
        Played(f"classic{players}-last-holder", "classic", players, deck, dealer, 1000, moves,
               GameEndReason.LAST_HOLDER, loser=game.loser, pairwise=game.pairwise_results(),
               winner=None if players > 2 or game.loser is None else 1 - game.loser)
    )  # fmt: skip
    if ClassicEndReason.ALL_OUT in found:
        seed, dealer = found[ClassicEndReason.ALL_OUT]
        deck, moves, game = _play_classic(seed, dealer, players)
        games.append(
            Played(f"classic{players}-all-out", "classic", players, deck, dealer, 1000, moves,
                   GameEndReason.ALL_OUT)
        )  # fmt: skip
    # The turn limit; at a table of 3 or 4, cut where a seat is already out.
    limit = 31
    if players > 2:
        for seed in range(400, 800):
            deck, moves, game = _play_classic(seed, seed % players, players)
            probe = ClassicGame.from_deck(list(deck), seed % players, players=players)
            at = None
            for i, move in enumerate(moves, start=1):
                probe.play(move.action)
                if any(probe.out) and not probe.over:
                    at = i
                    break
            if at is not None:
                limit, dealer = at, seed % players
                break
        else:  # pragma: no cover
            raise AssertionError("no table game with a seat out before its end")
    else:
        seed, dealer = 4343, 1
    deck, moves, game = _play_classic(seed, dealer, players, turn_limit=limit)
    assert game.reason is ClassicEndReason.TURN_LIMIT
    pairs = game.pairwise_results()
    games.append(
        Played(f"classic{players}-turn-limit", "classic", players, deck, dealer, limit, moves,
               GameEndReason.TURN_LIMIT, pairwise=pairs,
               winner=pairs[0][0] if players == 2 and pairs else None)
    )  # fmt: skip
    reason = {2: GameEndReason.TIMEOUT, 3: GameEndReason.CRASH, 4: GameEndReason.MALFORMED_REPLY}
    deck, moves, game = _play_classic(1000 + players, 0, players, stop_after=7 + players)
    assert not game.over and game.to_move is not None
    offender = game.to_move
    games.append(
        Played(f"classic{players}-forfeit", "classic", players, deck, 0, 1000, moves,
               reason[players], loser=offender,
               pairwise=tuple((s, offender) for s in range(players) if s != offender),
               winner=1 - offender if players == 2 else None,
               forfeit=Forfeit(offender, reason[players], "what?", "it failed"))
    )  # fmt: skip
    if players == 3:
        deck, moves, game = _play_classic(1200, 2, players, stop_after=4)
        games.append(
            Played("classic3-void", "classic", 3, deck, 2, 1000, moves, GameEndReason.VOID,
                   void_reason="the referee's host went away")
        )  # fmt: skip
    return games


@dataclass
class ReviewWorld:
    """The recorded games by key."""

    games: dict[str, Played] = field(default_factory=dict)


def _fill(db: Database) -> ReviewWorld:
    world = ReviewWorld()
    with db.session() as s:
        subs = []
        for name in BOTS:
            new = NewSubmission(
                bot_name=name,
                version=VERSION,
                sha256=hashlib.sha256(name.encode()).hexdigest(),
                submitted_by="reviewer",
                manifest={"name": name, "description": f"the {name} review bot"},
            )
            row = submit(new, session=s).submission
            assert row.id is not None
            subs.append(row.id)
    boards: list[tuple[str, int, list[Played]]] = [("default", 2, _default_games())]
    boards += [("classic", n, _classic_games(n)) for n in (2, 3, 4)]
    at = T0
    for k, (ruleset, size, played) in enumerate(boards):
        seats = tuple(subs[:size])
        spec = (
            SeriesSpec(seats[0], seats[1], len(played), 70 + k)
            if ruleset == "default"
            else SeriesSpec(seats[0], seats[1], len(played), 70 + k, ruleset="classic", seats=seats)
        )
        config: dict[str, Any] = (
            {"turn_limit": 1000}
            if ruleset == "default"
            else {"ruleset": "classic", "table_size": size}
        )
        with db.session() as s:
            tournament = create_tournament(
                TournamentSpec(f"review {ruleset} {size}", 70 + k, config=config, series=[spec]),
                session=s,
            )
            assert tournament.id is not None
            (series,) = series_of_tournament(tournament.id, session=s)
            assert series.id is not None
        for number, p in enumerate(played):
            at += timedelta(minutes=1)
            record = GameRecord(
                deck=p.deck,
                dealer=p.dealer,
                turn_limit=p.turn_limit,
                moves=tuple(p.moves),
                ending=p.ending,
                winner=p.winner,
                forfeit=p.forfeit,
                final_cover=p.final_cover,
                void_reason=p.void_reason,
                referee_version="review-referee 1",
                players=tuple(BOTS[:size]),
                started=at.timestamp(),
                finished=at.timestamp() + 3.0,
                ruleset=ruleset,
                seats=size,
                loser=p.loser,
                pairwise=p.pairwise,
            )
            with db.session() as s:
                stored = record_game(record, GamePlace(series.id, number, 1, seats), session=s).game
                assert stored.id is not None
                p.game_id = stored.id
            world.games[p.key] = p
    return world


@pytest.fixture(scope="module")
def review_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Database, ReviewWorld]]:
    path = tmp_path_factory.mktemp("review") / "kryt.db"
    db = open_database(f"sqlite:///{path}")
    try:
        yield db, _fill(db)
    finally:
        db.close()


@pytest.fixture(scope="module")
def api(review_db: tuple[Database, ReviewWorld]) -> Iterator[TestClient]:
    with TestClient(create_app(review_db[0])) as client:
        yield client


# --------------------------------------------------------------------------- the reconstruction


def _default_states(p: Played) -> list[dict[str, Any]]:
    """Every step of a default game, replayed here with ``referee.rules.Game``."""
    game = Game.from_deck(list(p.deck), p.dealer, turn_limit=max(p.turn_limit, len(p.moves), 1))

    def snap(seat: int | None, move: Move | None) -> dict[str, Any]:
        views = [game.view(0), game.view(1)]
        # What each seat's opponent may see of its hand must equal what it knows of itself.
        assert [list(map(str, v.own_known)) for v in views] == [
            list(map(str, views[1].opponent_known)),
            list(map(str, views[0].opponent_known)),
        ]
        return {
            "seat": seat,
            "action": None if move is None else move.action,
            "seconds": None if move is None else move.seconds,
            "auto": False,
            "hands": [sorted(str(c) for c in v.hand) for v in views],
            "known": [sorted(str(c) for c in v.own_known) for v in views],
            "pile": [str(c) for c in views[0].pile],
            "stock": views[0].stock_count,
            "face_up": None if views[0].face_up is None else str(views[0].face_up),
            "to_move": game.to_move,
            "over": game.over,
            "stock_cards": sorted(str(c) for c in game.stock if c != game.face_up),
        }

    states = [snap(None, None)]
    for move in p.moves:
        seat = game.to_move
        assert seat == move.seat
        game.play(move.action)
        states.append(snap(seat, move))
    if game.reason is EndReason.DRAW_BY_FINAL_ANSWER:
        # The last lead as it stood before the referee's cover, then the cover as a step.
        assert game.final_cover is not None and len(states) >= 2
        cover = str(game.final_cover)
        last, before = states[-1], states[-2]
        answerer = 1 - last["seat"]
        assert last["pile"][-1] == cover
        last["pile"] = last["pile"][:-1]
        last["hands"][answerer] = [cover]
        last["known"][answerer] = list(before["known"][answerer])
        last["to_move"], last["over"] = answerer, False
        states.append(snap(answerer, Move(answerer, f"cover {cover}", 0.0)))
        states[-1]["seconds"], states[-1]["auto"] = None, True
    return states


def _trick(action: str) -> list[str]:
    if not action.startswith("cover"):
        return []
    return [card for pair in action.split()[1:] for card in pair.split(":")]


def _classic_states(p: Played) -> list[dict[str, Any]]:
    """Every step of a table game, replayed here with ``referee.rules.ClassicGame``."""
    limit = max(p.turn_limit, len(p.moves), 1)
    game = ClassicGame.from_deck(list(p.deck), p.dealer, players=p.seats, turn_limit=limit)

    def snap(seat: int | None, move: Move | None) -> dict[str, Any]:
        views = [game.view(s) for s in range(p.seats)]
        for v in views:  # every seat sees the same public cards of every hand
            assert v.known == views[0].known
        return {
            "seat": seat,
            "action": None if move is None else move.action,
            "seconds": None if move is None else move.seconds,
            "hands": [sorted(str(c) for c in v.hand) for v in views],
            "known": [sorted(str(c) for c in k) for k in views[0].known],
            "out": list(views[0].out),
            "led": [str(c) for c in views[0].led],
            "covered": [] if move is None else _trick(move.action),
            "discard": len(views[0].discard),
            "stock": views[0].stock_count,
            "face_up": None if views[0].face_up is None else str(views[0].face_up),
            "leader": views[0].leader,
            "defender": views[0].defender,
            "to_move": game.to_move,
            "over": game.over,
            "stock_cards": sorted(str(c) for c in game.stock if c != game.face_up),
        }

    states = [snap(None, None)]
    for move in p.moves:
        seat = game.to_move
        assert seat == move.seat
        game.play(move.action)
        states.append(snap(seat, move))
    return states


def _states(p: Played) -> list[dict[str, Any]]:
    return _default_states(p) if p.ruleset == "default" else _classic_states(p)


def _label(seat: int) -> str:
    return f"{BOTS[seat]} {VERSION}"


def _result_text(p: Played) -> str:
    """What the game page calls the result (pages.result_text's documented forms)."""
    if p.ending is GameEndReason.VOID:
        return "voided"
    if p.ruleset == "classic":
        if p.loser is not None:
            return f"{_label(p.loser)} lost"
        if p.pairwise:
            return "turn limit: " + ", ".join(
                f"{_label(x)} lost" for x in sorted({x for _, x in p.pairwise})
            )
        return "draw"
    if p.winner is None:
        return "draw"
    return f"{_label(p.winner)} won"


def _final_text(p: Played) -> str:
    text = f"Result: {_result_text(p)} ({p.ending.value})"
    if p.forfeit is not None:
        text += f" — seat {p.forfeit.seat} forfeited"
        if p.ruleset == "default":
            text += ": " + p.forfeit.reason.value
    return text


def _trump(p: Played) -> str:
    return p.deck[6 if p.ruleset == "default" else 3 * p.seats][-1]


# --------------------------------------------------------------------------- the API


ALL_KEYS = [
    "default-out",
    "default-draw",
    "default-turn-limit",
    "default-timeout",
    "default-crash",
    "default-malformed",
    "default-illegal",
    "default-void",
    *[
        f"classic{n}-{k}"
        for n in (2, 3, 4)
        for k in ("last-holder", "all-out", "turn-limit", "forfeit")
    ],
    "classic3-void",
]


def test_every_end_reason_is_recorded(review_db: tuple[Database, ReviewWorld]) -> None:
    world = review_db[1]
    assert set(ALL_KEYS) <= set(world.games)
    endings = {p.ending for p in world.games.values()}
    assert {
        GameEndReason.OUT,
        GameEndReason.DRAW_BY_FINAL_ANSWER,
        GameEndReason.TURN_LIMIT,
        GameEndReason.LAST_HOLDER,
        GameEndReason.ALL_OUT,
        GameEndReason.TIMEOUT,
        GameEndReason.CRASH,
        GameEndReason.MALFORMED_REPLY,
        GameEndReason.ILLEGAL_ACTION,
        GameEndReason.VOID,
    } <= endings
    # The table's turn-limit games of 3 and 4 have a seat out: their result is pairwise.
    assert world.games["classic3-turn-limit"].pairwise
    assert world.games["classic4-turn-limit"].pairwise


DEFAULT_FIELDS = ("seat", "action", "seconds", "auto", "pile", "stock", "face_up", "to_move")
CLASSIC_FIELDS = (
    "seat",
    "action",
    "seconds",
    "out",
    "led",
    "covered",
    "discard",
    "stock",
    "face_up",
    "leader",
    "defender",
    "to_move",
)


@pytest.mark.parametrize("key", ALL_KEYS)
def test_api_serves_every_reconstructed_step(
    key: str, api: TestClient, review_db: tuple[Database, ReviewWorld]
) -> None:
    p = review_db[1].games[key]
    response = api.get(f"/api/games/{p.game_id}")
    assert response.status_code == 200
    data = response.json()
    # The record.
    assert data["id"] == p.game_id
    assert data["ruleset"] == p.ruleset and data["seats"] == p.seats
    assert data["deck"] == list(p.deck) and data["dealer"] == p.dealer
    assert [(x["seat"], x["bot"], x["version"]) for x in data["players"]] == [
        (s, BOTS[s], VERSION) for s in range(p.seats)
    ]
    assert data["end_reason"] == p.ending.value
    assert data["result_text"] == _result_text(p)
    assert data["voided"] is (p.ending is GameEndReason.VOID)
    if p.forfeit is None:
        assert data["forfeit"] is None
    else:
        assert data["forfeit"]["seat"] == p.forfeit.seat
        assert data["forfeit"]["reason"] == p.forfeit.reason.value
        assert (data["forfeit"]["offending_input"] or "") == p.forfeit.offending_input
    assert data["final_cover"] == p.final_cover
    assert [(a["seat"], a["action"]) for a in data["actions"]] == [
        (m.seat, m.action) for m in p.moves
    ]
    # The replay: every step, every documented field.
    replay = data["replay"]
    assert replay["error"] is None
    assert replay["trump"] == _trump(p)
    assert replay["dealer"] == p.dealer
    expected = _states(p)
    steps = replay["steps"]
    assert len(steps) == len(expected), f"{key}: {len(steps)} steps, expected {len(expected)}"
    fields = DEFAULT_FIELDS if p.ruleset == "default" else CLASSIC_FIELDS
    for i, (got, want) in enumerate(zip(steps, expected, strict=True)):
        assert got["index"] == i
        for name in fields:
            assert got[name] == want[name], (
                f"{key} step {i}: {name} {got[name]!r} != {want[name]!r}"
            )
        assert [sorted(h) for h in got["hands"]] == want["hands"], f"{key} step {i}: hands"
        assert [sorted(k) for k in got["known"]] == want["known"], f"{key} step {i}: known"
        assert got["over"] == want["over"], f"{key} step {i}: over"
    if p.ruleset == "default":
        ended = p.ending in (
            GameEndReason.OUT,
            GameEndReason.DRAW_BY_FINAL_ANSWER,
            GameEndReason.TURN_LIMIT,
        )
        assert replay["rules_reason"] == (p.ending.value if ended else None)
        assert replay["rules_outcome"] == (p.winner if ended else None)
    else:
        assert replay["table"] is True and replay["players"] == p.seats
        ended = p.ending in (
            GameEndReason.LAST_HOLDER,
            GameEndReason.ALL_OUT,
            GameEndReason.TURN_LIMIT,
        )
        assert replay["rules_reason"] == (p.ending.value if ended else None)
        assert replay["rules_loser"] == (p.loser if ended else None)


# --------------------------------------------------------------------------- the browser


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with chromium_session(page_load_timeout=60) as browser:
        yield browser


@pytest.fixture(scope="module")
def server(review_db: tuple[Database, ReviewWorld]) -> Iterator[str]:
    with served(create_app(review_db[0])) as url:
        yield url


def _wait(driver: Any, condition: Any, timeout: float = 20) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


# Reads the drawn board in every view the page offers (the view choice's own change event),
# then puts the view back. Everything is read from the DOM: data-card attributes and texts.
SNAPSHOT_JS = """
var sel = document.getElementById('view-select');
var original = sel.value;
var board = document.getElementById('replay');
function cards(el) {
  if (!el) return null;
  return Array.prototype.map.call(el.querySelectorAll('.card'),
    function (c) { return c.getAttribute('data-card'); });
}
function text(id) { var el = document.getElementById(id); return el ? el.textContent : null; }
function drawn() {
  var hands = {}, names = {};
  board.querySelectorAll('.hand').forEach(function (h) { hands[h.id] = cards(h); });
  board.querySelectorAll('.seat-name').forEach(function (n) { names[n.id] = n.textContent; });
  var table = document.getElementById('pile') || document.getElementById('led');
  var face = document.querySelector('#face-up .card');
  // Everything the drawn page says outside the embedded data and the move list.
  var bodyAttrs = [], boardAttrs = [];
  for (var i = 0; i < document.body.attributes.length; i++) {
    var a = document.body.attributes[i];
    if (a.name !== 'data-step') bodyAttrs.push(a.name + '=' + a.value);
  }
  board.querySelectorAll('*').forEach(function (el) {
    for (var i = 0; i < el.attributes.length; i++) boardAttrs.push(el.attributes[i].value);
  });
  var marked = function (cls) {
    return Array.prototype.map.call(board.querySelectorAll('.card.' + cls),
      function (c) { return c.getAttribute('data-card'); });
  };
  var fin = document.getElementById('final');
  return {
    hands: hands, names: names, table: cards(table),
    table_attr: table.getAttribute('data-cards'),
    stock: text('stock-count'), discard: text('discard-count'),
    face_up: face ? face.getAttribute('data-card') : text('face-up'),
    label: text('step-label'), final_hidden: fin.hidden, final: fin.textContent,
    body_step: document.body.getAttribute('data-step'),
    words: {'body attributes': bodyAttrs.join('\\n'), 'board attributes': boardAttrs.join('\\n'),
            'board text': board.textContent, 'title': document.title},
    moved: marked('moved'), known: marked('known'), trumps: marked('trump'),
    action: text('action-line'), trump: text('trump')
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


def _pretty(code: str) -> str:
    return ("10" if code[0] == "T" else code[0]) + SUITS[code[1]]


def _names_card(words: str, code: str) -> bool:
    return bool(re.search(rf"(?<![0-9A-Za-z]){code}(?![0-9A-Za-z])", words)) or (
        _pretty(code) in words
    )


def _visible(state: dict[str, Any], seat: int, view: str) -> tuple[list[str], int]:
    """The faces a view may show of ``seat``'s hand, and how many backs."""
    hand = state["hands"][seat]
    if view in ("all", str(seat)):
        return sorted(hand), 0
    known = [c for c in hand if c in state["known"][seat]]
    return sorted(known), len(hand) - len(known)


def _hidden_from(state: dict[str, Any], view: str, seats: int) -> set[str]:
    """Cards the seat ``view`` may not see: others' unseen cards and the stock (not face up)."""
    hidden = set(state["stock_cards"])
    for s in range(seats):
        if str(s) != view:
            hidden |= set(state["hands"][s]) - set(state["known"][s])
    return hidden


def _moved(before: dict[str, Any] | None, now: dict[str, Any]) -> list[str]:
    """The cards that just moved (docs: played to the pile, taken, drawn, swapped)."""
    if before is None:
        return []

    def places(state: dict[str, Any]) -> dict[str, str]:
        at = {c: f"h{s}" for s in (0, 1) for c in state["hands"][s]}
        at |= {c: "pile" for c in state["pile"]}
        if state["face_up"] is not None:
            at[state["face_up"]] = "face up"
        return at

    old, new = places(before), places(now)
    return sorted(c for c, place in new.items() if old.get(c) != place)


def _action_line(p: Played, state: dict[str, Any], first: dict[str, Any]) -> str:
    if state["action"] is None:
        if p.ruleset == "default":
            return f"The deal: seat {1 - p.dealer} moves first."
        return f"The deal: seat {first['leader']} leads to seat {first['defender']}."
    seat = state["seat"]
    name = f"seat {seat} · {BOTS[seat]} {VERSION}" + (" (dealer)" if seat == p.dealer else "")
    pretty = re.sub(r"\b([6-9TJQKA])([CDHS])\b", lambda m: _pretty(m.group()), state["action"])
    if state.get("auto"):
        return f"Referee, for {name}: {pretty} (automatic final cover)"
    return f"{name}: {pretty} — {state['seconds']:.3f} s"


def _check_drawn(
    p: Played,
    k: int,
    state: dict[str, Any],
    last: int,
    got: dict[str, Any],
    states: list[dict[str, Any]],
) -> None:
    where = f"{p.key} step {k}"
    trump = _trump(p)
    line = _action_line(p, state, states[0])
    public = sorted({c for s in range(p.seats) for c in state["known"][s]})
    views = ["all", *(str(s) for s in range(p.seats))]
    assert sorted(got) == sorted(views), f"{where}: views {sorted(got)}"
    for view in views:
        d = got[view]
        at = f"{where}, view {view}"
        assert d["label"] == f"Step {k} / {last}", at
        assert d["body_step"] == str(k), at
        if p.ruleset == "default":
            bottom = 0 if view == "all" else int(view)
            containers = {bottom: "bottom", 1 - bottom: "top"}
            hands = {s: d["hands"][f"{c}-hand"] for s, c in containers.items()}
            names = {s: d["names"][f"{c}-name"] for s, c in containers.items()}
            assert d["table"] == state["pile"], f"{at}: pile {d['table']} != {state['pile']}"
            assert d["table_attr"] == " ".join(state["pile"]), at
        else:
            hands = {s: d["hands"][f"seat-{s}-hand"] for s in range(p.seats)}
            names = {s: d["names"][f"seat-{s}-name"] for s in range(p.seats)}
            table = state["led"] or state["covered"]
            assert d["table"] == table, f"{at}: table {d['table']} != {table}"
            assert d["discard"] == str(state["discard"]), f"{at}: discard {d['discard']}"
        for s in range(p.seats):
            faces, backs = _visible(state, s, view)
            shown = hands[s]
            assert sorted(c for c in shown if c != "?") == faces, (
                f"{at}: seat {s} hand shows {shown}, expected {faces} and {backs} backs"
            )
            assert shown.count("?") == backs, f"{at}: seat {s} hand {shown}, {backs} backs"
            name = names[s]
            assert name.startswith(f"seat {s} · {BOTS[s]} {VERSION}"), f"{at}: {name!r}"
            assert (" (dealer)" in name) is (s == p.dealer), f"{at}: {name!r}"
            assert ("to move" in name) is (state["to_move"] == s), f"{at}: {name!r}"
            if p.ruleset == "classic":
                roles = name.split(" — ")[1].split(", ") if " — " in name else []
                assert ("out" in roles) is state["out"][s], f"{at}: {name!r}"
        assert d["stock"] == str(state["stock"]), f"{at}: stock {d['stock']}"
        want_face = state["face_up"] if state["face_up"] is not None else "drawn"
        assert d["face_up"] == want_face, f"{at}: face up {d['face_up']} != {want_face}"
        assert d["final_hidden"] is (k != last), at
        assert d["action"] == line, f"{at}: action line {d['action']!r} != {line!r}"
        assert d["trump"] == f"{SUITS[trump]} {trump}", f"{at}: trump {d['trump']!r}"
        assert sorted(d["known"]) == public, f"{at}: marked public {d['known']} != {public}"
        faces = [c for s in range(p.seats) for c in _visible(state, s, view)[0]]
        faces += d["table"] + ([] if state["face_up"] is None else [state["face_up"]])
        trumps = sorted(c for c in faces if c[1] == trump)
        assert sorted(d["trumps"]) == trumps, f"{at}: trump edges {d['trumps']} != {trumps}"
        if p.ruleset == "default" and view == "all":
            moved = _moved(states[k - 1] if k else None, state)
            assert sorted(d["moved"]) == moved, f"{at}: outlined {d['moved']} != moved {moved}"
        if k == last:
            assert d["final"] == _final_text(p), f"{at}: {d['final']!r}"


def _leaks(p: Played, state: dict[str, Any], got: dict[str, Any]) -> list[str]:
    found = []
    for s in range(p.seats):
        view = str(s)
        for code in sorted(_hidden_from(state, view, p.seats)):
            for where, words in got[view]["words"].items():
                if _names_card(words, code):
                    found.append(f"view {view}: {code} in the {where}")
    return found


def _open(driver: Any, base: str, p: Played, step: int | None = None) -> int:
    from selenium.webdriver.common.by import By

    driver.get("about:blank")  # a new document even when only the #step differs
    driver.get(f"{base}/games/{p.game_id}" + ("" if step is None else f"#step={step}"))
    _wait(driver, lambda d: d.find_element(By.ID, "step-label").text.startswith("Step "))
    last: int = driver.execute_script("return document.querySelectorAll('#moves tbody tr').length")
    return last - 1


def _no_console_errors(driver: Any) -> None:
    severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, f"browser console errors: {severe}"


BROWSER_KEYS = [
    "default-draw",
    "default-out",
    "default-timeout",
    "classic2-last-holder",
    "classic3-turn-limit",
    "classic4-last-holder",
]


def _walk(driver: Any, base: str, p: Played, *, check: bool = True) -> list[str]:
    """Step the viewer with Next through every step, checking each in every view; returns
    the hidden cards each seat view names (checked by the caller)."""
    from selenium.webdriver.common.by import By

    states = _states(p)
    last = _open(driver, base, p)
    assert last == len(states) - 1, f"{p.key}: move list has {last + 1} rows"
    rows = driver.execute_script(
        "return Array.prototype.map.call(document.querySelectorAll('#moves tbody tr'),"
        " function (r) { return Array.prototype.map.call(r.cells,"
        " function (c) { return c.textContent.trim(); }); });"
    )
    want_rows = [["0", "", "", "deal", ""]]
    for state in states[1:]:
        action = state["action"]
        if p.ruleset == "default":  # the default game's list colours its cards
            action = re.sub(r"\b([6-9TJQKA])([CDHS])\b", lambda m: _pretty(m.group()), action)
        if state.get("auto"):
            action += " (automatic final cover)"
        seconds = "" if state.get("auto") else f"{state['seconds']:.3f}"
        want_rows.append(
            [str(len(want_rows)), str(state["seat"]), BOTS[state["seat"]], action, seconds]
        )
    assert rows == want_rows, f"{p.key}: move list {rows} != {want_rows}"
    leaks: list[str] = []
    for k, state in enumerate(states):
        if k:
            driver.find_element(By.ID, "btn-next").click()
            _wait(driver, lambda d, k=k: d.find_element(By.ID, "step-label").text.startswith(
                f"Step {k} /"))  # fmt: skip
        got = driver.execute_script(SNAPSHOT_JS)
        if check:
            _check_drawn(p, k, state, last, got, states)
        leaks += [f"step {k} {x}" for x in _leaks(p, state, got)]
    assert driver.find_element(By.ID, "btn-next").get_attribute("disabled") is not None
    _no_console_errors(driver)
    return leaks


@pytest.mark.browser
@pytest.mark.parametrize("key", BROWSER_KEYS)
def test_viewer_draws_every_step_in_every_view(
    key: str, driver: Any, server: str, review_db: tuple[Database, ReviewWorld]
) -> None:
    p = review_db[1].games[key]
    _walk(driver, server, p)


@pytest.mark.browser
def test_default_seat_view_names_no_hidden_card(
    driver: Any, server: str, review_db: tuple[Database, ReviewWorld]
) -> None:
    p = review_db[1].games["default-out"]
    leaks = _walk(driver, server, p, check=False)
    assert not leaks, f"{p.key}: hidden cards named in a seat view's DOM: {leaks[:8]}"


@pytest.mark.browser
@pytest.mark.parametrize("key", ["classic3-last-holder", "classic4-turn-limit"])
def test_table_seat_view_names_no_hidden_card(
    key: str, driver: Any, server: str, review_db: tuple[Database, ReviewWorld]
) -> None:
    p = review_db[1].games[key]
    leaks = _walk(driver, server, p, check=False)
    assert not leaks, f"{p.key}: hidden cards named in a seat view's DOM: {leaks[:8]}"


@pytest.mark.browser
@pytest.mark.parametrize("key", ["default-draw", "classic4-forfeit"])
def test_viewer_navigation(
    key: str, driver: Any, server: str, review_db: tuple[Database, ReviewWorld]
) -> None:
    """Prev, First, Last, the keys, a move-list row and ``#step=N`` land on the right states."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    p = review_db[1].games[key]
    states = _states(p)
    last = _open(driver, server, p)
    assert last == len(states) - 1

    def at(k: int) -> None:
        _wait(driver, lambda d: d.find_element(By.ID, "step-label").text == f"Step {k} / {last}")
        _check_drawn(p, k, states[k], last, driver.execute_script(SNAPSHOT_JS), states)
        assert driver.current_url.endswith(f"#step={k}") or k == 0

    driver.find_element(By.ID, "btn-last").click()
    at(last)
    for k in (last - 1, last - 2, last - 3):
        driver.find_element(By.ID, "btn-prev").click()
        at(k)
    driver.find_element(By.ID, "btn-first").click()
    at(0)
    assert driver.find_element(By.ID, "btn-prev").get_attribute("disabled") is not None
    body = driver.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.END)
    at(last)
    body.send_keys(Keys.ARROW_LEFT)
    at(last - 1)
    body.send_keys(Keys.HOME)
    at(0)
    body.send_keys(Keys.ARROW_RIGHT)
    at(1)
    middle = last // 2
    driver.find_element(By.CSS_SELECTOR, f'#moves tbody tr[data-step="{middle}"]').click()
    at(middle)
    # A real choice of a seat's view, then back to every hand.
    Select(driver.find_element(By.ID, "view-select")).select_by_value("1")
    hand = "bottom-hand" if p.ruleset == "default" else "seat-0-hand"
    faces, backs = _visible(states[middle], 0 if p.ruleset == "classic" else 1, "1")
    shown = [
        e.get_attribute("data-card")
        for e in driver.find_elements(By.CSS_SELECTOR, f"#{hand} .card")
    ]
    assert sorted(c for c in shown if c != "?") == faces and shown.count("?") == backs
    Select(driver.find_element(By.ID, "view-select")).select_by_value("all")
    # Loading with #step=N opens that step.
    _open(driver, server, p, step=2)
    at(2)
    _no_console_errors(driver)


@pytest.mark.browser
@pytest.mark.parametrize(
    "key",
    [
        "default-crash",
        "default-malformed",
        "default-illegal",
        "default-void",
        "default-turn-limit",
        "classic2-forfeit",
        "classic2-turn-limit",
        "classic3-void",
        "classic4-all-out",
    ],
)
def test_viewer_last_step_of_short_and_cut_games(
    key: str, driver: Any, server: str, review_db: tuple[Database, ReviewWorld]
) -> None:
    """The first and last steps (and the result line) of the games cut short or limited."""
    from selenium.webdriver.common.by import By

    p = review_db[1].games[key]
    states = _states(p)
    last = _open(driver, server, p)
    assert last == len(states) - 1
    _check_drawn(p, 0, states[0], last, driver.execute_script(SNAPSHOT_JS), states)
    driver.find_element(By.ID, "btn-last").click()
    _wait(driver, lambda d: d.find_element(By.ID, "step-label").text == f"Step {last} / {last}")
    _check_drawn(p, last, states[last], last, driver.execute_script(SNAPSHOT_JS), states)
    assert driver.find_element(By.ID, "result").text == _result_text(p)
    assert driver.find_element(By.ID, "end-reason").text == p.ending.value
    forfeit = driver.find_elements(By.ID, "forfeit")
    assert bool(forfeit) is (p.forfeit is not None)
    if p.forfeit is not None:
        assert forfeit[0].text.startswith(f"seat {p.forfeit.seat} ({BOTS[p.forfeit.seat]})")
    _no_console_errors(driver)


def test_page_embeds_every_hand_and_the_deck(
    api: TestClient, review_db: tuple[Database, ReviewWorld]
) -> None:
    """What docs/leaderboard.md says the page embeds (whatever view is chosen): every state,
    so every hand, and (not in the docs) the whole deck, i.e. the stock order."""
    for key in ("default-out", "classic3-last-holder"):
        p = review_db[1].games[key]
        page = api.get(f"/games/{p.game_id}").text
        data = page.split('id="replay-data">', 1)[1].split("</script>", 1)[0]
        assert '"deck":' in data
        assert all(card in data for card in p.deck)
