"""What every container the arena starts shares, a bot's (``_docker``) or a build's (``images``).

Both run code of the bot's author: a bot's container its program, a build's container its
``Makefile`` or Go sources (issue 24, finding 7). So both run under the same OCI runtime
(:class:`Runtime`: gVisor's ``runsc`` when the arena uses it), with the arena's seccomp
profile (:func:`seccomp_profile`) and a pids limit sized for that runtime
(:func:`host_pids_limit`), and both carry the labels by which a container whose arena is gone
is found and removed (:func:`owner_labels`, ``_docker.reap_orphans``).
"""

from __future__ import annotations

import functools
import json
import os
import socket
from enum import Enum
from importlib import resources

from arena.sandbox._base import process_start

__all__ = [
    "LABEL",
    "RUNTIMES",
    "Runtime",
    "host_pids_limit",
    "owner_labels",
    "seccomp_profile",
]

LABEL = "flipflop.arena"
"""Every container the arena starts carries ``flipflop.arena=1``."""


class Runtime(Enum):
    """The OCI runtime a bot's container runs under (``arena run --runtime``), and its build."""

    RUNC = "runc"
    """Docker's default: the bot's system calls reach the host's kernel, past the arena's
    seccomp profile; ``_docker.MASKED_PATHS`` hide what ``/proc`` and ``/sys`` show of the
    host."""
    RUNSC = "runsc"
    """gVisor: a kernel in user space (the Sentry) answers the bot's system calls, so the
    host's kernel sees only the Sentry's, and ``/proc`` and ``/sys`` are the Sentry's own."""


RUNTIMES = ("auto", Runtime.RUNSC.value, Runtime.RUNC.value)
"""What ``--runtime`` takes: ``auto`` is ``runsc`` when the engine has it, else ``runc``."""

_RUNSC_HOST_PIDS_PER_TASK = 16
_RUNSC_HOST_PIDS_BASE = 256


def host_pids_limit(runtime: Runtime, pids: int) -> int:
    """The container's pids cgroup limit for a bot allowed ``pids`` processes and threads.

    Under runc the cgroup holds the bot's own processes and threads: it is the limit. Under
    runsc it holds gVisor's own: the Sentry's threads, the gofer, and with ``--platform=ptrace``
    a stub process per address space of the bot, with a traced thread in it for each Sentry
    thread that ran it. Measured on the 2-core test machine: 38 host pids for an idle Python
    bot, 49 with 64 threads, 375 with 64 processes. There the limit is ``RLIMIT_NPROC``, in
    gVisor's kernel (``DockerSandbox._nproc``), and the cgroup is only a backstop for
    the Sentry, sized so that the bot meets its own limit first on bigger machines too (more
    Sentry threads, more stub threads per process); a 64-pids cgroup left a Python gRPC bot a
    handful of forks, refused to gVisor rather than to the bot.
    """
    if runtime is Runtime.RUNSC:
        return _RUNSC_HOST_PIDS_BASE + _RUNSC_HOST_PIDS_PER_TASK * pids
    return pids


@functools.cache
def seccomp_profile() -> str:
    """The arena's seccomp profile (``seccomp.json`` beside this module), as Docker takes it.

    Every container gets it instead of Docker's default, which allows ``io_uring`` (issue 15,
    finding 8). It is a denylist over "allow": every capability is dropped and
    ``no-new-privileges`` is set, so what the kernel refuses an unprivileged process already
    needs no rule; it denies the calls a bot never needs whose kernel code an unprivileged
    process can reach. An allowlist would be tighter, and would break bots in other languages
    on every new system call their runtimes adopt.
    """
    text = resources.files("arena.sandbox").joinpath("seccomp.json").read_text(encoding="utf-8")
    return json.dumps(json.loads(text), separators=(",", ":"))


def owner_labels() -> dict[str, str]:
    """The labels that say which arena process started a container, on which host.

    ``_docker.reap_orphans`` removes the containers whose process is gone: a bot's left by an
    arena killed mid-match, a build's left by one killed mid-build.
    """
    pid = os.getpid()
    return {
        LABEL: "1",
        "flipflop.pid": str(pid),
        "flipflop.pidstart": process_start(pid),
        "flipflop.host": socket.gethostname(),
    }
