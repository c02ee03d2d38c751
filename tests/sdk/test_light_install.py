"""A bot author's install is light: a fresh venv with only the base install (no extras) can
write, serve and check a bot, and the runner's heavy dependencies are not there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("referee", "sdk", "sandbox", "leaderboard", "kryt", "kryt_proto")

SCRIPT = textwrap.dedent(
    """
    import importlib.util, subprocess, sys
    from pathlib import Path

    heavy = [m for m in ("docker", "sqlmodel", "typer", "fastapi", "numpy", "grpc_tools")
             if importlib.util.find_spec(m) is not None]
    assert not heavy, f"base install pulled in {heavy}"

    import kryt_proto.v1.bot_pb2, referee.rules, sdk
    from sdk.tools.check import check_bot
    from sdk.tools.template import new_bot

    assert Path(sdk.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), sdk.__file__
    folder = new_bot("light", Path(sys.argv[1]))
    done = subprocess.run([sys.executable, "test_bot.py"], cwd=folder, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    report = check_bot(folder, games=2)
    assert report.ok, report.format()
    print("LIGHT INSTALL OK")
    """
)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_base_install_writes_serves_and_checks_a_bot(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(src)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    unreachable = "No matching distribution" in install.stderr or "connection" in install.stderr
    require(
        install.returncode == 0 or not unreachable,
        "package index",
        f"pip could not fetch the base dependencies: {install.stderr[-500:]}",
    )
    assert install.returncode == 0, install.stdout + install.stderr
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [str(python), "-c", SCRIPT, str(work)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "LIGHT INSTALL OK" in done.stdout
