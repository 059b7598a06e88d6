"""The Docker sandbox: each bot in a locked-down container, the league's sandbox.

Every container (see docs/sandbox.md for why each one matters):

- has no network (``network_mode="none"``): only a loopback device of its own;
- has a read-only root file system, a small ``/tmp`` (tmpfs, ``noexec``) and no ``/dev/shm``;
- runs under gVisor (``runsc``) when the engine has it, otherwise under ``runc`` (see
  :class:`Runtime`);
- runs as user 65534 with every capability dropped, ``no-new-privileges`` and the arena's own
  seccomp profile (``seccomp.json`` beside this module), and under ``runc`` the host-wide load
  figures of ``/proc`` and the host's block devices in ``/sys`` are masked
  (:data:`MASKED_PATHS`);
- is limited in memory (no swap), CPUs, processes and threads, open files, file size and
  CPU seconds;
- sees exactly one host directory: its own socket directory, mounted at ``/run/flipflop``,
  whose host path it cannot learn (see :meth:`DockerSandbox._socket_dir`); the bot listens on
  ``/run/flipflop/bot.sock`` and the arena dials ``unix:<socket dir>/bot.sock``. Until the
  socket exists the directory is watched (a bot that writes anything else there is stopped),
  and then it is made read-only to the bot, so it can never be used to fill the host's disk;
- is labelled (``flipflop.arena=1``, ``flipflop.run``, ``flipflop.pid``) and always removed:
  on :meth:`RunningBot.stop`, on :meth:`DockerSandbox.close`, at exit, by a watchdog process
  when the arena dies without cleaning up (even ``kill -9``), and by the next sandbox created
  on this machine for containers whose arena process is gone.

Its stdout and stderr are streamed into ``workdir/output.log`` up to the log cap; the rest is
counted and dropped (the container's own Docker log is disabled, so a flood cannot fill the
host's disk either).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import docker  # type: ignore[import-untyped,unused-ignore]
import docker.errors  # type: ignore[import-untyped,unused-ignore]
import requests.exceptions
from docker.models.containers import (  # type: ignore[attr-defined,import-untyped,unused-ignore]
    _create_container_args,
)
from docker.types import LogConfig, Ulimit  # type: ignore[import-untyped,unused-ignore]

from arena._errors import SandboxError, SandboxUnavailable
from arena.sandbox._base import (
    SandboxKind,
    SandboxLimits,
    StderrCapture,
    open_socket,
    process_cpu_seconds,
    process_gone,
    stop_all,
)
from arena.sandbox._cgroup import acct_dir_of, usage_ns
from arena.sandbox._containers import (
    LABEL,
    RUNTIMES,
    Runtime,
    host_pids_limit,
    owner_labels,
    seccomp_profile,
)
from arena.sandbox._cpuset import cpuset_text, pinning_for
from arena.sandbox.images import Log, ensure_base_image, ensure_bot_image, stderr_log
from flipflop import BotManifest

__all__ = [
    "LABEL",
    "MASKED_PATHS",
    "RUNTIMES",
    "DockerSandbox",
    "Runtime",
    "choose_runtime",
    "docker_available",
    "host_pids_limit",
    "reap_orphans",
    "seccomp_profile",
]

SOCKET_DIR = "/run/flipflop"
"""Where a container sees its socket directory."""
_LISTEN = f"unix:{SOCKET_DIR}/bot.sock"
_MB = 1024 * 1024
_SOCK_DIR_ENTRIES = 4
"""Entries a bot may make in its socket directory before its socket exists (a few, in case
its server makes a lock or temporary file)."""
_SOCK_DIR_BYTES = 64 * 1024
"""Bytes it may write there before its socket exists."""
_BOT_UID = frozenset({65534})
"""The user every container runs as: the only one that may own a bot's socket."""
# As root the socket directory is a tmpfs of this size: a hard cap on what a bot can write to
# the host through it, whatever the guard's timing (a busy machine delays the guard).
_SOCK_DIR_TMPFS = "256k"
_PRIVATE_PREFIX = "flipflop-sock-"
"""A non-root arena's socket directories are ``<tmp>/flipflop-sock-<random>/s``."""


MASKED_PATHS = (
    # Docker's own list, which HostConfig.MaskedPaths replaces rather than extends.
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
    # Host-wide load: a bot could watch its neighbours' CPU and I/O through them (issue 15,
    # finding 8). os.cpu_count() reads /sys/devices/system/cpu, which stays.
    "/proc/loadavg",
    "/proc/stat",
    "/proc/pressure",
    "/proc/schedstat",
    "/proc/diskstats",
    "/proc/vmstat",
    "/proc/interrupts",
    "/proc/softirqs",
    # The host's disks.
    "/proc/partitions",
    "/proc/swaps",
    "/sys/block",
    "/sys/class/block",
    "/sys/dev/block",
    "/sys/devices/virtual/block",
)
"""Paths of ``/proc`` and ``/sys`` a container sees empty: files read as empty, directories
as an empty read-only tmpfs. gVisor shows its own views of these already."""


def _mount_tmpfs(directory: Path) -> bool:
    """Mount a tiny tmpfs on ``directory`` (root only); True if mounted."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    opts = f"size={_SOCK_DIR_TMPFS},mode=0777,nosuid,nodev,noexec"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", opts, "flipflop-sock", str(directory)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def _unmount(directory: Path) -> None:
    """Undo :func:`_mount_tmpfs` (lazily: the container may still hold it for a moment)."""
    subprocess.run(["umount", "-l", str(directory)], capture_output=True, check=False)


_API_TIMEOUT = 60
_STOP_WAIT_S = 60.0
"""How long a second ``stop`` waits for the first to finish."""


def docker_available() -> str | None:
    """None when a Docker engine answers; otherwise one line saying why not."""
    try:
        client = docker.from_env(timeout=5)
    except Exception as e:  # the docker SDK raises several unrelated types here
        return f"no Docker engine answers ({_first_line(e)})"
    try:
        client.ping()
    except Exception as e:
        return f"the Docker engine does not answer ({_first_line(e)})"
    finally:
        client.close()
    return None


def choose_runtime(client: Any, asked: str) -> tuple[Runtime, str]:
    """The runtime for ``asked`` (one of :data:`RUNTIMES`) and how the ``sandbox:`` line says it.

    Raises:
        SandboxUnavailable: ``runsc`` was asked for and the engine does not have it.
        ValueError: ``asked`` is not one of :data:`RUNTIMES`.
    """
    if asked not in RUNTIMES:
        raise ValueError(f"unknown runtime {asked!r} (one of {', '.join(RUNTIMES)})")
    try:
        runtimes = client.info().get("Runtimes") or {}
    except docker.errors.DockerException as e:
        raise SandboxUnavailable(f"the Docker engine does not answer ({_first_line(e)})") from e
    if Runtime.RUNSC.value in runtimes and asked != Runtime.RUNC.value:
        args = (runtimes[Runtime.RUNSC.value] or {}).get("runtimeArgs") or []
        inside = ", the arena's seccomp profile inside it" if "--oci-seccomp" in args else ""
        return Runtime.RUNSC, f"runtime: gVisor (runsc){inside}"
    if asked == Runtime.RUNSC.value:
        raise SandboxUnavailable(
            "--runtime runsc: the Docker engine has no runsc runtime (gVisor); install runsc "
            "and register it in /etc/docker/daemon.json (see README), or use --runtime runc"
        )
    if asked == Runtime.RUNC.value:
        return Runtime.RUNC, "runtime: runc, the arena's seccomp profile, host load figures masked"
    return Runtime.RUNC, (
        "gVisor (runsc) not installed: bots run under runc with the arena's seccomp profile; "
        "see README"
    )


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:200]


# ---------------------------------------------------------------------------------- reaping


_T = TypeVar("_T")
_SIGKILLED = 128 + 9
"""The exit code of a container whose first process was killed by SIGKILL."""
_LATE_OOM_S = 3.0
"""How long the engine's ``oom`` event of a SIGKILLed container is waited for, at most."""
_NO_ANSWER = (requests.exceptions.Timeout, requests.exceptions.ConnectionError)
"""What docker-py raises when the engine does not answer within ``_API_TIMEOUT``: not a
``DockerException``."""


def _retried(call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``call(*args, **kwargs)``, once more if the engine did not answer in time.

    A loaded engine (many containers starting and stopping at once) has been seen to take
    over a minute to answer. Only for calls that may be repeated: inspect, attach, start,
    remove, list. A second silence is raised as a ``DockerException``, which every caller
    here handles (a plain ``requests`` error would escape them).
    """
    try:
        return call(*args, **kwargs)
    except _NO_ANSWER:
        pass
    try:
        return call(*args, **kwargs)
    except _NO_ANSWER as e:
        raise docker.errors.DockerException(
            f"the Docker engine did not answer, twice in {_API_TIMEOUT} s ({_first_line(e)})"
        ) from e


def _remove(container: Any, *, paused: bool = False) -> None:
    """Kill and remove a container; nothing if it is already gone.

    Also unmounts the tiny tmpfs of its socket directory, if the arena mounted one.
    """
    sources = [m.get("Source", "") for m in (container.attrs or {}).get("Mounts", [])]
    _remove_id(container.client.api, str(container.id), sources, paused=paused)


def _remove_id(
    api: Any, container_id: str, sources: Iterable[str], *, paused: bool = False
) -> None:
    """:func:`_remove` by id, with the host paths of its mounts (from a listing).

    A ``paused`` container is unfrozen first: under runsc a forced removal of a frozen one
    took 10 s, against 0.2 s unfrozen.
    """
    if paused:
        with contextlib.suppress(docker.errors.DockerException):
            api.unpause(container_id)
    with contextlib.suppress(docker.errors.NotFound):
        try:
            # And its anonymous volumes, if any.
            _retried(api.remove_container, container_id, force=True, v=True)
        except docker.errors.APIError as e:
            # "removal already in progress" (409) means someone else is removing it
            if getattr(e, "status_code", None) != 409:
                raise
    for source in sources:
        if source and _is_our_tmpfs(source):
            _unmount(Path(source))
        if source and _is_private_sock_dir(Path(source)):
            shutil.rmtree(Path(source).parent, ignore_errors=True)


def _is_private_sock_dir(path: Path) -> bool:
    """True if ``path`` is a socket directory made by :meth:`DockerSandbox._socket_dir`."""
    return (
        path.name == "s"
        and path.parent.name.startswith(_PRIVATE_PREFIX)
        and path.parent.parent == Path(tempfile.gettempdir()).resolve()
    )


def _remove_sock_dir(sock_dir: Path, mounted: bool) -> None:
    """Remove a socket directory, unmounting its tmpfs first if it has one."""
    if mounted:
        _unmount(sock_dir)
    shutil.rmtree(sock_dir, ignore_errors=True)
    if _is_private_sock_dir(sock_dir):
        shutil.rmtree(sock_dir.parent, ignore_errors=True)


def _is_our_tmpfs(path: str) -> bool:
    """True if ``path`` is a socket-directory tmpfs mounted by :func:`_mount_tmpfs`."""
    try:
        with open("/proc/self/mounts", encoding="utf-8") as f:
            return any(
                line.split()[:3] == ["flipflop-sock", path, "tmpfs"] for line in f if line.strip()
            )
    except OSError:
        return False


def reap_orphans(client: Any, log: Log | None = None) -> int:
    """Remove containers of arena processes on this host that no longer exist.

    Returns:
        how many containers were removed.
    """
    host = socket.gethostname()
    reaped = 0
    for c in _listed(client, f"{LABEL}=1"):
        labels = c.get("Labels") or {}
        if labels.get("flipflop.host") != host:
            continue  # another machine's arena, on a shared engine: not ours to judge
        try:
            pid = int(labels.get("flipflop.pid", ""))
        except ValueError:
            continue
        if process_gone(pid, labels.get("flipflop.pidstart", "")):
            with contextlib.suppress(docker.errors.DockerException):
                _remove_id(client.api, c["Id"], _sources(c), paused=c.get("State") == "paused")
                reaped += 1
    if reaped and log is not None:
        log(f"removed {reaped} container(s) left behind by an arena that is gone")
    return reaped


def _listed(client: Any, label: str) -> list[dict[str, Any]]:
    """The containers labelled ``label`` (``key=value``), running or not, as the engine lists them.

    One API call: docker-py's ``containers.list`` inspects each container after listing it,
    which is one call per container, and fails with 404 on one removed in between (another
    arena's, or this one's stopping in another thread).
    """
    listed: list[dict[str, Any]] = _retried(
        client.api.containers, all=True, filters={"label": label}
    )
    return listed


def _sources(listed: dict[str, Any]) -> list[str]:
    """The host paths of a listed container's mounts."""
    return [m.get("Source", "") for m in listed.get("Mounts") or []]


def _reap_run(client: Any, run_id: str) -> int:
    n = 0
    for c in _listed(client, f"flipflop.run={run_id}"):
        with contextlib.suppress(docker.errors.DockerException):
            _remove_id(client.api, c["Id"], _sources(c), paused=c.get("State") == "paused")
            n += 1
    return n


def _watch(run_id: str) -> None:
    """The watchdog: wait until the arena's end of the pipe closes, then remove its run."""
    with contextlib.suppress(OSError, KeyboardInterrupt):
        while sys.stdin.buffer.read(4096):
            pass
    client = docker.from_env(timeout=_API_TIMEOUT)
    for _ in range(3):
        try:
            _reap_run(client, run_id)
            return
        except docker.errors.DockerException:
            time.sleep(1)


# ---------------------------------------------------------------------------------- one bot


class _DockerBot:
    """One running container (the :class:`RunningBot` of this sandbox)."""

    def __init__(
        self,
        sandbox: DockerSandbox,
        container: Any,
        workdir: Path,
        pump: StderrCapture,
        mounted: bool,
        sock_dir: Path,
        seat_token: str,
    ) -> None:
        self.container = container
        self.seat_token = seat_token
        self.started_at = time.monotonic()  # set again once the container has started
        self._created_wall = time.time()  # for the engine's event log (``_oom_logged``)
        self._oom: bool | None = None  # whether it logged an OOM kill, once asked
        self._sock_fd: int | None = None
        self._acct: Path | None = None  # its cgroup's CPU accounting, once found (cpu_ns)
        self._acct_sought = False
        self._mounted = mounted  # its socket directory is a tiny tmpfs to unmount at stop
        self.sock_dir = sock_dir
        self._guarded = threading.Event()
        """Set once :meth:`guard_socket_dir` has taken its last look (or stopped the bot)."""
        self.endpoint = f"unix:{sock_dir / 'bot.sock'}"
        self.log_path = pump.path
        self.workdir = workdir
        self._sandbox = sandbox
        self._pump = pump
        self.stream: Any = None
        """The attached output stream the pump reads (a ``CancellableStream``)."""
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._done = threading.Event()  # set once a stop has finished
        self._paused = False  # frozen between matches (``pause``); unfrozen before removal

    def alive(self) -> bool:
        if self._stopped.is_set() or self._pump.finished():
            return False
        try:
            _retried(self.container.reload)
        except docker.errors.NotFound:
            return False
        except docker.errors.DockerException:
            return True  # the engine does not answer; its output stream is open, so it runs
        return self.container.status in ("created", "running")

    def dropped_log_bytes(self) -> int:
        return self._pump.dropped

    def pause(self) -> None:
        if self._paused or self._stopped.is_set():
            return
        try:
            _retried(self.container.pause)
        except docker.errors.DockerException:
            return  # gone, or the engine cannot: it then waits unfrozen, as before
        self._paused = True

    def resume(self) -> bool:
        if self._stopped.is_set():
            return False
        if self._paused:
            try:
                _retried(self.container.unpause)
            except docker.errors.DockerException:
                return False
            self._paused = False
        return True

    def cpu_seconds(self) -> float | None:
        try:
            self.container.reload()
            pid = int((self.container.attrs.get("State") or {}).get("Pid") or 0)
        except (docker.errors.DockerException, ValueError):
            return None
        # The entry point's process, as the host sees it (the limit is per process).
        return process_cpu_seconds(pid) if pid > 0 else None

    def cpu_ns(self) -> int | None:
        if self._acct is None:
            if self._acct_sought or self._stopped.is_set():
                return None  # not found once (say, a remote engine): not sought again
            self._acct_sought = True
            # Found once, from its first process: the container's cgroup (runc), or gVisor's
            # whole sandbox, Sentry and all (runsc), holds every process it runs.
            try:
                self.container.reload()
                pid = int((self.container.attrs.get("State") or {}).get("Pid") or 0)
            except (docker.errors.DockerException, ValueError):
                return None
            self._acct = acct_dir_of(pid) if pid > 0 else None
            if self._acct is None:
                return None
        return usage_ns(self._acct)

    def target(self) -> str | None:
        if self._sock_fd is None:
            if not self._guarded.is_set():  # its socket directory not yet looked at for good
                return None
            sock = Path(self.endpoint.removeprefix("unix:"))
            # Made by the container's user 65534, in the directory the arena made for it.
            # Under runsc the gofer binds it as root and then hands it over: root's is "not
            # yet" (only the host's root can make a file owned by 0; no bot can).
            self._sock_fd = open_socket(
                sock, _BOT_UID, frozenset({os.geteuid()}), pending_owners=frozenset({0})
            )
        return None if self._sock_fd is None else f"unix:/proc/self/fd/{self._sock_fd}"

    def exit_status(self) -> str | None:
        if not self._stopped.is_set() and not self._pump.finished():
            # Its output stream is open, so it runs: no API call (the start loop polls this).
            return None
        if self._pump.stopped_why:
            return self._pump.stopped_why  # removed by the arena: no state worth asking for
        try:
            _retried(self.container.reload)
            state = self.container.attrs.get("State") or {}
        except docker.errors.DockerException:
            return "gone"
        if state.get("Running"):
            return None
        code = state.get("ExitCode")
        if state.get("OOMKilled") or (code == _SIGKILLED and self._oom_logged()):
            return "killed for using more than its memory limit (out of memory)"
        return "stopped" if code is None else f"exit code {code}"

    def _oom_logged(self) -> bool:
        """Whether the engine logged an ``oom`` event for this container (waiting a little).

        The engine sets ``OOMKilled`` only if the kernel's OOM event reaches it before the
        exit; on a loaded machine the two come in either order (5 of 20 OOM kills under
        gVisor next to ``stress-ng --cpu 4`` read ``die`` then ``oom``, flag unset), and the
        late event still lands in its event log. Asked only for a SIGKILL the arena did not
        send, so the wait costs nothing in a normal match.
        """
        if self._oom is None:
            self._oom = False
            since = int(self._created_wall) - 1
            try:
                events = self._sandbox.client.events(
                    since=since,
                    until=int(time.time() + _LATE_OOM_S) + 1,
                    filters={"container": self.container.id, "event": "oom"},
                    decode=True,
                )
                try:
                    self._oom = next(iter(events), None) is not None
                finally:
                    events.close()
            except docker.errors.DockerException:
                pass
        return self._oom

    def guard_socket_dir(self) -> None:
        """Until the bot's socket exists, watch its directory; then make it read-only to it.

        The socket directory is the one host path a container sees, and it must be writable
        until the bot has bound its socket. A bot that writes anything else there (more than
        :data:`_SOCK_DIR_ENTRIES` entries or :data:`_SOCK_DIR_BYTES` bytes) is stopped at
        once; once the socket exists the directory is made read-only to the container, so it
        can never be used to fill the host's disk. The socket itself keeps working.

        There is no deadline here: locking the directory while a slow bot (a loaded machine)
        is still coming up made its bind fail with EACCES, a start fault it did not cause.
        The runner's start budget decides when a bot is too slow, and stops it.

        The bot is not seen serving (:meth:`target`) until this last look is taken: a guard
        thread starved on a loaded machine looked once the match was over, and the bot that
        wrote there played it unpunished (a rehearsal, under gVisor, load average 25).
        """
        try:
            sock_dir = self.sock_dir
            while not self._stopped.is_set():
                if os.path.lexists(sock_dir / "bot.sock") or self._pump.finished():
                    break
                if self._squatted(sock_dir):
                    return
                time.sleep(0.01)
            # One last look once the socket is there: whatever the timing, a bot that wrote
            # into the directory before binding is stopped (as root, a tmpfs caps what it
            # could write).
            if not self._stopped.is_set() and self._squatted(sock_dir):
                return
            with contextlib.suppress(OSError):
                os.chmod(sock_dir, 0o755)
        finally:
            self._guarded.set()

    def _squatted(self, sock_dir: Path) -> bool:
        """Stop the bot if it wrote more than its socket into ``sock_dir``; True if it did."""
        entries = 0
        size = 0
        with contextlib.suppress(OSError):
            for entry in os.scandir(sock_dir):
                entries += 1
                size += entry.stat(follow_symlinks=False).st_size
                if entries > _SOCK_DIR_ENTRIES:
                    break
        if entries <= _SOCK_DIR_ENTRIES and size <= _SOCK_DIR_BYTES:
            return False
        with contextlib.suppress(OSError):
            os.chmod(sock_dir, 0o755)  # no more writes, even before it is gone
        self._pump.note(f"stopped: wrote {entries} entries, {size} bytes into its socket directory")
        self.stop()
        return True

    def stop(self) -> None:
        with self._stop_lock:
            if self._stopped.is_set():
                # Another thread stops it (the log pump, for a flood): return once it is gone.
                self._done.wait(_STOP_WAIT_S)
                return
            self._stopped.set()
        if self._sock_fd is not None:
            os.close(self._sock_fd)
            self._sock_fd = None
        if self._pump.stopped_why and self.stream is not None:
            # The pump stopped reading (a flood), so the engine's copy of its output blocks;
            # under runsc the kill then waited on it for minutes (runc's did not). Hang up:
            # the engine drops the rest.
            with contextlib.suppress(Exception):
                self.stream.close()
        try:
            with contextlib.suppress(docker.errors.DockerException):
                _remove(self.container, paused=self._paused)
        finally:
            self._pump.join()
            _remove_sock_dir(self.sock_dir, self._mounted)
            self._sandbox._forget(self)
            self._done.set()


# ---------------------------------------------------------------------------------- the sandbox


class DockerSandbox:
    """Runs each bot in a locked-down Docker container (see the module docstring).

    Images are built on first use (``arena.sandbox.images``): a shared base image with the
    SDK, then one per bot directory; both are cached by content hash across runs.

    Args:
        limits: resource limits for each container.
        base: root of the base image, ``slim`` or ``debootstrap``; default:
            ``$ARENA_DOCKER_BASE`` or automatic.
        log: where progress (image builds, reaped containers) goes; default: stderr.
        runtime: one of :data:`RUNTIMES`: ``auto`` runs bots under gVisor (``runsc``) when the
            engine has it and under ``runc`` otherwise, saying so in :attr:`isolation`.
        trust_dockerfile: build each bot's own ``Dockerfile`` (checked, see
            :func:`~arena.sandbox.images.check_dockerfile`) instead of the arena's recipe for
            its runtime: for one's own bots only.

    Raises:
        SandboxUnavailable: no Docker engine answers, or ``runsc`` was asked for and the
            engine does not have it.
    """

    kind = SandboxKind.DOCKER

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        base: str | None = None,
        log: Log | None = None,
        runtime: str = "auto",
        trust_dockerfile: bool = False,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.trust_dockerfile = trust_dockerfile
        """Build a bot's own Dockerfile instead of the arena's recipe (for one's own bots)."""
        self.run_id = uuid.uuid4().hex[:12]
        self._log = log or stderr_log
        self._base_kind = base
        try:
            self.client = docker.from_env(timeout=_API_TIMEOUT)
            self.client.ping()
        except Exception as e:
            raise SandboxUnavailable(f"no Docker engine answers ({_first_line(e)})") from e
        self.runtime, runtime_note = choose_runtime(self.client, runtime)
        lim = self.limits
        self.isolation = (
            "docker sandbox: no network, read-only root, user 65534, all capabilities dropped, "
            f"no-new-privileges; {lim.memory_mb} MB memory, {lim.cpus:g} CPU, "
            f"{lim.pids} pids, {lim.tmp_mb} MB /tmp; the host is seen only through the "
            f"bot's own socket directory; HTTP/2 frame floods cut off by the arena's relay; "
            f"{runtime_note}"
        )
        self.open_socket = os.geteuid() != 0
        """Whether bots are started with ``umask 0`` (see :meth:`_entrypoint`)."""
        self.tmpfs_sockets = os.geteuid() == 0 and shutil.which("mount") is not None
        """Whether socket directories are tmpfs mounts (root only; see :meth:`_socket_dir`)."""
        self._lock = threading.Lock()
        self._images: dict[Path, str | SandboxError] = {}
        self._base: str | None = None
        self._running: set[_DockerBot] = set()
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._names = itertools.count()
        reap_orphans(self.client, self._log)
        atexit.register(self.close)

    # ------------------------------------------------------------------ images

    def image_for(self, bot: BotManifest) -> str:
        """The image of ``bot``, building the base and the bot's image if needed."""
        with self._lock:
            cached = self._images.get(bot.path)
            if isinstance(cached, SandboxError):
                raise cached
            if cached is not None:
                return cached
            try:
                if self._base is None:
                    self._base = ensure_base_image(self.client, self._log, self._base_kind)
                tag = ensure_bot_image(
                    self.client,
                    bot,
                    self._base,
                    self._log,
                    trust_dockerfile=self.trust_dockerfile,
                    runtime=self.runtime,  # a Go or C++ build runs its author's code too
                )
            except SandboxError as e:
                self._images[bot.path] = e
                raise
            self._images[bot.path] = tag
            return tag

    def prepare(self, bots: Iterable[BotManifest]) -> None:
        """Build (or find) every image now, so that no match waits for a build."""
        for bot in bots:
            self.image_for(bot)

    # ------------------------------------------------------------------ containers

    def _labels(self, bot: BotManifest, label: str) -> dict[str, str]:
        return {
            **owner_labels(),
            "flipflop.run": self.run_id,
            "flipflop.bot": bot.name,
            "flipflop.label": label,
        }

    def _entrypoint(self, image: str) -> dict[str, Any]:
        """The command: the image's entry point plus ``--listen``.

        When the arena is not root, the bot's socket must be connectable by the arena's user,
        which is neither the socket's owner (65534) nor in its group: the entry point is then
        run through ``sh`` with ``umask 0``, so that the socket is created ``rwxrwxrwx`` (its
        directory is only reachable by the arena and this one container).
        """
        if not self.open_socket:
            return {"command": ["--listen", _LISTEN]}
        config = _retried(self.client.images.get, image).attrs.get("Config") or {}
        entrypoint = list(config.get("Entrypoint") or [])
        return {
            "entrypoint": ["/bin/sh", "-c", 'umask 0 && exec "$@"', "sh"],
            "command": [*entrypoint, "--listen", _LISTEN],
        }

    def _container_config(
        self, bot: BotManifest, label: str, sock_dir: Path, seat_token: str
    ) -> dict[str, Any]:
        lim = self.limits
        memory_mb = lim.memory_for(bot)
        fsize = lim.file_size_mb * _MB
        # CPUs of its own, when the machine has enough to spare (arena/sandbox/_cpuset.py).
        with self._lock:
            live = [b.seat_token for b in self._running]
        pinned = pinning_for(self, lim.cpus).take(seat_token, live)
        return {
            **({"cpuset_cpus": cpuset_text(pinned)} if pinned else {}),
            "environment": {
                # Only this container and the arena know it (docs/security.md).
                "FLIPFLOP_SEAT_TOKEN": seat_token,
                "FLIPFLOP_LISTEN": _LISTEN,
                "FLIPFLOP_SANDBOX": "docker",
                "HOME": "/tmp",
                "TMPDIR": "/tmp",
            },
            "labels": self._labels(bot, label),
            "user": "65534:65534",
            "network_mode": "none",
            "read_only": True,
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,noexec,size={lim.tmp_mb}m,mode=1777"},
            # No /dev/shm: /tmp is the one scratch space.
            "ipc_mode": "none",
            "cap_drop": ["ALL"],
            "runtime": self.runtime.value,
            "security_opt": ["no-new-privileges", f"seccomp={seccomp_profile()}"],
            # What its bot.toml asks for, within the arena's cap (refused above it).
            "mem_limit": f"{memory_mb}m",
            "memswap_limit": f"{memory_mb}m",
            "nano_cpus": round(lim.cpus * 1e9),
            "pids_limit": host_pids_limit(self.runtime, lim.pids),
            "oom_score_adj": 1000,
            "ulimits": [
                Ulimit(name="nofile", soft=lim.open_files, hard=lim.open_files),
                Ulimit(name="fsize", soft=fsize, hard=fsize),
                Ulimit(name="cpu", soft=lim.cpu_seconds, hard=lim.cpu_seconds + 5),
                Ulimit(name="core", soft=0, hard=0),
                *self._nproc(),
            ],
            "volumes": {str(sock_dir): {"bind": SOCKET_DIR, "mode": "rw"}},
            # Output is streamed by attach; Docker's own log would grow without bound.
            "log_config": LogConfig(type="none"),
            "stdin_open": False,
            "tty": False,
        }

    def _nproc(self) -> list[Any]:
        """Under runsc, the bot's process and thread limit: ``RLIMIT_NPROC``, in gVisor's kernel.

        gVisor's Sentry enforces ``RLIMIT_NPROC`` over the tasks of its own kernel, that is,
        this one bot's processes and threads. Under runc it would count every process of user
        65534 on the host, every other bot's included: there the pids cgroup is the limit.
        """
        if self.runtime is not Runtime.RUNSC:
            return []
        return [Ulimit(name="nproc", soft=self.limits.pids, hard=self.limits.pids)]

    def _name(self, label: str) -> str:
        clean = re.sub(r"[^A-Za-z0-9_.-]", "-", label)[:60]
        return f"flipflop-{self.run_id}-{clean}-{next(self._names)}"

    def _ensure_watchdog(self) -> None:
        if self._watchdog is not None and self._watchdog.poll() is None:
            return
        # A separate process, in its own session so Ctrl-C does not reach it: when this
        # process dies in any way, the pipe closes and the watchdog removes the run's
        # containers.
        self._watchdog = subprocess.Popen(
            [sys.executable, "-m", "arena.sandbox._docker", "--watch", self.run_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )

    def start(self, bot: BotManifest, workdir: Path, label: str) -> _DockerBot:
        """Start ``bot`` in a new container serving on ``bot.sock`` in a new socket directory.

        Raises:
            SandboxError: its image cannot be built, or the container cannot start.
        """
        self.limits.memory_for(bot)  # above the cap: refused before anything is made
        image = self.image_for(bot)
        workdir = workdir.resolve()
        sock_dir = workdir / "sock"
        try:
            workdir.mkdir(parents=True, exist_ok=True)
            sock_dir, mounted = self._socket_dir(workdir)
            # Writable for the container's user 65534 until its socket exists.
            os.chmod(sock_dir, 0o777)
        except OSError as e:
            raise SandboxError(f"{bot.name}: cannot prepare {sock_dir}: {e}") from e
        with self._lock:
            self._ensure_watchdog()
        token = secrets.token_hex(16)
        try:
            container = self._create(
                image,
                name=self._name(label),
                **self._entrypoint(image),
                **self._container_config(bot, label, sock_dir, token),
            )
        except docker.errors.DockerException as e:
            _remove_sock_dir(sock_dir, mounted)
            raise SandboxError(f"{bot.name}: cannot create its container: {e}") from e
        try:
            # Attach before start: everything the bot writes is streamed from its first byte.
            stream: Any = _retried(  # an iterator of bytes, with stream=True
                self.client.api.attach, str(container.id), stdout=True, stderr=True, stream=True
            )
            pump = StderrCapture(stream, workdir / "output.log", self.limits.log_bytes)
            running = _DockerBot(self, container, workdir, pump, mounted, sock_dir, token)
            running.stream = stream
            pump.on_flood(running.stop)
            with self._lock:
                self._running.add(running)
            _retried(container.start)
            running.started_at = time.monotonic()
        except docker.errors.DockerException as e:
            with contextlib.suppress(docker.errors.DockerException):
                _remove(container)
            raise SandboxError(f"{bot.name}: cannot start its container: {e}") from e
        threading.Thread(
            target=running.guard_socket_dir,
            name=f"lock:{label}",
            daemon=True,
        ).start()
        return running

    def _socket_dir(self, workdir: Path) -> tuple[Path, bool]:
        """A new socket directory for one container, and whether it is a tmpfs to unmount.

        A container's ``/proc/self/mountinfo`` shows, for a bind mount, the path of its source
        within the host file system it lives on: a directory of the arena's work directory
        would tell a bot where the arena keeps its files and its neighbours' sockets (issue
        15, finding 8). As root, the directory is ``workdir/sock`` with a tmpfs mounted on it,
        which shows as ``/``. Otherwise it is ``<tmp>/flipflop-sock-<random>/s``: a random name
        under the system's temporary directory, whose parent only the arena's user can enter
        (``mkdtemp``'s 0700), so no other user of the host can reach it either.
        """
        if self.tmpfs_sockets:
            sock_dir = workdir / "sock"
            shutil.rmtree(sock_dir, ignore_errors=True)
            sock_dir.mkdir()
            if _mount_tmpfs(sock_dir):
                return sock_dir, True
            sock_dir.rmdir()
        private = Path(tempfile.mkdtemp(prefix=_PRIVATE_PREFIX)).resolve()
        (private / "s").mkdir()
        return private / "s", False

    def _create(self, image: str, **kwargs: Any) -> Any:
        """``containers.create``, plus ``HostConfig.MaskedPaths``, which it has no keyword for."""
        kwargs = {**kwargs, "image": image, "version": self.client.api.api_version}
        args = _create_container_args(kwargs)
        args["host_config"]["MaskedPaths"] = list(MASKED_PATHS)
        try:
            created = self.client.api.create_container(**args)
        except _NO_ANSWER:
            # A loaded engine may have created it without answering in time: find it by its
            # name (unique to this sandbox), or create it again.
            try:
                created = {"Id": _retried(self.client.api.inspect_container, args["name"])["Id"]}
            except docker.errors.NotFound:
                created = _retried(self.client.api.create_container, **args)
        return _retried(self.client.containers.get, created["Id"])

    def _forget(self, bot: _DockerBot) -> None:
        with self._lock:
            self._running.discard(bot)

    def running(self) -> list[Any]:
        """The containers of this sandbox that still exist (for tests and diagnostics)."""
        return list(
            self.client.containers.list(
                all=True, filters={"label": f"flipflop.run={self.run_id}"}, ignore_removed=True
            )
        )

    def close(self) -> None:
        """Remove every container this sandbox started (idempotent)."""
        with self._lock:
            bots = list(self._running)
        stop_all(bots)
        with contextlib.suppress(docker.errors.DockerException):
            _reap_run(self.client, self.run_id)
        with self._lock:
            watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            # Everything is removed: the watchdog has nothing left to do.
            watchdog.kill()
            watchdog.wait()
            if watchdog.stdin is not None:
                watchdog.stdin.close()
        # The engine's connections (a pool of unix sockets): an arena that makes sandbox after
        # sandbox (a test run, a fleet worker) would otherwise hold about 25 descriptors each.
        self.client.close()


def _main(args: list[str]) -> int:
    if len(args) == 2 and args[0] == "--watch":
        _watch(args[1])
        return 0
    print("usage: python -m arena.sandbox._docker --watch RUN_ID", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
