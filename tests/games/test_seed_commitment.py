"""A game file carries the seed commitments published before the games (``SeedCommitment``,
``RoundSeedCommitment``): an export writes them, an import checks each against the seed the
file reveals (refusing the whole file when one does not match) and keeps them, so that a
re-export is the same file and ``kryt replay --verify`` checks the seed against the
commitment in any database the games are imported into. Older files, without the headers,
still import; their seeds' commitments are then not checked."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from arena.db import get_tournament, open_database, store_tournament_config
from arena.tournament.origin import IMPORTED_ROUND_COMMITMENTS_KEY, SeriesOrigin
from arena.tournament.seeds import commitment
from kryt.cli import main
from kryt.errors import ExitCode
from leaderboard.gamefile import GameFieldError, format_games, from_json, parse_games, to_json
from tests.cli.helpers import flat, game_entry, kryt, table_counts
from tests.db.conftest import _fresh_postgres_database, postgres_admin_url
from tests.games.test_gamefile import DECK, SEATS
from tests.services import require

RUN = ["--games", "2", "--backend", "process", "--move-seconds", "0.2"]
COMMITMENT_LINE = re.compile(r'^\[(?:Round)?SeedCommitment "[0-9a-f]{64}"\]\n', re.M)
"""A commitment header line: what a file written before the headers existed lacks."""


@pytest.fixture(scope="module")
def extended(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tournament of two bots with a secret (drawn) seed, extended by a round of
    two more games with a seed of its own: 4 games, 2 of them the round's."""
    folder = tmp_path_factory.mktemp("extended")
    db = folder / "source.db"
    code = main(
        ["tournament", "run", "builtin:greedy", "builtin:random", *RUN, "--name", "cup",
         "-d", str(db), "--store", str(folder / "store")]
    )  # fmt: skip
    assert code == 0
    assert main(["tournament", "extend", "1", "--games", "2", "-d", str(db)]) == 0
    return db


@pytest.fixture(scope="module")
def exported(extended: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The text export of ``extended`` (read it, never write it)."""
    path = tmp_path_factory.mktemp("exported") / "cup.kgn"
    assert main(["games", "export", str(path), "-d", str(extended)]) == 0
    return path


def stored(url: str, tournament_id: int = 1) -> tuple[int, dict[str, Any]]:
    """The seed and stored configuration of a tournament (any backend)."""
    database = open_database(url, create=False)
    try:
        with database.read_session() as session:
            tournament = get_tournament(tournament_id, session=session)
            return tournament.seed, dict(tournament.config)
    finally:
        database.close()


def store_config(url: str, config: dict[str, Any], tournament_id: int = 1) -> None:
    """Replace a tournament's stored configuration, as a damaged or edited database has it."""
    database = open_database(url, create=False)
    try:
        with database.session() as session:
            store_tournament_config(tournament_id, config, session=session)
    finally:
        database.close()


def records(text: str) -> list[dict[str, str]]:
    """The headers of each record of a game file, in file order."""
    return [
        {m[1]: json.loads(m[2]) for m in re.finditer(r'^\[(\w+) (".*")\]$', block, re.M)}
        for block in re.split(r"\n\n(?=\[KrytGameFile)", text)
    ]


def line_of(text: str, fragment: str) -> int:
    """The number of the (first) line of ``text`` holding ``fragment``."""
    return text[: text.index(fragment)].count("\n") + 1


def verify(capsys: pytest.CaptureFixture[str], url: str, game: int) -> tuple[int, str]:
    code, out, err = kryt(capsys, "replay", str(game), "--verify", "-d", url)
    return code, flat(out + err)


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ]
)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty database to import into, on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'target.db'}"
        return
    admin_url = postgres_admin_url()
    require(admin_url is not None, "PostgreSQL", "set KRYT_TEST_POSTGRES_URL")
    assert admin_url is not None
    yield from _fresh_postgres_database(admin_url)


# ------------------------------------------------------------------------------- the format


def test_the_headers_are_written_where_the_seeds_are_and_read_back() -> None:
    seed, round_seed = 7, 99
    plain = game_entry(seats=SEATS, deck=DECK)
    committed = replace(plain, number=2, seed_commitment=commitment(seed))
    in_round = replace(
        committed,
        number=1,
        series_position=1,
        origin=SeriesOrigin((1, 2), round_seed),
        round_commitment=commitment(round_seed),
    )
    text = format_games([plain, committed, in_round])
    assert text.count("[SeedCommitment ") == 2 and text.count("[RoundSeedCommitment ") == 1
    # Each right after the seed it commits to.
    assert f'[TournamentSeed "7"]\n[SeedCommitment "{commitment(seed)}"]\n' in text
    assert f'[RoundSeed "99"]\n[RoundSeedCommitment "{commitment(round_seed)}"]\n' in text
    assert parse_games(text) == [plain, committed, in_round]
    as_json = to_json([plain, committed, in_round])
    assert [g.get("SeedCommitment") for g in json.loads(as_json)] == [None, *[commitment(7)] * 2]
    assert from_json(as_json) == [plain, committed, in_round]


def test_a_commitment_that_is_not_its_seeds_is_refused_by_the_parser() -> None:
    entry = replace(
        game_entry(seats=SEATS, deck=DECK),
        seed_commitment=commitment(8),  # the commitment of another seed
        origin=SeriesOrigin((1, 2), 99),
        round_commitment=commitment(99),
    )
    text = format_games([entry])
    with pytest.raises(GameFieldError) as caught:
        parse_games(text, source="g.kgn")
    assert str(caught.value) == (
        f"g.kgn:{line_of(text, '[SeedCommitment')}: SeedCommitment must be the commitment of"
        f" TournamentSeed 7 ({commitment(7)}), got {commitment(8)!r}: the seed is not the one"
        " committed to before the games"
    )
    text = format_games([replace(entry, seed_commitment=None, round_commitment=commitment(7))])
    with pytest.raises(GameFieldError, match=r"g\.kgn:\d+: RoundSeedCommitment must be the co"):
        parse_games(text, source="g.kgn")
    alone = format_games([replace(entry, seed_commitment=None, origin=None)])
    alone = alone.replace("[Game ", f'[RoundSeedCommitment "{commitment(99)}"]\n[Game ')
    with pytest.raises(GameFieldError, match="RoundSeedCommitment needs a RoundSeed header"):
        parse_games(alone, source="g.kgn")


# ------------------------------------------------------------------------------- the export


def test_an_export_writes_the_published_commitments(
    capsys: pytest.CaptureFixture[str], extended: Path, exported: Path, tmp_path: Path
) -> None:
    seed, config = stored(f"sqlite:///{extended}")
    (extension,) = config["extensions"]
    assert config["seed_commitment"] == commitment(seed)  # what was published at creation
    assert extension["seed_commitment"] == commitment(extension["seed"])
    games = records(exported.read_text())
    assert len(games) == 4
    for game in games:
        assert game["TournamentSeed"] == str(seed)
        assert game["SeedCommitment"] == config["seed_commitment"]
        if "RoundSeed" in game:
            assert game["RoundSeed"] == str(extension["seed"])
            assert game["RoundSeedCommitment"] == extension["seed_commitment"]
        else:
            assert "RoundSeedCommitment" not in game
    assert sum("RoundSeedCommitment" in game for game in games) == 2
    as_json = tmp_path / "cup.json"
    assert kryt(capsys, "games", "export", str(as_json), "-d", str(extended))[0] == 0
    assert [
        {k: g.get(k) for k in ("SeedCommitment", "RoundSeedCommitment")}
        for g in json.loads(as_json.read_text())
    ] == [{k: g.get(k) for k in ("SeedCommitment", "RoundSeedCommitment")} for g in games]


# ------------------------------------------------------------------------------- the import


def test_an_import_keeps_the_commitments_and_a_re_export_is_the_same_file(
    capsys: pytest.CaptureFixture[str], extended: Path, exported: Path, target: str, tmp_path: Path
) -> None:
    text = exported.read_text()
    as_json = tmp_path / "cup.json"
    assert kryt(capsys, "games", "export", str(as_json), "-d", str(extended))[0] == 0
    code, out, err = kryt(capsys, "games", "import", str(exported), "-d", target)
    assert code == 0 and "imported 4 new games of 4 read (1 new tournament)" in out, err
    seed, config = stored(target)
    _, source = stored(f"sqlite:///{extended}")
    (extension,) = source["extensions"]
    assert config["seed_commitment"] == source["seed_commitment"] == commitment(seed)
    assert config[IMPORTED_ROUND_COMMITMENTS_KEY] == {
        str(extension["seed"]): extension["seed_commitment"]
    }
    again, again_json = tmp_path / "again.kgn", tmp_path / "again.json"
    assert kryt(capsys, "games", "export", str(again), "-d", target)[0] == 0
    assert kryt(capsys, "games", "export", str(again_json), "-d", target)[0] == 0
    assert again.read_text() == text  # byte for byte, the commitment lines included
    assert again_json.read_bytes() == as_json.read_bytes()
    # The JSON export imports to the same records (nothing new, no conflict).
    code, out, _ = kryt(capsys, "games", "import", str(as_json), "-d", target)
    assert code == 0 and "imported 0 new games of 4 read (0 new tournaments)" in out
    assert stored(target)[1] == config


def _forgeries(text: str, seed: int) -> dict[str, tuple[str, str, str]]:
    """Files whose commitment does not match the seed they reveal: name -> (text, the line
    of the refused header (the fragment that starts it), the field named)."""
    games = records(text)
    mark = games[0]["SeedCommitment"]
    round_mark = next(g["RoundSeedCommitment"] for g in games if "RoundSeedCommitment" in g)
    last = text.rindex(f'[SeedCommitment "{mark}"]')  # the last record: earlier ones are fine
    return {
        "seed commitment": (
            text[:last] + text[last:].replace(mark, commitment(seed + 1), 1),
            f'[SeedCommitment "{commitment(seed + 1)}"]',
            "SeedCommitment",
        ),
        "round commitment": (
            text.replace(round_mark, "0" * 64, 1),
            f'[RoundSeedCommitment "{"0" * 64}"]',
            "RoundSeedCommitment",
        ),
        # A revealed seed other than the one committed to: the commitment gives it away.
        "another seed": (
            text.replace(f'[TournamentSeed "{seed}"]', f'[TournamentSeed "{seed + 1}"]'),
            f'[SeedCommitment "{mark}"]',
            "SeedCommitment",
        ),
        # A value a terminal would run is quoted escaped, on the one line.
        "escape": (
            text.replace(f'"{mark}"', '"\\u001b[2J\\u2028x"', 1),
            '[SeedCommitment "\\u001b[2J',
            "SeedCommitment",
        ),
    }


def test_a_file_whose_commitment_does_not_match_its_seed_stores_nothing(
    capsys: pytest.CaptureFixture[str], extended: Path, exported: Path, tmp_path: Path
) -> None:
    text = exported.read_text()
    seed, _ = stored(f"sqlite:///{extended}")
    target = tmp_path / "target.db"
    # A database that holds something already: the refused file adds nothing to it.
    older = tmp_path / "older.kgn"
    older.write_text(COMMITMENT_LINE.sub("", text).replace('"cup"', '"older cup"'))
    assert kryt(capsys, "games", "import", str(older), "-d", str(target))[0] == 0
    before = table_counts(target)
    with sqlite3.connect(target) as conn:
        configs = conn.execute("select id, config from tournaments").fetchall()
    for name, (bad, fragment, field) in _forgeries(text, seed).items():
        path = tmp_path / f"{name.replace(' ', '-')}.kgn"
        path.write_text(bad)
        code, out, err = kryt(capsys, "games", "import", str(path), "-d", str(target))
        assert code == ExitCode.BAD_INPUT, (name, out, err)
        assert err.startswith(f"error: {path.name}:{line_of(bad, fragment)}: {field} "), err
        assert err.count("\n") == 1 and "\x1b" not in err and "\u2028" not in err, err
        assert f"{field} must be the commitment of" in err, err
        assert table_counts(target) == before, name
        nowhere = tmp_path / f"{name.replace(' ', '-')}.db"
        assert kryt(capsys, "games", "import", str(path), "-d", str(nowhere))[0] != 0
        assert not nowhere.exists()  # checked before the database is opened
    with sqlite3.connect(target) as conn:
        assert conn.execute("select id, config from tournaments").fetchall() == configs
    # The JSON export is checked the same way, naming the game.
    as_json = tmp_path / "cup.json"
    assert kryt(capsys, "games", "export", str(as_json), "-d", str(extended))[0] == 0
    games = json.loads(as_json.read_text())
    games[2]["SeedCommitment"] = commitment(seed + 1)
    as_json.write_text(json.dumps(games))
    code, _, err = kryt(capsys, "games", "import", str(as_json), "-d", str(target))
    assert code == ExitCode.BAD_INPUT
    assert err.startswith("error: cup.json[2]: SeedCommitment must be the commitment of"), err
    assert table_counts(target) == before


def test_an_older_file_without_commitments_imports_and_verifies_without_them(
    capsys: pytest.CaptureFixture[str], exported: Path, tmp_path: Path
) -> None:
    text = exported.read_text()
    older = COMMITMENT_LINE.sub("", text)
    assert older != text and "Commitment" not in older
    path = tmp_path / "older.kgn"
    path.write_text(older)
    target = f"sqlite:///{tmp_path / 'target.db'}"
    code, out, err = kryt(capsys, "games", "import", str(path), "-d", target)
    assert code == 0 and "imported 4 new games" in out, err
    _, config = stored(target)
    assert "seed_commitment" not in config and IMPORTED_ROUND_COMMITMENTS_KEY not in config
    again = tmp_path / "again.kgn"
    assert kryt(capsys, "games", "export", str(again), "-d", target)[0] == 0
    assert again.read_text() == older  # no commitment is made up
    for game in range(1, 5):
        code, out = verify(capsys, target, game)
        assert code == 0, out
        assert "has no stored commitment" in out and "not checked" in out, out
    # The same games with their commitments: nothing new, and the commitments are kept.
    code, out, _ = kryt(capsys, "games", "import", str(exported), "-d", target)
    assert code == 0 and "imported 0 new games of 4 read" in out
    assert stored(target)[1]["seed_commitment"] == records(text)[0]["SeedCommitment"]
    assert all("which matches its published commitment" in verify(capsys, target, g)[1]
               for g in range(1, 5))  # fmt: skip


# ------------------------------------------------------------------------- replay --verify


def test_replay_verify_checks_the_seeds_against_their_commitments(
    capsys: pytest.CaptureFixture[str], exported: Path, target: str
) -> None:
    assert kryt(capsys, "games", "import", str(exported), "-d", target)[0] == 0
    seed, config = stored(target)
    rounds = {
        int(g["GameId"]): "RoundSeed" in g for g in records(exported.read_text())
    }  # game id -> a round's game
    assert sorted(rounds.values()) == [False, False, True, True]
    for game, in_round in rounds.items():
        code, out = verify(capsys, target, game)
        assert code == 0, out
        whose = (
            "the tournament's seed for its extension round" if in_round else "the tournament's seed"
        )
        assert f"the deal follows from {whose}, which matches its published commitment" in out
    # An edited record: the tournament's stored commitment is another seed's.
    store_config(target, {**config, "seed_commitment": commitment(seed + 1)})
    for game, in_round in rounds.items():
        code, out = verify(capsys, target, game)
        if in_round:  # its seed is the round's, whose commitment still matches
            assert code == 0, out
            continue
        assert code == ExitCode.FAILED, out
        assert (
            "mismatch: the tournament's seed does not match the commitment published before"
            f" the games (stored {commitment(seed + 1)[:16]!r}..., the seed gives"
            f" {commitment(seed)[:16]}...)"
        ) in out
        assert "verified: the deal" not in out
    # And a round's.
    (round_seed,) = config[IMPORTED_ROUND_COMMITMENTS_KEY]
    store_config(target, {**config, IMPORTED_ROUND_COMMITMENTS_KEY: {round_seed: "0" * 64}})
    for game, in_round in rounds.items():
        code, out = verify(capsys, target, game)
        assert code == (ExitCode.FAILED if in_round else 0), out
        if in_round:
            assert (
                "mismatch: the tournament's seed for its extension round does not match the"
                " commitment published before the games"
            ) in out
    # The file, imported again, refuses to cover the edited record: a conflict, nothing stored.
    code, out, err = kryt(capsys, "games", "import", str(exported), "-d", target)
    assert code != 0 and "is stored with the commitment" in err and "Traceback" not in err


def test_replay_verify_of_the_tournament_that_ran_the_games(
    capsys: pytest.CaptureFixture[str], extended: Path, tmp_path: Path
) -> None:
    db = tmp_path / "copy.db"
    with sqlite3.connect(extended) as source, sqlite3.connect(db) as copy:
        source.backup(copy)
    source.close()
    copy.close()
    url = f"sqlite:///{db}"
    seed, config = stored(url)
    results = [verify(capsys, url, g) for g in range(1, 5)]
    assert all(
        code == 0 and "which matches its published commitment" in out for code, out in results
    )
    store_config(url, {**config, "seed_commitment": commitment(seed + 1)})
    results = [verify(capsys, url, g) for g in range(1, 5)]
    failed = [out for code, out in results if code == ExitCode.FAILED]
    assert len(failed) == 2 and all(
        "mismatch: the tournament's seed does not match the commitment" in out for out in failed
    )
    (extension,) = config["extensions"]
    edited = {**extension, "seed_commitment": commitment(extension["seed"] + 1)}
    store_config(url, {**config, "extensions": [edited]})
    results = [verify(capsys, url, g) for g in range(1, 5)]
    failed = [out for code, out in results if code == ExitCode.FAILED]
    assert len(failed) == 2 and all(
        "the tournament's seed for its extension round does not match the commitment" in out
        for out in failed
    )
