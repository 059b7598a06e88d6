"""Finding bots: the bundled examples by name, or any bot directory by path."""

from __future__ import annotations

import os
from pathlib import Path

from arena._errors import ArenaError
from flipflop import BotManifest, ManifestError, read_manifest

__all__ = ["bundled_bots", "bundled_dir", "resolve_bot"]


def bundled_dir() -> Path:
    """Where the bundled bots live: ``$ARENA_BOTS_DIR``, else the repository's ``bots/``."""
    env = os.environ.get("ARENA_BOTS_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "bots"


def bundled_bots() -> dict[str, BotManifest]:
    """The bundled bots by name, in a fixed order (directory name)."""
    root = bundled_dir()
    out: dict[str, BotManifest] = {}
    if root.is_dir():
        for d in sorted(root.iterdir()):
            if (d / "bot.toml").is_file():
                m = read_manifest(d)
                out[m.name] = m
    return out


def resolve_bot(ref: str) -> BotManifest:
    """A bot directory (a path holding ``bot.toml``) or the name of a bundled bot."""
    path = Path(ref)
    if path.is_dir():
        try:
            return read_manifest(path)
        except ManifestError as e:
            raise ArenaError(str(e)) from e
    bundled = bundled_bots()
    if ref in bundled:
        return bundled[ref]
    names = ", ".join(bundled) or "none found"
    raise ArenaError(f"{ref!r} is neither a bot directory nor a bundled bot (bundled: {names})")
