"""Sandboxes: start a bot, hand the runner a gRPC endpoint, always clean up.

``choose_sandbox("auto" | "docker" | "process")`` returns one; the runner does not care which.
"""

from __future__ import annotations

from arena._errors import SandboxUnavailable
from arena.sandbox._base import RunningBot, Sandbox, SandboxKind, SandboxLimits, StderrCapture
from arena.sandbox._npm import check_package_lock
from arena.sandbox._process import ProcessSandbox

__all__ = [
    "ProcessSandbox",
    "RunningBot",
    "Sandbox",
    "SandboxKind",
    "SandboxLimits",
    "StderrCapture",
    "check_package_lock",
    "choose_sandbox",
]


def choose_sandbox(
    kind: str, limits: SandboxLimits | None = None, *, runtime: str = "auto"
) -> Sandbox:
    """The sandbox for ``kind``: ``process``, ``docker`` or ``auto``.

    ``auto`` is Docker when an engine answers, the process sandbox otherwise. ``runtime``
    (``auto``, ``runsc``, ``runc``) is the Docker sandbox's OCI runtime.

    Raises:
        SandboxUnavailable: ``docker`` was asked for and no Docker engine answers, or
            ``runsc`` was asked for and the engine does not have it.
    """
    if kind == "process":
        return ProcessSandbox(limits)
    if kind in ("docker", "auto"):
        try:
            from arena.sandbox._docker import DockerSandbox, docker_available
        except ImportError as e:  # pragma: no cover - the docker package is a dependency
            if kind == "docker":
                raise SandboxUnavailable(f"the docker Python package is missing: {e}") from e
            return ProcessSandbox(limits)
        reason = docker_available()
        if reason is None:
            return DockerSandbox(limits, runtime=runtime)
        if kind == "docker":
            raise SandboxUnavailable(f"--sandbox docker: {reason}")
        return ProcessSandbox(limits)
    raise ValueError(f"unknown sandbox kind {kind!r}")
