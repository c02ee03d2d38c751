"""Defects of the seventh CLI audit: ``kryt demo --html`` to a folder that cannot be used,
``kryt bot check --backend`` with an unknown name, ``kryt bot new --dir`` (and
``python -m sdk.tools new --dir``) that cannot be created, the ``sandbox:`` line of
``kryt bot check`` printed twice, and ``python3 dev.py demo`` writing into the repository
instead of the caller's folder. Each error is one ``error:`` line with exit code 2, and
nothing is played or written."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kryt.errors import ExitCode
from tests.cli.helpers import kryt

REPO = Path(__file__).resolve().parents[2]


def one_error(err: str) -> str:
    """The single ``error:`` line of ``err``, which has no traceback and nothing but that
    line and at most a ``hint:`` line."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 2, err
    assert lines[0].startswith("error: "), err
    assert len(lines) == 1 or lines[1].startswith("hint: "), err
    return lines[0]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KRYT_DATABASE_URL", raising=False)
    return tmp_path


# --- kryt demo --html ----------------------------------------------------------------------


@pytest.mark.parametrize("where", ["afile", "afile/sub"])
def test_demo_html_that_cannot_be_a_folder_is_one_line_before_any_game(
    where: str,
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kryt.commands.demo as demo

    def no_games(*args: object, **kwargs: object) -> None:
        raise AssertionError("the demo played games before checking --html")

    monkeypatch.setattr(demo, "create", no_games)
    monkeypatch.setattr(demo, "run_tournament", no_games)
    (workdir / "afile").write_text("x\n")
    code, out, err = kryt(capsys, "demo", "-n", "2", "-d", "demo.db", "--html", where)
    line = one_error(err)
    assert code == ExitCode.BAD_INPUT
    assert "afile" in line and ("not a folder" in line or "Not a directory" in line), line
    assert out == ""
    assert not (workdir / "demo.db").exists()  # nothing stored: the database is not opened
    assert (workdir / "afile").read_text() == "x\n"


# --- kryt bot check --backend ----------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--backend", "--sandbox"])
def test_bot_check_with_an_unknown_backend_is_one_line_exit_2(
    flag: str, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = kryt(capsys, "bot", "new", "mybot")
    assert code == ExitCode.OK, err
    code, out, err = kryt(capsys, "bot", "check", "mybot", "-n", "1", flag, "bogus")
    line = one_error(err)
    assert code == ExitCode.BAD_INPUT
    assert line.startswith("error: --backend: unknown sandbox backend 'bogus'"), line
    assert "or none" in line  # the check's own extra choice is named too
    assert out == ""
    # The same mistake in kryt play reads the same way.
    code, _, err = kryt(capsys, "play", "mybot", "builtin:greedy", "--backend", "bogus")
    assert code == ExitCode.BAD_INPUT
    assert one_error(err).startswith("error: --backend: unknown sandbox backend 'bogus'")


# --- kryt bot new --dir / python -m sdk.tools new --dir ------------------------------------


def _uncreatable(workdir: Path, kind: str) -> Path:
    (workdir / "afile").write_text("x\n")
    if kind == "file":
        return workdir / "afile"
    if kind == "under a file":
        return workdir / "afile" / "sub"
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    return Path("/proc/kryt-audit-x")  # not even root may create a folder in /proc


KINDS = ["file", "under a file", "/proc"]


def _unchanged(workdir: Path) -> None:
    assert sorted(p.name for p in workdir.iterdir()) == ["afile"]
    assert (workdir / "afile").read_text() == "x\n"


@pytest.mark.parametrize("language", ["python", "go"])
@pytest.mark.parametrize("kind", KINDS)
def test_bot_new_in_a_folder_that_cannot_be_created_is_one_line_exit_2(
    kind: str, language: str, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = _uncreatable(workdir, kind)
    code, out, err = kryt(
        capsys, "bot", "new", "newbot", "--dir", str(parent), "--language", language
    )
    line = one_error(err)
    assert code == ExitCode.BAD_INPUT
    assert line.startswith("error: cannot create bot 'newbot': "), line
    assert "hint: choose another name or folder" in err
    assert out == ""
    _unchanged(workdir)
    assert not (parent / "newbot").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_sdk_tools_new_in_a_folder_that_cannot_be_created_is_one_line_exit_2(
    kind: str, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sdk.tools.__main__ import main

    parent = _uncreatable(workdir, kind)
    code = main(["new", "newbot", "--dir", str(parent)])
    out, err = capsys.readouterr()
    assert code == 2
    assert one_error(err).startswith("error: cannot create bot 'newbot': "), err
    assert out == ""
    _unchanged(workdir)


def test_bot_new_that_fails_while_writing_leaves_nothing_behind(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folders made for the bot (the parents too) go again when a file cannot be written."""
    import errno

    import sdk.tools.template as template

    class FullDisk:
        def substitute(self, **values: str) -> str:
            raise OSError(errno.ENOSPC, "No space left on device", "README.md")

    monkeypatch.setattr(template, "_README", FullDisk())
    code, _, err = kryt(capsys, "bot", "new", "newbot", "--dir", "deep/er")
    line = one_error(err)
    assert code == ExitCode.BAD_INPUT
    assert line == "error: cannot create bot 'newbot': README.md: No space left on device"
    assert list(workdir.iterdir()) == []


# --- kryt bot check: the sandbox line -------------------------------------------------------


def test_bot_check_names_the_sandbox_once(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sdk.tools.check as check

    def checked(target: str, **options: object) -> check.CheckReport:
        assert options["sandbox"] == "process"
        return check.CheckReport(
            target=target, name="mybot", version="0.1.0", sandbox="process: a plain process"
        )

    monkeypatch.setattr(check, "check_bot", checked)
    code, out, err = kryt(capsys, "bot", "check", "mybot", "--backend", "process")
    assert code == ExitCode.OK, (out, err)
    assert (out + err).count("sandbox: process: a plain process") == 1, (out, err)


# --- python3 dev.py demo ---------------------------------------------------------------------


def _fake_repo(root: Path) -> Path:
    """A copy of dev.py whose venv is already "installed": its python and kryt only print
    the folder they run in (nothing is installed or run for real)."""
    repo = root / "repo"
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy(REPO / "dev.py", repo / "dev.py")
    shutil.copy(REPO / "pyproject.toml", repo / "pyproject.toml")
    for name in ("python", "kryt"):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\necho "{name} ran in $(pwd -P)"\n')
        script.chmod(0o755)
    stamp = hashlib.sha256((repo / "pyproject.toml").read_bytes()).hexdigest()
    (repo / ".venv" / ".kryt-installed").write_text(stamp)
    return repo


@pytest.mark.skipif(os.name == "nt", reason="the fake venv holds shell scripts")
def test_dev_py_demo_runs_in_the_callers_folder_and_test_in_the_repository(
    tmp_path: Path,
) -> None:
    repo = _fake_repo(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "KRYT_DATABASE_URL"}

    def dev(*args: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, str(repo / "dev.py"), *args],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, (done.stdout, done.stderr)
        return [line for line in done.stdout.splitlines() if " ran in " in line]

    # README: the demo "stores everything in ./kryt.db": the folder the user is in.
    assert dev("demo", "--games", "2") == [f"kryt ran in {elsewhere.resolve()}"]
    # The quality gates and the tests still run in the repository.
    ran = dev("test")
    assert ran and all(line == f"python ran in {repo.resolve()}" for line in ran), ran
