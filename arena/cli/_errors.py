"""Turning library errors into one-line CLI errors with documented exit codes."""

from __future__ import annotations

import click

__all__ = ["ArenaCliError"]


class ArenaCliError(click.ClickException):
    """An arena error: printed as one line, exit code 3."""

    exit_code = 3
