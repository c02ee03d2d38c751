"""The one record of a game refuses inconsistent endings before anything stores it."""

from __future__ import annotations

import pytest

from referee.protocol.messages import GameEndReason
from referee.record import MAX_TEXT, Forfeit, GameRecord, clip
from referee.rules import Game

DECK = tuple(str(c) for c in Game.new(seed=1).deck or ())


def record(**kw: object) -> GameRecord:
    fields: dict[str, object] = {
        "deck": DECK,
        "dealer": 0,
        "turn_limit": 1000,
        "moves": (),
        "ending": GameEndReason.OUT,
        "winner": 0,
    }
    return GameRecord(**(fields | kw))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {
                "ending": GameEndReason.TIMEOUT,
                "winner": 0,
                "forfeit": Forfeit(0, GameEndReason.TIMEOUT),
            },
            "so seat 1 wins",
        ),
        ({"ending": GameEndReason.TIMEOUT, "winner": 1}, "with forfeit None"),
        ({"ending": GameEndReason.OUT, "winner": None}, "needs a winner"),
        ({"ending": GameEndReason.VOID, "winner": 1, "void_reason": "x"}, "has no winner"),
        ({"ending": GameEndReason.VOID, "winner": None}, "void reason"),
        ({"ending": GameEndReason.TURN_LIMIT, "winner": None, "final_cover": "6C"}, "final cover"),
        ({"ending": GameEndReason.DRAW_BY_FINAL_ANSWER, "winner": None}, "final cover"),
        (
            {
                "ending": GameEndReason.CRASH,
                "winner": 1,
                "forfeit": Forfeit(0, GameEndReason.TIMEOUT),
            },
            "forfeit 'timeout' but 'crash'",
        ),
        (
            {"ending": GameEndReason.TURN_LIMIT, "winner": None, "double_forfeit_detail": "x"},
            "no double-forfeit detail",
        ),
    ],
)
def test_inconsistent_records_are_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        record(**fields)


def test_consistent_records_of_every_kind_are_accepted() -> None:
    record()
    record(ending=GameEndReason.DRAW_BY_FINAL_ANSWER, winner=None, final_cover="9H")
    record(ending=GameEndReason.DOUBLE_FORFEIT, winner=None)
    record(ending=GameEndReason.VOID, winner=None, void_reason="engine lost")
    record(
        ending=GameEndReason.MEMORY_LIMIT,
        winner=0,
        forfeit=Forfeit(1, GameEndReason.MEMORY_LIMIT, "", "killed"),
    )


def test_a_forfeit_names_a_forfeit_reason() -> None:
    with pytest.raises(ValueError, match="not a forfeit reason"):
        Forfeit(0, GameEndReason.OUT)


def test_clip_keeps_short_text_and_says_how_much_was_cut() -> None:
    assert clip("x" * MAX_TEXT) == "x" * MAX_TEXT
    cut = clip("y" * (MAX_TEXT + 7))
    assert cut.startswith("y" * MAX_TEXT) and cut.endswith("…[7 more characters]")


@pytest.mark.parametrize("more", [1, 23, 9_000, 10**6])
def test_clipping_a_clipped_text_changes_nothing(more: int) -> None:
    """A record is clipped where it is made, stored and imported: the first note stays,
    with the count of what the bot really sent beyond the limit."""
    once = clip("z" * (MAX_TEXT + more))
    assert clip(once) == once
    assert clip(clip(once)).endswith(f"…[{more} more characters]")


@pytest.mark.parametrize(
    "tail",
    [
        "…[5 more characters]x",  # text after the note: not a note
        "…[05 more characters]",  # no count of ours starts with 0
        "…[" + "9" * 20 + " more characters]",  # longer than any count of ours
        "[5 more characters]",  # no ellipsis
    ],
)
def test_only_a_note_of_clip_s_own_shape_right_after_the_limit_is_kept(tail: str) -> None:
    for text in ("w" * MAX_TEXT + tail, "w" * (MAX_TEXT - 1) + "…[5 more characters]"):
        cut = len(text) - MAX_TEXT
        assert clip(text) == text[:MAX_TEXT] + f"…[{cut} more characters]"
