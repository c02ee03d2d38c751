"""When BayesElo's draw or first-mover parameter has no finite maximum, the error names the
direction that runs off, and ``kryt ratings fit`` says the same in one line (or fits with
the parameter fixed by ``--advantage`` / ``--drawelo``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kryt.commands.ratings import app
from leaderboard.ratings import PairCounts, UnboundedRatingError, fit_bayeselo
from leaderboard.ratings.games import games_from_tuples
from tests.ratings.fixture import CSV

runner = CliRunner()


def counts(rows: list[tuple[str, str, str]]) -> PairCounts:
    return PairCounts.from_games(games_from_tuples(rows))


def test_only_draws_is_reported_as_drawelo_not_as_the_first_mover() -> None:
    # It used to say "the first mover never lost (0 first-mover wins, 0 losses)".
    draws = counts([("a", "b", "1/2-1/2"), ("b", "a", "1/2-1/2")] * 3)
    with pytest.raises(UnboundedRatingError, match="all 6 games are draws") as raised:
        fit_bayeselo(draws)
    assert "first mover" not in str(raised.value)
    assert raised.value.reason.endswith("runs off to infinity")
    assert raised.value.advice == "fix drawelo instead"
    # With drawelo fixed, only draws leave the advantage at its finite maximum (0).
    fixed = fit_bayeselo(draws, fit_drawelo=False)
    assert fixed.advantage == pytest.approx(0.0, abs=1e-6)


def test_a_fixed_drawelo_bounds_the_advantage_when_there_are_draws() -> None:
    # The first mover never lost, but a draw becomes impossible as the advantage grows
    # with drawelo held: a maximum exists (it used to be refused).
    rows = [("a", "b", "1-0"), ("b", "a", "1-0"), ("a", "b", "1/2-1/2"), ("b", "a", "1-0")]
    fit = fit_bayeselo(counts(rows), fit_drawelo=False)
    assert 0 < fit.advantage < 1000
    with pytest.raises(UnboundedRatingError, match="first mover never lost"):
        fit_bayeselo(counts(rows))  # drawelo free: both run off together


def test_winners_who_never_lost_are_named_with_the_real_reason() -> None:
    # a beat b ten times, five with each colour: the first movers' record is even, so
    # the old "first mover" reasoning did not apply and the optimiser just gave up.
    rows = [("a", "b", "1-0"), ("b", "a", "0-1")] * 5
    with pytest.raises(UnboundedRatingError) as raised:
        fit_bayeselo(counts(rows))
    message = str(raised.value)
    assert "won by one of ['a'] (who never lost one) against one of ['b']" in message
    assert "drawelo run off to infinity together" in message
    # Fixed drawelo: a finite fit (the prior's virtual draws bound the gap).
    assert fit_bayeselo(counts(rows), fit_drawelo=False).rating("a") > 0


def test_the_check_does_not_refuse_results_that_have_a_maximum() -> None:
    # b both won and lost a decisive game: no split into winners and losers.
    rows = [("a", "b", "1-0"), ("b", "c", "1-0"), ("c", "a", "1/2-1/2"), ("b", "a", "0-1")]
    rows += [("c", "b", "0-1"), ("a", "c", "1/2-1/2")]
    fit = fit_bayeselo(counts(rows * 2))
    assert fit.rating("a") > fit.rating("c")


def test_the_command_line_names_drawelo_for_a_file_of_draws(tmp_path: Path) -> None:
    csv = tmp_path / "draws.csv"
    csv.write_text("first,second,result\na,b,1/2-1/2\nb,a,1/2-1/2\n")
    result = runner.invoke(app, ["fit", str(csv)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert lines == [
        "error: all 2 games are draws, so the fitted drawelo runs off to infinity; "
        "fix drawelo instead"
    ]
    fixed = runner.invoke(app, ["fit", str(csv), "--drawelo", "97.3", "--json"])
    assert fixed.exit_code == 0, fixed.output
    data = json.loads(fixed.output)
    assert data["drawelo"] == 97.3 and data["players"][0]["rating"] == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--drawelo", "1e300", "a fixed drawelo must lie between 0 and 5000 Elo"),
        ("--drawelo", "-1", "a fixed drawelo must lie between 0 and 5000 Elo"),
        ("--advantage", "6000", "a fixed advantage must lie within ±5000 Elo"),
        ("--advantage", "nan", "advantage must be a finite number of Elo, got nan"),
        ("--drawelo", "nan", "drawelo must be a finite number of Elo, got nan"),
        ("--offset", "inf", "offset must be a finite number of Elo, got inf"),
    ],
)
def test_fixed_parameters_out_of_range_are_one_error_line(
    option: str, value: str, said: str
) -> None:
    result = runner.invoke(app, ["fit", str(CSV), option, value])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {said}") and len(result.output.splitlines()) == 1


def test_the_caption_shows_every_digit_of_the_confidence() -> None:
    result = runner.invoke(app, ["fit", str(CSV), "--confidence", "0.9995"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "99.95% intervals" in text and "100% intervals" not in text


def test_paired_mode_gives_the_los_of_the_paired_covariance() -> None:
    table = runner.invoke(app, ["fit", str(CSV), "--paired"], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "LOS paired" in table.output
    data = json.loads(runner.invoke(app, ["fit", str(CSV), "--paired", "--json"]).output)
    players = data["players"]
    assert players[-1]["los_next_paired"] is None
    for player in players[:-1]:
        assert 0.5 <= player["los_next_paired"] <= 1.0
    # Correlated deal pairs change the covariance, so the two LOS columns differ.
    assert any(abs(p["los_next_paired"] - p["los_next"]) > 1e-3 for p in players[:-1])
