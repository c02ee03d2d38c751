"""``kryt arena``: run the arena server and manage its authors, invites and tokens;
``kryt submissions``: an author's uploaded versions and their validation."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from kryt.errors import ExitCode, UserError
from kryt.options import MAX_ID, DatabaseOption, open_db

MAX_LIFETIME_DAYS = 36500
"""The longest token lifetime (``arena.db.accounts.MAX_LIFETIME_DAYS``, not imported here:
the command line starts without the database layer)."""

app = typer.Typer(no_args_is_help=True)
author_app = typer.Typer(no_args_is_help=True)
token_app = typer.Typer(no_args_is_help=True)
invite_app = typer.Typer(no_args_is_help=True)
app.add_typer(author_app, name="author", help="Create, list, disable and enable authors.")
app.add_typer(invite_app, name="invite", help="One-use codes with which people register.")
app.add_typer(token_app, name="token", help="Create, list and revoke API tokens.")
out = Console()

ServerOption = Annotated[
    str, typer.Option("--server", envvar="KRYT_SERVER", help="The arena server's URL.")
]


@app.command("serve")
def serve(
    database: DatabaseOption = None,
    host: Annotated[str | None, typer.Option(help="Address to listen on.")] = None,
    port: Annotated[
        int | None, typer.Option(help="Port (0: any free port).", min=0, max=65535)
    ] = None,
    store: Annotated[Path | None, typer.Option(help="Where unpacked submissions live.")] = None,
    ladder: Annotated[bool, typer.Option(help="Run the ladder in the background.")] = True,
    games_per_series: Annotated[int | None, typer.Option(help="Ladder games per series.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Ladder series at a time.")] = None,
    budget: Annotated[int | None, typer.Option(help="Ladder games in all (0: no limit).")] = None,
    backend: Annotated[
        str | None, typer.Option(help="Sandbox: auto, docker, bwrap or process.")
    ] = None,
    executor: Annotated[
        str | None, typer.Option(help="Ladder series: local (threads here) or dask (a cluster).")
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(help="Dask scheduler address (tcp://HOST:8786); none: a local cluster."),
    ] = None,
    dask_workers: Annotated[
        int | None, typer.Option(help="Workers of the local Dask cluster (no --scheduler).")
    ] = None,
    port_file: Annotated[Path | None, typer.Option(help="Write the bound port here.")] = None,
) -> None:
    """Serve the leaderboard, the authors' API and pages, and run the ladder."""
    from dataclasses import replace

    from arena.service.server import ServeError, listen
    from arena.service.server import serve as run_server
    from arena.service.settings import ServiceSettings

    overrides: dict[str, Any] = {
        k: v for k, v in {"host": host, "port": port, "store": store}.items() if v is not None
    }
    ladder_overrides: dict[str, Any] = {
        f"ladder_{k}": v
        for k, v in {
            "enabled": ladder,
            "games_per_series": games_per_series,
            "concurrency": concurrency,
            "budget_games": budget,
            "executor": executor,
            "scheduler": scheduler,
            "dask_workers": dask_workers,
        }.items()
        if v is not None
    }
    try:
        settings = ServiceSettings.from_env(None, **overrides, **ladder_overrides)
    except (ValueError, TypeError) as exc:
        raise UserError(str(exc)) from None
    if backend is not None:
        settings = replace(settings, sandbox=replace(settings.sandbox, backend=backend))
    try:
        # The address first: a typo in --host must not leave a new, empty database behind.
        sock = listen(settings.host, settings.port)
        try:
            db = open_db(database)
        except BaseException:
            sock.close()
            raise
        out.print(f"database {db.display_url}", highlight=False)
        run_server(db, settings, port_file=port_file, sock=sock)
    except ServeError as exc:
        if exc.unavailable:
            raise UserError(
                str(exc),
                code=ExitCode.UNAVAILABLE,
                hint=exc.hint or "choose another --port (or --host)",
            ) from None
        raise UserError(str(exc), hint=exc.hint or "") from None


@author_app.command("add")
def author_add(
    name: Annotated[str, typer.Argument(help="The author's name (a-z, 0-9, _ and -).")],
    database: DatabaseOption = None,
    password: Annotated[
        bool, typer.Option("--password", help="Also set a web password (asked twice).")
    ] = False,
    days: Annotated[
        int,
        typer.Option(help="Lifetime of the first API token in days.", min=1, max=MAX_LIFETIME_DAYS),
    ] = 90,
) -> None:
    """Create an author and print their first API token (shown only this once)."""
    from arena.db.accounts import check_author_name, create_author, create_token
    from arena.service.auth import hash_password

    check_author_name(name)  # before a password is asked for or a database created
    password_hash = None
    if password:
        secret = typer.prompt("password", hide_input=True, confirmation_prompt=True)
        try:
            password_hash = hash_password(secret)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    db = open_db(database)
    with db.session() as session:
        create_author(name, session=session, password_hash=password_hash)
        token = create_token(name, session=session, lifetime=timedelta(days=days), label="first")
    out.print(f"author {name} created; API token (shown once, keep it secret):", highlight=False)
    print(token.secret)


@author_app.command("list")
def author_list(database: DatabaseOption = None) -> None:
    """Every author and their bots."""
    from arena.db.accounts import bots_of_author, list_authors
    from sandbox.death import printable

    db = open_db(database, create=False)
    with db.read_session() as session:
        for author in list_authors(session=session):
            assert author.id is not None
            bots = ", ".join(b.name for b in bots_of_author(author.id, session=session))
            state = " (disabled)" if author.disabled else ""
            # Plain text, escaped: a stored name may predate (or bypass) the name rule.
            typer.echo(printable(f"{author.name}{state}: {bots or 'no bots'}"))


def _set_disabled(name: str, disabled: bool, database: str | None) -> None:
    from arena.db import NotFoundError
    from arena.db.accounts import audit, set_author_disabled

    db = open_db(database, create=False)
    try:
        with db.session() as session:
            author = set_author_disabled(name, disabled, session=session)
            audit(
                "author",
                "disabled" if disabled else "enabled",
                session=session,
                author_id=author.id,
                target=name,
                remote="cli",
            )
    except NotFoundError as exc:
        raise UserError(str(exc)) from None


@author_app.command("disable")
def author_disable(
    name: Annotated[str, typer.Argument(help="The author.")], database: DatabaseOption = None
) -> None:
    """Disable an author: their tokens and logins stop working at once and their bots leave
    the ladder; their bots, games and logs are kept (`enable` reverses it)."""
    _set_disabled(name, True, database)
    out.print(f"author {name} disabled", highlight=False)


@author_app.command("enable")
def author_enable(
    name: Annotated[str, typer.Argument(help="The author.")], database: DatabaseOption = None
) -> None:
    """Enable a disabled author again (their unexpired, unrevoked tokens work again)."""
    _set_disabled(name, False, database)
    out.print(f"author {name} enabled", highlight=False)


@invite_app.command("create")
def invite_create(
    database: DatabaseOption = None,
    days: Annotated[float, typer.Option(help="Days until the code expires.")] = 7,
    label: Annotated[str, typer.Option(help="A note: whom the code is for.")] = "",
) -> None:
    """A one-use invite code (printed once): with it a person registers as an author at
    /register or POST /api/register, choosing a name and password, and gets a token."""
    from arena.db.accounts import audit, create_invite

    if not 0 < days <= 365:
        raise UserError(f"--days must be in (0, 365], got {days}")
    db = open_db(database)
    with db.session() as session:
        invite = create_invite(session=session, lifetime=timedelta(days=days), label=label)
        audit("invite", "created", session=session, target=str(invite.invite_id), detail=label)
    out.print(
        f"invite {invite.invite_id}, expires {invite.expires_at:%Y-%m-%d %H:%M} UTC "
        "(one use; shown once):",
        highlight=False,
    )
    print(invite.code)


@invite_app.command("list")
def invite_list(database: DatabaseOption = None) -> None:
    """Every invite and whether it was used (never the codes)."""
    from arena.db.accounts import list_invites
    from arena.db.models import Author
    from arena.db.types import utcnow
    from sandbox.death import printable

    db = open_db(database, create=False)
    now = utcnow()
    with db.read_session() as session:
        for row in list_invites(session=session):
            if row.used_at is not None:
                who = session.get(Author, row.author_id) if row.author_id else None
                state = f"used {row.used_at:%Y-%m-%d} by {who.name if who else '?'}"
            elif row.expires_at <= now:
                state = "expired"
            else:
                state = f"open until {row.expires_at:%Y-%m-%d %H:%M}"
            label = printable(row.label or "-").replace("\t", "\\t")
            typer.echo(f"{row.id}\t{label}\t{state}")  # plain tabs, easy to cut


@token_app.command("create")
def token_create(
    author: Annotated[str, typer.Argument(help="The author.")],
    database: DatabaseOption = None,
    days: Annotated[int, typer.Option(help="Lifetime in days.", min=1, max=MAX_LIFETIME_DAYS)] = 90,
    label: Annotated[str, typer.Option(help="A note to tell tokens apart.")] = "",
) -> None:
    """A new API token for an author (printed once)."""
    from arena.db.accounts import create_token

    db = open_db(database, create=False)
    with db.session() as session:
        token = create_token(author, session=session, lifetime=timedelta(days=days), label=label)
    out.print(f"token {token.token_id}, expires {token.expires_at:%Y-%m-%d}:", highlight=False)
    print(token.secret)


@token_app.command("list")
def token_list(
    author: Annotated[str, typer.Argument(help="The author.")], database: DatabaseOption = None
) -> None:
    """An author's tokens (never the secrets)."""
    from arena.db.accounts import list_tokens
    from sandbox.death import printable

    db = open_db(database, create=False)
    with db.read_session() as session:
        for t in list_tokens(author, session=session):
            state = "revoked" if t.revoked_at else f"expires {t.expires_at:%Y-%m-%d}"
            used = f"last used {t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never used"
            label = printable(t.label or "-").replace("\t", "\\t")
            typer.echo(f"{t.id}\t{label}\t{state}\t{used}")  # plain tabs, easy to cut


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[
        int, typer.Argument(min=1, max=MAX_ID, help="The token's id (see `token list`).")
    ],
    database: DatabaseOption = None,
) -> None:
    """Revoke a token at once."""
    from arena.db.accounts import revoke_token

    db = open_db(database, create=False)
    with db.session() as session:
        revoke_token(token_id, session=session)
    out.print(f"token {token_id} revoked", highlight=False)


def submissions(server: ServerOption) -> None:
    """Your uploaded versions on the server and the outcome of their validation."""
    from arena.service.server import Client, ClientError, ServerUnreachableError, read_token
    from kryt.commands.submit import server_url
    from sandbox.death import printable

    try:
        rows = Client(server_url(server), read_token()).submissions()
    except ClientError as exc:
        code = (
            ExitCode.UNAVAILABLE if isinstance(exc, ServerUnreachableError) else ExitCode.BAD_INPUT
        )
        raise UserError(printable(str(exc)), code=code) from None
    if not rows:
        out.print("no submissions yet", highlight=False)
    for row in rows:
        check = row.get("check")
        check = check if isinstance(check, dict) else {}
        # Plain tab-separated lines: easy to read and to cut. Every field comes from the
        # server, the bot's name, version and check message from its author: control and
        # bidi characters are shown as escapes, tabs too (they would shift the columns).
        fields = (
            row.get("submission_id", "?"),
            f"{row.get('bot', '?')} {row.get('version', '?')}",
            row.get("status", "?"),
            check.get("status", "-"),
            check.get("message", ""),
        )
        typer.echo("\t".join(printable(str(f)).replace("\t", "\\t") for f in fields))
