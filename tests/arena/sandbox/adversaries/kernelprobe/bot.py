"""Adversary: probes the kernel surface of its sandbox.

On its first decision it makes the system calls a bot never needs, through ``syscall(2)``
with harmless arguments (``io_uring_setup``, ``keyctl``, ``bpf``, ``perf_event_open``,
``unshare(CLONE_NEWUSER)`` in a child, ``clone3``, ``mount``), then reads what a container
may show of the host: ``/proc/self/mountinfo`` (host paths), ``/proc/loadavg``,
``/proc/stat``, ``/proc/pressure/cpu`` (the neighbours' load) and ``/sys/block`` (the host's
disks). Each attempt is one ``ATTACK`` line on stderr; what it read is reported whole (none
of it is a secret: the test looks in it for the arena's paths). Then it plays the default.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import subprocess
import sys
from collections.abc import Sequence

from flipflop import Action, Bot, Observation, serve

# System call numbers; the tests run on these two.
NUMBERS = {
    "x86_64": {
        "io_uring_setup": 425,
        "keyctl": 250,
        "bpf": 321,
        "perf_event_open": 298,
        "unshare": 272,
        "clone3": 435,
        "mount": 165,
    },
    "aarch64": {
        "io_uring_setup": 425,
        "keyctl": 219,
        "bpf": 280,
        "perf_event_open": 241,
        "unshare": 97,
        "clone3": 435,
        "mount": 40,
    },
}
CLONE_NEWUSER = 0x10000000
KEYCTL_GET_KEYRING_ID = 0
KEY_SPEC_SESSION_KEYRING = -3
BPF_MAP_CREATE = 0
UNSHARE_CHILD = "--unshare-child"

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def report(attack: str, blocked: bool, detail: str = "", **extra: object) -> None:
    """One line on stderr saying what was tried and what happened."""
    line = {"attack": attack, "blocked": blocked, "detail": detail, **extra}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


def call(name: str, *args: int) -> tuple[int, str]:
    """``syscall(name, *args)``: its return value and errno's name ("" on success)."""
    number = NUMBERS[platform.machine()][name]
    ctypes.set_errno(0)
    result = _libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
    code = ctypes.get_errno() if result < 0 else 0
    return int(result), errno.errorcode.get(code, str(code)) if code else ""


def try_call(name: str, *args: int) -> None:
    """Make one system call and report it; a descriptor it gave is closed."""
    result, err = call(name, *args)
    if not err and result > 2 and name != "keyctl":
        os.close(result)
    report(f"syscall {name}", bool(err), err or f"returned {result}", errno=err)


def try_unshare() -> None:
    """``unshare(CLONE_NEWUSER)`` in a new process, so that a success changes nothing here.

    A new interpreter rather than ``fork()``: a forked child of a gRPC server is not safe.
    """
    done = subprocess.run(
        [sys.executable, __file__, UNSHARE_CHILD],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    try:
        result, err = json.loads(done.stdout)
    except ValueError:
        result, err = done.returncode, f"child failed: {done.stderr[-200:]}"
    report("syscall unshare", bool(err), err or f"returned {result}", errno=err)


def read(path: str) -> None:
    """Read a file (list a directory); report what it holds."""
    try:
        if os.path.isdir(path):
            text = "\n".join(sorted(os.listdir(path)))
        else:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read(16384)
    except OSError as e:
        report(f"read {path}", True, f"{type(e).__name__}: {e}", text="")
        return
    report(f"read {path}", not text.strip(), "read", text=text)


def attack() -> None:
    """Every attempt, each reported."""
    buffer = ctypes.create_string_buffer(256)
    address = ctypes.addressof(buffer)
    try_call("io_uring_setup", 4, address)
    try_call("keyctl", KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)
    try_call("bpf", BPF_MAP_CREATE, address, 64)
    try_call("perf_event_open", address, 0, -1, -1, 0)
    try_unshare()
    try_call("clone3", 0, 0)
    try_call("mount", 0, 0, 0, 0, 0)
    for path in (
        "/proc/self/mountinfo",
        "/proc/loadavg",
        "/proc/stat",
        "/proc/pressure/cpu",
        "/sys/block",
    ):
        read(path)
    report("kernel", False, "uname", release=os.uname().release, cpus=os.cpu_count())
    print("ATTACKS DONE", file=sys.stderr, flush=True)


class KernelProbe(Bot):
    """Plays the default game after its attack on the first decision."""

    name = "kernelprobe"
    version = "1.0.0"
    tried = False

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Attack once, then play the default."""
        if not self.tried:
            self.tried = True
            attack()
        return super().start_turn(obs, legal)


if __name__ == "__main__":
    if sys.argv[1:] == [UNSHARE_CHILD]:
        print(json.dumps(call("unshare", CLONE_NEWUSER)))
    else:
        serve(KernelProbe())
