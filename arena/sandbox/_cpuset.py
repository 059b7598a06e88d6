"""CPUs of its own for each container, when the machine has enough of them.

A container pinned to CPUs no other bot's container uses keeps its caches warm and does not
queue behind a neighbour on a core. The rule (docs/sandbox.md): a container gets
``ceil(limits.cpus)`` CPUs of its own while the CPUs pinned in all stay within half of the
CPUs the arena may use, so the other half is left to the arena, the Docker engine and its
shims; a container started past that gets no cpuset and may run anywhere. So a machine with
at least twice as many CPUs as containers running at once pins every one. A machine with
fewer than :data:`MIN_CPUS` pins none: there, one bot of a table would get a CPU to itself
while the others share what is left. What a bot is charged is its own CPU time either way
(docs/arena.md, "Time"), pinned or not: pinning spares it caches and run-queue waits.

A pin is held by a key (the container's seat token) until the key, once seen live, is no
longer live (:meth:`CpuPinning.keep_only`); a pin taken for a container that never came to be
is released once it is older than :data:`PENDING_S`.
"""

from __future__ import annotations

import math
import os
import threading
import time
import weakref
from collections.abc import Iterable, Sequence

__all__ = [
    "MIN_CPUS",
    "PENDING_S",
    "CpuPinning",
    "cpuset_text",
    "pinning_for",
    "usable_cpus",
]

MIN_CPUS = 4
"""The fewest usable CPUs with which containers are pinned at all."""
PENDING_S = 120.0
"""How long a pin is kept for a key never seen live: a container being created."""


def usable_cpus() -> tuple[int, ...]:
    """The CPUs this process may run on (its affinity), in order."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return tuple(range(os.cpu_count() or 1))


class CpuPinning:
    """Hands out CPUs of their own to containers (see the module docstring).

    Args:
        cpus: the CPUs the arena may use.
        cpus_per_bot: each container's CPU limit (``limits.cpus``): it gets the ceiling.
    """

    def __init__(self, cpus: Sequence[int], cpus_per_bot: float) -> None:
        self.cpus = tuple(cpus)
        self.per_bot = max(1, math.ceil(cpus_per_bot))
        self.pinnable = len(self.cpus) // 2 if len(self.cpus) >= MIN_CPUS else 0
        """How many CPUs may be pinned in all: half of them (none on a small machine)."""
        self._held: dict[str, tuple[tuple[int, ...], float]] = {}
        self._seen: set[str] = set()  # keys seen live: released as soon as they are not
        self._lock = threading.Lock()

    def take(self, key: str, live: Iterable[str] = ()) -> tuple[int, ...]:
        """CPUs of its own for the container ``key``; () when there are not enough to spare.

        ``live``: the keys of the containers still running; pins of others are released
        first (:meth:`keep_only`).
        """
        with self._lock:
            self._keep_only(set(live))
            busy = {c for cpus, _ in self._held.values() for c in cpus}
            if len(busy) + self.per_bot > self.pinnable:
                return ()
            # From the top: CPU 0 takes most of the host's own interrupts and daemons.
            free = [c for c in reversed(self.cpus) if c not in busy][: self.per_bot]
            pinned = tuple(sorted(free))
            self._held[key] = (pinned, time.monotonic())
            return pinned

    def keep_only(self, live: Iterable[str]) -> None:
        """Release the pins of keys not in ``live``.

        At once if the key was seen live before, else once older than :data:`PENDING_S` (its
        container may still be being created).
        """
        with self._lock:
            self._keep_only(set(live))

    def _keep_only(self, live: set[str]) -> None:
        now = time.monotonic()
        for key, (_, at) in list(self._held.items()):
            if key in live:
                self._seen.add(key)
            elif key in self._seen or now - at > PENDING_S:
                del self._held[key]
                self._seen.discard(key)

    def release(self, key: str) -> None:
        """Give back ``key``'s CPUs now."""
        with self._lock:
            self._held.pop(key, None)
            self._seen.discard(key)

    def held(self) -> dict[str, tuple[int, ...]]:
        """Who holds which CPUs (for tests and diagnostics)."""
        with self._lock:
            return {k: cpus for k, (cpus, _) in self._held.items()}


def cpuset_text(cpus: Sequence[int]) -> str:
    """Docker's ``--cpuset-cpus`` value for ``cpus`` (``"3"``, ``"2,3"``)."""
    return ",".join(str(c) for c in cpus)


_BY_OWNER: weakref.WeakKeyDictionary[object, CpuPinning] = weakref.WeakKeyDictionary()
_BY_OWNER_LOCK = threading.Lock()


def pinning_for(owner: object, cpus_per_bot: float) -> CpuPinning:
    """The one :class:`CpuPinning` of ``owner`` (a sandbox), over :func:`usable_cpus`."""
    with _BY_OWNER_LOCK:
        pinning = _BY_OWNER.get(owner)
        if pinning is None:
            pinning = _BY_OWNER[owner] = CpuPinning(usable_cpus(), cpus_per_bot)
        return pinning
