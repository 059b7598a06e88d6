"""The content-addressed artifact store: bot sources, logs and replays, named by SHA-256.

The database refers to an artifact by the hex SHA-256 of its bytes. The bytes live in an
:class:`ArtifactStore`; :class:`DirectoryStore` (the default) keeps each one in a file
``sha256/ab/cdef…`` under the league home. Writes are atomic (a temporary file, fsynced,
then renamed into place), so a reader never sees half an artifact; reads check the hash,
so a file changed on disk is an error, never a silently different bot or replay. An
object store can replace the directory later by implementing the same protocol.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, Protocol

from arena._errors import ArtifactError

__all__ = ["ArtifactStore", "DirectoryStore", "check_digest"]

_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_CHUNK = 1 << 16


def check_digest(digest: str) -> str:
    """Return ``digest`` if it is 64 lowercase hex digits (a SHA-256), else raise ValueError.

    Every digest is checked before it becomes part of a path or a key.
    """
    if not _DIGEST.match(digest):
        raise ValueError(f"not a SHA-256 hex digest: {digest!r}")
    return digest


class ArtifactStore(Protocol):
    """Where the league keeps immutable blobs, each named by the SHA-256 of its bytes."""

    def put(self, data: bytes) -> str:
        """Store ``data``; return its SHA-256 (storing the same bytes twice is a no-op)."""
        ...

    def put_stream(self, stream: BinaryIO) -> str:
        """Store everything ``stream`` yields, read in chunks; return its SHA-256."""
        ...

    def get(self, digest: str) -> bytes:
        """The bytes of artifact ``digest``, checked against the digest.

        Raises:
            ArtifactError: no such artifact, or its bytes do not hash to ``digest``.
        """
        ...

    def exists(self, digest: str) -> bool:
        """Whether artifact ``digest`` is stored."""
        ...


class DirectoryStore:
    """Artifacts as files under a directory: ``ROOT/sha256/ab/cdef…`` (read-only, 0o444).

    Args:
        root: the store's directory, created (mode 0700) if missing.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._tmp = root / "tmp"
        self._tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
        (root / "sha256").mkdir(mode=0o700, exist_ok=True)

    def path(self, digest: str) -> Path:
        """Where artifact ``digest`` is (or would be) kept."""
        check_digest(digest)
        return self.root / "sha256" / digest[:2] / digest[2:]

    def put(self, data: bytes) -> str:
        """Store ``data``; return its SHA-256."""
        return self._write([data])

    def put_stream(self, stream: BinaryIO) -> str:
        """Store everything ``stream`` yields; return its SHA-256."""
        return self._write(iter(lambda: stream.read(_CHUNK), b""))

    def get(self, digest: str) -> bytes:
        """The bytes of artifact ``digest``, checked against it.

        Raises:
            ArtifactError: no such artifact, or its bytes do not hash to ``digest``.
        """
        path = self.path(digest)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ArtifactError(f"artifact {digest} is not in the store") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise ArtifactError(f"artifact {digest} is corrupt: its bytes have another hash")
        return data

    def exists(self, digest: str) -> bool:
        """Whether artifact ``digest`` is stored."""
        return self.path(digest).is_file()

    def _write(self, chunks: Iterable[bytes]) -> str:
        sha = hashlib.sha256()
        fd, tmp_name = tempfile.mkstemp(dir=self._tmp, prefix="put-")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    sha.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            digest = sha.hexdigest()
            final = self.path(digest)
            if final.is_file():
                return digest  # the same bytes are already stored
            final.parent.mkdir(mode=0o700, exist_ok=True)
            tmp.chmod(0o444)
            os.replace(tmp, final)
            _fsync_dir(final.parent)
            return digest
        finally:
            tmp.unlink(missing_ok=True)


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
