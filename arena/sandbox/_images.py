"""Docker images for bots: one base image, then one image per bot directory, each built once.

The **base image** ``flipflop-base:<hash>`` (also tagged ``flipflop-base:latest``, which the
bundled Dockerfiles name in ``ARG BASE``) holds python3 with ``grpcio``, ``protobuf`` and the
``flipflop`` SDK. Its hash covers the SDK's sources, the pinned wheel versions and the
underlying root image, so a changed SDK builds a new base and an unchanged one is found again.
The root image is one of (:class:`BaseKind`):

- ``python:3.11-slim``, used when it is present locally or can be pulled;
- an offline Debian bookworm with python3 made here with ``debootstrap`` and ``docker import``,
  for machines that cannot reach a registry (needs root, about two minutes, once).

Nothing inside a build touches the network: the wheels are downloaded on the host (cached under
``~/.cache/flipflop-arena/wheels``), unzipped (a wheel is a zip) into the image's site
packages, and every build runs with ``network_mode="none"``.

A **bot image** ``flipflop-bot-<name>:<hash>`` is built from the bot's own Dockerfile with
``--build-arg BASE=<base tag>``; the hash covers every file of the bot directory and the base,
so an unchanged bot is never rebuilt. ``ARENA_DOCKER_BASE=slim|debootstrap`` forces a root.
Progress and timings go to stderr.
"""

from __future__ import annotations

import contextlib
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
import zipfile
from collections.abc import Callable, Iterator, Sequence
from enum import Enum
from pathlib import Path

import docker  # type: ignore[import-untyped,unused-ignore]
import docker.errors  # type: ignore[import-untyped,unused-ignore]
from docker.models.images import Image  # type: ignore[import-untyped,unused-ignore]

import flipflop
from arena._errors import SandboxError, SandboxUnavailable
from flipflop import BotManifest

__all__ = [
    "BASE_ENV",
    "BASE_REPO",
    "BaseKind",
    "bot_image_tag",
    "cache_dir",
    "ensure_base_image",
    "ensure_bot_image",
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
BOT_REPO_PREFIX = "flipflop-bot-"
PULL_TIMEOUT_S = 180.0
"""How long an automatic pull of python:3.11-slim may take before the offline base is used."""
# Bump when the recipe below changes in a way the hashed inputs do not show.
_RECIPE = "3"
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
_DEFAULT_BOT_DOCKERFILE = """\
ARG BASE=flipflop-base:latest
FROM ${{BASE}}
COPY . /bot
WORKDIR /bot
USER 65534:65534
ENTRYPOINT {entrypoint}
"""
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".git", ".mypy_cache", ".venv")
_process_lock = threading.Lock()


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
def _build_lock() -> Iterator[None]:
    """One build at a time, across the threads and processes of this user."""
    with _process_lock, open(cache_dir() / "build.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _image(client: docker.DockerClient, ref: str) -> Image | None:
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


# ---------------------------------------------------------------------------------- hashing


def _files(root: Path) -> list[Path]:
    """Every file under ``root`` that goes into an image, in a stable order."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        ignored = _IGNORED(dirpath, [*dirnames, *filenames])
        dirnames[:] = sorted(d for d in dirnames if d not in ignored)
        out += [Path(dirpath, f) for f in sorted(filenames) if f not in ignored]
    return out


def _hash_tree(h: hashlib._Hash, root: Path) -> None:
    for file in _files(root):
        rel = file.relative_to(root).as_posix()
        h.update(f"{rel}\0{os.lstat(file).st_mode & 0o111:o}\0".encode())
        if file.is_symlink():
            h.update(os.readlink(file).encode())
        else:
            with open(file, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
        h.update(b"\0")


def _copy_tree(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` readable by everyone, so the image's user 65534 can read it."""
    shutil.copytree(src, dst, ignore=_IGNORED, symlinks=True, dirs_exist_ok=True)
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
    log(f"pulling {SLIM_IMAGE} for the bot base image (about 50 MB, once)...")
    t0 = time.perf_counter()
    outcome: list[BaseException | None] = []

    def pull() -> None:
        try:
            client.images.pull("python", tag="3.11-slim")
            outcome.append(None)
        except Exception as e:  # any failure means: use the offline base instead
            outcome.append(e)

    worker = threading.Thread(target=pull, name="pull-python-slim", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        log(f"no {SLIM_IMAGE} after {timeout:.0f} s; building an offline base instead")
        return False
    if outcome[0] is not None:
        reason = str(outcome[0]).splitlines()[0][:200]
        log(f"cannot pull {SLIM_IMAGE} ({reason}); building an offline base instead")
        return False
    log(f"pulled {SLIM_IMAGE} in {time.perf_counter() - t0:.1f} s")
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


def _debootstrap(client: docker.DockerClient, log: Log) -> None:
    """Make ``flipflop-rootfs:bookworm``: debootstrap a minimal Debian, then docker import."""
    exe = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if os.path.exists("/usr/sbin/debootstrap") else None
    )
    if exe is None or os.geteuid() != 0:
        why = "debootstrap is not installed" if exe is None else "debootstrap needs root"
        raise SandboxUnavailable(
            f"no {SLIM_IMAGE} image and no registry to pull it from, and {why}: pull "
            f"{SLIM_IMAGE} once where a registry is reachable (docker pull {SLIM_IMAGE}), or "
            "run once as root with debootstrap installed to build an offline base"
        )
    scratch = Path(tempfile.mkdtemp(prefix="flipflop-rootfs-", dir="/var/tmp"))
    target = scratch / "root"
    t0 = time.perf_counter()
    log(
        "building an offline Debian bookworm with python3 (debootstrap --variant=minbase): "
        "about 2 minutes, once"
    )
    try:
        r = subprocess.run(
            [exe, "--variant=minbase", "--include=python3", "bookworm", str(target)],
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
        repo, _, tag = ROOTFS_IMAGE.partition(":")
        client.api.import_image_from_file(str(tarball), repository=repo, tag=tag)
    except (OSError, subprocess.CalledProcessError, docker.errors.APIError) as e:
        raise SandboxError(f"cannot build the offline base: {e}") from e
    finally:
        _remove_rootfs(target)
        if not _mounts_under(scratch):  # rmtree crosses mount points: never into a live /dev
            shutil.rmtree(scratch, ignore_errors=True)
    log(f"offline root image {ROOTFS_IMAGE} ready in {time.perf_counter() - t0:.0f} s")


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


def _build(
    client: docker.DockerClient,
    context: Path,
    tag: str,
    buildargs: dict[str, str],
    labels: dict[str, str],
    *,
    nocache: bool = False,
) -> None:
    try:
        client.images.build(
            nocache=nocache,
            path=str(context),
            tag=tag,
            buildargs=buildargs,
            labels=labels,
            rm=True,
            forcerm=True,
            pull=False,
            network_mode="none",
            timeout=1800,
        )
    except docker.errors.BuildError as e:
        lines = [str(x.get("stream") or x.get("error") or "") for x in e.build_log]
        tail = "".join(lines).strip().splitlines()[-8:]
        raise SandboxError(f"docker build of {tag} failed: {e.msg}\n" + "\n".join(tail)) from e
    except docker.errors.APIError as e:
        raise SandboxError(f"docker build of {tag} failed: {e}") from e


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
    with _build_lock():
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
            nocache=nocache,
        )


def _bot_repo(bot: BotManifest) -> str:
    return BOT_REPO_PREFIX + bot.name.lower().replace("_", "-")


def bot_image_tag(bot: BotManifest, base: str, sources: Sequence[str] = ()) -> str:
    """The tag of ``bot``'s image on ``base``: a hash of every file of its directory.

    ``sources`` are the ids of the images its Dockerfile builds ``FROM`` (other than
    ``base``, see :func:`from_images`), so that a rebuilt one makes a new tag.
    """
    h = hashlib.sha256()
    h.update(f"{_RECIPE}\0{base}\0{bot.command!r}\0".encode())
    for source in sources:
        h.update(f"from\0{source}\0".encode())
    _hash_tree(h, bot.path)
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


def ensure_bot_image(
    client: docker.DockerClient, manifest: BotManifest, base: str, log: Log = stderr_log
) -> str:
    """The tag of the image for the bot directory ``manifest.path``, built if missing.

    The bot's Dockerfile is built with ``--build-arg BASE=<base>``; a directory without one
    gets the bundled bots' recipe (its files in ``/bot``, user 65534, ``command`` as entry
    point).

    An image that declares a volume (``VOLUME`` in its Dockerfile or in what it is built
    ``FROM``) is refused, cached or not: Docker would give every container made from it a
    volume of host disk outside its read-only root and its capped ``/tmp`` (issue 15).

    Raises:
        SandboxError: the build failed (the message ends with the build's last lines), or
            the image declares a volume.
    """
    t0 = time.perf_counter()
    recipe = manifest.path / "Dockerfile"
    refs = from_images(recipe.read_text(encoding="utf-8")) if recipe.is_file() else []
    # A rebuilt FROM image has a new id: the bot's image is built again on it.
    sources = []
    for ref in refs:
        found = _image(client, ref)
        sources.append(f"{ref}@{found.id if found is not None else '-'}")
    tag = bot_image_tag(manifest, base, sources)
    cached = _image(client, tag)
    if cached is not None:
        _refuse_volumes(cached, manifest)
        log(f"image {tag} for bot {manifest.name} cached: {time.perf_counter() - t0:.2f} s")
        return tag
    with _build_lock():
        if _image(client, tag) is None:
            with tempfile.TemporaryDirectory(prefix="flipflop-bot-") as tmp:
                context = Path(tmp) / "context"
                _copy_tree(manifest.path, context)
                if not (context / "Dockerfile").is_file():
                    entry = json.dumps(list(manifest.command))
                    (context / "Dockerfile").write_text(
                        _DEFAULT_BOT_DOCKERFILE.format(entrypoint=entry), encoding="utf-8"
                    )
                labels = {
                    "flipflop.bot": manifest.name,
                    "flipflop.bot.version": manifest.version,
                    "flipflop.bot.dir": str(manifest.path),
                    "flipflop.base": base,
                }
                _build(client, context, tag, {"BASE": base}, labels)
            log(f"built image {tag} for bot {manifest.name} in {time.perf_counter() - t0:.1f} s")
    built = _image(client, tag)
    if built is not None:
        _refuse_volumes(built, manifest)
    return tag


def _refuse_volumes(image: Image, manifest: BotManifest) -> None:
    """Raise SandboxError if ``image`` declares a volume (see :func:`ensure_bot_image`)."""
    volumes = sorted(((image.attrs or {}).get("Config") or {}).get("Volumes") or {})
    if volumes:
        raise SandboxError(
            f"{manifest.name}: its image declares VOLUME {', '.join(volumes)}: refused, since "
            "a volume is host disk outside the bot's read-only root and its capped /tmp; "
            "write to /tmp instead"
        )
