"""Only a tournament the ladder created is the ladder's (a user's tournament named ``ladder``,
whose seed is public once it finished, is never taken over), and its series' seeds check out
under ``kryt replay --verify``'s chain (the ladder's own derivation)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.db import (
    Database,
    Submission,
    SubmissionStatus,
    Tournament,
    TournamentSpec,
    TournamentStatus,
    create_tournament,
    get_series,
    open_database,
)
from arena.service.ladder import LADDER_NAME, Ladder, ladder_tournament
from arena.service.settings import LadderSettings, ServiceSettings
from arena.tournament.extend import seed_chain
from arena.tournament.ladder import is_ladder, ladder_series_seed
from arena.tournament.seeds import commitment, deal_problems
from tests.db.helpers import build_world


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'kryt.db'}")


def _settings(seed: int = 0) -> ServiceSettings:
    return ServiceSettings(ladder=LadderSettings(seed=seed))


def _activate(db: Database) -> None:
    world = build_world(db)
    with db.session() as session:
        for sid in (world.sub_a, world.sub_b):
            row = session.get(Submission, sid)
            assert row is not None
            row.status = SubmissionStatus.ACTIVE.value
            session.add(row)


def test_a_user_tournament_named_ladder_is_never_taken_over(db: Database) -> None:
    with db.session() as session:
        # As `kryt tournament run --name ladder` stores it: finished, its seed public.
        user = create_tournament(
            TournamentSpec(
                name=LADDER_NAME,
                seed=12345,
                config={"name": LADDER_NAME, "bots": ["a", "b"], "seed_commitment": "x"},
                series=[],
            ),
            session=session,
            status=TournamentStatus.FINISHED,
        )
        user_id = user.id
    with db.session() as session:
        ladder = ladder_tournament(_settings(), session=session)
        assert ladder.id != user_id and ladder.seed != 12345
        assert is_ladder(ladder.config) and ladder.status == TournamentStatus.RUNNING.value
        ladder_id = ladder.id
    with db.session() as session:  # found again, still not the user's
        assert ladder_tournament(_settings(), session=session).id == ladder_id
        mine = session.get(Tournament, user_id)
        assert mine is not None and mine.status == TournamentStatus.FINISHED.value
        assert not is_ladder(mine.config)


def test_a_ladder_an_older_server_created_is_still_found(db: Database) -> None:
    old_config = {
        "name": "ladder",
        "ladder": True,
        "games_per_series": 4,
        "turn_limit": 1000,
        "time_control": {"move_seconds": 1.0},
        "sandbox": {"backend": "process"},
        "seed_commitment": commitment(777),
    }
    with db.session() as session:
        old = create_tournament(
            TournamentSpec(name=LADDER_NAME, seed=777, config=old_config, series=[]),
            session=session,
            status=TournamentStatus.RUNNING,
        )
        old_id = old.id
    with db.session() as session:
        found = ladder_tournament(_settings(), session=session)
        assert (found.id, found.seed) == (old_id, 777)


def test_new_ladder_series_pass_the_replay_seed_chain(db: Database) -> None:
    _activate(db)
    ladder = Ladder(db, _settings(), label_prefix="test-ladder-identity-")
    series_id = ladder._next_series()
    assert series_id is not None
    with db.read_session() as session:
        series = get_series(series_id, session=session)
        tournament = session.get(Tournament, series.tournament_id)
        assert tournament is not None
        chain = seed_chain(tournament.seed, tournament.config, series)
        assert (
            chain.series_seed
            == series.seed
            == ladder_series_seed(
                tournament.seed, series.position, series.submission_a_id, series.submission_b_id
            )
        )
        assert chain.commitment == commitment(tournament.seed)
        from referee.series import game_deck

        deck = tuple(str(c) for c in game_deck(series.seed, 1))
        problems = deal_problems(
            tournament_seed=chain.seed,
            stored_commitment=chain.commitment,
            series_seed=series.seed,
            expected_series_seed=chain.series_seed,
            series_format=series.format,
            games_planned=series.games_planned,
            number=1,
            deck=deck,
        )
        assert problems == []


def test_series_before_a_reseed_still_check_against_the_old_seed(db: Database) -> None:
    _activate(db)
    old = Ladder(db, _settings(1), label_prefix="test-ladder-identity-")
    first = old._next_series()
    assert first is not None
    with db.session() as session:  # as the public default made it: no commitment
        row = ladder_tournament(_settings(1), session=session)
        row.config = {k: v for k, v in row.config.items() if k != "seed_commitment"}
        session.add(row)
        done = get_series(first, session=session)
        done.status = "finished"  # so the pair is free again
        session.add(done)
    with db.session() as session:
        reseeded = ladder_tournament(_settings(), session=session)
        assert reseeded.seed != 1
    new = Ladder(db, _settings(), label_prefix="test-ladder-identity-")
    second = new._next_series()
    assert second is not None
    with db.read_session() as session:
        tournament = ladder_tournament(_settings(), session=session)
        for sid, master, mark in (
            (first, 1, None),
            (second, tournament.seed, commitment(tournament.seed)),
        ):
            series = get_series(sid, session=session)
            chain = seed_chain(tournament.seed, tournament.config, series)
            assert (chain.seed, chain.commitment) == (master, mark)
            assert chain.series_seed == series.seed
