"""The compile check of a Python submission runs in a bounded child process, once per
regular file: a source too big to compile within its memory is refused (the arena's server
does not pay ~400 bytes of memory per byte of source), symlinks to a file are not compiled
again, and what compiles or does not is told as before."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from sandbox import source_check
from sandbox.source_check import SourceSyntaxError, check_python_sources
from sandbox.submission import load_submission

MANIFEST = 'name = "src"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'


def _bot(root: Path, files: dict[str, str], links: dict[str, str] | None = None) -> Path:
    root.mkdir()
    (root / "bot.toml").write_text(MANIFEST)
    for name, text in files.items():
        (root / name).write_text(text)
    for name, target in (links or {}).items():
        (root / name).symlink_to(target)
    return root


def test_a_source_too_big_to_compile_is_refused_outside_this_process(tmp_path: Path) -> None:
    root = _bot(tmp_path / "big", {"bot.py": "x = 1\n", "table.py": "a = 1\n" * 700_000})
    submission = load_submission(root)
    tracemalloc.start()
    try:
        with pytest.raises(SourceSyntaxError, match=r"^table\.py: does not compile: .*1024 MiB"):
            check_python_sources(submission)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024, f"the check cost {peak} bytes in this process"


def test_each_regular_file_is_compiled_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _bot(
        tmp_path / "linky",
        {"bot.py": "x = 1\n", "big.py": "a = 1\n" * 100},
        {f"l{n}.py": "big.py" for n in range(50)},
    )
    given: list[list[str]] = []
    real = source_check._compile_in_child

    def recording(sources: list[tuple[str, str]]) -> list[dict[str, Any]]:
        given.append([name for name, _ in sources])
        return real(sources)

    monkeypatch.setattr(source_check, "_compile_in_child", recording)
    check_python_sources(load_submission(root))
    assert given == [["big.py", "bot.py"]] or given == [["bot.py", "big.py"]], given


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(:\n", r"^bot\.py:1:7: SyntaxError: .*; the bot would crash at start$"),
        ("x = 1\n\tif x:\n", r"^bot\.py:2:\d+: IndentationError: "),
        ("x = '\0'\n", r"^bot\.py.*null bytes"),
        ("x = " + "-" * 200_000 + "1\n", r"^bot\.py: does not compile: nested too deeply"),
        ("x = (" + "1+" * 200_000 + "1)\n", r"^bot\.py: does not compile: nested too deeply"),
    ],
    ids=["syntax", "indentation", "null-byte", "deep-unary", "deep-sum"],
)
def test_what_does_not_compile_is_told_with_its_place(
    tmp_path: Path, source: str, message: str
) -> None:
    root = _bot(tmp_path / "bad", {"bot.py": source})
    with pytest.raises(SourceSyntaxError, match=message) as caught:
        check_python_sources(load_submission(root))
    assert caught.value.path == "bot.py"


def test_sources_that_compile_pass(tmp_path: Path) -> None:
    root = _bot(tmp_path / "good", {"bot.py": "import os\n\ndef act():\n    return 1\n"})
    check_python_sources(load_submission(root))  # raises nothing
