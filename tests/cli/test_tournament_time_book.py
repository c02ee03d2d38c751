"""A tournament with a per-bot time control (``[bot_time]``), an increment and a deal book
(``book = "path"``), through ``kryt tournament run`` and ``kryt replay --verify``."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from sqlmodel import col, select

from arena.db import get_submission, get_tournament, open_database
from arena.db.games import stored_record
from arena.db.models import Game
from arena.tournament.config import ConfigError, TournamentConfig, load_config
from kryt.cli import main
from kryt.errors import ExitCode
from referee.protocol.messages import TimeControl
from referee.rules import Card

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def shuffled(seed: int) -> list[str]:
    cards = [str(c) for c in Card.all()]
    random.Random(seed).shuffle(cards)
    return cards


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_config(folder: Path, decks: list[list[str]], extra: str = "") -> Path:
    (folder / "decks.txt").write_text("".join(" ".join(d) + "\n" for d in decks))
    config = folder / "tournament.toml"
    config.write_text(
        f'name = "timed"\nbots = ["{EXAMPLES / "random"}", "{EXAMPLES / "greedy"}"]\n'
        'games_per_pair = 4\nbook = "decks.txt"\n'
        '[time_control]\nmove_seconds = 2\nbank_seconds = 20\nincrement_seconds = 0.25\n'
        f'[bot_time]\nrandom = "3+30+0.5"\n{extra}'
    )  # fmt: skip
    return config


def test_a_tournament_plays_the_book_under_each_bots_control(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    decks = [shuffled(1), shuffled(2)]
    config = write_config(folder, decks)
    code, out, err = kryt(
        capsys, "tournament", "run", "--config", str(config), "--backend", "process"
    )
    assert code == 0, err
    db = open_database(str(folder / "kryt.db"))
    with db.read_session() as session:
        rows = session.exec(select(Game).order_by(col(Game.number))).all()
        games = [(stored_record(g), g.seat0_submission_id) for g in rows]
        names = {sid: get_submission(sid, session=session).manifest["name"] for _, sid in games}
        stored = get_tournament(1, session=session).config
    assert [list(r.deck) for r, _ in games] == [decks[0], decks[0], decks[1], decks[1]]
    assert games[0][0].dealer != games[1][0].dealer  # hands swapped
    assert games[2][0].dealer != games[3][0].dealer
    random_tc = TimeControl(move_ms=3000, bank_ms=30_000, increment_ms=500)
    greedy_tc = TimeControl(move_ms=2000, bank_ms=20_000, increment_ms=250)
    for record, seat0 in games:
        seat0_is_random = names[seat0] == "random"
        expected = (random_tc, greedy_tc) if seat0_is_random else (greedy_tc, random_tc)
        assert record.time_controls == expected
    code, out, _ = kryt(capsys, "replay", "3", "--verify")
    assert code == 0 and "verified" in out
    said = " ".join(out.split())
    # A book's deal is its deck, not drawn from the seed: said so, not the seed's wording.
    assert "the deal is the deck the tournament's deal book (2 decks) gives" in said, said
    assert "the deal follows from" not in said, said
    # The book is stored with the tournament: resuming needs no file.
    (folder / "decks.txt").unlink()
    again = TournamentConfig.from_json(dict(stored))
    assert again.book == tuple(tuple(d) for d in decks) and again.control_of("random", "x")
    code, _, err = kryt(capsys, "tournament", "resume", "1")
    assert code == 0 and "already finished" in err


def test_a_bot_time_for_no_entered_bot_is_refused(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    config = write_config(folder, [shuffled(3)], extra='nobody = "1+1"\n')
    code, _, err = kryt(
        capsys, "tournament", "run", "--config", str(config), "--backend", "process"
    )
    assert code == ExitCode.BAD_INPUT
    assert "[bot_time] names 'nobody', which is not an entered bot" in err
    assert not (folder / "kryt.db").exists() or sqlite3.connect(folder / "kryt.db").execute(
        "select count(*) from tournaments"
    ).fetchone() == (0,)


def test_config_errors_name_the_setting(folder: Path) -> None:
    decks = [shuffled(4)]
    config = write_config(folder, decks, extra='greedy = "1+x"\n')
    with pytest.raises(ConfigError, match=r"\[bot_time\] greedy: time control '1\+x'"):
        load_config(config)
    config = write_config(folder, decks)
    with pytest.raises(ConfigError, match='set format = "duplicate"'):
        load_config(config, format="standard")
    with pytest.raises(ConfigError, match="a deal book is for the two-player game"):
        load_config(config, ruleset="classic", table_size=2, format="standard")
    (folder / "decks.txt").write_text(" ".join(decks[0][:30]) + "\n")
    with pytest.raises(ConfigError, match=r"decks\.txt line 1: a deck has 36 cards, got 30"):
        load_config(config)
    loaded = load_config(write_config(folder, decks))
    assert loaded.control_of("random", "1.0.0").increment_ms == 500
    assert loaded.control_of("greedy", "1.0.0") == loaded.time_control
    assert loaded.time_control.increment_ms == 250
    assert TournamentConfig.from_json(loaded.to_json()) == loaded


def test_a_cpu_clock_the_sandbox_cannot_keep_is_stored_as_the_wall_clock(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    """The process sandbox measures no CPU time: the tournament warns, runs on the wall clock
    and stores that clock (its config and every game's controls), not the one asked for."""
    code, _, err = kryt(
        capsys, "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
        "--games", "2", "--clock", "cpu", "--backend", "process",
    )  # fmt: skip
    assert code == 0, err
    assert "warning: clock cpu: the process sandbox does not measure a bot's CPU time" in err
    db = open_database(str(folder / "kryt.db"))
    with db.read_session() as session:
        rows = session.exec(select(Game)).all()
        records = [stored_record(g) for g in rows]
        stored = get_tournament(1, session=session).config
    assert TournamentConfig.from_json(dict(stored)).time_control.clock == "wall"
    assert len(records) == 2
    assert all(c.clock == "wall" for r in records for c in r.time_controls)
