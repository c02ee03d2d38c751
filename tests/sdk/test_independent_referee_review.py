"""The Python SDK driven by an independent referee, written from docs/protocol.md and the
.proto alone (no ``referee`` package): real SDK bots, each in its own process, served on a
Unix socket, and this file's own gRPC client with the generated ``kryt_proto`` classes.

A small engine of the default game (docs/rules.md) plays whole games; other tests send
hand-made requests, including ones a correct referee never sends, and compare what the bot
does with what the documents promise. A documented behaviour the SDK does not follow is an
``xfail(strict=True)`` naming the document.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kryt_proto.v1 import bot_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
PLAY = "/kryt.v1.Bot/Play"
MAX_REQUEST_BYTES = 4 * 1024 * 1024  # docs/protocol.md, "Message size limits"
MAX_REPLY_BYTES = 64 * 1024
REPLY_TIMEOUT = 30.0
"""How long a reply may take here when time is not what a test checks (a busy machine)."""
QUIET = 0.7
"""How long a test listens for a message that must not come."""
TRACE = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+")

pytestmark = [pytest.mark.timeout(120)]


# --------------------------------------------------------------------------------------------
# A small engine of the default game, from docs/rules.md
# --------------------------------------------------------------------------------------------

RANKS = "6789TJQKA"
SUITS = "CDHS"
DECK = [r + s for s in SUITS for r in RANKS]


def _rank(card: str) -> int:
    return RANKS.index(card[0])


def covers(x: str, y: str, trump: str) -> bool:
    """X covers Y (docs/rules.md, Cards)."""
    if y[1] == trump:
        return x[1] == trump and _rank(x) > _rank(y)
    return (x[1] == y[1] and _rank(x) > _rank(y)) or x[1] == trump


def _ordered(cards: set[str] | list[str]) -> list[str]:
    return sorted(cards, key=DECK.index)


@dataclass
class MiniGame:
    """The two-player game as docs/rules.md tells it: enough to referee real games."""

    deck: list[str]
    dealer: int
    turn_limit: int = 1000
    hands: list[list[str]] = field(default_factory=lambda: [[], []])
    stock: list[str] = field(default_factory=list)  # index 0 is drawn next; last is face up
    pile: list[str] = field(default_factory=list)
    known: list[set[str]] = field(default_factory=lambda: [set(), set()])
    history: list[str] = field(default_factory=list)
    to_move: int = 0
    over: bool = False
    winner: int | None = None
    reason: pb.EndReason.ValueType = pb.END_REASON_UNSPECIFIED
    final_cover: str = ""

    @classmethod
    def new(cls, seed: int, dealer: int, turn_limit: int = 1000) -> MiniGame:
        deck = list(DECK)
        random.Random(seed).shuffle(deck)
        game = cls(deck=deck, dealer=dealer, turn_limit=turn_limit)
        other = 1 - dealer
        game.hands[other] = [deck[0], deck[2], deck[4]]
        game.hands[dealer] = [deck[1], deck[3], deck[5]]
        game.stock = [*deck[7:], deck[6]]
        game.to_move = other
        return game

    @property
    def trump(self) -> str:
        return self.deck[6][1]

    @property
    def face_up(self) -> str:
        return self.stock[-1] if self.stock else ""

    def _base(self, hand: list[str]) -> list[str]:
        if not self.pile:
            return [f"lead {c}" for c in _ordered(hand)]
        top = self.pile[-1]
        actions = ["take"]
        for x in _ordered(hand):
            if covers(x, top, self.trump):
                others = [y for y in _ordered(hand) if y != x]
                if others:
                    actions += [f"cover {x} {y}" for y in others]
                elif not self.stock:
                    actions.append(f"cover {x}")
        return actions

    def legal_actions(self) -> list[str]:
        if self.over:
            return []
        hand = self.hands[self.to_move]
        actions = self._base(hand)
        six = "6" + self.trump
        if self.stock and six in hand and self.face_up != six:
            swapped = [c for c in hand if c != six] + [self.face_up]
            actions += ["swap " + a for a in self._base(swapped)]
        return actions

    def play(self, action: str) -> None:
        assert action in self.legal_actions(), (action, self.legal_actions())
        p = self.to_move
        hand, known = self.hands[p], self.known[p]
        if action.startswith("swap "):
            action_body = action.removeprefix("swap ")
            six, up = "6" + self.trump, self.stock[-1]
            hand.remove(six)
            known.discard(six)
            hand.append(up)
            known.add(up)
            self.stock[-1] = six
        else:
            action_body = action
        words = action_body.split()
        last_lead: str | None = None
        if words[0] == "take":
            top = self.pile[-1]
            if top[1] != self.trump:
                n = 1
            elif top[0] == "A":
                n = len(self.pile)
            else:
                n = min(3, len(self.pile))
            taken = self.pile[-n:]
            del self.pile[-n:]
            hand += taken
            known.update(taken)
        else:
            for card in words[1:]:
                hand.remove(card)
                known.discard(card)
                self.pile.append(card)
            if words[0] == "lead" or len(words) == 3:
                last_lead = words[-1]
        self.history.append(action)
        while len(hand) < 3 and self.stock:
            card = self.stock.pop(0)
            hand.append(card)
            if not self.stock:  # the face-up card, drawn last, is public
                known.add(card)
        other = self.hands[1 - p]
        if not self.stock and not hand:
            self.over = True
            if (
                last_lead is not None
                and len(other) == 1
                and covers(other[0], last_lead, self.trump)
            ):
                self.reason = pb.END_REASON_DRAW_BY_FINAL_ANSWER
                self.final_cover = other[0]  # a card: the SDK reads it so
            else:
                self.winner, self.reason = p, pb.END_REASON_OUT
        elif len(self.history) >= self.turn_limit:
            self.over, self.reason = True, pb.END_REASON_TURN_LIMIT
        else:
            self.to_move = 1 - p

    def view(self, seat: int) -> pb.View:
        opp = 1 - seat
        view = pb.View(
            seat=seat,
            dealer=self.dealer,
            hand=_ordered(self.hands[seat]),
            pile=list(self.pile),
            trump=self.trump,
            face_up=self.face_up,
            stock_count=len(self.stock),
            opponent_count=len(self.hands[opp]),
            opponent_known=_ordered(self.known[opp] & set(self.hands[opp])),
            own_known=_ordered(self.known[seat] & set(self.hands[seat])),
            history=list(self.history),
            over=self.over,
            reason=self.reason,
            turn_limit=self.turn_limit,
            final_cover=self.final_cover,
        )
        if not self.over:
            view.to_move = self.to_move
            if self.to_move == seat:
                view.legal_actions.extend(self.legal_actions())
        elif self.winner is not None:
            view.winner = self.winner
        return view


def action_text(decision: pb.Decision) -> str:
    """The canonical text of a Decision (docs/protocol.md, Decision)."""
    if decision.WhichOneof("action") == "text":
        return decision.text
    s = decision.structured
    body = {
        pb.ACTION_KIND_LEAD: f"lead {s.lead}",
        pb.ACTION_KIND_COVER_AND_LEAD: f"cover {s.cover} {s.lead}",
        pb.ACTION_KIND_COVER_AND_GO_OUT: f"cover {s.cover}",
        pb.ACTION_KIND_TAKE: "take",
    }.get(s.kind, f"<kind {s.kind}>")
    return ("swap " if s.swap else "") + body


# --------------------------------------------------------------------------------------------
# The referee's side of the wire
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ended:
    """The bot's side of the stream ended: its status."""

    code: grpc.StatusCode
    details: str


class Wire:
    """One ``Bot.Play`` stream, raw bytes both ways, read by a thread into a queue."""

    def __init__(self, address: str, *, max_receive: int = 16 * 1024 * 1024) -> None:
        self.channel = grpc.insecure_channel(
            address,
            options=[
                ("grpc.max_receive_message_length", max_receive),
                ("grpc.max_send_message_length", -1),
            ],
        )
        play = self.channel.stream_stream(PLAY, None, None)
        self._out: queue.Queue[bytes | None] = queue.Queue()
        self._in: queue.Queue[bytes | Ended] = queue.Queue()
        self.call: Any = play(self._requests())
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.ended: Ended | None = None

    def _requests(self) -> Iterator[bytes]:
        while True:
            item = self._out.get()
            if item is None:
                return
            yield item

    def _read(self) -> None:
        try:
            for data in self.call:
                self._in.put(data)
            self._in.put(Ended(grpc.StatusCode.OK, ""))
        except grpc.RpcError as exc:
            self._in.put(Ended(exc.code(), exc.details() or ""))

    def send_bytes(self, data: bytes) -> None:
        self._out.put(data)

    def send(self, **body: Any) -> None:
        self.send_bytes(pb.RefereeMessage(**body).SerializeToString())

    def half_close(self) -> None:
        self._out.put(None)

    def receive(self, timeout: float = REPLY_TIMEOUT) -> pb.BotMessage | Ended:
        """The next message, or how the stream ended. Fails after ``timeout``."""
        if self.ended is not None:
            return self.ended
        try:
            item = self._in.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"the bot sent nothing and kept the stream open for {timeout} s")
        if isinstance(item, Ended):
            self.ended = item
            return item
        message = pb.BotMessage()
        message.ParseFromString(item)  # bytes that do not parse fail the test here
        return message

    def quiet(self, seconds: float = QUIET) -> bool:
        """True when nothing arrives for ``seconds`` (and the stream stays open)."""
        try:
            item = self._in.get(timeout=seconds)
        except queue.Empty:
            return True
        self._in.put(item)  # keep it for receive(); order kept as this was the only item
        return False

    def end(self, timeout: float = REPLY_TIMEOUT) -> Ended:
        """Wait for the end of the bot's side, failing on any message before it."""
        got = self.receive(timeout)
        assert isinstance(got, Ended), f"expected the stream to end, got {got}"
        return got

    def close(self) -> None:
        self._out.put(None)
        self.call.cancel()
        self.channel.close()

    # -- the documented conversation ---------------------------------------------------

    def handshake(self, **fields: Any) -> pb.HandshakeReply:
        fields.setdefault("protocol_version", 1)
        fields.setdefault("referee_version", "independent-review 0.0")
        fields.setdefault("games", 1)
        fields.setdefault("opponent_name", "reviewer")
        fields.setdefault("time_control", roomy_control())
        self.send(handshake=pb.Handshake(**fields))
        reply = self.receive()
        assert isinstance(reply, pb.BotMessage), f"no handshake reply: {reply}"
        assert reply.WhichOneof("body") == "handshake_reply", f"not a HandshakeReply: {reply}"
        return reply.handshake_reply

    def game_start(self, number: int = 1, seat: int = 0, dealer: int = 1, **more: Any) -> None:
        more.setdefault("time_control", roomy_control())
        more.setdefault("turn_limit", 1000)
        more.setdefault("opponent_name", "reviewer")
        self.send(game_start=pb.GameStart(game_number=number, seat=seat, dealer=dealer, **more))

    def ask(self, request: pb.DecisionRequest) -> pb.BotMessage | Ended:
        self.send(decision_request=request)
        return self.receive()

    def decide(self, request: pb.DecisionRequest) -> str:
        """Send ``request``; the reply must be a Decision echoing its id: its action text."""
        reply = self.ask(request)
        assert isinstance(reply, pb.BotMessage), f"no reply to {request.request_id}: {reply}"
        assert reply.WhichOneof("body") == "decision", f"not a Decision: {reply}"
        assert reply.decision.request_id == request.request_id
        return action_text(reply.decision)


def roomy_control(move_ms: int = 5000) -> pb.TimeControl:
    return pb.TimeControl(
        move_ms=move_ms, bank_ms=60000, increment_ms=0, grace_ms=50, clock=pb.CLOCK_KIND_WALL
    )


_ids = random.Random(20240601)


def request_id() -> int:
    return _ids.randrange(1, 2**31)


def opening_request(game_number: int = 1, seed: int = 7, seat: int = 1) -> pb.DecisionRequest:
    """The first request of a real deal, for ``seat`` (the non-dealer moves first)."""
    game = MiniGame.new(seed, dealer=1 - seat)
    return pb.DecisionRequest(
        request_id=request_id(),
        game_number=game_number,
        view=game.view(seat),
        clock=pb.Clock(move_ms=5000, bank_ms=60000),
    )


# --------------------------------------------------------------------------------------------
# Bot processes
# --------------------------------------------------------------------------------------------

REVIEW_BOTS = """
import json, os, sys, time
from sdk import Bot, serve

LOG = os.environ.get("REVIEW_LOG")


def log(**entry):
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(entry, default=str) + "\\n")


class First(Bot):
    rulesets = ("default", "classic")

    def on_handshake(self, series):
        tc = series.time_control
        log(hook="handshake", games=series.games, opponent=series.opponent_name,
            protocol=series.protocol_version, move=tc.move_ms, bank=tc.bank_ms,
            increment=tc.increment_ms, grace=tc.grace_ms, clock=tc.clock,
            ruleset=series.ruleset)

    def on_game_start(self, game):
        log(hook="start", game=game.game_number, seat=game.seat)

    def on_game_end(self, result):
        log(hook="end", game=result.game_number, result=result.result, reason=str(result.reason))

    def act(self, view):
        log(hook="act", legal=len(view.legal_actions), time_left=self.time_left(),
            game=self.context.game_number if self.context else None,
            move=self.clock.move_ms if self.clock else None)
        return view.legal_actions[0]

    def act_table(self, view):
        log(hook="act_table", legal=len(view.legal_actions))
        return view.legal_actions[0]


class Raising(First):
    def act(self, view):
        return {}["AS"]


class RaiseOnce(First):
    raised = False

    def act(self, view):
        if not self.raised:
            self.raised = True
            return {}["AS"]  # raise-once
        return view.legal_actions[0]


class Illegal(First):
    def act(self, view):
        return "take"  # well-formed; not legal on an empty pile


class Garbage(First):
    def act(self, view):
        return "fly away"


class Nothing(First):
    def act(self, view):
        return None


class Slow(First):
    def act(self, view):
        time.sleep(float(os.environ.get("REVIEW_SLEEP", "3")))
        return view.legal_actions[0]


class Huge(First):
    def act(self, view):
        return "lead " + "6" * 70000


class Spelled(First):
    def act(self, view):
        text = str(view.legal_actions[0])
        return "  " + text.upper().replace("T", "10").replace("LEAD", "lead") + "\\n"


class StartRaises(First):
    def on_game_start(self, game):
        raise ValueError("start-boom")


class EndRaises(First):
    def on_game_end(self, result):
        raise ValueError("end-boom")


class HandshakeRaises(First):
    def on_handshake(self, series):
        raise RuntimeError("handshake-boom")


if __name__ == "__main__":
    print("review bot starting", os.environ.get("REVIEW_CLASS"), file=sys.stderr)
    serve(globals()[os.environ["REVIEW_CLASS"]]())
"""


@dataclass
class BotProcess:
    proc: subprocess.Popen[bytes]
    address: str
    folder: Path
    log: Path
    stderr: Path
    wires: list[Wire] = field(default_factory=list)

    def wire(self, **options: Any) -> Wire:
        w = Wire(self.address, **options)
        self.wires.append(w)
        return w

    def hooks(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def exited(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stderr_text(self) -> str:
        return self.stderr.read_text(errors="replace") if self.stderr.exists() else ""


def _wait_serving(bot: BotProcess, timeout: float = 30.0) -> None:
    """Poll the standard health service (a fresh channel each time: a channel that failed
    to connect backs off for seconds) until it answers SERVING for the whole server."""
    deadline = time.monotonic() + timeout
    sock = Path(bot.address.removeprefix("unix://"))
    while time.monotonic() < deadline:
        if bot.proc.poll() is not None:
            pytest.fail(f"bot exited at start-up ({bot.proc.returncode}): {bot.stderr_text()}")
        if sock.exists():
            with grpc.insecure_channel(bot.address) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                try:
                    answer = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
                    if answer.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    pass
        time.sleep(0.05)
    pytest.fail(f"bot not SERVING within {timeout} s: {bot.stderr_text()}")


Spawn = Callable[..., BotProcess]


@contextmanager
def bot_processes() -> Iterator[Spawn]:
    """Start bots in processes of their own (each killed when the block ends)."""
    started: list[BotProcess] = []

    def start(kind: str, **env: str) -> BotProcess:
        folder = Path(tempfile.mkdtemp(prefix="kir-", dir="/tmp"))
        if kind in ("random", "greedy", "mc"):
            source = ROOT / "sdk" / "examples" / kind
            shutil.copytree(source, folder / "bot", ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (folder / "bot").mkdir()
            (folder / "bot" / "bot.py").write_text(REVIEW_BOTS)
            (folder / "bot" / "bot.toml").write_text(
                'name = "review-bot"\nversion = "0.1.0"\nruntime = "python"\nentry = "bot.py"\n'
            )
            env["REVIEW_CLASS"] = kind
        address = f"unix://{folder / 'bot.sock'}"
        log, stderr = folder / "hooks.jsonl", folder / "stderr.txt"
        full_env = {
            **os.environ,
            "KRYT_BOT_ADDRESS": address,
            "PYTHONPATH": str(ROOT),
            "REVIEW_LOG": str(log),
            **env,
        }
        with stderr.open("wb") as err:
            proc = subprocess.Popen(
                [PYTHON, "-u", "bot.py"],
                cwd=folder / "bot",
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
            )
        bot = BotProcess(proc, address, folder, log, stderr)
        started.append(bot)
        _wait_serving(bot)
        return bot

    try:
        yield start
    finally:
        for bot in started:
            for w in bot.wires:
                with suppress(Exception):  # best effort at teardown
                    w.close()
            if bot.proc.poll() is None:
                bot.proc.kill()
            bot.proc.wait(10)
            shutil.rmtree(bot.folder, ignore_errors=True)


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    with bot_processes() as start:
        yield start


# --------------------------------------------------------------------------------------------
# Whole games
# --------------------------------------------------------------------------------------------


def play_series(
    wires: list[Wire | None], games: int, seed: int, *, move_ms: int = 5000
) -> list[MiniGame]:
    """Play ``games`` games between two seats (a Wire, or this file's random player), as
    docs/protocol.md orders the messages; every reply is checked as it arrives."""
    rng = random.Random(seed)
    control = roomy_control(move_ms)
    names = ["seat-a", "seat-b"]
    for seat, w in enumerate(wires):
        if w is not None:
            reply = w.handshake(games=games, opponent_name=names[1 - seat], time_control=control)
            assert reply.protocol_version == 1
    score = [[0, 0, 0], [0, 0, 0]]  # wins, draws, losses per seat
    played: list[MiniGame] = []
    dealer = rng.randrange(2)
    used: set[int] = set()
    for number in range(1, games + 1):
        game = MiniGame.new(rng.randrange(10**9), dealer)
        for seat, w in enumerate(wires):
            if w is not None:
                w.send(
                    game_start=pb.GameStart(
                        game_number=number,
                        seat=seat,
                        dealer=dealer,
                        score=pb.SeriesScore(
                            wins=score[seat][0], draws=score[seat][1], losses=score[seat][2]
                        ),
                        opponent_name=names[1 - seat],
                        time_control=control,
                        turn_limit=game.turn_limit,
                    )
                )
        bank = [control.bank_ms, control.bank_ms]
        while not game.over:
            seat = game.to_move
            w = wires[seat]
            legal = game.legal_actions()
            if w is None:
                game.play(rng.choice(legal))
                continue
            rid = rng.randrange(1, 2**31)
            while rid in used:
                rid = rng.randrange(1, 2**31)
            used.add(rid)
            request = pb.DecisionRequest(
                request_id=rid,
                game_number=number,
                view=game.view(seat),
                clock=pb.Clock(move_ms=control.move_ms, bank_ms=bank[seat]),
            )
            text = w.decide(request)
            assert text in legal, f"game {number}: {text!r} is not one of {legal}"
            game.play(text)
        for seat, w in enumerate(wires):
            if game.winner is None:
                score[seat][1] += 1
            else:
                score[seat][0 if game.winner == seat else 2] += 1
            if w is None:
                continue
            end = pb.GameEnd(
                game_number=number,
                reason=game.reason,
                detail="",
                view=game.view(seat),
                deck=game.deck,
                score=pb.SeriesScore(
                    wins=score[seat][0], draws=score[seat][1], losses=score[seat][2]
                ),
            )
            if game.winner is not None:
                end.winner = game.winner
            w.send(game_end=end)
        if game.winner is not None:
            dealer = 1 - game.winner  # the loser deals; a draw keeps the dealer
        played.append(game)
    for w in wires:
        if w is not None:
            assert w.quiet(), "the bot sent a message nobody asked for"
    return played


# --------------------------------------------------------------------------------------------
# Conformance
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["random", "greedy", "mc"])
def test_example_handshake_is_as_documented(spawn: Spawn, kind: str) -> None:
    """HandshakeReply: protocol version 1, name and version of bot.toml, an sdk text, and
    every example plays both rulesets (writing-a-bot.md)."""
    bot = spawn(kind)
    w = bot.wire()
    started = time.monotonic()
    reply = w.handshake()
    assert time.monotonic() - started < 10.0  # the handshake timeout
    toml = (bot.folder / "bot" / "bot.toml").read_text()
    assert f'name = "{reply.name}"' in toml and reply.name == kind
    assert f'version = "{reply.version}"' in toml
    assert reply.protocol_version == 1
    assert reply.sdk.startswith("kryt-sdk-python")
    assert set(reply.rulesets) >= {"default", "classic"}


@pytest.mark.parametrize(("kind", "games"), [("random", 4), ("greedy", 4), ("mc", 2)])
def test_example_plays_whole_series_against_independent_engine(
    spawn: Spawn, kind: str, games: int
) -> None:
    bot = spawn(kind)
    w = bot.wire()
    played = play_series([w, None], games, seed=hash(kind) % 1000, move_ms=300)
    assert len(played) == games and all(g.over for g in played)
    w.send(shutdown=pb.Shutdown(reason="series over"))
    assert w.end().code == grpc.StatusCode.OK
    assert bot.exited(15) == 0


def review_line(statement: str) -> int:
    """The line of ``statement`` in the review bots' bot.py."""
    lines = REVIEW_BOTS.split("\n")
    return next(i + 1 for i, line in enumerate(lines) if statement in line)


def assert_no_traceback(message: pb.BotMessage) -> None:
    if message.WhichOneof("body") == "error":
        assert not TRACE.search(message.error.message), message.error.message
        assert len(message.error.message) < 4096


def assert_serviceable(w: Wire, game_number: int = 7, *, start: bool = True) -> None:
    """The bot still plays: a new game and a request are answered with a legal action."""
    if start:
        w.game_start(game_number, seat=1, dealer=0)
    request = opening_request(game_number=game_number, seed=game_number)
    assert w.decide(request) in request.view.legal_actions


def test_own_bot_series_hooks_see_what_the_referee_sent(spawn: Spawn) -> None:
    """on_handshake once, on_game_start / act / on_game_end per game, with the results this
    referee decided (writing-a-bot.md, Optional hooks)."""
    bot = spawn("First")
    w = bot.wire()
    played = play_series([None, w], 3, seed=5)
    w.send(shutdown=pb.Shutdown(reason="done"))
    assert w.end().code == grpc.StatusCode.OK
    assert bot.exited(15) == 0
    hooks = bot.hooks()
    assert [h["hook"] for h in hooks if h["hook"] != "act"] == ["handshake"] + [
        "start",
        "end",
    ] * 3
    assert hooks[0]["games"] == 3 and hooks[0]["opponent"] == "seat-a"
    ends = [h for h in hooks if h["hook"] == "end"]
    expected = [
        "draw" if g.winner is None else ("win" if g.winner == 1 else "loss") for g in played
    ]
    assert [e["result"] for e in ends] == expected
    acts = [h for h in hooks if h["hook"] == "act"]
    asked = sum(1 for g in played for i in range(len(g.history)) if (i % 2 == 0) == (g.dealer == 0))
    assert len(acts) == asked
    assert all(0 < a["time_left"] <= a["move"] / 1000 for a in acts)


def test_two_sdk_bots_play_each_other_over_the_wire(spawn: Spawn) -> None:
    greedy, rand = spawn("greedy"), spawn("random")
    wires = [greedy.wire(), rand.wire()]
    played = play_series(list(wires), 3, seed=11)
    assert all(g.over for g in played)
    for w in wires:
        w.send(shutdown=pb.Shutdown(reason="done"))
    for w, bot in zip(wires, (greedy, rand), strict=True):
        assert w.end().code == grpc.StatusCode.OK
        assert bot.exited(15) == 0


@pytest.mark.parametrize("service", ["", "kryt.v1.Bot"])
def test_health_answers_serving(spawn: Spawn, service: str) -> None:
    bot = spawn("random")
    with grpc.insecure_channel(bot.address) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=10
        )
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_no_reply_to_game_start_or_game_end(spawn: Spawn) -> None:
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    assert w.quiet()
    request = opening_request()
    assert w.decide(request) in request.view.legal_actions
    w.send(game_end=pb.GameEnd(game_number=1, reason=pb.END_REASON_TIMEOUT, winner=1))
    assert w.quiet()
    assert [h["hook"] for h in bot.hooks()] == ["handshake", "start", "act", "end"]


@pytest.mark.parametrize("when", ["before-handshake", "mid-game"])
def test_shutdown_ends_stream_and_process(spawn: Spawn, when: str) -> None:
    """After Shutdown the bot closes its side of the stream and exits."""
    bot = spawn("greedy")
    w = bot.wire()
    if when == "mid-game":
        w.handshake()
        w.game_start(1, seat=1, dealer=0)
        request = opening_request()
        assert w.decide(request) in request.view.legal_actions
    w.send(shutdown=pb.Shutdown(reason="review over"))
    assert w.end().code == grpc.StatusCode.OK
    assert bot.exited(10) == 0


def test_sigterm_exits_cleanly(spawn: Spawn) -> None:
    """writing-a-bot.md: the server exits on SIGTERM/SIGINT."""
    bot = spawn("random")
    w = bot.wire()
    w.handshake()
    bot.proc.send_signal(signal.SIGTERM)
    assert bot.exited(10) == 0
    assert isinstance(w.receive(), Ended)


@pytest.mark.parametrize(
    ("control", "grace", "clock"),
    [
        (pb.TimeControl(move_ms=700, bank_ms=9000, increment_ms=30), 50, "wall"),
        (
            pb.TimeControl(
                move_ms=700, bank_ms=9000, increment_ms=30, grace_ms=0, clock=pb.CLOCK_KIND_CPU
            ),
            0,
            "cpu",
        ),
    ],
)
def test_time_control_decoding(
    spawn: Spawn, control: pb.TimeControl, grace: int, clock: str
) -> None:
    """protocol.md, TimeControl: an absent grace_ms reads as 50, UNSPECIFIED as the wall."""
    bot = spawn("First")
    w = bot.wire()
    w.handshake(time_control=control)
    assert w.quiet()
    (hook,) = bot.hooks()
    assert (hook["move"], hook["bank"], hook["increment"]) == (700, 9000, 30)
    assert (hook["grace"], hook["clock"]) == (grace, clock)


UNKNOWN_CLOCK = pb.ClockKind.ValueType(7)


def test_unknown_clock_kind_is_malformed(spawn: Spawn) -> None:
    """protocol.md: a clock value this page does not name is a malformed message to the
    SDK. It must not be taken for a handshake; the bot must not hang or leak a traceback."""
    bot = spawn("First")
    w = bot.wire()
    w.send(
        handshake=pb.Handshake(
            protocol_version=1,
            games=1,
            time_control=pb.TimeControl(move_ms=1000, bank_ms=1000, clock=UNKNOWN_CLOCK),
        )
    )
    reply = w.receive()
    assert isinstance(reply, pb.BotMessage) and reply.WhichOneof("body") == "error"
    assert_no_traceback(reply)
    assert bot.hooks() == []


def test_other_protocol_version_gets_the_bots_own(spawn: Spawn) -> None:
    """HandshakeReply.protocol_version is the bot's version (1), whatever the referee speaks:
    the referee, not the bot, refuses the mismatch."""
    bot = spawn("random")
    w = bot.wire()
    reply = w.handshake(protocol_version=2)
    assert reply.protocol_version == 1
    assert reply.name == "random"


def test_reply_over_64_kib_fails_the_stream_only(spawn: Spawn) -> None:
    """protocol.md: a larger message from a bot fails the stream (RESOURCE_EXHAUSTED). This
    referee lets the reply in (16 MiB); the bot's own limit must stop it. The process goes on."""
    bot = spawn("Huge")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    got = w.ask(opening_request())
    assert isinstance(got, Ended) and got.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert bot.proc.poll() is None
    assert bot.wire().handshake().name == "review-bot"


def _padded_request(total: int) -> pb.DecisionRequest:
    request = opening_request()
    request.view.turn_limit = 100_000
    chunk = "lead 6C " * 100  # 800 bytes, 803 with its tag and length
    request.view.history.extend([chunk] * ((total - request.ByteSize()) // 803 + 1))
    return request


def test_request_just_under_4_mib_is_answered(spawn: Spawn) -> None:
    """protocol.md: the bot accepts every request up to 4 MiB with no setting."""
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0, turn_limit=100_000)
    request = _padded_request(MAX_REQUEST_BYTES - 64 * 1024)
    assert MAX_REQUEST_BYTES - 64 * 1024 <= request.ByteSize() < MAX_REQUEST_BYTES
    assert w.decide(request) in request.view.legal_actions


def test_request_over_4_mib_is_refused_by_grpc_and_bot_goes_on(spawn: Spawn) -> None:
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    got = w.ask(_padded_request(MAX_REQUEST_BYTES + 1024))
    assert isinstance(got, Ended) and got.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert bot.proc.poll() is None
    w2 = bot.wire()
    w2.handshake()
    assert_serviceable(w2)


# --------------------------------------------------------------------------------------------
# The author's guarantees (writing-a-bot.md)
# --------------------------------------------------------------------------------------------


def test_act_raising_is_reported_as_bot_error_with_place(spawn: Spawn) -> None:
    """A crash in act() is reported with the exception and where it was raised
    (``KeyError: 'AS' at bot.py:41 in act``); the bot goes on serving."""
    bot = spawn("RaiseOnce")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    reply = w.ask(opening_request())
    assert isinstance(reply, pb.BotMessage) and reply.WhichOneof("body") == "error"
    line = review_line("# raise-once")
    assert f"KeyError: 'AS' at bot.py:{line} in act" in reply.error.message
    assert_no_traceback(reply)
    assert "Traceback" in bot.stderr_text()  # the full traceback goes to stderr
    assert_serviceable(w)


@pytest.mark.parametrize(("kind", "sent"), [("Illegal", "take"), ("Garbage", "fly away")])
def test_act_returning_a_non_legal_action_sends_it_for_the_referee_to_judge(
    spawn: Spawn, kind: str, sent: str
) -> None:
    """protocol.md: the referee's legality gate judges text; the bot keeps running."""
    bot = spawn(kind)
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    request = opening_request()
    assert w.decide(request) == sent
    w.send(game_end=pb.GameEnd(game_number=1, reason=pb.END_REASON_ILLEGAL_ACTION, winner=0))
    w.game_start(2, seat=1, dealer=0)
    assert w.decide(opening_request(game_number=2)) == sent


def test_act_returning_none_is_an_error_not_a_hang(spawn: Spawn) -> None:
    bot = spawn("Nothing")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    reply = w.ask(opening_request())
    assert isinstance(reply, pb.BotMessage)
    assert reply.WhichOneof("body") == "error" and "None" in reply.error.message
    assert_no_traceback(reply)
    assert w.quiet()


def test_spelling_variant_goes_out_as_is_and_names_a_legal_action(spawn: Spawn) -> None:
    bot = spawn("Spelled")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    request = opening_request()
    text = w.decide(request)
    normal = " ".join(text.split()).replace("10", "T")
    assert normal in request.view.legal_actions


def test_slow_act_still_answers_late_with_the_id(spawn: Spawn) -> None:
    """Timeouts are the referee's: a slow act() still sends its Decision (the referee
    ignores a late one), with the request's id, and the bot goes on."""
    bot = spawn("Slow", REVIEW_SLEEP="1.5")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    request = opening_request()
    request.clock.move_ms, request.clock.bank_ms = 100, 0
    started = time.monotonic()
    assert w.decide(request) in request.view.legal_actions
    assert time.monotonic() - started >= 1.4
    w.send(game_end=pb.GameEnd(game_number=1, reason=pb.END_REASON_TIMEOUT, winner=0))
    assert w.quiet()


@pytest.mark.parametrize(
    ("kind", "hook", "exc"),
    [("StartRaises", "GameStart", "start-boom"), ("EndRaises", "GameEnd", "end-boom")],
)
def test_hook_exception_is_an_unasked_bot_error(
    spawn: Spawn, kind: str, hook: str, exc: str
) -> None:
    """protocol.md: a BotError sent unasked in answer to GameStart or GameEnd (as the SDK does
    when on_game_start or on_game_end raises); writing-a-bot.md gives the detail's form
    ``GameEnd: ValueError: ... at bot.py:12 in on_game_end``."""
    bot = spawn(kind)
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    if hook == "GameStart":
        reply = w.receive()
    else:
        assert w.quiet()
        assert w.decide(opening_request()) == "lead 7D"
        w.send(game_end=pb.GameEnd(game_number=1, reason=pb.END_REASON_OUT, winner=1))
        reply = w.receive()
    assert isinstance(reply, pb.BotMessage) and reply.WhichOneof("body") == "error"
    method = "on_game_start" if hook == "GameStart" else "on_game_end"
    line = review_line(f'raise ValueError("{exc}")')
    assert reply.error.message == f"{hook}: ValueError: {exc} at bot.py:{line} in {method}"
    assert_serviceable(w, start=hook != "GameStart")


def test_on_handshake_raising_refuses_the_handshake(spawn: Spawn) -> None:
    """writing-a-bot.md: an exception in on_handshake is a STARTUP_FAILURE."""
    bot = spawn("HandshakeRaises")
    w = bot.wire()
    w.send(handshake=pb.Handshake(protocol_version=1, games=1, time_control=roomy_control()))
    reply = w.receive()
    assert isinstance(reply, pb.BotMessage) and reply.WhichOneof("body") == "error"
    assert "RuntimeError: handshake-boom" in reply.error.message
    assert_no_traceback(reply)


# --------------------------------------------------------------------------------------------
# A referee that deviates
# --------------------------------------------------------------------------------------------


def _unknown(field_number: int, value: int = 1) -> bytes:
    """A varint field this version of the .proto does not know."""
    return _varint(field_number << 3) + _varint(value)


def _field(field_number: int, payload: bytes) -> bytes:
    """A length-delimited field (a nested message)."""
    return _varint((field_number << 3) | 2) + _varint(len(payload)) + payload


def test_unknown_fields_everywhere_are_ignored(spawn: Spawn) -> None:
    """protocol.md, Versioning: protobuf skips unknown fields; a bot must play on."""
    bot = spawn("First")
    w = bot.wire()
    hs = pb.Handshake(protocol_version=1, games=1, time_control=roomy_control())
    hs_bytes = hs.SerializeToString() + _unknown(15) + _unknown(31, 500)
    # RefereeMessage{handshake=<hs + unknown fields>} + unknown top-level fields
    w.send_bytes(_field(1, hs_bytes) + _unknown(6) + _unknown(99, 3))
    reply = w.receive()
    assert isinstance(reply, pb.BotMessage)
    assert reply.WhichOneof("body") == "handshake_reply", reply
    start = pb.GameStart(game_number=1, seat=1, dealer=0, time_control=roomy_control())
    start_bytes = start.SerializeToString() + _unknown(20)
    w.send_bytes(_field(2, start_bytes))
    assert w.quiet()
    request = opening_request()
    view_bytes = request.view.SerializeToString() + _unknown(19) + _unknown(30)
    body = pb.DecisionRequest(request_id=request.request_id, game_number=1, clock=request.clock)
    body_bytes = body.SerializeToString() + _field(3, view_bytes) + _unknown(6, 9)
    w.send_bytes(_field(3, body_bytes))
    reply = w.receive()
    assert isinstance(reply, pb.BotMessage) and reply.WhichOneof("body") == "decision", reply
    assert reply.decision.request_id == request.request_id
    assert reply.decision.text in request.view.legal_actions
    assert [h["hook"] for h in bot.hooks()] == ["handshake", "start", "act"]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _mid_game_request(seed: int, plies: int) -> tuple[MiniGame, pb.DecisionRequest]:
    game = MiniGame.new(seed, dealer=0)
    rng = random.Random(seed)
    for _ in range(plies):
        if game.over:
            break
        game.play(rng.choice(game.legal_actions()))
    assert not game.over
    seat = game.to_move
    return game, pb.DecisionRequest(
        request_id=request_id(),
        game_number=1,
        view=game.view(seat),
        clock=pb.Clock(move_ms=2000, bank_ms=30000),
    )


@pytest.mark.parametrize("kind", ["random", "greedy", "mc"])
def test_single_legal_action_is_played(spawn: Spawn, kind: str) -> None:
    bot = spawn(kind)
    w = bot.wire()
    w.handshake()
    game, request = _mid_game_request(3, 9)
    w.game_start(1, seat=request.view.seat, dealer=0)
    only = game.legal_actions()[-1]
    del request.view.legal_actions[:]
    request.view.legal_actions.append(only)
    assert w.decide(request) == only


def _big_default_request() -> pb.DecisionRequest:
    """A defender holding 33 cards against one led card, stock empty: every cover-and-lead,
    plus a history of 99,998 actions (turn_limit 100,000): about 750 KB."""
    trump = "S"
    hand = [c for c in DECK if c not in ("6C", "7D", "8H")]
    legal = ["take"] + [
        f"cover {x} {y}" for x in hand if covers(x, "6C", trump) for y in hand if y != x
    ]
    view = pb.View(
        seat=0,
        dealer=1,
        hand=hand,
        pile=["6C"],
        trump=trump,
        face_up="",
        stock_count=0,
        opponent_count=2,
        to_move=0,
        legal_actions=legal,
        history=["take", "lead 6C"] * 49_999,
        turn_limit=100_000,
    )
    return pb.DecisionRequest(
        request_id=request_id(), game_number=1, view=view, clock=pb.Clock(move_ms=3000)
    )


@pytest.mark.parametrize("kind", ["random", "greedy", "mc"])
def test_very_large_default_view_is_answered(spawn: Spawn, kind: str) -> None:
    bot = spawn(kind)
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=0, dealer=1, turn_limit=100_000)
    request = _big_default_request()
    assert len(request.view.legal_actions) > 500 and request.ByteSize() > 700_000
    assert w.decide(request) in request.view.legal_actions


def _big_table_request() -> pb.DecisionRequest:
    """protocol.md's longest legal list: four sixes led to a defender holding the other 32
    cards, 24,592 covers (~745 KiB)."""
    trump, led = "S", ["6C", "6D", "6H", "6S"]
    hand = [c for c in DECK if c[0] != "6"]
    options = [[c for c in hand if covers(c, six, trump)] for six in led]
    covers_ = [
        "cover " + " ".join(f"{six}:{c}" for six, c in zip(led, pick, strict=True))
        for pick in itertools.product(*options)
        if len(set(pick)) == 4
    ]
    assert len(covers_) == 24_592
    table = pb.TableView(
        ruleset="classic",
        seat=0,
        players=2,
        dealer=0,
        hand=hand,
        hand_sizes=[32, 0],
        out=[False, False],
        known=[pb.SeatCards(), pb.SeatCards()],
        leader=1,
        defender=0,
        led=led,
        trump=trump,
        stock_count=0,
        to_move=0,
        legal_actions=["take", *covers_],
        history=["lead 6C 6D 6H 6S"],
        movers=[1],
        turn_limit=1000,
    )
    return pb.DecisionRequest(
        request_id=request_id(),
        game_number=1,
        table_view=table,
        clock=pb.Clock(move_ms=5000, bank_ms=60000),
    )


@pytest.mark.parametrize("kind", ["random", "greedy", "mc"])
def test_longest_documented_table_list_is_answered(spawn: Spawn, kind: str) -> None:
    bot = spawn(kind)
    w = bot.wire()
    names = ["me", "you"]
    reply = w.handshake(ruleset="classic", players=2, seat_names=names, seat=0)
    assert "classic" in reply.rulesets
    w.game_start(1, seat=0, dealer=0, ruleset="classic", players=2, seat_names=names)
    request = _big_table_request()
    assert 700 * 1024 < request.ByteSize() < MAX_REQUEST_BYTES
    assert w.decide(request) in request.table_view.legal_actions


def test_game_end_for_a_game_never_started(spawn: Spawn) -> None:
    """Docs silent: no hang, no traceback on the wire, still serviceable."""
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.send(game_end=pb.GameEnd(game_number=5, reason=pb.END_REASON_OUT, winner=0))
    if not w.quiet():
        reply = w.receive()
        assert isinstance(reply, pb.BotMessage) and reply.WhichOneof("body") == "error"
        assert_no_traceback(reply)
    assert_serviceable(w, 6)


def test_two_game_starts_in_a_row(spawn: Spawn) -> None:
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    w.game_start(2, seat=1, dealer=0)
    assert w.quiet()
    request = opening_request(game_number=2)
    assert w.decide(request) in request.view.legal_actions
    acts = [h for h in bot.hooks() if h["hook"] == "act"]
    assert acts[-1]["game"] == 2


def test_reused_request_id_is_echoed(spawn: Spawn) -> None:
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    first = opening_request(seed=1)
    second = opening_request(seed=2)
    second.request_id = first.request_id
    assert w.decide(first) in first.view.legal_actions
    assert w.decide(second) in second.view.legal_actions


@pytest.mark.parametrize("rid", [0, 2**31 - 1, 2**31, 2**64 - 1])
def test_request_id_is_echoed_exactly(spawn: Spawn, rid: int) -> None:
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    request = opening_request()
    request.request_id = rid
    assert w.decide(request) in request.view.legal_actions  # decide() checks the echo


def test_request_before_any_game_start(spawn: Spawn) -> None:
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    request = opening_request()
    reply = w.ask(request)
    assert isinstance(reply, pb.BotMessage)
    if reply.WhichOneof("body") == "decision":
        assert reply.decision.request_id == request.request_id
        assert reply.decision.text in request.view.legal_actions
    else:
        assert_no_traceback(reply)
    assert_serviceable(w)


@pytest.mark.parametrize("first", ["game_start", "decision_request"])
def test_messages_before_the_handshake(spawn: Spawn, first: str) -> None:
    """Docs silent (the handshake is first on every stream): answer or refuse, no hang."""
    bot = spawn("First")
    w = bot.wire()
    if first == "game_start":
        w.game_start(1, seat=1, dealer=0)
        if not w.quiet():
            got = w.receive()
            assert isinstance(got, pb.BotMessage)
            assert_no_traceback(got)
    else:
        got = w.ask(opening_request())
        assert isinstance(got, pb.BotMessage)
        assert_no_traceback(got)
    assert w.handshake().name == "review-bot"
    assert_serviceable(w)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="no-body"),
        pytest.param(b"\xff\xff\xff", id="not-protobuf"),
        pytest.param(
            pb.BotMessage(decision=pb.Decision(request_id=5, text="take")).SerializeToString(),
            id="a-bot-message",
        ),
        pytest.param(_unknown(6), id="unknown-kind-only"),
    ],
)
def test_message_of_the_wrong_kind(spawn: Spawn, data: bytes) -> None:
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.send_bytes(data)
    got = w.receive()
    assert isinstance(got, pb.BotMessage) and got.WhichOneof("body") == "error"
    assert_no_traceback(got)
    assert_serviceable(w)


def test_second_handshake_mid_stream(spawn: Spawn) -> None:
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    again = w.handshake(games=3)
    assert again.protocol_version == 1
    assert_serviceable(w)


def test_stream_cancelled_abruptly_bot_serves_a_new_one(spawn: Spawn) -> None:
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    w.call.cancel()
    assert w.end().code == grpc.StatusCode.CANCELLED
    w2 = bot.wire()
    assert w2.handshake().name == "review-bot"
    assert_serviceable(w2)


def test_referee_half_closes_without_shutdown(spawn: Spawn) -> None:
    """The bot's side ends (no hang); the process may go on serving."""
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.half_close()
    assert w.end().code == grpc.StatusCode.OK
    if bot.proc.poll() is None:
        w2 = bot.wire()
        assert w2.handshake().name == "review-bot"
    else:
        assert bot.proc.returncode == 0


@pytest.mark.parametrize(
    ("where", "reason"), [("game_end", 14), ("game_end", 21), ("game_end", 99), ("view", 21)]
)
def test_game_end_with_an_unknown_reason_means_game_over(
    spawn: Spawn, where: str, reason: int
) -> None:
    """docs/protocol.md (GameEnd, EndReason): 'Treat a value you do not know as the game is
    over (new endings may be added)'; value 14 was sent by older referees. The SDK once
    refused such a GameEnd with an unasked BotError, which fails the bot's next game."""
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    request = opening_request()
    assert w.decide(request) in request.view.legal_actions
    unknown = pb.EndReason.ValueType(reason)
    end = pb.GameEnd(game_number=1, reason=unknown, winner=0)
    if where == "view":
        game = MiniGame.new(7, dealer=0)
        game.play(game.legal_actions()[0])
        view = game.view(1)
        view.ClearField("to_move")
        del view.legal_actions[:]
        view.over, view.winner, view.reason = True, 0, unknown
        end = pb.GameEnd(
            game_number=1, reason=pb.END_REASON_OUT, winner=0, view=view, deck=game.deck
        )
    w.send(game_end=end)
    assert w.quiet(), f"unasked reply to GameEnd: {w.receive()}"
    last = bot.hooks()[-1]
    assert last["hook"] == "end" and last["result"] == "loss", last  # seat 1, winner 0
    assert last["reason"] == ("None" if where == "game_end" else "GameEndReason.OUT"), last
    assert_serviceable(w)  # the next game is played as usual


@pytest.mark.parametrize(
    ("reason", "winner", "result"),
    [
        (pb.END_REASON_TIMEOUT, 0, "loss"),
        (pb.END_REASON_CRASH, 1, "win"),
        (pb.END_REASON_VOID, None, "void"),
        (pb.END_REASON_DOUBLE_FORFEIT, None, "draw"),
    ],
)
def test_forfeit_and_void_game_end_views(
    spawn: Spawn, reason: pb.EndReason.ValueType, winner: int | None, result: str
) -> None:
    """protocol.md, View: after a forfeit or a void the view says over with GameEnd's winner
    (absent after a void), nobody to_move, no legal_actions, reason UNSPECIFIED."""
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    game = MiniGame.new(3, dealer=0)
    for _ in range(6):
        game.play(game.legal_actions()[0])
    view = game.view(1)
    view.ClearField("to_move")
    del view.legal_actions[:]
    view.over = True
    end = pb.GameEnd(game_number=1, reason=reason, detail="by review", view=view, deck=game.deck)
    if winner is not None:
        view.winner = winner
        end.winner = winner
    w.send(game_end=end)
    assert w.quiet()
    last = bot.hooks()[-1]
    assert (last["hook"], last["game"], last["result"]) == ("end", 1, result)


def test_draw_by_final_answer_game_end(spawn: Spawn) -> None:
    """A real drawn deal of this engine (final_cover set) is taken as a draw."""
    for seed in range(5000):
        game = MiniGame.new(seed, dealer=0)
        rng = random.Random(seed)
        while not game.over:
            game.play(rng.choice(game.legal_actions()))
        if game.reason == pb.END_REASON_DRAW_BY_FINAL_ANSWER:
            break
    assert game.final_cover
    bot = spawn("First")
    w = bot.wire()
    w.handshake()
    w.game_start(1, seat=1, dealer=0)
    w.send(
        game_end=pb.GameEnd(game_number=1, reason=game.reason, view=game.view(1), deck=game.deck)
    )
    assert w.quiet()
    assert bot.hooks()[-1]["result"] == "draw"
