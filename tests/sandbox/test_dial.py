"""The referee dials a bot's socket by descriptor, never by a path the bot controls."""

from __future__ import annotations

import os
import socket
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from referee.client import CHANNEL_OPTIONS, BotClient, BotCrashedError, BotUnreachableError
from referee.protocol.wire import SERVICE
from sandbox.dial import fd_address, open_bot_socket
from sandbox.errors import UnsafeSocketError


def test_missing_socket_is_not_an_error_yet(tmp_path: Path) -> None:
    assert open_bot_socket(tmp_path, expected_uid=os.geteuid()) is None


def test_symlink_to_a_real_socket_is_refused(tmp_path: Path) -> None:
    # Stand-in for /var/run/docker.sock: a live socket elsewhere on the host.
    outside = tmp_path / "outside"
    outside.mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(outside / "docker.sock"))
    listener.listen()
    sock_dir = tmp_path / "bot"
    sock_dir.mkdir()
    (sock_dir / "bot.sock").symlink_to(outside / "docker.sock")
    try:
        with pytest.raises(UnsafeSocketError, match=r"symlink to .*docker.sock"):
            open_bot_socket(sock_dir, expected_uid=os.geteuid())
    finally:
        listener.close()


def test_regular_file_and_foreign_owner_are_refused(tmp_path: Path) -> None:
    (tmp_path / "bot.sock").write_text("")
    with pytest.raises(UnsafeSocketError, match="not a Unix socket"):
        open_bot_socket(tmp_path, expected_uid=None)
    (tmp_path / "bot.sock").unlink()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "bot.sock"))
    try:
        with pytest.raises(UnsafeSocketError, match="owned by uid"):
            open_bot_socket(tmp_path, expected_uid=os.geteuid() + 12345)
    finally:
        listener.close()


def test_dialing_by_descriptor_reaches_the_checked_socket(tmp_path: Path) -> None:
    # A directory path far beyond the 107-byte sun_path limit still works: the referee
    # dials /proc/self/fd/N. The server binds relative to its working directory.
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    assert len(str(deep / "bot.sock")) > 107
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    cwd = os.getcwd()
    os.chdir(deep)
    try:
        server.add_insecure_port("unix:bot.sock")
    finally:
        os.chdir(cwd)
    server.start()
    servicer.set(SERVICE, health_pb2.HealthCheckResponse.SERVING)
    fd = open_bot_socket(deep, expected_uid=os.geteuid())
    assert fd is not None
    try:
        address = fd_address(fd)
        assert len(address) < 40
        with BotClient(address) as client:
            client.wait_healthy(30, alive=lambda: True)
        with grpc.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
            # Swapping the path afterwards does not redirect the referee.
            os.unlink(deep / "bot.sock")
            (deep / "bot.sock").symlink_to("/var/run/docker.sock")
            stub = health_pb2_grpc.HealthStub(channel)
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=30)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        os.close(fd)
        server.stop(None)


def test_the_health_wait_times_out_with_the_last_status(tmp_path: Path) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    server.add_insecure_port(f"unix://{tmp_path}/bot.sock")
    server.start()
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    servicer.set(SERVICE, health_pb2.HealthCheckResponse.NOT_SERVING)
    try:
        with (
            BotClient(f"unix://{tmp_path}/bot.sock") as client,
            pytest.raises(BotUnreachableError, match="NOT_SERVING"),
        ):
            # Long enough for a loaded machine to answer one check (under CI's load a
            # 1.5 s wait saw only its own deadline, never the status).
            client.wait_healthy(8, alive=lambda: True)
    finally:
        server.stop(None)


def test_the_health_wait_stops_at_once_when_the_bot_died(tmp_path: Path) -> None:
    with (
        BotClient(f"unix://{tmp_path}/nobody.sock") as client,
        pytest.raises(BotCrashedError, match="exited before serving"),
    ):
        client.wait_healthy(60, alive=lambda: False)
