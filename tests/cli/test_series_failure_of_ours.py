"""A failure of ours in one series (a bug: anything the runner did not expect) ends that
series only: it is interrupted with what failed, the other series play on, nothing recorded
is lost, and ``resume`` finishes the tournament. It ended the whole run with a traceback
(CI saw it once from gRPC's shutdown of a stream)."""

from __future__ import annotations

import asyncio
import logging
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

import arena.tournament.runner as runner
from kryt.errors import ExitCode
from tests.cli.helpers import flat, kryt

RUN = [
    "tournament", "run", "builtin:random", "builtin:greedy", "greedy2",
    "--games", "2", "-j", "1", "--backend", "process", "--unsafe",
]  # fmt: skip
"""Three bots (three series), the third a copy of the greedy example (the bundled
Monte-Carlo bot is slow)."""
GREEDY = Path(__file__).resolve().parents[2] / "sdk" / "examples" / "greedy"


def _games_per_series(path: Path) -> dict[int, int]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "select series_id, count(*) from games where not voided group by series_id"
        ).fetchall()
    conn.close()
    return {int(series): int(count) for series, count in rows}


def test_a_failure_of_ours_ends_one_series_and_resume_plays_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(GREEDY, tmp_path / "greedy2", ignore=shutil.ignore_patterns("__pycache__"))
    manifest = tmp_path / "greedy2" / "bot.toml"
    manifest.write_text(manifest.read_text().replace('name = "greedy"', 'name = "greedy2"'))
    path = tmp_path / "kryt.db"
    where = ["--database", str(path)]
    real = runner._read_pair_start
    failed: list[int] = []

    def read_pair_start(task: runner.SeriesTask, *args: Any, **kwargs: Any) -> Any:
        if not failed:  # the first series to start fails, once
            failed.append(task.series_id)
            raise RuntimeError("a bug of ours \x1b[2J")
        return real(task, *args, **kwargs)

    monkeypatch.setattr(runner, "_read_pair_start", read_pair_start)
    code, out, err = kryt(capsys, *RUN, *where)
    assert code == ExitCode.FAILED, (out, err)
    assert failed
    (broken,) = failed
    said = flat(out + err)
    assert "Traceback" not in said
    assert f"series {broken} interrupted" in said, said
    assert "failed on our side (RuntimeError: a bug of ours" in said, said
    assert "\x1b" not in out + err  # what an exception says is shown with escapes visible
    assert "kryt tournament resume 1" in said, said
    counts = _games_per_series(path)
    assert broken not in counts and len(counts) == 2 and set(counts.values()) == {2}, counts

    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    resumed, out, err = kryt(capsys, "tournament", "resume", "1", *where)
    assert resumed == ExitCode.OK, (out, err)
    counts = _games_per_series(path)
    assert len(counts) == 3 and set(counts.values()) == {2}, counts


@pytest.mark.parametrize("stopping", [False, True], ids=["running", "stopping"])
def test_what_a_failure_is_told_depends_on_whether_the_run_is_stopping(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, stopping: bool
) -> None:
    """While the run goes on, a failure is ours, logged with its traceback; once it stops
    (Ctrl-C winds its event loop down under the series), it is the stop, told quietly."""

    async def failing(*args: Any) -> runner.SeriesOutcome:
        raise RuntimeError("cannot schedule new futures after shutdown")

    monkeypatch.setattr(runner, "_play_series", failing)
    stop = threading.Event()
    if stopping:
        stop.set()
    task = runner.SeriesTask("sqlite://", 1, 7, {}, "store")
    with caplog.at_level(logging.DEBUG, logger="arena.tournament.runner"):
        outcome = asyncio.run(runner.play_series_task_async(task, stop=stop))
    assert outcome.series_id == 7 and outcome.status == "interrupted"
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    if stopping:
        assert outcome.message == "the run stopped" and not errors
    else:
        assert outcome.message.startswith("failed on our side (RuntimeError: cannot schedule")
        assert len(errors) == 1 and errors[0].exc_info is not None
