"""The roots images are built on, found, pulled or made once per machine.

``python:3.11-slim`` where a registry is reachable, or Debian bookworm made here with
``debootstrap`` (:class:`DebianRoot`).
The package's docstring (``arena/sandbox/images/__init__.py``) tells the whole story.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import docker  # type: ignore[import-untyped,unused-ignore]
import docker.errors  # type: ignore[import-untyped,unused-ignore]
from docker.models.images import Image  # type: ignore[import-untyped,unused-ignore]

from arena._errors import SandboxError, SandboxUnavailable
from arena.sandbox.images._cache import Log, _image, _tag_lock, stderr_log

BASE_ENV = "ARENA_DOCKER_BASE"
"""Environment variable forcing the root of the base image: ``slim`` or ``debootstrap``."""

SLIM_IMAGE = "python:3.11-slim"

ROOTFS_IMAGE = "flipflop-rootfs:bookworm"
"""What the offline build imports its debootstrapped Debian as."""

ROOTFS_REPO = "flipflop-rootfs"
"""The other offline roots are ``flipflop-rootfs-<name>:bookworm-<hash>`` (:class:`DebianRoot`)."""

_SUITE = "bookworm"

PULL_TIMEOUT_S = 180.0
"""How long an automatic pull of python:3.11-slim may take before the offline base is used."""


class BaseKind(Enum):
    """Where the base image's python3 comes from."""

    SLIM = "slim"
    """``python:3.11-slim`` from Docker Hub: present locally, or pulled once."""
    DEBOOTSTRAP = "debootstrap"
    """A minimal Debian bookworm with python3, made here: no registry needed (needs root)."""


def _choose_kind(client: docker.DockerClient, kind: BaseKind | str | None, log: Log) -> BaseKind:
    """The kind asked for (argument, then ``ARENA_DOCKER_BASE``), or the best one available."""
    wanted = kind if kind is not None else os.environ.get(BASE_ENV) or "auto"
    if isinstance(wanted, BaseKind):
        return wanted
    if wanted != "auto":
        try:
            return BaseKind(wanted)
        except ValueError:
            raise SandboxError(
                f"{BASE_ENV}={wanted!r}: expected auto, slim or debootstrap"
            ) from None
    if _image(client, SLIM_IMAGE) is not None:
        return BaseKind.SLIM
    if _image(client, ROOTFS_IMAGE) is not None:
        return BaseKind.DEBOOTSTRAP
    if _pull_slim(client, log, PULL_TIMEOUT_S):
        return BaseKind.SLIM
    return BaseKind.DEBOOTSTRAP


def _pull_slim(client: docker.DockerClient, log: Log, timeout: float) -> bool:
    """Pull python:3.11-slim, giving up after ``timeout`` seconds (the pull runs on)."""
    return _pull(client, log, SLIM_IMAGE, "the bot base image (about 50 MB, once)", timeout)


def _pull(client: docker.DockerClient, log: Log, ref: str, what: str, timeout: float) -> bool:
    """Pull ``ref`` (for ``what``), giving up after ``timeout`` seconds (the pull runs on)."""
    log(f"pulling {ref} for {what}...")
    t0 = time.perf_counter()
    outcome: list[BaseException | None] = []
    repository, _, tag = ref.partition(":")

    def pull() -> None:
        try:
            client.images.pull(repository, tag=tag or "latest")
            outcome.append(None)
        except Exception as e:  # any failure means: use the offline root instead
            outcome.append(e)

    worker = threading.Thread(target=pull, name=f"pull-{repository}", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        log(f"no {ref} after {timeout:.0f} s; building an offline root instead")
        return False
    if outcome[0] is not None:
        reason = str(outcome[0]).splitlines()[0][:200]
        log(f"cannot pull {ref} ({reason}); building an offline root instead")
        return False
    log(f"pulled {ref} in {time.perf_counter() - t0:.1f} s")
    return True


def _root_image(client: docker.DockerClient, kind: BaseKind, log: Log) -> Image:
    """The image the base is built on, made or pulled if missing."""
    if kind is BaseKind.SLIM:
        img = _image(client, SLIM_IMAGE)
        if img is None and _pull_slim(client, log, PULL_TIMEOUT_S * 4):
            img = _image(client, SLIM_IMAGE)
        if img is None:
            raise SandboxUnavailable(
                f"{SLIM_IMAGE} is not available; pull it (docker pull {SLIM_IMAGE}) or set "
                f"{BASE_ENV}=debootstrap to build an offline base"
            )
        return img
    img = _image(client, ROOTFS_IMAGE)
    if img is None:
        _debootstrap(client, log)
        img = _image(client, ROOTFS_IMAGE)
        assert img is not None
    return img


def _mounts_under(root: Path) -> list[str]:
    prefix = str(root) + "/"
    with open("/proc/self/mounts", encoding="utf-8") as fh:
        points = [line.split()[1] for line in fh]
    return sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True)


def _remove_rootfs(target: Path) -> None:
    """Delete a debootstrap target, unmounting what debootstrap left mounted there first.

    A failed or interrupted debootstrap can leave /proc, /sys or /dev mounted in the target;
    if any mount stays, nothing is deleted (rmtree would recurse into the host's /dev).
    """
    for point in _mounts_under(target):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
    if _mounts_under(target):
        return
    shutil.rmtree(target, ignore_errors=True)


@dataclass(frozen=True, slots=True)
class DebianRoot:
    """An offline Debian bookworm root image, made here with ``debootstrap`` and imported.

    Its tag carries a hash of its package list, so a changed list makes a new root and an
    unchanged one is found again (it is made once per machine).

    Attributes:
        name: what it is for: the image is ``flipflop-rootfs-<name>:bookworm-<hash>``.
        packages: the Debian packages installed on top of ``--variant=minbase``.
        about: how long it takes, for the progress line.
    """

    name: str
    packages: tuple[str, ...]
    about: str = "a few minutes"

    @property
    def tag(self) -> str:
        """``flipflop-rootfs-<name>:bookworm-<hash of the package list>``."""
        listed = ",".join(sorted(self.packages))
        digest = hashlib.sha256(f"{_SUITE}\0minbase\0{listed}".encode()).hexdigest()[:12]
        return f"{ROOTFS_REPO}-{self.name}:{_SUITE}-{digest}"


NODE_ROOT = DebianRoot("node", ("nodejs",), "about a minute")
"""What a Node.js bot runs on offline: Debian's ``nodejs`` (18)."""

NODE_IMAGE = "node:18-bookworm-slim"
"""What a Node.js bot runs on where a registry is reachable (or the image is present): the
same Node.js major on the same Debian (:func:`_node_root`). Go and C++ have no such route:
their builds need Debian's packaged gRPC and may not reach the network, and the registry's
``golang``/``gcc`` images carry neither."""

NODE_IMAGE_ENV = "ARENA_NODE_IMAGE"
"""Environment variable naming another image for :data:`NODE_IMAGE` (an organisation's mirror
of it, say): the same Node.js major on Debian bookworm, with ``node`` on the path."""


def node_image() -> str:
    """The registry image a Node.js bot runs on: ``$ARENA_NODE_IMAGE``, else :data:`NODE_IMAGE`."""
    return os.environ.get(NODE_IMAGE_ENV) or NODE_IMAGE


GO_BUILDER = DebianRoot("go-build", ("golang-go", "golang-google-grpc-dev"), "about 2 minutes")
"""Where a Go bot is built: Go 1.19 and grpc-go 1.33 as source under /usr/share/gocode."""

CPP_BUILDER = DebianRoot(
    "cpp-build",
    (
        "g++",
        "make",
        "pkg-config",
        "protobuf-compiler",
        "protobuf-compiler-grpc",
        "libgrpc++-dev",
        "libprotobuf-dev",
    ),
    "about 3 minutes",
)
"""Where a C++ bot is built: g++ 12, make, protoc with the gRPC plugin, gRPC and protobuf."""


def ensure_root(client: docker.DockerClient, root: DebianRoot, log: Log = stderr_log) -> Image:
    """The image of ``root``, made (once, under a lock of its own) if missing.

    Raises:
        SandboxUnavailable: debootstrap is not installed, or this process is not root.
        SandboxError: debootstrap or the import failed.
    """
    img = _image(client, root.tag)
    if img is not None:
        return img
    with _tag_lock(root.tag):
        if _image(client, root.tag) is None:
            _debootstrap(client, log, root.packages, root.tag, root.about)
    img = _image(client, root.tag)
    assert img is not None
    return img


def _debootstrap(
    client: docker.DockerClient,
    log: Log,
    packages: Sequence[str] = ("python3",),
    image: str = ROOTFS_IMAGE,
    about: str = "about 2 minutes",
) -> None:
    """Make ``image``: debootstrap a minimal Debian with ``packages``, then docker import."""
    exe = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if os.path.exists("/usr/sbin/debootstrap") else None
    )
    if exe is None or os.geteuid() != 0:
        why = "debootstrap is not installed" if exe is None else "debootstrap needs root"
        if image == ROOTFS_IMAGE:
            raise SandboxUnavailable(
                f"no {SLIM_IMAGE} image and no registry to pull it from, and {why}: pull "
                f"{SLIM_IMAGE} once where a registry is reachable (docker pull {SLIM_IMAGE}), "
                "or run once as root with debootstrap installed to build an offline base"
            )
        raise SandboxUnavailable(
            f"the image {image} (Debian {_SUITE} with {', '.join(packages)}) is missing and "
            f"{why}: run the arena once as root with debootstrap installed to make it"
        )
    scratch = Path(tempfile.mkdtemp(prefix="flipflop-rootfs-", dir="/var/tmp"))
    target = scratch / "root"
    t0 = time.perf_counter()
    log(
        f"building an offline Debian {_SUITE} with {', '.join(packages)} "
        f"(debootstrap --variant=minbase) as {image}: {about}, once"
    )
    try:
        r = subprocess.run(
            [exe, "--variant=minbase", f"--include={','.join(packages)}", _SUITE, str(target)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-5:])
            raise SandboxError(f"debootstrap failed (exit {r.returncode}):\n{tail}")
        log(f"debootstrap done in {time.perf_counter() - t0:.0f} s; importing it into Docker")
        for junk in (
            "usr/share/doc",
            "usr/share/man",
            "usr/share/info",
            "var/cache/apt",
            "var/lib/apt/lists",
        ):
            shutil.rmtree(target / junk, ignore_errors=True)
        tarball = scratch / "rootfs.tar"
        subprocess.run(
            [
                "tar",
                "-C",
                str(target),
                "--exclude=./proc/*",
                "--exclude=./sys/*",
                "--exclude=./dev/*",
                "-cf",
                str(tarball),
                ".",
            ],
            check=True,
            capture_output=True,
        )
        repo, _, tag = image.partition(":")
        client.api.import_image_from_file(str(tarball), repository=repo, tag=tag)
    except (OSError, subprocess.CalledProcessError, docker.errors.APIError) as e:
        raise SandboxError(f"cannot build the offline root {image}: {e}") from e
    finally:
        _remove_rootfs(target)
        if not _mounts_under(scratch):  # rmtree crosses mount points: never into a live /dev
            shutil.rmtree(scratch, ignore_errors=True)
    log(f"offline root image {image} ready in {time.perf_counter() - t0:.0f} s")
