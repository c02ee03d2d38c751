"""The sandbox tests' Docker fixture, for the table tournament run under Docker."""

from tests.sandbox.conftest import docker_backend

__all__ = ["docker_backend"]
