"""What every test of the service's API checks of an error answer."""

from __future__ import annotations

from typing import Any


def problem(response: Any, status: int) -> dict[str, Any]:
    """The body of ``response``, asserted to be an RFC 9457 problem document of ``status``
    (its media type, exactly its four fields, the same status, a detail that says something)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert set(body) == {"type", "title", "status", "detail"}, body
    assert body["status"] == status and body["detail"], body
    return body
