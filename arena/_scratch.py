"""Scratch directories that a killed arena process does not leave behind.

The league server, a fleet worker, a ladder's pool, ``arena check`` and ``arena replay ask``
each work in a directory of their own under the system's temporary directory (short paths:
bots' unix sockets live there). Each removes it when it stops; a process killed with
SIGKILL, by the kernel's OOM killer or by a power cut cannot, and a server that crashes and is
restarted over and over would fill the disk a megabyte or more at a time.

So each directory holds an **owner lock**: a file ``.arena-owner`` on which its process
keeps an exclusive ``flock`` from the moment the directory appears under its final name
(the file is locked first, then renamed into place) until the process removes it or dies,
when the kernel releases it. Before making one, a process removes every directory of ours
(one of :data:`PREFIXES`, owned by this user, a real directory) whose owner lock it can take:
its owner is gone. A directory without the file (made by an older arena) is left alone: it
might be in use by something that does not take the lock.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path

__all__ = ["OWNER", "PREFIXES", "drop_scratch", "make_scratch", "sweep_scratch"]

logger = logging.getLogger(__name__)

OWNER = ".arena-owner"
"""The owner lock's file name, in each scratch directory."""
PREFIXES = ("ffa-", "ffl-", "ffw-")
"""Every scratch directory's name starts with one of these."""

_held: dict[Path, int] = {}
"""This process's scratch directories and their owner locks' descriptors."""
_held_lock = threading.Lock()


def make_scratch(prefix: str, parent: Path | None = None) -> Path:
    """A new scratch directory ``PARENT/PREFIX<random>``, held by this process.

    Removes the directories of killed processes first (:func:`sweep_scratch`).

    Args:
        prefix: the name's start: one of :data:`PREFIXES`, and more (``ffa-league-``).
        parent: where (the system's temporary directory by default).

    Raises:
        ValueError: ``prefix`` is not one of ours.
    """
    if not prefix.startswith(PREFIXES):
        raise ValueError(f"a scratch directory's prefix starts with one of {PREFIXES}")
    sweep_scratch(parent)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    staged = path / f"{OWNER}.new"
    fd = os.open(staged, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(staged, path / OWNER)  # seen under its name only once locked
    except BaseException:
        os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
        raise
    with _held_lock:
        _held[path] = fd
    return path


def drop_scratch(path: Path) -> None:
    """Remove the scratch directory ``path`` and let go of its owner lock."""
    shutil.rmtree(path, ignore_errors=True)
    with _held_lock:
        fd = _held.pop(path, None)
    if fd is not None:
        os.close(fd)


def sweep_scratch(parent: Path | None = None) -> int:
    """Remove the scratch directories in ``parent`` whose owner is gone; how many.

    Only directories named with one of :data:`PREFIXES`, owned by this user, not links, and
    holding an owner lock that can be taken: a live owner (this process included) holds it.
    """
    where = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    try:
        entries = list(os.scandir(where))
    except OSError:
        return 0
    removed = 0
    for entry in entries:
        if not entry.name.startswith(PREFIXES):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            fd = os.open(os.path.join(entry.path, OWNER), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:  # no owner lock (an older arena's, or being made): not ours to judge
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # its owner lives
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
            removed += 1
        finally:
            os.close(fd)
    if removed:
        logger.info("removed %d scratch directories left by killed arena processes", removed)
    return removed
