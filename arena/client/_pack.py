"""A bot directory packed as a league upload, on the author's machine (``arena submit``).

An upload is a gzip-compressed tar archive of a bot directory, ``bot.toml`` at its root.
:func:`pack_bot` makes it reproducibly (sorted entries, no owners, no times, normalised
modes), so the same files always give the same bytes and the same SHA-256, and a re-upload
of an unchanged bot is recognised as such. The server unpacks it as hostile input
(``arena.league.bots._uploads``), within the same :class:`UploadLimits`, which are checked here
first so that an author hears of a problem before uploading.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

from arena._errors import UploadRejected
from flipflop import ManifestError, read_manifest

__all__ = ["SKIPPED_NAMES", "UploadLimits", "pack_bot"]

# Left out of an upload: version control, caches and local environments. The league
# installs a bot's dependencies itself, from its lock file, in its image build; a local
# `.venv` or `node_modules` is the author's machine's, not the bot's.
SKIPPED_NAMES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".DS_Store",
    }
)
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
# What a tar archive adds around its files' bytes, at most, per entry: a header block,
# up to two blocks of PAX or GNU long-name headers, and the padding of the last block.
_ENTRY_OVERHEAD = 4 * tarfile.BLOCKSIZE
_ARCHIVE_OVERHEAD = 2 * tarfile.RECORDSIZE


@dataclass(frozen=True, slots=True)
class UploadLimits:
    """What an upload may be. The league's ``league.toml`` may change each one.

    Attributes:
        max_compressed_bytes: the archive as uploaded.
        max_unpacked_bytes: the sum of its files' sizes.
        max_files: entries (files and directories).
        max_path_length: characters in an entry's path.
        max_depth: parts in an entry's path (``a/b/c`` has 3).
    """

    max_compressed_bytes: int = 16 * 1024 * 1024
    max_unpacked_bytes: int = 64 * 1024 * 1024
    max_files: int = 2000
    max_path_length: int = 200
    max_depth: int = 16

    def decompressed_cap(self) -> int:
        """The most bytes a tar stream within these limits can take, headers included."""
        return self.max_unpacked_bytes + (self.max_files + 1) * _ENTRY_OVERHEAD + _ARCHIVE_OVERHEAD


def pack_bot(directory: Path, limits: UploadLimits | None = None) -> bytes:
    """The upload of the bot in ``directory``: a reproducible tar.gz, ``bot.toml`` at its root.

    Names in ``SKIPPED_NAMES`` and compiled Python files are left out. The same limits as
    the server's are checked here, so an author hears of a problem before uploading.

    Raises:
        UploadRejected: no valid ``bot.toml``, a symbolic link or special file in the
            directory, or an archive beyond ``limits``.
    """
    limits = limits or UploadLimits()
    root = directory.resolve()
    try:
        read_manifest(root)
    except ManifestError as e:
        raise UploadRejected(str(e)) from e
    entries: list[tuple[str, Path]] = []
    total = 0
    for current, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_NAMES)
        here = Path(current)
        names = sorted(dirnames + [f for f in filenames if not _skipped(f)])
        for name in names:
            path = here / name
            relative = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise UploadRejected(
                    f"{relative} is a symbolic link: an upload holds regular files and"
                    " directories only (copy the file it points to instead)"
                )
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise UploadRejected(
                    f"{relative} is not a regular file or directory: it cannot be uploaded"
                )
            if stat.S_ISREG(mode):
                total += path.lstat().st_size
            entries.append((relative, path))
    entries.sort()
    if len(entries) > limits.max_files:
        raise UploadRejected(
            f"{root} holds {len(entries)} files and directories; an upload may hold"
            f" {limits.max_files}"
        )
    if total > limits.max_unpacked_bytes:
        raise UploadRejected(
            f"{root} holds {total} bytes of files; an upload may hold {limits.max_unpacked_bytes}"
        )
    buffer = io.BytesIO()
    # mtime=0 in the gzip header and in every entry: the same files give the same bytes.
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for relative, path in entries:
            info = tar.gettarinfo(str(path), arcname=relative)
            executable = bool(info.mode & stat.S_IXUSR) or info.isdir()
            info.mode = 0o755 if executable else 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            if info.isreg():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    data = buffer.getvalue()
    if len(data) > limits.max_compressed_bytes:
        raise UploadRejected(
            f"the packed bot is {len(data)} bytes; an upload may be {limits.max_compressed_bytes}"
        )
    return data


def _skipped(name: str) -> bool:
    """Whether a file of this name is left out of an upload."""
    return name in SKIPPED_NAMES or name.endswith(_SKIPPED_SUFFIXES)
