"""The site in a real headless Chromium (Debian's chromium + chromedriver, driven by Selenium).

Serves the app with uvicorn on a free localhost port, follows a link from the leaderboard to
a game, steps the replay, switches the seat view and saves screenshots to ``artifacts/``.
Also opens the static export from disk. Requires Chromium (fails under CI without it; see
``.ci/provision/30-chromium.sh``, which exports KRYT_CHROMIUM and KRYT_CHROMEDRIVER).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from arena.db import open_database
from leaderboard.export import export_html
from leaderboard.web import create_app
from tests.services import require
from tests.web.world import World
from tests.webserver import served

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--window-size=1280,1400",
)


def _executable(env: str, *names: str) -> str | None:
    configured = os.environ.get(env)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return next((found for n in names if (found := shutil.which(n))), None)


@contextmanager
def chromium_session(page_load_timeout: float) -> Iterator[Any]:
    """A headless Chromium session (skipped locally, failed under CI, when missing)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        require(False, "Selenium", "pip install the 'dev' extra")
        raise
    chromium = _executable("KRYT_CHROMIUM", "chromium", "chromium-browser")
    chromedriver = _executable("KRYT_CHROMEDRIVER", "chromedriver")
    require(
        chromium is not None and chromedriver is not None,
        "Chromium",
        "apt-get install chromium chromium-driver (or set KRYT_CHROMIUM/KRYT_CHROMEDRIVER)",
    )
    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path: Selenium must not try to download one.
    browser = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    browser.set_page_load_timeout(page_load_timeout)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """A headless Chromium session for this module's pages."""
    with chromium_session(page_load_timeout=30) as browser:
        yield browser


@pytest.fixture
def server(sqlite_world: tuple[str, World]) -> Iterator[tuple[str, World]]:
    """The app over a filled database, served by uvicorn on a free port: (base URL, ids)."""
    path, world = sqlite_world
    db = open_database(path, create=False)
    try:
        with served(create_app(db)) as url:
            yield url, world
    finally:
        db.close()


def _wait(driver: Any, condition: Any, timeout: float = 30) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def _replay_data(driver: Any) -> dict[str, Any]:
    # The page embeds the steps packed; the viewer exposes them unpacked.
    data: dict[str, Any] = driver.execute_script(
        "var r = window.KRYT_REPLAY; var g = r.game; g.replay.steps = r.steps; return g;"
    )
    return data


def _no_script_errors(driver: Any) -> None:
    severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, f"browser console errors: {severe}"


def _shot(driver: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / name
    assert driver.save_screenshot(str(target)), f"could not save {target}"
    assert target.stat().st_size > 10_000  # a real rendering, not a blank file
    return target


def test_leaderboard_to_game_replay(driver: Any, server: tuple[str, World]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    base, world = server
    driver.get(base + "/")
    rows = driver.find_elements(By.CSS_SELECTOR, "#standings tbody tr")
    assert [r.find_element(By.CSS_SELECTOR, ".bot-link").text for r in rows] != []
    assert {r.find_element(By.CSS_SELECTOR, ".bot-link").text for r in rows} == {
        "alpha",
        "bravo",
        "charlie",
    }
    _shot(driver, "leaderboard.png")

    # Follow the link to the drawn game from the recent games.
    link = driver.find_element(By.CSS_SELECTOR, f'a.game-link[href="/games/{world.drawn_game}"]')
    link.click()
    _wait(
        driver,
        lambda d: d.current_url.endswith(f"/games/{world.drawn_game}") or "#step" in d.current_url,
    )
    data = _replay_data(driver)
    steps = data["replay"]["steps"]
    label = driver.find_element(By.ID, "step-label")
    assert label.text == f"Step 0 / {len(steps) - 1}"
    pile = driver.find_element(By.ID, "pile")
    assert pile.get_attribute("data-cards") == ""
    assert driver.find_element(By.ID, "btn-prev").get_attribute("disabled") is not None

    # Next: the first mover's lead lands on the pile.
    driver.find_element(By.ID, "btn-next").click()
    assert label.text == f"Step 1 / {len(steps) - 1}"
    first = pile.get_attribute("data-cards")
    assert first == " ".join(steps[1]["pile"]) and first != ""
    assert len(pile.find_elements(By.CSS_SELECTOR, ".card")) == len(steps[1]["pile"])
    # Keys step too; find a step where the pile differs from step 1.
    body = driver.find_element(By.TAG_NAME, "body")
    for _ in range(5):
        body.send_keys(Keys.ARROW_RIGHT)
    assert label.text == f"Step 6 / {len(steps) - 1}"
    assert pile.get_attribute("data-cards") == " ".join(steps[6]["pile"])
    assert pile.get_attribute("data-cards") != first or steps[6]["pile"] == steps[1]["pile"]
    driver.find_element(By.ID, "btn-prev").click()
    assert label.text == f"Step 5 / {len(steps) - 1}"

    # Revealed view: no hidden card anywhere.
    step = steps[5]
    assert driver.find_elements(By.CSS_SELECTOR, ".hand .card.back") == []
    shown = {
        e.get_attribute("data-card") for e in driver.find_elements(By.CSS_SELECTOR, ".hand .card")
    }
    assert shown == {*step["hands"][0], *step["hands"][1]}

    # Seat 0's view: own hand at the bottom, the opponent's private cards face down.
    Select(driver.find_element(By.ID, "view-select")).select_by_value("0")
    bottom = [
        e.get_attribute("data-card")
        for e in driver.find_elements(By.CSS_SELECTOR, "#bottom-hand .card")
    ]
    top = [
        e.get_attribute("data-card")
        for e in driver.find_elements(By.CSS_SELECTOR, "#top-hand .card")
    ]
    assert sorted(bottom) == sorted(step["hands"][0])
    public = [c for c in step["hands"][1] if c in step["known"][1]]
    assert sorted(c for c in top if c != "?") == sorted(public)
    assert top.count("?") == len(step["hands"][1]) - len(public)
    assert "seat 0" in driver.find_element(By.ID, "bottom-name").text
    # Seat 1's view mirrors it.
    Select(driver.find_element(By.ID, "view-select")).select_by_value("1")
    top = [
        e.get_attribute("data-card")
        for e in driver.find_elements(By.CSS_SELECTOR, "#top-hand .card")
    ]
    public0 = [c for c in step["hands"][0] if c in step["known"][0]]
    assert top.count("?") == len(step["hands"][0]) - len(public0)
    _shot(driver, "replay-seat1.png")

    # Last: the automatic final cover and the result.
    driver.find_element(By.ID, "btn-last").click()
    assert label.text == f"Step {len(steps) - 1} / {len(steps) - 1}"
    final = driver.find_element(By.ID, "final")
    assert final.is_displayed() and "draw by final answer" in final.text
    assert "automatic final cover" in driver.find_element(By.ID, "action-line").text
    assert driver.find_element(By.ID, "btn-next").get_attribute("disabled") is not None
    # Clicking a move in the list jumps there.
    driver.find_element(By.ID, "move-3").click()
    assert label.text == f"Step 3 / {len(steps) - 1}"
    _no_script_errors(driver)
    _shot(driver, "replay.png")


def test_static_export_works_from_disk(
    driver: Any, sqlite_world: tuple[str, World], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    path, world = sqlite_world
    out = tmp_path / "site"
    with open_database(path, create=False) as db:
        export_html(db, out)
    driver.get((out / "index.html").as_uri())
    driver.find_element(By.CSS_SELECTOR, f'a.game-link[href="games/{world.won_game}.html"]').click()
    label = driver.find_element(By.ID, "step-label")
    assert label.text.startswith("Step 0 / ")
    driver.find_element(By.ID, "btn-next").click()
    assert label.text.startswith("Step 1 / ")
    assert driver.find_element(By.ID, "pile").get_attribute("data-cards") != ""
    # The stylesheet loaded (relative path from games/): the board has its felt colour.
    felt = driver.find_element(By.CSS_SELECTOR, ".board").value_of_css_property("background-color")
    assert felt.replace(" ", "") in {"rgba(47,107,69,1)", "rgb(47,107,69)"}
    _no_script_errors(driver)
    _shot(driver, "export-replay.png")


def test_replay_highlights_moved_cards_and_autoplays(
    driver: Any, server: tuple[str, World]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base, world = server
    driver.get(f"{base}/games/{world.won_game}")
    steps = _replay_data(driver)["replay"]["steps"]
    label = driver.find_element(By.ID, "step-label")
    assert driver.find_elements(By.CSS_SELECTOR, ".card.moved") == []  # the deal: nothing moved
    # The moves list is drawn from the data: one row per step.
    assert len(driver.find_elements(By.CSS_SELECTOR, "#moves tbody tr")) == len(steps)
    for step in (1, 2, 3):
        driver.find_element(By.ID, "btn-next").click()
        assert label.text == f"Step {step} / {len(steps) - 1}"

        def place(s: dict[str, Any]) -> dict[str, str]:
            at = {c: "h0" for c in s["hands"][0]} | {c: "h1" for c in s["hands"][1]}
            at |= {c: "p" for c in s["pile"]}
            return at | ({s["face_up"]: "f"} if s["face_up"] else {})

        before, now = place(steps[step - 1]), place(steps[step])
        expected = sorted(c for c, where in now.items() if before.get(c) != where)
        shown = sorted(
            e.get_attribute("data-card")
            for e in driver.find_elements(By.CSS_SELECTOR, ".card.moved")
        )
        assert shown == expected and expected != []
        # The acting seat's card (a lead or a cover) is among them unless it took.
        action = steps[step]["action"]
        for word in action.split()[1:]:
            assert word in shown or action.startswith("swap")
    # Autoplay at 16x reaches the last step by itself and stops there.
    Select(driver.find_element(By.ID, "speed-select")).select_by_value("16")
    play = driver.find_element(By.ID, "btn-play")
    play.click()
    assert "Pause" in play.text
    _wait(driver, lambda d: label.text == f"Step {len(steps) - 1} / {len(steps) - 1}", 60)
    _wait(driver, lambda d: "Play" in play.text and "Pause" not in play.text)
    assert driver.find_element(By.TAG_NAME, "body").get_attribute("data-playing") is None
    # Pause holds the step.
    driver.find_element(By.ID, "btn-first").click()
    Select(driver.find_element(By.ID, "speed-select")).select_by_value("0.5")
    play.click()
    play.click()
    held = label.text

    time.sleep(2.5)
    assert label.text == held
    _no_script_errors(driver)


def test_the_leaderboard_fits_a_phone(driver: Any, server: tuple[str, World]) -> None:
    from selenium.webdriver.common.by import By

    base, _ = server
    driver.set_window_size(390, 844)
    try:
        driver.get(base + "/")
        width = driver.execute_script("return document.documentElement.clientWidth")
        first = driver.find_element(By.CSS_SELECTOR, "#standings tbody tr")
        for column in (".col-rating", ".col-forfeits"):
            cell = first.find_element(By.CSS_SELECTOR, column)
            rect = driver.execute_script("return arguments[0].getBoundingClientRect().right", cell)
            assert cell.is_displayed() and rect <= width + 1, (column, rect, width)
        for column in (".col-version", ".col-elo", ".col-los"):
            assert not first.find_element(By.CSS_SELECTOR, column).is_displayed()
        _shot(driver, "leaderboard-phone.png")
    finally:
        driver.set_window_size(1280, 1400)
