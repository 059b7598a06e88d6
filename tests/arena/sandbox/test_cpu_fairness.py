"""CPU fairness in the process sandbox: one cgroup per bot, which its children cannot leave.

The ``forkspin`` adversary forks four children that each leave its session with ``setsid``
and spin forever, then plays a legal game. Its cgroup holds all of them to one CPU quota: the
tests read the cgroup's own CPU accounting and assert an upper bound (a loaded machine only
lowers what a bot gets, so these hold under load too), that every process of the bot is in
its cgroup, and that stopping the bot (or the watchdog, when the arena is killed) leaves
neither a process nor a cgroup. How much this spares an honest bot's thinking time is measured
by ``benchmarks/cpu_fairness.py``, not asserted here: wall-clock speed depends on the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.match._runner import MatchRecord, TimeControl, run_match
from arena.sandbox import ProcessSandbox, Sandbox, SandboxLimits
from arena.sandbox._cgroup import ENTER, BotCgroup, _v2_tree, cgroup_tree, remove_cgroup
from arena.sandbox._process import _drop_privileges, _ProcessBot
from flipflop import BotClient, BotManifest, MatchConfig, read_manifest

REPO = Path(__file__).resolve().parents[3]
ADVERSARIES = Path(__file__).resolve().parent / "adversaries"
TREE = cgroup_tree()
NO_CGROUPS = TREE if isinstance(TREE, str) else ""
OWN_USER = _drop_privileges() is None

needs_cgroups = pytest.mark.skipif(
    bool(NO_CGROUPS), reason=f"process sandbox without cgroups here: {NO_CGROUPS}"
)
SMALL_MATCH = MatchConfig(seats=3, hand_cap=3)
CLOCK = TimeControl(decision_ms=1000, time_bank_ms=30_000, max_strikes=3, notify_ms=2000)
SLACK = 1.25
"""CPU time may exceed ``cpus`` times wall time by this factor (CFS accounting) …"""
SLACK_S = 0.3
"""… plus this much."""


def gone(pid: int, cgroup: BotCgroup) -> bool:
    """True when ``pid`` has exited (a zombie counts) or is another process now."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        cgroups = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return True
    return "State:\tZ" in status or cgroup.name not in cgroups


def bound(cpus: float, wall: float) -> float:
    """The most CPU seconds a bot with a quota of ``cpus`` may use in ``wall`` seconds."""
    return cpus * wall * SLACK + SLACK_S


def adversary(scratch: Path, name: str, **attack: Any) -> BotManifest:
    """A copy of ``adversaries/<name>`` with ``attack.json`` holding ``attack``."""
    target = scratch / "adversaries" / name
    shutil.copytree(ADVERSARIES / name, target, ignore=shutil.ignore_patterns("__pycache__"))
    (target / "attack.json").write_text(json.dumps(attack), encoding="utf-8")
    return read_manifest(target)


def bundled(name: str) -> BotManifest:
    """A bundled bot from ``bots/``."""
    return read_manifest(REPO / "bots" / name)


def wait_ready(endpoint: str) -> None:
    """Until the bot's health check answers (generous: the machine may be loaded)."""
    client = BotClient(endpoint)
    try:
        client.wait_ready(timeout=60)
    finally:
        client.close()


def wait_for(what: str, check: Any, timeout: float = 30.0) -> None:
    """Poll ``check()`` until it is true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not after {timeout} s"
        time.sleep(0.05)


def processes_of(uid: int) -> set[int]:
    """Live (not zombie) processes with user id ``uid``."""
    out = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(entry.path).st_uid != uid:
                    continue
                if "State:\tZ" not in Path(entry.path, "status").read_text():
                    out.add(int(entry.name))
    return out


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A short directory (unix socket paths are short)."""
    path = Path(tempfile.mkdtemp(prefix="ffa-c-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


class RecordingSandbox(ProcessSandbox):
    """A process sandbox that keeps every bot it started, to look at their cgroups."""

    def __init__(self, limits: SandboxLimits | None = None) -> None:
        super().__init__(limits)
        self.started: list[_ProcessBot] = []

    def start(self, bot: BotManifest, workdir: Path, label: str) -> _ProcessBot:
        """Start it and remember it."""
        running = super().start(bot, workdir, label)
        self.started.append(running)
        return running


def play(box: Sandbox, bots: list[BotManifest], scratch: Path, clock: TimeControl) -> MatchRecord:
    """One real match (three seats, three hands) in ``box``, which is closed afterwards."""
    out = scratch / "out"
    out.mkdir(parents=True, exist_ok=True)
    try:
        return run_match(
            "m1",
            7,
            bots,
            SMALL_MATCH,
            sandbox=box,
            workdir=scratch / "m",
            replay_path=out / "replay.jsonl",
            logs_dir=out / "logs",
            clock=clock,
        )
    finally:
        box.close()


def spinner_pids(record: MatchRecord) -> list[int]:
    """The pids forkspin (seat 0) reported for its spinners (its own pid namespace's)."""
    log = Path(record.seats[0].log).read_text(errors="replace")
    for line in log.splitlines():
        if line.startswith("ATTACK "):
            report = json.loads(line[len("ATTACK ") :])
            if report["attack"] == "spinners":
                return list(report["pids"])
    return []


def assert_results_correct(record: MatchRecord, seats: int) -> None:
    """The match finished: a place per seat as a ranking, and no chip made or lost."""
    assert seats == len(record.placements) == len(record.bankrolls)
    for place in record.placements:
        # Competition ranking: 1 + the number of seats placed strictly better.
        assert place == 1 + sum(p < place for p in record.placements), record.placements
    assert seats * record.start_bankroll == sum(record.bankrolls), record.bankrolls


# ---------------------------------------------------------------------------------- set-up


def test_isolation_line_says_whether_there_is_a_quota() -> None:
    """With cgroups the line states the quota; without, it says NO CPU QUOTA and why."""
    box = ProcessSandbox(SandboxLimits(cpus=1.0, pids=64))
    try:
        if NO_CGROUPS:
            assert f"NO CPU QUOTA: {NO_CGROUPS}" in box.isolation
        else:
            assert "CPU quota of 1 CPU and 64 processes per bot (cgroup v" in box.isolation
            assert "NO CPU QUOTA" not in box.isolation
    finally:
        box.close()
    if os.geteuid() == 0 and os.access("/sys/fs/cgroup/cpu/cgroup.procs", os.W_OK):
        assert not NO_CGROUPS, "root with a writable v1 cpu hierarchy must get cgroups"


def test_without_cgroups_it_says_so_and_still_runs(scratch: Path) -> None:
    """Where cgroups cannot be used, bots run as before and the line says why."""
    box = ProcessSandbox(cgroups="no cgroup file system (a test)")
    try:
        assert "NO CPU QUOTA: no cgroup file system (a test)" in box.isolation
        bot = box.start(bundled("random"), scratch / "seat0", "no-cgroup")
        assert bot.cgroup is None
        wait_ready(bot.endpoint)
        pid = bot.proc.pid
    finally:
        box.close()
    with contextlib.suppress(OSError):
        assert "State:\tZ" in Path(f"/proc/{pid}/status").read_text()


@needs_cgroups
def test_cgroup_has_the_limits_and_is_root_owned(scratch: Path) -> None:
    """The quota is ``cpus`` of a CPU, the pids limit is ``pids``; only root may change them."""
    limits = SandboxLimits(cpus=0.5, pids=32)
    box = ProcessSandbox(limits)
    try:
        bot = box.start(bundled("random"), scratch / "seat0", "limits")
        cg = bot.cgroup
        assert cg is not None
        wait_ready(bot.endpoint)
        tree = box.cgroups
        assert tree is not None
        if tree.version == 1:
            assert tree.cpu is not None
            cpu = tree.cpu / cg.name
            quota = int((cpu / "cpu.cfs_quota_us").read_text())
            period = int((cpu / "cpu.cfs_period_us").read_text())
            assert 0.5 == quota / period
        else:
            quota_s, period_s = (tree.roots[0] / cg.name / "cpu.max").read_text().split()
            assert 0.5 == int(quota_s) / int(period_s)
        if tree.pids is not None:
            assert "32" == (tree.pids / cg.name / "pids.max").read_text().strip()
        for d in cg.dirs:
            st = d.stat()
            assert (0, 0o755) == (st.st_uid, st.st_mode & 0o7777)
            for name in ("cgroup.procs", "cpu.cfs_quota_us", "cpu.max", "pids.max"):
                if (d / name).exists():
                    f = (d / name).stat()
                    assert 0 == f.st_uid and not f.st_mode & 0o022, (d / name, oct(f.st_mode))
        assert bot.proc.pid in cg.pids()
    finally:
        box.close()
    assert [] == [d for d in cg.dirs if d.exists()]


# ---------------------------------------------------------------------------------- forkspin


@pytest.mark.alone  # measures CPU shares: tests/conftest.py
@needs_cgroups
@pytest.mark.slow
def test_forkspin_is_held_to_its_quota_and_reaped(scratch: Path) -> None:
    """Four setsid spinners and the bot share one CPU; all are in its cgroup; all are killed.

    (a) CPU used, by the cgroup's own accounting, over a few seconds of spinning and over the
    bot's whole life, is at most ``cpus`` times the wall time (times 1.25, plus 0.3 s);
    (b) every process of the bot's user is in its cgroup; after stop, none of them is left
    and the cgroup is gone.
    """
    limits = SandboxLimits(cpus=1.0)
    box = ProcessSandbox(limits)
    try:
        bot = box.start(adversary(scratch, "forkspin", spinners=4), scratch / "s0", "forkspin")
        cg = bot.cgroup
        assert cg is not None
        wait_ready(bot.endpoint)
        wait_for("the bot and its 4 spinners in the cgroup", lambda: len(cg.pids()) >= 5)
        procs = cg.pids()
        before, t0 = cg.usage_s(), time.monotonic()
        time.sleep(3.0)
        after, t1 = cg.usage_s(), time.monotonic()
        assert before is not None and after is not None
        used = after - before
        assert 0 < used <= bound(limits.cpus, t1 - t0), f"{used:.2f} CPU s in {t1 - t0:.2f} s"
        # (b) no process of the bot escaped its cgroup (setsid or not)
        in_cgroup = cg.pids()
        assert procs <= in_cgroup
        if OWN_USER:
            assert bot.uid is not None
            assert processes_of(bot.uid) <= in_cgroup
            assert len(processes_of(bot.uid)) >= 5
        for pid in in_cgroup:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
            mine = [line for line in lines if line.endswith(f":/{cg.name}")]
            assert len(mine) == len(cg.dirs), lines
    finally:
        box.close()
    assert [] == [pid for pid in procs if not gone(pid, cg)]
    assert [] == [d for d in cg.dirs if d.exists()]
    if bot.uid is not None:
        assert set() == processes_of(bot.uid)
    assert cg.final_usage_s is not None and cg.emptied_at is not None
    assert cg.final_usage_s <= bound(limits.cpus, cg.emptied_at - cg.created_at)


@needs_cgroups
@pytest.mark.slow
def test_match_next_to_forkspin_is_contained_and_correct(scratch: Path) -> None:
    """A real match of forkspin and two honest bots: forkspin held to its quota, results right.

    The honest bots play without a fault; placements are a ranking, chips are conserved; the
    spinners are gone afterwards with the cgroup.
    """
    limits = SandboxLimits(cpus=1.0)
    box = RecordingSandbox(limits)
    bots = [adversary(scratch, "forkspin", spinners=4), bundled("random"), bundled("greedy")]
    record = play(box, bots, scratch, CLOCK)
    assert_results_correct(record, 3)
    for seat in (1, 2):
        assert [] == [f for f in record.faults if f.seat == seat]
        assert record.seats[seat].decisions > 0
    spinners = spinner_pids(record)
    assert 4 == len(spinners), Path(record.seats[0].log).read_text(errors="replace")[-2000:]
    cg = box.started[0].cgroup
    assert cg is not None and cg.final_usage_s is not None and cg.emptied_at is not None
    wall = cg.emptied_at - cg.created_at
    assert cg.final_usage_s <= bound(limits.cpus, wall), f"{cg.final_usage_s:.2f} s in {wall:.2f}"
    assert [] == [pid for pid in spinners if not gone(pid, cg)]
    for running in box.started:
        assert running.cgroup is not None
        assert [] == [d for d in running.cgroup.dirs if d.exists()]


@pytest.mark.alone  # measures CPU shares: tests/conftest.py
@needs_cgroups
@pytest.mark.slow
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores to exceed one CPU")
def test_spinner_gets_one_cpu(scratch: Path) -> None:
    """Two spinning processes of one bot get one CPU between them, not two.

    The process-sandbox case of test_adversaries.py's ``test_cpu_quota_is_one_cpu``: the
    spinner adversary measures its children's CPU per wall second itself.
    """
    clock = TimeControl(decision_ms=300, time_bank_ms=3000, max_strikes=1, notify_ms=2000)
    box = ProcessSandbox(SandboxLimits(cpus=1.0))
    bots = [adversary(scratch, "spinner"), bundled("random"), bundled("greedy")]
    record = play(box, bots, scratch, clock)
    log = Path(record.seats[0].log).read_text(errors="replace")
    share = next(
        json.loads(x[len("ATTACK ") :])["share"]
        for x in log.splitlines()
        if x.startswith("ATTACK ") and '"cpu share"' in x
    )
    assert share <= 1.25, f"the bot used {share} CPUs"
    assert_results_correct(record, 3)


class _Measured:
    """A running container whose CPU use is read (Docker's stats) just before it is stopped."""

    def __init__(self, bot: Any) -> None:
        self._bot = bot
        self.used_s: float | None = None
        self.wall_s: float | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bot, name)

    def stop(self) -> None:
        """Read its CPU time since it started, then stop it."""
        if self.used_s is None:
            with contextlib.suppress(Exception):
                stats = self._bot.container.stats(stream=False, one_shot=True)
                self.used_s = stats["cpu_stats"]["cpu_usage"]["total_usage"] / 1e9
                self.wall_s = time.monotonic() - self._bot.started_at
        self._bot.stop()


@pytest.mark.docker
@pytest.mark.slow
def test_match_next_to_forkspin_in_docker(docker_images: None, scratch: Path) -> None:
    """The same match in containers: Docker's CPU quota holds forkspin, the results are right."""
    from arena.sandbox._docker import DockerSandbox

    measured: list[_Measured] = []

    class Measuring(DockerSandbox):
        def start(self, bot: BotManifest, workdir: Path, label: str) -> Any:
            running = _Measured(super().start(bot, workdir, label))
            measured.append(running)
            return running

    limits = SandboxLimits(cpus=1.0)
    box = Measuring(limits, log=lambda message: None)
    bots = [read_manifest(ADVERSARIES / "forkspin"), bundled("random"), bundled("greedy")]
    record = play(box, bots, scratch, CLOCK)
    assert_results_correct(record, 3)
    for seat in (1, 2):
        assert [] == [f for f in record.faults if f.seat == seat]
    assert 4 == len(spinner_pids(record)), "forkspin did not start its spinners"
    spin = measured[0]
    assert spin.used_s is not None and spin.wall_s is not None, "no stats for the container"
    assert spin.used_s <= bound(limits.cpus, spin.wall_s), f"{spin.used_s:.2f} s in {spin.wall_s}"


# ---------------------------------------------------------------------------------- watchdog

_ARENA_SCRIPT = """
import json, sys, time
from pathlib import Path
from arena.sandbox import ProcessSandbox
from flipflop import BotClient, read_manifest
box = ProcessSandbox()
bot = box.start(read_manifest(sys.argv[1]), Path(sys.argv[2]), "killed")
deadline = time.monotonic() + 60
while len(bot.cgroup.pids()) < 5 and time.monotonic() < deadline:
    time.sleep(0.05)
pids = sorted(bot.cgroup.pids())
dirs = [str(d) for d in bot.cgroup.dirs]
print(json.dumps({"dirs": dirs, "pids": pids, "uid": bot.uid}), flush=True)
time.sleep(600)
"""


@needs_cgroups
@pytest.mark.slow
def test_watchdog_kills_spinners_and_removes_the_cgroup(scratch: Path) -> None:
    """An arena killed with SIGKILL: its watchdog kills the setsid spinners, removes the cgroup."""
    bot = adversary(scratch, "forkspin", spinners=4)
    proc = subprocess.Popen(
        [sys.executable, "-c", _ARENA_SCRIPT, str(bot.path), str(scratch / "seat0")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        seen = json.loads(proc.stdout.readline())
        dirs = [Path(d) for d in seen["dirs"]]
        pids = seen["pids"]
        uid = seen["uid"]
        assert len(pids) >= 5 and all(d.is_dir() for d in dirs)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        name = dirs[0].name

        def cleaned() -> bool:
            if any(d.exists() for d in dirs) or (uid is not None and processes_of(uid)):
                return False
            for pid in pids:
                with contextlib.suppress(OSError):
                    cgroups = Path(f"/proc/{pid}/cgroup").read_text()
                    status = Path(f"/proc/{pid}/status").read_text()
                    if name in cgroups and "State:\tZ" not in status:
                        return False
            return True

        wait_for("the watchdog's cleanup", cleaned, timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------------- stale


def _dead_pid() -> tuple[int, str]:
    """The pid and start time of a process that has exited."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid, "12345"


def _sleeper_in(dirs: list[Path]) -> subprocess.Popen[bytes]:
    cmd = ["/bin/sh", "-c", ENTER, "sh", str(len(dirs)), *map(str, dirs), "sleep", "600"]
    proc = subprocess.Popen(cmd, start_new_session=True)
    wait_for("the sleeper in its cgroup", lambda: all(_listed(d, proc.pid) for d in dirs))
    return proc


def _rmdir(d: Path) -> None:
    """Remove a cgroup directory made by a test, once its killed processes have left it."""
    for _ in range(250):
        try:
            d.rmdir()
        except FileNotFoundError:
            return
        except OSError:  # EBUSY: still populated for a moment
            time.sleep(0.02)
        else:
            return


def _listed(d: Path, pid: int) -> bool:
    return str(pid) in (d / "cgroup.procs").read_text().split()


@pytest.mark.alone  # any other arena starting now would sweep its stale cgroups first
@needs_cgroups
def test_stale_cgroups_of_gone_arenas_are_removed() -> None:
    """A new sandbox removes cgroups of arenas that are gone, and kills what is in them.

    Gone: no process has its pid, or the one that has it started at another time (a reused
    pid). A live arena's cgroups (a ``sleep`` stands in for the arena) and those named for
    another pid namespace are left alone.
    """
    assert not isinstance(TREE, str)
    ns = os.stat("/proc/self/ns/pid").st_ino
    dead_pid, token = _dead_pid()
    live = subprocess.Popen(["sleep", "600"])
    with open(f"/proc/{live.pid}/stat") as f:
        live_token = f.read().rpartition(")")[2].split()[19]
    names = {
        "dead": f"ffa-{ns}-{dead_pid}-{token}-aaaa",
        "reused": f"ffa-{ns}-{live.pid}-{int(live_token) + 1}-bbbb",
        "live": f"ffa-{ns}-{live.pid}-{live_token}-cccc",
        "other_ns": f"ffa-{ns + 1}-{dead_pid}-{token}-dddd",
    }
    made = {k: [p / n for p in TREE.roots] for k, n in names.items()}
    sleepers = []
    try:
        for dirs in made.values():
            for d in dirs:
                d.mkdir()
        sleepers = [_sleeper_in(made["dead"]), _sleeper_in(made["live"])]
        ProcessSandbox().close()
        assert [] == [d for d in made["dead"] + made["reused"] if d.exists()]
        assert all(d.exists() for d in made["live"] + made["other_ns"])
        sleepers[0].wait(timeout=10)  # killed with its stale cgroup
        assert sleepers[1].poll() is None  # a live arena's bot runs on
    finally:
        for s in [*sleepers, live]:
            s.kill()
            s.wait()
        for dirs in made.values():
            for d in dirs:
                _rmdir(d)


@needs_cgroups
def test_only_bot_cgroups_are_ever_killed_or_removed() -> None:
    """Removing a cgroup whose name is not a bot's (a root, another tool's) does nothing."""
    assert not isinstance(TREE, str)
    dirs = [root / f"not-a-bot-{os.getpid()}" for root in TREE.roots]
    for d in dirs:
        d.mkdir()
    sleeper = None
    try:
        sleeper = _sleeper_in(dirs)
        assert remove_cgroup([*dirs, *TREE.roots], timeout=0.5)
        assert sleeper.poll() is None and all(d.exists() for d in dirs)
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
        for d in dirs:
            _rmdir(d)


# ---------------------------------------------------------------------------------- v2


def _v2_mount() -> Path | None:
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[2] == "cgroup2":
                return Path(fields[1])
    return None


V2 = _v2_mount()


@pytest.mark.skipif(V2 is None or os.geteuid() != 0, reason="needs root and a cgroup2 mount")
def test_v2_cgroup_joins_accounts_kills_and_removes() -> None:
    """The cgroup v2 path on this machine's v2 hierarchy (even one without the cpu controller).

    A process and its setsid children join through the wrapper, ``cpu.stat`` accounts their
    CPU, removing the cgroup kills them all and leaves no directory. Where the hierarchy has
    no cpu controller (controllers bound to v1), the arena refuses it for quotas and says why.
    """
    assert V2 is not None
    if "cpu" not in (V2 / "cgroup.controllers").read_text().split():
        reason = _v2_tree(V2)
        assert isinstance(reason, str) and "cpu controller" in reason
    tree = _v2_tree(V2, need_cpu=False)
    if isinstance(tree, str):
        pytest.skip(f"cannot use the v2 hierarchy here: {tree}")
    cg = tree.create(1.0, 64)
    spin = "import os\nfor _ in range(2):\n    if os.fork() == 0:\n        os.setsid()\n"
    spin += "        while True: pass\nimport time; time.sleep(600)\n"
    proc = subprocess.Popen([*cg.command(), sys.executable, "-c", spin], start_new_session=True)
    try:
        wait_for("3 processes in the v2 cgroup", lambda: len(cg.pids()) >= 3)
        pids = cg.pids()
        for pid in pids:
            assert f"0::/{cg.name}\n" in Path(f"/proc/{pid}/cgroup").read_text()
        first = cg.usage_s()
        wait_for("CPU accounted", lambda: (cg.usage_s() or 0) > (first or 0) + 0.05)
        assert cg.remove()
        proc.wait(timeout=10)
        assert [] == [p for p in pids if not gone(p, cg)]
        assert not cg.dirs[0].exists()
        assert cg.final_usage_s is not None and cg.final_usage_s > 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        cg.remove()
