"""The process sandbox's memory limit: resident memory in a cgroup, what a bot may ask for.

Where the arena can make a memory cgroup (root, cgroup v1 ``memory`` or v2 ``memory.max``),
a bot's resident memory (swap included) is limited there and its address space is not; an
out-of-memory kill is reported as such. Elsewhere ``RLIMIT_AS`` stands in, and says so.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena._errors import SandboxError
from arena.match._runner import FaultKind, run_match
from arena.sandbox import ProcessSandbox, SandboxLimits
from arena.sandbox._cgroup import CgroupTree, cgroup_tree
from flipflop import BotManifest, ManifestError, read_manifest
from tests.arena.sandbox.conftest import ADVERSARIES, CLOCK, SMALL_MATCH, bundled

_TREE = cgroup_tree()
MEMORY_CGROUP = isinstance(_TREE, CgroupTree) and _TREE.memory is not None
needs_memory_cgroup = pytest.mark.skipif(
    not MEMORY_CGROUP, reason=f"no memory cgroup here: {_TREE if isinstance(_TREE, str) else ''}"
)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A short directory (unix socket paths are short)."""
    path = Path(tempfile.mkdtemp(prefix="ffa-mem-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def memhog(scratch: Path, memory_mb: int | None) -> BotManifest:
    """A copy of the ``memhog`` adversary whose bot.toml asks for ``memory_mb``."""
    target = scratch / "memhog"
    shutil.copytree(ADVERSARIES / "memhog", target, ignore=shutil.ignore_patterns("__pycache__"))
    if memory_mb is not None:
        with open(target / "bot.toml", "a", encoding="utf-8") as f:
            f.write(f"memory_mb = {memory_mb}\n")
    return read_manifest(target)


def held_mb(log: str) -> int:
    """The most memory the memhog's reports say it held."""
    return max(
        int(json.loads(line.split("ATTACK ", 1)[1])["mb"])
        for line in log.splitlines()
        if "ATTACK " in line
    )


@needs_memory_cgroup
def test_memhog_asking_for_192_mb_is_oom_killed_below_it(scratch: Path) -> None:
    """bot.toml's ``memory_mb`` is the limit: the memhog is killed below it, said out of memory."""
    bot = memhog(scratch, 192)
    sandbox = ProcessSandbox(SandboxLimits())
    try:
        record = run_match(
            "mem",
            7,
            [bot, bundled("random"), bundled("greedy")],
            SMALL_MATCH,
            sandbox=sandbox,
            workdir=scratch / "m",
            replay_path=scratch / "replay.jsonl",
            logs_dir=scratch / "logs",
            clock=CLOCK,
        )
    finally:
        sandbox.close()
    log = Path(record.seats[0].log).read_text(errors="replace")
    assert 96 <= held_mb(log) < 192, log[-2000:]
    fault = next(f for f in record.faults if f.seat == 0)
    assert FaultKind.CRASH is fault.kind
    assert fault.detail.startswith("out of memory: "), fault.detail
    assert "(killed for using more than its memory limit (out of memory))" in fault.detail


def test_asking_for_more_than_the_cap_is_refused(scratch: Path) -> None:
    """A bot asking for more than ``max_memory_mb`` never starts, and the error says why."""
    bot = memhog(scratch, 2048)
    sandbox = ProcessSandbox(SandboxLimits(max_memory_mb=1024))
    try:
        with pytest.raises(SandboxError, match=r"memory_mb = 2048, more than .* \(1024 MB\)"):
            sandbox.start(bot, scratch / "seat0", "greedy")
    finally:
        sandbox.close()


@pytest.mark.parametrize("value", ["0", "-5", "1.5", '"512"', "true"])
def test_memory_mb_must_be_a_positive_whole_number(scratch: Path, value: str) -> None:
    """``memory_mb`` in bot.toml: a positive integer, or the manifest is refused."""
    bot = scratch / "bad"
    shutil.copytree(ADVERSARIES / "memhog", bot)
    with open(bot / "bot.toml", "a", encoding="utf-8") as f:
        f.write(f"memory_mb = {value}\n")
    with pytest.raises(ManifestError, match="'memory_mb' must be a positive whole number"):
        read_manifest(bot)


def test_without_a_memory_cgroup_the_line_says_address_space() -> None:
    """No memory cgroup: RLIMIT_AS stands in, and the ``sandbox:`` line says so and why."""
    sandbox = ProcessSandbox(cgroups="no cgroups in this test")
    try:
        assert (
            "MEMORY LIMITED BY ADDRESS SPACE (512 MB, RLIMIT_AS), not resident memory: no "
            "memory cgroup (no cgroups in this test)"
        ) in sandbox.isolation
    finally:
        sandbox.close()


@needs_memory_cgroup
def test_with_a_memory_cgroup_the_line_says_resident_memory() -> None:
    """With a memory cgroup the ``sandbox:`` line gives the limit and the cap a bot may ask."""
    sandbox = ProcessSandbox(SandboxLimits(memory_mb=300, max_memory_mb=900))
    try:
        assert "memory limit of 300 MB resident per bot (memory cgroup" in sandbox.isolation
        assert "bot.toml may ask for up to 900 MB" in sandbox.isolation
    finally:
        sandbox.close()
