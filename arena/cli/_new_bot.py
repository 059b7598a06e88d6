"""``arena new-bot``."""

from __future__ import annotations

from pathlib import Path

import click

from arena._errors import ArenaError
from arena._scaffold import scaffold_bot
from arena.cli._errors import ArenaCliError

__all__ = ["new_bot"]


@click.command("new-bot")
@click.argument("name")
@click.option(
    "--dir",
    "parent",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where to create the bot directory.",
)
def new_bot(name: str, parent: Path) -> None:
    """Create a bot directory NAME from a template that passes the conformance check.

    \b
    Example:
        arena new-bot mybot && arena check mybot && arena run mybot random greedy
    """
    try:
        path = scaffold_bot(name, parent)
    except ArenaError as e:
        raise ArenaCliError(str(e)) from e
    click.echo(f"created {path}/ (bot.py, bot.toml, Dockerfile, README.md)")
    click.echo(f"next: arena check {path}")
