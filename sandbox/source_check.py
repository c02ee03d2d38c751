"""Compile-check a Python submission's sources before it is stored: a syntax error is found
at ``kryt submit`` with its file and line, not as a forfeit of every game later.

Compiling does not run the bot's code (no import, no top-level statement executes).
"""

from __future__ import annotations

from pathlib import Path

from sandbox.submission import Submission, SubmissionError


class SourceSyntaxError(SubmissionError):
    """A Python source of the submission does not compile."""


def check_python_sources(submission: Submission) -> None:
    """Raise :class:`SourceSyntaxError` for the first ``.py`` file that does not compile
    (Python submissions only), naming ``file:line:column`` and the compiler's message."""
    if submission.manifest.language != "python":
        return
    for name in submission.files:
        if not name.endswith(".py"):
            continue
        path = submission.root / name
        try:
            source = Path(path).read_bytes()
            compile(source, name, "exec", dont_inherit=True)
        except SyntaxError as exc:
            where = f"{name}:{exc.lineno or '?'}" + (f":{exc.offset}" if exc.offset else "")
            raise SourceSyntaxError(
                f"{where}: {type(exc).__name__}: {exc.msg}; the bot would crash at start", name
            ) from None
        except ValueError as exc:  # e.g. a null byte in the source
            raise SourceSyntaxError(f"{name}: does not compile: {exc}", name) from None
        except (RecursionError, MemoryError):  # the parser's or compiler's nesting limit
            raise SourceSyntaxError(
                f"{name}: does not compile: nested too deeply; the bot would crash at start", name
            ) from None
