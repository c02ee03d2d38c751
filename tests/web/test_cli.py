"""``kryt leaderboard``: the table, --json, --tournament, --html, serve, and clear errors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.db import open_database
from kryt.commands.leaderboard import app
from kryt.errors import ExitCode
from leaderboard.standings import standings
from tests.web.world import RUNNING_NAME, World

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]


def test_table_lists_every_column_and_row_in_rank_order(sqlite_world: tuple[str, World]) -> None:
    path, _ = sqlite_world
    result = runner.invoke(app, ["--database", path])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for header in ("Bot", "Version", "Rating", "±", "Elo", "Games", "W/D/L", "Score%", "LOS"):
        assert header in out
    assert "Forfeits" in out
    with open_database(path, create=False) as db, db.read_session() as session:
        rows = standings(session=session).rows
    lines = {
        row.bot: next(line for line in out.splitlines() if f" {row.bot} " in line) for row in rows
    }
    assert [out.index(lines[r.bot]) for r in rows] == sorted(out.index(lines[r.bot]) for r in rows)
    for row in rows:
        line = lines[row.bot]
        assert row.rating is not None and f"{row.rating:.0f}" in line
        assert f"{row.wins}/{row.draws}/{row.losses}" in line
        assert f"{100 * row.score:.1f}" in line
    assert "timeout 1" in lines["charlie"]
    assert "18/21 games played" in out


def test_json_is_the_standings_of_the_chosen_tournament(sqlite_world: tuple[str, World]) -> None:
    path, world = sqlite_world
    result = runner.invoke(
        app, ["--json", "--tournament", str(world.running_tournament), "--db", path]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    with open_database(path, create=False) as db, db.read_session() as session:
        expected = standings(session=session, tournament_id=world.running_tournament)
    assert data["rows"] == expected.to_dict()["rows"]
    assert {r["bot"] for r in data["rows"]} == {"bravo", "charlie"}
    assert data["tournament"]["name"] == RUNNING_NAME
    assert data["progress"]["games_done"] == 3 and data["model"]["name"] == "bayeselo"


def test_tournament_table_has_its_name_in_the_title(sqlite_world: tuple[str, World]) -> None:
    path, world = sqlite_world
    result = runner.invoke(app, ["-t", str(world.running_tournament), "--db", path])
    assert result.exit_code == 0, result.output
    assert RUNNING_NAME in result.stdout and "alpha" not in result.stdout
    assert "3/6 games played" in result.stdout


def test_unknown_tournament_is_one_error_line(sqlite_world: tuple[str, World]) -> None:
    path, _ = sqlite_world
    result = runner.invoke(app, ["--tournament", "404", "--db", path])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.stderr.strip() == "error: no tournament with id 404"
    assert result.stdout == ""


def test_missing_database_is_reported_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here.db"
    for args in ([], ["--json"], ["--html", str(tmp_path / "site")], ["serve"]):
        result = runner.invoke(
            app,
            [*args, "--db", str(missing)] if args != ["serve"] else ["serve", "--db", str(missing)],
        )
        assert result.exit_code == ExitCode.UNAVAILABLE, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: no database at ")
        assert str(missing) in lines[0]
        assert not missing.exists()


def test_default_database_is_kryt_db_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KRYT_DATABASE_URL", raising=False)
    result = runner.invoke(app, [])
    assert result.exit_code == ExitCode.UNAVAILABLE
    assert "kryt.db" in result.stderr and not (tmp_path / "kryt.db").exists()


def test_html_export(sqlite_world: tuple[str, World], tmp_path: Path) -> None:
    path, world = sqlite_world
    out = tmp_path / "public"
    result = runner.invoke(app, ["--html", str(out), "--db", path])
    assert result.exit_code == 0, result.output
    assert "wrote 29 pages" in result.stdout
    assert (out / "index.html").is_file() and (out / "games" / f"{world.drawn_game}.html").is_file()
    clash = tmp_path / "file"
    clash.write_text("x")
    result = runner.invoke(app, ["--html", str(clash), "--db", path])
    assert result.exit_code == ExitCode.BAD_INPUT and "not a folder" in result.stderr


def test_html_with_json_or_tournament_is_refused(
    sqlite_world: tuple[str, World], tmp_path: Path
) -> None:
    path, _ = sqlite_world
    for extra in (["--json"], ["--tournament", "1"]):
        result = runner.invoke(app, ["--html", str(tmp_path / "out"), *extra, "--db", path])
        assert result.exit_code == ExitCode.BAD_INPUT
        assert "--html exports every tournament" in result.stderr
    assert not (tmp_path / "out").exists()


def test_empty_database_says_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    open_database(path).close()
    result = runner.invoke(app, ["--db", str(path)])
    assert result.exit_code == 0 and "no games recorded yet" in result.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_serve_prints_the_url_and_answers(sqlite_world: tuple[str, World]) -> None:
    path, world = sqlite_world
    port = _free_port()
    code = "import sys; from kryt.commands.leaderboard import app; app(sys.argv[1:])"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--port", str(port), "--db", path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in line, line
        deadline = time.monotonic() + 60  # a busy machine may start the server slowly
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/leaderboard") as r:
                    data = json.load(r)
                break
            except OSError:
                assert time.monotonic() < deadline, "server did not answer"
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.2)
        assert len(data["rows"]) == 3
        url = f"http://127.0.0.1:{port}/games/{world.won_game}"
        with urllib.request.urlopen(url) as r:
            assert "replay-data" in r.read().decode()
        # A second server on the same port: one clear line, not a traceback.
        busy = runner.invoke(app, ["serve", "--port", str(port), "--db", path])
        assert busy.exit_code == ExitCode.UNAVAILABLE
        assert busy.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_serve_takes_the_database_given_before_it(
    sqlite_world: tuple[str, World], monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    path, _ = sqlite_world
    calls: list[tuple[str, int, object]] = []

    def fake_run(app: object, *, host: str, port: int, **_: object) -> None:
        calls.append((host, port, app))

    monkeypatch.setattr(uvicorn, "run", fake_run)
    port = _free_port()
    result = runner.invoke(app, ["--db", path, "serve", "--host", "127.0.0.1", "--port", str(port)])
    assert result.exit_code == 0, result.output
    assert f"at http://127.0.0.1:{port}/" in result.stdout and path in result.stdout
    ((host, used_port, served),) = calls
    assert (host, used_port) == ("127.0.0.1", port)
    assert served.__class__.__name__ == "FastAPI"
