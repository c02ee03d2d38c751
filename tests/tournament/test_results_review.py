"""Results review: from a series to the standings, checked against an independent reading
of the promises in docs/rules.md, docs/architecture.md, docs/leaderboard.md and README.md.

Everything here runs the real code (the referee's series and table loops with in-process
players, the database on SQLite, the leaderboard's standings); the expectations are
computed here from the stored games, never by the code under test."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pytest

from arena.db import (
    Database,
    Game,
    GamePlace,
    NewSubmission,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    open_database,
    record_game,
    submit,
    void_game,
)
from leaderboard.standings import Standing, refit_and_store, standings
from referee.client import Reply
from referee.match import Player
from referee.protocol.messages import (
    Clock,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    TimeControl,
)
from referee.record import GameRecord, Move
from referee.rules import ClassicGame, ClassicView, View, shuffled_deck
from referee.series import (
    BotStartError,
    SeriesConfig,
    first_dealer,
    game_deck,
    run_series,
)
from referee.table import first_table_dealer, run_table_series
from sdk.bot import Bot, GameContext
from sdk.tools.local import LocalPlayer, PlayerSlot

FAST = TimeControl(move_ms=5000, bank_ms=5000)


# ---------------------------------------------------------------------------- bots


class Scripted(Bot):
    """Plays the first legal action, except in the game numbers of ``illegal_in``, where it
    sends an action that is never legal (a forfeit)."""

    name = "scripted"
    version = "1"
    rulesets = ("default", "classic")

    def __init__(self, illegal_in: Iterable[int] = ()) -> None:
        self.illegal_in = set(illegal_in)
        self.number = 0

    def on_game_start(self, game: GameContext) -> None:
        self.number = game.game_number

    def act(self, view: View) -> str:
        if self.number in self.illegal_in:
            return "lead 6C" if view.pile else "take"  # never legal where it is sent
        return str(view.legal_actions[0])

    def act_table(self, view: ClassicView) -> str:
        if self.number in self.illegal_in:
            return "lead 6C 6D 6H 6S"  # four of a kind is never in a 3-card opening hand
        return str(view.legal_actions[0])


class Voiding:
    """A player whose first decision in the game numbers of ``void_in`` fails on our side
    (an exception that is not the bot's fault: the game is voided), once per number."""

    def __init__(self, inner: Player, void_in: set[int], voided: list[int]) -> None:
        self.inner = inner
        self.name = inner.name
        self.void_in = void_in
        self.voided = voided

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        return self.inner.handshake(handshake)

    def send(self, message: RefereeMessage) -> None:
        self.inner.send(message)

    def decide(
        self, view: View | ClassicView, clock: Clock, game_number: int, timeout: float
    ) -> Reply:
        if game_number in self.void_in and game_number not in self.voided:
            self.voided.append(game_number)
            raise RuntimeError("the referee's own machinery failed")
        return self.inner.decide(view, clock, game_number, timeout)


def slot(name: str, illegal_in: Iterable[int] = ()) -> PlayerSlot:
    games = set(illegal_in)
    return PlayerSlot(lambda: LocalPlayer(Scripted(games)), name)


def voiding_slot(name: str, void_in: set[int], voided: list[int]) -> PlayerSlot:
    return PlayerSlot(lambda: Voiding(LocalPlayer(Scripted()), void_in, voided), name)


class NeverStarts:
    """A seat whose bot never starts."""

    def __init__(self, name: str) -> None:
        self.name = name

    def player(self, handshake: Handshake) -> Player:
        raise BotStartError(f"{self.name}: entry point exited with status 1")

    def diagnose(self) -> GameEndReason | None:
        return None

    def close(self) -> None:
        pass


def expected_dealers(first: int, winners: list[int | None]) -> list[int]:
    """docs/rules.md: the first dealer from the seed; the loser deals; a draw keeps him."""
    dealers = [first]
    for winner in winners[:-1]:
        dealers.append(dealers[-1] if winner is None else 1 - winner)
    return dealers


def chain(games: dict[int, GameRecord]) -> tuple[list[int], list[int | None]]:
    numbers = sorted(games)
    return [games[n].dealer for n in numbers], [games[n].winner for n in numbers]


# ---------------------------------------------------------------------------- series


def test_the_loser_deals_and_a_forfeit_is_a_loss() -> None:
    """Seat 0 forfeits games 2 and 3, seat 1 game 5: each forfeiter deals the next game."""
    config = SeriesConfig(games=7, seed="review-1", time_control=FAST)
    result = run_series(config, (slot("a", {2, 3}), slot("b", {5})))
    dealers, winners = chain(result.games)
    assert dealers == expected_dealers(first_dealer("review-1"), winners)
    assert winners[1] == winners[2] == 1 and winners[4] == 0
    assert dealers[2] == dealers[3] == 0 and dealers[5] == 1
    for number in (2, 3, 5):
        forfeit = result.games[number].forfeit
        assert forfeit is not None and forfeit.reason is GameEndReason.ILLEGAL_ACTION
    # The non-dealer moves first (docs/rules.md "Dealing"), in every game.
    for record in result.games.values():
        if record.moves:
            assert record.moves[0].seat == 1 - record.dealer


def test_after_a_draw_the_dealer_deals_again() -> None:
    config = SeriesConfig(games=3, seed="review-draw", time_control=FAST, turn_limit=1)
    result = run_series(config, (slot("a"), slot("b")))
    dealers, winners = chain(result.games)
    assert winners == [None, None, None]
    assert dealers == [first_dealer("review-draw")] * 3


def test_a_double_forfeit_is_a_draw_and_keeps_the_dealer() -> None:
    config = SeriesConfig(games=3, seed="review-df", time_control=FAST, max_attempts=2)
    result = run_series(config, (NeverStarts("a"), NeverStarts("b")))
    dealers, winners = chain(result.games)
    assert winners == [None, None, None]
    assert dealers == [first_dealer("review-df")] * 3
    assert result.score(0).draws == 3 and result.score(1).draws == 3


def test_a_bot_that_cannot_start_loses_and_deals_next() -> None:
    config = SeriesConfig(games=4, seed="review-start", time_control=FAST)
    result = run_series(config, (NeverStarts("a"), slot("b")))
    dealers, winners = chain(result.games)
    assert winners == [1, 1, 1, 1]
    assert dealers == expected_dealers(first_dealer("review-start"), winners)
    assert dealers[1:] == [0, 0, 0]


@pytest.mark.parametrize("void_in", [{1}, {2}, {1, 3, 4}])
def test_a_voided_game_is_replayed_with_its_deal_and_dealer_and_does_not_count(
    void_in: set[int],
) -> None:
    """docs/rules.md: a voided game does not count: it is replayed with the same deal and the
    same dealer, and the game after it is dealt as if the void had not happened."""
    config = SeriesConfig(games=5, seed="review-void", time_control=FAST)
    attempts: list[tuple[int, int, GameRecord]] = []

    def recorder(number: int, attempt: int, record: GameRecord) -> None:
        attempts.append((number, attempt, record))

    voided: list[int] = []
    result = run_series(
        config,
        (slot("a"), voiding_slot("b", void_in, voided)),
        recorder=recorder,
    )
    clean = run_series(config, (slot("a"), slot("b")))
    assert sorted(voided) == sorted(void_in)
    void_records = [(n, a, r) for n, a, r in attempts if r.voided]
    assert sorted(n for n, _, _ in void_records) == sorted(void_in)
    for number, attempt, record in void_records:
        assert attempt == 1 and record.ending is GameEndReason.VOID and record.winner is None
        replay = result.games[number]
        assert replay.deck == record.deck == tuple(str(c) for c in game_deck(config.seed, number))
        assert replay.dealer == record.dealer
    assert len(result.games) == 5 and not any(r.voided for r in result.games.values())
    dealers, winners = chain(result.games)
    assert dealers == expected_dealers(first_dealer(config.seed), winners)
    assert (dealers, winners) == chain(clean.games)
    score = result.score(0)
    assert score.wins + score.draws + score.losses == 5


# ---------------------------------------------------------------------------- the classic table


@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_classic_deal_goes_clockwise_from_the_dealers_left(players: int) -> None:
    """docs/rules.md "Table and deal": deck card i (i < 3n) goes to seat (dealer + 1 + i) mod
    n; card 3n is turned face up (trump) and is the last card of the stock, which is drawn
    from 3n + 1 onward; the seat after the dealer leads first."""
    deck = shuffled_deck(f"table-{players}")
    for dealer in range(players):
        game = ClassicGame.from_deck(deck, dealer, players=players)
        for seat in range(players):
            mine = {deck[i] for i in range(3 * players) if (dealer + 1 + i) % players == seat}
            assert set(game.view(seat).hand) == mine
        face_up = deck[3 * players]
        assert game.face_up == face_up and game.trump == face_up.suit
        assert game.stock == (*deck[3 * players + 1 :], face_up)
        assert game.to_move == game.leader == (dealer + 1) % players
        assert game.defender == (dealer + 2) % players


def independent_pairwise(game: ClassicGame) -> set[tuple[int, int]]:
    """docs/rules.md "Out, end and result", read independently."""
    n = game.players
    if game.loser is not None:
        return {(s, game.loser) for s in range(n) if s != game.loser}
    if game.reason is not None and game.reason.value == "turn limit":
        return {(w, x) for w in range(n) for x in range(n) if game.out[w] and not game.out[x]}
    return set()


@pytest.mark.parametrize("players", [2, 3, 4])
def test_classic_placings_follow_the_rules(players: int) -> None:
    import random

    rng = random.Random(players)
    endings: set[str] = set()
    for k in range(60):
        limit = rng.choice([8, 20, 1000])
        game = ClassicGame.new(seed=k, dealer=k % players, players=players, turn_limit=limit)
        while not game.over:
            game.play(rng.choice(game.legal_actions()))
        assert game.reason is not None
        endings.add(game.reason.value)
        holding = [s for s in range(players) if game.hands[s]]
        if game.reason.value != "turn limit":
            # Over by the rules: at most one holds cards; he (if any) is the loser.
            assert len(holding) <= 1
            assert game.loser == (holding[0] if holding else None)
        assert set(game.pairwise_results()) == independent_pairwise(game)
    assert "turn limit" in endings and len(endings) >= 2


def table_slots(count: int, illegal: dict[int, set[int]]) -> list[PlayerSlot]:
    return [slot(f"s{seat}", illegal.get(seat, ())) for seat in range(count)]


@pytest.mark.parametrize("players", [3, 4])
def test_a_table_series_deals_from_the_loser_and_keeps_the_dealer_without_one(
    players: int,
) -> None:
    """docs/rules.md "Series and tables": the first dealer from the seed, then the loser deals
    (the offender after a forfeit), the same dealer after a game without a loser."""
    config = SeriesConfig(
        games=8, seed=f"tbl-{players}", ruleset="classic", players=players, time_control=FAST
    )
    result = run_table_series(config, table_slots(players, {1: {3}, 2: {6}}))
    games = [result.games[n] for n in range(1, 9)]
    assert games[0].dealer == first_table_dealer(config.seed, players)
    for before, after in pairwise(games):
        assert after.dealer == (before.dealer if before.loser is None else before.loser)
    assert games[2].forfeit is not None and games[2].loser == 1 and games[3].dealer == 1
    assert games[5].forfeit is not None and games[5].loser == 2 and games[6].dealer == 2
    for record in games:
        assert record.deck == tuple(str(c) for c in game_deck(config.seed, games.index(record) + 1))
        if record.moves:
            assert record.moves[0].seat == (record.dealer + 1) % players
        if record.forfeit is not None:
            assert set(record.pairwise) == {
                (s, record.forfeit.seat) for s in range(players) if s != record.forfeit.seat
            }
    for seat in range(players):
        score = result.score(seat)
        expected = [g.outcome(seat) for g in games]
        assert (score.wins, score.draws, score.losses) == (
            expected.count("win"),
            expected.count("draw"),
            expected.count("loss"),
        )


def test_a_table_game_at_the_turn_limit_keeps_the_dealer() -> None:
    config = SeriesConfig(
        games=3, seed="tbl-limit", ruleset="classic", players=3, time_control=FAST, turn_limit=2
    )
    result = run_table_series(config, table_slots(3, {}))
    dealers = [result.games[n].dealer for n in (1, 2, 3)]
    assert all(
        g.ending is GameEndReason.TURN_LIMIT and g.loser is None for g in result.games.values()
    )
    assert dealers == [first_table_dealer("tbl-limit", 3)] * 3


def test_a_voided_table_game_is_replayed_with_its_deal_and_dealer() -> None:
    config = SeriesConfig(games=4, seed="tbl-void", ruleset="classic", players=3, time_control=FAST)
    attempts: list[tuple[int, int, GameRecord]] = []
    voided: list[int] = []
    slots: list[PlayerSlot] = [slot("s0"), voiding_slot("s1", {2}, voided), slot("s2")]
    result = run_table_series(config, slots, recorder=lambda n, a, r: attempts.append((n, a, r)))
    clean = run_table_series(config, table_slots(3, {}))
    assert voided == [2]
    void = [(n, a, r) for n, a, r in attempts if r.voided]
    assert [(n, a) for n, a, _ in void] == [(2, 1)]
    assert void[0][2].dealer == result.games[2].dealer and void[0][2].deck == result.games[2].deck
    assert [g.dealer for g in result.games.values()] == [g.dealer for g in clean.games.values()]
    assert [g.loser for g in result.games.values()] == [g.loser for g in clean.games.values()]


# ---------------------------------------------------------------------------- the database


@dataclass
class Pool:
    db: Database
    ids: dict[str, int]
    series: dict[tuple[str, str], int] = field(default_factory=dict)


def pool(tmp_path: Path, names: list[str], games: int, *, padding: int = 0) -> Pool:
    """Submissions ``names`` (after ``padding`` unused ones, so ids can reach 10 and more)
    and one standard series per pair (seat 0 the first of the pair)."""
    db = open_database(f"sqlite:///{tmp_path / 'review.db'}")
    ids: dict[str, int] = {}
    with db.session() as session:
        for k, name in enumerate([f"pad{i}" for i in range(padding)] + names):
            row = submit(
                NewSubmission(bot_name=name, version="1", sha256=f"{k:064x}", submitted_by="t"),
                session=session,
            ).submission
            assert row.id is not None
            if not name.startswith("pad"):
                ids[name] = row.id
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        tournament = create_tournament(
            TournamentSpec(
                name="review",
                seed=3,
                series=[
                    SeriesSpec(ids[a], ids[b], games, seed=k) for k, (a, b) in enumerate(pairs)
                ],
            ),
            session=session,
        )
        assert tournament.id is not None
    found = Pool(db, ids)
    with db.read_session() as session:
        from arena.db import series_of_tournament

        names_of = {v: k for k, v in ids.items()}
        for stored in series_of_tournament(tournament.id, session=session):
            assert stored.id is not None
            key = (names_of[stored.submission_a_id], names_of[stored.submission_b_id])
            found.series[key] = stored.id
    return found


def storing(found: Pool, pair: tuple[str, str]) -> Callable[[int, int, GameRecord], None]:
    """A series recorder that stores every attempt, as the tournament runner does."""
    seats = (found.ids[pair[0]], found.ids[pair[1]])

    def recorder(number: int, attempt: int, record: GameRecord) -> None:
        with found.db.session() as session:
            record_game(
                record, GamePlace(found.series[pair], number, attempt, seats), session=session
            )

    return recorder


@dataclass(frozen=True)
class Row:
    """What the checks read of a stored game."""

    id: int
    series_id: int
    number: int
    attempt: int
    voided: bool
    result: str | None
    dealer: int
    seat0_submission_id: int
    seat1_submission_id: int
    forfeit_seat: int | None
    end_reason: str


def all_games(db: Database) -> list[Row]:
    from sqlmodel import col, select

    with db.read_session() as session:
        return [
            Row(
                g.id or 0,
                g.series_id,
                g.number,
                g.attempt,
                g.voided,
                g.result,
                g.dealer,
                g.seat0_submission_id,
                g.seat1_submission_id,
                g.forfeit_seat,
                g.end_reason,
            )
            for g in session.exec(select(Game).order_by(col(Game.id)))
        ]


def independent_board(games: list[Row]) -> dict[int, tuple[int, int, int, float, int]]:
    """W, D, L, live Elo and games per submission, from the rows alone (docs/ratings.md:
    1500, K 32 for the first 30 games then 16, each side its own K; in recorded order)."""
    wdl: dict[int, list[int]] = {}
    rating: dict[int, float] = {}
    played: dict[int, int] = {}
    for game in games:
        if game.voided:
            continue
        seats = (game.seat0_submission_id, game.seat1_submission_id)
        for sid in seats:
            wdl.setdefault(sid, [0, 0, 0])
        if game.result == "draw":
            wdl[seats[0]][1] += 1
            wdl[seats[1]][1] += 1
            scores = (0.5, 0.5)
        else:
            winner = {"seat0": 0, "seat1": 1}[str(game.result)]
            wdl[seats[winner]][0] += 1
            wdl[seats[1 - winner]][2] += 1
            scores = (1.0, 0.0) if winner == 0 else (0.0, 1.0)
        before = [rating.get(s, 1500.0) for s in seats]
        for k, sid in enumerate(seats):
            expected = 1 / (1 + 10 ** ((before[1 - k] - before[k]) / 400))
            kf = 32.0 if played.get(sid, 0) < 30 else 16.0
            rating[sid] = before[k] + kf * (scores[k] - expected)
            played[sid] = played.get(sid, 0) + 1
    return {s: (w, d, lo, rating[s], played[s]) for s, (w, d, lo) in wdl.items()}


def check_board(found: Pool, rows: list[Standing]) -> None:
    games = all_games(found.db)
    mine = independent_board(games)
    assert {r.submission_id for r in rows} == set(mine)
    for row in rows:
        w, d, lo, elo, n = mine[row.submission_id]
        assert (row.wins, row.draws, row.losses, row.games) == (w, d, lo, n), row.bot
        assert row.elo == pytest.approx(elo, abs=1e-9), row.bot
        assert row.elo_provisional == (n < 30)
        assert row.score == pytest.approx((w + d / 2) / n)
    forfeits: dict[int, dict[str, int]] = {}
    for game in games:
        if not game.voided and game.forfeit_seat is not None:
            sid = (game.seat0_submission_id, game.seat1_submission_id)[game.forfeit_seat]
            by = forfeits.setdefault(sid, {})
            by[game.end_reason] = by.get(game.end_reason, 0) + 1
    assert {r.submission_id: r.forfeits for r in rows if r.forfeits} == forfeits


def test_standings_count_exactly_the_stored_counted_games(tmp_path: Path) -> None:
    """docs/leaderboard.md: W/D/L count counted games (voided ones never count), a draw is
    half a point; forfeits by reason; live Elo in recorded order. A double forfeit is a
    draw (docs/rules.md)."""
    found = pool(tmp_path, ["ann", "bob", "cid", "dud"], games=6)
    voided: list[int] = []
    config = SeriesConfig(games=6, seed="rv-1", time_control=FAST, max_attempts=2)
    run_series(config, (slot("ann", {2}), voiding_slot("bob", {3, 5}, voided)),
               recorder=storing(found, ("ann", "bob")))  # fmt: skip
    run_series(replace_seed(config, "rv-2"), (slot("ann"), slot("cid", {1, 4})),
               recorder=storing(found, ("ann", "cid")))  # fmt: skip
    run_series(replace_seed(config, "rv-3"), (slot("ann"), NeverStarts("dud")),
               recorder=storing(found, ("ann", "dud")))  # fmt: skip
    run_series(replace_seed(config, "rv-4"), (slot("bob", {6}), slot("cid")),
               recorder=storing(found, ("bob", "cid")))  # fmt: skip
    run_series(replace_seed(config, "rv-5"), (slot("bob"), NeverStarts("dud")),
               recorder=storing(found, ("bob", "dud")))  # fmt: skip
    assert sorted(voided) == [3, 5]
    # cid and dud never meet: their series is a double forfeit every game (a draw).
    run_series(replace_seed(config, "rv-6"), (NeverStarts("cid"), NeverStarts("dud")),
               recorder=storing(found, ("cid", "dud")))  # fmt: skip
    games = all_games(found.db)
    assert sum(g.voided for g in games) == 2 and len(games) == 38
    # A counted game voided after it was recorded no longer counts either.
    first_counted = next(g for g in games if not g.voided and g.result != "draw")
    assert first_counted.id is not None
    with found.db.session() as session:
        void_game(first_counted.id, "review: referee bug", session=session)
    with found.db.read_session() as session:
        board = standings(session=session)
    check_board(found, board.rows)
    assert board.games == 35
    rows = {r.bot: r for r in board.rows}
    assert rows["dud"].forfeits == {"startup failure": 12}
    assert rows["dud"].draws == 6 and rows["dud"].wins == 0


def replace_seed(config: SeriesConfig, seed: str) -> SeriesConfig:
    from dataclasses import replace

    return replace(config, seed=seed)


def test_equal_ratings_are_ranked_by_submission_id_as_numbers(tmp_path: Path) -> None:
    """docs/leaderboard.md: equal ratings (to a millionth of an Elo) are ranked by
    submission id, as numbers (2 before 10). Here 'zed' (a low id) and 'amy' (id >= 10)
    have exactly the same results against 'top' with both colours, and draw each other."""
    found = pool(tmp_path, ["zed", "top", "amy"], games=4, padding=8)
    assert found.ids["zed"] < 10 <= found.ids["amy"]
    deck = tuple(str(c) for c in shuffled_deck(5))

    def put(pair: tuple[str, str], results: list[tuple[int, int | None]]) -> None:
        seats = (found.ids[pair[0]], found.ids[pair[1]])
        with found.db.session() as session:
            for number, (dealer, winner) in enumerate(results, start=1):
                record = GameRecord(
                    deck=deck,
                    dealer=dealer,
                    turn_limit=1000,
                    moves=(Move(1 - dealer, "lead 6C", 0.01),),
                    ending=GameEndReason.OUT if winner is not None else GameEndReason.TURN_LIMIT,
                    winner=winner,
                    referee_version="test",
                    started=1.8e9,
                    finished=1.8e9,
                )
                place = GamePlace(found.series[pair], number, 1, seats)
                record_game(record, place, session=session)

    # zed (seat 0) vs top (seat 1); top (seat 0) vs amy (seat 1): the same games for both.
    put(("zed", "top"), [(0, 1), (1, 1), (0, 0), (1, None)])
    put(("top", "amy"), [(1, 0), (0, 0), (1, 1), (0, None)])
    put(("zed", "amy"), [(0, None), (1, None), (0, None), (1, None)])
    with found.db.read_session() as session:
        board = standings(session=session, reuse=False)
    rows = {r.bot: r for r in board.rows}
    assert rows["zed"].rating == pytest.approx(rows["amy"].rating, abs=1e-6)
    order = [r.bot for r in board.rows]
    assert order.index("zed") < order.index("amy"), order
    check_board(found, board.rows)
    refit_and_store(found.db)
    with found.db.read_session() as session:
        again = standings(session=session)
    assert [r.bot for r in again.rows] == order


# ---------------------------------------------------------------------------- the runner

EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"


def test_a_series_stopped_mid_way_resumes_with_exactly_the_missing_games(tmp_path: Path) -> None:
    """README: each game is committed as it ends: an interrupted run loses nothing and
    resume plays exactly the missing games; the dealer chain runs on across the stop."""
    from arena.tournament.config import load_config
    from arena.tournament.runner import create, play_series_task, tasks_for

    url = f"sqlite:///{tmp_path / 'run.db'}"
    db = open_database(url)
    config = load_config(
        None,
        bots=[str(EXAMPLES / "random"), str(EXAMPLES / "greedy")],
        games_per_pair=8,
        backend="process",
        seed=21,
        move_seconds=0.5,
    )
    store = tmp_path / "store"
    tournament_id = create(config, db=db, store=store)
    (task,) = tasks_for(tournament_id, db=db, store=store)
    stop = threading.Event()
    seen: list[int] = []

    def on_game(series_id: int, number: int, record: GameRecord) -> None:
        seen.append(number)
        if len(seen) == 3:
            stop.set()

    first = play_series_task(task, stop=stop, on_game=on_game)
    assert first.status == "interrupted" and first.games_played == 3
    assert seen == [1, 2, 3]
    (again,) = tasks_for(tournament_id, db=db, store=store)
    resumed: list[int] = []
    second = play_series_task(again, on_game=lambda s, n, r: resumed.append(n))
    assert second.status == "finished" and resumed == [4, 5, 6, 7, 8]
    rows = [g for g in all_games(db) if g.series_id == task.series_id]
    counted = sorted((g.number, g.attempt) for g in rows if not g.voided)
    assert [n for n, _ in counted] == list(range(1, 9))
    with db.read_session() as session:
        from arena.db import get_series

        series = get_series(task.series_id, session=session)
        seed = series.seed
    by_number = {g.number: g for g in rows if not g.voided}
    winners: list[int | None] = [
        None if by_number[n].result == "draw" else int(str(by_number[n].result)[-1])
        for n in range(1, 9)
    ]
    dealers = [by_number[n].dealer for n in range(1, 9)]
    assert dealers == expected_dealers(first_dealer(seed), winners)
    for n in range(1, 9):
        assert tuple(shuffled_deck(f"kryt:{seed}:deal:{n}")) == game_deck(seed, n)
    with db.read_session() as session:
        board = standings(session=session, tournament_id=tournament_id)
    assert board.games == 8 and sum(r.games for r in board.rows) == 16


def test_a_classic_board_counts_each_pair_of_seats_with_a_result(tmp_path: Path) -> None:
    """docs/leaderboard.md: on a classic table's board Games and W/D/L count pairwise
    results: each game gives one per pair of seats with a result; two winners have none
    between themselves; the rest draw. Forfeits (seat 1 in game 2) are the offender's."""
    db = open_database(f"sqlite:///{tmp_path / 'table.db'}")
    with db.session() as session:
        ids = []
        for k, name in enumerate(["t0", "t1", "t2"]):
            row = submit(
                NewSubmission(bot_name=name, version="1", sha256=f"{k:064x}", submitted_by="t"),
                session=session,
            ).submission
            assert row.id is not None
            ids.append(row.id)
        seats = (ids[1], ids[2], ids[0])  # not in id order
        tournament = create_tournament(
            TournamentSpec(
                name="tables",
                seed=4,
                config={"ruleset": "classic", "table_size": 3},
                series=[SeriesSpec(seats[0], seats[1], 6, seed=9, ruleset="classic", seats=seats)],
            ),
            session=session,
        )
        assert tournament.id is not None
    with db.read_session() as session:
        from arena.db import series_of_tournament

        (series,) = series_of_tournament(tournament.id, session=session)
        assert series.id is not None
        series_id = series.id
    voided: list[int] = []

    def recorder(number: int, attempt: int, record: GameRecord) -> None:
        with db.session() as session:
            record_game(record, GamePlace(series_id, number, attempt, seats), session=session)

    config = SeriesConfig(games=6, seed=9, ruleset="classic", players=3, time_control=FAST,
                          turn_limit=40)  # fmt: skip
    result = run_table_series(
        config,
        [slot("t1"), voiding_slot("t2", {4}, voided), slot("t0", {2})],
        recorder=recorder,
    )
    assert voided == [4]
    wdl: dict[int, list[int]] = {sid: [0, 0, 0] for sid in ids}
    for record in result.games.values():
        decided = {frozenset(p): p[0] for p in record.pairwise}
        winners = {w for w, _ in record.pairwise}
        for a in range(3):
            for b in range(a + 1, 3):
                won = decided.get(frozenset((a, b)))
                if won is None and a in winners and b in winners:
                    continue
                if won is None:
                    wdl[seats[a]][1] += 1
                    wdl[seats[b]][1] += 1
                else:
                    lost = b if won == a else a
                    wdl[seats[won]][0] += 1
                    wdl[seats[lost]][2] += 1
    with db.read_session() as session:
        board = standings(session=session, tournament_id=tournament.id)
    assert (board.ruleset, board.table_size, board.games) == ("classic", 3, 6)
    for line in board.rows:
        assert [line.wins, line.draws, line.losses] == wdl[line.submission_id], line.bot
        assert line.games == sum(wdl[line.submission_id])
    forfeiter = {r.bot: r.forfeits for r in board.rows}
    assert result.games[2].forfeit is not None and result.games[2].loser == 2
    assert sum(forfeiter["t0"].values()) == sum(
        1 for g in result.games.values() if g.forfeit is not None and g.forfeit.seat == 2
    )


def test_a_run_split_across_jobs_keeps_the_loser_deals_order_in_each_series() -> None:
    """docs/ratings.md: `-j N` splits the run into N independent series with seeds SEED/1 ..
    SEED/N, each keeping the loser-deals order; every game is reported once."""
    from referee.pairing import pairing_configs, run_pairing

    base = SeriesConfig(games=7, seed="jobs", time_control=FAST)
    configs = pairing_configs(base, 3)
    assert [c.games for c in configs] == [3, 2, 2]
    assert [c.seed for c in configs] == ["jobs/1", "jobs/2", "jobs/3"]
    lock = threading.Lock()
    seen: dict[int, dict[int, GameRecord]] = {}

    def on_game(index: int, number: int, record: GameRecord) -> None:
        with lock:
            assert number not in seen.setdefault(index, {})
            seen[index][number] = record

    outcome = run_pairing(configs, lambda i: (slot("a", {2}), slot("b", {1})), on_game)
    assert not outcome.stopped and outcome.errors == ()
    assert sum(len(games) for games in seen.values()) == 7
    for index, games in seen.items():
        dealers, winners = chain(games)
        assert dealers == expected_dealers(first_dealer(configs[index].seed), winners)
