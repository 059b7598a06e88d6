import hashlib
import io
from pathlib import Path

import pytest

from arena.league import ArtifactError, ArtifactStore, DirectoryStore


@pytest.fixture
def store(tmp_path: Path) -> DirectoryStore:
    """An empty directory store."""
    return DirectoryStore(tmp_path / "artifacts")


def test_put_returns_the_sha256_and_get_gives_the_bytes_back(store: DirectoryStore) -> None:
    """An artifact is named by the SHA-256 of its bytes and read back whole."""
    digest = store.put(b"hello")
    assert hashlib.sha256(b"hello").hexdigest() == digest
    assert b"hello" == store.get(digest)
    assert store.exists(digest)


def test_put_stream_reads_in_chunks(store: DirectoryStore) -> None:
    """A stream of several chunks is stored under the hash of all its bytes."""
    data = bytes(range(256)) * 1000
    assert hashlib.sha256(data).hexdigest() == store.put_stream(io.BytesIO(data))
    assert data == store.get(hashlib.sha256(data).hexdigest())


def test_the_same_bytes_are_stored_once(store: DirectoryStore) -> None:
    """Putting the same bytes twice is a no-op; no temporary files stay behind."""
    first = store.put(b"x")
    assert first == store.put(b"x")
    assert [store.path(first)] == [p for p in store.root.rglob("*") if p.is_file()]


def test_artifacts_are_read_only_files(store: DirectoryStore) -> None:
    """A stored artifact is not writable, so it is never changed in place by mistake."""
    assert 0o444 == store.path(store.put(b"x")).stat().st_mode & 0o777


def test_a_corrupted_artifact_is_an_error_on_read(store: DirectoryStore) -> None:
    """Bytes changed on disk are detected: read never returns what the hash does not name."""
    digest = store.put(b"original")
    path = store.path(digest)
    path.chmod(0o644)
    path.write_bytes(b"tampered")
    with pytest.raises(ArtifactError, match="corrupt"):
        store.get(digest)


def test_a_missing_artifact_is_an_error(store: DirectoryStore) -> None:
    """Reading a hash that was never stored says so."""
    with pytest.raises(ArtifactError, match="not in the store"):
        store.get("0" * 64)


@pytest.mark.parametrize("digest", ["../../etc/passwd", "A" * 64, "0" * 63, "", "0" * 64 + "/"])
def test_only_sha256_digests_name_artifacts(store: DirectoryStore, digest: str) -> None:
    """Anything but 64 lowercase hex digits is refused before it becomes a path."""
    with pytest.raises(ValueError, match="not a SHA-256"):
        store.get(digest)


def test_the_directory_store_is_an_artifact_store(store: DirectoryStore) -> None:
    """DirectoryStore implements the ArtifactStore protocol an object store will too."""
    typed: ArtifactStore = store
    assert typed.exists(typed.put(b"y"))
