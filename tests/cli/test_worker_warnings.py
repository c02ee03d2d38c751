"""A warning raised in the referee worker processes of ``-j 2`` is shown by the runner, once,
as ``-j 1`` shows it: every worker that starts an untrusted bot without isolation warns about
it, and each line used to be printed by every worker that did."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_each_workers_warning_is_shown_once(tmp_path: Path) -> None:
    names = ("a", "b", "c", "d")
    for name in names:
        shutil.copytree(ROOT / "sdk" / "examples" / "random", tmp_path / name)
        manifest = tmp_path / name / "bot.toml"
        manifest.write_text(manifest.read_text().replace('name = "random"', f'name = "{name}"'))
    done = subprocess.run(
        [sys.executable, "-m", "kryt", "tournament", "run", *names, "--games", "2",
         "--backend", "process", "--unsafe", "-j", "2",
         "--database", str(tmp_path / "kryt.db"), "--store", str(tmp_path / "store")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in names:
        line = f"warning: running untrusted bot '{name}' WITHOUT isolation (--unsafe)"
        assert done.stderr.count(line) == 1, done.stderr
