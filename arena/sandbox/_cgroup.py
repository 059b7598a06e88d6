"""A cgroup per bot instance of the process sandbox: one CPU quota, one pids limit.

Every process a bot starts, including children that leave its process group and session
with ``setsid``, stays in the cgroup its first process entered: so the bot and all its
children share one CFS quota of ``limits.cpus`` CPUs and one limit of ``limits.pids``
processes and threads, and stopping the bot kills exactly the processes the cgroup lists.

Layout (the arena runs as root; without root there is no cgroup, and the ``sandbox:`` line
says ``NO CPU QUOTA``):

- cgroup v1: ``<mount of cpu>/<name>`` (``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``), the
  same name under the ``cpuacct`` hierarchy for accounting when it is mounted apart
  (``cpuacct.usage``), and under the ``pids`` hierarchy (``pids.max``);
- cgroup v2: ``<mount>/<name>`` with ``cpu.max`` and ``pids.max``, the ``cpu`` (and ``pids``)
  controller enabled in the ``cgroup.subtree_control`` of the mount's root; accounting from
  ``cpu.stat`` (``usage_usec``);
- memory, where a controller is there: the same name under the v1 ``memory`` hierarchy
  (``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``), or ``memory.max`` and
  ``memory.swap.max`` = 0 on v2: resident memory with no swap, instead of an address-space
  limit; OOM kills are counted (``oom_kill``) so a bot killed for memory is reported so.

Each bot's cgroup is a child of the hierarchy's root, not of a common parent: the scheduler
weighs a cgroup like one process against its siblings, so under one parent all the bots
together would weigh as one process against the rest of the machine, and a bot thinking on a
loaded machine would get less than it did as a plain process. At the root, a bot weighs as
one process, however many it starts.

The directories are made by root, ``0755``, and every file in them is root's: a bot, which
runs as a user of its own, can neither move itself out nor change its quota.

A bot enters its cgroup before any of its code runs, without Python code between fork and
exec (see ``_process.py`` on why): the command starts with :data:`ENTER`, a ``/bin/sh`` that
writes its own pid into each directory's ``cgroup.procs`` and then execs the rest (``prlimit``,
``unshare``, ``setpriv``, the bot), all inheriting the cgroup. If it cannot join, it exits
with 126 and a line in the bot's log: the bot never runs outside its cgroup.

``<name>`` is ``ffa-<pid namespace>-<arena pid>-<arena start time>-<random>``: a new arena
removes the cgroups of arenas that are gone (same pid namespace, and that pid is gone or is
another process now), never those of an arena that still runs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from arena.sandbox._base import process_gone, process_start

__all__ = [
    "ENTER",
    "BotCgroup",
    "CgroupTree",
    "acct_dir_of",
    "cgroup_tree",
    "decode",
    "remove_cgroup",
    "usage_ns",
]

PERIOD_US = 100_000
"""The CFS period: the quota is ``cpus`` times this, per period."""

ENTER = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do '
    'echo $$ > "$1/cgroup.procs" || { echo "arena: cannot enter the cgroup $1" >&2; exit 126; }; '
    'n=$((n - 1)); shift; done; exec /usr/bin/env -u PWD -u OLDPWD -u SHLVL -u _ "$@"'
)
"""``/bin/sh -c ENTER sh <n> <dir>... <command>...``: join ``n`` cgroups, then exec.

Through ``/usr/bin/env``, which drops the variables a shell adds (``PWD``, and bash's
``SHLVL`` and ``_``): the bot's environment stays exactly the arena's scrubbed one.
"""

_NAME = re.compile(r"^ffa-(\d+)-(\d+)-(\d+)-[0-9a-z]+$")


def _read(path: Path) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


def _write(path: Path, text: str) -> None:
    # One write() per value: the kernel takes a cgroup file's value from a single write.
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _pid_ns() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _prefix() -> str:
    """``ffa-<pid namespace>-<pid>-<start time>-``: the names of this arena's cgroups."""
    pid = os.getpid()
    return f"ffa-{_pid_ns()}-{pid}-{process_start(pid) or 0}-"


class BotCgroup:
    """One bot instance's cgroup: its directory in each hierarchy used (one on v2).

    Attributes:
        name: the cgroup's name (the last component of each directory).
        dirs: its directories; the bot's first process writes its pid into each.
        created_at: ``time.monotonic()`` when it was made.
        emptied_at: ``time.monotonic()`` when :meth:`remove` found it empty; None before.
        final_usage_s: CPU seconds it used in all, read once it was empty, just before it was
            removed (so its processes used at most ``cpus`` times ``emptied_at - created_at``).
    """

    def __init__(
        self, name: str, dirs: tuple[Path, ...], acct: Path | None, memory: Path | None = None
    ) -> None:
        self.name = name
        self.dirs = dirs
        self._acct = acct
        self.memory = memory
        """Its directory with the memory limit (one of ``dirs``); None: no memory cgroup."""
        self.created_at = time.monotonic()
        self.emptied_at: float | None = None
        self.final_usage_s: float | None = None
        self.final_oom_kills: int | None = None
        """The OOM kills counted in it, read just before it was removed."""

    def command(self) -> list[str]:
        """The wrapper to put in front of the bot's command: joins the cgroup, then execs."""
        return ["/bin/sh", "-c", ENTER, "sh", str(len(self.dirs)), *map(str, self.dirs)]

    def pids(self) -> set[int]:
        """The processes in it now (of any of its directories)."""
        return _procs(self.dirs)

    def usage_s(self) -> float | None:
        """CPU seconds used by all its processes so far (alive or gone); None if not known.

        ``cpuacct.usage`` (v1, nanoseconds) or ``cpu.stat``'s ``usage_usec`` (v2). After
        :meth:`remove`, the figure read just before the directory went.
        """
        ns = self.usage_ns()
        return self.final_usage_s if ns is None else ns / 1e9

    def usage_ns(self) -> int | None:
        """CPU nanoseconds used by all its processes and threads so far; None if not known.

        One small file read (the runner's clock reads it before and after every decision).
        """
        return None if self._acct is None else usage_ns(self._acct)

    def kill(self, timeout: float = 10.0) -> bool:
        """SIGKILL every process in it until none is left; True if it is empty."""
        return _kill(self.dirs, timeout)

    def remove(self, timeout: float = 10.0) -> bool:
        """Kill what is in it, wait until it is empty, remove its directories.

        True if every directory is gone. Safe to call twice.
        """
        empty = self.kill(timeout)
        if empty and self.emptied_at is None:
            self.emptied_at = time.monotonic()
            usage = self.usage_s()
            if usage is not None:
                self.final_usage_s = usage
        if self.final_oom_kills is None:
            self.final_oom_kills = self.oom_kills()
        return _rmdirs(self.dirs, timeout) and empty

    def oom_kills(self) -> int:
        """How many of its processes the kernel killed for its memory limit (0: none, unknown).

        ``oom_kill`` of ``memory.oom_control`` (v1, Linux 4.13+) or of ``memory.events``
        (v2); after :meth:`remove`, the figure read just before the directory went.
        """
        if self.memory is None:
            return 0
        for name in ("memory.oom_control", "memory.events"):
            with contextlib.suppress(OSError, ValueError):
                for line in _read(self.memory / name).splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return self.final_oom_kills or 0

    def encode(self) -> str:
        """Its directories in one word without spaces (for the watchdog's line protocol)."""
        return ",".join(quote(str(d), safe="/") for d in self.dirs)


def usage_ns(acct: Path) -> int | None:
    """CPU nanoseconds the cgroup ``acct`` has used (all its processes, alive or gone).

    ``cpuacct.usage`` (v1, nanoseconds) or ``cpu.stat``'s ``usage_usec`` (v2); None when
    neither can be read (the cgroup is gone, or holds neither file).
    """
    try:
        with open(acct / "cpuacct.usage", "rb") as f:
            return int(f.read())
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        return None
    try:
        for line in _read(acct / "cpu.stat").splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) * 1000
    except (OSError, ValueError):
        pass
    return None


def acct_dir_of(pid: int) -> Path | None:
    """The directory of the cgroup that accounts the CPU of process ``pid``; None: unknown.

    On v1 its ``cpuacct`` cgroup, on v2 its (only) cgroup, each under the mount point where
    this process sees that hierarchy. How a container's CPU is found: its first process's
    cgroup is the container's, and every process it starts stays in it (runc and runsc both
    put the whole container, or gVisor's whole sandbox, in it).
    """
    try:
        lines = _read(Path(f"/proc/{pid}/cgroup")).splitlines()
    except OSError:
        return None
    mounts = _mounts()
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        names = set(controllers.split(","))
        for point, kind, options in mounts:
            v1 = kind == "cgroup" and "cpuacct" in names and "cpuacct" in options
            v2 = kind == "cgroup2" and controllers == "" and not _has_v1_cpuacct(mounts)
            if v1 or v2:
                found = Path(point) / path.lstrip("/")
                if usage_ns(found) is not None:
                    return found
    return None


def _has_v1_cpuacct(mounts: list[tuple[str, str, set[str]]]) -> bool:
    return any(kind == "cgroup" and "cpuacct" in options for _, kind, options in mounts)


def decode(word: str) -> tuple[Path, ...]:
    """The directories :meth:`BotCgroup.encode` wrote."""
    return tuple(Path(unquote(part)) for part in word.split(",") if part)


def remove_cgroup(dirs: Iterable[Path], timeout: float = 10.0) -> bool:
    """Kill what is in a bot's cgroup and remove its directories (the watchdog's way)."""
    dirs = tuple(dirs)
    empty = _kill(dirs, timeout)
    return _rmdirs(dirs, timeout) and empty


def _procs(dirs: Iterable[Path]) -> set[int]:
    out: set[int] = set()
    for d in dirs:
        with contextlib.suppress(OSError, ValueError):
            out.update(int(p) for p in _read(d / "cgroup.procs").split())
    return out


def _ours(dirs: Iterable[Path]) -> tuple[Path, ...]:
    """Only bots' cgroups (by name): never a hierarchy's root or anyone else's cgroup."""
    return tuple(d for d in dirs if _NAME.match(d.name))


def _kill(dirs: tuple[Path, ...], timeout: float) -> bool:
    """SIGKILL every process listed in ``dirs``, again until none is left (forks race us)."""
    dirs = _ours(dirs)
    deadline = time.monotonic() + timeout
    me = os.getpid()
    while True:
        pids = _procs(dirs) - {me}
        if not pids:
            return True
        for d in dirs:
            # v2 (Linux 5.14+): the kernel kills the whole cgroup at once, forks included.
            with contextlib.suppress(OSError):
                _write(d / "cgroup.kill", "1")
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def _rmdirs(dirs: tuple[Path, ...], timeout: float) -> bool:
    """Remove each directory; retry while the kernel still calls it busy."""
    deadline = time.monotonic() + timeout
    left = list(_ours(dirs))
    while left:
        for d in list(left):
            try:
                os.rmdir(d)
            except FileNotFoundError:
                pass
            except OSError:
                continue  # EBUSY: a process is still leaving it
            left.remove(d)
        if not left or time.monotonic() > deadline:
            break
        _kill(tuple(left), 0)
        time.sleep(0.01)
    return not left


@dataclass(frozen=True)
class CgroupTree:
    """Where this arena makes its bots' cgroups.

    Attributes:
        version: 1 or 2.
        roots: the root directory of each hierarchy used (one on v2): a bot's cgroup is
            ``root/<name>`` in each.
        cpu: the one of ``roots`` where the CPU quota is set; None: no quota (tests only).
        acct: the one where CPU usage is read; None: not known.
        pids: the one where ``pids.max`` is set; None: no pids controller.
        memory: the one where the memory limit is set (resident memory, not address space);
            None: no memory controller (``no_memory`` says why).
        no_swap: the memory limit covers swap too (``memory.memsw.limit_in_bytes`` on v1,
            ``memory.swap.max`` = 0 on v2), so a bot cannot escape it into swap.
        no_memory: why there is no memory controller ("" when there is one).
    """

    version: int
    roots: tuple[Path, ...]
    cpu: Path | None
    acct: Path | None
    pids: Path | None
    memory: Path | None = None
    no_swap: bool = False
    no_memory: str = ""

    def describe(self, cpus: float, pids: int) -> str:
        """What it enforces, for the ``sandbox:`` line."""
        what = []
        if self.cpu is not None:
            what.append(f"CPU quota of {cpus:g} CPU")
        if self.pids is not None:
            what.append(f"{pids} processes")
        text = " and ".join(what) or "no limit"
        text = f"{text} per bot (cgroup v{self.version})"
        return text if self.cpu is not None else f"NO CPU QUOTA: no cpu controller; {text}"

    def create(
        self, cpus: float, pids: int, tag: str = "", memory_mb: int | None = None
    ) -> BotCgroup:
        """A new cgroup with a quota of ``cpus`` CPUs and ``pids`` processes and threads.

        With ``memory_mb`` (and a memory controller): a limit of that much resident memory
        (swap included where the kernel accounts it, see :func:`_limit_memory`).

        Raises:
            OSError: it could not be made (what was made is removed again).
        """
        name = _prefix() + (tag or secrets.token_hex(6))
        dirs = tuple(p / name for p in self.roots)
        made: list[Path] = []
        try:
            for d in dirs:
                os.mkdir(d, 0o755)
                made.append(d)
                os.chmod(d, 0o755)  # whatever the umask: root's alone
            if self.cpu is not None:
                quota = max(1000, round(cpus * PERIOD_US))
                d = self.cpu / name
                if self.version == 1:
                    _write(d / "cpu.cfs_period_us", str(PERIOD_US))
                    _write(d / "cpu.cfs_quota_us", str(quota))
                else:
                    _write(d / "cpu.max", f"{quota} {PERIOD_US}")
            if self.pids is not None:
                _write(self.pids / name / "pids.max", str(max(1, pids)))
            if self.memory is not None and memory_mb is not None:
                _limit_memory(self.memory / name, self.version, memory_mb)
        except OSError:
            _rmdirs(tuple(made), 1.0)
            raise
        return BotCgroup(
            name,
            dirs,
            None if self.acct is None else self.acct / name,
            None if self.memory is None else self.memory / name,
        )

    def reap_stale(self) -> int:
        """Remove the cgroups of arenas that are gone (and kill what is left in them).

        An arena is gone when no process has its pid any more, or the one that has it started
        at another time; only arenas of this pid namespace are judged.

        Returns:
            how many cgroups were removed.
        """
        ns = str(_pid_ns())
        stale: set[str] = set()
        for root in self.roots:
            with contextlib.suppress(OSError):
                for entry in os.scandir(root):
                    m = _NAME.match(entry.name)
                    if m is None or not entry.is_dir(follow_symlinks=False):
                        continue
                    if m[1] == ns and process_gone(int(m[2]), m[3]):
                        stale.add(entry.name)
        for name in stale:
            remove_cgroup((p / name for p in self.roots), timeout=5.0)
        return len(stale)


# ---------------------------------------------------------------------------------- finding


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, type, options) of every cgroup file system mounted."""
    out = []
    with contextlib.suppress(OSError):
        for line in _read(Path("/proc/self/mounts")).splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
                # The mount point is octal-escaped (\040 for a space).
                point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[1])
                out.append((point, fields[2], set(fields[3].split(","))))
    return out


def _v1_tree(mounts: list[tuple[str, str, set[str]]]) -> CgroupTree | str | None:
    """The tree on v1 hierarchies; None if no v1 hierarchy has the cpu controller."""

    def mount_of(controller: str) -> Path | None:
        for point, kind, options in mounts:
            if kind == "cgroup" and controller in options:
                return Path(point)
        return None

    cpu = mount_of("cpu")
    if cpu is None:
        return None
    acct = mount_of("cpuacct")
    pids = mount_of("pids")
    if not (cpu / "cpu.cfs_quota_us").exists():
        return f"no CFS bandwidth control in {cpu} (cpu.cfs_quota_us is missing)"
    return CgroupTree(
        version=1,
        roots=tuple(dict.fromkeys(x for x in (cpu, acct, pids) if x)),
        cpu=cpu,
        acct=acct,
        pids=pids,
    )


def _enable(directory: Path, controllers: list[str]) -> None:
    """Enable ``controllers`` for the children of ``directory`` (v2)."""
    enabled = _read(directory / "cgroup.subtree_control").split()
    for c in controllers:
        if c not in enabled:
            _write(directory / "cgroup.subtree_control", f"+{c}")


def _v2_tree(mount: Path, need_cpu: bool = True) -> CgroupTree | str:
    """The tree on the v2 hierarchy at ``mount``, or why not.

    ``need_cpu=False`` (tests only) accepts a hierarchy without the cpu controller: cgroups
    that join, account (``cpu.stat`` is always there), kill and remove, with no quota.
    """
    try:
        available = _read(mount / "cgroup.controllers").split()
    except OSError as e:
        return f"cannot read {mount / 'cgroup.controllers'}: {e.strerror or e}"
    if need_cpu and "cpu" not in available:
        return f"the cpu controller is not available in the cgroup v2 hierarchy at {mount}"
    wanted: list[str] = [c for c in ("cpu", "pids") if c in available]
    try:
        _enable(mount, wanted)
    except OSError as e:
        what = "/".join(wanted)
        return f"cannot enable the {what} controllers in {mount}/cgroup.subtree_control: {e}"
    return CgroupTree(
        version=2,
        roots=(mount,),
        cpu=mount if "cpu" in wanted else None,
        acct=mount,
        pids=mount if "pids" in wanted else None,
    )


def _find() -> CgroupTree | str:
    if os.geteuid() != 0:
        return "the arena does not run as root"
    for tool in ("/bin/sh", "/usr/bin/env"):
        if not os.path.exists(tool):
            return f"{tool} is missing"
    mounts = _mounts()
    tree = _v1_tree(mounts)
    if tree is None:
        v2 = [Path(point) for point, kind, _ in mounts if kind == "cgroup2"]
        if not v2:
            return "no cgroup hierarchy with the cpu controller is mounted"
        tree = _v2_tree(v2[0])
    if isinstance(tree, str):
        return tree
    tree = _with_memory(tree, mounts)
    # A real cgroup, made and removed once: the quota is accepted here.
    try:
        probe = tree.create(1.0, 64, tag=f"probe{secrets.token_hex(4)}")
    except OSError as e:
        return f"cannot make a cgroup in {tree.roots[0]}: {e.strerror or e}"
    probe.remove(timeout=1.0)
    return tree


def _limit_memory(directory: Path, version: int, memory_mb: int) -> None:
    """Limit the cgroup at ``directory`` to ``memory_mb`` MB of memory, swap included.

    v1: ``memory.limit_in_bytes``, then ``memory.memsw.limit_in_bytes`` (memory + swap; only
    where the kernel accounts swap), which may never be below the first. v2: ``memory.max``,
    ``memory.swap.max`` = 0, and ``memory.oom.group`` = 1 (an OOM kill takes the whole bot,
    not one of its processes).
    """
    limit = str(memory_mb * 1024 * 1024)
    if version == 1:
        _write(directory / "memory.limit_in_bytes", limit)
        if (directory / "memory.memsw.limit_in_bytes").exists():
            _write(directory / "memory.memsw.limit_in_bytes", limit)
        return
    _write(directory / "memory.max", limit)
    if (directory / "memory.swap.max").exists():
        _write(directory / "memory.swap.max", "0")
    with contextlib.suppress(OSError):
        _write(directory / "memory.oom.group", "1")


def _with_memory(tree: CgroupTree, mounts: list[tuple[str, str, set[str]]]) -> CgroupTree:
    """``tree`` with the memory controller where it can limit a bot's memory, else why not.

    Probed once: a cgroup made in the memory hierarchy with a limit, then removed.
    """

    def without(why: str) -> CgroupTree:
        return CgroupTree(tree.version, tree.roots, tree.cpu, tree.acct, tree.pids, no_memory=why)

    if tree.version == 1:
        found = [Path(p) for p, kind, options in mounts if kind == "cgroup" and "memory" in options]
        if not found:
            return without("no cgroup v1 hierarchy with the memory controller is mounted")
        root = found[0]
        no_swap = (root / "memory.memsw.limit_in_bytes").exists()
    else:
        root = tree.roots[0]
        try:
            if "memory" not in _read(root / "cgroup.controllers").split():
                return without(f"the memory controller is not available in {root}")
            _enable(root, ["memory"])
        except OSError as e:
            return without(f"cannot enable the memory controller in {root}: {e.strerror or e}")
        no_swap = True  # memory.swap.max = 0, or no swap accounting and so no swap to use
    probe = root / f"{_prefix()}mprobe{secrets.token_hex(4)}"
    try:
        os.mkdir(probe, 0o755)
        try:
            _limit_memory(probe, tree.version, 64)
        finally:
            _rmdirs((probe,), 1.0)
    except OSError as e:
        return without(f"cannot limit memory in {root}: {e.strerror or e}")
    roots = tree.roots if root in tree.roots else (*tree.roots, root)
    return CgroupTree(tree.version, roots, tree.cpu, tree.acct, tree.pids, root, no_swap)


@functools.cache
def cgroup_tree() -> CgroupTree | str:
    """Where this arena makes its bots' cgroups, or why it cannot (checked once)."""
    return _find()
