"""Fixtures for the sandbox tests: a real sandbox of each kind, adversaries, real matches.

Docker tests skip when no Docker engine answers, unless ``ARENA_REQUIRE_DOCKER`` is set (CI):
then they fail, so that a missing engine can never pass for a green build. They run under each
container runtime (``docker_runtime``): ``runc`` and gVisor's ``runsc``, or only the one
``ARENA_DOCKER_RUNTIME`` names; ``runsc`` cases skip where the engine does not have it, unless
``ARENA_REQUIRE_RUNSC`` is set.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from arena.match._runner import MatchRecord, TimeControl, run_match
from arena.sandbox import ProcessSandbox, Sandbox, SandboxLimits
from arena.sandbox._docker import LABEL, DockerSandbox, Runtime, docker_available
from arena.sandbox.images import ensure_base_image
from flipflop import BotManifest, MatchConfig, read_manifest

REQUIRE_DOCKER = "ARENA_REQUIRE_DOCKER"
REQUIRE_RUNSC = "ARENA_REQUIRE_RUNSC"
DOCKER_RUNTIME = "ARENA_DOCKER_RUNTIME"
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
ADVERSARIES = HERE / "adversaries"
QUIET: Callable[[str], None] = lambda message: None  # noqa: E731 - a named no-op

SMALL_MATCH = MatchConfig(seats=3, hand_cap=3)
"""Three seats, three hands: a real match in a few seconds."""
CLOCK = TimeControl(decision_ms=1000, time_bank_ms=30_000, max_strikes=3, notify_ms=2000)
"""Generous: an adversary's attack may take seconds without costing it a fault."""


def asking(bot: BotManifest, seconds: float, where: Path) -> BotManifest:
    """A copy of ``bot`` under ``where`` whose bot.toml asks for a start budget of ``seconds``."""
    copy = where / f"{bot.name}-asks"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(bot.path, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / "bot.toml", "a", encoding="utf-8") as f:
        f.write(f"start_timeout_s = {seconds}\n")
    return read_manifest(copy)


def require_docker() -> None:
    """Skip the test when no Docker engine answers; fail instead under ARENA_REQUIRE_DOCKER."""
    reason = docker_available()
    if reason is None:
        return
    if os.environ.get(REQUIRE_DOCKER):
        pytest.fail(f"{REQUIRE_DOCKER} is set but {reason}", pytrace=False)
    pytest.skip(reason)


def docker_runtimes() -> list[str]:
    """The runtimes Docker tests run under: ``$ARENA_DOCKER_RUNTIME``, or runc and runsc."""
    asked = os.environ.get(DOCKER_RUNTIME)
    return [asked] if asked else [Runtime.RUNC.value, Runtime.RUNSC.value]


def require_runtime(runtime: str) -> None:
    """Skip the test when the engine lacks ``runtime``; fail instead under ARENA_REQUIRE_RUNSC."""
    require_docker()
    if runtime != Runtime.RUNSC.value:
        return
    import docker  # type: ignore[import-untyped,unused-ignore]

    client = docker.from_env()
    try:
        runtimes = client.info().get("Runtimes") or {}
    finally:
        client.close()
    if runtime in runtimes:
        return
    reason = "the Docker engine has no runsc runtime (gVisor is not installed)"
    if os.environ.get(REQUIRE_RUNSC):
        pytest.fail(f"{REQUIRE_RUNSC} is set but {reason}", pytrace=False)
    pytest.skip(reason)


def bundled(name: str) -> BotManifest:
    """A bundled bot from ``bots/``."""
    return read_manifest(REPO / "bots" / name)


@dataclass
class Played:
    """A finished match and what each seat's log says."""

    record: MatchRecord
    workdir: Path
    logs: list[str]

    def reports(self, seat: int) -> list[dict[str, Any]]:
        """The ``ATTACK {json}`` lines of a seat's log."""
        out = []
        for line in self.logs[seat].splitlines():
            if line.startswith("ATTACK {"):
                out.append(json.loads(line[len("ATTACK ") :]))
        return out

    def report(self, seat: int, attack: str) -> dict[str, Any]:
        """The one report of ``attack`` (the last, if several)."""
        found = [r for r in self.reports(seat) if r["attack"] == attack]
        assert found, (
            f"no report of {attack!r} in seat {seat}'s log (its faults: {self.faults(seat)}):\n"
            f"{self.logs[seat][-3000:]}"
        )
        return found[-1]

    def faults(self, seat: int) -> list[Any]:
        """The faults recorded against ``seat``."""
        return [f for f in self.record.faults if f.seat == seat]


@dataclass
class Arena:
    """Sandboxes of one kind, adversaries to put in them, and matches to play.

    Everything it starts is stopped at teardown, and then checked to be gone.
    """

    kind: str
    scratch: Path
    runtime: str = "auto"
    """The Docker sandbox's runtime (``docker_runtime``)."""
    non_root: bool = False
    """Start Docker sandboxes as an arena that is not root does: no tmpfs, ``umask 0``."""
    sandboxes: list[Sandbox] = field(default_factory=list)
    workdirs: list[Path] = field(default_factory=list)

    def sandbox(self, limits: SandboxLimits | None = None) -> Sandbox:
        """A new sandbox of this kind, closed at teardown."""
        box: Sandbox = (
            DockerSandbox(limits, log=QUIET, runtime=self.runtime)
            if self.kind == "docker"
            else ProcessSandbox(limits)
        )
        if self.non_root and isinstance(box, DockerSandbox):
            box.tmpfs_sockets = False
            box.open_socket = True
        self.sandboxes.append(box)
        return box

    def bot(self, name: str) -> BotManifest:
        """A bundled bot from ``bots/``."""
        return bundled(name)

    def adversary(self, name: str, **attack: Any) -> BotManifest:
        """A copy of ``adversaries/<name>`` with ``attack.json`` holding ``attack``."""
        target = self.scratch / "adversaries" / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(ADVERSARIES / name, target, ignore=shutil.ignore_patterns("__pycache__"))
        (target / "attack.json").write_text(json.dumps(attack), encoding="utf-8")
        _adversary_dirs.add(str(target))
        return read_manifest(target)

    def patient(self, bot: BotManifest, seconds: float = 60.0) -> BotManifest:
        """A copy of ``bot`` whose bot.toml asks for a start budget of ``seconds``.

        A test that gives the arena a short ``start_timeout_s`` (to see a bot miss it) seats
        its honest opponents through this, so that a loaded machine cannot make them miss it.
        """
        return asking(bot, seconds, self.scratch / "patient")

    def workdir(self) -> Path:
        """A new, short directory for a match's sockets (unix socket paths are short)."""
        path = Path(tempfile.mkdtemp(prefix="ffa-t-"))
        self.workdirs.append(path)
        return path

    def play(
        self,
        bots: list[BotManifest],
        *,
        limits: SandboxLimits | None = None,
        clock: TimeControl = CLOCK,
        config: MatchConfig = SMALL_MATCH,
        workdir: Path | None = None,
        seed: int = 7,
    ) -> Played:
        """Play one real match in a new sandbox; the sandbox is closed afterwards."""
        box = self.sandbox(limits)
        work = workdir or self.workdir()
        out = self.scratch / f"out-{len(self.sandboxes)}"
        out.mkdir(parents=True, exist_ok=True)
        try:
            record = run_match(
                f"t{len(self.sandboxes)}",
                seed,
                bots,
                config,
                sandbox=box,
                workdir=work / "m",
                replay_path=out / "replay.jsonl",
                logs_dir=out / "logs",
                clock=clock,
            )
        finally:
            box.close()
        logs = [Path(s.log).read_text(errors="replace") if s.log else "" for s in record.seats]
        assert len(record.placements) == len(bots), "the match did not finish"
        return Played(record, work / "m", logs)

    def close(self) -> None:
        """Close every sandbox; remove the scratch directories."""
        for box in self.sandboxes:
            box.close()
        for path in self.workdirs:
            shutil.rmtree(path, ignore_errors=True)


def our_containers() -> list[Any]:
    """Containers of any sandbox of this test process, running or not."""
    import docker  # type: ignore[import-untyped,unused-ignore]

    client = docker.from_env()
    try:
        return list(
            client.containers.list(
                all=True,
                filters={"label": [f"{LABEL}=1", f"flipflop.pid={os.getpid()}"]},
                ignore_removed=True,  # one removed between listing and inspecting is gone
            )
        )
    finally:
        client.close()


def processes_mentioning(text: str) -> list[int]:
    """Processes whose command line contains ``text`` (bots started under a workdir)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if text.encode() in cmdline:
            found.append(int(entry.name))
    return found


_adversary_dirs: set[str] = set()
"""Every adversary copy made in this session: their images are removed at the end."""


@pytest.fixture(scope="session")
def docker_images() -> Iterator[None]:
    """The base image and the bundled bots' images, built (or found) once per session.

    Builds print their timings on stderr. The adversaries' images (one per test: each copy
    carries its own attack.json) are removed at the end of the session.
    """
    require_docker()
    box = DockerSandbox()
    box.prepare([bundled("random"), bundled("greedy")])
    box.close()
    yield
    import docker  # type: ignore[import-untyped,unused-ignore]

    client = docker.from_env()
    try:
        # The list call's summaries, not images.list(), which inspects each image listed:
        # another pytest-xdist worker removes its own adversaries' images meanwhile, and an
        # inspect of one just removed failed this teardown (ImageNotFound).
        for image in client.api.images(filters={"label": "flipflop.bot.dir"}):
            if (image.get("Labels") or {}).get("flipflop.bot.dir") in _adversary_dirs:
                for tag in image.get("RepoTags") or []:
                    with contextlib.suppress(docker.errors.APIError):
                        client.images.remove(tag)
    finally:
        client.close()


def pytest_configure(config: pytest.Config) -> None:
    """Register ``process_cannot``."""
    config.addinivalue_line(
        "markers",
        "process_cannot(reason, when=True, skip=False): the process sandbox cannot give this "
        "protection: its case of the test is xfail(strict=True) with this reason (skipped "
        "instead with skip=True, when the outcome there depends on the machine's load)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that uses ``kind`` (or ``arena``) in each sandbox.

    Module scope, so that a match played by a module fixture is shared by its tests. The
    process case of a test marked ``process_cannot`` is ``xfail(strict=True)``. A test that
    uses ``docker_runtime`` (as ``arena`` does) runs its Docker case under each of
    :func:`docker_runtimes` (ids ``docker-runc``, ``docker-runsc``).
    """
    runtimes = docker_runtimes()
    if "kind" not in metafunc.fixturenames:
        if "docker_runtime" in metafunc.fixturenames:
            metafunc.parametrize(
                "docker_runtime", runtimes, ids=runtimes, indirect=True, scope="module"
            )
        return
    process_marks = []
    for mark in metafunc.definition.iter_markers("process_cannot"):
        if not mark.kwargs.get("when", True):
            continue
        reason = f"process sandbox: {mark.args[0]}"
        if mark.kwargs.get("skip", False):
            process_marks.append(pytest.mark.skip(reason=reason))
        else:
            # Only a failed assertion counts: an error anywhere else is a real failure.
            process_marks.append(
                pytest.mark.xfail(reason=reason, strict=True, raises=AssertionError)
            )
    if "docker_runtime" not in metafunc.fixturenames:
        metafunc.parametrize(
            "kind",
            [
                pytest.param("process", id="process", marks=process_marks),
                pytest.param("docker", id="docker", marks=pytest.mark.docker),
            ],
            scope="module",
        )
        return
    metafunc.parametrize(
        ("kind", "docker_runtime"),
        [
            pytest.param("process", "", id="process", marks=process_marks),
            *(
                pytest.param("docker", r, id=f"docker-{r}", marks=pytest.mark.docker)
                for r in runtimes
            ),
        ],
        indirect=["docker_runtime"],
        scope="module",
    )


@pytest.fixture(scope="module")
def docker_runtime(request: pytest.FixtureRequest) -> str:
    """The Docker sandbox's runtime; :func:`pytest_generate_tests` gives each in turn.

    Skips (or fails, see :func:`require_runtime`) where the engine does not have it; empty
    for the process sandbox's case.
    """
    runtime: str = getattr(request, "param", "auto")
    if runtime:
        require_runtime(runtime)
    return runtime


def _arena(
    kind: str, runtime: str, scratch: Path, request: pytest.FixtureRequest
) -> Iterator[Arena]:
    if kind == "docker":
        request.getfixturevalue("docker_images")
    a = Arena(kind, scratch, runtime)
    try:
        yield a
    finally:
        a.close()
    if kind == "docker":
        left = our_containers()
        assert [] == [c.name for c in left], "containers outlived their sandbox"
    for work in a.workdirs:
        assert [] == processes_mentioning(str(work)), f"processes outlived {work}"


@pytest.fixture
def arena(
    kind: str, docker_runtime: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Arena]:
    """An :class:`Arena` of ``kind``; afterwards no container or process of it may remain."""
    yield from _arena(kind, docker_runtime, tmp_path, request)


@pytest.fixture(scope="module")
def module_arena(
    kind: str,
    docker_runtime: str,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Iterator[Arena]:
    """:func:`arena` for one match shared by several tests of a module."""
    scratch = tmp_path_factory.mktemp(f"arena-{kind}")
    yield from _arena(kind, docker_runtime, scratch, request)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A Docker client with a long API timeout: image builds take minutes.

    The test is skipped without an engine (failed under ARENA_REQUIRE_DOCKER).
    """
    require_docker()
    import docker  # type: ignore[import-untyped,unused-ignore]

    c = docker.from_env(timeout=600)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def base(client: Any) -> str:
    """The arena's base image, built or found once."""
    return ensure_base_image(client, QUIET)
