"""The sandbox tests' backend fixtures, for referee tests that play in a real sandbox."""

from tests.sandbox.conftest import bwrap_backend, docker_backend

__all__ = ["bwrap_backend", "docker_backend"]
