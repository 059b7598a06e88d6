"""The ladder's deal key: where every match's decks come from, kept from every bot.

A run has one secret **deal key** (32 bytes). Each duplicate group of matches gets its match
seed from it, ``match_seed(key, group)``, and the engine deals every hand and draws the first
dealer from that seed (``flipflop.deck_for``, R-DEAL, R-DEALER)::

    deal key ──HMAC-SHA256("flipflop-arena/match/<group>")──▶ match seed (32 bytes)
    match seed ──deck_for(seed, hand)──▶ each hand's deck;  _first_dealer(seed, seats)

The matches of one group share their decks by design (duplicate deals); the seeds of
different groups are unrelated, so knowing one match's deals tells nothing about another's.
The key and the seeds never go to a bot: bots get match ids, which say nothing about the key,
and replays hold each hand's deck only once the hand is over (``docs/replay.md``).

By default the key is fresh randomness (:func:`new_deal_key`), saved in the run directory
with mode 0600 so ``--resume`` deals the same cards. An explicit ladder seed makes the key
reproducible (:func:`deal_key_from_seed`), and so public: whoever knows the seed can predict
every deal of the run.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from arena._errors import ResultsError

__all__ = [
    "DEAL_KEY_BYTES",
    "deal_key_from_seed",
    "load_deal_key",
    "match_seed",
    "new_deal_key",
    "save_deal_key",
]

DEAL_KEY_BYTES = 32
"""The size of a deal key: 256 bits."""

_SEED_LABEL = b"flipflop-arena/deal-key/"
_MATCH_LABEL = b"flipflop-arena/match/"


def new_deal_key() -> bytes:
    """A fresh secret deal key (32 bytes from :mod:`secrets`); it never goes to a bot."""
    return secrets.token_bytes(DEAL_KEY_BYTES)


def deal_key_from_seed(seed: int) -> bytes:
    """The deal key of an explicit ladder seed: SHA-256 of ``"flipflop-arena/deal-key/<seed>"``.

    Reproducible and therefore public: whoever knows the seed predicts every deal of the run.
    Use it to repeat a run, never for a run whose deals must stay secret.
    """
    if type(seed) is not int:
        raise TypeError(f"a ladder seed is an int, not {type(seed).__name__}")
    return hashlib.sha256(_SEED_LABEL + b"%d" % seed).digest()


def match_seed(key: bytes, group: int) -> bytes:
    """The match seed of duplicate group ``group`` (32 bytes).

    HMAC-SHA256 keyed by the deal key over ``"flipflop-arena/match/<group>"``, the group in
    decimal.

    Every match of a group is dealt the same decks (the seats rotate); the seeds of different
    groups are independent pseudo-random values, none of which tells the key or another
    group's seed. Like the key, a match seed never goes to a bot.
    """
    if type(group) is not int or group < 0:
        raise ValueError(f"a group is a non-negative int, got {group!r}")
    return hmac.digest(key, _MATCH_LABEL + b"%d" % group, "sha256")


def save_deal_key(path: Path, key: bytes) -> None:
    """Write ``key`` as hex to ``path``, readable by its owner only (mode 0600), atomically.

    The key goes to a new temporary file in the same directory (created with ``O_EXCL`` and
    mode 0600, so it is never readable by others, not even for a moment), is fsynced, then
    renamed over ``path``. The key never goes to a bot: keep ``path`` out of every sandbox.

    Raises:
        ResultsError: the file cannot be written.
    """
    if len(key) != DEAL_KEY_BYTES:
        raise ValueError(f"a deal key is {DEAL_KEY_BYTES} bytes, got {len(key)}")
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(key.hex() + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        _fsync_dir(path.parent)
    except OSError as e:
        raise ResultsError(f"cannot write the deal key {path}: {e.strerror or e}") from e


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable (where the platform can open a directory)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def load_deal_key(path: Path) -> bytes:
    """Read a deal key written by :func:`save_deal_key`.

    Raises:
        ResultsError: the file is missing or unreadable, or does not hold a 32-byte hex key.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        raise ResultsError(
            f"no deal key at {path}: the run's deals cannot be repeated without it"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsError(f"cannot read the deal key {path}: {e}") from e
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        key = b""
    if len(key) != DEAL_KEY_BYTES:
        raise ResultsError(
            f"{path} is not a deal key ({DEAL_KEY_BYTES * 2} hex digits expected): "
            "the file is corrupt"
        )
    return key
