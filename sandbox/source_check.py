"""Compile-check a Python submission's sources before it is stored: a syntax error is found
at ``kryt submit`` with its file and line, not as a forfeit of every game later.

Compiling does not run the bot's code (no import, no top-level statement executes), but it is
not cheap: CPython's compiler needs some 400 bytes of memory per byte of source, so a 10 MiB
file (a 10 KiB zip) would take about 4 GB. The check therefore runs in a child process of its
own with a bound on its memory and CPU (the arena's server must not be the one to pay), and
compiles each regular file once: symlinks to a file are not compiled again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

from sandbox.submission import Submission, SubmissionError

COMPILE_MEMORY_BYTES: Final = 1024 * 1024 * 1024
"""The address space the compiling process may use: sources that need more would not start
in a sandbox either."""

COMPILE_CPU_SECONDS: Final = 60
"""CPU seconds the compiling process may use for all of a submission's sources."""

_CHILD: Final = r"""
import json, resource, sys
memory, cpu = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
for name, path in json.load(sys.stdin):
    print(json.dumps({"checking": name}), flush=True)
    try:
        with open(path, "rb") as source:
            compile(source.read(), name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        found = {"type": type(exc).__name__, "msg": exc.msg, "lineno": exc.lineno,
                 "offset": exc.offset}
    except ValueError as exc:
        found = {"value": str(exc)}
    except RecursionError:
        found = {"nested": True}
    except MemoryError:  # the parser's own stack overflow says this too
        found = {"memory": True}
    else:
        continue
    print(json.dumps({"failed": name, **found}), flush=True)
    break
print(json.dumps({"done": True}), flush=True)
"""
"""What the child runs: bounds itself first, then compiles each file it is given on standard
input, saying which before it starts (so a kill names the file) and what failed."""


_PYTHON: Final = (sys.executable, "-I", "-S")
"""This interpreter, isolated from the environment and without site packages (it only
compiles)."""


class SourceSyntaxError(SubmissionError):
    """A Python source of the submission does not compile."""


class SourceCheckError(SubmissionError):
    """The compile check itself could not run (a failure of ours, not the bot's)."""


def check_python_sources(submission: Submission) -> None:
    """Raise :class:`SourceSyntaxError` for the first ``.py`` file that does not compile
    (Python submissions only), naming ``file:line:column`` and the compiler's message, or
    that does not compile within :data:`COMPILE_MEMORY_BYTES` of memory and
    :data:`COMPILE_CPU_SECONDS` of CPU."""
    if submission.manifest.language != "python":
        return
    sources: list[tuple[str, str]] = []
    for name in submission.files:
        path = Path(submission.root / name)
        if name.endswith(".py") and not path.is_symlink() and path.is_file():
            sources.append((name, str(path)))
    if not sources:
        return
    lines = _compile_in_child(sources)
    last = next((line["checking"] for line in reversed(lines) if "checking" in line), None)
    failed = next((line for line in lines if "failed" in line), None)
    if failed is not None:
        raise _syntax_error(failed)
    if not any("done" in line for line in lines):  # killed: over its CPU (or memory) bound
        name = last or "a source"
        raise SourceSyntaxError(
            f"{name}: does not compile within {COMPILE_CPU_SECONDS} s of CPU and"
            f" {COMPILE_MEMORY_BYTES // (1024 * 1024)} MiB of memory; the bot would not start",
            last,
        )


def _compile_in_child(sources: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The JSON lines the compiling child printed (see :data:`_CHILD`)."""
    try:
        done = subprocess.run(
            [*_PYTHON, "-c", _CHILD, str(COMPILE_MEMORY_BYTES), str(COMPILE_CPU_SECONDS)],
            input=json.dumps(sources),
            capture_output=True,
            text=True,
            timeout=COMPILE_CPU_SECONDS * 4,  # wall: a busy machine, and the child's start
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            check=False,
        )
    except subprocess.TimeoutExpired:
        return []
    except OSError as exc:
        raise SourceCheckError(f"cannot start the compile check: {exc}") from None
    lines = []
    for text in done.stdout.splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict):
            lines.append(line)
    return lines


def _syntax_error(failed: dict[str, Any]) -> SourceSyntaxError:
    name = str(failed["failed"])
    if "type" in failed:
        lineno, offset = failed.get("lineno"), failed.get("offset")
        where = f"{name}:{lineno or '?'}" + (f":{offset}" if offset else "")
        return SourceSyntaxError(
            f"{where}: {failed['type']}: {failed['msg']}; the bot would crash at start", name
        )
    if "value" in failed:  # e.g. a null byte in the source
        return SourceSyntaxError(f"{name}: does not compile: {failed['value']}", name)
    if "nested" in failed:  # the parser's or compiler's nesting limit
        return SourceSyntaxError(
            f"{name}: does not compile: nested too deeply; the bot would crash at start", name
        )
    return SourceSyntaxError(  # MemoryError: too deep for the parser, or too big
        f"{name}: does not compile: nested too deeply, or too large to compile within"
        f" {COMPILE_MEMORY_BYTES // (1024 * 1024)} MiB of memory; the bot would crash at start",
        name,
    )
