"""Hostile review: attacks the older hostile suites do not try.

- Two bots colluding while both run: a secret offered on an abstract Unix socket, System V
  shared memory, ``/tmp`` and ``/dev/shm`` never arrives (each sandbox has its own network
  and IPC namespaces and tmpfs); locks on the read-only files every bwrap sandbox shares
  (the host's ``/usr``) carried it bit by bit until the running bots' seccomp filter refused
  file locks.
- Kernel memory a bot pins in Unix socket buffers is charged to its memory cgroup.
- A gzip reply under the 64 KiB reply limit that decompresses to 48 MiB is refused by gRPC.
- A bot flooding its stream with copies of a reply to an earlier game's request makes the
  referee keep and log every copy, until only one late copy was forgiven.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from referee.client import BotClient, UnexpectedReplyError
from referee.protocol.messages import (
    PROTOCOL_VERSION,
    BotMessage,
    Clock,
    Decision,
    DecisionRequest,
    Handshake,
    HandshakeReply,
    RefereeMessage,
)
from referee.rules import Game
from referee.series import SeriesConfig
from referee.table import table_handshake
from sandbox.backend import Backend
from sandbox.death import DeathCause
from sandbox.errors import BotCrashedError
from sandbox.limits import MiB
from tests.protocol.helpers import raw_server
from tests.sandbox.conftest import roomy, stage_hostile_bot
from tests.sandbox.test_hostile import PATIENT, call, report, stop_and_check_clean, wait_death

pytestmark = pytest.mark.timeout(300)

REVIEW = Path(__file__).parent / "hostile_review"
MakeReviewBot = Callable[..., Path]


@pytest.fixture
def make_review_bot(tmp_path: Path) -> MakeReviewBot:
    """``make_review_bot("colluder", extra={"role": "send"})`` -> a bot folder of
    ``hostile_review/`` (with the shared ``_serve.py``) ready to start."""

    def make(name: str, extra: dict[str, str] | None = None, folder: str | None = None) -> Path:
        return stage_hostile_bot(REVIEW / name, tmp_path / (folder or name), extra)

    return make


# ---------------------------------------------------------------------------- collusion


def _collude(backend: Backend, make: MakeReviewBot, tag: str) -> dict[str, Any]:
    """Start a sending and a receiving colluder side by side; the receiver's report."""
    sender_dir = make("colluder", {"role": "send"}, folder="sender")
    receiver_dir = make("colluder", {"role": "receive"}, folder="receiver")
    sender = backend.start(sender_dir, roomy(), f"test-collude-send-{tag}")
    try:
        assert report(sender)["sent"] > 0  # it offered the secret before serving
        receiver = backend.start(receiver_dir, roomy(), f"test-collude-recv-{tag}")
        try:
            return report(receiver)
        finally:
            stop_and_check_clean(receiver)
    finally:
        stop_and_check_clean(sender)


def test_colluding_bots_share_no_socket_ipc_or_scratch_space(
    sandbox_backend: Backend, make_review_bot: MakeReviewBot
) -> None:
    """Abstract Unix sockets live in the network namespace, System V segments in the IPC
    namespace, ``/tmp`` and ``/dev/shm`` are per-bot tmpfs: none reaches the other bot."""
    found = _collude(sandbox_backend, make_review_bot, "ipc")
    assert found["abstract_socket"] is None, found
    assert found["sysv_shm"] is None, found
    assert found["/tmp/kryt-review-secret"] is None, found
    assert found["/dev/shm/kryt-review-secret"] is None, found


@pytest.mark.parametrize(
    "name", [pytest.param("docker", marks=pytest.mark.docker), pytest.param("bwrap")]
)
def test_colluding_bots_cannot_signal_through_locks_on_shared_files(
    name: str, request: pytest.FixtureRequest, make_review_bot: MakeReviewBot
) -> None:
    """The sender locks (flock, and an fcntl read lock) the read-only library files whose bit
    of the secret is 1; the receiver tries a shared flock and asks F_GETLK on each. Under
    bwrap the bots share the host's inodes of /usr: the running bots' seccomp filter refuses
    every file lock (EPERM), so nothing is held and nothing can be read, on both backends."""
    backend: Backend = request.getfixturevalue(f"{name}_backend")
    sender_dir = make_review_bot("colluder", {"role": "send"}, folder="sender")
    receiver_dir = make_review_bot("colluder", {"role": "receive"}, folder="receiver")
    sender = backend.start(sender_dir, roomy(), "test-collude-send-lock")
    try:
        sent = report(sender)
        assert sent["refused"] == [errno.EPERM], sent  # every lock refused by the filter
        receiver = backend.start(receiver_dir, roomy(), "test-collude-recv-lock")
        try:
            found = report(receiver)
        finally:
            stop_and_check_clean(receiver)
    finally:
        stop_and_check_clean(sender)
    assert found["flock_files"] > 0, found
    assert found["flock"] == 0 and found["record_lock"] == 0, found
    assert found["lock_errors"] == [errno.EPERM], found


# ---------------------------------------------------------------------------- memory


def test_unix_socket_buffers_count_against_the_memory_limit(
    sandbox_backend: Backend, make_review_bot: MakeReviewBot
) -> None:
    """Eight processes fill the queues of every socket pair their open-file limit allows
    (about 3 GiB by the per-socket limits alone): the kernel charges the buffers to the
    bot's cgroup, so the tree queues no more than its limit or dies out of memory."""
    limits = roomy(memory_bytes=64 * MiB)
    try:
        bot = sandbox_backend.start(make_review_bot("sockhoard"), limits, "test-sockhoard")
    except BotCrashedError as exc:
        assert exc.death is not None and exc.death.cause is DeathCause.OOM, exc
        return
    try:
        try:
            result = report(bot, timeout=240)
        except grpc.RpcError:
            death = wait_death(bot, 240)
            assert death.cause is DeathCause.OOM, death
        else:
            assert result["queued"] <= limits.memory_bytes, result
    finally:
        stop_and_check_clean(bot)


def test_a_small_gzip_reply_that_decompresses_to_48_mib_is_refused(
    sandbox_backend: Backend, make_review_bot: MakeReviewBot
) -> None:
    """gRPC checks the decompressed size against the channel's 64 KiB reply limit too: a
    48 KiB gzip body of 48 MiB is refused, never handed to the referee."""
    bot = sandbox_backend.start(make_review_bot("gzipbomb"), roomy(), "test-gzipbomb")
    try:
        with pytest.raises(grpc.RpcError) as caught:
            call(bot, "Big", timeout=PATIENT)
        error: Any = caught.value
        assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED, error
        assert "Decompressed message larger than max" in error.details(), error
        assert bot.alive()  # the bot is fine; the referee refused its reply
    finally:
        stop_and_check_clean(bot)


# ---------------------------------------------------------------------------- the stream

COPIES = 3000


def test_a_flood_of_stale_replies_is_a_fault_not_kept_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """After answering game 1, the bot sends 3,000 copies of that answer before its first
    reply of game 2. protocol.md: one late reply to a game's last request is dropped and
    logged; a bot sending more than that breaks the protocol. The referee kept all 3,000 in
    memory for the rest of the series and logged 3,000 warnings (and a bot could do it again
    at every request); now the first copy is dropped and logged, the second is the fault."""
    first: dict[str, int] = {}

    def behaviour(message: RefereeMessage) -> list[BotMessage | bytes]:
        if isinstance(message, Handshake):
            return [HandshakeReply(PROTOCOL_VERSION, "raw", "1", "raw protobuf", ("default",))]
        if isinstance(message, DecisionRequest):
            if "id" not in first:
                first["id"] = message.request_id
                return [Decision(message.request_id, "take")]
            stale: list[BotMessage | bytes] = [Decision(first["id"], "take")] * COPIES
            return [*stale, Decision(message.request_id, "take")]
        return []

    view = Game.new(seed=3, dealer=0).view(0)
    clock = Clock(60_000, 60_000)
    caplog.set_level(logging.WARNING, logger="referee.client")
    with raw_server(behaviour) as address, BotClient(address) as client:
        client.handshake(table_handshake(SeriesConfig(games=2, seed=1), ["a", "b"], 0), 30)
        client.decide(view, clock, game_number=1, timeout=PATIENT)
        with pytest.raises(UnexpectedReplyError) as fault:
            client.decide(view, clock, game_number=2, timeout=PATIENT)
        kept = len(client.discarded)
    # Whether the copies came before the second request or after it is a race; both ways the
    # second copy is the fault, named as such.
    assert f"a third reply to request {first['id']}" in str(fault.value), fault.value
    warnings = [r for r in caplog.records if "second reply" in r.getMessage()]
    assert kept == 1, f"{kept} stale replies kept"
    assert len(warnings) == 1, f"{len(warnings)} warnings logged"
