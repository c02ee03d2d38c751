"""Mutation review of the bot author's tools: ``kryt play`` (kryt/commands/play.py) and
``play_local`` / ``run_series`` (sdk/tools/local.py).

Each test pins behaviour a user sees that a mutant of those files changed without any other
test noticing; the expectations come from the documents (README "Five-minute tours",
docs/writing-a-bot.md, ../shared/rules.md "Series") or from an independent computation,
never from the code under test:

- ``test_a_seed_gives_the_same_games_in_the_table_the_lines_and_play_local``: ``kryt play
  --seed S`` of two deterministic bots prints, in its table and in its ``-v`` lines, the
  games ``play_local(..., seed=S)`` plays (same dealer, winner, ending and number of
  actions, game by game), the first dealer is ``first_dealer(S)`` and then the loser deals
  (a draw keeps the dealer, rules.md "Series"), checked on the printed rows. Kills a seed
  ignored, the dealer or the winner of the wrong seat printed, the per-game line's winner
  swapped.
- ``test_the_score_and_elo_are_those_of_the_games_in_the_table``: a run of 20 games (the
  most that still gets a table, README) of greedy against itself on a seed with draws and
  uneven wins counts seat 0's wins, draws and losses from the
  table rows, and the ``Score of A vs B: +W =D -L [s] n/N`` line and the Elo sign and value
  (logistic: ``-400 log10(1/s - 1)``) must agree with them. Kills the score counted for the
  wrong seat, wins and losses swapped, draws counted as anything else, the table left out
  at 20 games, the statistics computed from the wrong side.
- ``test_the_defaults_are_ten_games_one_plus_ten_seconds_and_the_wall_clock``: without
  ``-n`` a run plays 10 games; the control of a bot ``--time`` does not name is the default
  1 s a move, a 10 s bank, no increment (docs/writing-a-bot.md "Time"), on the wall clock
  (no CPU-clock warning).
- ``test_a_wrong_invocation_is_one_error_line_and_exit_2``: wrong flags, out-of-range
  numbers, a missing folder (named by the argument that was given), a bad book, contradictory
  time controls, SPRT words without ``--sprt``, a wrong number of bots: exit 2 and one
  ``error:`` line (a usage error adds one ``hint:`` line), no traceback, nothing played.
- ``test_a_per_bot_time_control_naming_no_bot_is_the_only_line_printed``: ``--time
  nobody=...`` (or a name both bots answer to) is refused before the ``sandbox:`` line is
  printed (found by this review: it was refused after it).
- ``test_play_local_defaults_and_seats_are_the_documented_ones``: ``play_local(a, b)``
  plays 10 games of seed 0 (docs/writing-a-bot.md "Helpers"), ``bot_a`` in seat 0, both
  under 1 s a move and a 10 s bank; two copies of one bot are told apart ("(2)").
- ``test_play_local_gives_each_seat_its_own_control_and_the_turn_limit``: ``seat_controls``,
  ``time_control`` and ``turn_limit`` reach the bots and the referee.
- ``test_play_local_plays_a_book_in_order_with_the_dealer_swapped``: a book is the
  duplicate format: each deck twice, the dealer swapped in the pair whatever the results.
- ``test_run_series_reports_each_move_for_the_seat_that_made_it``: the ``on_move`` hook of
  ``run_series`` names the seat that played each recorded move.
- ``test_play_local_handshakes_once_and_again_only_after_a_failure``: a well-behaved bot is
  handshaken once per series; a bot that crashed is handshaken again before its next game
  (docs: "a bot that failed is handshaken again").
- ``test_play_local_charges_the_first_hook_error_and_none_from_before_a_restart``: two hook
  errors before a decision forfeit with the first (the one the referee reads first over
  gRPC); an error said before the bot was restarted is not charged to the next game.
- ``test_play_local_records_the_time_a_move_took``: a move's ``seconds`` is what it took.
- ``test_play_local_forfeits_a_reply_over_64_kib_counted_in_bytes``: a reply over the 64 KiB
  limit (docs/protocol.md: gRPC refuses it, a malformed reply) is forfeited in-process too
  when it has fewer characters than the limit has bytes (multi-byte text).
- ``test_play_local_refuses_what_is_not_a_series``: one object in both seats, three
  players, zero games, one object in two seats of a table: a ``ValueError``.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from pathlib import Path

import pytest

from kryt.errors import ExitCode
from referee.match import Player
from referee.protocol.messages import GameEndReason, TimeControl
from referee.rules import Action, Game, View
from referee.series import first_dealer, next_dealer
from sdk import Bot, GameContext, GameResult, SeriesInfo
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.random.bot import RandomBot
from sdk.strategy import greedy_action
from sdk.tools.local import LocalPlayer, play_local, play_table_local, run_series
from tests.cli.helpers import kryt

pytestmark = pytest.mark.timeout(300)

FAST = ("--backend", "process")
ROOMY = TimeControl(move_ms=10_000, bank_ms=60_000)
"""No move is slow on a busy machine: time is not under test here."""

Row = tuple[int, int, str, str, int]
"""A game as ``kryt play`` prints it: number, dealer, winner name (or draw), ending, actions."""


@pytest.fixture(autouse=True)
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs from a folder of its own, on a console wide enough for the table's rows."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "250")
    return tmp_path


def table_rows(out: str) -> list[Row]:
    """The rows of the table printed under a run of at most 20 games."""
    rows = []
    for line in out.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        if len(cells) == 7 and cells[0].isdigit():
            rows.append((int(cells[1]), int(cells[2]), cells[3], cells[4], int(cells[5])))
    return rows


def verbose_rows(out: str, names: tuple[str, str]) -> list[Row]:
    """The games of a ``-v`` run, from its per-game lines."""
    pattern = re.compile(
        r"game \d+/\d+ \(series 1 game (\d+), dealer seat (\d)\): (.+?) by (.+?), (\d+) actions"
    )
    rows = []
    for line in out.splitlines():
        if found := pattern.match(line):
            number, dealer, said, ending, actions = found.groups()
            winner = "draw" if said == "draw" else said.removesuffix(" wins")
            assert winner in (*names, "draw"), line
            rows.append((int(number), int(dealer), winner, ending, int(actions)))
    return rows


def seat_of(winner: str, names: tuple[str, str]) -> int | None:
    return None if winner == "draw" else names.index(winner)


def test_a_seed_gives_the_same_games_in_the_table_the_lines_and_play_local(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed, games = "7", 6
    names = ("greedy 1.0.0", "greedy 1.0.0 (2)")
    result = play_local(GreedyBot(), GreedyBot(), games=games, seed=int(seed))
    expected = [
        (
            n,
            record.dealer,
            "draw" if record.winner is None else names[record.winner],
            record.ending.value,
            len(record.moves),
        )
        for n, record in sorted(result.games.items())
    ]
    assert len({row[2] for row in expected}) > 1, "the seed must give games both bots win"

    code, out, err = kryt(capsys, "play", "builtin:greedy", "builtin:greedy", "-n", str(games),
                          "--seed", seed, *FAST)  # fmt: skip
    assert code == 0, err
    rows = table_rows(out)
    assert rows == expected, out
    code, out, err = kryt(capsys, "play", "builtin:greedy", "builtin:greedy", "-n", str(games),
                          "--seed", seed, "-v", *FAST)  # fmt: skip
    assert code == 0, err
    assert verbose_rows(out, names) == expected, out

    # The dealing rules, on the printed rows (rules.md, Series).
    assert rows[0][1] == first_dealer(seed)
    for before, after in itertools.pairwise(rows):
        assert after[1] == next_dealer(before[1], seat_of(before[2], names)), rows


def test_the_score_and_elo_are_those_of_the_games_in_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = ("greedy 1.0.0", "greedy 1.0.0 (2)")
    code, out, err = kryt(capsys, "play", "builtin:greedy", "builtin:greedy", "-n", "20",
                          "--seed", "3", *FAST)  # fmt: skip
    assert code == 0, err
    rows = table_rows(out)
    assert [row[0] for row in rows] == list(range(1, 21)), out  # 20 games: still a table
    winners = [seat_of(row[2], names) for row in rows]
    wins, draws, losses = winners.count(0), winners.count(None), winners.count(1)
    # Greedy is deterministic: seed 3 has draws, and more games lost than won by seat 0.
    assert draws > 0 and wins != losses, rows
    score = (wins + draws / 2) / 20
    final = f"Score of {names[0]} vs {names[1]}: +{wins} ={draws} -{losses} [{score:.3f}] 20/20"
    said = [line for line in out.splitlines() if line.startswith("Score of")]
    assert said[-1] == final, out  # the last one, under the table
    elo = re.search(rf"{re.escape(names[0])} vs {re.escape(names[1])}: Elo (\S+) ", out)
    assert elo is not None, out
    if 0 < score < 1:
        assert float(elo.group(1)) == pytest.approx(-400 * math.log10(1 / score - 1), abs=0.06)
    else:
        assert elo.group(1) == "-inf"


def test_the_defaults_are_ten_games_one_plus_ten_seconds_and_the_wall_clock(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = kryt(capsys, "play", "builtin:greedy", "builtin:random", "--seed", "1",
                          "--time", "1=0.5+5", *FAST)  # fmt: skip
    assert code == 0, err
    assert [row[0] for row in table_rows(out)] == list(range(1, 11)), out
    assert re.search(r"\] 10/10$", out, re.MULTILINE), out
    shown = re.search(r"^time controls \(move\+bank\+increment\): (.+)$", err, re.MULTILINE)
    assert shown is not None, err
    assert shown.group(1) == "greedy 1.0.0 0.5+5+0, random 1.0.0 1+10+0", err
    assert "warning" not in err, err


def _deck_line() -> str:
    deck = Game.new(seed="kryt-review-book").deck
    assert deck is not None
    return " ".join(str(card) for card in deck)


BAD_INPUT: list[tuple[tuple[str, ...], str]] = [
    (("-n", "0"), "--games"),
    (("-n", "1000001"), "--games"),
    (("-j", "0"), "--jobs"),
    (("--report-every", "0"), "--report-every"),
    (("--no-such-flag",), "--no-such-flag"),
    (("--format", "bogus"), "--format"),
    (("--book", "no-such.book"), "no-such.book"),
    (("--book", "bad.book"), "bad.book line 1"),
    (("--format", "standard", "--book", "good.book"), "--book"),
    (("--time", "1+10", "--time", "2+10"), "--time"),
    (("--time", "1+10", "--move-seconds", "2"), "--move-seconds"),
    (("--move-seconds", "0"), "--move-seconds"),
    (("--bank-seconds", "-1"), "--bank-seconds"),
    (("--increment-seconds", "-1"), "--increment-seconds"),
    (("--time", "1=1+10", "--time", "1=2+10"), "two time controls"),
    (("--clock", "moon"), "clock"),
    (("--backend", "moon"), "--backend"),
    (("elo1=5",), "after --sprt"),
    (("--sprt", "elo9=1"), "elo9"),
]


@pytest.mark.parametrize(("args", "named"), BAD_INPUT, ids=[" ".join(a) for a, _ in BAD_INPUT])
def test_a_wrong_invocation_is_one_error_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], elsewhere: Path, args: tuple[str, ...], named: str
) -> None:
    (elsewhere / "bad.book").write_text("bad line\n")
    (elsewhere / "good.book").write_text(_deck_line() + "\n")
    bots = ("builtin:greedy", "builtin:random")
    code, out, err = kryt(capsys, "play", *bots, "-n", "2", "--backend", "process", *args)
    assert code == ExitCode.BAD_INPUT, (code, err)
    lines = err.splitlines()
    assert lines[0].startswith("error:") and named in lines[0], err
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("hint: ")), err
    assert "Score of" not in out, out


@pytest.mark.parametrize(
    ("bots", "named"),
    [
        (("builtin:greedy",), "got 1"),
        (("builtin:greedy", "builtin:random", "builtin:random"), "got 3"),
        (("builtin:greedy", "no-such-folder"), "no-such-folder"),
        (("no-such-folder", "builtin:greedy"), "no-such-folder"),
    ],
)
def test_the_wrong_bots_are_one_error_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], bots: tuple[str, ...], named: str
) -> None:
    code, _, err = kryt(capsys, "play", *bots, "-n", "2", *FAST)
    assert code == ExitCode.BAD_INPUT, (code, err)
    assert err.count("\n") == 1 and err.startswith("error:") and named in err, err
    if named == "no-such-folder":  # the refused bot is named first, as it was given
        assert err.startswith("error: no-such-folder: "), err


@pytest.mark.parametrize("spec", ["nobody=1+10", "greedy=1+10"])
def test_a_per_bot_time_control_naming_no_bot_is_the_only_line_printed(
    capsys: pytest.CaptureFixture[str], spec: str
) -> None:
    code, _, err = kryt(capsys, "play", "builtin:greedy", "builtin:greedy", "-n", "2",
                        "--time", spec, *FAST)  # fmt: skip
    assert code == ExitCode.BAD_INPUT, err
    assert err.count("\n") == 1 and err.startswith("error: --time"), err


class Recorder(RandomBot):
    """A seeded random bot that keeps what the referee told it."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed=seed)
        self.handshakes: list[SeriesInfo] = []
        self.starts: list[GameContext] = []

    def on_handshake(self, series: SeriesInfo) -> None:
        self.handshakes.append(series)

    def on_game_start(self, game: GameContext) -> None:
        self.starts.append(game)


def test_play_local_defaults_and_seats_are_the_documented_ones() -> None:
    a, b = Recorder(1), Recorder(2)
    result = play_local(a, b)
    assert sorted(result.games) == list(range(1, 11))
    first = Game.new(seed="kryt:0:deal:1").deck  # game n is dealt from game_seed(seed, n)
    assert first is not None and result.games[1].deck == tuple(str(c) for c in first)
    assert result.games[1].dealer == first_dealer(0)
    assert {start.seat for start in a.starts} == {0} and {s.seat for s in b.starts} == {1}
    for bot in (a, b):
        control = bot.handshakes[0].time_control
        assert (control.move_ms, control.bank_ms, control.increment_ms) == (1000, 10_000, 0)
    greedy = play_local(GreedyBot(), GreedyBot(), games=1, time_control=ROOMY)
    assert greedy.games[1].players == ("greedy", "greedy (2)")


def test_play_local_gives_each_seat_its_own_control_and_the_turn_limit() -> None:
    a, b = Recorder(1), Recorder(2)
    slow = TimeControl(move_ms=9_000, bank_ms=50_000, increment_ms=100)
    play_local(a, b, games=2, seat_controls=(ROOMY, slow), turn_limit=5)
    assert a.handshakes[0].time_control == ROOMY and b.handshakes[0].time_control == slow
    a, b = Recorder(1), Recorder(2)
    result = play_local(a, b, games=2, time_control=slow, turn_limit=5)
    assert a.handshakes[0].time_control == slow == b.handshakes[0].time_control
    assert {start.turn_limit for start in a.starts} == {5}
    for record in result.games.values():  # no game of 36 cards ends in 5 actions
        assert record.ending is GameEndReason.TURN_LIMIT and len(record.moves) == 5


def test_play_local_plays_a_book_in_order_with_the_dealer_swapped() -> None:
    decks: list[tuple[str, ...]] = []
    for seed in ("book-1", "book-2"):
        deck = Game.new(seed=seed).deck
        assert deck is not None
        decks.append(tuple(str(card) for card in deck))
    book = (decks[0], decks[1])
    result = play_local(
        GreedyBot(), RandomBot(seed=4), games=4, seed=9, book=book, time_control=ROOMY
    )
    games = [result.games[n] for n in range(1, 5)]
    assert [g.deck for g in games] == [decks[0], decks[0], decks[1], decks[1]]
    assert games[0].dealer != games[1].dealer and games[2].dealer != games[3].dealer


def test_run_series_reports_each_move_for_the_seat_that_made_it() -> None:
    seen: list[tuple[int, int]] = []
    players: tuple[Player, Player] = (LocalPlayer(GreedyBot()), LocalPlayer(RandomBot(seed=3)))
    result = run_series(
        players, 3, "hook", time_control=ROOMY, on_move=lambda n, seat, _r: seen.append((n, seat))
    )
    recorded = [
        (n, move.seat) for n, record in sorted(result.games.items()) for move in record.moves
    ]
    assert seen == recorded and {seat for _, seat in seen} == {0, 1}
    table_seen: list[int] = []
    play_table_local(
        [GreedyBot(), RandomBot(seed=1), RandomBot(seed=2)],
        games=1,
        time_control=ROOMY,
        on_move=lambda _n, seat, _r: table_seen.append(seat),
    )
    assert set(table_seen) == {0, 1, 2}


class CrashesOnce(Bot):
    """Greedy, but raises in its first ``act`` of game 1; counts its handshakes."""

    def __init__(self, crash: bool) -> None:
        self.crash = crash
        self.handshake_count = 0

    def on_handshake(self, series: SeriesInfo) -> None:
        self.handshake_count += 1

    def act(self, view: View) -> Action:
        if self.crash:
            self.crash = False
            raise RuntimeError("once")
        return greedy_action(view.legal_actions, view.trump)


def test_play_local_handshakes_once_and_again_only_after_a_failure() -> None:
    steady, flaky = CrashesOnce(crash=False), CrashesOnce(crash=True)
    result = play_local(steady, flaky, games=3, time_control=ROOMY)
    assert result.games[1].ending is GameEndReason.CRASH
    assert result.games[1].forfeit is not None and result.games[1].forfeit.seat == 1
    assert all(result.games[n].forfeit is None for n in (2, 3))
    assert steady.handshake_count == 1 and flaky.handshake_count == 2


class HookErrors(GreedyBot):
    """Raises in the hooks named, in game 1 (``act``, ``on_game_end``) or from game 2 on
    (``on_game_start``)."""

    def __init__(self, *hooks: str) -> None:
        self.hooks = hooks

    def act(self, view: View) -> Action:
        assert self.context is not None
        if "act" in self.hooks and self.context.game_number == 1:
            raise RuntimeError("boom in act")
        return super().act(view)

    def on_game_start(self, game: GameContext) -> None:
        if "on_game_start" in self.hooks and game.game_number >= 2:
            raise RuntimeError("boom in on_game_start")

    def on_game_end(self, result: GameResult) -> None:
        if "on_game_end" in self.hooks and result.game_number == 1:
            raise RuntimeError("boom in on_game_end")


def test_play_local_charges_the_first_hook_error_and_none_from_before_a_restart() -> None:
    # Over gRPC the referee reads the bot's messages in order: the first error it finds with
    # the next decision request is the one of on_game_end (docs/writing-a-bot.md).
    result = play_local(
        HookErrors("on_game_end", "on_game_start"), GreedyBot(), games=2, time_control=ROOMY
    )
    forfeit = result.games[2].forfeit
    assert forfeit is not None and forfeit.seat == 0
    assert "GameEnd: RuntimeError: boom in on_game_end" in forfeit.detail, forfeit.detail
    # A bot that crashed in act is restarted (a new process in the arena): what its old
    # self said after the crash is not charged to the next game.
    result = play_local(HookErrors("act", "on_game_end"), GreedyBot(), games=2, time_control=ROOMY)
    assert result.games[1].ending is GameEndReason.CRASH
    assert result.games[2].forfeit is None, result.games[2].forfeit


class Slow(RandomBot):
    """Takes 30 ms a move."""

    def act(self, view: View) -> Action:
        time.sleep(0.03)
        return super().act(view)


def test_play_local_records_the_time_a_move_took() -> None:
    result = play_local(Slow(seed=1), RandomBot(seed=2), games=1, time_control=ROOMY)
    slow = [move.seconds for move in result.games[1].moves if move.seat == 0]
    assert slow and min(slow) >= 0.025


class WideReply(Bot):
    """A legal action padded with 25,000 ideographic spaces: 75 KB of UTF-8 in fewer
    characters than the 64 KiB limit has bytes."""

    def act(self, view: View) -> str:
        return str(view.legal_actions[0]) + "\u3000" * 25_000


def test_play_local_forfeits_a_reply_over_64_kib_counted_in_bytes() -> None:
    result = play_local(WideReply(), GreedyBot(), games=1, time_control=ROOMY)
    record = result.games[1]
    assert record.ending is GameEndReason.MALFORMED_REPLY, record.ending
    assert record.forfeit is not None and record.forfeit.seat == 0
    assert "65536-byte limit" in record.forfeit.detail, record.forfeit.detail


def test_play_local_refuses_what_is_not_a_series() -> None:
    bot = GreedyBot()
    with pytest.raises(ValueError, match="two bot objects"):
        play_local(bot, bot)
    with pytest.raises(ValueError, match="two players"):
        run_series([LocalPlayer(GreedyBot()) for _ in range(3)], 1, 0)
    with pytest.raises(ValueError, match="at least one game"):
        play_local(GreedyBot(), GreedyBot(), games=0)
    with pytest.raises(ValueError, match="one bot object per seat"):
        play_table_local([bot, bot, GreedyBot()], games=1)
