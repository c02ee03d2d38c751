"""The package dependency picture holds: cli → tournament → referee/sandbox/leaderboard → rules.

Every import in every module (including imports inside functions) is checked against the
layer rules below, so a shortcut through the layers fails here rather than in review.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("referee", "sdk", "sandbox", "leaderboard", "kryt")

# module prefix -> project modules it must NOT import (prefix match)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "referee.rules": (
        "referee.match",
        "referee.series",
        "referee.tournament",
        "referee.slots",
        "sdk",
        "sandbox",
        "leaderboard",
        "kryt",
        "kryt_proto",
    ),
    # The SDK may validate manifests and start bots through ``sandbox`` (base install).
    "sdk": ("referee.tournament", "leaderboard", "kryt"),
    "sandbox": ("referee", "leaderboard", "kryt"),
    "leaderboard.db": (
        "referee",
        "sdk",
        "sandbox",
        "kryt",
        "leaderboard.ratings",
        "leaderboard.web",
        "leaderboard.standings",
    ),
    "leaderboard.ratings": (
        "referee",
        "sdk",
        "sandbox",
        "kryt",
        "leaderboard.db",
        "leaderboard.web",
    ),
    "leaderboard": ("referee.match", "referee.series", "referee.tournament", "sandbox", "kryt"),
    "referee.match": ("referee.tournament", "sandbox", "leaderboard", "kryt"),
    "referee.series": ("referee.tournament", "sandbox", "leaderboard", "kryt"),
    "referee.slots": ("referee.tournament", "sandbox", "leaderboard", "kryt"),
    "referee.replay": ("referee.tournament", "sandbox", "leaderboard", "kryt", "sdk"),
    "referee.tournament": ("kryt",),
}
# third-party packages a layer must not import (the rules core: nothing with I/O or time)
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


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "examples" in path.parts or "template" in path.parts:
                continue
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


def _rules_for(module: str, table: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The rules of the most specific matching prefix."""
    matches = [p for p in table if module == p or module.startswith(p + ".")]
    return table[max(matches, key=len)] if matches else ()


def _hits(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize(("module", "path"), modules(), ids=lambda v: str(v))
def test_module_respects_the_layers(module: str, path: Path) -> None:
    imported = imports_of(path, module)
    bad = sorted(n for n in imported if _hits(n, _rules_for(module, FORBIDDEN)))
    assert not bad, f"{module} imports {bad}, which its layer must not depend on"
    bad3 = sorted(n for n in imported if _hits(n, _rules_for(module, FORBIDDEN_THIRD_PARTY)))
    assert not bad3, f"{module} imports {bad3}"


def test_the_layer_table_is_not_vacuous() -> None:
    names = {m for m, _ in modules()}
    for prefix in FORBIDDEN:
        assert any(n == prefix or n.startswith(prefix + ".") for n in names), prefix
