"""``kryt games export`` keeps secrets and data: the seeds of a tournament still running are
not written (whoever knows them knows every deal to come), and an export never replaces a
database."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.db import TournamentStatus, get_tournament, open_database, set_tournament_status
from kryt.errors import ExitCode
from tests.cli.helpers import kryt


@pytest.fixture
def two_tournaments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tournament 1 finished, tournament 2 (its games played) marked running again."""
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        assert kryt_ok("tournament", "run", "builtin:random", "builtin:greedy", "--games", "2")
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    with db.session() as session:
        set_tournament_status(2, TournamentStatus.RUNNING, session=session)
    db.close()
    return tmp_path


def kryt_ok(*args: str) -> bool:
    from kryt.cli import main

    return main(list(args)) == ExitCode.OK


def seeds(folder: Path, tournament_id: int) -> tuple[int, list[int]]:
    db = open_database(f"sqlite:///{folder / 'kryt.db'}")
    with db.read_session() as session:
        from arena.db import series_of_tournament

        tournament = get_tournament(tournament_id, session=session)
        series = [s.seed for s in series_of_tournament(tournament_id, session=session)]
        seed = tournament.seed
    db.close()
    return seed, series


def test_games_of_a_running_tournament_are_left_out_with_their_seeds(
    capsys: pytest.CaptureFixture[str], two_tournaments: Path
) -> None:
    code, _, err = kryt(capsys, "games", "export", "all.kgn")
    assert code == ExitCode.OK, err
    assert "wrote 2 games" in err
    assert "left out 2 games of tournaments not finished" in err
    text = (two_tournaments / "all.kgn").read_text()
    secret, series_seeds = seeds(two_tournaments, 2)
    assert f'[TournamentSeed "{secret}"]' not in text
    assert all(f'[SeriesSeed "{s}"]' not in text for s in series_seeds)
    shown, _ = seeds(two_tournaments, 1)
    assert f'[TournamentSeed "{shown}"]' in text  # a finished tournament's are public
    code, _, err = kryt(capsys, "games", "export", "two.json", "--tournament", "2")
    assert code == ExitCode.BAD_INPUT
    assert "nothing to export: the 2 games chosen are games of tournaments not finished" in err
    assert not (two_tournaments / "two.json").exists()


def test_an_export_never_replaces_a_database(
    capsys: pytest.CaptureFixture[str], two_tournaments: Path
) -> None:
    database = two_tournaments / "kryt.db"
    before = database.read_bytes()
    code, _, err = kryt(capsys, "games", "export", "kryt.db")
    assert code == ExitCode.BAD_INPUT
    assert "kryt.db is an SQLite database, not overwritten with the export" in err
    assert database.read_bytes() == before
    code, out, _ = kryt(capsys, "games", "list")
    assert code == ExitCode.OK and "4 games" in out


def test_an_export_replaces_an_older_export_whole(
    capsys: pytest.CaptureFixture[str], two_tournaments: Path
) -> None:
    target = two_tournaments / "games.csv"
    target.write_text("game_id,tournament,tournament_id\n1,an older export,1\n")
    code, _, err = kryt(capsys, "games", "export", str(target))
    assert code == ExitCode.OK, err
    assert target.read_text().startswith("game_id,")
    assert [p.name for p in two_tournaments.iterdir() if "kryt-tmp" in p.name] == []
