"""Tests from a mutation review of the leaderboard's game and bot pages:
``leaderboard/web/replay.py``, ``table_replay.py``, ``bot_page.py`` and ``plot.py``.

How the expected values are derived, never read back from the code under test:

- Replay states: every game is replayed here step by step with the public rules API
  (``referee.rules.Game`` / ``ClassicGame``), reading each state through the per-seat
  ``view()`` (a seat's own hand, the opponent's publicly known cards, the pile, the stock
  count, the face-up card), not through the ``hands`` / ``known_cards`` accessors the viewer
  code uses. Which cards are public is also tracked a second way, from the state changes
  alone, as docs/rules.md words it ("cards he took from the pile and the face-up card he drew
  or swapped for, until he plays them"). The drawn game's extra step (docs/leaderboard.md:
  the automatic final cover appears as its own step after the last lead) is derived from the
  states before and after the lead. The packed steps a game page embeds are unpacked by a
  port of ``static/replay.js``'s ``unpack`` (the code that reads them in the browser).
- Pages: a small SQLite world recorded through ``arena.db`` (bot versions, a tournament name,
  a forfeit's detail and offending input carry markup, quotes, ``</script>``, U+2028 and a
  bidi override); the pages are read with FastAPI's test client. Expected game orders,
  counts and version rows follow from the times and games recorded here.
- Plots: the SVG's coordinates are read back and must be an increasing affine map of the
  data's x and a decreasing one of its y, with ticks, reference line and error bars on the
  same map and inside the plotting frame.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
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
    open_database,
    record_game,
    series_of_tournament,
    submit,
)
from leaderboard.web import create_app
from leaderboard.web.plot import HEIGHT, WIDTH, Point, line_plot
from leaderboard.web.replay import pack_steps, replay_game, unpack_steps
from leaderboard.web.table_replay import replay_table_game
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import ClassicGame, EndReason, Game

SVG = "{http://www.w3.org/2000/svg}"

# ---------------------------------------------------------------------------------------------
# Games played here with the rules API.


@dataclass(frozen=True)
class Played:
    deck: list[str]
    dealer: int
    actions: list[dict[str, Any]]
    final_cover: str | None
    reason: EndReason | None


def play_default(
    seed: int, dealer: int, *, turn_limit: int = 1000, stop_after: int | None = None
) -> Played:
    """Seeded random legal moves of the default game, in the stored actions' form."""
    game = Game.new(seed=seed, dealer=dealer, turn_limit=turn_limit)
    rng = random.Random(seed)
    actions: list[dict[str, Any]] = []
    while not game.over and (stop_after is None or len(actions) < stop_after):
        seat = game.to_move
        action = game.play_random(rng)
        actions.append({"seat": seat, "action": str(action), "seconds": 0.25 * (len(actions) % 5)})
    cover = game.final_cover
    return Played(
        [str(c) for c in game.deck or ()],
        dealer,
        actions,
        None if cover is None else str(cover),
        game.reason,
    )


def expected_default_steps(played: Played, *, turn_limit: int = 1000) -> list[dict[str, Any]]:
    """Every step as docs/leaderboard.md describes it, from the rules API's per-seat views."""
    game = Game.from_deck(played.deck, played.dealer, turn_limit=turn_limit)

    def state(
        index: int, seat: int | None, action: str | None, seconds: float | None
    ) -> dict[str, Any]:
        views = [game.view(0), game.view(1)]
        return {
            "index": index,
            "seat": seat,
            "action": action,
            "seconds": seconds,
            "auto": False,
            "hands": [[str(c) for c in views[s].hand] for s in (0, 1)],
            # What is public of seat s is what the other seat's view knows of it.
            "known": [[str(c) for c in views[1 - s].opponent_known] for s in (0, 1)],
            "pile": [str(c) for c in views[0].pile],
            "stock": views[0].stock_count,
            "face_up": None if views[0].face_up is None else str(views[0].face_up),
            "to_move": game.to_move,
            "over": game.over,
        }

    steps = [state(0, None, None, None)]
    for i, move in enumerate(played.actions, start=1):
        seat = game.to_move
        game.play(move["action"])
        steps.append(state(i, seat, move["action"], move["seconds"]))
    cover = game.final_cover
    if cover is not None:
        # The last lead as it stood before the referee's cover: the answerer still holds the
        # card he had before the lead (it did not change), the pile lacks the cover.
        final, before = steps[-1], steps[-2]
        assert final["seat"] is not None
        answerer = 1 - final["seat"]
        lead = dict(final)
        lead["hands"] = list(final["hands"])
        lead["hands"][answerer] = before["hands"][answerer]
        lead["known"] = list(final["known"])
        lead["known"][answerer] = before["known"][answerer]
        lead["pile"] = [c for c in final["pile"] if c != str(cover)]
        lead["to_move"], lead["over"] = answerer, False
        auto = dict(final)
        auto.update(
            index=len(steps),
            seat=answerer,
            action=f"cover {cover}",
            seconds=None,
            auto=True,
        )
        steps[-1] = lead
        steps.append(auto)
    return steps


def public_by_tracking(steps: Sequence[Mapping[str, Any]]) -> list[list[set[str]]]:
    """Which cards of each hand are public after each step, from the state changes alone:
    a card taken from the pile, or the face-up card once in a hand, stays public until it
    leaves that hand."""
    known: list[set[str]] = [set(), set()]
    out: list[list[set[str]]] = [[set(), set()]]
    for prev, step in itertools.pairwise(steps):
        for seat in (0, 1):
            hand = set(step["hands"][seat])
            new = hand - set(prev["hands"][seat])
            public = {c for c in new if c in prev["pile"] or c == prev["face_up"]}
            known[seat] = (known[seat] | public) & hand
        out.append([set(known[0]), set(known[1])])
    return out


def step_dicts(played: Played, **kwargs: Any) -> list[dict[str, Any]]:
    replay = replay_game(
        played.deck, played.dealer, played.actions, final_cover=played.final_cover, **kwargs
    )
    assert replay.error is None, replay.error
    return list(replay.to_dict()["steps"])


def first_seed(predicate: Any, *, limit: int = 3000) -> Played:
    for seed in range(limit):
        played = play_default(seed, seed % 2)
        if predicate(played):
            return played
    raise AssertionError("no such game among the seeds tried")


def _has_trump_ace_take(p: Played) -> bool:
    game = Game.from_deck(p.deck, p.dealer)
    ace = f"A{game.trump.letter}"
    for move in p.actions:
        if move["action"] == "take" and game.pile and str(game.pile[-1]) == ace:
            return True
        game.play(move["action"])
    return False


def _draw_with_public_cover(p: Played) -> bool:
    if p.reason is not EndReason.DRAW_BY_FINAL_ANSWER:
        return False
    game = Game.from_deck(p.deck, p.dealer)
    for move in p.actions[:-1]:
        game.play(move["action"])
    answerer = 1 - (game.to_move or 0)
    return p.final_cover in [str(c) for c in game.known_cards(answerer)]


def _draw_with_hidden_cover(p: Played) -> bool:
    return p.reason is EndReason.DRAW_BY_FINAL_ANSWER and not _draw_with_public_cover(p)


@pytest.fixture(scope="module")
def games() -> dict[str, Played]:
    """Games that exercise every kind of step: swaps, trump takes, both kinds of draws."""
    return {
        "swap": first_seed(lambda p: any(m["action"].startswith("swap") for m in p.actions)),
        "ace": first_seed(_has_trump_ace_take),
        "draw_public": first_seed(_draw_with_public_cover),
        "draw_hidden": first_seed(_draw_with_hidden_cover),
        "plain": play_default(7, 1),
    }


# ---------------------------------------------------------------------------------------------
# replay.py


def test_every_step_is_the_rules_state_after_that_stored_action(games: dict[str, Played]) -> None:
    for name, played in games.items():
        got = step_dicts(played)
        want = expected_default_steps(played)
        assert len(got) == len(want), name
        for g, w in zip(got, want, strict=True):
            assert g == w, (name, w["index"])


def test_public_cards_are_exactly_those_taken_or_drawn_face_up(games: dict[str, Played]) -> None:
    for name, played in games.items():
        steps = step_dicts(played)
        tracked = public_by_tracking(steps)
        assert any(k for pair in tracked for k in pair), name
        for step, public in zip(steps, tracked, strict=True):
            for seat in (0, 1):
                assert set(step["known"][seat]) == public[seat], (name, step["index"], seat)
                assert set(step["known"][seat]) <= set(step["hands"][seat])


def test_a_drawn_game_shows_the_last_lead_then_the_automatic_cover(
    games: dict[str, Played],
) -> None:
    for name in ("draw_public", "draw_hidden"):
        played = games[name]
        steps = step_dicts(played)
        assert played.final_cover is not None
        assert len(steps) == len(played.actions) + 2
        lead, auto = steps[-2], steps[-1]
        answerer = 1 - played.actions[-1]["seat"]
        assert lead["action"] == played.actions[-1]["action"] and lead["seat"] != answerer
        assert lead["hands"][answerer] == [played.final_cover]
        assert lead["known"][answerer] == ([played.final_cover] if name == "draw_public" else [])
        assert lead["to_move"] == answerer and not lead["over"] and not lead["auto"]
        assert lead["pile"] + [played.final_cover] == auto["pile"]
        assert auto["seat"] == answerer and auto["auto"] and auto["over"]
        assert auto["action"] == f"cover {played.final_cover}" and auto["seconds"] is None
        assert auto["hands"] == [[], []] and auto["index"] == len(steps) - 1
    replay = replay_game(
        games["draw_hidden"].deck,
        games["draw_hidden"].dealer,
        games["draw_hidden"].actions,
        final_cover=games["draw_hidden"].final_cover,
    )
    assert (replay.rules_outcome, replay.rules_reason) == (None, "draw by final answer")


def test_rules_result_of_a_won_and_a_cut_game(games: dict[str, Played]) -> None:
    played = games["plain"]
    assert played.reason is EndReason.OUT
    last_mover = played.actions[-1]["seat"]
    replay = replay_game(played.deck, played.dealer, played.actions)
    assert (replay.rules_outcome, replay.rules_reason) == (last_mover, "out")
    assert replay.trump == played.deck[6][-1] and replay.dealer == played.dealer
    cut = replay_game(played.deck, played.dealer, played.actions[:5])
    assert (cut.rules_outcome, cut.rules_reason, cut.error) == (None, None, None)
    assert len(cut.steps) == 6 and not cut.steps[-1].over


def test_a_game_ended_by_the_turn_limit_replays_to_that_end() -> None:
    played = next(
        p
        for p in (play_default(s, s % 2, turn_limit=12) for s in range(200))
        if p.reason is EndReason.TURN_LIMIT
    )
    assert len(played.actions) == 12
    replay = replay_game(played.deck, played.dealer, played.actions, turn_limit=12)
    assert replay.error is None and len(replay.steps) == 13
    assert replay.steps[-1].over and replay.rules_reason == "turn limit"
    assert replay.rules_outcome is None and replay.steps[-1].to_move is None
    assert [s.to_dict() for s in replay.steps] == expected_default_steps(played, turn_limit=12)
    # A stored limit lower than the stored actions never cuts them.
    long = play_default(3, 1)
    low = replay_game(long.deck, long.dealer, long.actions, turn_limit=2)
    assert low.error is None and len(low.steps) == len(long.actions) + 1


def test_a_stored_seat_that_was_not_to_move_stops_the_replay(games: dict[str, Played]) -> None:
    played = games["plain"]
    actions = [dict(m) for m in played.actions]
    actions[3]["seat"] = 1 - actions[3]["seat"]
    replay = replay_game(played.deck, played.dealer, actions)
    assert replay.error is not None and "action 4" in replay.error
    assert len(replay.steps) == 4 and replay.rules_outcome is None
    # A seat the record did not give (not 0 or 1) is not checked.
    for unknown in (None, 7, "1"):
        loose = [{**m, "seat": unknown} for m in played.actions]
        replay = replay_game(played.deck, played.dealer, loose)
        assert replay.error is None and len(replay.steps) == len(loose) + 1
        assert [s.seat for s in replay.steps[1:]] == [m["seat"] for m in played.actions]


def test_an_unplayable_action_stops_there_and_a_bad_deck_gives_no_steps(
    games: dict[str, Played],
) -> None:
    played = games["plain"]
    bad = [*played.actions[:6], {"seat": played.actions[6]["seat"], "action": "take"}]
    if played.actions[6]["action"] == "take":  # take must be illegal here: lead on empty pile
        bad[-1]["action"] = "lead XX"
    replay = replay_game(played.deck, played.dealer, [*bad, *played.actions[7:]])
    assert replay.error is not None and replay.error.startswith("action 7 could not be replayed")
    assert len(replay.steps) == 7
    assert [s.to_dict() for s in replay.steps] == expected_default_steps(played)[:7]
    broken = replay_game(played.deck[:-1] + played.deck[:1], played.dealer, played.actions)
    assert broken.steps == [] and broken.trump == "?" and broken.error is not None


def test_a_drawn_game_with_a_wrong_or_missing_stored_cover_is_an_error(
    games: dict[str, Played],
) -> None:
    played = games["draw_hidden"]
    assert played.final_cover is not None
    wrong = next(c for c in played.deck if c != played.final_cover)
    for stored in (None, wrong):
        replay = replay_game(played.deck, played.dealer, played.actions, final_cover=stored)
        assert replay.error is not None and "automatic final cover" in replay.error
        assert len(replay.steps) == len(played.actions) + 1  # no extra step


def test_stored_seconds_and_action_text_are_shown_as_stored_or_made_visible(
    games: dict[str, Played],
) -> None:
    played = games["plain"]
    actions = [dict(m) for m in played.actions[:4]]
    actions[0]["seconds"] = 2  # an int: shown as a number
    actions[1]["seconds"] = True  # not a number of seconds
    actions[2]["seconds"] = "0.5"
    # The parser splits on a vertical tab; the viewer must show it as an escape.
    word, _, card = actions[3]["action"].partition(" ")
    actions[3]["action"] = f"{word}\x0b{card}" if card else f"\x0b{word}"
    steps = replay_game(played.deck, played.dealer, actions).steps
    assert [s.seconds for s in steps] == [None, 2.0, None, None, played.actions[3]["seconds"]]
    assert isinstance(steps[1].seconds, float)
    shown = steps[4].action
    assert shown is not None and "\x0b" not in shown and "\\x0b" in shown


def test_packed_steps_keep_only_changes_and_unpack_to_the_steps(games: dict[str, Played]) -> None:
    for name, played in games.items():
        steps = step_dicts(played)
        packed = pack_steps(steps)
        assert len(packed) == len(steps)
        assert js_unpack(packed) == steps, name
        assert unpack_steps(packed) == steps, name
        assert set(packed[0]) == {*"satupnfmo", "h0", "h1", "k0", "k1"}
        for prev, step, changes in zip(steps, steps[1:], packed[1:], strict=False):
            changed = {
                k for k in step if k not in ("index", "hands", "known") and step[k] != prev[k]
            }
            changed |= {
                f"{k[0]}{s}" for k in ("hands", "known") for s in (0, 1) if step[k][s] != prev[k][s]
            }
            short = {"seat": "s", "action": "a", "seconds": "t", "auto": "u", "pile": "p"}
            short |= {"stock": "n", "face_up": "f", "to_move": "m", "over": "o"}
            assert set(changes) == {short.get(k, k) for k in changed}, (name, step["index"])
            if "p" in changes:
                assert changes["p"] == "".join(step["pile"])


def js_unpack(packed: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``static/replay.js``'s ``unpack``, line for line."""
    keys = {"s": "seat", "a": "action", "t": "seconds", "u": "auto", "p": "pile", "n": "stock"}
    keys |= {"f": "face_up", "m": "to_move", "o": "over"}

    def cards(text: str) -> list[str]:
        return [text[i : i + 2] for i in range(0, len(text), 2)]

    out: list[dict[str, Any]] = []
    current: dict[str, Any] = {"hands": [[], []], "known": [[], []]}
    for index, changes in enumerate(packed):
        step: dict[str, Any] = {
            "index": index,
            "hands": list(current["hands"]),
            "known": list(current["known"]),
        }
        for k, name in keys.items():
            if k in changes:
                step[name] = cards(changes[k]) if k == "p" else changes[k]
            else:
                step[name] = current.get(name)
        for seat in (0, 1):
            if f"h{seat}" in changes:
                step["hands"][seat] = cards(changes[f"h{seat}"])
            if f"k{seat}" in changes:
                step["known"][seat] = cards(changes[f"k{seat}"])
        out.append(step)
        current = step
    return out


# ---------------------------------------------------------------------------------------------
# table_replay.py


def play_table(seed: int, players: int, dealer: int) -> tuple[list[str], list[dict[str, Any]]]:
    game = ClassicGame.new(seed=seed, dealer=dealer, players=players)
    rng = random.Random(seed)
    actions: list[dict[str, Any]] = []
    while not game.over:
        seat = game.to_move
        action = rng.choice(game.legal_actions())
        game.play(action)
        actions.append({"seat": seat, "action": action.text, "seconds": 0.5})
    return [c.text for c in game.deck or ()], actions


def expected_table_steps(
    deck: list[str], dealer: int, players: int, actions: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    game = ClassicGame.from_deck(deck, dealer, players=players)

    def state(index: int, move: dict[str, Any] | None, seat: int | None) -> dict[str, Any]:
        views = [game.view(s) for s in range(players)]
        covered: list[str] = []
        if move is not None and move["action"].startswith("cover"):
            covered = [c for pair in move["action"].split()[1:] for c in pair.split(":")]
        return {
            "index": index,
            "seat": seat,
            "action": None if move is None else move["action"],
            "seconds": None if move is None else move["seconds"],
            "hands": [[c.text for c in views[s].hand] for s in range(players)],
            # Seat s's public cards, as the next seat's view knows them.
            "known": [[c.text for c in views[(s + 1) % players].known[s]] for s in range(players)],
            "out": list(views[0].out),
            "led": [c.text for c in views[0].led],
            "covered": sorted(covered),
            "discard": len(views[0].discard),
            "stock": views[0].stock_count,
            "face_up": None if views[0].face_up is None else views[0].face_up.text,
            "leader": views[0].leader,
            "defender": views[0].defender,
            "to_move": views[0].to_move,
            "over": game.over,
        }

    steps = [state(0, None, None)]
    for i, move in enumerate(actions, start=1):
        seat = game.to_move
        game.play(move["action"])
        steps.append(state(i, move, seat))
    return steps


@pytest.mark.parametrize(("players", "seed"), [(2, 21), (3, 22), (4, 23)])
def test_table_steps_are_the_rules_states(players: int, seed: int) -> None:
    dealer = seed % players
    deck, actions = play_table(seed, players, dealer)
    result = replay_table_game(deck, dealer, players, actions)
    assert result["error"] is None
    steps = [dict(s, covered=sorted(s["covered"])) for s in result["steps"]]
    assert any(s["covered"] for s in steps) and any(any(k) for s in steps for k in s["known"])
    assert steps == expected_table_steps(deck, dealer, players, actions)
    game = ClassicGame.replay(deck, dealer, [m["action"] for m in actions], players=players)
    assert result["rules_loser"] == game.loser
    assert game.reason is not None and result["rules_reason"] == game.reason.value
    assert (result["trump"], result["dealer"], result["players"]) == (
        deck[3 * players][-1],
        dealer,
        players,
    )


def test_table_replay_stops_at_a_wrong_seat_or_an_unplayable_action() -> None:
    deck, actions = play_table(22, 3, 1)
    moved = [dict(m) for m in actions]
    moved[4]["seat"] = (moved[4]["seat"] + 1) % 3
    result = replay_table_game(deck, 1, 3, moved)
    assert result["error"] is not None and "action 5" in result["error"]
    assert len(result["steps"]) == 5
    assert result["rules_loser"] is None and result["rules_reason"] is None
    garbled = [*actions[:2], {"seat": actions[2]["seat"], "action": "fly"}, *actions[3:]]
    result = replay_table_game(deck, 1, 3, garbled)
    assert result["error"] is not None and "action 3 could not be replayed" in result["error"]
    assert len(result["steps"]) == 3
    bad = replay_table_game(deck, 1, 5, actions)
    assert bad["steps"] == [] and bad["error"] is not None and bad["trump"] == "?"


def test_table_action_text_is_made_visible() -> None:
    deck, actions = play_table(21, 3, 0)
    first = dict(actions[0])
    assert first["action"].startswith("lead ")
    # The parser splits on a vertical tab; the viewer's data must show it as an escape.
    first["action"] = first["action"].replace(" ", "\x0b", 1)
    result = replay_table_game(deck, 0, 3, [first, *actions[1:]])
    assert result["error"] is None
    shown = result["steps"][1]["action"]
    assert "\x0b" not in shown and shown == first["action"].replace("\x0b", "\\x0b")


def test_table_replay_keeps_a_long_game_past_a_lower_stored_limit() -> None:
    deck, actions = play_table(23, 4, 0)
    result = replay_table_game(deck, 0, 4, actions, turn_limit=3)
    assert result["error"] is None and len(result["steps"]) == len(actions) + 1


# ---------------------------------------------------------------------------------------------
# Pages over a small database.

T0 = datetime(2026, 4, 1, 9, 0, 0, tzinfo=UTC)
HOSTILE_VERSION = "2.0</script><img src=x onerror=alert(1)>\"'\u2028\u202e&amp;"
PLAIN_MARKUP = "</script><img src=x onerror=alert(1)>\"'&amp;"
TOURNAMENT_NAME = "cup </script><b onmouseover=x>'\""
FORFEIT_DETAIL = "Traceback: <img src=x onerror=alert(2)> </script>\u2028done"
FORFEIT_INPUT = "<script>alert(3)</script>\u2028'\""


@dataclass
class Site:
    client: TestClient
    subs: dict[str, int]
    game_ids: dict[str, int]
    finished: dict[int, datetime]
    plays: dict[int, Played]


def _submit(db: Database, bot: str, version: str, at: datetime) -> int:
    with db.session() as s:
        row = submit(
            NewSubmission(
                bot_name=bot,
                version=version,
                sha256=hashlib.sha256(f"{bot} {version}".encode()).hexdigest(),
                submitted_by="tester",
                submitted_at=at,
            ),
            session=s,
        ).submission
        assert row.id is not None
        return row.id


def _record(
    db: Database,
    series_id: int,
    number: int,
    seats: tuple[int, int],
    played: Played,
    at: datetime,
    forfeit: Forfeit | None = None,
) -> int:
    winner: int | None
    if forfeit is not None:
        winner, ending = 1 - forfeit.seat, forfeit.reason
    else:
        assert played.reason is not None
        ending = GameEndReason.from_rules(played.reason)
        winner = None if played.reason is not EndReason.OUT else played.actions[-1]["seat"]
    record = GameRecord(
        deck=tuple(played.deck),
        dealer=played.dealer,
        turn_limit=1000,
        moves=tuple(Move(m["seat"], m["action"], m["seconds"]) for m in played.actions),
        ending=ending,
        winner=winner,
        forfeit=forfeit,
        final_cover=played.final_cover,
        referee_version="review referee",
        started=at.timestamp() - 5,
        finished=at.timestamp(),
    )
    with db.session() as s:
        game = record_game(record, GamePlace(series_id, number, 1, seats), session=s).game
        assert game.id is not None
        return game.id


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    path: Path = tmp_path_factory.mktemp("webpages") / "kryt.db"
    db = open_database(f"sqlite:///{path}")
    try:
        subs = {
            "alpha0": _submit(db, "alpha", "0.9", T0),
            "alpha1": _submit(db, "alpha", "1.0", T0 + timedelta(minutes=1)),
            "bravo": _submit(db, "bravo", PLAIN_MARKUP, T0 + timedelta(minutes=2)),
            "alpha2": _submit(db, "alpha", HOSTILE_VERSION, T0 + timedelta(minutes=3)),
        }
        a1, a2, b = subs["alpha1"], subs["alpha2"], subs["bravo"]
        with db.session() as s:
            t = create_tournament(
                TournamentSpec(
                    name=TOURNAMENT_NAME,
                    seed=5,
                    series=[SeriesSpec(a1, b, 4, 1), SeriesSpec(a1, a2, 2, 2)],
                ),
                session=s,
            )
            assert t.id is not None
            s1, s2 = (x.id for x in series_of_tournament(t.id, session=s))
            assert s1 is not None and s2 is not None
        draw = first_seed(_draw_with_public_cover)
        forfeited = play_default(41, 1, stop_after=7)
        offender = 1 - forfeited.actions[-1]["seat"]
        plan: list[tuple[str, int, int, tuple[int, int], Played, Forfeit | None, int]] = [
            # name, series, number, seats, game, forfeit, minutes after T0 it finished
            ("won", s1, 0, (a1, b), play_default(7, 1), None, 30),
            ("draw", s1, 1, (b, a1), draw, None, 50),
            (
                "forfeit",
                s1,
                2,
                (a1, b),
                forfeited,
                Forfeit(
                    offender,
                    GameEndReason.MALFORMED_REPLY,
                    offending_input=FORFEIT_INPUT,
                    detail=FORFEIT_DETAIL,
                ),
                20,
            ),
            ("versions", s2, 0, (a2, a1), play_default(8, 0), None, 40),
        ]
        game_ids: dict[str, int] = {}
        finished: dict[int, datetime] = {}
        plays: dict[int, Played] = {}
        for name, sid, number, seats, played, forfeit, minutes in plan:
            at = T0 + timedelta(minutes=minutes)
            gid = _record(db, sid, number, seats, played, at, forfeit)
            game_ids[name], finished[gid], plays[gid] = gid, at, played
        with TestClient(create_app(db)) as client:
            yield Site(client, subs, game_ids, finished, plays)
    finally:
        db.close()


def embedded(page: str) -> dict[str, Any]:
    match = re.search(
        r'<script type="application/json" id="replay-data">(.*?)</script>', page, re.S
    )
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def test_game_pages_embed_the_rules_states_of_the_stored_moves(site: Site) -> None:
    for name in ("won", "draw", "forfeit", "versions"):
        gid = site.game_ids[name]
        played = site.plays[gid]
        page = site.client.get(f"/games/{gid}")
        assert page.status_code == 200
        data = embedded(page.text)
        want = expected_default_steps(played)
        assert js_unpack(data["replay"]["packed"]) == want, name
        api = site.client.get(f"/api/games/{gid}").json()
        assert api["replay"]["steps"] == want, name
        assert [m["action"] for m in api["actions"]] == [m["action"] for m in played.actions]
        assert "replay-error" not in page.text


def test_game_page_escapes_bot_text_in_html_and_in_the_embedded_json(site: Site) -> None:
    gid = site.game_ids["versions"]
    page = site.client.get(f"/games/{gid}").text
    data = embedded(page)
    # Markup and quotes come back exactly; U+2028 and the bidi override as visible escapes.
    shown = HOSTILE_VERSION.replace("\u2028", "\\u2028").replace("\u202e", "\\u202e")
    assert [(p["bot"], p["version"]) for p in data["players"]] == [
        ("alpha", shown),
        ("alpha", "1.0"),
    ]
    assert data["tournament_id"] is not None
    for raw in ("<img", "onerror=alert(1)>", "\u2028", "\u202e", "<b onmouseover"):
        assert raw not in page
    assert page.count("</script>") == 2  # the data's end and the viewer script's end
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;b onmouseover=x&gt;" in page


def test_forfeit_detail_and_input_are_escaped_everywhere(site: Site) -> None:
    gid = site.game_ids["forfeit"]
    page = site.client.get(f"/games/{gid}").text
    assert "<img src=x onerror=alert(2)>" not in page and "<script>alert(3)" not in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in page
    assert "\u2028" not in page
    forfeit = site.client.get(f"/api/games/{gid}").json()["forfeit"]
    assert forfeit["detail"] == FORFEIT_DETAIL and forfeit["offending_input"] == FORFEIT_INPUT
    data = embedded(page)
    assert data["forfeit"]["detail"] == FORFEIT_DETAIL
    played = site.plays[gid]
    steps = js_unpack(data["replay"]["packed"])
    assert len(steps) == len(played.actions) + 1 and not steps[-1]["over"]


@pytest.mark.parametrize(
    "path",
    [
        "/games/987654",
        "/games/0",
        "/games/-1",
        "/games/abc",
        "/games/1.5",
        "/games/99999999999999999999",
        "/games/%EF%BC%91",  # a fullwidth digit one
        "/bots/nobody",
        "/bots/ALPHA",
        "/bots/%00",
        "/bots/" + "a" * 41,
        "/bots/%3Cscript%3E",
        "/submissions/987654",
        "/series/987654",
    ],
)
def test_unknown_or_malformed_ids_are_a_404_page(site: Site, path: str) -> None:
    response = site.client.get(path)
    assert response.status_code == 404, response.text[:300]
    assert response.headers["content-type"].startswith("text/html")
    assert "Traceback" not in response.text and "<script>" not in response.text


@pytest.mark.parametrize("path", ["/api/games/987654", "/api/games/x", "/api/games/0"])
def test_unknown_or_malformed_ids_under_api_are_a_json_404(site: Site, path: str) -> None:
    response = site.client.get(path)
    assert response.status_code == 404
    assert set(response.json()) == {"error"}


def _bot_page_versions(page: str) -> list[tuple[str, str, str]]:
    body = page.split('id="versions"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(
        r'<a href="/submissions/(\d+)">(.*?)</a>.*?<td class="num">(.*?)</td>'
        r'<td class="num">(\d+)</td>',
        body,
        re.S,
    )
    return [(sid, version, games) for sid, version, _rating, games in rows]


def test_bot_page_lists_versions_newest_first_with_their_games(site: Site) -> None:
    page = site.client.get("/bots/alpha")
    assert page.status_code == 200
    rows = _bot_page_versions(page.text)
    escaped = (
        "2.0&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&#34;&#39;\\u2028\\u202e&amp;amp;"
    )
    # alpha 1.0 played the 3 games against bravo and the one against alpha 2; alpha 2 that
    # one; alpha 0.9 never played (one row, no rating).
    assert rows == [
        (str(site.subs["alpha2"]), escaped, "1"),
        (str(site.subs["alpha1"]), "1.0", "4"),
        (str(site.subs["alpha0"]), "0.9", "0"),
    ]
    assert "<th>Board</th>" not in page.text
    board = site.client.get("/api/leaderboard").json()
    ratings = {r["submission_id"]: r["rating"] for r in board["rows"]}
    body = page.text.split('id="versions"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r'<td class="num">([^<]*)</td><td class="num">\d+</td>', body)
    assert cells[0] == f"{ratings[site.subs['alpha2']]:.0f}"
    assert cells[1] == f"{ratings[site.subs['alpha1']]:.0f}"
    assert cells[2] == "—"


def test_bot_page_recent_games_once_each_newest_first(site: Site) -> None:
    page = site.client.get("/bots/alpha").text
    section = page.split("Recent games", 1)[1]
    listed = [int(g) for g in re.findall(r'class="game-link" href="/games/(\d+)"', section)]
    want = sorted(site.game_ids.values(), key=lambda g: site.finished[g], reverse=True)
    assert listed == want
    bravo = site.client.get("/bots/bravo").text.split("Recent games", 1)[1]
    listed = [int(g) for g in re.findall(r'class="game-link" href="/games/(\d+)"', bravo)]
    assert listed == [site.game_ids[n] for n in ("draw", "won", "forfeit")]


def test_bot_page_shows_at_most_its_recent_games_count(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    import leaderboard.web.bot_page as bot_page_module

    monkeypatch.setattr(bot_page_module, "BOT_RECENT_GAMES", 3)
    page = site.client.get("/bots/alpha").text
    section = page.split("Recent games", 1)[1]
    listed = [int(g) for g in re.findall(r'class="game-link" href="/games/(\d+)"', section)]
    want = sorted(site.game_ids.values(), key=lambda g: site.finished[g], reverse=True)
    assert listed == want[:3]


def test_bot_page_plots_the_latest_versions_live_elo(site: Site) -> None:
    page = site.client.get("/bots/alpha").text
    svgs = re.findall(r"<svg .*?</svg>", page, re.S)
    assert len(svgs) == 1
    root = ET.fromstring(svgs[0])
    title = root.find(f"{SVG}title")
    assert title is not None
    # alpha 2's one game: the start and one point after it; its version shown made visible.
    shown = HOSTILE_VERSION.replace("\u2028", "\\u2028").replace("\u202e", "\\u202e")
    assert title.text == f"Live Elo of alpha {shown}"
    assert len(root.findall(f"{SVG}circle")) == 2
    # bravo's only version played 3 counted games (the forfeit counts): 4 points.
    bravo = site.client.get("/bots/bravo").text
    (svg,) = re.findall(r"<svg .*?</svg>", bravo, re.S)
    assert len(ET.fromstring(svg).findall(f"{SVG}circle")) == 4


# ---------------------------------------------------------------------------------------------
# plot.py


@dataclass(frozen=True)
class Drawn:
    vertices: list[tuple[float, float]]
    markers: list[tuple[float, float, str]]
    y_ticks: list[tuple[float, float]]
    """(value, y of its grid line)"""
    x_ticks: list[tuple[float, float]]
    """(value, x of its label)"""
    reference: float | None
    errorbars: list[tuple[float, float, float]]
    """(x, y1, y2)"""
    root: ET.Element


def draw(points: Sequence[Point], **kwargs: Any) -> Drawn:
    args: dict[str, Any] = {"title": "t", "x_label": "x", "y_label": "y"} | kwargs
    root = ET.fromstring(line_plot(points, **args))
    line = root.find(f"{SVG}polyline")
    assert line is not None
    vertices = [
        (float(a), float(b)) for a, b in (v.split(",") for v in line.attrib["points"].split())
    ]
    markers = []
    for c in root.findall(f"{SVG}circle"):
        tip = c.find(f"{SVG}title")
        markers.append(
            (float(c.attrib["cx"]), float(c.attrib["cy"]), "" if tip is None else tip.text or "")
        )
    grids = [float(g.attrib["y1"]) for g in root.findall(f"{SVG}line[@class='grid']")]
    ticks = [t for t in root.findall(f"{SVG}text[@class='tick']")]
    y_labels = [t for t in ticks if t.attrib.get("text-anchor") == "end"]
    x_labels = [t for t in ticks if t.attrib.get("text-anchor") == "middle"]
    assert len(grids) == len(y_labels)
    for y, label in zip(grids, y_labels, strict=True):
        assert float(label.attrib["y"]) == pytest.approx(y + 4, abs=0.06)
    ref = root.find(f"{SVG}line[@class='reference']")
    bars = [
        (float(b.attrib["x1"]), float(b.attrib["y1"]), float(b.attrib["y2"]))
        for b in root.findall(f"{SVG}line[@class='errorbar']")
    ]
    return Drawn(
        vertices,
        markers,
        [(float(t.text or ""), y) for t, y in zip(y_labels, grids, strict=True)],
        [(float(t.text or ""), float(t.attrib["x"])) for t in x_labels],
        None if ref is None else float(ref.attrib["y1"]),
        bars,
        root,
    )


LEFT, RIGHT, TOP, BOTTOM = 56.0, WIDTH - 16.0, 16.0, HEIGHT - 36.0


def affine(pairs: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Slope and intercept through the first and last (value, coordinate) pairs."""
    (v0, c0), (v1, c1) = pairs[0], pairs[-1]
    slope = (c1 - c0) / (v1 - v0)
    return slope, c0 - slope * v0


def test_points_sit_on_one_affine_scale_with_the_ticks_and_the_reference() -> None:
    points = [Point(x, y) for x, y in [(3, 1490.0), (0, 1500.0), (1, 1523.5), (7, 1460.0)]]
    points += [Point(10, 1530.0), Point(5, 1500.0)]
    drawn = draw(points, reference=1500.0)
    data = sorted((p.x, p.y) for p in points)
    assert len(drawn.vertices) == len(data) == len(drawn.markers)
    # x: increasing affine map of the data's x; the ticks on the same map.
    sx, cx = affine([(x, vx) for (x, _), (vx, _) in zip(data, drawn.vertices, strict=True)])
    sy, cy = affine([(y, vy) for (_, y), (_, vy) in zip(data, drawn.vertices, strict=True)])
    assert sx > 0 and sy < 0
    for (x, y), (vx, vy), (mx, my, _) in zip(data, drawn.vertices, drawn.markers, strict=True):
        assert vx == pytest.approx(sx * x + cx, abs=0.11) and mx == vx
        assert vy == pytest.approx(sy * y + cy, abs=0.11) and my == vy
        assert LEFT < vx < RIGHT and TOP < vy < BOTTOM
    assert drawn.reference == pytest.approx(sy * 1500 + cy, abs=0.11)
    for value, y in drawn.y_ticks:
        assert y == pytest.approx(sy * value + cy, abs=0.11)
        assert TOP - 0.05 <= y <= BOTTOM + 0.05
    for value, x in drawn.x_ticks:
        assert x == pytest.approx(sx * value + cx, abs=0.11)
        assert value == int(value) and 0 <= value <= 10
    assert [v for v, _ in drawn.x_ticks] == [0, 2, 4, 6, 8, 10]
    # The data fills the frame but for a small margin: the extremes are near its edges.
    xs = [v[0] for v in drawn.vertices]
    ys = [v[1] for v in drawn.vertices]
    assert min(xs) - LEFT < 0.1 * (RIGHT - LEFT) and RIGHT - max(xs) < 0.1 * (RIGHT - LEFT)
    assert min(ys) - TOP < 0.1 * (BOTTOM - TOP) and BOTTOM - max(ys) < 0.1 * (BOTTOM - TOP)
    # y ticks are round and cover the data: about five of them, evenly spaced.
    values = [v for v, _ in drawn.y_ticks]
    assert 3 <= len(values) <= 8
    steps = {round(b - a, 6) for a, b in itertools.pairwise(values)}
    assert len(steps) == 1 and steps.pop() in {5, 10, 20, 25}
    assert values[0] - 25 <= 1460 and values[-1] + 25 >= 1530


def test_error_bars_span_each_interval_on_the_y_scale() -> None:
    points = [Point(1, 1500, 1400, 1620), Point(2, 1550, 1500, 1600), Point(3, 1480)]
    drawn = draw(points)
    sy, cy = affine(drawn.y_ticks)  # the scale of the grid lines
    for p, (_, vy) in zip(points, drawn.vertices, strict=True):
        assert vy == pytest.approx(sy * p.y + cy, abs=0.15)
    assert len(drawn.errorbars) == 2
    for p, (x, y1, y2), (vx, _) in zip(points, drawn.errorbars, drawn.vertices, strict=False):
        assert p.low is not None and p.high is not None
        assert x == vx
        # Which end is y1 does not matter: the same line either way.
        ends = sorted([y1, y2])
        assert ends[0] == pytest.approx(sy * p.high + cy, abs=0.15)
        assert ends[1] == pytest.approx(sy * p.low + cy, abs=0.15)
        assert min(y1, y2) >= TOP and max(y1, y2) <= BOTTOM
    # The interval widens the scale: the data points are not at the frame's edges.
    assert drawn.vertices[1][1] > TOP + 10


def test_a_reference_line_outside_the_data_is_still_in_the_frame() -> None:
    drawn = draw([Point(0, 1500), Point(1, 1540), Point(2, 1590)], reference=1450)
    assert drawn.reference is not None and TOP <= drawn.reference <= BOTTOM
    sy, cy = affine(drawn.y_ticks)
    assert drawn.reference == pytest.approx(sy * 1450 + cy, abs=0.15)
    assert max(y for _, y in drawn.vertices) < drawn.reference


def test_counted_x_axes_get_whole_ticks_even_when_the_round_step_is_not() -> None:
    # 0..13 over about six ticks: the round step would be 2.5; games are whole.
    drawn = draw([Point(i, 1500 + i) for i in range(14)])
    values = [v for v, _ in drawn.x_ticks]
    assert values and all(v == int(v) for v in values) and len(values) >= 3
    assert values == sorted(values) and values[0] >= 0 and values[-1] <= 13


def test_fractional_x_ticks_and_a_single_point() -> None:
    drawn = draw([Point(0.5, 1.0), Point(1.5, 2.0), Point(2.0, 1.5)])
    values = [v for v, _ in drawn.x_ticks]
    assert values == [0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0]
    labels = [t.text for t in drawn.root.findall(f"{SVG}text[@class='tick']")]
    assert "0.75" in labels and "1" in labels and "1.0" not in labels
    single = draw([Point(4, 7.0)])
    ((vx, vy),) = single.vertices
    assert vx == pytest.approx((LEFT + RIGHT) / 2, abs=0.06)
    assert vy == pytest.approx((TOP + BOTTOM) / 2, abs=0.06)
    assert [v for v, _ in single.x_ticks] == [3, 4, 5]


def test_markers_only_up_to_sixty_points_with_escaped_tooltips() -> None:
    labels = [f'game {i}: <b>"x"</b> & \u2028' for i in range(60)]
    drawn = draw([Point(i, i % 7, label=labels[i]) for i in range(60)])
    assert [m[2] for m in drawn.markers] == labels
    assert len(draw([Point(i, i % 7) for i in range(61)]).markers) == 0


def test_title_and_labels_are_escaped_in_attributes_and_text() -> None:
    title = "Live Elo of x \"><script>alert(1)</script> & 'q'"
    svg = line_plot([Point(0, 1), Point(1, 2)], title=title, x_label="<x&>", y_label='"y"')
    assert "<script>" not in svg
    root = ET.fromstring(svg)
    assert root.attrib["aria-label"] == title
    title_el = root.find(f"{SVG}title")
    assert title_el is not None and title_el.text == title
    axis = [t.text for t in root.findall(f"{SVG}text[@class='axis-label']")]
    assert axis == ["<x&>", '"y"']
