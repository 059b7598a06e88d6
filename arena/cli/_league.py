"""``arena league …`` (running a league) and ``arena login`` (joining one).

The league home a command works on is ``--league DIR``, else ``$ARENA_LEAGUE``, else the
current directory: an admin on the league's machine can ``cd`` into the home and type
``arena league user add alice``. These commands open the league's database directly; they
are for whoever runs the league. Bot authors use ``arena login`` (and later ``arena
submit``), which talk to the league server over HTTP.

Tokens go to standard output alone, everything else to standard error, so a script can
take a token with ``TOKEN=$(arena league user add alice)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from arena.cli._errors import ArenaCliError
from arena.league import (
    ArtifactError,
    Credentials,
    IssuedToken,
    League,
    LeagueConfigError,
    LeagueError,
    Role,
    create_user,
    disable_bot,
    disable_user,
    init_league,
    issue_token,
    list_users,
    open_league,
    save_credentials,
    unit_of_work,
)

__all__ = ["league", "login"]

F = TypeVar("F", bound=Callable[..., Any])


def league_option(f: F) -> F:
    """``--league DIR`` (default ``$ARENA_LEAGUE``, else the current directory)."""
    return click.option(
        "--league",
        "home",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="ARENA_LEAGUE",
        default=".",
        show_default="$ARENA_LEAGUE, else the current directory",
        help="The league home to work on.",
    )(f)


@contextmanager
def _refusals() -> Iterator[None]:
    """League errors as one-line CLI errors: exit 3 for a broken league, 2 for a refusal."""
    try:
        yield
    except (LeagueConfigError, ArtifactError) as e:
        raise ArenaCliError(str(e)) from e
    except LeagueError as e:
        raise click.UsageError(str(e)) from e


@contextmanager
def _opened(home: Path) -> Iterator[League]:
    with _refusals():
        opened = open_league(home)
    try:
        with _refusals():
            yield opened
    finally:
        opened.close()


def _show_token(issued: IssuedToken) -> None:
    click.echo(
        f"API token of {issued.account.name} ({issued.account.role}), shown only this once:",
        err=True,
    )
    click.echo(issued.token)


@click.group()
def league() -> None:
    """Run a league: its home, its users and their bots.

    \b
    Examples:
        arena league init ./myleague        # prints the admin's token
        cd myleague && arena league user add alice
        arena league user token alice --league ./myleague   # a new token, the old one revoked
    """


@league.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--name", help="The league's name.  [default: the directory's name]")
@click.option(
    "--admin", default="admin", show_default=True, help="The name of the first user, an admin."
)
@click.option(
    "--db",
    "database",
    default="",
    metavar="URL",
    help="A PostgreSQL database (postgresql://user@host/dbname) instead of the default "
    "SQLite file in DIRECTORY; it must be empty.",
)
def init(directory: Path, name: str | None, admin: str, database: str) -> None:
    """Make a league home in DIRECTORY and print its admin's API token.

    DIRECTORY must not exist or be empty. It gets league.toml (the settings), secret.key,
    the database (league.db, migrated to the newest schema) and the artifact store.

    \b
    Example:
        arena league init ./myleague
    """
    with _refusals():
        made, issued = init_league(directory, name=name, admin=admin, database=database)
    made.close()
    click.echo(f"made the league {made.config.name!r} in {made.home}", err=True)
    _show_token(issued)


@league.group()
def user() -> None:
    """Add users, issue their tokens, disable them."""


@user.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="Make the user an admin of the league.")
@league_option
def user_add(name: str, admin: bool, home: Path) -> None:
    """Add the user NAME and print their API token.

    \b
    Example:
        arena league user add alice --league ./myleague
    """
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        create_user(session, name, role=Role.ADMIN if admin else Role.USER)
        issued = issue_token(session, opened.key, name)
    _show_token(issued)


@user.command("token")
@click.argument("name")
@league_option
def user_token(name: str, home: Path) -> None:
    """Issue NAME a new API token, revoking their others, and print it.

    \b
    Example:
        arena league user token alice
    """
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        issued = issue_token(session, opened.key, name)
    _show_token(issued)


@user.command("disable")
@click.argument("name")
@click.option("--enable", is_flag=True, help="Enable the user again instead.")
@league_option
def user_disable(name: str, enable: bool, home: Path) -> None:
    """Disable the user NAME: their tokens stop working and they cannot submit."""
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        account = disable_user(session, name, disabled=not enable)
    click.echo(f"{account.name}: {'disabled' if account.disabled else 'enabled'}", err=True)


@user.command("list")
@league_option
def user_list(home: Path) -> None:
    """List the league's users: name, role, state."""
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        accounts = list_users(session)
    for account in accounts:
        state = "disabled" if account.disabled else "active"
        click.echo(f"{account.name}\t{account.role}\t{state}")


@league.group()
def bot() -> None:
    """Manage the league's bots."""


@bot.command("disable")
@click.argument("name")
@click.option("--enable", is_flag=True, help="Enable the bot again instead.")
@league_option
def bot_disable(name: str, enable: bool, home: Path) -> None:
    """Disable the bot NAME: it is no longer scheduled."""
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        info = disable_bot(session, name, disabled=not enable)
    click.echo(f"{info.name}: {'disabled' if info.disabled else 'enabled'}", err=True)


@click.command()
@click.argument("url")
@click.argument("token", required=False)
def login(url: str, token: str | None) -> None:
    """Remember the league at URL and your API TOKEN for later commands.

    Without TOKEN it is asked for, unechoed (a token typed on the command line stays in
    the shell's history). Stored in ~/.config/flipflop-arena/credentials.toml (or under
    $XDG_CONFIG_HOME), readable by you alone; a later login replaces it.

    \b
    Example:
        arena login http://127.0.0.1:8000
    """
    if token is None:
        token = click.prompt("API token", hide_input=True)
    with _refusals():
        path = save_credentials(Credentials.checked(url, token))
    click.echo(f"stored the token for {url.rstrip('/')} in {path}", err=True)
