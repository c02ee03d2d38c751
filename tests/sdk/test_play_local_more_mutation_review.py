"""Mutation review of ``kryt play`` (kryt/commands/play.py) and ``play_table_local``
(sdk/tools/local.py), second part: the areas tests/sdk/test_play_local_mutation_review.py
left out. Each test pins behaviour a user sees that a mutant changed without any other test
noticing; the expectations come from the documents (README "Five-minute tours",
docs/ratings.md "One pairing: kryt play", docs/games-format.md "Deal books",
docs/configuration.md "Exit codes", docs/writing-a-bot.md) or from an independent computation
(the rules engine playing the deck, the SPRT of the printed counts), never from the code under
test:

- ``--report-every``: the running score every N games and after the last one, not again
  when the last progress line said it, again under the table of a run of at most 20 games;
  ``--verbose`` prints no progress lines and no table; the default is every 10 games.
- SPRT: every progress line (and no other line) carries the LLR of its own score and the
  bounds; the run stops at the first game whose LLR reaches a bound (found from the table's
  winners) and says so; a run whose last game reaches the bound claims no early stop.
- ``--book``: a missing, empty, malformed or mis-sized book is one ``error:`` line naming the
  file and line (exit 2); ``--format duplicate`` with a book is accepted; the decks are played
  in order, each twice, round the book again (``play_local``), and ``-j 2``'s second series
  continues where the first stops: each game's dealer, winner and length are those the engine
  gives for that deck.
- the classic table (``play_table_local``): 2 and 4 seats, each bot under its own name, the
  given time control, the seed's first dealer and deck, a crashed bot handshaken again.
- a bot that never played: exit 1 with its own line, not "neither bot played", the score and
  Elo still printed, not its forfeits again; a bot that failed its first start only did play.
- Ctrl-C (a KeyboardInterrupt during the run, raised as the N-th game is counted): exit 130,
  the figures of the games played, one ``interrupted after N of G games`` line, no claim of an
  SPRT stop; before any game too.

A fault it found, fixed (kryt/commands/play.py ``_unfinished``): a Ctrl-C in a run with a bot
that had not started yet exited 1 without the ``interrupted`` line
(``test_ctrl_c_in_a_run_where_a_bot_never_started_exits_130`` and the two-bot case).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import kryt.commands.play as play_command
from kryt.errors import ExitCode
from leaderboard.ratings.match_stats import Sprt, trinomial_sample
from referee.protocol.messages import TimeControl
from referee.record import GameRecord
from referee.rules import ClassicAction, ClassicView, Game
from referee.series import game_deck
from referee.table import first_table_dealer
from sdk import GameContext, SeriesInfo
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.random.bot import RandomBot
from sdk.strategy import greedy_action
from sdk.tools.local import play_local, play_table_local
from tests.cli.helpers import kryt

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]
EXITS_AT_START = ROOT / "tests/referee/bots/exits-at-start"
FAST = ("--backend", "process", "--move-seconds", "5", "--bank-seconds", "60")
ROOMY = TimeControl(move_ms=10_000, bank_ms=60_000)
GREEDY, RANDOM = "greedy 1.0.0", "random 1.0.0"


@pytest.fixture(autouse=True)
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs from a folder of its own, on a console wide enough for the table's rows."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "250")
    return tmp_path


def score_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("Score of ")]


def table_rows(out: str) -> list[tuple[int, int, int, str, int]]:
    """(series, game, dealer, winner, actions) of each row of the table of a run."""
    rows = []
    for line in out.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        if len(cells) == 7 and cells[0].isdigit():
            rows.append((int(cells[0]), int(cells[1]), int(cells[2]), cells[3], int(cells[5])))
    return rows


def interrupt_at(monkeypatch: pytest.MonkeyPatch, games: int) -> None:
    """A Ctrl-C (KeyboardInterrupt) as the ``games``-th game of the run is counted."""
    real = play_command._Tally.add

    def add(self: play_command._Tally, series: int, number: int, record: GameRecord) -> None:
        real(self, series, number, record)
        if len(self.records) == games:
            raise KeyboardInterrupt

    monkeypatch.setattr(play_command._Tally, "add", add)


# ------------------------------------------------------------------------- --report-every


def test_the_score_every_ten_games_by_default_and_after_the_last_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """21 games (no table: more than 20): 10/21, 20/21, then 21/21 once, above the Elo."""
    code, out, err = kryt(capsys, "play", "builtin:greedy", "builtin:random", "-n", "21",
                          "--seed", "4", *FAST)  # fmt: skip
    assert code == 0, err
    said = [line.rsplit(" ", 1)[1] for line in score_lines(out)]
    assert said == ["10/21", "20/21", "21/21"], out
    assert not table_rows(out) and "(seat 0) vs" not in out, out
    lines = out.splitlines()
    assert lines[-1].startswith(f"{GREEDY} vs {RANDOM}: Elo "), out
    assert lines[-2] == score_lines(out)[-1], out


def test_the_score_every_n_games_then_again_under_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--report-every 3`` of 7 games: 3/7, 6/7 and 7/7 (the last game), the table of the
    7 games, the score under it; ``--verbose`` prints one line per game instead of progress
    lines and no table."""
    code, out, err = kryt(capsys, "play", "builtin:greedy", "builtin:random", "-n", "7",
                          "--report-every", "3", "--seed", "4", *FAST)  # fmt: skip
    assert code == 0, err
    said = [line.rsplit(" ", 1)[1] for line in score_lines(out)]
    assert said == ["3/7", "6/7", "7/7", "7/7"], out
    lines = out.splitlines()
    title = next(i for i, line in enumerate(lines) if "(seat 0) vs" in line)
    assert lines.index(score_lines(out)[2]) < title < len(lines) - 2, out
    assert lines[-2] == score_lines(out)[-1] and len(table_rows(out)) == 7, out

    code, out, err = kryt(capsys, "play", "builtin:greedy", "builtin:random", "-n", "3",
                          "--report-every", "1", "--seed", "4", "-v", *FAST)  # fmt: skip
    assert code == 0, err
    assert [line.rsplit(" ", 1)[1] for line in score_lines(out)] == ["3/3"], out
    assert sum(line.startswith("game ") for line in out.splitlines()) == 3, out
    assert not table_rows(out) and "(seat 0) vs" not in out, out


# ------------------------------------------------------------------------------------ SPRT


FIRST = """
from sdk import Bot, serve


class First(Bot):
    name = "first"
    version = "1.0.0"

    def act(self, view):
        return view.legal_actions[0]


serve(First())
"""


@pytest.fixture
def first_bot(elsewhere: Path) -> Path:
    """A deterministic bot that plays its first legal action: greedy beats it every game."""
    folder = elsewhere / "first"
    folder.mkdir()
    (folder / "bot.toml").write_text(
        'name = "first"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text(FIRST)
    return folder


def test_sprt_progress_lines_say_their_llr_and_the_run_stops_at_the_crossing(
    capsys: pytest.CaptureFixture[str], first_bot: Path
) -> None:
    """docs/ratings.md: "The LLR is printed with the running score and at the end"; the run
    "stops as soon as" a bound is reached. Each progress line (and no other line) says the
    LLR of its own counts; the games played are those up to the first crossing of the
    table's results (three wins here: 2 give LLR 1.06, 3 give 1.59 >= log(0.8/0.2)). A run
    whose last game reaches the bound played every game: no early stop is claimed."""
    words = ["elo0=0", "elo1=300", "alpha=0.2", "beta=0.2"]
    test = Sprt.parse(words)
    code, out, err = kryt(capsys, "play", "builtin:greedy", str(first_bot), "-n", "40",
                          "--report-every", "2", "--seed", "6", "--sprt", *words,
                          *FAST)  # fmt: skip
    assert code == 0, err
    rows = table_rows(out)
    wins = draws = losses = 0
    crossed_at = None
    for index, row in enumerate(rows, start=1):
        wins += row[3] == GREEDY
        losses += row[3] == "first 1.0.0"
        draws += row[3] == "draw"
        llr = test.llr(trinomial_sample(wins, draws, losses))
        if llr >= test.upper or llr <= test.lower:
            crossed_at = index
            break
    assert crossed_at == len(rows) == 3, out
    lines = out.splitlines()
    title = next(i for i, line in enumerate(lines) if "(seat 0) vs" in line)
    progress = lines[:title]
    assert len(progress) == crossed_at // 2 and all(
        line.startswith("Score of ") for line in progress
    ), out
    for line in progress:
        found = re.fullmatch(
            r"Score of .+: \+(\d+) =(\d+) -(\d+) \[[\d.]+\] (\d+)/40  LLR (-?\d+\.\d\d)"
            r" \((-?\d+\.\d\d), (-?\d+\.\d\d)\)",
            line,
        )
        assert found is not None, line
        w, d, lost, done = (int(found.group(i)) for i in range(1, 5))
        assert w + d + lost == done and done % 2 == 0, line
        assert float(found.group(5)) == pytest.approx(
            test.llr(trinomial_sample(w, d, lost)), abs=0.006
        )
        assert (found.group(6), found.group(7)) == (f"{test.lower:.2f}", f"{test.upper:.2f}")
    final = f"+{wins} ={draws} -{losses} [{(wins + draws / 2) / crossed_at:.3f}] {crossed_at}/40"
    assert score_lines(out)[-1].endswith(final), out
    summary = r"^SPRT elo0=0 elo1=300 alpha=0.2 beta=0.2: LLR \S+ \(\S+ \S+\) H1 accepted$"
    assert re.search(summary, out, re.MULTILINE), out
    assert f"stopped early by the SPRT after {crossed_at} of 40 games" in out

    code, out, err = kryt(capsys, "play", "builtin:greedy", str(first_bot), "-n", str(crossed_at),
                          "--seed", "6", "--sprt", *words, *FAST)  # fmt: skip
    assert code == 0, err
    assert len(table_rows(out)) == crossed_at and re.search(summary, out, re.MULTILINE), out
    assert "stopped early" not in out, out


# ------------------------------------------------------------------------------------ book


def _deck(seed: str) -> tuple[str, ...]:
    deck = Game.new(seed=seed).deck
    assert deck is not None
    return tuple(str(card) for card in deck)


def _greedy_game(deck: tuple[str, ...], dealer: int) -> tuple[int | None, int]:
    """The winner and the number of actions of greedy against greedy on ``deck``: the
    engine itself, no referee."""
    game = Game.from_deck(deck, dealer)
    while not game.over:
        seat = game.to_move
        assert seat is not None
        game.play(greedy_action(game.view(seat).legal_actions, game.trump))
    return game.outcome, len(game.history)


BAD_BOOKS: list[tuple[str, str | None, str]] = [
    ("missing", None, "cannot read the deal book"),
    ("empty", "", "no decks"),
    ("comments only", "# nothing yet\n\n   # still nothing\n", "no decks"),
    ("a bad card", "# one\n\n{deck35} XZ\n", "line 3, card 36: 'XZ' is not a card"),
    ("a card twice", "{deck35} {first}\n", "line 1, card 36: '{first}' is card 1 again"),
    ("35 cards", "{deck}\n{deck35}\n", "line 2: a deck has 36 cards, got 35; missing: {last}"),
]


@pytest.mark.parametrize(
    ("text", "said"), [(t, s) for _, t, s in BAD_BOOKS], ids=[i for i, _, _ in BAD_BOOKS]
)
def test_a_book_that_cannot_be_played_is_one_error_line_naming_it(
    capsys: pytest.CaptureFixture[str], elsewhere: Path, text: str | None, said: str
) -> None:
    """docs/games-format.md: "A bad line stops the run with one line naming the file, the
    line and the token"; nothing is played, no sandbox line."""
    deck = _deck("playmore-1")
    fill = {"deck": " ".join(deck), "deck35": " ".join(deck[:35]), "first": deck[0],
            "last": deck[35]}  # fmt: skip
    book = elsewhere / "my-book.txt"
    if text is not None:
        book.write_text(text.format(**fill), encoding="utf-8")
    code, out, err = kryt(capsys, "play", "builtin:greedy", "builtin:random", "-n", "2",
                          "--book", "my-book.txt", *FAST)  # fmt: skip
    assert code == ExitCode.BAD_INPUT, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "my-book.txt" in err, err
    assert said.format(**fill) in err, err
    assert out == ""


def test_a_book_plays_its_decks_in_order_and_the_next_series_goes_on_from_there(
    capsys: pytest.CaptureFixture[str], elsewhere: Path
) -> None:
    """docs/games-format.md: the decks "in order, each twice with the hands swapped ... With
    kryt play -j N each parallel series continues the book where the previous one stops."
    Four games in two series over three decks: series 1 plays deck 1 twice, series 2 deck 2
    twice. Greedy against itself is deterministic: each row's winner and length are the
    engine's for its deck and dealer. ``--format duplicate`` with a book is accepted; the
    file format's comments, blank lines, commas, ``10`` and lower case are read; the book's
    name is shown escaped."""
    decks = [_deck(f"playmore-{k}") for k in (1, 2, 4)]
    lengths = {_greedy_game(deck, 0)[1] for deck in decks}
    assert len(lengths) == 3, "the decks must be told apart by their games' lengths"
    book = elsewhere / "deals\x1b[31m.txt"
    book.write_text(
        "\ufeff# three decks, as the file format allows them\n\n"
        + " ".join(decks[0]).lower()
        + "\n"
        + ",".join(decks[1]).replace("T", "10")
        + "   # the second\n"
        + " ".join(decks[2])
        + "\n",
        encoding="utf-8",
    )
    code, out, err = kryt(capsys, "play", "builtin:greedy", "builtin:greedy", "-n", "4",
                          "-j", "2", "--format", "duplicate", "--book", str(book),
                          "--seed", "3", *FAST)  # fmt: skip
    assert code == 0, err
    shown = str(book).replace("\x1b", "\\x1b")  # as sandbox.death.printable shows it
    assert f"deal book: 3 decks from {shown}" in err, err
    assert "\x1b" not in err
    rows = sorted(table_rows(out))
    names = (GREEDY, f"{GREEDY} (2)")
    assert [(series, number) for series, number, *_ in rows] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    for series, number, dealer, winner, actions in rows:
        expected, length = _greedy_game(decks[series - 1], dealer)
        assert actions == length, (series, number, out)
        assert winner == ("draw" if expected is None else names[expected]), (series, number)
    assert rows[0][2] != rows[1][2] and rows[2][2] != rows[3][2], rows


def test_play_local_goes_round_the_book_again() -> None:
    """docs/games-format.md: "starting again at the first deck when there are more deal
    pairs than decks": 8 games over 3 decks deal 1 1 2 2 3 3 1 1."""
    decks = tuple(_deck(f"playmore-{k}") for k in (1, 2, 4))
    result = play_local(GreedyBot(), GreedyBot(), games=8, seed=5, book=decks, time_control=ROOMY)
    order = [0, 0, 1, 1, 2, 2, 0, 0]
    assert [result.games[n].deck for n in range(1, 9)] == [decks[k] for k in order]


# ---------------------------------------------------------------------------- classic table


class Seated(RandomBot):
    """A seeded random bot with a name of its own, listing the classic ruleset; keeps its
    handshakes and game starts, and raises in its first ``act_table`` when told to."""

    def __init__(self, seed: int, crash: bool = False) -> None:
        super().__init__(seed=seed)
        self.crash = crash
        self.handshakes: list[SeriesInfo] = []
        self.starts: list[GameContext] = []

    def on_handshake(self, series: SeriesInfo) -> None:
        self.handshakes.append(series)

    def on_game_start(self, game: GameContext) -> None:
        self.starts.append(game)

    def act_table(self, view: ClassicView) -> ClassicAction:
        if self.crash:
            self.crash = False
            raise RuntimeError("once")
        return super().act_table(view)


def seated(name: str, seed: int, crash: bool = False) -> Seated:
    """A :class:`Seated` bot called ``name`` (a bot's name is a class attribute)."""
    named: type[Seated] = type(f"Seated-{name}", (Seated,), {"name": name})
    return named(seed, crash)


@pytest.mark.parametrize("seats", [2, 4])
def test_a_table_seats_every_bot_under_its_name_seed_and_control(seats: int) -> None:
    """writing-a-bot.md: ``play_table_local([bot0, bot1, ...], games, seed)`` plays a table
    series in-process, ``bots[s]`` at seat ``s`` (2-4 bots): each bot sees the table's size,
    the others' names, the time control given; game 1 is the seed's deck and first dealer."""
    bots = [seated(f"bot-{seat}", seat + 1) for seat in range(seats)]
    control = TimeControl(move_ms=7_000, bank_ms=70_000, increment_ms=30)
    result = play_table_local(bots, 2, seed="table-review", time_control=control)
    assert sorted(result.games) == [1, 2]
    first = result.games[1]
    assert first.seats == seats and first.players == tuple(f"bot-{s}" for s in range(seats))
    assert first.dealer == first_table_dealer("table-review", seats)
    assert first.deck == tuple(str(card) for card in game_deck("table-review", 1))
    for seat, bot in enumerate(bots):
        [series] = bot.handshakes
        assert series.ruleset == "classic" and series.players == seats
        assert series.time_control == control
        assert list(series.seat_names) == [f"bot-{s}" for s in range(seats)]
        assert {start.seat for start in bot.starts} == {seat}


def test_a_table_bot_that_crashed_is_handshaken_again() -> None:
    """play_table_local: "Exceptions in a bot's hooks forfeit as in play_local", where "a bot
    that failed is handshaken again before its next game"."""
    bots = [seated("steady", 1), seated("flaky", 2, crash=True), seated("other", 3)]
    result = play_table_local(bots, 2, seed="crash-review", time_control=ROOMY)
    forfeit = result.games[1].forfeit
    assert forfeit is not None and forfeit.seat == 1, result.games[1]
    assert result.games[2].forfeit is None
    assert [len(bot.handshakes) for bot in bots] == [1, 2, 1]


# ---------------------------------------------------------------------------- never played


def test_one_bot_that_never_started_is_named_alone_after_the_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """README: "A bot that never starts makes the run fail (exit 1: NAME VERSION never
    played: ... with its error; when neither starts, neither bot played ...)". One bot: its
    line with its process and output below, the other bot not named, the score and Elo
    still printed, and its start-up failures not repeated as forfeits."""
    code, out, err = kryt(capsys, "play", str(EXITS_AT_START), "builtin:greedy", "-n", "2",
                          "--seed", "1", *FAST)  # fmt: skip
    assert code == ExitCode.FAILED, err
    lines = err.splitlines()
    assert "neither bot played" not in err and "forfeited series" not in err, err
    at = next(i for i, line in enumerate(lines) if "never played" in line)
    assert lines[at].startswith(
        "exits-at-start 1.0.0 never played: every game was its start-up failure ("
    ), err
    assert lines[at + 1 : at + 4] == [
        "    its process: crashed, exit code 1",
        "    last output:",
        "    this bot refuses to start",
    ], err
    assert sum("never played" in line for line in lines) == 1, err
    assert score_lines(out)[-1].endswith("+0 =0 -2 [0.000] 2/2"), out
    assert f"exits-at-start 1.0.0 vs {GREEDY}: Elo -inf" in out, out


FLAKY = """
import os
import sys

from sdk import serve
from sdk.examples.greedy.bot import GreedyBot

MARK = {mark!r}
if not os.path.exists(MARK):
    open(MARK, "w").close()
    sys.exit("not yet")


class Flaky(GreedyBot):
    name = "flaky"
    version = "1.0.0"


serve(Flaky())
"""


def test_a_bot_that_failed_only_its_first_start_played(
    capsys: pytest.CaptureFixture[str], elsewhere: Path
) -> None:
    """ "Never played" is every game its start-up failure: a bot that fails its first start
    and plays the next games did play (exit 0); its failure is its last forfeit, said once."""
    folder = elsewhere / "flaky"
    folder.mkdir()
    (folder / "bot.toml").write_text(
        'name = "flaky"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text(FLAKY.format(mark=str(elsewhere / "started")))
    code, out, err = kryt(capsys, "play", "builtin:greedy", str(folder), "-n", "2",
                          "--seed", "1", *FAST)  # fmt: skip
    assert code == 0, err
    assert "never played" not in err, err
    assert "flaky 1.0.0 forfeited series 1 game 1 (startup failure): " in err, err
    assert [row[4] > 0 for row in table_rows(out)] == [False, True], out


# ------------------------------------------------------------------------------- Ctrl-C


INTERRUPTED = (
    "interrupted after {} of {} games: these figures are all there is (kryt play stores nothing)"
)


def test_ctrl_c_sums_up_the_games_played_and_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/configuration.md: 130 is "interrupted by Ctrl-C"; kryt play says what it has
    (the table, score, Elo and SPRT of the games played) and that it stores nothing, in one
    line of its own (no second ``interrupted``), and does not claim an SPRT stop."""
    interrupt_at(monkeypatch, 3)
    code, out, err = kryt(capsys, "play", "builtin:greedy", "builtin:random", "-n", "10",
                          "--seed", "4", "--sprt", "elo0=0", "elo1=5", *FAST)  # fmt: skip
    assert code == ExitCode.INTERRUPTED, err
    assert err.splitlines()[-1] == INTERRUPTED.format(3, 10), err
    assert "interrupted" not in err.splitlines()[:-1], err
    assert len(table_rows(out)) == 3, out
    assert score_lines(out)[-1].endswith(" 3/10"), out
    assert f"{GREEDY} vs {RANDOM}: Elo " in out
    assert re.search(r"^SPRT elo0=0 elo1=5 alpha=0.05 beta=0.05: LLR .* continue$", out, re.M)
    assert "stopped early" not in out


def test_ctrl_c_before_the_first_game_ends_says_zero_games(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted while the bots start: no bot is said to have never played (no game was
    played at all), exit 130."""
    import arena.tournament.seats as seats

    def stopped(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(seats, "SandboxSlot", stopped)
    code, out, err = kryt(capsys, "play", "builtin:greedy", "builtin:random", "-n", "10", *FAST)
    assert code == ExitCode.INTERRUPTED, err
    assert err.splitlines()[-1] == INTERRUPTED.format(0, 10), err
    assert "never played" not in err and "neither" not in err, err
    assert score_lines(out) == [f"Score of {GREEDY} vs {RANDOM}: +0 =0 -0 [0.500] 0/10"], out


def test_ctrl_c_in_a_run_where_a_bot_never_started_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two start-up failures, then Ctrl-C with 8 of 10 games to go: the bot may yet start
    (a bot that failed its first start can play the next games), and the user stopped the
    run: it is an interrupted run (docs/configuration.md: 130, "interrupted by Ctrl-C (at any
    moment ...)"), whose figures are all there is."""
    interrupt_at(monkeypatch, 2)
    code, _out, err = kryt(capsys, "play", "builtin:greedy", str(EXITS_AT_START), "-n", "10",
                           "--seed", "1", *FAST)  # fmt: skip
    assert INTERRUPTED.format(2, 10) in err, err
    assert code == ExitCode.INTERRUPTED, err
    assert "never played" in err, err  # said, but as a note of the interrupted run


def test_ctrl_c_in_a_run_where_neither_bot_started_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The two-bot form of the case above: "neither bot played" so far, and the run was
    interrupted, which is what its exit code and last line say."""
    interrupt_at(monkeypatch, 2)
    code, _out, err = kryt(capsys, "play", str(EXITS_AT_START), str(EXITS_AT_START), "-n", "10",
                           "--seed", "1", *FAST)  # fmt: skip
    assert "neither bot played" in err, err
    assert err.splitlines()[-1] == INTERRUPTED.format(2, 10), err
    assert code == ExitCode.INTERRUPTED, err
