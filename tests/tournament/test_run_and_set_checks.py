"""What ``kryt tournament run``, ``resume``, ``extend`` and ``set`` refuse, and what
``status`` says of a run that died.

``set`` checks a change exactly as ``run`` checks a new tournament: a ``[bot_time]`` entry
must name an entered bot (it would otherwise be stored and silently ignored). Flags that
contradict each other are refused in one ``error:`` line (exit 2) instead of one silently
winning. The messages name what is wrong: the bot entered twice, the deal book at a table.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from arena.db import (
    Database,
    LeaseHolder,
    acquire_lease,
    get_lease,
    get_tournament,
    list_submissions,
    open_database,
    update_tournament_config,
)
from arena.tournament.config import ConfigError, SandboxSettings, TournamentConfig
from arena.tournament.lease import TournamentBusyError, this_host
from arena.tournament.runner import create, entered_bots
from arena.tournament.service import tournament_state
from kryt.errors import ExitCode
from sandbox.runner import RunnerId, RunnerState, current_runner
from tests.cli.helpers import kryt

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _pending(folder: Path, **settings: object) -> tuple[Database, int]:
    """A stored tournament of greedy and mc that has not been played (pending)."""
    db = open_database(f"sqlite:///{folder / 'kryt.db'}")
    config = TournamentConfig(
        bots=(str(EXAMPLES / "greedy"), str(EXAMPLES / "mc")),
        games_per_pair=2,
        sandbox=SandboxSettings(backend="process"),
        **settings,  # type: ignore[arg-type]
    )
    return db, create(config, db=db, store=folder / "store")


def _stored(db: Database, tournament_id: int) -> dict[str, object]:
    with db.read_session() as session:
        return dict(get_tournament(tournament_id, session=session).config)


def _tournaments(folder: Path) -> int:
    """How many tournaments the folder's database holds (0 when there is none)."""
    if not (folder / "kryt.db").exists():
        return 0
    db = open_database(f"sqlite:///{folder / 'kryt.db'}", create=False)
    from arena.db import list_tournaments

    with db.read_session() as session:
        return len(list_tournaments(session=session))


# ---------------------------------------------------------------------------- set


def test_set_refuses_a_bot_time_for_no_entered_bot_as_run_does(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    db, tid = _pending(folder)
    before = _stored(db, tid)
    code, _, err = kryt(capsys, "tournament", "set", str(tid), 'bot_time={greedyy="0.5+5"}')
    assert code == ExitCode.BAD_INPUT, err
    assert "[bot_time] names 'greedyy', which is not an entered bot" in err
    assert "greedy@1.0.0" in err  # the names it knows
    assert _stored(db, tid) == before  # nothing stored
    # An entered bot, by name or name@version, is taken.
    code, _, err = kryt(capsys, "tournament", "set", str(tid), 'bot_time={"greedy@1.0.0"="0.5+5"}')
    assert code == 0, err
    assert _stored(db, tid)["bot_time"] == {"greedy@1.0.0": "0.5+5"}


def test_set_refuses_a_setting_given_twice(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    db, tid = _pending(folder)
    code, _, err = kryt(capsys, "tournament", "set", str(tid), "concurrency=1", "concurrency=3")
    assert code == ExitCode.BAD_INPUT, err
    assert "concurrency is given more than once" in err
    assert _stored(db, tid)["concurrency"] == 2


def test_resume_and_extend_refuse_a_stored_bot_time_for_no_entered_bot(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    """A tournament that an older ``set`` left with a misspelt ``[bot_time]`` entry is not
    run with that bot silently on the default: one line with the command that fixes it."""
    db, tid = _pending(folder)
    stored = _stored(db, tid) | {"bot_time": {"greedyy": "0.5+5"}}
    with db.session() as session:
        update_tournament_config(tid, stored, name="tournament", session=session)
    for command in (["resume", str(tid)], ["extend", str(tid), "--games", "2"]):
        code, _, err = kryt(capsys, "tournament", *command)
        assert code == ExitCode.BAD_INPUT, (command, err)
        assert "names 'greedyy', which is not an entered bot" in err, err
        assert f"kryt tournament set {tid} 'bot_time=" in err, err
        assert "Traceback" not in err
    with db.read_session() as session:  # extend added nothing
        assert "extensions" not in get_tournament(tid, session=session).config


def test_a_bot_time_for_no_entered_bot_stores_no_new_bot(folder: Path) -> None:
    """docs/configuration.md: every setting is checked before anything is stored. With a
    stored bot named beside a folder (the database must be read to know the stored one's
    version), a ``[bot_time]`` naming neither is refused before the folder's bot is stored;
    one naming the stored bot's version is taken."""
    db, _ = _pending(folder)  # greedy and mc stored
    with db.read_session() as session:
        before = [(s.manifest["name"], s.version) for s in list_submissions(session=session)]
    config = TournamentConfig(
        bots=("greedy", str(EXAMPLES / "random")),
        games_per_pair=2,
        sandbox=SandboxSettings(backend="process"),
        bot_time=(("nobody", "1+1"),),
    )
    with pytest.raises(ConfigError, match="names 'nobody', which is not an entered bot"):
        create(config, db=db, store=folder / "store")
    with db.read_session() as session:
        assert [
            (s.manifest["name"], s.version) for s in list_submissions(session=session)
        ] == before
    assert entered_bots(config.bots, db=db) == [("greedy", "1.0.0"), ("random", "1.0.0")]
    assert entered_bots(config.bots, db=None) is None  # a stored name needs the database
    fine = replace(config, bot_time=(("greedy@1.0.0", "1+1"),))
    create(fine, db=db, store=folder / "store")


# ---------------------------------------------------------------------------- flags


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["--time", "1+2", "--move-seconds", "3", "--increment-seconds", "0.5"],
            "--time 1+2 sets the move, bank and increment of every bot, and --move-seconds"
            " and --increment-seconds would set them again",
        ),
        (["--time", "1+2", "--bank-seconds", "3"], "--bank-seconds would set it again"),
        (["--time", "1+2", "--time", "3+4"], "--time is given 2 times for every bot"),
        (
            ["--time", "greedy=1+2", "--time", "greedy=3+4"],
            "--time gives 'greedy' two controls ('1+2' and '3+4')",
        ),
        (
            ["--executor", "local", "--scheduler", "tcp://127.0.0.1:9", "--worker-store", "/x"],
            "--scheduler and --worker-store are for --executor dask, not --executor local",
        ),
        (["--worker-store", "/x"], "--worker-store is for --executor dask"),
    ],
)
def test_run_refuses_contradictory_flags(
    capsys: pytest.CaptureFixture[str], folder: Path, flags: list[str], said: str
) -> None:
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:greedy", "builtin:random", "-n", "2",
        "--backend", "process", *flags,
    )  # fmt: skip
    assert code == ExitCode.BAD_INPUT, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and said in errors[0], err
    assert _tournaments(folder) == 0


def test_a_shared_and_a_per_bot_time_go_together(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:greedy", "builtin:random", "-n", "2",
        "--backend", "process", "--time", "1+5+0.5", "--time", "greedy=2+20",
        "--grace-seconds", "0.1",
    )  # fmt: skip
    assert code == 0, err
    db = open_database(f"sqlite:///{folder / 'kryt.db'}", create=False)
    stored = _stored(db, 1)
    assert stored["time_control"] == {
        "move_seconds": 1.0,
        "bank_seconds": 5.0,
        "grace_seconds": 0.1,
        "clock": "wall",
        "increment_seconds": 0.5,
    }
    assert stored["bot_time"] == {"greedy": "2+20"}


@pytest.mark.parametrize("command", [["resume", "1"], ["extend", "1", "--games", "2"]])
def test_resume_and_extend_refuse_dask_options_without_dask(
    capsys: pytest.CaptureFixture[str], folder: Path, command: list[str]
) -> None:
    db, tid = _pending(folder)
    code, _, err = kryt(capsys, "tournament", *command, "--scheduler", "tcp://127.0.0.1:9")
    assert code == ExitCode.BAD_INPUT, err
    assert "--scheduler is for --executor dask, not --executor local" in err
    with db.read_session() as session:  # nothing was extended or run
        tournament = get_tournament(tid, session=session)
        assert tournament.status == "pending" and "extensions" not in tournament.config


# ---------------------------------------------------------------------------- messages


def test_the_same_bot_entered_twice_is_named(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:greedy", "greedy@1.0.0", "-n", "2",
        "--backend", "process",
    )  # fmt: skip
    assert code == ExitCode.BAD_INPUT, err
    assert "'builtin:greedy' and 'greedy@1.0.0' are the same bot version (greedy 1.0.0)" in err, err
    assert _tournaments(folder) == 0


def test_a_deal_book_at_a_classic_table_is_refused_as_such(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    from referee.rules import Card

    (folder / "book.txt").write_text(" ".join(str(c) for c in Card.all()) + "\n")
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:greedy", "builtin:random", "--ruleset",
        "classic", "--book", "book.txt", "-n", "2", "--backend", "process",
    )  # fmt: skip
    assert code == ExitCode.BAD_INPUT, err
    assert "a deal book is for the two-player game" in err, err
    assert "standard format only" not in err


def _dead_runner_token() -> str:
    """The process token of a runner that has certainly exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert child.wait(timeout=60) == 0
    me = current_runner()
    token = RunnerId(pid=child.pid, start=1, boot=me.boot, pidns=me.pidns)
    assert token.state() is RunnerState.DEAD
    return token.token


def test_status_says_holder_dead_before_the_lease_expires(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    """After kill -9 the lease lasts its 30 s, but the holder's process is known dead on
    this host: status says so, not that the lease expired."""
    db, tid = _pending(folder)
    holder = LeaseHolder("dead0run", this_host(), 4242, _dead_runner_token())
    with db.session() as session:
        acquire_lease(tid, holder, ttl=timedelta(minutes=10), session=session)
    state = tournament_state(tid, db)
    assert state.lease is not None and not state.lease.expired()
    assert state.runner.endswith(", holder dead)"), state.runner
    code, out, err = kryt(capsys, "tournament", "status", str(tid))
    assert code == 0, err
    shown = " ".join(out.split())  # the terminal width may wrap the line
    assert "holder dead)" in shown and "lease expired" not in shown, out
    # A holder that is alive elsewhere and whose lease has run out: lease expired.
    with db.session() as session:
        other = LeaseHolder("other0run", "another-host", 4242, None)
        acquire_lease(tid, other, ttl=timedelta(seconds=-1), session=session, take_over=True)
    assert tournament_state(tid, db).runner.endswith(", lease expired)")


def test_a_cpu_clock_set_later_falls_back_on_resume_as_on_run(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    """``run --clock cpu`` on a sandbox that measures no CPU time warns and stores the wall
    clock; ``set time_control.clock=cpu`` and ``resume`` there do the same, instead of
    recording games as charged on a CPU clock that nothing measured."""
    from sqlmodel import select

    from arena.db.games import stored_record
    from arena.db.models import Game

    db, tid = _pending(folder)
    code, _, err = kryt(capsys, "tournament", "set", str(tid), "time_control.clock=cpu")
    assert code == 0, err
    code, _, err = kryt(capsys, "tournament", "resume", str(tid), "--store", "store")
    assert code == 0, err
    assert "warning: clock cpu: the process sandbox does not measure a bot's CPU time" in err
    assert _stored(db, tid)["time_control"]["clock"] == "wall"  # type: ignore[index]
    with db.read_session() as session:
        controls = [stored_record(g).time_controls for g in session.exec(select(Game)).all()]
    assert controls and all(c.clock == "wall" for pair in controls for c in pair), controls


@pytest.mark.parametrize(
    ("ruleset", "size"), [("classic", 3.0), ("classic", 4.0), ("default", 2.0), ("classic", "3")]
)
def test_a_table_size_that_is_not_an_integer_is_one_error_line(
    capsys: pytest.CaptureFixture[str], folder: Path, ruleset: str, size: object
) -> None:
    """Like every integer setting (turn_limit, concurrency): 3.0 is not stored as a table
    size, nor does it crash the seating."""
    value = repr(size) if isinstance(size, float) else f'"{size}"'
    (folder / "t.toml").write_text(
        f'name = "x"\nruleset = "{ruleset}"\ntable_size = {value}\ngames_per_pair = 1\n'
        f'bots = ["{EXAMPLES / "greedy"}", "{EXAMPLES / "mc"}", "{EXAMPLES / "random"}",'
        f' "{EXAMPLES / "greedy"}-copy"]\n[sandbox]\nbackend = "process"\n'
    )
    code, _, err = kryt(capsys, "tournament", "run", "--config", str(folder / "t.toml"))
    assert code == ExitCode.BAD_INPUT, err
    first, *rest = err.strip().splitlines()
    assert first.startswith("error:") and all(line.startswith("hint:") for line in rest), err
    assert "table size" in first and repr(size) in first


def test_set_is_refused_by_a_run_that_started_after_its_check(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``set`` changes the settings under the tournament's lease: a run that took the lease
    after ``set`` looked (and will play the settings it read) makes ``set`` refuse, in the
    same words as a run seen at once; nothing is stored and the run keeps its lease."""
    from arena.tournament import service

    db, tid = _pending(folder)
    before = _stored(db, tid)
    seen_free = service.tournament_state(tid, db)
    assert seen_free.live_lease is None
    holder = LeaseHolder("racer0run", this_host(), os.getpid(), current_runner().token)

    def state_then_a_run_starts(tournament_id: int, database: Database) -> object:
        with database.session() as session:
            acquire_lease(tournament_id, holder, ttl=timedelta(minutes=10), session=session)
        return seen_free

    monkeypatch.setattr(service, "tournament_state", state_then_a_run_starts)
    with pytest.raises(TournamentBusyError, match="change its settings after"):
        service.change_settings(tid, ["sandbox.memory_mb=512"], db)
    assert _stored(db, tid) == before
    with db.read_session() as session:
        lease = get_lease(tid, session=session)
    assert lease is not None and lease.runner_id == "racer0run"


def test_set_leaves_no_lease_behind(folder: Path) -> None:
    from arena.tournament.service import change_settings

    db, tid = _pending(folder)
    change_settings(tid, ["sandbox.memory_mb=512"], db)
    assert _stored(db, tid)["sandbox"]["memory_mb"] == 512  # type: ignore[index]
    with db.read_session() as session:
        assert get_lease(tid, session=session) is None
