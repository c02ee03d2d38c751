"""Mutation review of ``kryt bot check`` (``sdk/tools/check.py`` and ``kryt/commands/bot.py``):
what a bot author sees when a broken submission is checked. Each test pins a behaviour the
docs promise (docs/writing-a-bot.md "Check", docs/protocol.md "Checking a bot in another
language", docs/configuration.md "Exit codes of kryt"), and kills mutants the existing check
tests let live:

- a folder without ``bot.toml``, an entry that is missing or climbs out of the folder, and an
  archive with a ``..`` member are one ``manifest`` error each, exit 1 from the command line,
  nothing written outside and no temporary folder left (the archive's unpacked copy, the
  socket's folder: ``TemporaryDirectory``/``mkdtemp`` are watched, so a dropped clean-up of
  either is seen wherever the folder was made);
- a bot that exits at once is one error naming its exit code, and the failed report ends
  with the *tail* of the bot's stderr, escaped (a head instead of the tail, or raw terminal
  escapes, are what an author would see wrong); nothing the bot prints reaches the
  terminal around the report;
- a bot that is slow to serve fails under the start-up deadline it was given (a deadline
  ignored lets it pass), what it printed (a plain ``print``, not flushed) is in the report,
  and it is stopped afterwards even when it ignores SIGTERM: no process
  is left behind (a dropped terminate or kill leaves it running);
- a Python bot that does not exit after ``Shutdown``: a plain process gets the documented
  warning (not an error: the check passes, so its stderr is not shown) and is stopped
  anyway; under the ``process`` sandbox the exit is not checked and the sandbox kills it (a
  dropped ``stop`` leaves it);
- under the ``process`` sandbox a crash shows the bot's traceback in the report, the start-up
  deadline given holds (and the limits line says it), and a handshake unlike bot.toml fails
  the check (the sandbox path must read the manifest too);
- a malformed reply is one error listing every game, the bot's text escaped;
- the opponent's forfeits are not held against the checked bot;
- a bot checked by address (no bot.toml: the report names it by its handshake) whose name
  holds escapes: the report shows them escaped;
- a deep ``TMPDIR`` whose socket path would just not fit a Unix socket address (106 bytes)
  does not fail a good bot (the socket's folder moves to ``/tmp``), and nothing is left in
  either place;
- without a sandbox a process the bot started does not outlive the check (found by this
  review: it did; the bot now runs in a process group of its own, stopped with it);
- the command line hands ``--games``, ``--seed`` and ``--backend`` (``none``: no sandbox) to
  the check as given, ``--games 0`` is a usage error (exit 2, nothing run: no games would
  pass any bot), and an unknown ``builtin:NAME`` exits 1 with one error.

Bots are tiny Python folders written into ``tmp_path``; no Docker. Deadlines are generous
where the verdict is not about time.
"""

from __future__ import annotations

import io
import os
import signal
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kryt.cli import main
from referee.protocol.messages import TimeControl
from referee.rules import Action
from sandbox.dial import SOCKET_NAME
from sdk import Bot
from sdk.examples.random.bot import RandomBot
from sdk.tools import check as check_module
from sdk.tools.check import CheckReport, check_bot
from tests.protocol.helpers import served

EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"
STARTUP = 120.0
"""Seconds a bot may take to start where that is not under test (a busy machine)."""
ROOMY = TimeControl(move_ms=10_000, bank_ms=60_000)
"""No reply is slow or late on a busy machine: for verdicts that are not about time."""
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\r\u202e"
"""Retitles and clears a terminal, overwrites a line, reverses text: must reach no terminal."""
RAW_CONTROLS = ("\x1b", "\x07", "\r", "\u202e")

pytestmark = pytest.mark.timeout(120)


def _python_bot(folder: Path, source: str, name: str = "probe") -> Path:
    folder.mkdir(parents=True)
    (folder / "bot.toml").write_text(
        f'name = "{name}"\nversion = "0.0.1"\nruntime = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text(source)
    for path in [folder, *folder.rglob("*")]:  # readable by a sandbox's other user
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def _sdk_bot(folder: Path, act: str, tail: str = "", head: str = "") -> Path:
    """A Python SDK bot whose ``act`` body is ``act``; ``head`` runs before anything is
    imported, ``tail`` after ``serve`` returns."""
    return _python_bot(
        folder,
        f"{head}import sys, time\nfrom sdk import Bot, serve\n\n\nclass B(Bot):\n"
        f"    def act(self, view):\n{act}\n\n\nif __name__ == '__main__':\n    serve(B())\n"
        f"{tail}",
    )


def _running(pid: int) -> bool:
    """True while process ``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def no_leftover_process() -> Iterator[list[int]]:
    """Pids a test expects gone; any still running at the end is killed (and fails it)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)


def _pid(file: Path) -> int:
    assert file.exists(), "the bot never ran far enough to write its pid"
    return int(file.read_text())


def _gone(pid: int, within: float = 10.0) -> bool:
    """True once ``pid`` no longer runs (a sandbox may reap it a moment later)."""
    deadline = time.monotonic() + within
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture
def made_folders(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every folder ``tempfile`` makes during the test (``mkdtemp`` and
    ``TemporaryDirectory`` alike), wherever it is made."""
    made: list[Path] = []
    real = tempfile.mkdtemp

    def watched(*args: Any, **kwargs: Any) -> str:
        folder: str = real(*args, **kwargs)
        made.append(Path(folder))
        return folder

    monkeypatch.setattr(tempfile, "mkdtemp", watched)
    return made


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["bot", "check", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("  ERROR ")]


# --- broken submissions: one manifest error, exit 1, nothing left ---------------------------


def test_a_folder_without_bot_toml_is_one_manifest_error_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "nomanifest"
    folder.mkdir()
    (folder / "bot.py").write_text("print('hi')\n")
    code, out = _cli(capsys, str(folder), "--games", "1", "--backend", "none")
    assert code == 1, out
    (error,) = _errors(out)
    assert error.startswith("  ERROR manifest") and "bot.toml" in error, out
    assert out.rstrip().endswith("FAILED"), out


@pytest.mark.parametrize("entry", ["missing.py", "../outside.py"])
def test_a_bad_entry_is_one_manifest_error(tmp_path: Path, entry: str) -> None:
    (tmp_path / "outside.py").write_text("raise SystemExit(0)\n")
    folder = _python_bot(tmp_path / "badentry", "raise SystemExit(0)\n")
    manifest = (folder / "bot.toml").read_text().replace('"bot.py"', f'"{entry}"')
    (folder / "bot.toml").write_text(manifest)
    report = check_bot(folder, games=1, startup_timeout=STARTUP)
    assert not report.ok
    assert [p.kind for p in report.problems] == ["manifest"], report.format()


def test_an_archive_with_a_traversal_path_is_refused_and_leaves_nothing(
    tmp_path: Path, made_folders: list[Path]
) -> None:
    source = _sdk_bot(tmp_path / "src", "        return view.legal_actions[0]")
    archive = tmp_path / "sneaky.tar.gz"
    evil = tmp_path / "evil.py"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source / "bot.toml", arcname="bot.toml")
        tar.add(source / "bot.py", arcname="bot.py")
        info = tarfile.TarInfo("../evil.py")
        payload = b"print('escaped')\n"
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    report = check_bot(archive, games=1, startup_timeout=STARTUP)
    assert not report.ok
    assert [p.kind for p in report.problems] == ["manifest"], report.format()
    assert not evil.exists()
    assert [f for f in made_folders if f.exists()] == []


# --- bots that die, hang or will not stop ---------------------------------------------------


def test_a_bot_that_exits_at_once_shows_its_exit_code_and_the_tail_of_its_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """What the bot prints reaches the author's terminal only through the report, escaped
    (``capfd``: a bot writing to the check's own terminal would show there raw)."""
    noise = "".join(f"noise line {n:04d} of a chatty bot\n" for n in range(300))  # > 4000 B
    folder = _python_bot(
        tmp_path / "quitter",
        "import sys\n"
        f"print('stdout says' + {HOSTILE!r})\n"
        f"sys.stderr.write({noise!r})\n"
        f"sys.stderr.write('last words' + {HOSTILE!r} + ' end\\n')\n"
        "sys.exit(3)\n",
    )
    code, out = _cli(capfd, str(folder), "--games", "2", "--backend", "none")
    assert code == 1, out
    (error,) = _errors(out)
    assert "code 3" in error, out
    for raw in RAW_CONTROLS:
        assert raw not in out, repr(out)
    # The tail: its last line is shown, escaped.
    assert "last words\\x1b]0;pwned\\x07" in out and "\\u202e end" in out, out


def test_a_bot_slow_to_serve_fails_its_start_up_deadline_and_is_stopped(
    tmp_path: Path, no_leftover_process: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It would serve after 10 s; given 3 s it fails, and it is gone afterwards although it
    ignores SIGTERM (the check kills what does not stop). Its plain ``print`` is in the
    report although the bot is killed, whatever the author's own environment says."""
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    folder = _sdk_bot(
        tmp_path / "sleepy",
        "        return view.legal_actions[0]",
        head=(
            "import os, signal, sys, time\n"
            "open('pid', 'w').write(str(os.getpid()))\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('warming up')\n"  # stdout, not flushed: a plain print
            "time.sleep(10)\n"
        ),
    )
    report = check_bot(folder, games=1, time_control=ROOMY, startup_timeout=3)
    pid = _pid(folder / "pid")
    no_leftover_process.append(pid)
    assert not report.ok, report.format()
    assert len([p for p in report.problems if p.severity == "error"]) == 1, report.format()
    assert not _running(pid), "the bot still runs after the check"
    assert "warming up" in report.format(), report.format()


def test_a_plain_bot_that_does_not_exit_after_shutdown_is_a_warning_and_is_stopped(
    tmp_path: Path, no_leftover_process: list[int]
) -> None:
    folder = _sdk_bot(
        tmp_path / "lingerer",
        "        return view.legal_actions[0]",
        head=(
            "import os, signal, sys\n"
            "open('pid', 'w').write(str(os.getpid()))\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('debug chatter', file=sys.stderr, flush=True)\n"
        ),
        tail="    time.sleep(300)\n",
    )
    report = check_bot(folder, games=1, time_control=ROOMY, startup_timeout=STARTUP)
    pid = _pid(folder / "pid")
    no_leftover_process.append(pid)
    assert report.ok, report.format()
    assert [(p.kind, p.severity) for p in report.problems] == [("shutdown", "warning")]
    text = report.format()
    assert text.rstrip().endswith("OK"), text
    # The bot's stderr is shown when the check fails, not when it passes.
    assert "debug chatter" in report.stderr and "debug chatter" not in text, text
    assert not _running(pid), "the bot still runs after the check"


def test_in_the_process_sandbox_a_bot_that_does_not_exit_is_killed_unreported(
    tmp_path: Path, no_leftover_process: list[int]
) -> None:
    pid_file = tmp_path / "sandboxed.pid"
    folder = _sdk_bot(
        tmp_path / "lingerer",
        "        return view.legal_actions[0]",
        head=f"import os\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n",
        tail="    time.sleep(300)\n",
    )
    report = check_bot(
        folder, games=1, sandbox="process", time_control=ROOMY, startup_timeout=STARTUP
    )
    assert report.ok and not report.problems, report.format()
    pid = _pid(pid_file)
    no_leftover_process.append(pid)
    assert _gone(pid), "the sandboxed bot still runs after the check"


def test_in_the_process_sandbox_a_handshake_unlike_bot_toml_fails(tmp_path: Path) -> None:
    """The arena refuses a bot whose handshake is not its bot.toml's name and version; the
    check in a sandbox must say so as the plain check does."""
    folder = _sdk_bot(tmp_path / "liar", "        return view.legal_actions[0]", tail="")
    source = (folder / "bot.py").read_text()
    lying = source.replace("class B(Bot):\n", "class B(Bot):\n    version = '9.9.9'\n")
    assert lying != source
    (folder / "bot.py").write_text(lying)
    report = check_bot(
        folder, games=1, sandbox="process", time_control=ROOMY, startup_timeout=STARTUP
    )
    assert not report.ok, report.format()
    assert "handshake" in [p.kind for p in report.problems], report.format()


def test_in_the_process_sandbox_a_crash_shows_the_bots_traceback(tmp_path: Path) -> None:
    """writing-a-bot.md: the full traceback is on the bot's stderr, shown in the report when
    the check fails; ``kryt bot check`` does the same in a sandbox."""
    folder = _sdk_bot(tmp_path / "crasher", "        raise ZeroDivisionError('oops')")
    report = check_bot(
        folder, games=1, sandbox="process", time_control=ROOMY, startup_timeout=STARTUP
    )
    assert not report.ok
    text = report.format()
    assert "bot stderr (tail):" in text and "Traceback" in text, text


def test_in_the_process_sandbox_the_start_up_deadline_given_holds(tmp_path: Path) -> None:
    """It would serve after 10 s: given 2 s in the sandbox too, it fails."""
    nap = "import time\ntime.sleep(10)\n"
    folder = _sdk_bot(tmp_path / "sleepy", "        return view.legal_actions[0]", head=nap)
    report = check_bot(folder, games=1, sandbox="process", time_control=ROOMY, startup_timeout=2)
    assert not report.ok, report.format()
    assert "start-up 2 s" in report.limits, report.limits


# --- what the bot answers --------------------------------------------------------------------


def test_a_malformed_reply_is_one_error_listing_every_game_escaped(tmp_path: Path) -> None:
    folder = _sdk_bot(tmp_path / "garbler", f"        return 'gibberish' + {HOSTILE!r}")
    report = check_bot(folder, games=2, time_control=ROOMY, startup_timeout=STARTUP)
    assert not report.ok
    (problem,) = report.problems
    assert (problem.kind, problem.severity, problem.games) == ("malformed reply", "error", (1, 2))
    text = report.format()
    for raw in RAW_CONTROLS:
        assert raw not in text, repr(text)
    assert "ERROR malformed reply (games 1, 2)" in text, text


class _Crasher(Bot):
    name = "crasher"
    version = "0.0.1"

    def act(self, view: Any) -> Action:
        raise RuntimeError("the opponent broke")


def test_the_opponents_forfeits_are_not_held_against_the_checked_bot() -> None:
    report = check_bot(
        EXAMPLES / "random",
        games=2,
        opponent=_Crasher(),
        time_control=ROOMY,
        startup_timeout=STARTUP,
    )
    assert report.ok and not report.problems, report.format()
    # It did play the opponent given, and that opponent forfeited.
    assert report.series is not None
    assert [g.forfeit.seat for g in report.series.forfeits if g.forfeit] == [1, 1]


class _HostileName(RandomBot):
    name = f"evil{HOSTILE}"


def test_a_bot_by_address_with_a_hostile_handshake_name_is_shown_escaped() -> None:
    with served(_HostileName(seed=3), "tcp") as (address, _):
        report = check_bot(address, games=1, time_control=ROOMY, startup_timeout=STARTUP)
    text = report.format()
    assert report.ok, text
    for raw in RAW_CONTROLS:
        assert raw not in text, repr(text)
    assert text.startswith("bot evil\\x1b]0;pwned\\x07"), text


# --- temporary folders -----------------------------------------------------------------------


def _socket_path_length(folder: Path) -> int:
    """The length of the bot's socket path were its folder made in ``folder``."""
    return len(os.fsencode(folder / ("kryt-check-" + "x" * 8) / SOCKET_NAME))


@pytest.mark.parametrize("depth", ["shallow", "just too deep"])
def test_a_good_bot_passes_and_leaves_no_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made_folders: list[Path], depth: str
) -> None:
    """A Unix socket's path holds 107 bytes and gRPC binds somewhat less: a socket path of
    106 bytes must not be handed to the bot (it could not serve, and the check would blame
    it)."""
    if depth == "shallow":
        scratch = Path(tempfile.mkdtemp(prefix="kbc-", dir="/tmp"))
    else:
        scratch = tmp_path / "d"
        scratch = tmp_path / ("d" * (106 - _socket_path_length(scratch) + 1))
        assert _socket_path_length(scratch) == 106
        scratch.mkdir()
    made_folders.clear()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    report = check_bot(EXAMPLES / "random", games=1, time_control=ROOMY, startup_timeout=STARTUP)
    assert report.ok, report.format()
    assert made_folders, "the check made no temporary folder: nothing was watched"
    assert [f for f in made_folders if f.exists()] == []
    assert list(scratch.iterdir()) == []
    scratch.rmdir()


# --- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize(("backend", "sandbox"), [("none", None), ("process", "process")])
def test_the_command_hands_games_seed_and_backend_to_the_check(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
    sandbox: str | None,
) -> None:
    calls: list[dict[str, Any]] = []

    def checked(target: str, **options: Any) -> CheckReport:
        calls.append({"target": target, **options})
        return CheckReport(target=target, name="mybot", version="0.1.0")

    monkeypatch.setattr(check_module, "check_bot", checked)
    code, out = _cli(capsys, "mybot", "--games", "3", "--seed", "s7", "--backend", backend)
    assert code == 0, out
    assert calls == [{"target": "mybot", "games": 3, "seed": "s7", "sandbox": sandbox}]
    assert "bot mybot 0.1.0 (mybot)" in out and "OK" in out, out


def test_no_games_is_a_usage_error_before_anything_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check of no games would pass any bot: ``--games 0`` is a wrong flag (exit 2)."""
    calls: list[str] = []

    def checked(target: str, **options: Any) -> CheckReport:
        calls.append(target)
        return CheckReport(target=target, name="mybot", version="0.1.0")

    monkeypatch.setattr(check_module, "check_bot", checked)
    code, out = _cli(capsys, "mybot", "--games", "0", "--backend", "none")
    assert code == 2, out
    assert calls == [] and "OK" not in out, out


def test_an_unknown_builtin_bot_exits_1_with_one_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = _cli(capsys, "builtin:nope", "--games", "1", "--backend", "none")
    assert code == 1, out
    (error,) = _errors(out)
    assert error.startswith("  ERROR not found"), out


# --- real faults -----------------------------------------------------------------------------


def test_a_plain_check_leaves_no_process_the_bot_started(
    tmp_path: Path, no_leftover_process: list[int]
) -> None:
    """A Python bot that starts a helper (an engine, a worker) and exits after ``Shutdown``
    as it should: the check started them all, so none may outlive it."""
    folder = _sdk_bot(
        tmp_path / "spawner",
        "        return view.legal_actions[0]",
        head=(
            "import subprocess, sys\n"
            "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
            "open('helper.pid', 'w').write(str(helper.pid))\n"
        ),
    )
    report = check_bot(folder, games=1, time_control=ROOMY, startup_timeout=STARTUP)
    pid = _pid(folder / "helper.pid")
    no_leftover_process.append(pid)
    assert report.ok, report.format()
    assert _gone(pid, within=3), "the bot's helper process still runs after the check"
