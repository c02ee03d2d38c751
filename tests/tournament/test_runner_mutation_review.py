"""Tests from a mutation review of the tournament runner: what a tournament's series are
(the pairs of a round robin, their order and seeds), what ``extend`` adds (one series per
pairing with seeds from a fresh round seed, however many rounds came before), what ``resume``
plays, and who may hold a tournament. Each pins a behaviour a mutant of ours changed without
any other test noticing; the expected values come from docs/configuration.md and README.md.
"""

from __future__ import annotations

import hashlib
from itertools import combinations
from pathlib import Path

import pytest

from arena.db import Database, SeriesStatus, open_database, set_series_status
from arena.db.tournaments import get_tournament, series_of_tournament
from arena.tournament.config import SandboxSettings, TournamentConfig
from arena.tournament.extend import seed_chain
from arena.tournament.runner import TournamentError, create, series_specs, tasks_for
from arena.tournament.service import extend
from referee.series import SeriesFormat

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
BOTS = ("random", "greedy", "mc")


def _commitment(seed: int) -> str:
    """The published commitment to a seed (docs/games-format.md: a SHA-256 of the seed)."""
    return hashlib.sha256(f"kryt-arena seed commitment v1:{seed}".encode()).hexdigest()


# ---------------------------------------------------------------------------- the series


def test_a_round_robin_pairs_each_bot_once_with_every_bot_listed_after_it() -> None:
    """configuration.md: "a round robin pairs each bot with those listed after it, the
    earlier one as the series' first bot"; each series plays ``games_per_pair`` games."""
    config = TournamentConfig(bots=("a", "b", "c", "d"), games_per_pair=6, seed=5)
    specs = series_specs(config, [11, 12, 13, 14], 5)
    assert [(s.submission_a_id, s.submission_b_id) for s in specs] == list(
        combinations([11, 12, 13, 14], 2)
    )
    assert {s.games_planned for s in specs} == {6}
    assert len({s.seed for s in specs}) == len(specs)  # no two series share their deals


def test_listing_the_bots_in_another_order_changes_a_pairs_seed() -> None:
    """configuration.md: "listing the same bots in another order changes the pairs' order
    (...): the seed of a pair whose order changed, and so its deals, change too"."""
    config = TournamentConfig(bots=("a", "b"), games_per_pair=2, seed=99)
    (forward,) = series_specs(config, [21, 22], 99)
    (backward,) = series_specs(config, [22, 21], 99)
    assert (forward.submission_a_id, backward.submission_a_id) == (21, 22)
    assert forward.seed != backward.seed


def test_a_gauntlet_pairs_only_the_gauntlet_bot_and_it_plays_first() -> None:
    """configuration.md: the gauntlet bot "plays a series against every other entrant and the
    others never meet"."""
    config = TournamentConfig(bots=("a", "b", "c", "d"), games_per_pair=2, seed=1, gauntlet="c")
    specs = series_specs(config, [1, 2, 3, 4], 1)
    assert [(s.submission_a_id, s.submission_b_id) for s in specs] == [(3, 1), (3, 2), (3, 4)]


# ---------------------------------------------------------------------------- extend


@pytest.fixture
def pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Database, int]:
    """A stored round robin of three bundled bots (3 pairs, 2 games each), not played."""
    monkeypatch.chdir(tmp_path)
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    config = TournamentConfig(
        bots=tuple(str(EXAMPLES / bot) for bot in BOTS),
        games_per_pair=2,
        sandbox=SandboxSettings(backend="process"),
    )
    return db, create(config, db=db, store=tmp_path / "store")


def _series(db: Database, tid: int) -> list[tuple[int, int, int, int, int]]:
    """(position, first bot, second bot, games, seed) of every series, in position order."""
    with db.read_session() as session:
        return [
            (s.position, s.submission_a_id, s.submission_b_id, s.games_planned, s.seed)
            for s in series_of_tournament(tid, session=session)
        ]


def test_each_extension_adds_one_series_per_pair_with_n_games(
    pending: tuple[Database, int],
) -> None:
    """configuration.md: ``extend ID --games N`` "adds N games per pair (...): one new series
    per pairing it already has" — the second extension too (not one per series so far)."""
    db, tid = pending
    before = _series(db, tid)
    pairs = [(a, b) for _, a, b, _, _ in before]
    first = extend(tid, 4, db)
    second = extend(tid, 6, db)
    assert (first.round, first.series_added, first.games_added) == (1, 3, 12)
    assert (second.round, second.series_added, second.games_added) == (2, 3, 18)
    after = _series(db, tid)
    assert [(a, b) for _, a, b, _, _ in after] == pairs * 3
    assert [games for *_, games, _ in after] == [2, 2, 2, 4, 4, 4, 6, 6, 6]
    assert [position for position, *_ in after] == list(range(9))


def test_an_extension_draws_a_fresh_committed_seed_and_its_series_derive_from_it(
    pending: tuple[Database, int],
) -> None:
    """configuration.md: each extension draws a fresh secret seed (the tournament's own is
    public once it finished), prints its SHA-256 commitment and stores both under
    ``extensions``; ``kryt replay --verify`` checks a round's game against its round."""
    db, tid = pending
    rounds = [extend(tid, 2, db), extend(tid, 2, db)]
    with db.read_session() as session:
        tournament = get_tournament(tid, session=session)
        config = dict(tournament.config)
        series = series_of_tournament(tid, session=session)
        chains = [seed_chain(tournament.seed, config, s) for s in series]
        seeds_stored = [s.seed for s in series]
        tournament_seed = tournament.seed
    stored = config["extensions"]
    assert [r["first_position"] for r in stored] == [3, 6]
    seeds = [r["seed"] for r in stored]
    assert len({tournament_seed, *seeds}) == 3  # fresh every time
    for done, entry in zip(rounds, stored, strict=True):
        assert entry["seed_commitment"] == done.seed_commitment == _commitment(entry["seed"])
    # Each series derives from its own round's seed (the first three from the tournament's).
    assert [c.seed for c in chains] == [tournament_seed] * 3 + [seeds[0]] * 3 + [seeds[1]] * 3
    assert [c.commitment for c in chains[3:]] == [stored[0]["seed_commitment"]] * 3 + [
        stored[1]["seed_commitment"]
    ] * 3
    assert [c.series_seed for c in chains] == seeds_stored
    # Same pair, other round: other deals.
    assert len(set(seeds_stored)) == len(seeds_stored)


def test_extend_refuses_an_odd_count_for_the_duplicate_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """configuration.md: extend is refused "for (...) an odd N for ``duplicate``"; nothing is
    added."""
    monkeypatch.chdir(tmp_path)
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    config = TournamentConfig(
        bots=tuple(str(EXAMPLES / bot) for bot in BOTS[:2]),
        games_per_pair=2,
        format=SeriesFormat.DUPLICATE,
        sandbox=SandboxSettings(backend="process"),
    )
    tid = create(config, db=db, store=tmp_path / "store")
    with pytest.raises(TournamentError, match="even number"):
        extend(tid, 3, db)
    assert len(_series(db, tid)) == 1


# ---------------------------------------------------------------------------- resume


def test_resume_plays_only_the_series_that_are_not_finished(
    pending: tuple[Database, int],
) -> None:
    """README.md / configuration.md: ``resume`` "plays exactly the missing games": the tasks
    of a run are the unfinished series, in position order."""
    db, tid = pending
    ids = [t.series_id for t in tasks_for(tid, db=db)]
    assert len(ids) == 3
    with db.session() as session:
        set_series_status(ids[1], SeriesStatus.FINISHED, session=session)
        set_series_status(ids[2], SeriesStatus.RUNNING, session=session)
    assert [t.series_id for t in tasks_for(tid, db=db)] == [ids[0], ids[2]]
