"""gRPC's settings (``referee.GRPC_DEFAULTS``) are in place before gRPC is first imported.

gRPC reads them once, when it loads: a module of ours that imported grpc before the referee
package would run every connection of its process on gRPC's other transport (about twice
the CPU a decision, docs/benchmarks.md) without any error. Each entry point is imported
first thing in a fresh interpreter whose environment lacks the settings, and a hook records
the environment at the moment ``grpc`` is imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import referee

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, os, sys
seen = {}
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "grpc" and "grpc" not in seen:
            frame = sys._getframe(1)
            while frame is not None:  # importlib.util.find_spec("grpc") looks it up only
                code = frame.f_code
                if (
                    code.co_name == "find_spec"
                    and "importlib" in code.co_filename
                    and frame.f_locals.get("name") == "grpc"
                ):
                    return None
                frame = frame.f_back
            seen["grpc"] = {k: os.environ.get(k) for k in json.loads(sys.argv[2])}
        return None
sys.meta_path.insert(0, Watch())
import importlib
importlib.import_module(sys.argv[1])
after = {k: os.environ.get(k) for k in json.loads(sys.argv[2])}
print(json.dumps({"at_grpc_import": seen.get("grpc"), "after": after}))
"""

ENTRY_POINTS = [
    "referee.client",  # the referee's connection to a bot
    "sdk",  # what a Python bot imports
    "sdk.server",
    "sdk.__main__",
    "sandbox",
    "sandbox.backend",
    "arena.tournament.runner",
    "arena.tournament.dask_executor",
    "arena.service.ladder",
    "kryt.cli",
]


def _probe(module: str, env: dict[str, str]) -> dict[str, dict[str, str | None] | None]:
    names = json.dumps(sorted(referee.GRPC_DEFAULTS))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, module, names],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, dict[str, str | None] | None] = json.loads(done.stdout.splitlines()[-1])
    return result


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in referee.GRPC_DEFAULTS}


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_the_defaults_are_set_before_grpc_loads(module: str) -> None:
    found = _probe(module, _clean_env())
    assert found["after"] == referee.GRPC_DEFAULTS
    # Modules that load gRPC lazily (the CLI) may not import it at all; when they do, the
    # settings must already be there.
    if found["at_grpc_import"] is not None:
        assert found["at_grpc_import"] == referee.GRPC_DEFAULTS, module


def test_an_explicit_setting_wins() -> None:
    env = _clean_env()
    env["GRPC_EXPERIMENTS"] = ""  # gRPC's own defaults, on purpose
    found = _probe("referee.client", env)
    assert found["at_grpc_import"] is not None
    assert found["at_grpc_import"]["GRPC_EXPERIMENTS"] == ""
    assert found["at_grpc_import"]["GRPC_ENABLE_FORK_SUPPORT"] == "false"


def test_the_referee_connection_module_loads_grpc() -> None:
    """The probe can fail: importing the client does import grpc (else the check above would
    pass vacuously for it)."""
    assert _probe("referee.client", _clean_env())["at_grpc_import"] is not None


def test_a_grpcio_release_not_measured_keeps_its_transport(tmp_path: Path) -> None:
    """On a grpcio release not measured with the older transport the switch is left alone:
    one that no longer knows it would print "Unknown experiment" in every process's log."""
    fake = tmp_path / "grpc"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "_grpcio_metadata.py").write_text('__version__ = """9.1.0"""\n')
    env = _clean_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    script = (
        "import json, os, referee; print(json.dumps([referee.grpcio_version(),"
        " os.environ.get('GRPC_EXPERIMENTS'), os.environ.get('GRPC_ENABLE_FORK_SUPPORT')]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [[9, 1], None, "false"]


def test_the_installed_grpcio_is_read_without_importing_it() -> None:
    script = (
        "import sys, referee; print(referee.grpcio_version() is not None, 'grpc' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["True", "False"], done.stderr


def test_the_settings_in_force_are_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRPC_EXPERIMENTS", "")
    monkeypatch.delenv("GRPC_ENABLE_FORK_SUPPORT")
    assert referee.grpc_settings() == "GRPC_ENABLE_FORK_SUPPORT=None, GRPC_EXPERIMENTS=''"
