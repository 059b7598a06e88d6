"""The Docker sandbox: how each container is locked down, images, and that none outlives a run."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from arena._errors import SandboxUnavailable
from arena.ladder._ladder import LadderSpec, run_ladder
from arena.match._hosts import BotHost, Seated
from arena.match._runner import FaultKind, MatchCancelled, MatchRecord, TimeControl, run_match
from arena.sandbox import ProcessSandbox, SandboxKind, SandboxLimits, choose_sandbox
from arena.sandbox._docker import (
    LABEL,
    DockerSandbox,
    Runtime,
    _DockerBot,
    _remove,
    docker_available,
    host_pids_limit,
    seccomp_profile,
)
from arena.sandbox.images import ensure_base_image, ensure_bot_image, from_images
from flipflop import BotClient, MatchConfig, read_manifest

if TYPE_CHECKING:
    from tests.arena.sandbox.conftest import Arena

REPO = Path(__file__).resolve().parents[3]
RANDOM = read_manifest(REPO / "bots" / "random")
GREEDY = read_manifest(REPO / "bots" / "greedy")
QUIET = lambda message: None  # noqa: E731 - a named no-op


def test_docker_available_says_why_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an engine, docker_available() is one line that says so (and no exception)."""
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    reason = docker_available()
    assert reason is not None
    assert "\n" not in reason
    with pytest.raises(SandboxUnavailable):
        choose_sandbox("docker")


@pytest.fixture
def box(docker_images: None, docker_runtime: str) -> Iterator[DockerSandbox]:
    """A Docker sandbox under each runtime; afterwards none of its containers may exist."""
    sandbox = DockerSandbox(log=QUIET, runtime=docker_runtime)
    try:
        yield sandbox
    finally:
        sandbox.close()
    assert [] == sandbox.running()


def short_workdir() -> Path:
    """A short directory for sockets, removed by the caller."""
    return Path(tempfile.mkdtemp(prefix="ffa-d-"))


@pytest.mark.docker
def test_choose_sandbox_gives_docker(docker_images: None) -> None:
    """``--sandbox docker`` gives the Docker sandbox with the limits asked for."""
    limits = SandboxLimits(memory_mb=300, start_timeout_s=5)
    sandbox = choose_sandbox("docker", limits)
    try:
        assert SandboxKind.DOCKER is sandbox.kind
        assert limits is getattr(sandbox, "limits", None)
        assert "no network" in sandbox.isolation
        assert "read-only" in sandbox.isolation
    finally:
        sandbox.close()


@pytest.mark.docker
def test_container_is_locked_down(box: DockerSandbox) -> None:
    """Every protection of docs/sandbox.md is in the container's configuration."""
    work = short_workdir()
    try:
        bot = box.start(RANDOM, work / "seat0", "locked")
        attrs: dict[str, Any] = bot.container.attrs
        host, config = attrs["HostConfig"], attrs["Config"]
        lim = box.limits
        assert "none" == host["NetworkMode"]
        assert host["ReadonlyRootfs"] is True
        assert "65534:65534" == config["User"]
        assert ["ALL"] == host["CapDrop"]
        assert not host.get("CapAdd")
        assert host["Privileged"] is False
        assert ["no-new-privileges", f"seccomp={seccomp_profile()}"] == host["SecurityOpt"]
        assert lim.memory_mb * 1024 * 1024 == host["Memory"] == host["MemorySwap"]
        assert round(lim.cpus * 1e9) == host["NanoCpus"]
        assert host_pids_limit(box.runtime, lim.pids) == host["PidsLimit"]
        assert "none" == host["IpcMode"]
        assert "none" == host["LogConfig"]["Type"]
        ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in host["Ulimits"]}
        assert (lim.open_files, lim.open_files) == ulimits["nofile"]
        assert (lim.file_size_mb << 20, lim.file_size_mb << 20) == ulimits["fsize"]
        # Under gVisor its kernel limits the bot's processes and threads (host_pids_limit).
        nproc = (lim.pids, lim.pids) if box.runtime is Runtime.RUNSC else None
        assert nproc == ulimits.get("nproc")
        assert "/tmp" in host["Tmpfs"]
        assert f"size={lim.tmp_mb}m" in host["Tmpfs"]["/tmp"]
        mounts = [(m["Type"], m["Source"], m["Destination"]) for m in attrs["Mounts"]]
        assert [("bind", str(work.resolve() / "seat0" / "sock"), "/run/flipflop")] == mounts
        labels = config["Labels"]
        assert "1" == labels[LABEL]
        assert box.run_id == labels["flipflop.run"]
        assert str(os.getpid()) == labels["flipflop.pid"]
        assert ["--listen", "unix:/run/flipflop/bot.sock"] == config["Cmd"]
        assert ["python3", "bot.py"] == config["Entrypoint"]
        assert f"unix:{work.resolve()}/seat0/sock/bot.sock" == bot.endpoint
        client = BotClient(bot.endpoint)
        try:
            client.wait_ready(timeout=20)
            assert "random" == client.handshake(timeout=5).name
        finally:
            client.close()
        # Once the bot serves, its socket directory takes no new files from the container.
        deadline = time.monotonic() + 5
        while (work / "seat0" / "sock").stat().st_mode & 0o777 != 0o755:
            assert time.monotonic() < deadline, "the socket directory was never locked"
            time.sleep(0.05)
        assert bot.alive()
        bot.stop()
        bot.stop()  # twice is fine
        assert not bot.alive()
        assert [] == box.running()
        assert "serving random" in bot.log_path.read_text()
    finally:
        box.close()
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.docker
def test_images_are_built_once(docker_images: None) -> None:
    """A second request for the same SDK and bot builds nothing: the tags are content hashes."""
    import docker  # type: ignore[import-untyped,unused-ignore]

    client = docker.from_env()
    try:
        base = ensure_base_image(client, QUIET)
        assert base.startswith("flipflop-base:")
        assert client.images.get(base).id == client.images.get("flipflop-base:latest").id
        tag = ensure_bot_image(client, RANDOM, base, QUIET)
        said: list[str] = []
        assert base == ensure_base_image(client, said.append)
        assert tag == ensure_bot_image(client, RANDOM, base, said.append)
        assert 2 == len(said)
        assert all(" cached: " in line for line in said), said
        assert tag != ensure_bot_image(client, GREEDY, base, QUIET)
    finally:
        client.close()


OOM_AT_START = """\
held = []
while True:  # the OOM killer ends this before it serves
    held.append(bytearray(8 << 20))
"""


def _ended(bot: Any) -> str:
    """``bot.exit_status()`` once its container has ended (60 s at most)."""
    deadline = time.monotonic() + 60
    while (status := bot.exit_status()) is None:
        assert time.monotonic() < deadline, "the container did not end"
        time.sleep(0.05)
    return str(status)


@pytest.mark.docker
def test_an_oom_kill_reads_as_one_whichever_event_the_engine_hears_first(
    box: DockerSandbox, tmp_path: Path
) -> None:
    """An OOM kill says "out of memory"; a SIGKILL from elsewhere says its exit code.

    The engine sets ``OOMKilled`` only when the kernel's OOM event reaches it before the
    container's exit. Under load they come in either order (``die`` before ``oom`` in 5 of 20
    OOM kills under gVisor next to ``stress-ng --cpu 4``; the flag then stays unset), which
    made test_adversaries' memory test read a plain crash about once a CI run at 4 workers.
    The sandbox then looks for the ``oom`` in the engine's event log. Four kills, so a
    loaded machine meets both orders (without the fix, 1 run of 2 with six kills failed
    next to ``stress-ng --cpu 4``); a container killed with SIGKILL by someone other than
    the arena (here, a direct engine call) has no ``oom`` and is not taken for one.
    """
    (tmp_path / "hog").mkdir()
    (tmp_path / "hog" / "bot.toml").write_text(
        'name = "oomstart"\nversion = "1.0.0"\nruntime = "python"\n'
        'command = ["python3", "bot.py"]\n'
    )
    (tmp_path / "hog" / "bot.py").write_text(OOM_AT_START)
    hog = read_manifest(tmp_path / "hog")
    work = short_workdir()
    try:
        for i in range(4):
            bot = box.start(hog, work / f"hog{i}", f"hog{i}")
            assert "killed for using more than its memory limit (out of memory)" == _ended(bot)
            bot.stop()
        bot = box.start(RANDOM, work / "killed", "killed")
        box.client.api.kill(bot.container.id, "SIGKILL")
        assert "exit code 137" == _ended(bot)
        bot.stop()
        assert [] == box.running()
    finally:
        box.close()
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.docker
def test_no_container_outlives_an_exception_in_run_match(box: DockerSandbox) -> None:
    """Bots are removed when run_match fails after they started (here: no replay directory)."""
    work = short_workdir()
    with pytest.raises(FileNotFoundError):
        run_match(
            "boom",
            1,
            [RANDOM, GREEDY, RANDOM],
            MatchConfig(seats=3, hand_cap=3),
            sandbox=box,
            workdir=work / "m",
            replay_path=work / "missing" / "replay.jsonl",
            logs_dir=work / "logs",
        )
    assert [] == box.running()  # before close(): run_match itself removed them
    shutil.rmtree(work, ignore_errors=True)


@pytest.mark.docker
def test_no_container_outlives_a_cancelled_match(box: DockerSandbox) -> None:
    """Cancelling a match in the middle (Ctrl-C in a ladder) removes its containers."""
    work = short_workdir()
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(MatchCancelled):
        run_match(
            "cancelled",
            1,
            [RANDOM, GREEDY, RANDOM],
            MatchConfig(seats=3, hand_cap=3),
            sandbox=box,
            workdir=work / "m",
            replay_path=work / "replay.jsonl",
            logs_dir=work / "logs",
            cancel=cancel,
        )
    assert [] == box.running()
    shutil.rmtree(work, ignore_errors=True)


_ARENA_SCRIPT = """
import sys, time
from pathlib import Path
from arena.sandbox._docker import DockerSandbox
from flipflop import read_manifest
box = DockerSandbox(log=lambda m: None)
bot = box.start(read_manifest(sys.argv[1]), Path(sys.argv[2]), "killed")
print(bot.container.id, flush=True)
time.sleep(600)
"""


@pytest.mark.docker
def test_watchdog_removes_containers_of_a_killed_arena(docker_images: None) -> None:
    """An arena killed with SIGKILL (no cleanup at all) leaves no container behind."""
    import docker  # type: ignore[import-untyped,unused-ignore]

    work = short_workdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", _ARENA_SCRIPT, str(RANDOM.path), str(work / "seat0")],
        stdout=subprocess.PIPE,
        text=True,
    )
    client = docker.from_env()
    try:
        assert proc.stdout is not None
        container_id = proc.stdout.readline().strip()
        assert container_id
        client.containers.get(container_id)  # it runs
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                client.containers.get(container_id)
            except docker.errors.NotFound:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the container outlived its arena by 30 s")
    finally:
        if proc.poll() is None:
            proc.kill()
        client.close()
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.docker
def test_orphans_of_a_dead_arena_are_reaped(box: DockerSandbox) -> None:
    """A new Docker sandbox removes containers whose arena process no longer exists."""
    import docker  # type: ignore[import-untyped,unused-ignore]

    dead = subprocess.Popen(["true"])
    dead.wait()
    image = box.image_for(RANDOM)
    labels = box._labels(RANDOM, "orphan")
    labels["flipflop.pid"] = str(dead.pid)
    labels["flipflop.pidstart"] = ""
    labels["flipflop.run"] = "orphan-test"
    client = docker.from_env()
    try:
        orphan = client.containers.create(
            image, command=["--listen", "unix:/tmp/x.sock"], labels=labels, network_mode="none"
        )
        DockerSandbox(log=QUIET).close()
        with pytest.raises(docker.errors.NotFound):
            client.containers.get(str(orphan.id))
    finally:
        client.close()


def _cpu_over(kept: list[Seated], seconds: float) -> int:
    """Nanoseconds of CPU the kept instances' cgroups used together over ``seconds``."""
    before = [s.bot.cpu_ns() for s in kept]
    time.sleep(seconds)
    after = [s.bot.cpu_ns() for s in kept]
    assert None not in before and None not in after
    return sum(a - b for a, b in zip(after, before, strict=True) if a is not None and b is not None)


@pytest.mark.docker
def test_a_kept_bot_is_frozen_between_matches_and_plays_on(box: DockerSandbox) -> None:
    """A ``BotHost``'s freezer pauses the containers it keeps; the next match resumes them.

    While kept, a container is paused: under runc its cgroup uses no CPU at all, under gVisor
    far less than idle (its sandbox polls: 1.4 % of a core idle, 0.1 % paused, docs/arena.md);
    the next match seats the same instances (no new start) and plays; closing the host
    removes the paused containers.
    """
    work = short_workdir()
    host = BotHost(box, work / "h", pause_s=0.0)  # the freezer pauses them at once
    common: dict[str, Any] = {
        "sandbox": box,
        "workdir": work / "w",
        "logs_dir": work / "logs",
        "host": host,
        "clock": TimeControl(decision_ms=5000, notify_ms=15_000),
    }

    def play(n: int) -> MatchRecord:
        config = MatchConfig(seats=3, hand_cap=2)
        replay = work / f"{n}.jsonl"
        return run_match(
            f"k{n}", n + 1, [RANDOM, GREEDY, RANDOM], config, replay_path=replay, deal=n, **common
        )

    try:
        first = play(0)
        assert 3 == len(first.placements) and 3 == host.starts
        deadline = time.monotonic() + 30
        while not (host.idle == 3 and all(s.paused for s in host._idle)):
            assert time.monotonic() < deadline, "the freezer did not pause the kept bots"
            time.sleep(0.05)
        kept = list(host._idle)
        for seated in kept:
            docker_bot: Any = getattr(seated.bot, "inner", seated.bot)
            container = docker_bot.container
            container.reload()
            assert "paused" == container.status
        frozen = _cpu_over(kept, 2.0)
        host.pause_s = None  # the freezer leaves them be while they are measured unpaused
        for seated in kept:
            seated.bot.resume()
        idle = _cpu_over(kept, 2.0)
        for seated in kept:
            seated.bot.pause()
        if box.runtime is Runtime.RUNC:
            assert 0 == frozen  # frozen: not one nanosecond
        else:  # gVisor's sandbox keeps a little going, far less than its idle polling
            assert frozen < idle / 2, (frozen, idle)
        second = play(1)
        assert 3 == len(second.placements) and not second.faults
        assert 3 == host.starts  # the same three instances, resumed
    finally:
        host.close()
        shutil.rmtree(work, ignore_errors=True)
    assert [] == box.running()


@pytest.mark.docker
def test_a_paused_orphan_is_reaped(box: DockerSandbox) -> None:
    """A container left paused by an arena that died is removed like any other orphan."""
    import docker  # type: ignore[import-untyped,unused-ignore]

    dead = subprocess.Popen(["true"])
    dead.wait()
    labels = box._labels(RANDOM, "orphan")
    labels.update({"flipflop.pid": str(dead.pid), "flipflop.pidstart": ""})
    labels["flipflop.run"] = "paused-orphan-test"
    client = docker.from_env()
    try:
        orphan = client.containers.run(
            box.image_for(RANDOM),
            entrypoint=["sleep", "600"],
            labels=labels,
            network_mode="none",
            runtime=box.runtime.value,
            detach=True,
        )
        orphan.pause()
        DockerSandbox(log=QUIET).close()
        with pytest.raises(docker.errors.NotFound):
            client.containers.get(str(orphan.id))
    finally:
        client.close()


@pytest.mark.docker
@pytest.mark.slow
def test_same_game_in_both_sandboxes(docker_images: None, tmp_path: Path) -> None:
    """The sandbox does not change the game: same seed, same bots, same result."""
    results = []
    for sandbox in (ProcessSandbox(), DockerSandbox(log=QUIET)):
        work = short_workdir()
        try:
            record = run_match(
                "same",
                11,
                [RANDOM, GREEDY, RANDOM],
                MatchConfig(seats=3, hand_cap=3),
                sandbox=sandbox,
                workdir=work / "m",
                replay_path=work / "replay.jsonl",
                logs_dir=work / "logs",
            )
        finally:
            sandbox.close()
            shutil.rmtree(work, ignore_errors=True)
        assert [] == list(record.faults)
        results.append((record.placements, record.bankrolls, record.hands, record.decisions))
    assert results[0] == results[1]


@pytest.mark.process_cannot(
    "not applicable: its socket directory is the bot's own private one, like its tmp/",
    skip=True,
)
def test_socket_directory_cannot_fill_the_host_disk(arena: Arena) -> None:
    """A bot that writes into its socket directory before serving is stopped at once.

    The start budget is generous: the guard stops it as it writes, and on a busy machine a
    budget of 3 s ran out before the bot had written a byte (a START fault, its log empty).
    """
    limits = SandboxLimits(start_timeout_s=30)
    bot = arena.adversary("squatter")
    played = arena.play([bot, arena.bot("random"), arena.bot("greedy")], limits=limits)
    written = max((r["mb"] for r in played.reports(0) if not r["blocked"]), default=0)
    if os.geteuid() == 0:  # the directory is a 256 KB tmpfs: not one of the 1 MB files fits
        assert 0 == written
    else:  # only the guard, which looks every 10 ms: a fast writer gets a few MB through
        assert written <= 16
    # The guard stops it while it starts: the bot is not seen serving before the guard's
    # last look. (That look once came after the match was over, on a loaded machine, and the
    # squatter played it without a fault.)
    assert [FaultKind.START] == [f.kind for f in played.faults(0)], played.faults(0)
    assert "into its socket directory" in played.logs[0], played.faults(0)


@pytest.mark.process_cannot(
    "not applicable: its socket directory is the bot's own private one, like its tmp/",
    skip=True,
)
def test_a_starved_guard_still_stops_the_squatter_before_it_plays(
    arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard's thread gets no CPU for 8 s (a loaded machine): the squatter still never plays.

    Before the fix the bot was handed to the match as soon as it served, and a guard that
    looked after the match was over let it play unpunished (no fault at all; a rehearsal
    under gVisor at load average 25). Now the bot is not seen serving until the guard's last
    look: a START fault, whenever the guard looks.
    """
    guard = _DockerBot.guard_socket_dir

    def starved(bot: _DockerBot) -> None:
        time.sleep(8)
        guard(bot)

    monkeypatch.setattr(_DockerBot, "guard_socket_dir", starved)
    bot = arena.adversary("squatter")
    limits = SandboxLimits(start_timeout_s=30)
    played = arena.play([bot, arena.bot("random"), arena.bot("greedy")], limits=limits)
    assert [FaultKind.START] == [f.kind for f in played.faults(0)], played.faults(0)
    assert "into its socket directory" in played.logs[0], played.faults(0)
    assert not (played.workdir / "seat0" / "sock").exists()


@pytest.mark.docker
def test_socket_is_open_to_an_arena_that_is_not_root(box: DockerSandbox) -> None:
    """For an arena without root, the bot's socket is made connectable by any user."""
    box.open_socket = True  # what a non-root arena does
    work = short_workdir()
    try:
        bot = box.start(RANDOM, work / "seat0", "open")
        client = BotClient(bot.endpoint)
        try:
            client.wait_ready(timeout=20)
            assert "random" == client.handshake(timeout=5).name
        finally:
            client.close()
        mode = (work / "seat0" / "sock" / "bot.sock").stat().st_mode
        assert 0o777 == mode & 0o777
        attrs = bot.container.attrs
        assert ["python3", "bot.py", "--listen", "unix:/run/flipflop/bot.sock"] == attrs["Config"][
            "Cmd"
        ]
    finally:
        box.close()
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.docker
def test_a_ladder_keeps_each_container_up_from_match_to_match(
    box: DockerSandbox, tmp_path: Path
) -> None:
    """One container per bot plays all three matches (the stayer counts them); then none is left.

    Its CPU time is read through the container's main process, so the CPU rule can apply.
    """
    stayer = tmp_path / "stayer"
    shutil.copytree(
        REPO / "tests" / "arena" / "sandbox" / "adversaries" / "stayer",
        stayer,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    spec = LadderSpec(
        bots=(read_manifest(stayer), RANDOM, GREEDY),
        matches=3,
        table_size=3,
        seed=2,
        duplicate=False,
        hand_cap=5,
    )
    result = run_ladder(spec, tmp_path / "out", sandbox=box, jobs=1)

    assert 3 == result.count("ok")
    assert 3 == result.starts
    counts = []
    for rec in result.records():
        [seat] = [i for i, b in enumerate(rec["bots"]) if b == "stayer"]
        lines = Path(rec["replay"]).read_text(encoding="utf-8").splitlines()
        notes = [
            json.loads(r["note"])
            for r in map(json.loads, lines)
            if r.get("seat") == seat and r.get("note")
        ]
        counts.append(notes[0]["n"])
        assert not rec["faults"]
    assert [1, 2, 3] == counts
    assert [] == box.running()  # the ladder stopped what it kept


def _volume_bot(where: Path) -> Path:
    """The stayer bot with ``VOLUME /data`` in its Dockerfile (issue 15, finding 1)."""
    bot = where / "hoarder"
    shutil.copytree(
        REPO / "tests" / "arena" / "sandbox" / "adversaries" / "stayer",
        bot,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (bot / "bot.toml").write_text(
        (bot / "bot.toml").read_text().replace('name = "stayer"', 'name = "hoarder"')
    )
    (bot / "Dockerfile").write_text(
        "ARG BASE=flipflop-base:latest\nFROM ${BASE}\nCOPY . /bot\nWORKDIR /bot\nVOLUME /data\n"
        'USER 65534:65534\nENTRYPOINT ["python3", "bot.py"]\n'
    )
    return bot


@pytest.mark.docker
def test_an_image_that_declares_a_volume_is_refused(box: DockerSandbox, tmp_path: Path) -> None:
    """VOLUME would give the bot host disk outside its limits: refused with a start fault.

    The fault names the volume, and no volume is created. (Only a trusted Dockerfile can
    say VOLUME: the arena's own recipes never do.)
    """
    box.trust_dockerfile = True
    before = {v.name for v in box.client.volumes.list()}
    work = short_workdir()
    try:
        rec = run_match(
            "m0",
            1,
            [read_manifest(_volume_bot(tmp_path)), RANDOM, GREEDY],
            MatchConfig(seats=3, hand_cap=2),
            sandbox=box,
            workdir=work,
            replay_path=tmp_path / "m0.jsonl",
            logs_dir=tmp_path / "logs",
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    [fault] = [f for f in rec.faults if f.seat == 0]
    assert FaultKind.START is fault.kind
    assert "declares VOLUME /data: refused" in fault.detail
    assert rec.void
    assert before == {v.name for v in box.client.volumes.list()}


@pytest.mark.docker
def test_a_removed_container_takes_its_volumes_with_it(box: DockerSandbox, tmp_path: Path) -> None:
    """Removing a container the arena's way leaves none of its volumes behind.

    The container is made here by hand, with a volume, past the image refusal.
    """
    image = box.image_for(RANDOM)
    container = box.client.containers.create(
        image, command=["true"], volumes=["/data"], labels={LABEL: "1"}
    )
    mounted = [m["Name"] for m in container.attrs["Mounts"] if m.get("Type") == "volume"]
    assert mounted  # Docker made an anonymous volume for /data
    _remove(container)
    assert not [v for v in box.client.volumes.list() if v.name in mounted]


def test_from_images_are_the_images_a_dockerfile_builds_on() -> None:
    """Not the arena's base (a build argument), not its own stages, not scratch."""
    assert [] == from_images("ARG BASE=flipflop-base:latest\nFROM ${BASE}\nCOPY . /bot\n")
    multi = "FROM golang:1.22 AS build\nRUN go build\nFROM build AS test\nFROM scratch\n"
    assert ["golang:1.22"] == from_images(multi)
    assert ["node:20-slim"] == from_images("FROM --platform=linux/amd64 node:20-slim\n")
    assert ["alpine", "debian"] == from_images("from alpine as b\n  FROM debian\n")


@pytest.mark.docker
def test_a_rebuilt_from_image_rebuilds_the_bot_image(box: DockerSandbox, tmp_path: Path) -> None:
    """A Dockerfile ``FROM`` an image the arena did not build: its id is in the bot's tag.

    So rebuilding that image is picked up (issue 14: it used to be ignored).
    """
    client = box.client
    base = ensure_base_image(client, QUIET)
    source = "flipflop-test-from:latest"
    bot = tmp_path / "onfrom"
    shutil.copytree(REPO / "bots" / "random", bot, ignore=shutil.ignore_patterns("__pycache__"))
    (bot / "bot.toml").write_text(
        (bot / "bot.toml").read_text().replace('name = "random"', 'name = "onfrom"')
    )
    (bot / "Dockerfile").write_text(
        f"FROM {source}\nCOPY . /bot\nWORKDIR /bot\nUSER 65534:65534\n"
        'ENTRYPOINT ["python3", "bot.py"]\n'
    )
    manifest = read_manifest(bot)
    made: list[str] = []
    try:
        client.images.get(base).tag("flipflop-test-from", "latest")
        first = ensure_bot_image(client, manifest, base, QUIET, trust_dockerfile=True)
        assert first == ensure_bot_image(client, manifest, base, QUIET, trust_dockerfile=True)
        context = tmp_path / "ctx"
        context.mkdir()
        (context / "Dockerfile").write_text(f"FROM {base}\nLABEL rebuilt=yes\n")
        image, _ = client.images.build(path=str(context), tag=source, rm=True)
        made.append(str(image.id))
        second = ensure_bot_image(client, manifest, base, QUIET, trust_dockerfile=True)
        assert first != second
        assert "yes" == client.images.get(second).labels.get("rebuilt")
        made += [first, second]
    finally:
        for ref in [source, *made]:
            with contextlib.suppress(Exception):
                client.images.remove(ref, force=True)
