"""The kernel a bot reaches, and what it sees of the host: the runtime, seccomp and masked paths.

Issue 15, finding 8: under Docker's default profile a bot could set up ``io_uring``, and it saw
the arena's host paths in ``/proc/self/mountinfo`` and the whole machine's load in
``/proc/loadavg``, ``/proc/stat`` and ``/proc/pressure``. ``kernelprobe`` makes the calls a
bot never needs and reads those files in a real match, under ``runc`` (the arena's seccomp
profile and masked paths) and under gVisor's ``runsc``.

The process sandbox has neither a seccomp profile nor its own ``/proc``: its cases are skipped
(what it allows depends on the host's kernel settings, so a strict xfail could not hold).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from arena._errors import SandboxUnavailable
from arena.sandbox._docker import (
    MASKED_PATHS,
    DockerSandbox,
    Runtime,
    choose_runtime,
    seccomp_profile,
)
from flipflop import BotManifest, read_manifest

if TYPE_CHECKING:
    from tests.arena.sandbox.conftest import Arena, Played

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow

ADV = 0
"""The adversary's seat."""
CALLS = ["io_uring_setup", "keyctl", "bpf", "perf_event_open", "unshare", "clone3", "mount"]
"""What ``kernelprobe`` calls (``unshare`` with CLONE_NEWUSER, in a child)."""
REFUSED = {"EPERM", "ENOSYS"}
"""How the arena's profile refuses a call (ENOSYS for clone3, so that glibc falls back)."""
PROCESS = "the process sandbox has no seccomp profile and shows the host's /proc"


def bundled(name: str) -> BotManifest:
    """A bundled bot from ``bots/``."""
    return read_manifest(REPO / "bots" / name)


def runtime_of(arena: Arena) -> Runtime:
    """The runtime the arena's last Docker sandbox ran its bots under."""
    box = arena.sandboxes[-1]
    assert isinstance(box, DockerSandbox)
    return box.runtime


@pytest.fixture(scope="module")
def probed(module_arena: Arena) -> Iterator[tuple[Played, Runtime]]:
    """One real match: ``kernelprobe`` in seat 0, ``random`` and ``greedy`` beside it."""
    bot = module_arena.adversary("kernelprobe")
    played = module_arena.play([bot, module_arena.bot("random"), module_arena.bot("greedy")])
    assert [] == played.faults(ADV), played.logs[ADV][-2000:]
    yield played, runtime_of(module_arena)


@pytest.mark.process_cannot(PROCESS, skip=True)
@pytest.mark.parametrize("call", CALLS)
def test_calls_a_bot_never_needs_never_reach_the_host_kernel(
    kind: str, probed: tuple[Played, Runtime], call: str
) -> None:
    """Under runc the arena's profile refuses each call; under runsc gVisor's kernel answers.

    gVisor implements some of them itself (``io_uring_setup`` and ``unshare`` succeed there,
    inside its Sentry); none reaches the host's kernel, which the bot can tell apart by its
    release. Under runc the call reaches the host's kernel unless the profile refuses it.
    """
    played, runtime = probed
    report = played.report(ADV, f"syscall {call}")
    if runtime is Runtime.RUNSC:
        kernel = played.report(ADV, "kernel")
        assert os.uname().release != kernel["release"], "the bot reached the host's kernel"
        return
    assert report["errno"] in REFUSED, report


@pytest.mark.process_cannot(PROCESS, skip=True)
def test_no_path_of_the_arena_shows_in_mountinfo(
    kind: str, probed: tuple[Played, Runtime], module_arena: Arena
) -> None:
    """``/proc/self/mountinfo`` names no directory of the arena: not its work or output dirs."""
    played, _ = probed
    mountinfo = played.report(ADV, "read /proc/self/mountinfo")["text"]
    assert "/run/flipflop" in mountinfo  # it was read, socket directory and all
    arena_paths = [str(played.workdir.resolve()), str(module_arena.scratch.resolve())]
    assert [] == [p for p in arena_paths if p in mountinfo], mountinfo


@pytest.mark.process_cannot(PROCESS, skip=True)
def test_the_host_load_is_not_shown(kind: str, probed: tuple[Played, Runtime]) -> None:
    """``/proc/loadavg``, ``/proc/stat``, ``/proc/pressure`` and ``/sys/block`` show no host figure.

    Under runc they are masked (read as empty, or an empty directory); gVisor shows its own:
    a load of zero, and its own CPU times.
    """
    played, runtime = probed
    loadavg = played.report(ADV, "read /proc/loadavg")["text"]
    stat = played.report(ADV, "read /proc/stat")["text"]
    assert played.report(ADV, "read /proc/pressure/cpu")["blocked"]
    assert "" == played.report(ADV, "read /sys/block")["text"]
    if runtime is Runtime.RUNSC:
        assert loadavg.startswith("0.00 0.00 0.00 0/0 "), loadavg
        return
    assert ("", "") == (loadavg, stat)


@pytest.mark.process_cannot(PROCESS, skip=True)
def test_python_still_counts_its_cpus(kind: str, probed: tuple[Played, Runtime]) -> None:
    """Masking ``/proc/stat`` leaves ``os.cpu_count()`` working (it reads ``/sys``)."""
    played, _ = probed
    cpus = played.report(ADV, "kernel")["cpus"]
    assert isinstance(cpus, int) and cpus >= 1


@pytest.mark.process_cannot(PROCESS, skip=True)
def test_a_non_root_arena_shows_no_path_of_its_own(kind: str, arena: Arena) -> None:
    """An arena that cannot mount a tmpfs puts sockets in a neutral, private directory.

    As a user in the ``docker`` group, the socket directory is a bind-mounted host directory
    whose path ``mountinfo`` may show: it is ``<tmp>/flipflop-sock-<random>/s``, never a path
    of the arena's work directory, and it is removed with its container.
    """
    arena.non_root = True
    bot = arena.adversary("kernelprobe")
    played = arena.play([bot, arena.bot("random"), arena.bot("greedy")])
    assert [] == played.faults(ADV), played.logs[ADV][-2000:]
    mountinfo = played.report(ADV, "read /proc/self/mountinfo")["text"]
    arena_paths = [str(played.workdir.resolve()), str(arena.scratch.resolve())]
    assert [] == [p for p in arena_paths if p in mountinfo], mountinfo
    sock_lines = [line for line in mountinfo.splitlines() if " /run/flipflop " in line]
    assert 1 == len(sock_lines), mountinfo
    if runtime_of(arena) is Runtime.RUNC:
        assert "/flipflop-sock-" in sock_lines[0].split()[3]  # a neutral, random name
    assert not (played.workdir / "seat0" / "sock").exists()
    names = {line.split()[3] for line in sock_lines}
    tmp = Path(tempfile.gettempdir())
    assert [] == [p for p in tmp.glob("flipflop-sock-*") if p.name in str(names)]


@pytest.mark.process_cannot(PROCESS, skip=True)
def test_each_container_gets_the_profile_and_the_masks(
    kind: str, arena: Arena, tmp_path: Path
) -> None:
    """The container's configuration holds the runtime, the arena's profile and the masks."""
    box = arena.sandbox()
    assert isinstance(box, DockerSandbox)
    bot = box.start(bundled("random"), tmp_path / "seat0", "config")
    try:
        host: dict[str, Any] = bot.container.attrs["HostConfig"]
        assert box.runtime.value == host["Runtime"]
        assert f"seccomp={seccomp_profile()}" in host["SecurityOpt"]
        assert list(MASKED_PATHS) == host["MaskedPaths"]
        assert box.runtime.value in box.isolation
    finally:
        bot.stop()


class _Engine:
    """An engine's ``info()`` with the runtimes given (the real one cannot lose runsc)."""

    def __init__(self, *runtimes: str) -> None:
        self.runtimes = {name: {"path": name} for name in runtimes}

    def info(self) -> dict[str, Any]:
        return {"Runtimes": self.runtimes}


def test_auto_uses_gvisor_when_the_engine_has_it() -> None:
    """``auto`` is runsc where the engine lists it, and the note says gVisor."""
    runtime, note = choose_runtime(_Engine("runc", "runsc"), "auto")
    assert (Runtime.RUNSC, "runtime: gVisor (runsc)") == (runtime, note)


def test_auto_without_gvisor_says_so_in_words() -> None:
    """Without runsc, ``auto`` falls back to runc and the ``sandbox:`` line says so."""
    runtime, note = choose_runtime(_Engine("runc"), "auto")
    assert Runtime.RUNC is runtime
    assert (
        "gVisor (runsc) not installed: bots run under runc with the arena's seccomp profile; "
        "see README"
    ) == note


def test_runsc_asked_for_and_missing_is_an_error() -> None:
    """``--runtime runsc`` on an engine without it is refused, saying how to get it."""
    with pytest.raises(SandboxUnavailable, match="no runsc runtime"):
        choose_runtime(_Engine("runc"), "runsc")


def test_runc_asked_for_is_runc_even_with_gvisor() -> None:
    """``--runtime runc`` is runc even where gVisor is installed."""
    assert Runtime.RUNC is choose_runtime(_Engine("runc", "runsc"), "runc")[0]


def test_the_profile_refuses_what_the_issue_lists() -> None:
    """The profile names each call of issue 15's list, refused with EPERM (clone3: ENOSYS)."""
    profile = json.loads(seccomp_profile())
    assert "SCMP_ACT_ALLOW" == profile["defaultAction"]
    refused = {
        name: rule["errnoRet"]
        for rule in profile["syscalls"]
        if "args" not in rule
        for name in rule["names"]
    }
    listed = [
        *("io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key"),
        *("request_key", "bpf", "perf_event_open", "unshare", "setns", "mount", "umount2"),
        *("pivot_root", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick"),
        *("userfaultfd", "ptrace", "process_vm_readv", "process_vm_writev", "kexec_load"),
        *("kexec_file_load", "init_module", "finit_module", "delete_module", "swapon"),
        *("swapoff", "reboot", "acct", "clock_settime", "settimeofday", "adjtimex"),
        *("name_to_handle_at", "open_by_handle_at", "syslog", "quotactl", "fanotify_init"),
    ]
    assert {name: 1 for name in listed} == {name: refused.get(name) for name in listed}
    assert 38 == refused["clone3"]
