"""A bot that fails to start without crashing (no socket, no SERVING) is reported with how
its process stands and its last output, escaped and bounded as a start-up crash's, and the
reason is in the words of its runtime's author (a Java author never makes a socket)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox.backend import CRASH_OUTPUT_LINES, Backend, OutputSince, RunningBot
from sandbox.death import DeathReport, classify_exit
from sandbox.errors import BotCrashedError, BotNotHealthyError
from sandbox.limits import SandboxLimits
from tests.sandbox.conftest import MakeBot

HOSTILE_LINE = "serving on 127.0.0.1:50051 \x1b[2J\x1b]0;PWNED\x07\u202eevil"
ESCAPED_LINE = "serving on 127.0.0.1:50051 \\x1b[2J\\x1b]0;PWNED\\x07\\u202eevil"


class FakeBot(RunningBot):
    """A bot that runs (or has ended with ``report``) and never makes its socket."""

    backend_name = "fake"

    def __init__(
        self,
        tmp_path: Path,
        *,
        output: str,
        runtime: str | None,
        report: DeathReport | None = None,
    ) -> None:
        sock = tmp_path / "sock"
        sock.mkdir(parents=True)
        # The deadline is what is tested: nothing else has to happen within it.
        super().__init__(
            label="fake-label-123",
            limits=SandboxLimits(startup_timeout=0.2),
            sock_dir=sock,
            expected_uid=os.geteuid(),
            runtime=runtime,
        )
        self.output = output
        self.report = report
        self.read = 0

    def _poll(self) -> DeathReport | None:
        return self.report

    def _kill(self) -> None:
        pass

    def _cleanup(self) -> None:
        pass

    def logs(self) -> str:
        self.read += 1
        return self.output

    def output_since(self, position: int) -> OutputSince:
        return OutputSince(self.output[position:], False, len(self.output))


@pytest.mark.parametrize("runtime", [None, "python", "node", "cpp", "go", "native"])
def test_no_socket_says_so_with_the_bots_last_output_escaped(
    tmp_path: Path, runtime: str | None
) -> None:
    bot = FakeBot(tmp_path, output=f"starting\n{HOSTILE_LINE}\n", runtime=runtime)
    with pytest.raises(BotNotHealthyError) as caught:
        bot.connect()
    said = str(caught.value)
    assert said == (
        "the bot did not create its socket within 0.2 s"
        f"\nits process: still running\nlast output:\nstarting\n{ESCAPED_LINE}"
    ), said
    assert caught.value.label == "fake-label-123" and "fake-label" not in said
    assert not bot.alive()  # connect() stopped it


def test_a_java_bot_is_told_that_nothing_answered_on_its_port(tmp_path: Path) -> None:
    bot = FakeBot(tmp_path, output="Exception in thread main: bind failed\n", runtime="java")
    with pytest.raises(BotNotHealthyError) as caught:
        bot.connect()
    said = str(caught.value)
    assert said.startswith(
        "nothing answered on the loopback port the bot was given (args[0] of its main)"
        " within 0.2 s\nits process: still running\nlast output:\n"
    ), said
    assert "socket" not in said.splitlines()[0]
    assert said.endswith("\nException in thread main: bind failed")


def test_the_output_is_bounded_like_a_crashs_and_absent_when_there_is_none(
    tmp_path: Path,
) -> None:
    lines = [f"line {n}" for n in range(3 * CRASH_OUTPUT_LINES)]
    bot = FakeBot(tmp_path / "a", output="\n".join(lines), runtime="cpp")
    with pytest.raises(BotNotHealthyError) as caught:
        bot.connect()
    kept = str(caught.value).split("\nlast output:\n", 1)[1].split("\n")
    assert kept == lines[-CRASH_OUTPUT_LINES:]
    # A bot that wrote nothing: the reason alone (nothing to explain it with).
    quiet = FakeBot(tmp_path / "b", output=" \n\n", runtime="go")
    with pytest.raises(BotNotHealthyError) as caught:
        quiet.connect()
    assert str(caught.value) == "the bot did not create its socket within 0.2 s"


def test_a_crash_at_start_has_the_same_shape(tmp_path: Path) -> None:
    report = classify_exit(3, log_tail=f"{HOSTILE_LINE}\n")
    bot = FakeBot(tmp_path, output="", runtime="node", report=report)
    with pytest.raises(BotCrashedError) as caught:
        bot.connect()
    assert str(caught.value) == (
        "the bot exited before creating its socket"
        f"\nits process: crashed, exit code 3\nlast output:\n{ESCAPED_LINE}"
    )


def test_the_output_is_read_only_when_the_start_fails(tmp_path: Path) -> None:
    """A bot that starts is never asked for its output by the sandbox (it is read once a
    failure happened, not on the way)."""
    bot = FakeBot(tmp_path, output="hello\n", runtime="python")
    assert bot.output_note() == "\nits process: still running\nlast output:\nhello"
    assert bot.read == 1
    bot.stop()


@pytest.mark.parametrize(
    "backend_fixture",
    [pytest.param("docker_backend", marks=pytest.mark.docker), "bwrap_backend", "process_backend"],
)
def test_every_backend_shows_what_a_bot_without_a_socket_printed(
    request: pytest.FixtureRequest, backend_fixture: str, make_bot: MakeBot
) -> None:
    backend: Backend = request.getfixturevalue(backend_fixture)
    # Long enough for its banner to be printed on a busy machine (which is not under test);
    # the deadline itself is what fails the start.
    limits = SandboxLimits(startup_timeout=20.0)
    with pytest.raises(BotNotHealthyError) as caught:
        backend.start(make_bot("misaddressed"), limits, "test-misaddressed", trusted=True)
    said = str(caught.value)
    assert said.startswith(
        "the bot did not create its socket within 20 s\nits process: still running\nlast output:\n"
    ), said
    assert (
        "misaddressed 1.0.0 serving on 127.0.0.1:50051 \\x1b[2J\\x1b]0;PWNED\\x07"
        in said.splitlines()
    ), said
    assert "\x1b" not in said and "\x07" not in said
    assert "test-misaddressed" not in said
