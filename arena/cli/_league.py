"""``arena league …`` (running a league) and ``arena login`` (joining one).

The league home a command works on is ``--league DIR``, else ``$ARENA_LEAGUE``, else the
current directory: an admin on the league's machine can ``cd`` into the home and type
``arena league user add alice``. These commands open the league's database directly; they
are for whoever runs the league. Bot authors use ``arena login`` and ``arena submit``,
which talk to the league server over HTTP; ``arena league standings`` and ``arena league
status`` do either: the server by default, the league home with ``--league DIR``.

Tokens go to standard output alone, everything else to standard error, so a script can
take a token with ``TOKEN=$(arena league user add alice)``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from arena.cli._errors import ArenaCliError
from arena.cli._serve import serve
from arena.cli._submit import league_errors
from arena.cli._table import STANDINGS_LEGEND, standings_table
from arena.client._league import client_for
from arena.ladder._standings import BotStanding
from arena.league import (
    ArtifactError,
    Credentials,
    IssuedToken,
    IssuedWorkerToken,
    League,
    LeagueConfigError,
    LeagueError,
    Role,
    add_worker,
    create_user,
    disable_bot,
    disable_user,
    disable_worker,
    init_league,
    issue_token,
    list_users,
    list_workers,
    open_league,
    save_credentials,
    unit_of_work,
)
from arena.league.matches._leaderboard import LeaderRow, leaderboard, league_status

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


@league.group("worker")
def worker_group() -> None:
    """Add the machines of a Celery fleet (arena worker), issue their tokens, disable them."""


@worker_group.command("add")
@click.argument("name")
@league_option
def worker_add(name: str, home: Path) -> None:
    """Add the worker NAME and print its token (for ARENA_WORKER_TOKEN), shown only once.

    \b
    Example:
        arena league worker add box1 --league ./myleague
    """
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        issued = add_worker(session, opened.key, name)
    _show_worker_token(issued)


@worker_group.command("token")
@click.argument("name")
@league_option
def worker_token(name: str, home: Path) -> None:
    """Issue the worker NAME a new token, revoking its old one, and print it."""
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        issued = add_worker(session, opened.key, name, replace=True)
    _show_worker_token(issued)


@worker_group.command("disable")
@click.argument("name")
@click.option("--enable", is_flag=True, help="Enable the worker again instead.")
@league_option
def worker_disable(name: str, enable: bool, home: Path) -> None:
    """Disable the worker NAME: its token is refused from its next call on."""
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        disable_worker(session, name, disabled=not enable)
    click.echo(f"{name}: {'enabled' if enable else 'disabled'}", err=True)


@worker_group.command("list")
@league_option
def worker_list(home: Path) -> None:
    """List the league's workers: name, state, when last seen."""
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        rows = list_workers(session)
    for name, disabled, seen in rows:
        state = "disabled" if disabled else "active"
        click.echo(f"{name}\t{state}\t{seen.isoformat() if seen else 'never seen'}")


def _show_worker_token(issued: IssuedWorkerToken) -> None:
    click.echo(f"token of the worker {issued.name}, shown only this once:", err=True)
    click.echo(issued.token)


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


league.add_command(serve)


def _home_option(f: F) -> F:
    """``--league DIR``: read the league home directly (default: ask the server)."""
    return click.option(
        "--league",
        "home",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="ARENA_LEAGUE",
        default=None,
        help="Read the league home DIR directly, on the league's machine ($ARENA_LEAGUE).  "
        "[default: ask the league's server]",
    )(f)


def _url_option(f: F) -> F:
    """``--url URL``: the league server (default: the one ``arena login`` stored)."""
    return click.option(
        "--url",
        metavar="URL",
        help="The league server.  [default: the one `arena login` stored]",
    )(f)


def _json_option(f: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print the API's JSON instead of text."
    )(f)


def _read(
    home: Path | None, url: str | None, direct: Callable[[League], dict[str, Any]], api: str
) -> dict[str, Any]:
    """What the league home (``--league``) or else its server (endpoint ``api``) answers."""
    if home is not None and url is not None:
        raise click.UsageError("give --league DIR or --url URL, not both")
    if home is not None:
        with _opened(home) as opened:
            return direct(opened)
    with league_errors(), client_for(url, signed_in=False) as client:
        answer: dict[str, Any] = getattr(client, api)()
        return answer


def _leaderboard_json(opened: League) -> dict[str, Any]:
    """The leaderboard as the API answers it, read from the league home."""
    # Imported here, not at start-up: only reading a home directly needs the web stack.
    from fastapi.encoders import jsonable_encoder

    with unit_of_work(opened.sessions) as session:
        rows = leaderboard(session)
    return {"league": opened.config.name, "standings": jsonable_encoder(rows)}


def _leader_row(data: Mapping[str, Any]) -> LeaderRow:
    """A leaderboard row read back from the API's JSON."""
    try:
        values = {f.name: data[f.name] for f in fields(LeaderRow)}
        if values["last_played"] is not None:
            values["last_played"] = dt.datetime.fromisoformat(values["last_played"])
        return LeaderRow(**values)
    except (KeyError, TypeError, ValueError) as e:
        raise ArenaCliError(
            f"the league's standings are not in a form this arena reads ({e!r}):"
            " is the server another version?"
        ) from e


def _standing(row: LeaderRow) -> BotStanding:
    """The table row of a league row: the bot named with its version (``alpha v3``)."""
    return replace(row.standing(), bot=f"{row.bot} v{row.version}")


LEAGUE_LEGEND_NOTE = """\
In a league, each row is a bot's active version; its intervals take the match as the unit,
and its rating μ is carried over from the version it replaced (docs/league.md)."""


@league.command("standings")
@_home_option
@_url_option
@_json_option
def standings(home: Path | None, url: str | None, as_json: bool) -> None:
    """Print the league's standings: its active versions, ranked as `arena run` ranks bots.

    The same table as `arena run` prints: rank (2= is a tie), matches, score with its 95%
    interval, mean and luck-adjusted place, first places, rating. Versions without a
    counted match yet come last, unranked.

    \b
    Examples:
        arena league standings                        # the league `arena login` stored
        arena league standings --url http://127.0.0.1:8000
        arena league standings --league ./myleague    # on the league's machine
        arena league standings --json
    """
    answer = _read(home, url, _leaderboard_json, "leaderboard")
    if as_json:
        click.echo(json.dumps(answer, indent=2))
        return
    rows = [_leader_row(r) for r in answer["standings"]]
    played = sum(1 for r in rows if r.matches)
    title = f"League {answer['league']!r}: {played} of {len(rows)} active versions ranked"
    console = Console(width=None if sys.stdout.isatty() else 130)
    console.print(standings_table([_standing(r) for r in rows], title))
    console.print(STANDINGS_LEGEND, soft_wrap=True, markup=False)
    console.print(LEAGUE_LEGEND_NOTE, soft_wrap=True, markup=False)


def _status_json(opened: League) -> dict[str, Any]:
    """The league's status as the API answers it (without an executor), read from the home."""
    from fastapi.encoders import jsonable_encoder

    with unit_of_work(opened.sessions) as session:
        info = league_status(session)
    return {
        "league": opened.config.name,
        **jsonable_encoder(info),
        "spread": info.spread,
        "executor": None,
    }


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in counts.items()) or "none"


@league.command("replay")
@click.argument("match", type=click.IntRange(min=1))
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where the replay goes.  [default: mMATCH.jsonl here]",
)
@_url_option
def replay_command(match: int, out: Path | None, url: str | None) -> None:
    """Download the replay of league match MATCH, to tell, ask about or fork it here.

    A replay is served once every match of its duplicate group is over (they share their
    deals). Signed in (`arena login`), the notes your own bots left are in it; others' are
    not. Then `arena replay FILE`, `arena replay FILE --at HAND.STEP --seat N --bot DIR` and
    `arena fork FILE …` work on it as on a replay of `arena run`.

    \b
    Example:
        arena league replay 1234 -o m1234.jsonl
        arena fork m1234.jsonl --at 3.12 --seat 1 --bot ./mybot
    """
    target = out or Path(f"m{match}.jsonl")
    with league_errors(), client_for(url, signed_in=False) as client:
        data = client.replay(match)
    try:
        target.write_bytes(data)
    except OSError as e:
        raise ArenaCliError(f"cannot write {target}: {e.strerror or e}") from e
    click.echo(f"match {match}'s replay: {target} ({len(data)} bytes)")


@league.command("status")
@_home_option
@_url_option
@_json_option
def status(home: Path | None, url: str | None, as_json: bool) -> None:
    """Print how the league is doing: its queue, throughput, fairness and validations.

    Fairness is the spread of counted matches over the active versions (most less fewest):
    the scheduler keeps it small.

    \b
    Examples:
        arena league status
        arena league status --league ./myleague
        arena league status --json
    """
    s = _read(home, url, _status_json, "status")
    if as_json:
        click.echo(json.dumps(s, indent=2))
        return
    click.echo(f"league      {s['league']}")
    click.echo(
        f"matches     {s['queued']} queued, {s['running']} running, {s['finished']} finished"
        f" ({s['finished_last_minute']} in the last minute)"
    )
    click.echo(
        f"versions    {s['active_versions']} active; counted matches per active version:"
        f" {s['matches_min']} to {s['matches_max']} (mean {s['matches_mean']:.1f},"
        f" spread {s['spread']})"
    )
    click.echo(f"by status   {_counts(s['versions'])}")
    click.echo(f"validation  steps: {_counts(s['validations'])}")
    click.echo(f"faults      {s['faults']}")
    if s.get("executor"):
        for i, (key, value) in enumerate(_flat(s["executor"])):
            click.echo(f"{'executor' if i == 0 else '':<12}{key}: {value}")


def _flat(value: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """A nested mapping as (dotted key, value) pairs: what the executor says it is doing."""
    for key, item in value.items():
        if isinstance(item, Mapping) and item:
            yield from _flat(item, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", json.dumps(item) if not isinstance(item, str) else item
