"""``kryt bot``: create a bot from the template and check a bot over the real protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kryt.errors import ExitCode, UserError
from kryt.options import MAX_GAMES, BackendAliasOption, backend_choice

app = typer.Typer(help="Write and check bots.", no_args_is_help=True)


@app.command("new")
def new(
    name: Annotated[str, typer.Argument(help="Bot name: \\[a-z0-9]\\[a-z0-9_-]{0,39}.")],
    directory: Annotated[
        Path, typer.Option("--dir", "-d", help="Folder to create the bot in.")
    ] = Path("."),
    language: Annotated[
        str,
        typer.Option("--language", "-l", help="python (default), node, java, cpp or go."),
    ] = "python",
) -> None:
    """Create NAME/ with a working bot: bot.toml and the code of a starting point."""
    import shlex

    from sandbox.death import printable
    from sdk.tools.template import (
        BotTemplateError,
        InvalidBotNameError,
        UnknownLanguageError,
        new_bot,
    )

    try:
        # new_bot checks the name before it writes anything: a refused name leaves no folder.
        folder = new_bot(name, directory, language=language)
    except UnknownLanguageError as exc:
        raise UserError(str(exc)) from None
    except InvalidBotNameError as exc:
        raise UserError(str(exc), hint="choose another name, e.g. my-bot") from None
    except BotTemplateError as exc:
        raise UserError(str(exc), hint="choose another name or folder") from None
    # The folder comes from --dir as given: quoted so the next line can be pasted into a
    # shell, and escaped so a control character in it cannot act on the terminal.
    shown = printable(shlex.quote(str(folder)))
    typer.echo(f"created {printable(str(folder))}")
    if language.lower() == "python":
        typer.echo(f"next: cd {shown} && python test_bot.py && kryt bot check .")
    else:
        typer.echo(f"next: cd {shown} && kryt bot check . --backend docker")


@app.command("check")
def check(
    target: Annotated[str, typer.Argument(help="Bot folder (with bot.toml) or its address.")],
    games: Annotated[
        int, typer.Option("--games", "-n", min=1, max=MAX_GAMES, help="Games to play.")
    ] = 10,
    seed: Annotated[str, typer.Option(help="Series seed (decks and first dealer).")] = "0",
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            help="Sandbox backend for a bot folder: auto, docker, bwrap, process, or none"
            " (a plain subprocess).",
        ),
    ] = "auto",
    sandbox_alias: BackendAliasOption = None,
) -> None:
    """Start the bot in the sandbox, play GAMES games over gRPC against the greedy bot and
    report problems (crashes, timeouts, slow replies, illegal or malformed actions).
    TARGET may be builtin:NAME for a bundled bot."""
    from sandbox.chooser import check_preference
    from sdk.tools.check import check_bot

    chosen = backend_choice(backend, sandbox_alias)
    if chosen != "none":
        try:  # before anything starts; the chooser's own words, as `kryt play` says them
            check_preference(chosen)
        except ValueError as exc:
            raise UserError(f"--backend: {exc} (or none: a bot given by address)") from None
    report = check_bot(target, games=games, seed=seed, sandbox=None if chosen == "none" else chosen)
    typer.echo(report.format())  # its "sandbox:" line names the backend the bot ran in
    if not report.ok:
        raise typer.Exit(ExitCode.FAILED)
