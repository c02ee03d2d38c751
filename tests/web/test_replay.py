"""Replay states from stored actions, including stored data the engine refuses."""

from __future__ import annotations

from typing import Any

from leaderboard.web.replay import replay_game
from tests.web.world import drawn_by_final_answer, play


def stored(seed: int, dealer: int, stop_after: int | None = None) -> tuple[list[str], list[Any]]:
    game = play(seed, dealer, stop_after=stop_after)
    return game.deck, [
        {"seat": m.seat, "action": m.action, "seconds": m.seconds} for m in game.moves
    ]


def test_every_step_keeps_all_36_cards_and_matches_the_stock() -> None:
    deck, actions = stored(3, 1)
    replay = replay_game(deck, 1, actions)
    assert replay.error is None and len(replay.steps) == len(actions) + 1
    for step in replay.steps:
        cards = [*step.hands[0], *step.hands[1], *step.pile]
        assert len(cards) + step.stock == 36
        assert len(set(cards)) == len(cards)
        for seat in (0, 1):
            assert set(step.known[seat]) <= set(step.hands[seat])
    assert replay.trump == deck[6][-1]
    assert replay.steps[-1].over and replay.rules_reason == "out"


def test_taking_makes_cards_public() -> None:
    deck, actions = stored(5, 0)
    replay = replay_game(deck, 0, actions)
    takes = [s for s in replay.steps if s.action == "take"]
    assert takes, "this game has no take"
    for step in takes:
        assert step.seat is not None and step.known[step.seat]


def test_a_cut_short_game_replays_up_to_where_it_stopped() -> None:
    deck, actions = stored(999, 0, stop_after=9)
    replay = replay_game(deck, 0, actions)
    assert replay.error is None and len(replay.steps) == 10
    assert not replay.steps[-1].over and replay.rules_outcome is None


def test_an_illegal_stored_action_stops_the_replay_with_a_reason() -> None:
    deck, actions = stored(3, 1)
    # The first mover leads on an empty pile: taking is illegal there.
    replay = replay_game(deck, 1, [{"seat": 0, "action": "take", "seconds": 0.1}, *actions])
    assert len(replay.steps) == 1
    assert replay.error is not None and "action 1 could not be replayed" in replay.error
    garbled = [*actions[:4], {"seat": actions[4]["seat"], "action": "fly away", "seconds": 0}]
    replay = replay_game(deck, 1, garbled)
    assert len(replay.steps) == 5
    assert replay.error is not None and "action 5" in replay.error and "fly away" in replay.error


def test_a_wrong_seat_is_reported() -> None:
    deck, actions = stored(3, 1)
    actions[2] = {**actions[2], "seat": 1 - actions[2]["seat"]}
    replay = replay_game(deck, 1, actions)
    assert replay.error is not None and "action 3 is stored for seat" in replay.error
    assert len(replay.steps) == 3


def test_a_bad_deck_gives_no_steps_and_an_error() -> None:
    replay = replay_game(["AS"] * 36, 0, [])
    assert replay.steps == [] and replay.error is not None and "deck" in replay.error


def test_an_automatic_cover_where_the_rules_played_none_is_an_error() -> None:
    deck, actions = stored(3, 1, stop_after=4)
    replay = replay_game(deck, 1, actions, final_cover="6C")
    assert replay.error is not None and "automatic final cover" in replay.error


def test_a_missing_automatic_cover_is_an_error() -> None:
    seed, dealer = drawn_by_final_answer()
    deck, actions = stored(seed, dealer)
    replay = replay_game(deck, dealer, actions)
    assert replay.error is not None and "automatic final cover" in replay.error


def test_the_final_cover_is_a_separate_step() -> None:
    seed, dealer = drawn_by_final_answer()
    deck, actions = stored(seed, dealer)
    final_cover = play(seed, dealer).final_cover
    assert final_cover is not None
    replay = replay_game(deck, dealer, actions, final_cover=final_cover)
    assert replay.error is None and replay.rules_reason == "draw by final answer"
    assert (
        len(replay.steps) == len(actions) + 2 and replay.steps[-1].action == f"cover {final_cover}"
    )
    lead, cover = replay.steps[-2], replay.steps[-1]
    assert cover.auto and cover.pile[:-1] == lead.pile and not lead.over
    assert lead.to_move == 1 - (lead.seat or 0)


def test_a_lower_turn_limit_than_the_game_does_not_cut_the_replay() -> None:
    deck, actions = stored(3, 1)
    replay = replay_game(deck, 1, actions, turn_limit=5)
    assert replay.error is None and len(replay.steps) == len(actions) + 1


def test_the_embedded_game_data_holds_no_invisible_character_raw() -> None:
    """Bot text reaches the page's JSON: bidi overrides, line separators, DEL and tag
    characters are escapes in the page's source, the same strings once parsed; visible
    non-ASCII text (suits, Cyrillic names) stays as it is."""
    import json

    from leaderboard.web.pages import page_json

    name = "a\u202eb\x7f\u2028 \u2660 \u041a\u0438\u0440\u0438\u043b\u043b \U000e0041</script>"
    text = str(page_json({"replay": {"steps": []}, "names": [name], "actions": []}))
    assert json.loads(text)["names"] == [name]
    assert all(char.isprintable() for char in text), ascii(text)
    assert "\u2660 \u041a\u0438\u0440\u0438\u043b\u043b" in text and "</script" not in text
