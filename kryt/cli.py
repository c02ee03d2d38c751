"""The ``kryt`` command: wires the command groups and turns typed errors into one clear line.

User errors (bad flags, malformed files, invalid bots, unreachable services) print one line with
what to do and exit with a meaningful code (see :class:`kryt.errors.ExitCode`); ``--verbose``
adds the traceback. Anything else is a bug and is shown in full.

Start-up is kept short: this module imports only typer (and what it needs). Each command's
module is imported when that command runs (:class:`LazyGroup`), so ``kryt --help`` or a usage
error never pays for scipy, the database or the web server.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
import warnings
from contextlib import nullcontext
from typing import Annotated, Any, Final

# gRPC's C core logs an INFO line whenever a sandbox process is forked while its threads run;
# that is expected here, so keep its log to errors (the user can still override it).
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
import referee  # noqa: F401  (gRPC's defaults, referee.GRPC_DEFAULTS, before gRPC loads)

# Every ratings fit runs on one BLAS thread (threadpoolctl, leaderboard/ratings/bayeselo.py);
# a BLAS thread pool started when NumPy is imported would only spin beside it (about 0.2 s
# of CPU per `kryt leaderboard` that fits). Set before NumPy can be imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from kryt.errors import (
    ExitCode,
    Interrupted,
    classify,
    echo_error,
    interrupted_by,
    signals_stop_like_ctrl_c,
    stops_on_signals,
)

INSTALL_HINT: Final = "pip install 'kryt-arena[arena]'"
"""What an SDK-only install lacks for the ``kryt`` command (typer, rich, the database...)."""

try:
    import typer
    from typer.core import TyperGroup
except ImportError as _missing:  # an SDK-only install: name the extra instead of a traceback
    typer = None  # type: ignore[assignment]
    _MISSING: ImportError | None = _missing
else:
    _MISSING = None


COMMANDS: Final[dict[str, tuple[str, str, str]]] = {
    "bot": ("kryt.commands.bot", "app", "Bot authors: create and check bots."),
    "play": ("kryt.commands.play", "play", "Play a series between your own bots."),
    "submit": ("kryt.commands.submit", "submit", "Validate a bot and store it."),
    "tournament": (
        "kryt.commands.tournament",
        "app",
        "Organisers: run round-robin and gauntlet tournaments.",
    ),
    "games": ("kryt.commands.games", "app", "List, export and import stored games."),
    "replay": ("kryt.commands.replay", "replay", "Print a stored game move by move."),
    "leaderboard": ("kryt.commands.leaderboard", "app", "Everyone: the leaderboard."),
    "ratings": ("kryt.commands.ratings", "app", "Rate any result set (BayesElo model)."),
    "demo": ("kryt.commands.demo", "demo", "Run the bundled bots in a round robin."),
    "arena": ("kryt.commands.arena", "app", "Organisers: run the arena server, add authors."),
    "submissions": ("kryt.commands.arena", "submissions", "Your submissions on an arena server."),
}
"""Command name -> (module, attribute: a Typer app or a command function, one-line help)."""


if typer is not None:

    class LazyGroup(TyperGroup):
        """A command group whose commands are imported only when one of them is invoked.

        ``--help`` lists the commands from :data:`COMMANDS` (names and one-line help) without
        importing them; resolving a command for invocation imports its module and builds the
        real click command in its place.
        """

        def list_commands(self, ctx: Any) -> list[str]:
            return [*super().list_commands(ctx), *(n for n in COMMANDS if n not in self.commands)]

        def get_command(self, ctx: Any, cmd_name: str) -> Any:
            found = super().get_command(ctx, cmd_name)
            if found is not None or cmd_name not in COMMANDS:
                return found
            # A listing: a placeholder carrying the help line, replaced when resolved.
            help_line = COMMANDS[cmd_name][2]
            return typer.core.TyperCommand(name=cmd_name, help=help_line, short_help=help_line)

        def resolve_command(self, ctx: Any, args: list[str]) -> Any:
            if args and args[0] in COMMANDS and args[0] not in self.commands:
                self.add_command(load_command(args[0]), args[0])
            return super().resolve_command(ctx, args)

    def reflow_help(text: str | None) -> str | None:
        """``text`` with the line breaks of its prose paragraphs joined, so that Rich wraps
        each paragraph to the terminal's width (it keeps every line break of a docstring,
        which at 80 columns breaks lines mid-sentence). Paragraphs holding a list, indented
        lines or click's ``\\b`` (no rewrap) marker keep their lines."""
        if not text:
            return text
        paragraphs = inspect.cleandoc(text).split("\n\n")
        return "\n\n".join(p if _keeps_lines(p) else " ".join(p.split("\n")) for p in paragraphs)

    def _keeps_lines(paragraph: str) -> bool:
        return any(
            line.startswith((" ", "\t", "\b", "- ", "* ")) or line[:2].rstrip(".").isdigit()
            for line in paragraph.split("\n")
        )

    def _reflow_tree(command: Any) -> None:
        """Reflow the help of ``command`` and of every command under it."""
        command.help = reflow_help(command.help)
        for sub in getattr(command, "commands", {}).values():
            _reflow_tree(sub)

    def load_command(name: str) -> Any:
        """Import command ``name``'s module and build its click command."""
        module_name, attribute, help_line = COMMANDS[name]
        target = getattr(importlib.import_module(module_name), attribute)
        command: Any
        if isinstance(target, typer.Typer):
            command = typer.main.get_group(target)
        else:
            single = typer.Typer(rich_markup_mode="rich", add_completion=False)
            single.command(name)(target)
            command = typer.main.get_command(single)
        command.name = name
        command.short_help = help_line
        _reflow_tree(command)
        return command

    app = typer.Typer(
        name="kryt",
        cls=LazyGroup,
        help="Kryt Arena: tournaments for Kryt'-navalivat' card-game bots.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode="rich",
    )

    _state = {"verbose": False}

    @app.callback()
    def root(
        verbose: Annotated[
            bool, typer.Option("--verbose", "-v", help="Show details and tracebacks.")
        ] = False,
    ) -> None:
        """Kryt Arena: write bots, run tournaments, read the leaderboard."""
        _state["verbose"] = verbose
        logging.basicConfig(
            level=logging.INFO if verbose else logging.WARNING,
            format="%(levelname)s %(name)s: %(message)s",
        )


def _command_path(root: Any, args: list[str]) -> str:
    """The command words ``args`` begin with (``kryt replay``), as far as the commands
    resolved so far name them: for a usage error click raised without a context."""
    words, group = ["kryt"], root
    for arg in args:
        if group is root and arg in ("-v", "--verbose"):
            continue
        found = getattr(group, "commands", {}).get(arg)
        if found is None:
            break
        words.append(arg)
        group = found
    return " ".join(words)


def _usage_error(exc: Exception, root: Any, args: list[str]) -> tuple[str, str]:
    """A usage error (unknown option, bad value, missing argument) as the one ``error:``
    line every other failure gets, the value given quoted in it, and its ``hint:``: the
    command's help."""
    format_message = getattr(exc, "format_message", None)
    message = str(format_message() if callable(format_message) else exc)
    option = getattr(exc, "option_name", "")
    if isinstance(option, str) and option[1:].replace(".", "", 1).isdigit():
        # `kryt replay -1`: click reads a negative number as an unknown option.
        message = f"{option} is not a valid value: ids, counts and seconds are positive"
    # Typer checks values with pydantic, whose message does not quote the value given.
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if callable(errors):
        try:
            given = errors()[0]["input"]
        except (LookupError, TypeError, ValueError):
            pass
        else:
            message = f"{message} (got {given!r})"
    context = getattr(exc, "ctx", None)
    # Click raises some errors without a context (`--verify=yes` to a flag).
    command = getattr(context, "command_path", "") or _command_path(root, args)
    return message, f"see {command} --help"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``kryt`` console script; returns the exit code.

    Every database the command opened is closed before it returns, whatever the outcome.
    """
    try:
        return _main(argv)
    finally:
        if _MISSING is None:  # kryt.options needs typer, which an SDK-only install lacks
            from kryt.options import close_opened_databases

            close_opened_databases()


def _main(argv: list[str] | None) -> int:
    if _MISSING is not None or typer is None:
        print(
            f"error: the kryt command needs the arena extra ({_MISSING}); install it with:"
            f" {INSTALL_HINT}",
            file=sys.stderr,
        )
        return ExitCode.UNAVAILABLE
    warnings.showwarning = _show_warning
    _escape_unencodable_output()
    stdout_was_devnull = _stdout_is_devnull()
    command = typer.main.get_command(app)
    args = sys.argv[1:] if argv is None else argv
    _state["verbose"] = False  # set by the root's own --verbose/-v (a command's -v is its own)
    if empty := _empty_argument(args):
        echo_error(f"error: {empty} is empty (an unset shell variable?)")
        echo_error("hint: give it a value, or leave it out")
        return ExitCode.BAD_INPUT
    if not_utf8 := _not_utf8_argument(args):
        echo_error(f"error: {not_utf8} is not UTF-8 text")
        echo_error("hint: give it in UTF-8 (rename the file or folder, or check the locale)")
        return ExitCode.BAD_INPUT
    try:
        # `kryt tournament ...` stops on SIGTERM/SIGHUP as on Ctrl-C from here on, also while
        # its module is imported (a second or more): not killed silently with 143.
        with signals_stop_like_ctrl_c() if stops_on_signals(args) else nullcontext():
            result = command.main(args=args, prog_name="kryt", standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        typer.echo(f"interrupted{interrupted_by()}", err=True)
        return ExitCode.INTERRUPTED
    except Interrupted:  # the command said what was kept
        return ExitCode.INTERRUPTED
    except typer.TyperException as exc:  # usage errors: unknown option, bad value...
        message, hint = _usage_error(exc, command, args)
        echo_error(f"error: {message}")
        echo_error(f"hint: {hint}")
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt:
        typer.echo(f"interrupted{interrupted_by()}", err=True)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader of our output went away (`kryt replay 1 | head -2`): it had what it
        # wanted; nothing failed. Later writes (and the exit's flush) go nowhere.
        _silence_stdout()
        return ExitCode.OK
    except SystemExit as exc:
        # Rich answers a closed pipe the same way, with SystemExit(1) after pointing
        # standard output at /dev/null: not "found problems" either.
        if exc.code == 1 and not stdout_was_devnull and _stdout_is_devnull():
            return ExitCode.OK
        raise
    except Exception as exc:
        known = classify(exc)
        if known is None:
            raise
        if _state["verbose"]:
            logging.getLogger("kryt").exception("details")
        echo_error(f"error: {known}")
        if known.hint:
            echo_error(f"hint: {known.hint}")
        return known.code
    code = result if isinstance(result, int) else ExitCode.OK
    if code == ExitCode.INTERRUPTED:  # typer turns Ctrl-C into exit code 130
        # Nothing is claimed: a command that keeps its work says so itself (Interrupted).
        typer.echo(f"interrupted{interrupted_by()}", err=True)
    return code


def _silence_stdout() -> None:
    """Point standard output at /dev/null (its reader is gone)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (a test's captured stream)
        pass
    finally:
        os.close(devnull)


def _stdout_is_devnull() -> bool:
    """Whether standard output's file descriptor is /dev/null."""
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (OSError, ValueError, AttributeError):  # no descriptor (a test's captured stream)
        return False


def _escape_unencodable_output() -> None:
    """Let standard output and error show what their encoding cannot (a suit symbol, ``±``,
    a box line on an ASCII or Latin-1 terminal, ``PYTHONIOENCODING=ascii``) as a backslash
    escape: a table or a replay is printed, not a ``UnicodeEncodeError`` traceback. A UTF-8
    stream is left as it is."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        reconfigure = getattr(stream, "reconfigure", None)
        if encoding not in ("utf8", "") and callable(reconfigure):
            reconfigure(errors="backslashreplace")


def _empty_argument(args: list[str]) -> str | None:
    """How to name the first empty argument of ``args``, or None. No command takes an empty
    value: ``--html ''`` or ``--store ''`` read as the current folder (and wrote there),
    ``submit ''`` submitted it, ``--seed ''`` was a public, fixed seed."""
    for at, arg in enumerate(args):
        if arg == "":
            before = args[at - 1] if at else ""
            is_option = before.startswith("-") and before != "--" and not before[1:2].isdigit()
            if is_option:
                return f"the value of {before}"
            return f"the argument after {before!r}" if before else "the first argument"
        if arg.startswith("--") and arg.endswith("="):
            return f"the value of {arg[:-1]}"
    return None


def _not_utf8_argument(args: list[str]) -> str | None:
    """How to name the first argument of ``args`` that is not UTF-8 (bytes a shell passed
    through, read by Python as surrogates, shown escaped); or None. Every name,
    path and text the commands take ends up stored, shown or sent as UTF-8: such an
    argument made the database driver raise (a traceback) wherever it was not checked."""
    for at, arg in enumerate(args):
        if _is_utf8(arg):
            continue
        option, equals, value = arg.partition("=")
        before = args[at - 1] if at else ""
        if arg.startswith("--") and equals:
            before, arg = option, value
        elif not (before.startswith("-") and before != "--" and not before[1:2].isdigit()):
            before = ""
        if before in _DATABASE_FLAGS:
            continue  # the URL's own check says it, its password masked
        # A URL may hold a password: not shown.
        shown = "a URL" if "://" in arg else repr(arg)
        return f"the value of {before} ({shown})" if before else f"argument {at + 1} ({shown})"
    return None


_DATABASE_FLAGS = frozenset({"-d", "--database", "--db"})


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _show_warning(*args: Any, **kwargs: Any) -> None:
    """:func:`sandbox.death.show_warning_line`, imported when a warning comes (start-up
    stays light)."""
    from sandbox.death import show_warning_line

    show_warning_line(*args, **kwargs)


def run() -> None:
    """Exit with :func:`main`'s code (the console script is :func:`kryt.entry.run`)."""
    sys.exit(main())


if __name__ == "__main__":
    run()
