"""The gauntlet's series, extension seeds and the crash traceback kept with a game."""

from __future__ import annotations

from itertools import combinations

import pytest

from arena.tournament.config import ConfigError, load_config, with_changes
from arena.tournament.gauntlet import GauntletError, gauntlet_pairs, gauntlet_seatings
from arena.tournament.seatings import table_seatings
from arena.tournament.tracebacks import crash_site, last_traceback, with_traceback
from referee.protocol.messages import GameEndReason
from referee.record import MAX_TEXT, Forfeit, GameRecord


def test_gauntlet_pairs_meet_every_other_entrant_once() -> None:
    assert gauntlet_pairs([4, 7, 9, 2], 9) == [(9, 4), (9, 7), (9, 2)]
    with pytest.raises(GauntletError, match="5 is not among"):
        gauntlet_pairs([1, 2], 5)


@pytest.mark.parametrize(("entrants", "size"), [(4, 2), (4, 3), (5, 3), (5, 4)])
def test_every_gauntlet_table_includes_the_gauntlet_bot(entrants: int, size: int) -> None:
    ids = list(range(10, 10 + entrants))
    seatings = gauntlet_seatings(ids, 12, size)
    assert all(s[0] == 12 and len(set(s)) == size for s in seatings)

    # Exactly the round robin's seatings that include the gauntlet bot (up to rotation).
    def canonical(seats: tuple[int, ...]) -> tuple[int, ...]:
        turn = seats.index(12)
        return seats[turn:] + seats[:turn]

    expected = {canonical(s) for s in table_seatings(ids, size) if 12 in s}
    assert sorted(seatings) == sorted(expected)
    others = len(list(combinations(range(entrants - 1), size - 1)))
    assert len(seatings) == others * _orders(size)


def _orders(size: int) -> int:
    return {2: 1, 3: 2, 4: 6}[size]


def test_the_gauntlet_setting_joins_the_bots_and_cannot_change() -> None:
    config = load_config(None, bots=["b", "c"], gauntlet="a")
    assert config.bots == ("a", "b", "c") and config.gauntlet == "a"
    assert load_config(None, bots=["b", "a"], gauntlet="a").bots == ("b", "a")
    with pytest.raises(ConfigError, match="gauntlet cannot change"):
        with_changes(config.to_json(), [("gauntlet", "b")])


TRACEBACK = (
    "some output\n"
    "Traceback (most recent call last):\n"
    '  File "/bot/bot.py", line 9, in act\n'
    "    return pick(view)\n"
    '  File "/bot/helper.py", line 6, in pick\n'
    '    return table["AS"]\n'
    "           ~~~~~^^^^^^\n"
    "KeyError: 'AS'\n"
    "printed after the crash\n"
)


def crash(detail: str) -> GameRecord:
    return GameRecord(
        deck=(),
        dealer=0,
        turn_limit=10,
        moves=(),
        ending=GameEndReason.CRASH,
        winner=0,
        forfeit=Forfeit(1, GameEndReason.CRASH, "", detail),
    )


def test_the_last_traceback_ends_at_its_exception_line() -> None:
    found = last_traceback(TRACEBACK)
    assert found.startswith("Traceback (most recent call last):")
    assert found.endswith("KeyError: 'AS'") and "printed after" not in found
    assert last_traceback("no traceback here") == ""


def test_a_reported_crash_keeps_the_traceback_cut_at_max_text() -> None:
    detail = "bot reported an error: DecisionRequest: KeyError: 'AS' at helper.py:6 in pick"
    kept = with_traceback(crash(detail), lambda seat: TRACEBACK if seat == 1 else "", wait=0)
    assert kept.forfeit is not None
    assert kept.forfeit.detail.startswith(detail + "\nTraceback")
    assert 'helper.py", line 6' in kept.forfeit.detail
    assert crash_site(kept.forfeit.detail) == "helper.py:6"
    huge = TRACEBACK.replace("KeyError: 'AS'", "KeyError: '" + "y" * 9000 + "'")
    long = with_traceback(crash(detail), lambda _seat: huge, wait=0)
    assert long.forfeit is not None and long.forfeit.detail.startswith(detail)
    assert long.forfeit.detail[:MAX_TEXT] == f"{detail}\n{last_traceback(huge)}"[:MAX_TEXT]
    assert long.forfeit.detail.endswith("more characters]")
    # Not a crash the bot reported (a lost connection): nothing is looked up.
    other = crash("connection to bot at x lost: UNAVAILABLE")
    assert with_traceback(other, lambda _seat: TRACEBACK, wait=0) is other
    assert crash_site(other.forfeit.detail if other.forfeit else None) == ""
    # A reported error that names no frame (act() returned None): no traceback to look for.
    returned = crash("bot reported an error: act() returned None; expected an action")
    assert with_traceback(returned, lambda _seat: TRACEBACK, wait=5) is returned


GO_PANIC = "\n".join(
    [
        "serving on /run/kryt/bot.sock",
        "panic: runtime error: index out of range [7] with length 6",
        "",
        "goroutine 1 [running]:",
        "main.pick(...)",
        "\t/bot/main.go:41 +0x1d",
        "exit status 2",
    ]
)


def test_a_crash_the_bot_did_not_report_keeps_how_its_process_ended_and_its_output() -> None:
    """A Go panic, a JVM exception, an exit: the lost connection says nothing; the process's
    end and its last output lines say what happened, whatever the language."""
    lost = crash("connection to bot lost: UNAVAILABLE: Socket closed")
    kept = with_traceback(
        lost,
        lambda seat: GO_PANIC if seat == 1 else "",
        death_of=lambda seat: "crashed, exit code 2" if seat == 1 else "",
        wait=0,
    )
    assert kept.forfeit is not None
    detail = kept.forfeit.detail
    assert detail.startswith("connection to bot lost: UNAVAILABLE: Socket closed\n")
    assert "\nits process: crashed, exit code 2\nlast output:\n" in detail
    assert "panic: runtime error: index out of range" in detail
    assert "\t/bot/main.go:41 +0x1d" in detail
    # Still running (it only hung up): nothing to add.
    alive = with_traceback(lost, lambda _seat: GO_PANIC, death_of=lambda _seat: "", wait=0)
    assert alive is lost
    # Applied once only (a record passed again keeps one copy).
    again = with_traceback(kept, lambda _s: GO_PANIC, death_of=lambda _s: "crashed", wait=0)
    assert again is kept


def test_a_tournament_name_must_be_printable() -> None:
    for bad in ("cup\x00", "cup\x1b[2J", "two\nlines"):
        with pytest.raises(ConfigError, match="name must be printable text"):
            load_config(None, bots=["builtin:random", "builtin:greedy"], name=bad)


def timed_out(detail: str) -> GameRecord:
    return GameRecord(
        deck=(),
        dealer=0,
        turn_limit=10,
        moves=(),
        ending=GameEndReason.TIMEOUT,
        winner=0,
        forfeit=Forfeit(1, GameEndReason.TIMEOUT, "", detail),
    )


def test_a_timeout_keeps_the_bots_last_output_escaped_and_bounded() -> None:
    """A hung bot's output usually says where it hung: kept like a crash's, once."""
    detail = "no decision within 4.050s (request 7)"
    output = "\n".join([*(f"step {n}" for n in range(100)), "stuck in \x1b[2Jsearch()"])
    kept = with_traceback(
        timed_out(detail),
        lambda seat: output if seat == 1 else "",
        death_of=lambda _seat: "",
        wait=0,
    )
    assert kept.forfeit is not None
    first, _, rest = kept.forfeit.detail.partition("\n")
    assert first == detail
    lines = rest.split("\n")
    assert lines[:2] == ["its process: still running", "last output:"]
    assert lines[2:] == [*(f"step {n}" for n in range(71, 100)), "stuck in \\x1b[2Jsearch()"]
    # Applied once only; nothing when the bot wrote nothing.
    again = with_traceback(kept, lambda _s: output, death_of=lambda _s: "", wait=0)
    assert again is kept
    quiet = timed_out(detail)
    assert with_traceback(quiet, lambda _s: "\n \n", death_of=lambda _s: "", wait=0) is quiet
    # A bot found dead by then says how it ended instead.
    dead = with_traceback(quiet, lambda _s: "bye", death_of=lambda _s: "crashed, exit code 1")
    assert dead.forfeit is not None
    assert dead.forfeit.detail == f"{detail}\nits process: crashed, exit code 1\nlast output:\nbye"
