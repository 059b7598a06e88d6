"""Tests for the ``arena`` command line."""

from click.testing import CliRunner

from arena import __version__
from arena.cli import main


def test_version_prints_the_arena_version() -> None:
    """``arena version`` exits 0 and prints the arena's version on a line of its own."""
    result = CliRunner().invoke(main, ["version"])

    assert 0 == result.exit_code, result.output
    assert f"arena {__version__}" in result.output.splitlines()


def test_help_lists_the_version_command() -> None:
    """``arena --help`` exits 0 and lists the ``version`` command."""
    result = CliRunner().invoke(main, ["--help"])

    assert 0 == result.exit_code, result.output
    assert "version" in result.output
