"""The bundled example bots (``sdk/examples``) start and serve in every backend.

This is what proves the Docker base image and the bwrap runtime carry a working SDK.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from sandbox.backend import Backend
from sandbox.local import ProcessBackend, project_package_dirs
from tests.sandbox.conftest import roomy
from tests.sandbox.procs import container_gone

pytestmark = pytest.mark.timeout(120)


def examples() -> list[Path]:
    sdk = project_package_dirs().get("sdk")
    if sdk is None:
        return []
    return sorted(p.parent for p in (sdk / "examples").glob("*/bot.toml"))


def test_examples_exist() -> None:
    assert {p.name for p in examples()} >= {"random", "greedy"}


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker), "bwrap", "process"])
def backend(request: pytest.FixtureRequest) -> Backend:
    name: str = request.param
    if name == "process":
        # The default trusted roots: the bundled examples run without --unsafe.
        return ProcessBackend(allow_unsafe=False)
    result: Backend = request.getfixturevalue(f"{name}_backend")
    return result


@pytest.mark.parametrize("example", examples(), ids=lambda p: p.name)
def test_example_serves(backend: Backend, example: Path) -> None:
    with backend.start(example, roomy(), f"test-example-{example.name}") as bot:
        stub = health_pb2_grpc.HealthStub(bot.channel)
        reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=60)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        assert bot.alive()
    assert container_gone(bot)
