"""Service requirements for tests: skip locally when a service is missing, fail under CI."""

from __future__ import annotations

import os

import pytest


def under_ci() -> bool:
    """True when running in CI, where every service the suite needs must be present."""
    return os.environ.get("CI", "").lower() not in {"", "0", "false", "no"}


def require(available: bool, service: str, why: str) -> None:
    """Skip the calling test when ``service`` is missing, or fail loudly under CI."""
    if available:
        return
    message = f"{service} is not available: {why}"
    if under_ci():
        pytest.fail(f"{message} (required under CI; .ci/run must provision it)", pytrace=False)
    pytest.skip(message)
