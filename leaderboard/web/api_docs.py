"""The API's documentation page, made from its OpenAPI description on the server itself.

FastAPI's own pages (Swagger UI, ReDoc) load their scripts and styles from a CDN; the site
promises to fetch nothing from elsewhere, so ``/api/docs`` is this plain page instead, and
``/api/openapi.json`` stays for tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leaderboard.web.render import Links, render

METHODS = ("get", "put", "post", "delete", "patch", "options", "head", "trace")


@dataclass(frozen=True)
class Parameter:
    """One parameter of an operation: its name, where it goes, its type, required or not."""

    name: str
    where: str
    type: str
    required: bool
    description: str


@dataclass(frozen=True)
class Operation:
    """One method on one path, as the page lists it."""

    method: str
    path: str
    summary: str
    description: str
    parameters: tuple[Parameter, ...]
    body: tuple[str, ...]
    responses: tuple[tuple[str, str], ...]


def _type_of(schema: dict[str, Any]) -> str:
    if "type" in schema:
        return str(schema["type"])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    options = schema.get("anyOf") or schema.get("oneOf") or []
    return " or ".join(_type_of(option) for option in options) or "any"


def operations(schema: dict[str, Any]) -> list[Operation]:
    """Every operation of an OpenAPI document, by path then method."""
    found = []
    for path, item in sorted(schema.get("paths", {}).items()):
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            parameters = tuple(
                Parameter(
                    name=str(p.get("name", "")),
                    where=str(p.get("in", "")),
                    type=_type_of(p.get("schema", {})),
                    required=bool(p.get("required", False)),
                    description=str(p.get("description", "")),
                )
                for p in operation.get("parameters", [])
            )
            body = tuple(sorted(operation.get("requestBody", {}).get("content", {})))
            responses = tuple(
                (str(code), str(answer.get("description", "")))
                for code, answer in sorted(operation.get("responses", {}).items())
            )
            found.append(
                Operation(
                    method=method.upper(),
                    path=path,
                    summary=str(operation.get("summary", "")),
                    description=str(operation.get("description", "")),
                    parameters=parameters,
                    body=body,
                    responses=responses,
                )
            )
    return found


def api_docs_page(schema: dict[str, Any], *, links: Links) -> str:
    """The HTML page documenting the API ``schema`` describes (an OpenAPI document)."""
    title = f"{schema.get('info', {}).get('title', 'API')}: API"
    return render(
        "api_docs.html",
        links=links,
        title=title,
        heading=title,
        operations=operations(schema),
        openapi=links.root + "api/openapi.json",
    )
