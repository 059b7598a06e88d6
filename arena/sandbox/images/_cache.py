"""What every image build shares: cache directory, locks, hashes, uses, names.

The cache directory and its file locks, hashes of trees, the record of each image's uses
(for pruning), and the names the arena gives its images.
The package's docstring (``arena/sandbox/images/__init__.py``) tells the whole story.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import docker  # type: ignore[import-untyped,unused-ignore]
import docker.errors  # type: ignore[import-untyped,unused-ignore]
from docker.models.images import Image  # type: ignore[import-untyped,unused-ignore]

Log = Callable[[str], None]

BASE_REPO = "flipflop-base"
"""Repository of the base images (``flipflop-base:<hash>`` and ``:latest``)."""

BOT_REPO_PREFIX = "flipflop-bot-"

ARENA_LABEL = "flipflop.arena.image"
"""Label on every image the arena builds; its value is the tag it was built as."""

# Bump when the recipe below changes in a way the hashed inputs do not show.
_RECIPE = "4"

_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".git", ".mypy_cache", ".venv")

_MB = 1024 * 1024

_base_process_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class BuildLimits:
    """What one image build may use (issue 15, finding 3).

    Attributes:
        memory_mb: memory of each build step's container, without swap (the run-time limit).
        cpus: CPUs each build step may use (a CFS quota).
        timeout_s: wall time of the whole build; past it the build is cancelled. A compiled
            bot's build step gets all of it, and the image's assembly after it what is left,
            or :data:`_ASSEMBLY_MIN_S` (it runs no code of the bot).
        image_mb: the largest image accepted, base included; a bigger one is removed.
        pids: processes and threads of a compiled bot's build step (issue 24, finding 7): its
            container's pids cgroup under runc; under runsc ``RLIMIT_NPROC`` in gVisor's
            kernel, the cgroup a backstop (:func:`~arena.sandbox._containers.host_pids_limit`).
    """

    memory_mb: int = 512
    cpus: float = 1.0
    timeout_s: float = 600.0
    image_mb: int = 1024
    pids: int = 256


def stderr_log(message: str) -> None:
    """The default progress log: one line on stderr."""
    print(f"arena: {message}", file=sys.stderr, flush=True)


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/flipflop-arena`` (``~/.cache/flipflop-arena``): wheels and locks."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(root) / "flipflop-arena"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``, across threads and processes of this user.

    Each holder opens the file itself, so threads of one process exclude each other too.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def _base_lock() -> Iterator[None]:
    """One base-image build at a time."""
    with _base_process_lock, _file_lock(cache_dir() / "base.lock"):
        yield


def _tag_lock(tag: str) -> contextlib.AbstractContextManager[None]:
    """One build of ``tag`` at a time; builds of other tags go on.

    Finding 3 of issue 15: one lock per user let one slow build stall every arena of that user.
    """
    return _file_lock(cache_dir() / "locks" / (tag.replace(":", "-").replace("/", "_") + ".lock"))


def _image(client: docker.DockerClient, ref: str) -> Image | None:
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


Ignore = Callable[[str, list[str]], set[str]]
"""A ``shutil.copytree`` ignore function: the names of a directory's entries to leave out."""


def _files(root: Path, ignore: Ignore = _IGNORED) -> list[Path]:
    """Every file under ``root`` that goes into an image, in a stable order."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        ignored = ignore(dirpath, [*dirnames, *filenames])
        dirnames[:] = sorted(d for d in dirnames if d not in ignored)
        out += [Path(dirpath, f) for f in sorted(filenames) if f not in ignored]
    return out


def _hash_tree(h: hashlib._Hash, root: Path, ignore: Ignore = _IGNORED) -> None:
    for file in _files(root, ignore):
        rel = file.relative_to(root).as_posix()
        h.update(f"{rel}\0{os.lstat(file).st_mode & 0o111:o}\0".encode())
        if file.is_symlink():
            h.update(os.readlink(file).encode())
        else:
            with open(file, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
        h.update(b"\0")


def _copy_tree(src: Path, dst: Path, ignore: Ignore = _IGNORED) -> None:
    """Copy ``src`` to ``dst`` readable by everyone, so the image's user 65534 can read it."""
    shutil.copytree(src, dst, ignore=ignore, symlinks=True, dirs_exist_ok=True)
    _make_readable(dst)


def _make_readable(root: Path) -> None:
    for dirpath, _, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                executable = os.stat(p).st_mode & stat.S_IXUSR
                os.chmod(p, 0o755 if executable else 0o644)


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.lchown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            os.lchown(os.path.join(dirpath, name), uid, gid)


def _uses_file() -> Path:
    return cache_dir() / "images.json"


def _last_uses() -> dict[str, float]:
    """When each image tag was last asked for (seconds since the epoch)."""
    try:
        data = json.loads(_uses_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def _record_use(tag: str, when: float | None = None) -> None:
    """Note that ``tag`` was used now (or at ``when``), for :func:`prune_images`."""
    with _file_lock(cache_dir() / "images.json.lock"):
        uses = _last_uses()
        uses[tag] = time.time() if when is None else when
        tmp = _uses_file().with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(uses, indent=0, sort_keys=True), encoding="utf-8")
        os.replace(tmp, _uses_file())


def _forget_uses(tags: Sequence[str]) -> None:
    with _file_lock(cache_dir() / "images.json.lock"):
        uses = _last_uses()
        for tag in tags:
            uses.pop(tag, None)
        tmp = _uses_file().with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(uses, indent=0, sort_keys=True), encoding="utf-8")
        os.replace(tmp, _uses_file())
