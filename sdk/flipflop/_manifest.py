"""Bot directories: the ``bot.toml`` manifest and loading a Python bot in-process.

A bot directory holds its code, a ``Dockerfile`` and a ``bot.toml``::

    name = "greedy"                 # shown in standings; letters, digits, - and _
    version = "1.0.0"
    description = "Lowest hand total; drops at 5 or less."
    command = ["python3", "bot.py"] # run from the directory; gets --listen ENDPOINT
    entry = "bot:GreedyBot"         # optional, Python only: module:class for in-process play

``command`` is how a sandbox starts the bot (any language); ``entry`` lets the local harness
and tests load a Python bot without a process.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from flipflop._bot import Bot
from flipflop._errors import FlipFlopError

__all__ = ["BotManifest", "ManifestError", "load_bot", "read_manifest"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")


class ManifestError(FlipFlopError):
    """A bot directory without a usable ``bot.toml``."""


@dataclass(frozen=True, slots=True)
class BotManifest:
    """A parsed ``bot.toml``.

    Attributes:
        path: the bot directory (absolute).
        name: the bot's name.
        version: the bot's version string.
        description: one line about the bot.
        command: argv that starts the bot server, run in ``path``.
        entry: ``module:Class`` of a Python bot, or "".
    """

    path: Path
    name: str
    version: str
    description: str
    command: tuple[str, ...]
    entry: str


def read_manifest(directory: str | Path) -> BotManifest:
    """Read and check ``directory/bot.toml``; raise ManifestError saying what is wrong."""
    path = Path(directory).resolve()
    file = path / "bot.toml"
    if not file.is_file():
        raise ManifestError(f"{path} is not a bot directory: it has no bot.toml")
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ManifestError(f"{file}: not valid TOML ({e})") from e
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ManifestError(
            f"{file}: 'name' must be 1-40 letters, digits, '-' or '_' (got {name!r})"
        )
    command = data.get("command")
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(c, str) and c for c in command)
    ):
        raise ManifestError(f"{file}: 'command' must be a non-empty list of strings")
    entry = data.get("entry", "")
    if not isinstance(entry, str) or (entry and ":" not in entry):
        raise ManifestError(f"{file}: 'entry' must look like 'module:Class'")
    return BotManifest(
        path=path,
        name=name,
        version=str(data.get("version", "0")),
        description=str(data.get("description", "")),
        command=tuple(command),
        entry=entry,
    )


def load_bot(directory: str | Path) -> Bot:
    """Instantiate a Python bot from its directory's ``entry``, in this process."""
    m = read_manifest(directory)
    if not m.entry:
        raise ManifestError(f"{m.path}/bot.toml has no 'entry': it cannot be loaded in-process")
    module_name, _, class_name = m.entry.partition(":")
    file = m.path / (module_name.replace(".", "/") + ".py")
    unique = f"flipflop_bot_{m.name.replace('-', '_')}_{module_name.replace('.', '_')}"
    spec = importlib.util.spec_from_file_location(unique, file)
    if spec is None or spec.loader is None or not file.is_file():
        raise ManifestError(f"{file} not found (from entry {m.entry!r})")
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    spec.loader.exec_module(module)
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Bot)):
        raise ManifestError(f"{m.entry!r} in {m.path} is not a flipflop.Bot subclass")
    bot = cls()
    return bot
