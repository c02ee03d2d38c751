"""The arena server end to end on loopback: submit with the CLI, validation games, the ladder
changing the leaderboard, an author's logs, and requests that must fail closed."""

from __future__ import annotations

import io
import re
import time
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.db import open_database
from arena.db.accounts import create_token
from arena.service.server import archive_of
from tests.service.conftest import CHATTY_BOT, CRASHING_BOT, Arena, kryt, make_bot
from tests.service.helpers import problem as _problem

pytestmark = pytest.mark.slow

WAIT_S = 240.0


def _until(what: str, check: Any, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def accepted(arena: Arena, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """alpha (alice, chatty) and beta (bob) submitted with ``kryt submit --server``."""
    folder = tmp_path_factory.mktemp("bots")
    outputs = {}
    for author, name, code in (("alice", "alpha", CHATTY_BOT), ("bob", "beta", None)):
        bot = make_bot(folder / name, name, code=code)
        done = kryt(
            "submit", str(bot), "--server", arena.url, env={"KRYT_TOKEN": arena.tokens[author]}
        )
        assert done.returncode == 0, done.stdout + done.stderr
        outputs[name] = done.stdout
    return outputs


def _board(arena: Arena) -> dict[str, int]:
    data = httpx.get(arena.url + "/api/leaderboard", timeout=30).json()
    return {row["bot"]: row["games"] for row in data["rows"]}


# ---------------------------------------------------------------------------- the happy path


def test_health_and_metrics(arena: Arena) -> None:
    health = httpx.get(arena.url + "/health", timeout=30).json()
    assert health["status"] == "ok" and health["database"] == "ok"
    metrics = httpx.get(arena.url + "/metrics", timeout=30).text
    assert re.search(r"^kryt_games_total \d+$", metrics, re.MULTILINE)
    assert "kryt_http_requests_total" in metrics


def test_submit_with_the_cli_plays_validation_games(arena: Arena, accepted: dict[str, str]) -> None:
    for name in ("alpha", "beta"):
        assert f"{name} 1.0.0: uploaded as submission" in accepted[name]
        assert "status active; validation passed" in accepted[name]
    listed = kryt("submissions", "--server", arena.url, env={"KRYT_TOKEN": arena.tokens["alice"]})
    assert listed.returncode == 0, listed.stderr
    assert "alpha 1.0.0\tactive\tpassed" in listed.stdout
    assert "beta" not in listed.stdout  # bob's bot is not alice's business


def test_a_crashing_bot_is_rejected_with_the_reason(arena: Arena, tmp_path: Path) -> None:
    bot = make_bot(tmp_path / "crash", "crasher", code=CRASHING_BOT)
    done = kryt(
        "submit", str(bot), "--server", arena.url, env={"KRYT_TOKEN": arena.tokens["carol"]}
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "status rejected; validation failed" in done.stdout
    assert "startup failure" in done.stdout


def test_the_ladder_plays_and_the_leaderboard_changes(
    arena: Arena, accepted: dict[str, str]
) -> None:
    first = _until("ladder games", lambda: (b := _board(arena)) and b.get("alpha") and b)
    assert first.get("beta") == first["alpha"]  # the two play each other only
    later = _until(
        "more ladder games", lambda: (b := _board(arena)).get("alpha", 0) > first["alpha"] and b
    )
    assert later["alpha"] > first["alpha"]
    page = httpx.get(arena.url + "/", timeout=30).text
    assert "data-live-poll" in page and "alpha" in page


def test_bot_page_lists_versions_and_games(arena: Arena, accepted: dict[str, str]) -> None:
    _until("ladder games", lambda: _board(arena).get("alpha"))
    page = httpx.get(arena.url + "/bots/alpha", timeout=30)
    assert page.status_code == 200
    assert "1.0.0" in page.text and "Recent games" in page.text and "/games/" in page.text
    assert httpx.get(arena.url + "/bots/nobody", timeout=30).status_code == 404


def test_my_logs_over_the_api_and_on_my_page(arena: Arena, accepted: dict[str, str]) -> None:
    _until("ladder games", lambda: _board(arena).get("alpha"))
    logs = httpx.get(arena.url + "/api/bots/alpha/logs", headers=arena.auth("alice"), timeout=30)
    assert logs.status_code == 200
    texts = [entry["text"] for entry in logs.json()["logs"]]
    assert any("chatty thinking" in t for t in texts)
    with httpx.Client(base_url=arena.url, timeout=30) as browser:
        form = browser.get("/login").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', form)
        assert csrf is not None
        signed_in = browser.post(
            "/login", data={"csrf": csrf.group(1), "token": arena.tokens["alice"]}
        )
        assert signed_in.status_code == 303
        page = browser.get("/me").text
        assert "chatty thinking" in page and "Logs of recent games" in page


# ---------------------------------------------------------------------------- failing closed


def test_no_token_or_a_bad_token_is_refused(arena: Arena) -> None:
    _problem(httpx.post(arena.url + "/api/submissions", content=b"x", timeout=30), 401)
    _problem(httpx.get(arena.url + "/api/submissions", timeout=30), 401)
    bad = {"Authorization": "Bearer kryt_not-a-token"}
    _problem(httpx.get(arena.url + "/api/me", headers=bad, timeout=30), 401)


def test_revoked_and_expired_tokens_are_refused(arena: Arena) -> None:
    made = kryt("arena", "token", "create", "carol", "--database", arena.database)
    assert made.returncode == 0, made.stderr
    token_id = int(made.stdout.split()[1].rstrip(","))
    secret = made.stdout.strip().splitlines()[-1]
    headers = {"Authorization": f"Bearer {secret}"}
    assert httpx.get(arena.url + "/api/me", headers=headers, timeout=30).json()["author"] == "carol"
    revoked = kryt("arena", "token", "revoke", str(token_id), "--database", arena.database)
    assert revoked.returncode == 0, revoked.stderr
    _problem(httpx.get(arena.url + "/api/me", headers=headers, timeout=30), 401)
    db = open_database(arena.database)
    try:
        with db.session() as session:
            expiring = create_token("carol", session=session, lifetime=timedelta(seconds=1))
    finally:
        db.close()
    time.sleep(1.5)
    headers = {"Authorization": f"Bearer {expiring.secret}"}
    _problem(httpx.get(arena.url + "/api/me", headers=headers, timeout=30), 401)


def test_another_authors_token_cannot_touch_my_bot(
    arena: Arena, accepted: dict[str, str], tmp_path: Path
) -> None:
    bob = arena.auth("bob")
    # a new version of alice's bot, uploaded by bob
    bot = make_bot(tmp_path / "alpha2", "alpha", version="2.0.0")
    archive, _name = archive_of(bot)
    response = httpx.post(arena.url + "/api/submissions", content=archive, headers=bob, timeout=60)
    _problem(response, 403)
    _problem(httpx.post(arena.url + "/api/bots/alpha/retire", headers=bob, timeout=30), 403)
    _problem(httpx.get(arena.url + "/api/bots/alpha/logs", headers=bob, timeout=30), 403)
    # the bot itself is untouched:
    mine = httpx.get(arena.url + "/api/submissions", headers=arena.auth("alice"), timeout=30)
    assert [s["status"] for s in mine.json()["submissions"] if s["bot"] == "alpha"] == ["active"]


def _zip(entries: dict[str, bytes], *, compress: bool = True) -> bytes:
    buffer = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(buffer, "w", method) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buffer.getvalue()


MANIFEST = b'name = "evil"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'


def test_bad_archives_are_refused_and_nothing_is_stored(arena: Arena) -> None:
    dave = kryt("arena", "author", "add", "dave", "--database", arena.database)
    headers = {"Authorization": f"Bearer {dave.stdout.strip().splitlines()[-1]}"}
    oversized = b"PK\x03\x04" + bytes(300 * 1024)
    _problem(
        httpx.post(arena.url + "/api/submissions", content=oversized, headers=headers, timeout=60),
        413,
    )
    bomb = _zip({"bot.toml": MANIFEST, "bot.py": b"", "big.bin": bytes(64 * 1024 * 1024)})
    assert len(bomb) < 256 * 1024
    body = _problem(
        httpx.post(arena.url + "/api/submissions", content=bomb, headers=headers, timeout=60), 422
    )
    assert "big.bin" in body["detail"] or "bytes" in body["detail"]
    traversal = _zip({"bot.toml": MANIFEST, "bot.py": b"", "../../escape.py": b"x"})
    body = _problem(
        httpx.post(arena.url + "/api/submissions", content=traversal, headers=headers, timeout=60),
        422,
    )
    assert "escape.py" in body["detail"]
    garbage = b"this is not an archive at all"
    _problem(
        httpx.post(arena.url + "/api/submissions", content=garbage, headers=headers, timeout=60),
        422,
    )
    assert arena.query("select count(*) from bots where name = 'evil'") == [(0,)]


def test_too_many_writes_get_429(arena: Arena) -> None:
    erin = kryt("arena", "author", "add", "erin", "--database", arena.database)
    headers = {"Authorization": f"Bearer {erin.stdout.strip().splitlines()[-1]}"}
    statuses = [
        httpx.post(arena.url + "/api/submissions", content=b"junk", headers=headers, timeout=30)
        for _ in range(12)
    ]
    codes = [r.status_code for r in statuses]
    assert codes[0] == 422 and 429 in codes, codes
    limited = next(r for r in statuses if r.status_code == 429)
    assert int(limited.headers["retry-after"]) >= 1


def test_forged_form_posts_are_refused(arena: Arena, accepted: dict[str, str]) -> None:
    with httpx.Client(base_url=arena.url, timeout=30) as browser:
        # no CSRF token at all on the login form
        _forged = browser.post("/login", data={"token": arena.tokens["alice"]})
        assert _forged.status_code == 403
        form = browser.get("/login").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', form)
        assert csrf is not None
        assert (
            browser.post(
                "/login", data={"csrf": csrf.group(1), "token": arena.tokens["alice"]}
            ).status_code
            == 303
        )
        # signed in, but a form posted from elsewhere carries no (or a wrong) token
        assert browser.post("/me/bots/alpha/retire", data={}).status_code == 403
        assert (
            browser.post("/me/bots/alpha/retire", data={"csrf": csrf.group(1)}).status_code == 403
        )
    mine = httpx.get(arena.url + "/api/submissions", headers=arena.auth("alice"), timeout=30)
    assert [s["status"] for s in mine.json()["submissions"] if s["bot"] == "alpha"] == ["active"]


def test_audit_log_records_submissions_and_refusals(arena: Arena, accepted: dict[str, str]) -> None:
    httpx.get(arena.url + "/api/me", headers={"Authorization": "Bearer kryt_wrong"}, timeout=30)
    actions = set(arena.query("select action, outcome from audit_log"))
    assert ("submit", "stored") in actions
    assert ("validate", "passed") in actions
    assert ("token", "refused") in actions


# ---------------------------------------------------------------------------- kill -9


def _proc_stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time in ticks) of a process, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0], int(fields[19])


def _descendants(root: int) -> dict[int, int]:
    """Every live process below ``root``: pid -> start time (to survive pid reuse)."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _proc_stat(int(entry.name))) is not None:
            children.setdefault(stat[0], []).append(int(entry.name))
            starts[int(entry.name)] = stat[2]
    found: dict[int, int] = {}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found[child] = starts[child]
                todo.append(child)
    return found


def _survivors(processes: dict[int, int]) -> list[int]:
    alive = []
    for pid, start in processes.items():
        stat = _proc_stat(pid)
        if stat is not None and stat[2] == start and stat[1] not in {"Z", "X"}:
            alive.append(pid)
    return alive


def _sandboxes(arena: Arena) -> set[str]:
    """The bots' socket/work directories and dial links in the server's runtime directory."""
    names = {p.name for p in arena.runtime.iterdir() if p.name != "dial"}
    if (arena.runtime / "dial").is_dir():
        names |= {f"dial/{p.name}" for p in (arena.runtime / "dial").iterdir()}
    return {n for n in names if n.startswith("kryt-") or n.startswith("dial/kryt-")}


def test_kill_9_mid_ladder_loses_and_duplicates_nothing(
    arena: Arena, accepted: dict[str, str]
) -> None:
    """Kill the server while a ladder series plays, restart it, and count the games; no bot
    process of the killed server survives it, and what its bots left on the host is swept
    when the next server starts."""
    running = (
        "select s.id, s.games_planned, count(g.id) from ladder_series l "
        "join series s on s.id = l.series_id join games g on g.series_id = s.id "
        "where s.status = 'running' group by s.id, s.games_planned"
    )
    assert arena.process is not None
    bots: dict[int, int] = {}

    def half_played() -> int | None:
        nonlocal bots
        for series_id, planned, played in arena.query(running):
            # Two games still to play: the bots are surely alive when the kill lands.
            if 0 < played <= planned - 2:
                bots = _descendants(arena.process.pid if arena.process else 0)
                if bots:
                    return int(series_id)
        return None

    cut = _until("a ladder series half played, its bots running", half_played)
    arena.kill()
    # The bots die with the server (parent-death signal), at once or nearly.
    _until("the killed server's bots to die", lambda: not _survivors(bots), timeout=60)
    left = _sandboxes(arena)
    assert left, "the killed server's bots left no socket directory behind"
    arena.start()
    # The sweep runs before the server answers /health: nothing of a dead runner is left.
    assert not (left & _sandboxes(arena)), left & _sandboxes(arena)

    def finished() -> bool:
        rows = arena.query("select status from series where id = :id", id=cut)
        return bool(rows[0][0] == "finished")

    _until("the cut series finished after the restart", finished)
    planned = arena.query("select games_planned from series where id = :id", id=cut)[0][0]
    numbers = [
        n
        for (n,) in arena.query(
            "select number from games where series_id = :id and not voided order by number",
            id=cut,
        )
    ]
    duplicates = arena.query(
        "select count(*) from (select series_id, number from games where not voided "
        "group by series_id, number having count(*) > 1) d"
    )[0][0]
    lost = planned - len(set(numbers))
    print(
        f"\nkill -9 mid-series {cut}: lost {lost} games, duplicated {duplicates}; "
        f"{len(bots)} bot process(es) died with the server, {len(left)} sandbox dir(s) swept"
    )
    assert numbers == list(range(1, planned + 1))
    assert lost == 0 and duplicates == 0
