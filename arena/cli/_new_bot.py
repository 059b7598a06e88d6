"""``arena new-bot``."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from arena._errors import ArenaError
from arena.cli._errors import ArenaCliError
from arena.client._scaffold import DEFAULT_LANGUAGE, build_steps, languages, scaffold_bot

__all__ = ["new_bot"]


@click.command("new-bot")
@click.argument("name")
@click.option(
    "--lang",
    "language",
    type=click.Choice(languages()),
    default=DEFAULT_LANGUAGE,
    show_default=True,
    help="The language of the bot: the template it is copied from (arena/templates/).",
)
@click.option(
    "--dir",
    "parent",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where to create the bot directory.",
)
def new_bot(name: str, language: str, parent: Path) -> None:
    """Create a bot directory NAME from a template that passes the conformance check.

    \b
    Examples:
        arena new-bot mybot && arena check mybot && arena run mybot random greedy
        arena new-bot jsbot --lang node && (cd jsbot && npm ci) && arena check jsbot
    """
    try:
        path = scaffold_bot(name, parent, language)
    except ArenaError as e:
        raise ArenaCliError(str(e)) from e
    files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())
    click.echo(f"created {path}/ ({language}: {', '.join(files)})")
    where = shlex.quote(str(path))
    build = build_steps(language)
    click.echo("next:")
    if build is None:
        click.echo(f"  build it as {path}/README.md says")
    for command in build or ():
        click.echo(f"  (cd {where} && {command})")
    click.echo(f"  arena check {where}")
    click.echo(f"  arena run {where} random greedy counter")
