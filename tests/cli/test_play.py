"""``kryt play``: games at once (-j), results as they come, the summary statistics, SPRT,
bundled bots by name from any folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(autouse=True)
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Not the repository root: bundled bots must be found by name from anywhere.
    monkeypatch.chdir(tmp_path)
    return tmp_path


FAST = ("--backend", "process", "--move-seconds", "0.5")


def test_parallel_series_print_each_game_and_the_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = kryt(
        capsys, "play", "builtin:greedy", "builtin:random", "-n", "6", "-j", "2", "--verbose",
        *FAST,
    )  # fmt: skip
    assert code == 0, err
    game_lines = [line for line in out.splitlines() if line.startswith("game ")]
    assert len(game_lines) == 6
    # Two series of three games, each numbered 1..3 in its own loser-deals order.
    for series in (1, 2):
        numbers = sorted(
            int(m.group(1))
            for line in game_lines
            if (m := re.search(rf"series {series} game (\d+)", line))
        )
        assert numbers == [1, 2, 3]
    assert "2 series in parallel (3, 3 games)" in err
    final = re.search(r"Score of greedy 1.0.0 vs random 1.0.0: \+(\d+) =(\d+) -(\d+)", out)
    assert final is not None and sum(map(int, final.groups())) == 6
    assert re.search(
        r"Elo [+-]\S+ \[[+-]\S+, [+-]\S+\] \(95%, trinomial\), LOS \d+\.\d%, draw ratio", out
    )


def test_running_standings_without_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = kryt(
        capsys, "play", "builtin:greedy", "builtin:random", "-n", "4", "--report-every", "2",
        *FAST,
    )  # fmt: skip
    assert code == 0, err
    assert re.search(r"\[\d\.\d{3}\] 2/4", out) and re.search(r"\[\d\.\d{3}\] 4/4", out)
    assert not any(line.startswith("game ") for line in out.splitlines())


def test_duplicate_pairs_report_the_pentanomial(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = kryt(
        capsys, "play", "builtin:greedy", "builtin:random", "-n", "8", "-j", "2",
        "--format", "duplicate", *FAST,
    )  # fmt: skip
    assert code == 0, err
    found = re.search(r"pentanomial \(0, ½, 1, 1½, 2 points per deal pair\): \[([\d, ]+)\]", out)
    assert found is not None
    assert sum(int(n) for n in found.group(1).split(",")) == 4  # 8 games = 4 deal pairs
    assert "(95%, pentanomial)" in out
    assert "without its pair" not in out


def test_games_without_their_pair_are_said_to_be_left_out() -> None:
    """The score line counts every game, the Elo only complete deal pairs: a run the SPRT
    stopped between the two games of a pair says so rather than showing two figures that
    disagree (+15 =0 -4 [0.789] beside the Elo of 9 pairs)."""
    from kryt.commands.play import unpaired_note

    assert unpaired_note([0, 1, 2, 3, 3], 19) == (
        "Elo, interval and LOS from the 9 complete deal pairs: 1 game without its pair left out"
    )
    assert unpaired_note([0, 1, 2, 3, 3], 20) == (
        "Elo, interval and LOS from the 9 complete deal pairs: 2 games without their pair left out"
    )
    assert unpaired_note([0, 1, 2, 3, 3], 18) is None


def test_sprt_stops_when_a_bound_is_crossed(capsys: pytest.CaptureFixture[str]) -> None:
    # random is hundreds of Elo below greedy: "at least 100 Elo better" is soon rejected.
    code, out, err = kryt(
        capsys, "play", "builtin:random", "builtin:greedy", "-n", "400", "-j", "2",
        "--sprt", "elo0=0", "elo1=100", "alpha=0.05", "beta=0.05", *FAST,
    )  # fmt: skip
    assert code == 0, err
    line = re.search(
        r"SPRT elo0=0 elo1=100 alpha=0.05 beta=0.05: LLR (-?\d+\.\d+) \(-2.94, 2.94\) (.+)", out
    )
    assert line is not None
    assert line.group(2) == "H0 accepted" and float(line.group(1)) <= -2.94
    stopped = re.search(r"stopped early by the SPRT after (\d+) of 400 games", out)
    assert stopped is not None and int(stopped.group(1)) < 400


def test_bad_sprt_settings_and_unknown_bundled_bots_are_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = kryt(capsys, "play", "builtin:greedy", "builtin:random", "--sprt", "elo9=1")
    assert code == ExitCode.BAD_INPUT and "elo9" in err and "Traceback" not in err
    code, _, err = kryt(capsys, "play", "builtin:nope", "builtin:random", *FAST)
    assert code == ExitCode.BAD_INPUT
    assert "builtin:nope" in err and "builtin:greedy" in err
    assert err.count("\n") == 1 and err.startswith("error:"), err  # no sandbox line before it
    code, _, err = kryt(capsys, "play", "builtin:random", "no-such-bot-folder", *FAST)
    assert code == ExitCode.BAD_INPUT, err
    assert err.startswith("error:") and "no-such-bot-folder" in err and "sandbox" not in err, err
    code, _, err = kryt(capsys, "play", "builtin:greedy", "-n", "3", "--format", "duplicate")
    assert code == ExitCode.BAD_INPUT and "two bots" in err


def test_a_game_line_names_a_draw_by_the_final_answer_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Greedy against itself on seed 1 draws its first game by the final answer (both are
    deterministic): the line says so once, not 'draw by draw by final answer'."""
    code, out, err = kryt(
        capsys, "play", "builtin:greedy", "builtin:greedy", "--seed", "1", "-n", "2", "-v",
        "--backend", "process",
    )  # fmt: skip
    assert code == 0, err
    first = next(line for line in out.splitlines() if line.startswith("game 1/2"))
    assert "): draw by final answer, " in first, out
    assert "draw by draw" not in out


@pytest.mark.parametrize("seed", ["\u00b2", "--5", "[/bold]x[link=http://e]y", "\x1b[31mred"])
def test_any_seed_text_plays_and_is_shown_as_given(
    capsys: pytest.CaptureFixture[str], seed: str
) -> None:
    """A seed is text, or a number when it is ASCII digits: ``²`` and ``--5`` crashed the run
    (``int()`` after ``str.isdigit()``), and the table under the games read the seed as Rich
    markup (a closing tag crashed it) and printed its escape sequences raw."""
    code, out, err = kryt(capsys, "play", "builtin:random", "builtin:random", "-n", "1",
                          f"--seed={seed}", *FAST)  # fmt: skip
    assert code == 0, err
    assert "Traceback" not in err
    shown = seed.replace("\x1b", "\\x1b")
    words = " ".join(out.split())  # the title may wrap on a narrow console
    assert f"(seat 1), seed {shown} " in words, out
    assert "\x1b" not in out
