"""``bot.toml``: the ``runtime`` a bot declares (issue 15: images from the arena's recipes)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flipflop import ManifestError, read_manifest
from flipflop._manifest import Runtime

BASIC = 'name = "b"\ncommand = ["python3", "bot.py"]\n'


def _manifest(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "bot.toml").write_text(BASIC + extra, encoding="utf-8")
    return tmp_path


def test_runtime_defaults_to_python(tmp_path: Path) -> None:
    """A bot.toml without ``runtime`` is a Python bot."""
    assert Runtime.PYTHON is read_manifest(_manifest(tmp_path, "")).runtime


@pytest.mark.parametrize("runtime", list(Runtime))
def test_runtime_is_read(tmp_path: Path, runtime: Runtime) -> None:
    """Each runtime's name reads as that runtime."""
    assert runtime is read_manifest(_manifest(tmp_path, f'runtime = "{runtime.value}"\n')).runtime


@pytest.mark.parametrize("value", ['"java"', "1", '"Python"'])
def test_an_unknown_runtime_is_refused(tmp_path: Path, value: str) -> None:
    """Anything else is refused, listing the runtimes."""
    with pytest.raises(ManifestError, match="'runtime' must be one of python, binary"):
        read_manifest(_manifest(tmp_path, f"runtime = {value}\n"))


def test_start_timeout_s_defaults_to_none(tmp_path: Path) -> None:
    """Without ``start_timeout_s`` the bot takes the arena's start budget (None here)."""
    assert read_manifest(_manifest(tmp_path, "")).start_timeout_s is None


@pytest.mark.parametrize(("value", "seconds"), [("45", 45.0), ("2.5", 2.5), ("600", 600.0)])
def test_start_timeout_s_is_read_in_seconds(tmp_path: Path, value: str, seconds: float) -> None:
    """A whole or fractional number of seconds reads as a float (the cap is the arena's)."""
    manifest = read_manifest(_manifest(tmp_path, f"start_timeout_s = {value}\n"))
    assert seconds == manifest.start_timeout_s


@pytest.mark.parametrize("value", ["0", "-5", "0.0", "-0.5", '"45"', "true", "[45]", "nan", "inf"])
def test_start_timeout_s_must_be_a_positive_number(tmp_path: Path, value: str) -> None:
    """Zero, negative, infinite, not a number, or not a number at all: refused, naming the field."""
    with pytest.raises(ManifestError, match="'start_timeout_s' must be a positive number"):
        read_manifest(_manifest(tmp_path, f"start_timeout_s = {value}\n"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("x = " + "[" * 5000, "not valid TOML (nested too deeply)"),
        ('description = "' + "d" * 70_000 + '"\n', "more than the 65536 a bot.toml may have"),
        ('description = "' + "d" * 501 + '"\n', "'description' must be a string of at most 500"),
        ('version = "' + "1" * 501 + '"\n', "'version' must be a string of at most 500"),
        ("description = [1, 2]\n", "'description' must be a string"),
    ],
    ids=["nested", "huge", "long-description", "long-version", "a-list"],
)
def test_a_hostile_manifest_is_refused_in_one_sentence(
    tmp_path: Path, extra: str, message: str
) -> None:
    """Issue 24, findings 11 and 16: caps on bot.toml's size, nesting and texts, not a crash."""
    with pytest.raises(ManifestError, match=re.escape(message)):
        read_manifest(_manifest(tmp_path, extra))


def test_a_command_has_at_most_64_words_of_4096_characters(tmp_path: Path) -> None:
    """64 words are fine, 65 are not; a word of 4,097 characters is refused too."""
    (tmp_path / "bot.toml").write_text(
        'name = "b"\ncommand = [' + '"x", ' * 64 + "]\n", encoding="utf-8"
    )
    assert 64 == len(read_manifest(tmp_path).command)
    for command in ('"x", ' * 65, '"' + "x" * 4097 + '"'):
        (tmp_path / "bot.toml").write_text(f'name = "b"\ncommand = [{command}]\n', encoding="utf-8")
        with pytest.raises(ManifestError, match="'command' may have at most 64 words"):
            read_manifest(tmp_path)
