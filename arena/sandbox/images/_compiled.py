"""A Go or C++ bot's build step, in a container confined as a bot is.

Its own build files run there (issue 24, finding 7), never as a ``RUN`` of ``docker build``.
The package's docstring (``arena/sandbox/images/__init__.py``) tells the whole story.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import docker  # type: ignore[import-untyped,unused-ignore]
import docker.errors  # type: ignore[import-untyped,unused-ignore]
import requests.exceptions
from docker.types import LogConfig, Ulimit  # type: ignore[import-untyped,unused-ignore]

from arena._errors import SandboxError
from arena.sandbox._containers import Runtime as OciRuntime
from arena.sandbox._containers import host_pids_limit, owner_labels, seccomp_profile
from arena.sandbox.images._cache import (
    _IGNORED,
    _MB,
    BuildLimits,
    Ignore,
    _chown_tree,
    _copy_tree,
    _make_readable,
)
from flipflop import BotManifest
from flipflop._manifest import Runtime

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

_BUILD_LOG_LINES = 12

_EXE = re.compile(r"(?:\./)?([A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)*)")
"""``command[0]`` of a compiled bot: a relative path of plain names (it is written into the
recipe, so no space, quote, newline or ``..``)."""

_BUILD_OUTPUTS = {Runtime.CPP: ("gen",), Runtime.NODE: ("node_modules",), Runtime.GO: ()}
"""Top-level entries of a bot directory that its own build makes: never copied, never hashed
(the image is built from the sources; besides these, the executable and ``*.o`` files)."""


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
