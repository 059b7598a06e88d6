"""The arena's recipes for Node.js, Go and C++ bots, built and checked with the real engine.

Each template is generated as ``arena new-bot`` makes it, its image built from the arena's
recipe for its runtime (roots made offline with debootstrap, npm packages installed on the
host), and the conformance check run on it in the Docker sandbox, under each container
runtime. Also: a compiled bot is built by user 65534, in a build container confined as a bot
is (under each runtime: a hostile Makefile, ``adversaries/buildprobe``), an image's tag follows
its lock file and sources but not local build outputs, and a bot's ``memory_mb`` is its
container's memory limit, within the arena's cap (test_images.py refuses a Node.js bot without
a lock file, and lock files that would make npm leave the registry).

Docker tests skip without an engine (unless ``ARENA_REQUIRE_DOCKER``); the recipes' cases skip
without debootstrap and root (for a missing root image) or npm, unless
``ARENA_REQUIRE_TOOLCHAINS`` is set (CI). A cold run makes the three roots (about 40 s, 60 s
and 90 s here) and builds the three images; timings go to stderr (``pytest -s``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from arena._errors import SandboxError
from arena.cli import main
from arena.client._scaffold import scaffold_bot
from arena.match._runner import wait_serving
from arena.sandbox import SandboxLimits
from arena.sandbox._docker import DockerSandbox, Runtime
from arena.sandbox.images import (
    CPP_BUILDER,
    GO_BUILDER,
    NODE_IMAGE,
    NODE_IMAGE_ENV,
    NODE_ROOT,
    BuildLimits,
    DebianRoot,
    ensure_bot_image,
    ensure_root,
    node_image,
    plan_bot_image,
    stderr_log,
)
from flipflop import BotManifest, check_bot, read_manifest
from tests.arena.sandbox.conftest import (
    ADVERSARIES,
    QUIET,
    bundled,
    docker_runtimes,
    require_runtime,
)

REQUIRE_TOOLCHAINS = "ARENA_REQUIRE_TOOLCHAINS"
LANGUAGES = ["node", "go", "cpp"]
ROOTS: dict[str, DebianRoot] = {"node": NODE_ROOT, "go": GO_BUILDER, "cpp": CPP_BUILDER}
COMPILED = ["go", "cpp"]
MB = 1024 * 1024
BUILD_RUNTIME = Runtime.RUNC
"""The templates' cold builds run under runc, as docker build ran them: under runsc (gVisor,
ptrace platform) the Go and C++ templates took 1.2 to 2.4 times as long here. What a build
container is under each runtime is ``test_a_build_runs_its_makefile_confined_as_a_bot_is``'s."""

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]


def missing(reason: str) -> None:
    """Skip the test for a missing toolchain; fail instead under ARENA_REQUIRE_TOOLCHAINS."""
    if os.environ.get(REQUIRE_TOOLCHAINS):
        pytest.fail(f"{REQUIRE_TOOLCHAINS} is set but {reason}", pytrace=False)
    pytest.skip(reason)


def require_toolchain(client: Any, language: str) -> None:
    """Skip unless ``language``'s image can be built here: its root exists or can be made."""
    root = ROOTS[language]
    if language == "node" and shutil.which("npm") is None:
        missing("npm is not installed (Debian: apt-get install npm)")
    with contextlib.suppress(Exception):
        client.images.get(root.tag)
        return
    if shutil.which("debootstrap") is None and not os.path.exists("/usr/sbin/debootstrap"):
        missing(f"no {root.tag} image and debootstrap is not installed to make it")
    if os.geteuid() != 0:
        missing(f"no {root.tag} image and debootstrap needs root to make it")


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    """A directory for this module's bots."""
    path = Path(tempfile.mkdtemp(prefix="ffa-recipes-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def made(client: Any) -> Iterator[list[str]]:
    """Image tags this module built; removed at its end (the roots stay: made once)."""
    tags: list[str] = []
    yield tags
    for tag in tags:
        with contextlib.suppress(Exception):
            client.images.remove(tag, force=True)


@pytest.fixture(scope="module")
def templates() -> dict[str, tuple[BotManifest, str]]:
    """Each language's generated bot and its image tag, once built (see :func:`template`)."""
    return {}


def template(
    language: str,
    client: Any,
    base: str,
    scratch: Path,
    made: list[str],
    built: dict[str, tuple[BotManifest, str]],
) -> tuple[BotManifest, str]:
    """``language``'s template as generated, with its image built (timed, on stderr)."""
    if language not in built:
        require_toolchain(client, language)
        # A fresh name each session: a fresh tag, so the build is cold (roots aside).
        name = f"t{language}{os.getpid()}"
        bot = read_manifest(scaffold_bot(name, scratch, language))
        t0 = time.perf_counter()
        tag = ensure_bot_image(client, bot, base, stderr_log, runtime=BUILD_RUNTIME)
        stderr_log(f"{language} template image built in {time.perf_counter() - t0:.1f} s")
        made.append(tag)
        built[language] = (bot, tag)
    return built[language]


@pytest.fixture(params=LANGUAGES)
def generated(
    request: pytest.FixtureRequest,
    client: Any,
    base: str,
    scratch: Path,
    made: list[str],
    templates: dict[str, tuple[BotManifest, str]],
) -> tuple[BotManifest, str]:
    """Each language's generated bot and its image."""
    return template(str(request.param), client, base, scratch, made, templates)


@pytest.fixture(params=COMPILED)
def compiled(
    request: pytest.FixtureRequest,
    client: Any,
    base: str,
    scratch: Path,
    made: list[str],
    templates: dict[str, tuple[BotManifest, str]],
) -> tuple[BotManifest, str]:
    """The Go and the C++ generated bot and its image."""
    return template(str(request.param), client, base, scratch, made, templates)


def run_in(client: Any, image: str, script: str) -> str:
    """What ``sh -c script`` prints in a container of ``image`` (as its user, no network)."""
    out = client.containers.run(
        image, entrypoint=["/bin/sh", "-c", script], network_mode="none", remove=True
    )
    return bytes(out).decode()


def variant(bot: BotManifest, where: Path) -> Path:
    """A copy of ``bot``'s directory at ``where`` (same name, so the same image repository)."""
    shutil.copytree(bot.path, where, symlinks=True)
    return where


# ------------------------------------------------------------------ the templates pass


def test_arena_check_passes_in_docker(generated: tuple[BotManifest, str]) -> None:
    """``arena check BOT --sandbox docker`` passes on each template as generated."""
    bot, _ = generated
    result = CliRunner().invoke(
        main, ["check", str(bot.path), "--sandbox", "docker", "--matches", "10"]
    )
    assert 0 == result.exit_code, result.output
    assert "OK: no problems found" in result.output


@pytest.mark.parametrize("runtime", docker_runtimes())
def test_conformance_under_each_runtime(generated: tuple[BotManifest, str], runtime: str) -> None:
    """The conformance check passes under runc and under gVisor (runsc) alike."""
    require_runtime(runtime)
    bot, _ = generated
    box = DockerSandbox(log=QUIET, runtime=runtime)
    work = Path(tempfile.mkdtemp(prefix="ffa-rc-"))
    try:
        running = box.start(bot, work / "bot", "check")
        try:
            with wait_serving(running, bot.name, box.limits.start_timeout_s) as client:
                report = check_bot(
                    client.endpoint, matches=10, seed=3, seat_token=running.seat_token
                )
        finally:
            running.stop()
    finally:
        box.close()
        shutil.rmtree(work, ignore_errors=True)
    assert report.ok, report


# ------------------------------------------------------------------ how images are built


def test_compiled_bots_are_built_by_user_65534(
    client: Any, compiled: tuple[BotManifest, str]
) -> None:
    """The build container ran the build as 65534, and the executable it made is root's."""
    _, tag = compiled
    out = run_in(client, tag, "cat /etc/flipflop-build-uid; stat -c '%u %a' /bot/bot")
    assert ["65534", "0 755"] == out.split("\n")[:2]


def test_the_cpp_bot_needs_only_libc(
    client: Any,
    base: str,
    scratch: Path,
    made: list[str],
    templates: dict[str, tuple[BotManifest, str]],
) -> None:
    """The C++ bot links gRPC and libstdc++ in: ``ldd`` lists glibc's libraries only."""
    _, tag = template("cpp", client, base, scratch, made, templates)
    libs = {
        line.split()[0].rsplit("/", 1)[-1]
        for line in run_in(client, tag, "ldd /bot/bot").splitlines()
        if line.strip()
    }
    assert {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"} >= libs


def test_the_node_recipe_runs_nothing_at_build_time(
    client: Any,
    base: str,
    scratch: Path,
    made: list[str],
    templates: dict[str, tuple[BotManifest, str]],
) -> None:
    """The Node.js image has no RUN step: its packages come from the host, installed as-is."""
    _, tag = template("node", client, base, scratch, made, templates)
    steps = [str(h.get("CreatedBy") or "") for h in client.api.history(tag)]
    assert [] == [s for s in steps if s.startswith("/bin/sh -c") and "#(nop)" not in s]
    assert "grpc-js" in run_in(client, tag, "ls /bot/node_modules/@grpc")


def test_the_registrys_node_image_is_node_18_on_bookworm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Node.js bots look for ``node:18-bookworm-slim``, or the image ``ARENA_NODE_IMAGE`` names."""
    monkeypatch.delenv(NODE_IMAGE_ENV, raising=False)
    assert "node:18-bookworm-slim" == NODE_IMAGE == node_image()
    monkeypatch.setenv(NODE_IMAGE_ENV, "mirror.example/node:18-bookworm-slim")
    assert "mirror.example/node:18-bookworm-slim" == node_image()


def test_a_registrys_node_image_is_used_where_it_is_present(
    client: Any, base: str, scratch: Path, made: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the registry's Node.js image is present, Node.js bots run on it.

    ARENA_DOCKER_BASE=debootstrap keeps the offline root.

    No registry is reachable here, so a stand-in made from the offline root, with a label of
    its own, is tagged under a name of this test's own and named by ``ARENA_NODE_IMAGE``: the
    real name (``node:18-bookworm-slim``) is Docker's global state, and a stand-in under it
    would be the root of every other worker's Node.js build while it exists.
    """
    require_toolchain(client, "node")
    root = ensure_root(client, NODE_ROOT, QUIET)
    stand_in = f"flipflop-test-registry-node:{os.getpid()}-{uuid.uuid4().hex[:8]}"
    context = scratch / "registry-node"
    context.mkdir(exist_ok=True)
    (context / "Dockerfile").write_text(f"FROM {root.id}\nLABEL flipflop.test=registry-node\n")
    client.images.build(path=str(context), tag=stand_in, network_mode="none", rm=True)
    try:
        monkeypatch.setenv(NODE_IMAGE_ENV, stand_in)
        monkeypatch.delenv("ARENA_DOCKER_BASE", raising=False)
        bot = read_manifest(scaffold_bot(f"reg{os.getpid()}", scratch, "node"))
        on_registry = ensure_bot_image(client, bot, base, QUIET)
        made.append(on_registry)
        labels = client.images.get(on_registry).labels or {}
        assert "registry-node" == labels.get("flipflop.test")
        assert "grpc-js" in run_in(client, on_registry, "ls /bot/node_modules/@grpc")
        monkeypatch.setenv("ARENA_DOCKER_BASE", "debootstrap")
        offline = ensure_bot_image(client, bot, base, QUIET)
        made.append(offline)
        assert offline != on_registry
        assert "flipflop.test" not in (client.images.get(offline).labels or {})
    finally:
        with contextlib.suppress(Exception):
            client.images.remove(stand_in, force=True)


def test_the_tag_follows_the_sources(
    client: Any, base: str, compiled: tuple[BotManifest, str], tmp_path: Path
) -> None:
    """A changed source file makes a new tag (so the image is built again, not found).

    The tag is what ``ensure_bot_image`` looks the image up by: ``plan_bot_image`` gives it
    without the build (a Go bot's compile took 150 s of a loaded CI machine). A copy of the
    same sources has the very tag its image was built under.
    """
    bot, tag = compiled
    copy = variant(bot, tmp_path / bot.path.name)
    assert tag == plan_bot_image(client, read_manifest(copy), base, QUIET).tag
    source = copy / ("main.go" if bot.runtime.value == "go" else "bot.cc")
    source.write_text(source.read_text() + "\n// changed\n")
    changed = plan_bot_image(client, read_manifest(copy), base, QUIET).tag
    assert tag != changed
    assert changed.rpartition(":")[0] == tag.rpartition(":")[0]  # the same repository


def test_the_tag_follows_the_lock_file(
    client: Any,
    base: str,
    scratch: Path,
    made: list[str],
    templates: dict[str, tuple[BotManifest, str]],
    tmp_path: Path,
) -> None:
    """A changed package-lock.json makes a new tag (its packages are installed again)."""
    bot, tag = template("node", client, base, scratch, made, templates)
    copy = variant(bot, tmp_path / bot.path.name)
    lock = copy / "package-lock.json"
    lock.write_text(lock.read_text() + "\n")
    changed = ensure_bot_image(client, read_manifest(copy), base, QUIET)
    made.append(changed)
    assert tag != changed


def test_local_build_outputs_change_nothing(
    client: Any, base: str, generated: tuple[BotManifest, str], tmp_path: Path
) -> None:
    """Local build outputs are neither hashed nor copied: the same image, without a build.

    ``node_modules/`` of a Node.js bot; the built ``bot`` and ``*.o`` of a compiled one, and the
    ``gen/`` of a C++ one (a Go bot's ``gen/`` may be sources).
    """
    bot, tag = generated
    copy = variant(bot, tmp_path / bot.path.name)
    if bot.runtime.value == "node":
        (copy / "node_modules").mkdir()
        (copy / "node_modules" / "evil.js").write_text("process.exit(3)\n")
    else:
        (copy / "bot").write_bytes(b"#!/bin/sh\nexit 3\n")
        (copy / "bot.o").write_bytes(b"\0")
    if bot.runtime.value == "cpp":
        (copy / "gen").mkdir()
        (copy / "gen" / "stale.pb.h").write_text("#error stale\n")
    assert tag == ensure_bot_image(client, read_manifest(copy), base, QUIET)


@pytest.mark.parametrize("command", ["/usr/bin/bot", "../bot", "./my bot", "bot\nCOPY x y"])
def test_a_compiled_bot_must_name_its_executable_plainly(
    client: Any, base: str, tmp_path: Path, command: str
) -> None:
    """A compiled bot's command[0] must be a plain path in its directory, or it is refused.

    It is written into the recipe: no absolute path, ``..``, space or newline.
    """
    bot = tmp_path / "plain"
    shutil.copytree(bundled("random").path, bot, ignore=shutil.ignore_patterns("__pycache__"))
    (bot / "bot.toml").write_text(
        f'name = "plain"\nruntime = "go"\ncommand = [{json.dumps(command)}]\n'
    )
    with pytest.raises(SandboxError, match="is not one"):
        ensure_bot_image(client, read_manifest(bot), base, QUIET)


# ------------------------------------------------------------------ a hostile build


@pytest.mark.parametrize("runtime", docker_runtimes())
def test_a_build_runs_its_makefile_confined_as_a_bot_is(
    client: Any, base: str, tmp_path: Path, made: list[str], runtime: str
) -> None:
    """A C++ bot's Makefile runs under the bots' runtime, the arena's profile, a pids limit.

    Issue 24, finding 7: the build step was a ``RUN`` of ``docker build``, which the daemon runs
    under runc with Docker's default seccomp profile and no pids limit, whatever runtime the
    bots run under. ``buildprobe``'s Makefile runs a program that writes what it saw into the
    executable the image gets: its user, ``no_new_privs``, whether ``ptrace`` is allowed (the
    arena's profile refuses it, Docker's default does not), the kernel's release (gVisor's is
    not the host's) and how many children it forked before it was refused (at most 1000).
    """
    require_runtime(runtime)
    require_toolchain(client, "cpp")
    bot = tmp_path / "buildprobe"
    shutil.copytree(ADVERSARIES / "buildprobe", bot)
    (bot / "nonce.txt").write_text(f"{runtime} {os.getpid()} {time.time()}\n")  # a cold build
    box = DockerSandbox(log=QUIET, runtime=runtime)
    try:
        tag = box.image_for(read_manifest(bot))
    finally:
        box.close()
    made.append(tag)
    seen = json.loads(run_in(client, tag, "cat /bot/bot"))
    assert (65534, 1) == (seen["uid"], seen["no_new_privs"]), seen
    assert seen["forks"] < BuildLimits().pids and "EAGAIN" == seen["fork_error"], seen
    if runtime == Runtime.RUNSC.value:
        assert os.uname().release != seen["release"], "the build reached the host's kernel"
    else:
        assert ("2", "EPERM") == (seen["seccomp"], seen["ptrace"]), seen


def makefile_bot(where: Path, recipe: str) -> BotManifest:
    """A C++ bot whose Makefile's one rule for ``bot`` runs ``recipe`` (a shell line)."""
    where.mkdir()
    (where / "bot.toml").write_text('name = "makes"\nruntime = "cpp"\ncommand = ["./bot"]\n')
    (where / "Makefile").write_text(f"bot:\n\t{recipe}\n")
    (where / "nonce.txt").write_text(f"{os.getpid()} {time.time()}\n")
    return read_manifest(where)


def test_a_build_that_links_its_executable_to_a_host_file_is_refused(
    client: Any, base: str, tmp_path: Path
) -> None:
    """``ln -s /etc/shadow bot``: the build's directory is on the host, where nothing is followed.

    The executable is read from the host's copy of the sources after the build: a link there
    would be resolved on the host, not in the container.
    """
    require_toolchain(client, "cpp")
    bot = makefile_bot(tmp_path / "linker", "ln -s /etc/shadow bot")
    with pytest.raises(SandboxError, match=r"the build made no bot \(command\[0\] of bot.toml\)"):
        ensure_bot_image(client, bot, base, QUIET)


def test_a_build_past_its_time_limit_is_stopped_and_removed(
    client: Any, base: str, tmp_path: Path
) -> None:
    """A Makefile that sleeps: stopped at the build's time limit, its container removed."""
    require_toolchain(client, "cpp")
    bot = makefile_bot(tmp_path / "sleeper", "sleep 600")
    t0 = time.monotonic()
    with pytest.raises(SandboxError, match="ran past the build time limit of 15 s"):
        ensure_bot_image(client, bot, base, QUIET, limits=BuildLimits(timeout_s=15))
    assert time.monotonic() - t0 < 300  # stopped, not waited out (600 s)
    left = client.containers.list(all=True, filters={"label": "flipflop.bot=makes"})
    assert [] == [c.name for c in left]


# ------------------------------------------------------------------ memory_mb


def memory_bot(where: Path, memory_mb: int) -> BotManifest:
    """A copy of the random bot that asks for ``memory_mb``."""
    bot = where / "memory"
    shutil.copytree(bundled("random").path, bot, ignore=shutil.ignore_patterns("__pycache__"))
    toml = bot / "bot.toml"
    toml.write_text(toml.read_text() + f"memory_mb = {memory_mb}\n")
    return read_manifest(bot)


def test_memory_mb_is_the_containers_memory(docker_images: None, tmp_path: Path) -> None:
    """``memory_mb = 1024`` in bot.toml: the container gets 1024 MB, swap included."""
    box = DockerSandbox(log=QUIET)
    work = Path(tempfile.mkdtemp(prefix="ffa-mem-"))
    try:
        running = box.start(memory_bot(tmp_path, 1024), work / "bot", "memory")
        try:
            host = running.container.attrs["HostConfig"]
            assert (1024 * MB, 1024 * MB) == (host["Memory"], host["MemorySwap"])
        finally:
            running.stop()
    finally:
        box.close()
        shutil.rmtree(work, ignore_errors=True)


def test_memory_mb_above_the_cap_is_refused(docker_images: None, tmp_path: Path) -> None:
    """Above ``max_memory_mb``: refused before any container or socket directory is made."""
    box = DockerSandbox(SandboxLimits(max_memory_mb=1024), log=QUIET)
    work = Path(tempfile.mkdtemp(prefix="ffa-mem-"))
    try:
        with pytest.raises(SandboxError, match="memory_mb = 2048, more than this arena allows"):
            box.start(memory_bot(tmp_path, 2048), work / "bot", "memory")
        assert [] == box.running()
        assert not (work / "bot").exists()
    finally:
        box.close()
        shutil.rmtree(work, ignore_errors=True)
