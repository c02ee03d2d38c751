"""What a board says about itself: bots named as bots in its notes (escaped), the real reason
when draw and first-mover parameters cannot be fitted, ties in submission order, the
confidence level and the kind of interval in the caption, and LOS from the same covariance
as the intervals on a duplicate board."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

from rich.console import Console
from typer.testing import CliRunner

from arena.db import (
    Database,
    NewSubmission,
    SeriesFormat,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    open_database,
    submit,
)
from kryt.commands.leaderboard import app, standings_table
from leaderboard.ratings import DealPair, Outcome, paired_intervals
from leaderboard.ratings import Game as RatedGame
from leaderboard.standings import FitModel, Leaderboard, standings
from tests.standings.test_standings import play, setup

runner = CliRunner()


def pool(
    tmp_path: Path,
    bots: list[tuple[str, str]],
    pairs: list[tuple[int, int]],
    fmt: SeriesFormat = SeriesFormat.STANDARD,
) -> tuple[Database, list[int], list[int]]:
    """Submissions ``(name, version)`` and one tournament with a series per index pair."""
    db = open_database(f"sqlite:///{tmp_path / 'k.db'}")
    with db.session() as session:
        ids = []
        for i, (name, version) in enumerate(bots):
            row = submit(
                NewSubmission(bot_name=name, version=version, sha256=f"{i:064x}", submitted_by="t"),
                session=session,
            ).submission
            assert row.id is not None
            ids.append(row.id)
        specs = [SeriesSpec(ids[a], ids[b], 40, k, format=fmt) for k, (a, b) in enumerate(pairs)]
        tournament = create_tournament(
            TournamentSpec(name="t", seed=1, series=specs), session=session
        )
        assert tournament.id is not None
    return db, ids, list(range(1, len(pairs) + 1))


def board_of(db: Database) -> Leaderboard:
    with db.read_session() as session:
        return standings(session=session)


def test_groups_that_never_met_are_named_as_bots_with_their_text_escaped(
    tmp_path: Path,
) -> None:
    # A version is free text to the database (only bot.toml and game files check it):
    # markup and an escape sequence in it reach the terminal as text, never as styling or
    # control codes.
    hostile = "1[bold]\x1b[2J"
    db, ids, series = pool(
        tmp_path,
        [("aa", "1"), ("bb", hostile), ("cc", "1"), ("dd", "1")],
        [(0, 1), (2, 3)],
    )
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat1", "draw"])
    play(db, series[1], (ids[2], ids[3]), ["seat0", "seat1", "draw"])
    board = board_of(db)
    assert board.fit is None
    assert "2 groups that never played each other" in board.note
    assert "['aa 1', 'bb 1[bold]\\x1b[2J']" in board.note  # repr: the escape made visible
    assert "['cc 1', 'dd 1']" in board.note
    assert "['1', '2']" not in board.note  # never submission ids

    result = runner.invoke(app, ["--database", str(tmp_path / "k.db")])
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "'bb 1[bold]\\x1b[2J'" in out and "\x1b" not in result.stdout
    db.close()


def test_a_clean_sweep_says_why_the_parameters_were_fixed(tmp_path: Path) -> None:
    # 10-0 with the colours alternating: first movers won 5 and lost 5, so the old note
    # ("too few results to fit draw and first-mover parameters") gave the wrong reason.
    db, ids, series = setup(tmp_path, ["strong", "weak"])
    play(db, series[0], (ids[0], ids[1]), ["seat0"] * 10)
    board = board_of(db)
    assert board.fit is not None
    assert board.fit.advantage == 0.0 and board.fit.drawelo == 97.3
    assert board.note.startswith(
        "first-mover advantage 0 and drawelo 97.3 fixed at BayesElo's defaults, not fitted: "
    )
    assert "every decisive game was won by one of ['strong 1']" in board.note
    assert "['weak 1'] (who never won one)" in board.note
    assert "too few results" not in board.note and "instead" not in board.note
    db.close()


def test_a_board_of_draws_says_drawelo_cannot_be_fitted(tmp_path: Path) -> None:
    db, ids, series = setup(tmp_path, ["alpha", "bravo"])
    play(db, series[0], (ids[0], ids[1]), ["draw"] * 4)
    board = board_of(db)
    assert board.fit is not None and "fixed at BayesElo's defaults" in board.note
    assert "all 4 games are draws, so the fitted drawelo runs off to infinity" in board.note
    assert "first mover never lost" not in board.note
    db.close()


def test_equal_ratings_are_ranked_by_submission_id_as_a_number(tmp_path: Path) -> None:
    # Eleven bots in a ring of draws: every rating is equal, so the order is the ids'.
    names = [f"n{i:02d}" for i in range(1, 12)]
    ring = [(i, (i + 1) % 11) for i in range(11)]
    db, ids, series = pool(tmp_path, [(n, "1") for n in names], ring)
    for k, (a, b) in enumerate(ring):
        play(db, series[k], (ids[a], ids[b]), ["draw", "draw"])
    board = board_of(db)
    assert board.fit is not None
    assert len({round(r.rating or 0, 6) for r in board.rows}) == 1
    assert [r.submission_id for r in board.rows] == sorted(ids)  # 1, 2, ..., 10, 11
    assert board.rows[0].los_next is not None and math.isclose(board.rows[0].los_next, 0.5)
    db.close()


def test_the_caption_shows_the_level_and_the_kind_of_interval() -> None:
    model = FitModel(
        prior=2.0, advantage=0.0, drawelo=97.3, scale=0.93, offset=1500, confidence=0.9995
    )
    for paired, kind in ((False, "per game"), (True, "per deal pair")):
        table = standings_table(Leaderboard([], model, paired=paired), title="t")
        console = Console(width=300, color_system=None)
        with console.capture() as captured:
            console.print(table)
        assert f"99.95% intervals {kind}" in " ".join(captured.get().split())  # wrapped
    assert FitModel(2.0, 0.0, 97.3, 0.93, 1500, 0.95).confidence_text == "95%"


def test_a_duplicate_boards_los_uses_the_paired_covariance(tmp_path: Path) -> None:
    db, ids, series = setup(tmp_path, ["alpha", "beta", "gamma"], SeriesFormat.DUPLICATE)
    results = {
        0: ["seat0", "seat0", "seat0", "seat1", "seat0", "draw"] * 3,
        1: ["seat0", "seat1", "draw", "seat0", "seat1", "seat1"] * 3,
        2: ["seat1", "seat0", "seat0", "seat0", "draw", "seat1"] * 3,
    }
    seats = {0: (ids[0], ids[1]), 1: (ids[0], ids[2]), 2: (ids[1], ids[2])}
    for k, moves in results.items():
        play(db, series[k], seats[k], moves)
    board = board_of(db)
    assert board.paired and board.fit is not None

    # The same deal pairs by hand (play(): game n has seat 1 - n % 2 moving first).
    label = {ids[0]: "alpha 1", ids[1]: "beta 1", ids[2]: "gamma 1"}
    outcome = {"draw": Outcome.DRAW}
    pairs = []
    for k, moves in results.items():
        games = []
        for number, result in enumerate(moves, start=1):
            first = 1 - number % 2
            mover, other = label[seats[k][first]], label[seats[k][1 - first]]
            won = {"seat0": 0, "seat1": 1}.get(result)
            games.append(
                RatedGame(
                    mover,
                    other,
                    outcome.get(
                        result, Outcome.FIRST_WINS if won == first else Outcome.SECOND_WINS
                    ),
                )
            )
        pairs += [DealPair(games[i], games[i + 1]) for i in range(0, len(games), 2)]
    paired = paired_intervals(pairs, offset=1500.0)
    name = {r.submission_id: label[r.submission_id] for r in board.rows}
    for upper, lower in zip(board.rows, board.rows[1:], strict=False):
        a, b = name[upper.submission_id], name[lower.submission_id]
        assert upper.los_next is not None
        assert math.isclose(upper.los_next, paired.los(a, b), rel_tol=1e-9)
        # ... and not the per-game covariance's (the old LOS), which differs here.
        assert not math.isclose(upper.los_next, paired.fit.los(a, b), rel_tol=1e-4)
        v = paired.covariance
        i, j = paired.fit.index(a), paired.fit.index(b)
        gap = paired.fit.ratings[i] - paired.fit.ratings[j]
        expected = NormalDist().cdf(gap / math.sqrt(v[i, i] + v[j, j] - 2 * v[i, j]))
        assert math.isclose(upper.los_next, expected, rel_tol=1e-9)
    db.close()


def test_a_swept_duplicate_board_keeps_its_paired_intervals(tmp_path: Path) -> None:
    # The fallback fixes the parameters for the paired intervals too, instead of dropping
    # them ("no paired intervals: ...") and showing intervals per game.
    db, ids, series = setup(tmp_path, ["strong", "weak"], SeriesFormat.DUPLICATE)
    play(db, series[0], (ids[0], ids[1]), ["seat0"] * 8)
    board = board_of(db)
    assert board.paired and "fixed at BayesElo's defaults" in board.note
    assert "no paired intervals" not in board.note
    assert all(r.interval is not None and r.interval > 0 for r in board.rows)
    db.close()
