"""``arena replay``."""

from __future__ import annotations

from pathlib import Path

import click

from arena._text import clean
from arena.match._story import tell
from flipflop import FlipFlopError, read_replay
from flipflop import replay as rerun

__all__ = ["replay"]


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--hand", type=click.IntRange(min=1), help="Tell only this hand.")
def replay(file: Path, hand: int | None) -> None:
    """Tell a match's story from its replay FILE, hand by hand.

    Every hand is shown as dealt (the replay is the referee's view), then each action, the
    settlement and the bankrolls. The replay is re-run through the engine first, so a file
    that does not reproduce is reported. What the bots wrote (names, notes) is printed with
    its control characters shown as visible escapes, never sent to the terminal.

    \b
    Example:
        arena replay arena-out/replays/m00000.jsonl --hand 3
    """
    try:
        rep = read_replay(file)
        rerun(rep)  # proves the file reproduces before telling it
    except FlipFlopError as e:
        raise click.ClickException(clean(f"{file}: {e}")) from e
    except OSError as e:
        raise click.ClickException(clean(f"{file}: {e.strerror}")) from e
    lines = list(tell(rep, hand))
    if hand is not None and not lines:
        raise click.BadParameter(f"the match has no hand {hand}", param_hint="--hand")
    for line in lines:
        click.echo(line)
