"""The base image, and the bounded ``docker build`` every image goes through.

``flipflop-base:<hash>`` holds python3 with ``grpcio``, ``protobuf`` and the SDK; every build
runs through :func:`_build`, within its :class:`BuildLimits`.
The package's docstring (``arena/sandbox/images/__init__.py``) tells the whole story.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import docker  # type: ignore[import-untyped,unused-ignore]
import docker.errors  # type: ignore[import-untyped,unused-ignore]
from docker.models.images import Image  # type: ignore[import-untyped,unused-ignore]

import flipflop
from arena._errors import SandboxError
from arena.sandbox.images._cache import (
    _MB,
    _RECIPE,
    ARENA_LABEL,
    BASE_REPO,
    BuildLimits,
    Log,
    _base_lock,
    _copy_tree,
    _hash_tree,
    _image,
    _make_readable,
    _record_use,
    cache_dir,
    stderr_log,
)
from arena.sandbox.images._roots import BaseKind, _choose_kind, _root_image

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


def _pins() -> dict[str, str]:
    pins = {}
    for name in _WHEELS:
        try:
            pins[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError as e:
            raise SandboxError(f"cannot build the bot base image: {name} is not installed") from e
    return pins


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
