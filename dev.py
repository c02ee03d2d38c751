#!/usr/bin/env python3
"""Bootstrap and run Kryt Arena from a clean clone with nothing but Python 3.11+.

    python3 dev.py demo   # install into .venv, run a tournament of the bundled bots, show ratings
                          # (in the current folder: ./kryt.db, ./kryt-leaderboard/)
    python3 dev.py test   # install into .venv, run every quality gate and the whole test suite

The virtual environment lives in ``.venv`` next to this file; it is created on first use and
refreshed whenever ``pyproject.toml`` changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".kryt-installed"


def _run(*cmd: str | os.PathLike[str], cwd: Path = ROOT) -> int:
    """Run ``cmd`` in ``cwd`` (the repository root unless told) and return its exit code."""
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=cwd)


def ensure_venv() -> None:
    """Create ``.venv`` and install the project with its extras when pyproject changed."""
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py itself may be run by an older Python
        sys.exit(f"Kryt Arena needs Python 3.11 or newer; this is {sys.version.split()[0]}.")
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == wanted and PY.exists():
        return
    if not PY.exists():
        print(f"creating virtual environment in {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    if _run(PY, "-m", "pip", "install", "-q", "--upgrade", "pip") != 0:
        sys.exit("could not upgrade pip in .venv; check your network access to the package index")
    if _run(PY, "-m", "pip", "install", "-q", "-e", ".[arena,dev]") != 0:
        sys.exit("could not install Kryt Arena into .venv; see the pip output above")
    STAMP.write_text(wanted)


def test(extra: list[str]) -> int:
    """Every quality gate, then the whole pytest suite (services are required under CI)."""
    gates: list[tuple[str, list[str | os.PathLike[str]]]] = [
        ("ruff", [PY, "-m", "ruff", "check", "."]),
        ("ruff format", [PY, "-m", "ruff", "format", "--check", "."]),
        ("mypy --strict", [PY, "-m", "mypy", "."]),
        ("generated protocol is fresh", [PY, "scripts/gen_proto.py", "--check"]),
    ]
    failed = [name for name, cmd in gates if _run(*cmd) != 0]
    workers = os.environ.get("KRYT_TEST_WORKERS", "auto")
    # The slowest tests are listed so a run that nears CI's time limit shows where it went.
    rc = _run(PY, "-m", "pytest", "-n", workers, "--durations=25", *extra)
    if rc != 0:
        failed.append("pytest")
    if failed:
        print("FAILED: " + ", ".join(failed), flush=True)
        return 1
    print("all quality gates and tests passed", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"demo", "test", "setup"}:
        print(__doc__)
        return 2
    ensure_venv()
    command, rest = argv[0], argv[1:]
    if command == "setup":
        return 0
    if command == "test":
        return test(rest)
    # In the caller's folder, as README says: ./kryt.db and ./kryt-leaderboard/ are there
    # (and relative paths given to the demo mean what they say); the venv stays in the repo.
    return _run(BIN / "kryt", "demo", *rest, cwd=Path.cwd())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
