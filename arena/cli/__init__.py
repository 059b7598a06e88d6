"""The ``arena`` command line.

Commands are thin wrappers over library calls; each lives next to the group it joins.
"""

import importlib

import click

from arena import __version__

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    r"""Run bots for the card game Game, Flip, Flop against each other.

    \b
    Example:
        $ arena version
        arena 0.1.0
        flipflop 0.1.0
    """


@main.command()
def version() -> None:
    """Print the versions of the arena and of the flipflop SDK it runs."""
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
