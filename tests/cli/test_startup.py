"""``kryt`` starts fast (heavy imports wait for the command that needs them) and an SDK-only
install's ``kryt`` names the extra to install."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HEAVY = ("scipy", "numpy", "sqlmodel", "sqlalchemy", "fastapi", "docker", "dask", "distributed")


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_importing_the_cli_loads_no_heavy_module() -> None:
    done = _python("import json, sys; import kryt.cli; print(json.dumps(sorted(sys.modules)))")
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert "typer" in loaded  # the measurement is real: the CLI module was imported
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert heavy == [], f"kryt.cli imports {heavy} at start-up"
    commands = sorted(m for m in loaded if m.startswith("kryt.commands."))
    assert commands == [], f"command modules imported at start-up: {commands}"


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_kryt_help_is_fast() -> None:
    # The best of three runs of the CPU time the command costs: a busy machine stretches the
    # wall time of a start-up without bound, not the work it does. The target is well under
    # 0.5 s on an idle machine; the bound is generous.
    best = float("inf")
    for _ in range(3):
        start = _children_cpu_seconds()
        done = subprocess.run(
            [sys.executable, "-m", "kryt", "--help"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        best = min(best, _children_cpu_seconds() - start)
        assert done.returncode == 0, done.stderr
        assert "tournament" in done.stdout and "games" in done.stdout
    assert best < 1.5, f"kryt --help took {best:.2f}s of CPU"


def test_a_usage_error_loads_no_heavy_module() -> None:
    code = (
        "import json, sys\nfrom kryt.cli import main\n"
        "rc = main(['nope'])\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "print(json.dumps([rc, heavy]))"
    )
    done = _python(code)
    rc, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    assert rc == 2 and heavy == []
    assert "No such command" in done.stderr


def test_an_sdk_only_install_names_the_extra() -> None:
    # Block typer as a base install (grpcio and protobuf only) would lack it.
    code = "import sys; sys.modules['typer'] = None\nfrom kryt.cli import run\nrun()"
    done = _python(code, "--help")
    assert done.returncode == 3, done.stderr
    assert "pip install 'kryt-arena[arena]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_startup_benchmark_prints_a_time() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cli_startup.py"), "--runs", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "kryt --help" in done.stdout and " ms" in done.stdout
