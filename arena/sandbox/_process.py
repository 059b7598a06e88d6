"""The process sandbox: a bot as a child process with resource limits.

Weaker isolation than Docker, and labelled so in every output: fine for your own bots, never
for untrusted submissions. What it does (docs/sandbox.md lists what it cannot do):

- a copy of the bot directory as its working directory, and its own scratch ``tmp/``;
- a scrubbed environment (``PATH``, ``HOME``, ``TMPDIR``, ``LANG``, the socket and its seat's
  secret ``FLIPFLOP_SEAT_TOKEN`` only);
- limits on memory, CPU seconds, file size and open files: memory is resident memory (swap
  included) in its memory cgroup where there is one, else address space (``RLIMIT_AS``, which
  kills runtimes that reserve much, such as Node.js; the ``sandbox:`` line says so);
- where the arena runs as root with a writable cgroup file system: a cgroup of its own
  (``_cgroup.py``), entered before any of its code runs, with a CPU quota of ``limits.cpus``
  CPUs and a limit of ``limits.pids`` processes shared by everything it starts, children that
  left its session included; elsewhere the ``sandbox:`` line says ``NO CPU QUOTA`` and why;
- its own empty network namespace where the OS allows (``unshare --net``), so no network;
- when the arena runs as root: each bot runs as a user id of its own, never used by anything
  else (``setpriv``, no capabilities, ``no-new-privs``), so it cannot read root's files nor
  another bot's, nor its own output log; and its limit on processes and threads
  (``RLIMIT_NPROC``) counts that bot alone;
- on stop: its process group is killed, then every process in its cgroup, then every process
  left with its user id or in its network namespace (those that escaped the group with
  ``setsid``), and its cgroup is removed;
- a watchdog process kills what is left (and removes the cgroups) if the arena dies without
  stopping its bots; a new sandbox removes the cgroups of arenas that are gone.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from arena._errors import SandboxError
from arena.sandbox._base import (
    SandboxKind,
    SandboxLimits,
    StderrCapture,
    open_socket,
    process_cpu_seconds,
    stop_all,
)
from arena.sandbox._cgroup import BotCgroup, CgroupTree, cgroup_tree, decode, remove_cgroup
from flipflop import BotManifest

__all__ = ["ProcessSandbox"]

# Each bot (arena running as root) gets a user id drawn from this range: far above the ids
# of real accounts and of the usual subordinate-id ranges of user namespaces.
_UID_RANGE = (0x60000000, 0x70000000)
_PATH = "/usr/local/bin:/usr/bin:/bin"
_STOP_WAIT_S = 30.0
_PAUSE_WAIT_S = 1.0
"""How long a pause waits for the bot's process to show that it stopped."""
"""How long a second ``stop`` waits for the first to finish."""


@functools.cache
def _can_unshare_net() -> bool:
    """True if ``unshare --net`` works here (root, or user namespaces allowed)."""
    exe = shutil.which("unshare")
    if exe is None:
        return False
    for args in (["--net"], ["--net", "--map-root-user"]):
        try:
            r = subprocess.run([exe, *args, "true"], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0:
            return True
    return False


_COPYING_OR_FORKING = threading.Lock()
"""Held while a bot's files are copied and while a bot's process is forked and exec'd.

A child forked while another thread has a bot's binary open for writing holds that file open
until it execs, and the bot's own exec then fails with ETXTBSY ("Text file busy": a Go bot's
start in a CI run). With the lock no start forks while a copy writes.
"""


def _setpriv(uid: int) -> list[str]:
    return [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


@functools.cache
def _drop_privileges() -> str | None:
    """None if bots can run as an unprivileged user of their own; else why not.

    Checks that such a user can run this interpreter and import the SDK: an interpreter
    under a private home directory (``/root/.pyenv``) may not be.
    """
    if os.geteuid() != 0:
        return "the arena does not run as root"
    if shutil.which("setpriv") is None:
        return "setpriv is not installed"
    probe = [*_setpriv(_UID_RANGE[0]), sys.executable, "-c", "import flipflop, grpc"]
    try:
        r = subprocess.run(
            probe, capture_output=True, text=True, timeout=60, cwd="/", env={"PATH": _PATH}
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot run setpriv: {e}"
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return f"an unprivileged user cannot run {sys.executable} with the SDK ({last})"
    return None


def _net_ns(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return ""


def _pids(match: Callable[[int], bool]) -> list[int]:
    """Processes (by /proc) for which ``match(pid)`` holds; none where there is no /proc."""
    out = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                pid = int(entry.name)
                with contextlib.suppress(OSError):
                    if pid != os.getpid() and match(pid):
                        out.append(pid)
    return out


def _kill_all(match: Callable[[int], bool]) -> None:
    """SIGKILL every process ``match`` picks, again until none is left (a fork bomb forks on)."""
    for _ in range(100):
        pids = _pids(match)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _owned_by(uid: int) -> Callable[[int], bool]:
    return lambda pid: os.stat(f"/proc/{pid}").st_uid == uid


def _in_net_ns(ns: str) -> Callable[[int], bool]:
    return lambda pid: _net_ns(pid) == ns


def _kill_leftovers(pgid: int, uid: int | None, ns: str) -> None:
    """Kill a bot's process group, then whatever escaped it.

    By its user id when it has one of its own (nothing else runs as that user), else by its
    network namespace.

    A namespace is named by an inode number, which the kernel reuses once the namespace is
    gone: killing by a stale name would kill another bot that is just starting. The arena holds
    the namespace open while the bot runs (``_ProcessBot``), so the name stays the bot's.
    """
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)
    if uid is not None:
        _kill_all(_owned_by(uid))
    elif ns and ns != _net_ns(os.getpid()):
        _kill_all(_in_net_ns(ns))


class _Watchdog:
    """A separate process that kills every bot left running when the arena dies.

    The arena writes ``+pgid uid netns cgroup`` when a bot starts (``-`` for what it has not;
    ``cgroup`` is :meth:`BotCgroup.encode`: its directories) and ``-pgid`` when it has stopped
    it; when the pipe closes (the arena exited or was killed, even with SIGKILL), the watchdog
    kills what is still listed and removes its cgroups.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _send(self, line: str) -> None:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "arena.sandbox._process", "--watch"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # Ctrl-C must not reach it
                )
            assert self._proc.stdin is not None
            with contextlib.suppress(OSError):
                self._proc.stdin.write(line.encode() + b"\n")
                self._proc.stdin.flush()

    def started(self, pgid: int, uid: int | None, ns: str, cgroup: BotCgroup | None) -> None:
        cg = cgroup.encode() if cgroup is not None else "-"
        self._send(f"+{pgid} {uid if uid is not None else '-'} {ns or '-'} {cg}")

    def stopped(self, pgid: int) -> None:
        self._send(f"-{pgid}")

    def close(self) -> None:
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()  # every bot is stopped: nothing for it to do
            proc.wait()
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()


def _watch() -> None:
    """The watchdog's main loop (``python -m arena.sandbox._process --watch``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    listed: dict[int, tuple[int | None, str, tuple[Path, ...]]] = {}
    for raw in sys.stdin:
        parts = raw.split()
        if not parts:
            continue
        if parts[0].startswith("+") and len(parts) == 4:
            uid = None if parts[1] == "-" else int(parts[1])
            ns = "" if parts[2] == "-" else parts[2]
            cgroup = decode(parts[3]) if parts[3] != "-" else ()
            listed[int(parts[0][1:])] = (uid, ns, cgroup)
        elif parts[0].startswith("-"):
            listed.pop(int(parts[0][1:]), None)
    for pgid, (uid, ns, cgroup) in listed.items():
        if cgroup:
            remove_cgroup(cgroup)
        _kill_leftovers(pgid, uid, ns)


def _state(pid: int) -> str:
    """Process ``pid``'s state letter (``T``: stopped by a signal), or "" if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return ""


class _ProcessBot:
    def __init__(
        self,
        sandbox: ProcessSandbox,
        proc: subprocess.Popen[bytes],
        endpoint: str,
        workdir: Path,
        log: StderrCapture,
        uid: int | None,
        net_ns: str,
        net_ns_fd: int | None,
        cgroup: BotCgroup | None,
        seat_token: str,
    ) -> None:
        self.proc = proc
        self.cgroup = cgroup
        """Its cgroup (None where the sandbox has none): removed when it stops."""
        self.seat_token = seat_token
        self.net_ns = net_ns
        self._net_ns_fd = net_ns_fd  # keeps the namespace, and so its name, alive
        self.endpoint = endpoint
        self.workdir = workdir
        self.log_path = log.path
        self.uid = uid
        self._sandbox = sandbox
        self._log = log
        self._stopped = False
        self._paused = False  # stopped with SIGSTOP between matches (``pause``)
        self._lock = threading.Lock()
        self._done = threading.Event()  # set once a stop has finished
        self._sock_fd: int | None = None
        self.started_at = time.monotonic()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def dropped_log_bytes(self) -> int:
        return self._log.dropped

    def pause(self) -> None:
        # SIGSTOP to its process group (it leads one: ``setsid``). A child that left the group
        # runs on, within the bot's own cgroup and limits.
        with self._lock:
            if self._stopped or self._paused or self.proc.poll() is not None:
                return
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGSTOP)
                self._paused = True
            # The signal takes effect when the process next enters the kernel: return once it
            # has (a process running on another core showed state R just after the signal).
            deadline = time.monotonic() + _PAUSE_WAIT_S
            while _state(self.proc.pid) not in ("T", "t", "", "Z") and time.monotonic() < deadline:
                time.sleep(0.001)

    def resume(self) -> bool:
        with self._lock:
            if self._paused:
                with contextlib.suppress(OSError):
                    os.killpg(self.proc.pid, signal.SIGCONT)
                self._paused = False
            return not self._stopped and self.proc.poll() is None

    def cpu_seconds(self) -> float | None:
        # The wrappers exec one another: this pid is the bot's own process.
        return None if self.proc.poll() is not None else process_cpu_seconds(self.proc.pid)

    def cpu_ns(self) -> int | None:
        # Its cgroup's accounting: every process and thread it started, gone ones included.
        return None if self.cgroup is None else self.cgroup.usage_ns()

    def target(self) -> str | None:
        if self._sock_fd is None:
            # Its own user, or (without one) the arena's: the directory is made by the arena.
            uid = self.uid if self.uid is not None else os.geteuid()
            sock = Path(self.endpoint.removeprefix("unix:"))
            self._sock_fd = open_socket(sock, frozenset({uid}), frozenset({uid}))
        return None if self._sock_fd is None else f"unix:/proc/self/fd/{self._sock_fd}"

    def exit_status(self) -> str | None:
        code = self.proc.poll()
        if code is None:
            # Being stopped by the arena is as good as ended: no call will be answered.
            return self._log.stopped_why or None
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        if code == -signal.SIGKILL and self.cgroup is not None and self.cgroup.oom_kills():
            how = "killed for using more than its memory limit (out of memory)"
        return f"{self._log.stopped_why}; {how}" if self._log.stopped_why else how

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                # Another thread stops it (the log pump, for a flood): return once it is gone.
                self._done.wait(_STOP_WAIT_S)
                return
            self._stopped = True
            paused, self._paused = self._paused, False
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGTERM)
            if paused:  # a stopped process acts on SIGTERM only once it runs again
                os.killpg(self.proc.pid, signal.SIGCONT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(1.0)
        # Whatever is left, including children that left the group with setsid: all of them
        # are in its cgroup, which they cannot leave; its user id or namespace is a second net.
        if self.cgroup is not None:
            self.cgroup.kill()
        _kill_leftovers(self.proc.pid, self.uid, self.net_ns)
        if self._net_ns_fd is not None:
            os.close(self._net_ns_fd)
            self._net_ns_fd = None
        if self._sock_fd is not None:
            os.close(self._sock_fd)
            self._sock_fd = None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5.0)
        if self.cgroup is not None:
            self.cgroup.remove()
        self._sandbox._watchdog.stopped(self.proc.pid)
        self._log.join()
        for sub in ("bot", "tmp", "sock"):
            shutil.rmtree(self.workdir / sub, ignore_errors=True)
        self._sandbox._forget(self)
        self._done.set()


class ProcessSandbox:
    """Runs each bot as a limited child process (see the module docstring)."""

    kind = SandboxKind.PROCESS

    def __init__(
        self, limits: SandboxLimits | None = None, *, cgroups: CgroupTree | str | None = None
    ) -> None:
        """A sandbox; ``cgroups`` overrides what was found (a reason string: none; tests)."""
        self.limits = limits or SandboxLimits()
        self.netns = _can_unshare_net()
        why_not = _drop_privileges()
        self.own_user = why_not is None
        self.rlimits = shutil.which("prlimit") is not None
        parts = ["process sandbox (weaker isolation: for your own bots, not untrusted code)"]
        parts.append("no network" if self.netns else "NETWORK NOT ISOLATED")
        if not self.rlimits:
            parts.append("NO RESOURCE LIMITS: prlimit (util-linux) is not installed")
        if self.own_user:
            parts.append("each bot as its own unprivileged user")
        elif os.geteuid() == 0:
            parts.append(f"BOTS RUN AS ROOT: {why_not}")
        tree = cgroup_tree() if cgroups is None else cgroups
        self.cgroups: CgroupTree | None = None if isinstance(tree, str) else tree
        """Where each bot's cgroup is made; None: no cgroups (``cgroups_unavailable`` says why)."""
        self.cgroups_unavailable = tree if isinstance(tree, str) else ""
        if self.cgroups is not None:
            self.cgroups.reap_stale()
            parts.append(self.cgroups.describe(self.limits.cpus, self.limits.pids))
        else:
            parts.append(f"NO CPU QUOTA: {self.cgroups_unavailable}")
        if self.cgroups is None or self.cgroups.acct is None:
            # Said once, here: the runner falls back to wall time for every decision.
            parts.append("WALL-CLOCK TIME CONTROL: no CPU accounting, neighbours' load is charged")
        else:
            parts.append("time control on each bot's cgroup CPU time")
        parts.append(self._memory_line())
        parts.append("HTTP/2 frames not counted (dialled directly, no flood relay)")
        self.isolation = ", ".join(parts)
        self._running: set[_ProcessBot] = set()
        self._lock = threading.Lock()
        self._watchdog = _Watchdog()

    def _command(
        self, bot: BotManifest, sock: Path, uid: int | None, cgroup: BotCgroup | None = None
    ) -> list[str]:
        cmd = list(bot.command)
        if cmd[0] in ("python", "python3"):
            # The bot runs on the arena's interpreter, which has the flipflop SDK installed.
            cmd[0] = sys.executable
        cmd += ["--listen", f"unix:{sock}"]
        # First, as root: join the cgroup (a shell that execs the rest); then the limits, the
        # namespace and the user, each a wrapper that execs the next.
        prefix = cgroup.command() if cgroup is not None else []
        prefix += self._limits(uid, self.limits.memory_for(bot), cgroup)
        if self.netns:
            prefix += ["unshare", "--net"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
        if uid is not None:
            prefix += _setpriv(uid)
        return prefix + cmd

    def _memory_line(self) -> str:
        """How bots' memory is limited, for the ``sandbox:`` line."""
        lim = self.limits
        if self.cgroups is not None and self.cgroups.memory is not None:
            swap = ", no swap" if self.cgroups.no_swap else ", SWAP NOT LIMITED"
            return (
                f"memory limit of {lim.memory_mb} MB resident per bot (memory cgroup{swap}; "
                f"bot.toml may ask for up to {lim.max_memory_mb} MB)"
            )
        why = self.cgroups.no_memory if self.cgroups is not None else self.cgroups_unavailable
        return (
            f"MEMORY LIMITED BY ADDRESS SPACE ({lim.memory_mb} MB, RLIMIT_AS), not resident "
            f"memory: no memory cgroup ({why}); runtimes that reserve much (Node.js) cannot start"
        )

    def _limits(
        self, uid: int | None, memory_mb: int | None = None, cgroup: BotCgroup | None = None
    ) -> list[str]:
        """``prlimit`` arguments that set the bot's limits before it is exec'd.

        A wrapper command, not ``preexec_fn``: Python code between fork and exec in a process
        whose other threads use gRPC can leave the child with gRPC's poller in a broken state
        (seen here: "epoll_wait error: Bad file descriptor" and a bot that never starts).
        """
        if not self.rlimits:
            return []
        lim = self.limits
        mb = 1024 * 1024
        as_mb = lim.memory_mb if memory_mb is None else memory_mb
        args = [
            "prlimit",
            # No address-space limit where its memory cgroup limits resident memory: runtimes
            # reserve far more than they use (Node.js: 1 GB or more for its code range alone).
            *([] if cgroup is not None and cgroup.memory is not None else [f"--as={as_mb * mb}"]),
            f"--cpu={lim.cpu_seconds}:{lim.cpu_seconds + 5}",
            f"--fsize={lim.file_size_mb * mb}",
            f"--nofile={lim.open_files}",
            "--core=0",
        ]
        if uid is not None:
            # Counts the processes and threads of the bot's own user: of this bot alone.
            args.append(f"--nproc={lim.pids}")
        return [*args, "--"]

    def start(self, bot: BotManifest, workdir: Path, label: str) -> _ProcessBot:
        """Copy the bot into ``workdir/bot`` and start it serving on ``workdir/sock``."""
        workdir = workdir.resolve()
        self.limits.memory_for(bot)  # a bot asking for more than the cap never starts
        uid = secrets.randbelow(_UID_RANGE[1] - _UID_RANGE[0]) + _UID_RANGE[0]
        uid_or_none = uid if self.own_user else None
        try:
            workdir.mkdir(parents=True, exist_ok=True)
            code = workdir / "bot"
            shutil.rmtree(code, ignore_errors=True)
            with _COPYING_OR_FORKING:
                shutil.copytree(bot.path, code, ignore=shutil.ignore_patterns("__pycache__", ".*"))
            tmp = workdir / "tmp"
            sock_dir = workdir / "sock"
            for d in (tmp, sock_dir):
                d.mkdir(exist_ok=True)
            if uid_or_none is not None:
                _hand_over(workdir, uid)
        except OSError as e:
            raise SandboxError(f"{bot.name}: cannot prepare {workdir}: {e}") from e
        sock = sock_dir / "bot.sock"
        token = secrets.token_hex(16)
        env = {
            "PATH": _PATH,
            "HOME": str(tmp),
            "TMPDIR": str(tmp),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            # glibc reserves 64 MB of address space per malloc arena (one per thread, up to
            # 8 per core): with the address-space limit, a gRPC server's threads would not fit.
            "MALLOC_ARENA_MAX": "2",
            "FLIPFLOP_LISTEN": f"unix:{sock}",
            "FLIPFLOP_SANDBOX": "process",
            "FLIPFLOP_SEAT_TOKEN": token,
        }
        cgroup: BotCgroup | None = None
        if self.cgroups is not None:
            try:
                cgroup = self.cgroups.create(
                    self.limits.cpus, self.limits.pids, memory_mb=self.limits.memory_for(bot)
                )
            except OSError as e:
                raise SandboxError(f"{bot.name}: cannot make its cgroup: {e}") from e
        try:
            with _COPYING_OR_FORKING:  # Popen returns once the child has exec'd
                proc = subprocess.Popen(
                    self._command(bot, sock, uid_or_none, cgroup),
                    cwd=code,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        except OSError as e:
            if cgroup is not None:
                cgroup.remove()
            raise SandboxError(f"{bot.name}: cannot start {bot.command[0]!r}: {e}") from e
        ns = ""
        ns_fd: int | None = None
        if self.netns:
            # The bot's namespace, once unshare has made it (never the arena's own).
            for _ in range(100):
                ns = _net_ns(proc.pid)
                if ns and ns != _net_ns(os.getpid()):
                    with contextlib.suppress(OSError):
                        ns_fd = os.open(f"/proc/{proc.pid}/ns/net", os.O_RDONLY)
                    if ns_fd is not None and _net_ns(proc.pid) != ns:
                        os.close(ns_fd)  # it moved on between the two looks: look again
                        ns_fd = None
                        continue
                    break
                ns = ""
                time.sleep(0.002)
        self._watchdog.started(proc.pid, uid_or_none, ns, cgroup)
        assert proc.stdout is not None
        log_path = workdir / "output.log"
        # Private to the arena: another bot knowing the path must not read this one's output.
        os.close(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        os.chmod(log_path, 0o600)
        log = StderrCapture(proc.stdout, log_path, self.limits.log_bytes)
        running = _ProcessBot(
            self, proc, f"unix:{sock}", workdir, log, uid_or_none, ns, ns_fd, cgroup, token
        )
        log.on_flood(running.stop)
        with self._lock:
            self._running.add(running)
        return running

    def _forget(self, bot: _ProcessBot) -> None:
        with self._lock:
            self._running.discard(bot)

    def close(self) -> None:
        """Stop every bot this sandbox started."""
        with self._lock:
            bots = list(self._running)
        stop_all(bots)
        self._watchdog.close()


def _hand_over(workdir: Path, uid: int) -> None:
    """Give the bot's directories (``bot``, ``tmp``, ``sock``) to its user, private (0700).

    ``workdir`` itself stays the arena's, so the bot cannot touch ``output.log`` (nor swap it
    for a link to a file it may not read). The socket is bound by absolute path, so
    ``workdir`` and every directory above it must be searchable by the bot: those that are
    not (``mkdtemp`` makes them private) get ``o+x`` only, enough to pass, not to list.
    """
    for sub in ("bot", "tmp", "sock"):
        top = workdir / sub
        for root, dirs, files in os.walk(top):
            for name in [*dirs, *files]:
                os.lchown(os.path.join(root, name), uid, uid)
        os.chown(top, uid, uid)
        os.chmod(top, 0o700)
    for d in (workdir, *workdir.parents):
        st = d.stat()
        if st.st_mode & stat.S_IXOTH:
            continue
        if st.st_uid != os.geteuid():
            break  # not ours to open up; the bot will say it cannot bind its socket
        os.chmod(d, stat.S_IMODE(st.st_mode) | stat.S_IXOTH)


if __name__ == "__main__":
    if sys.argv[1:] == ["--watch"]:
        _watch()
    else:
        print("usage: python -m arena.sandbox._process --watch", file=sys.stderr)
        sys.exit(2)
