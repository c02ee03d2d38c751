"""The arena server's pages in a real headless Chromium (Debian's chromium + chromedriver,
driven by Selenium), against a real server on loopback whose ladder is playing: the
leaderboard changes by itself while the ladder plays, a bot's page, and an author's private
log page (their bots' output per game and forfeits with reasons), reachable only when signed
in as that author. Requires Chromium (skipped locally, failed under CI, when missing)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.service.conftest import CHATTY_BOT, FLAKY_BOT, Arena, make_bot, submit
from tests.web.test_browser import chromium_session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WAIT_S = 240.0


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium session (skipped locally, failed under CI, when missing)."""
    with chromium_session(page_load_timeout=60) as driver:
        yield driver


@pytest.fixture(scope="module")
def site(sqlite_arena: Arena, tmp_path_factory: pytest.TempPathFactory) -> Arena:
    """The server with three accepted bots on its ladder: alpha (alice, prints to stderr),
    beta (bob, the random example) and gamma (carol, forfeits from game 3 of a series)."""
    folder = tmp_path_factory.mktemp("bots")
    for author, name, code in (
        ("alice", "alpha", CHATTY_BOT),
        ("bob", "beta", None),
        ("carol", "gamma", FLAKY_BOT),
    ):
        checked = submit(sqlite_arena, author, make_bot(folder / name, name, code=code))
        assert checked["status"] == "active", checked
    return sqlite_arena


def _wait(driver: Any, condition: Callable[[Any], Any], timeout: float = WAIT_S) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.5).until(condition)


def _games_shown(driver: Any) -> dict[str, int]:
    """Games per bot in the standings table as the page shows it now (read in one script:
    the live update may swap the table between two WebDriver calls)."""
    rows: list[list[str]] = driver.execute_script(
        "return Array.from(document.querySelectorAll('#standings tbody tr')).map("
        "r => [r.querySelector('.bot-link').textContent, r.querySelector('.col-games')"
        ".textContent]);"
    )
    shown: dict[str, int] = {}
    for name, games in rows:
        shown[name.strip()] = shown.get(name.strip(), 0) + int(games)
    return shown


def _no_script_errors(driver: Any) -> None:
    severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, f"browser console errors: {severe}"


def _sign_in(driver: Any, base: str, token: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(base + "/login")
    driver.find_element(By.NAME, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#login-form button[type=submit]").click()
    _wait(driver, lambda d: d.current_url.endswith("/me"), 30)


def test_the_leaderboard_updates_live_while_the_ladder_plays(browser: Any, site: Arena) -> None:
    browser.get(site.url + "/")
    # A mark on this very page: a reload (or navigation) would wipe it.
    browser.execute_script("window.krytSamePage = 'still here';")
    before = _games_shown(browser)
    after = _wait(
        browser,
        lambda d: (now := _games_shown(d)) and sum(now.values()) > sum(before.values()) and now,
    )
    assert browser.execute_script("return window.krytSamePage") == "still here"
    assert browser.find_element("tag name", "body").get_attribute("data-live-updated")
    assert set(after) <= {"alpha", "beta", "gamma"} and len(after) >= 2
    # Every game has two players: the standings count each game twice.
    assert sum(after.values()) % 2 == 0
    _no_script_errors(browser)


def test_a_bot_page_shows_versions_games_and_rating_history(browser: Any, site: Arena) -> None:
    from selenium.webdriver.common.by import By

    def played(d: Any) -> bool:
        d.get(site.url + "/bots/alpha")
        return bool(d.find_elements(By.CSS_SELECTOR, "a.game-link"))

    _wait(browser, played)
    versions = browser.find_element(By.ID, "versions").text
    assert "1.0.0" in versions and "active" in versions
    headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
    assert any(h.startswith("Rating history") for h in headings), headings
    assert browser.find_elements(By.CSS_SELECTOR, "svg.plot")
    link = browser.find_element(By.CSS_SELECTOR, "a.game-link")
    target = link.get_attribute("href")
    link.click()
    _wait(browser, lambda d: d.current_url == target, 30)
    assert browser.find_element(By.ID, "step-label").text.startswith("Step 0 / ")
    _no_script_errors(browser)


def test_an_authors_log_page_is_theirs_alone(browser: Any, site: Arena) -> None:
    from selenium.webdriver.common.by import By

    browser.delete_all_cookies()
    browser.get(site.url + "/me")
    assert browser.current_url.endswith("/login")  # not signed in: no logs

    # carol sees gamma's output and its forfeits with the reason, once it has forfeited.
    _sign_in(browser, site.url, site.tokens["carol"])

    def forfeited(d: Any) -> list[Any]:
        d.get(site.url + "/me")
        return list(d.find_elements(By.CSS_SELECTOR, ".game-log .forfeit"))

    forfeit = _wait(browser, forfeited)[0]
    assert forfeit.text.startswith("forfeit: malformed reply"), forfeit.text
    entry = forfeit.find_element(By.XPATH, "ancestor::div[contains(@class, 'game-log')]")
    assert "flaky gives up in game" in entry.find_element(By.CSS_SELECTOR, "pre.log").text
    page = browser.find_element(By.TAG_NAME, "body").text
    assert "carol" in browser.find_element(By.TAG_NAME, "h1").text
    assert "chatty thinking" not in page  # alice's bot's output is not carol's business
    browser.find_element(By.XPATH, "//button[text()='Sign out']").click()
    _wait(browser, lambda d: not d.current_url.endswith("/me"), 30)
    browser.get(site.url + "/me")
    assert browser.current_url.endswith("/login")  # signed out: no logs again

    # alice sees alpha's stderr per game, and nothing of gamma's.
    _sign_in(browser, site.url, site.tokens["alice"])

    def chatty(d: Any) -> bool:
        d.get(site.url + "/me")
        return "chatty thinking" in d.find_element(By.TAG_NAME, "body").text

    _wait(browser, chatty)
    logs = browser.find_elements(By.CSS_SELECTOR, ".game-log")
    assert logs and all("alpha" in e.find_element(By.TAG_NAME, "h3").text for e in logs)
    assert "flaky gives up" not in browser.find_element(By.TAG_NAME, "body").text
    _no_script_errors(browser)
