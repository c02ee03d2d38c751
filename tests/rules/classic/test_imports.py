"""The classic engine is part of the pure rules core: standard library only, nothing with I/O."""

from __future__ import annotations

import ast
from pathlib import Path

CLASSIC = Path(__file__).resolve().parents[3] / "referee" / "rules" / "classic"
ALLOWED = {"__future__", "collections", "dataclasses", "enum", "itertools", "random", "typing"}


def test_classic_engine_imports_only_the_standard_library_it_needs() -> None:
    sources = sorted(CLASSIC.glob("*.py"))
    assert {p.name for p in sources} >= {"game.py", "actions.py", "view.py", "__init__.py"}
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top == "referee" or top in ALLOWED, f"{source.name} imports {name}"
                if top == "referee":
                    assert name.startswith("referee.rules"), f"{source.name} imports {name}"
