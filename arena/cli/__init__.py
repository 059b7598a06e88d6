"""The ``arena`` command line.

Commands are thin wrappers over library calls, one module each. Exit codes: 0 success,
1 the work ran but found problems (a failed conformance check; a ladder in which a bot did
not start or a match failed by an arena error), 2 bad arguments or input,
3 an arena error (a sandbox or output directory problem), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import importlib

import click

from arena import __version__
from arena.cli._challenge import challenge
from arena.cli._check import check
from arena.cli._images import images
from arena.cli._league import league, login
from arena.cli._logs import logs
from arena.cli._new_bot import new_bot
from arena.cli._replay import fork_command, replay
from arena.cli._run import run
from arena.cli._season import season
from arena.cli._submit import activate, submit, versions
from arena.cli._worker import worker

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="arena")
def main() -> None:
    """Run bots for the card game Game, Flip, Flop against each other.

    \b
    Examples:
        arena run                      # a ladder of the bundled bots
        arena new-bot mybot            # start your own bot
        arena check mybot              # conformance check over gRPC
        arena run mybot random greedy counter --matches 24
        arena replay arena-out/replays/m00000.jsonl --hand 3
        arena league init ./myleague   # run a league (docs/league.md)
        arena submit mybot             # submit a bot to the league you logged in to
        arena challenge mybot greedy alice-bot   # an unrated match, now
    """


@main.command()
def version() -> None:
    """Print the versions of the arena and of the flipflop SDK it runs.

    \b
    Example:
        arena version
    """
    click.echo(f"arena {__version__}")
    click.echo(f"flipflop {_sdk_version()}")


def _sdk_version() -> str:
    """The SDK's version, or ``unknown`` when it cannot be imported or does not say."""
    # Imported lazily so that `arena version` still answers when the SDK is not importable.
    try:
        sdk = importlib.import_module("flipflop")
    except ImportError:
        return "unknown"
    return str(getattr(sdk, "__version__", "unknown"))


main.add_command(run)
main.add_command(replay)
main.add_command(fork_command)
main.add_command(logs)
main.add_command(new_bot)
main.add_command(check)
main.add_command(images)
league.add_command(season)
main.add_command(league)
main.add_command(login)
main.add_command(submit)
main.add_command(versions)
main.add_command(activate)
main.add_command(challenge)
main.add_command(worker)
