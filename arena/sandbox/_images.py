"""Docker images for bots: one base image, then one image per bot, each built once.

The **base image** ``flipflop-base:<hash>`` (also tagged ``flipflop-base:latest``) holds
python3 with ``grpcio``, ``protobuf`` and the ``flipflop`` SDK. Its hash covers the SDK's
sources, the pinned wheel versions and the underlying root image, so a changed SDK builds a
new base and an unchanged one is found again. The root image is one of (:class:`BaseKind`):

- ``python:3.11-slim``, used when it is present locally or can be pulled;
- an offline Debian bookworm with python3 made here with ``debootstrap`` and ``docker import``,
  for machines that cannot reach a registry (needs root, about two minutes, once).

A **bot image** ``flipflop-bot-<name>:<hash>`` is built from the arena's own recipe for the
bot's :class:`~flipflop._manifest.Runtime`, never from what the bot ships (issue 15, finding 2:
a bot's Dockerfile is run by the Docker daemon, which fetches ``ADD <url>`` on the host's
network and can ``COPY --from`` any image on the engine, another bot's or the league's):

- ``python``: the bot's files copied to ``/bot`` (owned by root, so read-only to the bot),
  its wheels unzipped into ``/bot/.deps`` (on ``PYTHONPATH``), user 65534, the manifest's
  ``command`` as entry point. The wheels come from a ``requirements.txt`` in which every
  requirement is pinned with ``--hash=``; the arena downloads them on the host
  (``pip download --require-hashes --only-binary=:all:``, CPython 3.11, manylinux) and caches
  them under ``~/.cache/flipflop-arena/wheels``. The recipe has no ``RUN`` step: no code of
  the bot runs at build time.
- ``binary``: the same without wheels; the entry point is the executable ``command[0]``.
- ``node``: the bot's files and its ``node_modules`` on Debian's ``nodejs``, user 65534, the
  manifest's ``command`` as entry point. The packages are those its ``package-lock.json``
  pins (a bot without one is refused), installed on the host by ``npm ci --omit=dev
  --ignore-scripts`` (as user 65534 when the arena is root: no install script, no bot code,
  runs on the host) and cached under ``~/.cache/flipflop-arena/npm`` by the lock's hash. The
  recipe has no ``RUN`` step. npm has the host's network, so the lock may name only tarballs
  of the registry npm is configured with, pinned by a sha512 integrity (``_npm``, issue 24,
  finding 6).
- ``go`` and ``cpp``: a build step, then a recipe without ``RUN``. The build step runs the
  bot's own build files (its ``Makefile``, its Go code), so it runs as a bot does (issue 24,
  finding 7), never as a ``RUN`` of ``docker build`` (which the daemon runs under runc with
  Docker's default seccomp profile and no pids limit): a container of the root with the
  toolchain, under the runtime the bots run under (gVisor's ``runsc`` when the arena uses it),
  with the arena's seccomp profile, ``no-new-privileges``, no capabilities, user 65534, no
  network, a read-only root, and the build limits' memory, CPU, pids and time, on a copy of
  the sources in a host directory mounted at ``/src`` (:func:`_compile`): Go in GOPATH mode
  against Debian's grpc-go sources, ``CGO_ENABLED=0`` (a static binary); C++ with the bot's
  ``make`` (gRPC linked statically, only glibc shared). The image is then the bot base with
  the bot's files and the one executable ``command[0]`` the build left (a regular file, read
  once the container is gone; owned by root), user 65534, that executable as entry point.
  Build outputs in the bot directory (``node_modules``, the executable, ``gen/``, ``*.o``) are
  neither copied nor hashed: the image is made from the sources.

The roots of these recipes are offline Debian bookworm images made here with ``debootstrap``
and ``docker import`` (:class:`DebianRoot`: :data:`NODE_ROOT`, :data:`GO_BUILDER`,
:data:`CPP_BUILDER`), once per machine, tagged by a hash of their package lists. Their image
ids are in the recipe's text, so a rebuilt root rebuilds every image on it.

A bot's own ``Dockerfile`` is ignored (one line in the log says so) unless the caller trusts
it (``arena run --trust-dockerfile``, for one's own bots): it is then built with
``--build-arg BASE=<base tag>``, after :func:`check_dockerfile` has refused ``VOLUME``,
``ADD <url>`` and ``COPY --from`` (or ``RUN --mount=from=``) an image the arena did not build.

Every build is bounded (:class:`BuildLimits`, issue 15, finding 3): no network, memory (no
swap), CPU and wall time (the build runs in a child process that is killed past the limit;
the daemon then cancels the build and removes its container; a compiled bot's build
container is removed past it), a compiled bot's build step's processes and threads, and a
cap on the image's size (a bigger image is removed and refused). Builds of different images
run at once: each holds a file lock named after its tag in :func:`cache_dir` (the base image
has its own).

Each use of a bot image is recorded (``images.json`` in :func:`cache_dir`), so that
:func:`prune_images` (``arena images prune``) can remove the images not used for a while, the
dangling ones and the build cache, and never an image the arena did not build.
``ARENA_DOCKER_BASE=slim|debootstrap`` forces a root. Progress and timings go to stderr.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import docker  # type: ignore[import-untyped,unused-ignore]
import docker.errors  # type: ignore[import-untyped,unused-ignore]
import requests.exceptions
from docker.models.images import Image  # type: ignore[import-untyped,unused-ignore]
from docker.types import LogConfig, Ulimit  # type: ignore[import-untyped,unused-ignore]

import flipflop
from arena._errors import SandboxError, SandboxUnavailable
from arena.sandbox._containers import Runtime as OciRuntime
from arena.sandbox._containers import host_pids_limit, owner_labels, seccomp_profile
from arena.sandbox._npm import check_package_lock, configured_registry
from flipflop import BotManifest
from flipflop._manifest import Runtime

__all__ = [
    "ARENA_LABEL",
    "BASE_ENV",
    "BASE_REPO",
    "CPP_BUILDER",
    "GO_BUILDER",
    "NODE_IMAGE_ENV",
    "NODE_ROOT",
    "BaseKind",
    "BuildLimits",
    "DebianRoot",
    "PruneReport",
    "PrunedImage",
    "bot_image_tag",
    "cache_dir",
    "check_dockerfile",
    "ensure_base_image",
    "ensure_bot_image",
    "ensure_root",
    "node_image",
    "prune_images",
    "stderr_log",
]

Log = Callable[[str], None]

BASE_REPO = "flipflop-base"
"""Repository of the base images (``flipflop-base:<hash>`` and ``:latest``)."""
BASE_ENV = "ARENA_DOCKER_BASE"
"""Environment variable forcing the root of the base image: ``slim`` or ``debootstrap``."""
SLIM_IMAGE = "python:3.11-slim"
ROOTFS_IMAGE = "flipflop-rootfs:bookworm"
"""What the offline build imports its debootstrapped Debian as."""
ROOTFS_REPO = "flipflop-rootfs"
"""The other offline roots are ``flipflop-rootfs-<name>:bookworm-<hash>`` (:class:`DebianRoot`)."""
_SUITE = "bookworm"
BOT_REPO_PREFIX = "flipflop-bot-"
ARENA_LABEL = "flipflop.arena.image"
"""Label on every image the arena builds; its value is the tag it was built as."""
PULL_TIMEOUT_S = 180.0
"""How long an automatic pull of python:3.11-slim may take before the offline base is used."""
# Bump when the recipe below changes in a way the hashed inputs do not show.
_RECIPE = "4"
# The Python packages a bot image needs besides the SDK; versions are those of this arena's
# own environment, so bots run the very runtime the arena was tested with.
_WHEELS = ("grpcio", "protobuf", "typing_extensions")
_BASE_DOCKERFILE = """\
ARG ROOT
FROM ${ROOT}
ARG SITE
COPY site/ ${SITE}/
RUN mkdir -p /run/flipflop /bot \\
 && python3 -m compileall -q ${SITE}/flipflop ${SITE}/grpc ${SITE}/google \\
 && python3 -c "import flipflop, grpc, google.protobuf; print('flipflop', flipflop.__version__)"
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 LANG=C.UTF-8
"""
_PYTHON_RECIPE = """\
FROM {base}
COPY bot/ /bot/
{deps}WORKDIR /bot
USER 65534:65534
ENTRYPOINT {entrypoint}
"""
_PYTHON_DEPS = """\
COPY deps/ /bot/.deps/
ENV PYTHONPATH=/bot/.deps
"""
_BINARY_RECIPE = """\
FROM {base}
COPY bot/ /bot/
WORKDIR /bot
USER 65534:65534
ENTRYPOINT {entrypoint}
"""
_NODE_RECIPE = """\
FROM {root}
COPY bot/ /bot/
COPY node_modules/ /bot/node_modules/
WORKDIR /bot
ENV NODE_ENV=production
USER 65534:65534
ENTRYPOINT {entrypoint}
"""
# A compiled bot: its build step ran in a container of its builder (:func:`_compile`), which
# left the one executable in built/ and who built it in build-uid; the image gets its files
# and that executable, owned by root. The first line names the build, so that the tag (a
# hash of the recipe's text) follows the builder image and the command as well.
_COMPILED_RECIPE = """\
# built in {builder} by: {build}
FROM {base}
COPY bot/ /bot/
COPY built/ /bot/
COPY build-uid /etc/flipflop-build-uid
WORKDIR /bot
USER 65534:65534
ENTRYPOINT {entrypoint}
"""
_GO_BUILD = (
    "GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= CGO_ENABLED=0 GOCACHE=/tmp/go-cache "
    "GOMAXPROCS={procs} go build -p {procs} -trimpath -o {exe} ."
)
"""Go in GOPATH mode against Debian's grpc-go sources: no go.mod, no module proxy. Go sizes
its parallelism by the host's CPUs, not the container's quota: ``-p`` and ``GOMAXPROCS`` keep
its processes and threads well within the build's pids limit on a big machine too."""
_GO_PROCS = 2
_CPP_BUILD = "make"
_BUILD_SCRIPT = "umask 0 && id -u > /tmp/build-uid && {build}"
"""What the build container runs in ``/src``. ``umask 0``: what the build leaves in its host
directories stays removable by an arena that is not root (the files are user 65534's)."""
BUILD_SRC = "/src"
"""Where a build container sees the copy of the bot's sources it builds (its working
directory); its ``/tmp``, also its ``HOME``, is a second host directory."""
_BUILD_GRACE_S = 10
"""The build container's own deadline (``timeout -s KILL``) comes this much after the arena's:
if the arena is gone, the build still ends."""
_ASSEMBLY_MIN_S = 60.0
"""The least time given to the image's assembly after a build step (it runs no code)."""
_BUILD_LOG_LINES = 12
_EXE = re.compile(r"(?:\./)?([A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)*)")
"""``command[0]`` of a compiled bot: a relative path of plain names (it is written into the
recipe, so no space, quote, newline or ``..``)."""
_BUILD_OUTPUTS = {Runtime.CPP: ("gen",), Runtime.NODE: ("node_modules",), Runtime.GO: ()}
"""Top-level entries of a bot directory that its own build makes: never copied, never hashed
(the image is built from the sources; besides these, the executable and ``*.o`` files)."""
NPM_TIMEOUT_S = 300.0
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


class BaseKind(Enum):
    """Where the base image's python3 comes from."""

    SLIM = "slim"
    """``python:3.11-slim`` from Docker Hub: present locally, or pulled once."""
    DEBOOTSTRAP = "debootstrap"
    """A minimal Debian bookworm with python3, made here: no registry needed (needs root)."""


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


# ---------------------------------------------------------------------------------- hashing


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


def _pins() -> dict[str, str]:
    pins = {}
    for name in _WHEELS:
        try:
            pins[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError as e:
            raise SandboxError(f"cannot build the bot base image: {name} is not installed") from e
    return pins


# ---------------------------------------------------------------------------------- the root


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


# ---------------------------------------------------------------------------------- wheels


def _platforms(arch: str) -> list[str]:
    """Pip platform tags for glibc Linux on ``arch`` (Debian bookworm has glibc 2.36)."""
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)
    return [f"manylinux_2_{v}_{arch}" for v in (17, 28, 31, 34)] + [f"manylinux2014_{arch}"]


def _wheels(pins: dict[str, str], arch: str, log: Log) -> list[Path]:
    """The wheels for the image (CPython 3.11, glibc, ``arch``): from the cache, else pip."""
    out: list[Path] = []
    for name, version in pins.items():
        where = cache_dir() / "wheels" / f"cp311-{arch}" / f"{name}-{version}"
        found = sorted(where.glob("*.whl")) if where.is_dir() else []
        if not found:
            where.mkdir(parents=True, exist_ok=True)
            args = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "--implementation",
                "cp",
                "--abi",
                "cp311",
                "--dest",
                str(where),
            ]
            for platform in _platforms(arch):
                args += ["--platform", platform]
            t0 = time.perf_counter()
            r = subprocess.run([*args, f"{name}=={version}"], capture_output=True, text=True)
            found = sorted(where.glob("*.whl"))
            if r.returncode != 0 or not found:
                tail = "\n".join(r.stderr.strip().splitlines()[-3:])
                raise SandboxError(
                    f"cannot download the {name}=={version} wheel for the bot image "
                    f"(pip download, CPython 3.11 {arch}):\n{tail}"
                )
            log(f"downloaded {found[0].name} in {time.perf_counter() - t0:.1f} s")
        out.append(found[0])
    return out


# ---------------------------------------------------------------------------------- building

# The build runs in a child process so that a build past its time limit can be stopped for
# sure: killing the child closes its connection, and the daemon cancels a classic build whose
# client is gone (it kills and removes the step's container). docker-py's ``build`` has no
# CPU quota argument, though the Engine API takes one: the child adds it to the request.
_BUILD_CHILD = r"""
import collections, json, signal, sys
import docker

job = json.load(sys.stdin)
signal.alarm(job["alarm"])  # dies, cancelling the build, even if the arena is gone

class Api(docker.APIClient):
    def _post(self, url, **kwargs):
        if url.endswith("/build"):
            kwargs["params"].update(job["extra"])
        return super()._post(url, **kwargs)

api = Api(**docker.utils.kwargs_from_env(), version="auto")
tail = collections.deque(maxlen=12)
error = None
image = None
for chunk in api.build(decode=True, **job["build"]):
    if "error" in chunk:
        error = str(chunk["error"])
    text = str(chunk.get("stream") or "")
    if text.strip():
        tail.append(text.rstrip()[:400])
    aux = chunk.get("aux")
    if isinstance(aux, dict) and "ID" in aux:
        image = aux["ID"]
print(json.dumps({"error": error, "tail": list(tail), "image": image}))
"""


def _build(
    client: docker.DockerClient,
    context: Path,
    tag: str,
    buildargs: dict[str, str],
    labels: dict[str, str],
    limits: BuildLimits,
    *,
    nocache: bool = False,
) -> None:
    """Build ``context`` as ``tag`` within ``limits``; remove it and raise if it is too big.

    Raises:
        SandboxError: the build failed, ran out of time, or made an image over the size cap.
    """
    memory = limits.memory_mb * _MB
    job = {
        "build": {
            "path": str(context),
            "tag": tag,
            "buildargs": buildargs,
            "labels": {**labels, ARENA_LABEL: tag},
            "nocache": nocache,
            "rm": True,
            "forcerm": True,
            "pull": False,
            "network_mode": "none",
            "container_limits": {"memory": memory, "memswap": memory},
        },
        "extra": {"cpuperiod": 100_000, "cpuquota": int(limits.cpus * 100_000)},
        "alarm": int(limits.timeout_s) + 10,
    }
    child = subprocess.Popen(
        [sys.executable, "-c", _BUILD_CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = child.communicate(json.dumps(job), timeout=limits.timeout_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise SandboxError(
            f"docker build of {tag} stopped: it ran past the build time limit of "
            f"{limits.timeout_s:g} s"
        ) from None
    try:
        result = json.loads(out.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        tail = "\n".join(err.strip().splitlines()[-4:])
        raise SandboxError(f"docker build of {tag} failed:\n{tail}") from None
    if result["error"] is not None or _image(client, tag) is None:
        tail = "\n".join(result["tail"][-8:])
        why = str(result["error"] or "no image was made").strip()
        if "returned a non-zero code: 137" in why:
            why += f" (killed: a build step may use at most {limits.memory_mb} MB of memory)"
        raise SandboxError(f"docker build of {tag} failed: {why}\n{tail}")
    _refuse_big(client, tag, limits)


def _refuse_big(client: docker.DockerClient, tag: str, limits: BuildLimits) -> None:
    """Remove ``tag`` and raise if its image is over ``limits.image_mb``."""
    built = _image(client, tag)
    size = int(((built.attrs or {}) if built is not None else {}).get("Size") or 0)
    if size > limits.image_mb * _MB:
        with contextlib.suppress(docker.errors.APIError):
            client.images.remove(tag, force=True)
        raise SandboxError(
            f"the image {tag} is {size / _MB:.0f} MB, over the {limits.image_mb} MB cap on a "
            "bot image (base included): removed"
        )


def ensure_base_image(
    client: docker.DockerClient, log: Log = stderr_log, kind: BaseKind | str | None = None
) -> str:
    """The tag of the base image for this SDK, built if missing; also tagged ``:latest``.

    Args:
        client: a Docker client.
        log: where progress and timings go (a line at a time).
        kind: ``slim``, ``debootstrap`` or ``auto``; default: ``$ARENA_DOCKER_BASE`` or auto.

    Raises:
        SandboxUnavailable: no way to get a python3 root image on this machine.
        SandboxError: a build failed.
    """
    t0 = time.perf_counter()
    chosen = _choose_kind(client, kind, log)
    sdk = Path(flipflop.__file__).resolve().parent
    pins = _pins()
    with _base_lock():
        root = _root_image(client, chosen, log)
        h = hashlib.sha256()
        h.update(f"{_RECIPE}\0{chosen.value}\0{root.id}\0{_BASE_DOCKERFILE}\0".encode())
        h.update(repr(sorted(pins.items())).encode())
        _hash_tree(h, sdk)
        tag = f"{BASE_REPO}:{h.hexdigest()[:16]}"
        if _image(client, tag) is None:
            _build_base(client, chosen, root, sdk, pins, tag, log)
            log(f"bot base image {tag} built in {time.perf_counter() - t0:.1f} s (cold)")
        else:
            log(f"bot base image {tag} ({chosen.value}) cached: {time.perf_counter() - t0:.2f} s")
        img = _image(client, tag)
        assert img is not None
        img.tag(BASE_REPO, "latest")
    _record_use(tag)
    return tag


def _build_base(
    client: docker.DockerClient,
    kind: BaseKind,
    root: Image,
    sdk: Path,
    pins: dict[str, str],
    tag: str,
    log: Log,
    *,
    nocache: bool = False,
) -> None:
    arch = str(client.info().get("Architecture", "x86_64"))
    wheels = _wheels(pins, arch, log)
    log(f"building bot base image {tag} on {kind.value} ({root.short_id}): about 15 s")
    # python:3.11-slim has its own Python in /usr/local; Debian's python3 reads the
    # /usr/local dist-packages directory for packages that are not Debian's.
    site = (
        "/usr/local/lib/python3.11/site-packages"
        if kind is BaseKind.SLIM
        else "/usr/local/lib/python3.11/dist-packages"
    )
    with tempfile.TemporaryDirectory(prefix="flipflop-base-") as tmp:
        context = Path(tmp)
        (context / "Dockerfile").write_text(_BASE_DOCKERFILE, encoding="utf-8")
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as z:
                z.extractall(context / "site")
        _copy_tree(sdk, context / "site" / "flipflop")
        _make_readable(context / "site")
        _build(
            client,
            context,
            tag,
            {"ROOT": str(root.id), "SITE": site},
            {"flipflop.base": kind.value, "flipflop.sdk": flipflop.__version__},
            BuildLimits(),
            nocache=nocache,
        )


# ---------------------------------------------------------------------------------- bot wheels

_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._ -]*\])?\s*==\s*\S")
_HOW_TO_HASH = (
    "make one with `pip-compile --generate-hashes` (pip-tools), or add `--hash=sha256:<digest>` "
    "to each line (`pip hash <wheel>` prints it)"
)


def _requirement_lines(file: Path) -> list[str]:
    """The logical lines of ``file`` (continuations joined, comments dropped)."""
    lines: list[str] = []
    buf = ""
    for raw in file.read_text(encoding="utf-8").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        if buf.strip():
            lines.append(" ".join(buf.split()))
        buf = ""
    if buf.strip():
        lines.append(" ".join(buf.split()))
    return lines


def check_requirements(file: Path) -> None:
    """Refuse a ``requirements.txt`` that is not fully pinned by hash.

    Each line must be ``name==version`` (extras and markers allowed) with ``--hash=`` options;
    options that point pip elsewhere (``-r``, ``-e``, ``--index-url``, URLs, paths) are refused,
    since pip runs on the arena's host.

    Raises:
        SandboxError: naming the first offending line and how to make a hashed file.
    """
    for line in _requirement_lines(file):
        if line.startswith("-"):
            raise SandboxError(
                f"{file.name}: {line.split()[0]!r} is not allowed: only pinned requirements with "
                f"--hash= lines; {_HOW_TO_HASH}"
            )
        if not _REQUIREMENT.match(line) or "://" in line or " @ " in line:
            raise SandboxError(
                f"{file.name}: {line.split()[0]!r} is not pinned as name==version; "
                f"every requirement must be pinned with hashes: {_HOW_TO_HASH}"
            )
        if "--hash=" not in line:
            raise SandboxError(
                f"{file.name}: {line.split()[0]!r} has no --hash=: every requirement must be"
                " pinned with hashes, so that the arena installs exactly what was tested;"
                f" {_HOW_TO_HASH}"
            )


def _bot_wheels(file: Path, arch: str, log: Log) -> list[Path]:
    """The wheels of a hashed ``requirements.txt``, downloaded on the host and cached."""
    check_requirements(file)
    digest = hashlib.sha256(file.read_bytes()).hexdigest()[:24]
    where = cache_dir() / "wheels" / f"cp311-{arch}" / f"req-{digest}"
    done = where / ".complete"
    with _file_lock(cache_dir() / "locks" / f"wheels-{digest}.lock"):
        if not done.is_file():
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir(parents=True)
            args = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--no-input",
                "--require-hashes",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "--implementation",
                "cp",
                "--abi",
                "cp311",
                "--dest",
                str(where),
                "-r",
                str(file),
            ]
            for platform in _platforms(arch):
                args += ["--platform", platform]
            t0 = time.perf_counter()
            r = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            if r.returncode != 0:
                # The bot's owner reads this: no path of the host in it (issue 24, finding 14).
                tail = "\n".join(r.stderr.strip().splitlines()[-6:])
                for path, shown in ((str(file.parent), "."), (str(where), "the wheel cache")):
                    tail = tail.replace(path, shown)
                raise SandboxError(
                    f"cannot download the wheels of {file.name} (pip download --require-hashes,"
                    f" CPython 3.11 {arch}):\n{tail}"
                )
            done.write_text("", encoding="utf-8")
            log(f"downloaded the wheels of {file} in {time.perf_counter() - t0:.1f} s")
    return sorted(where.glob("*.whl"))


def _unpack_wheels(wheels: Sequence[Path], target: Path, limit_bytes: int) -> None:
    """Unzip ``wheels`` into ``target`` as site packages (a wheel is a zip), within a size."""
    total = 0
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            total += sum(info.file_size for info in z.infolist())
            if total > limit_bytes:
                raise SandboxError(
                    f"the bot's wheels unpack to more than {limit_bytes // _MB} MB, the cap on "
                    "a bot image"
                )
            z.extractall(target)  # zipfile drops absolute paths and '..'
    # Files a wheel installs into site-packages from its .data directory.
    for data in target.glob("*.data"):
        for scheme in ("purelib", "platlib"):
            if (data / scheme).is_dir():
                shutil.copytree(data / scheme, target, dirs_exist_ok=True)
        shutil.rmtree(data)
    _make_readable(target)


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------- trusted Dockerfiles


def _bot_repo(bot: BotManifest) -> str:
    return BOT_REPO_PREFIX + bot.name.lower().replace("_", "-")


def bot_image_tag(
    bot: BotManifest, base: str, inputs: Sequence[str] = (), *, trusted: bool = False
) -> str:
    """The tag of ``bot``'s image on ``base``: a hash of all it is built from.

    ``inputs`` are the other things the image is built from, each a string: the recipe's
    text (with the ids of the root images it builds on), the runtime, the trust mode, the base
    image's id, the wheels' hashes, the npm packages' cache key, the ids of the images a
    trusted Dockerfile builds ``FROM``. Every file of the bot directory that goes into the
    image is hashed too: for a recipe, all but the build outputs it makes itself
    (:func:`_bot_ignore`); for a ``trusted`` Dockerfile, all.
    """
    h = hashlib.sha256()
    h.update(f"{_RECIPE}\0{base}\0{bot.command!r}\0".encode())
    for item in inputs:
        h.update(f"{item}\0".encode())
    _hash_tree(h, bot.path, _IGNORED if trusted else _bot_ignore(bot))
    return f"{_bot_repo(bot)}:{h.hexdigest()[:16]}"


_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", re.IGNORECASE | re.MULTILINE)


def from_images(dockerfile: str) -> list[str]:
    """The images a Dockerfile builds ``FROM``, in order: not its own stages, not ``$ARG`` ones.

    An image named through a build argument (``FROM ${BASE}``) is the arena's base, already
    in the tag; a stage named earlier (``FROM builder``) is built from the same file.
    """
    stages: set[str] = set()
    out = []
    for ref, alias in _FROM.findall(dockerfile):
        if "$" not in ref and ref.lower() not in stages and ref.lower() != "scratch":
            out.append(ref)
        if alias:
            stages.add(alias.lower())
    return out


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` per instruction: continuations joined, comments dropped.

    ``ONBUILD X args`` counts as ``X args``: it runs in whatever builds on this image.
    """
    lines = dockerfile.splitlines()
    escape = "\\"
    for line in lines:  # parser directives come first, as comments
        directive = re.match(r"\s*#\s*([a-z]+)\s*=\s*(\S+)", line, re.IGNORECASE)
        if directive is None:
            break
        if directive.group(1).lower() == "escape":
            escape = directive.group(2)[0]
    out: list[tuple[str, str]] = []
    buf = ""
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith(escape):
            buf += stripped[: -len(escape)] + " "
            continue
        buf += stripped
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    if buf.strip():
        word, _, rest = buf.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
    unwrapped = []
    for word, rest in out:
        if word == "ONBUILD":
            inner, _, rest = rest.partition(" ")
            word, rest = inner.upper(), rest.strip()
        unwrapped.append((word, rest))
    return unwrapped


def _arguments(rest: str) -> list[str]:
    """An instruction's arguments, from its JSON form or split on white space."""
    if rest.startswith("["):
        with contextlib.suppress(json.JSONDecodeError):
            parsed = json.loads(rest)
            if isinstance(parsed, list):
                return [str(x) for x in parsed]
    return rest.split()


def _is_arena_base(client: docker.DockerClient, ref: str) -> bool:
    """Whether ``ref`` names one of the arena's base images (not a bot's image)."""
    repo = ref.rsplit("@", 1)[0]
    repo = repo.rsplit(":", 1)[0] if ":" in repo.rsplit("/", 1)[-1] else repo
    if repo != BASE_REPO:
        return False
    found = _image(client, ref)
    labels = (((found.attrs or {}) if found is not None else {}).get("Config") or {}).get("Labels")
    return "flipflop.sdk" in (labels or {})


def check_dockerfile(dockerfile: str, client: docker.DockerClient, base: str) -> None:
    """Refuse what a trusted Dockerfile may still not do, saying why (issue 15).

    Refused: ``VOLUME``; ``ADD`` from a URL (the daemon fetches it on the host's network) or
    from a variable; ``COPY --from``, ``ADD --from`` or ``RUN --mount=...,from=`` naming an
    image that is neither a stage of this file nor the arena's base image (it could be another
    bot's image or the league's); ``FROM`` another bot's image.

    Raises:
        SandboxError: one sentence naming the instruction.
    """
    stages: list[str] = []
    for word, rest in _instructions(dockerfile):
        args = _arguments(rest)
        flags = [a for a in args if a.startswith("--")]
        plain = [a for a in args if not a.startswith("--")]
        if word == "VOLUME":
            raise SandboxError(
                f"declares VOLUME {rest}: refused, since a volume is host disk outside the bot's "
                "read-only root and its capped /tmp; write to /tmp instead"
            )
        if word == "FROM":
            ref = plain[0] if plain else ""
            resolved = ref.replace("${BASE}", base).replace("$BASE", base)
            if resolved.lower().startswith(BOT_REPO_PREFIX):
                raise SandboxError(
                    f"builds FROM {ref}: refused, since that is another bot's image; build "
                    "FROM the arena's base (ARG BASE, FROM ${BASE}) or a public image"
                )
            if len(plain) >= 3 and plain[1].upper() == "AS":
                stages.append(plain[2].lower())
            else:
                stages.append("")
            continue
        if word == "ADD":
            for source in plain[:-1]:
                if "://" in source or source.startswith("git@") or "$" in source:
                    raise SandboxError(
                        f"has ADD {source}: refused, since the Docker daemon fetches a URL on the "
                        "host's network, where it can reach what a bot must not; put the file "
                        "in the bot directory instead"
                    )
        sources = [f.split("=", 1)[1] for f in flags if f.lower().startswith("--from=")]
        if word == "RUN":
            for flag in flags:
                if flag.lower().startswith("--mount="):
                    for part in flag.split("=", 1)[1].split(","):
                        key, _, value = part.partition("=")
                        if key.strip().lower() == "from":
                            sources.append(value)
        for source in sources:
            own = source.isdigit() and int(source) < len(stages)
            if own or source.lower() in stages or _is_arena_base(client, source):
                continue
            raise SandboxError(
                f"has {word} --from={source}: refused, since {source} is not a stage of this "
                "Dockerfile nor an image the arena built, and reading it could read another "
                "bot's or the league's files; copy from a stage or the base image instead"
            )


# ---------------------------------------------------------------------------------- bot images


def ensure_bot_image(
    client: docker.DockerClient,
    manifest: BotManifest,
    base: str,
    log: Log = stderr_log,
    *,
    trust_dockerfile: bool = False,
    limits: BuildLimits | None = None,
    runtime: OciRuntime | None = None,
) -> str:
    """The tag of the image for the bot directory ``manifest.path``, built if missing.

    The image is built from the arena's recipe for ``manifest.runtime`` (see the module
    docstring). The bot's ``Dockerfile`` is ignored, with one line in ``log`` saying so,
    unless ``trust_dockerfile``: then it is checked (:func:`check_dockerfile`) and built with
    ``--build-arg BASE=<base>``.

    A Go or C++ bot's build step runs its author's code (a ``Makefile``, Go sources): it runs
    in a container under ``runtime``, confined as a bot is (:func:`_compile`). The image does
    not depend on the runtime it was built under, so its tag does not either.

    An image that declares a volume (``VOLUME`` in its Dockerfile or in what it is built
    ``FROM``) is refused, cached or not: Docker would give every container made from it a
    volume of host disk outside its read-only root and its capped ``/tmp`` (issue 15).

    Args:
        client: a Docker client.
        manifest: the bot.
        base: the base image's tag (:func:`ensure_base_image`).
        log: where progress goes.
        trust_dockerfile: build the bot's own Dockerfile (for one's own bots only).
        limits: the build's limits; default :class:`BuildLimits`.
        runtime: the OCI runtime a Go or C++ bot's build step runs under: the one its bots
            run under; default gVisor's ``runsc`` when the engine has it, else ``runc``.

    Raises:
        SandboxError: the build was refused or failed (the message ends with the build's last
            lines), ran out of time, made too big an image, or the image declares a volume;
            a Node.js bot has no ``package-lock.json``, or npm failed.
        SandboxUnavailable: the runtime's root image is missing and cannot be made here (no
            debootstrap, or not root), or a Node.js bot's packages need npm and it is missing.
    """
    t0 = time.perf_counter()
    limits = limits or BuildLimits()
    own = manifest.path / "Dockerfile"
    trusted = trust_dockerfile and own.is_file()
    if own.is_file() and not trusted:
        log(
            f"bot {manifest.name}: its Dockerfile is ignored; the arena builds it from its own "
            f"{manifest.runtime.value} recipe, since a Dockerfile can read the host's network "
            "and other images at build time (--trust-dockerfile uses it, for your own bots)"
        )
    base_image = _image(client, base)
    inputs = [
        f"runtime={manifest.runtime.value}",
        f"trusted={trusted}",
        f"base-id={base_image.id if base_image is not None else '-'}",
    ]
    wheels: list[Path] = []
    node_modules: Path | None = None
    step: _Compile | None = None
    if trusted:
        text = own.read_text(encoding="utf-8")
        try:
            check_dockerfile(text, client, base)
        except SandboxError as e:
            raise SandboxError(f"{manifest.name}: its Dockerfile {e}") from None
        # A rebuilt FROM image has a new id: the bot's image is built again on it.
        for ref in from_images(text):
            found = _image(client, ref)
            inputs.append(f"from={ref}@{found.id if found is not None else '-'}")
        recipe = ""
    else:
        if manifest.runtime is Runtime.NODE:
            # Refused before any root image is made: the lock file is what is installed.
            node_modules = _node_modules(manifest, log)
            inputs.append(f"node-modules={node_modules.parent.name}")
        roots = _roots(client, manifest, log)
        recipe = _recipe(manifest, base, roots=roots)
        inputs.append(f"recipe={recipe}")
        if manifest.runtime in (Runtime.GO, Runtime.CPP):
            step = _compile_step(manifest, roots)
        requirements = manifest.path / "requirements.txt"
        if manifest.runtime is Runtime.PYTHON and requirements.is_file():
            check_requirements(requirements)
            arch = str(client.info().get("Architecture", "x86_64"))
            wheels = _bot_wheels(requirements, arch, log)
            recipe = _recipe(manifest, base, deps=bool(wheels))
            inputs += [f"recipe={recipe}", *(f"wheel={_file_digest(w)}" for w in wheels)]
    tag = bot_image_tag(manifest, base, inputs, trusted=trusted)
    cached = _image(client, tag)
    if cached is None:
        with _tag_lock(tag):
            if _image(client, tag) is None:
                _build_bot(
                    client, manifest, base, tag, recipe, wheels, limits, node_modules, step, runtime
                )
                log(
                    f"built image {tag} for bot {manifest.name} in {time.perf_counter() - t0:.1f} s"
                )
        cached = _image(client, tag)
    else:
        log(f"image {tag} for bot {manifest.name} cached: {time.perf_counter() - t0:.2f} s")
    if cached is not None:
        _refuse_volumes(cached, manifest)
        if trusted:
            _refuse_another_start(cached, manifest)
    _record_use(tag)
    return tag


def _node_root(client: docker.DockerClient, log: Log) -> Image:
    """What a Node.js bot runs on: :func:`node_image` from a registry, or :data:`NODE_ROOT`.

    As for the python base (``ARENA_DOCKER_BASE``): ``slim`` wants the registry's image
    (pulled if missing), ``debootstrap`` the offline root; ``auto`` takes whichever is
    present, the registry's first, else tries a pull, else makes the offline root.
    """
    wanted = os.environ.get(BASE_ENV) or "auto"
    if wanted not in ("auto", "slim", "debootstrap"):
        raise SandboxError(f"{BASE_ENV}={wanted!r}: expected auto, slim or debootstrap")
    if wanted != "debootstrap":
        name = node_image()
        img = _image(client, name)
        pull = img is None and (wanted == "slim" or _image(client, NODE_ROOT.tag) is None)
        if pull and _pull(client, log, name, "Node.js bots", PULL_TIMEOUT_S):
            img = _image(client, name)
        if img is not None:
            return img
        if wanted == "slim":
            raise SandboxUnavailable(
                f"{name} is not available; pull it (docker pull {name}) or set "
                f"{BASE_ENV}=debootstrap to make an offline root"
            )
    return ensure_root(client, NODE_ROOT, log)


def _roots(client: docker.DockerClient, manifest: BotManifest, log: Log) -> dict[str, str]:
    """The ids of the root images ``manifest``'s recipe builds on, made if missing."""
    if manifest.runtime is Runtime.NODE:
        return {"root": str(_node_root(client, log).id)}
    if manifest.runtime is Runtime.GO:
        return {"builder": str(ensure_root(client, GO_BUILDER, log).id)}
    if manifest.runtime is Runtime.CPP:
        return {"builder": str(ensure_root(client, CPP_BUILDER, log).id)}
    return {}


def _recipe(
    manifest: BotManifest,
    base: str,
    *,
    deps: bool = False,
    roots: dict[str, str] | None = None,
) -> str:
    """The arena's Dockerfile for ``manifest``'s runtime (``roots``: from :func:`_roots`)."""
    roots = roots or {}
    if manifest.runtime is Runtime.PYTHON:
        entry = json.dumps(list(manifest.command))
        return _PYTHON_RECIPE.format(base=base, deps=_PYTHON_DEPS if deps else "", entrypoint=entry)
    if manifest.runtime is Runtime.BINARY:
        exe = _executable(manifest)
        entry = json.dumps([f"/bot/{exe}", *manifest.command[1:]])
        return _BINARY_RECIPE.format(base=base, entrypoint=entry)
    if manifest.runtime is Runtime.NODE:
        entry = json.dumps(list(manifest.command))
        return _NODE_RECIPE.format(root=roots["root"], entrypoint=entry)
    if manifest.runtime not in (Runtime.GO, Runtime.CPP):
        raise SandboxError(
            f"{manifest.name}: runtime {manifest.runtime.value!r} has no recipe in this arena; "
            "--trust-dockerfile builds your own Dockerfile"
        )
    step = _compile_step(manifest, roots)
    return _COMPILED_RECIPE.format(
        builder=step.builder,
        build=step.build,
        base=base,
        entrypoint=json.dumps([f"/bot/{step.exe}", *manifest.command[1:]]),
    )


@dataclass(frozen=True, slots=True)
class _Compile:
    """A compiled bot's build step: ``build`` run in ``/src`` in a container of ``builder``.

    Attributes:
        builder: the id of the image with the toolchain (:data:`GO_BUILDER`, :data:`CPP_BUILDER`).
        build: the shell command that builds the bot.
        exe: the executable it must leave: ``command[0]``, relative to the bot directory.
    """

    builder: str
    build: str
    exe: str


def _compile_step(manifest: BotManifest, roots: dict[str, str]) -> _Compile:
    exe = _built_executable(manifest)
    if manifest.runtime is Runtime.GO:
        return _Compile(roots["builder"], _GO_BUILD.format(procs=_GO_PROCS, exe=exe), exe)
    return _Compile(roots["builder"], _CPP_BUILD, exe)


def _executable(manifest: BotManifest) -> str:
    """``command[0]`` of a binary bot, relative to its directory; it must be a file there."""
    exe = (manifest.path / manifest.command[0]).resolve()
    if not exe.is_relative_to(manifest.path) or not exe.is_file():
        raise SandboxError(
            f"{manifest.name}: runtime 'binary' runs command[0] from the bot directory, but "
            f"{manifest.command[0]!r} is not a file there"
        )
    return exe.relative_to(manifest.path).as_posix()


def _built_executable(manifest: BotManifest) -> str:
    """``command[0]`` of a go or cpp bot: what its build makes, as a path in its directory."""
    found = _EXE.fullmatch(manifest.command[0])
    if found is None:
        raise SandboxError(
            f"{manifest.name}: runtime {manifest.runtime.value!r} runs the executable its build "
            f"makes, named by command[0] as a path in the bot directory (like './bot'), but "
            f"{manifest.command[0]!r} is not one"
        )
    return found.group(1)


def _bot_ignore(manifest: BotManifest) -> Ignore:
    """What of ``manifest``'s directory its image leaves out: caches, and build outputs.

    Build outputs (``node_modules``, a compiled bot's executable, ``gen/``, ``*.o``) are made
    from the sources by the recipe; a stale local copy would be used instead of them, or
    change the image's tag without changing the image.
    """
    if manifest.runtime not in _BUILD_OUTPUTS:
        return _IGNORED
    top = set(_BUILD_OUTPUTS[manifest.runtime])
    if manifest.runtime is not Runtime.NODE:
        top.add(_built_executable(manifest))
    root = manifest.path

    def ignore(dirpath: str, names: list[str]) -> set[str]:
        out = set(_IGNORED(dirpath, names))
        rel = Path(dirpath).relative_to(root)
        for name in names:
            compiled = manifest.runtime is not Runtime.NODE and name.endswith(".o")
            if compiled or (rel / name).as_posix() in top:
                out.add(name)
        return out

    return ignore


def _node_modules(manifest: BotManifest, log: Log) -> Path:
    """The ``node_modules`` of a Node.js bot, installed on the host from its lock file.

    ``npm ci --omit=dev --ignore-scripts`` installs exactly what ``package-lock.json`` pins
    (its integrity hashes checked) into a directory cached by the hash of ``package.json`` and
    ``package-lock.json``. ``--ignore-scripts`` because an install script is the bot's code,
    and this runs on the arena's host with its network; as root, npm also runs as user 65534
    in an empty home, so that it reads no one's ``.npmrc`` and can write nowhere else. Both
    files are checked first (:func:`~arena.sandbox._npm.check_package_lock`, issue 24,
    finding 6): only tarballs of npm's registry, pinned by a sha512 integrity, cached or not.

    Raises:
        SandboxError: no ``package-lock.json`` or ``package.json``, one that asks for anything
            but registry tarballs pinned by integrity, or npm failed.
        SandboxUnavailable: npm is not installed.
    """
    try:
        check_package_lock(manifest.path)
    except SandboxError as e:
        raise SandboxError(f"{manifest.name}: {e}") from None
    lock = manifest.path / "package-lock.json"
    package = manifest.path / "package.json"
    digest = hashlib.sha256(package.read_bytes() + b"\0" + lock.read_bytes()).hexdigest()[:24]
    where = cache_dir() / "npm" / f"lock-{digest}"
    done = where / ".complete"
    with _file_lock(cache_dir() / "locks" / f"npm-{digest}.lock"):
        if not done.is_file():
            npm = shutil.which("npm")
            if npm is None:
                raise SandboxUnavailable(
                    f"{manifest.name}: npm is not installed: the arena installs a Node.js "
                    "bot's dependencies on the host with npm ci (apt-get install npm)"
                )
            shutil.rmtree(where, ignore_errors=True)
            t0 = time.perf_counter()
            _npm_ci(npm, package, lock, where, manifest.name)
            done.write_text("", encoding="utf-8")
            log(f"installed the npm packages of {lock} in {time.perf_counter() - t0:.1f} s")
    return where / "node_modules"


def _npm_ci(npm: str, package: Path, lock: Path, where: Path, name: str) -> None:
    """Run ``npm ci`` on copies of ``package`` and ``lock``; leave ``where/node_modules``.

    The registry is npm's own configuration's (``npm config get registry``, in the same
    environment), named to ``npm ci`` explicitly, and every ``resolved`` URL of the lock must
    be under it. What npm says goes into the error with the paths of this host left out: it
    becomes a validation step's detail, which the bot's owner reads (issue 24, finding 14).
    """
    work = Path(tempfile.mkdtemp(prefix="flipflop-npm-"))
    try:
        shutil.copyfile(package, work / "package.json")
        shutil.copyfile(lock, work / "package-lock.json")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(work),
            "npm_config_cache": str(work / ".npm"),
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
            "npm_config_audit": "false",
        }
        for key, value in os.environ.items():  # how this host reaches the registry
            if key.lower() in ("http_proxy", "https_proxy", "no_proxy", "npm_config_registry"):
                env[key] = value
        registry = configured_registry(npm, env, work)
        try:
            check_package_lock(work, registry=registry)
        except SandboxError as e:
            raise SandboxError(f"{name}: {e}") from None
        nobody = os.geteuid() == 0
        if nobody:
            _chown_tree(work, 65534, 65534)
        try:
            r = subprocess.run(
                [
                    npm,
                    "ci",
                    "--omit=dev",
                    "--ignore-scripts",
                    "--no-audit",
                    "--no-fund",
                    f"--registry={registry}",
                ],
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=NPM_TIMEOUT_S,
                user=65534 if nobody else None,
                group=65534 if nobody else None,
                extra_groups=[] if nobody else None,
            )
        except subprocess.TimeoutExpired:
            raise SandboxError(
                f"{name}: npm ci of package-lock.json took more than {NPM_TIMEOUT_S:g} s"
            ) from None
        if r.returncode != 0:
            said = (r.stdout + r.stderr).replace(str(work), ".").replace(str(lock.parent), ".")
            tail = "\n".join(said.strip().splitlines()[-6:])
            raise SandboxError(
                f"{name}: npm ci of package-lock.json failed (exit {r.returncode}):\n{tail}"
            )
        where.mkdir(parents=True)
        modules = work / "node_modules"
        if modules.is_dir():
            shutil.move(modules, where / "node_modules")
        else:  # a lock file without dependencies
            (where / "node_modules").mkdir()
        if os.geteuid() == 0:
            _chown_tree(where, 0, 0)  # the cache is the arena's again: npm's user cannot touch it
        _make_readable(where)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.lchown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            os.lchown(os.path.join(dirpath, name), uid, gid)


def _build_bot(
    client: docker.DockerClient,
    manifest: BotManifest,
    base: str,
    tag: str,
    recipe: str,
    wheels: Sequence[Path],
    limits: BuildLimits,
    node_modules: Path | None = None,
    step: _Compile | None = None,
    runtime: OciRuntime | None = None,
) -> None:
    labels = {
        "flipflop.bot": manifest.name,
        "flipflop.bot.version": manifest.version,
        "flipflop.bot.dir": str(manifest.path),
        "flipflop.bot.runtime": manifest.runtime.value,
        "flipflop.base": base,
    }
    with tempfile.TemporaryDirectory(prefix="flipflop-bot-") as tmp:
        context = Path(tmp) / "context"
        if not recipe:  # the bot's own, trusted Dockerfile, with its directory as the context
            _copy_tree(manifest.path, context)
            _build(client, context, tag, {"BASE": base}, labels, limits)
            return
        # The bot's files go one level down, so its Dockerfile and .dockerignore do nothing.
        _copy_tree(manifest.path, context / "bot", _bot_ignore(manifest))
        if manifest.runtime is Runtime.BINARY:
            os.chmod(context / "bot" / _executable(manifest), 0o755)
        if wheels:
            _unpack_wheels(wheels, context / "deps", limits.image_mb * _MB)
        if node_modules is not None:
            _copy_tree(node_modules, context / "node_modules")
        if step is not None:
            deadline = time.monotonic() + limits.timeout_s
            kernel = runtime or _engine_runtime(client)
            _compile(client, manifest, step, kernel, limits, tag, context)
            left = max(deadline - time.monotonic(), _ASSEMBLY_MIN_S)
            limits = dataclasses.replace(limits, timeout_s=left)
        (context / "Dockerfile").write_text(recipe, encoding="utf-8")
        _build(client, context, tag, {}, labels, limits)


# ------------------------------------------------------------------ compiled bots' build step


def _engine_runtime(client: docker.DockerClient) -> OciRuntime:
    """The runtime ``--runtime auto`` picks: ``runsc`` (gVisor) when the engine has it."""
    listed = client.info().get("Runtimes") or {}
    return OciRuntime.RUNSC if OciRuntime.RUNSC.value in listed else OciRuntime.RUNC


def _compile(
    client: docker.DockerClient,
    manifest: BotManifest,
    step: _Compile,
    runtime: OciRuntime,
    limits: BuildLimits,
    tag: str,
    context: Path,
) -> None:
    """Run ``step`` on a copy of the bot's sources; leave its executable in ``context``.

    The build runs its author's code, so it runs as a bot does (issue 24, finding 7), not as
    a ``RUN`` step of ``docker build``, which the daemon runs under runc with Docker's default
    seccomp profile and no pids limit whatever runtime the bots run under: a container of
    ``step.builder`` under ``runtime``, with the arena's seccomp profile,
    ``no-new-privileges``, no capabilities, user 65534, no network, a read-only root, the
    memory, CPU, pids and time of ``limits``. It sees two host directories made for it: the
    copy of the sources at :data:`BUILD_SRC` (its working directory) and its ``/tmp``. The
    executable is read from them once the container is gone, and only if it is a regular
    file inside the copy (not a link the build made to a host file). It goes to
    ``context/built/<exe>``, and who built it (``id -u`` in the container) to
    ``context/build-uid``.

    Raises:
        SandboxError: the build failed, ran past its time, or made no executable.
    """
    # What the build left is user 65534's: an arena that is not root may fail to remove it.
    with tempfile.TemporaryDirectory(prefix="flipflop-build-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        src, home = work / "src", work / "tmp"
        _copy_tree(manifest.path, src, _bot_ignore(manifest))
        home.mkdir()
        _give_to_builder(src, home)
        logs = _run_build(client, manifest, step, runtime, limits, tag, src, home)
        exe = _built_file(src, step.exe)
        if exe is None:
            raise SandboxError(
                f"{manifest.name}: the build made no {step.exe} (command[0] of bot.toml), or "
                f"made it something other than a file{_tail(logs)}"
            )
        size = exe.stat().st_size
        if size > limits.image_mb * _MB:
            raise SandboxError(
                f"{manifest.name}: the build made a {step.exe} of {size / _MB:.0f} MB, over the "
                f"{limits.image_mb} MB cap on a bot image"
            )
        target = context / "built" / step.exe
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(exe, target)
        except OSError as e:  # its mode, set by the build, may keep an arena that is not root out
            raise SandboxError(
                f"{manifest.name}: the arena cannot read the {step.exe} the build made "
                f"({e.strerror}); leave it readable"
            ) from None
        _make_readable(context / "built")
        os.chmod(target, 0o755)
        uid = _small_file(home / "build-uid")
        (context / "build-uid").write_text(
            (uid if uid.isdigit() else "unknown") + "\n", encoding="utf-8"
        )
        os.chmod(context / "build-uid", 0o644)


def _give_to_builder(*directories: Path) -> None:
    """Make ``directories`` writable by the build container's user 65534."""
    for root in directories:
        if os.geteuid() == 0:
            _chown_tree(root, 65534, 65534)
            continue
        for dirpath, _, filenames in os.walk(root):
            os.chmod(dirpath, 0o777)
            for name in filenames:
                path = os.path.join(dirpath, name)
                if not os.path.islink(path):
                    os.chmod(path, os.stat(path).st_mode | 0o666)


def _run_build(
    client: docker.DockerClient,
    manifest: BotManifest,
    step: _Compile,
    runtime: OciRuntime,
    limits: BuildLimits,
    tag: str,
    src: Path,
    home: Path,
) -> str:
    """Run the build container to its end, remove it; its last lines of output.

    Raises:
        SandboxError: it ran past ``limits.timeout_s``, or ended with another status than 0.
    """
    memory = f"{limits.memory_mb}m"
    nproc = [Ulimit(name="nproc", soft=limits.pids, hard=limits.pids)]
    deadline = int(limits.timeout_s) + _BUILD_GRACE_S  # in the container: ends it if we cannot
    try:
        container = client.containers.create(
            step.builder,
            command=[
                "timeout",
                "-s",
                "KILL",
                str(deadline),
                "/bin/sh",
                "-c",
                _BUILD_SCRIPT.format(build=step.build),
            ],
            name=f"flipflop-build-{uuid.uuid4().hex[:12]}",
            user="65534:65534",
            working_dir=BUILD_SRC,
            environment={"HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"},
            network_mode="none",
            read_only=True,
            ipc_mode="none",
            cap_drop=["ALL"],
            runtime=runtime.value,
            security_opt=["no-new-privileges", f"seccomp={seccomp_profile()}"],
            mem_limit=memory,
            memswap_limit=memory,
            nano_cpus=round(limits.cpus * 1e9),
            pids_limit=host_pids_limit(runtime, limits.pids),
            ulimits=[
                Ulimit(name="core", soft=0, hard=0),
                # Under runc RLIMIT_NPROC would count every process of user 65534 on the host.
                *(nproc if runtime is OciRuntime.RUNSC else []),
            ],
            volumes={
                str(src): {"bind": BUILD_SRC, "mode": "rw"},
                str(home): {"bind": "/tmp", "mode": "rw"},
            },
            labels={**owner_labels(), "flipflop.build": tag, "flipflop.bot": manifest.name},
            log_config=LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
        )
    except docker.errors.DockerException as e:
        raise SandboxError(f"{manifest.name}: cannot create its build container: {e}") from e
    try:
        container.start()
        try:
            status = int(container.wait(timeout=limits.timeout_s).get("StatusCode", -1))
        except (requests.exceptions.Timeout, requests.exceptions.ConnectionError):
            raise SandboxError(
                f"{manifest.name}: its build stopped: it ran past the build time limit of "
                f"{limits.timeout_s:g} s"
            ) from None
        logs = bytes(container.logs(stdout=True, stderr=True, tail=_BUILD_LOG_LINES))
        text = logs.decode("utf-8", "replace")
        if status != 0:
            container.reload()
            why = f"exit {status}"
            if (container.attrs.get("State") or {}).get("OOMKilled"):
                why += f", killed: a build may use at most {limits.memory_mb} MB of memory"
            raise SandboxError(f"{manifest.name}: its build failed ({why}){_tail(text)}")
        return text
    except docker.errors.DockerException as e:
        raise SandboxError(f"{manifest.name}: its build container failed: {e}") from e
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            container.remove(force=True, v=True)


def _built_file(src: Path, relative: str) -> Path | None:
    """``src/relative`` if it is a regular file inside ``src``, no link on the way; else None.

    The build could leave a link to a host file there (``ln -s /etc/shadow bot``); it is
    read on the host, so nothing is followed.
    """
    path = src
    for part in relative.split("/"):
        path = path / part
        try:
            mode = path.lstat().st_mode
        except OSError:
            return None
        if stat.S_ISLNK(mode):
            return None
    return path if stat.S_ISREG(path.lstat().st_mode) else None


def _small_file(path: Path, limit: int = 64) -> str:
    """The first ``limit`` bytes of ``path`` as text, stripped; "" unless a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return ""
        return fh.read(limit).decode("utf-8", "replace").strip()


def _tail(text: str) -> str:
    """``text``'s last lines, after a colon and a newline; "" for none."""
    lines = text.strip().splitlines()[-_BUILD_LOG_LINES:]
    return ":\n" + "\n".join(line[:400] for line in lines) if lines else ""


def _refuse_another_start(image: Image, manifest: BotManifest) -> None:
    """Raise SandboxError if a trusted Dockerfile starts the bot otherwise than ``command``.

    ``bot.toml`` decides how a bot starts in both sandboxes (issue 14): the process sandbox
    runs ``command``, a container its image's ``ENTRYPOINT``; two that disagree would make
    the same bot a different program in each.
    """
    entrypoint = list(((image.attrs or {}).get("Config") or {}).get("Entrypoint") or [])
    if entrypoint != list(manifest.command):
        raise SandboxError(
            f"{manifest.name}: its Dockerfile's ENTRYPOINT {json.dumps(entrypoint)} is not "
            f"bot.toml's command {json.dumps(list(manifest.command))}: refused, since bot.toml "
            "decides how a bot starts in both sandboxes; make them the same"
        )


def _refuse_volumes(image: Image, manifest: BotManifest) -> None:
    """Raise SandboxError if ``image`` declares a volume (see :func:`ensure_bot_image`)."""
    volumes = sorted(((image.attrs or {}).get("Config") or {}).get("Volumes") or {})
    if volumes:
        raise SandboxError(
            f"{manifest.name}: its image declares VOLUME {', '.join(volumes)}: refused, since "
            "a volume is host disk outside the bot's read-only root and its capped /tmp; "
            "write to /tmp instead"
        )


# ---------------------------------------------------------------------------------- pruning


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


@dataclass(frozen=True, slots=True)
class PrunedImage:
    """An image :func:`prune_images` removed (or would remove).

    Attributes:
        ref: its tag, or its id when it had none (dangling).
        size: bytes that only it holds (not shared with other images), as Docker counts them.
        idle_days: days since it was last used, or since it was made when never recorded.
    """

    ref: str
    size: int
    idle_days: float


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What :func:`prune_images` did.

    Attributes:
        images: the images removed (or, on a dry run, that would be).
        image_bytes: disk freed by removing them (on a dry run: their own sizes added up).
        cache_bytes: disk freed from the build cache (0 on a dry run).
        dry_run: nothing was removed.
    """

    images: tuple[PrunedImage, ...]
    image_bytes: int
    cache_bytes: int
    dry_run: bool


def _is_arena_ref(ref: str, labels: dict[str, str]) -> bool:
    """A tag the arena built: its repository is one of the arena's and it carries its label.

    Both, since an image built FROM an arena image inherits the arena's labels.
    """
    repo = ref.rsplit(":", 1)[0]
    if repo.startswith(BOT_REPO_PREFIX):
        return ARENA_LABEL in labels or "flipflop.bot" in labels
    if repo == BASE_REPO:
        return ARENA_LABEL in labels or "flipflop.sdk" in labels
    return False


def prune_images(
    client: docker.DockerClient,
    *,
    keep_days: float = 7.0,
    everything: bool = False,
    dry_run: bool = False,
) -> PruneReport:
    """Remove the arena's images not used for ``keep_days``, its dangling ones, the build cache.

    Only images the arena built are touched (:func:`_is_arena_ref`). The base image tagged
    ``latest`` is kept unless ``everything``.

    Args:
        client: a Docker client.
        keep_days: keep images used within this many days.
        everything: remove every image the arena built, used or not.
        dry_run: say what would be removed, remove nothing.
    """
    now = time.time()
    uses = _last_uses()
    df = client.df()
    own_size = {
        str(i.get("Id")): max(0, int(i.get("Size") or 0) - max(0, int(i.get("SharedSize") or 0)))
        for i in df.get("Images") or []
    }
    before = int(df.get("LayersSize") or 0)
    latest = _image(client, f"{BASE_REPO}:latest")
    chosen: list[PrunedImage] = []
    for image in client.images.list():
        labels = dict(((image.attrs or {}).get("Config") or {}).get("Labels") or {})
        created = _created(image)
        size = own_size.get(str(image.id), 0)
        tags = [t for t in image.tags if _is_arena_ref(t, labels)]
        for tag in tags:
            if tag == f"{BASE_REPO}:latest" or (
                latest is not None and image.id == latest.id and not everything
            ):
                continue
            idle = (now - uses.get(tag, created)) / 86400
            if everything or idle > keep_days:
                chosen.append(PrunedImage(tag, size if len(tags) == 1 else 0, idle))
    for image in client.images.list(filters={"dangling": True, "label": ARENA_LABEL}):
        labels = dict(((image.attrs or {}).get("Config") or {}).get("Labels") or {})
        if _is_arena_ref(labels.get(ARENA_LABEL, ""), labels):
            idle = (now - _created(image)) / 86400
            chosen.append(PrunedImage(str(image.id), own_size.get(str(image.id), 0), idle))
    if dry_run:
        return PruneReport(tuple(chosen), sum(p.size for p in chosen), 0, True)
    removed = []
    for pruned in chosen:
        try:
            client.images.remove(pruned.ref, noprune=False)
        except docker.errors.APIError:
            continue  # in use by a container, or has children: kept
        removed.append(pruned)
    _forget_uses([p.ref for p in removed])
    cache = 0
    with contextlib.suppress(docker.errors.APIError):
        cache = int(client.api.prune_builds().get("SpaceReclaimed") or 0)
    after = int(client.df().get("LayersSize") or 0)
    return PruneReport(tuple(removed), max(0, before - after), cache, False)


def _created(image: Image) -> float:
    """When ``image`` was made, in seconds since the epoch (0 when Docker does not say)."""
    raw = str((image.attrs or {}).get("Created") or "")
    match = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", raw)
    if match is None:
        return 0.0
    return time.mktime(time.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S")) - time.timezone
