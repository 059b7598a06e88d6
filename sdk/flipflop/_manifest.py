"""Bot directories: the ``bot.toml`` manifest and loading a Python bot in-process.

A bot directory holds its code and a ``bot.toml``::

    name = "greedy"                 # shown in standings; letters, digits, - and _
    version = "1.0.0"
    description = "Lowest hand total; drops at 5 or less."
    author = "alice"                # optional: kept from the author's other bots (--owners-apart)
    runtime = "python"              # optional: python (default), node, go, cpp, binary
    command = ["python3", "bot.py"] # run from the directory; gets --listen ENDPOINT
    entry = "bot:GreedyBot"         # optional, Python only: module:class for in-process play

``command`` is how a sandbox starts the bot (any language); ``entry`` lets the local harness
and tests load a Python bot without a process. ``runtime`` says which of the arena's own
image recipes the Docker sandbox builds the bot with (a bot's own ``Dockerfile`` is used only
when the arena is told to trust it).
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
import tomllib
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from flipflop._bot import Bot
from flipflop._errors import FlipFlopError

__all__ = [
    "MAX_COMMAND_ARGS",
    "MAX_MANIFEST_BYTES",
    "MAX_TEXT_CHARS",
    "BotManifest",
    "ManifestError",
    "Runtime",
    "load_bot",
    "read_manifest",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
MAX_MANIFEST_BYTES = 64 * 1024
"""The largest ``bot.toml``: a manifest is a few lines; a huge one is an attack on its reader."""
MAX_COMMAND_ARGS = 64
"""The most words ``command`` may have."""
MAX_ARG_CHARS = 4096
"""The longest word of ``command``."""
MAX_TEXT_CHARS = 500
"""The longest ``description`` (one line for people) and ``version``."""


class ManifestError(FlipFlopError):
    """A bot directory without a usable ``bot.toml``."""


class Runtime(Enum):
    """What a bot is written in: the arena builds its Docker image from its recipe for it."""

    PYTHON = "python"
    """Python 3.11 with the SDK; dependencies from a ``requirements.txt`` with hashes. The
    default when ``bot.toml`` does not say."""
    BINARY = "binary"
    """A static executable in the bot directory, named by ``command[0]``."""
    NODE = "node"
    """Node.js (Debian's); npm packages from a ``package-lock.json``, installed on the host
    with install scripts off."""
    GO = "go"
    """Go, built in a build container as user 65534 against Debian's packaged gRPC; the image
    holds the binary named by ``command[0]``."""
    CPP = "cpp"
    """C++ with gRPC, built by the bot's ``make`` in a build container as user 65534; the image
    holds the binary named by ``command[0]``."""


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
        runtime: what the bot is written in (``runtime``; default python).
        author: who wrote it (``author``), or "": bots of one author can be kept at
            separate tables (``arena run --owners-apart``; the league's rule).
        memory_mb: the memory the bot asks for, in MB (``memory_mb``), or None for the
            arena's default; the arena refuses more than its cap (``SandboxLimits``).
        start_timeout_s: the start budget the bot asks for, in seconds (``start_timeout_s``),
            or None for the arena's default; the arena refuses more than its cap.
    """

    path: Path
    name: str
    version: str
    description: str
    command: tuple[str, ...]
    entry: str
    runtime: Runtime = Runtime.PYTHON
    author: str = ""
    memory_mb: int | None = None
    start_timeout_s: float | None = None


def read_manifest(directory: str | Path) -> BotManifest:
    """Read and check ``directory/bot.toml``; raise ManifestError saying what is wrong."""
    path = Path(directory).resolve()
    file = path / "bot.toml"
    if not file.is_file():
        raise ManifestError(f"{path} is not a bot directory: it has no bot.toml")
    size = file.stat().st_size
    if size > MAX_MANIFEST_BYTES:
        raise ManifestError(
            f"{file}: {size} bytes, more than the {MAX_MANIFEST_BYTES} a bot.toml may have"
        )
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ManifestError(f"{file}: not valid TOML ({e})") from e
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise ManifestError(f"{file}: not valid TOML (nested too deeply)") from None
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
    if len(command) > MAX_COMMAND_ARGS or any(len(c) > MAX_ARG_CHARS for c in command):
        raise ManifestError(
            f"{file}: 'command' may have at most {MAX_COMMAND_ARGS} words of at most"
            f" {MAX_ARG_CHARS} characters each"
        )
    for key in ("version", "description"):
        text = data.get(key, "")
        if not isinstance(text, str | int | float) or len(str(text)) > MAX_TEXT_CHARS:
            raise ManifestError(
                f"{file}: '{key}' must be a string of at most {MAX_TEXT_CHARS} characters"
            )
    entry = data.get("entry", "")
    if not isinstance(entry, str) or (entry and ":" not in entry):
        raise ManifestError(f"{file}: 'entry' must look like 'module:Class'")
    author = data.get("author", "")
    if not isinstance(author, str) or len(author) > 64 or not author.isprintable():
        raise ManifestError(f"{file}: 'author' must be a line of at most 64 characters")
    memory_mb = data.get("memory_mb")
    if memory_mb is not None and (
        isinstance(memory_mb, bool) or not isinstance(memory_mb, int) or memory_mb < 1
    ):
        raise ManifestError(f"{file}: 'memory_mb' must be a positive whole number of MB")
    start_timeout_s = data.get("start_timeout_s")
    if start_timeout_s is not None and (
        isinstance(start_timeout_s, bool)
        or not isinstance(start_timeout_s, int | float)
        or not math.isfinite(start_timeout_s)
        or start_timeout_s <= 0
    ):
        raise ManifestError(f"{file}: 'start_timeout_s' must be a positive number of seconds")
    raw_runtime = data.get("runtime", Runtime.PYTHON.value)
    try:
        runtime = Runtime(raw_runtime)
    except ValueError:
        known = ", ".join(r.value for r in Runtime)
        raise ManifestError(
            f"{file}: 'runtime' must be one of {known} (got {raw_runtime!r})"
        ) from None
    return BotManifest(
        path=path,
        name=name,
        version=str(data.get("version", "0")),
        description=str(data.get("description", "")),
        command=tuple(command),
        entry=entry,
        runtime=runtime,
        author=author,
        memory_mb=memory_mb,
        start_timeout_s=None if start_timeout_s is None else float(start_timeout_s),
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
