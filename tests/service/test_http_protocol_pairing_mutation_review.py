"""Tests from a mutation review of the ladder's pairing (``arena/service/pairing.py``) and of the
header deadline on the servers' HTTP connections (``arena/service/http_protocol.py``).

Each test pins a behaviour that a mutant changed without any earlier test noticing: a bot
paired with itself or with a busy pair, an impossible result accepted, a newcomer not seen as
new, a fit or an uncertainty that is not what the module says it computes; a request whose
answer takes longer than the header deadline cut off, a kept-alive connection with no
deadline, a wrong 408. The expected values come from docs/arena.md ("The ladder", the 408s
of "Status codes"), docs/configuration.md (``KRYT_ARENA_HEADER_TIMEOUT_SECONDS``) and the
modules' own docstrings.

The HTTP tests run uvicorn in this process (a thread) with a one-second header deadline and
a tiny ASGI app, or drive the protocol object directly on a loop that records its timers
(so that the deadline's length is checked without measuring time).
"""

from __future__ import annotations

import asyncio
import math
import re
import select
import socket
import statistics
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pytest
import uvicorn
from uvicorn.config import Config
from uvicorn.server import ServerState

from arena.service.http_protocol import (
    DEFAULT_HEADER_TIMEOUT,
    HEADER_TIMEOUT_TEXT,
    HeaderDeadlineProtocol,
    header_deadline_protocol,
)
from arena.service.pairing import PRIOR_SD, PairResult, choose_pair, fit

# ------------------------------------------------------------------------------- pairing

# 1 and 2 even after many games (their order is a coin toss), 3 beat both in every game.
EVEN_TWINS = [PairResult(1, 2, 40, 20.0), PairResult(1, 3, 10, 0.0), PairResult(2, 3, 10, 0.0)]
# The same, with fewer games between 1 and 3 than between 2 and 3.
EVEN_PAIR = [PairResult(1, 2, 40, 20.0), PairResult(1, 3, 10, 0.0), PairResult(2, 3, 12, 0.0)]
# Uneven results with draws (half points), every pair played often enough that each rating
# difference is known to better than one logistic unit.
MIXED = [
    PairResult(1, 2, 120, 70.5),
    PairResult(2, 3, 100, 61.0),
    PairResult(3, 4, 90, 40.5),
    PairResult(1, 3, 80, 55.0),
    PairResult(4, 1, 60, 12.0),
    PairResult(2, 4, 70, 45.5),
]


def test_a_bot_listed_twice_is_refused_not_paired_with_itself() -> None:
    """``fit``: "players must be distinct". Without the check, a ladder list holding one
    version twice made the newcomer rule choose the pair (1, 1): a bot against itself."""
    with pytest.raises(ValueError, match="distinct"):
        choose_pair([1, 1, 2], [])
    with pytest.raises(ValueError, match="distinct"):
        fit([5, 6, 5], [])


@pytest.mark.parametrize(
    "result",
    [
        PairResult(1, 2, 10, 10.5),  # more points than games
        PairResult(1, 2, 10, -0.5),  # negative points
        PairResult(1, 2, -4, 0.0),  # negative games
        PairResult(1, 2, 10, math.nan),
    ],
    ids=["points-over-games", "negative-points", "negative-games", "nan-points"],
)
def test_an_impossible_result_is_refused(result: PairResult) -> None:
    """``fit``: an impossible result is a ValueError, not a fit (and a pair) built on it."""
    with pytest.raises(ValueError, match="impossible result"):
        fit([1, 2, 3], [result])
    with pytest.raises(ValueError, match="impossible result"):
        choose_pair([1, 2, 3], [*EVEN_TWINS, result])


def test_clean_sweeps_and_series_without_games_are_possible_results() -> None:
    """A bot that won (or lost) every game, as against a bot that crashes in every game,
    and a series aborted before its first game are real results: they are fitted, not
    refused (a ValueError here would stop the ladder's scheduling)."""
    results = [
        PairResult(1, 2, 8, 8.0),
        PairResult(2, 3, 8, 0.0),
        PairResult(1, 3, 0, 0.0),
    ]
    current = fit([1, 2, 3], results)
    assert current.order() == [1, 3, 2]
    pair = choose_pair([1, 2, 3], results)
    assert pair is not None and len(set(pair)) == 2


def test_a_bot_whose_only_series_had_no_games_is_still_new() -> None:
    """Module docstring: "a bot with no games yet (new bots first)". Bot 4's one series
    ended before any game: it is still new, so it plays before the coin-toss pair 1-2."""
    results = [*EVEN_TWINS, PairResult(4, 3, 0, 0.0)]
    pair = choose_pair([1, 2, 3, 4], results)
    assert pair is not None and 4 in pair


def test_a_new_bot_comes_before_an_unplayed_pair_on_an_exploration_turn() -> None:
    """docs/arena.md: "new bots first, then ..., and every fifth choice the pair with the
    fewest games". On a fifth choice the newcomer (9) still comes first, against its most
    uncertain opponent (3, in the middle of the field), not the established pair that never
    met (1-2), which that choice plays when no bot is new."""
    results = [PairResult(1, 3, 20, 19.0), PairResult(3, 2, 20, 19.0)]
    pair = choose_pair([1, 2, 3, 9], results, scheduled=4)
    assert pair is not None and set(pair) == {3, 9}
    assert choose_pair([1, 2, 3], results, scheduled=4) in ((1, 2), (2, 1))


def test_a_new_bot_whose_first_series_is_running_is_not_new_on_either_side() -> None:
    """A bot whose first series is under way is not new, whichever side of the busy pair
    it is on: a second slot goes to the least certain pair, not to the newcomer again."""
    for busy in ([(4, 3)], [(3, 4)]):
        pair = choose_pair([1, 2, 3, 4], EVEN_TWINS, busy=busy)
        assert pair in ((1, 2), (2, 1)), busy


def test_a_busy_pair_of_a_superseded_version_is_no_error() -> None:
    """docs/arena.md: the entrants are the latest version of each bot; a series of an older
    version (1) may still be running when a new one (4) arrives. Its busy pair, on either
    side, is no KeyError (which would stop the ladder choosing while that series runs)."""
    results = [PairResult(1, 2, 40, 30.0), PairResult(1, 3, 40, 10.0), PairResult(2, 3, 40, 5.0)]
    for busy in ([(1, 2)], [(3, 1)], [(1, 2), (3, 1)]):
        pair = choose_pair([2, 3, 4], results, busy=busy)
        assert pair is not None and 4 in pair and 1 not in pair, busy


def test_busy_pairs_are_skipped_by_the_uncertainty_rule() -> None:
    """Module docstring: "Pairs listed in busy (series being played) are skipped", every
    one of them: the coin-toss pair 1-2 is not played twice at once."""
    pair = choose_pair([1, 2, 3], EVEN_TWINS, busy=[(2, 1)])
    assert pair is not None and set(pair) != {1, 2}
    pair = choose_pair([1, 2, 3], EVEN_TWINS, busy=[(1, 3), (2, 1)])
    assert pair is not None and set(pair) == {2, 3}


def test_busy_pairs_are_skipped_on_an_exploration_turn() -> None:
    """docs/arena.md: every fifth choice is the pair with the fewest games. With that pair
    (1-3) being played, the fifth choice is the next fewest (2-3), not 1-3 a second time."""
    pair = choose_pair([1, 2, 3], EVEN_PAIR, scheduled=4)
    assert pair is not None and set(pair) == {1, 3}
    pair = choose_pair([1, 2, 3], EVEN_PAIR, scheduled=4, busy=[(3, 1)])
    assert pair is not None and set(pair) == {2, 3}


def test_of_equally_uncertain_pairs_the_one_played_least_is_chosen() -> None:
    """Three bots exactly even: every order is a coin toss (flip probability 1/2). The rule
    breaks the tie towards the pair with the fewest games, so the pair never played (1-2)
    is chosen rather than one already played ten times."""
    results = [PairResult(1, 3, 10, 5.0), PairResult(2, 3, 10, 5.0)]
    current = fit([1, 2, 3], results)
    assert current.flip_probability(1, 2) == current.flip_probability(1, 3) == 0.5
    assert choose_pair([1, 2, 3], results) in ((1, 2), (2, 1))


def test_explore_every_one_always_explores_and_zero_never_does() -> None:
    """``explore_every``: every explore_every-th choice is the pair with the fewest games
    (1-3 here); 1 makes every choice one, 0 none (and is no division by zero)."""
    for scheduled in range(6):
        always = choose_pair([1, 2, 3], EVEN_PAIR, scheduled=scheduled, explore_every=1)
        never = choose_pair([1, 2, 3], EVEN_PAIR, scheduled=scheduled, explore_every=0)
        assert always is not None and set(always) == {1, 3}, scheduled
        assert never is not None and set(never) == {1, 2}, scheduled


def test_the_fit_is_the_maximum_a_posteriori_with_its_covariance() -> None:
    """Module docstring: the maximum a posteriori Bradley-Terry ratings (logistic, draws
    count half) under a Gaussian prior of sd ``PRIOR_SD``, and the inverse Hessian as the
    covariance. Checked independently: the log posterior's gradient is zero at the fitted
    ratings and the covariance is the inverse of its negated Hessian there."""
    players = [3, 1, 4, 2]
    current = fit(players, MIXED)
    index = {p: i for i, p in enumerate(players)}
    n = len(players)
    games = np.zeros((n, n))
    points = np.zeros((n, n))
    for r in MIXED:
        i, j = index[r.a], index[r.b]
        games[i, j] += r.games
        games[j, i] += r.games
        points[i, j] += r.score_a
        points[j, i] += r.games - r.score_a
    ratings = np.array([current.rating(p) for p in players])
    prior = 1.0 / PRIOR_SD**2
    expected = 1.0 / (1.0 + np.exp(ratings[None, :] - ratings[:, None]))
    gradient = (points - games * expected).sum(axis=1) - prior * ratings
    assert np.abs(gradient).max() < 1e-6, gradient
    assert abs(float(ratings.sum())) < 1e-6
    weights = games * expected * (1.0 - expected)
    hessian = np.diag(weights.sum(axis=1) + prior) - weights
    assert np.allclose(current.covariance @ hessian, np.eye(n), atol=1e-8)
    assert current.order() == [1, 2, 3, 4]


def test_the_flip_probability_is_the_normal_tail_of_the_rating_gap() -> None:
    """Module docstring: the probability that the fit has two players in the wrong order
    is ``Phi(-|r_i - r_j| / sd(r_i - r_j))``, with ``var(r_i - r_j) = C_ii + C_jj - 2 C_ij``:
    the same whichever player is named first, 1/2 between players with no games."""
    players = [1, 2, 3, 4]
    current = fit(players, MIXED)
    normal = statistics.NormalDist()
    checked = 0
    for a in players:
        for b in players:
            if a == b:
                continue
            i, j = players.index(a), players.index(b)
            c = current.covariance
            variance = float(c[i, i] + c[j, j] - 2.0 * c[i, j])
            assert 0.0 < variance < 1.0  # small: a floor on the sd would show
            gap = abs(current.rating(a) - current.rating(b))
            expected = normal.cdf(-gap / math.sqrt(variance))
            assert current.flip_probability(a, b) == pytest.approx(expected, rel=1e-9, abs=1e-12)
            checked += 1
    assert checked == 12
    assert fit([7, 8], []).flip_probability(8, 7) == pytest.approx(0.5)


# ----------------------------------------------------------------------- header deadline

HEADER_S = 1.0
"""The header deadline of the server under test."""
SLOW_S = 2.0 * HEADER_S
"""How long ``/slow`` takes to answer: well past the header deadline."""
ANSWER_S = 20.0
"""Generous: how long a client waits for an answer (or the connection's end)."""

Message = dict[str, Any]


async def _app(
    scope: Message,
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    """``/slow`` answers after :data:`SLOW_S`; any other path at once."""
    assert scope["type"] == "http"
    if scope["path"] == "/slow":
        await asyncio.sleep(SLOW_S)
    body = f"answer {scope['path']}".encode()
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class Exchange:
    """What a client received, and whether the server closed the connection."""

    received: bytes
    closed: bool

    def statuses(self) -> list[int]:
        """The status codes of the answers received, in order."""
        return [int(code) for code in re.findall(rb"HTTP/1\.1 (\d{3}) ", self.received)]


@dataclass(frozen=True)
class Server:
    """uvicorn with the header-deadline protocol, in a thread of this process."""

    port: int

    def talk(
        self,
        request: bytes,
        *,
        answers_first: int = 0,
        then: list[bytes] | None = None,
        pause: float = 0.25,
    ) -> Exchange:
        """Send ``request``; read until ``answers_first`` answers came whole; send each piece of
        ``then`` ``pause`` seconds apart (until the server says something: nothing is sent
        after its answer, whose bytes a reset would lose); read until it closes (or
        :data:`ANSWER_S` passed with nothing)."""
        received = b""
        with socket.create_connection(("127.0.0.1", self.port), timeout=ANSWER_S) as sock:
            sock.sendall(request)
            while received.count(b"answer /") < answers_first:  # each answer's body
                chunk = sock.recv(65536)
                assert chunk, f"closed before answer {answers_first}: {received!r}"
                received += chunk
            for piece in then or []:
                readable, _, _ = select.select([sock], [], [], pause)
                if readable:
                    break
                sock.sendall(piece)
            try:
                while chunk := sock.recv(65536):
                    received += chunk
            except TimeoutError:
                return Exchange(received, closed=False)
            except ConnectionResetError:
                pass
        return Exchange(received, closed=True)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """An in-process uvicorn server with a :data:`HEADER_S` header deadline."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(
        _app,
        http=header_deadline_protocol(HEADER_S),
        lifespan="off",
        log_config=None,
        log_level="warning",
        timeout_graceful_shutdown=5,
    )
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not instance.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield Server(sock.getsockname()[1])
    finally:
        instance.should_exit = True
        thread.join(30)
        sock.close()


GET_SLOW = b"GET /slow HTTP/1.1\r\nHost: arena\r\nConnection: close\r\n\r\n"
GET_FAST = b"GET /fast HTTP/1.1\r\nHost: arena\r\n\r\n"


def test_an_answer_slower_than_the_header_deadline_is_not_cut_off(server: Server) -> None:
    """The deadline is on a request's headers only: once they are complete the request is
    answered however long the app takes (it was cut off at the deadline, with a 408, when
    the deadline was not cancelled as the headers completed)."""
    exchange = server.talk(GET_SLOW)
    assert exchange.statuses() == [200], exchange.received[-300:]
    assert exchange.received.endswith(b"answer /slow")


def test_a_pipelined_request_with_a_slow_answer_is_not_cut_off(server: Server) -> None:
    """Two requests in one packet: the second's headers are complete when the first answer
    ends, so it has no deadline either (it was closed unanswered)."""
    exchange = server.talk(GET_FAST + GET_SLOW)
    assert exchange.statuses() == [200, 200], exchange.received[-300:]
    assert exchange.received.endswith(b"answer /slow")


def test_a_kept_alive_connection_trickling_its_next_request_gets_a_408(server: Server) -> None:
    """docs/arena.md: the deadline runs "from connecting or from the previous answer on a
    kept-alive connection": a next request trickling in a byte at a time is a 408 and the
    connection is closed (uvicorn's own keep-alive timeout stops at the first byte)."""
    trickle = [b"GET /fast HTTP/1.1\r\n"] + [b"X"] * 40
    exchange = server.talk(GET_FAST, answers_first=1, then=trickle)
    assert exchange.statuses() == [200, 408], exchange.received[-300:]
    assert exchange.closed


def test_an_idle_kept_alive_connection_is_closed_without_an_answer(server: Server) -> None:
    """docs/arena.md: "a connection that sent nothing is closed without an answer": after
    an answer, a connection that sends nothing more gets no 408, however it got the first."""
    exchange = server.talk(b"GET /fast HTTP/1.1\r\nHo", then=[b"st: arena\r\n\r\n"])
    assert exchange.statuses() == [200], exchange.received[-300:]
    assert exchange.closed


def test_the_408_is_a_complete_plain_text_answer_and_the_connection_closes(
    server: Server,
) -> None:
    """A request line with half its headers, then nothing: one 408 whose length is its
    body's, saying why, ``connection: close``, and the connection closed."""
    exchange = server.talk(b"GET /fast HTTP/1.1\r\nHost: ar")
    assert exchange.closed, "the connection stayed open after the 408"
    head, _, body = exchange.received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "HTTP/1.1 408 Request Timeout"
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    assert HEADER_TIMEOUT_TEXT in body.decode()


def test_a_pipelined_partial_request_past_the_deadline_gets_a_408(server: Server) -> None:
    """docs/arena.md: a request whose headers are not complete in time is a 408 (only "a
    connection that sent nothing is closed without an answer"). Here the client sent the
    first request and part of the second in one packet, then nothing."""
    exchange = server.talk(GET_FAST + b"GET /fast HTTP/1.1\r\nHo")
    assert exchange.statuses() == [200, 408], exchange.received[-300:]


def test_the_default_header_deadline_is_the_documented_30_seconds() -> None:
    """docs/configuration.md: "`kryt leaderboard serve` uses 30 s"."""
    assert DEFAULT_HEADER_TIMEOUT == 30.0
    assert header_deadline_protocol(DEFAULT_HEADER_TIMEOUT).header_timeout == 30.0


# The protocol object driven directly: a loop that records the timers asked of it.

SECONDS = 7.25
"""A header deadline unlike uvicorn's own timers (its keep-alive timeout is 5 s)."""


@dataclass
class Timer:
    """A timer asked of :class:`RecordingLoop`: it never fires by itself."""

    delay: float
    callback: Callable[..., object]
    args: tuple[Any, ...]
    handle: asyncio.TimerHandle

    def fire(self) -> None:
        """Run it now, as the loop would at its time."""
        self.handle.cancel()
        self.callback(*self.args)


class RecordingLoop:
    """The running loop, except that ``call_later`` records the timer and runs it only
    when a test fires it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.timers: list[Timer] = []

    def call_later(
        self, delay: float, callback: Callable[..., object], *args: Any
    ) -> asyncio.TimerHandle:
        handle = self._loop.call_later(3600.0, callback, *args)
        self.timers.append(Timer(delay, callback, args, handle))
        return handle

    def pending(self, delay: float) -> list[Timer]:
        """The timers of ``delay`` seconds neither cancelled nor fired."""
        return [t for t in self.timers if t.delay == delay and not t.handle.cancelled()]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loop, name)


class FakeTransport(asyncio.Transport):
    """Collects what is written; closing only marks it closed."""

    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _connect() -> tuple[HeaderDeadlineProtocol, RecordingLoop, FakeTransport]:
    loop = RecordingLoop(asyncio.get_running_loop())
    config = Config(_app, lifespan="off", log_config=None, proxy_headers=False)
    config.load()
    protocol = header_deadline_protocol(SECONDS)(
        config, ServerState(), {}, cast(asyncio.AbstractEventLoop, loop)
    )
    transport = FakeTransport()
    protocol.connection_made(transport)
    return protocol, loop, transport


async def _answered(transport: FakeTransport, count: int) -> None:
    for _ in range(2000):
        if transport.written.count(b"HTTP/1.1 200") >= count and transport.written.endswith(
            b"answer /fast"
        ):
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"no answer {count}: {transport.written!r}")


def test_the_deadline_is_the_configured_seconds_from_connecting_and_from_each_answer() -> None:
    """docs/configuration.md: ``header_timeout_seconds`` from connecting, or from the
    previous answer on a kept-alive connection. Checked on the timers the protocol asks of
    its loop, without waiting: one of exactly the configured seconds at connection, none
    once the headers are complete, a fresh one after the answer; fired with nothing of a
    next request sent, it closes the connection without writing anything."""

    async def scenario() -> None:
        protocol, loop, transport = _connect()
        assert len(loop.pending(SECONDS)) == 1
        protocol.data_received(GET_FAST)
        assert loop.pending(SECONDS) == []
        await _answered(transport, 1)
        pending = loop.pending(SECONDS)
        assert len(pending) == 1 and not transport.closed
        answered = transport.written
        pending[0].fire()
        assert transport.closed and transport.written == answered
        protocol.connection_lost(None)
        for timer in loop.timers:
            timer.handle.cancel()

    asyncio.run(scenario())


def test_a_partial_request_at_the_deadline_is_answered_408() -> None:
    """The same protocol, fired with part of a request received: a 408, then closed."""

    async def scenario() -> None:
        protocol, loop, transport = _connect()
        protocol.data_received(b"GET /fast HTTP/1.1\r\nHo")
        (timer,) = loop.pending(SECONDS)
        timer.fire()
        assert transport.written.startswith(b"HTTP/1.1 408 ")
        assert transport.closed
        protocol.connection_lost(None)
        for each in loop.timers:
            each.handle.cancel()

    asyncio.run(scenario())


def test_a_malformed_request_gets_its_400_and_nothing_after_it() -> None:
    """uvicorn answers a malformed request line 400 and closes the connection; until the
    connection is gone (a slow reader keeps it while the 400 is in its buffer) the header
    timer is still set. Should it fire then, no 408 is written after the 400."""

    async def scenario() -> None:
        protocol, loop, transport = _connect()
        protocol.data_received(b"NOT AN HTTP REQUEST\r\n\r\n")
        assert transport.closed and transport.written.startswith(b"HTTP/1.1 400 ")
        answered = transport.written
        for timer in loop.pending(SECONDS):
            timer.fire()
        assert transport.written == answered
        protocol.connection_lost(None)
        for timer in loop.timers:
            timer.handle.cancel()

    asyncio.run(scenario())


def test_a_closed_connection_leaves_no_deadline_behind() -> None:
    """Neither a connection that ends (the client went away) nor one closed after its answer
    (``Connection: close``) keeps a header timer in the loop: it would hold the connection's
    protocol and buffers for ``header_timeout_seconds`` after its end."""

    async def scenario() -> None:
        protocol, loop, transport = _connect()
        protocol.data_received(b"GET /fast HT")
        protocol.connection_lost(None)
        assert loop.pending(SECONDS) == []

        protocol, loop, transport = _connect()
        protocol.data_received(GET_FAST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        await _answered(transport, 1)
        assert transport.closed
        assert loop.pending(SECONDS) == []
        protocol.connection_lost(None)
        for timer in loop.timers:
            timer.handle.cancel()

    asyncio.run(scenario())
