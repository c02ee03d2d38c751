"""The ``kryt`` command: wires the command groups and turns typed errors into one clear line.

User errors (bad flags, malformed files, invalid bots, unreachable services) print one line with
what to do and exit with a meaningful code (see :class:`kryt.errors.ExitCode`); ``--verbose``
adds the traceback. Anything else is a bug and is shown in full.
"""

from __future__ import annotations

import logging
import os
import sys

# gRPC's C core logs an INFO line whenever a sandbox process is forked while its threads run;
# that is expected here, so keep its log to errors (the user can still override both).
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
from typing import Annotated

import typer

from kryt.commands import arena, bot, demo, leaderboard, play, ratings, replay, submit, tournament
from kryt.errors import ExitCode, classify

app = typer.Typer(
    name="kryt",
    help="Kryt Arena: tournaments for Kryt'-navalivat' card-game bots.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
app.add_typer(bot.app, name="bot", help="Bot authors: create and check bots.")
app.command("play")(play.play)
app.command("submit")(submit.submit)
app.add_typer(tournament.app, name="tournament", help="Organisers: run round-robin tournaments.")
app.command("replay")(replay.replay)
app.add_typer(leaderboard.app, name="leaderboard", help="Everyone: the leaderboard.")
app.add_typer(ratings.app, name="ratings", help="Rate any result set (BayesElo model).")
app.command("demo")(demo.demo)
app.add_typer(arena.app, name="arena", help="Organisers: run the arena server, add authors.")
app.command("submissions")(arena.submissions)

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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``kryt`` console script; returns the exit code."""
    command = typer.main.get_command(app)
    args = sys.argv[1:] if argv is None else argv
    verbose = "--verbose" in args or "-v" in args
    try:
        result = command.main(args=args, prog_name="kryt", standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        typer.echo("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except typer.TyperException as exc:  # usage errors: unknown option, bad value...
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            typer.echo(f"error: {exc}", err=True)
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt:
        typer.echo("interrupted: work done so far is saved", err=True)
        return ExitCode.INTERRUPTED
    except Exception as exc:
        known = classify(exc)
        if known is None:
            raise
        if verbose:
            logging.getLogger("kryt").exception("details")
        typer.echo(f"error: {known}", err=True)
        if known.hint:
            typer.echo(f"hint: {known.hint}", err=True)
        return known.code
    code = result if isinstance(result, int) else ExitCode.OK
    if code == ExitCode.INTERRUPTED:  # typer turns Ctrl-C into exit code 130
        typer.echo("interrupted: work done so far is saved", err=True)
    return code


def run() -> None:
    """Console-script entry point: exit with :func:`main`'s code."""
    sys.exit(main())


if __name__ == "__main__":
    run()
