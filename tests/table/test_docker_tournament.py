"""Issue 18, done-when: a 3- and a 4-player tournament of the example bots at the classic
table, from the command line under Docker, killed with ``kill -9`` mid-run and resumed; its
leaderboard from the CLI and its replays on the web page in a real Chromium.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.db import games_of_series, open_database, series_of_tournament, stored_record
from leaderboard.web import create_app
from referee.replay import verify
from referee.series import game_deck
from sandbox.backend import Backend
from tests.web.test_browser import driver  # noqa: F401 - the Chromium fixture
from tests.webserver import served

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"


def kryt(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kryt", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def counted(url: str, tournament_id: int) -> int:
    db = open_database(url, create=False)
    try:
        with db.read_session() as session:
            return sum(
                len(games_of_series(s.id or 0, session=session))
                for s in series_of_tournament(tournament_id, session=session)
            )
    finally:
        db.close()


def run_killed_then_resumed(
    bots: list[str], size: int, games: int, url: str, tmp: Path, env: dict[str, str]
) -> tuple[int, str]:
    """``kryt tournament run`` killed with -9 after two counted games, then resumed."""
    args = [
        "tournament", "run", *bots, "--ruleset", "classic", "--table-size", str(size),
        "-n", str(games), "--backend", "docker", "--move-seconds", "0.05",
        "--bank-seconds", "5", "-j", "2", "--seed", str(size),
        "--name", f"table-{size}", "--database", url, "--store", str(tmp / "store"),
    ]  # fmt: skip
    log = (tmp / f"run-{size}.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "kryt", *args],
        cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    tournament_id = None
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            text = (tmp / f"run-{size}.log").read_text()
            found = re.search(r"tournament (\d+) created", text)
            if found:
                tournament_id = int(found.group(1))
                if counted(url, tournament_id) >= 2:
                    break
            assert process.poll() is None, f"the run ended before it could be killed:\n{text}"
            time.sleep(0.2)
        else:
            pytest.fail("no two games were recorded within 300 s")
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait(30)
        log.close()
    assert tournament_id is not None
    before = counted(url, tournament_id)
    resumed = kryt(
        "tournament", "resume", str(tournament_id), "--database", url,
        "--store", str(tmp / "store"), env=env, cwd=tmp,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert before < counted(url, tournament_id)
    return tournament_id, resumed.stdout


@pytest.fixture(scope="module")
def tables(
    docker_backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, dict[int, int]]]:
    """A database holding a 3-player and a 4-player tournament: (url, {size: id})."""
    tmp = tmp_path_factory.mktemp("tables")
    extra = tmp / "random2"
    shutil.copytree(EXAMPLES / "random", extra)
    toml = extra / "bot.toml"
    toml.write_text(toml.read_text().replace('name = "random"', 'name = "random2"'))
    url = f"sqlite:///{tmp / 'kryt.db'}"
    env = dict(os.environ)
    env["KRYT_SANDBOX_BASE_IMAGE"] = getattr(docker_backend, "base_image", "")
    env["PYTHONPATH"] = str(ROOT)
    three = [str(EXAMPLES / n) for n in ("random", "greedy", "mc")]
    ids = {}
    outputs = {}
    ids[3], outputs[3] = run_killed_then_resumed(three, 3, 3, url, tmp, env)
    ids[4], outputs[4] = run_killed_then_resumed([*three, str(extra)], 4, 2, url, tmp, env)
    for size, text in outputs.items():
        assert "Leaderboard" in text and "random" in text, (size, text)
    yield url, ids


@pytest.mark.docker
def test_every_seating_plays_its_games_once_and_every_game_replays(
    tables: tuple[str, dict[int, int]],
) -> None:
    url, ids = tables
    db = open_database(url, create=False)
    with db.read_session() as session:
        for size, tournament_id in ids.items():
            series = series_of_tournament(tournament_id, session=session)
            # Every set of `size` entrants, every clockwise order: (n-1)! series per set.
            assert len(series) == {3: 2, 4: 6}[size]
            orders = {tuple(s.seats or ()) for s in series}
            assert len(orders) == len(series)
            rotations = {o[i:] + o[:i] for o in orders for i in range(size)}
            assert len(rotations) == size * len(orders)  # no two series are the same cycle
            for s in series:
                assert s.status == "finished" and s.ruleset == "classic"
                games = games_of_series(s.id or 0, session=session)
                assert [g.number for g in games] == list(range(1, s.games_planned + 1))
                for g in games:
                    assert g.players == size and g.seats == s.seats
                    assert g.deck == [str(c) for c in game_deck(s.seed, g.number)]
                    check = verify(stored_record(g))
                    assert check.ok, (g.id, check.problems)
                # The loser deals the next game; a game without one keeps the dealer.
                for a, b in itertools.pairwise(games):
                    assert b.dealer == (a.dealer if a.loser_seat is None else a.loser_seat)
    db.close()


@pytest.mark.docker
def test_leaderboard_per_ruleset_and_table_size(
    tables: tuple[str, dict[int, int]], tmp_path: Path
) -> None:
    url, _ids = tables
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for size, bots in ((3, {"random", "greedy", "mc"}), (4, {"random", "greedy", "mc", "random2"})):
        shown = kryt(
            "leaderboard", "--ruleset", "classic", "--table-size", str(size), "--json",
            "--database", url, env=env, cwd=tmp_path,
        )  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        import json

        rows = json.loads(shown.stdout)["rows"]
        assert {r["bot"] for r in rows} == bots
        # Pairwise record: every game gives each bot one result per other seat.
        assert all(r["games"] > 0 and r["wins"] + r["draws"] + r["losses"] == r["games"]
                   for r in rows)  # fmt: skip
    default = kryt("leaderboard", "--json", "--database", url, env=env, cwd=tmp_path)
    assert default.returncode == 0 and __import__("json").loads(default.stdout)["rows"] == []


@pytest.fixture
def site(tables: tuple[str, dict[int, int]]) -> Iterator[tuple[str, dict[int, int]]]:
    url, ids = tables
    db = open_database(url, create=False)
    try:
        with served(create_app(db)) as url_:
            yield url_, ids
    finally:
        db.close()


@pytest.mark.docker
@pytest.mark.browser
def test_table_leaderboard_and_replays_in_chromium(
    driver: Any,  # noqa: F811 - the imported fixture
    site: tuple[str, dict[int, int]],
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base, ids = site
    for size, tournament_id in ids.items():
        driver.get(f"{base}/tournaments/{tournament_id}")
        rows = driver.find_elements(By.CSS_SELECTOR, "#standings tbody tr")
        assert len(rows) == size
        link = driver.find_element(By.CSS_SELECTOR, "a.game-link")
        link.click()
        # The game's page loads in its own time (slowly on a busy machine): wait for it.
        waited = time.monotonic() + 60
        while not driver.find_elements(By.ID, "replay-data") and time.monotonic() < waited:
            time.sleep(0.1)
        assert driver.find_elements(By.ID, "replay-data"), (
            driver.current_url,
            driver.page_source[:3000],
        )
        data = driver.execute_script(
            "return JSON.parse(document.getElementById('replay-data').textContent)"
        )
        steps = data["replay"]["steps"]
        assert data["seats"] == size and data["replay"]["error"] is None
        seats = driver.find_elements(By.CSS_SELECTOR, "#table .seat-row")
        assert len(seats) == size
        label = driver.find_element(By.ID, "step-label")
        assert label.text == f"Step 0 / {len(steps) - 1}"
        # Step 0: every seat holds three cards, nothing on the table.
        for s in range(size):
            hand = driver.find_elements(By.CSS_SELECTOR, f"#seat-{s}-hand .card")
            assert len(hand) == len(steps[0]["hands"][s]) == 3
        driver.find_element(By.ID, "btn-next").click()
        led = driver.find_element(By.ID, "led")
        assert led.get_attribute("data-cards") == " ".join(steps[1]["led"]) != ""
        # A seat's view: its own hand shown, the others' unseen cards face down.
        Select(driver.find_element(By.ID, "view-select")).select_by_value("1")
        mine = [e.get_attribute("data-card")
                for e in driver.find_elements(By.CSS_SELECTOR, "#seat-1-hand .card")]  # fmt: skip
        assert sorted(mine) == sorted(steps[1]["hands"][1])
        other = [e.get_attribute("data-card")
                 for e in driver.find_elements(By.CSS_SELECTOR, "#seat-0-hand .card")]  # fmt: skip
        assert other.count("?") == len(steps[1]["hands"][0]) - len(steps[1]["known"][0])
        driver.find_element(By.ID, "btn-last").click()
        assert driver.find_element(By.ID, "final").is_displayed()
        assert "Result:" in driver.find_element(By.ID, "final").text
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert not severe, severe
        artifacts = ROOT / "artifacts"
        artifacts.mkdir(exist_ok=True)
        assert driver.save_screenshot(str(artifacts / f"table-{size}.png"))
