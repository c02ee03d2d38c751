"""A mutation review of the game file (``leaderboard.gamefile``) and the replay check an
import runs (``referee.replay.verify``): what an export writes comes back exactly, and a
tampered record is refused before anything is stored.

Games are played by the rules core here and written as game files; each tamper is one a
person could make by editing a file (a move given to the other seat, a flipped result, a
timeout blamed on the seat that was not to move, a different ``TurnLimit``, a final cover
or ending the moves do not give), and docs/games-format.md says an import refuses such a
game in one line naming the record (``games.kgn:1: game 1 does not replay as recorded``).
Expected values come from the documented format and the rules, not from the code's output.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from leaderboard.gamefile import (
    GameEntry,
    GameFileError,
    Seat,
    format_games,
    from_json,
    load_games,
    parse_games,
    to_json,
)
from referee.protocol.messages import GameEndReason, TimeControl
from referee.record import Forfeit, GameRecord, Move
from referee.rules import Game

SEATS = (Seat("alpha", "1.0.0", "a" * 64), Seat("bravo", "2.0.0", "b" * 64))
NAMES = (SEATS[0].label, SEATS[1].label)


@dataclass(frozen=True)
class Played:
    """A game of the rules core: its deal, dealer, moves and the game at its end."""

    deck: tuple[str, ...]
    dealer: int
    moves: tuple[Move, ...]
    game: Any


def play(seed: int, *, turn_limit: int = 1000, stop: int | None = None) -> Played:
    """A random game (cut after ``stop`` moves), each move taking a whole millisecond."""
    rng = random.Random(seed)
    game: Any = Game.new(seed=seed, turn_limit=turn_limit)
    deck = tuple(str(card) for card in game.deck)
    dealer = game.dealer
    moves: list[Move] = []
    while not game.over and len(moves) != stop:
        seat = game.to_move
        action = rng.choice(game.legal_actions())
        game.play(action)
        moves.append(Move(seat, str(action), rng.randrange(1, 900) / 1000))
    return Played(deck, dealer, tuple(moves), game)


def finished(played: Played, turn_limit: int = 1000, **fields: Any) -> GameRecord:
    """The record of a game played to its end, as the rules end it."""
    game = played.game
    assert game.over
    values: dict[str, Any] = {
        "deck": played.deck,
        "dealer": played.dealer,
        "turn_limit": turn_limit,
        "moves": played.moves,
        "ending": GameEndReason.from_rules(game.reason),
        "winner": game.outcome,
        "final_cover": str(game.final_cover) if game.final_cover else None,
        "players": NAMES,
        "started": 1_780_000_000.25,
        "finished": 1_780_000_100.5,
    }
    return GameRecord(**(values | fields))


def entry(record: GameRecord, **place: Any) -> GameEntry:
    values: dict[str, Any] = {
        "record": record,
        "seats": SEATS,
        "number": 1,
        "attempt": 1,
        "tournament": "cup",
        "tournament_seed": 7,
        "tournament_status": "finished",
        "series_position": 0,
        "series_format": "standard",
        "series_games": 2,
        "series_seed": 99,
        "series_status": "finished",
        "series_a_seat": 0,
    }
    return GameEntry(**(values | place))


def load(text: str) -> list[GameEntry]:
    """What ``kryt games import games.kgn`` reads and checks before opening a database."""
    return load_games(text.encode(), source="games.kgn")


def refused(text: str, *fragments: str) -> str:
    """The one-line refusal of ``text``, which names the record and says it does not
    replay, and holds ``fragments``."""
    with pytest.raises(GameFileError) as caught:
        load(text)
    message = str(caught.value)
    assert message.startswith("games.kgn:1: game 1 does not replay as recorded: "), message
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def decided(seed_from: int = 0) -> Played:
    """A game someone won by going out."""
    for seed in range(seed_from, seed_from + 500):
        played = play(seed)
        reason = played.game.reason
        if reason is not None and GameEndReason.from_rules(reason) is GameEndReason.OUT:
            return played
    raise AssertionError("no game won by going out")  # pragma: no cover


def test_an_honest_game_file_loads_and_comes_back_exactly() -> None:
    record = finished(decided())
    (back,) = load(format_games([entry(record)]))
    assert back.record == record
    (again,) = from_json(to_json([back]))
    assert again.record == record


def test_a_move_given_to_the_other_seat_is_refused() -> None:
    """The seat of each move is the seat to move: a file that credits a move to the other
    bot (the action as played, only the seat changed) is refused."""
    played = decided()
    moves = list(played.moves)
    second = moves[1]
    moves[1] = replace(second, seat=1 - second.seat)
    text = format_games([entry(finished(played, moves=tuple(moves)))])
    refused(text, f"move 2 is recorded for seat {1 - second.seat}, not {second.seat}")


def test_a_flipped_result_is_refused() -> None:
    played = decided(50)
    winner = played.game.outcome
    text = format_games([entry(finished(played))])
    won, lost = ("1-0", "0-1") if winner == 0 else ("0-1", "1-0")
    tampered = text.replace(f'[Result "{won}"]', f'[Result "{lost}"]').replace(
        f"\n{won}\n", f"\n{lost}\n"
    )
    assert tampered != text
    refused(tampered, f"replay gives winner {winner}")


def test_a_timeout_blamed_on_the_seat_not_to_move_is_refused() -> None:
    """Only the seat asked for a move can run out of time (docs: the forfeit's seat to
    move); a crash may come at any time."""
    played = play(3, stop=10)
    waiting = 1 - played.game.to_move
    record = GameRecord(
        played.deck,
        played.dealer,
        1000,
        played.moves,
        GameEndReason.TIMEOUT,
        1 - waiting,
        forfeit=Forfeit(waiting, GameEndReason.TIMEOUT, "", "too slow"),
        players=NAMES,
        started=1.78e9,
        finished=1.78e9 + 1,
    )
    refused(format_games([entry(record)]), f"timeout is recorded for seat {waiting}, not to move")
    crash = replace(
        record,
        ending=GameEndReason.CRASH,
        forfeit=Forfeit(waiting, GameEndReason.CRASH, "", "died"),
    )
    (back,) = load(format_games([entry(crash)]))
    assert back.record == crash


def test_a_forfeit_after_the_game_ended_is_refused() -> None:
    """A game the moves finish cannot also have been forfeited."""
    played = decided(100)
    loser = 1 - played.game.outcome
    record = GameRecord(
        played.deck,
        played.dealer,
        1000,
        played.moves,
        GameEndReason.CRASH,
        1 - loser,
        forfeit=Forfeit(loser, GameEndReason.CRASH, "", "died"),
        players=NAMES,
        started=1.78e9,
        finished=1.78e9 + 1,
    )
    refused(format_games([entry(record)]), "the game is over by the rules, yet a forfeit")


def _draw_by_final_answer() -> Played:
    for seed in range(3000):
        played = play(seed)
        if played.game.final_cover is not None:
            return played
    raise AssertionError("no draw by the final answer")  # pragma: no cover


def test_a_final_cover_the_rules_do_not_give_is_refused() -> None:
    played = _draw_by_final_answer()
    real = str(played.game.final_cover)
    other = next(card for card in played.deck if card != real)
    record = finished(played, final_cover=other)
    refused(format_games([entry(record)]), f"automatic final cover {real!r}")


def test_a_turn_limit_changed_in_the_file_is_refused() -> None:
    """A game adjudicated at its turn limit (30 actions) does not replay under another
    limit: the moves no longer finish the game."""
    played = play(4, turn_limit=30)
    assert GameEndReason.from_rules(played.game.reason) is GameEndReason.TURN_LIMIT
    text = format_games([entry(finished(played, turn_limit=30))])
    (back,) = load(text)
    assert back.record.turn_limit == 30
    refused(
        text.replace('[TurnLimit "30"]', '[TurnLimit "1000"]'),
        "the recorded moves do not finish the game",
    )


def test_moves_of_a_double_forfeit_are_refused() -> None:
    """Neither bot started: no move can have been played."""
    played = play(5, stop=2)
    record = GameRecord(
        played.deck,
        played.dealer,
        1000,
        played.moves,
        GameEndReason.DOUBLE_FORFEIT,
        None,
        players=NAMES,
        started=1.78e9,
        finished=1.78e9,
        double_forfeit_detail="neither started",
    )
    refused(format_games([entry(record)]), "moves are recorded for a game neither bot started")


def test_an_illegal_move_of_a_voided_game_is_refused() -> None:
    """A voided game does not count, but its moves are still what the referee recorded:
    legal ones."""
    played = play(6, stop=4)
    hand = played.deck[0:6:2]
    stranger = next(card for card in ("AS", "AH", "AD", "AC") if card not in hand)
    moves = (Move(played.moves[0].seat, f"lead {stranger}", 0.5), *played.moves[1:])
    record = GameRecord(
        played.deck,
        played.dealer,
        1000,
        moves,
        GameEndReason.VOID,
        None,
        void_reason="engine went away",
        players=NAMES,
        started=1.78e9,
        finished=1.78e9,
    )
    refused(format_games([entry(record)]), "move 1:")


def test_a_start_without_a_time_zone_is_refused() -> None:
    """``Started`` is an instant: one without a time zone could be any of 24 hours."""
    text = format_games([entry(finished(decided()))])
    stamp = datetime.fromtimestamp(1_780_000_000.25, UTC).isoformat(timespec="microseconds")
    assert f'[Started "{stamp}"]' in text
    naive = text.replace(f'[Started "{stamp}"]', f'[Started "{stamp.removesuffix("+00:00")}"]')
    with pytest.raises(GameFileError, match="Started: the timestamp needs a time zone"):
        parse_games(naive, source="games.kgn")


def test_cpu_times_survive_the_json_export() -> None:
    """docs: JSON moves are ``{"seat", "action", "seconds"}`` and ``"cpu"`` when the move
    has a CPU time."""
    played = decided()
    moves = tuple(replace(m, cpu_seconds=(i % 7) / 1e4) for i, m in enumerate(played.moves))
    record = finished(played, moves=moves)
    data = json.loads(to_json([entry(record)]))
    assert [m.get("cpu") for m in data[0]["Moves"]] == [m.cpu_seconds for m in moves]
    (back,) = from_json(to_json([entry(record)]))
    assert back.record.moves == moves


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("Game", "3", r"Game must be an integer in \[1, 2\]"),
        ("SeriesGames", "3", "SeriesGames must be even"),
    ],
)
def test_a_game_number_the_series_cannot_hold_is_refused(
    key: str, value: str, message: str
) -> None:
    text = format_games([entry(finished(decided()), series_format="duplicate")])
    original = {"Game": "1", "SeriesGames": "2"}[key]
    tampered = text.replace(f'[{key} "{original}"]', f'[{key} "{value}"]')
    assert tampered != text
    with pytest.raises(GameFileError, match=message):
        parse_games(tampered, source="games.kgn")


def test_a_time_control_to_the_millisecond_survives_the_file() -> None:
    """docs: ``Seat0Time`` holds the seat's control in seconds as configuration.md gives it
    (milliseconds); export and import keep the record, so the clock check replays it."""
    controls = (
        TimeControl(move_ms=1000, bank_ms=1_234_567),
        TimeControl(move_ms=1000, bank_ms=10_000, grace_ms=1_000_001),
    )
    record = finished(decided(), time_controls=controls)
    (back,) = parse_games(format_games([entry(record)]))
    assert back.record.time_controls == controls


def test_a_tampered_json_file_is_refused_as_the_text_file_is() -> None:
    """The JSON export imports like the text file (docs): its games are replayed too."""
    played = decided()
    moves = list(played.moves)
    moves[1] = replace(moves[1], seat=1 - moves[1].seat)
    data = to_json([entry(finished(played, moves=tuple(moves)))]).encode()
    with pytest.raises(GameFileError, match="does not replay as recorded: move 2 is recorded"):
        load_games(data, source="games.json", json_name=True)


def test_one_bot_version_in_both_seats_is_refused() -> None:
    record = finished(decided())
    text = format_games([entry(record)]).replace("b" * 64, "a" * 64)
    with pytest.raises(GameFileError, match="are the same bot version"):
        parse_games(text, source="games.kgn")


def test_one_content_hash_under_two_names_is_refused_in_a_text_file() -> None:
    record = finished(decided())
    first = format_games([entry(record)])
    second = format_games([entry(record, number=2)]).replace('"bravo"', '"charlie"')
    with pytest.raises(GameFileError, match=r"it cannot also be charlie 2\.0\.0"):
        parse_games(first + "\n" + second, source="games.kgn")
