"""docs/protocol.md checked from the outside: a bot written from the page and proto/ only.

The bot (``doc_review_bot/bot.py``) is raw protobuf on grpcio and the generated
``kryt_proto`` modules, no ``sdk``. Each run here is a real ``kryt tournament run
--backend process`` between copies of it; the bot logs every message it receives (its
bytes), the database says how each game was recorded. Each test quotes the sentence of
protocol.md it checks.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kryt_proto.v1 import bot_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
BOT = Path(__file__).resolve().parent / "doc_review_bot" / "bot.py"
KRYT = ROOT / ".venv" / "bin" / "kryt"
CARD = re.compile(r"\b[6-9TJQKA][CDHS]\b")
DOCUMENTED_VIEW = {
    "seat", "dealer", "hand", "pile", "trump", "face_up", "stock_count", "opponent_count",
    "opponent_known", "own_known", "to_move", "legal_actions", "history", "over", "winner",
    "reason", "turn_limit", "final_cover",
}  # fmt: skip
DOCUMENTED_TABLE_VIEW = {
    "ruleset", "seat", "players", "dealer", "hand", "hand_sizes", "out", "known", "leader",
    "defender", "led", "discard", "trump", "face_up", "stock_count", "to_move",
    "legal_actions", "history", "movers", "turn_limit", "over", "loser", "reason",
}  # fmt: skip
ROOMY = ("--move-seconds", "10", "--bank-seconds", "30")
"""Clocks no move of these bots comes near on a busy machine (not under test)."""

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


@dataclass(frozen=True)
class Entry:
    """One thing the bot logged: a message it received (``msg``) or an event of its own."""

    kind: str
    pid: int
    msg: pb.RefereeMessage


@dataclass(frozen=True)
class Run:
    output: str
    logs: dict[str, list[Entry]]
    games: list[dict[str, Any]]

    def streams(self, name: str) -> list[list[Entry]]:
        """The bot's log split by process (one process, one stream), in start order."""
        by_pid: dict[int, list[Entry]] = {}
        for entry in self.logs[name]:
            by_pid.setdefault(entry.pid, []).append(entry)
        return list(by_pid.values())

    def received(self, name: str, kind: str) -> list[pb.RefereeMessage]:
        return [e.msg for e in self.logs[name] if e.kind == kind]


def _read_log(path: Path) -> list[Entry]:
    entries = []
    for line in path.read_text().splitlines() if path.exists() else []:
        item = json.loads(line)
        message = pb.RefereeMessage.FromString(base64.b64decode(item["raw"]))
        entries.append(Entry(item["kind"], item["pid"], message))
    return entries


def tournament(tmp: Path, bots: dict[str, dict[str, Any]], *args: str, games: int = 2) -> Run:
    """``kryt tournament run`` of copies of the raw bot (name -> its review.json settings)."""
    folders = []
    for name, config in bots.items():
        folder = tmp / name
        folder.mkdir()
        shutil.copy(BOT, folder / "bot.py")
        (folder / "bot.toml").write_text(
            f'name = "{name}"\nversion = "1.0.0"\nruntime = "python"\nentry = "bot.py"\n'
        )
        settings = {"name": name, "log": str(tmp / f"{name}.log"), **config}
        (folder / "review.json").write_text(json.dumps(settings))
        folders.append(str(folder))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("KRYT_DATABASE_URL", None)
    database = tmp / "db.sqlite"
    command = [
        str(KRYT), "tournament", "run", *folders, "--games", str(games), "--backend", "process",
        "--unsafe", "-d", str(database), "--store", str(tmp / "store"), "--seed", "7",
        "-j", "1", "-v", *args,
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=400, cwd=tmp)
    assert database.exists(), proc.stdout + proc.stderr
    with sqlite3.connect(database) as con:
        con.row_factory = sqlite3.Row
        rows = [
            dict(r)
            for r in con.execute(
                "select series_id, number, attempt, dealer, result, end_reason, forfeit_seat,"
                " forfeit_detail, loser_seat, seats from games"
                " order by series_id, number, attempt"
            )
        ]
    return Run(proc.stdout + proc.stderr, {n: _read_log(tmp / f"{n}.log") for n in bots}, rows)


def cards(texts: Any) -> set[str]:
    return {card for text in texts for card in CARD.findall(text)}


def games_of(stream: list[Entry]) -> Iterator[tuple[pb.GameStart, list[Any], pb.GameEnd | None]]:
    """Each game of one stream: its GameStart, its DecisionRequests and its GameEnd."""
    start: pb.GameStart | None = None
    requests: list[Any] = []
    for entry in stream:
        if entry.kind == "game_start":
            start, requests = entry.msg.game_start, []
        elif entry.kind == "decision_request":
            requests.append(entry.msg.decision_request)
        elif entry.kind == "game_end":
            assert start is not None
            yield start, requests, entry.msg.game_end
            start = None
    if start is not None:
        yield start, requests, None


# --- the default game, played cleanly ---------------------------------------------------


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("clean")
    bots: dict[str, dict[str, Any]] = {"a": {}, "b": {"pick": "last"}}
    return tournament(tmp, bots, *ROOMY, "--time", "a=10+20+0.5", games=3)


def test_order_of_messages_on_one_stream(clean: Run) -> None:
    """ "The referee opens **one long-lived bidirectional stream per series** and sends
    everything over it." / Handshake first, then per game GameStart, DecisionRequests,
    GameEnd, then Shutdown ("no reply; close the stream and exit")."""
    for name in ("a", "b"):
        (stream,) = clean.streams(name)  # one process, one stream, the whole series
        kinds = [e.kind for e in stream]
        assert kinds[:2] == ["started", "handshake"]
        assert kinds[-2:] == ["shutdown", "exiting"]
        numbers = [e.msg.game_start.game_number for e in stream if e.kind == "game_start"]
        assert numbers == [1, 2, 3]
        body = "".join(
            {"game_start": "S", "decision_request": "D", "game_end": "E"}[k] for k in kinds[2:-2]
        )
        assert re.fullmatch(r"(SD+E){3}", body), body


def test_handshake_fields(clean: Run) -> None:
    """Handshake: "`protocol_version` ... (this page: `1`)", "`games` | games in the
    series", "`opponent_name` ... `greedy@1.0.0` in tournaments", "`time_control` |
    **your** control"; "Today's referee always sends both (`grace_ms` even when it is 0)"."""
    controls = {"a": (10_000, 20_000, 500), "b": (10_000, 30_000, 0)}
    for name, other in (("a", "b"), ("b", "a")):
        (message,) = clean.received(name, "handshake")
        hello = message.handshake
        assert hello.protocol_version == 1
        assert hello.games == 3
        assert hello.opponent_name == f"{other}@1.0.0"
        tc = hello.time_control
        assert (tc.move_ms, tc.bank_ms, tc.increment_ms) == controls[name]
        assert tc.HasField("grace_ms") and tc.grace_ms == 50
        assert tc.clock == pb.CLOCK_KIND_WALL


def test_request_ids_are_random_unique_and_below_2_31(clean: Run) -> None:
    """ "request ids are random numbers below 2**31, not 1, 2, ..."; "unique within the
    stream"."""
    for name in ("a", "b"):
        ids = [m.decision_request.request_id for m in clean.received(name, "decision_request")]
        assert len(ids) == len(set(ids)) > 20
        assert all(0 <= i < 2**31 for i in ids)
        assert sorted(ids) != ids  # not a counter


def test_the_bot_is_asked_only_on_its_turn_and_history_follows_the_dealer(clean: Run) -> None:
    """ "The bot is asked only when it is its turn"; "`legal_actions` ... empty unless you
    are to move"; "action *i* was played by seat `1 - dealer` when *i* is even, else by
    `dealer`"; GameStart "`dealer` (the seat after it moves first: in the default game the
    other seat)"."""
    for name in ("a", "b"):
        (stream,) = clean.streams(name)
        for start, requests, end in games_of(stream):
            assert end is not None and requests
            for request in requests:
                view = request.view
                assert request.game_number == start.game_number
                assert not request.HasField("table_view")
                assert view.seat == start.seat and view.dealer == start.dealer
                assert view.HasField("to_move") and view.to_move == start.seat
                assert view.legal_actions
                mover = 1 - start.dealer if len(view.history) % 2 == 0 else start.dealer
                assert mover == start.seat
                assert view.turn_limit == start.turn_limit == 1000


def test_the_view_never_shows_a_hidden_card(clean: Run) -> None:
    """ "Nothing of the opponent's hand or the stock is ever sent to a bot, except as the
    rules make it public and in `GameEnd.deck` after the game." / "View — exactly the
    engine's view of one seat, nothing more"."""
    for name in ("a", "b"):
        (stream,) = clean.streams(name)
        for _, requests, end in games_of(stream):
            assert end is not None
            seen_face_up: set[str] = set()
            for request in requests:
                view = request.view
                assert {f.name for f, _ in view.ListFields()} <= DOCUMENTED_VIEW
                assert pb.View.FromString(view.SerializeToString()) == view
                assert view.SerializeToString() == pb.View(**_fields(view)).SerializeToString()
                if view.face_up:
                    seen_face_up.add(view.face_up)
                public = cards(view.history) | seen_face_up
                hand = set(view.hand)
                assert len(hand) == len(view.hand)
                assert set(view.pile) <= public
                assert set(view.opponent_known) <= public - hand
                assert set(view.own_known) <= hand & public
                assert cards(view.legal_actions) <= hand | {view.face_up} - {""}  # swap
                assert len(hand) + view.opponent_count + view.stock_count <= 36
            # the deal is never revealed, not even after the game
            assert list(end.deck) == []


def _fields(message: Any) -> dict[str, Any]:
    return {f.name: v for f, v in message.ListFields()}


def test_clock_move_bank_and_increment(clean: Run) -> None:
    """`clock` "`move_ms` for this move, `bank_ms` of bank left"; "after each of your moves
    that came in time, `time_control.increment_ms` is added to your bank ...; the next
    request's `clock.bank_ms` includes it" ("it starts each game at
    `time_control.bank_ms`")."""
    for name, bank, increment in (("a", 20_000, 500), ("b", 30_000, 0)):
        (stream,) = clean.streams(name)
        for start, requests, _ in games_of(stream):
            assert start.time_control.bank_ms == bank
            for k, request in enumerate(requests):
                assert request.clock.move_ms == 10_000
                # every move of this bot takes far less than move_ms: nothing is charged
                assert request.clock.bank_ms == bank + k * increment


def test_game_end_and_scores(clean: Run) -> None:
    """GameEnd: "`winner` (absent on a draw or a void game), `reason` (EndReason), ...
    `view` (your final view), `deck` (the full deal, 36 cards, top first ...), `score`
    (after this game)"; GameStart "`score` (... so far, from your point of view)";
    "`over` ... nobody `to_move` and no `legal_actions`"; "Results and dealers (the loser
    deals)"."""
    for name in ("a", "b"):
        (stream,) = clean.streams(name)
        before = pb.SeriesScore()
        previous: pb.GameEnd | None = None
        for start, _requests, end in games_of(stream):
            assert end is not None
            assert start.score == before
            if previous is not None and previous.HasField("winner"):
                assert start.dealer == 1 - previous.winner  # the loser deals
            assert end.game_number == start.game_number
            assert end.reason in (pb.END_REASON_OUT, pb.END_REASON_DRAW_BY_FINAL_ANSWER)
            view = end.view
            assert view.over and not view.HasField("to_move") and not view.legal_actions
            assert view.reason == end.reason
            assert view.HasField("winner") == end.HasField("winner")
            assert view.winner == end.winner
            me = start.seat
            won = end.HasField("winner") and end.winner == me
            lost = end.HasField("winner") and end.winner != me
            expected = pb.SeriesScore(
                wins=before.wins + won,
                draws=before.draws + (not end.HasField("winner")),
                losses=before.losses + lost,
            )
            assert end.score == expected
            before, previous = end.score, end


def test_referee_version_and_game_start_names(clean: Run) -> None:
    """ "`referee_version` | string | free text"; GameStart repeats "`opponent_name`,
    `time_control`, `turn_limit`"; "The control of the recipient, in `Handshake` and again in
    every `GameStart`"."""
    (hello,) = clean.received("a", "handshake")
    for message in clean.received("a", "game_start"):
        start = message.game_start
        assert start.opponent_name == hello.handshake.opponent_name
        assert start.time_control == hello.handshake.time_control
        assert start.turn_limit == 1000
        assert start.seat in (0, 1)


# --- turn limit, a grace of 0, the CPU clock --------------------------------------------


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("limited")
    return tournament(
        tmp, {"a": {}, "b": {}}, *ROOMY, "--turn-limit", "6", "--grace-seconds", "0", games=1
    )


def test_turn_limit_draw_on_the_wire(limited: Run) -> None:
    """ "`turn_limit` (a game still running after this many actions is a draw)"; "`winner`
    (absent on a draw ...)"; "`final_cover` | the automatic final cover of a drawn game,
    else `""`" (a turn-limit draw has none)."""
    for name in ("a", "b"):
        (end,) = [m.game_end for m in limited.received(name, "game_end")]
        assert end.reason == pb.END_REASON_TURN_LIMIT
        assert not end.HasField("winner")
        assert len(end.view.history) == 6
        assert end.view.turn_limit == 6
        assert end.view.final_cover == ""
        assert end.score == pb.SeriesScore(draws=1)


def test_a_grace_of_zero_is_still_sent(limited: Run) -> None:
    """ "Today's referee always sends both (`grace_ms` even when it is 0)"."""
    for name in ("a", "b"):
        for message in limited.received(name, "handshake") + limited.received(name, "game_start"):
            body = message.handshake if message.HasField("handshake") else message.game_start
            assert body.time_control.HasField("grace_ms")
            assert body.time_control.grace_ms == 0


# --- faults in the default game ---------------------------------------------------------

KEEPS, RESTARTS = False, True
FAULTS = {
    # fault: (reason, restarts the bot, the offender gets GameEnd, at)
    "malformed_text": (pb.END_REASON_MALFORMED_REPLY, KEEPS, True, 1),
    "illegal": (pb.END_REASON_ILLEGAL_ACTION, KEEPS, True, 1),
    "structured_bad": (pb.END_REASON_MALFORMED_REPLY, RESTARTS, True, 1),
    "empty": (pb.END_REASON_MALFORMED_REPLY, RESTARTS, True, 1),
    "wrong_id": (pb.END_REASON_MALFORMED_REPLY, RESTARTS, True, 1),
    "twice": (pb.END_REASON_MALFORMED_REPLY, RESTARTS, True, 1),
    "bot_error": (pb.END_REASON_CRASH, RESTARTS, True, 1),
    "big": (pb.END_REASON_MALFORMED_REPLY, RESTARTS, False, 1),
    "early": (pb.END_REASON_MALFORMED_REPLY, RESTARTS, True, 0),
    "handshake_again": (pb.END_REASON_MALFORMED_REPLY, RESTARTS, True, 0),
    "late": (pb.END_REASON_TIMEOUT, RESTARTS, True, 1),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_as_the_table_of_replies_says(
    fault: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The table "Illegal, malformed and unexpected replies" and "Restarts": e.g. "replies
    with text that is not an action | `MALFORMED_REPLY`: game lost | keeps the bot";
    "replies with a `request_id` that is not the pending one, replies twice, or sends a
    `Decision` before being asked | `MALFORMED_REPLY` ... | restarts the bot"; "sends no
    reply by the hard deadline | `TIMEOUT`"; "`GameEnd` is sent after every game to each bot
    whose stream is still open, the bot that forfeited included. It is not sent to a bot
    whose stream is gone: ... sent a reply over 64 KiB"; "After a forfeit ... the view says
    `over` with `GameEnd`'s `winner` ..., nobody `to_move` and no `legal_actions`; its
    `reason` ... is then unset"."""
    reason, restarts, told, at = FAULTS[fault]
    tmp = tmp_path_factory.mktemp(fault)
    config: dict[str, Any] = {"fault": fault, "game": 1, "at": at, "sleep": 6}
    clocks = ("--move-seconds", "1", "--bank-seconds", "1") if fault == "late" else ROOMY
    run = tournament(tmp, {"a": config, "b": {}}, *clocks, games=2)
    first, second = run.games
    assert first["forfeit_seat"] == 0, first
    assert first["end_reason"] == pb.EndReason.Name(reason).removeprefix(
        "END_REASON_"
    ).lower().replace("_", " ")
    assert second["forfeit_seat"] is None and second["end_reason"] in (
        "out",
        "draw by final answer",
    )
    streams = run.streams("a")
    assert len(streams) == (2 if restarts else 1), [[e.kind for e in s] for s in streams]
    if restarts:
        assert streams[1][1].kind == "handshake"  # "a new stream that starts with a Handshake"
    ends = {m.game_end.game_number: m.game_end for m in run.received("a", "game_end")}
    assert (1 in ends) == told
    (b_end, _) = [m.game_end for m in run.received("b", "game_end")]
    for end in [b_end, ends[1]] if told else [b_end]:
        assert end.reason == reason
        assert end.winner == 1 and end.HasField("winner")
        assert end.detail
        assert end.view.over and not end.view.HasField("to_move") and not end.view.legal_actions
        assert end.view.winner == 1
        assert end.view.reason == pb.END_REASON_UNSPECIFIED
    assert 2 in ends and ends[2].score.losses >= 1


def test_a_structured_action_is_played(tmp_path_factory: pytest.TempPathFactory) -> None:
    """ "**one** of `text` ... or `structured` (`Action{kind, cover, lead, swap}` ...)": a bot
    that answers every request structured plays whole games."""
    tmp = tmp_path_factory.mktemp("structured")
    every = {"fault": "structured", "game": 1, "at": 0}
    run = tournament(tmp, {"a": every, "b": {}}, *ROOMY, games=1)
    (game,) = run.games
    assert game["forfeit_seat"] is None, game
    assert len(run.streams("a")) == 1


# --- start-up ---------------------------------------------------------------------------


def test_another_protocol_version_is_learnt_once(tmp_path_factory: pytest.TempPathFactory) -> None:
    """ "A different `protocol_version` also fails the handshake: the referee reports *"bot
    'X' 1.0.0 speaks protocol version N; this referee speaks 1 (...)"* ... learnt once per
    series: the referee does not start the bot again, and every remaining game of the series
    is forfeited at once"; "A game that is not played because a bot could not start or
    refused the handshake has neither `GameStart` nor `GameEnd`, for either bot"."""
    tmp = tmp_path_factory.mktemp("version")
    run = tournament(tmp, {"a": {"protocol_version": 2}, "b": {}}, *ROOMY, games=3)
    assert [g["end_reason"] for g in run.games] == ["startup failure"] * 3
    assert all(g["forfeit_seat"] == 0 for g in run.games)
    details = {g["forfeit_detail"] for g in run.games}
    assert len(details) == 1
    assert "bot 'a' 1.0.0 speaks protocol version 2; this referee speaks 1 (" in details.pop()
    assert len(run.streams("a")) == 1
    for name in ("a", "b"):
        assert not run.received(name, "game_start") and not run.received(name, "game_end")


def test_another_name_is_tried_again_each_game(tmp_path_factory: pytest.TempPathFactory) -> None:
    """ "The arena ... refuses a reply whose `name` or `version` differs from `bot.toml`: the
    handshake fails and the bot forfeits the game as a `STARTUP_FAILURE`"; "Any other
    start-up failure (... a `name` or `version` other than `bot.toml`'s) is tried again at
    the next game"."""
    tmp = tmp_path_factory.mktemp("name")
    run = tournament(tmp, {"a": {"reply_name": "someone"}, "b": {}}, *ROOMY, games=2)
    assert [g["end_reason"] for g in run.games] == ["startup failure"] * 2
    assert len(run.streams("a")) == 2
    assert all(len([e for e in s if e.kind == "handshake"]) == 1 for s in run.streams("a"))


def test_exit_between_games_loses_the_next_game_unplayed(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """CRASH row: "between games (e.g. the process exits after `GameEnd`) the next game is
    lost: unplayed when the referee sees the death before it starts"; "the next
    `GameStart` skips its number"; "restarts the bot"."""
    tmp = tmp_path_factory.mktemp("exit")
    run = tournament(tmp, {"a": {"fault": "exit_after_end", "game": 1}, "b": {}}, *ROOMY, games=3)
    assert [g["end_reason"] for g in run.games][1] == "crash"
    assert run.games[1]["forfeit_seat"] == 0
    for name in ("a", "b"):
        numbers = [m.game_start.game_number for m in run.received(name, "game_start")]
        assert numbers == [1, 3]
    assert len(run.streams("a")) == 2


# --- the classic table ------------------------------------------------------------------


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("table")
    last = {"pick": "last"}
    bots: dict[str, dict[str, Any]] = {"a": last, "b": last, "c": last, "d": {}}
    return tournament(tmp, bots, *ROOMY, "--ruleset", "classic", "--table-size", "4", games=1)


def test_table_handshake_and_game_start(table: Run) -> None:
    """ "`Handshake.ruleset` is ... `"classic"`; `Handshake.players` is the number of seats
    ..., `Handshake.seat_names` every seat's bot name (seat 0 first) and `Handshake.seat` the
    recipient's seat, fixed for the whole series. `GameStart` repeats `ruleset`, `players`
    and `seat_names`; its `seat` and `dealer` are seats of the table (0..players-1), and
    `opponent_name` lists the others."""
    assert table.games and all(g["forfeit_seat"] is None for g in table.games)
    for name in "abcd":
        for stream in table.streams(name):
            hello = stream[1].msg.handshake
            assert hello.ruleset == "classic" and hello.players == 4
            assert len(hello.seat_names) == 4
            assert hello.seat_names[hello.seat] == f"{name}@1.0.0"
            for start, _, _ in games_of(stream):
                assert start.ruleset == "classic" and start.players == 4
                assert list(start.seat_names) == list(hello.seat_names)
                assert start.seat == hello.seat and 0 <= start.dealer < 4
                others = [n for s, n in enumerate(hello.seat_names) if s != hello.seat]
                assert all(n in start.opponent_name for n in others)
                assert f"{name}@" not in start.opponent_name


def test_table_views_on_the_wire(table: Run) -> None:
    """ "At a table `DecisionRequest.table_view` (field 5) carries a `TableView` and `view`
    is absent"; "`TableView` is the engine's `ClassicView`: `seat`, `players`, ...
    `movers[i]` the seat that played `history[i]`"; nothing hidden: "`known` (cards
    everyone saw go to that hand)"; "`discard` (covered tricks ...; public)"."""
    for name in "abcd":
        for stream in table.streams(name):
            for start, requests, end in games_of(stream):
                assert end is not None
                face_ups: set[str] = set()
                for request in requests:
                    assert request.HasField("table_view") and not request.HasField("view")
                    tv = request.table_view
                    assert {f.name for f, _ in tv.ListFields()} <= DOCUMENTED_TABLE_VIEW
                    assert tv.seat == start.seat and tv.players == 4 and tv.ruleset == "classic"
                    assert tv.HasField("to_move") and tv.to_move == tv.seat
                    # a cover names the led card it covers ("cover 7C:9C 7S:6H")
                    own = set(tv.hand) | set(tv.led)
                    assert tv.legal_actions and cards(tv.legal_actions) <= own
                    assert len(tv.movers) == len(tv.history)
                    assert len(tv.hand_sizes) == len(tv.out) == len(tv.known) == 4
                    assert tv.hand_sizes[tv.seat] == len(tv.hand)
                    face_ups |= {tv.face_up} - {""}  # the face-up card is public until drawn
                    public = cards(tv.history) | face_ups
                    for seat, known in enumerate(tv.known):
                        if seat != tv.seat:
                            assert set(known.cards) <= public
                            assert not set(known.cards) & set(tv.hand)
                    assert set(tv.discard) | set(tv.led) <= public
                    assert sum(tv.hand_sizes) + tv.stock_count + len(tv.discard) <= 36
                    # "`history` with `movers[i]` the seat that played `history[i]`"
                    if tv.history:
                        assert tv.movers[0] == (start.dealer + 1) % 4


def test_table_game_end(table: Run) -> None:
    """ "`GameEnd.table_view` (field 8) likewise, and `GameEnd.loser` (field 9) is the seat
    that lost (absent on a draw). `GameEnd.winner` is set only at a table of two."; "`leader`
    and `defender` (absent once over)"; "At a table of 3 or 4 one game is a win for every
    seat but the loser"; `END_REASON_LAST_HOLDER` "(4: one player still holds cards; he
    lost)"."""
    ended = 0
    for name in "abcd":
        for stream in table.streams(name):
            for start, _, end in games_of(stream):
                assert end is not None
                assert end.HasField("table_view") and not end.HasField("view")
                tv = end.table_view
                assert tv.over and not tv.HasField("to_move") and not tv.legal_actions
                assert not tv.HasField("leader") and not tv.HasField("defender")
                assert not end.HasField("winner")
                assert list(end.deck) == []  # the deal is never revealed
                if end.reason == pb.END_REASON_LAST_HOLDER:
                    ended += 1
                    assert end.HasField("loser") and tv.loser == end.loser
                    assert tv.hand_sizes[end.loser] > 0
                    assert sum(tv.hand_sizes) == tv.hand_sizes[end.loser]
                    lost = end.loser == start.seat
                    assert end.score == pb.SeriesScore(wins=int(not lost), losses=int(lost))
    assert ended


def test_a_bot_without_classic_is_refused_with_the_hint(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """ "The referee refuses a bot whose reply does not list the series' ruleset: the
    handshake fails with a clear message (`... plays the rulesets ['default'], not
    'classic'`) ... The refusal is learnt once per series"; for a bot not on the Python SDK
    the message ends "(its handshake reply must list 'classic' in `HandshakeReply.rulesets`,
    see docs/protocol.md)"."""
    tmp = tmp_path_factory.mktemp("norules")
    bots: dict[str, dict[str, Any]] = {"a": {"rulesets": []}, "b": {}, "c": {}}
    run = tournament(tmp, bots, *ROOMY, "--ruleset", "classic", "--table-size", "3", games=2)
    refused = [g for g in run.games if g["end_reason"] == "startup failure"]
    assert len(refused) == len(run.games) == 4  # 2 seatings x 2 games
    for game in refused:
        detail = game["forfeit_detail"]
        assert "plays the rulesets ['default'], not 'classic'" in detail
        assert detail.endswith(
            "(its handshake reply must list 'classic' in `HandshakeReply.rulesets`,"
            " see docs/protocol.md)"
        )
    assert len(run.streams("a")) == 2  # started once per series (seating)
    assert not run.received("a", "game_start")


@pytest.mark.parametrize(
    ("fault", "reason"),
    [("s_cover", "malformed reply"), ("s_lead", None), ("structured_bad", "malformed reply")],
)
def test_structured_actions_at_a_table(
    fault: str, reason: str | None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """ "A `structured` action is accepted but judged by its canonical text as a table
    action: `TAKE` (`take`) and `LEAD` without `swap` (`lead 7S`) are played when legal and
    are `ILLEGAL_ACTION` when not; a cover or a `swap` is no table action
    (`MALFORMED_REPLY`). Either way the bot keeps running. A structured action whose fields
    do not fit its kind is unreadable ... (`MALFORMED_REPLY`, the bot is restarted)"; "A
    forfeit makes the offender the loser: every other seat beats him, and he deals the next
    game"."""
    tmp = tmp_path_factory.mktemp(f"t_{fault}")
    config = {"fault": fault, "game": 1, "at": 0}
    bots: dict[str, dict[str, Any]] = {"a": config, "b": {"pick": "last"}, "c": {"pick": "last"}}
    run = tournament(tmp, bots, *ROOMY, "--ruleset", "classic", "--table-size", "3", games=2)
    streams = run.streams("a")
    series = {g["series_id"] for g in run.games}
    seat_of_a = [s[1].msg.handshake.seat for s in streams if s[1].kind == "handshake"]
    firsts = [g for g in run.games if g["number"] == 1]
    assert len(firsts) == len(series) == len(seat_of_a) // (2 if fault == "structured_bad" else 1)
    for first in firsts:
        if reason is None:  # a legal LEAD when a's first request is a lead, else illegal
            assert first["end_reason"] in ("illegal action", "last holder", "turn limit")
        else:
            assert first["end_reason"] == reason
            assert first["forfeit_seat"] == first["loser_seat"] in seat_of_a
    assert len(streams) == (2 if fault == "structured_bad" else 1) * len(series)
    if reason is not None:  # the offender deals the next game
        for message in run.received("a", "game_start"):
            start = message.game_start
            assert start.game_number == 1 or start.dealer == start.seat


def test_neither_bot_starts_is_a_double_forfeit(tmp_path_factory: pytest.TempPathFactory) -> None:
    """ "`DOUBLE_FORFEIT` (neither bot could be started: a draw nobody played)"; such a game
    "has neither `GameStart` nor `GameEnd`, for either bot"."""
    tmp = tmp_path_factory.mktemp("double")
    bots: dict[str, dict[str, Any]] = {"a": {"protocol_version": 2}, "b": {"protocol_version": 3}}
    run = tournament(tmp, bots, *ROOMY, games=2)
    assert [(g["end_reason"], g["result"]) for g in run.games] == [("double forfeit", "draw")] * 2
    for name in ("a", "b"):
        assert not run.received(name, "game_start") and not run.received(name, "game_end")
