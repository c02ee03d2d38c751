"""The packages form an ordered list of layers: each imports only its own layer and those
below it. No exceptions: every import of every module (including imports inside functions)
is checked, so a shortcut through the layers fails here rather than in review.

The same picture is drawn in docs/architecture.md.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("referee", "sdk", "sandbox", "arena", "leaderboard", "kryt", "kryt_proto")

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rules core", ("referee.rules",)),
    ("protocol", ("kryt_proto", "referee.protocol")),
    ("bot runtime", ("sdk",)),
    ("referee", ("referee",)),
    ("sandbox", ("sandbox",)),
    ("records and services", ("arena",)),
    ("leaderboard", ("leaderboard",)),
    ("arena service", ("arena.service",)),
    ("author tools", ("sdk.tools",)),
    ("command line", ("kryt",)),
)
"""Bottom first. A module belongs to the layer of its longest matching prefix."""

# Third-party packages a layer must not import: the rules core has no I/O and no time; the
# pure ratings math needs no database; a bot's runtime carries only grpcio and protobuf.
FORBIDDEN_THIRD_PARTY: dict[str, tuple[str, ...]] = {
    "referee.rules": (
        "grpc",
        "docker",
        "sqlmodel",
        "sqlalchemy",
        "typer",
        "time",
        "rich",
        "google",
        "numpy",
        "os",
        "socket",
        "subprocess",
        "threading",
    ),
    "leaderboard.ratings": ("sqlmodel", "sqlalchemy", "grpc", "docker"),
    "sdk": ("docker", "sqlmodel", "sqlalchemy", "typer", "fastapi", "rich"),
}


def layer_of(module: str) -> int | None:
    """Index of the layer ``module`` belongs to (None: not a project module)."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None else best[1]


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            name = ".".join(rel.parts).removesuffix(".__init__")
            found.append((name, path))
    return found


def imports_of(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                relative = "." * node.level + (node.module or "")
                names.add(importlib.util.resolve_name(relative, package))
            elif node.module:
                names.add(node.module)
    return names


def _hits(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _third_party_rules(module: str) -> tuple[str, ...]:
    matches = [p for p in FORBIDDEN_THIRD_PARTY if _hits(module, (p,))]
    return FORBIDDEN_THIRD_PARTY[max(matches, key=len)] if matches else ()


@pytest.mark.parametrize(("module", "path"), modules(), ids=lambda v: str(v))
def test_module_imports_only_its_layer_and_those_below(module: str, path: Path) -> None:
    own = layer_of(module)
    assert own is not None, f"{module} belongs to no layer"
    imported = imports_of(path, module)
    above = sorted(
        f"{name} ({LAYERS[layer][0]})"
        for name in imported
        if (layer := layer_of(name)) is not None and layer > own
    )
    assert not above, f"{module} ({LAYERS[own][0]}) imports from layers above it: {above}"
    bad = sorted(n for n in imported if _hits(n, _third_party_rules(module)))
    assert not bad, f"{module} imports {bad}"


def test_every_layer_has_modules() -> None:
    names = {m for m, _ in modules()}
    for title, prefixes in LAYERS:
        assert any(layer_of(n) == LAYERS.index((title, prefixes)) for n in names), title


def test_the_layer_test_catches_an_upward_import() -> None:
    assert layer_of("referee.match") == 3 and layer_of("sdk.tools.check") == 8
    assert layer_of("referee.protocol.wire") == 1 and layer_of("sdk.server") == 2
    assert layer_of("arena.db.games") == 5 and layer_of("leaderboard.web.app") == 6
    assert layer_of("arena.service.app") == 7 and layer_of("arena.tournament.runner") == 5
