"""Bot uploads on the server: unpacking an archive made by ``arena.client._pack`` safely.

:func:`unpack_upload` treats every upload as hostile. It never calls ``tarfile``'s extract
(whose ``filter="data"`` has needed fixes as late as 2026) and creates only directories and
regular files itself. In order:

1. the compressed bytes are read into a temporary file, counted and hashed on the way,
   and refused past ``max_compressed_bytes``;
2. they are decompressed as a stream through a counter that stops at the most a valid
   upload can decompress to, so a tar bomb ends at the limit, never at a full disk;
3. each entry, as it comes, must be a regular file or a directory (no symbolic or hard
   links, devices, FIFOs or sparse files), without setuid, setgid or sticky bits, with a
   relative path of at most ``max_path_length`` characters and ``max_depth`` parts, none
   empty, ``.`` or ``..``, no control characters or backslashes, not seen before; the
   entry count and the total size (from each header, *before* any data is written) must
   stay within ``max_files`` and ``max_unpacked_bytes``;
4. ``bot.toml`` at the root must be a valid manifest (``flipflop.read_manifest``);
5. a Node.js bot's ``package.json`` and ``package-lock.json`` may name only tarballs of npm's
   registry pinned by a sha512 ``integrity`` (``arena.sandbox.check_package_lock``).

Anything refused raises :class:`UploadRejected` with one sentence saying why, and leaves
the destination empty.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import stat
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO, cast

from arena._errors import SandboxError, UploadRejected
from arena.client._pack import UploadLimits
from arena.sandbox import SandboxLimits, check_package_lock
from flipflop import BotManifest, ManifestError, read_manifest
from flipflop._manifest import Runtime

__all__ = ["UnpackedUpload", "unpack_upload"]

_CHUNK = 1 << 16
# What may follow an archive's last entry: its two zero blocks and the padding of its record.
_TRAILER_MAX = 2 * tarfile.BLOCKSIZE + tarfile.RECORDSIZE


@dataclass(frozen=True, slots=True)
class UnpackedUpload:
    """An upload that passed every check, unpacked.

    Attributes:
        sha256: SHA-256 of the archive as uploaded (its name in the artifact store).
        compressed_bytes: the archive's size.
        unpacked_bytes: the sum of its files' sizes.
        files: how many regular files it held.
        manifest: its ``bot.toml``, read from the destination directory.
    """

    sha256: str
    compressed_bytes: int
    unpacked_bytes: int
    files: int
    manifest: BotManifest


def unpack_upload(
    source: BinaryIO, destination: Path, limits: UploadLimits | None = None
) -> UnpackedUpload:
    """Check and unpack the upload read from ``source`` into the empty directory ``destination``.

    Args:
        source: the upload's bytes, as a stream (read in chunks, never whole).
        destination: an existing, empty directory, private to the league.
        limits: what an upload may be (defaults: ``UploadLimits()``).

    Raises:
        UploadRejected: the first check the upload failed, in one sentence; ``destination``
            is left empty.
    """
    limits = limits or UploadLimits()
    if any(destination.iterdir()):
        raise ValueError(f"{destination} is not empty")
    with tempfile.TemporaryFile(prefix="ffa-upload-") as spool:
        sha256, compressed = _spool(source, spool, limits)
        spool.seek(0)
        try:
            unpacked, files = _extract(spool, destination, limits)
            manifest = _manifest(destination)
            _check_packages(manifest)
        except BaseException:
            _empty(destination)
            raise
    return UnpackedUpload(sha256, compressed, unpacked, files, manifest)


def _spool(source: BinaryIO, spool: BinaryIO, limits: UploadLimits) -> tuple[str, int]:
    """Copy the upload to ``spool``, counting and hashing; refuse it past the limit."""
    sha = hashlib.sha256()
    size = 0
    while chunk := source.read(_CHUNK):
        size += len(chunk)
        if size > limits.max_compressed_bytes:
            raise UploadRejected(
                f"the upload is larger than {limits.max_compressed_bytes} bytes, the most"
                " this league accepts"
            )
        sha.update(chunk)
        spool.write(chunk)
    return sha.hexdigest(), size


class _Capped(io.RawIOBase):
    """A read-only stream that refuses to yield more than ``cap`` bytes of ``inner``.

    Reads are cut to what is left of the cap (plus one byte, to tell "exactly at the cap"
    from "beyond it"), so no single read can make a huge allocation either.
    """

    def __init__(self, inner: io.BufferedIOBase, cap: int) -> None:
        self._inner = inner
        self._left = cap
        self._cap = cap
        self.position = 0
        """Bytes read so far."""
        self.data_end = 0
        """Where the last byte other than NUL read so far ends: what follows it is zeros."""

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = self._left + 1 if size is None or size < 0 else min(size, self._left + 1)
        data = self._inner.read(want)
        self._left -= len(data)
        self.position += len(data)
        if data.strip(b"\0"):
            self.data_end = self.position - (len(data) - len(data.rstrip(b"\0")))
        if self._left < 0:
            raise UploadRejected(
                f"the upload decompresses to more than {self._cap} bytes: refused as a"
                " compression bomb"
            )
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _extract(spool: BinaryIO, destination: Path, limits: UploadLimits) -> tuple[int, int]:
    """Check every entry of the archive in ``spool`` and write it under ``destination``."""
    seen_files: set[str] = set()
    seen_dirs: set[str] = set()
    entries = files = total = 0
    try:
        with (
            gzip.GzipFile(fileobj=spool, mode="rb") as gz,
            tarfile.open(
                None,
                "r|",
                cast(BinaryIO, stream := _Capped(gz, limits.decompressed_cap())),
                encoding="utf-8",
                errors="strict",
            ) as tar,
        ):
            for member in tar:
                entries += 1
                if entries > limits.max_files:
                    raise UploadRejected(
                        f"the upload holds more than {limits.max_files} files and"
                        " directories, the most this league accepts"
                    )
                name = _check_entry(member, limits)
                if name in seen_files or (member.isreg() and name in seen_dirs):
                    raise UploadRejected(f"{name!r} appears twice in the upload")
                target = destination.joinpath(*PurePosixPath(name).parts)
                if member.isdir():
                    seen_dirs.add(name)
                    _mkdir(target, destination, name)
                    continue
                total += member.size
                if total > limits.max_unpacked_bytes:
                    raise UploadRejected(
                        f"the upload unpacks to more than {limits.max_unpacked_bytes} bytes,"
                        " the most this league accepts"
                    )
                seen_files.add(name)
                files += 1
                _mkdir(target.parent, destination, name)
                data = tar.extractfile(member)
                assert data is not None  # a regular file always has data
                _write_file(target, data, member, name)
            _check_end(stream, tar.offset)
    except (gzip.BadGzipFile, EOFError, zlib.error, tarfile.TarError, UnicodeError) as e:
        raise UploadRejected(f"the upload is not a valid tar.gz archive ({e})") from e
    return total, files


def _check_end(stream: _Capped, end: int) -> None:
    """Refuse anything after the archive's end but its zero blocks and padding.

    An archive ends with zero blocks at ``end``, padded to a whole record. Whatever else
    follows (bytes hidden after the end, a second gzip member that is not part of the tar)
    would be stored and served as the bot's source without ever being checked (issue 24,
    finding 13), so the rest of the stream is read, within the cap, and must be NULs.
    """
    while stream.read(_CHUNK):
        pass
    if stream.data_end > end or stream.position - end > _TRAILER_MAX:
        raise UploadRejected(
            "the upload has data after the end of its tar archive (only its zero padding may"
            " follow the last file)"
        )


def _check_entry(member: tarfile.TarInfo, limits: UploadLimits) -> str:
    """The entry's checked relative path; UploadRejected if the entry may not be unpacked."""
    shown = repr(member.name[:100])
    if member.issym():
        raise UploadRejected(f"{shown} is a symbolic link: uploads may not hold links")
    if member.islnk():
        raise UploadRejected(f"{shown} is a hard link: uploads may not hold links")
    if member.ischr() or member.isblk():
        raise UploadRejected(f"{shown} is a device: uploads may not hold devices")
    if member.isfifo():
        raise UploadRejected(f"{shown} is a FIFO: uploads may not hold FIFOs")
    if member.issparse() or not (member.isreg() or member.isdir()):
        raise UploadRejected(f"{shown} is not a regular file or directory: uploads hold only those")
    if member.mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX):
        raise UploadRejected(f"{shown} has a setuid, setgid or sticky bit")
    name = member.name
    if len(name) > limits.max_path_length:
        raise UploadRejected(f"{shown}… is a path longer than {limits.max_path_length} characters")
    if any(ord(c) < 32 or ord(c) == 127 or c == "\\" for c in name):
        raise UploadRejected(f"{shown} holds a control character or a backslash")
    if name.startswith("/"):
        raise UploadRejected(f"{shown} is an absolute path")
    parts = name.rstrip("/").split("/") if member.isdir() else name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise UploadRejected(f"{shown} is not a plain relative path (an empty, '.' or '..' part)")
    if len(parts) > limits.max_depth:
        raise UploadRejected(f"{shown} is deeper than {limits.max_depth} directories")
    return "/".join(parts)


def _mkdir(target: Path, destination: Path, name: str) -> None:
    try:
        target.mkdir(mode=0o755, parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise UploadRejected(
            f"{name!r} needs a directory where the upload already put a file"
        ) from None
    if not target.resolve().is_relative_to(destination.resolve()):
        raise UploadRejected(f"{name!r} would be written outside the upload")


def _write_file(target: Path, data: IO[bytes], member: tarfile.TarInfo, name: str) -> None:
    mode = 0o755 if member.mode & stat.S_IXUSR else 0o644
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except (FileExistsError, IsADirectoryError):
        raise UploadRejected(f"{name!r} appears twice in the upload") from None
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(data, out, _CHUNK)


def _manifest(destination: Path) -> BotManifest:
    """The upload's ``bot.toml``, or UploadRejected with the manifest's own message.

    What it asks of the sandbox (``memory_mb``, ``start_timeout_s``) must be within the
    arena's caps: refused here, at upload, rather than at its first start (issue 24, finding 16).
    """
    try:
        manifest = read_manifest(destination)
        limits = SandboxLimits()
        limits.memory_for(manifest)
        limits.start_timeout_for(manifest)
        return manifest
    except SandboxError as e:
        raise UploadRejected(str(e)) from e
    except ManifestError as e:
        # The message names the server's private directory; the author knows it as the upload.
        root = str(destination.resolve())
        message = str(e).replace(root + os.sep, "").replace(root, "the upload")
        raise UploadRejected(message) from e


def _check_packages(manifest: BotManifest) -> None:
    """A Node.js bot's packages must all be registry tarballs pinned by integrity.

    npm ci runs on the league's hosts, with their network: a lock file may not send it
    anywhere else (issue 24, finding 6; the rules are ``arena.sandbox._npm``'s).
    """
    if manifest.runtime is Runtime.NODE:
        try:
            check_package_lock(manifest.path)
        except SandboxError as e:
            raise UploadRejected(str(e)) from e


def _empty(destination: Path) -> None:
    for child in destination.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
