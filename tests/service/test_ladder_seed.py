"""The ladder's deals cannot be predicted: its master seed is drawn secretly when its
tournament is created (with a commitment, as every tournament's), unless an organiser fixes
one; each new series' seed follows from the stored master."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.db import Database, Submission, SubmissionStatus, get_series, open_database
from arena.service.ladder import LADDER_NAME, Ladder, ladder_tournament
from arena.service.settings import LadderSettings, ServiceSettings, SettingsError
from arena.tournament.ladder import ladder_series_seed as _seed
from arena.tournament.seeds import commitment
from tests.db.helpers import build_world


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'kryt.db'}")


def _settings(seed: int = 0) -> ServiceSettings:
    return ServiceSettings(ladder=LadderSettings(seed=seed))


def test_the_default_master_seed_is_secret_and_committed(tmp_path: Path) -> None:
    seeds = set()
    for n in range(2):
        database = open_database(f"sqlite:///{tmp_path / f'{n}.db'}")
        with database.session() as session:
            tournament = ladder_tournament(_settings(), session=session)
            seeds.add(tournament.seed)
            assert tournament.config["seed_commitment"] == commitment(tournament.seed)
        with database.session() as session:  # created once, then found
            assert ladder_tournament(_settings(), session=session).seed == tournament.seed
        database.close()
    assert len(seeds) == 2 and 1 not in seeds and 0 not in seeds


def test_an_organisers_seed_is_used_as_given(db: Database) -> None:
    with db.session() as session:
        tournament = ladder_tournament(_settings(42), session=session)
        assert tournament.seed == 42
        assert tournament.config["seed_commitment"] == commitment(42)


def test_a_ladder_stored_without_a_commitment_gets_a_secret_seed(db: Database) -> None:
    with db.session() as session:
        old = ladder_tournament(_settings(1), session=session)  # as the public default made it
        old.config = {k: v for k, v in old.config.items() if k != "seed_commitment"}
        session.add(old)
    with db.session() as session:
        tournament = ladder_tournament(_settings(), session=session)
        assert tournament.name == LADDER_NAME and tournament.seed != 1
        assert tournament.config["seed_commitment"] == commitment(tournament.seed)


def test_new_series_seeds_follow_from_the_stored_master(db: Database) -> None:
    world = build_world(db)
    with db.session() as session:
        for sid in (world.sub_a, world.sub_b):
            row = session.get(Submission, sid)
            assert row is not None
            row.status = SubmissionStatus.ACTIVE.value
            session.add(row)
    ladder = Ladder(db, _settings(), label_prefix="test-ladder-seed-")
    series_id = ladder._next_series()
    assert series_id is not None
    with db.read_session() as session:
        series = get_series(series_id, session=session)
        master = ladder_tournament(_settings(), session=session).seed
        where = (series.position, series.submission_a_id, series.submission_b_id)
        tournament_id, seed = series.tournament_id, series.seed
    assert tournament_id != world.tournament_id
    assert seed == _seed(master, *where)
    assert seed != _seed(1, *where)


@pytest.mark.parametrize("seed", [-1, 2**62])
def test_a_seed_out_of_range_is_a_settings_error(seed: int) -> None:
    with pytest.raises(SettingsError, match=f"ladder.seed must be in .*got {seed}"):
        ServiceSettings(ladder=LadderSettings(seed=seed))
