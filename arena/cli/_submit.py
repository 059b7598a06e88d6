"""``arena submit``: pack a bot, upload it to the league, follow its validation live.

Exit codes: 0 the version passed validation (active, or validated and kept inactive with
``--no-activate``; or uploaded, with ``--no-follow``), 1 it was rejected (the step and why
are printed), 2 the league refused the upload (not your bot, the daily limit, a hostile or
broken archive), 3 the league cannot be reached or used (not logged in, a server error, the
validation still running at ``--timeout``), 130 interrupted (the league goes on validating).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from arena._errors import ArtifactError, LeagueConfigError, LeagueError
from arena.cli._errors import ArenaCliError
from arena.client._league import LeagueClient, LeagueUnavailable, client_for
from arena.client._pack import pack_bot
from flipflop import ManifestError, read_manifest

__all__ = ["URL_OPTION", "activate", "league_errors", "submit", "versions"]

# How a finished step is told, by its outcome.
_OUTCOME_WORDS = {
    "passed": "passed",
    "failed": "FAILED",
    "error": "error (the league's fault, not your bot's: it will be run again)",
}


@contextmanager
def league_errors() -> Iterator[None]:
    """League errors as one-line CLI errors: exit 3 when the league cannot be used, else 2."""
    try:
        yield
    except (LeagueConfigError, LeagueUnavailable, ArtifactError) as e:
        raise ArenaCliError(str(e)) from e
    except LeagueError as e:
        raise click.UsageError(str(e)) from e


URL_OPTION = click.option(
    "--url",
    metavar="URL",
    help="The league server.  [default: the one `arena login` stored]",
)


@click.command()
@click.argument("bot_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--name",
    help="The bot's name in the league (1-32 letters, digits, '-' or '_').  "
    "[default: the name in its bot.toml]",
)
@click.option(
    "--no-activate",
    is_flag=True,
    help="Validate the version but keep the bot's current version playing; activate it later.",
)
@click.option(
    "--no-follow", is_flag=True, help="Return once uploaded, without waiting for validation."
)
@URL_OPTION
@click.option(
    "--poll",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="How often to ask the league how the validation is going.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=3600.0,
    show_default=True,
    metavar="SECONDS",
    help="Stop following (exit 3) if the validation has not ended by then.",
)
def submit(
    bot_dir: Path,
    name: str | None,
    no_activate: bool,
    no_follow: bool,
    url: str | None,
    poll: float,
    timeout: float,
) -> None:
    """Submit the bot in BOT_DIR to the league and follow its validation.

    The directory is packed (version control, caches and local environments such as
    .venv and node_modules are left out; symbolic links are refused), uploaded as a new
    version of the bot, then built, checked and played in a validation match against the
    league's house bots. Each step is printed as it starts and as it ends, with its
    outcome and detail. Submitting an unchanged bot again is recognised: the existing
    version is followed and no daily submission is used.

    The league and your token are those `arena login` stored; $ARENA_TOKEN overrides the
    token. Exit codes: 0 validated (or uploaded, with --no-follow), 1 rejected, 2 refused by
    the league, 3 the league cannot be reached or used, 130 interrupted.

    \b
    Examples:
        arena login http://127.0.0.1:8000
        arena submit mybot
        arena submit mybot --name mybot-exp --no-activate
        arena submit mybot --no-follow --url https://league.example.org
    """
    try:
        manifest = read_manifest(bot_dir)
    except ManifestError as e:
        raise click.UsageError(str(e)) from e
    bot = name or manifest.name
    with league_errors():
        archive = pack_bot(bot_dir)
        client = client_for(url, signed_in=True)
    with client, league_errors():
        submitted = client.submit(bot, archive, activate=not no_activate)
        version = submitted["version"]
        number = int(version["number"])
        if submitted["new"]:
            left = submitted.get("left_today")
            more = "" if left is None else f"; {left} more submission(s) allowed today"
            click.echo(f"uploaded {bot} v{number} to {client.url} ({len(archive)} bytes{more})")
        else:
            click.echo(
                f"{bot} v{number} is this very archive, submitted before (it is"
                f" {version['status']}): nothing new uploaded, no submission used"
            )
        if no_follow:
            click.echo(f"{bot} v{number}: {version['status']} (not following its validation)")
            return
        final = _follow(client, bot, number, poll, timeout)
    _conclude(final, activate=not no_activate)


def _follow(
    client: LeagueClient, bot: str, number: int, poll: float, timeout: float
) -> dict[str, Any]:
    """Print each validation step of ``bot`` v``number`` as it starts and as it ends.

    Returns the version once its validation is over.
    """
    told: set[tuple[str, str, str]] = set()
    final: dict[str, Any] = {}
    try:
        for version in client.follow(bot, number, interval=poll, timeout=timeout):
            if not final and version["status"] == "uploaded":
                click.echo(f"  {bot} v{number}: waiting for the league to validate it", err=True)
            for step in version.get("steps", []):
                key = (step["step"], str(step["outcome"]), str(step["started"]))
                if key not in told:
                    told.add(key)
                    _tell_step(step)
            final = version
    except TimeoutError as e:
        raise ArenaCliError(
            f"{e}; the league goes on validating it (see {client.url}/api/v1/bots/{bot}"
            f"/versions/{number})"
        ) from e
    except KeyboardInterrupt:
        click.echo(
            f"\nstopped following {bot} v{number}; the league goes on validating it", err=True
        )
        sys.exit(130)
    return final


def _tell_step(step: dict[str, Any]) -> None:
    """One line for a step that started; for one that ended, its outcome and its detail."""
    if step["outcome"] is None:
        click.echo(f"  {step['step']:<6} running…", err=True)
        return
    outcome = _OUTCOME_WORDS.get(step["outcome"], step["outcome"])
    took = _duration(step.get("started"), step.get("finished"))
    click.echo(f"  {step['step']:<6} {outcome}{took}", err=True)
    for line in str(step.get("detail", "")).splitlines():
        click.echo(f"         {line}", err=True)


def _duration(started: str | None, finished: str | None) -> str:
    if not started or not finished:
        return ""
    seconds = (datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()
    return f" ({seconds:.1f} s)"


def _conclude(version: dict[str, Any], *, activate: bool) -> None:
    """The last word: what became of the version, and the exit code that says it."""
    bot, number, status = version["bot"], version["number"], version["status"]
    if status == "active":
        click.echo(f"{bot} v{number} is active: it plays in the league from now on")
        return
    if status == "retired":
        why = (
            "kept inactive as asked (--no-activate)"
            if not activate
            else "another version has been made active since"
        )
        click.echo(
            f"{bot} v{number} passed validation; {why}. Make it the playing version with"
            f" `arena activate {bot} {number}`"
        )
        return
    failed = next((s for s in version.get("steps", []) if s["outcome"] == "failed"), None)
    if failed is not None:
        # Its detail, the reason, was just printed with the step.
        click.echo(f"{bot} v{number} was rejected at its {failed['step']} step (why: above)")
    else:
        reason = version.get("reason") or "no reason given"
        click.echo(f"{bot} v{number} was rejected: {reason}")
    sys.exit(1)


@click.command()
@click.argument("bot")
@URL_OPTION
def versions(bot: str, url: str | None) -> None:
    """List the versions of BOT in the league, newest first, with their status.

    Anyone may list them; the owner (and an admin) also sees why a version was rejected.

    \b
    Example:
        arena versions mybot
    """
    with league_errors():
        client = client_for(url, signed_in=False)
    with client, league_errors():
        listed = client.bot(bot)["versions"]
    for v in sorted(listed, key=lambda v: -int(v["number"])):
        rating = v["rating"]
        line = (
            f"v{v['number']:<4} {v['status']:<10} {str(v['created'])[:19].replace('T', ' ')}"
            f"  rating {rating['mu']:.1f} ± {1.96 * rating['sigma']:.1f}"
        )
        if v.get("reason"):
            line += f"  ({str(v['reason']).splitlines()[0]})"
        click.echo(line)


@click.command()
@click.argument("bot")
@click.argument("number", type=click.IntRange(min=1))
@URL_OPTION
def activate(bot: str, number: int, url: str | None) -> None:
    """Make version NUMBER of your bot BOT the one that plays (a rollback, or a roll forward).

    Only a version that passed validation can play; the version playing now is retired.

    \b
    Example:
        arena versions mybot
        arena activate mybot 2
    """
    with league_errors():
        client = client_for(url, signed_in=True)
    with client, league_errors():
        version = client.activate(bot, number)
    click.echo(f"{version['bot']} v{version['number']} is {version['status']}")
